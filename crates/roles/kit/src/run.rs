//! The role main every role binary calls: run the worker loop of a role on
//! an opened session, say what completed and what failed (with the task's
//! error), and say how it ended. The binaries keep only their flags and the
//! mapping of [`RoleExit`] and [`KitError`] to exit codes.

use std::io::Write as _;

use serde_json::Value;
use wavecrew_core::role::{Role, WorkerOptions, WorkerSummary, run_worker};
use wavecrew_core::{TaskId, TaskStore};

use crate::context::RoleBus;
use crate::session::{KitError, RoleSession};

/// What a role does after a round of the worker loop without `--task`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Follow {
    /// Nothing more to wait for.
    Stop,
    /// Run the worker loop again (new tasks may have arrived).
    Again,
    /// Stop waiting, and fail with this message.
    GiveUp(String),
}

/// How a role's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleExit {
    /// Every task it took completed.
    Completed,
    /// A task failed, or the task named could not be taken, or it gave up.
    Failed,
}

fn say(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

fn complain(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "error: {line}");
}

/// The error a failed task's result records.
fn task_error(session: &RoleSession, id: &TaskId) -> String {
    session
        .store
        .get(id)
        .ok()
        .and_then(|t| t.result)
        .and_then(|r| r.get("error").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "no error recorded".into())
}

/// Run `role` on `session`: the worker loop (on a runtime of two worker
/// threads), `<tag> <id> completed` on stdout and `error: <tag> <id>
/// failed: <error>` on stderr for every task it took. With `--task` it runs
/// once; without, after every round `follow` says whether to run again.
pub fn run_role<R: Role>(
    session: &RoleSession,
    role: &R,
    options: &WorkerOptions,
    mut follow: impl FnMut(&WorkerSummary) -> Result<Follow, KitError>,
) -> Result<RoleExit, KitError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(KitError::Runtime)?;
    let bus: &RoleBus = &*session.ctx.bus;
    let mut failed = 0;
    loop {
        let summary = rt.block_on(run_worker(role, &session.store, &bus, options))?;
        for id in &summary.completed {
            say(&format!("{} {} completed", role.tag(), id.as_str()));
        }
        for id in &summary.failed {
            complain(&format!(
                "{} {} failed: {}",
                role.tag(),
                id.as_str(),
                task_error(session, id)
            ));
        }
        failed += summary.failed.len();
        if let Some(why) = &summary.not_taken {
            complain(why);
            return Ok(RoleExit::Failed);
        }
        if options.task.is_some() {
            break;
        }
        match follow(&summary)? {
            Follow::Stop => break,
            Follow::Again => {}
            Follow::GiveUp(why) => {
                complain(&why);
                session.ctx.drain_warm_pool();
                return Ok(RoleExit::Failed);
            }
        }
    }
    // A run of the role on its own ends here (a run's worker for one task
    // leaves the pool to the run, which drains it at its end).
    if options.task.is_none() {
        session.ctx.drain_warm_pool();
    }
    Ok(if failed == 0 {
        RoleExit::Completed
    } else {
        RoleExit::Failed
    })
}

/// The `follow` of a role that stops when no task is left.
pub fn stop(_: &WorkerSummary) -> Result<Follow, KitError> {
    Ok(Follow::Stop)
}
