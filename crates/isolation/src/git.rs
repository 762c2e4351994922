//! git for this crate: the one runner of [`wavecrew_sys::git`] (argv only,
//! a clean environment, hooks and the fsmonitor off), its errors carried
//! as they are in [`IsolationError::Git`].
//!
//! A shadow repository (a project folder without git) is never reached
//! through `GIT_DIR`: `Repo::git` passes `--git-dir=<shadow>` and
//! `--work-tree=<project>` as arguments of each command instead. A plain
//! `git -C <shadow git dir>` (what `Repo::top` names for a shadow) works
//! for the commands that need no work tree (`log`, `merge-tree`,
//! `merge-base`, `rev-list`), since the shadow is a bare repository.

use std::process::Output;

pub(crate) use wavecrew_sys::git::{Git, git, quoted, split_nul};

use crate::error::{IsolationError, Result};

/// The error for a command that exited with `out.status`.
pub(crate) fn failed(command: String, out: &Output) -> IsolationError {
    wavecrew_sys::git::failed(command, out).into()
}

/// The installed git's version, checked against
/// [`wavecrew_sys::git::MIN_GIT`] once per process.
pub(crate) fn check_version() -> Result<(u32, u32, u32)> {
    Ok(wavecrew_sys::git::check_version()?)
}
