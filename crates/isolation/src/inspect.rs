//! A read-only look at a session's integration branch, for `wavecrew
//! status` and the reports: where the branch is and which tasks landed on
//! it, in landing order.
//!
//! Unlike [`Integration::resume`], nothing is created or mended: a branch
//! the user deleted after taking its work stays deleted (the inspection
//! says it is gone), and no lock is taken.

use std::collections::HashSet;
use std::path::Path;

use crate::error::Result;
use crate::git::git;
use crate::integration::{State, TRAILER, read_state};
use crate::repo::Repo;

/// A task that landed on the integration branch, and the commit that
/// landed it (the newest commit on the branch's first-parent history that
/// carries its `Wavecrew-Task` trailer, as [`Integration::merged_tasks`]
/// reads it).
///
/// [`Integration::merged_tasks`]: crate::Integration::merged_tasks
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandedTask {
    /// The task id.
    pub task: String,
    /// The commit on the integration branch.
    pub commit: String,
}

/// What [`Inspection::read`] found of a session's integration branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The session id.
    pub session: String,
    /// The branch's short name, `wavecrew/<session-id>`.
    pub branch: String,
    /// The commit the branch started from (the user's HEAD, or a snapshot).
    pub base: String,
    /// Whether `base` is a snapshot of a dirty work tree.
    pub snapshot: bool,
    /// The branch's current commit; None when the branch no longer exists.
    pub tip: Option<String>,
    /// The tasks that landed, oldest first (empty when the branch is gone).
    pub landed: Vec<LandedTask>,
}

impl Inspection {
    /// Read the session whose state folder is `state_dir` (the folder
    /// holding `integration.json`) in `repo`, changing nothing; Ok(None)
    /// when the folder has no state file (the session ran in place).
    ///
    /// A state file that cannot be parsed or disagrees with itself is an
    /// error, as in [`Integration::resume`].
    ///
    /// [`Integration::resume`]: crate::Integration::resume
    pub fn read(repo: &Repo, state_dir: &Path) -> Result<Option<Inspection>> {
        let Some(state) = read_state(state_dir)? else {
            return Ok(None);
        };
        let tip = repo.resolve(&format!("refs/heads/{}", state.branch))?;
        let landed = match &tip {
            Some(tip) => landings(repo, &state, tip)?,
            None => Vec::new(),
        };
        Ok(Some(Inspection {
            session: state.session,
            branch: state.branch,
            base: state.base,
            snapshot: state.snapshot,
            tip,
            landed,
        }))
    }
}

/// The tasks on `tip`'s first-parent history since the base, oldest first;
/// a task whose trailer appears more than once is placed at its newest
/// commit (the one [`Integration::merged_tasks`] names).
///
/// [`Integration::merged_tasks`]: crate::Integration::merged_tasks
fn landings(repo: &Repo, state: &State, tip: &str) -> Result<Vec<LandedTask>> {
    let format = format!("--format=%x1e%H%x1f%(trailers:key={TRAILER},valueonly)");
    let range = format!("{}..{tip}", state.base);
    let out = git(repo.top())
        .args(["log", "--first-parent", &format, &range, "--"])
        .run()?;
    let text = String::from_utf8_lossy(&out);
    let prefix = format!("{}/", state.session);
    let mut seen = HashSet::new();
    let mut newest_first = Vec::new();
    for record in text.split('\x1e') {
        let Some((commit, trailers)) = record.split_once('\x1f') else {
            continue;
        };
        for value in trailers.lines() {
            if let Some(task) = value.trim().strip_prefix(&prefix)
                && seen.insert(task.to_owned())
            {
                newest_first.push(LandedTask {
                    task: task.to_owned(),
                    commit: commit.trim().to_owned(),
                });
            }
        }
    }
    newest_first.reverse();
    Ok(newest_first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Integration, Landing};

    fn git_in(dir: &Path, args: &[&str]) -> String {
        crate::git::git(dir)
            .args(args)
            .text()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn landing_order_and_a_deleted_branch_stays_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        git_in(&top, &["init", "-q", "-b", "main"]);
        git_in(&top, &["config", "user.name", "T"]);
        git_in(&top, &["config", "user.email", "t@example.invalid"]);
        std::fs::write(top.join("README"), "hello\n").unwrap();
        std::fs::write(top.join(".gitignore"), ".workflow/\n").unwrap();
        git_in(&top, &["add", "-A"]);
        git_in(&top, &["commit", "-qm", "first"]);
        let repo = Repo::open(&top).unwrap().unwrap();
        let state_dir = top.join(".workflow/.team/S-look");
        assert_eq!(Inspection::read(&repo, &state_dir).unwrap(), None);

        let s = Integration::start(&repo, "S-look", &[".workflow"], &state_dir).unwrap();
        // B lands first, then A: landing order, not id order.
        let mut commits = Vec::new();
        for task in ["IMPL-002", "IMPL-001"] {
            let wt = s.open_worktree(task, 1, &[]).unwrap();
            std::fs::write(wt.path.join(format!("{task}.txt")), "x\n").unwrap();
            s.commit(&wt, task, task).unwrap();
            match s.land(&wt, task).unwrap() {
                Landing::FastForward { commit } | Landing::Merged { commit } => {
                    commits.push(commit);
                }
                other => panic!("{other:?}"),
            }
        }
        let seen = Inspection::read(&repo, &state_dir).unwrap().unwrap();
        assert_eq!(seen.branch, "wavecrew/S-look");
        assert_eq!(seen.tip.as_deref(), Some(s.tip().unwrap().as_str()));
        let order: Vec<(&str, &str)> = seen
            .landed
            .iter()
            .map(|l| (l.task.as_str(), l.commit.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("IMPL-002", commits[0].as_str()),
                ("IMPL-001", commits[1].as_str())
            ]
        );
        let merged = s.merged_tasks().unwrap();
        for l in &seen.landed {
            assert_eq!(merged[&l.task], l.commit);
        }

        // The user took the work and deleted the branch: still gone after.
        git_in(&top, &["branch", "-D", "wavecrew/S-look"]);
        let seen = Inspection::read(&repo, &state_dir).unwrap().unwrap();
        assert_eq!(seen.tip, None);
        assert!(seen.landed.is_empty());
        assert_eq!(
            git_in(&top, &["branch", "--list", "wavecrew/S-look"]),
            "",
            "nothing was made again"
        );
        s.clean().unwrap();
    }
}
