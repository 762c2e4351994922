//! The merge queue's check on the merged result: a worktree of a merge
//! candidate (the integration tip with a task's work merged, not yet
//! landed) where a verify command runs before the branch moves.

use crate::error::Result;
use crate::git::git;
use crate::ids::check_rel_path;
use crate::integration::Integration;
use crate::lock::lock;
use crate::worktree::{DETACHED_DIR, WORKTREE_LOCK, Worktree, canon, list_worktrees};

/// The folder name of the candidates' worktree under `.detached/`.
const CANDIDATE: &str = "merge-candidate";

/// What a candidate's check said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Land it.
    Pass,
    /// Do not land it; why (the command's output).
    Fail(String),
}

impl Integration {
    /// A detached worktree at `commit` (a merge candidate), reused from one
    /// candidate to the next: checked out again with untracked files
    /// removed and ignored ones (build output such as `target/`) kept, so a
    /// build in it is incremental. `copy` as in
    /// [`Integration::open_worktree`].
    pub fn candidate_worktree(&self, commit: &str, copy: &[String]) -> Result<Worktree> {
        let copy = copy
            .iter()
            .map(|c| check_rel_path("copy", c))
            .collect::<Result<Vec<_>>>()?;
        let path = self.worktrees_dir().join(DETACHED_DIR).join(CANDIDATE);
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        let listed = list_worktrees(&self.repo)?;
        let target = canon(&path);
        match listed.iter().find(|l| canon(&l.path) == target) {
            Some(l) if !l.prunable && l.branch.is_none() => {
                git(&path)
                    .args(["checkout", "--quiet", "--detach", "--force", commit])
                    .run()?;
                git(&path)
                    .args(["clean", "--quiet", "-d", "--force"])
                    .run()?;
            }
            Some(_) => {
                self.remove_path(&path, &listed)?;
                self.add_worktree(&path, &["--detach", commit])?;
            }
            None => self.add_worktree(&path, &["--detach", commit])?,
        }
        for rel in &copy {
            self.copy_in(&path, rel)?;
        }
        Ok(Worktree {
            build_state: Vec::new(),
            set_up_before: false,
            fresh: false,
            path,
            branch: String::new(),
            base: commit.to_owned(),
            task: CANDIDATE.to_owned(),
        })
    }
}
