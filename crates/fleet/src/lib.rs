//! One session over several hosts, on NATS JetStream.
//!
//! The primitives (task store in KV, tickets, bus stream and mirror, object
//! store, the repository as git bundles) are `wavecrew-engine-nats`; this
//! crate puts them to work:
//!
//! * [`Coordinator`] (`wavecrew run --engine`): the orchestrator's
//!   [`RemoteWorkers`](wavecrew_orchestrator::RemoteWorkers). It announces the
//!   session, publishes the integration branch and the [`SessionKit`], and
//!   for each task the scheduler starts, publishes a ticket and waits for
//!   the task's end in KV; then it brings the attempt home ([`AttemptPack`]:
//!   files and bus records), lands its commits through the merge queue and
//!   publishes the new tip;
//! * [`HostAgent`] (`wavecrew worker`): takes tickets, claims the task in KV
//!   (the revision is the fence), runs the same role binary as on one
//!   machine in a worktree of its cached copy of the repository,
//!   heartbeats (progress ack plus lease renewal), and records the end with
//!   a compare-and-set before it acks. A worker that loses its lease kills
//!   its agent and never acks.

mod coordinator;
mod error;
mod git;
mod host;
mod kit;

/// The version coordinators announce and hosts check: a host serves only
/// a session of its own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use coordinator::{CoordinatedSession, Coordinator, CoordinatorOptions};
pub use error::{FleetError, Result};
pub use host::{HostAgent, HostOptions};
pub use kit::{AttemptPack, SessionKit};
