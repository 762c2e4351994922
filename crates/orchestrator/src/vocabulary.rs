//! The run engine's vocabulary, shared by its parts and its callers: how a
//! run is asked for ([`TeamOptions`], [`RemoteWorkers`]), how it ends
//! ([`RunEnd`]), what it reports as it goes ([`Progress`]), the
//! interruption its parts share, which tasks are ready, and the
//! orchestrator's records on the bus ([`log_record`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use wavecrew_core::bus::{MessageBus, NewMessage};
use wavecrew_core::{Task, TaskId, TaskStatus};
pub use wavecrew_scheduler::FailurePolicy;

/// How the orchestrator runs.
#[derive(Debug, Clone)]
pub struct TeamOptions {
    /// Workers at once.
    pub max_parallel: usize,
    /// After a failure: `continue` (skip its dependents), `stop` (start
    /// nothing new) or `always` (its dependents run anyway).
    pub on_failure: FailurePolicy,
    /// Respawns of a task whose worker crashed.
    pub crash_retries: u32,
    /// `--backend` for every worker.
    pub backend: Option<String>,
    /// `--config` for every worker.
    pub config_file: Option<PathBuf>,
    /// `--sandbox` for every worker (replaces `[isolation] sandbox`).
    pub sandbox: Option<wavecrew_backends::config::SandboxMode>,
    /// `wavecrew.toml`: the limits per role and per backend, and backend
    /// names.
    pub config: wavecrew_backends::Config,
    /// Folder holding the worker binaries (default: beside this program).
    pub bin_dir: Option<PathBuf>,
    /// How often the bus is followed and an adopted worker's pid checked.
    pub poll: Duration,
    /// Run every task's worker elsewhere (`wavecrew run --engine`: hosts
    /// taking tickets) instead of as a local process.
    pub remote: Option<Arc<dyn RemoteWorkers>>,
}

/// Workers that run elsewhere: on other hosts, through an engine. The
/// orchestrator schedules as always; for each task it calls
/// [`RemoteWorkers::run`] where it would start a process, and reads the
/// task from its store when that returns.
#[async_trait::async_trait]
pub trait RemoteWorkers: Send + Sync + std::fmt::Debug {
    /// Run `task` (of role `role`) to its end, and bring that end (state,
    /// result, the attempt's files and records, its merge) into the local
    /// session before returning. A task still not ended in the local store
    /// afterwards counts as a crash. `Err`: it could not be run at all (the
    /// task fails with that message).
    async fn run(&self, task: &Task, role: &str) -> Result<(), String>;
}

impl Default for TeamOptions {
    fn default() -> Self {
        TeamOptions {
            max_parallel: 4,
            on_failure: FailurePolicy::Continue,
            crash_retries: 2,
            backend: None,
            config_file: None,
            sandbox: None,
            config: wavecrew_backends::Config::default(),
            bin_dir: None,
            poll: Duration::from_millis(50),
            remote: None,
        }
    }
}

/// How a foreground run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// Every task completed.
    Complete,
    /// Some tasks failed or were skipped; the rest completed.
    Failed {
        /// The failed tasks.
        failed: Vec<TaskId>,
        /// Their skipped dependents.
        skipped: Vec<TaskId>,
    },
    /// A `consensus_blocked` record of severity HIGH came back after its
    /// revision task: a person has to decide.
    Paused {
        /// The task whose consensus is blocked.
        task: String,
        /// What the record said.
        reason: String,
    },
    /// Nothing is ready, nothing runs, and the pipeline is not complete.
    Stalled {
        /// Each stuck task and why.
        stuck: Vec<(TaskId, String)>,
    },
    /// A worker was interrupted by its environment (it exited 3: a full
    /// disk, say): nothing new started, the task stays for a resume.
    Interrupted {
        /// The task whose worker was interrupted.
        task: TaskId,
        /// What the worker said last.
        reason: String,
    },
}

/// The first worker interruption of a run, shared by the runners (which
/// set it), the ledger (which then skips nothing) and the dispatch loop
/// (which then starts nothing).
pub(crate) type Interruption = Arc<std::sync::Mutex<Option<(TaskId, String)>>>;

/// The interruption, if any.
pub(crate) fn interrupted(i: &Interruption) -> Option<(TaskId, String)> {
    i.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// One line of progress.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A worker started.
    Spawned {
        /// The task.
        task: TaskId,
        /// The role.
        role: String,
        /// The worker's pid.
        pid: u32,
    },
    /// A task reached a final state.
    Finished {
        /// The task.
        task: TaskId,
        /// Its state.
        status: TaskStatus,
    },
    /// A worker crashed; its task went back to pending.
    Crashed {
        /// The task.
        task: TaskId,
        /// How many crashes so far.
        crashes: u32,
    },
    /// Running totals.
    Totals {
        /// Completed tasks.
        done: usize,
        /// All tasks.
        total: usize,
        /// Running workers.
        running: usize,
    },
}

/// The progress callback.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Tasks whose blockers are all completed and that are pending, in id
/// order.
pub fn ready_tasks(tasks: &[Task]) -> Vec<&Task> {
    wavecrew_core::store::ready_tasks(tasks)
}

/// A record of the orchestrator on the bus: from `executor` to the
/// coordinator, its summary tagged `[executor]`. A bus that cannot take it
/// is logged, not fatal: the task store stays the truth.
pub fn log_record<B: MessageBus + ?Sized>(
    bus: &B,
    kind: &str,
    summary: &str,
    data: Map<String, Value>,
) {
    let logged = bus.log(NewMessage {
        from: "executor".into(),
        to: Some("coordinator".into()),
        kind: Some(kind.into()),
        summary: Some(format!("[executor] {summary}")),
        data: Some(data),
        reference: None,
    });
    if let Err(e) = logged {
        tracing::error!("message bus: {e}");
    }
}

pub(crate) fn task_data(id: &TaskId) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("task_id".into(), json!(id.as_str()));
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_policy_reads_and_prints_its_name() {
        for p in FailurePolicy::ALL {
            assert_eq!(p.name().parse::<FailurePolicy>().unwrap(), p);
        }
        assert!("sometimes".parse::<FailurePolicy>().is_err());
    }
}
