//! The slots: every attempt's worktree lives in
//! `<worktrees_dir>/slots/<n>/`, and a landed attempt's worktree stays there,
//! detached, for the next new attempt to take over instead of checking out
//! a fresh one (the warm pool). A worktree never moves, so its path is the
//! same for every task it serves: compilers key their incremental state by
//! path (a Cargo workspace checked at a new path rebuilds every member from
//! scratch: 7.5 s against 2.1 s for one line in this repository). The pool
//! keeps at most [`POOL_MAX`] detached worktrees (the slots numbered up
//! to it).
//!
//! Giving one back detaches its HEAD (`update-ref --no-deref`, nothing
//! else changes), which frees the slot; no lock is needed. Taking one over
//! points its HEAD at the attempt's branch (under the worktree lock, so no
//! other attempt takes it), then, outside the lock,
//! checks the branch out with `--force` (git rewrites only the files that
//! differ, so unchanged files keep their times and a build stays
//! incremental) and removes untracked files with `git clean -fd` (not
//! `-x`: what git ignores, the build output, stays). Tracked files are then
//! exactly the task's base. A worktree given back at the very commit the
//! new attempt starts from (a task that changed nothing, or one whose
//! landing fast-forwarded) needs neither when `git status` finds nothing
//! changed or untracked in it. A dependency folder of a known kind
//! (`node_modules`) whose lockfile changed with the switch is removed, so
//! a task never runs on a tree installed for other dependencies (Cargo's
//! `target/` keys its own cache by what it builds and stays).
//!
//! A marker beside the attempt's record (`<attempt>.resetting`) lives while
//! the reset runs: a run killed then finds the worktree on the attempt's
//! branch and the marker, and resets it again. A pooled worktree is an
//! ordinary detached worktree of ours, so a kill at any point leaves one
//! that [`Integration::prune_stale`] keeps or sweeps like any other.

use std::fs;
use std::path::{Path, PathBuf};

use wavecrew_sys::git::{TreeStatus, WorkTreeGit};

use crate::error::{IsolationError, Result};
use crate::integration::Integration;
use crate::layout::{
    Listed, WORKTREE_LOCK, Worktree, canon, list_worktrees, pooled, remove_any, slot_number,
    trusted_git_dir,
};
use crate::lock::lock;

// Named here too, as before it moved down to `layout.rs`.
pub use crate::layout::SLOTS_DIR;

/// The most detached worktrees the pool keeps; more are removed when they
/// come back.
pub const POOL_MAX: usize = 16;

/// A pooled worktree claimed for an attempt: the lockfiles it was
/// installed with (`None`: not known, every keyed folder counts as stale),
/// and the commit it was given back at (`None`: not known).
pub(crate) struct Claim {
    locks: Option<std::collections::BTreeMap<&'static str, Vec<u8>>>,
    head: Option<String>,
}

impl Claim {
    /// A claim whose earlier state is not known (a reset resumed after a
    /// kill).
    pub(crate) fn unknown() -> Self {
        Claim {
            locks: None,
            head: None,
        }
    }
}

/// The file in a worktree's own git folder that records the commit its
/// `[isolation] setup` ran at ([`Integration::record_set_up`]).
const SET_UP_AT: &str = "wavecrew-set-up-at";

/// File names of dependency manifests and lockfiles, at any depth: a
/// change to one with the switch runs `[isolation] setup` again in a warm
/// worktree.
const DEPENDENCY_FILES: &[&str] = &[
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "yarn.lock",
    "bun.lockb",
    "bun.lock",
    ".npmrc",
    ".nvmrc",
    "Cargo.toml",
    "Cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "uv.lock",
    "poetry.lock",
    "Pipfile",
    "Pipfile.lock",
    ".python-version",
    "go.mod",
    "go.sum",
    "Gemfile",
    "Gemfile.lock",
    "composer.json",
    "composer.lock",
];

/// Whether `path` (repository-relative) names a dependency file: one of
/// [`DEPENDENCY_FILES`], or a `requirements*.txt`.
fn is_dependency_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    DEPENDENCY_FILES.contains(&name)
        || (name.starts_with("requirements")
            && Path::new(name)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("txt")))
}

/// Dependency folders that are stale when their lockfile changes, with the
/// lockfiles that key them.
const KEYED: &[(&str, &[&str])] = &[(
    "node_modules",
    &[
        "package-lock.json",
        "npm-shrinkwrap.json",
        "pnpm-lock.yaml",
        "yarn.lock",
    ],
)];

impl Integration {
    /// After a landed attempt: its worktree goes back to the pool (detached,
    /// its ignored build state kept) for the next attempt to take over, or
    /// is removed when it is in a slot above the pool's. Refuses a folder outside
    /// [`Integration::worktrees_dir`], like [`Integration::remove_worktree`].
    pub fn release_worktree(&self, wt: &Worktree) -> Result<()> {
        if wt.is_detached() || !self.owns_path(&wt.path) {
            return self.remove_worktree(wt);
        }
        let slots = canon(&self.worktrees_dir().join(SLOTS_DIR));
        // Slots are numbered from 1, the lowest free one taken first: the
        // first `POOL_MAX` slots are the pool, a slot above it (more
        // attempts at once than that) is removed.
        let path = canon(&wt.path);
        // Detached by moving HEAD alone (no index, no file touched), and
        // without the worktree lock: the detached HEAD is what frees the
        // slot, and nothing of this attempt's touches it after that.
        let kept = path.parent() == Some(slots.as_path())
            && slot_number(&path).is_some_and(|n| n <= POOL_MAX as u64)
            && self
                .git_in_worktree(&wt.path)
                .and_then(|git| {
                    Ok(git
                        .args([
                            "update-ref",
                            "--no-deref",
                            "-m",
                            "wavecrew: back to the pool",
                        ])
                        .args(["HEAD", "HEAD"])
                        .run()?)
                })
                .is_ok();
        if !kept {
            let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
            let listed = list_worktrees(&self.repo)?;
            let reference = format!("refs/heads/{}", wt.branch);
            // Detached after all and taken over meanwhile: not ours now.
            let taken = listed.iter().any(|l| {
                canon(&l.path) == path && l.branch.as_deref().is_some_and(|b| b != reference)
            });
            if !taken {
                self.remove_path(&wt.path, &listed)?;
                self.remove_empty_parents(&wt.path);
            }
        }
        Ok(())
    }

    /// At the end of a run: remove the pooled worktrees (a cache; a later
    /// run starts them again), then the session's worktree folder and the
    /// `<project>.wavecrew` folder when they are empty. Returns how many
    /// went.
    pub fn drain_pool(&self) -> Result<usize> {
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        let slots = self.worktrees_dir().join(SLOTS_DIR);
        if fs::symlink_metadata(&slots).is_err() {
            return Ok(0);
        }
        let dir = canon(&slots);
        let listed = list_worktrees(&self.repo)?;
        let mut count = 0;
        for l in &listed {
            if l.branch.is_none() && canon(&l.path).parent() == Some(dir.as_path()) {
                self.remove_path(&l.path, &listed)?;
                count += 1;
            }
        }
        // Kept worktrees (failed attempts, interrupted ones) stay.
        let _ = fs::remove_dir(&slots);
        self.remove_empty_worktrees_dir();
        Ok(count)
    }

    /// Claim a pooled worktree for a new attempt on `reference`: the
    /// lowest-numbered detached one in the slots, its HEAD pointed at the
    /// branch (so no other attempt takes it), still holding its old files;
    /// `None` when the pool has none. `resetting` is written first (by
    /// the caller already when `marked`: a new attempt's, before it took
    /// the worktree lock). Call under the worktree lock;
    /// [`Self::reset_pooled`] finishes the job outside it.
    pub(crate) fn claim_pooled(
        &self,
        listed: &[Listed],
        reference: &str,
        resetting: &Path,
        marked: bool,
    ) -> Result<Option<(PathBuf, Claim)>> {
        let Some(path) = pooled(&self.worktrees_dir().join(SLOTS_DIR), listed) else {
            return Ok(None);
        };
        let head = listed
            .iter()
            .find(|l| canon(&l.path) == path)
            .and_then(|l| l.head.clone());
        if !marked {
            wavecrew_core::fsutil::write_atomic(resetting, b"{}")?;
        }
        let pointed = self
            .git_in_worktree(&path)
            .and_then(|git| Ok(git.args(["symbolic-ref", "HEAD", reference]).run()?));
        if pointed.is_err() {
            // Whatever state it is in, it goes; the caller makes a fresh one.
            remove_any(resetting)?;
            self.remove_path(&path, listed)?;
            return Ok(None);
        }
        Ok(Some((
            path.clone(),
            Claim {
                locks: Some(lockfiles(&path)),
                head,
            },
        )))
    }

    /// Reset a claimed worktree at `path` to `branch` (see the module's
    /// notes), without the worktree lock: only this attempt's folder and
    /// index change. Returns what it says about the build state it
    /// brings, and whether an earlier setup holds for it (no dependency
    /// file changed with the switch); an error leaves it for the caller to
    /// remove.
    pub(crate) fn reset_pooled(
        &self,
        path: &Path,
        branch: &str,
        base: &str,
        claim: &Claim,
    ) -> Result<(Vec<String>, bool)> {
        // No git runs in it unless what leads git to its folder is as git
        // wrote it; otherwise the caller removes it and makes a fresh one.
        trusted_git_dir(self.repo().common_dir(), path)?;
        // Given back at this very base, and nothing changed or untracked
        // since as git status says (the session's linked folder aside): it
        // is what the reset makes already (its index and files are its
        // HEAD's), and one walk of the tree stands for the two.
        let at_base = claim.head.as_deref() == Some(base)
            && self
                .pinned_work_tree(path)
                .and_then(|pinned| Ok(TreeStatus::read_pinned(&pinned)?))
                .is_ok_and(|status| {
                    status.head.as_deref() == Some(base) && status.paths().all(|p| self.excluded(p))
                });
        if !at_base {
            self.git_in_worktree(path)?
                .args(["checkout", "--force", "--quiet", branch, "--"])
                .run()?;
            self.git_in_worktree(path)?.args(["clean", "-fdq"]).run()?;
        }
        let mut said = vec![
            "warm: an earlier task's worktree, reset to this task's base by git \
                             (tracked files exact, untracked files removed, ignored build \
                             output kept)"
                .to_owned(),
        ];
        let set_up_at = (claim.locks.is_some())
            .then(|| {
                fs::read_to_string(
                    trusted_git_dir(self.repo().common_dir(), path)
                        .ok()?
                        .join(SET_UP_AT),
                )
                .ok()
            })
            .flatten()
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_hexdigit()));
        let set_up_before = match set_up_at {
            Some(at) => {
                let changed = crate::git::git(path)
                    .args([
                        "diff",
                        "--name-only",
                        "--no-renames",
                        "-z",
                        &at,
                        "HEAD",
                        "--",
                    ])
                    .run();
                // A commit git cannot compare with: set up again.
                changed.is_ok_and(|changed| {
                    !crate::git::split_nul(&changed)
                        .iter()
                        .any(|p| is_dependency_file(p))
                })
            }
            None => false,
        };
        let locks_after = lockfiles(path);
        for (folder, keys) in KEYED {
            let stale = keys.iter().find(|k| {
                claim
                    .locks
                    .as_ref()
                    .is_none_or(|locks| locks.get(**k) != locks_after.get(**k))
            });
            if let Some(lock) = stale
                && fs::symlink_metadata(path.join(folder)).is_ok()
            {
                remove_any(&path.join(folder))?;
                said.push(if claim.locks.is_some() {
                    format!(
                        "{folder}: removed from the warm worktree ({lock} changed since it was \
                         installed)"
                    )
                } else {
                    format!(
                        "{folder}: removed from the warm worktree (its reset was cut short: what \
                         it was installed with is not known)"
                    )
                });
            }
        }
        Ok((said, set_up_before))
    }

    /// Record that `[isolation] setup` ran in `wt` at its base: a later
    /// task that takes it over warm runs setup again only when a
    /// dependency file differs between that commit and its own base.
    pub fn record_set_up(&self, wt: &Worktree) -> Result<()> {
        let file = trusted_git_dir(self.repo().common_dir(), &wt.path)?.join(SET_UP_AT);
        wavecrew_core::fsutil::write_atomic(&file, wt.base.as_bytes())?;
        Ok(())
    }

    /// Where `wt`'s git is, as [`WorkTreeGit::locate`] would say it, told
    /// from what this session knows (the worktree's `.git` file, the
    /// repository's folder, the branch it was opened on) without a git
    /// process: for the first attempt in a worktree just opened, whose
    /// HEAD is its branch (or detached, for a read-only one).
    pub fn work_tree_git(&self, wt: &Worktree) -> Result<WorkTreeGit> {
        let real = |path: &Path| {
            fs::canonicalize(path).map_err(|e| IsolationError::io("resolving", path, e))
        };
        Ok(WorkTreeGit {
            top: real(&wt.path)?,
            git_dir: real(&trusted_git_dir(self.repo().common_dir(), &wt.path)?)?,
            common_dir: real(self.repo().common_dir())?,
            head: Some(if wt.is_detached() {
                "HEAD".to_owned()
            } else {
                format!("refs/heads/{}", wt.branch)
            }),
        })
    }

    /// The work tree at `dir` (a worktree of this session) with the git
    /// folders git wrote for it, for git pinned to them
    /// ([`wavecrew_sys::git::git_pinned`]): what reads a worktree while its
    /// agent may still be rewriting its `.git` (the cockpit's live diff)
    /// never follows a redirect. An error names what was rewritten.
    pub fn pinned_work_tree(&self, dir: &Path) -> Result<WorkTreeGit> {
        Ok(WorkTreeGit {
            top: dir.to_owned(),
            git_dir: trusted_git_dir(self.repo().common_dir(), dir)?,
            common_dir: self.repo().common_dir().to_owned(),
            head: None,
        })
    }

    /// git in the worktree at `dir`, pinned to the git folders git wrote
    /// for it ([`Integration::pinned_work_tree`]): every command wavecrew
    /// runs in a worktree an agent or a check has worked in goes this way,
    /// so none follows a `.git`, `gitdir` or `commondir` they rewrote.
    pub(crate) fn git_in_worktree(&self, dir: &Path) -> Result<wavecrew_sys::git::Git> {
        Ok(wavecrew_sys::git::git_pinned(&self.pinned_work_tree(dir)?))
    }

    /// Whether `path` is strictly inside [`Integration::worktrees_dir`].
    pub(crate) fn owns_path(&self, path: &Path) -> bool {
        let dir = canon(&self.worktrees_dir());
        let path = canon(path);
        path != dir && path.starts_with(&dir)
    }

    /// Remove the empty folders above a worktree that left, up to the
    /// session's folder, then that and the `<project>.wavecrew` folder when
    /// they are empty.
    pub(crate) fn remove_empty_parents(&self, path: &Path) {
        let mut parent = path.parent();
        while let Some(p) = parent {
            if !self.owns_path(p) || fs::remove_dir(p).is_err() {
                break;
            }
            parent = p.parent();
        }
        self.remove_empty_worktrees_dir();
    }
}

/// The git folder of the worktree at `path` (its own, not the common
/// one): what its `.git` file names (`gitdir: <folder>`, as `git worktree
/// add` writes it), asked of git when the file says otherwise.
/// The lockfiles of the keyed folders at the top of `dir`, by name.
fn lockfiles(dir: &Path) -> std::collections::BTreeMap<&'static str, Vec<u8>> {
    KEYED
        .iter()
        .flat_map(|(_, keys)| keys.iter())
        .filter_map(|k| fs::read(dir.join(k)).ok().map(|c| (*k, c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::is_dependency_file;

    #[test]
    fn dependency_files_are_known_at_any_depth() {
        for path in [
            "package-lock.json",
            "web/package.json",
            "requirements.txt",
            "py/requirements-dev.txt",
            "uv.lock",
            "crates/x/Cargo.toml",
            "go.sum",
        ] {
            assert!(is_dependency_file(path), "{path}");
        }
        for path in ["src/lib.rs", "README.md", "requirements.md", "lockfile.txt"] {
            assert!(!is_dependency_file(path), "{path}");
        }
    }
}
