//! The merge queue's and worktree creation's exclusive locks: the ground
//! floor's [`wavecrew_sys::lock`], its errors as [`IsolationError`]s.

use std::path::Path;

use crate::error::{IsolationError, Result};

/// A held lock; dropping it releases the lock.
pub(crate) type LockGuard = wavecrew_sys::lock::FileLock;

/// Take the exclusive lock on `path`, creating the file and its folder;
/// blocks until it is free.
pub(crate) fn lock(path: &Path) -> Result<LockGuard> {
    wavecrew_sys::lock::lock_file(path).map_err(|e| IsolationError::io(e.step, e.path, e.source))
}
