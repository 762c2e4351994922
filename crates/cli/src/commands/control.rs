//! `wavecrew pause|resume <session>`, `wavecrew cancel|retry|approve <session>
//! <task>` and `wavecrew reject <session> <task> --note …`: what the cockpit's buttons do, for scripts and CI, through the
//! same library function ([`wavecrew_cockpit::apply`]).

use std::path::PathBuf;

use clap::Args;
use wavecrew_cockpit::{Action, ActionError};
use wavecrew_core::LineComment;

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

/// `wavecrew reject` arguments.
#[derive(Debug, Args)]
pub struct RejectArgs {
    /// A session folder (`.workflow/.team/<session-id>`), or the task file that made it.
    pub session: PathBuf,
    /// The task id.
    pub task: String,
    /// What to change: the revision's prompt carries it as your instruction.
    #[arg(long)]
    pub note: Option<String>,
    /// A comment on a line of the task's diff, `FILE:LINE:TEXT` (repeatable); the revision's
    /// prompt quotes each with its file and line.
    #[arg(long = "comment", value_name = "FILE:LINE:TEXT")]
    pub comments: Vec<String>,
    /// For a task file: the project root its session is under.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `FILE:LINE:TEXT`.
fn line_comment(raw: &str) -> Result<LineComment, CliError> {
    let bad = || {
        CliError::bad_input(anyhow::anyhow!(
            "--comment {raw:?}: expected FILE:LINE:TEXT (a line number from 1)"
        ))
    };
    let (file, rest) = raw.split_once(':').ok_or_else(bad)?;
    let (line, text) = rest.split_once(':').ok_or_else(bad)?;
    let line: u32 = line.trim().parse().map_err(|_| bad())?;
    if file.is_empty() || line == 0 || text.trim().is_empty() {
        return Err(bad());
    }
    Ok(LineComment {
        file: file.to_owned(),
        line,
        text: text.to_owned(),
    })
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
    let action = action(name, task)?;
    run_action(session, root, &action, json)
}

/// The action `name` (`cancel`, `retry`, `approve`, …) on `task`: what
/// `wavecrew <name> <session> <task>` asks for.
pub fn action(name: &str, task: Option<&str>) -> Result<Action, CliError> {
    Action::parse(name, task).map_err(to_cli)
}

/// `wavecrew reject`'s action: `task` sent back with `note` and the line
/// comments (`FILE:LINE:TEXT` each).
pub fn rejection(task: &str, note: Option<&str>, comments: &[String]) -> Result<Action, CliError> {
    let Action::Reject { task, .. } = action("reject", Some(task))? else {
        unreachable!("parse(\"reject\") is a rejection")
    };
    let comments = comments
        .iter()
        .map(|c| line_comment(c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Action::Reject {
        task,
        note: note.unwrap_or_default().to_owned(),
        comments,
    })
}

/// Apply `action` to the session folder `dir`, as the command line does.
pub fn apply(
    dir: &std::path::Path,
    action: &Action,
) -> Result<wavecrew_cockpit::Applied, CliError> {
    wavecrew_cockpit::apply(dir, action).map_err(to_cli)
}

fn run_action(
    session: &std::path::Path,
    root: &std::path::Path,
    action: &Action,
    json: bool,
) -> CmdResult {
    let dir = super::ui::existing_session(session, root)?;
    let done = apply(&dir, action)?;
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

/// `wavecrew approve`.
pub fn approve(a: &TaskArgs) -> CmdResult {
    act(&a.session, &a.root, "approve", Some(&a.task), a.json)
}

/// `wavecrew reject`.
pub fn reject(a: &RejectArgs) -> CmdResult {
    let action = rejection(&a.task, a.note.as_deref(), &a.comments)?;
    run_action(&a.session, &a.root, &action, a.json)
}
