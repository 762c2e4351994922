//! The warm pool: a landed attempt's worktree is kept, detached, in
//! `<worktrees_dir>/.pool/<n>/` instead of being removed, and the next new
//! attempt takes it over instead of checking out a fresh one. It holds at
//! most as many worktrees as tasks ran at once (one per slot).
//!
//! Taking one over moves it to the attempt's path (`git worktree move`,
//! under the worktree lock), then, outside the lock, checks out the
//! attempt's branch with `--force` (git rewrites only the
//! files that differ, so unchanged files keep their times and a build
//! stays incremental), and removes untracked files with `git clean -fd`
//! (not `-x`: what git ignores, the build output, stays). Tracked files are
//! then exactly the task's base. A dependency folder of a known kind
//! (`node_modules`) whose lockfile changed with the switch is removed, so
//! a task never runs on a tree installed for other dependencies (Cargo's
//! `target/` keys its own cache by what it builds and stays).
//!
//! Everything happens under the worktree lock; a pooled worktree is an
//! ordinary detached worktree of ours, so a kill at any point leaves one
//! that [`Integration::prune_stale`] keeps or sweeps like any other.

use std::fs;
use std::path::Path;

use crate::error::Result;
use crate::integration::Integration;
use crate::lock::lock;
use crate::worktree::{WORKTREE_LOCK, Worktree, canon, list_worktrees, remove_any};

/// The folder of pooled worktrees inside [`Integration::worktrees_dir`].
pub const POOL_DIR: &str = ".pool";

/// The most worktrees the pool keeps; more are removed when they come
/// back.
const POOL_MAX: usize = 16;

/// A pooled worktree claimed for an attempt: the lockfiles it was
/// installed with.
pub(crate) struct Claim {
    locks: std::collections::BTreeMap<&'static str, Vec<u8>>,
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
    /// is removed when the pool is full. Refuses a folder outside
    /// [`Integration::worktrees_dir`], like [`Integration::remove_worktree`].
    pub fn release_worktree(&self, wt: &Worktree) -> Result<()> {
        if wt.is_detached() {
            return self.remove_worktree(wt);
        }
        // Detached first (its own HEAD only), then moved under the lock.
        let detached = self.owns_path(&wt.path)
            && crate::git::git(&wt.path)
                .args(["switch", "--detach", "--quiet"])
                .run()
                .is_ok();
        let pooled = detached && {
            let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
            let pool = self.worktrees_dir().join(POOL_DIR);
            let free = (1..=POOL_MAX)
                .map(|n| pool.join(n.to_string()))
                .find(|p| fs::symlink_metadata(p).is_err());
            let pooled = match free {
                Some(slot) if self.owns_path(&wt.path) => {
                    fs::create_dir_all(&pool)
                        .map_err(|e| crate::error::IsolationError::io("creating", &pool, e))?;
                    self.repo
                        .git()
                        .args(["worktree", "move"])
                        .arg(&wt.path)
                        .arg(&slot)
                        .run()
                        .is_ok()
                }
                _ => false,
            };
            if pooled {
                self.remove_empty_parents(&wt.path);
            }
            pooled
        };
        if !pooled {
            return self.remove_worktree(wt);
        }
        Ok(())
    }

    /// At the end of a run: remove the pooled worktrees (a cache; a later
    /// run starts them again), then the session's worktree folder and the
    /// `<project>.wavecrew` folder when they are empty. Returns how many
    /// went.
    pub fn drain_pool(&self) -> Result<usize> {
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        let pool = self.worktrees_dir().join(POOL_DIR);
        if fs::symlink_metadata(&pool).is_err() {
            return Ok(0);
        }
        let dir = canon(&pool);
        let listed = list_worktrees(&self.repo)?;
        let mut count = 0;
        for l in &listed {
            if canon(&l.path).parent() == Some(dir.as_path()) {
                self.remove_path(&l.path, &listed)?;
                count += 1;
            }
        }
        remove_any(&pool)?;
        self.remove_empty_worktrees_dir();
        Ok(count)
    }

    /// Claim a pooled worktree for the new attempt at `path`: moved there
    /// (`git worktree move`), still on its old detached commit; `None` when
    /// the pool has none (or the one it had could not be moved: it is
    /// removed). Call under the worktree lock; [`Self::reset_pooled`]
    /// finishes the job outside it.
    pub(crate) fn claim_pooled(&self, path: &Path) -> Result<Option<Claim>> {
        let pool = canon(&self.worktrees_dir().join(POOL_DIR));
        if !pool.is_dir() {
            return Ok(None);
        }
        let listed = list_worktrees(&self.repo)?;
        let Some(from) = listed
            .iter()
            .filter(|l| !l.prunable && l.branch.is_none())
            .map(|l| canon(&l.path))
            .filter(|p| p.parent() == Some(pool.as_path()))
            .min()
        else {
            return Ok(None);
        };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| crate::error::IsolationError::io("creating", parent, e))?;
        }
        let locks = lockfiles(&from);
        let moved = self
            .repo
            .git()
            .args(["worktree", "move"])
            .arg(&from)
            .arg(path)
            .run()
            .is_ok();
        if !moved {
            let listed = list_worktrees(&self.repo)?;
            for p in [from.as_path(), path] {
                self.remove_path(p, &listed)?;
            }
            return Ok(None);
        }
        Ok(Some(Claim { locks }))
    }

    /// Reset a claimed worktree at `path` to `branch` (see the module's
    /// notes), without the worktree lock: only this attempt's folder and
    /// index change. Returns what it says about the build state it
    /// brings; an error leaves it for the caller to remove.
    pub(crate) fn reset_pooled(path: &Path, branch: &str, claim: &Claim) -> Result<Vec<String>> {
        crate::git::git(path)
            .args(["checkout", "--force", "--quiet", branch, "--"])
            .run()?;
        crate::git::git(path).args(["clean", "-fdq"]).run()?;
        let mut said = vec![
            "warm: an earlier task's worktree, reset to this task's base by git \
                             (tracked files exact, untracked files removed, ignored build \
                             output kept)"
                .to_owned(),
        ];
        let locks_after = lockfiles(path);
        for (folder, keys) in KEYED {
            let stale = keys
                .iter()
                .find(|k| claim.locks.get(**k) != locks_after.get(**k));
            if let Some(lock) = stale
                && fs::symlink_metadata(path.join(folder)).is_ok()
            {
                remove_any(&path.join(folder))?;
                said.push(format!(
                    "{folder}: removed from the warm worktree ({lock} changed since it was \
                     installed)"
                ));
            }
        }
        Ok(said)
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

/// The lockfiles of the keyed folders at the top of `dir`, by name.
fn lockfiles(dir: &Path) -> std::collections::BTreeMap<&'static str, Vec<u8>> {
    KEYED
        .iter()
        .flat_map(|(_, keys)| keys.iter())
        .filter_map(|k| fs::read(dir.join(k)).ok().map(|c| (*k, c)))
        .collect()
}
