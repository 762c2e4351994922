//! A role known only by its `roles/<name>.md`: the role file is the agent's
//! instructions, the task is the prompt (fenced as data), and the agent CLI
//! does the work. Deliverables it writes under `artifacts/` are recorded
//! with the role as their producer; what it says it learned goes to
//! `wisdom/<role>.md`.
//!
//! In an isolated session a writing role works in its own worktree and its
//! work lands through the merge queue (one revision after a conflict, as
//! for the executor); a read-only role (`responsibility_type` "read-only
//! (analysis)") looks at a detached worktree of the integration tip, which
//! holds every landed dependency's work, and lands nothing.

use std::path::Path;

use serde_json::{Value, json};
use wavecrew_backends::attempts::TaskRun;
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, Task};
use wavecrew_role_kit::{Attempt, Landed, ReportBuilder, RoleContext, Workspace, backend_used};

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
            self.ctx.workspace(task, claim)
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
        std::fs::create_dir_all(&artifacts)
            .map_err(|e| PhaseError(format!("cannot create {}: {e}", artifacts.display())))?;
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
            .attempt(&Attempt::new(
                &task.id,
                &work.backend,
                &cwd,
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

    /// The deliverables, then (isolated, writing) the merge queue: a
    /// conflict or a failed `[integration] verify` gets one revision in a
    /// worktree of the new tip; a second leaves the task `blocked` (failed).
    async fn validate(&self, task: &Task, work: &AgentWork) -> Report {
        wavecrew_role_kit::land_with_one_revision(self, task, work).await
    }
}

#[async_trait::async_trait]
impl wavecrew_role_kit::RevisedLanding for AgentRole {
    type Work = AgentWork;

    fn landing_role(&self) -> &str {
        &self.name
    }

    fn landing_ctx(&self) -> &RoleContext {
        &self.ctx
    }

    fn workspace_of<'w>(&self, work: &'w AgentWork) -> Option<&'w Workspace> {
        Some(&work.workspace)
    }

    /// Phase 4 on `work`: the report, after landing a writing role's work.
    /// `Err` is a landing that did not land; `conflicts` are the earlier
    /// ones, recorded on the report.
    async fn check_and_land(
        &self,
        task: &Task,
        work: &AgentWork,
        conflicts: &[Value],
    ) -> Result<Report, Landed> {
        let session_dir = &self.ctx.session_dir;
        let after = list_files(&wavecrew_core::SessionLayout::new(session_dir).artifacts());
        let artifacts: Vec<String> = after
            .into_iter()
            .filter(|a| !work.artifacts_before.contains(a))
            .collect();
        let run = work.run.as_ref();
        let touched = run.map(TaskRun::files_changed).unwrap_or_default();
        let mut report = ReportBuilder::completed("task_complete", task)
            .field("status", "success")
            .field("artifacts", &artifacts);
        if self.read_only {
            // Nothing of a read-only role lands: what it changed in its
            // detached worktree goes with the worktree.
            report.insert("files_modified", &touched);
            if work.workspace.branch().is_some() && !touched.is_empty() {
                report.insert("discarded", &touched);
            }
            work.workspace.finish(true);
        } else {
            let files = match work.workspace.changed_files() {
                Ok(Some(files)) => files,
                Ok(None) => touched,
                Err(e) => return Ok(ReportBuilder::phase_failed("task_failed", task, &e).build()),
            };
            let message = format!("{}: {}", task.id.as_str(), task.title());
            let verify = self.ctx.verify();
            let landed = match work.workspace.land(task, &message, verify.as_ref()).await {
                Ok(landed) => landed,
                Err(e) => return Ok(ReportBuilder::phase_failed("task_failed", task, &e).build()),
            };
            if matches!(landed, Landed::Conflict { .. } | Landed::Rejected { .. }) {
                return Err(landed);
            }
            self.ctx
                .record_landing(&self.name, task, &work.workspace, &landed, false);
            work.workspace.finish(true);
            report.insert("files_modified", &files);
            if let Some((branch, base)) = work.workspace.branch() {
                report.insert("branch", branch);
                report.insert("base", base);
                if let Landed::Commit(commit) = &landed {
                    report.insert("merge_commit", commit);
                }
            }
        }
        if !conflicts.is_empty() {
            report.insert("conflicts", conflicts);
        }
        // What the agent learned is wisdom once its work counts.
        let message = run
            .and_then(TaskRun::last)
            .and_then(|o| o.final_message.clone())
            .unwrap_or_default();
        if !message.is_empty() {
            let _ =
                wavecrew_core::wisdom::append_wisdom(session_dir, &self.name, &task.id, &message);
        }
        Ok(report
            .field("execution_backend", backend_used(run, &work.backend))
            .summary(format!(
                "{} complete: {} artifact(s)",
                task.id.as_str(),
                artifacts.len()
            ))
            .build())
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
