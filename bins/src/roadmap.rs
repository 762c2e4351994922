//! `wavecrew-roadmap --session <folder> [--task ID] [--max-parallel N]`:
//! seed 004's `EXEC-*` worker; each task executes one phase of the
//! roadmap. Exit 0 when every task it took completed, 1 when one failed
//! (a task attempt failed, or an affected file is missing, or the syntax
//! check failed), 2 for bad input.

use std::process::ExitCode;

use clap::Parser;
use wavecrew_core::role::{WorkerOptions, run_worker};
use wavecrew_role_roadmap::RoadmapRole;

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;
use crate::worker::{SessionContext, WorkerFlags};

/// `wavecrew-roadmap` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-roadmap",
    version,
    about = "Seed 004: the roadmap EXEC-* executor"
)]
pub struct RoadmapArgs {
    /// The common worker flags.
    #[command(flatten)]
    pub flags: WorkerFlags,
    /// Attempts of one wave at once (default: `[limits] max_parallel`).
    #[arg(long)]
    pub max_parallel: Option<usize>,
}

/// The test executor's main.
pub fn roadmap_main() -> ExitCode {
    roadmap_main_from(std::env::args_os().collect())
}

/// [`roadmap_main`] with explicit arguments (the program name first).
pub fn roadmap_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    crate::init_tracing();
    let args = match RoadmapArgs::try_parse_from(command_line) {
        Ok(a) => a,
        Err(e) => return crate::clap_exit(&e),
    };
    crate::finish(run(&args))
}

fn run(args: &RoadmapArgs) -> CmdResult {
    let ctx = SessionContext::open(&args.flags)?;
    let role = RoadmapRole {
        project_root: ctx.root.clone(),
        session_dir: ctx.dir.clone(),
        config: ctx.config.clone(),
        bus: ctx.bus.clone(),
        run_backend: args.flags.backend.clone(),
        max_parallel: args.max_parallel.unwrap_or(ctx.config.limits.max_parallel),
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
