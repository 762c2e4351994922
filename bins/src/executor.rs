//! `wavecrew-executor --session <folder> [--task ID] [--backend NAME]`:
//! seed 000's `IMPL-*` worker. Without `--task` it takes every ready
//! `IMPL-*` task of the session in turn; with it, exactly that task.
//! Exit 0 when every task it took completed, 1 when one failed or the
//! named task could not be taken, 2 for bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use wavecrew_core::TaskStore;
use wavecrew_core::role::WorkerOptions;
use wavecrew_role_executor::Executor;
use wavecrew_role_kit::run::stop;
use wavecrew_role_kit::{OpenSpec, RoleSession, StoreLayout, run_role};

use crate::exit::{CliError, CmdResult};
use crate::output;
use crate::worker::role_main;

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
    pub on_failure: wavecrew_orchestrator::FailurePolicy,
}

/// The executor's main.
pub fn executor_main() -> ExitCode {
    executor_main_from(std::env::args_os().collect())
}

/// [`executor_main`] with explicit arguments (the program name first).
pub fn executor_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    role_main(command_line, run)
}

/// Seed 000's task folder mode: the bus session its records go to.
pub const TASK_FOLDER_BUS: &str = "executor";

fn run(args: &ExecutorArgs) -> CmdResult {
    let (flag, given, layout) = match (&args.session, &args.tasks) {
        (Some(s), _) => ("--session", s, StoreLayout::Session),
        (None, Some(t)) => (
            "--tasks",
            t,
            StoreLayout::TaskFolder {
                bus_key: TASK_FOLDER_BUS.into(),
            },
        ),
        (None, None) => unreachable!("clap requires --session or --tasks"),
    };
    let session = RoleSession::open(&OpenSpec {
        folder: given,
        flag,
        layout,
        config: args.config.as_deref(),
        task: args.task.as_deref(),
        backend: args.backend.clone(),
        bus_key: None,
    })?;
    let store = &session.store;
    if args.tasks.is_some() {
        // Seed 000 keeps dependencies in the plan ("IMPL-3 depends on
        // IMPL-1"): fold them into the tasks' blockers once.
        let loaded = wavecrew_core::source::load(store.dir())?;
        for w in &loaded.warnings {
            output::warning(w);
        }
        for t in &loaded.tasks {
            let deps = loaded.dependencies_of(t);
            if deps != t.blocked_by {
                store.update(&t.id, &mut |x| {
                    x.blocked_by.clone_from(&deps);
                    Ok(())
                })?;
            }
        }
    }
    // A worker that discovers its tasks checks the graph first; one given
    // its task (`--task`, the orchestrator's assignment, made on a checked
    // graph) does not read the whole store: its claim checks the blockers.
    if session.task.is_none() {
        wavecrew_orchestrator::check_graph(&store.list()?).map_err(|e| {
            CliError::bad_input(anyhow::anyhow!(
                "{}: {e}",
                session.ctx.session_dir.display()
            ))
        })?;
    }
    let executor = Executor::new(session.ctx.clone());
    let options = WorkerOptions {
        task: session.task.clone(),
        fast_advance: args.fast_advance,
        blockers: crate::worker::blocker_rule(args.on_failure),
        ..WorkerOptions::default()
    };
    Ok(run_role(&session, &executor, &options, stop)?.into())
}
