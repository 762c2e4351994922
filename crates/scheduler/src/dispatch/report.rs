//! What a dispatch tells its caller: [`DispatchEvent`]s as they happen, and
//! the [`DispatchReport`] at the end.

use std::collections::BTreeMap;
use std::time::Duration;

use wavecrew_core::TaskId;

use super::runner::RunOutcome;

/// One step of a dispatch, reported in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DispatchEvent {
    /// Barrier mode: wave `n` (0-based) begins.
    WaveStarted(usize),
    /// Force policy: a task waiting on a cycle was released anyway.
    Forced(TaskId),
    /// The task was handed to the runner.
    Started(TaskId),
    /// The runner finished the task.
    Finished(TaskId, RunOutcome),
    /// The task will not run because the second id (an upstream task) failed.
    Skipped(TaskId, TaskId),
    /// The task was never started (stop after a failure, or cancellation).
    NotRun(TaskId),
    /// The task's run parked it ([`RunOutcome::Parked`]): its slot is free,
    /// its end is awaited.
    Parked(TaskId),
}

/// How a task ended in a dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinalState {
    /// It ran and succeeded.
    Succeeded,
    /// It ran and failed, with the runner's message.
    Failed(String),
    /// It did not run because this upstream task failed.
    Skipped(TaskId),
    /// It was never started.
    NotRun,
}

impl FinalState {
    /// `succeeded`, `failed`, `skipped` or `not_run`.
    pub fn name(&self) -> &'static str {
        match self {
            FinalState::Succeeded => "succeeded",
            FinalState::Failed(_) => "failed",
            FinalState::Skipped(_) => "skipped",
            FinalState::NotRun => "not_run",
        }
    }
}

/// When a task ran, relative to the start of the dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSpan {
    /// When it was started.
    pub start: Duration,
    /// When its end was recorded.
    pub end: Duration,
}

/// The result of a dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchReport {
    /// The final state of every pending task of the graph.
    pub states: BTreeMap<TaskId, FinalState>,
    /// The tasks in the order they were started.
    pub start_order: Vec<TaskId>,
    /// When each started task ran.
    pub spans: BTreeMap<TaskId, TaskSpan>,
    /// From the start of the dispatch to the last recorded end (tokio
    /// time, so virtual under a paused clock).
    pub makespan: Duration,
    /// Tasks released by the force cycle policy.
    pub forced: Vec<TaskId>,
    /// The dispatch was cancelled.
    pub cancelled: bool,
}

impl DispatchReport {
    /// Whether every task succeeded (and the dispatch was not cancelled).
    pub fn all_succeeded(&self) -> bool {
        !self.cancelled && self.states.values().all(|s| *s == FinalState::Succeeded)
    }

    /// The final state of `id`.
    pub fn state(&self, id: &str) -> Option<&FinalState> {
        self.states.get(id)
    }

    /// How many tasks ended in the state named `name` (see
    /// [`FinalState::name`]).
    pub fn count(&self, name: &str) -> usize {
        self.states.values().filter(|s| s.name() == name).count()
    }
}
