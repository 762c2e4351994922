//! Where a session's bus lives, and how a key given by a user becomes one.
//!
//! `<root>/.workflow/.team/<session-id>/.msg/{messages.jsonl, meta.json, lock}`.
//! The key is validated as a [`SessionId`]: traversal is refused, a session
//! path is reduced to its folder name (with a warning), and, for operations
//! that only read, a key that names no session folder is refused with the
//! folders that exist (the team-name-for-session-id mistake of ccw-compat §3.2).

use std::path::{Path, PathBuf};

use wavecrew_core::SessionId;

use crate::error::{BusError, Result};

/// The files of one session's bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusPaths {
    /// The project root (holds `.workflow/`).
    pub root: PathBuf,
    /// The session id.
    pub session: SessionId,
}

impl BusPaths {
    /// The bus of `session` under `root`.
    pub fn new(root: impl Into<PathBuf>, session: SessionId) -> Self {
        BusPaths {
            root: root.into(),
            session,
        }
    }

    /// `<root>/.workflow/.team`.
    pub fn team_dir(&self) -> PathBuf {
        self.root.join(".workflow").join(".team")
    }

    /// The session folder.
    pub fn session_dir(&self) -> PathBuf {
        self.team_dir().join(self.session.as_str())
    }

    /// `<session>/.msg`.
    pub fn msg_dir(&self) -> PathBuf {
        wavecrew_core::SessionLayout::new(self.session_dir()).msg()
    }

    /// `<session_dir>/.msg/messages.jsonl`, for a session folder known by
    /// its path alone.
    pub fn log_in(session_dir: &Path) -> PathBuf {
        wavecrew_core::SessionLayout::new(session_dir)
            .msg()
            .join("messages.jsonl")
    }

    /// `<session>/.msg/messages.jsonl`.
    pub fn log(&self) -> PathBuf {
        self.msg_dir().join("messages.jsonl")
    }

    /// `<session>/.msg/meta.json`.
    pub fn meta(&self) -> PathBuf {
        self.msg_dir().join("meta.json")
    }

    /// `<session>/.msg/lock`: the writers' lock; it also keeps the highest
    /// id ever issued, so ids are never reused after a `delete`.
    pub fn lock(&self) -> PathBuf {
        self.msg_dir().join("lock")
    }

    /// `<session>/.msg/summary.json`: a cache of counts for `list` and
    /// `status`, rebuilt from the log whenever it is stale.
    pub fn summary(&self) -> PathBuf {
        self.msg_dir().join("summary.json")
    }
}

/// How strictly a key must name an existing session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// Writing may create a new session's bus.
    Write,
    /// Reading needs an existing session folder.
    Read,
}

/// Resolve a user's key to a bus: validate it, reduce a path to its folder
/// name (the warning is returned), and for reads require the folder to exist.
pub(crate) fn resolve(root: &Path, key: &str, usage: KeyUse) -> Result<(BusPaths, Option<String>)> {
    let (session, warning) = SessionId::from_arg(key)?;
    let paths = BusPaths::new(root, session);
    if usage == KeyUse::Read && !paths.session_dir().is_dir() {
        return Err(BusError::UnknownSession {
            key: key.to_owned(),
            root: paths.team_dir(),
            existing: existing_sessions(&paths.team_dir()),
        });
    }
    Ok((paths, warning))
}

/// The session folders under `.workflow/.team/`, sorted.
pub fn existing_sessions(team_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(team_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| SessionId::new(n.as_str()).is_ok() && !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_an_existing_session() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".workflow/.team/TC-a-2026")).unwrap();
        let err = resolve(tmp.path(), "planex", KeyUse::Read)
            .unwrap_err()
            .to_string();
        assert!(err.contains("existing sessions: TC-a-2026"), "{err}");
        assert!(resolve(tmp.path(), "planex", KeyUse::Write).is_ok());
        let (p, w) = resolve(tmp.path(), ".workflow/.team/TC-a-2026", KeyUse::Read).unwrap();
        assert_eq!(p.session.as_str(), "TC-a-2026");
        assert!(w.is_some());
        assert!(resolve(tmp.path(), "../../tmp/x", KeyUse::Write).is_err());
    }
}
