//! `wavecrew-team start|check|resume|run|worker --session <folder>`: seed
//! 001, the team-executor orchestrator.
//!
//! * `start`: validate, reconcile, spawn the ready workers (detached),
//!   record them in `active_workers`, print the graph, stop;
//! * `check`: read-only progress (counts, graph with icons, active
//!   workers with elapsed time, ready list);
//! * `resume`: advance (forget finished workers, start what became ready);
//! * `run`: all of it in the foreground until the pipeline ends, with
//!   progress lines, then the completion report (`wavecrew run` is this);
//! * `worker --role NAME --task ID`: one task of a role known only by its
//!   `roles/<name>.md`, run through an agent CLI.
//!
//! Exit codes: 0 complete (or the command did its job), 1 a task failed or
//! the pipeline stalled, 2 invalid session or graph, 3 interrupted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use wavecrew_core::{FileTaskStore, TaskStore};
use wavecrew_orchestrator::OpenSession;
use wavecrew_orchestrator::report::check_text;
use wavecrew_role_agent::AgentRole;
use wavecrew_role_kit::run::stop;
use wavecrew_role_kit::{OpenSpec, RoleSession, WorkerCommand, run_role};

use crate::commands;
use crate::commands::run::RunFlags;
use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew-team` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-team",
    version,
    about = "Seed 001: the team-executor orchestrator"
)]
pub struct TeamCli {
    /// Read this configuration file instead of `<project root>/wavecrew.toml`.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The operation.
    #[command(subcommand)]
    pub command: TeamCommand,
}

/// The operations of `wavecrew-team`.
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Validate, reconcile, spawn the ready workers, print the graph, stop.
    Start(TeamArgs),
    /// Read-only progress.
    Check(SessionArg),
    /// Advance: start what became ready.
    Resume(TeamArgs),
    /// Run the whole pipeline in the foreground.
    Run(TeamArgs),
    /// One task of a role known only by its role file.
    #[command(
        mut_arg("session", |a| a.required(true)),
        mut_arg("task", |a| a.required(true))
    )]
    Worker(WorkerArgs),
}

/// `--session`.
#[derive(Debug, Args)]
pub struct SessionArg {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: Option<PathBuf>,
}

/// Options of `start`, `resume` and `run`.
#[derive(Debug, Args)]
pub struct TeamArgs {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: Option<PathBuf>,
    /// How the run goes: parallelism, failures, budget, backend, engine.
    #[command(flatten)]
    pub flags: RunFlags,
}

/// `worker` arguments: the flags every role binary takes, and the role.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The role (its file is `roles/<role>.md`).
    #[arg(long)]
    pub role: String,
    /// The common worker flags (`--session` and `--task` are required here).
    #[command(flatten)]
    pub worker: WorkerCommand,
}

/// `wavecrew-team`'s main.
pub fn team_main() -> ExitCode {
    team_main_from(std::env::args_os().collect())
}

/// [`team_main`] with explicit arguments (the program name first).
pub fn team_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    crate::init_tracing();
    let cli = match TeamCli::try_parse_from(command_line) {
        Ok(c) => c,
        Err(e) => return crate::clap_exit(&e),
    };
    crate::finish(run_command(cli.command, cli.config.as_deref()))
}

/// Run one `wavecrew-team` command (also `wavecrew run`).
pub fn run_command(command: TeamCommand, config: Option<&Path>) -> CmdResult {
    match command {
        TeamCommand::Check(a) => check(a.session.as_deref()),
        TeamCommand::Start(a) => spawn_and_stop(&a, config, false),
        TeamCommand::Resume(a) => spawn_and_stop(&a, config, true),
        TeamCommand::Run(a) => commands::run::foreground(
            a.session.as_deref(),
            a.flags.spec(config),
            a.flags.engine.as_deref(),
            None,
        ),
        TeamCommand::Worker(a) => worker(&a, config),
    }
}

fn check(session: Option<&Path>) -> CmdResult {
    let valid = wavecrew_orchestrator::validate(session).map_err(CliError::bad_input)?;
    let store = FileTaskStore::for_session(&valid.dir);
    let tasks = store.list()?;
    output::line(check_text(&valid, &tasks).trim_end());
    Ok(Exit::Success)
}

fn spawn_and_stop(args: &TeamArgs, config: Option<&Path>, resume: bool) -> CmdResult {
    let mut opened = OpenSession::open(args.session.as_deref(), config)?;
    if let Some(url) = commands::engine::url(args.flags.engine.as_deref(), &opened.config) {
        // Spawn-and-stop leaves no coordinator to bring the work home.
        return Err(CliError::bad_input(anyhow::anyhow!(
            "the engine {url} (--engine or [engine] url) needs a run that stays in the foreground: `wavecrew run` (or `wavecrew-team run`), not `start` or `resume`"
        )));
    }
    commands::run::prepare(&mut opened, args.flags.sandbox)?;
    if let Err(e) = opened.set_hard_budget(args.flags.hard_budget) {
        output::warning(&e.to_string());
    }
    let rt = crate::runtime::runtime()?;
    let _guard = rt.enter();
    let mut team = opened.team(&args.flags.spec(config));
    let started = if resume {
        team.resume()?
    } else {
        team.start()?
    };
    for id in &started {
        output::line(&format!("[executor] spawned a worker for {}", id.as_str()));
    }
    let tasks = opened.store.list()?;
    output::line(check_text(&team.valid, &tasks).trim_end());
    Ok(Exit::Success)
}

fn worker(args: &WorkerArgs, config: Option<&Path>) -> CmdResult {
    let w = &args.worker;
    // `--config` after `worker` is the worker command's; before it, the
    // global flag's.
    let config = w.config.as_deref().or(config);
    let (Some(dir), Some(task)) = (w.session.as_deref(), w.task.as_deref()) else {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "wavecrew-team worker: --session <folder> and --task <ID> are required"
        )));
    };
    let valid = wavecrew_orchestrator::validate(Some(dir))
        .map_err(|e| CliError::bad_input(anyhow::anyhow!("{e}\n{}", e.hint())))?;
    let role = valid
        .session
        .roles
        .iter()
        .find(|r| r.name.as_str() == args.role)
        .ok_or_else(|| {
            CliError::bad_input(anyhow::anyhow!(
                "role `{}` is not in team-session.json",
                args.role
            ))
        })?;
    let role_file = valid.dir.join(role.instructions_path());
    let session = RoleSession::open(&OpenSpec {
        config,
        task: Some(task),
        backend: w.backend.clone(),
        bus_key: Some(valid.session.session_id.as_str()),
        ..OpenSpec::session(&valid.dir)
    })?;
    let agent = AgentRole::new(
        role.name.as_str(),
        &role.prefix,
        &role_file,
        session.ctx.clone(),
    )
    .map_err(|e| CliError::bad_input(anyhow::anyhow!("{}: {e}", role_file.display())))?
    .with_responsibility(role.responsibility_type.as_deref());
    let options = w.options(&session);
    Ok(run_role(&session, &agent, &options, stop)?.into())
}
