//! `wavecrew report <session>` (write every report again, from the bus and
//! the task store) and `wavecrew status <session> [--json] [--watch]`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// How many of the last bus records `status` shows by default (the MCP
/// server's `status` too).
pub const DEFAULT_LAST: usize = 10;

/// `wavecrew report` arguments.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The session folder.
    pub session: PathBuf,
    /// Print the list of files as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `wavecrew status` arguments.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The session folder.
    pub session: PathBuf,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Refresh every 2 seconds until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// How many of the last bus records to show.
    #[arg(long, default_value_t = DEFAULT_LAST)]
    pub last: usize,
}

/// What `wavecrew status <dir> --json --last <last>` prints.
pub fn status_value(dir: &std::path::Path, last: usize) -> Result<serde_json::Value, CliError> {
    let run = wavecrew_report::collect(dir).map_err(CliError::internal)?;
    Ok(wavecrew_report::status::status_json(&run, last))
}

/// The session folder `path` names, canonical; refused (exit 2) when it
/// is not one.
pub fn session_dir(path: &std::path::Path) -> Result<PathBuf, CliError> {
    if !wavecrew_core::SessionLayout::new(path).looks_like_session() {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "{}: not a session folder (no tasks/ and no team-session.json)",
            path.display()
        )));
    }
    path.canonicalize().map_err(CliError::internal)
}

/// Run `wavecrew report`.
pub fn report(args: &ReportArgs) -> CmdResult {
    let dir = session_dir(&args.session)?;
    let files = wavecrew_report::write_reports(&dir).map_err(CliError::internal)?;
    if args.json {
        output::json(&serde_json::json!({"written": files}));
    } else {
        for f in files {
            output::line(&f.display().to_string());
        }
    }
    Ok(Exit::Success)
}

/// Run `wavecrew status`.
pub fn status(args: &StatusArgs) -> CmdResult {
    let dir = session_dir(&args.session)?;
    loop {
        let run = wavecrew_report::collect(&dir).map_err(CliError::internal)?;
        if args.json {
            output::json(&wavecrew_report::status::status_json(&run, args.last));
        } else {
            if args.watch {
                // Clear the screen between refreshes.
                output::line("\u{1b}[2J\u{1b}[H");
            }
            output::line(wavecrew_report::status::status_text(&run, args.last).trim_end());
        }
        if !args.watch || matches!(run.status.as_str(), "completed") {
            return Ok(Exit::Success);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}
