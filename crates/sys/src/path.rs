//! Paths inside a project, checked once for everyone.
//!
//! A [`ProjectPath`] is relative, inside the project, and not inside
//! `.git`: no `..`, not absolute, no control characters, normalised
//! (`./a//b/` → `a/b`). [`working_dir`] resolves a task's `working_dir`
//! the same way for the run and for `wavecrew check`: the project root
//! when none is given (or `.`), else the checked path, refused when it
//! leaves the project lexically or through a link.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// A path refused by [`ProjectPath::parse`] or [`working_dir`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{given:?}: {problem}; expected a relative path inside the project, without `..`")]
pub struct PathProblem {
    /// The path as given (shortened for a message when long).
    pub given: String,
    /// Why it was refused.
    pub problem: &'static str,
}

/// A relative path inside the project: checked, normalised, `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProjectPath(String);

impl ProjectPath {
    /// Check `s` and normalise it.
    pub fn parse(s: &str) -> Result<ProjectPath, PathProblem> {
        let fail = |problem| {
            Err(PathProblem {
                given: shown(s),
                problem,
            })
        };
        if s.is_empty() {
            return fail("it is empty");
        }
        if s.chars().any(char::is_control) {
            return fail("it contains a control character");
        }
        let mut normal = Vec::new();
        for c in Path::new(s).components() {
            match c {
                Component::Normal(seg) if seg == ".git" => return fail("it is inside `.git`"),
                Component::Normal(seg) => normal.push(seg.to_string_lossy()),
                Component::CurDir => {}
                Component::ParentDir => return fail("it contains `..`"),
                Component::RootDir | Component::Prefix(_) => return fail("it is absolute"),
            }
        }
        if normal.is_empty() {
            return fail("it names the project itself");
        }
        Ok(ProjectPath(normal.join("/")))
    }

    /// The normalised path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path under `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        root.join(&self.0)
    }
}

impl fmt::Display for ProjectPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The folder a task works in: `given` (its `working_dir`) inside `root`,
/// or `root` itself when none is given, it is empty or `.`. A path that
/// leaves the project (`..`, absolute, or a link that points out) is
/// refused; a folder that does not exist yet is returned as it would be.
pub fn working_dir(root: &Path, given: Option<&str>) -> Result<PathBuf, PathProblem> {
    let Some(given) = given.filter(|g| !g.is_empty()) else {
        return Ok(root.to_owned());
    };
    let rel = match ProjectPath::parse(given) {
        Ok(rel) => rel,
        Err(e) if e.problem == "it names the project itself" => return Ok(root.to_owned()),
        Err(e) => return Err(e),
    };
    let dir = rel.under(root);
    if let (Ok(real), Ok(real_root)) = (dir.canonicalize(), root.canonicalize())
        && !real.starts_with(&real_root)
    {
        return Err(PathProblem {
            given: shown(given),
            problem: "it leads out of the project through a link",
        });
    }
    Ok(dir)
}

/// A possibly hostile string, shortened for a message.
pub fn shown(s: &str) -> String {
    const KEEP: usize = 60;
    if s.chars().count() <= KEEP {
        s.to_owned()
    } else {
        let head: String = s.chars().take(KEEP).collect();
        format!("{head}… ({} bytes)", s.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_paths() {
        for ok in [".workflow", ".env", "config/local.toml"] {
            assert_eq!(ProjectPath::parse(ok).unwrap().as_str(), ok);
        }
        assert_eq!(ProjectPath::parse("./a//b/").unwrap().as_str(), "a/b");
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            ".",
            ".git/config",
            "a\0b",
        ] {
            assert!(ProjectPath::parse(bad).is_err(), "{bad:?}");
        }
        let e = ProjectPath::parse("a/../b").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"a/../b\": it contains `..`; expected a relative path inside the project, without `..`"
        );
    }

    #[test]
    fn working_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        assert_eq!(working_dir(root, None).unwrap(), root);
        assert_eq!(working_dir(root, Some("")).unwrap(), root);
        assert_eq!(working_dir(root, Some(".")).unwrap(), root);
        assert_eq!(working_dir(root, Some("./sub")).unwrap(), root.join("sub"));
        assert_eq!(working_dir(root, Some("new")).unwrap(), root.join("new"));
        assert!(working_dir(root, Some("..")).is_err());
        assert!(working_dir(root, Some("/tmp")).is_err());
        std::os::unix::fs::symlink("/", root.join("out")).unwrap();
        let e = working_dir(root, Some("out")).unwrap_err();
        assert_eq!(e.problem, "it leads out of the project through a link");
    }
}
