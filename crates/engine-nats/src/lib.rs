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
pub mod tasks;
pub mod tickets;

pub use bus::{Mirror, NatsBus};
pub use connect::{CONNECT_TIMEOUT, Engine};
pub use error::{EngineError, Result};
pub use names::SessionName;
pub use tasks::NatsTaskStore;
pub use tickets::{Published, Ticket, TicketPolicy, Tickets};
