//! `wavecrew worker`: a host agent taking the tickets of sessions spread
//! over hosts (`wavecrew run --engine`), see `wavecrew_fleet::HostAgent`.

use std::path::{Path, PathBuf};

use wavecrew_backends::Config;

use crate::exit::{CliError, CmdResult};

/// `wavecrew worker` arguments.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The NATS server (`nats://host:4222`, `tls://…`); default `[engine] url` of `--config`.
    #[arg(long, value_name = "URL")]
    pub engine: Option<String>,
    /// Tasks at once on this host.
    #[arg(long, default_value_t = 4)]
    pub slots: usize,
    /// The roles this host takes, comma-separated (default: every role of the session).
    #[arg(long, value_delimiter = ',')]
    pub roles: Vec<String>,
    /// This host's name in leases, records and reports (default: the host name).
    #[arg(long)]
    pub host_id: Option<String>,
    /// Serve only this session (default: the first one announced).
    #[arg(long)]
    pub session: Option<String>,
    /// Where the repository cache and the worktrees live (default: ~/.cache/wavecrew/worker).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Leave once the session served is finished (default: wait for the next one).
    #[arg(long)]
    pub exit_when_done: bool,
}

/// Run the host agent until it is stopped (or its session finished, with
/// `--exit-when-done`).
pub fn run(args: &WorkerArgs, config: Option<&Path>) -> CmdResult {
    let config = match config {
        Some(file) => Config::load(file).map_err(CliError::bad_input)?,
        None => Config::default(),
    };
    let url = args
        .engine
        .clone()
        .or_else(|| config.engine.url.clone())
        .ok_or_else(|| {
            CliError::bad_input(anyhow::anyhow!(
                "no engine: give --engine nats://host:4222, or `[engine] url` in the file of --config"
            ))
        })?;
    if args.slots == 0 {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "--slots: expected at least 1, got 0"
        )));
    }
    let host_id = match &args.host_id {
        Some(h) => h.clone(),
        None => wavecrew_core::store::this_host(),
    };
    if host_id.is_empty() || host_id.chars().any(|c| c.is_control() || c == '/') {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "--host-id: expected a name without `/` or control characters, got {host_id:?}"
        )));
    }
    let data_dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir)
            .join("wavecrew")
            .join("worker"),
    };
    std::fs::create_dir_all(&data_dir).map_err(|e| {
        CliError::bad_input(anyhow::anyhow!("--data-dir {}: {e}", data_dir.display()))
    })?;
    host(args, &config, &url, host_id, data_dir)
}

/// Run the host agent on the engine at `url`.
#[cfg(feature = "nats")]
fn host(
    args: &WorkerArgs,
    config: &Config,
    url: &str,
    host_id: String,
    data_dir: PathBuf,
) -> CmdResult {
    use crate::exit::Exit;
    use crate::output;

    let options = wavecrew_fleet::HostOptions {
        url: url.to_owned(),
        credentials: config.engine.credentials_path(config.source.as_deref()),
        slots: args.slots,
        roles: args.roles.clone(),
        host_id,
        session: args.session.clone(),
        data_dir,
        exit_when_done: args.exit_when_done,
        bin_dir: None,
        on_line: std::sync::Arc::new(|line: &str| output::progress(line)),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    let agent = wavecrew_fleet::HostAgent::new(options);
    let ran = rt.block_on(async {
        tokio::select! {
            r = agent.run() => Some(r),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    match ran {
        None => Ok(Exit::Interrupted),
        Some(Ok(())) => Ok(Exit::Success),
        Some(Err(e)) => Err(CliError::bad_input(anyhow::anyhow!(
            "the engine at {url}: {e}"
        ))),
    }
}

/// A build without the engine: refused with how to get it.
#[cfg(not(feature = "nats"))]
#[allow(clippy::needless_pass_by_value)]
fn host(
    _args: &WorkerArgs,
    _config: &Config,
    url: &str,
    _host_id: String,
    _data_dir: PathBuf,
) -> CmdResult {
    Err(super::engine::unavailable(url))
}
