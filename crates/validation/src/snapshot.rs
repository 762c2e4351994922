//! A snapshot of a working tree, taken before each fix round and restored
//! when the round made things worse.
//!
//! The files are copied into a private temp folder; no shell, no git
//! (the project may not be a repository, and `git stash` would touch the
//! user's stash). Dependency and build folders (`.git`, `node_modules`,
//! `target`, virtual environments, caches) are left out: a fixer edits
//! sources and tests, not those. Restoring writes back every file whose
//! content changed, recreates deleted ones, and removes files (and then
//! empty folders) that appeared after the snapshot.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Result, ValidationError};

/// Folder names never copied.
pub const EXCLUDED_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    "venv",
    ".pytest_cache",
    ".mypy_cache",
    ".tox",
    "coverage",
    ".nyc_output",
    ".wavecrew",
];

/// A copy of a working tree's files.
#[derive(Debug)]
pub struct Snapshot {
    root: PathBuf,
    copy: tempfile::TempDir,
    files: BTreeSet<PathBuf>,
    dirs: BTreeSet<PathBuf>,
    exclude: Vec<PathBuf>,
}

impl Snapshot {
    /// Copy the files under `root`, leaving out [`EXCLUDED_DIRS`] and the
    /// paths in `exclude` (absolute, e.g. the evidence folder).
    pub fn take(root: &Path, exclude: &[PathBuf]) -> Result<Snapshot> {
        let copy = tempfile::Builder::new()
            .prefix("wavecrew-snapshot-")
            .tempdir()
            .map_err(|e| ValidationError::io("creating", std::env::temp_dir(), e))?;
        let mut snap = Snapshot {
            root: root.to_owned(),
            copy,
            files: BTreeSet::new(),
            dirs: BTreeSet::new(),
            exclude: exclude.to_vec(),
        };
        let (files, dirs) = snap.walk()?;
        for rel in &files {
            let from = root.join(rel);
            let to = snap.copy.path().join(rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| ValidationError::io("creating", parent, e))?;
            }
            copy_entry(&from, &to)?;
        }
        snap.files = files;
        snap.dirs = dirs;
        Ok(snap)
    }

    /// The number of files held.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether it holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Put the tree back as it was. Returns the paths that changed.
    pub fn restore(&self) -> Result<Vec<PathBuf>> {
        let mut changed = Vec::new();
        let (now_files, now_dirs) = self.walk()?;
        for rel in now_files.difference(&self.files) {
            let p = self.root.join(rel);
            std::fs::remove_file(&p).map_err(|e| ValidationError::io("removing", &p, e))?;
            changed.push(rel.clone());
        }
        for rel in &self.files {
            let saved = self.copy.path().join(rel);
            let live = self.root.join(rel);
            if !same(&saved, &live) {
                if let Some(parent) = live.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| ValidationError::io("creating", parent, e))?;
                }
                if live.symlink_metadata().is_ok() {
                    std::fs::remove_file(&live)
                        .map_err(|e| ValidationError::io("removing", &live, e))?;
                }
                copy_entry(&saved, &live)?;
                changed.push(rel.clone());
            }
        }
        // Folders that appeared, deepest first; only if now empty.
        let appeared: Vec<&PathBuf> = now_dirs.difference(&self.dirs).collect();
        for rel in appeared.into_iter().rev() {
            let _ = std::fs::remove_dir(self.root.join(rel));
        }
        Ok(changed)
    }

    fn walk(&self) -> Result<(BTreeSet<PathBuf>, BTreeSet<PathBuf>)> {
        let mut files = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let dir = self.root.join(&rel);
            let entries =
                std::fs::read_dir(&dir).map_err(|e| ValidationError::io("listing", &dir, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| ValidationError::io("listing", &dir, e))?;
                let name = entry.file_name();
                let path = entry.path();
                let child = rel.join(&name);
                if self.exclude.iter().any(|x| x == &path) {
                    continue;
                }
                let ty = entry
                    .file_type()
                    .map_err(|e| ValidationError::io("reading", &path, e))?;
                if ty.is_dir() {
                    if EXCLUDED_DIRS.contains(&name.to_string_lossy().as_ref()) {
                        continue;
                    }
                    dirs.insert(child.clone());
                    stack.push(child);
                } else {
                    files.insert(child);
                }
            }
        }
        Ok((files, dirs))
    }
}

fn copy_entry(from: &Path, to: &Path) -> Result<()> {
    let meta = from
        .symlink_metadata()
        .map_err(|e| ValidationError::io("reading", from, e))?;
    if meta.file_type().is_symlink() {
        let target =
            std::fs::read_link(from).map_err(|e| ValidationError::io("reading", from, e))?;
        std::os::unix::fs::symlink(&target, to)
            .map_err(|e| ValidationError::io("creating", to, e))?;
    } else {
        std::fs::copy(from, to).map_err(|e| ValidationError::io("copying", from, e))?;
    }
    Ok(())
}

fn same(a: &Path, b: &Path) -> bool {
    match (a.symlink_metadata(), b.symlink_metadata()) {
        (Ok(ma), Ok(mb)) => {
            if ma.file_type().is_symlink() || mb.file_type().is_symlink() {
                return std::fs::read_link(a).ok() == std::fs::read_link(b).ok();
            }
            ma.len() == mb.len()
                && ma.permissions() == mb.permissions()
                && std::fs::read(a).ok() == std::fs::read(b).ok()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_undoes_edits_deletions_and_additions() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("src")).unwrap();
        std::fs::create_dir_all(r.join("node_modules/x")).unwrap();
        std::fs::write(r.join("src/a.py"), "a = 1\n").unwrap();
        std::fs::write(r.join("b.txt"), "b").unwrap();
        std::fs::write(r.join("node_modules/x/i.js"), "1").unwrap();
        let snap = Snapshot::take(r, &[]).unwrap();
        assert_eq!(snap.len(), 2);
        std::fs::write(r.join("src/a.py"), "a = 2\n").unwrap();
        std::fs::remove_file(r.join("b.txt")).unwrap();
        std::fs::create_dir_all(r.join("new/deep")).unwrap();
        std::fs::write(r.join("new/deep/c.txt"), "c").unwrap();
        std::fs::write(r.join("node_modules/x/i.js"), "2").unwrap();
        let mut changed = snap.restore().unwrap();
        changed.sort();
        assert_eq!(
            changed,
            [
                PathBuf::from("b.txt"),
                PathBuf::from("new/deep/c.txt"),
                PathBuf::from("src/a.py")
            ]
        );
        assert_eq!(
            std::fs::read_to_string(r.join("src/a.py")).unwrap(),
            "a = 1\n"
        );
        assert!(r.join("b.txt").is_file());
        assert!(!r.join("new").exists());
        // Excluded folders are left alone.
        assert_eq!(
            std::fs::read_to_string(r.join("node_modules/x/i.js")).unwrap(),
            "2"
        );
    }
}
