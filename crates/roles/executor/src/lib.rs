//! Seed 000, the generic `IMPL-*` executor, as a [`Role`].
//!
//! * phase 2 ([`Role::prepare`]): the plan (`metadata.plan_path`, else the
//!   session's `plan.md`, else `.workflow/plan.md`), the backend (`--backend`
//!   → task `metadata.executor` → plan `Execution Backend:` → auto) and code
//!   review (task `metadata.code_review` → plan `Code Review:` → critical
//!   keywords matched on whole words, so "rapid" is not "api");
//! * phase 3 ([`Role::execute`]): the seed's execution prompt through the
//!   backend, with retries (the error in the prompt, at most 3) and the
//!   fallback chain; the result counts once the process has finished, with
//!   the files it really changed;
//! * phase 4 ([`Role::validate`]): the role kit's finish phase, with the
//!   executor's own checks ([`Finish::check`]): syntax, acceptance criteria
//!   and affected tests through `wavecrew-validation`, an optional review
//!   through a review-mode attempt; then `task_complete` / `task_failed`
//!   with the seed's fields plus the evidence.
//!
//! ```
//! use wavecrew_role_executor::is_critical;
//!
//! // Code review turns on for critical areas, named as whole words.
//! assert_eq!(is_critical("Add rate limits to the public API"), Some("api".into()));
//! assert_eq!(is_critical("Rapid prototyping"), None);
//! ```

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};
use wavecrew_backends::attempts::{AttemptEvent, TaskRun};
use wavecrew_backends::routing::Decision;
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, NewMessage, Plan, Task, TaskStatus};
use wavecrew_role_kit::{
    Attempt, Checked, Finish, Gate, ReportBuilder, Review, RoleContext, backend_used, derived_id,
};
use wavecrew_validation::{
    CheckStatus, SyntaxReport, affected_tests, check_acceptance, check_syntax,
};

/// The seed's critical keywords: code review is on when one appears.
pub const CRITICAL_KEYWORDS: [&str; 5] = ["auth", "security", "payment", "api", "database"];

static CRITICAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b({})\b", CRITICAL_KEYWORDS.join("|"))).expect("valid regex")
});

/// Whether a description names a critical area (whole words only).
pub fn is_critical(description: &str) -> Option<String> {
    CRITICAL
        .captures(description)
        .map(|c| c[1].to_ascii_lowercase())
}

/// Seed 000's code-review resolution: task → plan → critical keywords.
pub fn resolve_code_review(task: &Task, plan: Option<&Plan>) -> (bool, String) {
    if let Some(on) = task.code_review() {
        return (on, format!("task metadata.code_review = {on}"));
    }
    if let Some(on) = plan.and_then(|p| p.code_review) {
        return (
            on,
            format!(
                "plan: Code Review: {}",
                if on { "enabled" } else { "disabled" }
            ),
        );
    }
    match is_critical(&task.description) {
        Some(word) => (
            true,
            format!("critical keyword `{word}` in the description"),
        ),
        None => (false, "no critical keyword".into()),
    }
}

/// The executor role.
#[derive(Debug, Clone)]
pub struct Executor {
    /// The session, configuration, bus and templates.
    pub ctx: RoleContext,
}

impl Executor {
    /// An executor for a session.
    pub fn new(ctx: RoleContext) -> Self {
        Executor { ctx }
    }

    fn plan_path(&self, task: &Task) -> Option<PathBuf> {
        let named = task
            .metadata
            .get("plan_path")
            .and_then(Value::as_str)
            .map(|p| self.ctx.project_root.join(p));
        [
            named,
            Some(self.ctx.session_dir.join("plan.md")),
            Some(self.ctx.project_root.join(".workflow/plan.md")),
        ]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
    }

    /// Where the agent works: the task's `working_dir` inside `root` (the
    /// task's workspace), else `root`; the same rule `wavecrew check`
    /// follows ([`wavecrew_sys::path::working_dir`]). A folder that leaves
    /// the project fails the task; one that does not exist (yet) is
    /// `root`.
    fn work_dir(task: &Task, root: &std::path::Path) -> Result<PathBuf, PhaseError> {
        let dir = wavecrew_sys::path::working_dir(root, task.working_dir())
            .map_err(|e| PhaseError::input(format!("the task's working_dir {e}")))?;
        Ok(if dir.is_dir() { dir } else { root.to_owned() })
    }
}

/// What phase 2 found and phase 3 did.
#[derive(Debug)]
pub struct ExecWork {
    /// The plan, when there is one.
    pub plan: Option<Plan>,
    /// Where it came from.
    pub plan_path: Option<PathBuf>,
    /// The backend decision.
    pub decision: Decision,
    /// Whether to review, and why.
    pub review: (bool, String),
    /// Where the agent works.
    pub cwd: PathBuf,
    /// The task's workspace: its own worktree, or the project folder.
    pub workspace: wavecrew_role_kit::Workspace,
    /// The attempts (after phase 3).
    pub run: Option<TaskRun>,
    /// In a revision after a merge conflict: what the agent is told about
    /// it.
    pub conflict: Option<String>,
    /// In a revision after the merged result failed `[integration]
    /// verify`: the failure, the first attempt's previous error.
    pub previous_error: Option<String>,
    /// The commit that already landed this task (an earlier run landed it
    /// and was killed before it could record so): the task completes from
    /// it and its agent is not run again.
    pub landed: Option<String>,
    /// What the last attempt changed and the syntax check of the tree it
    /// left: phase 4 takes both rather than reading and checking the same
    /// tree again (a `cargo check` of a large workspace is seconds).
    pub syntax: Option<(Vec<String>, SyntaxReport)>,
}

/// What `work` changed: in a worktree, exactly the task's branch against
/// its base; in place, what the agent's attempts reported.
/// `seen`: the work tree's status read since its last change, if any.
fn changed_files(
    work: &ExecWork,
    seen: Option<&wavecrew_sys::git::TreeStatus>,
) -> Result<Vec<String>, PhaseError> {
    Ok(match work.workspace.changed_files_seen(seen)? {
        Some(files) => files,
        None => work
            .run
            .as_ref()
            .map(TaskRun::files_changed)
            .unwrap_or_default(),
    })
}

/// The final message of `task`'s latest attempt (its `outcome.json`).
fn last_final_message(session_dir: &Path, task: &Task) -> Option<String> {
    let layout = wavecrew_core::SessionLayout::new(session_dir);
    let dir = layout.attempts(task.id.as_str());
    let latest = *layout.attempt_numbers(task.id.as_str()).last()?;
    let text = std::fs::read_to_string(dir.join(latest.to_string()).join("outcome.json")).ok()?;
    let outcome: serde_json::Value = serde_json::from_str(&text).ok()?;
    outcome["final_message"].as_str().map(str::to_owned)
}

fn plan_context(plan: Option<&Plan>, task: &Task) -> String {
    let Some(plan) = plan else {
        return String::new();
    };
    let mut parts = Vec::new();
    for title in ["Architecture", "Technical Stack"] {
        if let Some(text) = plan.section(title) {
            parts.push(format!("## {title}\n{}", text.trim()));
        }
    }
    // The text after the task id, up to the next task id (as the seed).
    let id = task.id.as_str();
    if let Some(at) = plan.text.find(id) {
        let rest = &plan.text[at + id.len()..];
        let end = rest.find("IMPL-").unwrap_or(rest.len());
        let own = rest[..end].trim();
        if !own.is_empty() {
            parts.push(format!("## {id} in the plan\n{own}"));
        }
    }
    parts.join("\n\n")
}

/// The subject of a task's commit: its title, led by its id.
fn commit_message(task: &Task) -> String {
    let (id, title) = (task.id.as_str(), task.title());
    if title.starts_with(id) {
        title.to_owned()
    } else {
        format!("{id}: {title}")
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

impl Executor {
    /// The task's plan (its path and text, when there is one) and the
    /// backend decided from the task and the plan.
    fn plan_and_backend(
        &self,
        task: &Task,
    ) -> Result<(Option<PathBuf>, Option<Plan>, Decision), PhaseError> {
        let plan_path = self.plan_path(task);
        let plan = match &plan_path {
            Some(p) => Some(Plan::parse(&std::fs::read_to_string(p).map_err(|e| {
                PhaseError::input(format!("cannot read the plan {}: {e}", p.display()))
            })?)),
            None => None,
        };
        let decision = self.ctx.decide(
            task,
            plan.as_ref().and_then(|p| p.execution_backend.as_deref()),
        );
        Ok((plan_path, plan, decision))
    }

    /// What the `execution` template of `task` is rendered with, but the
    /// attempt's number and the previous error.
    fn prompt_values(&self, task: &Task, plan: Option<&Plan>, cwd: &std::path::Path) -> Value {
        let criteria: Vec<String> = task
            .acceptance_criteria()
            .into_iter()
            .map(|c| c.text)
            .collect();
        json!({
            "task": {
                "id": task.id.as_str(), "title": task.title(), "description": task.description,
                "acceptance_criteria": criteria, "files": task.files(),
            },
            "cwd": cwd.display().to_string(),
            "plan_context": plan_context(plan, task),
            "wisdom": wavecrew_core::wisdom::read_wisdom(&self.ctx.session_dir),
            "previous_error": null,
            "attempt": 1,
            "max_attempts": self.ctx.max_attempts(),
        })
    }
}

#[async_trait::async_trait]
impl wavecrew_role_kit::PromptPreview for Executor {
    async fn preview(&self, task: &Task) -> Result<wavecrew_role_kit::Preview, PhaseError> {
        // As `prepare` decides, but creating nothing: the next claim's
        // workspace is only named.
        let (_, plan, decision) = self.plan_and_backend(task)?;
        let claim = task.attempts + 1;
        let cwd = Self::work_dir(task, &self.ctx.workspace_dir(task, claim)?)?;
        let mut values = self.prompt_values(task, plan.as_ref(), &cwd);
        values["attempt"] = json!(wavecrew_backends::attempts::next_attempt(
            &self.ctx.session_dir,
            &task.id
        ));
        Ok(wavecrew_role_kit::Preview {
            marked: self.ctx.render("execution", &values)?,
            backend: decision.backend,
            attempts_id: task.id.clone(),
        })
    }
}

#[async_trait::async_trait]
impl Role for Executor {
    type Work = ExecWork;

    fn name(&self) -> &'static str {
        "executor"
    }

    fn prefix(&self) -> &'static str {
        "IMPL"
    }

    /// Every `IMPL-*` task, whatever its owner is called: sessions name the
    /// role that owns them (`developer`, `executor`, …), and the prefix is
    /// what binds them to this binary.
    fn takes(&self, task: &Task) -> bool {
        task.id.as_str().starts_with("IMPL-")
    }

    async fn prepare(&self, task: &Task) -> Result<ExecWork, PhaseError> {
        let (plan_path, plan, decision) = self.plan_and_backend(task)?;
        let review = resolve_code_review(task, plan.as_ref());
        // Work that already landed is the task's evidence: no worktree,
        // no agent (see `ExecWork::landed`).
        // Only a task an earlier attempt ran can have landed.
        let tried = !wavecrew_core::SessionLayout::new(&self.ctx.session_dir)
            .attempt_numbers(task.id.as_str())
            .is_empty();
        let landed = if tried {
            self.ctx.landed_commit(task)?
        } else {
            None
        };
        let workspace = match &landed {
            Some(_) => wavecrew_role_kit::Workspace::InPlace {
                dir: self.ctx.project_root.clone(),
            },
            None => self.ctx.workspace_by_graph(task, task.attempts)?,
        };
        Ok(ExecWork {
            cwd: Self::work_dir(task, workspace.dir())?,
            workspace,
            plan,
            plan_path,
            decision,
            review,
            run: None,
            conflict: None,
            previous_error: None,
            landed,
            syntax: None,
        })
    }

    async fn execute(&self, task: &Task, work: &mut ExecWork) -> Result<(), PhaseError> {
        if work.landed.is_some() {
            return Ok(());
        }
        let ctx = &self.ctx;
        let mut fixed = self.prompt_values(task, work.plan.as_ref(), &work.cwd);
        fixed["conflict"] = json!(work.conflict);
        let max_attempts = ctx.max_attempts();
        // A syntax failure after a successful attempt goes back to the
        // agent with the compiler's words, within the same retry budget.
        // A revision after a failed check of the merged result starts
        // with that failure.
        let validation_error: std::sync::Mutex<Option<String>> =
            std::sync::Mutex::new(work.previous_error.take());
        let render = |n: u32, error: Option<&str>| {
            let pending = validation_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let error = pending.as_deref().or(error);
            let mut values = fixed.clone();
            values["previous_error"] = json!(error);
            values["attempt"] = json!(n);
            ctx.render("execution", &values)
        };
        let on_event = |e: &AttemptEvent| self.on_attempt(task, e);
        let mut rounds = 0;
        loop {
            let run = ctx
                .attempt(
                    &Attempt::new(
                        &task.id,
                        &work.decision.backend,
                        &work.cwd,
                        Mode::Write,
                        &render,
                    )
                    .for_task(task)
                    .on_event(&on_event)
                    // The first round starts in the worktree as it was
                    // opened; a later one asks git (the agent may have
                    // moved HEAD).
                    .in_work_tree(if rounds == 0 {
                        work.workspace.work_tree_git()
                    } else {
                        None
                    })
                    .starting_clean(rounds == 0 && work.workspace.starts_clean()),
                )
                .await?;
            let merged = match work.run.take() {
                Some(mut earlier) => {
                    earlier.attempts.extend(run.attempts.iter().cloned());
                    earlier.switches.extend(run.switches.iter().cloned());
                    earlier.success = run.success;
                    earlier.failure.clone_from(&run.failure);
                    earlier
                }
                None => run.clone(),
            };
            work.run = Some(merged);
            if !run.success {
                return Err(PhaseError::agent(
                    run.failure
                        .unwrap_or_else(|| "the backend did not succeed".into()),
                ));
            }
            let attempts = work.run.as_ref().map_or(0, |r| r.attempts.len());
            // The tree as the round's last attempt left it: its status,
            // taken as the agent ended, says what changed.
            let seen = run.last().and_then(|o| o.tree_after.as_deref());
            let files = changed_files(work, seen)?;
            let syntax = check_syntax(&work.cwd, &ctx.syntax_options(files.clone())).await;
            let status = syntax.status;
            work.syntax = Some((files, syntax.clone()));
            if status != CheckStatus::Fail
                || rounds >= ctx.config.routing.max_retries
                || attempts >= usize::try_from(max_attempts).unwrap_or(usize::MAX)
            {
                return Ok(());
            }
            rounds += 1;
            let words: Vec<String> = syntax
                .checks
                .iter()
                .filter(|c| c.status == CheckStatus::Fail)
                // Whole: a long output is cut by the prompt budget, with a
                // marker and the full text in the attempt folder.
                .map(|c| format!("`{}`:\n{}", c.command, c.output.trim()))
                .collect();
            *validation_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(format!("the syntax check failed:\n{}", words.join("\n")));
        }
    }

    /// Validation, then the merge queue, with one revision after a
    /// conflict with work that landed meanwhile (the role kit's loop); a
    /// second conflict leaves the task `blocked` for a person, naming the
    /// other tasks and the files.
    async fn validate(&self, task: &Task, work: &ExecWork) -> Report {
        if let Some(commit) = &work.landed {
            return self.completed_from_landing(task, commit);
        }
        wavecrew_role_kit::finish(self, task, work).await
    }
}

/// What the executor's own checks found: phase 4's evidence.
#[derive(Debug)]
pub struct ExecEvidence {
    syntax: SyntaxReport,
    acceptance: wavecrew_validation::AcceptanceReport,
    tests: Vec<wavecrew_validation::AffectedTest>,
    review_status: &'static str,
    final_text: String,
}

impl ExecEvidence {
    fn syntax_word(&self) -> &'static str {
        match self.syntax.status {
            CheckStatus::Pass => "pass",
            CheckStatus::Skipped => "skipped",
            CheckStatus::TimedOut => "inconclusive",
            _ => "fail",
        }
    }

    fn acceptance_word(&self) -> &'static str {
        match self.acceptance.status {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail | CheckStatus::TimedOut => "fail",
            _ => "manual_review",
        }
    }

    fn validation_results(&self) -> Value {
        json!({"syntax": self.syntax_word(), "acceptance": self.acceptance_word(),
               "tests_found": self.tests.len(), "code_review": self.review_status})
    }
}

impl Executor {
    /// Seed 000's evidence record of `work` as the gate found it.
    fn evidence(work: &ExecWork, gate: &Gate<'_, ExecEvidence>) -> Value {
        let run = work.run.as_ref();
        let e = &gate.checked.evidence;
        json!({
            "syntax": e.syntax,
            "acceptance": e.acceptance,
            "affected_tests": e.tests.iter().map(|t| json!({"source": t.source, "test": t.test})).collect::<Vec<_>>(),
            "attempts": run.map(|r| r.attempts.iter().map(|a| {
                let mut attempt = json!({
                    "attempt": a.attempt, "backend": a.outcome.backend,
                    "outcome": a.outcome.outcome.name(), "duration_ms": a.outcome.duration_ms,
                    "session_id": a.outcome.session_id,
                });
                // The hosts its network reached and was refused, when it had
                // one of its own.
                if let Some(network) = &a.outcome.network {
                    attempt["network"] = json!(network);
                }
                attempt
            }).collect::<Vec<_>>()),
            "backend_switches": run.map(|r| r.switches.clone()),
            "backend_decision": work.decision,
            "code_review_decision": work.review.1,
            "plan_path": work.plan_path,
            "base_tests": gate.base_tests,
        })
    }
}

#[async_trait::async_trait]
impl Finish for Executor {
    type Work = ExecWork;
    type Evidence = ExecEvidence;

    fn finish_role(&self) -> &'static str {
        "executor"
    }

    fn finish_ctx(&self) -> &RoleContext {
        &self.ctx
    }

    fn workspace<'w>(&self, work: &'w ExecWork) -> &'w wavecrew_role_kit::Workspace {
        &work.workspace
    }

    fn files_in_place(&self, work: &ExecWork) -> Vec<String> {
        work.run
            .as_ref()
            .map(TaskRun::files_changed)
            .unwrap_or_default()
    }

    /// What phase 3 found changed (nothing touched the tree since), or
    /// read now.
    fn changed_files(&self, work: &ExecWork) -> Result<Vec<String>, PhaseError> {
        match &work.syntax {
            Some((files, _)) => Ok(files.clone()),
            None => changed_files(work, None),
        }
    }

    fn commit_message(&self, task: &Task, _work: &ExecWork) -> String {
        commit_message(task)
    }

    /// Seed 000's phase 4: syntax (the tree phase 3 checked), acceptance
    /// criteria, affected tests, and a code review when it is on.
    async fn check(
        &self,
        task: &Task,
        work: &ExecWork,
        files: &[String],
        _lane_failed: bool,
    ) -> Result<Checked<ExecEvidence>, PhaseError> {
        let syntax = match &work.syntax {
            Some((_, syntax)) => syntax.clone(),
            None => check_syntax(&work.cwd, &self.ctx.syntax_options(files.to_vec())).await,
        };
        // A check that ran out of time says nothing of the code: it is an
        // environment problem, reported, and never the agent's failure.
        let inconclusive = syntax.inconclusive(self.ctx.syntax_limit());
        let final_text = work
            .run
            .as_ref()
            .and_then(TaskRun::last)
            .and_then(|o| o.final_message.clone())
            .unwrap_or_default();
        // A criterion that runs the project's suite is judged by the task's
        // one run of it, which the comparison with the base reads too.
        let criteria = task.acceptance_criteria();
        let options = self
            .ctx
            .acceptance_options(
                task,
                &work.workspace,
                &work.cwd,
                &criteria,
                final_text.clone(),
            )
            .await;
        let acceptance = check_acceptance(&criteria, &work.cwd, &options).await;
        let tests = affected_tests(&work.cwd, files);
        let review_status = if work.review.0 {
            let review = self
                .ctx
                .review(&Review {
                    task,
                    id: derived_id(&task.id, "review")?,
                    backend: &work.decision.backend,
                    cwd: &work.cwd,
                    criteria: task
                        .acceptance_criteria()
                        .into_iter()
                        .map(|c| c.text)
                        .collect(),
                })
                .await?;
            if review.success {
                "completed"
            } else {
                "failed"
            }
        } else {
            "skipped"
        };
        let evidence = ExecEvidence {
            syntax,
            acceptance,
            tests,
            review_status,
            final_text,
        };
        let failure = if evidence.syntax_word() == "fail" {
            Some("syntax check failed".to_owned())
        } else if evidence.acceptance_word() == "fail" {
            Some("an acceptance criterion failed".to_owned())
        } else {
            None
        };
        Ok(Checked {
            failure,
            inconclusive,
            evidence,
        })
    }

    async fn completed(
        &self,
        task: &Task,
        work: &ExecWork,
        gate: &Gate<'_, ExecEvidence>,
    ) -> ReportBuilder {
        let e = &gate.checked.evidence;
        // What the agent learned is wisdom once its work counts (landed,
        // or in place): never a version that conflicted.
        if !e.final_text.is_empty() {
            let _ = wavecrew_core::wisdom::append_wisdom(
                &self.ctx.session_dir,
                "executor",
                &task.id,
                &e.final_text,
            );
        }
        let used_backend = backend_used(work.run.as_ref(), &work.decision.backend);
        ReportBuilder::completed("task_complete", task)
            .field("status", "success")
            .field("files_modified", gate.files)
            .field("validation_results", e.validation_results())
            .summary(format!(
                "{} complete ({used_backend}): {} file(s) changed",
                task.id.as_str(),
                gate.files.len()
            ))
            .field("execution_backend", &used_backend)
            .field("timestamp", now())
            .field("evidence", Self::evidence(work, gate))
    }

    fn failed(&self, task: &Task, work: &ExecWork, gate: &Gate<'_, ExecEvidence>) -> ReportBuilder {
        let e = &gate.checked.evidence;
        let used_backend = backend_used(work.run.as_ref(), &work.decision.backend);
        ReportBuilder::new(TaskStatus::Failed, "task_failed", task)
            .field("error", gate.failure.unwrap_or("a check failed"))
            .field("retry_count", task.attempts)
            .field(
                "validation_results",
                json!({"syntax": e.syntax_word(), "acceptance": e.acceptance_word()}),
            )
            .summary(format!(
                "{} failed validation ({used_backend})",
                task.id.as_str()
            ))
            .field("execution_backend", &used_backend)
            .field("timestamp", now())
            .field("evidence", Self::evidence(work, gate))
    }

    fn awaiting(
        &self,
        _task: &Task,
        work: &ExecWork,
        gate: &Gate<'_, ExecEvidence>,
        held: ReportBuilder,
    ) -> ReportBuilder {
        held.field(
            "validation_results",
            gate.checked.evidence.validation_results(),
        )
        .field("evidence", Self::evidence(work, gate))
    }

    fn phase_failed(&self, task: &Task, error: &PhaseError) -> ReportBuilder {
        ReportBuilder::phase_failed("task_failed", task, error)
            .field("retry_count", task.attempts)
            .field(
                "validation_results",
                json!({"syntax": "not_run", "acceptance": "not_verified"}),
            )
            .field("timestamp", now())
    }

    fn revision_failed(&self, task: &Task, report: ReportBuilder) -> ReportBuilder {
        report
            .field("retry_count", task.attempts)
            .field("timestamp", now())
    }

    fn unlanded(
        &self,
        task: &Task,
        _work: &ExecWork,
        second: &wavecrew_role_kit::Landed,
        workspace: &wavecrew_role_kit::Workspace,
        earlier: &[Value],
    ) -> ReportBuilder {
        second
            .unlanded_report("task_failed", task, workspace, earlier)
            .field("timestamp", now())
    }

    /// A revision after `conflict`: a worktree of the new integration tip
    /// (the next claim's), the agent told what conflicted, phase 3 again.
    async fn revise(
        &self,
        task: &Task,
        work: &ExecWork,
        conflict: &wavecrew_role_kit::Landed,
    ) -> Result<ExecWork, PhaseError> {
        let workspace = self.ctx.workspace(task, task.attempts.max(1) + 1)?;
        let mut revision = ExecWork {
            cwd: Self::work_dir(task, workspace.dir())?,
            workspace,
            plan: work.plan.clone(),
            plan_path: work.plan_path.clone(),
            decision: work.decision.clone(),
            review: work.review.clone(),
            run: None,
            conflict: conflict.conflict_brief(&work.workspace),
            previous_error: conflict.rejection_brief(),
            landed: None,
            syntax: None,
        };
        self.execute(task, &mut revision).await?;
        Ok(revision)
    }
}

impl Executor {
    /// The report of a task whose work an earlier run landed (`commit`,
    /// found by its trailer on the integration branch): completed, with
    /// the files of that landing; nothing is run or landed again.
    fn completed_from_landing(&self, task: &Task, commit: &str) -> Report {
        let files = wavecrew_sys::git::git(&self.ctx.project_root)
            .args(["diff-tree", "--no-commit-id", "--name-only", "-r", "-z"])
            .arg(format!("{commit}^1"))
            .arg(commit)
            .run()
            .map(|out| wavecrew_sys::git::split_nul(&out))
            .unwrap_or_default();
        // What the agent learned, if the killed run had not written it yet
        // (a line already there is not written again).
        if let Some(learned) = last_final_message(&self.ctx.session_dir, task) {
            let _ = wavecrew_core::wisdom::append_wisdom(
                &self.ctx.session_dir,
                "executor",
                &task.id,
                &learned,
            );
        }
        ReportBuilder::completed("task_complete", task)
            .field("status", "success")
            .field("files_modified", &files)
            .field("merge_commit", commit)
            .field("completed_from", "landing")
            .field("timestamp", now())
            .summary(format!(
                "{} complete: its work had already landed ({}); the agent was not run again",
                task.id.as_str(),
                &commit[..commit.len().min(10)]
            ))
            .build()
    }
}

impl Executor {
    /// Seed 000's progress records on the bus for every attempt event; a
    /// backend switch is also a warning.
    fn on_attempt(&self, task: &Task, event: &AttemptEvent) {
        if let Some(message) = progress_record(task, event)
            && let Err(e) = self.ctx.bus.log(message)
        {
            tracing::warn!("message bus: {e}");
        }
        if let AttemptEvent::Switched(s) = event {
            tracing::warn!(
                "{}: backend {} → {}: {}",
                task.id.as_str(),
                s.from,
                s.to,
                s.reason
            );
        }
    }
}

/// The seed's `progress_update` records: an attempt starts (with the
/// backend), a retry is scheduled, a backend switch (the fallback reported).
pub fn progress_record(task: &Task, event: &AttemptEvent) -> Option<NewMessage> {
    let mut data = Map::new();
    data.insert("task_id".into(), json!(task.id.as_str()));
    let summary = match event {
        AttemptEvent::Started {
            attempt,
            backend,
            resume,
        } => {
            data.insert("batch_index".into(), json!(attempt));
            data.insert("backend".into(), json!(backend));
            if let Some(r) = resume {
                data.insert("resume_session".into(), json!(r));
            }
            format!(
                "{} attempt {attempt} via {backend}{}",
                task.id.as_str(),
                if resume.is_some() { " (resumed)" } else { "" }
            )
        }
        AttemptEvent::Retrying { attempt, delay_ms } => {
            data.insert("batch_index".into(), json!(attempt));
            data.insert("delay_ms".into(), json!(delay_ms));
            format!("{} retry: attempt {attempt}", task.id.as_str())
        }
        AttemptEvent::Switched(s) => {
            data.insert("backend_switch".into(), serde_json::to_value(s).ok()?);
            format!(
                "{} backend switch {} → {}: {}",
                task.id.as_str(),
                s.from,
                s.to,
                s.reason
            )
        }
        AttemptEvent::Finished { .. } => return None,
    };
    Some(NewMessage {
        from: "executor".into(),
        to: Some("coordinator".into()),
        kind: Some("progress_update".into()),
        summary: Some(format!("[executor] {summary}")),
        data: Some(data),
        reference: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::TaskId;

    #[test]
    fn critical_keywords_are_whole_words() {
        assert_eq!(is_critical("Add the REST API"), Some("api".into()));
        assert_eq!(is_critical("rapid prototyping of capital"), None);
        assert_eq!(is_critical("OAuth flow"), None);
        assert_eq!(is_critical("auth middleware"), Some("auth".into()));
    }

    #[test]
    fn review_resolution_task_then_plan_then_keywords() {
        let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "touch the database");
        assert!(resolve_code_review(&t, None).0);
        let plan = Plan::parse("Code Review: disabled\n");
        assert!(!resolve_code_review(&t, Some(&plan)).0);
        t.metadata.insert("code_review".into(), json!(true));
        assert!(resolve_code_review(&t, Some(&plan)).0);
    }
}
