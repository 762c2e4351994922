//! The worktrees: one per task attempt on its own branch, detached ones for
//! read-only roles, their removal, and the sweep of leftovers.
//!
//! They all live in [`Integration::worktrees_dir`], a folder wavecrew owns
//! beside the project (`<project>.wavecrew/<session-id>/`; for a shadow
//! repository, inside its git dir in the session's state folder):
//! `slots/<n>/` for attempts (see [`crate::pool`]: a worktree is found
//! again by its branch, never moves, and serves task after task) and
//! `.detached/<name>/` for read-only worktrees. Nothing outside that folder
//! is ever removed. Creation and removal hold `state_dir/worktrees.lock`,
//! and git hooks are off while a worktree is checked out (a project's
//! `post-checkout` hook is not run in wavecrew's worktrees).
//!
//! Each attempt's base (the integration tip it started from) is recorded in
//! `state_dir/worktrees/<task>/<attempt>.json` before its branch is made,
//! so a resumed session finds the same base again.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wavecrew_core::fsutil;

use crate::error::{IsolationError, Result};
use crate::git::{self, git};
use crate::ids::{check_id, check_rel_path};
use crate::integration::Integration;
use crate::layout::{
    Listed, SLOTS_DIR, WORKTREE_LOCK, Worktree, canon, free_slot, list_worktrees, remove_any,
    task_branch_name, trusted_git_dir,
};
use crate::lock::lock;
use crate::pool::Claim;
use crate::repo::Repo;

/// The folder of read-only worktrees inside [`Integration::worktrees_dir`].
pub const DETACHED_DIR: &str = ".detached";

/// The extension of the marker beside an attempt's record while a pooled
/// worktree taken over for it is being reset.
const RESETTING: &str = "resetting";

/// What `state_dir/worktrees/<task>/<attempt>.json` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    version: u32,
    task: String,
    attempt: u32,
    branch: String,
    base: String,
}

/// Remove worktrees in wavecrew's own folder that a killed `git worktree
/// add` left unborn: git writes the entry's `HEAD` as the null id first and
/// points it at the branch last, so an entry whose `HEAD` is still all
/// zeros never got its checkout (and `git fsck --strict` flags it). Their
/// folders go, then `git worktree prune` drops the entries. Only call this
/// under the worktree lock: an add of ours in progress looks the same.
/// Returns whether anything was removed.
fn remove_unborn(repo: &Repo, listed: &[Listed]) -> Result<bool> {
    let roots = crate::layout::worktree_roots(repo);
    let mut removed = false;
    for l in listed {
        let unborn = l
            .head
            .as_deref()
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b == b'0'));
        let path = canon(&l.path);
        if unborn && roots.iter().any(|r| path.starts_with(r) && &path != r) {
            // A killed add still holds its `initializing` lock, which
            // `worktree prune` respects: unlock first (none: git says so).
            let _ = repo.git().args(["worktree", "unlock"]).arg(&l.path).run();
            remove_any(&path)?;
            removed = true;
        }
    }
    if removed {
        repo.git().args(["worktree", "prune"]).run()?;
    }
    Ok(removed)
}

/// [`list_worktrees`], after [`remove_unborn`] (so under the worktree lock).
fn list_worktrees_repaired(repo: &Repo) -> Result<Vec<Listed>> {
    let listed = list_worktrees(repo)?;
    if remove_unborn(repo, &listed)? {
        return list_worktrees(repo);
    }
    Ok(listed)
}

impl Integration {
    /// The short name of the branch of attempt `attempt` of `task`.
    pub fn task_branch(&self, task: &str, attempt: u32) -> String {
        task_branch_name(self.session_id(), task, attempt)
    }

    /// The folder of the worktree of attempt `attempt` of `task`, when it
    /// has one (found by its branch, wherever its slot is).
    pub fn attempt_worktree(&self, task: &str, attempt: u32) -> Result<Option<PathBuf>> {
        let reference = format!("refs/heads/{}", self.task_branch(task, attempt));
        Ok(list_worktrees(&self.repo)?
            .into_iter()
            .find(|l| !l.prunable && l.branch.as_deref() == Some(reference.as_str()))
            .map(|l| l.path))
    }

    /// A worktree for attempt `attempt` of `task`, on a new branch
    /// `wavecrew-tasks/<session-id>/<task>/<attempt>` from the integration
    /// tip; found again (same base, same branch) if it already exists.
    ///
    /// `copy` lists project-relative paths of git-ignored files a build
    /// needs (e.g. `.env`): each is copied from the user's tree when it is
    /// present there, missing from the worktree, and ignored by git in the
    /// worktree (so it can never be committed); otherwise it is skipped. A
    /// shadow repository ignores the paths it was made with
    /// ([`Repo::shadow`]'s `ignore`, the same list) in its `info/exclude`.
    pub fn open_worktree(&self, task: &str, attempt: u32, copy: &[String]) -> Result<Worktree> {
        self.open_worktree_at(task, attempt, copy, None)
    }

    /// [`Integration::open_worktree`], a new attempt starting from `tip`
    /// when given: the integration tip the caller read just now (see
    /// [`Integration::start_at_tip`]), never one read before work it
    /// depends on landed. `None`: the tip is read here.
    pub fn open_worktree_at(
        &self,
        task: &str,
        attempt: u32,
        copy: &[String],
        tip: Option<String>,
    ) -> Result<Worktree> {
        check_id("task id", task)?;
        let copy = copy
            .iter()
            .map(|c| check_rel_path("copy", c))
            .collect::<Result<Vec<_>>>()?;
        let branch = self.task_branch(task, attempt);
        let reference = format!("refs/heads/{branch}");
        let record_file = self
            .state_dir
            .join("worktrees")
            .join(task)
            .join(format!("{attempt}.json"));
        let resetting = record_file.with_extension(RESETTING);

        // The attempt's own record and branch, under the attempt's own
        // lock: the worktree lock, which every attempt of the session
        // waits for, is held only to pick a slot.
        let (base, fresh) = {
            let _attempt = lock(&record_file.with_extension("lock"))?;
            if record_file.exists() {
                let record: Record = fsutil::read_json(&record_file)?;
                if record.branch != branch {
                    return Err(IsolationError::Inconsistent {
                        path: record_file,
                        message: format!("branch `{}`; expected `{branch}`", record.branch),
                    });
                }
                (record.base, false)
            } else {
                let base = match tip {
                    Some(tip) => tip,
                    None => self.tip()?,
                };
                let record = Record {
                    version: 1,
                    task: task.to_owned(),
                    attempt,
                    branch: branch.clone(),
                    base: base.clone(),
                };
                // A new attempt takes a pooled worktree if there is one:
                // the marker is down before the claim (see `claim_pooled`).
                // A kill before the record leaves a new attempt again.
                fsutil::write_atomic(&resetting, b"{}")?;
                fsutil::write_json_atomic(&record_file, &record)?;
                (base, true)
            }
        };
        // Made if it is not there (one compare-and-swap from nothing); a
        // branch that is there already is a resumed attempt's, kept. One
        // there before this attempt's record is another session's (made
        // anew under this id): its work started from another base, and is
        // never taken up.
        let made = self
            .repo
            .update_ref(&reference, &base, "", "wavecrew: task branch")?;
        if fresh && !made {
            let at = self.repo.resolve(&reference)?;
            if at.as_deref() != Some(base.as_str()) {
                remove_any(&record_file)?;
                remove_any(&resetting)?;
                return Err(IsolationError::Inconsistent {
                    path: record_file,
                    message: format!(
                        "branch `{branch}` was there before this attempt, at {}; expected it \
                         made now from {base} (a branch of an earlier session under this id: \
                         remove it with `git branch -D {branch}`)",
                        at.as_deref().unwrap_or("nothing")
                    ),
                });
            }
        }

        let guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        // The attempt's worktree found again by its branch (unique to the
        // attempt), wherever it is: a resumed attempt keeps its work.
        let listed = list_worktrees_repaired(&self.repo)?;
        let on_branch = |l: &&Listed| l.branch.as_deref() == Some(reference.as_str());
        if listed.iter().filter(on_branch).any(|l| l.prunable) {
            self.repo.git().args(["worktree", "prune"]).run()?;
        }
        let (mut claimed, mut new_slot) = (None, false);
        let path = match listed.iter().filter(on_branch).find(|l| !l.prunable) {
            Some(l) => {
                if !self.owns_path(&l.path) {
                    return Err(IsolationError::BadWorktree {
                        path: l.path.clone(),
                        message: format!(
                            "it has `{reference}` checked out; expected it under `{}`",
                            self.worktrees_dir().display()
                        ),
                    });
                }
                // A resumed attempt's worktree, which its agent (killed
                // before the guard put things back) may have redirected:
                // refused, named, before any git runs there.
                trusted_git_dir(self.repo.common_dir(), &l.path)?;
                if fresh {
                    // A record lost while its branch and worktree stayed:
                    // the marker is this call's own, and nothing is reset.
                    remove_any(&resetting)?;
                } else if resetting.exists() {
                    // Killed while it was being reset: reset again (its
                    // dependency folders counted as stale).
                    claimed = Some(Claim::unknown());
                }
                l.path.clone()
            }
            None => {
                if let Some((path, claim)) =
                    self.claim_pooled(&listed, &reference, &resetting, fresh)?
                {
                    claimed = Some(claim);
                    path
                } else {
                    // A new slot: registered under the lock without its
                    // files, which are checked out outside it (a slow
                    // checkout of a large tree holds no other attempt up).
                    // The marker makes a kill in between check out again.
                    if !fresh {
                        fsutil::write_atomic(&resetting, b"{}")?;
                    }
                    let path = free_slot(&self.worktrees_dir().join(SLOTS_DIR), &listed);
                    self.add_worktree(&path, &["--no-checkout", &branch])?;
                    new_slot = true;
                    path
                }
            }
        };
        drop(guard);
        let fresh = new_slot || claimed.is_some();
        let mut build_state = Vec::new();
        let mut set_up_before = false;
        if new_slot {
            let checked_out = self.git_in_worktree(&path).and_then(|git| {
                Ok(git
                    .args(["checkout", "--force", "--quiet", &branch, "--"])
                    .run()?)
            });
            if checked_out.is_err() {
                // Whatever state it is in, it goes; a fresh one is made.
                let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
                let listed = list_worktrees(&self.repo)?;
                self.remove_path(&path, &listed)?;
                self.add_worktree(&path, &[&branch])?;
            }
            remove_any(&resetting)?;
        } else if let Some(claim) = claimed {
            if let Ok((said, kept)) = self.reset_pooled(&path, &branch, &base, &claim) {
                build_state = said;
                set_up_before = kept;
            } else {
                // Whatever state it is in, it goes; a fresh one is made.
                let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
                let listed = list_worktrees(&self.repo)?;
                self.remove_path(&path, &listed)?;
                self.add_worktree(&path, &[&branch])?;
            }
            remove_any(&resetting)?;
        }
        for rel in copy.iter().chain(&self.worktree_includes()?) {
            self.copy_in(&path, rel)?;
        }
        self.link_session(&path)?;
        Ok(Worktree {
            build_state,
            set_up_before,
            fresh,
            path,
            branch,
            base,
            task: task.to_owned(),
        })
    }

    /// A detached worktree of the integration tip for read-only roles,
    /// `.detached/<name>/`; one that exists is reused when it is at the tip
    /// and made again otherwise.
    pub fn detached_worktree(&self, name: &str) -> Result<Worktree> {
        let tip = self.tip()?;
        self.detached_worktree_at(name, &tip)
    }

    /// A detached worktree of `commit` (a full object name), `.detached/<name>/`,
    /// reused when it is there at that commit and made again otherwise:
    /// e.g. a task's base, to run its tests as they were.
    pub fn detached_worktree_at(&self, name: &str, commit: &str) -> Result<Worktree> {
        check_id("worktree name", name)?;
        if commit.len() < 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(IsolationError::BadWorktree {
                path: self.worktrees_dir().join(DETACHED_DIR).join(name),
                message: format!("`{commit}` is not a full commit name; expected 40 hex digits"),
            });
        }
        let path = self.worktrees_dir().join(DETACHED_DIR).join(name);
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        let tip = commit.to_owned();
        let target = canon(&path);
        let listed = list_worktrees_repaired(&self.repo)?;
        if let Some(l) = listed.iter().find(|l| canon(&l.path) == target) {
            if !l.prunable && l.branch.is_none() && l.head.as_deref() == Some(tip.as_str()) {
                return Ok(Worktree {
                    build_state: Vec::new(),
                    set_up_before: false,
                    fresh: false,
                    path,
                    branch: String::new(),
                    base: tip,
                    task: name.to_owned(),
                });
            }
            self.remove_path(&path, &listed)?;
        }
        self.add_worktree(&path, &["--detach", &tip])?;
        self.link_session(&path)?;
        Ok(Worktree {
            build_state: Vec::new(),
            set_up_before: false,
            fresh: false,
            path,
            branch: String::new(),
            base: tip,
            task: name.to_owned(),
        })
    }

    /// `git worktree add <path> <what…>` into a clean folder, hooks off.
    pub(crate) fn add_worktree(&self, path: &Path, what: &[&str]) -> Result<()> {
        if fs::symlink_metadata(path).is_ok() {
            // A leftover folder git does not list: ours, so it goes.
            remove_any(path)?;
        }
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| IsolationError::io("creating", parent, e))?;
        }
        self.repo
            .git()
            .args([
                "-c",
                "core.hooksPath=/dev/null",
                "worktree",
                "add",
                "--quiet",
            ])
            .args(what.iter().take_while(|w| w.starts_with("--")))
            .arg(path)
            .args(what.iter().skip_while(|w| w.starts_with("--")))
            .run()?;
        Ok(())
    }

    /// Make the session folder reachable from the worktree at `wt` by the
    /// same project-relative path as from the main checkout
    /// (`.workflow/.team/<session-id>`), so an agent that writes its
    /// deliverables there (`<session>/artifacts/…`, as ccw's roles do)
    /// writes into the one shared session folder, never into its worktree.
    /// A symlink to the folder; when the folder holds the worktrees (a
    /// shadow repository), a folder of symlinks to its entries but the
    /// repository. What the worktree tracked at that path is replaced. The
    /// path is in the session's `exclude`, so nothing under it is ever
    /// committed or counted as changed.
    pub(crate) fn link_session(&self, wt: &Path) -> Result<()> {
        let session = canon(&self.state_dir);
        let Ok(rel) = session.strip_prefix(canon(self.repo.work_tree())) else {
            return Ok(());
        };
        if rel.as_os_str().is_empty() {
            return Ok(());
        }
        let dst = wt.join(rel);
        let parent = dst.parent().unwrap_or(wt);
        fs::create_dir_all(parent).map_err(|e| IsolationError::io("creating", parent, e))?;
        // A committed symlink on the way must not lead the link elsewhere.
        if !canon(parent).starts_with(canon(wt)) {
            return Err(IsolationError::BadWorktree {
                path: wt.to_owned(),
                message: format!(
                    "`{}` would be linked outside it (through a symlink)",
                    rel.display()
                ),
            });
        }
        match fs::symlink_metadata(&dst) {
            Ok(m) if m.file_type().is_symlink() => return Ok(()),
            Ok(_) => remove_any(&dst)?,
            Err(_) => {}
        }
        let link = |target: &Path, at: &Path| {
            std::os::unix::fs::symlink(target, at).map_err(|e| IsolationError::io("linking", at, e))
        };
        if !canon(&self.worktrees_dir()).starts_with(&session) {
            return link(&session, &dst);
        }
        fs::create_dir_all(&dst).map_err(|e| IsolationError::io("creating", &dst, e))?;
        let repo_dir = canon(self.repo.common_dir());
        let entries =
            fs::read_dir(&session).map_err(|e| IsolationError::io("reading", &session, e))?;
        for entry in entries.flatten() {
            let target = entry.path();
            if canon(&target) != repo_dir && !repo_dir.starts_with(canon(&target)) {
                link(&target, &dst.join(entry.file_name()))?;
            }
        }
        Ok(())
    }

    /// Copy `rel` from the user's tree into the worktree at `wt` (see
    /// [`Integration::open_worktree`] for when it is skipped).
    /// Seed the worktree `wt` with the project's build state: each folder
    /// of `names` (`target`, `node_modules`) that git ignores in the
    /// project is copied in when the worktree has none, so the task's first
    /// build is incremental. A folder of a known kind is seeded only when
    /// its lockfiles (`Cargo.lock`; `package-lock.json`, `pnpm-lock.yaml`,
    /// `yarn.lock`) are in both and the same, so a task never starts on a
    /// tree built for other dependencies. Links to absolute paths are left
    /// out (a task must not write into the project through one), and a
    /// virtualenv is never seeded: its scripts name the project's own
    /// interpreter by absolute path. A folder larger than `max_bytes` is
    /// not copied. Files are copied with `copy_file_range`, which shares
    /// the blocks (copy-on-write) on filesystems that can (Btrfs, XFS);
    /// never a hard link or a link into the project, so a task cannot
    /// write into the user's folder. Returns what was seeded, and why not
    /// where it was not, one line each.
    pub fn seed_build_state(
        &self,
        wt: &Worktree,
        names: &[String],
        max_bytes: u64,
    ) -> Result<Vec<String>> {
        let top = self.repo.work_tree();
        let mut said = Vec::new();
        for name in names {
            let rel = check_rel_path("seed", name)?;
            let src = top.join(&rel);
            let dst = wt.path.join(&rel);
            let is_dir = fs::symlink_metadata(&src).is_ok_and(|m| m.is_dir());
            if !is_dir || fs::symlink_metadata(&dst).is_ok() {
                continue;
            }
            if src.join("pyvenv.cfg").exists() {
                said.push(format!(
                    "{rel}: not seeded (a virtualenv names the project's interpreter by absolute \
                     path; make it in the worktree with [isolation] setup)"
                ));
                continue;
            }
            let ignored = git(top)
                .args(["check-ignore", "--quiet", "--no-index", "--"])
                .arg(format!("{rel}/"))
                .test()?;
            if !ignored {
                said.push(format!("{rel}: not seeded (git does not ignore it)"));
                continue;
            }
            let folder = Path::new(&rel).parent().unwrap_or(Path::new(""));
            let key = match Path::new(&rel).file_name().and_then(|n| n.to_str()) {
                Some("target") => &["Cargo.lock"][..],
                Some("node_modules") => &[
                    "package-lock.json",
                    "npm-shrinkwrap.json",
                    "pnpm-lock.yaml",
                    "yarn.lock",
                ][..],
                _ => &[][..],
            };
            let mut matched = None;
            let mut differs = None;
            for lock in key {
                let ours = fs::read(top.join(folder).join(lock)).ok();
                let theirs = fs::read(wt.path.join(folder).join(lock)).ok();
                match (ours, theirs) {
                    (None, None) => {}
                    (a, b) if a == b => matched = Some(*lock),
                    _ => differs = Some(*lock),
                }
            }
            if let Some(lock) = differs {
                said.push(format!(
                    "{rel}: not seeded ({lock} differs from the project's: built for other dependencies)"
                ));
                continue;
            }
            if !key.is_empty() && matched.is_none() {
                said.push(format!(
                    "{rel}: not seeded (no {} to key it by)",
                    key.join(" or ")
                ));
                continue;
            }
            let size = dir_size(&src, max_bytes);
            if size > max_bytes {
                said.push(format!(
                    "{rel}: not seeded (more than {} MiB; raise [isolation] seed_max_mb to copy it)",
                    max_bytes >> 20
                ));
                continue;
            }
            copy_dir(&src, &dst)?;
            said.push(match matched {
                Some(lock) => format!("{rel}: seeded from the project ({lock} matches)"),
                None => format!("{rel}: seeded from the project"),
            });
        }
        Ok(said)
    }

    /// The files the user lists in the project's `.worktreeinclude`
    /// (gitignore syntax; the convention Claude Code, Codex and Conductor
    /// share): the untracked files and folders its patterns match, for
    /// [`Self::copy_in`], which copies only what git really ignores. None
    /// without the file, or for a shadow repository.
    pub(crate) fn worktree_includes(&self) -> Result<Vec<String>> {
        let list = self.repo.work_tree().join(".worktreeinclude");
        if self.repo.is_shadow() || !list.is_file() {
            return Ok(Vec::new());
        }
        let mut exclude_from = std::ffi::OsString::from("--exclude-from=");
        exclude_from.push(&list);
        let out = git(self.repo.work_tree())
            .args(["ls-files", "-z", "--others", "--ignored", "--directory"])
            .arg(exclude_from)
            .run()?;
        Ok(git::split_nul(&out)
            .into_iter()
            .map(|rel| rel.trim_end_matches('/').to_owned())
            .filter(|rel| check_rel_path("copy", rel).is_ok())
            .collect())
    }

    pub(crate) fn copy_in(&self, wt: &Path, rel: &str) -> Result<()> {
        let src = self.repo.work_tree().join(rel);
        // Never through a link: a link in the project may point anywhere.
        let Ok(meta) = fs::symlink_metadata(&src) else {
            return Ok(());
        };
        if meta.file_type().is_symlink() {
            return Ok(());
        }
        let dst = wt.join(rel);
        if fs::symlink_metadata(&dst).is_ok() {
            return Ok(());
        }
        // A folder is asked about as one (`local/` patterns match folders
        // only, and the worktree does not have it yet).
        let asked = if meta.is_dir() {
            format!("{rel}/")
        } else {
            rel.to_owned()
        };
        let ignored = git(wt)
            .args(["check-ignore", "--quiet", "--no-index", "--", &asked])
            .test()?;
        if !ignored {
            return Ok(());
        }
        let parent = dst.parent().unwrap_or(wt);
        fs::create_dir_all(parent).map_err(|e| IsolationError::io("creating", parent, e))?;
        // A committed symlink on the way must not lead the copy elsewhere.
        if !canon(parent).starts_with(canon(wt)) {
            return Err(IsolationError::BadWorktree {
                path: wt.to_owned(),
                message: format!("`{rel}` would be copied outside it (through a symlink)"),
            });
        }
        if meta.is_dir() {
            copy_dir(&src, &dst)
        } else {
            copy_file(&src, &dst)
        }
    }

    /// Remove a worktree (its branch stays as a ref). Refuses a folder
    /// outside [`Integration::worktrees_dir`].
    pub fn remove_worktree(&self, wt: &Worktree) -> Result<()> {
        if !self.owns_path(&wt.path) {
            return Err(IsolationError::BadWorktree {
                path: wt.path.clone(),
                message: format!(
                    "it is not under `{}`; expected a worktree of this session",
                    self.worktrees_dir().display()
                ),
            });
        }
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        let listed = list_worktrees(&self.repo)?;
        self.remove_path(&wt.path, &listed)?;
        // Empty task folders go too; then the session's folder and the
        // project's folder of worktrees beside it, once they are empty.
        self.remove_empty_parents(&wt.path);
        Ok(())
    }

    /// Remove the worktree at `path` (inside our folder): through git when
    /// git lists it, then whatever is left of the folder.
    pub(crate) fn remove_path(&self, path: &Path, listed: &[Listed]) -> Result<()> {
        let target = canon(path);
        let known = listed.iter().any(|l| canon(&l.path) == target);
        if known {
            let removed = self
                .repo
                .git()
                .args(["worktree", "remove", "--force", "--force"])
                .arg(path)
                .run();
            if removed.is_err() {
                remove_any(path)?;
                self.repo.git().args(["worktree", "prune"]).run()?;
            }
        }
        if fs::symlink_metadata(path).is_ok() {
            remove_any(path)?;
        }
        Ok(())
    }

    /// At start: `git worktree prune` (forget worktrees whose folders are
    /// gone), then remove everything under [`Integration::worktrees_dir`]
    /// that git does not list as a worktree; nothing outside it.
    pub fn prune_stale(&self) -> Result<()> {
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        self.repo.git().args(["worktree", "prune"]).run()?;
        let dir = self.worktrees_dir();
        if !dir.is_dir() {
            return Ok(());
        }
        let dir = canon(&dir);
        let keep: Vec<PathBuf> = list_worktrees_repaired(&self.repo)?
            .into_iter()
            .filter(|l| !l.prunable)
            .map(|l| canon(&l.path))
            .filter(|p| p.starts_with(&dir))
            .collect();
        sweep(&dir, &keep)
    }

    /// `wavecrew clean`: remove every worktree of the session and the
    /// session's worktree folder; returns how many worktrees git listed
    /// there. Task branches stay.
    pub fn clean(&self) -> Result<usize> {
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        let dir = self.worktrees_dir();
        let listed = list_worktrees(&self.repo)?;
        let mut count = 0;
        if dir.is_dir() {
            let dir_c = canon(&dir);
            for l in &listed {
                if !l.prunable && canon(&l.path).starts_with(&dir_c) {
                    self.remove_path(&l.path, &listed)?;
                    count += 1;
                }
            }
            remove_any(&dir)?;
        }
        self.remove_empty_worktrees_dir();
        self.repo.git().args(["worktree", "prune"]).run()?;
        Ok(count)
    }

    /// Remove the session's worktree folder when it is empty, and the
    /// `<project>.wavecrew` folder beside the project that holds it, when
    /// that is empty too (another session's worktrees keep it).
    pub(crate) fn remove_empty_worktrees_dir(&self) {
        let dir = self.worktrees_dir();
        if fs::symlink_metadata(&dir).is_ok() && fs::remove_dir(&dir).is_err() {
            return;
        }
        if let Some(root) = dir.parent()
            && root.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .ends_with(crate::layout::WORKTREES_SUFFIX)
            })
        {
            let _ = fs::remove_dir(root);
        }
    }
}

/// Remove everything under `dir` that is neither a kept worktree nor on the
/// way to one.
fn sweep(dir: &Path, keep: &[PathBuf]) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| IsolationError::io("reading", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| IsolationError::io("reading", dir, e))?;
        let path = dir.join(entry.file_name());
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && keep.iter().any(|k| k == &path) {
            continue;
        }
        if is_dir && keep.iter().any(|k| k.starts_with(&path)) {
            sweep(&path, keep)?;
            continue;
        }
        remove_any(&path)?;
    }
    Ok(())
}

/// The bytes of the files under `dir` (links not followed), counted until
/// they pass `stop`.
fn dir_size(dir: &Path, stop: u64) -> u64 {
    let mut total = 0u64;
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                todo.push(entry.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
                if total > stop {
                    return total;
                }
            }
        }
    }
    total
}

/// Copy a folder tree; symlinks are copied as symlinks.
fn copy_dir(src: &Path, dst: &Path) -> Result<()> {
    fs::create_dir_all(dst).map_err(|e| IsolationError::io("creating", dst, e))?;
    let entries = fs::read_dir(src).map_err(|e| IsolationError::io("reading", src, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| IsolationError::io("reading", src, e))?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| IsolationError::io("reading", &from, e))?;
        if kind.is_dir() {
            copy_dir(&from, &to)?;
        } else if kind.is_symlink() {
            let target =
                fs::read_link(&from).map_err(|e| IsolationError::io("reading", &from, e))?;
            // A link to an absolute path could let a task write outside its
            // worktree (into the user's checkout): left out.
            if target.is_absolute() {
                continue;
            }
            std::os::unix::fs::symlink(&target, &to)
                .map_err(|e| IsolationError::io("creating", &to, e))?;
        } else {
            copy_file(&from, &to)?;
        }
    }
    Ok(())
}

/// Copy a file with its modification time: build tools (Cargo, tsc's
/// incremental info) compare times, and a copy that is newer than what
/// was built from it would rebuild it.
fn copy_file(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).map_err(|e| IsolationError::io("copying", from, e))?;
    let modified = fs::metadata(from)
        .and_then(|m| m.modified())
        .map_err(|e| IsolationError::io("reading", from, e))?;
    // Setting a time takes ownership, not write permission: a read-only
    // file's time is set through a read-only handle.
    fs::File::open(to)
        .and_then(|f| f.set_modified(modified))
        .map_err(|e| IsolationError::io("copying", to, e))
}
