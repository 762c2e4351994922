//! `team-session.json` rewritten with the pipeline's counts, atomically:
//! by reconcile, by the run's bookkeeping thread, and at the end.

use serde_json::{Value, json};
use wavecrew_core::{Task, TaskStatus};

use crate::validate::ValidSession;

/// Rewrite `team-session.json` atomically with the pipeline counts.
pub fn write_session(valid: &mut ValidSession, tasks: &[Task]) -> wavecrew_core::Result<()> {
    let done = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .count();
    write_session_counts(valid, tasks.len(), done)
}

/// [`write_session`] from counts the caller keeps (the orchestrator counts
/// as tasks end, instead of listing the store for every write).
pub fn write_session_counts(
    valid: &mut ValidSession,
    total: usize,
    done: usize,
) -> wavecrew_core::Result<()> {
    let mut pipeline = valid
        .session
        .pipeline
        .clone()
        .and_then(|p| p.as_object().cloned())
        .unwrap_or_default();
    pipeline.insert("tasks_total".into(), json!(total));
    pipeline.insert("tasks_completed".into(), json!(done));
    valid.session.pipeline = Some(Value::Object(pipeline));
    valid
        .session
        .write(&wavecrew_core::SessionLayout::new(&valid.dir).team_session())
}
