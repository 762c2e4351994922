//! The names the engine puts on the server, and their validation.
//!
//! Every stream and bucket carries the session id (`wavecrew_<session>_tasks`),
//! so two sessions on one server never share state. A session id and a role
//! are single subject tokens and parts of stream and consumer names, so both
//! are limited to `[A-Za-z0-9_-]+`; a task id is a KV key (no leading or
//! trailing `.`, no `..`); an object name is one path segment.

use wavecrew_core::TaskId;

use crate::error::{EngineError, Result};

/// The longest session id or role accepted, in bytes (stream names are
/// limited to 255 bytes by the server; this leaves room for the affixes).
pub const MAX_TOKEN_LEN: usize = 128;

const TOKEN_EXPECTED: &str = "1-128 ASCII letters, digits, `_` or `-`";

/// Check that `value` is a token: `[A-Za-z0-9_-]{1,128}`.
fn token(kind: &'static str, value: &str) -> Result<()> {
    let ok = !value.is_empty()
        && value.len() <= MAX_TOKEN_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(EngineError::InvalidName {
            kind,
            value: value.to_owned(),
            expected: TOKEN_EXPECTED,
        })
    }
}

/// A validated session id: the namespace of every stream and bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionName(String);

impl SessionName {
    /// Validate a session id (`[A-Za-z0-9_-]+`, at most 128 bytes).
    pub fn new(value: &str) -> Result<SessionName> {
        token("session id", value)?;
        Ok(SessionName(value.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The task bucket: `wavecrew_<session>_tasks`.
    pub fn tasks_bucket(&self) -> String {
        format!("wavecrew_{}_tasks", self.0)
    }

    /// The ticket stream: `wavecrew_<session>_tickets`.
    pub fn tickets_stream(&self) -> String {
        format!("wavecrew_{}_tickets", self.0)
    }

    /// The subject of a role's tickets: `wavecrew.<session>.ticket.<role>`.
    pub fn ticket_subject(&self, role: &str) -> String {
        format!("wavecrew.{}.ticket.{role}", self.0)
    }

    /// The bus stream: `wavecrew_<session>_bus`.
    pub fn bus_stream(&self) -> String {
        format!("wavecrew_{}_bus", self.0)
    }

    /// The bus subject: `wavecrew.<session>.bus`.
    pub fn bus_subject(&self) -> String {
        format!("wavecrew.{}.bus", self.0)
    }

    /// The session's own records (the integration tip): `wavecrew_<session>_meta`.
    pub fn meta_bucket(&self) -> String {
        format!("wavecrew_{}_meta", self.0)
    }

    /// The object store bucket: `wavecrew_<session>_objects`.
    pub fn objects_bucket(&self) -> String {
        format!("wavecrew_{}_objects", self.0)
    }
}

impl std::fmt::Display for SessionName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Check a role name used as a subject token and a consumer name.
pub fn check_role(role: &str) -> Result<()> {
    token("role", role)
}

/// Check that a task id is a valid KV key (a [`TaskId`] may hold `.`, but
/// a key may not start or end with one, nor hold `..`).
pub fn check_task_key(id: &TaskId) -> Result<()> {
    let s = id.as_str();
    if s.starts_with('.') || s.ends_with('.') || s.contains("..") {
        return Err(EngineError::InvalidName {
            kind: "task id (as a NATS key)",
            value: s.to_owned(),
            expected: "a task id that neither starts nor ends with `.` and holds no `..`",
        });
    }
    Ok(())
}

/// Check an object name: 1-255 bytes of ASCII letters, digits, `-`, `_`, `.`,
/// not `.` or `..`.
pub fn check_object_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(EngineError::InvalidName {
            kind: "object name",
            value: name.to_owned(),
            expected: "1-255 ASCII letters, digits, `_`, `-` or `.` (not `.` or `..`)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_and_role_are_single_tokens() {
        assert!(SessionName::new("TC-demo_1").is_ok());
        for bad in ["", "a.b", "a b", "a*", "a>", "é", &"x".repeat(129)] {
            let err = SessionName::new(bad).unwrap_err().to_string();
            assert!(err.contains("invalid session id"), "{err}");
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(check_role(bad).is_err());
        }
        let s = SessionName::new("S1").unwrap();
        assert_eq!(s.tasks_bucket(), "wavecrew_S1_tasks");
        assert_eq!(s.ticket_subject("executor"), "wavecrew.S1.ticket.executor");
        assert_eq!(s.bus_subject(), "wavecrew.S1.bus");
    }

    #[test]
    fn task_keys_and_object_names() {
        assert!(check_task_key(&TaskId::new("IMPL-1").unwrap()).is_ok());
        assert!(check_task_key(&TaskId::new("a.b").unwrap()).is_ok());
        for bad in ["a.", ".a", "a..b"] {
            let err = check_task_key(&TaskId::new(bad).unwrap()).unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
        }
        assert!(check_object_name("base.bundle").is_ok());
        for bad in ["", ".", "..", "a/b", "a b"] {
            assert!(check_object_name(bad).is_err(), "{bad}");
        }
    }
}
