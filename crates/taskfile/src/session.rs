//! The ccw-shaped session a task file becomes, and writing it: the same
//! files team-coordinate's coordinator writes (ccw-compat §2.3, §2.4, §2.9),
//! put in place with one rename so a half-written session never exists.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use wavecrew_core::{
    FileTaskStore, RoleEntry, RoleName, SessionId, SessionStatus, Task, TaskId, TaskStore,
    TeamSession, fsutil,
};

use crate::TaskFileError;
use crate::model::TaskDef;

/// A role of the session: its entry in `team-session.json` and its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRole {
    /// The name (`developer`), also the file name `roles/<name>.md`.
    pub name: RoleName,
    /// Its task-id prefix (`IMPL`).
    pub prefix: String,
    /// ccw's `responsibility_type`.
    pub responsibility: String,
    /// ccw's `inner_loop`.
    pub inner_loop: bool,
    /// The text of `roles/<name>.md`.
    pub instructions: String,
    /// Whether it is a built-in role used as it is.
    pub built_in: bool,
    /// Its `review`, when the file says.
    pub review: Option<crate::model::Review>,
}

impl PlannedRole {
    /// The text of `roles/<name>.md`: a built-in role's file, a whole role
    /// file given as it is, or plain instructions with ccw's sections
    /// written around them.
    pub fn role_file(&self) -> String {
        wavecrew_core::role_file::written_around(
            self.name.as_str(),
            &self.responsibility,
            &self.instructions,
        )
    }
}

/// A checked task file, ready to become a session.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    /// The task file it came from.
    pub source: PathBuf,
    /// The project root the session goes under.
    pub root: PathBuf,
    /// The session id (and folder name).
    pub session_id: SessionId,
    /// The goal (`task_description`).
    pub goal: String,
    /// The roles the tasks use, and those the file defines.
    pub roles: Vec<PlannedRole>,
    /// The task records, in the file's order, as `tasks/<ID>.json` holds
    /// them (dependencies resolved, `blocks` filled in).
    pub tasks: Vec<Task>,
}

/// The task record of one `[[tasks]]` entry.
pub(crate) fn task_record(
    id: &TaskId,
    def: &TaskDef,
    role: &PlannedRole,
    default_backend: Option<&str>,
    deps: Vec<TaskId>,
    blocks: Vec<TaskId>,
) -> Task {
    let description = def
        .description
        .clone()
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| def.title.clone());
    let mut task = Task::new(id.clone(), format!("{id}: {}", def.title), description);
    task.owner = Some(role.name.as_str().to_owned());
    task.blocked_by = deps;
    task.blocks = blocks;
    task.active_form = Some(def.title.clone());
    task.metadata.insert(
        "target_files".into(),
        Value::from(
            def.files
                .iter()
                .map(|f| Value::from(f.as_str()))
                .collect::<Vec<_>>(),
        ),
    );
    if def.may_change_nothing {
        task.metadata
            .insert("may_change_nothing".into(), Value::Bool(true));
    }
    if def.may_remove_tests {
        task.metadata
            .insert("may_remove_tests".into(), Value::Bool(true));
    }
    if let Some(b) = def.backend.as_deref().or(default_backend) {
        task.metadata.insert("executor".into(), Value::from(b));
    }
    if !def.acceptance.is_empty() {
        let criteria: Vec<Value> = def
            .acceptance
            .iter()
            .map(|c| {
                let mut o = Map::new();
                o.insert("description".into(), Value::from(c.criterion.as_str()));
                if let Some(argv) = &c.verify {
                    o.insert("verify".into(), Value::from(shell_words::join(&argv.0)));
                }
                Value::Object(o)
            })
            .collect();
        task.extra
            .insert("acceptance_criteria".into(), Value::Array(criteria));
    }
    task
}

impl SessionPlan {
    /// Where the session goes: `<root>/.workflow/.team/<session-id>`.
    pub fn dir(&self) -> PathBuf {
        let team = if self.root == Path::new(".") {
            PathBuf::from(".workflow/.team")
        } else {
            self.root.join(".workflow/.team")
        };
        team.join(self.session_id.as_str())
    }

    fn role_entries(&self) -> Vec<RoleEntry> {
        self.roles
            .iter()
            .map(|r| RoleEntry {
                name: r.name.clone(),
                prefix: r.prefix.clone(),
                responsibility_type: Some(r.responsibility.clone()),
                inner_loop: r.inner_loop,
                role_file: Some(format!("roles/{}.md", r.name)),
                role_spec: None,
                extra: Map::new(),
            })
            .collect()
    }

    /// `team-session.json`, created now.
    pub fn team_session(&self, created_at: jiff::Timestamp) -> TeamSession {
        TeamSession {
            session_id: self.session_id.clone(),
            task_description: self.goal.clone(),
            status: SessionStatus::Active,
            team_name: Some(self.session_id.as_str().to_owned()),
            roles: self.role_entries(),
            pipeline: Some(json!({
                "dependency_graph": {},
                "tasks_total": self.tasks.len(),
                "tasks_completed": 0,
            })),
            active_workers: Vec::new(),
            completed_tasks: Vec::new(),
            created_at: Some(created_at.to_string()),
            completion_action: None,
            extra: Map::from_iter([(
                wavecrew_core::session::TASK_FILE_KEY.to_owned(),
                json!(self.source.display().to_string()),
            )]),
        }
    }

    /// `task-analysis.json`: both shapes team-executor reads (the
    /// validator's object graph and the `tasks` array).
    pub fn task_analysis(&self) -> Value {
        let capabilities: Vec<Value> = self
            .roles
            .iter()
            .map(|r| {
                json!({
                    "name": r.name, "prefix": r.prefix,
                    "responsibility_type": r.responsibility,
                    "artifact_type": if r.responsibility.starts_with("read-only") { "report" } else { "code" },
                })
            })
            .collect();
        let mut graph = Map::new();
        for t in &self.tasks {
            graph.insert(
                t.id.to_string(),
                json!({"depends_on": t.blocked_by, "role": t.owner}),
            );
        }
        let roles: Vec<Value> = self
            .roles
            .iter()
            .map(|r| {
                json!({"name": r.name, "prefix": r.prefix,
                       "responsibility_type": r.responsibility, "inner_loop": r.inner_loop})
            })
            .collect();
        let tasks: Vec<Value> = self
            .tasks
            .iter()
            .map(|t| json!({"id": t.id, "subject": t.subject, "owner": t.owner, "blockedBy": t.blocked_by}))
            .collect();
        json!({
            "task_description": self.goal,
            "capabilities": capabilities,
            "dependency_graph": graph,
            "roles": roles,
            "tasks": tasks,
        })
    }

    /// Write the session under `<root>/.workflow/.team/`: every file in a
    /// temporary folder beside it, then one rename. Refuses to replace an
    /// existing session folder. Returns the folder.
    pub fn create(&self) -> Result<PathBuf, TaskFileError> {
        let dir = self.dir();
        if dir.exists() {
            return Err(TaskFileError::SessionExists { dir });
        }
        let team = dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(team)
            .map_err(|e| wavecrew_core::CoreError::io("creating", team, e))?;
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.new-", self.session_id))
            .tempdir_in(team)
            .map_err(|e| wavecrew_core::CoreError::io("creating a temp folder in", team, e))?;
        let at = tmp.path();
        fsutil::write_json_atomic(
            &at.join("team-session.json"),
            &self.team_session(jiff::Timestamp::now()),
        )?;
        fsutil::write_json_atomic(&at.join("task-analysis.json"), &self.task_analysis())?;
        for r in &self.roles {
            fsutil::write_atomic(
                &at.join("roles").join(format!("{}.md", r.name)),
                r.role_file().as_bytes(),
            )?;
        }
        let store = FileTaskStore::for_session(at);
        for t in &self.tasks {
            store.create(t.clone())?;
        }
        let kept = tmp.keep();
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&kept);
            return Err(TaskFileError::SessionExists { dir });
        }
        std::fs::rename(&kept, &dir).map_err(|e| {
            let _ = std::fs::remove_dir_all(&kept);
            if matches!(e.kind(), std::io::ErrorKind::DirectoryNotEmpty) {
                TaskFileError::SessionExists { dir: dir.clone() }
            } else {
                wavecrew_core::CoreError::io("renaming into", dir.clone(), e).into()
            }
        })?;
        if let Ok(d) = std::fs::File::open(team) {
            let _ = d.sync_all();
        }
        Ok(dir)
    }

    /// Whether the session folder holds the session this plan makes (same
    /// goal, graph, roles, and the same task definitions): then running the
    /// task file again resumes it instead of refusing.
    pub fn matches_existing(&self, dir: &Path) -> bool {
        let Ok(session) = TeamSession::read(&dir.join("team-session.json")) else {
            return false;
        };
        if session.task_description != self.goal || session.roles != self.role_entries() {
            return false;
        }
        let Ok(analysis) = fsutil::read_json::<Value>(&dir.join("task-analysis.json")) else {
            return false;
        };
        let fresh = self.task_analysis();
        if analysis.get("dependency_graph") != fresh.get("dependency_graph")
            || analysis.get("tasks") != fresh.get("tasks")
        {
            return false;
        }
        let store = FileTaskStore::for_session(dir);
        self.tasks.iter().all(|t| {
            store.get(&t.id).is_ok_and(|on_disk| {
                on_disk.description == t.description
                    && on_disk.owner == t.owner
                    && on_disk.metadata.get("executor") == t.metadata.get("executor")
                    && on_disk.metadata.get("target_files") == t.metadata.get("target_files")
                    && on_disk.extra.get("acceptance_criteria")
                        == t.extra.get("acceptance_criteria")
            })
        })
    }
}
