//! What every role binary shares: the common flags (the launcher's typed
//! [`WorkerCommand`](wavecrew_role_kit::WorkerCommand), flattened into each
//! binary's), and the one generic main (parse the flags, open the session through the role kit, run the
//! role with `wavecrew_role_kit::run_role`, map the outcome to an exit code:
//! 0 every task taken completed, 1 one failed or the named task could not be
//! taken, 2 bad input, 4 an internal error).

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;
use wavecrew_role_kit::{KitError, RoleExit};

use crate::exit::{CliError, CmdResult, Exit};

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
