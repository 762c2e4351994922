//! wavecrew's primitives on NATS JetStream: several hosts, one session.
//!
//! One [`Engine`] is one connection to a nats-server (2.9 or later, with
//! JetStream) for one session; every stream and bucket it touches is named
//! after the session (`wavecrew_<session>_tasks`, …), see [`names`].
//!
//! ## The fence is the KV revision, never the ack
//!
//! A JetStream ack from a worker whose delivery already went to another
//! worker still removes the message, so an ack fences nothing. Task state
//! and leases therefore live in a KV bucket where every transition is a
//! compare-and-set on the entry's revision; a worker whose heartbeat or
//! finish fails the CAS has lost its lease and must kill its agent and
//! never ack its ticket.
//!
//! ## The parts
//!
//! * [`connect`]: [`Engine`], the connection (its own small runtime, so the
//!   synchronous task store works from any thread or runtime);
//! * [`tasks`]: [`NatsTaskStore`], the `TaskStore` in the KV bucket
//!   `wavecrew_<session>_tasks`, with the file store's transitions;
//! * [`tickets`]: [`Tickets`], a work queue per session, a durable consumer
//!   per role; progress acks are the ticket's heartbeat;
//! * [`bus`]: [`NatsBus`] publishes remote workers' bus records, and the
//!   coordinator's [`Mirror`] appends them to `messages.jsonl` exactly once;
//! * [`objects`]: [`Objects`], files (git bundles, attempt files) by name;
//! * [`repo`]: [`RepoChannel`], the repository carried as git bundles: the
//!   integration tip published (a whole bundle, then one per move, the tip
//!   in KV), a host's cache brought up to it, an attempt's commits sent back;
//! * [`registry`]: [`Registry`], the sessions a server carries, for host
//!   agents that connect before they know one.
//!
//! A worker's loop, as the layers above this crate are meant to run it:
//! take a [`Ticket`], claim the task (a CAS; lost: ack the ticket, someone
//! else has it), heartbeat the task and send [`Ticket::progress`] together,
//! and on any [`LeaseLost`](wavecrew_core::CoreError::LeaseLost) kill the
//! agent and drop the ticket unacked; only after `finish` succeeded, ack.
//!
//! Tested against Debian's nats-server 2.9.10: the client's `server_2_1x`
//! features stay off, and the KV bucket's stream is made by this crate
//! (`create_key_value` of async-nats 0.51 reads an account-info field 2.9
//! does not send).
//!
//! ```no_run
//! # async fn demo() -> Result<(), wavecrew_engine_nats::EngineError> {
//! use wavecrew_engine_nats::Engine;
//!
//! let engine = Engine::connect("nats://127.0.0.1:4222", None, "TC-demo").await?;
//! assert_eq!(engine.session().tasks_bucket(), "wavecrew_TC-demo_tasks");
//! # Ok(())
//! # }
//! ```

pub mod bus;
pub mod connect;
pub mod error;
pub mod names;
pub mod objects;
pub mod registry;
pub mod repo;
pub mod tasks;
pub mod tickets;

pub use bus::{Mirror, NatsBus};
pub use connect::{CONNECT_TIMEOUT, Engine};
pub use error::{EngineError, Result};
pub use names::SessionName;
pub use objects::Objects;
pub use registry::{Registry, SessionCard, SessionState};
pub use repo::{RepoChannel, TipRecord};
pub use tasks::NatsTaskStore;
pub use tickets::{Published, Ticket, TicketPolicy, Tickets};
