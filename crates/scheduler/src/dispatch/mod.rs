//! The async dispatcher: runs a [`Dag`]'s pending tasks through a
//! [`TaskRunner`], dependency-driven.
//!
//! A task starts as soon as all its dependencies have finished and the
//! [gate](DispatchOptions) admits it (global slots with task weights,
//! per-class limits, no overlapping declared files); among ready tasks the
//! most critical starts first (longest remaining path, then smallest id).
//! With [`DispatchOptions::barrier`] the seeds' order is reproduced
//! instead: wave `k + 1` starts only when every task of wave `k` has ended.
//!
//! The dispatcher owns all state in one loop that `select!`s over task
//! completions (a [`tokio::task::JoinSet`]) and the shutdown signal. On
//! shutdown, or after a failure under [`FailurePolicy::Stop`], it starts
//! nothing new, waits for the running tasks and records them, and marks the
//! rest [`FinalState::NotRun`]: no task is left half-recorded.

mod engine;
mod gate;
mod report;
mod runner;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

pub use report::{DispatchEvent, DispatchReport, FinalState, TaskSpan};
pub use runner::{FnRunner, RunOutcome, TaskRunner, runner_fn};

use crate::dag::Dag;
use crate::error::ScheduleError;

/// What a failed task means for the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FailurePolicy {
    /// Start nothing new; running tasks finish; the rest are not run.
    #[default]
    Stop,
    /// Run everything that does not depend on the failure; the failed task's
    /// dependents (transitively) are skipped.
    Continue,
    /// A failed task counts as finished: its dependents run anyway.
    Always,
}

impl FailurePolicy {
    /// Every policy, in the order the CLI lists them.
    pub const ALL: [FailurePolicy; 3] = [
        FailurePolicy::Stop,
        FailurePolicy::Continue,
        FailurePolicy::Always,
    ];

    /// The policy's name on the command line and in files: `stop`,
    /// `continue`, `always`.
    pub fn name(self) -> &'static str {
        match self {
            FailurePolicy::Stop => "stop",
            FailurePolicy::Continue => "continue",
            FailurePolicy::Always => "always",
        }
    }
}

impl std::fmt::Display for FailurePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a [`FailurePolicy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown failure policy `{0}`: expected stop, continue or always")]
pub struct UnknownFailurePolicy(pub String);

impl std::str::FromStr for FailurePolicy {
    type Err = UnknownFailurePolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailurePolicy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownFailurePolicy(s.to_owned()))
    }
}

/// How a [`Dispatcher`] runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DispatchOptions {
    /// Global slots (a task takes `weight` of them); `None` = unbounded.
    pub max_parallel: Option<usize>,
    /// At most this many running tasks per class (tasks of other classes,
    /// or without a class, are not limited by class).
    pub class_limits: HashMap<String, usize>,
    /// What a failure does to the rest.
    pub failure_policy: FailurePolicy,
    /// Run wave by wave, as the seeds do.
    pub barrier: bool,
}

impl DispatchOptions {
    /// Set the global limit.
    #[must_use]
    pub fn with_max_parallel(mut self, max: Option<usize>) -> Self {
        self.max_parallel = max;
        self
    }

    /// Limit the class `class` to `limit` running tasks.
    #[must_use]
    pub fn with_class_limit(mut self, class: impl Into<String>, limit: usize) -> Self {
        self.class_limits.insert(class.into(), limit);
        self
    }

    /// Set the failure policy.
    #[must_use]
    pub fn with_failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.failure_policy = policy;
        self
    }

    /// Turn wave-at-a-time mode on or off.
    #[must_use]
    pub fn with_barrier(mut self, barrier: bool) -> Self {
        self.barrier = barrier;
        self
    }
}

type Callback<'d> = Box<dyn FnMut(&DispatchEvent) + Send + 'd>;

/// Runs the pending tasks of a [`Dag`] through a [`TaskRunner`].
///
/// A task starts as soon as all its dependencies have finished and the
/// gate admits it (global slots with task weights, per-class limits, no
/// overlapping declared files); among ready tasks the most critical starts
/// first (longest remaining path, then smallest id). With
/// [`DispatchOptions::barrier`], wave `k + 1` starts only when every task of
/// wave `k` has ended. On shutdown ([`Dispatcher::run_until`]), or after a
/// failure under [`FailurePolicy::Stop`], nothing new starts, running tasks
/// finish and are recorded, and the rest end [`FinalState::NotRun`].
pub struct Dispatcher<'d> {
    dag: &'d Dag,
    options: DispatchOptions,
    gate: gate::Gate,
    on_event: Option<Callback<'d>>,
}

impl std::fmt::Debug for Dispatcher<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'d> Dispatcher<'d> {
    /// A dispatcher for `dag`. Fails when a limit of 0 would leave pending
    /// tasks never started ([`ScheduleError::ZeroLimit`]).
    pub fn new(dag: &'d Dag, options: DispatchOptions) -> Result<Self, ScheduleError> {
        let gate = gate::Gate::new(dag, options.max_parallel, &options.class_limits)?;
        Ok(Self {
            dag,
            options,
            gate,
            on_event: None,
        })
    }

    /// Call `f` with every [`DispatchEvent`], in order, from the dispatch
    /// loop (keep it quick: send to a channel to do slow work elsewhere).
    #[must_use]
    pub fn on_event(mut self, f: impl FnMut(&DispatchEvent) + Send + 'd) -> Self {
        self.on_event = Some(Box::new(f));
        self
    }

    /// Run every pending task to the end.
    pub async fn run<R>(self, runner: Arc<R>) -> DispatchReport
    where
        R: TaskRunner + ?Sized + 'static,
    {
        self.run_until(runner, std::future::pending::<()>()).await
    }

    /// Run until done or until `shutdown` completes, whichever is first.
    /// After `shutdown`, running tasks finish and are recorded; nothing new
    /// starts. Pass e.g. a `CancellationToken`'s `cancelled_owned()`, a
    /// `watch::Receiver`'s `changed()`, or `tokio::signal::ctrl_c()`.
    pub async fn run_until<R, S>(self, runner: Arc<R>, shutdown: S) -> DispatchReport
    where
        R: TaskRunner + ?Sized + 'static,
        S: Future + Send,
    {
        engine::Engine::new(self.dag, &self.options, self.gate, self.on_event)
            .run(runner, shutdown)
            .await
    }
}
