//! [`FleetError`]: what can go wrong between the coordinator and its hosts.

use std::path::PathBuf;

/// An error of the coordinator or a host agent.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The engine (NATS) failed.
    #[error(transparent)]
    Engine(#[from] wavecrew_engine_nats::EngineError),
    /// The task store failed (a lost lease included).
    #[error(transparent)]
    Core(#[from] wavecrew_core::CoreError),
    /// The repository failed.
    #[error(transparent)]
    Isolation(#[from] wavecrew_isolation::IsolationError),
    /// A file could not be read or written.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `git` failed.
    #[error("git {command}: {message}")]
    Git {
        /// The arguments.
        command: String,
        /// What git said.
        message: String,
    },
    /// Something the session or a message holds is not what it must be.
    #[error("{what}: {message}")]
    Invalid {
        /// What was read.
        what: String,
        /// What is wrong, and what was expected.
        message: String,
    },
}

impl FleetError {
    /// An I/O error on `path`.
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        FleetError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }

    /// Whether this is a lost lease: the task went to another worker.
    pub fn is_lease_lost(&self) -> bool {
        matches!(
            self,
            FleetError::Core(wavecrew_core::CoreError::LeaseLost { .. })
        )
    }
}

/// The crate's result.
pub type Result<T, E = FleetError> = std::result::Result<T, E>;
