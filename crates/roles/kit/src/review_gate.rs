//! The human review gate: a task whose metadata says `review = "human"`
//! (from the task file: the task, its role, or the whole session) does not
//! land when its work is validated. Its work is committed on its branch and
//! the worker ends with the task blocked and `awaiting_review` in its
//! result; the run parks it without a slot, and a person's `wavecrew
//! approve` lands the branch through the merge queue (`wavecrew reject`
//! starts one revision with the person's note). Work that changes files the
//! user's tools run by themselves (`[isolation] runs_later`) is held the
//! same way whatever the task says. Work done in place has no branch to
//! hold: it is not gated.

use wavecrew_core::role::PhaseError;
use wavecrew_core::{Task, TaskStatus};

use crate::report::ReportBuilder;
use crate::workspace::Workspace;

/// The result field that says a task waits for a person's review.
pub const AWAITING_REVIEW: &str = "awaiting_review";

/// Whether `task` asks for a person's review before it lands
/// (`metadata.review = "human"`).
pub fn wants_human_review(task: &Task) -> bool {
    task.metadata
        .get("review")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|r| r.eq_ignore_ascii_case("human"))
}

/// Hold validated work for a person's review: for a task that asks for it,
/// or whose work `needs_review` whatever it asks (it changed files that
/// run later), and that worked in a worktree of its own, commit the work
/// (`message`) on its branch and return the report that ends the worker
/// with the task blocked, awaiting review; `None` when the work goes on to
/// land.
pub async fn hold(
    task: &Task,
    workspace: &Workspace,
    message: &str,
    needs_review: bool,
) -> Result<Option<ReportBuilder>, PhaseError> {
    if !needs_review && !wants_human_review(task) {
        return Ok(None);
    }
    let Workspace::Isolated {
        integration,
        worktree,
    } = workspace
    else {
        return Ok(None);
    };
    let (integration, wt) = ((**integration).clone(), worktree.clone());
    let (id, message) = (task.id.as_str().to_owned(), message.to_owned());
    let commit = tokio::task::spawn_blocking(move || integration.commit(&wt, &id, &message))
        .await
        .map_err(|e| PhaseError::workspace(format!("committing the task's work: {e}")))?
        .map_err(|e| PhaseError::workspace(format!("committing the task's work: {e}")))?;
    let report = ReportBuilder::new(TaskStatus::Blocked, AWAITING_REVIEW, task)
        .field(AWAITING_REVIEW, true)
        // What the reports and `wavecrew status` say of a blocked task.
        .field(
            "error",
            "awaiting a person's review: `wavecrew approve` lands it, `wavecrew reject --note` revises it",
        )
        .field("branch", &worktree.branch)
        .field("base", &worktree.base)
        .field("commit", commit)
        .summary(format!(
            "{} awaits a person's review: `wavecrew approve` lands it, `wavecrew reject` revises it",
            task.id.as_str()
        ));
    Ok(Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::TaskId;

    #[test]
    fn only_tasks_that_ask_for_it_are_gated() {
        let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
        assert!(!wants_human_review(&t));
        t.metadata
            .insert("review".into(), serde_json::json!("human"));
        assert!(wants_human_review(&t));
        t.metadata
            .insert("review".into(), serde_json::json!("agent"));
        assert!(!wants_human_review(&t));
    }
}
