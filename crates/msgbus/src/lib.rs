//! The team message bus of ccw (`team_msg`), file-backed, ccw-compatible and
//! safe under any number of concurrent writers.
//!
//! A session's bus is `<root>/.workflow/.team/<session-id>/.msg/`:
//! `messages.jsonl` (one compact JSON record per line, ccw's keys in ccw's
//! order) and `meta.json` (team metadata and `role_state`). Logs written by
//! ccw are read here and the other way round. What wavecrew adds: an append
//! takes a lock and reads only the tail (O(1), never a duplicate id, never a
//! torn line; see [`log`]), meta.json changes under the same lock and is
//! replaced atomically, ids are never reused, `delete` keeps every other
//! line, and the session key is validated.
//!
//! ```
//! use wavecrew_msgbus::{Bus, Durability, KeyUse};
//! use wavecrew_core::{ListFilter, NewMessage};
//!
//! let root = tempfile::tempdir()?;
//! let (bus, _warning) = Bus::open(root.path(), "TC-demo-2026-11-22", KeyUse::Write, Durability::None)?;
//! let record = bus.log(NewMessage { from: "executor".into(), ..NewMessage::default() })?;
//! assert_eq!(record.id, "MSG-001");
//! assert_eq!(record.summary, "[executor] message → coordinator");
//! assert_eq!(bus.list(&ListFilter::default())?.total, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bus;
mod error;
mod follow;
pub mod log;
mod meta;
mod paths;
mod summary;
mod time;

pub use bus::{Bus, Status, render};
pub use error::{BusError, Result};
pub use follow::{DEFAULT_POLL, Follower};
pub use log::Durability;
pub use meta::ROOT_FIELDS;
pub use paths::{BusPaths, KeyUse, existing_sessions};
pub use summary::MemberStats;
pub use time::now_iso;
