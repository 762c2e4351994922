//! Where a repository's work tree, common git folder and index are, asked
//! of git once per run: a wavecrew process that learned them hands them to
//! the workers it starts (as it hands the git version it checked), and a
//! worker opening the same folder takes them instead of asking git again.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable through which a process hands the repository it opened to
/// the wavecrew workers it starts: the three absolute paths of
/// [`RepoPaths`], one a line. A value that is not three absolute paths, or
/// whose work tree is not the folder a worker opens, is ignored (git is
/// asked).
pub const REPO_PATHS_ENV: &str = "WAVECREW_GIT_REPO";

/// A repository's folders, as `git rev-parse --path-format=absolute
/// --show-toplevel --git-common-dir --git-path index` prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPaths {
    /// The work tree's root.
    pub top: PathBuf,
    /// The git folder shared by all its worktrees.
    pub common_dir: PathBuf,
    /// Its index file.
    pub index: PathBuf,
}

/// The first repository this process opened (what it hands on).
static OPENED: OnceLock<RepoPaths> = OnceLock::new();

impl RepoPaths {
    /// Record that this process opened `self` (the first one counts).
    pub fn remember(&self) {
        let _ = OPENED.set(self.clone());
    }

    /// The repository the process that started this one handed over, when
    /// its work tree is `dir` (the same folder, symlinks resolved) and its
    /// git folder is there.
    pub fn inherited(dir: &Path) -> Option<RepoPaths> {
        RepoPaths::handed(&std::env::var(REPO_PATHS_ENV).ok()?, dir)
    }

    /// What `value` (of [`REPO_PATHS_ENV`]) says, when it names the
    /// repository whose work tree is `dir`.
    fn handed(value: &str, dir: &Path) -> Option<RepoPaths> {
        let paths = RepoPaths::parse(value)?;
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        (same(dir, &paths.top) && paths.common_dir.is_dir()).then_some(paths)
    }

    fn parse(value: &str) -> Option<RepoPaths> {
        let [top, common_dir, index] = value.split('\n').collect::<Vec<_>>()[..] else {
            return None;
        };
        let [top, common_dir, index] = [top, common_dir, index].map(PathBuf::from);
        [&top, &common_dir, &index]
            .iter()
            .all(|p| p.is_absolute())
            .then_some(RepoPaths {
                top,
                common_dir,
                index,
            })
    }

    fn to_env(&self) -> Option<String> {
        let parts = [&self.top, &self.common_dir, &self.index].map(|p| p.to_str());
        // A path that is not UTF-8 or holds a line break is not handed on.
        match parts {
            [Some(t), Some(c), Some(i)] if !format!("{t}{c}{i}").contains('\n') => {
                Some(format!("{t}\n{c}\n{i}"))
            }
            _ => None,
        }
    }
}

/// `(REPO_PATHS_ENV, value)` once this process has opened a repository:
/// for the environment of a worker it starts.
pub fn opened_repo_env() -> Option<(&'static str, String)> {
    Some((REPO_PATHS_ENV, OPENED.get()?.to_env()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_absolute_paths_or_nothing() {
        let paths = RepoPaths::parse("/p\n/p/.git\n/p/.git/index").unwrap();
        assert_eq!(paths.top, Path::new("/p"));
        assert_eq!(
            paths.to_env().as_deref(),
            Some("/p\n/p/.git\n/p/.git/index")
        );
        for bad in [
            "",
            "/p\n/p/.git",
            "p\n/p/.git\n/p/.git/index",
            "/a\n/b\n/c\n/d",
        ] {
            assert_eq!(RepoPaths::parse(bad), None, "{bad:?}");
        }
    }

    /// A worker takes what it was handed only for the folder it names
    /// (reached by any path), and only while its git folder is there.
    #[test]
    fn taken_only_for_the_same_work_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap().join("project");
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(top.join("sub")).unwrap();
        std::os::unix::fs::symlink(&top, tmp.path().join("link")).unwrap();
        let paths = RepoPaths {
            top: top.clone(),
            common_dir: top.join(".git"),
            index: top.join(".git/index"),
        };
        let value = paths.to_env().unwrap();
        assert_eq!(RepoPaths::handed(&value, &top), Some(paths.clone()));
        assert_eq!(
            RepoPaths::handed(&value, &tmp.path().join("link")),
            Some(paths)
        );
        assert_eq!(RepoPaths::handed(&value, &top.join("sub")), None);
        assert_eq!(RepoPaths::handed(&value, tmp.path()), None);
        std::fs::remove_dir(top.join(".git")).unwrap();
        assert_eq!(RepoPaths::handed(&value, &top), None);
    }
}
