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
use wavecrew_core::{ListFilter, NewMessage, TaskStatus, TaskStore};
use wavecrew_role_kit::{Follow, KitError, RoleSession, run_role};
use wavecrew_role_planex::{PlanexRole, all_planned};

use crate::exit::CmdResult;
use crate::worker::role_main;

/// `wavecrew-planex` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-planex",
    version,
    about = "Seed 003: the planex EXEC-* executor"
)]
#[command(mut_arg("session", |a| a.required(true)))]
pub struct PlanexArgs {
    /// The common worker flags.
    #[command(flatten)]
    pub flags: wavecrew_role_kit::WorkerCommand,
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
    role_main(command_line, run)
}

fn exec_left(store: &dyn TaskStore) -> Result<bool, KitError> {
    Ok(store.list()?.iter().any(|t| {
        t.id.as_str().starts_with("EXEC-")
            && matches!(t.status, TaskStatus::Pending | TaskStatus::InProgress)
    }))
}

/// Between rounds without `--task`: wait for the planner's next wave;
/// once it has sent `all_planned` and no `EXEC-*` task is left, send
/// `wave_done` (once) and stop.
fn follow_planner(
    session: &RoleSession,
    idle_timeout: u64,
) -> impl FnMut(&wavecrew_core::WorkerSummary) -> Result<Follow, KitError> {
    let mut idle_since = Instant::now();
    move |summary| {
        let bus = &session.ctx.bus;
        if !summary.completed.is_empty() || !summary.failed.is_empty() {
            idle_since = Instant::now();
        }
        let planner = bus.list(&ListFilter {
            from: Some("planner".into()),
            kind: Some("all_planned".into()),
            last: 1,
            ..ListFilter::default()
        })?;
        if all_planned(&planner.messages) && !exec_left(&session.store)? {
            let sent = bus.list(&ListFilter {
                from: Some("executor".into()),
                kind: Some("wave_done".into()),
                last: 1,
                ..ListFilter::default()
            })?;
            if sent.total == 0 {
                bus.log(NewMessage {
                    from: "executor".into(),
                    to: Some("planner".into()),
                    kind: Some("wave_done".into()),
                    summary: Some(
                        "[executor] All Tasks Done: every planned EXEC task is finished".into(),
                    ),
                    data: Some(Map::new()),
                    reference: None,
                })?;
            }
            return Ok(Follow::Stop);
        }
        if idle_since.elapsed() > Duration::from_secs(idle_timeout) {
            return Ok(Follow::GiveUp(format!(
                "no new EXEC task and no `all_planned` from the planner in {idle_timeout} s; stopping"
            )));
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok(Follow::Again)
    }
}

fn run(args: &PlanexArgs) -> CmdResult {
    let session = args.flags.open()?;
    let role = PlanexRole::new(session.ctx.clone());
    let options = args.flags.options(&session);
    let follow = follow_planner(&session, args.idle_timeout);
    Ok(run_role(&session, &role, &options, follow)?.into())
}
