//! `wavecrew pause|resume <session>` and `wavecrew cancel|retry <session>
//! <task>`: what the cockpit's buttons do, for scripts and CI, through the
//! same library function ([`wavecrew_cockpit::apply`]).

use std::path::PathBuf;

use clap::Args;
use wavecrew_cockpit::{Action, ActionError};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew pause` / `resume` arguments.
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// A session folder (`.workflow/.team/<session-id>`), or the task file that made it.
    pub session: PathBuf,
    /// For a task file: the project root its session is under.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `wavecrew cancel` / `retry` arguments.
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// A session folder (`.workflow/.team/<session-id>`), or the task file that made it.
    pub session: PathBuf,
    /// The task id.
    pub task: String,
    /// For a task file: the project root its session is under.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

fn to_cli(e: ActionError) -> CliError {
    if e.is_bad_input() {
        CliError::bad_input(e)
    } else {
        CliError::internal(e)
    }
}

fn act(
    session: &std::path::Path,
    root: &std::path::Path,
    name: &str,
    task: Option<&str>,
    json: bool,
) -> CmdResult {
    let action = Action::parse(name, task).map_err(to_cli)?;
    let dir = super::ui::existing_session(session, root)?;
    let done = wavecrew_cockpit::apply(&dir, &action).map_err(to_cli)?;
    if json {
        output::json_of(&done);
    } else {
        output::line(&done.message);
    }
    Ok(Exit::Success)
}

/// `wavecrew pause`.
pub fn pause(a: &SessionArgs) -> CmdResult {
    act(&a.session, &a.root, "pause", None, a.json)
}

/// `wavecrew resume`.
pub fn resume(a: &SessionArgs) -> CmdResult {
    act(&a.session, &a.root, "resume", None, a.json)
}

/// `wavecrew cancel`.
pub fn cancel(a: &TaskArgs) -> CmdResult {
    act(&a.session, &a.root, "cancel", Some(&a.task), a.json)
}

/// `wavecrew retry`.
pub fn retry(a: &TaskArgs) -> CmdResult {
    act(&a.session, &a.root, "retry", Some(&a.task), a.json)
}
