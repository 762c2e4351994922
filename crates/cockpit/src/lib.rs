//! The live cockpit of a session: a page on loopback that shows a running,
//! interrupted or finished session as it changes (the DAG with states,
//! waves and the critical path; each task's attempts, agent events, prompt,
//! validation and diff; the merge queue; the totals), and the actions a
//! person takes on it, which the CLI offers too.
//!
//! * [`actions`]: pause, resume, cancel, retry, approve, reject: one
//!   [`actions::apply`] for the CLI and the page, through the session's
//!   `control/` folder ([`wavecrew_core::Control`]) and the bus;
//! * [`view`]: what the page reads (the snapshot, a task, a diff);
//! * [`live`]: the changes since the snapshot, for server-sent events;
//! * [`server`]: the HTTP server, its token and same-origin checks.

pub mod actions;
pub mod live;
pub mod server;
pub mod view;

pub use actions::{Action, ActionError, Applied, apply};
pub use server::{Cockpit, ServeError, Serving};
