//! Exclusive file locks (flock through std's `File::lock`) that serialise
//! the merge queue and worktree creation across threads and processes.
//!
//! Each call opens the lock file anew, so two threads of one process
//! exclude each other just as two processes do; the lock is released when
//! the guard is dropped (or the process dies).

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::{IsolationError, Result};

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct LockGuard {
    _file: File,
}

/// Take the exclusive lock on `path`, creating the file and its folder;
/// blocks until it is free.
pub(crate) fn lock(path: &Path) -> Result<LockGuard> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| IsolationError::io("creating", dir, e))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| IsolationError::io("opening", path, e))?;
    file.lock()
        .map_err(|e| IsolationError::io("locking", path, e))?;
    Ok(LockGuard { _file: file })
}
