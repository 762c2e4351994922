//! The user's repository: where its work tree and its git common dir are,
//! the git version check, and the small git queries the rest of the crate
//! shares (resolving refs, ancestry, compare-and-swap ref updates, the
//! commit identity).
//!
//! A [`Repo`] is either the user's own repository ([`Repo::open`]) or a
//! shadow repository kept in a session's state folder for a project folder
//! without git ([`Repo::shadow`], in `shadow.rs`). Every git call of the
//! crate goes through [`Repo::git`], which names the shadow's git dir and
//! work tree explicitly (`--git-dir`, `--work-tree`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{IsolationError, Result};
use crate::git::{self, Git, git};
use wavecrew_sys::git::{GitError, RepoPaths};

/// The name used for commits when the repository has no `user.name`.
pub const FALLBACK_NAME: &str = "wavecrew";
/// The e-mail used for commits when the repository has no `user.email`.
pub const FALLBACK_EMAIL: &str = "wavecrew@localhost";

/// A git repository with a work tree: the user's project, or the shadow
/// repository of a project folder that has no git (see [`Repo::shadow`]).
#[derive(Debug, Clone)]
pub struct Repo {
    /// Where `git -C` runs: the work-tree top, or a shadow's git dir.
    pub(crate) top: PathBuf,
    /// The project's folder.
    pub(crate) work_tree: PathBuf,
    pub(crate) common_dir: PathBuf,
    pub(crate) index: PathBuf,
    /// For a shadow repository: the project-relative paths its snapshots
    /// always leave out (its state folder when it is inside the project).
    pub(crate) shadow: Option<Vec<String>>,
    pub(crate) identity: OnceLock<Vec<String>>,
}

impl Repo {
    /// The repository holding `path`; Ok(None) when it is not in a git work
    /// tree (no repository, or inside a `.git` folder or a bare repository).
    pub fn open(path: &Path) -> Result<Option<Repo>> {
        if !path.is_dir() {
            return Err(IsolationError::io(
                "opening",
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "not a folder"),
            ));
        }
        // The wavecrew process that started this one opened it already.
        if let Some(known) = RepoPaths::inherited(path) {
            return Ok(Some(Repo::of_paths(known)));
        }
        // One process in a work tree (the common case); the two steps
        // below tell the other cases apart.
        let at_once = git(path)
            .args([
                "rev-parse",
                "--is-inside-work-tree",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-common-dir",
                "--git-path",
                "index",
            ])
            .text();
        if let Ok(text) = at_once
            && let ["true", top, common, index] = text.lines().collect::<Vec<_>>().as_slice()
        {
            return Ok(Some(Repo::of_work_tree(top, common, index)));
        }
        let probe = git(path).args(["rev-parse", "--is-inside-work-tree"]);
        let (line, out) = probe.output()?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("not a git repository") {
                return Ok(None);
            }
            return Err(git::failed(line, &out));
        }
        if String::from_utf8_lossy(&out.stdout).trim() != "true" {
            return Ok(None);
        }
        let cmd = git(path).args([
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
            "--git-path",
            "index",
        ]);
        let line = cmd.line();
        let text = cmd.text()?;
        let lines: Vec<&str> = text.lines().collect();
        let [top, common, index] = lines.as_slice() else {
            return Err(IsolationError::Git(GitError::Unexpected {
                command: line,
                output: text.clone(),
                expected: "three absolute paths (top, common dir, index)",
            }));
        };
        Ok(Some(Repo::of_work_tree(top, common, index)))
    }

    /// The repository of the work tree at `top`, with its common git
    /// folder and index (absolute paths, as git printed them), remembered
    /// for the workers this process starts.
    fn of_work_tree(top: &str, common: &str, index: &str) -> Repo {
        let paths = RepoPaths {
            top: PathBuf::from(top),
            common_dir: PathBuf::from(common),
            index: PathBuf::from(index),
        };
        paths.remember();
        Repo::of_paths(paths)
    }

    fn of_paths(paths: RepoPaths) -> Repo {
        Repo {
            work_tree: paths.top.clone(),
            top: paths.top,
            common_dir: paths.common_dir,
            index: paths.index,
            shadow: None,
            identity: OnceLock::new(),
        }
    }

    /// git ≥ 2.38 (for `merge-tree --write-tree`), else an error naming the
    /// version found. Checked once per process.
    pub fn check_git_version() -> Result<(u32, u32, u32)> {
        git::check_version()
    }

    /// The folder git runs in for this repository: the top of the user's
    /// work tree; for a shadow repository, its git dir (a bare repository:
    /// commands there see its objects and refs, but no work tree). The
    /// project's folder is [`Repo::work_tree`].
    pub fn top(&self) -> &Path {
        &self.top
    }

    /// The project's folder: the top of the user's work tree, or the folder
    /// a shadow repository tracks.
    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// The git common dir (`.git` of the main work tree; a shadow
    /// repository's own folder, `<state_dir>/shadow.git`).
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// Whether this is a shadow repository (the project folder has no git).
    pub fn is_shadow(&self) -> bool {
        self.shadow.is_some()
    }

    /// The project-relative paths a shadow repository's snapshots always
    /// leave out; empty for the user's own repository.
    pub(crate) fn shadow_exclude(&self) -> &[String] {
        self.shadow.as_deref().unwrap_or_default()
    }

    /// A git command on this repository, run at the top of its work tree;
    /// for a shadow repository with `--git-dir` and `--work-tree` named.
    pub(crate) fn git(&self) -> Git {
        if self.shadow.is_some() {
            git(&self.work_tree)
                .arg(flag("--git-dir=", &self.common_dir))
                .arg(flag("--work-tree=", &self.work_tree))
        } else {
            git(&self.top)
        }
    }

    /// The user's index file (never written by this crate).
    pub(crate) fn index_file(&self) -> &Path {
        &self.index
    }

    /// The commit `HEAD` names; `None` in a repository without a commit
    /// yet (`git init`, files added, nothing committed).
    pub fn head_commit(&self) -> Result<Option<String>> {
        self.resolve("HEAD")
    }

    /// The commit id `rev` names (peeled to a commit), or None.
    pub(crate) fn resolve(&self, rev: &str) -> Result<Option<String>> {
        let spec = format!("{rev}^{{commit}}");
        let cmd = self.git().args([
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ]);
        let (line, out) = cmd.output()?;
        match out.status.code() {
            Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())),
            Some(1) => Ok(None),
            _ => Err(git::failed(line, &out)),
        }
    }

    /// Like [`Repo::resolve`], but a missing rev is an error.
    pub(crate) fn must_resolve(&self, rev: &str) -> Result<String> {
        let spec = format!("{rev}^{{commit}}");
        Ok(self
            .git()
            .args(["rev-parse", "--verify", "--end-of-options", &spec])
            .text()?)
    }

    /// The tree of commit `commit`.
    pub(crate) fn tree_of(&self, commit: &str) -> Result<String> {
        let spec = format!("{commit}^{{tree}}");
        Ok(self
            .git()
            .args(["rev-parse", "--verify", "--end-of-options", &spec])
            .text()?)
    }

    /// The commit `rev` names and that commit's tree, read by one git
    /// process; a missing rev is an error.
    pub(crate) fn commit_and_tree(&self, rev: &str) -> Result<(String, String)> {
        let (commit, tree) = (format!("{rev}^{{commit}}"), format!("{rev}^{{tree}}"));
        let cmd = self.git().args([
            "rev-parse",
            "--revs-only",
            "--end-of-options",
            &commit,
            &tree,
        ]);
        let line = cmd.line();
        let text = cmd.text()?;
        // `--revs-only` drops what does not resolve: both or it is missing.
        match text.split('\n').collect::<Vec<_>>()[..] {
            [c, t] if is_object_id(c) && is_object_id(t) => Ok((c.to_owned(), t.to_owned())),
            _ => Err(IsolationError::Git(GitError::Unexpected {
                command: line,
                output: text,
                expected: "a commit id and a tree id, one a line",
            })),
        }
    }

    /// Whether `a` is an ancestor of (or equal to) `b`.
    pub(crate) fn is_ancestor(&self, a: &str, b: &str) -> Result<bool> {
        Ok(self
            .git()
            .args(["merge-base", "--is-ancestor", a, b])
            .test()?)
    }

    /// Compare-and-swap `reference` from `old` (empty: must not exist) to
    /// `new`. Ok(false) when another writer moved the ref first.
    pub(crate) fn update_ref(
        &self,
        reference: &str,
        new: &str,
        old: &str,
        reason: &str,
    ) -> Result<bool> {
        let cmd = self
            .git()
            .args(["update-ref", "-m", reason, reference, new, old]);
        let (line, out) = cmd.output()?;
        if out.status.success() {
            return Ok(true);
        }
        // A lost race leaves the ref at a value other than `old`.
        let now = self.resolve(reference)?;
        let lost = match now {
            None => !old.is_empty(),
            Some(now) => now != old,
        };
        if lost {
            Ok(false)
        } else {
            Err(git::failed(line, &out))
        }
    }

    /// `-c user.name=… -c user.email=…` for what the repository does not
    /// configure; empty when both are set.
    pub(crate) fn identity_args(&self) -> &[String] {
        self.identity.get_or_init(|| {
            let mut args = Vec::new();
            for (key, fallback) in [("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)] {
                let set = self
                    .git()
                    .args(["config", "--get", key])
                    .text()
                    .is_ok_and(|v| !v.is_empty());
                if !set {
                    args.push("-c".to_owned());
                    args.push(format!("{key}={fallback}"));
                }
            }
            args
        })
    }

    /// Make a commit of `tree` with `parents` and `message`, without hooks,
    /// signing or touching any ref; returns its id.
    pub(crate) fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String> {
        let mut cmd =
            self.git()
                .args(self.identity_args())
                .args(["commit-tree", "--no-gpg-sign", "-F", "-"]);
        for p in parents {
            cmd = cmd.args(["-p", p]);
        }
        Ok(cmd.arg(tree).stdin(message.as_bytes().to_vec()).text()?)
    }
}

/// `--name=<path>` as one argument.
fn flag(name: &str, path: &Path) -> OsString {
    let mut s = OsString::from(name);
    s.push(path);
    s
}

/// Whether `s` is a full object name (SHA-1 or SHA-256, lowercase hex).
fn is_object_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_in(dir: &Path, args: &[&str]) {
        wavecrew_sys::git::git(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .run()
            .unwrap();
    }

    #[test]
    fn commit_and_tree_reads_both_or_fails() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git_in(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("f"), "x\n").unwrap();
        git_in(dir, &["add", "f"]);
        git_in(dir, &["commit", "-qm", "one"]);
        let repo = Repo::open(dir).unwrap().unwrap();
        let (commit, tree) = repo.commit_and_tree("refs/heads/main").unwrap();
        assert_eq!(commit, repo.must_resolve("refs/heads/main").unwrap());
        assert_eq!(tree, repo.tree_of(&commit).unwrap());
        // A missing ref prints nothing under --revs-only: an error, named.
        let err = repo.commit_and_tree("refs/heads/gone").unwrap_err();
        assert!(
            err.to_string()
                .contains("expected a commit id and a tree id"),
            "{err}"
        );
        // A file named like the rev is not taken for it.
        std::fs::write(dir.join("gone"), "").unwrap();
        assert!(repo.commit_and_tree("gone").is_err());
    }
}
