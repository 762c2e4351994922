//! Git bundles: how a repository travels between hosts that share no
//! filesystem (the scale-out engine carries the files; this module makes
//! and reads them).
//!
//! A bundle holds one ref and the commits it needs past what the receiver
//! already has (`since`). Reading one never moves a ref by itself: `git
//! bundle unbundle` only adds objects and says which commit the bundle's
//! ref names; the caller's ref then moves by compare-and-swap, as every
//! other ref this crate touches.

use std::path::Path;

use wavecrew_sys::git::GitError;

use crate::error::{IsolationError, Result};
use crate::repo::Repo;

/// What [`Repo::create_bundle`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bundled {
    /// A bundle of `reference` at `commit`.
    Written {
        /// The commit the bundle's ref names.
        commit: String,
    },
    /// `reference` is at `since` already: nothing to send, no file written.
    UpToDate,
}

impl Repo {
    /// Write to `out` a bundle of `reference` (`refs/heads/…`) with every
    /// commit it needs that `since` (a commit the receiver has) lacks; all
    /// of its history when `since` is None.
    pub fn create_bundle(
        &self,
        out: &Path,
        reference: &str,
        since: Option<&str>,
    ) -> Result<Bundled> {
        self.check_ref_name(reference)?;
        let commit = self.must_resolve(reference)?;
        if since == Some(commit.as_str()) {
            return Ok(Bundled::UpToDate);
        }
        let mut cmd = self
            .git()
            .args(["bundle", "create", "--quiet"])
            .arg(out)
            .arg(reference);
        if let Some(since) = since {
            // The receiver has `since`: leave it and its history out.
            let since = self.must_resolve(since)?;
            cmd = cmd.arg(format!("^{since}"));
        }
        cmd.run()?;
        Ok(Bundled::Written { commit })
    }

    /// Read the bundle at `bundle` into this repository's objects (its
    /// prerequisites must be here: an earlier bundle brought them) and move
    /// `dest` (`refs/…`) from `expected` (empty: must not exist) to the
    /// commit the bundle's `reference` names, by compare-and-swap. Returns
    /// that commit and whether `dest` moved to it (false: `dest` was not at
    /// `expected`, another writer moved it; only objects were added).
    pub fn fetch_bundle(
        &self,
        bundle: &Path,
        reference: &str,
        dest: &str,
        expected: &str,
    ) -> Result<(String, bool)> {
        self.check_ref_name(reference)?;
        self.check_ref_name(dest)?;
        self.git()
            .args(["bundle", "verify", "--quiet"])
            .arg(bundle)
            .run()?;
        let cmd = self.git().args(["bundle", "unbundle"]).arg(bundle);
        let line = cmd.line();
        let listed = String::from_utf8_lossy(&cmd.run()?).into_owned();
        let commit = listed
            .lines()
            .filter_map(|l| l.split_once(' '))
            .find(|(_, name)| *name == reference)
            .map(|(commit, _)| commit.to_owned())
            .ok_or_else(|| {
                IsolationError::Git(GitError::Unexpected {
                    command: line,
                    output: listed.chars().take(400).collect(),
                    expected: "the bundle's ref among the refs it lists",
                })
            })?;
        let commit = self.must_resolve(&commit)?;
        let moved = self.update_ref(dest, &commit, expected, "wavecrew: from a bundle")?;
        Ok((commit, moved))
    }

    /// The commit `reference` (`refs/…`) names here, if it exists.
    pub fn ref_commit(&self, reference: &str) -> Result<Option<String>> {
        self.check_ref_name(reference)?;
        self.resolve(reference)
    }

    /// `reference` is a full ref name git accepts (`refs/…`, checked by
    /// `git check-ref-format`); anything else is refused before use.
    pub(crate) fn check_ref_name(&self, reference: &str) -> Result<()> {
        let ok = reference.starts_with("refs/")
            && self.git().args(["check-ref-format", reference]).test()?;
        if ok {
            Ok(())
        } else {
            Err(IsolationError::InvalidRef {
                given: reference.chars().take(200).collect(),
            })
        }
    }
}
