//! The run's bookkeeping, on a thread of its own.
//!
//! The dispatch loop and the task runners send [`Note`]s; the ledger turns
//! them into what people and files see: progress lines and running totals,
//! `task_skipped` records with the store updated, and `team-session.json`
//! (active workers, counts) rewritten at most every [`SESSION_WRITE_EVERY`]
//! while something changed, and once more at the end. Its file writes
//! (fsync included) never run on the async runtime's threads, and each note
//! costs what it changes: no note lists the store.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Map, json};
use wavecrew_core::bus::MessageBus;
use wavecrew_core::{TaskId, TaskStatus, TaskStore};

use crate::session_file::write_session_counts;
use crate::validate::ValidSession;
use crate::vocabulary::{Interruption, Progress, interrupted};

/// The shortest time between two rewrites of `team-session.json` during a
/// run (it is derived state: reconcile rebuilds it after a crash).
pub(crate) const SESSION_WRITE_EVERY: Duration = Duration::from_millis(250);

/// Something that happened during a run.
#[derive(Debug, Clone)]
pub(crate) enum Note {
    /// The dispatcher started running a task (a worker, or an adoption).
    Running,
    /// The dispatcher is done with a task.
    Done,
    /// A worker process started.
    Spawned {
        task: TaskId,
        role: String,
        pid: u32,
    },
    /// A worker crashed; its task went back to pending.
    Crashed { task: TaskId, crashes: u32 },
    /// A worker process (pid 0: a remote worker) of a task ended.
    Exited { task: TaskId, pid: u32 },
    /// A task reached a final state.
    Finished { task: TaskId, status: TaskStatus },
    /// A pending task is skipped because `cause` failed.
    Skip { task: TaskId, cause: TaskId },
}

/// Where notes go.
pub(crate) type NoteSender = Sender<Note>;

/// The ledger's thread; [`Ledger::finish`] returns the session as last
/// written.
pub(crate) struct Ledger {
    handle: JoinHandle<ValidSession>,
}

struct State<B: MessageBus> {
    valid: ValidSession,
    store: Arc<dyn TaskStore>,
    bus: Arc<B>,
    on_progress: Arc<dyn Fn(&Progress) + Send + Sync>,
    interruption: Interruption,
    total: usize,
    done: usize,
    running: usize,
    dirty: bool,
    last_write: Option<Instant>,
    last_totals: Option<(usize, usize, usize)>,
}

impl Ledger {
    /// Start the ledger of a run over `total` tasks of which `done` are
    /// completed.
    pub(crate) fn start<B: MessageBus + 'static>(
        valid: ValidSession,
        store: Arc<dyn TaskStore>,
        bus: Arc<B>,
        on_progress: Arc<dyn Fn(&Progress) + Send + Sync>,
        interruption: Interruption,
        (total, done): (usize, usize),
    ) -> (NoteSender, Ledger) {
        let (tx, rx) = std::sync::mpsc::channel();
        let state = State {
            valid,
            store,
            bus,
            on_progress,
            interruption,
            total,
            done,
            running: 0,
            dirty: true,
            last_write: None,
            last_totals: None,
        };
        let handle = std::thread::Builder::new()
            .name("wavecrew-ledger".into())
            .spawn(move || state.run(&rx))
            .expect("a thread can be started");
        (tx, Ledger { handle })
    }

    /// Wait for the ledger to write its last state (every sender must be
    /// dropped first) and return the session.
    pub(crate) fn finish(self) -> ValidSession {
        match self.handle.join() {
            Ok(valid) => valid,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl<B: MessageBus> State<B> {
    fn run(mut self, rx: &Receiver<Note>) -> ValidSession {
        loop {
            match rx.recv_timeout(SESSION_WRITE_EVERY) {
                Ok(note) => {
                    self.apply(note);
                    // Take everything already queued before writing.
                    while let Ok(note) = rx.try_recv() {
                        self.apply(note);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.totals();
            if self.dirty
                && self
                    .last_write
                    .is_none_or(|t| t.elapsed() >= SESSION_WRITE_EVERY)
            {
                self.write();
            }
        }
        self.totals();
        self.write();
        self.valid
    }

    fn apply(&mut self, note: Note) {
        match note {
            Note::Running => self.running += 1,
            Note::Done => self.running = self.running.saturating_sub(1),
            Note::Spawned { task, role, pid } => {
                self.valid.session.active_workers.push(json!({
                    "role": role, "task": task.as_str(), "pid": pid,
                    "spawned_at": jiff::Timestamp::now().to_string(),
                }));
                self.dirty = true;
                let mut data = Map::new();
                data.insert("task_id".into(), json!(task.as_str()));
                data.insert("role".into(), json!(role));
                data.insert("pid".into(), json!(pid));
                let worker = if pid == 0 {
                    "a ticket for a remote worker".to_owned()
                } else {
                    format!("worker (pid {pid})")
                };
                self.record(
                    "task_unblocked",
                    &format!("{} ready → {role} {worker}", task.as_str()),
                    data,
                );
                (self.on_progress)(&Progress::Spawned { task, role, pid });
            }
            Note::Crashed { task, crashes } => {
                (self.on_progress)(&Progress::Crashed { task, crashes });
            }
            Note::Exited { task, pid } => {
                self.valid.session.active_workers.retain(|a| {
                    a.get("pid").and_then(serde_json::Value::as_u64) != Some(u64::from(pid))
                        || a.get("task").and_then(serde_json::Value::as_str) != Some(task.as_str())
                });
                self.dirty = true;
            }
            Note::Finished { task, status } => {
                if status == TaskStatus::Completed {
                    self.done += 1;
                }
                self.dirty = true;
                (self.on_progress)(&Progress::Finished { task, status });
            }
            Note::Skip { task, cause } => self.skip(&task, &cause),
        }
    }

    fn skip(&mut self, task: &TaskId, cause: &TaskId) {
        // An interrupted run skips nothing: the interrupted task and what
        // waits for it stay for the resume.
        if interrupted(&self.interruption).is_some() {
            return;
        }
        let updated = self.store.update(task, &mut |x| {
            if x.status == TaskStatus::Pending {
                x.status = TaskStatus::Skipped;
                x.result = Some(json!({"skipped_because": cause.as_str()}));
            }
            Ok(())
        });
        match updated {
            Ok(t) if t.status == TaskStatus::Skipped => {
                let mut data = Map::new();
                data.insert("task_id".into(), json!(task.as_str()));
                data.insert("because".into(), json!(cause.as_str()));
                self.record(
                    "task_skipped",
                    &format!("{} skipped: {} failed", task.as_str(), cause.as_str()),
                    data,
                );
                (self.on_progress)(&Progress::Finished {
                    task: task.clone(),
                    status: TaskStatus::Skipped,
                });
                self.dirty = true;
            }
            Ok(_) => {}
            Err(e) => tracing::error!("{}: cannot mark it skipped: {e}", task.as_str()),
        }
    }

    fn record(&self, kind: &str, summary: &str, data: Map<String, serde_json::Value>) {
        crate::vocabulary::log_record(&*self.bus, kind, summary, data);
    }

    fn totals(&mut self) {
        let key = (self.done, self.total, self.running);
        if self.last_totals != Some(key) {
            self.last_totals = Some(key);
            (self.on_progress)(&Progress::Totals {
                done: self.done,
                total: self.total,
                running: self.running,
            });
        }
    }

    fn write(&mut self) {
        match write_session_counts(&mut self.valid, self.total, self.done) {
            Ok(()) => {
                self.dirty = false;
                self.last_write = Some(Instant::now());
            }
            Err(e) => tracing::error!("team-session.json: {e}"),
        }
    }
}
