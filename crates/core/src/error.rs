//! The error type of `wavecrew-core`: every variant names the file, and where it
//! applies the field, at fault.

use std::io;
use std::path::PathBuf;

use wavecrew_sys::io::PathIoError;

use crate::id::IdError;

/// Errors from reading, validating and storing sessions and tasks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A file or folder could not be read or written.
    #[error(transparent)]
    Io(PathIoError),
    /// A JSON file did not parse, or a field had the wrong shape.
    #[error("`{path}`: {}{message}", field_prefix(field))]
    Json {
        /// The file.
        path: PathBuf,
        /// The field path (`tasks[2].id`), empty for the document itself.
        field: String,
        /// What serde said, with line and column.
        message: String,
    },
    /// The message bus refused a record.
    #[error("message bus: {0}")]
    Bus(String),
    /// A field parsed but its value is not allowed.
    #[error("`{path}`: field `{field}`: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The field path.
        field: String,
        /// What was found and what was expected.
        message: String,
    },
    /// An id (session, task, role) was refused.
    #[error("{}{source}", context_prefix(context))]
    Id {
        /// Where the id came from (a file and field, or a flag), may be empty.
        context: String,
        /// The validation error.
        #[source]
        source: IdError,
    },
    /// An input path does not exist.
    #[error("`{path}` does not exist; expected {expected}")]
    NotFound {
        /// The path as given.
        path: PathBuf,
        /// What should have been there.
        expected: &'static str,
    },
    /// A task was asked for that the store does not hold.
    #[error("task `{id}` not found in `{path}`")]
    TaskNotFound {
        /// The task id.
        id: String,
        /// The store folder.
        path: PathBuf,
    },
    /// A task with this id already exists where a new one was to be created.
    #[error("task `{id}` already exists in `{path}`")]
    TaskExists {
        /// The task id.
        id: String,
        /// The store folder.
        path: PathBuf,
    },
    /// Several task files of a store cannot be read.
    #[error("{count} task files cannot be read:\n  {details}")]
    CorruptTasks {
        /// How many.
        count: usize,
        /// One line per file, each naming it.
        details: String,
    },
    /// A worker's heartbeat or finish found that it no longer holds the
    /// task's lease (it expired and was reset, or another worker holds it
    /// now). The worker must stop its attempt: kill its agent, record
    /// nothing, and never acknowledge the task's ticket.
    #[error(
        "task `{id}`: worker `{worker}` lost its lease: cannot {action} a task that is {state}"
    )]
    LeaseLost {
        /// The task id.
        id: String,
        /// The worker that tried.
        worker: String,
        /// What was attempted (`heartbeat`, `finish`).
        action: &'static str,
        /// The state the task is in now, and who holds it.
        state: String,
    },
    /// A networked task store failed (server unreachable, a timeout, a
    /// record it cannot read); the message names the server and the key.
    #[error("task store `{store}`: {source}")]
    Store {
        /// The store (a server URL and bucket).
        store: String,
        /// The store's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A state change that the task's current state does not allow.
    #[error("task `{id}`: cannot {action} a task that is {state}")]
    BadTransition {
        /// The task id.
        id: String,
        /// What was attempted.
        action: &'static str,
        /// The state it is in.
        state: String,
    },
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() || field == "." || field == "?" {
        String::new()
    } else {
        format!("field `{field}`: ")
    }
}

fn context_prefix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!("{context}: ")
    }
}

impl CoreError {
    /// An I/O error on `path` while doing `op`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        CoreError::Io(PathIoError::new(op, path, source))
    }

    /// A value error in `field` of `path`.
    pub fn invalid(
        path: impl Into<PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        CoreError::Invalid {
            path: path.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// Whether this error is the user's input (exit code 2) rather than the
    /// machine's (I/O, exit code 4).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, CoreError::Io { .. } | CoreError::Store { .. })
    }

    /// The kind of the underlying I/O error, for an I/O error.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            CoreError::Io(e) => Some(e.source.kind()),
            _ => None,
        }
    }

    /// The file or folder of an I/O error.
    pub fn io_path(&self) -> Option<&std::path::Path> {
        match self {
            CoreError::Io(e) => Some(&e.path),
            _ => None,
        }
    }

    /// Whether the disk (or the quota) is full: the environment's fault,
    /// and the state on disk is still whole (every write is atomic), so the
    /// run can resume once there is space.
    pub fn is_storage_full(&self) -> bool {
        self.io_kind().is_some_and(is_storage_full)
    }
}

/// Whether an I/O error kind means "no space left" (`ENOSPC`, `EDQUOT`).
pub fn is_storage_full(kind: io::ErrorKind) -> bool {
    matches!(
        kind,
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// Shorthand for results in this crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_full_disk_is_told_apart() {
        // A real ENOSPC: the kernel's /dev/full.
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let source = full
            .write_all(b"x")
            .and_then(|()| full.flush())
            .unwrap_err();
        let e = CoreError::io("writing", "/s/team-session.json", source);
        assert!(e.is_storage_full());
        assert_eq!(e.io_kind(), Some(io::ErrorKind::StorageFull));
        assert_eq!(
            e.io_path(),
            Some(std::path::Path::new("/s/team-session.json"))
        );
        assert!(!e.is_bad_input());
        let denied = CoreError::io(
            "writing",
            "/x",
            io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert!(!denied.is_storage_full());
        assert!(!CoreError::invalid("/x", "f", "m").is_storage_full());
        assert_eq!(CoreError::invalid("/x", "f", "m").io_kind(), None);
    }
}
