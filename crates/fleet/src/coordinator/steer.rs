//! A person's hand on remote work, on the coordinator's side: the human
//! review gate, the revision a rejection starts, a cancel and a retry, for
//! tasks that run on other hosts.
//!
//! * **Review.** A host runs its attempt in place in a worktree of its own
//!   (the worktree is the isolation), so the role worker's own gate
//!   (`wavecrew_role_kit::review_gate`) never holds it there: the
//!   coordinator holds it instead. Completed work of a task that asks for a
//!   person's review (`review = "human"`) is taken into the branch
//!   `wavecrew-tasks/<session>/<task>/<attempt>` of the local repository,
//!   not landed, and the task is written blocked and `awaiting_review` in
//!   the local store, exactly as one machine's worker leaves it. The run
//!   parks it without a slot (the ticket was acked by the host) and
//!   `wavecrew approve` lands that branch through the merge queue
//!   (`wavecrew_orchestrator`'s review loop, with `[integration] verify`);
//!   the next ticket publishes the new tip first, so hosts build on it.
//! * **Revision.** A rejection puts the person's note into the local task's
//!   description and counts `review_revisions` in its metadata. When the
//!   run sends the task out again, [`Coordinator::take_revision`] copies
//!   that into the task's KV entry (a compare-and-set) and sets it pending:
//!   the next ticket's host builds the prompt from it.
//! * **Cancel.** `wavecrew cancel` writes a request into the session's
//!   `control/` folder. [`Coordinator::pass_cancel`] hands it on through the
//!   task's KV entry (a compare-and-set): a task no host took yet ends
//!   there as cancelled; a running one gets `cancel_requested = <attempt>`
//!   in its metadata, which its host reads while it heartbeats, stops the
//!   agent's process group and records the attempt as cancelled. When the
//!   end comes home the request is cleared and `task_cancelled` recorded.

use serde_json::{Value, json};
use wavecrew_core::task::{RETRIES as RETRIES_KEY, REVIEW_REVISIONS as REVISIONS_KEY};
use wavecrew_core::{Control, Task, TaskStatus, TaskStore};

use super::{Coordinator, blocking, ended};
use crate::error::{FleetError, Result};

/// The metadata key of a task's KV entry that asks its host to stop the
/// attempt it names.
pub(crate) const CANCEL_KEY: &str = "cancel_requested";

/// What a cancelled task's result says (as on one machine).
pub(crate) fn cancelled_result() -> Value {
    json!({"error": "cancelled by a person", "cancelled": true})
}

/// Whether `task`'s KV entry asks the host running attempt `attempt` to
/// stop it.
pub(crate) fn cancel_asked(task: &Task, attempt: u32) -> bool {
    task.metadata.get(CANCEL_KEY).and_then(Value::as_u64) == Some(u64::from(attempt))
}

/// How many times a person sent `task` back for a revision.
fn revisions(task: &Task) -> u64 {
    task.metadata_count(REVISIONS_KEY)
}

/// How many times a person asked to run `task` again.
fn retries(task: &Task) -> u64 {
    task.metadata_count(RETRIES_KEY)
}

/// Bring a KV entry up to retry number `wanted`: the count is copied, and
/// an ended entry goes back to pending (no lease, no result, no cancel
/// request; its attempt count kept, so the next ticket is a new attempt).
/// Whether the entry went back to pending. Nothing for an entry at that
/// count already.
fn retry_entry(task: &mut Task, wanted: u64) -> bool {
    if retries(task) >= wanted {
        return false;
    }
    task.metadata.insert(RETRIES_KEY.into(), json!(wanted));
    if !ended(task.status) {
        // Running or pending already (the local store lagged behind):
        // its end comes home as it is.
        return false;
    }
    task.status = TaskStatus::Pending;
    task.lease = None;
    task.result = None;
    task.metadata.remove(CANCEL_KEY);
    true
}

/// Whether a result says its task was cancelled.
fn was_cancelled(result: &Value) -> bool {
    result.get("cancelled").and_then(Value::as_bool) == Some(true)
}

impl Coordinator {
    /// A rejected task sent out again: its revision (the person's note in
    /// its description, the count in its metadata) goes into its KV entry,
    /// which turns pending for the next ticket. Nothing when KV has it
    /// already (a resumed coordinator) or the task never went back.
    pub(super) async fn take_revision(&self, local: &Task) -> Result<()> {
        let wanted = revisions(local);
        if wanted == 0 {
            return Ok(());
        }
        let current = self.kv_get(local).await?;
        if revisions(&current) >= wanted || !ended(current.status) {
            return Ok(());
        }
        let (kv, local) = (self.kv.clone(), local.clone());
        blocking(move || {
            kv.update(&local.id, &mut |t| {
                if revisions(t) < wanted && ended(t.status) {
                    t.status = TaskStatus::Pending;
                    t.lease = None;
                    t.description.clone_from(&local.description);
                    t.metadata.clone_from(&local.metadata);
                    t.result.clone_from(&local.result);
                }
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    /// A task a person retried (`wavecrew retry`) sent out again: its KV
    /// entry, still holding the old end, is reset to pending with a
    /// compare-and-set ([`retry_entry`]), so the next ticket runs a new
    /// attempt instead of the old end coming home again. Whether it was
    /// reset now. Nothing when KV has the retry already (a resumed
    /// coordinator) or the task was never retried.
    pub(super) async fn take_retry(&self, local: &Task) -> Result<bool> {
        let wanted = retries(local);
        if wanted == 0 {
            return Ok(false);
        }
        let current = self.kv_get(local).await?;
        if retries(&current) >= wanted {
            return Ok(false);
        }
        let (kv, id) = (self.kv.clone(), local.id.clone());
        let reset = blocking(move || {
            let mut reset = false;
            kv.update(&id, &mut |t| {
                // Read again on a lost compare-and-set: decided anew.
                reset = retry_entry(t, wanted);
                Ok(())
            })
            .map(|_| reset)
        })
        .await?;
        if reset {
            tracing::info!(
                "{}: retried by a person; attempt {} goes out",
                local.id.as_str(),
                current.attempts + 1
            );
        }
        Ok(reset)
    }

    /// The ticket id of the pending `current`'s next attempt went out
    /// before (the stream dropped it as a duplicate) while no host holds
    /// that attempt: move the entry's attempt count one on with a
    /// compare-and-set (only while it is pending at the same count), so the
    /// next ticket has an id of its own.
    pub(super) async fn skip_ticket_id(&self, current: &Task) -> Result<()> {
        let (kv, id, at) = (self.kv.clone(), current.id.clone(), current.attempts);
        blocking(move || {
            kv.update(&id, &mut |t| {
                if t.status == TaskStatus::Pending && t.attempts == at {
                    t.attempts = at + 1;
                }
                Ok(())
            })
        })
        .await?;
        tracing::info!(
            "{}: ticket {}:{} went out before; the next attempt is {}",
            current.id.as_str(),
            current.id.as_str(),
            at + 1,
            at + 2
        );
        Ok(())
    }

    /// Whether a person asked to cancel `task` (the session's `control/`).
    pub(super) async fn cancel_wanted(&self, task: &Task) -> bool {
        let (control, id) = (Control::new(&self.session_dir), task.id.clone());
        blocking(move || control.cancel_requested(&id)).await
    }

    /// Hand a person's cancel of `current` (its KV entry, not ended) on:
    /// a task no host holds ends cancelled in KV at once; a held one is
    /// marked for its host, which stops it on its next look.
    pub(super) async fn pass_cancel(&self, current: &Task) -> Result<()> {
        let (kv, id) = (self.kv.clone(), current.id.clone());
        blocking(move || {
            kv.update(&id, &mut |t| {
                match t.status {
                    TaskStatus::Pending => {
                        t.status = TaskStatus::Failed;
                        t.lease = None;
                        t.result = Some(cancelled_result());
                    }
                    TaskStatus::InProgress => {
                        t.metadata.insert(CANCEL_KEY.into(), json!(t.attempts));
                    }
                    _ => {}
                }
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    /// A task ended while a cancel of it was asked (or because of one):
    /// the request goes, and a cancel is recorded as on one machine.
    pub(super) async fn settle_cancel(&self, id: &str, host: &str, result: &Value) -> Result<()> {
        let tid = wavecrew_core::TaskId::new(id).map_err(|e| FleetError::Invalid {
            what: format!("task id {id:?}"),
            message: e.to_string(),
        })?;
        let control = Control::new(&self.session_dir);
        let cleared = blocking(move || control.clear_cancel(&tid)).await?;
        if was_cancelled(result) {
            let whose = if host.is_empty() {
                "before a host took it".to_owned()
            } else {
                format!("its worker on {host} was stopped")
            };
            self.record(
                "task_cancelled",
                &format!("{id} cancelled by a person: {whose}"),
                id,
                json!({"cancelled": true, "host": host}),
            );
        } else if cleared {
            tracing::info!("{id} ended before its cancel reached its host");
        }
        Ok(())
    }

    /// Hold attempt `attempt` of `id` (commit `commit`, made on `base`, on
    /// `host`) for a person's review: its commits into the branch the
    /// review loop lands on approval, `result` marked awaiting review.
    pub(super) async fn hold_for_review(
        &self,
        id: &str,
        attempt: u32,
        host: &str,
        commit: &str,
        result: &mut Value,
    ) -> Result<()> {
        let _one = self.landing.lock().await;
        let branch = self.integration.task_branch(id, attempt);
        self.take_commits(id, attempt, host, commit, &format!("refs/heads/{branch}"))
            .await?;
        let base = result
            .pointer("/remote/base")
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(map) = result.as_object_mut() {
            map.insert("awaiting_review".into(), json!(true));
            map.insert(
                "error".into(),
                json!(
                    "awaiting a person's review: `wavecrew approve` lands it, `wavecrew reject --note` revises it"
                ),
            );
            map.insert("branch".into(), json!(branch));
            map.insert("base".into(), base);
            map.insert("commit".into(), json!(commit));
        }
        self.record(
            "awaiting_review",
            &format!(
                "{id} awaits a person's review (done on {host}): `wavecrew approve` lands it, `wavecrew reject` revises it"
            ),
            id,
            json!({"host": host, "branch": branch, "commit": commit}),
        );
        Ok(())
    }

    /// Publish the integration tip when it moved without the coordinator
    /// (a person's approval landed work): a ticket sent next builds on it.
    pub(super) async fn publish_tip(&self) -> Result<()> {
        let _one = self.landing.lock().await;
        self.publish_integration().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::TaskId;

    #[test]
    fn a_cancel_names_the_attempt_it_stops() {
        let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
        assert!(!cancel_asked(&t, 1));
        t.metadata.insert(CANCEL_KEY.into(), json!(1));
        assert!(cancel_asked(&t, 1));
        // A later attempt (a retry) is not stopped by an old request.
        assert!(!cancel_asked(&t, 2));
    }

    #[test]
    fn a_retry_sends_an_ended_entry_out_again_once() {
        let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
        t.status = TaskStatus::Failed;
        t.attempts = 2;
        t.result = Some(cancelled_result());
        t.metadata.insert(CANCEL_KEY.into(), json!(2));
        assert_eq!(retries(&t), 0);
        assert!(retry_entry(&mut t, 1));
        assert_eq!(t.status, TaskStatus::Pending);
        assert_eq!(t.result, None);
        assert!(t.lease.is_none());
        assert!(!t.metadata.contains_key(CANCEL_KEY));
        assert_eq!(retries(&t), 1);
        // The attempt count stays: the next ticket is attempt 3.
        assert_eq!(t.attempts, 2);
        // The same retry again (a resumed coordinator, a lost
        // compare-and-set read anew) changes nothing.
        t.status = TaskStatus::Failed;
        assert!(!retry_entry(&mut t, 1));
        assert_eq!(t.status, TaskStatus::Failed);
        // A second retry does.
        assert!(retry_entry(&mut t, 2));
        assert_eq!(t.status, TaskStatus::Pending);
    }

    #[test]
    fn a_retry_leaves_a_running_entry_running() {
        for status in [TaskStatus::InProgress, TaskStatus::Pending] {
            let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
            t.status = status;
            t.attempts = 1;
            assert!(!retry_entry(&mut t, 1), "{status:?}");
            assert_eq!(t.status, status);
            assert_eq!(retries(&t), 1);
        }
        // Every end a person can retry, and an awaiting review's
        // (completed in KV, held by the coordinator).
        for status in [
            TaskStatus::Failed,
            TaskStatus::Blocked,
            TaskStatus::Skipped,
            TaskStatus::Completed,
        ] {
            let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
            t.status = status;
            assert!(retry_entry(&mut t, 1), "{status:?}");
            assert_eq!(t.status, TaskStatus::Pending);
        }
    }

    #[test]
    fn revisions_are_counted_from_the_metadata() {
        let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
        assert_eq!(revisions(&t), 0);
        t.metadata.insert(REVISIONS_KEY.into(), json!(2));
        assert_eq!(revisions(&t), 2);
        assert!(was_cancelled(&cancelled_result()));
        assert!(!was_cancelled(&json!({"error": "x"})));
    }
}
