//! What every report shows, gathered from the session on disk: the task
//! store (states, results, evidence), the bus (when each task started and
//! ended), the attempt folders (backends, outcomes, durations, token
//! usage) and the graph (waves, critical path). Nothing comes from the
//! memory of a running process, so any report can be regenerated after the
//! run, even after a crash.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore, Usage};
use wavecrew_scheduler::{BuildOptions, CyclePolicy, Dag, TaskNode};

pub use crate::task::{AWAITING_REVIEW, AttemptInfo, TaskReport};

/// A report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The session's files could not be read.
    #[error(transparent)]
    Core(#[from] wavecrew_core::CoreError),
    /// A report could not be written.
    #[error("{path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunData {
    /// The session id.
    pub session_id: String,
    /// What the session is for.
    pub task_description: String,
    /// The session's status (`active`, `completed`, `paused`).
    pub status: String,
    /// The first bus record's time.
    pub started_at: Option<String>,
    /// The last bus record's time.
    pub ended_at: Option<String>,
    /// `ended_at - started_at`.
    pub duration_ms: Option<u64>,
    /// The tasks, in id order.
    pub tasks: Vec<TaskReport>,
    /// The waves, as ids.
    pub waves: Vec<Vec<String>>,
    /// The critical path.
    pub critical_path: Vec<String>,
    /// Problems of the graph, when it is not valid.
    pub graph_error: Option<String>,
    /// How many bus records the run wrote.
    pub messages: usize,
    /// What the run spent, against its budgets.
    pub cost: crate::cost::CostReport,
    /// The merge queue of a session that ran isolated; None in place.
    pub merge_queue: Option<crate::merge::MergeQueue>,
    /// The session folder.
    #[serde(skip)]
    pub session_dir: PathBuf,
    /// Where each task is in `tasks`, by id.
    #[serde(skip)]
    index: HashMap<String, usize>,
}

impl RunData {
    /// Counts per state.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        let mut c = BTreeMap::new();
        for t in &self.tasks {
            *c.entry(t.state.clone()).or_insert(0) += 1;
        }
        c
    }

    /// The task by id.
    pub fn task(&self, id: &str) -> Option<&TaskReport> {
        self.index.get(id).and_then(|&i| self.tasks.get(i))
    }
}

/// Bus record types that end a task.
pub const FINAL_KINDS: [&str; 10] = [
    "task_complete",
    "task_failed",
    "task_skipped",
    "impl_complete",
    "impl_failed",
    "tests_passed",
    "tests_failed",
    "exec_complete",
    "error",
    "paused",
];

fn parse_ts(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

fn millis_between(a: &str, b: &str) -> Option<u64> {
    let d = parse_ts(b)?.duration_since(parse_ts(a)?);
    u64::try_from(d.as_millis()).ok()
}

/// The bus records of a session (unparsable lines skipped: a crash can
/// leave a torn last line, and a report must still be made).
pub fn read_bus(session_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(session_dir.join(".msg/messages.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn attempts_of(session_dir: &Path, id: &TaskId) -> Vec<AttemptInfo> {
    let layout = wavecrew_core::SessionLayout::new(session_dir);
    let dir = layout.attempts(id.as_str());
    let numbers = layout.attempt_numbers(id.as_str());
    numbers
        .into_iter()
        .map(|n| {
            let folder = dir.join(n.to_string());
            let outcome: Option<Value> = std::fs::read(folder.join("outcome.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            let argv: Option<Value> = std::fs::read(folder.join("argv.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            let backend = outcome
                .as_ref()
                .and_then(|o| o.get("backend"))
                .or_else(|| argv.as_ref().and_then(|a| a.get("backend")))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            AttemptInfo {
                attempt: n,
                backend,
                outcome: outcome
                    .as_ref()
                    .and_then(|o| o.pointer("/outcome/class"))
                    .and_then(Value::as_str)
                    .unwrap_or("interrupted")
                    .to_owned(),
                exit_code: outcome
                    .as_ref()
                    .and_then(|o| o.get("exit_code"))
                    .and_then(Value::as_i64),
                duration_ms: outcome
                    .as_ref()
                    .and_then(|o| o.get("duration_ms"))
                    .and_then(Value::as_u64),
                usage: outcome
                    .as_ref()
                    .and_then(|o| o.get("usage"))
                    .and_then(|u| serde_json::from_value(u.clone()).ok()),
                dir: format!("attempts/{}/{n}", id.as_str()),
                governor: std::fs::read(folder.join("governor.json"))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok()),
                host: outcome
                    .as_ref()
                    .and_then(|o| o.get("host"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            }
        })
        .collect()
}

fn task_report(session_dir: &Path, t: &Task, mine: &[&Value]) -> TaskReport {
    let started_at = mine
        .iter()
        .find(|m| !FINAL_KINDS.contains(&m["type"].as_str().unwrap_or("")))
        .and_then(|m| m["ts"].as_str())
        .map(str::to_owned);
    let last_final = mine
        .iter()
        .rev()
        .find(|m| FINAL_KINDS.contains(&m["type"].as_str().unwrap_or("")));
    let ended_at = if t.status.is_terminal() {
        last_final.and_then(|m| m["ts"].as_str()).map(str::to_owned)
    } else {
        None
    };
    let attempts = attempts_of(session_dir, &t.id);
    let mut usage: Option<Usage> = None;
    for a in &attempts {
        if let Some(u) = &a.usage {
            usage.get_or_insert_with(Usage::default).add(u);
        }
    }
    let result = t.result.as_ref();
    let files_changed: Vec<String> = result
        .and_then(|r| r.get("files_modified").or_else(|| r.get("files_changed")))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let backend = attempts.last().map(|a| a.backend.clone()).or_else(|| {
        result
            .and_then(|r| r.get("execution_backend").or_else(|| r.get("executor")))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    TaskReport {
        id: t.id.as_str().to_owned(),
        title: t.title().to_owned(),
        role: t.owner.clone(),
        // Validated work waiting for a person is not a failure.
        state: if t.awaiting_review() {
            AWAITING_REVIEW.to_owned()
        } else {
            t.status.as_str().to_owned()
        },
        wave: None,
        critical: false,
        backend,
        duration_ms: match (&started_at, &ended_at) {
            (Some(a), Some(b)) => millis_between(a, b),
            _ => None,
        },
        started_at,
        ended_at,
        files_changed,
        validation: result.and_then(|r| r.get("validation_results")).cloned(),
        usage,
        error: result
            .and_then(|r| r.get("error").or_else(|| r.get("skipped_because")))
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)),
        summary: last_final
            .and_then(|m| m["summary"].as_str())
            .map(str::to_owned),
        merge: crate::merge::task_merge(result, mine),
        last_record_at: mine
            .last()
            .and_then(|m| m["ts"].as_str())
            .map(str::to_owned),
        attempts,
    }
}

/// Gather a session's run.
pub fn collect(session_dir: &Path) -> Result<RunData, ReportError> {
    let store = wavecrew_core::FileTaskStore::for_session(session_dir);
    let tasks = store.list()?;
    let bus = read_bus(session_dir);
    let session: Option<Value> =
        std::fs::read(wavecrew_core::SessionLayout::new(session_dir).team_session())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
    let session_id = session_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Each task's records, in log order: one pass over the bus.
    let mut by_task: HashMap<&str, Vec<&Value>> = HashMap::new();
    for m in &bus {
        if let Some(id) = m.pointer("/data/task_id").and_then(Value::as_str) {
            by_task.entry(id).or_default().push(m);
        }
    }
    let mut reports: Vec<TaskReport> = tasks
        .iter()
        .map(|t| {
            let mine = by_task.get(t.id.as_str()).map_or(&[][..], Vec::as_slice);
            task_report(session_dir, t, mine)
        })
        .collect();
    let nodes = tasks.iter().zip(&reports).map(|(t, r)| {
        let mut n = TaskNode::new(t.id.clone(), t.blocked_by.iter().cloned());
        if let Some(ms) = r.duration_ms {
            #[allow(clippy::cast_precision_loss)]
            let secs = ms as f64 / 1000.0;
            n = n.with_estimate(secs.max(0.001));
        }
        n
    });
    let (waves, critical_path, graph_error) = match Dag::build(
        nodes,
        &BuildOptions::default().with_cycle_policy(CyclePolicy::Force),
    ) {
        Ok(dag) => {
            let waves: Vec<Vec<String>> = dag
                .wave_ids()
                .into_iter()
                .map(|w| w.into_iter().map(|i| i.as_str().to_owned()).collect())
                .collect();
            let cp = dag.critical_path();
            (
                waves,
                cp.path.iter().map(|i| i.as_str().to_owned()).collect(),
                None,
            )
        }
        Err(e) => (Vec::new(), Vec::new(), Some(e.to_string())),
    };
    let wave_of: HashMap<&str, usize> = waves
        .iter()
        .enumerate()
        .flat_map(|(k, w)| w.iter().map(move |id| (id.as_str(), k + 1)))
        .collect();
    let critical: std::collections::HashSet<&str> =
        critical_path.iter().map(String::as_str).collect();
    for r in &mut reports {
        r.wave = wave_of.get(r.id.as_str()).copied();
        r.critical = critical.contains(r.id.as_str());
    }
    let started_at = bus
        .first()
        .and_then(|m| m["ts"].as_str())
        .map(str::to_owned);
    let ended_at = bus.last().and_then(|m| m["ts"].as_str()).map(str::to_owned);
    let merge_queue = crate::merge::collect_queue(session_dir, &session_id, &mut reports);
    let reports_for_cost = reports.clone();
    let index = reports
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.clone(), i))
        .collect();
    Ok(RunData {
        task_description: session
            .as_ref()
            .and_then(|s| s.get("task_description"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        status: session
            .as_ref()
            .and_then(|s| s.get("status"))
            .and_then(Value::as_str)
            .unwrap_or("active")
            .to_owned(),
        duration_ms: match (&started_at, &ended_at) {
            (Some(a), Some(b)) => millis_between(a, b),
            _ => None,
        },
        started_at,
        ended_at,
        tasks: reports,
        waves,
        critical_path,
        graph_error,
        messages: bus.len(),
        cost: crate::cost::collect_cost(
            session_dir,
            &reports_for_cost,
            wavecrew_backends::governor::Clock::now_ms(&wavecrew_backends::governor::SystemClock),
        ),
        merge_queue,
        session_id,
        session_dir: session_dir.to_owned(),
        index,
    })
}

/// The state name of a task status (for renderers).
pub fn state_name(status: TaskStatus) -> &'static str {
    status.as_str()
}
