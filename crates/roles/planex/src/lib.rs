//! Seed 003, the team-planex `EXEC-*` executor, as a [`Role`].
//!
//! * phase 2: the issue id in every format ccw produces
//!   (`ISS-YYYYMMDD-NNN`, `ISS-YYYYMMDDHHMMSS`, `ISS-<base36>-<hex>`,
//!   `GH-<n>`; the seed's regex matched none of them); the solution from
//!   the description's `solution_file:` (also the planner's bold
//!   `**solution_file**:`), else the bound solution of the issue store;
//!   `execution_method` and `code_review` by the seed's tables; the issue
//!   set `executing`;
//! * phase 3: the planex prompt ([`prompt`]: the solution's tasks whole, in
//!   dependency order, as the plan; the issue text fenced as untrusted
//!   data) through the backend, attempts kept under `attempts/planex-<issueId>/`
//!   so a second run resumes the same native session;
//! * phase 4: the role kit's finish phase (the lane, the tests against the
//!   base, the review gate, the merge queue), with planex's own checks: the
//!   project's tests through `wavecrew-validation` and an optional review;
//!   then (in place) `git commit` of exactly the files the attempts
//!   changed (`feat(<issueId>): <title>`, with a `Wavecrew-Task:` trailer:
//!   a resumed task finds its commit and never commits twice), the issue
//!   `completed`, and `impl_complete` / `impl_failed` (with the resume
//!   command) to the planner.
//!
//! ```
//! use wavecrew_role_planex::find_issue_id;
//!
//! assert_eq!(find_issue_id("EXEC-W1-ISS-20260226-001: Implement login").as_deref(), Some("ISS-20260226-001"));
//! assert_eq!(find_issue_id("EXEC-W2-GH-42: Fix the build").as_deref(), Some("GH-42"));
//! ```

pub mod issues;
pub mod prompt;

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};
use wavecrew_backends::attempts::TaskRun;
use wavecrew_backends::routing::{Decision, resolve_execution_method};
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, Task};
use wavecrew_role_kit::{
    Attempt, Checked, Finish, Gate, Landed, ReportBuilder, Review, RoleContext, Workspace,
    backend_used, derived_id_from,
};

use crate::issues::IssueStore;

static ISSUE_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(ISS-\d{8}-\d{3,6}|ISS-\d{14}|ISS-[0-9a-z]{6,}-[0-9a-f]{8}|GH-\d+)\b")
        .expect("valid regex")
});

static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?im)^\s*(?:[-*]\s*)?\**\s*(issue|solution_file|execution_method|code_review)\s*\**\s*:\s*\**\s*(.+?)\s*$")
        .expect("valid regex")
});

/// What an `EXEC-*` description says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecSpec {
    /// The issue id.
    pub issue: Option<String>,
    /// `solution_file:`.
    pub solution_file: Option<String>,
    /// `execution_method:` (Agent, Codex, Gemini, Auto).
    pub execution_method: Option<String>,
    /// `code_review:` (Skip, Gemini Review, Codex Review, Agent Review).
    pub code_review: Option<String>,
}

/// Find an issue id in any of ccw's formats.
pub fn find_issue_id(text: &str) -> Option<String> {
    ISSUE_ID.captures(text).map(|c| c[1].to_owned())
}

/// Read the description (plain and the planner's bold form).
pub fn parse_description(subject: &str, text: &str) -> ExecSpec {
    let mut spec = ExecSpec::default();
    for c in FIELD.captures_iter(text) {
        let value = c[2].trim().trim_matches('`').to_owned();
        match c[1].to_ascii_lowercase().as_str() {
            "issue" => spec.issue = find_issue_id(&value),
            "solution_file" => spec.solution_file = Some(value),
            "execution_method" => spec.execution_method = Some(value),
            _ => spec.code_review = Some(value),
        }
    }
    if spec.issue.is_none() {
        spec.issue = find_issue_id(subject).or_else(|| find_issue_id(text));
    }
    spec
}

/// The solution in a planner artifact, whatever era wrote it: HEAD's
/// `{solution: {...}}`, a `bound` object, or the seed era's solution spread
/// at the top level.
pub fn solution_of_artifact(v: &Value) -> Option<Map<String, Value>> {
    if let Some(s) = v.get("solution").and_then(Value::as_object) {
        return Some(s.clone());
    }
    if let Some(b) = v.get("bound").and_then(Value::as_object) {
        return Some(b.clone());
    }
    let o = v.as_object()?;
    o.get("tasks").and_then(Value::as_array).map(|_| o.clone())
}

/// The planex role.
#[derive(Debug, Clone)]
pub struct PlanexRole {
    /// The session, configuration, bus and templates (the project root is a
    /// git work tree).
    pub ctx: RoleContext,
}

impl PlanexRole {
    /// The role for a session.
    pub fn new(ctx: RoleContext) -> Self {
        PlanexRole { ctx }
    }

    /// `git <args>` in the project, committing as wavecrew; its stdout.
    fn git(&self, args: &[&str]) -> Result<String, String> {
        let out = wavecrew_sys::git::git(&self.ctx.project_root)
            .identity("wavecrew", "wavecrew@localhost")
            .args(args)
            .run();
        match out {
            Ok(stdout) => Ok(String::from_utf8_lossy(&stdout).into_owned()),
            Err(wavecrew_sys::git::GitError::Failed { stderr, .. }) => {
                Err(format!("git {}: {stderr}", args.first().unwrap_or(&"")))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn trailer(&self, task: &Task) -> String {
        format!(
            "Wavecrew-Task: {}/{}",
            self.ctx.session_name(),
            task.id.as_str()
        )
    }

    /// The commit an earlier run of this task made, if any.
    pub fn earlier_commit(&self, task: &Task) -> Option<String> {
        let out = self
            .git(&[
                "log",
                "--format=%H",
                "--fixed-strings",
                &format!("--grep={}", self.trailer(task)),
            ])
            .ok()?;
        out.lines().next().map(str::to_owned)
    }
}

/// What the phases carry.
#[derive(Debug)]
pub struct PlanexWork {
    spec: ExecSpec,
    issue_id: String,
    issue: Map<String, Value>,
    solution: Map<String, Value>,
    decision: Decision,
    review: String,
    run: Option<TaskRun>,
    committed: Option<String>,
    plan_notes: Vec<String>,
    /// Where the agent works (the project folder when the work is already
    /// committed).
    workspace: Workspace,
    /// A revision's account of the conflict its first version met.
    conflict: Option<String>,
    /// A revision's account of the failed `[integration] verify`.
    previous_error: Option<String>,
}

fn solution_tasks(solution: &Map<String, Value>) -> Vec<Value> {
    solution
        .get("tasks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[async_trait::async_trait]
impl wavecrew_role_kit::PromptPreview for PlanexRole {
    async fn preview(&self, task: &Task) -> Result<wavecrew_role_kit::Preview, PhaseError> {
        let work = self.prepare(task).await?;
        if let Some(commit) = &work.committed {
            return Err(PhaseError::input(format!(
                "its work is already committed ({commit}): the next run only reports it"
            )));
        }
        // What `wavecrew prompt` shows: the workspace is only named.
        let cwd = self
            .ctx
            .workspace_dir(task, task.attempts)?
            .display()
            .to_string();
        let input = prompt::PromptInput {
            issue_id: &work.issue_id,
            issue: &work.issue,
            fallback_title: task.title(),
            solution: &work.solution,
            cwd: &cwd,
        };
        let attempts_id = derived_id_from(&format!("planex-{}", work.issue_id), &task.id)?;
        let next = wavecrew_backends::attempts::next_attempt(&self.ctx.session_dir, &attempts_id);
        let (context, _) =
            prompt::prompt_context(&input, None, None, next, self.ctx.max_attempts());
        Ok(wavecrew_role_kit::Preview {
            marked: self.ctx.render("planex", &context)?,
            backend: work.decision.backend,
            attempts_id,
        })
    }
}

#[async_trait::async_trait]
impl Role for PlanexRole {
    type Work = PlanexWork;

    fn name(&self) -> &'static str {
        "executor"
    }

    fn prefix(&self) -> &'static str {
        "EXEC"
    }

    fn takes(&self, task: &Task) -> bool {
        task.id.as_str().starts_with("EXEC-")
    }

    fn report_to(&self) -> &'static str {
        "planner"
    }

    fn completion_kind(&self) -> &'static str {
        "impl_complete"
    }

    fn failure_report(&self, task: &Task, error: &PhaseError) -> Report {
        self.failure(task, error).build()
    }

    async fn prepare(&self, task: &Task) -> Result<PlanexWork, PhaseError> {
        let spec = parse_description(&task.subject, &task.description);
        let Some(issue_id) = spec.issue.clone() else {
            return Err(PhaseError::input(format!(
                "{}: no issue id (ISS-YYYYMMDD-NNN, ISS-YYYYMMDDHHMMSS, ISS-<base36>-<hex> or GH-<n>) in the subject or description",
                task.id.as_str()
            )));
        };
        let ctx = &self.ctx;
        let store = IssueStore::new(&ctx.project_root);
        let solution = match &spec.solution_file {
            Some(file) => {
                let path = [ctx.project_root.join(file), ctx.session_dir.join(file)]
                    .into_iter()
                    .find(|p| p.is_file())
                    .ok_or_else(|| PhaseError::input(format!("solution_file {file}: not found")))?;
                let v: Value = serde_json::from_slice(
                    &std::fs::read(&path)
                        .map_err(|e| PhaseError::input(format!("{}: {e}", path.display())))?,
                )
                .map_err(|e| PhaseError::input(format!("{}: {e}", path.display())))?;
                solution_of_artifact(&v).ok_or_else(|| {
                    PhaseError::input(format!("{}: no solution with tasks in it", path.display()))
                })?
            }
            None => store
                .bound_solution(&issue_id)
                .map_err(|e| PhaseError::session(e.to_string()))?
                .ok_or_else(|| {
                    PhaseError::input(format!("issue {issue_id} has no bound solution"))
                })?,
        };
        let issue = store.issue(&issue_id).unwrap_or_default();
        let decision = resolve_execution_method(
            &ctx.config,
            ctx.run_backend.as_deref(),
            spec.execution_method.as_deref(),
            solution_tasks(&solution).len(),
        );
        let review = spec.code_review.clone().unwrap_or_else(|| "Skip".into());
        // A resumed task whose work an earlier run committed (in place: on
        // the user's branch; isolated: landed on the integration branch)
        // only reports it.
        let committed = match ctx.landed_commit(task)? {
            Some(commit) => Some(commit),
            None => self.earlier_commit(task),
        };
        let workspace = match committed {
            Some(_) => Workspace::InPlace {
                dir: ctx.project_root.clone(),
            },
            None => ctx.workspace(task, task.attempts)?,
        };
        if committed.is_none()
            && let Err(e) = store.set_status(&issue_id, "executing")
        {
            tracing::warn!("issue {issue_id}: cannot set executing: {e}");
        }
        Ok(PlanexWork {
            spec,
            issue_id,
            issue,
            solution,
            decision,
            review,
            run: None,
            committed,
            plan_notes: Vec::new(),
            workspace,
            conflict: None,
            previous_error: None,
        })
    }

    async fn execute(&self, task: &Task, work: &mut PlanexWork) -> Result<(), PhaseError> {
        if work.committed.is_some() {
            // A resumed task whose work is already committed: report only.
            return Ok(());
        }
        let ctx = &self.ctx;
        let max_attempts = ctx.max_attempts();
        let dir = work.workspace.dir().to_owned();
        let cwd = dir.display().to_string();
        let input = prompt::PromptInput {
            issue_id: &work.issue_id,
            issue: &work.issue,
            fallback_title: task.title(),
            solution: &work.solution,
            cwd: &cwd,
        };
        let (_, notes) = prompt::prompt_context(&input, None, None, 1, max_attempts);
        for note in &notes {
            tracing::warn!(
                "{}: solution of {}: {note}",
                task.id.as_str(),
                work.issue_id
            );
        }
        work.plan_notes = notes;
        // A revision after a failed check of the merged result starts with
        // that failure; later attempts with their own.
        let first_error = std::sync::Mutex::new(work.previous_error.take());
        let conflict = work.conflict.as_deref();
        let render = |n: u32, error: Option<&str>| {
            let pending = first_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let error = pending.as_deref().or(error);
            let (context, _) = prompt::prompt_context(&input, error, conflict, n, max_attempts);
            ctx.render("planex", &context)
        };
        let execution = derived_id_from(&format!("planex-{}", work.issue_id), &task.id)?;
        let run = ctx
            .attempt(
                &Attempt::new(
                    &execution,
                    &work.decision.backend,
                    &dir,
                    Mode::Write,
                    &render,
                )
                .for_task(task),
            )
            .await?;
        let failure = (!run.success).then(|| run.failure.clone().unwrap_or_default());
        work.run = Some(run);
        match failure {
            Some(f) => Err(PhaseError::agent(f)),
            None => Ok(()),
        }
    }

    /// The role kit's finish phase with planex's own checks (the
    /// project's tests, the review), then the commit: in place, on the
    /// user's branch; isolated, on the task's branch, landed by the merge
    /// queue. A conflict (or a failed `[integration] verify`) gets one
    /// revision in a worktree of the new tip; a second leaves the task
    /// `blocked` (failed).
    async fn validate(&self, task: &Task, work: &PlanexWork) -> Report {
        if let Some(commit) = &work.committed {
            // A resumed task whose work is already committed: report only.
            let files = self.files_in_place(work);
            let done = Self::done_fields(task, work, &files);
            return self.completed_report(work, done, Some(commit)).build();
        }
        wavecrew_role_kit::finish(self, task, work).await
    }
}

impl PlanexRole {
    /// The fields every planex report carries: the issue, the solution,
    /// the backend decision, the review setting and the changed files.
    fn done_fields(task: &Task, work: &PlanexWork, files: &[String]) -> ReportBuilder {
        let mut done = ReportBuilder::completed("impl_complete", task)
            .field("issue_id", &work.issue_id)
            .field(
                "solution_id",
                work.solution.get("id").and_then(Value::as_str),
            )
            .field("executor", &work.decision.backend)
            .field("execution_decision", &work.decision)
            .field("code_review", &work.review)
            .field("files_changed", files);
        if !work.plan_notes.is_empty() {
            // What of the solution did not reach the prompt (malformed).
            done.insert("plan_notes", &work.plan_notes);
        }
        done
    }

    /// `impl_complete` with the commit, after the issue is marked
    /// completed.
    fn completed_report(
        &self,
        work: &PlanexWork,
        mut done: ReportBuilder,
        commit: Option<&str>,
    ) -> ReportBuilder {
        done.insert("commit", commit);
        let status_note =
            match IssueStore::new(&self.ctx.project_root).set_status(&work.issue_id, "completed") {
                Ok(()) => "completed".to_owned(),
                Err(e) => format!("not updated: {e}"),
            };
        done.insert("issue_status", &status_note);
        let backend = backend_used(work.run.as_ref(), &work.decision.backend);
        done.insert(
            "report",
            format!(
                "## [executor] Implementation Complete\n\n**Issue**: {}\n**Executor**: {backend}\n**Solution**: {}\n**Code Review**: {}\n**Commit**: {}\n**Issue Status**: {status_note}\n",
                work.issue_id,
                work.solution.get("id").and_then(Value::as_str).unwrap_or("-"),
                work.review,
                commit.unwrap_or("nothing to commit"),
            ),
        );
        done.summary(format!("EXEC complete: {} ({backend})", work.issue_id))
    }

    /// The project's tests, through the validation crate, when it has any:
    /// their record, and why they fail the task. The task's one run of the
    /// suite ([`wavecrew_role_kit::suite`]): the comparison with its base
    /// reads the same run.
    async fn run_tests(
        &self,
        task: &Task,
        workspace: &wavecrew_role_kit::Workspace,
    ) -> (Option<Value>, Option<String>) {
        match self.ctx.task_suite(task, workspace).await {
            Ok(None) => (None, None),
            Ok(Some((framework, run, _))) => {
                let failed = run.report.failures().count();
                let record = json!({"framework": framework.name(), "passed": run.report.counts.passed,
                                    "failed": failed, "command": run.command,
                                    "duration_ms": run.duration_ms});
                if failed == 0 {
                    return (Some(record), None);
                }
                let first: Vec<String> = run
                    .report
                    .failures()
                    .take(5)
                    .map(|c| {
                        format!(
                            "{}: {}",
                            c.name,
                            c.message
                                .as_deref()
                                .unwrap_or("")
                                .lines()
                                .next()
                                .unwrap_or("")
                        )
                    })
                    .collect();
                (
                    Some(record),
                    Some(format!("{failed} test(s) failed:\n{}", first.join("\n"))),
                )
            }
            Err(e) => (Some(json!({"error": e})), None),
        }
    }
}

#[async_trait::async_trait]
impl Finish for PlanexRole {
    type Work = PlanexWork;
    /// The `tests` and `review` fields of the report.
    type Evidence = Map<String, Value>;

    fn finish_role(&self) -> &'static str {
        "executor"
    }

    fn finish_ctx(&self) -> &RoleContext {
        &self.ctx
    }

    fn workspace<'w>(&self, work: &'w PlanexWork) -> &'w Workspace {
        &work.workspace
    }

    fn files_in_place(&self, work: &PlanexWork) -> Vec<String> {
        work.run
            .as_ref()
            .map(TaskRun::files_changed)
            .unwrap_or_default()
    }

    fn commit_message(&self, task: &Task, work: &PlanexWork) -> String {
        format!("feat({}): {}", work.issue_id, Self::title(task, work))
    }

    /// Seed 003's checks: the project's tests (a failing test fails the
    /// task), then the code review when the planner asked for one.
    async fn check(
        &self,
        task: &Task,
        work: &PlanexWork,
        _files: &[String],
        lane_failed: bool,
    ) -> Result<Checked<Map<String, Value>>, PhaseError> {
        let dir = work.workspace.dir();
        let mut evidence = Map::new();
        if lane_failed {
            // The work cannot land: its tests and review would say nothing.
            return Ok(Checked::passed(evidence));
        }
        let (tests, failure) = self.run_tests(task, &work.workspace).await;
        if let Some(tests) = tests {
            evidence.insert("tests".into(), tests);
        }
        if failure.is_none() && work.review != "Skip" && !work.review.is_empty() {
            let backend = if work.review.to_ascii_lowercase().starts_with("codex") {
                "codex"
            } else if work.review.to_ascii_lowercase().starts_with("gemini") {
                "gemini"
            } else {
                work.decision.backend.as_str()
            };
            let id = derived_id_from(&format!("planex-review-{}", work.issue_id), &task.id)?;
            let review = self
                .ctx
                .review(&Review {
                    task,
                    id,
                    backend,
                    cwd: dir,
                    criteria: Vec::new(),
                })
                .await?;
            evidence.insert(
                "review".into(),
                json!({"backend": backend, "success": review.success,
                       "verdict": review.last().and_then(|o| o.final_message.clone())}),
            );
        }
        Ok(Checked {
            failure,
            inconclusive: Vec::new(),
            evidence,
        })
    }

    async fn completed(
        &self,
        task: &Task,
        work: &PlanexWork,
        gate: &Gate<'_, Map<String, Value>>,
    ) -> ReportBuilder {
        let mut done = Self::done_fields(task, work, gate.files);
        done.extend(gate.checked.evidence.clone());
        let commit = match gate.landed {
            Some(Landed::Commit(commit)) => Some(commit.clone()),
            Some(Landed::InPlace) => {
                let title = Self::title(task, work);
                match self.commit(task, &work.issue_id, &title, gate.files) {
                    Ok(c) => c,
                    Err(e) => {
                        let mut failed = self.failure(task, &PhaseError::workspace(e));
                        failed.extend(done.fields().clone());
                        return failed;
                    }
                }
            }
            _ => None,
        };
        self.completed_report(work, done, commit.as_deref())
    }

    fn failed(
        &self,
        task: &Task,
        work: &PlanexWork,
        gate: &Gate<'_, Map<String, Value>>,
    ) -> ReportBuilder {
        let mut failed = self.failure(
            task,
            &PhaseError::check(gate.failure.unwrap_or("a check failed").to_owned()),
        );
        let mut done = Self::done_fields(task, work, gate.files);
        done.extend(gate.checked.evidence.clone());
        failed.extend(done.fields().clone());
        failed
    }

    fn awaiting(
        &self,
        task: &Task,
        work: &PlanexWork,
        gate: &Gate<'_, Map<String, Value>>,
        mut held: ReportBuilder,
    ) -> ReportBuilder {
        let mut done = Self::done_fields(task, work, gate.files);
        done.extend(gate.checked.evidence.clone());
        for (k, v) in done.fields() {
            if !held.fields().contains_key(k) {
                held.insert(k, v);
            }
        }
        held
    }

    fn phase_failed(&self, task: &Task, error: &PhaseError) -> ReportBuilder {
        self.failure(task, error)
    }

    fn unlanded(
        &self,
        task: &Task,
        work: &PlanexWork,
        second: &Landed,
        workspace: &Workspace,
        earlier: &[Value],
    ) -> ReportBuilder {
        second
            .unlanded_report("impl_failed", task, workspace, earlier)
            .field("issue_id", &work.issue_id)
            .field("resume", self.resume_command(task))
    }

    /// A revision after `unlanded`: a worktree of the new integration tip
    /// (the next claim's), the agent told what conflicted or what the check
    /// of the merged result said, phase 3 again.
    async fn revise(
        &self,
        task: &Task,
        work: &PlanexWork,
        unlanded: &Landed,
    ) -> Result<PlanexWork, PhaseError> {
        let workspace = self.ctx.workspace(task, task.attempts.max(1) + 1)?;
        let mut revision = PlanexWork {
            spec: work.spec.clone(),
            issue_id: work.issue_id.clone(),
            issue: work.issue.clone(),
            solution: work.solution.clone(),
            decision: work.decision.clone(),
            review: work.review.clone(),
            run: None,
            committed: None,
            plan_notes: Vec::new(),
            conflict: unlanded.conflict_brief(&work.workspace),
            previous_error: unlanded.rejection_brief(),
            workspace,
        };
        self.execute(task, &mut revision).await?;
        Ok(revision)
    }
}

impl PlanexRole {
    /// The issue's title, else the task's.
    fn title(task: &Task, work: &PlanexWork) -> String {
        work.issue
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(task.title())
            .to_owned()
    }
}

impl PlanexRole {
    /// The start of every failure report: `impl_failed` to the planner
    /// with the issue and the command that resumes the task.
    fn failure(&self, task: &Task, error: &PhaseError) -> ReportBuilder {
        let issue = parse_description(&task.subject, &task.description).issue;
        ReportBuilder::phase_failed("impl_failed", task, error)
            .field("issue_id", issue)
            .field("resume", self.resume_command(task))
    }

    /// The command that resumes `task`.
    fn resume_command(&self, task: &Task) -> String {
        format!(
            "wavecrew-planex --session {} --task {}",
            self.ctx.session_dir.display(),
            task.id.as_str()
        )
    }
}

impl PlanexRole {
    /// Commit exactly `files` (nothing else that happens to be staged or
    /// dirty) with `feat(<issue>): <title>` and this task's trailer.
    fn commit(
        &self,
        task: &Task,
        issue: &str,
        title: &str,
        files: &[String],
    ) -> Result<Option<String>, String> {
        if files.is_empty() {
            return Ok(None);
        }
        let mut add = vec!["add", "--all", "--"];
        add.extend(files.iter().map(String::as_str));
        self.git(&add)?;
        let message = format!("feat({issue}): {title}\n\n{}\n", self.trailer(task));
        let mut commit = vec!["commit", "--quiet", "-m", &message, "--"];
        commit.extend(files.iter().map(String::as_str));
        self.git(&commit)?;
        Ok(Some(self.git(&["rev-parse", "HEAD"])?.trim().to_owned()))
    }
}

/// Whether the planner has sent `all_planned` (its last wave is out).
pub fn all_planned(messages: &[wavecrew_core::BusMessage]) -> bool {
    messages
        .iter()
        .any(|m| m.kind == "all_planned" && m.from == "planner")
}

/// The session folder's name.
pub fn session_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_ids_in_every_format_ccw_produces() {
        for id in [
            "ISS-20260226-001",
            "ISS-20260226143015",
            "ISS-lx2k9f0a-1a2b3c4d",
            "GH-42",
            "ISS-20260226-000123",
        ] {
            assert_eq!(
                find_issue_id(&format!("EXEC-W1-{id}: Implement x")).as_deref(),
                Some(id),
                "{id}"
            );
        }
        // The seed's regex `ISS-\d{8}-\d{6}` matched none of the first three.
        let seed = Regex::new(r"ISS-\d{8}-\d{6}").unwrap();
        assert!(!seed.is_match("ISS-20260226-001"));
        assert_eq!(find_issue_id("no issue here"), None);
    }

    #[test]
    fn the_planners_bold_fields_are_read() {
        let spec = parse_description(
            "EXEC-W1-ISS-20260226-001: Implement login",
            "## Execution Task\n**Wave**: 1\n**Issue**: ISS-20260226-001\n**solution_file**: artifacts/solutions/ISS-20260226-001.json\n**execution_method**: Codex\n**code_review**: Skip",
        );
        assert_eq!(spec.issue.as_deref(), Some("ISS-20260226-001"));
        assert_eq!(
            spec.solution_file.as_deref(),
            Some("artifacts/solutions/ISS-20260226-001.json")
        );
        assert_eq!(spec.execution_method.as_deref(), Some("Codex"));
        assert_eq!(spec.code_review.as_deref(), Some("Skip"));
        let plain = parse_description("EXEC-1", "solution_file: a.json\nexecution_method: Auto");
        assert_eq!(plain.solution_file.as_deref(), Some("a.json"));
    }

    #[test]
    fn solutions_of_every_era() {
        let head = json!({"session_id": "s", "solution": {"id": "SOL-1", "tasks": []}});
        assert_eq!(solution_of_artifact(&head).unwrap()["id"], "SOL-1");
        let spread = json!({"session_id": "s", "id": "SOL-2", "tasks": [{"id": "T1"}]});
        assert_eq!(solution_of_artifact(&spread).unwrap()["id"], "SOL-2");
        let summary = json!({"bound": [{"issue_id": "x"}]});
        assert!(
            solution_of_artifact(&summary).is_none(),
            "a list of ids is not a plan"
        );
    }
}
