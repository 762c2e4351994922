//! The error type of `wavecrew-core`: every variant names the file, and where it
//! applies the field, at fault.

use std::io;
use std::path::PathBuf;

use crate::id::IdError;

/// Errors from reading, validating and storing sessions and tasks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A file or folder could not be read or written.
    #[error("{op} `{path}`: {source}")]
    Io {
        /// What was being done ("reading", "writing", "locking", …).
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
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
        CoreError::Io {
            op,
            path: path.into(),
            source,
        }
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
        !matches!(self, CoreError::Io { .. })
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
