//! Validated identifiers: the strings that become path segments.
//!
//! Session ids, task ids and role names all end up as folder or file names
//! (`.workflow/.team/<session>/tasks/<task>.json`, `roles/<role>.md`), so each is
//! checked once, at the edge, and carried as a type afterwards. The rule is the
//! same for all three (DESIGN §2): one path segment of 1–128 bytes made of ASCII
//! letters, digits, `-`, `_` and `.`, and never `.` or `..`.
//!
//! A session *path* given where a session id is expected (the seed 001 habit of
//! passing `.workflow/.team/TC-x`) is reduced to its folder name by
//! [`SessionId::from_arg`], which also returns a warning to show the user.

use std::fmt;
use std::path::{Component, Path};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// The kind of id that failed to validate; used in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A session id (a folder under `.workflow/.team/`).
    Session,
    /// A task id (`IMPL-001`, `TESTRUN-002`, `7`).
    Task,
    /// A role name (`executor`, `developer`).
    Role,
}

impl fmt::Display for IdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdKind::Session => "session id",
            IdKind::Task => "task id",
            IdKind::Role => "role name",
        })
    }
}

/// Why an id was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdProblem {
    /// The string was empty.
    Empty,
    /// The string was longer than [`MAX_ID_LEN`] bytes.
    TooLong(usize),
    /// The string was `.` or `..`, or a path that climbs out with `..`.
    Traversal,
    /// The string contained a path separator.
    Separator,
    /// The string contained a control character (NUL, newline, …).
    Control,
    /// The string contained another character outside the allowed set.
    Character(char),
}

impl fmt::Display for IdProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdProblem::Empty => f.write_str("it is empty"),
            IdProblem::TooLong(n) => write!(f, "it is {n} bytes long (at most {MAX_ID_LEN})"),
            IdProblem::Traversal => f.write_str("it would leave its folder (`.` or `..`)"),
            IdProblem::Separator => f.write_str("it contains a path separator"),
            IdProblem::Control => f.write_str("it contains a control character"),
            IdProblem::Character(c) => write!(f, "it contains {c:?}"),
        }
    }
}

/// An id that failed validation: what was given, which kind, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid {kind} {given}: {problem}; expected 1-{MAX_ID_LEN} ASCII letters, digits, `-`, `_` or `.` (one path segment, not `.` or `..`)",
    given = shown(&self.given)
)]
pub struct IdError {
    /// Which kind of id was being parsed.
    pub kind: IdKind,
    /// The string as given (may be long; [`fmt::Display`] truncates it).
    pub given: String,
    /// Why it was refused.
    pub problem: IdProblem,
}

/// Render a possibly hostile string for a message: quoted, escaped, truncated.
pub fn shown(s: &str) -> String {
    const KEEP: usize = 60;
    if s.chars().count() <= KEEP {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(KEEP).collect();
        format!("{head:?}… ({} bytes)", s.len())
    }
}

fn check(kind: IdKind, s: &str) -> Result<(), IdError> {
    let fail = |problem| {
        Err(IdError {
            kind,
            given: s.to_owned(),
            problem,
        })
    };
    if s.is_empty() {
        return fail(IdProblem::Empty);
    }
    if s.len() > MAX_ID_LEN {
        return fail(IdProblem::TooLong(s.len()));
    }
    if s == "." || s == ".." {
        return fail(IdProblem::Traversal);
    }
    for c in s.chars() {
        if c == '/' || c == '\\' {
            return fail(IdProblem::Separator);
        }
        if c.is_control() {
            return fail(IdProblem::Control);
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
            return fail(IdProblem::Character(c));
        }
    }
    Ok(())
}

macro_rules! validated_id {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Validate `s` as this kind of id.
            pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
                let s = s.into();
                check($kind, &s)?;
                Ok(Self(s))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<Path> for $name {
            fn as_ref(&self) -> &Path {
                Path::new(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::new(s).map_err(serde::de::Error::custom)
            }
        }
    };
}

validated_id!(
    /// A session id: the name of a folder under `.workflow/.team/`.
    SessionId,
    IdKind::Session
);
validated_id!(
    /// A task id such as `IMPL-001`; also the task store's file name.
    TaskId,
    IdKind::Task
);
validated_id!(
    /// A role name such as `executor`; also `roles/<name>.md`.
    RoleName,
    IdKind::Role
);

impl SessionId {
    /// Parse a session id given on a command line or in a tool call.
    ///
    /// A plain id is validated as is. A path (`.workflow/.team/TC-x`, or any
    /// existing folder) is reduced to its last segment, and the returned
    /// warning says so; a path with a `..` segment is refused as traversal,
    /// and any other string with a separator is refused.
    pub fn from_arg(s: &str) -> Result<(SessionId, Option<String>), IdError> {
        if !s.contains(['/', '\\']) {
            return SessionId::new(s).map(|id| (id, None));
        }
        let refuse = |problem| IdError {
            kind: IdKind::Session,
            given: s.to_owned(),
            problem,
        };
        let path = Path::new(s.trim_end_matches('/'));
        if path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(refuse(IdProblem::Traversal));
        }
        let under_team = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|p| p == ".team");
        if !(under_team || path.is_dir()) {
            return Err(refuse(IdProblem::Separator));
        }
        let last = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| refuse(IdProblem::Separator))?;
        let id = SessionId::new(last)?;
        let warning = format!(
            "session path {} reduced to its folder name `{id}`",
            shown(s)
        );
        Ok((id, Some(warning)))
    }
}

impl TaskId {
    /// The prefix before the last `-` (`IMPL` for `IMPL-001`), if any.
    pub fn prefix(&self) -> Option<&str> {
        self.0.rsplit_once('-').map(|(p, _)| p)
    }

    /// The number after the last `-` (`1` for `IMPL-001`), used to order
    /// tasks "lowest-numbered first"; falls back to the whole id when numeric.
    pub fn number(&self) -> Option<u64> {
        let tail = self.0.rsplit_once('-').map_or(self.0.as_str(), |(_, n)| n);
        tail.parse().ok()
    }

    /// Whether both ids name the same task: equal, or the same prefix and
    /// number written with different zero padding (`IMPL-3` and `IMPL-003`),
    /// as plans written by hand often do.
    pub fn same_task(&self, other: &TaskId) -> bool {
        self == other
            || (self.number().is_some()
                && self.prefix() == other.prefix()
                && self.number() == other.number())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids() {
        for s in [
            "IMPL-001",
            "TC-rate-limit-api-2026-02-27",
            "7",
            "a.b_c-d",
            &"x".repeat(128),
        ] {
            TaskId::new(s).unwrap();
        }
    }

    #[test]
    fn refuses_hostile_ids() {
        let cases: &[(&str, IdProblem)] = &[
            ("", IdProblem::Empty),
            ("..", IdProblem::Traversal),
            (".", IdProblem::Traversal),
            ("../x", IdProblem::Separator),
            ("a/b", IdProblem::Separator),
            ("a\\b", IdProblem::Separator),
            ("a\0b", IdProblem::Control),
            ("a\nb", IdProblem::Control),
            ("a b", IdProblem::Character(' ')),
            ("é", IdProblem::Character('é')),
        ];
        for (s, problem) in cases {
            let err = TaskId::new(*s).unwrap_err();
            assert_eq!(&err.problem, problem, "{s:?}");
        }
        let long = "x".repeat(10 * 1024);
        let err = SessionId::new(long).unwrap_err();
        assert_eq!(err.problem, IdProblem::TooLong(10 * 1024));
        assert!(
            err.to_string().len() < 300,
            "long input is truncated in messages"
        );
    }

    #[test]
    fn error_message_says_what_is_allowed() {
        let err = TaskId::new("a/b").unwrap_err();
        insta::assert_snapshot!(err.to_string(), @r#"invalid task id "a/b": it contains a path separator; expected 1-128 ASCII letters, digits, `-`, `_` or `.` (one path segment, not `.` or `..`)"#);
    }

    #[test]
    fn session_path_is_reduced_with_a_warning() {
        let (id, warning) = SessionId::from_arg(".workflow/.team/TC-x-2026").unwrap();
        assert_eq!(id.as_str(), "TC-x-2026");
        assert!(warning.unwrap().contains("reduced"));
        let (id, warning) = SessionId::from_arg("TC-x").unwrap();
        assert_eq!(id.as_str(), "TC-x");
        assert!(warning.is_none());
    }

    #[test]
    fn session_traversal_is_refused() {
        for s in [
            "../../tmp/x",
            ".workflow/.team/../x",
            "a/b",
            "/nonexistent/for/sure/x",
        ] {
            assert!(SessionId::from_arg(s).is_err(), "{s}");
        }
        let err = SessionId::from_arg("../../tmp/x").unwrap_err();
        assert_eq!(err.problem, IdProblem::Traversal);
    }

    #[test]
    fn serde_validates() {
        let ok: TaskId = serde_json::from_str("\"IMPL-1\"").unwrap();
        assert_eq!(ok.as_str(), "IMPL-1");
        assert!(serde_json::from_str::<TaskId>("\"../x\"").is_err());
    }

    #[test]
    fn prefix_and_number() {
        let id = TaskId::new("IMPL-003").unwrap();
        assert_eq!(id.prefix(), Some("IMPL"));
        assert_eq!(id.number(), Some(3));
        assert_eq!(TaskId::new("7").unwrap().number(), Some(7));
        assert!(id.same_task(&TaskId::new("IMPL-3").unwrap()));
        assert!(!id.same_task(&TaskId::new("EXEC-3").unwrap()));
    }
}
