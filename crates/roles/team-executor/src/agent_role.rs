//! A role known only by its `roles/<name>.md`: the role file is the agent's
//! instructions, the task is the prompt (fenced as data), and the agent CLI
//! does the work. Deliverables it writes under `artifacts/` are recorded
//! with the role as their producer; what it says it learned goes to
//! `wisdom/<role>.md`.

use std::path::Path;

use serde_json::json;
use wavecrew_backends::attempts::TaskRun;
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, Task};
use wavecrew_role_kit::{Attempt, ReportBuilder, RoleContext, backend_used};

/// The generic agent role.
#[derive(Debug)]
pub struct AgentRole {
    /// The role's name (`analyst`).
    pub name: String,
    /// Its task prefix (`ANALYZE`).
    pub prefix: String,
    /// The role file's text.
    pub instructions: String,
    /// The session, configuration, bus and templates.
    pub ctx: RoleContext,
}

impl AgentRole {
    /// The role `name` of a session, reading its role file.
    pub fn new(
        name: &str,
        prefix: &str,
        role_file: &Path,
        ctx: RoleContext,
    ) -> std::io::Result<Self> {
        Ok(AgentRole {
            name: name.to_owned(),
            prefix: prefix.to_owned(),
            instructions: std::fs::read_to_string(role_file)?,
            ctx,
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

impl AgentRole {
    /// What the `role` template of `task` is rendered with (no previous
    /// error).
    fn prompt_values(&self, task: &Task) -> serde_json::Value {
        let ctx = &self.ctx;
        json!({
            "role": self.name,
            "session": ctx.session_name(),
            "cwd": ctx.project_root.display().to_string(),
            "instructions": self.instructions,
            "task": {"id": task.id.as_str(), "title": task.title(), "description": task.description},
            "wisdom": wavecrew_core::wisdom::read_wisdom(&ctx.session_dir),
            "artifacts": ctx.session_dir.join("artifacts").display().to_string(),
            "previous_error": null,
        })
    }
}

#[async_trait::async_trait]
impl wavecrew_role_kit::PromptPreview for AgentRole {
    async fn preview(&self, task: &Task) -> Result<wavecrew_role_kit::Preview, PhaseError> {
        Ok(wavecrew_role_kit::Preview {
            marked: self.ctx.render("role", &self.prompt_values(task))?,
            backend: self.ctx.decide(task, None).backend,
            attempts_id: task.id.clone(),
        })
    }
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
        let decision = self.ctx.decide(task, None);
        let artifacts = self.ctx.session_dir.join("artifacts");
        std::fs::create_dir_all(&artifacts)
            .map_err(|e| PhaseError(format!("cannot create {}: {e}", artifacts.display())))?;
        Ok(AgentWork {
            backend: decision.backend,
            artifacts_before: list_files(&artifacts),
            run: None,
        })
    }

    async fn execute(&self, task: &Task, work: &mut AgentWork) -> Result<(), PhaseError> {
        let ctx = &self.ctx;
        let values = self.prompt_values(task);
        let render = |_: u32, error: Option<&str>| {
            let mut values = values.clone();
            values["previous_error"] = json!(error);
            ctx.render("role", &values)
        };
        let run = ctx
            .attempt(&Attempt::new(
                &task.id,
                &work.backend,
                &ctx.project_root,
                Mode::Write,
                &render,
            ))
            .await?;
        let failure = (!run.success).then(|| run.failure.clone().unwrap_or_default());
        work.run = Some(run);
        match failure {
            Some(f) => Err(PhaseError(f)),
            None => Ok(()),
        }
    }

    async fn validate(&self, task: &Task, work: &AgentWork) -> Report {
        let session_dir = &self.ctx.session_dir;
        let after = list_files(&session_dir.join("artifacts"));
        let artifacts: Vec<String> = after
            .into_iter()
            .filter(|a| !work.artifacts_before.contains(a))
            .collect();
        let run = work.run.as_ref();
        let message = run
            .and_then(TaskRun::last)
            .and_then(|o| o.final_message.clone())
            .unwrap_or_default();
        if !message.is_empty() {
            let _ =
                wavecrew_core::wisdom::append_wisdom(session_dir, &self.name, &task.id, &message);
        }
        ReportBuilder::completed("task_complete", task)
            .field("status", "success")
            .field("artifacts", &artifacts)
            .field(
                "files_modified",
                run.map(TaskRun::files_changed).unwrap_or_default(),
            )
            .field("execution_backend", backend_used(run, &work.backend))
            .summary(format!(
                "{} complete: {} artifact(s)",
                task.id.as_str(),
                artifacts.len()
            ))
            .build()
    }
}
