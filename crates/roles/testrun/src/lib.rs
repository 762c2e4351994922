//! Seed 002, the team-testing `TESTRUN-*` executor, as a [`Role`].
//!
//! * phase 2: the description's `Session:`, `Input:` (the test folder) and
//!   coverage target (default 80 %); the framework from the bus state
//!   where ccw really keeps it, `role_state.strategist.test_strategy.
//!   framework` (the seed read `sharedMemory.test_strategy`, which
//!   `get_state` never returns), else detected from the project;
//! * phase 3: the test-fix loop of `wavecrew-validation` (run, rerun
//!   failures for flakes, fix, at most 3 rounds, revert a round that made
//!   things worse) with an agent backend as the fixer ("only fix the test
//!   files"), whose `test-fix` prompt carries the task's own text, the test
//!   command and the targets as plain text and the failing tests with
//!   their output fenced and cut first ([`fix_prompt_context`]); the record goes to `results/run-<NNN>.json`, numbered per
//!   session under a lock;
//! * phase 4: the `state_update` appending to `execution_results`,
//!   `defect_patterns`, `effective_test_patterns` and `coverage_history`
//!   under the bus lock; then the fixes through the role kit's finish phase
//!   (the lane, the tests against the base, the review gate, the merge
//!   queue with `[integration] verify`), and `tests_passed` /
//!   `tests_failed` with `data.ref` = the run file and the seed's report
//!   text.
//!
//! ```
//! use wavecrew_role_testrun::parse_description;
//!
//! let spec = parse_description("CONTEXT:\n  - Input: tests/L1-unit\n  - Coverage target: 75%");
//! assert_eq!(spec.input.as_deref(), Some("tests/L1-unit"));
//! assert_eq!(spec.coverage_target, 75.0);
//! assert_eq!(spec.layer.as_deref(), Some("L1"));
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use regex::Regex;
use serde_json::{Map, Value, json};
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, NewMessage, Task};
use wavecrew_role_kit::{
    Attempt, Checked, Finish, Gate, Landed, ReportBuilder, RoleContext, Workspace, derived_id,
};
use wavecrew_validation::{
    FailureDetail, FixReply, FixRequest, Fixer, Framework, LoopOptions, LoopOutcome, Outcome,
    RunResult, SuiteRun, TestCase, TestOptions, TestReport, TestRunner, TestSource, run_fix_loop,
    write_run_result,
};

/// What a `TESTRUN-*` description says.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRunSpec {
    /// `Session: <path>`.
    pub session: Option<String>,
    /// `Input: <test folder>`.
    pub input: Option<String>,
    /// The coverage target in percent (default 80).
    pub coverage_target: f64,
    /// The layer (`L1`, `L2`, `L3`), when the description names one.
    pub layer: Option<String>,
}

static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?im)^\s*(?:-\s*)?(session|input|coverage target)\s*:\s*(.+?)\s*$")
        .expect("valid regex")
});
static LAYER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(L[123])\b").expect("valid regex"));

/// Read the description's fields.
pub fn parse_description(text: &str) -> TestRunSpec {
    let mut spec = TestRunSpec {
        session: None,
        input: None,
        coverage_target: 80.0,
        layer: LAYER.captures(text).map(|c| c[1].to_owned()),
    };
    for c in FIELD.captures_iter(text) {
        let value = c[2].trim().to_owned();
        match c[1].to_ascii_lowercase().as_str() {
            "session" => spec.session = Some(value),
            "input" => spec.input = Some(value),
            _ => {
                if let Ok(n) = value.trim_end_matches('%').trim().parse::<f64>() {
                    spec.coverage_target = n;
                }
            }
        }
    }
    spec
}

/// The framework named by the strategist (`Jest`, `Pytest`, `Vitest`).
pub fn framework_from_state(state: Option<&Value>) -> Option<Framework> {
    let name = state?
        .pointer("/test_strategy/framework")
        .and_then(Value::as_str)?;
    match name.to_ascii_lowercase().as_str() {
        "jest" => Some(Framework::Jest),
        "vitest" => Some(Framework::Vitest),
        "pytest" => Some(Framework::Pytest),
        "cargo" | "cargo test" => Some(Framework::CargoTest),
        _ => None,
    }
}

/// The `TESTRUN-*` role.
#[derive(Debug, Clone)]
pub struct TestRunRole {
    /// The session, configuration, bus (state reads and appends) and templates.
    pub ctx: RoleContext,
}

/// What the last run of the suite showed that its report does not: the
/// command and the end of its output.
#[derive(Debug, Default, Clone)]
pub struct LastRun {
    /// The command line.
    pub command: Option<String>,
    /// The end of what it printed.
    pub output_tail: String,
}

/// The test runner, recording each suite run's command and output tail for
/// the fixer's prompt.
struct RecordingSource<'a> {
    runner: &'a mut TestRunner,
    last: &'a Mutex<LastRun>,
}

#[async_trait::async_trait]
impl TestSource for RecordingSource<'_> {
    fn framework(&self) -> String {
        TestSource::framework(&*self.runner)
    }

    fn root(&self) -> &Path {
        self.runner.dir()
    }

    fn exclude(&self) -> Vec<PathBuf> {
        TestSource::exclude(&*self.runner)
    }

    async fn run_suite(&mut self) -> wavecrew_validation::Result<SuiteRun> {
        let run = self.runner.run().await?;
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = LastRun {
            command: Some(run.command.clone()),
            output_tail: run.output_tail.clone(),
        };
        Ok(SuiteRun {
            coverage: run.coverage_percent(),
            evidence: run.evidence(),
            report: run.report,
        })
    }

    async fn rerun_cases(
        &mut self,
        cases: &[TestCase],
    ) -> wavecrew_validation::Result<Option<TestReport>> {
        self.runner.rerun_cases(cases).await
    }
}

/// A percentage as the prompt shows it (`95%`, `61.5%`).
fn percent(p: f64) -> String {
    if (p - p.round()).abs() < 0.05 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// The failing tests as one text: each one's name, file and outcome, then
/// its failure output, indented.
pub fn failures_text(failures: &[FailureDetail]) -> String {
    let mut out = String::new();
    for f in failures {
        let outcome = match f.outcome {
            Outcome::Error => "error",
            _ => "failed",
        };
        let _ = writeln!(
            out,
            "- {} ({}, {outcome})",
            f.name,
            f.file.as_deref().unwrap_or("file unknown")
        );
        match f.message.as_deref().map(str::trim_end) {
            Some(m) if !m.trim().is_empty() => {
                for line in m.lines() {
                    let _ = writeln!(out, "  {line}");
                }
            }
            _ => out.push_str("  (the report holds no failure message)\n"),
        }
    }
    out
}

/// What one fix round's prompt is rendered from.
#[derive(Debug, Clone, Copy)]
pub struct FixPromptInput<'a> {
    /// The `TESTRUN-*` task.
    pub task: &'a Task,
    /// The loop's request for this round.
    pub request: &'a FixRequest,
    /// The most rounds the loop asks for.
    pub max_rounds: u32,
    /// The description's `Input:` test folder.
    pub test_dir: Option<&'a str>,
    /// The last suite run's command and output.
    pub last_run: &'a LastRun,
}

/// The context of the `test-fix` template for attempt `attempt` of
/// `max_attempts` of one round: the task's own text, the test command, the
/// numbers and their targets (plain), the failing tests with their output
/// (fenced, cut first), and the end of the run's output when no failure
/// carries a message.
pub fn fix_prompt_context(
    input: &FixPromptInput<'_>,
    previous_error: Option<&str>,
    attempt: u32,
    max_attempts: u32,
) -> Value {
    let r = input.request;
    let any_message = r
        .failures
        .iter()
        .any(|f| f.message.as_deref().is_some_and(|m| !m.trim().is_empty()));
    let test_output = if any_message {
        String::new()
    } else {
        input.last_run.output_tail.trim().to_owned()
    };
    // A subject `TESTRUN-001: Run the L1 tests` is shown after the id once.
    let id = input.task.id.as_str();
    let title = input.task.title();
    let title = title
        .strip_prefix(id)
        .map_or(title, |rest| rest.trim_start_matches(':').trim());
    json!({
        "task": {"id": id, "title": title, "description": input.task.description},
        "round": r.round, "max_rounds": input.max_rounds,
        "cwd": r.root.display().to_string(),
        "test_commands": input.last_run.command.iter().collect::<Vec<_>>(),
        "test_dir": input.test_dir.unwrap_or(""),
        "pass_rate": percent(r.pass_rate * 100.0),
        "pass_rate_target": percent(r.pass_rate_target * 100.0),
        "coverage": r.coverage.map_or_else(|| "unknown".to_owned(), percent),
        "coverage_target": r.coverage_target.map(percent).unwrap_or_default(),
        "failures": failures_text(&r.failures),
        "test_output": test_output,
        "previous_error": previous_error,
        "attempt": attempt,
        "max_attempts": max_attempts,
    })
}

/// The agent that fixes test files.
struct BackendFixer<'a> {
    role: &'a TestRunRole,
    task: &'a Task,
    backend: String,
    test_dir: Option<String>,
    max_rounds: u32,
    last: &'a Mutex<LastRun>,
}

#[async_trait::async_trait]
impl Fixer for BackendFixer<'_> {
    async fn fix(&self, request: &FixRequest) -> wavecrew_validation::Result<FixReply> {
        let last_run = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let ctx = &self.role.ctx;
        let input = FixPromptInput {
            task: self.task,
            request,
            max_rounds: self.max_rounds,
            test_dir: self.test_dir.as_deref(),
            last_run: &last_run,
        };
        let max_attempts = ctx.max_attempts();
        let fixer_error = |e: PhaseError| wavecrew_validation::ValidationError::Fixer {
            round: request.round,
            message: e.message,
        };
        let id =
            derived_id(&self.task.id, &format!("fix{}", request.round)).map_err(fixer_error)?;
        let render = |n: u32, error: Option<&str>| {
            ctx.render(
                "test-fix",
                &fix_prompt_context(&input, error, n, max_attempts),
            )
        };
        let run = ctx
            .attempt(&Attempt::new(
                &id,
                &self.backend,
                &request.root,
                Mode::Write,
                &render,
            ))
            .await
            .map_err(fixer_error)?;
        Ok(FixReply {
            summary: run
                .last()
                .and_then(|o| o.final_message.clone().or_else(|| o.error.clone()))
                .unwrap_or_default(),
        })
    }
}

/// What the phases carry.
#[derive(Debug)]
pub struct TestRunWork {
    spec: TestRunSpec,
    framework: Option<Framework>,
    backend: String,
    outcome: Option<LoopOutcome>,
    record: Option<(PathBuf, RunResult)>,
    /// Where the tests run and the fixes are made: in an isolated session
    /// a worktree of the integration branch (which holds every landed
    /// task's work), whose fixes land through the merge queue.
    workspace: Workspace,
}

fn dedup_append(existing: Option<&Value>, more: &[String]) -> Value {
    let mut list: Vec<Value> = existing
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for m in more {
        if !list.iter().any(|v| v.as_str() == Some(m)) {
            list.push(json!(m));
        }
    }
    Value::Array(list)
}

fn append(existing: Option<&Value>, item: Value) -> Value {
    let mut list: Vec<Value> = existing
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    list.push(item);
    Value::Array(list)
}

/// The seed's report text (`## [executor] Test Execution Results`).
pub fn report_text(task: &Task, r: &RunResult) -> String {
    let coverage = r
        .coverage
        .map_or_else(|| "unknown".into(), |c| format!("{c:.1}%"));
    let target = r
        .coverage_target
        .map_or_else(|| "none".into(), |c| format!("{c:.0}%"));
    let mut out = format!(
        "## [executor] Test Execution Results\n\n**Task**: {}\n**Pass Rate**: {:.1}%\n**Coverage**: {coverage} (target: {target})\n**Fix Iterations**: {}/3\n**Status**: {}\n",
        task.id.as_str(),
        r.pass_rate * 100.0,
        r.iterations,
        if r.passed { "PASSED" } else { "NEEDS REVISION" }
    );
    if !r.defect_patterns.is_empty() {
        out.push_str("\n### Defect Patterns\n");
        for d in &r.defect_patterns {
            let _ = writeln!(out, "- {d}");
        }
    }
    if let Some(f) = &r.failure_summary {
        let _ = write!(out, "\n### Failures\n{f}\n");
    }
    out
}

#[async_trait::async_trait]
impl Role for TestRunRole {
    type Work = TestRunWork;

    fn name(&self) -> &'static str {
        "executor"
    }

    fn prefix(&self) -> &'static str {
        "TESTRUN"
    }

    fn takes(&self, task: &Task) -> bool {
        task.id.as_str().starts_with("TESTRUN-")
    }

    fn completion_kind(&self) -> &'static str {
        "tests_passed"
    }

    async fn prepare(&self, task: &Task) -> Result<TestRunWork, PhaseError> {
        let spec = parse_description(&task.description);
        let state = self
            .ctx
            .bus
            .get_state(Some("strategist"))
            .map_err(|e| PhaseError::session(format!("message bus: {e}")))?;
        let framework = framework_from_state(state.as_ref());
        let decision = self.ctx.decide(task, None);
        let workspace = self.ctx.workspace(task, task.attempts)?;
        Ok(TestRunWork {
            spec,
            framework,
            backend: decision.backend,
            outcome: None,
            record: None,
            workspace,
        })
    }

    async fn execute(&self, task: &Task, work: &mut TestRunWork) -> Result<(), PhaseError> {
        let evidence = self
            .ctx
            .session_dir
            .join("results")
            .join("evidence")
            .join(task.id.as_str());
        let mut runner = TestRunner::new(
            work.workspace.dir(),
            TestOptions {
                framework: work.framework.clone(),
                evidence_dir: Some(evidence),
                confined: self.ctx.command_box(),
                ..TestOptions::default()
            },
        )
        .await
        .map_err(|e| PhaseError::environment(format!("cannot run the tests: {e}")))?;
        let options = LoopOptions {
            coverage_target: Some(work.spec.coverage_target),
            ..LoopOptions::default()
        };
        let last = Mutex::new(LastRun::default());
        let fixer = BackendFixer {
            role: self,
            task,
            backend: work.backend.clone(),
            test_dir: work.spec.input.clone(),
            max_rounds: options.max_rounds,
            last: &last,
        };
        let mut source = RecordingSource {
            runner: &mut runner,
            last: &last,
        };
        let outcome = run_fix_loop(&mut source, &fixer, &options)
            .await
            .map_err(|e| PhaseError::agent(format!("the test-fix loop failed: {e}")))?;
        let record = write_run_result(&self.ctx.session_dir, &outcome)
            .map_err(|e| PhaseError::session(format!("cannot write the run record: {e}")))?;
        work.outcome = Some(outcome);
        work.record = Some(record);
        Ok(())
    }

    async fn validate(&self, task: &Task, work: &TestRunWork) -> Report {
        let Some((path, r)) = &work.record else {
            return ReportBuilder::failed("error", task, "no run record").build();
        };
        let rel = self.record_ref(path);
        let layer = work.spec.layer.clone();
        let now = jiff::Timestamp::now().to_string();
        let result = json!({"run_id": r.run_id, "task_id": task.id.as_str(), "pass_rate": r.pass_rate,
                            "coverage": r.coverage, "passed": r.passed, "ref": rel});
        let history = json!({"layer": layer, "coverage": r.coverage, "target": r.coverage_target,
                             "pass_rate": r.pass_rate, "timestamp": now});
        let (defects, effective) = (r.defect_patterns.clone(), r.effective_patterns.clone());
        let update = self.ctx.bus.update_state(
            NewMessage {
                from: "executor".into(),
                to: Some("coordinator".into()),
                summary: Some(format!("[executor] state: {} recorded", r.run_id)),
                ..NewMessage::default()
            },
            Box::new(move |state: &Map<String, Value>| {
                let mut out = Map::new();
                out.insert(
                    "execution_results".into(),
                    append(state.get("execution_results"), result),
                );
                out.insert(
                    "defect_patterns".into(),
                    dedup_append(state.get("defect_patterns"), &defects),
                );
                out.insert(
                    "effective_test_patterns".into(),
                    dedup_append(state.get("effective_test_patterns"), &effective),
                );
                out.insert(
                    "coverage_history".into(),
                    append(state.get("coverage_history"), history),
                );
                out
            }),
        );
        if let Err(e) = update {
            return ReportBuilder::failed("error", task, &format!("message bus: {e}")).build();
        }
        // The fix loop's changes go through the finish phase like any
        // task's work: the lane, the tests against the base (a deleted
        // failing test fails it), the review gate, and the merge queue with
        // `[integration] verify` and one revision.
        wavecrew_role_kit::finish(self, task, work).await
    }
}

#[async_trait::async_trait]
impl Finish for TestRunRole {
    type Work = TestRunWork;
    type Evidence = ();

    fn finish_role(&self) -> &'static str {
        "executor"
    }

    fn finish_ctx(&self) -> &RoleContext {
        &self.ctx
    }

    fn workspace<'w>(&self, work: &'w TestRunWork) -> &'w Workspace {
        &work.workspace
    }

    /// In place, the fixes are not told apart from the project's other
    /// changes: the lane has nothing to check.
    fn files_in_place(&self, _work: &TestRunWork) -> Vec<String> {
        Vec::new()
    }

    fn commit_message(&self, task: &Task, _work: &TestRunWork) -> String {
        format!("{}: test fixes", task.id.as_str())
    }

    /// The fix loop's verdict is the report's (`tests_passed` or
    /// `tests_failed`): nothing more to check here.
    async fn check(
        &self,
        _task: &Task,
        _work: &TestRunWork,
        _files: &[String],
        _lane_failed: bool,
    ) -> Result<Checked<()>, PhaseError> {
        Ok(Checked::passed(()))
    }

    async fn completed(
        &self,
        task: &Task,
        work: &TestRunWork,
        _gate: &Gate<'_, ()>,
    ) -> ReportBuilder {
        let Some((path, r)) = &work.record else {
            return ReportBuilder::failed("error", task, "no run record");
        };
        let coverage = r
            .coverage
            .map_or_else(|| "unknown".into(), |c| format!("{c:.1}"));
        ReportBuilder::completed(
            if r.passed {
                "tests_passed"
            } else {
                "tests_failed"
            },
            task,
        )
        .field("ref", self.record_ref(path))
        .field("run_id", &r.run_id)
        .field("pass_rate", r.pass_rate)
        .field("coverage", r.coverage)
        .field("coverage_target", r.coverage_target)
        .field("iterations", r.iterations)
        .field("report", report_text(task, r))
        .summary(format!(
            "{}: {coverage}% coverage",
            if r.passed { "PASSED" } else { "FAILED" }
        ))
    }

    fn failed(&self, task: &Task, _work: &TestRunWork, gate: &Gate<'_, ()>) -> ReportBuilder {
        ReportBuilder::failed("error", task, gate.failure.unwrap_or("a check failed"))
    }

    fn phase_failed(&self, task: &Task, error: &PhaseError) -> ReportBuilder {
        ReportBuilder::phase_failed("error", task, error)
    }

    /// The fix loop again, in a worktree of the new integration tip.
    async fn revise(
        &self,
        task: &Task,
        work: &TestRunWork,
        _unlanded: &Landed,
    ) -> Result<TestRunWork, PhaseError> {
        let mut revision = TestRunWork {
            spec: work.spec.clone(),
            framework: work.framework.clone(),
            backend: work.backend.clone(),
            outcome: None,
            record: None,
            workspace: self.ctx.workspace(task, task.attempts.max(1) + 1)?,
        };
        self.execute(task, &mut revision).await?;
        Ok(revision)
    }
}

impl TestRunRole {
    /// A run record's path as the bus and the report name it: relative to
    /// the project.
    fn record_ref(&self, path: &Path) -> String {
        path.strip_prefix(&self.ctx.project_root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// Where a session's run records go.
pub fn results_dir(session_dir: &Path) -> PathBuf {
    session_dir.join("results")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_in_the_seeds_shape() {
        let s = parse_description(
            "PURPOSE: Execute L1 unit tests\nCONTEXT:\n  - Session: .workflow/.team/TST-login-2026-03-04\n  - Input: tests/L1-unit\n  - Coverage target: 75%\n---\nInnerLoop: true",
        );
        assert_eq!(
            s.session.as_deref(),
            Some(".workflow/.team/TST-login-2026-03-04")
        );
        assert_eq!(s.input.as_deref(), Some("tests/L1-unit"));
        assert!((s.coverage_target - 75.0).abs() < f64::EPSILON);
        assert_eq!(s.layer.as_deref(), Some("L1"));
        assert!((parse_description("run the tests").coverage_target - 80.0).abs() < f64::EPSILON);
    }

    #[test]
    fn the_framework_is_read_where_ccw_keeps_it() {
        let state = json!({"test_strategy": {"framework": "Pytest"}});
        assert_eq!(framework_from_state(Some(&state)), Some(Framework::Pytest));
        // The seed read `sharedMemory.test_strategy` at the root: not there.
        let root_level =
            json!({"role_state": {"strategist": {"test_strategy": {"framework": "Vitest"}}}});
        assert_eq!(framework_from_state(Some(&root_level)), None);
    }
}
