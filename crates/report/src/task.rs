//! One task as the reports show it: [`TaskReport`], with its attempts
//! ([`AttemptInfo`]) and its merge facts ([`TaskMerge`] and the conflicts
//! and bus records it carries). Plain data, imported by [`crate::data`],
//! [`crate::cost`] and [`crate::merge`]; it imports none of them.

use serde::Serialize;
use serde_json::Value;
use wavecrew_core::Usage;

/// One attempt of a task, from its `outcome.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptInfo {
    /// Its number (the folder name).
    pub attempt: u32,
    /// The backend.
    pub backend: String,
    /// The outcome class (`success`, `failed`, …), or `interrupted` when the
    /// folder has no `outcome.json`.
    pub outcome: String,
    /// The exit code.
    pub exit_code: Option<i64>,
    /// How long it ran.
    pub duration_ms: Option<u64>,
    /// Token usage, when the backend reported it.
    pub usage: Option<Usage>,
    /// Its folder, relative to the session.
    pub dir: String,
    /// The governor's record (`governor.json`): when it asked to start,
    /// when it was let start, how long it waited and why.
    pub governor: Option<Value>,
    /// The host it ran on, for an attempt that ran on another host
    /// (`wavecrew worker`); absent for one that ran here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The state the reports and `status` give a task whose validated work
/// waits for a person's review (`blocked` in the store, with
/// `awaiting_review` in its result).
pub const AWAITING_REVIEW: &str = "awaiting_review";

/// One task, as the reports show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    /// The id.
    pub id: String,
    /// The title.
    pub title: String,
    /// The owner role.
    pub role: Option<String>,
    /// The state: the store's, or [`AWAITING_REVIEW`].
    pub state: String,
    /// Its wave (1-based), when the graph is valid.
    pub wave: Option<usize>,
    /// Whether it is on the critical path.
    pub critical: bool,
    /// The backend of its last attempt.
    pub backend: Option<String>,
    /// Its attempts.
    pub attempts: Vec<AttemptInfo>,
    /// When it started (the first record about it), RFC 3339.
    pub started_at: Option<String>,
    /// When it ended (its final record), RFC 3339.
    pub ended_at: Option<String>,
    /// `ended_at - started_at`.
    pub duration_ms: Option<u64>,
    /// Files it changed.
    pub files_changed: Vec<String>,
    /// The validation verdicts (`validation_results`), when recorded.
    pub validation: Option<Value>,
    /// Summed token usage of its attempts.
    pub usage: Option<Usage>,
    /// Why it failed or was skipped.
    pub error: Option<String>,
    /// The summary of its final bus record.
    pub summary: Option<String>,
    /// Its branch, base, merge commit and conflicts, when it worked in a
    /// worktree of its own (absent for a task that ran in place).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<TaskMerge>,
    /// The time of its last bus record (where a blocked task's bar ends on
    /// the timeline).
    #[serde(skip)]
    pub last_record_at: Option<String>,
}

/// A landed commit that touched a file a task conflicted on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpstreamCommit {
    /// The commit.
    pub commit: Option<String>,
    /// Its subject line.
    pub subject: Option<String>,
    /// The task that landed it, when it carries a task's trailer.
    pub task: Option<String>,
}

/// One conflict a task met when its work was to land.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    /// The conflicted files.
    pub files: Vec<String>,
    /// The tasks whose landed work it conflicts with (`with`, else the
    /// upstream commits' tasks).
    pub with: Vec<String>,
    /// The landed commits that touched those files.
    pub upstream: Vec<UpstreamCommit>,
    /// git's messages.
    pub messages: Option<String>,
}

/// A merge-queue record of a task on the bus.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeEvent {
    /// When (the record's `ts`).
    pub ts: String,
    /// `merged` (`task_merged`), `conflict` (`merge_conflict`) or
    /// `rejected` (`merge_rejected`: the merged result failed
    /// `[integration] verify`).
    pub kind: String,
    /// The merge commit (`merged`).
    pub commit: Option<String>,
    /// The conflicted files (`conflict`).
    pub files: Vec<String>,
    /// The tasks it conflicts with (`conflict`).
    pub with: Vec<String>,
    /// The verify command that failed (`rejected`).
    pub command: Option<String>,
    /// Whether a revision follows (`conflict`, `rejected`); false: the task
    /// is blocked or failed.
    pub revision: Option<bool>,
}

/// A task's merge facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskMerge {
    /// The task's branch (`wavecrew-tasks/<session-id>/<task>/<attempt>`).
    pub branch: Option<String>,
    /// The commit its worktree started from.
    pub base: Option<String>,
    /// The commit on the integration branch that landed it; None when it
    /// has not landed, or changed nothing.
    pub merge_commit: Option<String>,
    /// The conflict it ended on (a blocked or failed task).
    pub conflict: Option<Conflict>,
    /// Every conflict it met, oldest first.
    pub conflicts: Vec<Conflict>,
    /// The `[integration] verify` command its merged result failed, when
    /// that kept it from landing (its result's `verify.command`).
    pub rejected_by: Option<String>,
    /// Its `task_merged`, `merge_conflict` and `merge_rejected` records.
    pub events: Vec<MergeEvent>,
}

impl TaskMerge {
    /// Every conflict it met: `conflicts`, else the one it ended on, else
    /// those its bus records name.
    pub fn all_conflicts(&self) -> Vec<Conflict> {
        if !self.conflicts.is_empty() {
            return self.conflicts.clone();
        }
        if let Some(c) = &self.conflict {
            return vec![c.clone()];
        }
        self.events
            .iter()
            .filter(|e| e.kind == "conflict")
            .map(|e| Conflict {
                files: e.files.clone(),
                with: e.with.clone(),
                upstream: Vec::new(),
                messages: None,
            })
            .collect()
    }

    /// When it landed (its `task_merged` record).
    pub fn landed_at(&self) -> Option<&str> {
        self.events
            .iter()
            .rev()
            .find(|e| e.kind == "merged")
            .map(|e| e.ts.as_str())
    }
}
