//! The few git commands a host runs on its cache, with argv (never a shell)
//! and a fixed identity for the attempt commits.

use std::path::Path;
use std::process::Command;

use crate::error::{FleetError, Result};

/// Run `git -C <dir> <args>`; its trimmed stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "wavecrew")
        .env("GIT_AUTHOR_EMAIL", "wavecrew@localhost")
        .env("GIT_COMMITTER_NAME", "wavecrew")
        .env("GIT_COMMITTER_EMAIL", "wavecrew@localhost")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| FleetError::Git {
            command: args.join(" "),
            message: format!("cannot run git: {e}"),
        })?;
    if !out.status.success() {
        return Err(FleetError::Git {
            command: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether `git -C <dir> <args>` exits 0 (for `diff --quiet`).
pub(crate) fn git_test(dir: &Path, args: &[&str]) -> Result<bool> {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .status()
        .map_err(|e| FleetError::Git {
            command: args.join(" "),
            message: format!("cannot run git: {e}"),
        })?;
    Ok(status.success())
}
