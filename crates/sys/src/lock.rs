//! Exclusive file locks (`flock` through std's `File::lock`) that
//! serialise writers across threads and processes: the task store, the
//! merge queue, the governor, the issue store.
//!
//! Each call opens the lock file anew, so two threads of one process
//! exclude each other just as two processes do; the lock is released when
//! the [`FileLock`] is dropped (or the process dies).

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// The open lock file (some locks keep a little state in it).
    pub fn file(&self) -> &File {
        &self.file
    }
}

/// Why a lock could not be taken: the step, the path, the cause.
#[derive(Debug, thiserror::Error)]
#[error("{step} `{}`: {source}", path.display())]
pub struct LockError {
    /// `creating` (the folder), `opening` or `locking` (the file).
    pub step: &'static str,
    /// The folder or file.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

/// Take the exclusive lock on `path`, creating the file and its folder;
/// blocks until it is free.
pub fn lock_file(path: &Path) -> Result<FileLock, LockError> {
    let fail = |step, path: &Path| {
        let path = path.to_owned();
        move |source| LockError { step, path, source }
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail("creating", dir))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(fail("opening", path))?;
    file.lock().map_err(fail("locking", path))?;
    Ok(FileLock { file })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn threads_exclude_each_other() {
        let tmp = tempfile::tempdir().unwrap();
        let path = Arc::new(tmp.path().join("a/b/.lock"));
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (path, inside) = (path.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let _g = lock_file(&path).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn errors_name_the_step_and_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = lock_file(&file.join("x/.lock")).unwrap_err();
        assert_eq!(e.step, "creating");
        assert!(e.to_string().contains("file/x"), "{e}");
    }
}
