//! Exit codes, the same for every wavecrew binary (DESIGN §1), and the error
//! type that carries one up to `main`.
//!
//! A full disk (`ENOSPC`, or a full quota) is the environment's fault, not an
//! internal error: every write is atomic, so the session on disk is whole and
//! resumes once there is space. [`CliError::classify`] turns any error that
//! comes from one into exit 3 (interrupted, resumable) with the path and
//! "no space left".

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use wavecrew_core::CoreError;
use wavecrew_core::error::is_storage_full;

/// What a binary's exit status means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: everything asked for succeeded.
    Success = 0,
    /// 1: some task failed or needs a person (or a check found problems).
    Failed = 1,
    /// 2: bad input or usage; the message names the file and field.
    BadInput = 2,
    /// 3: interrupted; the session can be resumed.
    Interrupted = 3,
    /// 4: an internal error (I/O, a bug).
    Internal = 4,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// An error on its way to `main`, with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    /// The exit code to use.
    pub exit: Exit,
    /// What went wrong.
    pub error: anyhow::Error,
}

impl CliError {
    /// A bad-input error (exit 2).
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Self {
        CliError {
            exit: Exit::BadInput,
            error: error.into(),
        }
    }

    /// An internal error (exit 4).
    pub fn internal(error: impl Into<anyhow::Error>) -> Self {
        CliError {
            exit: Exit::Internal,
            error: error.into(),
        }
    }

    /// The disk is full (exit 3): nothing is lost, the run resumes once
    /// there is space.
    pub fn storage_full(path: Option<&Path>, error: impl Into<anyhow::Error>) -> Self {
        let error = error.into();
        let at = path.map_or_else(String::new, |p| format!(" at `{}`", p.display()));
        CliError {
            exit: Exit::Interrupted,
            error: anyhow::anyhow!(
                "no space left on device{at}: {error}\n\
                 interrupted and resumable: free some space, then run the same command again"
            ),
        }
    }

    /// The exit this error deserves: an internal error caused by a full
    /// disk, anywhere in its chain of causes, becomes
    /// [`CliError::storage_full`] (exit 3). Every binary's `finish` calls it.
    #[must_use]
    pub fn classify(self) -> Self {
        if self.exit != Exit::Internal {
            return self;
        }
        match storage_full_cause(&self.error) {
            Some(full) => CliError::storage_full(full.path.as_deref(), self.error),
            None => self,
        }
    }
}

/// A full disk found among the causes of an error.
struct StorageFull {
    /// The file or folder being written, when the error names it.
    path: Option<PathBuf>,
}

/// Whether `error` comes from a full disk: a [`CoreError`] or an
/// [`std::io::Error`] of that kind in its chain, or, for an error that
/// crossed a process boundary or a string (a worker's stderr, an attempt's
/// failure text), the operating system's message for it.
fn storage_full_cause(error: &anyhow::Error) -> Option<StorageFull> {
    for cause in error.chain() {
        if let Some(e) = cause.downcast_ref::<CoreError>()
            && e.is_storage_full()
        {
            return Some(StorageFull {
                path: e.io_path().map(Path::to_owned),
            });
        }
        if let Some(e) = cause.downcast_ref::<std::io::Error>()
            && is_storage_full(e.kind())
        {
            return Some(StorageFull { path: None });
        }
    }
    let text = format!("{error:#}");
    ["No space left on device", "Disk quota exceeded"]
        .iter()
        .any(|m| text.contains(m))
        .then_some(StorageFull { path: None })
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Our error messages already include their causes; `{:#}` would
        // print each cause twice.
        write!(f, "{}", self.error)
    }
}

impl From<wavecrew_orchestrator::RunError> for CliError {
    fn from(e: wavecrew_orchestrator::RunError) -> Self {
        if e.is_bad_input() {
            CliError::bad_input(e)
        } else {
            CliError::internal(e)
        }
    }
}

impl From<CoreError> for CliError {
    fn from(e: CoreError) -> Self {
        if e.is_storage_full() {
            let path = e.io_path().map(Path::to_owned);
            CliError::storage_full(path.as_deref(), e)
        } else if e.is_bad_input() {
            CliError::bad_input(e)
        } else {
            CliError::internal(e)
        }
    }
}

impl From<wavecrew_core::IdError> for CliError {
    fn from(e: wavecrew_core::IdError) -> Self {
        CliError::bad_input(e)
    }
}

/// The result type of every command: the exit code to use on success, or an error.
pub type CmdResult = Result<Exit, CliError>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A real `ENOSPC` from the kernel: writing to `/dev/full`.
    fn enospc() -> std::io::Error {
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full exists on Linux");
        let err = full
            .write_all(b"x")
            .and_then(|()| full.flush())
            .expect_err("writing /dev/full fails");
        assert_eq!(err.kind(), std::io::ErrorKind::StorageFull);
        err
    }

    #[test]
    fn a_full_disk_is_exit_3_with_the_path() {
        let core = CoreError::io("writing", "/s/.workflow/.team/S-1/.tmp-abc", enospc());
        let e = CliError::from(core);
        assert_eq!(e.exit, Exit::Interrupted);
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "no space left on device at `/s/.workflow/.team/S-1/.tmp-abc`: writing"
            ),
            "{msg}"
        );
        assert!(msg.contains("interrupted and resumable"), "{msg}");
    }

    #[test]
    fn a_full_disk_anywhere_in_the_chain_is_classified() {
        // Wrapped by a caller that gave up on its own type.
        let core = CoreError::io("replacing", "/s/tasks/T-1.json", enospc());
        let wrapped = anyhow::Error::new(core).context("finishing task T-1");
        let e = CliError::internal(wrapped).classify();
        assert_eq!(e.exit, Exit::Interrupted);
        assert!(e.to_string().contains("at `/s/tasks/T-1.json`"), "{e}");
        // A bare io::Error.
        let e = CliError::internal(enospc()).classify();
        assert_eq!(e.exit, Exit::Interrupted);
        assert!(
            e.to_string().starts_with("no space left on device: "),
            "{e}"
        );
        // Only text left (a worker's report).
        let text = anyhow::anyhow!("worker T-1: writing outcome.json: {}", enospc());
        assert_eq!(CliError::internal(text).classify().exit, Exit::Interrupted);
    }

    #[test]
    fn other_errors_keep_their_exit() {
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = CliError::from(CoreError::io("writing", "/x", denied));
        assert_eq!(e.exit, Exit::Internal);
        assert_eq!(e.classify().exit, Exit::Internal);
        let bad = CoreError::invalid("/x.json", "id", "nope");
        assert_eq!(CliError::from(bad).exit, Exit::BadInput);
        // A bad input that mentions a full disk stays a bad input.
        let e = CliError::bad_input(anyhow::anyhow!("No space left on device")).classify();
        assert_eq!(e.exit, Exit::BadInput);
    }
}
