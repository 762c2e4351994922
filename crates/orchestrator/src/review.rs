//! The human review gate on the run's side. A worker that validated the
//! work of a task asking for a person's review (`review = "human"`) ends
//! with the task blocked and `awaiting_review` in its result, its work
//! committed on its branch (`wavecrew_role_kit::review_gate`). The run then
//! parks the task: its slot goes to other tasks, its dependents wait, and
//! this module waits for the person's decision in the session's
//! `control/review/` ([`wavecrew_core::Control::decision`]):
//!
//! * approved: the branch lands through the merge queue (the same
//!   compare-and-swap landing as every task's) and the task completes; a
//!   conflict with what landed meanwhile blocks it, naming the files;
//! * rejected: the task goes back to pending with the person's note (and
//!   their comments on lines of the diff, each with its file and line) in
//!   its description as the user's instruction, and runs again: one
//!   revision, which waits for review in turn.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use wavecrew_core::bus::MessageBus;
use wavecrew_core::{Control, ReviewDecision, Task, TaskId, TaskStatus};
use wavecrew_isolation::{Integration, Landing, Repo, Work};
use wavecrew_scheduler::RunOutcome;
use wavecrew_sys::process::blocking;

use crate::ledger::Note;
use crate::vocabulary::{log_record, task_data};
use crate::worker_runner::WorkerRunner;

fn result_str(task: &Task, key: &str) -> Option<String> {
    task.result
        .as_ref()
        .and_then(|r| r.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The note and comments of a rejection, as the revision's instruction.
pub(crate) fn revision_text(decision: &ReviewDecision) -> String {
    let mut text = String::from(
        "\n\n## A person reviewed the previous attempt and asked for changes\n\n\
         Do what they ask below; it is the user's instruction for this revision.\n",
    );
    if !decision.note.trim().is_empty() {
        text.push('\n');
        text.push_str(decision.note.trim());
        text.push('\n');
    }
    if !decision.comments.is_empty() {
        text.push_str("\nTheir comments on lines of the diff:\n");
        for c in &decision.comments {
            let _ = write!(text, "\n- `{}` line {}: {}", c.file, c.line, c.text.trim());
        }
        text.push('\n');
    }
    text
}

impl<B: MessageBus + 'static> WorkerRunner<B> {
    async fn read(&self, id: &TaskId) -> wavecrew_core::Result<Task> {
        let store = Arc::clone(&self.store);
        let id = id.clone();
        blocking(move || store.get(&id)).await
    }

    /// Wait for a person's decision on the parked `id`, then act on it.
    pub(crate) async fn await_review(&self, id: &TaskId) -> RunOutcome {
        match self.review_loop(id).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!("{}: {e}", id.as_str());
                RunOutcome::failed(e.to_string())
            }
        }
    }

    async fn review_loop(&self, id: &TaskId) -> wavecrew_core::Result<RunOutcome> {
        let control = Control::new(&self.launcher.session_dir);
        loop {
            let task = self.read(id).await?;
            if !task.awaiting_review() {
                // Changed by other means meanwhile (a retry): take it as it is.
                return Ok(match task.status {
                    TaskStatus::Completed => RunOutcome::Succeeded,
                    TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Skipped => {
                        RunOutcome::failed(task.error().unwrap_or("not approved").to_owned())
                    }
                    _ => RunOutcome::Again,
                });
            }
            let (c, t) = (control.clone(), id.clone());
            let decision = blocking(move || c.decision(&t)).await?;
            let branch = result_str(&task, "branch").unwrap_or_default();
            match decision {
                Some(d) if d.branch == branch => {
                    let outcome = if d.approved {
                        self.land_approved(&task, &branch).await?
                    } else {
                        self.revise_rejected(&task, &d).await?
                    };
                    let (c, t) = (control.clone(), id.clone());
                    blocking(move || c.clear_decision(&t)).await?;
                    return Ok(outcome);
                }
                // A decision about work an earlier attempt did: stale.
                Some(_) => {
                    let (c, t) = (control.clone(), id.clone());
                    blocking(move || c.clear_decision(&t)).await?;
                }
                None => tokio::time::sleep(self.poll).await,
            }
        }
    }

    /// Land the approved `branch` of `task` and complete it.
    async fn land_approved(&self, task: &Task, branch: &str) -> wavecrew_core::Result<RunOutcome> {
        let dir = self.launcher.session_dir.clone();
        let (id, branch) = (task.id.clone(), branch.to_owned());
        let landed = {
            let (dir, id, branch) = (dir.clone(), id.clone(), branch.clone());
            let verify = self.verify.clone();
            blocking(move || -> Result<(Landing, String), String> {
                let repo = match Repo::open(&dir).map_err(|e| e.to_string())? {
                    Some(r) => r,
                    None => Repo::open_shadow(&dir)
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| format!("{}: no repository", dir.display()))?,
                };
                let integration = Integration::resume(&repo, &dir)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("{}: no integration branch", dir.display()))?;
                // `[integration] verify` on the merge candidate, as for
                // every landing.
                let work = Work::Ref {
                    reference: &format!("refs/heads/{branch}"),
                    label: &branch,
                };
                let landing = integration
                    .land_work(work, id.as_str(), verify.as_ref())
                    .map_err(|e| e.to_string())?;
                Ok((landing, integration.branch().to_owned()))
            })
            .await
        };
        let (landing, integration_branch) = match landed {
            Ok(l) => l,
            Err(e) => {
                return self
                    .end_review(
                        &id,
                        TaskStatus::Blocked,
                        json!({"error": format!("the approved work could not land: {e}")}),
                        "error",
                        &format!("{}: the approved work could not land: {e}", id.as_str()),
                    )
                    .await;
            }
        };
        let mut data = task_data(&id);
        data.insert("branch".into(), json!(branch));
        data.insert("base".into(), json!(result_str(task, "base")));
        data.insert("integration_branch".into(), json!(integration_branch));
        if let Landing::Conflict { files, .. } = &landing {
            data.insert("files".into(), json!(files));
            data.insert("revision".into(), json!(false));
            self.record(
                "merge_conflict",
                &format!(
                    "{} (approved) conflicts with landed work in {}",
                    id.as_str(),
                    files.join(", ")
                ),
                data,
            );
            return self
                .end_review(
                    &id,
                    TaskStatus::Blocked,
                    json!({"error": format!("the approved work conflicts with landed work in {}", files.join(", ")), "conflict": {"files": files}}),
                    "task_blocked",
                    &format!("{} blocked: its approved work conflicts with landed work", id.as_str()),
                )
                .await;
        }
        if let Landing::Rejected { output, .. } = &landing {
            return self
                .end_review(
                    &id,
                    TaskStatus::Blocked,
                    json!({"error": format!("the merged result failed its check: {}", output.lines().last().unwrap_or_default())}),
                    "task_blocked",
                    &format!(
                        "{} blocked: its merged result failed its check",
                        id.as_str()
                    ),
                )
                .await;
        }
        let commit = landing.commit().map(str::to_owned);
        if let Some(c) = &commit {
            data.insert("merge_commit".into(), json!(c));
            let short = c.get(..10).unwrap_or(c);
            self.record(
                "task_merged",
                &format!(
                    "{} merged into {integration_branch} at {short} (approved by a person)",
                    id.as_str()
                ),
                data,
            );
        }
        self.end_review(
            &id,
            TaskStatus::Completed,
            json!({"merge_commit": commit, "approved": true}),
            "task_complete",
            &format!("{} complete: approved by a person", id.as_str()),
        )
        .await
    }

    /// Send `task` back for one revision carrying the person's words.
    async fn revise_rejected(
        &self,
        task: &Task,
        decision: &ReviewDecision,
    ) -> wavecrew_core::Result<RunOutcome> {
        let (store, id) = (Arc::clone(&self.store), task.id.clone());
        let text = revision_text(decision);
        // The revision runs on the backend that did the reviewed work: the
        // note makes the description longer, which must not change the
        // automatic routing (seed 000's "long means complex").
        let backend = task
            .result
            .as_ref()
            .and_then(|r| r.pointer("/evidence/attempts"))
            .and_then(Value::as_array)
            .and_then(|a| a.last())
            .and_then(|a| a.get("backend"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (note, comments) = (decision.note.clone(), decision.comments.clone());
        blocking(move || {
            store.update(&id, &mut |t| {
                t.status = TaskStatus::Pending;
                t.lease = None;
                t.description.push_str(&text);
                let n = t.metadata_count(wavecrew_core::task::REVIEW_REVISIONS);
                t.metadata
                    .insert(wavecrew_core::task::REVIEW_REVISIONS.into(), json!(n + 1));
                if let Some(b) = &backend
                    && !t.metadata.contains_key("executor")
                {
                    t.metadata.insert("executor".into(), json!(b));
                }
                t.result = Some(json!({"review_rejected": {"note": note, "comments": comments}}));
                Ok(())
            })
        })
        .await?;
        let mut data = task_data(&task.id);
        data.insert("note".into(), json!(decision.note));
        data.insert("comments".into(), json!(decision.comments));
        self.record(
            "review_rejected",
            &format!(
                "{}: a person asked for changes; one revision follows",
                task.id.as_str()
            ),
            data,
        );
        Ok(RunOutcome::Again)
    }

    /// Set the task's end after a review: `status`, `fields` merged into
    /// its result (`awaiting_review` off), a record `kind` on the bus.
    async fn end_review(
        &self,
        id: &TaskId,
        status: TaskStatus,
        fields: Value,
        kind: &str,
        summary: &str,
    ) -> wavecrew_core::Result<RunOutcome> {
        let (store, tid) = (Arc::clone(&self.store), id.clone());
        let updated = blocking(move || {
            store.update(&tid, &mut |t| {
                t.status = status;
                t.lease = None;
                let mut result = t
                    .result
                    .take()
                    .and_then(|r| r.as_object().cloned())
                    .unwrap_or_default();
                result.insert("awaiting_review".into(), json!(false));
                // The wait's own words are no longer true.
                result.remove("error");
                if let Value::Object(f) = &fields {
                    result.extend(f.clone());
                }
                t.result = Some(Value::Object(result));
                Ok(())
            })
        })
        .await?;
        self.record(kind, summary, task_data(id));
        let _ = self.notes.send(Note::Finished {
            task: id.clone(),
            status: updated.status,
        });
        Ok(match updated.status {
            TaskStatus::Completed => RunOutcome::Succeeded,
            _ => RunOutcome::failed(updated.error().unwrap_or("blocked").to_owned()),
        })
    }

    fn record(&self, kind: &str, summary: &str, data: Map<String, Value>) {
        log_record(&*self.bus, kind, summary, data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::LineComment;

    #[test]
    fn the_revision_quotes_the_note_and_each_comment_with_its_file_and_line() {
        let text = revision_text(&ReviewDecision {
            approved: false,
            branch: "b".into(),
            note: "Name the constant.".into(),
            comments: vec![LineComment {
                file: "src/lib.rs".into(),
                line: 7,
                text: "magic number".into(),
            }],
            at: String::new(),
        });
        assert!(text.contains("Name the constant."), "{text}");
        assert!(
            text.contains("- `src/lib.rs` line 7: magic number"),
            "{text}"
        );
    }
}
