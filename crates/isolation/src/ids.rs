//! Checks on the strings that become ref names and path segments: session
//! ids, task ids, worktree names; the project-relative paths of `exclude`
//! and `copy` go through the ground floor's `ProjectPath`.
//!
//! An id is one segment of 1–128 ASCII letters, digits, `-`, `_` and `.`
//! (the rule of `wavecrew_core::id`), tightened by `git check-ref-format`:
//! not starting with `-` or `.`, no `..`, not ending with `.` or `.lock`.
//! The character set already leaves out spaces, `/`, `\`, control
//! characters and `~^:?*[@{`.

use crate::error::{IsolationError, Result};

/// The longest id accepted, in bytes.
const MAX_ID_LEN: usize = 128;

/// Check `s` as a `kind` that becomes part of a ref name and a path.
pub(crate) fn check_id(kind: &'static str, s: &str) -> Result<()> {
    let problem = id_problem(s);
    match problem {
        None => Ok(()),
        Some(problem) => Err(IsolationError::InvalidId {
            kind,
            given: shown(s),
            problem,
        }),
    }
}

fn id_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("it is empty".into());
    }
    if s.len() > MAX_ID_LEN {
        return Some(format!("it is {} bytes long", s.len()));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Some(format!("it contains {c:?}"));
    }
    if s.starts_with('-') {
        return Some("it starts with `-`".into());
    }
    if s.starts_with('.') {
        return Some("it starts with `.`".into());
    }
    if s.contains("..") {
        return Some("it contains `..`".into());
    }
    if s.ends_with('.') {
        return Some("it ends with `.`".into());
    }
    if s.to_ascii_lowercase().ends_with(".lock") {
        return Some("it ends with `.lock`".into());
    }
    None
}

/// A possibly hostile string, truncated for a message.
fn shown(s: &str) -> String {
    wavecrew_sys::path::shown(s)
}

/// Check a project-relative path from the `what` list (`exclude`, `copy`)
/// with the one rule of [`wavecrew_sys::path::ProjectPath`]; returns it
/// normalised (`./a//b` → `a/b`).
pub(crate) fn check_rel_path(what: &'static str, s: &str) -> Result<String> {
    wavecrew_sys::path::ProjectPath::parse(s)
        .map(|p| p.as_str().to_owned())
        .map_err(|e| IsolationError::InvalidPath {
            what,
            given: e.given,
            problem: e.problem,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for ok in ["IMPL-001", "TC-x_2026.1", "7", "a.b"] {
            check_id("task id", ok).unwrap();
        }
        for bad in [
            "", "..", ".", "a..b", "-x", ".x", "x.", "x.lock", "a b", "a/b", "a\\b", "a~1", "a^",
            "a:b", "a?", "a*", "a[", "a@{1}", "é", "a\nb",
        ] {
            assert!(check_id("task id", bad).is_err(), "{bad:?}");
        }
        assert!(check_id("task id", &"x".repeat(129)).is_err());
        let msg = check_id("session id", "a..b").unwrap_err().to_string();
        assert!(
            msg.starts_with("invalid session id \"a..b\": it contains `..`"),
            "{msg}"
        );
    }

    #[test]
    fn rel_paths() {
        for ok in [".workflow", ".env", "config/local.toml"] {
            assert_eq!(check_rel_path("copy", ok).unwrap(), ok);
        }
        assert_eq!(check_rel_path("copy", "./a//b/").unwrap(), "a/b");
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            ".",
            ".git/config",
            "a\0b",
        ] {
            assert!(check_rel_path("copy", bad).is_err(), "{bad:?}");
        }
    }
}
