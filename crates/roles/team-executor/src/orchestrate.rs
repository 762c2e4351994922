//! The orchestrator of seed 001: start ready workers, follow them, advance.
//!
//! Every worker is a process: the built-in role binaries for their
//! prefixes (`IMPL` → `wavecrew-executor`), `wavecrew-team worker` for a
//! role known only by its `.md`. The orchestrator assigns the task id when
//! it spawns a worker and the worker takes exactly that task (this removes
//! the seed's hand-off deadlock, ccw-compat §7 item 9b); a worker may then
//! fast-advance to the one successor of its role that became ready, and
//! the orchestrator adopts it instead of spawning a duplicate.
//!
//! * [`Team::start`] / [`Team::resume`]: spawn what is ready (detached),
//!   record `active_workers`, stop (the seed's spawn-and-stop);
//! * [`Team::run`]: everything in the foreground until the pipeline ends:
//!   worker exits, crashes (the task returns to pending and is retried up to
//!   a limit), failures (`continue`: dependents skipped; `stop`: nothing
//!   new starts), a stall (which tasks are stuck and why), the report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Map, json};
use wavecrew_core::bus::{MessageBus, NewMessage};
use wavecrew_core::store::{LeasePolicy, pid_alive};
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore};

use crate::reconcile::write_session;
use crate::validate::ValidSession;

/// What happens to the rest of the pipeline when a task fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Skip the failed task's dependents, run everything else.
    #[default]
    Continue,
    /// Start nothing new; let running workers finish.
    Stop,
}

/// How the orchestrator runs.
#[derive(Debug, Clone)]
pub struct TeamOptions {
    /// Workers at once.
    pub max_parallel: usize,
    /// After a failure.
    pub on_failure: OnFailure,
    /// Respawns of a task whose worker crashed.
    pub crash_retries: u32,
    /// `--backend` for every worker.
    pub backend: Option<String>,
    /// `--config` for every worker.
    pub config_file: Option<PathBuf>,
    /// Folder holding the worker binaries (default: beside this program).
    pub bin_dir: Option<PathBuf>,
    /// How often the store is polled in the foreground.
    pub poll: Duration,
}

impl Default for TeamOptions {
    fn default() -> Self {
        TeamOptions {
            max_parallel: 4,
            on_failure: OnFailure::Continue,
            crash_retries: 2,
            backend: None,
            config_file: None,
            bin_dir: None,
            poll: Duration::from_millis(100),
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

struct Worker {
    child: tokio::process::Child,
    pid: u32,
    task: TaskId,
}

/// The orchestrator over one session.
pub struct Team<'a, B: MessageBus> {
    /// The validated session.
    pub valid: ValidSession,
    /// The task store.
    pub store: &'a dyn TaskStore,
    /// The bus.
    pub bus: &'a B,
    /// Options.
    pub options: TeamOptions,
    /// Progress callback.
    pub on_progress: Box<dyn Fn(&Progress) + Send + Sync + 'a>,
    workers: Vec<Worker>,
    crashes: HashMap<TaskId, u32>,
    reported: HashSet<TaskId>,
    started: Instant,
    seen_messages: HashSet<String>,
    last_saved: Option<(usize, usize, usize)>,
    revisions: HashMap<String, u32>,
    paused: Option<(String, String)>,
}

/// The program (and leading arguments) of a built-in worker binary.
pub fn sibling_program(name: &str, bin_dir: Option<&Path>) -> (PathBuf, Vec<String>) {
    match bin_dir {
        Some(dir) => (dir.join(name), Vec::new()),
        None => wavecrew_core::programs::wavecrew_program(name),
    }
}

/// Tasks whose blockers are all completed and that are pending.
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

impl<'a, B: MessageBus> Team<'a, B> {
    /// An orchestrator; reconcile first.
    pub fn new(
        valid: ValidSession,
        store: &'a dyn TaskStore,
        bus: &'a B,
        options: TeamOptions,
    ) -> Self {
        Team {
            valid,
            store,
            bus,
            options,
            on_progress: Box::new(|_| {}),
            workers: Vec::new(),
            crashes: HashMap::new(),
            reported: HashSet::new(),
            started: Instant::now(),
            seen_messages: HashSet::new(),
            last_saved: None,
            revisions: HashMap::new(),
            paused: None,
        }
    }

    fn log(&self, kind: &str, summary: String, data: Map<String, serde_json::Value>) {
        let _ = self.bus.log(NewMessage {
            from: "executor".into(),
            to: Some("coordinator".into()),
            kind: Some(kind.into()),
            summary: Some(["[executor] ".to_owned(), summary].concat()),
            data: Some(data),
            reference: None,
        });
    }

    /// The role of a task: its owner, else the session role with its prefix.
    pub fn role_of(&self, task: &Task) -> Option<(String, String)> {
        let roles = &self.valid.session.roles;
        let by_owner = task
            .owner
            .as_deref()
            .and_then(|o| roles.iter().find(|r| r.name.as_str() == o));
        let by_prefix = || {
            roles
                .iter()
                .find(|r| Some(r.prefix.as_str()) == task.id.prefix())
        };
        by_owner
            .or_else(by_prefix)
            .map(|r| (r.name.as_str().to_owned(), r.prefix.clone()))
    }

    /// The worker command of a task.
    pub fn worker_command(&self, task: &Task) -> Option<(PathBuf, Vec<String>, String)> {
        let (role, prefix) = self.role_of(task)?;
        let session = self.valid.dir.display().to_string();
        let bin = self.options.bin_dir.as_deref();
        let session_id = self.valid.session.session_id.as_str();
        let builtin = match prefix.as_str() {
            "IMPL" => Some("wavecrew-executor"),
            "TESTRUN" => Some("wavecrew-testrun"),
            "EXEC" if session_id.starts_with("PEX-") => Some("wavecrew-planex"),
            "EXEC" if session_id.starts_with("RD-") => Some("wavecrew-roadmap"),
            _ => None,
        };
        let (program, mut args) = if let Some(binary) = builtin {
            let (program, mut lead) = sibling_program(binary, bin);
            lead.extend([
                "--session".into(),
                session,
                "--task".into(),
                task.id.as_str().into(),
                "--fast-advance".into(),
            ]);
            (program, lead)
        } else {
            let (program, mut lead) = sibling_program("wavecrew-team", bin);
            lead.extend([
                "worker".into(),
                "--session".into(),
                session,
                "--task".into(),
                task.id.as_str().into(),
                "--role".into(),
                role.clone(),
            ]);
            (program, lead)
        };
        if let Some(b) = &self.options.backend {
            args.push("--backend".into());
            args.push(b.clone());
        }
        if let Some(c) = &self.options.config_file {
            args.push("--config".into());
            args.push(c.display().to_string());
        }
        Some((program, args, role))
    }

    fn spawn(&mut self, task: &Task, detached: bool) -> std::io::Result<u32> {
        let Some((program, args, role)) = self.worker_command(task) else {
            return Err(std::io::Error::other(format!(
                "no role takes {}",
                task.id.as_str()
            )));
        };
        let logs = self.valid.dir.join("workers");
        std::fs::create_dir_all(&logs)?;
        let log = std::fs::File::create(logs.join(format!("{}.log", task.id.as_str())))?;
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(false);
        if detached {
            cmd.process_group(0);
        }
        let child = cmd.spawn().map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot start {}: {e}", program.display()))
        })?;
        let pid = child.id().unwrap_or(0);
        let mut data = Map::new();
        data.insert("task_id".into(), json!(task.id.as_str()));
        data.insert("role".into(), json!(role));
        data.insert("pid".into(), json!(pid));
        self.log(
            "task_unblocked",
            format!("{} ready → {role} worker (pid {pid})", task.id.as_str()),
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
        if !detached {
            self.workers.push(Worker {
                child,
                pid,
                task: task.id.clone(),
            });
        }
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
            match self.spawn(t, true) {
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
        self.valid.session.active_workers.retain(|w| {
            let task = w.get("task").and_then(|t| t.as_str());
            let pid = w.get("pid").and_then(serde_json::Value::as_u64);
            let in_progress = task.is_some_and(|id| {
                tasks
                    .iter()
                    .any(|t| t.id.as_str() == id && t.status == TaskStatus::InProgress)
            });
            in_progress && pid.is_some_and(|p| u32::try_from(p).is_ok_and(pid_alive))
        });
        self.store.reconcile(&LeasePolicy::default())?;
        self.start()
    }

    fn dependents(tasks: &[Task], failed: &TaskId) -> Vec<TaskId> {
        let mut out: Vec<TaskId> = Vec::new();
        let mut frontier = vec![failed.clone()];
        while let Some(id) = frontier.pop() {
            for t in tasks {
                if t.blocked_by.contains(&id) && !out.contains(&t.id) {
                    out.push(t.id.clone());
                    frontier.push(t.id.clone());
                }
            }
        }
        out
    }

    fn reap(&mut self) -> wavecrew_core::Result<()> {
        let mut exited = Vec::new();
        for (i, w) in self.workers.iter_mut().enumerate() {
            if let Ok(Some(_status)) = w.child.try_wait() {
                exited.push(i);
            }
        }
        for i in exited.into_iter().rev() {
            let w = self.workers.remove(i);
            self.valid.session.active_workers.retain(|a| {
                a.get("pid").and_then(serde_json::Value::as_u64) != Some(u64::from(w.pid))
            });
            // Anything this worker still holds is a crash.
            for t in self.store.list()? {
                let held = t.status == TaskStatus::InProgress
                    && t.lease.as_ref().is_some_and(|l| l.pid == w.pid);
                let never_claimed = t.id == w.task && t.status == TaskStatus::Pending;
                if held || never_claimed {
                    self.crashed(&t)?;
                }
            }
        }
        Ok(())
    }

    fn crashed(&mut self, task: &Task) -> wavecrew_core::Result<()> {
        let n = self.crashes.entry(task.id.clone()).or_insert(0);
        *n += 1;
        let crashes = *n;
        self.store.reconcile(&LeasePolicy::default())?;
        let mut data = Map::new();
        data.insert("task_id".into(), json!(task.id.as_str()));
        data.insert("crashes".into(), json!(crashes));
        if crashes > self.options.crash_retries {
            self.store.update(&task.id, &mut |t| {
                t.status = TaskStatus::Failed;
                t.lease = None;
                t.result = Some(json!({"error": format!("the worker crashed {crashes} times")}));
                Ok(())
            })?;
            self.log(
                "error",
                format!(
                    "{} failed: its worker crashed {crashes} times",
                    task.id.as_str()
                ),
                data,
            );
        } else {
            self.log(
                "warning",
                format!(
                    "{}: worker crashed ({crashes}/{}); the task returns to pending",
                    task.id.as_str(),
                    self.options.crash_retries
                ),
                data,
            );
            (self.on_progress)(&Progress::Crashed {
                task: task.id.clone(),
                crashes,
            });
        }
        Ok(())
    }

    fn stuck(&self, tasks: &[Task]) -> Vec<(TaskId, String)> {
        let by_id: BTreeMap<&TaskId, &Task> = tasks.iter().map(|t| (&t.id, t)).collect();
        tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Pending)
            .map(|t| {
                if self.role_of(t).is_none() {
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

    /// React to workers' callbacks on the bus: `capability_gap` (warn and
    /// go on) and `consensus_blocked` (HIGH: one revision task, then a pause
    /// for a person; MEDIUM: noted in `wisdom/issues.md`; LOW: go on).
    fn callbacks(&mut self) -> wavecrew_core::Result<()> {
        let recent = self
            .bus
            .list(&wavecrew_core::bus::ListFilter {
                last: 100,
                ..wavecrew_core::bus::ListFilter::default()
            })
            .map_err(|e| wavecrew_core::CoreError::Bus(e.to_string()))?;
        for m in recent.messages {
            if !self.seen_messages.insert(m.id.clone()) {
                continue;
            }
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
                        format!(
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
                        "HIGH" => self.consensus_high(&task, &m.summary)?,
                        "MEDIUM" => {
                            let id = TaskId::new(if task.is_empty() {
                                "UNKNOWN-000".to_owned()
                            } else {
                                task.clone()
                            })
                            .unwrap_or_else(|_| TaskId::new("UNKNOWN-000").expect("valid id"));
                            let _ = wavecrew_core::wisdom::append_wisdom(
                                &self.valid.dir,
                                "issues",
                                &id,
                                &format!("consensus blocked (MEDIUM): {}", m.summary),
                            );
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn consensus_high(&mut self, task: &str, reason: &str) -> wavecrew_core::Result<()> {
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
                    format!("consensus blocked (HIGH) on {task}: revision task {revision} created"),
                    d,
                );
                return Ok(());
            }
        }
        let mut d = Map::new();
        d.insert("task_id".into(), json!(task));
        self.log(
            "paused",
            format!("consensus blocked (HIGH) again on {task}: pausing for a person"),
            d,
        );
        self.paused = Some((task.to_owned(), reason.to_owned()));
        Ok(())
    }

    /// Run the pipeline in the foreground until it ends.
    pub async fn run(&mut self) -> wavecrew_core::Result<RunEnd> {
        let mut stopping = false;
        let mut last_totals = (usize::MAX, usize::MAX);
        loop {
            self.reap()?;
            self.callbacks()?;
            if self.paused.is_some() {
                stopping = true;
            }
            let tasks = self.store.list()?;
            // Newly final tasks.
            for t in &tasks {
                if matches!(t.status, TaskStatus::Completed | TaskStatus::Failed)
                    && self.reported.insert(t.id.clone())
                {
                    (self.on_progress)(&Progress::Finished {
                        task: t.id.clone(),
                        status: t.status,
                    });
                    if t.status == TaskStatus::Failed {
                        match self.options.on_failure {
                            OnFailure::Stop => stopping = true,
                            OnFailure::Continue => {
                                for d in Self::dependents(&tasks, &t.id) {
                                    let skipped = self.store.update(&d, &mut |x| {
                                        if x.status == TaskStatus::Pending {
                                            x.status = TaskStatus::Skipped;
                                            x.result =
                                                Some(json!({"skipped_because": t.id.as_str()}));
                                        }
                                        Ok(())
                                    })?;
                                    if skipped.status == TaskStatus::Skipped
                                        && self.reported.insert(d.clone())
                                    {
                                        let mut data = Map::new();
                                        data.insert("task_id".into(), json!(d.as_str()));
                                        data.insert("because".into(), json!(t.id.as_str()));
                                        self.log(
                                            "task_skipped",
                                            format!(
                                                "{} skipped: {} failed",
                                                d.as_str(),
                                                t.id.as_str()
                                            ),
                                            data,
                                        );
                                        (self.on_progress)(&Progress::Finished {
                                            task: d,
                                            status: TaskStatus::Skipped,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let tasks = self.store.list()?;
            let running_tasks: Vec<&Task> = tasks
                .iter()
                .filter(|t| t.status == TaskStatus::InProgress)
                .collect();
            // Adopted workers: in progress under a live pid that is not ours
            // (fast-advance, or workers of an earlier run).
            let adopted = running_tasks
                .iter()
                .filter(|t| {
                    t.lease.as_ref().is_some_and(|l| {
                        pid_alive(l.pid) && !self.workers.iter().any(|w| w.pid == l.pid)
                    })
                })
                .count();
            let orphans: Vec<Task> = running_tasks
                .iter()
                .filter(|t| {
                    t.lease.as_ref().is_none_or(|l| !pid_alive(l.pid))
                        && !self
                            .workers
                            .iter()
                            .any(|w| t.lease.as_ref().is_some_and(|l| l.pid == w.pid))
                })
                .map(|t| (*t).clone())
                .collect();
            for t in &orphans {
                self.crashed(t)?;
            }
            let busy = self.workers.len() + adopted;
            let done = tasks
                .iter()
                .filter(|t| t.status == TaskStatus::Completed)
                .count();
            if (done, busy) != last_totals {
                last_totals = (done, busy);
                (self.on_progress)(&Progress::Totals {
                    done,
                    total: tasks.len(),
                    running: busy,
                });
            }
            let held: HashSet<&TaskId> = self.workers.iter().map(|w| &w.task).collect();
            let ready: Vec<Task> = if stopping {
                Vec::new()
            } else {
                ready_tasks(&tasks)
                    .into_iter()
                    .filter(|t| !held.contains(&t.id) && self.role_of(t).is_some())
                    .cloned()
                    .collect()
            };
            let free = self.options.max_parallel.saturating_sub(busy);
            for t in ready.iter().take(free) {
                if let Err(e) = self.spawn(t, false) {
                    let mut data = Map::new();
                    data.insert("task_id".into(), json!(t.id.as_str()));
                    data.insert("error".into(), json!(e.to_string()));
                    self.log("error", format!("{}: {e}", t.id.as_str()), data);
                    self.store.update(&t.id, &mut |x| {
                        x.status = TaskStatus::Failed;
                        x.result = Some(json!({"error": e.to_string()}));
                        Ok(())
                    })?;
                }
            }
            // The session file changes when a worker starts or ends or a
            // task completes: rewrite it then, not on every poll.
            let key = (
                self.valid.session.active_workers.len(),
                done,
                tasks.iter().filter(|t| t.status.is_terminal()).count(),
            );
            if self.last_saved != Some(key) {
                write_session(&mut self.valid, &tasks)?;
                self.last_saved = Some(key);
            }
            if busy == 0 && ready.is_empty() && orphans.is_empty() {
                if let Some((task, reason)) = self.paused.clone() {
                    self.valid.session.status = wavecrew_core::SessionStatus::Paused;
                    return Ok(RunEnd::Paused { task, reason });
                }
                let tasks = self.store.list()?;
                let failed: Vec<TaskId> = tasks
                    .iter()
                    .filter(|t| t.status == TaskStatus::Failed)
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
                return Ok(RunEnd::Failed { failed, skipped });
            }
            tokio::time::sleep(self.options.poll).await;
        }
    }

    /// How long since this orchestrator started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}
