//! What `git status --porcelain=v2 -z --branch` says of a work tree, read
//! in one walk of it: the commit HEAD names, the branch it is on, and every
//! path with a change (staged or not) or untracked. The snapshots of what
//! an agent changed, a task's changed files and the check before its
//! commit all read it through here.

use std::path::{Path, PathBuf};

use super::{GitError, git, split_nul};

/// One changed or untracked path of a [`TreeStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// git's two status letters (`.M`, `A.`, `D.`, `UU`), `??` for an
    /// untracked file.
    pub xy: String,
    /// The path, relative to the work tree's root.
    pub path: String,
}

/// A work tree's status at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStatus {
    /// The work tree's root, where git was asked.
    pub top: PathBuf,
    /// The commit HEAD names (`# branch.oid`); `None` on a branch with no
    /// commit yet.
    pub head: Option<String>,
    /// The branch HEAD is on, as a full ref (`refs/heads/<name>`); `None`
    /// when HEAD is detached.
    pub branch: Option<String>,
    /// Every changed, deleted, unmerged or untracked path (both sides of a
    /// rename or copy), in git's order.
    pub entries: Vec<StatusEntry>,
}

/// The arguments of the one `git status` a [`TreeStatus`] is read with
/// (untracked files one by one, no rename detection).
const ARGS: &[&str] = &[
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--untracked-files=all",
    "--no-renames",
];

impl TreeStatus {
    /// Ask git for the status of the work tree whose root is `top`.
    pub fn read(top: &Path) -> Result<TreeStatus, GitError> {
        let out = git(top).args(ARGS).run()?;
        Ok(TreeStatus::parse(top, &out))
    }

    /// [`TreeStatus::read`] of the work tree `wt`, git pinned to the
    /// folders recorded for it ([`super::git_pinned`]).
    pub fn read_pinned(wt: &super::WorkTreeGit) -> Result<TreeStatus, GitError> {
        let out = super::git_pinned(wt).args(ARGS).run()?;
        Ok(TreeStatus::parse(&wt.top, &out))
    }

    /// Parse what `git status --porcelain=v2 -z --branch` printed in `top`.
    pub fn parse(top: &Path, bytes: &[u8]) -> TreeStatus {
        let mut parsed = TreeStatus {
            top: top.to_owned(),
            ..TreeStatus::default()
        };
        let mut records = split_nul(bytes).into_iter();
        while let Some(record) = records.next() {
            // Fields before the path: `1` has 8, `2` has 9 (its source path
            // is the next record), `u` has 10, `?` has 1.
            let (fields, renamed) = match record.as_bytes().first() {
                Some(b'#') => {
                    if let Some(oid) = record.strip_prefix("# branch.oid ") {
                        parsed.head = (oid != "(initial)").then(|| oid.to_owned());
                    } else if let Some(name) = record.strip_prefix("# branch.head ") {
                        parsed.branch =
                            (name != "(detached)").then(|| format!("refs/heads/{name}"));
                    }
                    continue;
                }
                Some(b'1') => (8, false),
                Some(b'2') => (9, true),
                Some(b'u') => (10, false),
                Some(b'?') => (1, false),
                _ => continue,
            };
            let xy = if fields == 1 {
                "??".to_owned()
            } else {
                record.split(' ').nth(1).unwrap_or_default().to_owned()
            };
            if let Some(path) = record.splitn(fields + 1, ' ').nth(fields) {
                parsed.entries.push(StatusEntry {
                    xy: xy.clone(),
                    path: path.to_owned(),
                });
            }
            if renamed && let Some(from) = records.next() {
                parsed.entries.push(StatusEntry { xy, path: from });
            }
        }
        parsed
    }

    /// Whether nothing is changed or untracked (ignored files aside).
    pub fn is_clean(&self) -> bool {
        self.entries.is_empty()
    }

    /// The changed and untracked paths.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.path.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_head_branch_and_every_changed_path() {
        let raw = "# branch.oid 1111111111111111111111111111111111111111\0\
                   # branch.head wavecrew-tasks/S/IMPL-001/1\0\
                   1 .M N... 100644 100644 100644 aaa aaa src/a file.rs\0\
                   1 D. N... 100644 000000 000000 aaa 000 gone.rs\0\
                   2 R. N... 100644 100644 100644 aaa aaa R100 new.rs\0old.rs\0\
                   u UU N... 100644 100644 100644 100644 a b c both.rs\0\
                   ? new dir/x.txt\0";
        let status = TreeStatus::parse(Path::new("/w"), raw.as_bytes());
        assert_eq!(
            status.head.as_deref(),
            Some("1111111111111111111111111111111111111111")
        );
        assert_eq!(
            status.branch.as_deref(),
            Some("refs/heads/wavecrew-tasks/S/IMPL-001/1")
        );
        let listed: Vec<(&str, &str)> = status
            .entries
            .iter()
            .map(|e| (e.xy.as_str(), e.path.as_str()))
            .collect();
        assert_eq!(
            listed,
            vec![
                (".M", "src/a file.rs"),
                ("D.", "gone.rs"),
                ("R.", "new.rs"),
                ("R.", "old.rs"),
                ("UU", "both.rs"),
                ("??", "new dir/x.txt"),
            ]
        );
        assert!(!status.is_clean());
    }

    #[test]
    fn a_detached_head_and_a_branch_without_commit() {
        let detached = TreeStatus::parse(
            Path::new("/w"),
            b"# branch.oid 2222222222222222222222222222222222222222\0# branch.head (detached)\0",
        );
        assert_eq!(detached.branch, None);
        assert!(detached.is_clean());
        let unborn = TreeStatus::parse(
            Path::new("/w"),
            b"# branch.oid (initial)\0# branch.head main\0? a\0",
        );
        assert_eq!(unborn.head, None);
        assert_eq!(unborn.branch.as_deref(), Some("refs/heads/main"));
        assert_eq!(unborn.paths().collect::<Vec<_>>(), vec!["a"]);
    }

    #[test]
    fn reads_a_real_work_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let run = |args: &[&str]| {
            git(d)
                .identity("t", "t@e")
                .args(args)
                .run()
                .unwrap_or_else(|e| panic!("{e}"));
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(d.join("a.txt"), "a").unwrap();
        run(&["add", "."]);
        run(&["commit", "-qm", "init"]);
        let clean = TreeStatus::read(d).unwrap();
        assert!(clean.is_clean());
        assert_eq!(clean.branch.as_deref(), Some("refs/heads/main"));
        assert_eq!(clean.head.as_ref().map(String::len), Some(40));
        std::fs::write(d.join("a.txt"), "changed").unwrap();
        std::fs::write(d.join("b c.txt"), "new").unwrap();
        let dirty = TreeStatus::read(d).unwrap();
        assert_eq!(dirty.paths().collect::<Vec<_>>(), vec!["a.txt", "b c.txt"]);
    }
}
