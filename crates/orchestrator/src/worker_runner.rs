//! Running one task's worker in a foreground run: a local process (or a
//! remote host through [`crate::RemoteWorkers`]), its end read once from
//! the store, a crash retried, an interruption recorded.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use wavecrew_core::bus::MessageBus;
use wavecrew_core::store::pid_alive;
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore};
use wavecrew_scheduler::{RunOutcome, TaskRunner};
use wavecrew_sys::process::blocking;

use crate::control::WorkerEnd;
use crate::evidence::Evidence;
use crate::launch::Launcher;
use crate::ledger::{Note, NoteSender};
use crate::vocabulary::{Interruption, RemoteWorkers, log_record, task_data};

/// The exit code of a worker interrupted by its environment (every
/// wavecrew binary: 3, interrupted and resumable).
const INTERRUPTED_EXIT: i32 = 3;

/// Runs one task of a foreground run: reads it once, adopts a live worker
/// of an earlier run, or starts a worker and waits for its exit; a worker
/// that ends without finishing its task is a crash (the task returns to
/// pending and is retried up to a limit).
pub(crate) struct WorkerRunner<B: MessageBus + 'static> {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) bus: Arc<B>,
    pub(crate) launcher: Launcher,
    pub(crate) notes: NoteSender,
    pub(crate) interruption: Interruption,
    pub(crate) crash_retries: u32,
    pub(crate) poll: Duration,
    pub(crate) remote: Option<Arc<dyn RemoteWorkers>>,
    /// What a task's state is checked against (local runs).
    pub(crate) evidence: Evidence,
    /// `[isolation] trust_task_files`: task files are believed as they are.
    pub(crate) trust_task_files: bool,
    /// `[integration] verify`, run on an approved task's merge candidate.
    pub(crate) verify: Option<wavecrew_role_kit::Verify>,
}

impl<B: MessageBus + 'static> WorkerRunner<B> {
    async fn get(&self, id: &TaskId) -> wavecrew_core::Result<Task> {
        let store = Arc::clone(&self.store);
        let id = id.clone();
        blocking(move || store.get(&id)).await
    }

    /// `id` as the store has it, checked against its evidence in a local
    /// run: a file that says it completed without an attempt of it is
    /// tampered (the task runs), one that disappeared is made again from
    /// the analysis ([`Evidence`]).
    async fn get_believed(&self, id: &TaskId) -> wavecrew_core::Result<Task> {
        if self.remote.is_some() || self.trust_task_files {
            return self.get(id).await;
        }
        let (store, bus, evidence) = (
            Arc::clone(&self.store),
            Arc::clone(&self.bus),
            self.evidence.clone(),
        );
        let id = id.clone();
        blocking(move || match store.get(&id) {
            Ok(task) => evidence.believe(&*store, &*bus, task),
            Err(e @ wavecrew_core::CoreError::TaskNotFound { .. }) => {
                evidence.recreate(&*store, &*bus, &id)?.ok_or(e)
            }
            Err(e) => Err(e),
        })
        .await
    }

    fn ended(&self, task: &Task) -> Option<RunOutcome> {
        // Validated work waiting for a person: parked, without a slot.
        if task.awaiting_review() {
            return Some(RunOutcome::Parked);
        }
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

    /// Whether `id` waited while a person paused dispatch (then it is read
    /// again before it starts).
    async fn held_while_paused(&self, id: &TaskId) -> bool {
        crate::control::wait_while_paused(&self.bus, &self.launcher.session_dir, id, self.poll)
            .await
    }

    async fn run_task(&self, id: &TaskId) -> wavecrew_core::Result<RunOutcome> {
        let mut crashes = 0;
        loop {
            let task = self.get_believed(id).await?;
            if let Some(outcome) = self.ended(&task) {
                return Ok(outcome);
            }
            // Remote workers: the engine holds the truth of a task in
            // progress (the local copy only shows it).
            if let Some(remote) = &self.remote {
                // Dispatch paused: a task no host holds yet waits here,
                // before it is shown as a worker or its ticket goes out.
                if task.status == TaskStatus::Pending && self.held_while_paused(id).await {
                    continue;
                }
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
            // Dispatch paused by a person: hold this task before its
            // worker starts, then read it again.
            if self.held_while_paused(id).await {
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
            let session_dir = &self.launcher.session_dir;
            let end =
                crate::control::wait_or_cancel(&mut started.child, pid, session_dir, id, self.poll)
                    .await;
            let _ = self.notes.send(Note::Exited {
                task: id.clone(),
                pid,
            });
            let exit = match end {
                WorkerEnd::Exited(exit) => exit,
                WorkerEnd::Cancelled => {
                    let after =
                        crate::control::record_cancel(&self.store, &self.bus, session_dir, id)
                            .await?;
                    return Ok(self
                        .ended(&after)
                        .unwrap_or_else(|| RunOutcome::failed("cancelled by a person")));
                }
            };
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
    async fn resume(&self, id: &TaskId) -> RunOutcome {
        self.await_review(id).await
    }

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
