//! A role known only by its `roles/<name>.md`: the role file is the agent's
//! instructions, the task is the prompt (fenced as data), and the agent CLI
//! does the work. Deliverables it writes under `artifacts/` are recorded
//! with the role as their producer; what it says it learned goes to
//! `wisdom/<role>.md`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use wavecrew_backends::attempts::{TaskAttempts, TaskRun, run_task};
use wavecrew_backends::config::Config;
use wavecrew_backends::prompts::Prompts;
use wavecrew_backends::routing::resolve_executor;
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, Task, TaskStatus};

/// The generic agent role.
#[derive(Debug)]
pub struct AgentRole {
    /// The role's name (`analyst`).
    pub name: String,
    /// Its task prefix (`ANALYZE`).
    pub prefix: String,
    /// The role file's text.
    pub instructions: String,
    /// The project root.
    pub project_root: PathBuf,
    /// The session folder.
    pub session_dir: PathBuf,
    /// `wavecrew.toml`.
    pub config: Config,
    /// `--backend`, when given.
    pub run_backend: Option<String>,
    prompts: Prompts,
}

impl AgentRole {
    /// The role `name` of a session, reading its role file.
    pub fn new(
        name: &str,
        prefix: &str,
        role_file: &Path,
        project_root: PathBuf,
        session_dir: PathBuf,
        config: Config,
    ) -> std::io::Result<Self> {
        Ok(AgentRole {
            name: name.to_owned(),
            prefix: prefix.to_owned(),
            instructions: std::fs::read_to_string(role_file)?,
            project_root,
            session_dir,
            config,
            run_backend: None,
            prompts: Prompts::new(),
        })
    }
}

/// Files under `dir`, relative to it, sorted.
pub fn list_files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// What the agent role carries from phase 2 to phase 4.
#[derive(Debug)]
pub struct AgentWork {
    backend: String,
    artifacts_before: Vec<String>,
    run: Option<TaskRun>,
}

#[async_trait::async_trait]
impl Role for AgentRole {
    type Work = AgentWork;

    fn name(&self) -> &str {
        &self.name
    }

    fn prefix(&self) -> &str {
        &self.prefix
    }

    async fn prepare(&self, task: &Task) -> Result<AgentWork, PhaseError> {
        let decision = resolve_executor(
            &self.config,
            self.run_backend.as_deref(),
            task.executor(),
            None,
            &task.description,
        );
        let artifacts = self.session_dir.join("artifacts");
        std::fs::create_dir_all(&artifacts)
            .map_err(|e| PhaseError(format!("cannot create {}: {e}", artifacts.display())))?;
        Ok(AgentWork {
            backend: decision.backend,
            artifacts_before: list_files(&artifacts),
            run: None,
        })
    }

    async fn execute(&self, task: &Task, work: &mut AgentWork) -> Result<(), PhaseError> {
        let wisdom = wavecrew_core::wisdom::read_wisdom(&self.session_dir);
        let ctx = json!({
            "role": self.name,
            "session": self.session_dir.file_name().map(|n| n.to_string_lossy().into_owned()),
            "cwd": self.project_root.display().to_string(),
            "instructions": self.instructions,
            "task": {"id": task.id.as_str(), "title": task.title(), "description": task.description},
            "wisdom": wisdom,
            "artifacts": self.session_dir.join("artifacts").display().to_string(),
        });
        let base = self
            .prompts
            .render("role", &ctx)
            .map_err(|e| PhaseError(e.to_string()))?;
        let render = |_: u32, error: Option<&str>| match error {
            Some(e) => format!(
                "{base}\nThe previous attempt failed:\n{}\n",
                wavecrew_backends::prompts::fence(e, "previous error")
            ),
            None => base.clone(),
        };
        let run = run_task(&TaskAttempts {
            config: &self.config,
            backend: &work.backend,
            task_id: &task.id,
            cwd: &self.project_root,
            mode: Mode::Write,
            session_dir: &self.session_dir,
            prompt: &render,
            on_event: &|_| {},
        })
        .await;
        let failure = (!run.success).then(|| run.failure.clone().unwrap_or_default());
        work.run = Some(run);
        match failure {
            Some(f) => Err(PhaseError(f)),
            None => Ok(()),
        }
    }

    async fn validate(&self, task: &Task, work: &AgentWork) -> Report {
        let after = list_files(&self.session_dir.join("artifacts"));
        let artifacts: Vec<String> = after
            .into_iter()
            .filter(|a| !work.artifacts_before.contains(a))
            .collect();
        let run = work.run.as_ref();
        let last = run.and_then(TaskRun::last);
        let message = last
            .and_then(|o| o.final_message.clone())
            .unwrap_or_default();
        if !message.is_empty() {
            let _ = wavecrew_core::wisdom::append_wisdom(
                &self.session_dir,
                &self.name,
                &task.id,
                &message,
            );
        }
        let mut data = Map::new();
        data.insert("task_id".into(), json!(task.id.as_str()));
        data.insert("status".into(), json!("success"));
        data.insert("artifacts".into(), json!(artifacts));
        data.insert(
            "files_modified".into(),
            json!(run.map(TaskRun::files_changed).unwrap_or_default()),
        );
        data.insert(
            "execution_backend".into(),
            json!(last.map_or(work.backend.as_str(), |o| o.backend.as_str())),
        );
        Report {
            status: TaskStatus::Completed,
            kind: "task_complete".into(),
            summary: format!(
                "{} complete: {} artifact(s)",
                task.id.as_str(),
                artifacts.len()
            ),
            result: Value::Object(data.clone()),
            data,
        }
    }
}
