//! The actions a person takes on a session, one function for the CLI
//! (`wavecrew pause|resume|cancel|retry|approve|reject`) and the page's
//! buttons alike: [`apply`] checks the task and its state, writes the
//! request into the session's `control/` folder (or the store, for a
//! retry), and records it on the bus. A running orchestrator honours the
//! request between dispatches; with none running, a retry and a cancel
//! take effect in the store at once, and a pause or a review decision waits
//! for the next run.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use wavecrew_core::store::pid_alive;
use wavecrew_core::{
    Control, FileTaskStore, LineComment, NewMessage, ReviewDecision, Task, TaskId, TaskStatus,
    TaskStore,
};

/// An action on a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start no new task until resumed.
    Pause,
    /// Start tasks again.
    Resume,
    /// Stop a running task (its worker and everything it started).
    Cancel(TaskId),
    /// Run a failed, blocked or cancelled task again (and what was skipped
    /// because of it).
    Retry(TaskId),
    /// Land the work of a task that awaits review.
    Approve(TaskId),
    /// Send the work of a task that awaits review back for one revision,
    /// with what to change.
    Reject {
        /// The task.
        task: TaskId,
        /// What to change.
        note: String,
        /// Comments on lines of its diff.
        comments: Vec<LineComment>,
    },
}

impl Action {
    /// The action's name, as the CLI and the page say it.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Cancel(_) => "cancel",
            Action::Retry(_) => "retry",
            Action::Approve(_) => "approve",
            Action::Reject { .. } => "reject",
        }
    }

    /// The action named `name` (`cancel` and `retry` need `task`).
    pub fn parse(name: &str, task: Option<&str>) -> Result<Action, ActionError> {
        let task = || -> Result<TaskId, ActionError> {
            let raw = task.ok_or_else(|| ActionError::Usage(format!("{name} needs a task id")))?;
            TaskId::new(raw).map_err(|e| ActionError::Usage(format!("task id {raw:?}: {e}")))
        };
        match name {
            "pause" => Ok(Action::Pause),
            "resume" => Ok(Action::Resume),
            "cancel" => Ok(Action::Cancel(task()?)),
            "retry" => Ok(Action::Retry(task()?)),
            "approve" => Ok(Action::Approve(task()?)),
            "reject" => Ok(Action::Reject {
                task: task()?,
                note: String::new(),
                comments: Vec::new(),
            }),
            other => Err(ActionError::Usage(format!(
                "unknown action {other:?} (expected pause, resume, cancel, retry, approve or reject)"
            ))),
        }
    }
}

/// An action was refused.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    /// The request itself is wrong (an unknown action, a bad task id).
    #[error("{0}")]
    Usage(String),
    /// The session has no such task.
    #[error("{session}: no task {task} in this session")]
    UnknownTask {
        /// The session folder.
        session: PathBuf,
        /// The task id asked for.
        task: String,
    },
    /// The task is not in a state the action applies to.
    #[error("{task} is {state}: {action} applies to a task that is {expected}")]
    WrongState {
        /// The task.
        task: String,
        /// Its state.
        state: String,
        /// The action.
        action: &'static str,
        /// The states it applies to.
        expected: &'static str,
    },
    /// The task runs on another host, under no coordinator of this one
    /// (a coordinator's tasks are cancelled through it).
    #[error(
        "{task} runs on host {host}, not sent there by a coordinator of this host: cancel stops \
         workers of this host and tasks its `wavecrew run --engine` sent out; stop it there"
    )]
    Remote {
        /// The task.
        task: String,
        /// The host that runs it.
        host: String,
    },
    /// The session's files could not be read or written.
    #[error(transparent)]
    Core(#[from] wavecrew_core::CoreError),
    /// The bus refused the record.
    #[error(transparent)]
    Bus(#[from] wavecrew_msgbus::BusError),
}

impl ActionError {
    /// Whether the caller asked for something wrong (exit 2), rather than
    /// the machine failing.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            ActionError::Usage(_)
                | ActionError::UnknownTask { .. }
                | ActionError::WrongState { .. }
                | ActionError::Remote { .. }
        )
    }
}

/// What an action did, in one line for people.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    /// The action.
    pub action: &'static str,
    /// The task, for `cancel` and `retry`.
    pub task: Option<String>,
    /// What happened.
    pub message: String,
    /// The tasks a retry reset (the task and what was skipped because of
    /// it).
    pub reset: Vec<String>,
}

/// The bus of the session folder `session_dir`
/// (`<root>/.workflow/.team/<id>/`).
pub fn session_bus(session_dir: &Path) -> Result<wavecrew_msgbus::Bus, ActionError> {
    let id = session_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| ActionError::Usage(format!("{}: no session id", session_dir.display())))?;
    let id = wavecrew_core::SessionId::new(id)
        .map_err(|e| ActionError::Usage(format!("{}: {e}", session_dir.display())))?;
    let root = session_dir
        .ancestors()
        .nth(3)
        .filter(|_| {
            session_dir
                .parent()
                .is_some_and(|p| p.ends_with(".workflow/.team"))
        })
        .ok_or_else(|| {
            ActionError::Usage(format!(
                "{}: not under <project>/.workflow/.team/",
                session_dir.display()
            ))
        })?;
    Ok(wavecrew_msgbus::Bus::new(
        wavecrew_msgbus::BusPaths::new(root, id),
        wavecrew_msgbus::Durability::None,
    ))
}

fn record(
    session_dir: &Path,
    kind: &str,
    summary: &str,
    data: Map<String, Value>,
) -> Result<(), ActionError> {
    let bus = session_bus(session_dir)?;
    bus.log(NewMessage {
        from: "user".into(),
        to: Some("coordinator".into()),
        kind: Some(kind.into()),
        summary: Some(format!("[user] {summary}")),
        data: Some(data),
        reference: None,
    })?;
    Ok(())
}

fn task_data(id: &TaskId) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("task_id".into(), json!(id.as_str()));
    m
}

/// Apply `action` to the session at `session_dir`.
pub fn apply(session_dir: &Path, action: &Action) -> Result<Applied, ActionError> {
    let control = Control::new(session_dir);
    let store = FileTaskStore::for_session(session_dir);
    let get = |id: &TaskId| {
        store.get(id).map_err(|_| ActionError::UnknownTask {
            session: session_dir.to_owned(),
            task: id.as_str().to_owned(),
        })
    };
    let applied = |message: String, task: Option<&TaskId>, reset: Vec<String>| Applied {
        action: action.name(),
        task: task.map(|t| t.as_str().to_owned()),
        message,
        reset,
    };
    match action {
        Action::Pause => {
            let changed = control.pause()?;
            if changed {
                record(
                    session_dir,
                    "dispatch_paused",
                    "dispatch paused: no new task starts until resumed",
                    Map::new(),
                )?;
            }
            Ok(applied(
                if changed {
                    "dispatch paused: running tasks go on, no new task starts until `wavecrew resume`"
                } else {
                    "dispatch was already paused"
                }
                .into(),
                None,
                Vec::new(),
            ))
        }
        Action::Resume => {
            let changed = control.resume()?;
            if changed {
                record(
                    session_dir,
                    "dispatch_resumed",
                    "dispatch resumed",
                    Map::new(),
                )?;
            }
            Ok(applied(
                if changed {
                    "dispatch resumed"
                } else {
                    "dispatch was not paused"
                }
                .into(),
                None,
                Vec::new(),
            ))
        }
        Action::Cancel(id) => {
            let task = get(id)?;
            if task.status != TaskStatus::InProgress {
                return Err(ActionError::WrongState {
                    task: id.as_str().to_owned(),
                    state: task.status.as_str().to_owned(),
                    action: "cancel",
                    expected: "in_progress",
                });
            }
            // A task a host of `wavecrew run --engine` runs (its lease
            // shown by the coordinator, pid 0): the coordinator hands the
            // request on to that host, whose worker stops it and records it.
            if let Some(lease) = task.lease.as_ref().filter(|l| l.pid == 0) {
                control.request_cancel(id)?;
                let mut data = task_data(id);
                data.insert("host".into(), json!(lease.host));
                record(
                    session_dir,
                    "cancel_requested",
                    &format!("cancel of {} (on {}) requested", id.as_str(), lease.host),
                    data,
                )?;
                return Ok(applied(
                    format!(
                        "cancel of {} requested: the coordinator passes it to {}, whose worker stops it and records it",
                        id.as_str(),
                        lease.host
                    ),
                    Some(id),
                    Vec::new(),
                ));
            }
            // A worker of another host without a coordinator here: not
            // ours to stop.
            if let Some(lease) = task
                .lease
                .as_ref()
                .filter(|l| l.host != wavecrew_core::store::this_host())
            {
                return Err(ActionError::Remote {
                    task: id.as_str().to_owned(),
                    host: lease.host.clone(),
                });
            }
            let holder = task.lease.as_ref().map(|l| l.pid);
            if holder.is_some_and(pid_alive) {
                control.request_cancel(id)?;
                record(
                    session_dir,
                    "cancel_requested",
                    &format!("cancel of {} requested", id.as_str()),
                    task_data(id),
                )?;
                return Ok(applied(
                    format!(
                        "cancel of {} requested: the run stops its worker and records it",
                        id.as_str()
                    ),
                    Some(id),
                    Vec::new(),
                ));
            }
            // No live worker holds it (an interrupted run): record the
            // cancel in the store now.
            store.update(id, &mut |t| {
                t.status = TaskStatus::Failed;
                t.lease = None;
                t.result = Some(json!({"error": "cancelled by a person", "cancelled": true}));
                Ok(())
            })?;
            let mut data = task_data(id);
            data.insert("cancelled".into(), json!(true));
            record(
                session_dir,
                "task_cancelled",
                &format!(
                    "{} cancelled by a person (no worker was running)",
                    id.as_str()
                ),
                data,
            )?;
            Ok(applied(
                format!("{} cancelled (no worker was running it)", id.as_str()),
                Some(id),
                Vec::new(),
            ))
        }
        Action::Approve(id) => decide(session_dir, &store, id, true, "", &[]),
        Action::Reject {
            task,
            note,
            comments,
        } => decide(session_dir, &store, task, false, note, comments),
        Action::Retry(id) => {
            let task = get(id)?;
            if !matches!(task.status, TaskStatus::Failed | TaskStatus::Blocked) {
                return Err(ActionError::WrongState {
                    task: id.as_str().to_owned(),
                    state: task.status.as_str().to_owned(),
                    action: "retry",
                    expected: "failed or blocked",
                });
            }
            let reset = reset_for_retry(&store, id)?;
            control.note_retry(id)?;
            let mut data = task_data(id);
            data.insert("reset".into(), json!(reset));
            record(
                session_dir,
                "task_retry",
                &format!("{} reset for a retry", id.as_str()),
                data,
            )?;
            Ok(applied(
                format!(
                    "{} reset to pending ({} task(s) in all); a running session starts it, \
                     else `wavecrew run` on the session does",
                    id.as_str(),
                    reset.len()
                ),
                Some(id),
                reset,
            ))
        }
    }
}

/// Whether `task` waits for a person's review; the branch it waits on.
fn awaiting_review(task: &Task) -> Option<String> {
    let result = task.result.as_ref()?;
    task.awaiting_review().then(|| {
        result
            .get("branch")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    })
}

fn decide(
    session_dir: &Path,
    store: &FileTaskStore,
    id: &TaskId,
    approved: bool,
    note: &str,
    comments: &[LineComment],
) -> Result<Applied, ActionError> {
    let action = if approved { "approve" } else { "reject" };
    let task = store.get(id).map_err(|_| ActionError::UnknownTask {
        session: session_dir.to_owned(),
        task: id.as_str().to_owned(),
    })?;
    let Some(branch) = awaiting_review(&task) else {
        return Err(ActionError::WrongState {
            task: id.as_str().to_owned(),
            state: task.status.as_str().to_owned(),
            action,
            expected: "awaiting review",
        });
    };
    if !approved && note.trim().is_empty() && comments.is_empty() {
        return Err(ActionError::Usage(
            "a rejection needs a note (or line comments) saying what to change".into(),
        ));
    }
    for c in comments {
        if c.file.is_empty() || c.line == 0 || c.text.trim().is_empty() {
            return Err(ActionError::Usage(format!(
                "a line comment needs a file, a line from 1 and a text (got {:?} line {})",
                c.file, c.line
            )));
        }
    }
    Control::new(session_dir).decide(
        id,
        &ReviewDecision {
            approved,
            branch: branch.clone(),
            note: note.to_owned(),
            comments: comments.to_vec(),
            at: jiff::Timestamp::now().to_string(),
        },
    )?;
    let mut data = task_data(id);
    data.insert("branch".into(), json!(branch));
    if !approved {
        data.insert("note".into(), json!(note));
        data.insert("comments".into(), json!(comments));
    }
    let (kind, summary, message) = if approved {
        (
            "review_approved",
            format!("{} approved", id.as_str()),
            format!(
                "{} approved: the run lands it through the merge queue (a session not running: at the next `wavecrew run`)",
                id.as_str()
            ),
        )
    } else {
        (
            "review_rejection",
            format!(
                "{} rejected: {}",
                id.as_str(),
                note.lines().next().unwrap_or("")
            ),
            format!(
                "{} rejected: the run starts one revision with your note (a session not running: at the next `wavecrew run`)",
                id.as_str()
            ),
        )
    };
    record(session_dir, kind, &summary, data)?;
    Ok(Applied {
        action,
        task: Some(id.as_str().to_owned()),
        message,
        reset: Vec::new(),
    })
}

/// The metadata key counting how many times a person reset a task for a
/// retry. One machine does not read it; a session over hosts does: its
/// coordinator (`wavecrew_fleet`) sees a count ahead of the task's NATS KV
/// entry, whose old end would otherwise come home again, and sends the
/// task out as a new attempt.
pub use wavecrew_core::task::RETRIES as RETRIES_KEY;

/// `task` reset for a retry, when it ended failed, blocked or skipped:
/// pending, no lease, no result, one more retry counted
/// ([`RETRIES_KEY`]). Whether it was.
fn reset_one(task: &mut Task) -> bool {
    if !matches!(
        task.status,
        TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Skipped
    ) {
        return false;
    }
    task.status = TaskStatus::Pending;
    task.lease = None;
    task.result = None;
    let n = task.metadata_count(RETRIES_KEY);
    task.metadata.insert(RETRIES_KEY.into(), json!(n + 1));
    true
}

/// Reset `id` to pending, and every task skipped downstream of it; the
/// ids reset, `id` first.
fn reset_for_retry(store: &FileTaskStore, id: &TaskId) -> Result<Vec<String>, ActionError> {
    let tasks = store.list()?;
    let mut dependents: HashMap<&TaskId, Vec<&TaskId>> = HashMap::new();
    for t in &tasks {
        for b in &t.blocked_by {
            dependents.entry(b).or_default().push(&t.id);
        }
    }
    let skipped: BTreeSet<&TaskId> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Skipped)
        .map(|t| &t.id)
        .collect();
    let mut order = vec![id.clone()];
    let mut stack = vec![id];
    while let Some(at) = stack.pop() {
        for d in dependents.get(at).into_iter().flatten() {
            if skipped.contains(d) && !order.contains(d) {
                order.push((*d).clone());
                stack.push(d);
            }
        }
    }
    for t in &order {
        store.update(t, &mut |x| {
            reset_one(x);
            Ok(())
        })?;
    }
    Ok(order.iter().map(|t| t.as_str().to_owned()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::Task;

    fn session(tasks: &[(&str, &[&str], TaskStatus)]) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".workflow/.team/TC-cockpit-2026-11-25");
        std::fs::create_dir_all(&dir).unwrap();
        let store = FileTaskStore::for_session(&dir);
        for (id, deps, status) in tasks {
            let mut t = Task::new(TaskId::new(*id).unwrap(), *id, "");
            t.blocked_by = deps.iter().map(|d| TaskId::new(*d).unwrap()).collect();
            t.status = *status;
            store.create(t).unwrap();
        }
        (tmp, dir)
    }

    fn status(dir: &Path, id: &str) -> TaskStatus {
        FileTaskStore::for_session(dir)
            .get(&TaskId::new(id).unwrap())
            .unwrap()
            .status
    }

    fn bus_kinds(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join(".msg/messages.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn a_retry_resets_the_task_and_what_was_skipped_because_of_it() {
        let (_tmp, dir) = session(&[
            ("IMPL-001", &[], TaskStatus::Failed),
            ("IMPL-002", &["IMPL-001"], TaskStatus::Skipped),
            ("IMPL-003", &["IMPL-002"], TaskStatus::Skipped),
            ("IMPL-004", &[], TaskStatus::Completed),
        ]);
        let done = apply(&dir, &Action::parse("retry", Some("IMPL-001")).unwrap()).unwrap();
        assert_eq!(done.reset, ["IMPL-001", "IMPL-002", "IMPL-003"]);
        for id in ["IMPL-001", "IMPL-002", "IMPL-003"] {
            assert_eq!(status(&dir, id), TaskStatus::Pending, "{id}");
        }
        assert_eq!(status(&dir, "IMPL-004"), TaskStatus::Completed);
        // Each reset is counted (a coordinator over hosts reads the count).
        let retries = |id: &str| {
            FileTaskStore::for_session(&dir)
                .get(&TaskId::new(id).unwrap())
                .unwrap()
                .metadata
                .get(RETRIES_KEY)
                .cloned()
        };
        for id in ["IMPL-001", "IMPL-002", "IMPL-003"] {
            assert_eq!(retries(id), Some(json!(1)), "{id}");
        }
        assert_eq!(retries("IMPL-004"), None);
        assert_eq!(
            Control::new(&dir).take_retries().unwrap(),
            [TaskId::new("IMPL-001").unwrap()]
        );
        assert_eq!(bus_kinds(&dir), ["task_retry"]);
    }

    #[test]
    fn each_retry_counts_one_more_and_a_task_not_ended_is_left_alone() {
        let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
        t.status = TaskStatus::Failed;
        t.result = Some(json!({"error": "x"}));
        assert!(reset_one(&mut t));
        assert_eq!(t.status, TaskStatus::Pending);
        assert_eq!(t.result, None);
        assert_eq!(t.metadata[RETRIES_KEY], 1);
        assert!(!reset_one(&mut t));
        assert_eq!(t.metadata[RETRIES_KEY], 1);
        t.status = TaskStatus::Blocked;
        assert!(reset_one(&mut t));
        assert_eq!(t.metadata[RETRIES_KEY], 2);
        t.status = TaskStatus::Completed;
        assert!(!reset_one(&mut t));
        assert_eq!(t.status, TaskStatus::Completed);
    }

    #[test]
    fn actions_refuse_tasks_in_the_wrong_state_or_unknown() {
        let (_tmp, dir) = session(&[("IMPL-001", &[], TaskStatus::Completed)]);
        let e = apply(&dir, &Action::Retry(TaskId::new("IMPL-001").unwrap())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "IMPL-001 is completed: retry applies to a task that is failed or blocked"
        );
        assert!(e.is_bad_input());
        let e = apply(&dir, &Action::Cancel(TaskId::new("IMPL-001").unwrap())).unwrap_err();
        assert!(
            e.to_string()
                .contains("cancel applies to a task that is in_progress"),
            "{e}"
        );
        let e = apply(&dir, &Action::Cancel(TaskId::new("IMPL-009").unwrap())).unwrap_err();
        assert!(
            e.to_string().ends_with("no task IMPL-009 in this session"),
            "{e}"
        );
        let e = Action::parse("cancel", Some("../x")).unwrap_err();
        assert!(e.is_bad_input());
        assert!(Action::parse("explode", None).is_err());
        assert!(bus_kinds(&dir).is_empty());
    }

    #[test]
    fn pause_and_resume_are_recorded_once() {
        let (_tmp, dir) = session(&[("IMPL-001", &[], TaskStatus::Pending)]);
        apply(&dir, &Action::Pause).unwrap();
        let again = apply(&dir, &Action::Pause).unwrap();
        assert_eq!(again.message, "dispatch was already paused");
        assert!(Control::new(&dir).is_paused());
        apply(&dir, &Action::Resume).unwrap();
        assert!(!Control::new(&dir).is_paused());
        assert_eq!(bus_kinds(&dir), ["dispatch_paused", "dispatch_resumed"]);
    }

    #[test]
    fn a_review_decision_is_about_the_branch_that_waits() {
        let (_tmp, dir) = session(&[
            ("IMPL-001", &[], TaskStatus::Blocked),
            ("IMPL-002", &[], TaskStatus::Blocked),
        ]);
        let id = TaskId::new("IMPL-001").unwrap();
        FileTaskStore::for_session(&dir)
            .update(&id, &mut |t| {
                t.result =
                    Some(json!({"awaiting_review": true, "branch": "wavecrew-tasks/s/IMPL-001/2"}));
                Ok(())
            })
            .unwrap();
        let reject = |note: &str, comments: Vec<LineComment>| Action::Reject {
            task: id.clone(),
            note: note.into(),
            comments,
        };
        let e = apply(&dir, &reject("  ", Vec::new())).unwrap_err();
        assert!(e.to_string().starts_with("a rejection needs a note"), "{e}");
        let bad = LineComment {
            file: "a.rs".into(),
            line: 0,
            text: "x".into(),
        };
        assert!(apply(&dir, &reject("n", vec![bad])).is_err());
        let e = apply(&dir, &Action::Approve(TaskId::new("IMPL-002").unwrap())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "IMPL-002 is blocked: approve applies to a task that is awaiting review"
        );
        assert!(bus_kinds(&dir).is_empty());
        apply(&dir, &Action::Approve(id.clone())).unwrap();
        let d = Control::new(&dir).decision(&id).unwrap().unwrap();
        assert!(d.approved);
        assert_eq!(d.branch, "wavecrew-tasks/s/IMPL-001/2");
        let comment = LineComment {
            file: "a.rs".into(),
            line: 2,
            text: "<b>x</b>".into(),
        };
        apply(&dir, &reject("do better", vec![comment.clone()])).unwrap();
        let d = Control::new(&dir).decision(&id).unwrap().unwrap();
        assert!(!d.approved);
        assert_eq!(d.comments, [comment]);
        assert_eq!(bus_kinds(&dir), ["review_approved", "review_rejection"]);
    }

    fn lease_on(dir: &Path, host: &str, pid: u32) {
        let now = jiff::Timestamp::now();
        FileTaskStore::for_session(dir)
            .update(&TaskId::new("IMPL-001").unwrap(), &mut |t| {
                t.lease = Some(wavecrew_core::Lease {
                    worker: "executor".into(),
                    pid,
                    host: host.into(),
                    acquired_at: now,
                    heartbeat_at: now,
                });
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn a_task_a_host_of_the_engine_runs_is_cancelled_through_the_coordinator() {
        let (_tmp, dir) = session(&[("IMPL-001", &[], TaskStatus::InProgress)]);
        let id = TaskId::new("IMPL-001").unwrap();
        lease_on(&dir, "h2", 0);
        let done = apply(&dir, &Action::Cancel(id.clone())).unwrap();
        assert!(done.message.contains("passes it to h2"), "{}", done.message);
        // The request waits for the coordinator; the task is still its host's.
        assert!(Control::new(&dir).cancel_requested(&id));
        assert_eq!(status(&dir, "IMPL-001"), TaskStatus::InProgress);
        assert_eq!(bus_kinds(&dir), ["cancel_requested"]);
    }

    #[test]
    fn a_worker_of_another_host_without_a_coordinator_is_not_cancelled_here() {
        let (_tmp, dir) = session(&[("IMPL-001", &[], TaskStatus::InProgress)]);
        lease_on(&dir, "not-this-host", 4242);
        let e = apply(&dir, &Action::Cancel(TaskId::new("IMPL-001").unwrap())).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("IMPL-001 runs on host not-this-host"),
            "{e}"
        );
        assert!(e.is_bad_input());
        assert_eq!(status(&dir, "IMPL-001"), TaskStatus::InProgress);
        assert!(bus_kinds(&dir).is_empty());
    }

    #[test]
    fn cancelling_a_task_no_worker_holds_records_it_at_once() {
        let (_tmp, dir) = session(&[("IMPL-001", &[], TaskStatus::InProgress)]);
        let done = apply(&dir, &Action::Cancel(TaskId::new("IMPL-001").unwrap())).unwrap();
        assert!(
            done.message.contains("no worker was running it"),
            "{}",
            done.message
        );
        assert_eq!(status(&dir, "IMPL-001"), TaskStatus::Failed);
        assert_eq!(bus_kinds(&dir), ["task_cancelled"]);
    }
}
