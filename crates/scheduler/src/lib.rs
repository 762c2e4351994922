//! wavecrew's scheduler: the task graph of a session, checked before
//! anything runs, and the async dispatcher that runs it.
//!
//! - [`TaskNode`]: the input, one per task (id, dependencies, `done`,
//!   estimate, weight, class, declared files).
//! - [`Dag::build`]: validation that collects every problem
//!   ([`GraphProblem`]: duplicate ids, unknown and self dependencies, cycles
//!   named as paths with the dependencies that break them), then the graph
//!   (compressed sparse rows; [`Dag::graph`] gives a petgraph `DiGraph`). A
//!   dependency on a completed task, or on an id in
//!   [`BuildOptions::satisfied`], is satisfied. [`CheckReport`] is the
//!   JSON of `wavecrew plan check --json`.
//! - [`Dag::waves`] (or [`Dag::wave_ids`], without copying ids): Kahn levels
//!   in O(V + E), with the [`CyclePolicy`] `Abort` (default) or `Force`
//!   (release the lowest-numbered waiting task). Loading a session through
//!   [`wavecrew_core::source::load`], building and layering are linear in
//!   the tasks (`benches/waves.rs`, 1k to 200k tasks, on the CLI's path).
//! - [`Dag::critical_path`] and [`Dag::remaining_lengths`] over estimates.
//! - [`build_loaded`] / [`nodes_of`]: the graph of what
//!   [`wavecrew_core::source::load`] found (a session, a task folder, a
//!   plan), as `wavecrew plan` builds it.
//! - [`Dispatcher`]: runs pending tasks through a [`TaskRunner`] as soon as
//!   their dependencies finish, most critical first, within a global limit
//!   (task weights), per-class limits and a declared-file gate; failure
//!   policies `Stop`, `Continue`, `Always`; an optional wave barrier; clean
//!   cancellation.
//! - [`Dag::to_dot`], [`Dag::to_mermaid`], [`Dag::to_json`]: the graph with
//!   waves as ranks, the critical path highlighted, states as colours.
//!
//! ```
//! use std::sync::Arc;
//! use wavecrew_core::TaskId;
//! use wavecrew_scheduler::{
//!     BuildOptions, Dag, DispatchOptions, Dispatcher, FinalState, RunOutcome, TaskNode, runner_fn,
//! };
//!
//! let id = |s: &str| TaskId::new(s).unwrap();
//! let nodes = vec![
//!     TaskNode::new(id("IMPL-001"), []),
//!     TaskNode::new(id("IMPL-002"), [id("IMPL-001")]).with_estimate(3.0),
//!     TaskNode::new(id("IMPL-003"), [id("IMPL-1")]), // plan text style: resolves to IMPL-001
//! ];
//! let dag = Dag::build(nodes, &BuildOptions::default())?;
//! assert_eq!(dag.waves().waves, [vec![id("IMPL-001")], vec![id("IMPL-002"), id("IMPL-003")]]);
//! assert_eq!(dag.critical_path().path, [id("IMPL-001"), id("IMPL-002")]);
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
//! let report = runtime.block_on(async {
//!     let runner = Arc::new(runner_fn(|_id| async { RunOutcome::Succeeded }));
//!     let options = DispatchOptions::default().with_max_parallel(Some(2));
//!     let dispatcher = Dispatcher::new(&dag, options)?;
//!     Ok::<_, wavecrew_scheduler::ScheduleError>(dispatcher.run(runner).await)
//! })?;
//! assert!(report.all_succeeded());
//! assert_eq!(report.state("IMPL-003"), Some(&FinalState::Succeeded));
//!
//! // Problems are collected, not just the first.
//! let bad = vec![
//!     TaskNode::new(id("IMPL-001"), [id("IMPL-009")]),
//!     TaskNode::new(id("IMPL-002"), [id("IMPL-002")]),
//! ];
//! let err = Dag::build(bad, &BuildOptions::default()).unwrap_err();
//! let kinds: Vec<&str> = err.problems().iter().map(|p| p.kind()).collect();
//! assert_eq!(kinds, ["unknown_dependency", "self_dependency"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod critical;
mod cycles;
mod dag;
mod dispatch;
mod error;
mod graph;
mod index;
mod loaded;
mod node;
mod problem;
mod render;
mod validate;
mod waves;

pub use critical::CriticalPath;
pub use cycles::MAX_CYCLES_PER_GROUP;
pub use dag::{BuildOptions, CyclePolicy, Dag, TaskGraph};
pub use dispatch::{
    DispatchEvent, DispatchOptions, DispatchReport, Dispatcher, FailurePolicy, FinalState,
    FnRunner, RunOutcome, TaskRunner, TaskSpan, runner_fn,
};
pub use error::ScheduleError;
pub use loaded::{build_loaded, nodes_of};
pub use node::{DEFAULT_ESTIMATE, TaskNode};
pub use problem::{CheckReport, GraphProblem, ProblemKind};
pub use render::{StateMap, state_colour};
pub use waves::Waves;
