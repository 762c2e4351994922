//! `wavecrew ui <session folder | task file>` (and `wavecrew run … --ui`):
//! the live cockpit of a session on loopback (a free port, or `--port`;
//! another address only with `--listen`), its URL printed with the secret
//! token; it serves a running, an interrupted or a finished session until
//! interrupted.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use clap::Args;
use wavecrew_cockpit::{Cockpit, Serving};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// Where the cockpit listens: shared by `wavecrew ui` and `wavecrew run --ui`.
#[derive(Debug, Clone, Args)]
pub struct UiFlags {
    /// The port of the cockpit (default: a free one).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Listen on this address instead of 127.0.0.1 (the page and its actions are then reachable
    /// from other machines that have the URL's token: think twice).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<IpAddr>,
}

impl UiFlags {
    /// The address to bind.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(
            self.listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            self.port.unwrap_or(0),
        )
    }
}

/// `wavecrew ui` arguments.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// A session folder (`.workflow/.team/<session-id>`), or the task file that made it.
    pub session: PathBuf,
    /// Where it listens.
    #[command(flatten)]
    pub flags: UiFlags,
    /// For a task file: the project root its session is under.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

/// The session folder named by `input`: a session folder, or the task
/// file that made one (which must exist already).
pub fn existing_session(input: &Path, root: &Path) -> Result<PathBuf, CliError> {
    let dir = if super::tasks::is_task_file(input) {
        let plan = super::tasks::read(input, root)?;
        let dir = plan.dir();
        if !dir.is_dir() {
            return Err(CliError::bad_input(anyhow::anyhow!(
                "{}: no session was made from this task file yet (expected {}); start it with \
                 `wavecrew run {}`",
                input.display(),
                dir.display(),
                input.display()
            )));
        }
        dir
    } else {
        input.to_owned()
    };
    if !wavecrew_core::SessionLayout::new(&dir).looks_like_session() {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "{}: not a session folder (no tasks/ and no team-session.json)",
            dir.display()
        )));
    }
    dir.canonicalize().map_err(CliError::internal)
}

/// Start the cockpit of `session` on the runtime of the caller and print
/// its URL.
pub async fn start(session: &Path, flags: &UiFlags) -> Result<Serving, CliError> {
    let cockpit = Cockpit::new(session.to_owned());
    let serving = cockpit
        .serve(flags.addr())
        .await
        .map_err(CliError::bad_input)?;
    output::progress(&format!("cockpit of {}:", session.display()));
    output::line(&serving.url);
    Ok(serving)
}

/// Run `wavecrew ui`: serve until interrupted.
pub fn run(args: &UiArgs) -> CmdResult {
    let session = existing_session(&args.session, &args.root)?;
    let rt = crate::runtime::runtime()?;
    rt.block_on(async {
        start(&session, &args.flags).await?;
        output::progress("serving until interrupted (Ctrl-C)");
        let _ = tokio::signal::ctrl_c().await;
        Ok::<_, CliError>(())
    })?;
    Ok(Exit::Success)
}
