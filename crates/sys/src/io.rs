//! The one "I/O error at a path" every wavecrew crate's error type carries:
//! [`PathIoError`], what was being done, the file or folder, and the
//! operating system's error, with one message shape.

use std::io;
use std::path::PathBuf;

/// A file or folder could not be read or written.
///
/// ```
/// use wavecrew_sys::io::PathIoError;
///
/// let e = PathIoError::new("reading", "a/b.json", std::io::Error::other("boom"));
/// assert_eq!(e.to_string(), "reading `a/b.json`: boom");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{op} `{path}`: {source}")]
pub struct PathIoError {
    /// What was being done (`reading`, `writing`, `locking`, …).
    pub op: &'static str,
    /// The file or folder.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

impl PathIoError {
    /// An I/O error on `path` while doing `op`.
    pub fn new(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        PathIoError {
            op,
            path: path.into(),
            source,
        }
    }
}
