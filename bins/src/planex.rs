//! `wavecrew-planex --session <folder> [--task ID]`: seed 003's `EXEC-*`
//! worker. Without `--task` it takes every ready `EXEC-*` task, and while
//! the planner is still planning (no `all_planned` from `planner` on the
//! bus) it keeps following the store for new waves; once the planner has
//! sent `all_planned` and no `EXEC-*` task is left, it sends `wave_done`
//! and stops. Exit 0 when every task it took completed, 1 otherwise, 2 for
//! bad input.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::Map;
use wavecrew_core::role::{WorkerOptions, run_worker};
use wavecrew_core::{ListFilter, NewMessage, TaskStatus, TaskStore};
use wavecrew_role_planex::{PlanexRole, all_planned};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;
use crate::worker::{SessionContext, WorkerFlags};

/// `wavecrew-planex` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-planex",
    version,
    about = "Seed 003: the planex EXEC-* executor"
)]
pub struct PlanexArgs {
    /// The common worker flags.
    #[command(flatten)]
    pub flags: WorkerFlags,
    /// Without `--task`: give up waiting for the planner after this many seconds.
    #[arg(long, default_value_t = 1800)]
    pub idle_timeout: u64,
}

/// The planex executor's main.
pub fn planex_main() -> ExitCode {
    planex_main_from(std::env::args_os().collect())
}

/// [`planex_main`] with explicit arguments (the program name first).
pub fn planex_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    crate::init_tracing();
    let args = match PlanexArgs::try_parse_from(command_line) {
        Ok(a) => a,
        Err(e) => return crate::clap_exit(&e),
    };
    crate::finish(run(&args))
}

fn exec_left(store: &dyn TaskStore) -> Result<bool, CliError> {
    Ok(store.list()?.iter().any(|t| {
        t.id.as_str().starts_with("EXEC-")
            && matches!(t.status, TaskStatus::Pending | TaskStatus::InProgress)
    }))
}

fn run(args: &PlanexArgs) -> CmdResult {
    let ctx = SessionContext::open(&args.flags)?;
    let mut role = PlanexRole::new(ctx.root.clone(), ctx.dir.clone(), ctx.config.clone());
    role.run_backend.clone_from(&args.flags.backend);
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
    let mut failed = 0;
    let mut idle_since = Instant::now();
    loop {
        let summary = rt.block_on(run_worker(&role, &ctx.store, &*ctx.bus, &options))?;
        for id in &summary.completed {
            output::line(&format!("[executor] {} completed", id.as_str()));
        }
        failed += summary.failed.len();
        if let Some(why) = &summary.not_taken {
            output::error(why);
            return Ok(Exit::Failed);
        }
        if options.task.is_some() {
            break;
        }
        if !summary.completed.is_empty() || !summary.failed.is_empty() {
            idle_since = Instant::now();
        }
        let planner = ctx
            .bus
            .list(&ListFilter {
                from: Some("planner".into()),
                kind: Some("all_planned".into()),
                last: 1,
                ..ListFilter::default()
            })
            .map_err(CliError::internal)?;
        if all_planned(&planner.messages) && !exec_left(&ctx.store)? {
            let sent = ctx
                .bus
                .list(&ListFilter {
                    from: Some("executor".into()),
                    kind: Some("wave_done".into()),
                    last: 1,
                    ..ListFilter::default()
                })
                .map_err(CliError::internal)?;
            if sent.total == 0 {
                ctx.bus
                    .log(NewMessage {
                        from: "executor".into(),
                        to: Some("planner".into()),
                        kind: Some("wave_done".into()),
                        summary: Some(
                            "[executor] All Tasks Done: every planned EXEC task is finished".into(),
                        ),
                        data: Some(Map::new()),
                        reference: None,
                    })
                    .map_err(CliError::internal)?;
            }
            break;
        }
        if idle_since.elapsed() > Duration::from_secs(args.idle_timeout) {
            output::error(&format!(
                "no new EXEC task and no `all_planned` from the planner in {} s; stopping",
                args.idle_timeout
            ));
            return Ok(Exit::Failed);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok(if failed == 0 {
        Exit::Success
    } else {
        Exit::Failed
    })
}
