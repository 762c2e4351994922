//! git for this crate: the one runner of [`wavecrew_sys::git`] (argv only,
//! a clean environment, hooks and the fsmonitor off), its errors turned
//! into [`IsolationError`]s.
//!
//! A shadow repository (a project folder without git) is never reached
//! through `GIT_DIR`: `Repo::git` passes `--git-dir=<shadow>` and
//! `--work-tree=<project>` as arguments of each command instead. A plain
//! `git -C <shadow git dir>` (what `Repo::top` names for a shadow) works
//! for the commands that need no work tree (`log`, `merge-tree`,
//! `merge-base`, `rev-list`), since the shadow is a bare repository.

use std::process::Output;

use wavecrew_sys::git::GitError;
pub(crate) use wavecrew_sys::git::{Git, git, quoted, split_nul};

use crate::error::{IsolationError, Result};

impl From<GitError> for IsolationError {
    fn from(e: GitError) -> Self {
        match e {
            GitError::Spawn { command, source } => IsolationError::Spawn { command, source },
            GitError::Failed {
                command,
                status,
                stderr,
            } => IsolationError::Git {
                command,
                status,
                stderr,
            },
            GitError::Unexpected {
                command,
                output,
                expected,
            } => IsolationError::Unexpected {
                command,
                output,
                expected,
            },
            GitError::TooOld { found } => IsolationError::GitTooOld { found },
            // `GitError` may grow; its message is kept whole.
            other => IsolationError::Git {
                command: String::new(),
                status: String::new(),
                stderr: other.to_string(),
            },
        }
    }
}

/// The error for a command that exited with `out.status`.
pub(crate) fn failed(command: String, out: &Output) -> IsolationError {
    wavecrew_sys::git::failed(command, out).into()
}

/// The installed git's version, checked against
/// [`wavecrew_sys::git::MIN_GIT`] once per process.
pub(crate) fn check_version() -> Result<(u32, u32, u32)> {
    Ok(wavecrew_sys::git::check_version()?)
}
