//! Files an attempt changed, from `git status` before and after.
//!
//! A snapshot records every path `git status` lists (untracked files
//! included) with a hash of its content, so a file that was already dirty
//! before the attempt and was edited again still counts, and one that was
//! dirty and left alone does not. Outside a git work tree there is no
//! snapshot, and the attempt's own file events are used instead.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use wavecrew_sys::git::{TreeStatus, WorkTreeGit};

/// The dirty files of a work tree at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Path (relative to the work tree root) → (status, content hash).
    entries: BTreeMap<String, (String, Option<u64>)>,
    /// What git said, whole (HEAD, its branch, the paths).
    status: TreeStatus,
    /// The work tree's git folders as recorded before the agent, when
    /// known: the next snapshot's git is pinned to them.
    pinned: Option<WorkTreeGit>,
}

fn content_hash(path: &Path) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    Some(h.finish())
}

/// stdout of `git <args>` run in `cwd`; `None` when it fails.
fn git(cwd: &Path, args: &[&str]) -> Option<Vec<u8>> {
    wavecrew_sys::git::git(cwd).args(args).run().ok()
}

/// Whether `git` could find a repository from `cwd`: a `.git` (folder or
/// file) in it or a folder above it (`GIT_DIR` is never honoured: wavecrew's
/// git ignores it). When this says no, `git rev-parse` would fail too, so
/// no process is started to ask.
fn may_be_in_git(cwd: &Path) -> bool {
    let start = if cwd.is_absolute() {
        cwd.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(here) => here.join(cwd),
            Err(_) => return true,
        }
    };
    start
        .ancestors()
        .any(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
}

impl Snapshot {
    /// Take a snapshot of the work tree holding `cwd`; `None` outside git.
    pub fn take(cwd: &Path) -> Option<Snapshot> {
        if !may_be_in_git(cwd) {
            return None;
        }
        let root = git(cwd, &["rev-parse", "--show-toplevel"])?;
        let root = std::path::PathBuf::from(String::from_utf8_lossy(&root).trim());
        Snapshot::take_at(&root)
    }

    /// Take the next snapshot of the same work tree (its root is known,
    /// and its git folders when they were given).
    pub fn again(&self) -> Option<Snapshot> {
        match &self.pinned {
            Some(wt) => Snapshot::take_pinned(wt),
            None => Snapshot::take_at(&self.status.top),
        }
    }

    /// Take a snapshot of the work tree `wt`, git pinned to the folders
    /// recorded for it before the agent ran (what it rewrites in `.git`
    /// or `commondir` is not followed); `None` when git cannot list it.
    pub fn take_pinned(wt: &WorkTreeGit) -> Option<Snapshot> {
        let status = TreeStatus::read_pinned(wt).ok()?;
        let mut snapshot = Snapshot::of_status(status);
        snapshot.pinned = Some(wt.clone());
        Some(snapshot)
    }

    /// Take a snapshot of the work tree whose root is `root` (located
    /// already); `None` when git cannot list it.
    pub fn take_at(root: &Path) -> Option<Snapshot> {
        Some(Snapshot::of_status(TreeStatus::read(root).ok()?))
    }

    fn of_status(status: TreeStatus) -> Snapshot {
        let root = &status.top;
        let entries = status
            .entries
            .iter()
            .map(|e| {
                let hash = content_hash(&root.join(&e.path));
                (e.path.clone(), (e.xy.clone(), hash))
            })
            .collect();
        Snapshot {
            entries,
            status,
            pinned: None,
        }
    }

    /// The snapshot of the work tree whose root is `root` when it is known
    /// to have no change (a worktree just reset to its branch): nothing is
    /// dirty, and git is not asked.
    pub fn clean_at(root: std::path::PathBuf) -> Snapshot {
        Snapshot {
            entries: BTreeMap::new(),
            status: TreeStatus {
                top: root,
                ..TreeStatus::default()
            },
            pinned: None,
        }
    }

    /// [`Snapshot::clean_at`] of the work tree `wt`, whose next snapshot
    /// is pinned to its recorded git folders.
    pub fn clean_pinned(wt: &WorkTreeGit) -> Snapshot {
        let mut snapshot = Snapshot::clean_at(wt.top.clone());
        snapshot.pinned = Some(wt.clone());
        snapshot
    }

    /// Paths that differ between `self` (before) and `after`, sorted,
    /// relative to the work tree root.
    pub fn changed_since(&self, after: &Snapshot) -> Vec<String> {
        let mut changed: Vec<String> = Vec::new();
        for (path, entry) in &after.entries {
            if self.entries.get(path) != Some(entry) {
                changed.push(path.clone());
            }
        }
        for path in self.entries.keys() {
            if !after.entries.contains_key(path) {
                // Dirty before, clean after: reverted or committed.
                changed.push(path.clone());
            }
        }
        changed.sort();
        changed.dedup();
        changed
    }

    /// The work tree root.
    pub fn root(&self) -> &Path {
        &self.status.top
    }

    /// What git said when this snapshot was taken.
    pub fn status(&self) -> &TreeStatus {
        &self.status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) {
        wavecrew_sys::git::git(dir)
            .identity("t", "t@e")
            .args(args)
            .run()
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn edits_of_dirty_files_count_and_untouched_ones_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        sh(d, &["init", "-q"]);
        std::fs::write(d.join("a.txt"), "a").unwrap();
        std::fs::write(d.join("b.txt"), "b").unwrap();
        sh(d, &["add", "."]);
        sh(d, &["commit", "-qm", "init"]);
        std::fs::write(d.join("a.txt"), "dirty").unwrap();
        std::fs::write(d.join("left.txt"), "alone").unwrap();
        let before = Snapshot::take(d).unwrap();
        std::fs::write(d.join("a.txt"), "dirtier").unwrap();
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::write(d.join("src/new file.rs"), "x").unwrap();
        std::fs::remove_file(d.join("b.txt")).unwrap();
        let after = Snapshot::take(d).unwrap();
        assert_eq!(
            before.changed_since(&after),
            vec!["a.txt", "b.txt", "src/new file.rs"]
        );
        assert!(Snapshot::take(&std::env::temp_dir().join("no-such-dir-xyz")).is_none());
    }

    /// A tree known to be clean gives the snapshot git would have given,
    /// so what an attempt changed is the same without asking git before.
    #[test]
    fn a_clean_tree_is_known_without_git() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().canonicalize().unwrap();
        sh(&d, &["init", "-q"]);
        std::fs::write(d.join("a.txt"), "a").unwrap();
        sh(&d, &["add", "."]);
        sh(&d, &["commit", "-qm", "init"]);
        let asked = Snapshot::take(&d).unwrap();
        let known = Snapshot::clean_at(d.clone());
        assert_eq!(known.entries, asked.entries);
        assert_eq!(known.root(), asked.root());
        std::fs::write(d.join("a.txt"), "edited").unwrap();
        std::fs::write(d.join("b.txt"), "new").unwrap();
        let after = known.again().unwrap();
        assert_eq!(known.changed_since(&after), vec!["a.txt", "b.txt"]);
        assert_eq!(asked.changed_since(&after), vec!["a.txt", "b.txt"]);
        assert_eq!(
            after.status().paths().collect::<Vec<_>>(),
            ["a.txt", "b.txt"]
        );
    }
}
