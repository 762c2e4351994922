//! Session validation: every check of seed 001 (ccw-compat §4.2) with the
//! seed's messages, accepting the shapes team-coordinate really writes
//! (`team_name` optional, graph values as arrays, no `tasks` array).

use std::path::{Path, PathBuf};

use wavecrew_core::{TaskAnalysis, TeamSession};

/// The sections a role file must have (@93041402).
pub use wavecrew_core::role_file::ROLE_SECTIONS;

/// A session that does not validate; the message is the seed's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SessionInvalid {
    /// The seed's message, with the file and what is wrong.
    pub message: String,
    /// The task file the session was written from, when it was (its
    /// `team-session.json` says so): what to fix is there, not in ccw.
    pub task_file: Option<PathBuf>,
}

impl SessionInvalid {
    /// What to do about it: edit the task file the session came from, or
    /// (a ccw session) regenerate it with team-coordinate.
    pub fn hint(&self) -> String {
        match &self.task_file {
            Some(file) => format!(
                "hint: the session was written from {}: fix it there and run `wavecrew run` \
                 again",
                file.display()
            ),
            None => "hint: re-run team-coordinate to regenerate the session".to_owned(),
        }
    }
}

fn invalid(message: impl Into<String>) -> SessionInvalid {
    SessionInvalid {
        message: message.into(),
        task_file: None,
    }
}

/// A validated session: the folder and both files.
#[derive(Debug, Clone)]
pub struct ValidSession {
    /// The session folder.
    pub dir: PathBuf,
    /// `team-session.json`.
    pub session: TeamSession,
    /// `task-analysis.json`.
    pub analysis: TaskAnalysis,
}

/// Validate a session folder (`None` when `--session` was not given).
pub fn validate(dir: Option<&Path>) -> Result<ValidSession, SessionInvalid> {
    let Some(dir) = dir else {
        return Err(invalid(
            "Session required. Usage: --session=<path-to-TC-folder>",
        ));
    };
    if !dir.is_dir() {
        return Err(invalid(format!(
            "Session directory not found: {}",
            dir.display()
        )));
    }
    let session = TeamSession::read(&wavecrew_core::SessionLayout::new(dir).team_session())
        .map_err(|e| {
            invalid(format!(
                "Invalid session: team-session.json missing/corrupt: {e}"
            ))
        })?;
    if session.roles.is_empty() {
        return Err(invalid(
            "Invalid session: team-session.json missing/corrupt: `roles` is empty (expected at least one role)",
        ));
    }
    let analysis = TaskAnalysis::read(&wavecrew_core::SessionLayout::new(dir).task_analysis())
        .map_err(|e| {
            invalid(format!(
                "Invalid session: task-analysis.json missing/corrupt: {e}"
            ))
        })?;
    if analysis.dependency_graph.is_empty() && analysis.tasks.as_ref().is_none_or(Vec::is_empty) {
        return Err(invalid(
            "Invalid session: task-analysis.json has no tasks: `dependency_graph` and `tasks` are both empty",
        ));
    }
    let has_role_file = std::fs::read_dir(dir.join("roles"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == "md"))
        || std::fs::read_dir(dir.join("role-specs"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "md"));
    if !has_role_file {
        return Err(invalid("Invalid session: no role files in roles/"));
    }
    for role in &session.roles {
        let rel = role.instructions_path();
        let path = dir.join(&rel);
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Err(invalid(format!("Role file not found: {rel}")));
        };
        if let Some(section) = wavecrew_core::role_file::missing_section(&text) {
            let Some(task_file) = session.task_file() else {
                return Err(invalid(format!(
                    "Invalid role file: {rel} missing required section: {section}"
                )));
            };
            // A role a task file defines: the task file is what to fix.
            return Err(SessionInvalid {
                message: format!(
                    "{}: field `roles.{}.instructions`: the role file written from it, {rel}, \
                     lacks the section `{section}` (give plain instructions, or a whole role \
                     file with {})",
                    task_file.display(),
                    role.name.as_str(),
                    ROLE_SECTIONS.join(", ")
                ),
                task_file: Some(task_file),
            });
        }
    }
    Ok(ValidSession {
        dir: dir.to_owned(),
        session,
        analysis,
    })
}

/// The task graph of the store: unknown dependencies and cycles are errors
/// that name the tasks (a cycle with its path); completed tasks count as
/// satisfied, so a finished dependency is never mistaken for a cycle.
pub fn check_graph(tasks: &[wavecrew_core::Task]) -> Result<(), wavecrew_scheduler::ScheduleError> {
    use wavecrew_scheduler::{BuildOptions, Dag, TaskNode};
    let nodes = tasks.iter().map(|t| {
        TaskNode::new(t.id.clone(), t.blocked_by.iter().cloned())
            .with_done(t.status == wavecrew_core::TaskStatus::Completed)
    });
    Dag::build(nodes, &BuildOptions::default()).map(|_| ())
}
