//! git in tests: the runner every wavecrew crate uses
//! ([`wavecrew_sys::git`]), with a fixed identity, panicking with git's own
//! message when a command fails.

use std::path::Path;

/// The identity test commits are made with.
pub const TEST_NAME: &str = "wavecrew test";
/// The identity test commits are made with.
pub const TEST_EMAIL: &str = "test@wavecrew.invalid";

/// `git -C <dir> <args>` as the test identity; its stdout, trimmed.
/// Panics (with the command and git's stderr) when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    wavecrew_sys::git::git(dir)
        .identity(TEST_NAME, TEST_EMAIL)
        .args(args)
        .text()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Whether `git -C <dir> <args>` exits 0 (its output is dropped).
pub fn git_ok(dir: &Path, args: &[&str]) -> bool {
    wavecrew_sys::git::git(dir)
        .identity(TEST_NAME, TEST_EMAIL)
        .args(args)
        .succeeds()
}

/// `git init` on branch `main` in `dir`, with `user.name` and `user.email`
/// set in the repository's config (so commits made by other programs in it
/// need no identity of their own), then one commit of everything in it.
pub fn init_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", TEST_NAME]);
    git(dir, &["config", "user.email", TEST_EMAIL]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "initial"]);
}

/// A temporary project folder for a test, and, when it is dropped, the
/// folder of worktrees wavecrew makes beside it (`<project>.wavecrew`,
/// which the temporary folder's own removal does not reach): a test
/// removes what it creates, even when it fails.
#[derive(Debug)]
pub struct TempProject {
    dir: tempfile::TempDir,
}

impl TempProject {
    /// A new, empty temporary folder.
    pub fn new() -> TempProject {
        TempProject {
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Default for TempProject {
    fn default() -> Self {
        TempProject::new()
    }
}

impl Drop for TempProject {
    fn drop(&mut self) {
        remove_worktrees_beside(self.dir.path());
    }
}

/// Remove the folder of worktrees beside `project` (`<project>.wavecrew`).
pub fn remove_worktrees_beside(project: &Path) {
    let (Some(parent), Some(name)) = (project.parent(), project.file_name()) else {
        return;
    };
    let mut beside = name.to_os_string();
    beside.push(".wavecrew");
    let _ = std::fs::remove_dir_all(parent.join(beside));
}
