//! The orchestrator of seed 001, on the scheduler's dispatcher.
//!
//! Every worker is a process: the built-in role binaries for their
//! prefixes, `wavecrew-team worker` for a role known only by its `.md`
//! ([`crate::launch`]). The orchestrator assigns the task id when it starts
//! a worker and the worker takes exactly that task (this removes the seed's
//! hand-off deadlock, ccw-compat §7 item 9b).
//!
//! * [`Team::start`] / [`Team::resume`]: spawn what is ready (detached,
//!   with fast-advance), record `active_workers`, stop (the seed's
//!   spawn-and-stop);
//! * [`Team::run`]: the whole pipeline in the foreground through
//!   [`wavecrew_scheduler::Dispatcher`]: a task starts when its
//!   dependencies are done and a slot is free, most critical first (longest
//!   remaining path: estimates, else durations measured in earlier runs of
//!   the session, else unit weights), within the global limit, the limits
//!   per role (`[limits.roles]`) and per backend (`[backends.<name>]
//!   max_parallel`), and the file-overlap gate for tasks that declare files.
//!   It reacts to events: a worker's exit (its task is then read once), a
//!   record on the bus (followed from where it was, for `capability_gap`
//!   and `consensus_blocked`), a live worker of an earlier run ending (it is
//!   adopted, not duplicated). Crashes send the task back to pending and
//!   retry it up to a limit; failures follow the [`FailurePolicy`];
//! * [`Team::finish`]: the session's final state, the reports and the
//!   completion banner.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use wavecrew_core::bus::{BusCursor, MessageBus, NewMessage};
use wavecrew_core::store::{LeasePolicy, pid_alive};
use wavecrew_core::{SessionStatus, Task, TaskId, TaskStatus, TaskStore};
pub use wavecrew_scheduler::FailurePolicy;
use wavecrew_scheduler::{
    BuildOptions, Dag, DispatchEvent, DispatchOptions, Dispatcher, FinalState, RunOutcome,
    TaskNode, TaskRunner,
};

use crate::launch::Launcher;
use crate::ledger::{Ledger, Note, NoteSender};
use crate::reconcile::write_session;
use crate::validate::ValidSession;

pub use crate::launch::sibling_program;

/// How the orchestrator runs.
#[derive(Debug, Clone)]
pub struct TeamOptions {
    /// Workers at once.
    pub max_parallel: usize,
    /// After a failure: `continue` (skip its dependents), `stop` (start
    /// nothing new) or `always` (its dependents run anyway).
    pub on_failure: FailurePolicy,
    /// Respawns of a task whose worker crashed.
    pub crash_retries: u32,
    /// `--backend` for every worker.
    pub backend: Option<String>,
    /// `--config` for every worker.
    pub config_file: Option<PathBuf>,
    /// `wavecrew.toml`: the limits per role and per backend, and backend
    /// names.
    pub config: wavecrew_backends::Config,
    /// Folder holding the worker binaries (default: beside this program).
    pub bin_dir: Option<PathBuf>,
    /// How often the bus is followed and an adopted worker's pid checked.
    pub poll: Duration,
    /// Run every task's worker elsewhere (`wavecrew run --engine`: hosts
    /// taking tickets) instead of as a local process.
    pub remote: Option<Arc<dyn RemoteWorkers>>,
}

/// Workers that run elsewhere: on other hosts, through an engine. The
/// orchestrator schedules as always; for each task it calls
/// [`RemoteWorkers::run`] where it would start a process, and reads the
/// task from its store when that returns.
#[async_trait::async_trait]
pub trait RemoteWorkers: Send + Sync + std::fmt::Debug {
    /// Run `task` (of role `role`) to its end, and bring that end (state,
    /// result, the attempt's files and records, its merge) into the local
    /// session before returning. A task still not ended in the local store
    /// afterwards counts as a crash. `Err`: it could not be run at all (the
    /// task fails with that message).
    async fn run(&self, task: &Task, role: &str) -> Result<(), String>;
}

impl Default for TeamOptions {
    fn default() -> Self {
        TeamOptions {
            max_parallel: 4,
            on_failure: FailurePolicy::Continue,
            crash_retries: 2,
            backend: None,
            config_file: None,
            config: wavecrew_backends::Config::default(),
            bin_dir: None,
            poll: Duration::from_millis(50),
            remote: None,
        }
    }
}

/// How a foreground run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// Every task completed.
    Complete,
    /// Some tasks failed or were skipped; the rest completed.
    Failed {
        /// The failed tasks.
        failed: Vec<TaskId>,
        /// Their skipped dependents.
        skipped: Vec<TaskId>,
    },
    /// A `consensus_blocked` record of severity HIGH came back after its
    /// revision task: a person has to decide.
    Paused {
        /// The task whose consensus is blocked.
        task: String,
        /// What the record said.
        reason: String,
    },
    /// Nothing is ready, nothing runs, and the pipeline is not complete.
    Stalled {
        /// Each stuck task and why.
        stuck: Vec<(TaskId, String)>,
    },
    /// A worker was interrupted by its environment (it exited 3: a full
    /// disk, say): nothing new started, the task stays for a resume.
    Interrupted {
        /// The task whose worker was interrupted.
        task: TaskId,
        /// What the worker said last.
        reason: String,
    },
}

/// The first worker interruption of a run, shared by the runners (which
/// set it), the ledger (which then skips nothing) and the dispatch loop
/// (which then starts nothing).
pub(crate) type Interruption = Arc<std::sync::Mutex<Option<(TaskId, String)>>>;

/// The interruption, if any.
pub(crate) fn interrupted(i: &Interruption) -> Option<(TaskId, String)> {
    i.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// One line of progress.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A worker started.
    Spawned {
        /// The task.
        task: TaskId,
        /// The role.
        role: String,
        /// The worker's pid.
        pid: u32,
    },
    /// A task reached a final state.
    Finished {
        /// The task.
        task: TaskId,
        /// Its state.
        status: TaskStatus,
    },
    /// A worker crashed; its task went back to pending.
    Crashed {
        /// The task.
        task: TaskId,
        /// How many crashes so far.
        crashes: u32,
    },
    /// Running totals.
    Totals {
        /// Completed tasks.
        done: usize,
        /// All tasks.
        total: usize,
        /// Running workers.
        running: usize,
    },
}

/// The progress callback.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// The orchestrator over one session.
pub struct Team<B: MessageBus + 'static> {
    /// The validated session.
    pub valid: ValidSession,
    /// The task store.
    pub store: Arc<dyn TaskStore>,
    /// The bus.
    pub bus: Arc<B>,
    /// Options.
    pub options: TeamOptions,
    /// Progress callback.
    pub on_progress: ProgressFn,
    started: Instant,
    revisions: HashMap<String, u32>,
    paused: Option<(String, String)>,
    interruption: Interruption,
}

impl<B: MessageBus + 'static> std::fmt::Debug for Team<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("session", &self.valid.dir)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Tasks whose blockers are all completed and that are pending, in id
/// order.
pub fn ready_tasks(tasks: &[Task]) -> Vec<&Task> {
    let done: HashSet<&TaskId> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .map(|t| &t.id)
        .collect();
    let mut ready: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Pending)
        .filter(|t| t.blocked_by.iter().all(|b| done.contains(b)))
        .collect();
    ready.sort_by(|a, b| wavecrew_core::store::task_order(&a.id, &b.id));
    ready
}

use wavecrew_sys::process::blocking;

/// A record of the orchestrator on the bus: from `executor` to the
/// coordinator, its summary tagged `[executor]`. A bus that cannot take it
/// is logged, not fatal: the task store stays the truth.
pub fn log_record<B: MessageBus + ?Sized>(
    bus: &B,
    kind: &str,
    summary: &str,
    data: Map<String, Value>,
) {
    let logged = bus.log(NewMessage {
        from: "executor".into(),
        to: Some("coordinator".into()),
        kind: Some(kind.into()),
        summary: Some(format!("[executor] {summary}")),
        data: Some(data),
        reference: None,
    });
    if let Err(e) = logged {
        tracing::error!("message bus: {e}");
    }
}

fn task_data(id: &TaskId) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("task_id".into(), json!(id.as_str()));
    data
}

impl<B: MessageBus + 'static> Team<B> {
    /// An orchestrator; reconcile first.
    pub fn new(
        valid: ValidSession,
        store: Arc<dyn TaskStore>,
        bus: Arc<B>,
        options: TeamOptions,
    ) -> Self {
        Team {
            valid,
            store,
            bus,
            options,
            on_progress: Arc::new(|_| {}),
            started: Instant::now(),
            revisions: HashMap::new(),
            paused: None,
            interruption: Interruption::default(),
        }
    }

    fn log(&self, kind: &str, summary: &str, data: Map<String, Value>) {
        log_record(&*self.bus, kind, summary, data);
    }

    /// The launcher of this session's workers.
    pub fn launcher(&self) -> Launcher {
        Launcher {
            session_dir: self.valid.dir.clone(),
            session_id: self.valid.session.session_id.clone(),
            roles: self.valid.session.roles.clone(),
            backend: self.options.backend.clone(),
            config_file: self.options.config_file.clone(),
            bin_dir: self.options.bin_dir.clone(),
            on_failure: self.options.on_failure,
        }
    }

    /// The role of a task: its owner, else the session role with its prefix.
    pub fn role_of(&self, task: &Task) -> Option<(String, String)> {
        self.launcher().role_of(task)
    }

    /// The worker command of a task in a foreground run.
    pub fn worker_command(&self, task: &Task) -> Option<(PathBuf, Vec<String>, String)> {
        self.launcher().command(task, false)
    }

    fn spawn_detached(&mut self, task: &Task) -> std::io::Result<u32> {
        let started = self.launcher().spawn(task, true)?;
        let (pid, role) = (started.pid, started.role);
        let mut data = task_data(&task.id);
        data.insert("role".into(), json!(role));
        data.insert("pid".into(), json!(pid));
        self.log(
            "task_unblocked",
            &format!("{} ready → {role} worker (pid {pid})", task.id.as_str()),
            data,
        );
        self.valid.session.active_workers.push(json!({
            "role": role, "task": task.id.as_str(), "pid": pid,
            "spawned_at": jiff::Timestamp::now().to_string(),
        }));
        (self.on_progress)(&Progress::Spawned {
            task: task.id.clone(),
            role,
            pid,
        });
        Ok(pid)
    }

    /// Spawn-and-stop: start a worker for every ready task not already
    /// held, record them, save the session. Returns the tasks started.
    pub fn start(&mut self) -> wavecrew_core::Result<Vec<TaskId>> {
        let tasks = self.store.list()?;
        let held: HashSet<String> = self
            .valid
            .session
            .active_workers
            .iter()
            .filter_map(|w| w.get("task").and_then(|t| t.as_str()).map(str::to_owned))
            .collect();
        let ready: Vec<Task> = ready_tasks(&tasks)
            .into_iter()
            .filter(|t| !held.contains(t.id.as_str()))
            .take(self.options.max_parallel)
            .cloned()
            .collect();
        let mut started = Vec::new();
        for t in &ready {
            match self.spawn_detached(t) {
                Ok(_) => started.push(t.id.clone()),
                Err(e) => tracing::error!("{}: {e}", t.id.as_str()),
            }
        }
        write_session(&mut self.valid, &tasks)?;
        Ok(started)
    }

    /// Advance a spawn-and-stop session: forget finished or dead workers,
    /// then start what became ready.
    pub fn resume(&mut self) -> wavecrew_core::Result<Vec<TaskId>> {
        let tasks = self.store.list()?;
        let in_progress: HashSet<&str> = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::InProgress)
            .map(|t| t.id.as_str())
            .collect();
        self.valid.session.active_workers.retain(|w| {
            let task = w.get("task").and_then(|t| t.as_str());
            let pid = w.get("pid").and_then(serde_json::Value::as_u64);
            task.is_some_and(|id| in_progress.contains(id))
                && pid.is_some_and(|p| u32::try_from(p).is_ok_and(pid_alive))
        });
        self.store.reconcile(&LeasePolicy::default())?;
        self.start()
    }

    /// Each stuck pending task and why it cannot start.
    fn stuck(&self, tasks: &[Task]) -> Vec<(TaskId, String)> {
        let launcher = self.launcher();
        let by_id: BTreeMap<&TaskId, &Task> = tasks.iter().map(|t| (&t.id, t)).collect();
        tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Pending)
            .map(|t| {
                if launcher.role_of(t).is_none() {
                    return (
                        t.id.clone(),
                        format!(
                            "no role of the session takes it (owner {:?}, prefix {:?})",
                            t.owner.as_deref().unwrap_or("none"),
                            t.id.prefix().unwrap_or("")
                        ),
                    );
                }
                let waits: Vec<String> = t
                    .blocked_by
                    .iter()
                    .filter(|b| {
                        by_id
                            .get(b)
                            .is_none_or(|x| x.status != TaskStatus::Completed)
                    })
                    .map(|b| match by_id.get(b) {
                        None => format!("{} (missing)", b.as_str()),
                        Some(x) => format!("{} ({})", b.as_str(), x.status.as_str()),
                    })
                    .collect();
                (t.id.clone(), format!("waits for {}", waits.join(", ")))
            })
            .collect()
    }

    /// React to workers' callbacks on the bus since `cursor`:
    /// `capability_gap` (warn and go on) and `consensus_blocked` (HIGH: one
    /// revision task, then a pause for a person; MEDIUM: noted in
    /// `wisdom/issues.md`; LOW: go on). Returns whether a task was created.
    async fn follow_bus(&mut self, cursor: &mut BusCursor) -> wavecrew_core::Result<bool> {
        let bus = Arc::clone(&self.bus);
        let from = *cursor;
        let (records, next) = blocking(move || bus.since(from))
            .await
            .map_err(|e| wavecrew_core::CoreError::Bus(e.to_string()))?;
        *cursor = next;
        let mut created = false;
        for m in records {
            let data = m.data.clone().unwrap_or_default();
            let task = data
                .get("task_id")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .to_owned();
            match m.kind.as_str() {
                "capability_gap" => {
                    let mut d = Map::new();
                    d.insert("gap".into(), json!(m.summary));
                    self.log(
                        "warning",
                        &format!(
                            "capability gap reported by {}: {} (continuing; add a role file or re-run team-coordinate to cover it)",
                            m.from, m.summary
                        ),
                        d,
                    );
                }
                "consensus_blocked" => {
                    let severity = data
                        .get("severity")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("LOW")
                        .to_ascii_uppercase();
                    match severity.as_str() {
                        "HIGH" => created |= self.consensus_high(&task, &m.summary)?,
                        "MEDIUM" => {
                            let Some(id) = TaskId::new(task.clone())
                                .or_else(|_| TaskId::new("UNKNOWN-000"))
                                .ok()
                            else {
                                continue;
                            };
                            if let Err(e) = wavecrew_core::wisdom::append_wisdom(
                                &self.valid.dir,
                                "issues",
                                &id,
                                &format!("consensus blocked (MEDIUM): {}", m.summary),
                            ) {
                                tracing::error!("wisdom/issues.md: {e}");
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        Ok(created)
    }

    /// A HIGH `consensus_blocked`: the first time, a revision task
    /// `<ID>-R1` for the same owner; after that, a pause. Returns whether
    /// the revision was created.
    fn consensus_high(&mut self, task: &str, reason: &str) -> wavecrew_core::Result<bool> {
        let n = self.revisions.entry(task.to_owned()).or_insert(0);
        *n += 1;
        let revision = format!("{task}-R1");
        let exists = TaskId::new(revision.clone())
            .ok()
            .is_some_and(|id| self.store.get(&id).is_ok());
        if *n == 1 && !exists {
            let original = TaskId::new(task.to_owned())
                .ok()
                .and_then(|id| self.store.get(&id).ok());
            if let (Some(original), Ok(id)) = (original, TaskId::new(revision.clone())) {
                let mut t = Task::new(
                    id.clone(),
                    format!("{revision}: revise {task}"),
                    format!(
                        "Revise the work of {task}: its consensus was blocked.\n\n{reason}\n\nOriginal task:\n{}",
                        original.description
                    ),
                );
                t.owner.clone_from(&original.owner);
                self.store.create(t)?;
                let mut d = Map::new();
                d.insert("task_id".into(), json!(revision));
                d.insert("revises".into(), json!(task));
                self.log(
                    "task_created",
                    &format!(
                        "consensus blocked (HIGH) on {task}: revision task {revision} created"
                    ),
                    d,
                );
                return Ok(true);
            }
        }
        let mut d = Map::new();
        d.insert("task_id".into(), json!(task));
        self.log(
            "paused",
            &format!("consensus blocked (HIGH) again on {task}: pausing for a person"),
            d,
        );
        self.paused = Some((task.to_owned(), reason.to_owned()));
        Ok(false)
    }

    /// The scheduler's view of the tasks: a node per task a role takes
    /// (completed ones as done), critical-path estimates, classes for the
    /// role and backend limits, declared files. A task no role takes, and
    /// everything downstream of it, is left out: it stays pending and the
    /// run ends stalled, naming it.
    fn nodes(&self, tasks: &[Task], measured: &Measured) -> Vec<TaskNode> {
        let launcher = self.launcher();
        let config = &self.options.config;
        let (_, backend_limits) = config.concurrency();
        let role_limits = &config.limits.roles;
        let mut unrunnable: HashSet<&TaskId> = tasks
            .iter()
            .filter(|t| t.status != TaskStatus::Completed && launcher.role_of(t).is_none())
            .map(|t| &t.id)
            .collect();
        // Downstream of an unrunnable task: one pass over the edges per
        // level reached (the dependents index is built once).
        let mut dependents: HashMap<&TaskId, Vec<&TaskId>> = HashMap::new();
        for t in tasks {
            for b in &t.blocked_by {
                dependents.entry(b).or_default().push(&t.id);
            }
        }
        let mut stack: Vec<&TaskId> = unrunnable.iter().copied().collect();
        while let Some(id) = stack.pop() {
            for d in dependents.get(id).into_iter().flatten() {
                if unrunnable.insert(d) {
                    stack.push(d);
                }
            }
        }
        tasks
            .iter()
            .filter(|t| !unrunnable.contains(&t.id))
            .map(|t| {
                let role = launcher.role_of(t).map(|(name, _)| name);
                let estimate = t
                    .estimate_secs()
                    .or_else(|| measured.of(&t.id))
                    .unwrap_or(wavecrew_scheduler::DEFAULT_ESTIMATE);
                let mut node = TaskNode::new(t.id.clone(), t.blocked_by.iter().cloned())
                    .with_done(t.status == TaskStatus::Completed)
                    .with_estimate(estimate)
                    .with_files(t.files());
                if let Some(role) = role.filter(|r| role_limits.contains_key(r)) {
                    node = node.with_more_class(role_class(&role));
                }
                let backend = self
                    .options
                    .backend
                    .as_deref()
                    .or_else(|| t.executor())
                    .map(|b| config.canonical_name(b));
                if let Some(b) = backend.filter(|b| backend_limits.contains_key(b)) {
                    node = node.with_more_class(backend_class(&b));
                }
                node
            })
            .collect()
    }

    fn dispatch_options(&self) -> DispatchOptions {
        let config = &self.options.config;
        let mut options = DispatchOptions::default()
            .with_max_parallel(Some(self.options.max_parallel.max(1)))
            .with_failure_policy(self.options.on_failure);
        for (role, limit) in &config.limits.roles {
            options = options.with_class_limit(role_class(role), *limit);
        }
        for (backend, limit) in config.concurrency().1 {
            options = options.with_class_limit(backend_class(&backend), limit);
        }
        options
    }

    /// Run the pipeline in the foreground until it ends.
    pub async fn run(&mut self) -> wavecrew_core::Result<RunEnd> {
        let store = Arc::clone(&self.store);
        let tasks = blocking(move || store.list()).await?;
        let done = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count();
        let (notes, ledger) = Ledger::start(
            self.valid.clone(),
            Arc::clone(&self.store),
            Arc::clone(&self.bus),
            Arc::clone(&self.on_progress),
            Arc::clone(&self.interruption),
            (tasks.len(), done),
        );
        let outcome = self.dispatch_rounds(tasks, &notes).await;
        drop(notes);
        let valid = ledger.finish();
        self.valid.session.active_workers = valid.session.active_workers;
        self.valid.session.pipeline = valid.session.pipeline;
        let stopping = outcome?;
        if let Some((task, reason)) = interrupted(&self.interruption) {
            return Ok(RunEnd::Interrupted { task, reason });
        }
        let store = Arc::clone(&self.store);
        let tasks = blocking(move || store.list()).await?;
        if let Some((task, reason)) = self.paused.clone() {
            self.valid.session.status = SessionStatus::Paused;
            return Ok(RunEnd::Paused { task, reason });
        }
        let failed: Vec<TaskId> = tasks
            .iter()
            .filter(|t| t.status.is_unsuccessful())
            .map(|t| t.id.clone())
            .collect();
        let skipped: Vec<TaskId> = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Skipped)
            .map(|t| t.id.clone())
            .collect();
        let pending = tasks.iter().any(|t| t.status == TaskStatus::Pending);
        if pending && !stopping && failed.is_empty() {
            return Ok(RunEnd::Stalled {
                stuck: self.stuck(&tasks),
            });
        }
        if failed.is_empty() && !pending {
            return Ok(RunEnd::Complete);
        }
        Ok(RunEnd::Failed { failed, skipped })
    }

    /// Dispatch rounds: one over the tasks as they are, then another only
    /// if the bus made new tasks (a consensus revision) while nothing was
    /// stopping. Returns whether the run stopped early.
    async fn dispatch_rounds(
        &mut self,
        mut tasks: Vec<Task>,
        notes: &NoteSender,
    ) -> wavecrew_core::Result<bool> {
        let bus = Arc::clone(&self.bus);
        let mut cursor = blocking(move || bus.since(BusCursor::START).map(|(_, c)| c))
            .await
            .map_err(|e| wavecrew_core::CoreError::Bus(e.to_string()))?;
        let session_dir = self.valid.dir.clone();
        let measured = blocking(move || Measured::read(&session_dir)).await;
        let runner = Arc::new(WorkerRunner {
            store: Arc::clone(&self.store),
            bus: Arc::clone(&self.bus),
            launcher: self.launcher(),
            notes: notes.clone(),
            interruption: Arc::clone(&self.interruption),
            crash_retries: self.options.crash_retries,
            poll: self.options.poll,
            remote: self.options.remote.clone(),
        });
        loop {
            let dag = Dag::build(self.nodes(&tasks, &measured), &BuildOptions::default()).map_err(
                |e| wavecrew_core::CoreError::invalid(&self.valid.dir, "tasks", e.to_string()),
            )?;
            if dag.pending_len() == 0 {
                return Ok(false);
            }
            let events = notes.clone();
            let dispatcher = Dispatcher::new(&dag, self.dispatch_options())
                .map_err(|e| {
                    wavecrew_core::CoreError::invalid(&self.valid.dir, "limits", e.to_string())
                })?
                .on_event(move |e| {
                    let note = match e {
                        DispatchEvent::Started(_) => Note::Running,
                        DispatchEvent::Finished(..) => Note::Done,
                        DispatchEvent::Skipped(id, cause) => Note::Skip {
                            task: id.clone(),
                            cause: cause.clone(),
                        },
                        _ => return,
                    };
                    let _ = events.send(note);
                });
            let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
            let shutdown = async move {
                let _ = stop_rx.wait_for(|stop| *stop).await;
            };
            let dispatch = dispatcher.run_until(Arc::clone(&runner), shutdown);
            tokio::pin!(dispatch);
            let mut created = false;
            let report = loop {
                tokio::select! {
                    report = &mut dispatch => break report,
                    () = tokio::time::sleep(self.options.poll) => {
                        created |= self.follow_bus(&mut cursor).await?;
                        if self.paused.is_some() || interrupted(&self.interruption).is_some() {
                            let _ = stop_tx.send(true);
                        }
                    }
                }
            };
            // Records the last workers wrote before they exited.
            created |= self.follow_bus(&mut cursor).await?;
            let stopped_by_failure = self.options.on_failure == FailurePolicy::Stop
                && report
                    .states
                    .values()
                    .any(|s| matches!(s, FinalState::Failed(_)));
            if report.cancelled
                || stopped_by_failure
                || self.paused.is_some()
                || interrupted(&self.interruption).is_some()
            {
                return Ok(true);
            }
            if !created {
                return Ok(false);
            }
            let store = Arc::clone(&self.store);
            tasks = blocking(move || store.list()).await?;
        }
    }

    /// How long since this orchestrator started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// The exit code of a worker interrupted by its environment (every
/// wavecrew binary: 3, interrupted and resumable).
const INTERRUPTED_EXIT: i32 = 3;

fn role_class(role: &str) -> String {
    format!("role:{role}")
}

fn backend_class(backend: &str) -> String {
    format!("backend:{backend}")
}

/// Durations measured in earlier runs of the session (from the attempts'
/// `outcome.json`), for the critical path of tasks without an estimate.
#[derive(Debug, Default)]
struct Measured {
    /// Seconds of each task's attempts, summed.
    by_task: HashMap<String, f64>,
}

impl Measured {
    fn read(session_dir: &Path) -> Measured {
        let mut by_task = HashMap::new();
        let Ok(entries) =
            std::fs::read_dir(wavecrew_core::SessionLayout::new(session_dir).attempts_root())
        else {
            return Measured::default();
        };
        for entry in entries.flatten() {
            let Ok(attempts) = std::fs::read_dir(entry.path()) else {
                continue;
            };
            let mut seconds = 0.0;
            for attempt in attempts.flatten() {
                let Ok(text) = std::fs::read(attempt.path().join("outcome.json")) else {
                    continue;
                };
                let ms = serde_json::from_slice::<Value>(&text)
                    .ok()
                    .and_then(|v| v.get("duration_ms").and_then(Value::as_f64));
                seconds += ms.unwrap_or(0.0) / 1000.0;
            }
            if seconds > 0.0 {
                by_task.insert(entry.file_name().to_string_lossy().into_owned(), seconds);
            }
        }
        Measured { by_task }
    }

    /// The task's own measured time, else the mean of the tasks measured
    /// so far.
    fn of(&self, id: &TaskId) -> Option<f64> {
        if let Some(s) = self.by_task.get(id.as_str()) {
            return Some(*s);
        }
        if self.by_task.is_empty() {
            return None;
        }
        #[allow(clippy::cast_precision_loss)] // a count of tasks
        let n = self.by_task.len() as f64;
        Some(self.by_task.values().sum::<f64>() / n)
    }
}

/// Runs one task of a foreground run: reads it once, adopts a live worker
/// of an earlier run, or starts a worker and waits for its exit; a worker
/// that ends without finishing its task is a crash (the task returns to
/// pending and is retried up to a limit).
struct WorkerRunner<B: MessageBus + 'static> {
    store: Arc<dyn TaskStore>,
    bus: Arc<B>,
    launcher: Launcher,
    notes: NoteSender,
    interruption: Interruption,
    crash_retries: u32,
    poll: Duration,
    remote: Option<Arc<dyn RemoteWorkers>>,
}

impl<B: MessageBus + 'static> WorkerRunner<B> {
    async fn get(&self, id: &TaskId) -> wavecrew_core::Result<Task> {
        let store = Arc::clone(&self.store);
        let id = id.clone();
        blocking(move || store.get(&id)).await
    }

    fn ended(&self, task: &Task) -> Option<RunOutcome> {
        let outcome = match task.status {
            TaskStatus::Completed => RunOutcome::Succeeded,
            TaskStatus::Failed => RunOutcome::failed(task.error().unwrap_or("failed")),
            // Needs a person (a merge conflict that survived its revision):
            // an end for this run, as a failure is.
            TaskStatus::Blocked => RunOutcome::failed(task.error().unwrap_or("blocked")),
            TaskStatus::Skipped => return Some(RunOutcome::failed("skipped")),
            _ => return None,
        };
        let _ = self.notes.send(Note::Finished {
            task: task.id.clone(),
            status: task.status,
        });
        Some(outcome)
    }

    /// A worker ended without finishing `id`: back to pending, or failed
    /// after too many crashes.
    async fn crashed(
        &self,
        id: &TaskId,
        crashes: u32,
    ) -> wavecrew_core::Result<Option<RunOutcome>> {
        let store = Arc::clone(&self.store);
        let bus = Arc::clone(&self.bus);
        let retries = self.crash_retries;
        let task = id.clone();
        let give_up = crashes > retries;
        let updated = blocking(move || {
            let updated = store.update(&task, &mut |t| {
                if matches!(t.status, TaskStatus::InProgress | TaskStatus::Pending) {
                    t.lease = None;
                    if give_up {
                        t.status = TaskStatus::Failed;
                        t.result =
                            Some(json!({"error": format!("the worker crashed {crashes} times")}));
                    } else {
                        t.status = TaskStatus::Pending;
                        t.attempts = t.attempts.max(1);
                    }
                }
                Ok(())
            })?;
            let mut data = task_data(&task);
            data.insert("crashes".into(), json!(crashes));
            if give_up {
                log_record(
                    &*bus,
                    "error",
                    &format!(
                        "{} failed: its worker crashed {crashes} times",
                        task.as_str()
                    ),
                    data,
                );
            } else {
                log_record(
                    &*bus,
                    "warning",
                    &format!(
                        "{}: worker crashed ({crashes}/{retries}); the task returns to pending",
                        task.as_str()
                    ),
                    data,
                );
            }
            wavecrew_core::Result::Ok(updated)
        })
        .await?;
        if give_up {
            return Ok(self.ended(&updated));
        }
        let _ = self.notes.send(Note::Crashed {
            task: id.clone(),
            crashes,
        });
        Ok(None)
    }

    async fn run_task(&self, id: &TaskId) -> wavecrew_core::Result<RunOutcome> {
        let mut crashes = 0;
        loop {
            let task = self.get(id).await?;
            if let Some(outcome) = self.ended(&task) {
                return Ok(outcome);
            }
            // Remote workers: the engine holds the truth of a task in
            // progress (the local copy only shows it).
            if let Some(remote) = &self.remote {
                if let Some(outcome) = self.run_remote(&**remote, &task, &mut crashes).await? {
                    return Ok(outcome);
                }
                continue;
            }
            if task.status == TaskStatus::InProgress {
                let holder = task.lease.as_ref().map(|l| l.pid);
                if let Some(pid) = holder.filter(|p| pid_alive(*p)) {
                    // A live worker of an earlier run (or spawn-and-stop):
                    // adopt it, wait for it to end.
                    while blocking(move || pid_alive(pid)).await {
                        tokio::time::sleep(self.poll).await;
                    }
                    let after = self.get(id).await?;
                    if after.status != TaskStatus::InProgress {
                        continue;
                    }
                }
                crashes += 1;
                if let Some(outcome) = self.crashed(id, crashes).await? {
                    return Ok(outcome);
                }
                continue;
            }
            let launcher = self.launcher.clone();
            let to_start = task.clone();
            let started = blocking(move || launcher.spawn(&to_start, false)).await;
            let mut started = match started {
                Ok(s) => s,
                Err(e) => return self.could_not_start(&task, &e).await,
            };
            let pid = started.pid;
            // The ledger records it (session, bus, progress) in the order
            // of everything else that happened.
            let _ = self.notes.send(Note::Spawned {
                task: id.clone(),
                role: started.role.clone(),
                pid,
            });
            let exit = started.child.wait().await;
            let _ = self.notes.send(Note::Exited {
                task: id.clone(),
                pid,
            });
            match exit {
                // Exit 3: the worker's environment interrupted it (a full
                // disk): stop starting work, keep the task for a resume.
                Ok(status) if status.code() == Some(INTERRUPTED_EXIT) => {
                    return Ok(self.interrupted_by(id).await);
                }
                Ok(_) => {}
                Err(e) => tracing::error!("{}: waiting for its worker: {e}", id.as_str()),
            }
            let after = self.get(id).await?;
            if let Some(outcome) = self.ended(&after) {
                return Ok(outcome);
            }
            let taken_over = after.status == TaskStatus::InProgress
                && after
                    .lease
                    .as_ref()
                    .is_some_and(|l| l.pid != pid && pid_alive(l.pid));
            if !taken_over {
                crashes += 1;
                if let Some(outcome) = self.crashed(id, crashes).await? {
                    return Ok(outcome);
                }
            }
        }
    }

    /// One remote run of `task`: its outcome once it ended, or None after
    /// a crash that leaves it for another try.
    async fn run_remote(
        &self,
        remote: &dyn RemoteWorkers,
        task: &Task,
        crashes: &mut u32,
    ) -> wavecrew_core::Result<Option<RunOutcome>> {
        let id = &task.id;
        let Some((role, _)) = self.launcher.role_of(task) else {
            let e = std::io::Error::other(format!("no role takes {}", id.as_str()));
            return self.could_not_start(task, &e).await.map(Some);
        };
        let _ = self.notes.send(Note::Spawned {
            task: id.clone(),
            role: role.clone(),
            pid: 0,
        });
        let ran = remote.run(task, &role).await;
        let _ = self.notes.send(Note::Exited {
            task: id.clone(),
            pid: 0,
        });
        if let Err(e) = ran {
            let e = std::io::Error::other(e);
            return self.could_not_start(task, &e).await.map(Some);
        }
        let after = self.get(id).await?;
        if let Some(outcome) = self.ended(&after) {
            return Ok(Some(outcome));
        }
        *crashes += 1;
        self.crashed(id, *crashes).await
    }

    /// Record that `id`'s worker was interrupted, with the last thing its
    /// log says.
    async fn interrupted_by(&self, id: &TaskId) -> RunOutcome {
        let log =
            wavecrew_core::SessionLayout::new(&self.launcher.session_dir).worker_log(id.as_str());
        let last = blocking(move || std::fs::read_to_string(log).unwrap_or_default()).await;
        let reason = last
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("its worker exited 3 (interrupted)")
            .trim()
            .to_owned();
        let mut slot = self
            .interruption
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert_with(|| (id.clone(), reason.clone()));
        RunOutcome::failed(format!("interrupted: {reason}"))
    }

    async fn could_not_start(
        &self,
        task: &Task,
        e: &std::io::Error,
    ) -> wavecrew_core::Result<RunOutcome> {
        let store = Arc::clone(&self.store);
        let bus = Arc::clone(&self.bus);
        let id = task.id.clone();
        let error = e.to_string();
        let updated = blocking(move || {
            let mut data = task_data(&id);
            data.insert("error".into(), json!(error));
            log_record(&*bus, "error", &format!("{}: {error}", id.as_str()), data);
            store.update(&id, &mut |x| {
                x.status = TaskStatus::Failed;
                x.result = Some(json!({"error": error}));
                Ok(())
            })
        })
        .await?;
        Ok(self
            .ended(&updated)
            .unwrap_or_else(|| RunOutcome::failed(e.to_string())))
    }
}

#[async_trait::async_trait]
impl<B: MessageBus + 'static> TaskRunner for WorkerRunner<B> {
    async fn run(&self, id: &TaskId) -> RunOutcome {
        match self.run_task(id).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!("{}: {e}", id.as_str());
                RunOutcome::failed(e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    #[test]
    fn measured_durations_come_from_earlier_attempts() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |task: &str, n: u32, ms: u64| {
            let dir = tmp.path().join("attempts").join(task).join(n.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("outcome.json"),
                json!({"duration_ms": ms, "outcome": "success"}).to_string(),
            )
            .unwrap();
        };
        write("IMPL-001", 1, 1500);
        write("IMPL-001", 2, 500);
        write("IMPL-002", 1, 4000);
        // An attempt killed before its outcome counts nothing.
        std::fs::create_dir_all(tmp.path().join("attempts/IMPL-003/1")).unwrap();
        let m = Measured::read(tmp.path());
        assert_eq!(m.of(&id("IMPL-001")), Some(2.0), "its attempts, summed");
        assert_eq!(m.of(&id("IMPL-002")), Some(4.0));
        assert_eq!(m.of(&id("IMPL-009")), Some(3.0), "the mean of the others");
        assert!(
            Measured::read(&tmp.path().join("none"))
                .of(&id("IMPL-001"))
                .is_none()
        );
    }

    #[test]
    fn a_failure_policy_reads_and_prints_its_name() {
        for p in FailurePolicy::ALL {
            assert_eq!(p.name().parse::<FailurePolicy>().unwrap(), p);
        }
        assert!("sometimes".parse::<FailurePolicy>().is_err());
    }
}
