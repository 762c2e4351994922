//! `team-session.json`: the orchestrator's state (ccw-compat §2.3).
//!
//! Both generations of the role list are read: `role_file` (`roles/<name>.md`,
//! seed era) and `role_spec` (`role-specs/<name>.md`, HEAD). A missing
//! `team_name` defaults to the `session_id`, because team-coordinate's own
//! write step omits it. Unknown keys are kept and written back.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::id::{RoleName, SessionId, TaskId};

/// `team-session.json#status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Running, or ready to resume.
    #[default]
    Active,
    /// Kept for later by the user.
    Paused,
    /// Finished.
    Completed,
}

/// One entry of `team-session.json#roles`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleEntry {
    /// The role's name; also its file name.
    pub name: RoleName,
    /// The task-subject prefix the role takes (`IMPL`).
    pub prefix: String,
    /// What the role produces (`code-gen (code)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responsibility_type: Option<String>,
    /// Whether one worker keeps taking same-prefix tasks.
    #[serde(default)]
    pub inner_loop: bool,
    /// Seed-era role file, relative to the session (`roles/<name>.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_file: Option<String>,
    /// HEAD role spec, relative to the session (`role-specs/<name>.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_spec: Option<String>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RoleEntry {
    /// The role's instruction file relative to the session folder: `role_spec`,
    /// else `role_file`, else `roles/<name>.md`.
    pub fn instructions_path(&self) -> String {
        self.role_spec
            .clone()
            .or_else(|| self.role_file.clone())
            .unwrap_or_else(|| format!("roles/{}.md", self.name))
    }
}

/// `team-session.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamSession {
    /// The session id (the folder name).
    pub session_id: SessionId,
    /// What the user asked for.
    pub task_description: String,
    /// `active`, `paused` or `completed`.
    pub status: SessionStatus,
    /// The team name; defaults to the session id when absent.
    #[serde(default)]
    pub team_name: Option<String>,
    /// The roles of the team.
    pub roles: Vec<RoleEntry>,
    /// `{dependency_graph, tasks_total, tasks_completed}`, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Value>,
    /// Workers believed running (shape never defined by ccw; kept as written).
    #[serde(default)]
    pub active_workers: Vec<Value>,
    /// Ids of completed tasks.
    #[serde(default)]
    pub completed_tasks: Vec<TaskId>,
    /// When the session was created (kept as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// HEAD: `interactive`, `auto_archive` or `auto_keep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_action: Option<String>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The key of `team-session.json` that names the task file a session was
/// written from (an extension: ccw ignores it).
pub const TASK_FILE_KEY: &str = "task_file";

impl TeamSession {
    /// Read `team-session.json`; errors name the file and the field.
    pub fn read(path: &Path) -> Result<Self> {
        crate::fsutil::read_json(path)
    }

    /// Write it back atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::fsutil::write_json_atomic(path, self)
    }

    /// The task file the session was written from (`wavecrew run
    /// wavecrew.tasks.toml`), which wavecrew records as `task_file`; `None`
    /// for a session ccw wrote.
    pub fn task_file(&self) -> Option<std::path::PathBuf> {
        self.extra
            .get(TASK_FILE_KEY)
            .and_then(Value::as_str)
            .map(std::path::PathBuf::from)
    }

    /// The team name, defaulting to the session id.
    pub fn team_name(&self) -> &str {
        self.team_name
            .as_deref()
            .unwrap_or(self.session_id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_role_generations_and_defaults_team_name() {
        let json = r#"{
          "session_id": "TC-rate-limit-api-2026-02-27",
          "task_description": "Add per-key rate limiting",
          "status": "active",
          "roles": [
            { "name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "inner_loop": true, "role_file": "roles/developer.md" },
            { "name": "writer", "prefix": "DRAFT", "inner_loop": false, "role_spec": "role-specs/writer.md", "x-extra": 1 }
          ],
          "completed_tasks": ["IMPL-001"],
          "unknown": true
        }"#;
        let s: TeamSession =
            crate::fsutil::parse_json(Path::new("s.json"), json.as_bytes()).unwrap();
        assert_eq!(s.team_name(), "TC-rate-limit-api-2026-02-27");
        assert_eq!(s.roles[0].instructions_path(), "roles/developer.md");
        assert_eq!(s.roles[1].instructions_path(), "role-specs/writer.md");
        let back = serde_json::to_value(&s).unwrap();
        assert_eq!(back["unknown"], true);
        assert_eq!(back["roles"][1]["x-extra"], 1);
    }

    #[test]
    fn bad_status_is_named() {
        let json = r#"{"session_id":"TC-1","task_description":"x","status":"running","roles":[]}"#;
        let err = crate::fsutil::parse_json::<TeamSession>(
            Path::new("team-session.json"),
            json.as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`team-session.json`: field `status`"), "{err}");
    }
}
