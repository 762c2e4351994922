//! `wavecrew check syntax|tests|acceptance <folder>`: each validation on
//! its own, so a user can ask "what does wavecrew see in my project"
//! without a session. Human output by default, `--json` for machines.
//! Exit 0 when the check passed, 1 when it found a problem or could not
//! prove anything (a skipped check, a criterion that needs a person), 2 for
//! bad input, 4 for an internal error.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use wavecrew_core::source;
use wavecrew_validation::{
    AcceptanceOptions, CheckStatus, Framework, Strategy, SyntaxOptions, TestOptions, TestRunner,
    ValidationError, check_acceptance, check_syntax, describe_source, split_command,
};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew check …`
#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// Syntax checks by project type: tsc, cargo check, py_compile, go vet.
    Syntax(SyntaxArgs),
    /// Run the tests with a machine-readable reporter; counts, pass rate, coverage.
    Tests(TestsArgs),
    /// Acceptance criteria of the tasks in a session or task folder.
    Acceptance(AcceptanceArgs),
}

/// `wavecrew check syntax` arguments.
#[derive(Debug, Args)]
pub struct SyntaxArgs {
    /// The project folder.
    pub folder: PathBuf,
    /// A changed file (relative to the folder); Python checks compile only these.
    #[arg(long = "changed", value_name = "FILE")]
    pub changed: Vec<String>,
    /// Seconds each tool may take.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `wavecrew check tests` arguments.
#[derive(Debug, Args)]
pub struct TestsArgs {
    /// The project folder.
    pub folder: PathBuf,
    /// Run this command instead of the detected framework (split into
    /// words, never run through a shell).
    #[arg(long)]
    pub command: Option<String>,
    /// With `--command`: the JUnit XML file it writes (relative to the folder;
    /// removed before the run, so a stale one cannot count).
    #[arg(long, requires = "command")]
    pub junit: Option<PathBuf>,
    /// With `--command`: the coverage file it writes (relative to the folder;
    /// removed before the run): lcov, Cobertura XML, istanbul summary or coverage.py JSON.
    #[arg(long, requires = "command")]
    pub coverage_file: Option<PathBuf>,
    /// Do not collect coverage.
    #[arg(long)]
    pub no_coverage: bool,
    /// The verdict also requires this coverage (percent).
    #[arg(long, value_name = "PERCENT")]
    pub coverage_target: Option<f64>,
    /// The pass rate the verdict requires.
    #[arg(long, default_value_t = 0.95)]
    pub pass_rate_target: f64,
    /// Do not rerun failing tests to find flaky ones.
    #[arg(long)]
    pub no_rerun: bool,
    /// Seconds the test run may take.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Keep the reports in this folder (default: a temp folder, removed at exit).
    #[arg(long)]
    pub evidence_dir: Option<PathBuf>,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `wavecrew check acceptance` arguments.
#[derive(Debug, Args)]
pub struct AcceptanceArgs {
    /// A session folder, a task folder, or a plan file.
    pub folder: PathBuf,
    /// Only this task.
    #[arg(long)]
    pub task: Option<String>,
    /// How criteria without a `verify` command are judged.
    #[arg(long, value_enum, default_value_t = StrategyArg::Evidence)]
    pub strategy: StrategyArg,
    /// A file with the implementation text the keyword strategy searches.
    #[arg(long, value_name = "FILE")]
    pub implementation_text: Option<PathBuf>,
    /// Seconds each `verify` command may take.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `--strategy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Only `verify` commands count; plain text needs a person.
    Evidence,
    /// Also the seed's keyword match (weak evidence; stop words ignored).
    Keyword,
}

/// Run a `wavecrew check` subcommand.
pub fn run(cmd: CheckCommand) -> CmdResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    match cmd {
        CheckCommand::Syntax(args) => runtime.block_on(syntax(&args)),
        CheckCommand::Tests(args) => runtime.block_on(tests(&args)),
        CheckCommand::Acceptance(args) => runtime.block_on(acceptance(&args)),
    }
}

fn validation_error(e: ValidationError) -> CliError {
    if e.is_bad_input() {
        CliError::bad_input(e)
    } else {
        CliError::internal(e)
    }
}

fn folder(path: &Path) -> Result<PathBuf, CliError> {
    if path.is_dir() {
        Ok(path.to_owned())
    } else {
        Err(CliError::bad_input(anyhow::anyhow!(
            "`{}` is not a folder; expected a project folder",
            path.display()
        )))
    }
}

fn exit_for(status: CheckStatus) -> Exit {
    if status == CheckStatus::Pass {
        Exit::Success
    } else {
        Exit::Failed
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, CliError> {
    serde_json::to_value(v).map_err(CliError::internal)
}

async fn syntax(args: &SyntaxArgs) -> CmdResult {
    let dir = folder(&args.folder)?;
    let options = SyntaxOptions {
        timeout: Duration::from_secs(args.timeout),
        changed_files: args.changed.clone(),
        // A person's own check of their project, run as them: the
        // library's confined default is for the checks of an agent's work.
        confined: None,
        ..SyntaxOptions::default()
    };
    let report = check_syntax(&dir, &options).await;
    if args.json {
        output::json(&to_json(&report)?);
    } else {
        if report.checks.is_empty() {
            output::line(
                "skipped: no project type detected (tsconfig.json, Cargo.toml, Python files, go.mod)",
            );
        }
        for c in &report.checks {
            let mut line = format!("{}: {} ({})", c.kind.as_str(), c.status, c.command);
            if let Some(r) = &c.reason {
                let _ = write!(line, ": {r}");
            }
            output::line(&line);
            if c.status == CheckStatus::Fail && !c.output.trim().is_empty() {
                for l in c.output.trim_end().lines().take(40) {
                    output::line(&format!("    {l}"));
                }
            }
        }
    }
    Ok(exit_for(report.status))
}

async fn tests(args: &TestsArgs) -> CmdResult {
    let dir = folder(&args.folder)?;
    let framework = match &args.command {
        Some(cmd) => Some(Framework::Command {
            argv: split_command(cmd).map_err(|message| {
                CliError::bad_input(ValidationError::BadCommand {
                    command: cmd.clone(),
                    message,
                })
            })?,
            junit: args.junit.clone(),
            coverage: args.coverage_file.clone(),
        }),
        None => None,
    };
    let options = TestOptions {
        framework,
        coverage: !args.no_coverage,
        timeout: Duration::from_secs(args.timeout),
        evidence_dir: args.evidence_dir.clone(),
        // A person's own check of their project, run as them: the
        // library's confined default is for the checks of an agent's work.
        confined: None,
        ..TestOptions::default()
    };
    let mut runner = TestRunner::new(&dir, options)
        .await
        .map_err(validation_error)?;
    let run = runner.run().await.map_err(validation_error)?;
    let failures: Vec<_> = run.report.failures().cloned().collect();
    let mut flaky = Vec::new();
    if !args.no_rerun
        && !failures.is_empty()
        && let Some(again) = runner.rerun(&failures).await.map_err(validation_error)?
    {
        for f in &failures {
            if again
                .report
                .cases
                .iter()
                .any(|c| c.id == f.id && c.outcome == wavecrew_validation::Outcome::Passed)
            {
                flaky.push(f.id.clone());
            }
        }
    }
    let c = run.report.counts;
    let executed = c.executed();
    #[allow(clippy::cast_precision_loss)]
    let decision_rate = if executed == 0 {
        0.0
    } else {
        (c.passed + flaky.len() as u64).min(executed) as f64 / executed as f64
    };
    let coverage = run.coverage_percent();
    let coverage_ok = args
        .coverage_target
        .is_none_or(|t| coverage.is_some_and(|c| c >= t));
    let passed = executed > 0 && decision_rate >= args.pass_rate_target && coverage_ok;
    let verdict = if passed { "pass" } else { "fail" };
    let real_failures: Vec<Value> = failures
        .iter()
        .filter(|f| !flaky.contains(&f.id))
        .map(|f| json!({"id": f.id, "name": f.name, "file": f.file, "message": f.message}))
        .collect();
    if args.json {
        output::json(&json!({
            "framework": run.framework.name(),
            "command": run.command,
            "passed": c.passed,
            "failed": c.failed,
            "skipped": c.skipped,
            "errors": c.errors,
            "total": c.total,
            "pass_rate": run.report.pass_rate(),
            "coverage": coverage,
            "coverage_note": run.coverage_note,
            "evidence": run.evidence(),
            "source": describe_source(run.report.source),
            "flaky": flaky,
            "failures": real_failures,
            "verdict": verdict,
        }));
    } else {
        output::line(&format!(
            "framework: {} ({})",
            run.framework.name(),
            run.command
        ));
        output::line(&format!(
            "tests: {} passed, {} failed, {} skipped, {} errors, {} total",
            c.passed, c.failed, c.skipped, c.errors, c.total
        ));
        output::line(&format!(
            "pass rate: {:.1}%",
            run.report.pass_rate() * 100.0
        ));
        match (coverage, &run.coverage_note) {
            (Some(p), _) => output::line(&format!("coverage: {p:.2}%")),
            (None, Some(note)) => output::line(&format!("coverage: unknown ({note})")),
            (None, None) => output::line("coverage: unknown"),
        }
        output::line(&format!("source: {}", describe_source(run.report.source)));
        for f in run.evidence() {
            output::line(&format!("evidence: {}", f.display()));
        }
        for f in &flaky {
            output::line(&format!("flaky: {f} (failed, then passed on a rerun)"));
        }
        for f in &real_failures {
            let first = f["message"]
                .as_str()
                .and_then(|m| m.lines().map(str::trim).find(|l| !l.is_empty()))
                .unwrap_or("");
            output::line(&format!(
                "failed: {}: {first}",
                f["id"].as_str().unwrap_or("")
            ));
        }
        output::line(&format!("verdict: {verdict}"));
    }
    Ok(if passed { Exit::Success } else { Exit::Failed })
}

async fn acceptance(args: &AcceptanceArgs) -> CmdResult {
    let loaded = source::load(&args.folder)?;
    for w in &loaded.warnings {
        output::warning(w);
    }
    let cwd = std::env::current_dir().map_err(CliError::internal)?;
    let base = source::project_root(&args.folder).unwrap_or(cwd);
    let implementation_text = match &args.implementation_text {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| CliError::bad_input(anyhow::anyhow!("reading `{}`: {e}", p.display())))?,
        None => String::new(),
    };
    let options = AcceptanceOptions {
        timeout: Duration::from_secs(args.timeout),
        strategy: match args.strategy {
            StrategyArg::Evidence => Strategy::Evidence,
            StrategyArg::Keyword => Strategy::Keyword,
        },
        implementation_text,
        // A person's own check of their project, run as them: the
        // library's confined default is for the checks of an agent's work.
        confined: None,
        ..AcceptanceOptions::default()
    };
    let tasks: Vec<_> = loaded
        .tasks
        .iter()
        .filter(|t| args.task.as_deref().is_none_or(|id| t.id.as_str() == id))
        .collect();
    if let Some(id) = &args.task
        && tasks.is_empty()
    {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "`{}`: no task `{id}`",
            args.folder.display()
        )));
    }
    let mut all = Vec::new();
    let mut results = Vec::new();
    for task in tasks {
        let dir = task_folder(&base, task.working_dir())?;
        let report = check_acceptance(&task.acceptance_criteria(), &dir, &options).await;
        all.push(report.status);
        results.push((task.id.to_string(), dir, report));
    }
    let status = CheckStatus::combine(all);
    if args.json {
        let tasks: Vec<Value> = results
            .iter()
            .map(|(id, dir, r)| {
                json!({"task": id, "folder": dir, "status": r.status, "criteria": r.criteria})
            })
            .collect();
        output::json(&json!({"status": status, "tasks": tasks}));
    } else {
        for (id, _, r) in &results {
            output::line(&format!("{id}: {}", r.status));
            for c in &r.criteria {
                let mut line = format!("  {}: {}", c.status, c.text);
                if let Some(reason) = &c.reason {
                    let _ = write!(line, " ({reason})");
                }
                output::line(&line);
            }
        }
    }
    Ok(exit_for(status))
}

/// The folder a task's commands run in: its `working_dir` inside the
/// project, else the project root; the rule the run follows
/// ([`wavecrew_sys::path::working_dir`]).
fn task_folder(base: &Path, working_dir: Option<&str>) -> Result<PathBuf, CliError> {
    wavecrew_sys::path::working_dir(base, working_dir).map_err(|e| {
        CliError::bad_input(anyhow::anyhow!(
            "working_dir `{}` is outside the project: {e}",
            working_dir.unwrap_or_default()
        ))
    })
}
