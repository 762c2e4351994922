//! A role known only by its `roles/<name>.md`: the role file is the agent's
//! instructions, the task is the prompt (fenced as data), and the agent CLI
//! does the work. Deliverables it writes under `artifacts/` are recorded
//! with the role as their producer; what it says it learned goes to
//! `wisdom/<role>.md`.
//!
//! A writing role's work goes through the role kit's finish phase, as
//! every writing role's does: the lane (protected paths, links out of the
//! repository, declared files), the tests compared with the base, the
//! review gate, and in an isolated session the merge queue with
//! `[integration] verify` and one revision on a miss. A read-only role (`responsibility_type` "read-only
//! (analysis)") looks at a detached worktree of the integration tip, which
//! holds every landed dependency's work, and lands nothing.

use std::path::Path;

use serde_json::{Value, json};
use wavecrew_backends::attempts::TaskRun;
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, Task};
use wavecrew_role_kit::{
    Attempt, Checked, Finish, Gate, Landed, ReportBuilder, RoleContext, Workspace, backend_used,
};

/// The generic agent role.
#[derive(Debug)]
pub struct AgentRole {
    /// The role's name (`analyst`).
    pub name: String,
    /// Its task prefix (`ANALYZE`).
    pub prefix: String,
    /// The role file's text.
    pub instructions: String,
    /// Whether the role only reads the code (analysis, review): in an
    /// isolated session it lands nothing.
    pub read_only: bool,
    /// The session, configuration, bus and templates.
    pub ctx: RoleContext,
}

impl AgentRole {
    /// The role `name` of a session, reading its role file. A writing role;
    /// see [`AgentRole::with_responsibility`].
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
            read_only: false,
            ctx,
        })
    }

    /// The role as its `responsibility_type` describes it: read-only when
    /// [`is_read_only`] says so.
    #[must_use]
    pub fn with_responsibility(mut self, responsibility: Option<&str>) -> Self {
        self.read_only = responsibility.is_some_and(is_read_only);
        self
    }
}

/// Whether a ccw `responsibility_type` describes a role that only reads
/// the code: `read-only (analysis)`, `Read-only analysis`, `analysis`,
/// `review`. Code and docs generation (`code-gen (…)`) and anything else
/// write.
pub fn is_read_only(responsibility: &str) -> bool {
    let r = responsibility.to_ascii_lowercase();
    !r.contains("code-gen")
        && ["read-only", "readonly", "read only", "analysis", "review"]
            .iter()
            .any(|w| r.contains(w))
}

pub use wavecrew_core::fsutil::list_files;

/// What the agent role carries from phase 2 to phase 4.
#[derive(Debug)]
pub struct AgentWork {
    backend: String,
    artifacts_before: Vec<String>,
    run: Option<TaskRun>,
    workspace: Workspace,
    /// A revision's account of why its first version did not land.
    previous_error: Option<String>,
}

impl AgentRole {
    /// What the `role` template of `task` is rendered with, working in
    /// `cwd` (no previous error).
    fn prompt_values(&self, task: &Task, cwd: &Path) -> Value {
        let ctx = &self.ctx;
        json!({
            "role": self.name,
            "session": ctx.session_name(),
            "cwd": cwd.display().to_string(),
            "instructions": self.instructions,
            "task": {"id": task.id.as_str(), "title": task.title(), "description": task.description},
            "wisdom": wavecrew_core::wisdom::read_wisdom(&ctx.session_dir),
            "landed": wavecrew_role_kit::landed::landed_changes(&ctx.session_dir, task),
            "artifacts": wavecrew_core::SessionLayout::new(&ctx.session_dir).artifacts().display().to_string(),
            "previous_error": null,
        })
    }

    /// The workspace of `task`'s claim number `claim`.
    fn workspace(&self, task: &Task, claim: u32) -> Result<Workspace, PhaseError> {
        if self.read_only {
            self.ctx.read_only_workspace(task)
        } else {
            self.ctx.workspace_by_graph(task, claim)
        }
    }
}

#[async_trait::async_trait]
impl wavecrew_role_kit::PromptPreview for AgentRole {
    async fn preview(&self, task: &Task) -> Result<wavecrew_role_kit::Preview, PhaseError> {
        // What `wavecrew prompt` shows: the workspace is only named.
        let cwd = if self.read_only {
            self.ctx.read_only_workspace_dir(task)?
        } else {
            self.ctx.workspace_dir(task, task.attempts)?
        };
        Ok(wavecrew_role_kit::Preview {
            marked: self.ctx.render("role", &self.prompt_values(task, &cwd))?,
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
        let artifacts = wavecrew_core::SessionLayout::new(&self.ctx.session_dir).artifacts();
        std::fs::create_dir_all(&artifacts).map_err(|e| {
            PhaseError::session(format!("cannot create {}: {e}", artifacts.display()))
        })?;
        Ok(AgentWork {
            backend: decision.backend,
            artifacts_before: list_files(&artifacts),
            run: None,
            workspace: self.workspace(task, task.attempts)?,
            previous_error: None,
        })
    }

    async fn execute(&self, task: &Task, work: &mut AgentWork) -> Result<(), PhaseError> {
        let ctx = &self.ctx;
        let cwd = work.workspace.dir().to_owned();
        let values = self.prompt_values(task, &cwd);
        // A revision starts with why its first version did not land.
        let first_error = std::sync::Mutex::new(work.previous_error.take());
        let render = |_: u32, error: Option<&str>| {
            let pending = first_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let mut values = values.clone();
            values["previous_error"] = json!(pending.as_deref().or(error));
            ctx.render("role", &values)
        };
        let run = ctx
            .attempt(
                &Attempt::new(&task.id, &work.backend, &cwd, Mode::Write, &render).for_task(task),
            )
            .await?;
        let failure = (!run.success).then(|| run.failure.clone().unwrap_or_default());
        work.run = Some(run);
        match failure {
            Some(f) => Err(PhaseError::agent(f)),
            None => Ok(()),
        }
    }

    /// A read-only role's deliverables; a writing role's work through the
    /// role kit's finish phase (the lane, the tests against the base, the
    /// review gate, the merge queue with one revision), like every
    /// writing role's.
    async fn validate(&self, task: &Task, work: &AgentWork) -> Report {
        if self.read_only {
            return self.read_only_report(task, work);
        }
        wavecrew_role_kit::finish(self, task, work).await
    }
}

impl AgentRole {
    /// The deliverables `work` wrote under `artifacts/`.
    fn new_artifacts(&self, work: &AgentWork) -> Vec<String> {
        let after =
            list_files(&wavecrew_core::SessionLayout::new(&self.ctx.session_dir).artifacts());
        after
            .into_iter()
            .filter(|a| !work.artifacts_before.contains(a))
            .collect()
    }

    /// What the agent learned is wisdom once its work counts.
    fn keep_wisdom(&self, task: &Task, work: &AgentWork) {
        let message = work
            .run
            .as_ref()
            .and_then(TaskRun::last)
            .and_then(|o| o.final_message.clone())
            .unwrap_or_default();
        if !message.is_empty() {
            let _ = wavecrew_core::wisdom::append_wisdom(
                &self.ctx.session_dir,
                &self.name,
                &task.id,
                &message,
            );
        }
    }

    /// A read-only role's report: its deliverables; nothing lands, and
    /// what it changed in its detached worktree goes with the worktree.
    fn read_only_report(&self, task: &Task, work: &AgentWork) -> Report {
        let artifacts = self.new_artifacts(work);
        let run = work.run.as_ref();
        let touched = run.map(TaskRun::files_changed).unwrap_or_default();
        let mut report = ReportBuilder::completed("task_complete", task)
            .field("status", "success")
            .field("artifacts", &artifacts)
            .field("files_modified", &touched);
        if work.workspace.branch().is_some() && !touched.is_empty() {
            report.insert("discarded", &touched);
        }
        work.workspace.finish(true);
        self.keep_wisdom(task, work);
        report
            .field("execution_backend", backend_used(run, &work.backend))
            .summary(format!(
                "{} complete: {} artifact(s)",
                task.id.as_str(),
                artifacts.len()
            ))
            .build()
    }
}

#[async_trait::async_trait]
impl Finish for AgentRole {
    type Work = AgentWork;
    /// The deliverables it wrote under `artifacts/`.
    type Evidence = Vec<String>;

    fn finish_role(&self) -> &str {
        &self.name
    }

    fn finish_ctx(&self) -> &RoleContext {
        &self.ctx
    }

    fn workspace<'w>(&self, work: &'w AgentWork) -> &'w Workspace {
        &work.workspace
    }

    fn files_in_place(&self, work: &AgentWork) -> Vec<String> {
        work.run
            .as_ref()
            .map(TaskRun::files_changed)
            .unwrap_or_default()
    }

    fn commit_message(&self, task: &Task, _work: &AgentWork) -> String {
        format!("{}: {}", task.id.as_str(), task.title())
    }

    /// A role known only by its instructions has no checks of its own:
    /// its deliverables are listed.
    async fn check(
        &self,
        _task: &Task,
        work: &AgentWork,
        _files: &[String],
        _lane_failed: bool,
    ) -> Result<Checked<Vec<String>>, PhaseError> {
        Ok(Checked::passed(self.new_artifacts(work)))
    }

    async fn completed(
        &self,
        task: &Task,
        work: &AgentWork,
        gate: &Gate<'_, Vec<String>>,
    ) -> ReportBuilder {
        self.keep_wisdom(task, work);
        let artifacts = &gate.checked.evidence;
        ReportBuilder::completed("task_complete", task)
            .field("status", "success")
            .field("artifacts", artifacts)
            .field("files_modified", gate.files)
            .field(
                "execution_backend",
                backend_used(work.run.as_ref(), &work.backend),
            )
            .summary(format!(
                "{} complete: {} artifact(s)",
                task.id.as_str(),
                artifacts.len()
            ))
    }

    /// A revision after `unlanded`: a worktree of the new integration tip
    /// (the next claim's), the agent told what conflicted or what the check
    /// of the merged result said, phase 3 again.
    async fn revise(
        &self,
        task: &Task,
        work: &AgentWork,
        unlanded: &Landed,
    ) -> Result<AgentWork, PhaseError> {
        let mut revision = AgentWork {
            backend: work.backend.clone(),
            artifacts_before: work.artifacts_before.clone(),
            run: None,
            workspace: self.workspace(task, task.attempts.max(1) + 1)?,
            previous_error: unlanded
                .conflict_brief(&work.workspace)
                .or_else(|| unlanded.rejection_brief()),
        };
        self.execute(task, &mut revision).await?;
        Ok(revision)
    }
}

#[cfg(test)]
mod tests {
    use super::is_read_only;

    #[test]
    fn read_only_responsibilities_are_told_from_writing_ones() {
        for r in [
            "read-only (analysis)",
            "Read-only analysis",
            "analysis",
            "Review",
        ] {
            assert!(is_read_only(r), "{r}");
        }
        for r in [
            "code-gen (code)",
            "code-gen (docs)",
            "code-gen (analysis docs)",
            "orchestration",
            "",
        ] {
            assert!(!is_read_only(r), "{r}");
        }
    }
}
