//! `wavecrew import <file>`: write `wavecrew.tasks.toml` from a task list
//! kept elsewhere (Task Master's `tasks.json`, maestro-flow's plan tasks),
//! through [`wavecrew_taskfile::import`]; what could not be carried over is
//! said on stderr and in the file's header.

use std::path::PathBuf;

use clap::Args;
use wavecrew_taskfile::import::ImportError;

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew import` arguments.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Task Master's `tasks.json` (`.taskmaster/tasks/tasks.json`), or maestro-flow's plan tasks
    /// (an `outputs/tasks/` folder of `TASK-NNN.json`, or one of them).
    pub file: PathBuf,
    /// The task file to write.
    #[arg(long, short, default_value = wavecrew_taskfile::TASK_FILE)]
    pub output: PathBuf,
    /// The Task Master tag to import (default: `master`, else the only one).
    #[arg(long)]
    pub tag: Option<String>,
    /// Replace the output file when it exists.
    #[arg(long)]
    pub force: bool,
    /// Print the task file on stdout instead of writing it.
    #[arg(long)]
    pub stdout: bool,
}

/// Run `wavecrew import`.
pub fn run(a: &ImportArgs) -> CmdResult {
    let imported = wavecrew_taskfile::import::import(&a.file, a.tag.as_deref()).map_err(|e| {
        let bad_input = !matches!(&e, ImportError::Io { source, .. } if source.kind() != std::io::ErrorKind::NotFound);
        if bad_input {
            CliError::bad_input(e)
        } else {
            CliError::internal(e)
        }
    })?;
    for d in &imported.dropped {
        output::warning(&format!("not carried over: {d}"));
    }
    if a.stdout {
        output::text(&imported.text);
        return Ok(Exit::Success);
    }
    if a.output.exists() && !a.force {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "{}: exists already; nothing was written (give --force to replace it, or --output \
             another file)",
            a.output.display()
        )));
    }
    wavecrew_core::fsutil::write_atomic(&a.output, imported.text.as_bytes())
        .map_err(CliError::internal)?;
    output::line(&format!(
        "{}: {} tasks imported from {} ({}); check them with `wavecrew plan waves {}`",
        a.output.display(),
        imported.tasks,
        a.file.display(),
        imported.format.name(),
        a.output.display()
    ));
    Ok(Exit::Success)
}
