//! The error type of `wavecrew-msgbus`: every message names the file or the
//! parameter at fault, in ccw's words where ccw has words for it.

use std::io;
use std::path::PathBuf;

use wavecrew_sys::io::PathIoError;

use wavecrew_core::IdError;

/// Errors from the bus.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BusError {
    /// A file of the bus could not be read or written.
    #[error(transparent)]
    Io(PathIoError),
    /// The session key is not a valid session id.
    #[error("--session-id: {0}")]
    Key(#[from] IdError),
    /// The key names no session folder (a team name where a session id was expected).
    #[error(
        "no session `{key}` under `{root}`: the bus is keyed by session id (the folder name under `.workflow/.team/`), not by team name; {}",
        known_sessions(existing)
    )]
    UnknownSession {
        /// The key as given.
        key: String,
        /// `<root>/.workflow/.team`.
        root: PathBuf,
        /// The session folders that do exist.
        existing: Vec<String>,
    },
    /// A key for a new bus that looks like a team name, not a session id.
    #[error(
        "`{key}` looks like a team name, not a session id: the bus is keyed by the session folder under `{root}`; {}; pass --create to start a new bus named `{key}`",
        known_sessions(existing)
    )]
    TeamName {
        /// The key as given.
        key: String,
        /// `<root>/.workflow/.team`.
        root: PathBuf,
        /// The session folders that do exist.
        existing: Vec<String>,
    },
    /// A parameter is missing or out of range (ccw: `Invalid params: …`).
    #[error("Invalid params: {0}")]
    InvalidParams(String),
    /// `read` / `delete` of an id that is not in the log.
    #[error("Message {id} not found in team \"{key}\"")]
    NotFound {
        /// The id asked for.
        id: String,
        /// The session key.
        key: String,
    },
    /// `meta.json` could not be written as JSON.
    #[error("`{path}`: {message}")]
    Meta {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

fn known_sessions(existing: &[String]) -> String {
    if existing.is_empty() {
        "there are no session folders yet".to_owned()
    } else {
        format!("existing sessions: {}", existing.join(", "))
    }
}

impl BusError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        BusError::Io(PathIoError::new(op, path, source))
    }

    /// Whether the caller's input is at fault (exit code 2) rather than the
    /// machine (exit code 4).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, BusError::Io { .. } | BusError::Meta { .. })
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = BusError> = std::result::Result<T, E>;
