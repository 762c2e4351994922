//! Where wavecrew's worktrees live and what git lists of them: the names
//! (the suffix of the folder beside the project, the slots, task branches,
//! the worktree lock), the [`Worktree`] a caller holds, the slot a new
//! attempt takes, `git worktree list` read, and the path helpers every
//! module above shares. The integration branch (`integration.rs`), the
//! pool (`pool.rs`) and the worktrees (`worktree.rs`) all build on this
//! module, which imports none of them.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{IsolationError, Result};
use crate::git;
use crate::repo::Repo;

/// The suffix of the folder beside a project that holds its worktrees.
pub const WORKTREES_SUFFIX: &str = ".wavecrew";

/// The prefix of task branches: `wavecrew-tasks/<session-id>/<task>/<attempt>`.
///
/// Not under `wavecrew/<session-id>/`: that name is the integration branch,
/// and git cannot have both a ref and a folder of refs with one name.
pub const TASK_BRANCH_PREFIX: &str = "wavecrew-tasks/";

/// The lock that serialises worktree creation and removal.
pub(crate) const WORKTREE_LOCK: &str = "worktrees.lock";

/// The folder of the attempts' worktrees inside
/// [`crate::Integration::worktrees_dir`], one numbered folder each.
pub const SLOTS_DIR: &str = "slots";

/// A worktree wavecrew made: a task attempt's, or a read-only one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// Its folder, inside [`crate::Integration::worktrees_dir`].
    pub path: PathBuf,
    /// Its branch's short name (`wavecrew-tasks/<sid>/<task>/<attempt>`);
    /// empty for a detached, read-only worktree.
    pub branch: String,
    /// The commit it started from (the integration tip at the time).
    pub base: String,
    /// The task id; for a read-only worktree, its name.
    pub task: String,
    /// Where its build state came from: what was seeded from the project
    /// and why not where it was not ([`crate::Integration::seed_build_state`]),
    /// one line each; empty when nothing was asked.
    pub build_state: Vec<String>,
    /// Whether an earlier attempt's `[isolation] setup` holds for it: a
    /// warm worktree whose dependency files (lockfiles, manifests) did not
    /// change with the switch; false for a fresh one.
    pub set_up_before: bool,
    /// Whether this open checked it out or reset it to its branch (a new
    /// slot, or a pooled one taken over): nothing in it differs from its
    /// base yet but the linked session folder (see `link_session`). False
    /// for one found again (a resumed attempt keeps its work) and for a
    /// read-only one.
    pub fresh: bool,
}

impl Worktree {
    /// Whether this is a detached, read-only worktree (no branch).
    pub fn is_detached(&self) -> bool {
        self.branch.is_empty()
    }
}

/// The short name of the branch of attempt `attempt` of `task` in session
/// `session`: `wavecrew-tasks/<session>/<task>/<attempt>`.
pub(crate) fn task_branch_name(session: &str, task: &str, attempt: u32) -> String {
    format!("{TASK_BRANCH_PREFIX}{session}/{task}/{attempt}")
}

/// Every folder wavecrew's worktrees of `repo` may live in, whatever
/// session made them (canonical): the one beside the project and the one
/// inside the git folder. Only what is under one of these is ever repaired
/// or removed as wavecrew's.
pub(crate) fn worktree_roots(repo: &Repo) -> Vec<PathBuf> {
    let mut roots = vec![canon(&repo.common_dir().join("wavecrew"))];
    let top = canon(repo.work_tree());
    if let (Some(parent), Some(name)) = (top.parent(), top.file_name()) {
        let mut folder = name.to_os_string();
        folder.push(WORKTREES_SUFFIX);
        roots.push(canon(&parent.join(folder)));
    }
    roots
}

/// One entry of `git worktree list --porcelain`.
#[derive(Debug)]
pub(crate) struct Listed {
    pub(crate) path: PathBuf,
    pub(crate) head: Option<String>,
    pub(crate) branch: Option<String>,
    pub(crate) prunable: bool,
}

/// Every worktree git knows of.
pub(crate) fn list_worktrees(repo: &Repo) -> Result<Vec<Listed>> {
    let list = || {
        repo.git()
            .args(["worktree", "list", "--porcelain", "-z"])
            .run()
    };
    let out = match list() {
        Ok(out) => out,
        Err(e) if repair_half_added(repo) => list().map_err(|_| e)?,
        Err(e) => return Err(e.into()),
    };
    let mut all = Vec::new();
    let mut current: Option<Listed> = None;
    for field in git::split_nul(&out) {
        let (key, value) = field.split_once(' ').unwrap_or((field.as_str(), ""));
        match key {
            "worktree" => {
                all.extend(current.take());
                current = Some(Listed {
                    path: PathBuf::from(value),
                    head: None,
                    branch: None,
                    prunable: false,
                });
            }
            "HEAD" => {
                if let Some(c) = current.as_mut() {
                    c.head = Some(value.to_owned());
                }
            }
            "branch" => {
                if let Some(c) = current.as_mut() {
                    c.branch = Some(value.to_owned());
                }
            }
            "prunable" => {
                if let Some(c) = current.as_mut() {
                    c.prunable = true;
                }
            }
            _ => {}
        }
    }
    all.extend(current);
    Ok(all)
}

/// Remove what a `git worktree add` of ours killed half-way left in
/// `<common-dir>/worktrees/`: an entry without its `commondir` or `HEAD`
/// (or with one still empty)
/// (git writes `gitdir` first) whose `gitdir` points into wavecrew's own
/// folder. Every later `git worktree list` fails on such an entry. Nothing
/// of anyone else's is touched. Returns whether anything was removed.
fn repair_half_added(repo: &Repo) -> bool {
    let roots = worktree_roots(repo);
    let Ok(entries) = fs::read_dir(repo.common_dir().join("worktrees")) else {
        return false;
    };
    let mut removed = false;
    for entry in entries.flatten() {
        let admin = entry.path();
        let written = |f: &str| fs::metadata(admin.join(f)).is_ok_and(|m| m.len() > 0);
        if written("commondir") && written("HEAD") {
            continue;
        }
        let Ok(gitdir) = fs::read_to_string(admin.join("gitdir")) else {
            continue;
        };
        let worktree = Path::new(gitdir.trim()).parent().map(canon);
        if worktree.is_some_and(|w| roots.iter().any(|r| w.starts_with(r) && &w != r)) {
            removed |= fs::remove_dir_all(&admin).is_ok();
        }
    }
    removed
}

/// The lowest-numbered pooled (detached) worktree in `slots`.
pub(crate) fn pooled(slots: &Path, listed: &[Listed]) -> Option<PathBuf> {
    let slots = canon(slots);
    listed
        .iter()
        .filter(|l| !l.prunable && l.branch.is_none())
        .map(|l| canon(&l.path))
        .filter(|p| p.parent() == Some(slots.as_path()))
        .filter_map(|p| Some((slot_number(&p)?, p)))
        .min()
        .map(|(_, p)| p)
}

/// The folder of a new worktree in `slots`: the lowest-numbered slot that
/// is neither on disk nor listed by git.
pub(crate) fn free_slot(slots: &Path, listed: &[Listed]) -> PathBuf {
    let listed: Vec<PathBuf> = listed.iter().map(|l| canon(&l.path)).collect();
    (1..=u64::MAX)
        .map(|n| slots.join(n.to_string()))
        .find(|p| fs::symlink_metadata(p).is_err() && !listed.contains(&canon(p)))
        .unwrap_or_else(|| slots.join("0"))
}

/// The number of the slot folder `path`.
pub(crate) fn slot_number(path: &Path) -> Option<u64> {
    path.file_name()?.to_str()?.parse().ok()
}

/// `path` with symlinks resolved when it exists, as given otherwise.
pub(crate) fn canon(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// Remove a file, a symlink (not its target) or a folder tree.
pub(crate) fn remove_any(path: &Path) -> Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let removed = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    removed.map_err(|e| IsolationError::io("removing", path, e))
}

/// The git folder of the linked worktree at `path`, trusted only when
/// what leads there is as git wrote it: the worktree's `.git` file names a
/// folder directly under `<common_dir>/worktrees/`, whose `gitdir` names
/// this `.git` back and whose `commondir` leads to `common_dir`. An agent
/// may write all three (it commits on its branch); a redirect to a copy of
/// the repository with drivers of its own is refused here, named, before
/// wavecrew runs git in the worktree.
pub(crate) fn trusted_git_dir(common_dir: &Path, path: &Path) -> Result<PathBuf> {
    let refused = |what: String| IsolationError::BadWorktree {
        path: path.to_owned(),
        message: format!(
            "{what}; expected what git wrote when it made the worktree (an agent may have \
             rewritten it to lead git elsewhere): wavecrew does not run git there"
        ),
    };
    let dot_git = path.join(".git");
    let text = fs::read_to_string(&dot_git)
        .map_err(|e| refused(format!("its `.git` file cannot be read ({e})")))?;
    let named = text
        .strip_prefix("gitdir: ")
        .map(|t| PathBuf::from(t.trim_end()))
        .filter(|d| d.is_absolute())
        .ok_or_else(|| refused("its `.git` file does not name a git folder".to_owned()))?;
    let admin = canon(&named);
    let worktrees = canon(&common_dir.join("worktrees"));
    if admin.parent() != Some(worktrees.as_path()) {
        return Err(refused(format!(
            "its `.git` leads to `{}`, not to a folder of `{}`",
            named.display(),
            worktrees.display()
        )));
    }
    let back = fs::read_to_string(admin.join("gitdir")).unwrap_or_default();
    if canon(Path::new(back.trim_end())) != canon(&dot_git) {
        return Err(refused(format!(
            "its git folder's `gitdir` names `{}`",
            back.trim_end()
        )));
    }
    let common = fs::read_to_string(admin.join("commondir")).unwrap_or_default();
    let common = common.trim_end();
    let common = if Path::new(common).is_absolute() {
        PathBuf::from(common)
    } else {
        admin.join(common)
    };
    if canon(&common) != canon(common_dir) {
        return Err(refused(format!(
            "its git folder's `commondir` leads to `{}`",
            common.display()
        )));
    }
    Ok(admin)
}
