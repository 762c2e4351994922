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
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use wavecrew_backends::config::{Config, IsolationMode};
use wavecrew_core::role::WorkerOptions;
use wavecrew_core::store::LeasePolicy;
use wavecrew_core::{FileTaskStore, TaskStore};
use wavecrew_msgbus::{Bus, Durability, KeyUse};
use wavecrew_role_kit::run::stop;
use wavecrew_role_kit::{OpenSpec, RoleSession, run_role};
use wavecrew_role_agent::AgentRole;
use wavecrew_orchestrator::reconcile::reconcile;
use wavecrew_orchestrator::report::check_text;
use wavecrew_orchestrator::{FailurePolicy, Progress, RunEnd, Team, TeamOptions, ValidSession};

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

/// `--on-failure`: the scheduler's [`FailurePolicy`], parsed from its name.
pub fn failure_policy_parser() -> impl clap::builder::TypedValueParser<Value = FailurePolicy> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(FailurePolicy::ALL.map(|p| {
        clap::builder::PossibleValue::new(p.name()).help(match p {
            FailurePolicy::Continue => "Skip its dependents, run the rest",
            FailurePolicy::Stop => "Start nothing new",
            FailurePolicy::Always => "Run its dependents anyway",
        })
    }))
    .map(|s| {
        s.parse::<FailurePolicy>()
            .expect("clap admits only the policies' names")
    })
}

/// Options of `start`, `resume` and `run`.
#[derive(Debug, Args)]
pub struct TeamArgs {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: Option<PathBuf>,
    /// Workers at once (default: `[limits] max_parallel`; one in place).
    #[arg(long)]
    pub max_parallel: Option<usize>,
    /// What a failed task does to the rest of the pipeline.
    #[arg(long, value_parser = failure_policy_parser(), default_value = "continue")]
    pub on_failure: FailurePolicy,
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
    /// Run the tasks on hosts that take tickets from this NATS server
    /// (`wavecrew worker`), instead of here (default: `[engine] url`).
    #[arg(long, value_name = "URL")]
    pub engine: Option<String>,
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
    /// Then take the one successor of the role it unblocked.
    #[arg(long)]
    pub fast_advance: bool,
    /// The run's failure policy: with `always`, a task whose blockers
    /// ended (failed ones included) may be taken.
    #[arg(long, value_parser = failure_policy_parser(), default_value = "continue")]
    pub on_failure: FailurePolicy,
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
    store: Arc<FileTaskStore>,
    bus: Arc<Bus>,
    config: Config,
}

fn open(session: Option<&Path>, config: Option<&Path>) -> Result<Opened, CliError> {
    let valid = wavecrew_orchestrator::validate(session).map_err(|e| {
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
    let store = Arc::new(FileTaskStore::for_session(&valid.dir));
    let (bus, _) = Bus::open(
        &root,
        valid.session.session_id.as_str(),
        KeyUse::Write,
        Durability::Batch,
    )
    .map_err(CliError::internal)?;
    let bus = Arc::new(bus);
    Ok(Opened {
        valid,
        store,
        bus,
        config,
    })
}

fn check(session: Option<&Path>) -> CmdResult {
    let valid = wavecrew_orchestrator::validate(session).map_err(CliError::bad_input)?;
    let store = FileTaskStore::for_session(&valid.dir);
    let tasks = store.list()?;
    output::line(check_text(&valid, &tasks).trim_end());
    Ok(Exit::Success)
}

fn options(args: &TeamArgs, opened: &Opened, config_file: Option<&Path>) -> TeamOptions {
    TeamOptions {
        max_parallel: max_parallel(args.max_parallel, &opened.config),
        on_failure: args.on_failure,
        crash_retries: args.crash_retries,
        backend: args.backend.clone(),
        config_file: config_file.map(Path::to_owned),
        config: opened.config.clone(),
        ..TeamOptions::default()
    }
}

/// Workers at once: `--max-parallel`, else `[limits] max_parallel` for an
/// isolated run, else one: in place, every task shares the project folder,
/// so a neighbour's half-done edit would fail a task's validation.
pub(crate) fn max_parallel(flag: Option<usize>, config: &Config) -> usize {
    match flag {
        Some(n) => n.max(1),
        None if config.isolation.mode == IsolationMode::InPlace => 1,
        None => config.limits.max_parallel.max(1),
    }
}

fn prepare(opened: &mut Opened) -> Result<(), CliError> {
    let r = reconcile(
        &mut opened.valid,
        &*opened.store,
        &*opened.bus,
        &LeasePolicy::default(),
    )?;
    for id in &r.created {
        output::warning(&format!("{}: created from task-analysis.json", id.as_str()));
    }
    for id in r.reset.iter().chain(&r.orphans) {
        output::warning(&format!("{}: reset from interrupted state", id.as_str()));
    }
    let tasks = opened.store.list()?;
    wavecrew_orchestrator::check_graph(&tasks)
        .map_err(|e| CliError::bad_input(anyhow::anyhow!("{}: {e}", opened.valid.dir.display())))?;
    crate::commands::integration::prune_at_start(&opened.valid.dir);
    Ok(())
}

fn spawn_and_stop(args: &TeamArgs, config: Option<&Path>, resume: bool) -> CmdResult {
    let mut opened = open(args.session.as_deref(), config)?;
    if let Some(url) = engine_url(args.engine.as_deref(), &opened.config) {
        // Spawn-and-stop leaves no coordinator to bring the work home.
        return Err(CliError::bad_input(anyhow::anyhow!(
            "the engine {url} (--engine or [engine] url) needs a run that stays in the foreground: `wavecrew run` (or `wavecrew-team run`), not `start` or `resume`"
        )));
    }
    prepare(&mut opened)?;
    crate::budget::set_hard_budget(&opened.config, &opened.valid.dir, args.hard_budget);
    let options = options(args, &opened, config);
    let rt = runtime()?;
    let _guard = rt.enter();
    let mut team = Team::new(
        opened.valid.clone(),
        opened.store.clone(),
        opened.bus.clone(),
        options,
    );
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

/// The engine URL of a run: `--engine`, else `[engine] url`.
fn engine_url(flag: Option<&str>, config: &Config) -> Option<String> {
    flag.map(str::to_owned)
        .or_else(|| config.engine.url.clone())
}

/// Connect to the engine, announce the session, publish what the hosts need.
async fn start_coordinator(
    url: &str,
    opened: &Opened,
    config_file: Option<&Path>,
) -> Result<Arc<wavecrew_fleet::Coordinator>, CliError> {
    let root = wavecrew_core::source::project_root(&opened.valid.dir).ok_or_else(|| {
        CliError::bad_input(anyhow::anyhow!(
            "{}: not inside a project",
            opened.valid.dir.display()
        ))
    })?;
    let config_file = config_file
        .map(Path::to_owned)
        .or_else(|| opened.config.source.clone());
    let engine = &opened.config.engine;
    let options = wavecrew_fleet::CoordinatorOptions {
        url: url.to_owned(),
        credentials: engine.credentials_path(opened.config.source.as_deref()),
        ack_wait: std::time::Duration::from_secs(engine.ack_wait_secs),
        poll: std::time::Duration::from_millis(100),
    };
    let session = wavecrew_fleet::CoordinatedSession {
        dir: opened.valid.dir.clone(),
        root,
        session_id: opened.valid.session.session_id.as_str().to_owned(),
        roles: opened.valid.session.roles.clone(),
        config_file,
    };
    Box::pin(wavecrew_fleet::Coordinator::start(
        options,
        &session,
        opened.store.clone(),
        opened.bus.clone(),
    ))
    .await
    .map_err(|e| CliError::bad_input(anyhow::anyhow!("the engine at {url}: {e}")))
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
    let mut options = options(args, &opened, config);
    let rt = runtime()?;
    let coordinator = match engine_url(args.engine.as_deref(), &opened.config) {
        Some(url) => {
            let c = rt.block_on(start_coordinator(&url, &opened, config))?;
            output::progress(&format!(
                "[executor] tasks go to the workers of {url} (`wavecrew worker --engine {url}`)"
            ));
            options.remote = Some(c.clone());
            Some(c)
        }
        None => None,
    };
    let total = opened.store.list()?.len();
    let session_dir = opened.valid.dir.clone();
    let live_bar = output::live_progress(total);
    let bar = live_bar.clone();
    let mut team = Team::new(
        opened.valid.clone(),
        opened.store.clone(),
        opened.bus.clone(),
        options,
    );
    team.on_progress = Arc::new(move |p| progress_line(bar.as_ref(), &session_dir, p));
    let end = rt.block_on(async {
        tokio::select! {
            end = team.run() => Some(end),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    if let Some(bar) = &live_bar {
        bar.finish_and_clear();
    }
    if let Some(c) = &coordinator
        && let Err(e) = rt.block_on(c.finish())
    {
        output::error(&format!("the engine at {}: {e}", c.url()));
    }
    let Some(end) = end else {
        output::error("interrupted: resume with `wavecrew run` on the same session");
        return Ok(Exit::Interrupted);
    };
    let end = end?;
    if let RunEnd::Interrupted { task, reason } = &end {
        // Record what can be recorded; the interruption is the news.
        if let Err(e) = team.finish(&end) {
            output::error(&format!("the session could not be finished: {e}"));
        }
        output::error(&format!(
            "interrupted: the worker of {} stopped: {reason}",
            task.as_str()
        ));
        output::error(
            "nothing new was started; fix the cause (a full disk: free some space), then resume with `wavecrew run` on the same session",
        );
        return Ok(Exit::Interrupted);
    }
    let finished = team.finish(&end)?;
    let dir = team.valid.dir.display().to_string();
    let reports_ok = match &finished.reports {
        Ok(reports) => {
            output::progress(&format!("reports written to {}", reports.display()));
            true
        }
        Err(e) => {
            output::error(&format!("the reports could not be written: {e}"));
            false
        }
    };
    match &end {
        RunEnd::Stalled { stuck } => {
            output::error(
                "the pipeline stalled: nothing is ready, nothing runs, and it is not complete",
            );
            for (id, why) in stuck {
                output::error(&format!("  {}: {why}", id.as_str()));
            }
            return Ok(Exit::Failed);
        }
        RunEnd::Paused { task, reason } => {
            output::error(&format!(
                "paused: the consensus on {task} is still blocked after its revision: {reason}"
            ));
            output::error("decide, then resume with `wavecrew run` on the same session");
            return Ok(Exit::Failed);
        }
        RunEnd::Interrupted { .. } => return Ok(Exit::Interrupted),
        RunEnd::Complete | RunEnd::Failed { .. } => {}
    }
    output::line(finished.banner.trim_end());
    // Failures once more, with where to look.
    for (id, why) in &finished.failures {
        let id = id.as_str();
        output::error(&format!(
            "{id} failed: {why}\n  look at {dir}/attempts/{id}/ and {dir}/workers/{id}.log"
        ));
    }
    if crate::budget::report_verdict(&team.valid.dir) {
        return Ok(Exit::Failed);
    }
    Ok(match end {
        RunEnd::Complete if reports_ok => Exit::Success,
        RunEnd::Complete => Exit::Internal,
        _ => Exit::Failed,
    })
}

/// One progress line: on the live bar (a terminal), else a timestamped
/// line on stderr.
fn progress_line(bar: Option<&indicatif::ProgressBar>, session_dir: &Path, p: &Progress) {
    let line = match p {
        Progress::Spawned { task, role, pid } => {
            format!("{} started ({role}, pid {pid})", task.as_str())
        }
        Progress::Finished { task, status } => {
            let mut l = format!("{} {}", task.as_str(), status.as_str());
            if status.is_unsuccessful() {
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
    match (bar, p) {
        (Some(bar), Progress::Totals { done, running, .. }) => {
            bar.set_position(u64::try_from(*done).unwrap_or(0));
            bar.set_message(format!("{running} running"));
        }
        (Some(bar), _) => bar.println(format!("[{}] {line}", clock())),
        (None, _) => output::progress(&format!("[{}] {line}", clock())),
    }
}

fn worker(args: &WorkerArgs, config: Option<&Path>) -> CmdResult {
    let valid = wavecrew_orchestrator::validate(Some(&args.session)).map_err(|e| {
        CliError::bad_input(anyhow::anyhow!(
            "{e}\nhint: re-run team-coordinate to regenerate the session"
        ))
    })?;
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
        task: Some(&args.task),
        backend: args.backend.clone(),
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
    let options = WorkerOptions {
        task: session.task.clone(),
        fast_advance: args.fast_advance,
        blockers: crate::worker::blocker_rule(args.on_failure),
        ..WorkerOptions::default()
    };
    Ok(run_role(&session, &agent, &options, stop)?.into())
}
