//! `wavecrew-testrun --session <folder> [--task ID]`: seed 002's
//! `TESTRUN-*` worker. Exit 0 when every task it took completed (a test
//! run that did not reach its targets still completes the task, reported
//! as `tests_failed`, as the seed does), 1 when one failed, 2 for bad input.

use std::process::ExitCode;

use clap::Parser;
use wavecrew_core::role::{WorkerOptions, run_worker};
use wavecrew_role_testrun::TestRunRole;

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;
use crate::worker::{SessionContext, WorkerFlags};

/// `wavecrew-testrun` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-testrun",
    version,
    about = "Seed 002: the TESTRUN-* test executor"
)]
pub struct TestRunArgs {
    /// The common worker flags.
    #[command(flatten)]
    pub flags: WorkerFlags,
}

/// The test executor's main.
pub fn testrun_main() -> ExitCode {
    testrun_main_from(std::env::args_os().collect())
}

/// [`testrun_main`] with explicit arguments (the program name first).
pub fn testrun_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    crate::init_tracing();
    let args = match TestRunArgs::try_parse_from(command_line) {
        Ok(a) => a,
        Err(e) => return crate::clap_exit(&e),
    };
    crate::finish(run(&args))
}

fn run(args: &TestRunArgs) -> CmdResult {
    let ctx = SessionContext::open(&args.flags)?;
    let role = TestRunRole {
        project_root: ctx.root.clone(),
        session_dir: ctx.dir.clone(),
        config: ctx.config.clone(),
        bus: ctx.bus.clone(),
        run_backend: args.flags.backend.clone(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    let options = WorkerOptions {
        task: ctx.task.clone(),
        fast_advance: args.flags.fast_advance,
        blockers: crate::worker::blocker_rule(args.flags.on_failure),
        ..WorkerOptions::default()
    };
    let summary = rt.block_on(run_worker(&role, &ctx.store, &*ctx.bus, &options))?;
    for id in &summary.completed {
        output::line(&format!("[executor] {} completed", id.as_str()));
    }
    for id in &summary.failed {
        let why = wavecrew_core::TaskStore::get(&ctx.store, id)
            .ok()
            .and_then(|t| t.result)
            .and_then(|r| r.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_default();
        output::error(&format!("[executor] {} failed: {why}", id.as_str()));
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
