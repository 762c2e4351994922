//! `wavecrew plan check|waves|graph`: explain the schedule before anything runs.
//!
//! Each subcommand loads its input with [`wavecrew_core::source::load`] (a
//! session folder or its `task-analysis.json`, a task folder, or a plan
//! file) and builds the [`Dag`] with [`build_loaded`] (O(V + E) end to end;
//! `benches/plan-waves.sh` times it). `check` reports every problem
//! (exit 1 when there is one); `waves` and `graph` refuse an invalid graph
//! with exit 2, since their input cannot be scheduled.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::Value;
use wavecrew_core::source::{self, LoadedTasks};
use wavecrew_scheduler::{CheckReport, CyclePolicy, Dag, ScheduleError, build_loaded};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew plan …`
#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Validate the dependency graph: unknown and self dependencies, cycles.
    Check(PlanArgs),
    /// Print the waves (Kahn levels) and the critical path.
    Waves(PlanArgs),
    /// Print the graph as DOT, Mermaid or JSON, waves as ranks.
    Graph(GraphArgs),
}

/// The input and options every `plan` subcommand takes.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A task file (`wavecrew.tasks.toml`), a session folder (or its `task-analysis.json`), a
    /// task folder (seed 000 or roadmap `.task/`), or a plan file.
    pub input: PathBuf,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// What to do with dependency cycles: refuse them, or release the
    /// lowest-numbered waiting task (seed 004).
    #[arg(long, value_enum, default_value_t = CyclePolicyArg::Abort)]
    pub cycle_policy: CyclePolicyArg,
}

/// `wavecrew plan graph` arguments.
#[derive(Debug, Args)]
pub struct GraphArgs {
    /// A task file (`wavecrew.tasks.toml`), a session folder (or its `task-analysis.json`), a
    /// task folder (seed 000 or roadmap `.task/`), or a plan file.
    pub input: PathBuf,
    /// The output format.
    #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
    pub format: GraphFormat,
    /// What to do with dependency cycles.
    #[arg(long, value_enum, default_value_t = CyclePolicyArg::Abort)]
    pub cycle_policy: CyclePolicyArg,
}

/// `--cycle-policy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CyclePolicyArg {
    /// Refuse a graph with cycles (seed 000).
    Abort,
    /// Release the lowest-numbered waiting task, with a warning (seed 004).
    Force,
}

impl From<CyclePolicyArg> for CyclePolicy {
    fn from(p: CyclePolicyArg) -> Self {
        match p {
            CyclePolicyArg::Abort => CyclePolicy::Abort,
            CyclePolicyArg::Force => CyclePolicy::Force,
        }
    }
}

/// `--format` values of `wavecrew plan graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// Graphviz DOT.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
    /// JSON: tasks, waves, critical path.
    Json,
}

/// Run a `wavecrew plan` subcommand.
pub fn run(cmd: PlanCommand) -> CmdResult {
    match cmd {
        PlanCommand::Check(args) => check(&args),
        PlanCommand::Waves(args) => waves(&args),
        PlanCommand::Graph(args) => graph(&args),
    }
}

/// The loaded input and the result of building its graph.
struct Built {
    loaded: LoadedTasks,
    result: Result<Dag, ScheduleError>,
}

fn build(input: &std::path::Path, policy: CyclePolicyArg) -> Result<Built, CliError> {
    let loaded = if super::tasks::is_task_file(input) {
        super::tasks::load_for_plan(input)?
    } else {
        source::load(input)?
    };
    for w in &loaded.warnings {
        output::warning(w);
    }
    let result = build_loaded(&loaded, policy.into());
    Ok(Built { loaded, result })
}

/// The graph, or exit 2 with every problem listed.
fn valid(built: Built) -> Result<(LoadedTasks, Dag), CliError> {
    match built.result {
        Ok(dag) => Ok((built.loaded, dag)),
        Err(e) => Err(CliError::bad_input(anyhow::anyhow!(
            "`{}`: {e}",
            built.loaded.path.display()
        ))),
    }
}

fn check(args: &PlanArgs) -> CmdResult {
    let built = build(&args.input, args.cycle_policy)?;
    let report = CheckReport::from_build(&built.result);
    if args.json {
        output::json(&serde_json::to_value(&report).map_err(CliError::internal)?);
    } else {
        for problem in &report.errors {
            output::line(&format!("error[{}]: {}", problem.kind(), problem.message()));
        }
        for problem in &report.warnings {
            output::line(&format!(
                "warning[{}]: {}",
                problem.kind(),
                problem.message()
            ));
        }
        match &built.result {
            Ok(dag) => {
                let waves = dag.waves();
                let critical = dag.critical_path();
                output::line(&format!(
                    "ok: {} ({}): {} tasks, {} already completed, {} waves; critical path {}",
                    built.loaded.kind.as_str(),
                    built.loaded.path.display(),
                    dag.len(),
                    dag.len() - dag.pending_len(),
                    waves.len(),
                    arrow_list(&critical.path),
                ));
            }
            Err(_) => output::line(&format!(
                "{} problem{} found in {} `{}`",
                report.errors.len(),
                if report.errors.len() == 1 { "" } else { "s" },
                built.loaded.kind.as_str(),
                built.loaded.path.display(),
            )),
        }
    }
    Ok(if report.ok {
        Exit::Success
    } else {
        Exit::Failed
    })
}

/// `wavecrew plan waves --json`, in this key order.
#[derive(serde::Serialize)]
struct WavesJson<'a> {
    waves: &'a [Vec<wavecrew_core::TaskId>],
    critical_path: &'a [wavecrew_core::TaskId],
    critical_path_seconds: f64,
    tasks: usize,
    pending: usize,
    completed: &'a [&'a str],
    forced: &'a [wavecrew_core::TaskId],
    source: SourceJson<'a>,
}

/// Where the input came from.
#[derive(serde::Serialize)]
struct SourceJson<'a> {
    kind: &'a str,
    path: &'a std::path::Path,
}

fn waves(args: &PlanArgs) -> CmdResult {
    let (loaded, dag) = valid(build(&args.input, args.cycle_policy)?)?;
    let waves = dag.waves();
    let critical = dag.critical_path();
    for w in &waves.warnings {
        output::warning(w);
    }
    let completed: Vec<&str> = dag
        .nodes()
        .filter(|n| n.done)
        .map(|n| n.id.as_str())
        .collect();
    if args.json {
        // Written straight from the graph (no intermediate JSON value).
        output::json_of(&waves_json(&loaded, &dag, &waves, &critical, &completed));
        // The process ends here: the OS takes the memory back faster than
        // freeing a few hundred thousand tasks one by one.
        std::mem::forget(completed);
        std::mem::forget((loaded, dag, waves, critical));
        return Ok(Exit::Success);
    }
    for (n, wave) in waves.waves.iter().enumerate() {
        let ids: Vec<&str> = wave.iter().map(wavecrew_core::TaskId::as_str).collect();
        output::line(&format!("wave {}: {}", n + 1, ids.join(", ")));
    }
    let estimated = loaded.tasks.iter().any(|t| t.estimate_secs().is_some());
    output::line(&format!(
        "critical path: {} ({})",
        arrow_list(&critical.path),
        if estimated {
            human_seconds(critical.total)
        } else {
            format!("{} tasks, no estimates", critical.path.len())
        }
    ));
    output::line(&format!(
        "{} tasks ({} already completed) in {} waves",
        dag.len(),
        completed.len(),
        waves.len()
    ));
    Ok(Exit::Success)
}

/// The object of `wavecrew plan waves --json`.
fn waves_json<'a>(
    loaded: &'a LoadedTasks,
    dag: &Dag,
    waves: &'a wavecrew_scheduler::Waves,
    critical: &'a wavecrew_scheduler::CriticalPath,
    completed: &'a [&'a str],
) -> WavesJson<'a> {
    WavesJson {
        waves: &waves.waves,
        critical_path: &critical.path,
        critical_path_seconds: critical.total,
        tasks: dag.len(),
        pending: dag.pending_len(),
        completed,
        forced: &waves.forced,
        source: SourceJson {
            kind: loaded.kind.as_str(),
            path: &loaded.path,
        },
    }
}

/// A task file's text checked as `wavecrew plan waves --json` checks the
/// file (`path` names it in messages; `root` is the project): `ok` with
/// the waves and the critical path (the object `plan waves --json`
/// prints), or `ok: false` with every problem by line and field. The MCP
/// server's `plan` tool is this function.
pub fn explain_task_text(text: &str, path: &Path, root: &Path) -> Result<Value, CliError> {
    let plan = match wavecrew_taskfile::plan(text, path, root) {
        Ok(plan) => plan,
        Err(wavecrew_taskfile::TaskFileError::Invalid { path, problems }) => {
            let errors: Vec<Value> = problems
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "line": p.line,
                        "column": p.column,
                        "field": p.field,
                        "message": p.message,
                    })
                })
                .collect();
            return Ok(serde_json::json!({ "ok": false, "file": path, "errors": errors }));
        }
        Err(e) if e.is_bad_input() => return Err(CliError::bad_input(e)),
        Err(e) => return Err(CliError::internal(e)),
    };
    let session = plan.session_id.as_str().to_owned();
    let loaded = super::tasks::loaded_of(path, plan);
    let dag = match build_loaded(&loaded, CyclePolicy::Abort) {
        Ok(dag) => dag,
        Err(e) => {
            // The task file's own check found the cycles already; this is
            // what is left (the same problems `plan check --json` lists).
            let report = CheckReport::from_build(&Err(e));
            let errors: Vec<Value> = report
                .errors
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "field": "tasks",
                        "kind": p.kind(),
                        "message": p.message(),
                    })
                })
                .collect();
            return Ok(serde_json::json!({ "ok": false, "file": path, "errors": errors }));
        }
    };
    let waves = dag.waves();
    let critical = dag.critical_path();
    let completed: Vec<&str> = dag
        .nodes()
        .filter(|n| n.done)
        .map(|n| n.id.as_str())
        .collect();
    let mut v = serde_json::to_value(waves_json(&loaded, &dag, &waves, &critical, &completed))
        .map_err(CliError::internal)?;
    if let Value::Object(map) = &mut v {
        map.insert("ok".into(), Value::Bool(true));
        map.insert("session".into(), Value::String(session));
    }
    Ok(v)
}

fn graph(args: &GraphArgs) -> CmdResult {
    let (loaded, dag) = valid(build(&args.input, args.cycle_policy)?)?;
    let states: HashMap<wavecrew_core::TaskId, &str> = loaded
        .tasks
        .iter()
        .zip(loaded.done_flags())
        .map(|(t, done)| {
            let state = if done { "completed" } else { t.status.as_str() };
            (t.id.clone(), state)
        })
        .collect();
    match args.format {
        GraphFormat::Dot => output::line(dag.to_dot(Some(&states)).trim_end()),
        GraphFormat::Mermaid => output::line(dag.to_mermaid(Some(&states)).trim_end()),
        GraphFormat::Json => {
            let v: Value = dag.to_json(Some(&states));
            output::json(&v);
        }
    }
    Ok(Exit::Success)
}

fn arrow_list(ids: &[wavecrew_core::TaskId]) -> String {
    if ids.is_empty() {
        return "(none)".to_owned();
    }
    ids.iter()
        .map(wavecrew_core::TaskId::as_str)
        .collect::<Vec<_>>()
        .join(" → ")
}

/// `55m estimated`, `1h 05m estimated`, `12s estimated`.
fn human_seconds(secs: f64) -> String {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let s = secs.round().max(0.0) as u64;
    let text = if s >= 3600 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    };
    format!("{text} estimated")
}
