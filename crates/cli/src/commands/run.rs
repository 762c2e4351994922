//! `wavecrew run` (and `wavecrew-team run`): a task file becomes its
//! session, the session runs in the foreground on the orchestrator's
//! library entry point ([`wavecrew_orchestrator::run`]) with progress lines,
//! then the completion report, the budget verdict, and where the work is.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use wavecrew_core::TaskStore;
use wavecrew_orchestrator::{OpenSession, Progress, RunEnd, RunSpec};
use wavecrew_role_kit::worker_command::{FailurePolicy, failure_policy_parser};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew run` arguments.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A task file (`wavecrew.tasks.toml`: its session is made, or resumed when this file made
    /// it before), or a session folder (`.workflow/.team/<session-id>`).
    pub session: std::path::PathBuf,
    /// How the run goes: parallelism, failures, budget, backend, engine.
    #[command(flatten)]
    pub flags: RunFlags,
    /// For a task file: the project root the session goes under.
    #[arg(long, default_value = ".")]
    pub root: std::path::PathBuf,
    /// Print one JSON object at the end (counts, failed tasks, report paths); progress and
    /// the report stay on stderr.
    #[arg(long)]
    pub json: bool,
    /// After a run whose tasks all completed, fast-forward your branch and work tree to the
    /// session's integration branch (`wavecrew/<session-id>`) when they have not moved since
    /// the start (in a folder without git, write its result into the folder as files when
    /// the folder's files have not changed); otherwise refuse and name the command to run
    /// or the changed files.
    #[arg(long)]
    pub apply: bool,
    /// Serve the session's live cockpit while it runs (its URL, with the token, is printed;
    /// see `wavecrew ui`).
    #[arg(long)]
    pub ui: bool,
    /// Where the cockpit of `--ui` listens.
    #[command(flatten)]
    pub ui_flags: super::ui::UiFlags,
}

/// The flags of a foreground run, shared by `wavecrew run` and
/// `wavecrew-team run|start|resume`.
#[derive(Debug, clap::Args)]
pub struct RunFlags {
    /// Workers at once (default: `[limits] max_parallel`; one with `[isolation] mode =
    /// "in-place"`, where every task shares the project folder).
    #[arg(long)]
    pub max_parallel: Option<usize>,
    /// What a failed task does to the rest of the pipeline.
    #[arg(long, value_parser = failure_policy_parser(), default_value = "continue")]
    pub on_failure: FailurePolicy,
    /// Respawns of a task whose worker crashed.
    #[arg(long, default_value_t = 2)]
    pub crash_retries: u32,
    /// Crossing the run budget (`[budget] run_tokens`, `run_usd`) stops the
    /// running attempts too, not only new ones.
    #[arg(long)]
    pub hard_budget: bool,
    /// Run every task through this backend.
    #[arg(long)]
    pub backend: Option<String>,
    /// Spread the session over hosts: tasks go as tickets to the workers of this NATS server
    /// (`wavecrew worker --engine URL` on each host); default `[engine] url`. See
    /// docs/scale-out.md.
    #[arg(long, value_name = "URL")]
    pub engine: Option<String>,
    /// The agents' box, replacing `[isolation] sandbox`: `required` refuses to start any agent
    /// (before the first task) when a layer (write rules, hidden credentials, scoped signals,
    /// the network of its own) cannot be set up here; `auto` says which layers are on.
    #[arg(long, value_name = "MODE", value_parser = wavecrew_role_kit::worker_command::sandbox_parser())]
    pub sandbox: Option<wavecrew_backends::config::SandboxMode>,
}

impl RunFlags {
    /// The run these flags ask for, with `--config` handed to the workers.
    pub fn spec(&self, config: Option<&Path>) -> RunSpec {
        RunSpec {
            max_parallel: self.max_parallel,
            on_failure: self.on_failure,
            crash_retries: self.crash_retries,
            backend: self.backend.clone(),
            hard_budget: self.hard_budget,
            config_file: config.map(Path::to_owned),
            sandbox: self.sandbox,
            remote: None,
        }
    }
}

/// `wavecrew run`: a task file becomes its session first; then the
/// session runs as `wavecrew-team run` runs it.
pub fn run(a: &RunArgs, config: Option<&Path>) -> CmdResult {
    let session = match super::tasks::session_for_run(&a.session, &a.root) {
        Ok(s) => s,
        // Scripts get their one object even when the input is refused.
        Err(e) if a.json => return super::tasks::after_run(&a.session, Err(e), true),
        Err(e) => return Err(e),
    };
    if a.json {
        output::lines_to_stderr();
    }
    let result = foreground(
        Some(&session),
        a.flags.spec(config),
        a.flags.engine.as_deref(),
        a.ui.then_some(&a.ui_flags),
    );
    // Where the work of an isolated run is; `--apply` takes it.
    let result = match result {
        Ok(Exit::Success) => super::integration::after_run(&session, a.apply),
        other => other,
    };
    super::tasks::after_run(&session, result, a.json)
}

/// Reconcile (telling what was created or reset), check the graph, prune
/// the stale worktrees of an earlier run, and check the agents' box
/// (`sandbox`, from `--sandbox`, replaces `[isolation] sandbox`).
pub fn prepare(
    opened: &mut OpenSession,
    sandbox: Option<wavecrew_backends::config::SandboxMode>,
) -> Result<(), CliError> {
    if let Some(mode) = sandbox {
        opened.config.isolation.sandbox = mode;
    }
    let r = opened.reconcile()?;
    for id in &r.created {
        output::warning(&format!("{}: created from task-analysis.json", id.as_str()));
    }
    for id in r.reset.iter().chain(&r.orphans) {
        output::warning(&format!("{}: reset from interrupted state", id.as_str()));
    }
    opened.check_graph()?;
    opened.check_workspace()?;
    super::integration::prune_at_start(&opened.valid.dir);
    check_layers(&opened.config.isolation)
}

/// The layers of the agents' box this machine can set up: with
/// `sandbox = "required"`, a missing one refuses the run before any task
/// (naming each and why); with `auto`, said once which are on.
fn check_layers(isolation: &wavecrew_backends::config::IsolationConfig) -> Result<(), CliError> {
    use wavecrew_backends::config::{NetworkMode, SandboxMode};
    use wavecrew_sys::sandbox::Support;
    if isolation.sandbox == SandboxMode::Off {
        return Ok(());
    }
    let landlock = wavecrew_sys::sandbox::support();
    let mut missing = Vec::new();
    match &landlock {
        Support::Unavailable(why) => missing.push(format!(
            "what agents write and read cannot be confined on this kernel (Landlock: {why})"
        )),
        Support::Enforced { scoped: false } => missing.push(
            "signals and abstract unix sockets cannot be scoped on this kernel (Landlock ABI 6, \
             Linux 6.12, is needed)"
                .to_owned(),
        ),
        Support::Enforced { scoped: true } => {}
    }
    let network = match isolation.network {
        NetworkMode::Open => {
            Ok("the network is not restricted ([isolation] network = \"open\")".to_owned())
        }
        mode => wavecrew_sys::agent_box::network_support()
            .map(|()| match mode {
                NetworkMode::None => {
                    "they have no network ([isolation] network = \"none\")".to_owned()
                }
                _ => "their network reaches only their backend's model API, the base URLs \
                      their configuration sets and [isolation] allow_hosts, through wavecrew's \
                      egress proxy"
                    .to_owned(),
            })
            .map_err(|why| format!("agents cannot get a network of their own: {why}")),
    };
    if let Err(why) = &network {
        missing.push(why.clone());
    }
    if isolation.sandbox == SandboxMode::Required && !missing.is_empty() {
        // Refused before any task: no agent runs without every layer.
        return Err(CliError::bad_input(anyhow::anyhow!(
            "[isolation] sandbox = \"required\" (wavecrew.toml or --sandbox): {}; no task was \
             started. Run where every layer can be set up, or set sandbox = \"auto\" to run \
             with the layers there are",
            missing.join("; ")
        )));
    }
    // Said once at the start: which layers are on, and what is missing.
    let network_said = match &network {
        Ok(on) => on.clone(),
        Err(why) => format!("the network is not restricted: {why}"),
    };
    if let Support::Unavailable(why) = &landlock {
        output::warning(&format!(
            "agents run unconfined: this kernel cannot confine what they write (Landlock: \
             {why}); {network_said}; set [isolation] sandbox = \"off\" to silence this"
        ));
        return Ok(());
    }
    let said = format!(
        "agents are kept from {}; {network_said}",
        landlock.describe()
    );
    if missing.is_empty() {
        output::progress(&said);
    } else {
        output::warning(&said);
    }
    Ok(())
}

/// `--ui`'s cockpit, closed when the run ends (dropped): its open pages'
/// feeds read the session once more and send the end.
struct CockpitAtEnd<'a> {
    rt: &'a tokio::runtime::Runtime,
    serving: Option<wavecrew_cockpit::Serving>,
}

impl Drop for CockpitAtEnd<'_> {
    fn drop(&mut self) {
        if let Some(serving) = &self.serving {
            self.rt
                .block_on(serving.close(std::time::Duration::from_secs(2)));
        }
    }
}

/// Run the session at `session` in the foreground until its pipeline ends,
/// with progress lines, then the completion report; on the engine of
/// `engine` (else `[engine] url`) the tasks go to remote hosts; with `ui`,
/// the session's cockpit is served while it runs.
pub fn foreground(
    session: Option<&Path>,
    mut spec: RunSpec,
    engine: Option<&str>,
    ui: Option<&super::ui::UiFlags>,
) -> CmdResult {
    let mut opened = OpenSession::open(session, spec.config_file.as_deref())?;
    prepare(&mut opened, spec.sandbox)?;
    if let Err(e) = opened.set_hard_budget(spec.hard_budget) {
        output::warning(&e.to_string());
    }
    let rt = crate::runtime::runtime()?;
    let serving = match ui {
        Some(flags) => Some(rt.block_on(super::ui::start(&opened.valid.dir, flags))?),
        None => None,
    };
    // However the run ends, an open page gets the session as it ended
    // before the cockpit goes with the process.
    let _cockpit = CockpitAtEnd { rt: &rt, serving };
    let engine = match super::engine::url(engine, &opened.config) {
        Some(url) => {
            let run = rt.block_on(super::engine::start(
                &url,
                &opened,
                spec.config_file.as_deref(),
            ))?;
            output::progress(&format!(
                "[executor] tasks go to the workers of {url} (`wavecrew worker --engine {url}`)"
            ));
            spec.remote = Some(run.remote());
            Some(run)
        }
        None => None,
    };
    let total = opened.store.list()?.len();
    let session_dir = opened.valid.dir.clone();
    let live_bar = output::live_progress(total);
    let bar = live_bar.clone();
    let mut team = opened.team(&spec);
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
    if let Some(engine) = &engine {
        rt.block_on(engine.finish());
    }
    super::integration::drain_pool_at_end(&team.valid.dir);
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
    if let Some(verdict) = &finished.budget_crossed {
        output::error(&format!("the run stopped: {verdict}"));
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

fn clock() -> String {
    let now = jiff::Zoned::now();
    now.strftime("%H:%M:%S").to_string()
}
