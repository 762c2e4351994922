//! What the dispatcher runs: a [`TaskRunner`], or any async closure through
//! [`runner_fn`].

use std::future::Future;

use async_trait::async_trait;
use wavecrew_core::TaskId;

/// How one run of a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// The task did its work.
    Succeeded,
    /// The task failed; the message says why.
    Failed(String),
    /// The task's work is done but waits for something outside the run (a
    /// person's review): its slot is freed for other tasks, its dependents
    /// keep waiting, and [`TaskRunner::resume`] waits for its end.
    Parked,
    /// Run the task again from the start: it queues as a ready task and
    /// takes a slot again (a person asked for a revision).
    Again,
}

impl RunOutcome {
    /// A failure with this message.
    pub fn failed(message: impl Into<String>) -> Self {
        RunOutcome::Failed(message.into())
    }

    /// Whether the run succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, RunOutcome::Succeeded)
    }
}

/// Runs one task to the end. Called once per started task, on a tokio
/// task of its own; a panic counts as a failure.
#[async_trait]
pub trait TaskRunner: Send + Sync {
    /// Run the task `id` and say how it ended.
    async fn run(&self, id: &TaskId) -> RunOutcome;

    /// Wait for the end of the task `id`, whose run said
    /// [`RunOutcome::Parked`]; it holds no slot meanwhile. A runner that
    /// never parks a task keeps this default, which fails it.
    async fn resume(&self, id: &TaskId) -> RunOutcome {
        RunOutcome::failed(format!(
            "{} was parked, and its runner cannot resume it",
            id.as_str()
        ))
    }
}

/// A [`TaskRunner`] made from an async closure; see [`runner_fn`].
#[derive(Debug, Clone)]
pub struct FnRunner<F>(F);

/// Wrap `f(id) -> impl Future<Output = RunOutcome>` as a [`TaskRunner`].
///
/// ```
/// use wavecrew_scheduler::{RunOutcome, runner_fn};
///
/// let runner = runner_fn(|id| async move {
///     if id.as_str() == "IMPL-002" { RunOutcome::failed("tests failed") } else { RunOutcome::Succeeded }
/// });
/// # let _ = runner;
/// ```
pub fn runner_fn<F, Fut>(f: F) -> FnRunner<F>
where
    F: Fn(TaskId) -> Fut + Send + Sync,
    Fut: Future<Output = RunOutcome> + Send,
{
    FnRunner(f)
}

#[async_trait]
impl<F, Fut> TaskRunner for FnRunner<F>
where
    F: Fn(TaskId) -> Fut + Send + Sync,
    Fut: Future<Output = RunOutcome> + Send,
{
    async fn run(&self, id: &TaskId) -> RunOutcome {
        (self.0)(id.clone()).await
    }
}
