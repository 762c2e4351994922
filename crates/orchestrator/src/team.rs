//! The team: the orchestrator of seed 001 over one session, on the
//! scheduler's dispatcher.
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
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use wavecrew_core::bus::{BusCursor, MessageBus};
use wavecrew_core::store::{LeasePolicy, pid_alive};
use wavecrew_core::{SessionStatus, Task, TaskId, TaskStatus, TaskStore};
use wavecrew_scheduler::FailurePolicy;
use wavecrew_scheduler::{
    BuildOptions, Dag, DispatchEvent, DispatchOptions, Dispatcher, FinalState, TaskNode,
};
use wavecrew_sys::process::blocking;

use crate::durations::Measured;
use crate::evidence::Evidence;
use crate::launch::Launcher;
use crate::ledger::{Ledger, Note, NoteSender};
use crate::session_file::write_session;
use crate::validate::ValidSession;
use crate::vocabulary::{
    Interruption, Progress, ProgressFn, RunEnd, TeamOptions, interrupted, log_record, ready_tasks,
    task_data,
};
use crate::worker_runner::WorkerRunner;

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
            sandbox: self.options.sandbox,
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

    /// What the run checks task state against.
    fn evidence(&self) -> Evidence {
        Evidence::new(
            &self.valid.dir,
            self.valid
                .analysis
                .effective_tasks()
                .iter()
                .map(wavecrew_core::AnalysisTask::to_task),
        )
    }

    /// Run the pipeline in the foreground until it ends.
    pub async fn run(&mut self) -> wavecrew_core::Result<RunEnd> {
        let store = Arc::clone(&self.store);
        let (bus, evidence) = (Arc::clone(&self.bus), self.evidence());
        let local =
            self.options.remote.is_none() && !self.options.config.isolation.trust_task_files;
        // A task an earlier run left completed counts only with its
        // evidence (local runs: the attempts live here).
        let tasks = blocking(move || {
            let tasks = store.list()?;
            if !local {
                return Ok(tasks);
            }
            tasks
                .into_iter()
                .map(|t| evidence.believe(&*store, &*bus, t))
                .collect::<wavecrew_core::Result<Vec<Task>>>()
        })
        .await?;
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
        crate::control::clear_stale(&self.valid.dir).await;
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
            evidence: self.evidence(),
            trust_task_files: self.options.config.isolation.trust_task_files,
            verify: wavecrew_role_kit::workspace::verify_of(
                &self.options.config,
                &wavecrew_core::source::project_root(&self.valid.dir)
                    .unwrap_or_else(|| self.valid.dir.clone()),
            ),
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
            // Tasks a person reset for a retry meanwhile: another round.
            created |= !crate::control::take_retries(&self.valid.dir)
                .await
                .is_empty();
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

fn role_class(role: &str) -> String {
    format!("role:{role}")
}

fn backend_class(backend: &str) -> String {
    format!("backend:{backend}")
}
