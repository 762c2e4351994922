//! `wavecrew-testrun --session <folder> [--task ID]`: seed 002's
//! `TESTRUN-*` worker. Exit 0 when every task it took completed (a test
//! run that did not reach its targets still completes the task, reported
//! as `tests_failed`, as the seed does), 1 when one failed, 2 for bad input.

use std::process::ExitCode;

use clap::Parser;
use wavecrew_role_kit::run::stop;
use wavecrew_role_kit::run_role;
use wavecrew_role_testrun::TestRunRole;

use crate::exit::CmdResult;
use crate::worker::role_main;

/// `wavecrew-testrun` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-testrun",
    version,
    about = "Seed 002: the TESTRUN-* test executor"
)]
#[command(mut_arg("session", |a| a.required(true)))]
pub struct TestRunArgs {
    /// The common worker flags.
    #[command(flatten)]
    pub flags: wavecrew_role_kit::WorkerCommand,
}

/// The test executor's main.
pub fn testrun_main() -> ExitCode {
    testrun_main_from(std::env::args_os().collect())
}

/// [`testrun_main`] with explicit arguments (the program name first).
pub fn testrun_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    role_main(command_line, run)
}

fn run(args: &TestRunArgs) -> CmdResult {
    let session = args.flags.open()?;
    let role = TestRunRole {
        ctx: session.ctx.clone(),
    };
    let options = args.flags.options(&session);
    Ok(run_role(&session, &role, &options, stop)?.into())
}
