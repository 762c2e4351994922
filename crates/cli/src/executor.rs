//! `wavecrew-executor --session <folder> [--task ID] [--backend NAME]`:
//! seed 000's `IMPL-*` worker. Without `--task` it takes every ready
//! `IMPL-*` task of the session in turn; with it, exactly that task.
//! Exit 0 when every task it took completed, 1 when one failed or the
//! named task could not be taken, 2 for bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use wavecrew_core::TaskStore;
use wavecrew_role_executor::Executor;
use wavecrew_role_kit::run::stop;
use wavecrew_role_kit::{OpenSpec, RoleSession, StoreLayout, WorkerCommand, run_role};

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
    /// The common worker flags (`--session`: the session folder,
    /// `.workflow/.team/<session-id>`, tasks in its `tasks/`).
    #[command(flatten)]
    pub worker: WorkerCommand,
    /// Seed 000's own task folder (`.workflow/.team/tasks`), instead of
    /// `--session`; records go to the bus of the session `executor`.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
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
    let w = &args.worker;
    let (flag, given, layout) = match (&w.session, &args.tasks) {
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
        config: w.config.as_deref(),
        task: w.task.as_deref(),
        backend: w.backend.clone(),
        sandbox: w.sandbox,
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
    let options = w.options(&session);
    Ok(run_role(&session, &executor, &options, stop)?.into())
}
