//! What every role binary shares: the common flags, and the one generic
//! main (parse the flags, open the session through the role kit, run the
//! role with `wavecrew_role_kit::run_role`, map the outcome to an exit code:
//! 0 every task taken completed, 1 one failed or the named task could not be
//! taken, 2 bad input, 4 an internal error).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser};
use wavecrew_core::role::WorkerOptions;
use wavecrew_role_kit::{KitError, OpenSpec, RoleExit, RoleSession};

use crate::exit::{CliError, CmdResult, Exit};

/// The flags of every role binary.
#[derive(Debug, Args)]
pub struct WorkerFlags {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: PathBuf,
    /// Take exactly this task (without it: every ready task of the role).
    #[arg(long)]
    pub task: Option<String>,
    /// Run every task through this backend.
    #[arg(long)]
    pub backend: Option<String>,
    /// Read this configuration file instead of `<project root>/wavecrew.toml`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With `--task`: then take the one successor of the role it unblocked.
    #[arg(long)]
    pub fast_advance: bool,
    /// The run's failure policy: with `always`, a task whose blockers
    /// ended (failed ones included) may be taken.
    #[arg(long, value_parser = crate::team::failure_policy_parser(), default_value = "continue")]
    pub on_failure: wavecrew_orchestrator::FailurePolicy,
}

/// The claim rule of a run's failure policy.
pub fn blocker_rule(policy: wavecrew_orchestrator::FailurePolicy) -> wavecrew_core::BlockerRule {
    match policy {
        wavecrew_orchestrator::FailurePolicy::Always => wavecrew_core::BlockerRule::Ended,
        _ => wavecrew_core::BlockerRule::Completed,
    }
}

impl WorkerFlags {
    /// Open the session the flags name.
    pub fn open(&self) -> Result<RoleSession, CliError> {
        Ok(RoleSession::open(&OpenSpec {
            config: self.config.as_deref(),
            task: self.task.as_deref(),
            backend: self.backend.clone(),
            ..OpenSpec::session(&self.session)
        })?)
    }

    /// The worker loop's options for an opened session.
    pub fn options(&self, session: &RoleSession) -> WorkerOptions {
        WorkerOptions {
            task: session.task.clone(),
            fast_advance: self.fast_advance,
            blockers: blocker_rule(self.on_failure),
            ..WorkerOptions::default()
        }
    }
}

impl From<KitError> for CliError {
    fn from(e: KitError) -> Self {
        if e.is_bad_input() {
            CliError::bad_input(e)
        } else {
            CliError::internal(e)
        }
    }
}

impl From<RoleExit> for Exit {
    fn from(e: RoleExit) -> Exit {
        match e {
            RoleExit::Completed => Exit::Success,
            RoleExit::Failed => Exit::Failed,
        }
    }
}

/// The main of a role binary: parse `A` from `command_line` (the program
/// name first), run, print the error if any, exit with its code.
pub fn role_main<A: Parser>(
    command_line: Vec<OsString>,
    run: impl FnOnce(&A) -> CmdResult,
) -> ExitCode {
    crate::init_tracing();
    let args = match A::try_parse_from(command_line) {
        Ok(a) => a,
        Err(e) => return crate::clap_exit(&e),
    };
    crate::finish(run(&args))
}
