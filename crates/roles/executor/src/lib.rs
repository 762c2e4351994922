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
//! * phase 4 ([`Role::validate`]): syntax, acceptance criteria and affected
//!   tests through `wavecrew-validation`, an optional review through a
//!   review-mode attempt, then `task_complete` / `task_failed` with the
//!   seed's fields plus the evidence.
//!
//! ```
//! use wavecrew_role_executor::is_critical;
//!
//! // Code review turns on for critical areas, named as whole words.
//! assert_eq!(is_critical("Add rate limits to the public API"), Some("api".into()));
//! assert_eq!(is_critical("Rapid prototyping"), None);
//! ```

use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};
use wavecrew_backends::attempts::{AttemptEvent, TaskAttempts, TaskRun, run_task};
use wavecrew_backends::config::Config;
use wavecrew_backends::prompts::Prompts;
use wavecrew_backends::routing::{Decision, resolve_executor};
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, Plan, Task, TaskStatus};
use wavecrew_validation::{
    AcceptanceOptions, CheckStatus, SyntaxOptions, affected_tests, check_acceptance, check_syntax,
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

/// A callback for every attempt event of a task.
pub type AttemptHook = Box<dyn Fn(&Task, &AttemptEvent) + Send + Sync>;

/// The executor role.
pub struct Executor {
    /// The project root (the folder holding `.workflow/`).
    pub project_root: PathBuf,
    /// The session folder (`.workflow/.team/<id>/`).
    pub session_dir: PathBuf,
    /// `wavecrew.toml`.
    pub config: Config,
    /// `--backend`, when given.
    pub run_backend: Option<String>,
    /// Called for every attempt event (progress lines, bus records).
    pub on_attempt: AttemptHook,
    prompts: Prompts,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("project_root", &self.project_root)
            .field("session_dir", &self.session_dir)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor for a session.
    pub fn new(project_root: PathBuf, session_dir: PathBuf, config: Config) -> Self {
        Executor {
            project_root,
            session_dir,
            config,
            run_backend: None,
            on_attempt: Box::new(|_, _| {}),
            prompts: Prompts::new(),
        }
    }

    fn plan_path(&self, task: &Task) -> Option<PathBuf> {
        let named = task
            .metadata
            .get("plan_path")
            .and_then(Value::as_str)
            .map(|p| self.project_root.join(p));
        [
            named,
            Some(self.session_dir.join("plan.md")),
            Some(self.project_root.join(".workflow/plan.md")),
        ]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
    }

    /// Where the agent works: the task's `working_dir` inside the project,
    /// else the project root.
    fn work_dir(&self, task: &Task) -> PathBuf {
        task.working_dir()
            .map(|d| self.project_root.join(d))
            .filter(|d| {
                d.canonicalize()
                    .ok()
                    .zip(self.project_root.canonicalize().ok())
                    .is_some_and(|(d, r)| d.starts_with(r))
            })
            .unwrap_or_else(|| self.project_root.clone())
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
    /// The attempts (after phase 3).
    pub run: Option<TaskRun>,
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

fn now() -> String {
    jiff::Timestamp::now().to_string()
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
        let plan_path = self.plan_path(task);
        let plan = match &plan_path {
            Some(p) => Some(Plan::parse(&std::fs::read_to_string(p).map_err(|e| {
                PhaseError(format!("cannot read the plan {}: {e}", p.display()))
            })?)),
            None => None,
        };
        let decision = resolve_executor(
            &self.config,
            self.run_backend.as_deref(),
            task.executor(),
            plan.as_ref().and_then(|p| p.execution_backend.as_deref()),
            &task.description,
        );
        let review = resolve_code_review(task, plan.as_ref());
        Ok(ExecWork {
            cwd: self.work_dir(task),
            plan,
            plan_path,
            decision,
            review,
            run: None,
        })
    }

    async fn execute(&self, task: &Task, work: &mut ExecWork) -> Result<(), PhaseError> {
        let context = plan_context(work.plan.as_ref(), task);
        let criteria: Vec<String> = task
            .acceptance_criteria()
            .into_iter()
            .map(|c| c.text)
            .collect();
        let wisdom = wavecrew_core::wisdom::read_wisdom(&self.session_dir);
        let max_attempts = self.config.routing.max_retries + 1;
        // A syntax failure after a successful attempt goes back to the
        // agent with the compiler's words, within the same retry budget.
        let validation_error: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
        let render = |n: u32, error: Option<&str>| {
            let pending = validation_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let error = pending.as_deref().or(error);
            let ctx = json!({
                "task": {
                    "id": task.id.as_str(), "title": task.title(), "description": task.description,
                    "acceptance_criteria": criteria, "files": task.files(),
                },
                "cwd": work.cwd.display().to_string(),
                "plan_context": context,
                "wisdom": wisdom,
                "previous_error": error,
                "attempt": n,
                "max_attempts": max_attempts,
            });
            self.prompts
                .render("execution", &ctx)
                .unwrap_or_else(|e| format!("{e}\n\n{}", task.description))
        };
        let on_event = |e: &AttemptEvent| (self.on_attempt)(task, e);
        let mut rounds = 0;
        loop {
            let run = run_task(&TaskAttempts {
                config: &self.config,
                backend: &work.decision.backend,
                task_id: &task.id,
                cwd: &work.cwd,
                mode: Mode::Write,
                session_dir: &self.session_dir,
                prompt: &render,
                on_event: &on_event,
            })
            .await;
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
                return Err(PhaseError(
                    run.failure
                        .unwrap_or_else(|| "the backend did not succeed".into()),
                ));
            }
            let attempts = work.run.as_ref().map_or(0, |r| r.attempts.len());
            let syntax = check_syntax(
                &work.cwd,
                &SyntaxOptions {
                    changed_files: run.files_changed(),
                    ..SyntaxOptions::default()
                },
            )
            .await;
            if syntax.status != CheckStatus::Fail
                || rounds >= self.config.routing.max_retries
                || attempts >= usize::try_from(max_attempts).unwrap_or(usize::MAX)
            {
                return Ok(());
            }
            rounds += 1;
            let words: Vec<String> = syntax
                .checks
                .iter()
                .filter(|c| c.status == CheckStatus::Fail)
                .map(|c| {
                    let out = c.output.trim();
                    let tail: String = out
                        .chars()
                        .skip(out.chars().count().saturating_sub(4000))
                        .collect();
                    format!("`{}`:\n{tail}", c.command)
                })
                .collect();
            *validation_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(format!("the syntax check failed:\n{}", words.join("\n")));
        }
    }

    async fn validate(&self, task: &Task, work: &ExecWork) -> Report {
        let run = work.run.as_ref();
        let files: Vec<String> = run.map(TaskRun::files_changed).unwrap_or_default();
        let syntax = check_syntax(
            &work.cwd,
            &SyntaxOptions {
                changed_files: files.clone(),
                ..SyntaxOptions::default()
            },
        )
        .await;
        let final_text = run
            .and_then(TaskRun::last)
            .and_then(|o| o.final_message.clone())
            .unwrap_or_default();
        let acceptance = check_acceptance(
            &task.acceptance_criteria(),
            &work.cwd,
            &AcceptanceOptions {
                implementation_text: final_text.clone(),
                ..AcceptanceOptions::default()
            },
        )
        .await;
        let tests = affected_tests(&work.cwd, &files);
        let review_status = if work.review.0 {
            let review_prompt = self.prompts.render(
                "review",
                &json!({"task": {"id": task.id.as_str(), "title": task.title(), "description": task.description,
                          "acceptance_criteria": task.acceptance_criteria().into_iter().map(|c| c.text).collect::<Vec<_>>()},
                        "cwd": work.cwd.display().to_string()}),
            );
            let prompt_text = review_prompt.unwrap_or_default();
            let render = |_: u32, _: Option<&str>| prompt_text.clone();
            let review_task = wavecrew_core::TaskId::new(format!("{}-review", task.id.as_str()))
                .unwrap_or_else(|_| task.id.clone());
            let review = run_task(&TaskAttempts {
                config: &self.config,
                backend: &work.decision.backend,
                task_id: &review_task,
                cwd: &work.cwd,
                mode: Mode::Review,
                session_dir: &self.session_dir,
                prompt: &render,
                on_event: &|_| {},
            })
            .await;
            if review.success {
                "completed"
            } else {
                "failed"
            }
        } else {
            "skipped"
        };
        let syntax_word = match syntax.status {
            CheckStatus::Pass => "pass",
            CheckStatus::Skipped => "skipped",
            _ => "fail",
        };
        let acceptance_word = match acceptance.status {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail | CheckStatus::TimedOut => "fail",
            _ => "manual_review",
        };
        let evidence = json!({
            "syntax": syntax,
            "acceptance": acceptance,
            "affected_tests": tests.iter().map(|t| json!({"source": t.source, "test": t.test})).collect::<Vec<_>>(),
            "attempts": run.map(|r| r.attempts.iter().map(|a| json!({
                "attempt": a.attempt, "backend": a.outcome.backend, "outcome": a.outcome.outcome.name(),
                "duration_ms": a.outcome.duration_ms, "session_id": a.outcome.session_id,
            })).collect::<Vec<_>>()),
            "backend_switches": run.map(|r| r.switches.clone()),
            "backend_decision": work.decision,
            "code_review_decision": work.review.1,
            "plan_path": work.plan_path,
        });
        let failed = syntax_word == "fail" || acceptance_word == "fail";
        if !failed && !final_text.is_empty() {
            let _ = wavecrew_core::wisdom::append_wisdom(
                &self.session_dir,
                "executor",
                &task.id,
                &final_text,
            );
        }
        let mut data = Map::new();
        data.insert("task_id".into(), json!(task.id.as_str()));
        let used_backend = run
            .and_then(TaskRun::last)
            .map_or_else(|| work.decision.backend.clone(), |o| o.backend.clone());
        if failed {
            let error = if syntax_word == "fail" {
                "syntax check failed"
            } else {
                "an acceptance criterion failed"
            };
            data.insert("error".into(), json!(error));
            data.insert("retry_count".into(), json!(task.attempts));
            data.insert(
                "validation_results".into(),
                json!({"syntax": syntax_word, "acceptance": acceptance_word}),
            );
        } else {
            data.insert("status".into(), json!("success"));
            data.insert("files_modified".into(), json!(files));
            data.insert(
                "validation_results".into(),
                json!({"syntax": syntax_word, "acceptance": acceptance_word,
                       "tests_found": tests.len(), "code_review": review_status}),
            );
        }
        data.insert("execution_backend".into(), json!(used_backend));
        data.insert("timestamp".into(), json!(now()));
        data.insert("evidence".into(), evidence);
        Report {
            status: if failed {
                TaskStatus::Failed
            } else {
                TaskStatus::Completed
            },
            kind: if failed {
                "task_failed"
            } else {
                "task_complete"
            }
            .into(),
            summary: if failed {
                format!("{} failed validation ({used_backend})", task.id.as_str())
            } else {
                format!(
                    "{} complete ({used_backend}): {} file(s) changed",
                    task.id.as_str(),
                    files.len()
                )
            },
            result: Value::Object(data.clone()),
            data,
        }
    }

    fn failure_report(&self, task: &Task, error: &PhaseError) -> Report {
        let mut report = Report::failure("task_failed", task, &error.0);
        report
            .data
            .insert("retry_count".into(), json!(task.attempts));
        report.data.insert(
            "validation_results".into(),
            json!({"syntax": "not_run", "acceptance": "not_verified"}),
        );
        report.data.insert("timestamp".into(), json!(now()));
        report.result = Value::Object(report.data.clone());
        report
    }
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
