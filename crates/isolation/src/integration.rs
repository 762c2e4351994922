//! The session's integration branch `wavecrew/<session-id>`: where it
//! starts (the user's HEAD, or a snapshot of a dirty work tree), its state
//! file, what has landed on it (read from commit trailers), and `--apply`,
//! which fast-forwards the user's branch to it when nothing moved (on a
//! shadow repository, writes the work into the folder as files: `shadow.rs`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wavecrew_core::fsutil;

use crate::error::{IsolationError, Result};
use crate::git;
use crate::ids::{check_id, check_rel_path};
use crate::layout::{
    SLOTS_DIR, TASK_BRANCH_PREFIX, canon, free_slot, list_worktrees, pooled, task_branch_name,
};
use crate::lock::lock;
use crate::repo::Repo;

// Named here too, as before it moved down to `layout.rs`.
pub use crate::layout::WORKTREES_SUFFIX;

/// The trailer every commit wavecrew makes for a task carries:
/// `Wavecrew-Task: <session-id>/<task-id>`.
pub const TRAILER: &str = "Wavecrew-Task";
/// The state file, in the session's state folder.
pub const STATE_FILE: &str = "integration.json";
/// The merge queue's lock file, in the session's state folder.
pub(crate) const LAND_LOCK: &str = "land.lock";
/// The prefix of integration branches: `wavecrew/<session-id>`.
pub const BRANCH_PREFIX: &str = "wavecrew/";

/// What `integration.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct State {
    /// Format version, 1.
    pub(crate) version: u32,
    /// The session id.
    pub(crate) session: String,
    /// The integration branch's short name, `wavecrew/<session-id>`.
    pub(crate) branch: String,
    /// The commit the integration branch started from.
    pub(crate) base: String,
    /// The user's HEAD commit when the session started.
    pub(crate) head_at_start: String,
    /// The user's checked-out branch (`refs/heads/main`) then; None when detached.
    pub(crate) branch_at_start: Option<String>,
    /// Whether `base` is a snapshot commit of a dirty work tree.
    pub(crate) snapshot: bool,
    /// Project-relative paths left out of the snapshot and the apply check.
    pub(crate) exclude: Vec<String>,
    /// Whether the session runs on a shadow repository (the project folder
    /// has no git); absent (false) in state files of sessions that do not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) shadow: bool,
    /// Where the session's worktrees live, chosen when it started
    /// ([`worktrees_dir`]); absent in state files of sessions that started
    /// before worktrees moved out of the git folder (they keep
    /// `<common-dir>/wavecrew/worktrees/<session-id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) worktrees: Option<PathBuf>,
}

/// A session's integration branch, with everything needed to land tasks
/// on it. Cheap to clone; `Sync`, so threads may share one.
#[derive(Debug, Clone)]
pub struct Integration {
    pub(crate) repo: Repo,
    pub(crate) state_dir: PathBuf,
    pub(crate) state: State,
}

/// What [`Integration::apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The user's branch that moved (`refs/heads/main`); empty for a
    /// session on a shadow repository (there is no user branch).
    pub branch: String,
    /// Where it was (for a shadow repository: the session's base commit).
    pub from: String,
    /// Where it is now (the integration tip; unchanged when `uncommitted`).
    pub to: String,
    /// The session started from uncommitted changes, so its work was
    /// written to the work tree as uncommitted changes, on top of them.
    pub uncommitted: bool,
    /// For a session on a shadow repository (a project folder without
    /// git): the files written into the folder and deleted from it; None
    /// for the user's own repository.
    pub files: Option<AppliedFiles>,
}

/// The files [`Integration::apply`] wrote into a project folder without git.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedFiles {
    /// Project-relative paths written (added, modified, or a mode changed),
    /// sorted.
    pub written: Vec<String>,
    /// Project-relative paths deleted, sorted.
    pub deleted: Vec<String>,
}

/// Where a new session `session` of `repo` puts its worktrees (see
/// [`Integration::worktrees_dir`]): beside the project folder, in
/// `<parent>/<project>.wavecrew/<session-id>/`. There the project's tools
/// treat a worktree as an ordinary checkout: no path has a `.git`
/// component (Jest ignores every file under one), and the upward look-ups
/// of Cargo workspaces, Node modules, `pyproject.toml` or `.git` never
/// reach the user's folder from it. Where the parent cannot be written,
/// and for a shadow repository, inside the git folder as before.
pub fn worktrees_dir(repo: &Repo, session: &str) -> PathBuf {
    if !repo.is_shadow() {
        let top = canon(repo.work_tree());
        if let (Some(parent), Some(name)) = (top.parent(), top.file_name())
            && writable(parent)
        {
            let mut folder = name.to_os_string();
            folder.push(WORKTREES_SUFFIX);
            return parent.join(folder).join(session);
        }
    }
    legacy_worktrees_dir(repo, session)
}

/// `<common-dir>/wavecrew/worktrees/<session-id>`: where worktrees lived
/// before, and still do for a shadow repository or a read-only parent.
fn legacy_worktrees_dir(repo: &Repo, session: &str) -> PathBuf {
    repo.common_dir()
        .join("wavecrew")
        .join("worktrees")
        .join(session)
}

/// Whether a folder may be created in `dir` (tried, then removed).
fn writable(dir: &Path) -> bool {
    tempfile::Builder::new()
        .prefix(".wavecrew-probe-")
        .tempdir_in(dir)
        .is_ok()
}

/// Where attempt `attempt` of `task` of session `session` works (what
/// `wavecrew prompt` shows): its worktree when it has one, else the slot a
/// new attempt would take now (the first pooled worktree, or the first
/// free slot).
pub fn worktree_path(repo: &Repo, session: &str, task: &str, attempt: u32) -> PathBuf {
    let slots = worktrees_dir(repo, session).join(SLOTS_DIR);
    let branch = format!("refs/heads/{}", task_branch_name(session, task, attempt));
    let listed = list_worktrees(repo).unwrap_or_default();
    listed
        .iter()
        .find(|l| !l.prunable && l.branch.as_deref() == Some(branch.as_str()))
        .map(|l| l.path.clone())
        .or_else(|| pooled(&slots, &listed))
        .unwrap_or_else(|| free_slot(&slots, &listed))
}

impl Integration {
    /// Create, or find again on resume, the session's integration branch
    /// `wavecrew/<session-id>`.
    ///
    /// A new branch starts at the user's HEAD; when the work tree is dirty,
    /// at a snapshot commit of it (tracked changes and untracked files that
    /// are not ignored, HEAD as parent), leaving out the paths in `exclude`
    /// (the session folder, e.g. `.workflow`). The snapshot is built in a
    /// temporary index: the user's index, branch and files are never
    /// touched. `state_dir/integration.json` records the branch, base,
    /// HEAD and branch at start, and whether a snapshot was taken.
    ///
    /// On a shadow repository ([`Repo::shadow`]) the same happens inside
    /// it; the paths the shadow always leaves out (its state folder) are
    /// added to `exclude`, and the state records that the session is a
    /// shadow one.
    ///
    /// On resume (the state file exists) the recorded branch is used, and
    /// `exclude` is the recorded one. A state file whose branch is gone
    /// (a crash between writing it and creating the branch) gets the branch
    /// again at the recorded base. A branch without a state file is refused.
    pub fn start(
        repo: &Repo,
        session_id: &str,
        exclude: &[&str],
        state_dir: &Path,
    ) -> Result<Integration> {
        Self::start_at_tip(repo, session_id, exclude, state_dir).map(|(found, _)| found)
    }

    /// [`Integration::start`], also giving the integration tip as it was
    /// read there (the branch's commit, checked to be there): for a caller
    /// about to open a worktree from it ([`Integration::open_worktree_at`]),
    /// which then need not read it again.
    pub fn start_at_tip(
        repo: &Repo,
        session_id: &str,
        exclude: &[&str],
        state_dir: &Path,
    ) -> Result<(Integration, String)> {
        git::check_version()?;
        check_id("session id", session_id)?;
        let mut exclude = exclude
            .iter()
            .map(|x| check_rel_path("exclude", x))
            .collect::<Result<Vec<_>>>()?;
        for x in repo.shadow_exclude() {
            if !exclude.contains(x) {
                exclude.push(x.clone());
            }
        }
        let resumed = |(found, tip): (Integration, String)| {
            if found.state.session == session_id {
                Ok((found, tip))
            } else {
                Err(IsolationError::Inconsistent {
                    path: found.state_file(),
                    message: format!(
                        "it belongs to session `{}`; expected `{session_id}`",
                        found.state.session
                    ),
                })
            }
        };
        // Started already (every worker after the first): no lock needed
        // to read the state, written atomically once.
        if let Some(found) = Self::resume_at_tip(repo, state_dir)? {
            return resumed(found);
        }
        let _guard = lock(&state_dir.join(LAND_LOCK))?;
        if let Some(found) = Self::resume_at_tip(repo, state_dir)? {
            return resumed(found);
        }
        let branch = format!("{BRANCH_PREFIX}{session_id}");
        let reference = format!("refs/heads/{branch}");
        let state_file = state_dir.join(STATE_FILE);
        if repo.resolve(&reference)?.is_some() {
            return Err(IsolationError::BranchExists {
                branch,
                state: state_file,
            });
        }
        refuse_stale_task_branches(repo, session_id, &state_file)?;
        let head = repo
            .resolve("HEAD")?
            .ok_or_else(|| IsolationError::NoCommit {
                top: repo.work_tree().to_owned(),
            })?;
        let branch_at_start = symbolic_head(repo)?;
        let snapshot = snapshot(repo, &head, &exclude, session_id)?;
        let state = State {
            version: 1,
            session: session_id.to_owned(),
            branch,
            base: snapshot.clone().unwrap_or_else(|| head.clone()),
            head_at_start: head,
            branch_at_start,
            snapshot: snapshot.is_some(),
            exclude,
            shadow: repo.is_shadow(),
            worktrees: Some(worktrees_dir(repo, session_id)),
        };
        // The state first, then the branch: a crash in between is mended by
        // the next start (the branch is made again at the recorded base).
        fsutil::write_json_atomic(&state_file, &state)?;
        let found = Integration {
            repo: repo.clone(),
            state_dir: state_dir.to_owned(),
            state,
        };
        found.create_branch(&format!("wavecrew: start session {session_id}"))?;
        let tip = found.state.base.clone();
        Ok((found, tip))
    }

    /// The integration branch of the session whose folder is `session`,
    /// if it ran isolated: in the git repository the folder is in, or in
    /// the shadow repository kept in it (a project without git). Creates
    /// nothing but a lost branch.
    pub fn of_session(session: &Path) -> Result<Option<Integration>> {
        let Ok(session) = session.canonicalize() else {
            return Ok(None);
        };
        let repo = match Repo::open(&session)? {
            Some(repo) => repo,
            None => match Repo::open_shadow(&session)? {
                Some(shadow) => shadow,
                None => return Ok(None),
            },
        };
        Integration::resume(&repo, &session)
    }

    /// Find a session's integration again from its state folder, without
    /// creating anything but a lost branch (see [`Integration::start`]);
    /// Ok(None) when `state_dir` has no state file.
    pub fn resume(repo: &Repo, state_dir: &Path) -> Result<Option<Integration>> {
        Ok(Self::resume_at_tip(repo, state_dir)?.map(|(found, _)| found))
    }

    /// [`Integration::resume`], with the tip it read to check the branch.
    fn resume_at_tip(repo: &Repo, state_dir: &Path) -> Result<Option<(Integration, String)>> {
        let Some(state) = read_state(state_dir)? else {
            return Ok(None);
        };
        let inconsistent = |message: String| IsolationError::Inconsistent {
            path: state_dir.join(STATE_FILE),
            message,
        };
        if state.shadow != repo.is_shadow() {
            return Err(inconsistent(if state.shadow {
                format!(
                    "the session ran on a shadow repository (its folder had no git); expected \
                     the shadow repository in `{}`, not the git repository at `{}`",
                    state_dir.display(),
                    repo.work_tree().display()
                )
            } else {
                format!(
                    "the session ran on the git repository of its project; expected that \
                     repository, not a shadow repository at `{}`",
                    repo.common_dir().display()
                )
            }));
        }
        let found = Integration {
            repo: repo.clone(),
            state_dir: state_dir.to_owned(),
            state,
        };
        if let Some(tip) = repo.resolve(&found.reference())? {
            return Ok(Some((found, tip)));
        }
        if repo.resolve(&found.state.base)?.is_none() {
            return Err(inconsistent(format!(
                "branch `{}` is gone and so is its base commit {}; expected one of them",
                found.state.branch, found.state.base
            )));
        }
        found.create_branch("wavecrew: branch made again at the recorded base")?;
        let tip = found.state.base.clone();
        Ok(Some((found, tip)))
    }

    fn create_branch(&self, reason: &str) -> Result<()> {
        let made = self
            .repo
            .update_ref(&self.reference(), &self.state.base, "", reason)?;
        // Another resume of the same session may have made it first.
        if made
            || self.repo.resolve(&self.reference())?.as_deref() == Some(self.state.base.as_str())
        {
            Ok(())
        } else {
            Err(IsolationError::BranchExists {
                branch: self.state.branch.clone(),
                state: self.state_file(),
            })
        }
    }

    /// The repository.
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.state.session
    }

    /// The integration branch's short name, `wavecrew/<session-id>`.
    pub fn branch(&self) -> &str {
        &self.state.branch
    }

    /// The integration branch's full ref, `refs/heads/wavecrew/<session-id>`.
    pub fn reference(&self) -> String {
        format!("refs/heads/{}", self.state.branch)
    }

    /// The commit the integration branch started from (HEAD, or the snapshot).
    pub fn base(&self) -> &str {
        &self.state.base
    }

    /// The user's HEAD when the session started.
    pub fn head_at_start(&self) -> &str {
        &self.state.head_at_start
    }

    /// Whether the base is a snapshot of a dirty work tree.
    pub fn snapshot(&self) -> bool {
        self.state.snapshot
    }

    /// The session's state folder (state file, lock files, worktree records).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The state file, `state_dir/integration.json`.
    pub fn state_file(&self) -> PathBuf {
        self.state_dir.join(STATE_FILE)
    }

    /// The integration branch's current commit.
    pub fn tip(&self) -> Result<String> {
        self.repo.must_resolve(&self.reference())
    }

    /// Where this session's worktrees live, chosen when it started (see
    /// the free function [`worktrees_dir`]): a folder wavecrew owns beside
    /// the project, `<parent>/<project>.wavecrew/<session-id>/`, never
    /// committed and never in the user's tree (for a shadow repository, or
    /// a session started before: `<common-dir>/wavecrew/worktrees/<session-id>/`).
    pub fn worktrees_dir(&self) -> PathBuf {
        self.state
            .worktrees
            .clone()
            .unwrap_or_else(|| legacy_worktrees_dir(&self.repo, &self.state.session))
    }

    /// Whether the project-relative `path` is under one of the session's
    /// `exclude` paths (the session folder: never part of the work).
    pub(crate) fn excluded(&self, path: &str) -> bool {
        self.state.exclude.iter().any(|x| {
            path.strip_prefix(x.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    /// The trailer value for `task`: `<session-id>/<task>`.
    pub(crate) fn trailer_value(&self, task: &str) -> String {
        format!("{}/{task}", self.state.session)
    }

    /// `message` with the task's trailer as its last paragraph.
    pub(crate) fn with_trailer(&self, message: &str, task: &str) -> String {
        let body = message.trim_end();
        let body = if body.is_empty() {
            format!("wavecrew: task {task}")
        } else {
            body.to_owned()
        };
        format!("{body}\n\n{TRAILER}: {}\n", self.trailer_value(task))
    }

    /// Task → landing commit, read from the trailers on the integration
    /// branch (first-parent history since the base; the newest wins). What
    /// is merged is read from git, never from a file.
    pub fn merged_tasks(&self) -> Result<BTreeMap<String, String>> {
        self.merged_tasks_at(&self.tip()?)
    }

    /// [`Integration::merged_tasks`] as of the commit `tip` of the branch
    /// (read once by the caller, e.g. under the merge queue's lock).
    pub(crate) fn merged_tasks_at(&self, tip: &str) -> Result<BTreeMap<String, String>> {
        let format = format!("--format=%x1e%H%x1f%(trailers:key={TRAILER},valueonly)");
        let range = format!("{}..{tip}", self.state.base);
        let out = self
            .repo
            .git()
            .args(["log", "--first-parent", &format, &range, "--"])
            .run()?;
        let text = String::from_utf8_lossy(&out);
        let prefix = format!("{}/", self.state.session);
        let mut merged = BTreeMap::new();
        for record in text.split('\x1e') {
            let Some((commit, trailers)) = record.split_once('\x1f') else {
                continue;
            };
            for value in trailers.lines() {
                if let Some(task) = value.trim().strip_prefix(&prefix) {
                    merged
                        .entry(task.to_owned())
                        .or_insert_with(|| commit.trim().to_owned());
                }
            }
        }
        Ok(merged)
    }

    /// `--apply`: when the user's HEAD is still the commit it was at the
    /// start, the same branch is checked out and the work tree is clean
    /// (ignoring `exclude`), fast-forward the user's branch and work tree to
    /// the tip (`git merge --ff-only`). Otherwise refuse with
    /// [`IsolationError::Refused`], naming the command the user can run
    /// (`git merge wavecrew/<session-id>`).
    ///
    /// A session that started from a snapshot of uncommitted changes cannot
    /// move the branch without committing them: while the work tree is still
    /// exactly that snapshot, the session's work is written onto it as
    /// uncommitted changes ([`Applied::uncommitted`]); once they changed, it
    /// is refused.
    ///
    /// A session on a shadow repository has no branch to move: while the
    /// project's files are still the ones it started from, its work (base
    /// to tip: added, modified and deleted files, modes, symlinks) is
    /// written into the folder as files ([`Applied::files`]); when they
    /// changed, it is refused naming the changed files. An apply cut short
    /// (a kill) is finished by the next one: a file already holding the
    /// session's version counts as unchanged.
    pub fn apply(&self) -> Result<Applied> {
        if self.repo.is_shadow() {
            return self.apply_files();
        }
        let command = format!("git merge {}", self.state.branch);
        let refuse = |reason: String| {
            Err(IsolationError::Refused {
                reason,
                command: command.clone(),
            })
        };
        let Some(branch) = self.state.branch_at_start.clone() else {
            return refuse("HEAD was detached when the session started".into());
        };
        match symbolic_head(&self.repo)? {
            Some(now) if now == branch => {}
            Some(now) => {
                return refuse(format!(
                    "`{now}` is checked out; the session started on `{branch}`"
                ));
            }
            None => return refuse("HEAD is detached".into()),
        }
        let head = self.repo.resolve("HEAD")?.unwrap_or_default();
        if head != self.state.head_at_start {
            return refuse(format!(
                "`{branch}` moved since the session started (was {}, now {})",
                short(&self.state.head_at_start),
                short(&head)
            ));
        }
        let mut status = self.repo.git().args([
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            ".",
        ]);
        for x in &self.state.exclude {
            status = status.arg(format!(":(exclude,literal){x}"));
        }
        let changed = git::split_nul(&status.run()?);
        // Started from uncommitted changes that are still exactly as they
        // were: the session's work goes onto the work tree as uncommitted
        // changes too (the branch cannot move without committing yours).
        if !changed.is_empty()
            && self.state.snapshot
            && snapshot_tree(&self.repo, &head, &self.state.exclude)?
                == self.repo.tree_of(&self.state.base)?
        {
            return self.apply_to_work_tree(branch, head);
        }
        if !changed.is_empty() {
            let shown: Vec<&str> = changed.iter().take(5).map(String::as_str).collect();
            let snapshot = if self.state.snapshot {
                "; the session's branch already holds the changes the session \
                 started with (its first commit is a snapshot of them)"
            } else {
                ""
            };
            return refuse(format!(
                "the work tree has local changes ({}{}){snapshot}",
                shown.join(", "),
                if changed.len() > 5 { ", …" } else { "" }
            ));
        }
        let tip = self.tip()?;
        let (line, out) = self
            .repo
            .git()
            .args(["merge", "--ff-only", "--no-edit", "--end-of-options", &tip])
            .output()?;
        if !out.status.success() {
            return refuse(git::failed(line, &out).to_string());
        }
        Ok(Applied {
            branch,
            from: head,
            to: tip,
            uncommitted: false,
            files: None,
        })
    }
}

impl Integration {
    /// Write the session's work (base to tip) into the user's work tree as
    /// uncommitted changes; the branch and the index stay where they are.
    fn apply_to_work_tree(&self, branch: String, head: String) -> Result<Applied> {
        let tip = self.tip()?;
        let scratch = self.repo.common_dir().join("wavecrew").join("tmp");
        fs::create_dir_all(&scratch).map_err(|e| IsolationError::io("creating", &scratch, e))?;
        let patch = tempfile::Builder::new()
            .prefix("apply-")
            .suffix(".patch")
            .tempfile_in(&scratch)
            .map_err(|e| IsolationError::io("creating a temp file in", &scratch, e))?;
        let diff = self
            .repo
            .git()
            .args(["diff", "--binary"])
            .args(wavecrew_sys::git::PLAIN_DIFF)
            .arg(&self.state.base)
            .arg(&tip)
            .run()?;
        fs::write(patch.path(), &diff)
            .map_err(|e| IsolationError::io("writing", patch.path(), e))?;
        if !diff.is_empty() {
            self.repo
                .git()
                .args(["apply", "--whitespace=nowarn", "--"])
                .arg(patch.path())
                .run()?;
        }
        Ok(Applied {
            branch,
            from: head.clone(),
            to: head,
            uncommitted: true,
            files: None,
        })
    }
}

/// The user's checked-out branch (`refs/heads/main`), None when detached.
fn symbolic_head(repo: &Repo) -> Result<Option<String>> {
    let (line, out) = repo
        .git()
        .args(["symbolic-ref", "--quiet", "HEAD"])
        .output()?;
    match out.status.code() {
        Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())),
        Some(1) => Ok(None),
        _ => Err(git::failed(line, &out)),
    }
}

/// A commit id shortened for a message.
pub(crate) fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// A commit of the user's work tree as it is (tracked changes and untracked
/// files that are not ignored, `exclude` left as in HEAD) with `head` as
/// parent; None when that is HEAD's tree. Built in a temporary index.
fn snapshot(repo: &Repo, head: &str, exclude: &[String], session: &str) -> Result<Option<String>> {
    let tree = snapshot_tree(repo, head, exclude)?;
    if tree == repo.tree_of(head)? {
        return Ok(None);
    }
    let message = format!(
        "wavecrew: snapshot of the work tree at the start of session {session}\n\n\
         The tracked changes and untracked files that were not committed when\n\
         the session started; the session's work builds on them.\n"
    );
    repo.commit_tree(&tree, &[head], &message).map(Some)
}

/// The tree of the work tree as it is (tracked changes and untracked
/// files, `exclude` left out), built in a temporary index: the user's
/// index is never touched.
pub(crate) fn snapshot_tree(repo: &Repo, head: &str, exclude: &[String]) -> Result<String> {
    let scratch = repo.common_dir().join("wavecrew").join("tmp");
    fs::create_dir_all(&scratch).map_err(|e| IsolationError::io("creating", &scratch, e))?;
    let tmp = tempfile::Builder::new()
        .prefix("snapshot-")
        .tempdir_in(&scratch)
        .map_err(|e| IsolationError::io("creating a temp folder in", &scratch, e))?;
    let index = tmp.path().join("index");
    let with_index = |args: &[&str]| repo.git().env("GIT_INDEX_FILE", &index).args(args);
    // Fast path: a copy of the user's index, reset to HEAD but keeping its
    // stat data, so `add` re-reads only files that changed. Any trouble
    // (unmerged entries, a split index, no index yet) falls back to HEAD's
    // tree alone.
    let fast = fs::copy(repo.index_file(), &index).is_ok()
        && with_index(&["read-tree", "-m", head]).run().is_ok();
    if !fast {
        let _ = fs::remove_file(&index);
        with_index(&["read-tree", head]).run()?;
    }
    add_all(repo, &index, Some(head), exclude)
}

/// Add the work tree as it is (tracked changes, untracked files that are
/// not ignored, `exclude` left out: as in `head`, or absent without one) to
/// the index file `index`, and write its tree.
pub(crate) fn add_all(
    repo: &Repo,
    index: &Path,
    head: Option<&str>,
    exclude: &[String],
) -> Result<String> {
    let with_index = |args: &[&str]| repo.git().env("GIT_INDEX_FILE", index).args(args);
    // An excluded path that git ignores cannot be named in an exclude
    // pathspec (`git add` fails on it); its untracked files stay out anyway,
    // and its tracked ones are reset to HEAD afterwards.
    let mut add = with_index(&["add", "--all", "--", "."]);
    let mut reset = Vec::new();
    for x in exclude {
        let ignored = repo
            .git()
            .args(["check-ignore", "--quiet", "--", x])
            .test()?;
        if ignored {
            reset.push(format!(":(literal){x}"));
        } else {
            add = add.arg(format!(":(exclude,literal){x}"));
        }
    }
    add.run()?;
    if let Some(head) = head {
        for x in &reset {
            with_index(&["reset", "--quiet", head, "--", x]).run()?;
        }
    }
    Ok(with_index(&["write-tree"]).text()?)
}

/// The state file of `state_dir`, checked (format version, session id,
/// branch name); Ok(None) when there is none. What [`Integration::resume`]
/// and [`crate::Inspection::read`] both start from.
pub(crate) fn read_state(state_dir: &Path) -> Result<Option<State>> {
    let state_file = state_dir.join(STATE_FILE);
    if !state_file.exists() {
        return Ok(None);
    }
    let state: State = fsutil::read_json(&state_file)?;
    let inconsistent = |message: String| IsolationError::Inconsistent {
        path: state_file.clone(),
        message,
    };
    if state.version != 1 {
        return Err(inconsistent(format!(
            "format version {}; expected 1",
            state.version
        )));
    }
    check_id("session id", &state.session)?;
    if state.branch != format!("{BRANCH_PREFIX}{}", state.session) {
        return Err(inconsistent(format!(
            "branch `{}`; expected `{BRANCH_PREFIX}{}`",
            state.branch, state.session
        )));
    }
    Ok(Some(state))
}

/// Refuse a new session whose id names task branches already there: an
/// earlier session's under the same id (its folder removed, its branches
/// kept). Their work started from that session's base; taken up, it would
/// be judged against this one's. Named, with how to remove them (their
/// worktrees first: git will not delete a branch checked out in one).
fn refuse_stale_task_branches(repo: &Repo, session_id: &str, state_file: &Path) -> Result<()> {
    let prefix = format!("refs/heads/{TASK_BRANCH_PREFIX}{session_id}/");
    let out = repo
        .git()
        .args(["for-each-ref", "--format=%(refname)", &prefix])
        .text()?;
    let branches: Vec<String> = out
        .lines()
        .filter_map(|r| r.strip_prefix("refs/heads/"))
        .map(str::to_owned)
        .collect();
    if branches.is_empty() {
        return Ok(());
    }
    let checked_out: Vec<String> = list_worktrees(repo)?
        .into_iter()
        .filter(|l| {
            l.branch
                .as_deref()
                .is_some_and(|b| b.starts_with(prefix.as_str()))
        })
        .map(|l| l.path.display().to_string())
        .collect();
    let quote = |words: Vec<&str>| shell_words::join(words);
    let mut remove = Vec::new();
    for path in &checked_out {
        remove.push(quote(vec!["git", "worktree", "remove", "--force", path]));
    }
    let mut delete = vec!["git", "branch", "-D"];
    delete.extend(branches.iter().map(String::as_str));
    remove.push(quote(delete));
    Err(IsolationError::StaleTaskBranches {
        session: session_id.to_owned(),
        branches,
        state: state_file.to_owned(),
        remove: remove.join(" && "),
    })
}
