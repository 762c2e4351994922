//! What a person asks of a foreground run through the session's
//! `control/` folder ([`wavecrew_core::Control`]), honoured between
//! dispatches: a pause holds each task before its worker starts (running
//! ones go on), a cancel stops a running task's worker and everything it
//! started and records the task as failed by a person, a retry (the task
//! already reset in the store) makes the run take another round.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use wavecrew_core::bus::MessageBus;
use wavecrew_core::{Control, Task, TaskId, TaskStatus, TaskStore};
use wavecrew_sys::process::blocking;

use crate::vocabulary::{log_record, task_data};

/// How long a cancelled worker gets between SIGTERM and SIGKILL.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Wait while dispatch is paused, before `task`'s worker starts; whether
/// it was. The wait is recorded once on the bus (`dispatch_held`), so a
/// person sees which task waits.
pub(crate) async fn wait_while_paused<B: MessageBus + 'static>(
    bus: &Arc<B>,
    session_dir: &Path,
    task: &TaskId,
    poll: Duration,
) -> bool {
    let control = Control::new(session_dir);
    let mut waited = false;
    while blocking({
        let c = control.clone();
        move || c.is_paused()
    })
    .await
    {
        if !waited {
            let (bus, id) = (Arc::clone(bus), task.clone());
            blocking(move || {
                log_record(
                    &*bus,
                    "dispatch_held",
                    &format!("{} waits: dispatch is paused", id.as_str()),
                    task_data(&id),
                );
            })
            .await;
        }
        waited = true;
        tokio::time::sleep(poll).await;
    }
    waited
}

/// How waiting for a worker ended.
pub(crate) enum WorkerEnd {
    /// It exited by itself.
    Exited(std::io::Result<std::process::ExitStatus>),
    /// A person cancelled its task: it and everything it started were
    /// stopped.
    Cancelled,
}

/// Wait for the worker `pid` of `task` to exit, or for a cancel request
/// of `task`, checked every `poll`.
pub(crate) async fn wait_or_cancel(
    child: &mut tokio::process::Child,
    pid: u32,
    session_dir: &Path,
    task: &TaskId,
    poll: Duration,
) -> WorkerEnd {
    let control = Control::new(session_dir);
    loop {
        tokio::select! {
            exit = child.wait() => return WorkerEnd::Exited(exit),
            () = tokio::time::sleep(poll) => {
                let (c, t) = (control.clone(), task.clone());
                if blocking(move || c.cancel_requested(&t)).await {
                    wavecrew_sys::process::terminate_tree(pid, CANCEL_GRACE).await;
                    let _ = child.wait().await;
                    return WorkerEnd::Cancelled;
                }
            }
        }
    }
}

/// Record a cancelled task: failed, with `cancelled` in its result (a
/// retry can run it again), the request removed, a `task_cancelled`
/// record on the bus.
pub(crate) async fn record_cancel<B: MessageBus + 'static>(
    store: &Arc<dyn TaskStore>,
    bus: &Arc<B>,
    session_dir: &Path,
    task: &TaskId,
) -> wavecrew_core::Result<Task> {
    let (store, bus) = (Arc::clone(store), Arc::clone(bus));
    let (dir, id) = (session_dir.to_owned(), task.clone());
    blocking(move || {
        let updated = store.update(&id, &mut |t| {
            t.status = TaskStatus::Failed;
            t.lease = None;
            t.result = Some(json!({"error": "cancelled by a person", "cancelled": true}));
            Ok(())
        })?;
        if let Err(e) = Control::new(&dir).clear_cancel(&id) {
            tracing::error!("{e}");
        }
        let mut data = task_data(&id);
        data.insert("cancelled".into(), json!(true));
        log_record(
            &*bus,
            "task_cancelled",
            &format!(
                "{} cancelled by a person: its worker was stopped",
                id.as_str()
            ),
            data,
        );
        Ok(updated)
    })
    .await
}

/// Tasks reset for a retry since the last look (the control folder's
/// notes, taken).
pub(crate) async fn take_retries(session_dir: &Path) -> Vec<TaskId> {
    let control = Control::new(session_dir);
    blocking(move || control.take_retries())
        .await
        .unwrap_or_else(|e| {
            tracing::error!("{e}");
            Vec::new()
        })
}

/// A run starting: cancel requests and retry notes left from before are
/// stale (no worker of theirs runs; what was reset is pending already).
pub(crate) async fn clear_stale(session_dir: &Path) {
    let control = Control::new(session_dir);
    let _ = blocking(move || {
        let _ = control.clear_cancels();
        control.take_retries()
    })
    .await;
}
