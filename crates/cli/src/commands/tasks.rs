//! Task files (`wavecrew.tasks.toml`) on the command line: `wavecrew new
//! <file>` makes the ccw-shaped session, `wavecrew run <file>` makes it (or
//! finds the one it made before) and runs it, `wavecrew plan … <file>`
//! explains it. The model and the checks live in `wavecrew-taskfile`.
//!
//! After a run: `--json` prints one object for scripts, and when
//! `GITHUB_STEP_SUMMARY` is set, `summary.md` is appended to it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};
use wavecrew_core::source::{LoadedTasks, SourceKind};
use wavecrew_core::{FileTaskStore, TaskStore};
use wavecrew_taskfile::{SessionPlan, TaskFileError};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew new` arguments.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The task file (`wavecrew.tasks.toml`).
    pub file: PathBuf,
    /// The project root the session goes under (`<root>/.workflow/.team/<id>/`).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

/// Whether `input` names a task file rather than a session or plan.
pub fn is_task_file(input: &Path) -> bool {
    input.is_file() && input.extension().is_some_and(|e| e == "toml")
}

fn to_cli(e: TaskFileError) -> CliError {
    if e.is_bad_input() {
        CliError::bad_input(e)
    } else {
        CliError::internal(e)
    }
}

/// Read and check a task file.
pub fn read(file: &Path, root: &Path) -> Result<SessionPlan, CliError> {
    let plan = wavecrew_taskfile::read(file, root).map_err(to_cli)?;
    tracing::debug!(
        file = %file.display(),
        session = %plan.session_id,
        tasks = plan.tasks.len(),
        "task file checked"
    );
    Ok(plan)
}

/// `wavecrew new <file>`: create the session, print its folder.
pub fn new(args: &NewArgs) -> CmdResult {
    let plan = read(&args.file, &args.root)?;
    let dir = plan.create().map_err(to_cli)?;
    output::line(&dir.display().to_string());
    Ok(Exit::Success)
}

/// The session `wavecrew run <input>` runs: the input itself when it is a
/// session folder; for a task file, the session it makes, created now or
/// found from an earlier run of the same file (then the run resumes).
pub fn session_for_run(input: &Path, root: &Path) -> Result<PathBuf, CliError> {
    if !is_task_file(input) {
        return Ok(input.to_owned());
    }
    let plan = read(input, root)?;
    let dir = plan.dir();
    if dir.exists() {
        if plan.matches_existing(&dir) {
            output::progress(&format!(
                "{}: resuming the session made from {}",
                dir.display(),
                input.display()
            ));
            return Ok(dir);
        }
        return Err(to_cli(TaskFileError::SessionExists { dir }));
    }
    let dir = plan.create().map_err(to_cli)?;
    output::progress(&format!("session created: {}", dir.display()));
    Ok(dir)
}

/// A task file as the input of `wavecrew plan`.
pub fn load_for_plan(file: &Path) -> Result<LoadedTasks, CliError> {
    let plan = read(file, Path::new("."))?;
    Ok(loaded_of(file, plan))
}

/// A checked task file as the tasks `wavecrew plan` schedules; `file` is
/// where it came from.
pub fn loaded_of(file: &Path, plan: SessionPlan) -> LoadedTasks {
    LoadedTasks {
        path: file.to_owned(),
        kind: SourceKind::TaskFile,
        tasks: plan.tasks,
        plan: None,
        plan_path: None,
        completed: Vec::new(),
        warnings: Vec::new(),
    }
}

/// What `wavecrew run` does once the pipeline ended: the `--json` object,
/// the CI step summary. `result` is the run's own outcome.
pub fn after_run(session: &Path, result: CmdResult, json_out: bool) -> CmdResult {
    let summary_md = session.join("reports/summary.md");
    if let Some(target) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty())
        && summary_md.is_file()
        && let Err(e) = append_step_summary(Path::new(&target), &summary_md)
    {
        output::warning(&format!(
            "GITHUB_STEP_SUMMARY: cannot append {}: {e}",
            summary_md.display()
        ));
    }
    if json_out {
        let (code, error) = match &result {
            Ok(code) => (*code, None),
            Err(e) => (e.exit, Some(e.to_string())),
        };
        output::json(&final_object(session, code, error.as_deref()));
    }
    result
}

fn append_step_summary(target: &Path, summary: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(summary)?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target)?;
    // One write, so concurrent steps' summaries never interleave mid-line.
    let mut block = text.trim_end().to_owned();
    block.push_str("\n\n");
    f.write_all(block.as_bytes())?;
    tracing::info!(target = %target.display(), "summary.md appended to the step summary");
    Ok(())
}

/// The one object `wavecrew run --json` prints.
pub fn final_object(session: &Path, code: Exit, error: Option<&str>) -> Value {
    let layout = wavecrew_core::SessionLayout::new(session);
    let reports = layout.reports();
    let run_summary: Option<Value> = std::fs::read(reports.join("run-summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let tasks = FileTaskStore::for_session(session)
        .list()
        .unwrap_or_default();
    let failed: Vec<Value> = tasks
        .iter()
        .filter(|t| t.status.is_unsuccessful())
        .map(|t| {
            let why = t.error();
            json!({
                "id": t.id,
                "status": t.status,
                "error": why,
                "attempts": layout.attempts(t.id.as_str()),
                "log": layout.worker_log(t.id.as_str()),
            })
        })
        .collect();
    let mut files = serde_json::Map::new();
    for (key, name) in [
        ("run_summary", "run-summary.json"),
        ("summary_md", "summary.md"),
        ("junit", "junit.xml"),
        ("trace", "trace.json"),
        ("html", "index.html"),
        ("graph_dot", "graph.dot"),
        ("graph_mermaid", "graph.mmd"),
    ] {
        let p = reports.join(name);
        if p.is_file() {
            files.insert(key.into(), json!(p));
        }
    }
    let outcome = match code {
        Exit::Success => "complete",
        Exit::Failed => "failed",
        Exit::BadInput => "bad_input",
        Exit::Interrupted => "interrupted",
        Exit::Internal => "internal_error",
    };
    json!({
        "session": {
            "id": run_summary.as_ref().and_then(|s| s["session"].get("id").cloned()),
            "dir": session.is_dir().then_some(session),
            "status": run_summary.as_ref().and_then(|s| s["session"].get("status").cloned()),
        },
        "outcome": outcome,
        "exit_code": code as u8,
        "error": error,
        "counts": run_summary.as_ref().map_or(Value::Null, |s| s["counts"].clone()),
        "duration_ms": run_summary.as_ref().and_then(|s| s["timings"].get("duration_ms").cloned()),
        "failed": failed,
        "reports": files,
    })
}
