//! `wavecrew-executor --session <folder> [--task ID] [--backend NAME]`:
//! seed 000's `IMPL-*` worker. Without `--task` it takes every ready
//! `IMPL-*` task of the session in turn; with it, exactly that task.
//! Exit 0 when every task it took completed, 1 when one failed or the
//! named task could not be taken, 2 for bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use wavecrew_backends::config::Config;
use wavecrew_core::role::{WorkerOptions, run_worker};
use wavecrew_core::{FileTaskStore, SessionId, TaskId};
use wavecrew_msgbus::{Bus, Durability, KeyUse};
use wavecrew_role_executor::Executor;

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew-executor` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-executor",
    version,
    about = "Seed 000: the IMPL-* executor worker"
)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["session", "tasks"])))]
pub struct ExecutorArgs {
    /// The session folder (`.workflow/.team/<session-id>`), tasks in its `tasks/`.
    #[arg(long)]
    pub session: Option<PathBuf>,
    /// Seed 000's own task folder (`.workflow/.team/tasks`); records go to
    /// the bus of the session `executor`.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Take exactly this task.
    #[arg(long)]
    pub task: Option<String>,
    /// Run every task through this backend (overrides task and plan).
    #[arg(long)]
    pub backend: Option<String>,
    /// Read this configuration file instead of `<project root>/wavecrew.toml`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With `--task`: then take the one IMPL successor it unblocked.
    #[arg(long)]
    pub fast_advance: bool,
    /// The run's failure policy: with `always`, a task whose blockers
    /// ended (failed ones included) may be taken.
    #[arg(long, value_parser = crate::team::failure_policy_parser(), default_value = "continue")]
    pub on_failure: wavecrew_role_team::FailurePolicy,
}

/// The executor's main.
pub fn executor_main() -> ExitCode {
    executor_main_from(std::env::args_os().collect())
}

/// [`executor_main`] with explicit arguments (the program name first).
pub fn executor_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    crate::init_tracing();
    let args = match ExecutorArgs::try_parse_from(command_line) {
        Ok(a) => a,
        Err(e) => return crate::clap_exit(&e),
    };
    crate::finish(run(&args))
}

/// Seed 000's task folder mode: the bus session its records go to.
pub const TASK_FOLDER_BUS: &str = "executor";

fn run(args: &ExecutorArgs) -> CmdResult {
    let (flag, given) = match (&args.session, &args.tasks) {
        (Some(s), _) => ("--session", s),
        (None, Some(t)) => ("--tasks", t),
        (None, None) => unreachable!("clap requires --session or --tasks"),
    };
    let folder = given
        .canonicalize()
        .map_err(|e| CliError::bad_input(anyhow::anyhow!("{flag} {}: {e}", given.display())))?;
    let (session_dir, store, session_id) = if args.session.is_some() {
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let id = SessionId::new(name)?;
        (folder.clone(), FileTaskStore::for_session(&folder), id)
    } else {
        let parent = folder.parent().unwrap_or(&folder).to_owned();
        (
            parent,
            FileTaskStore::new(folder.clone()),
            SessionId::new(TASK_FOLDER_BUS)?,
        )
    };
    let root = wavecrew_core::source::project_root(&folder).ok_or_else(|| {
        CliError::bad_input(anyhow::anyhow!(
            "{flag} {}: not inside a project (no .workflow folder above it)",
            given.display()
        ))
    })?;
    let config = Config::discover(&root, args.config.as_deref()).map_err(CliError::bad_input)?;
    let task = args.task.as_deref().map(TaskId::new).transpose()?;
    if args.tasks.is_some() {
        // Seed 000 keeps dependencies in the plan ("IMPL-3 depends on
        // IMPL-1"): fold them into the tasks' blockers once.
        let loaded = wavecrew_core::source::load(&folder)?;
        for w in &loaded.warnings {
            output::warning(w);
        }
        for t in &loaded.tasks {
            let deps = loaded.dependencies_of(t);
            if deps != t.blocked_by {
                wavecrew_core::TaskStore::update(&store, &t.id, &mut |x| {
                    x.blocked_by.clone_from(&deps);
                    Ok(())
                })?;
            }
        }
    }
    wavecrew_role_team::check_graph(&wavecrew_core::TaskStore::list(&store)?)
        .map_err(|e| CliError::bad_input(anyhow::anyhow!("{}: {e}", session_dir.display())))?;
    let (bus, _) = Bus::open(&root, session_id.as_str(), KeyUse::Write, Durability::Batch)
        .map_err(CliError::internal)?;
    let bus = std::sync::Arc::new(bus);
    let mut executor = Executor::new(root, session_dir, config);
    executor.run_backend.clone_from(&args.backend);
    let events_bus = std::sync::Arc::clone(&bus);
    executor.on_attempt = Box::new(move |task, event| {
        if let Some(message) = attempt_record(task, event)
            && let Err(e) = events_bus.log(message)
        {
            output::warning(&format!("message bus: {e}"));
        }
        if let wavecrew_backends::AttemptEvent::Switched(s) = event {
            output::warning(&format!(
                "{}: backend {} → {}: {}",
                task.id.as_str(),
                s.from,
                s.to,
                s.reason
            ));
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    let options = WorkerOptions {
        task,
        fast_advance: args.fast_advance,
        blockers: crate::worker::blocker_rule(args.on_failure),
        ..WorkerOptions::default()
    };
    let summary = rt.block_on(run_worker(&executor, &store, &*bus, &options))?;
    for id in &summary.completed {
        output::line(&format!("[executor] {} completed", id.as_str()));
    }
    for id in &summary.failed {
        output::line(&format!("[executor] {} failed", id.as_str()));
    }
    if let Some(why) = &summary.not_taken {
        output::error(why);
        return Ok(Exit::Failed);
    }
    Ok(if summary.failed.is_empty() {
        Exit::Success
    } else {
        Exit::Failed
    })
}

/// The seed's `progress_update` records: an attempt starts (with the
/// backend), a retry is scheduled, a backend switch (the fallback reported).
fn attempt_record(
    task: &wavecrew_core::Task,
    event: &wavecrew_backends::AttemptEvent,
) -> Option<wavecrew_core::NewMessage> {
    use wavecrew_backends::AttemptEvent;
    let mut data = serde_json::Map::new();
    data.insert("task_id".into(), serde_json::json!(task.id.as_str()));
    let summary = match event {
        AttemptEvent::Started {
            attempt,
            backend,
            resume,
        } => {
            data.insert("batch_index".into(), serde_json::json!(attempt));
            data.insert("backend".into(), serde_json::json!(backend));
            if let Some(r) = resume {
                data.insert("resume_session".into(), serde_json::json!(r));
            }
            format!(
                "{} attempt {attempt} via {backend}{}",
                task.id.as_str(),
                if resume.is_some() { " (resumed)" } else { "" }
            )
        }
        AttemptEvent::Retrying { attempt, delay_ms } => {
            data.insert("batch_index".into(), serde_json::json!(attempt));
            data.insert("delay_ms".into(), serde_json::json!(delay_ms));
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
    Some(wavecrew_core::NewMessage {
        from: "executor".into(),
        to: Some("coordinator".into()),
        kind: Some("progress_update".into()),
        summary: Some(format!("[executor] {summary}")),
        data: Some(data),
        reference: None,
    })
}
