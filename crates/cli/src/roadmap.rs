//! `wavecrew-roadmap --session <folder> [--task ID] [--max-parallel N]`:
//! seed 004's `EXEC-*` worker; each task executes one phase of the
//! roadmap. Exit 0 when every task it took completed, 1 when one failed
//! (a task attempt failed, or an affected file is missing, or the syntax
//! check failed), 2 for bad input.

use std::process::ExitCode;

use clap::Parser;
use wavecrew_role_kit::run::stop;
use wavecrew_role_kit::run_role;
use wavecrew_role_roadmap::RoadmapRole;

use crate::exit::CmdResult;
use crate::worker::role_main;

/// `wavecrew-roadmap` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-roadmap",
    version,
    about = "Seed 004: the roadmap EXEC-* executor"
)]
#[command(mut_arg("session", |a| a.required(true)))]
pub struct RoadmapArgs {
    /// The common worker flags.
    #[command(flatten)]
    pub flags: wavecrew_role_kit::WorkerCommand,
    /// Attempts of one wave at once (default: `[limits] max_parallel`; one
    /// in place).
    #[arg(long)]
    pub max_parallel: Option<usize>,
}

/// The roadmap executor's main.
pub fn roadmap_main() -> ExitCode {
    roadmap_main_from(std::env::args_os().collect())
}

/// [`roadmap_main`] with explicit arguments (the program name first).
pub fn roadmap_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    role_main(command_line, run)
}

fn run(args: &RoadmapArgs) -> CmdResult {
    let session = args.flags.open()?;
    let role = RoadmapRole {
        max_parallel: wavecrew_orchestrator::run::max_parallel(
            args.max_parallel,
            &session.ctx.config,
        ),
        ctx: session.ctx.clone(),
    };
    let options = args.flags.options(&session);
    Ok(run_role(&session, &role, &options, stop)?.into())
}
