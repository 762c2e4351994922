//! `wavecrew backend probe|run`: try a backend before a pipeline depends
//! on it.
//!
//! * `probe [--json]`: every configured backend (built-in and from
//!   `wavecrew.toml`), whether it can run, its version or why not. Exit 0
//!   when every backend is available, 1 otherwise.
//! * `run <name> --cwd DIR [--prompt-file F] [--mode M] [--timeout S]
//!   [--stall-timeout S] [--json]`: one supervised attempt, prompt from the
//!   file or stdin. Exit 0 on `success`, 1 for any other outcome.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;
use wavecrew_backends::CliBackend;
use wavecrew_backends::config::Config;
use wavecrew_backends::routing::probe;
use wavecrew_core::{AttemptRequest, Mode, TaskId};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew backend …`
#[derive(Debug, Subcommand)]
pub enum BackendCommand {
    /// Every configured backend: available or why not, and its version.
    Probe(ProbeArgs),
    /// One supervised attempt through a backend.
    Run(RunArgs),
}

/// `wavecrew backend probe` arguments.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The project folder (where `wavecrew.toml` is looked up).
    #[arg(long, default_value = ".")]
    pub cwd: PathBuf,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What the agent may do.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Change the work tree.
    Write,
    /// Read only.
    Analysis,
    /// Review the uncommitted changes.
    Review,
}

/// `wavecrew backend run` arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The backend: a built-in name (claude, codex, gemini, qwen, opencode),
    /// a seed name (agent), or one from wavecrew.toml.
    pub name: String,
    /// The folder the agent works in (and where `wavecrew.toml` is looked up).
    #[arg(long)]
    pub cwd: PathBuf,
    /// Read the prompt from this file (default: stdin).
    #[arg(long)]
    pub prompt_file: Option<PathBuf>,
    /// What the agent may do.
    #[arg(long, value_enum, default_value = "write")]
    pub mode: ModeArg,
    /// Wall-clock limit, seconds (default: from wavecrew.toml, else 1800).
    #[arg(long)]
    pub timeout: Option<u64>,
    /// No-output limit, seconds (default: from wavecrew.toml, else 300).
    #[arg(long)]
    pub stall_timeout: Option<u64>,
    /// The task id used for placeholders and the scripted agent.
    #[arg(long, default_value = "ADHOC-001")]
    pub task: String,
    /// Resume this native session of the backend.
    #[arg(long)]
    pub resume: Option<String>,
    /// Where the attempt's files go (default: a new folder under the system temp folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Run a `wavecrew backend` command.
pub fn run(cmd: BackendCommand, config_file: Option<&Path>) -> CmdResult {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    match cmd {
        BackendCommand::Probe(args) => rt.block_on(probe_all(&args, config_file)),
        BackendCommand::Run(args) => rt.block_on(run_one(&args, config_file)),
    }
}

fn load_config(root: &Path, explicit: Option<&Path>) -> Result<Config, CliError> {
    Config::discover(root, explicit).map_err(CliError::bad_input)
}

async fn probe_all(args: &ProbeArgs, config_file: Option<&Path>) -> CmdResult {
    let config = load_config(&args.cwd, config_file)?;
    let mut probes = Vec::new();
    for name in config.names() {
        if let Some(backend) = config.backend(&name) {
            probes.push(probe(&backend, &args.cwd).await);
        }
    }
    let all = probes.iter().all(|p| p.available);
    if args.json {
        output::json(&json!({
            "config": config.source,
            "backends": probes,
        }));
    } else {
        for p in &probes {
            let state = if p.available {
                "available"
            } else {
                "unavailable"
            };
            let detail = if p.available {
                p.version.clone().unwrap_or_default()
            } else {
                p.reason.clone().unwrap_or_default()
            };
            output::line(&format!(
                "{:<10} {:<9} {:<12} {detail}",
                p.backend, p.kind, state
            ));
        }
    }
    Ok(if all { Exit::Success } else { Exit::Failed })
}

async fn run_one(args: &RunArgs, config_file: Option<&Path>) -> CmdResult {
    if !args.cwd.is_dir() {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "--cwd {}: not a folder",
            args.cwd.display()
        )));
    }
    let config = load_config(&args.cwd, config_file)?;
    let task_id = TaskId::new(args.task.clone())?;
    let Some(backend) = config.backend(&args.name) else {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "unknown backend `{}`; known: {}",
            args.name,
            config.names().join(", ")
        )));
    };
    let prompt = if let Some(f) = &args.prompt_file {
        std::fs::read_to_string(f).map_err(|e| {
            CliError::bad_input(anyhow::anyhow!("--prompt-file {}: {e}", f.display()))
        })?
    } else {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            CliError::bad_input(anyhow::anyhow!("reading the prompt from stdin: {e}"))
        })?;
        s
    };
    let mut limits = config.limits_for(&backend);
    if let Some(t) = args.timeout {
        limits.wall = Duration::from_secs(t);
    }
    if let Some(t) = args.stall_timeout {
        limits.stall = Duration::from_secs(t);
    }
    let attempt_dir = match &args.out {
        Some(d) => d.clone(),
        None => tempfile::Builder::new()
            .prefix("wavecrew-backend-run-")
            .tempdir()
            .map_err(CliError::internal)?
            .keep(),
    };
    let cwd = args.cwd.canonicalize().map_err(CliError::internal)?;
    let request = AttemptRequest {
        task_id: task_id.as_str().to_owned(),
        prompt,
        cwd,
        git: None,
        clean_before: false,
        mode: match args.mode {
            ModeArg::Write => Mode::Write,
            ModeArg::Analysis => Mode::Analysis,
            ModeArg::Review => Mode::Review,
        },
        attempt_dir: attempt_dir.clone(),
        limits,
        resume_session: args.resume.clone(),
        env: BTreeMap::new(),
        sandbox: None,
        allow_hosts: Vec::new(),
    };
    let runner = CliBackend::configured(backend.clone(), &config);
    let (outcome, notes) = match runner.attempt(&request).await {
        Ok(attempt) => (attempt.outcome, attempt.notes),
        Err(e) => (e.as_outcome(&backend.name), Vec::new()),
    };
    if args.json {
        let mut v = serde_json::to_value(&outcome).map_err(CliError::internal)?;
        if let Some(map) = v.as_object_mut() {
            map.insert("outcome".into(), json!(outcome.outcome.name()));
            if !notes.is_empty() {
                map.insert("notes".into(), json!(notes));
            }
            if let wavecrew_core::OutcomeClass::RateLimited { retry_after_secs } = &outcome.outcome
            {
                map.insert("retry_after_secs".into(), json!(retry_after_secs));
            }
            map.insert("attempt_dir".into(), json!(attempt_dir));
        }
        output::json(&v);
    } else {
        output::line(&format!(
            "{}: {} (exit code {}) in {} ms",
            outcome.backend,
            outcome.outcome.name(),
            outcome
                .exit_code
                .map_or_else(|| "none".to_owned(), |c| c.to_string()),
            outcome.duration_ms
        ));
        if let Some(id) = &outcome.session_id {
            output::line(&format!("session: {id}"));
        }
        if !outcome.files_changed.is_empty() {
            output::line(&format!(
                "files changed: {}",
                outcome.files_changed.join(", ")
            ));
        }
        if let Some(m) = &outcome.final_message {
            output::line(&format!("final message: {m}"));
        }
        if let Some(e) = &outcome.error {
            output::line(&format!("error: {e}"));
        }
        for note in &notes {
            output::line(&format!("note: {note}"));
        }
        output::line(&format!("attempt files: {}", attempt_dir.display()));
    }
    Ok(if outcome.outcome.is_success() {
        Exit::Success
    } else {
        Exit::Failed
    })
}
