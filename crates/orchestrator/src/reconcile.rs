//! Phase 0 of seed 001: bring the task store, the session file and the
//! bus back in line after anything (a crash, a kill, a hand edit).
//!
//! * tasks named in `task-analysis.json` but missing from the store are
//!   created with everything the analysis says about them
//!   ([`AnalysisTask::to_task`](wavecrew_core::AnalysisTask::to_task)):
//!   blockers, owner, `metadata`, and the description and title of
//!   team-coordinate's `capabilities[].tasks[]`;
//! * a task file that cannot be read is reported with its path
//!   ([`Reconciled::unreadable`]) and left alone; the other tasks go on;
//! * `completed_tasks` is rebuilt from the store, both directions (an id
//!   listed but not completed is dropped with a `warning`);
//! * an `in_progress` task whose lease expired is reset to pending
//!   (`warning`, "Task `<ID>` reset from interrupted state"); one whose worker
//!   is gone (its pid no longer exists) is an orphan (`error`); a task whose
//!   worker is alive is left alone and adopted;
//! * `team-session.json` is rewritten atomically: `status = active`,
//!   `active_workers` = the live workers, pipeline counts.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde_json::{Map, json};
use wavecrew_core::bus::MessageBus;
use wavecrew_core::store::{LeasePolicy, pid_alive, this_host};
use wavecrew_core::{SessionStatus, TaskId, TaskStatus, TaskStore};

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
    /// Task files that cannot be read: `(path, what is wrong)`, by path.
    /// Reconcile leaves them alone (it neither recreates nor resets them);
    /// the caller decides whether to run without them or to refuse.
    pub unreadable: Vec<(PathBuf, String)>,
}

fn note<B: MessageBus>(bus: &B, kind: &str, summary: &str, task: &TaskId) {
    let mut data = Map::new();
    data.insert("task_id".into(), json!(task.as_str()));
    crate::vocabulary::log_record(bus, kind, summary, data);
}

/// Reconcile a validated session.
pub fn reconcile<B: MessageBus>(
    valid: &mut ValidSession,
    store: &dyn TaskStore,
    bus: &B,
    policy: &LeasePolicy,
) -> wavecrew_core::Result<Reconciled> {
    let mut out = Reconciled::default();
    let listing = store.list_lenient()?;
    // The file names of unreadable tasks: such a task exists, it is not
    // created again from the analysis.
    let unreadable: HashSet<String> = listing
        .problems
        .iter()
        .filter_map(|p| Some(p.path.file_stem()?.to_str()?.to_owned()))
        .collect();
    out.unreadable = listing
        .problems
        .into_iter()
        .map(|p| (p.path, p.error.to_string()))
        .collect();
    // Missing tasks, with all the analysis says about them.
    let existing: HashSet<TaskId> = listing.tasks.into_iter().map(|t| t.id).collect();
    for a in valid.analysis.effective_tasks() {
        if existing.contains(&a.id) || unreadable.contains(a.id.as_str()) {
            continue;
        }
        store.create(a.to_task())?;
        out.created.push(a.id);
    }
    // Interrupted work: orphans (worker gone) and expired leases.
    let now = jiff::Timestamp::now();
    for t in store.list_lenient()?.tasks {
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
    // completed_tasks, both directions (an unreadable task keeps its entry:
    // nothing says it is not completed).
    let tasks = store.list_lenient()?.tasks;
    let mut completed: Vec<TaskId> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .map(|t| t.id.clone())
        .collect();
    let done: HashSet<&TaskId> = completed.iter().collect();
    let mut kept: Vec<TaskId> = Vec::new();
    for id in &valid.session.completed_tasks {
        if unreadable.contains(id.as_str()) {
            kept.push(id.clone());
        } else if !done.contains(id) {
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
    drop(done);
    completed.extend(kept);
    valid.session.completed_tasks = completed;
    valid.session.status = SessionStatus::Active;
    let owners: HashMap<&TaskId, Option<&String>> =
        tasks.iter().map(|t| (&t.id, t.owner.as_ref())).collect();
    valid.session.active_workers = out
        .live
        .iter()
        .map(|(id, pid)| {
            let owner = owners.get(id).copied().flatten();
            json!({"role": owner, "task": id.as_str(), "pid": pid, "adopted": true})
        })
        .collect();
    write_session(valid, &tasks)?;
    Ok(out)
}

pub use crate::session_file::{write_session, write_session_counts};

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use wavecrew_core::{FileTaskStore, Task, TaskAnalysis, TeamSession};
    use wavecrew_msgbus::{Bus, Durability, KeyUse};

    /// A session in team-coordinate's own shape, validated by hand (no role
    /// files needed here), with its store and bus.
    fn session(analysis: &Value) -> (tempfile::TempDir, ValidSession, FileTaskStore, Bus) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".workflow/.team/TC-r-2026-11-23");
        std::fs::create_dir_all(&dir).unwrap();
        let session: TeamSession = serde_json::from_value(json!({
            "session_id": "TC-r-2026-11-23", "task_description": "x", "status": "active",
            "roles": [{"name": "developer", "prefix": "IMPL"}], "completed_tasks": ["IMPL-001"]
        }))
        .unwrap();
        let analysis: TaskAnalysis = serde_json::from_value(analysis.clone()).unwrap();
        let store = FileTaskStore::for_session(&dir);
        let (bus, _) = Bus::open(
            tmp.path(),
            "TC-r-2026-11-23",
            KeyUse::Write,
            Durability::Batch,
        )
        .unwrap();
        let valid = ValidSession {
            dir,
            session,
            analysis,
        };
        (tmp, valid, store, bus)
    }

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    #[test]
    fn created_tasks_carry_the_capability_text_and_the_entry_metadata() {
        let (_tmp, mut valid, store, bus) = session(&json!({
            "capabilities": [{"name": "developer", "prefix": "IMPL", "tasks": [
                {"id": "IMPL-001", "description": "Write the data model."},
                {"id": "IMPL-002", "title": "REST API", "description": "Add the endpoints."}]}],
            "dependency_graph": {"IMPL-001": [], "IMPL-002": ["IMPL-001"]},
            "tasks": [{"id": "IMPL-002", "subject": "IMPL-002", "metadata": {"executor": "gemini"}}]
        }));
        let r = reconcile(&mut valid, &store, &bus, &LeasePolicy::default()).unwrap();
        // The tasks[] entries first, then the graph's other tasks.
        assert_eq!(r.created, [id("IMPL-002"), id("IMPL-001")]);
        let t1 = store.get(&id("IMPL-001")).unwrap();
        assert_eq!(t1.description, "Write the data model.");
        assert_eq!(t1.title(), "Write the data model.");
        let t2 = store.get(&id("IMPL-002")).unwrap();
        assert_eq!(t2.description, "Add the endpoints.");
        assert_eq!(t2.title(), "REST API");
        assert_eq!(t2.executor(), Some("gemini"));
        assert_eq!(t2.blocked_by, [id("IMPL-001")]);
        // IMPL-001 was listed as completed but is not: dropped.
        assert_eq!(r.uncompleted, [id("IMPL-001")]);
        assert!(valid.session.completed_tasks.is_empty());
    }

    #[test]
    fn an_unreadable_task_file_is_reported_and_left_alone() {
        let (_tmp, mut valid, store, bus) = session(&json!({
            "dependency_graph": {"IMPL-001": [], "IMPL-002": ["IMPL-001"], "IMPL-003": []}
        }));
        store.create(Task::new(id("IMPL-003"), "c", "")).unwrap();
        std::fs::create_dir_all(store.dir()).unwrap();
        let bad = store.path_of(&id("IMPL-001"));
        std::fs::write(&bad, "{\"id\": \"IMPL-001\", \"status\": \"compl").unwrap();
        let r = reconcile(&mut valid, &store, &bus, &LeasePolicy::default()).unwrap();
        // Not recreated over the corrupt file; the others go on.
        assert_eq!(r.created, [id("IMPL-002")]);
        assert_eq!(r.unreadable.len(), 1);
        assert_eq!(r.unreadable[0].0, bad);
        assert!(
            r.unreadable[0].1.contains("IMPL-001.json"),
            "{:?}",
            r.unreadable
        );
        assert_eq!(
            std::fs::read_to_string(&bad).unwrap(),
            "{\"id\": \"IMPL-001\", \"status\": \"compl"
        );
        // Nothing says it is not completed: its completed_tasks entry stays.
        assert_eq!(valid.session.completed_tasks, [id("IMPL-001")]);
        assert!(r.uncompleted.is_empty());
    }
}
