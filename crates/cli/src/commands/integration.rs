//! The session's integration branch seen from the command line: what a run
//! says at its end (where the work is, and `--apply`), and `wavecrew clean`.

use std::path::{Path, PathBuf};

use clap::Args;
use wavecrew_isolation::{Integration, IsolationError};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// The integration branch of a session that ran isolated, if it did.
fn integration_of(session: &Path) -> Result<Option<Integration>, IsolationError> {
    Integration::of_session(session)
}

/// Before a run of a session that ran isolated before: forget worktrees
/// whose folders are gone and remove folders under wavecrew's worktree
/// folder that git does not list (a killed run's leftovers); nothing
/// outside that folder, and no live worktree, is touched. A failure is a
/// warning: the run can go on.
pub fn prune_at_start(session: &Path) {
    match integration_of(session) {
        Ok(Some(integration)) => {
            if let Err(e) = integration.prune_stale() {
                output::warning(&format!("cannot prune stale worktrees: {e}"));
            }
        }
        Ok(None) => {}
        Err(e) => output::warning(&format!(
            "cannot open the session's integration branch: {e}"
        )),
    }
}

/// When a run ends, however it ends: the warm pool's worktrees go (a cache
/// for the tasks of one run; failed tasks' worktrees stay for inspection).
/// A failure is a warning.
pub fn drain_pool_at_end(session: &Path) {
    match integration_of(session) {
        Ok(Some(integration)) => {
            if let Err(e) = integration.drain_pool() {
                output::warning(&format!("cannot remove the warm worktrees: {e}"));
            }
        }
        Ok(None) => {}
        Err(e) => output::warning(&format!(
            "cannot open the session's integration branch: {e}"
        )),
    }
}

/// After a run: say where an isolated session's work is, and with `apply`
/// fast-forward the user's branch and work tree to it (or refuse, naming
/// the command to run). `Exit::Failed` when `--apply` was refused.
pub fn after_run(session: &Path, apply: bool) -> Result<Exit, CliError> {
    let integration = match integration_of(session) {
        Ok(Some(i)) => i,
        Ok(None) => {
            if apply {
                output::progress(
                    "nothing to apply: the session ran in place ([isolation] mode = \"in-place\"), \
                     its work is already in your folder",
                );
            }
            return Ok(Exit::Success);
        }
        Err(e) => return Err(CliError::internal(anyhow::anyhow!("{e}"))),
    };
    if !apply {
        if integration.repo().is_shadow() {
            output::progress(&format!(
                "the work is on branch {} of the session's shadow repository {} (the project \
                 folder has no git): run again with --apply to write it into the folder",
                integration.branch(),
                integration.repo().common_dir().display()
            ));
        } else {
            output::progress(&format!(
                "the work is on branch {0}: take it with `git merge {0}` (or run again with --apply)",
                integration.branch()
            ));
        }
        return Ok(Exit::Success);
    }
    match integration.apply() {
        Ok(applied) => {
            tracing::info!(branch = %applied.branch, from = %applied.from, to = %applied.to, "applied");
            if let Some(files) = &applied.files {
                let folder = integration.repo().work_tree().display();
                if files.written.is_empty() && files.deleted.is_empty() {
                    output::progress(&format!(
                        "applied: {folder} already holds the work of {}",
                        integration.branch()
                    ));
                } else {
                    output::progress(&format!(
                        "applied: the work of {} is in {folder}: {} file(s) written, {} deleted \
                         (the folder still has no git repository)",
                        integration.branch(),
                        files.written.len(),
                        files.deleted.len()
                    ));
                }
            } else if applied.uncommitted {
                output::progress(&format!(
                    "applied: the work of {} is in your work tree, uncommitted, on top of the \
                     uncommitted changes the session started from",
                    integration.branch()
                ));
            } else {
                output::progress(&format!(
                    "applied: your branch now holds the work of {}",
                    integration.branch()
                ));
            }
            Ok(Exit::Success)
        }
        Err(e @ IsolationError::Refused { .. }) => {
            output::error(&e.to_string());
            Ok(Exit::Failed)
        }
        Err(e) => Err(CliError::internal(anyhow::anyhow!("{e}"))),
    }
}

/// The demo's end: apply its work when its session ran isolated (its
/// folder is the demo's own); nothing to say otherwise.
pub fn apply_if_isolated(session: &Path) -> Result<Exit, CliError> {
    match integration_of(session) {
        Ok(Some(_)) => after_run(session, true),
        Ok(None) => Ok(Exit::Success),
        Err(e) => Err(CliError::internal(anyhow::anyhow!("{e}"))),
    }
}

/// `wavecrew clean` arguments.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// The session folder (`.workflow/.team/<session-id>`).
    pub session: PathBuf,
}

/// `wavecrew clean <session>`: remove every worktree of the session (their
/// branches stay, as refs).
pub fn clean(args: &CleanArgs) -> CmdResult {
    if !args.session.is_dir() {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "{}: no such session folder",
            args.session.display()
        )));
    }
    match integration_of(&args.session) {
        Ok(Some(integration)) => {
            let removed = integration
                .clean()
                .map_err(|e| CliError::internal(anyhow::anyhow!("{e}")))?;
            output::line(&format!(
                "removed {removed} worktree(s) of {}",
                integration.session_id()
            ));
        }
        Ok(None) => output::line("nothing to clean: the session never ran isolated"),
        Err(e) => return Err(CliError::internal(anyhow::anyhow!("{e}"))),
    }
    Ok(Exit::Success)
}
