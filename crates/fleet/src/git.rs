//! The few git commands a host runs on its cache, through the ground
//! floor's one runner ([`wavecrew_sys::git`]), committing as wavecrew.

use std::path::Path;

use wavecrew_sys::git::GitError;

use crate::error::{FleetError, Result};

/// `git -C <dir> <args>`, committing as wavecrew.
fn command(dir: &Path, args: &[&str]) -> wavecrew_sys::git::Git {
    wavecrew_sys::git::git(dir)
        .identity("wavecrew", "wavecrew@localhost")
        .args(args)
}

/// The error of `args`, for a message.
fn error(args: &[&str], e: GitError) -> FleetError {
    FleetError::Git {
        command: args.join(" "),
        message: match e {
            GitError::Failed { stderr, .. } => stderr,
            GitError::Spawn { source, .. } => format!("cannot run git: {source}"),
            other => other.to_string(),
        },
    }
}

/// Run `git -C <dir> <args>`; its trimmed stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = command(dir, args).run().map_err(|e| error(args, e))?;
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// Whether `git -C <dir> <args>` exits 0 (for `diff --quiet`).
pub(crate) fn git_test(dir: &Path, args: &[&str]) -> Result<bool> {
    let (_, out) = command(dir, args).output().map_err(|e| error(args, e))?;
    Ok(out.status.success())
}
