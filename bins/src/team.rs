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

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use wavecrew_backends::config::Config;
use wavecrew_core::role::{WorkerOptions, run_worker};
use wavecrew_core::store::LeasePolicy;
use wavecrew_core::{FileTaskStore, SessionStatus, TaskId, TaskStore};
use wavecrew_msgbus::{Bus, Durability, KeyUse};
use wavecrew_role_team::agent_role::AgentRole;
use wavecrew_role_team::reconcile::{reconcile, write_session};
use wavecrew_role_team::report::{banner, check_text};
use wavecrew_role_team::{OnFailure, Progress, RunEnd, Team, TeamOptions, ValidSession};

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
    Worker(WorkerArgs),
}

/// `--session`.
#[derive(Debug, Args)]
pub struct SessionArg {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: Option<PathBuf>,
}

/// After a task fails.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OnFailureArg {
    /// Skip its dependents, run the rest.
    Continue,
    /// Start nothing new.
    Stop,
}

/// Options of `start`, `resume` and `run`.
#[derive(Debug, Args)]
pub struct TeamArgs {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: Option<PathBuf>,
    /// Workers at once (default: `[limits] max_parallel`).
    #[arg(long)]
    pub max_parallel: Option<usize>,
    /// What a failed task does to the rest of the pipeline.
    #[arg(long, value_enum, default_value = "continue")]
    pub on_failure: OnFailureArg,
    /// Respawns of a task whose worker crashed.
    #[arg(long, default_value_t = 2)]
    pub crash_retries: u32,
    /// Run every task through this backend.
    #[arg(long)]
    pub backend: Option<String>,
    /// Crossing the run budget (`[budget] run_tokens`, `run_usd`) stops the
    /// running attempts too, not only new ones.
    #[arg(long)]
    pub hard_budget: bool,
}

/// `worker` arguments.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The session folder.
    #[arg(long)]
    pub session: PathBuf,
    /// The role (its file is `roles/<role>.md`).
    #[arg(long)]
    pub role: String,
    /// The task to take.
    #[arg(long)]
    pub task: String,
    /// Run it through this backend.
    #[arg(long)]
    pub backend: Option<String>,
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
        TeamCommand::Run(a) => foreground(&a, config),
        TeamCommand::Worker(a) => worker(&a, config),
    }
}

struct Opened {
    valid: ValidSession,
    root: PathBuf,
    store: FileTaskStore,
    bus: Bus,
    config: Config,
}

fn open(session: Option<&Path>, config: Option<&Path>) -> Result<Opened, CliError> {
    let valid = wavecrew_role_team::validate(session).map_err(|e| {
        CliError::bad_input(anyhow::anyhow!(
            "{e}\nhint: re-run team-coordinate to regenerate the session"
        ))
    })?;
    let dir = valid.dir.canonicalize().map_err(CliError::internal)?;
    let root = wavecrew_core::source::project_root(&dir).ok_or_else(|| {
        CliError::bad_input(anyhow::anyhow!(
            "{}: not inside a project (no .workflow folder above it)",
            dir.display()
        ))
    })?;
    let valid = ValidSession { dir, ..valid };
    let config = Config::discover(&root, config).map_err(CliError::bad_input)?;
    let store = FileTaskStore::for_session(&valid.dir);
    let (bus, _) = Bus::open(
        &root,
        valid.session.session_id.as_str(),
        KeyUse::Write,
        Durability::Batch,
    )
    .map_err(CliError::internal)?;
    Ok(Opened {
        valid,
        root,
        store,
        bus,
        config,
    })
}

fn check(session: Option<&Path>) -> CmdResult {
    let valid = wavecrew_role_team::validate(session).map_err(CliError::bad_input)?;
    let store = FileTaskStore::for_session(&valid.dir);
    let tasks = store.list()?;
    output::line(check_text(&valid, &tasks).trim_end());
    Ok(Exit::Success)
}

fn options(args: &TeamArgs, opened: &Opened, config_file: Option<&Path>) -> TeamOptions {
    TeamOptions {
        max_parallel: args
            .max_parallel
            .unwrap_or(opened.config.limits.max_parallel)
            .max(1),
        on_failure: match args.on_failure {
            OnFailureArg::Continue => OnFailure::Continue,
            OnFailureArg::Stop => OnFailure::Stop,
        },
        crash_retries: args.crash_retries,
        backend: args.backend.clone(),
        config_file: config_file.map(Path::to_owned),
        ..TeamOptions::default()
    }
}

fn prepare(opened: &mut Opened) -> Result<(), CliError> {
    let r = reconcile(
        &mut opened.valid,
        &opened.store,
        &opened.bus,
        &LeasePolicy::default(),
    )?;
    for id in &r.created {
        output::warning(&format!("{}: created from task-analysis.json", id.as_str()));
    }
    for id in r.reset.iter().chain(&r.orphans) {
        output::warning(&format!("{}: reset from interrupted state", id.as_str()));
    }
    let tasks = opened.store.list()?;
    wavecrew_role_team::check_graph(&tasks)
        .map_err(|e| CliError::bad_input(anyhow::anyhow!("{}: {e}", opened.valid.dir.display())))?;
    Ok(())
}

fn spawn_and_stop(args: &TeamArgs, config: Option<&Path>, resume: bool) -> CmdResult {
    let mut opened = open(args.session.as_deref(), config)?;
    prepare(&mut opened)?;
    crate::budget::set_hard_budget(&opened.config, &opened.valid.dir, args.hard_budget);
    let options = options(args, &opened, config);
    let rt = runtime()?;
    let _guard = rt.enter();
    let mut team = Team::new(opened.valid.clone(), &opened.store, &opened.bus, options);
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

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::internal)
}

fn clock() -> String {
    let now = jiff::Zoned::now();
    now.strftime("%H:%M:%S").to_string()
}

fn foreground(args: &TeamArgs, config: Option<&Path>) -> CmdResult {
    let mut opened = open(args.session.as_deref(), config)?;
    prepare(&mut opened)?;
    crate::budget::set_hard_budget(&opened.config, &opened.valid.dir, args.hard_budget);
    let options = options(args, &opened, config);
    let rt = runtime()?;
    let started = Instant::now();
    let total = opened.store.list()?.len();
    let session_dir = opened.valid.dir.clone();
    let live_bar = output::live_progress(total);
    let bar = live_bar.clone();
    let end = rt.block_on(async {
        let mut team = Team::new(opened.valid.clone(), &opened.store, &opened.bus, options);
        team.on_progress = Box::new(move |p| {
            let line = match p {
                Progress::Spawned { task, role, pid } => {
                    format!("{} started ({role}, pid {pid})", task.as_str())
                }
                Progress::Finished { task, status } => {
                    let mut l = format!("{} {}", task.as_str(), status.as_str());
                    if *status == wavecrew_core::TaskStatus::Failed {
                        let _ = write!(
                            l,
                            " (see {}/workers/{}.log and {}/attempts/{}/)",
                            session_dir.display(),
                            task.as_str(),
                            session_dir.display(),
                            task.as_str()
                        );
                    }
                    l
                }
                Progress::Crashed { task, crashes } => {
                    format!("{} worker crashed ({crashes}); retrying", task.as_str())
                }
                Progress::Totals {
                    done,
                    total,
                    running,
                } => format!("progress {done}/{total} done, {running} running"),
            };
            match (&bar, p) {
                (Some(bar), Progress::Totals { done, running, .. }) => {
                    bar.set_position(u64::try_from(*done).unwrap_or(0));
                    bar.set_message(format!("{running} running"));
                }
                (Some(bar), _) => bar.println(format!("[{}] {line}", clock())),
                (None, _) => output::progress(&format!("[{}] {line}", clock())),
            }
        });
        let end = tokio::select! {
            end = team.run() => Some(end),
            _ = tokio::signal::ctrl_c() => None,
        };
        (end, team.valid.clone())
    });
    if let Some(bar) = &live_bar {
        bar.finish_and_clear();
    }
    let (end, mut valid) = end;
    let Some(end) = end else {
        output::error("interrupted: resume with `wavecrew run` on the same session");
        return Ok(Exit::Interrupted);
    };
    let end = end?;
    let tasks = opened.store.list()?;
    let elapsed = started.elapsed();
    match &end {
        RunEnd::Stalled { stuck } => {
            output::error(
                "the pipeline stalled: nothing is ready, nothing runs, and it is not complete",
            );
            for (id, why) in stuck {
                output::error(&format!("  {}: {why}", id.as_str()));
            }
            write_session(&mut valid, &tasks)?;
            let _ = wavecrew_report::write_reports(&valid.dir);
            return Ok(Exit::Failed);
        }
        RunEnd::Paused { task, reason } => {
            output::error(&format!(
                "paused: the consensus on {task} is still blocked after its revision: {reason}"
            ));
            output::error("decide, then resume with `wavecrew run` on the same session");
            valid.session.status = SessionStatus::Paused;
            valid.session.active_workers.clear();
            write_session(&mut valid, &tasks)?;
            let _ = wavecrew_report::write_reports(&valid.dir);
            return Ok(Exit::Failed);
        }
        RunEnd::Complete => valid.session.status = SessionStatus::Completed,
        RunEnd::Failed { .. } => {}
    }
    valid.session.active_workers.clear();
    write_session(&mut valid, &tasks)?;
    match wavecrew_report::write_reports(&valid.dir) {
        Ok(files) => {
            if let Some(f) = files.iter().find(|f| f.ends_with("summary.md")) {
                output::progress(&format!(
                    "reports written to {}",
                    f.parent().unwrap_or(f).display()
                ));
            }
        }
        Err(e) => output::warning(&format!("the reports could not be written: {e}")),
    }
    output::line(banner(&valid, &tasks, elapsed).trim_end());
    // Failures once more, with where to look.
    for t in tasks
        .iter()
        .filter(|t| t.status == wavecrew_core::TaskStatus::Failed)
    {
        let why = t
            .result
            .as_ref()
            .and_then(|r| r.get("error"))
            .and_then(|e| e.as_str())
            .unwrap_or("no error recorded");
        output::error(&format!(
            "{} failed: {why}\n  look at {}/attempts/{}/ and {}/workers/{}.log",
            t.id.as_str(),
            valid.dir.display(),
            t.id.as_str(),
            valid.dir.display(),
            t.id.as_str()
        ));
    }
    if crate::budget::report_verdict(&valid.dir) {
        return Ok(Exit::Failed);
    }
    Ok(match end {
        RunEnd::Complete => Exit::Success,
        _ => Exit::Failed,
    })
}

fn worker(args: &WorkerArgs, config: Option<&Path>) -> CmdResult {
    let opened = open(Some(&args.session), config)?;
    let role = opened
        .valid
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
    let role_file = opened.valid.dir.join(role.instructions_path());
    let mut agent = AgentRole::new(
        role.name.as_str(),
        &role.prefix,
        &role_file,
        opened.root.clone(),
        opened.valid.dir.clone(),
        opened.config.clone(),
    )
    .map_err(|e| CliError::bad_input(anyhow::anyhow!("{}: {e}", role_file.display())))?;
    agent.run_backend.clone_from(&args.backend);
    let task = TaskId::new(args.task.clone())?;
    let rt = runtime()?;
    let options = WorkerOptions {
        task: Some(task),
        fast_advance: true,
        ..WorkerOptions::default()
    };
    let summary = rt.block_on(run_worker(&agent, &opened.store, &opened.bus, &options))?;
    if let Some(why) = &summary.not_taken {
        output::error(why);
        return Ok(Exit::Failed);
    }
    Ok(if summary.failed.is_empty() {
        Exit::Success
    } else {
        Exit::Failed
    })
}
