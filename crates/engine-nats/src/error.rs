//! [`EngineError`]: every way the NATS engine fails, each naming the server
//! URL, bucket, stream, key or task concerned and what was expected.

use std::path::PathBuf;
use std::time::Duration;

use wavecrew_sys::io::PathIoError;

/// A boxed error from the NATS client (its error types are many and large).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of the NATS engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The server URL is not one this engine accepts.
    #[error(
        "invalid NATS server URL `{url}`: {reason}; expected `nats://host[:port]` or `tls://host[:port]`"
    )]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server could not be reached or refused the connection.
    #[error(
        "cannot connect to the NATS server at `{url}`: {source}; expected a nats-server with JetStream enabled listening there"
    )]
    Connect {
        /// The URL.
        url: String,
        /// The client's error.
        #[source]
        source: BoxError,
    },
    /// The server did not answer within the connect timeout.
    #[error(
        "cannot connect to the NATS server at `{url}`: no answer within {timeout:?}; expected a nats-server listening there"
    )]
    ConnectTimeout {
        /// The URL.
        url: String,
        /// How long was waited.
        timeout: Duration,
    },
    /// A credentials file (a `.creds` file or a token file) could not be used.
    #[error("NATS credentials `{path}`: {reason}")]
    Credentials {
        /// The file.
        path: PathBuf,
        /// What went wrong, and what was expected.
        reason: String,
    },
    /// A git step of carrying the repository failed.
    #[error("{action}: {source}")]
    Git {
        /// What was being done (`bundling refs/heads/wavecrew/S`).
        action: String,
        /// The git error, naming the command.
        #[source]
        source: wavecrew_isolation::IsolationError,
    },
    /// The published repository and a host's copy of it disagree.
    #[error("{what}; expected {expected}")]
    Diverged {
        /// What was found.
        what: String,
        /// What was expected.
        expected: String,
    },
    /// A name that becomes part of a stream, bucket, subject or key was refused.
    #[error("invalid {kind} {value:?}: expected {expected}")]
    InvalidName {
        /// What the name is (`session id`, `role`, `object name`, …).
        kind: &'static str,
        /// The value as given.
        value: String,
        /// The allowed form.
        expected: &'static str,
    },
    /// A JetStream operation failed.
    #[error("NATS at `{url}`: {action}: {source}")]
    JetStream {
        /// The server URL.
        url: String,
        /// What was being done, naming the stream, bucket or key
        /// (`creating the key-value bucket wavecrew_s_tasks`).
        action: String,
        /// The client's error.
        #[source]
        source: BoxError,
    },
    /// A record read from a stream or bucket is not what this engine writes.
    #[error("NATS at `{url}`: {what} is malformed: {reason}")]
    Malformed {
        /// The server URL.
        url: String,
        /// Which record (stream and sequence, bucket and key).
        what: String,
        /// What was wrong, and what was expected.
        reason: String,
    },
    /// A local file could not be read or written.
    #[error(transparent)]
    Io(PathIoError),
    /// The file message bus refused a mirrored record.
    #[error("mirroring stream `{stream}` sequence {seq} into `{log}`: {source}")]
    Mirror {
        /// The bus stream.
        stream: String,
        /// The stream sequence of the record.
        seq: u64,
        /// The session's `messages.jsonl`.
        log: PathBuf,
        /// The file bus's error.
        #[source]
        source: Box<wavecrew_msgbus::BusError>,
    },
    /// The engine's own runtime stopped before an operation finished.
    #[error("NATS engine for `{url}`: its runtime stopped while {action}")]
    Stopped {
        /// The server URL.
        url: String,
        /// What was being done.
        action: String,
    },
}

impl EngineError {
    /// A JetStream failure at `url` while doing `action`.
    pub(crate) fn js(
        url: &str,
        action: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> EngineError {
        EngineError::JetStream {
            url: url.to_owned(),
            action: action.into(),
            source: source.into(),
        }
    }

    /// A local I/O error on `path` while doing `op`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EngineError::Io(PathIoError::new(op, path, source))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
