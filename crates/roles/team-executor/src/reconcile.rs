//! Phase 0 of seed 001: bring the task store, the session file and the
//! bus back in line after anything (a crash, a kill, a hand edit).
//!
//! * tasks named in `task-analysis.json` but missing from the store are
//!   created with their blockers and owner;
//! * `completed_tasks` is rebuilt from the store, both directions (an id
//!   listed but not completed is dropped with a `warning`);
//! * an `in_progress` task whose lease expired is reset to pending
//!   (`warning`, "Task `<ID>` reset from interrupted state"); one whose worker
//!   is gone (its pid no longer exists) is an orphan (`error`); a task whose
//!   worker is alive is left alone and adopted;
//! * `team-session.json` is rewritten atomically: `status = active`,
//!   `active_workers` = the live workers, pipeline counts.

use serde_json::{Map, Value, json};
use wavecrew_core::bus::MessageBus;
use wavecrew_core::store::{LeasePolicy, pid_alive, this_host};
use wavecrew_core::{SessionStatus, Task, TaskId, TaskStatus, TaskStore};

use crate::validate::ValidSession;

/// What reconcile changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reconciled {
    /// Tasks created from `task-analysis.json`.
    pub created: Vec<TaskId>,
    /// Tasks reset after an expired lease.
    pub reset: Vec<TaskId>,
    /// Tasks reset because their worker was gone.
    pub orphans: Vec<TaskId>,
    /// Ids dropped from `completed_tasks` (not completed in the store).
    pub uncompleted: Vec<TaskId>,
    /// In-progress tasks whose worker is alive: `(task, pid)`.
    pub live: Vec<(TaskId, u32)>,
}

fn note<B: MessageBus>(bus: &B, kind: &str, summary: &str, task: &TaskId) {
    let mut data = Map::new();
    data.insert("task_id".into(), json!(task.as_str()));
    crate::orchestrate::log_record(bus, kind, summary, data);
}

/// Reconcile a validated session.
pub fn reconcile<B: MessageBus>(
    valid: &mut ValidSession,
    store: &dyn TaskStore,
    bus: &B,
    policy: &LeasePolicy,
) -> wavecrew_core::Result<Reconciled> {
    let mut out = Reconciled::default();
    // Missing tasks, with their blockers.
    let existing: std::collections::HashSet<TaskId> =
        store.list()?.into_iter().map(|t| t.id).collect();
    for a in valid.analysis.effective_tasks() {
        if existing.contains(&a.id) {
            continue;
        }
        let subject = a.subject.clone().unwrap_or_else(|| a.id.to_string());
        let description = a
            .extra
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or(&subject)
            .to_owned();
        let mut task = Task::new(a.id.clone(), subject, description);
        task.owner.clone_from(&a.owner);
        task.blocked_by.clone_from(&a.blocked_by);
        store.create(task)?;
        out.created.push(a.id);
    }
    // Interrupted work: orphans (worker gone) and expired leases.
    let now = jiff::Timestamp::now();
    for t in store.list()? {
        if t.status != TaskStatus::InProgress {
            continue;
        }
        match &t.lease {
            Some(l) if l.host == this_host() && !pid_alive(l.pid) => out.orphans.push(t.id.clone()),
            Some(l) if !policy.is_expired(l, now) => out.live.push((t.id.clone(), l.pid)),
            _ => out.reset.push(t.id.clone()),
        }
    }
    store.reconcile(policy)?;
    for id in &out.reset {
        note(
            bus,
            "warning",
            &format!("Task {} reset from interrupted state", id.as_str()),
            id,
        );
    }
    for id in &out.orphans {
        note(
            bus,
            "error",
            &format!("Orphan {} reset: its worker is gone", id.as_str()),
            id,
        );
    }
    // completed_tasks, both directions.
    let tasks = store.list()?;
    let completed: Vec<TaskId> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .map(|t| t.id.clone())
        .collect();
    for id in &valid.session.completed_tasks {
        if !completed.contains(id) {
            out.uncompleted.push(id.clone());
            note(
                bus,
                "warning",
                &format!(
                    "{} was in completed_tasks but is not completed; removed",
                    id.as_str()
                ),
                id,
            );
        }
    }
    valid.session.completed_tasks = completed;
    valid.session.status = SessionStatus::Active;
    valid.session.active_workers = out
        .live
        .iter()
        .map(|(id, pid)| {
            let owner = tasks
                .iter()
                .find(|t| &t.id == id)
                .and_then(|t| t.owner.clone());
            json!({"role": owner, "task": id.as_str(), "pid": pid, "adopted": true})
        })
        .collect();
    write_session(valid, &tasks)?;
    Ok(out)
}

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
    valid.session.write(&valid.dir.join("team-session.json"))
}
