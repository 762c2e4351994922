//! Where a writing task's agent works, and how its work lands.
//!
//! With `[isolation] mode = "worktree"` in a git work tree,
//! each claim of a task gets a git worktree of its own, on a branch from the
//! session's integration branch (`wavecrew/<session-id>`), in a folder
//! wavecrew owns inside the git directory: the agent, the validation and the
//! review run there, the files it changed are the diff of its branch, and
//! the work lands on the integration branch through the merge queue
//! (`wavecrew-isolation`). The user's branch and files are never touched.
//! In place (`mode = "in-place"`, the default, or a folder that is not a git
//! work tree), the agent works in the project folder.

use std::path::{Path, PathBuf};

use wavecrew_backends::config::IsolationMode;
use wavecrew_core::Task;
use wavecrew_core::role::PhaseError;
use wavecrew_isolation::{Integration, Landing, Repo, Worktree};

use crate::context::RoleContext;

/// A task's workspace.
#[derive(Debug)]
pub enum Workspace {
    /// The project folder itself.
    InPlace {
        /// The project root.
        dir: PathBuf,
    },
    /// A worktree of its own.
    Isolated {
        /// The session's integration branch.
        integration: Box<Integration>,
        /// The task's worktree.
        worktree: Worktree,
    },
}

/// How a task's work landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landed {
    /// In place: there is nothing to land.
    InPlace,
    /// On the integration branch, as this commit (also when an earlier run
    /// had landed it already).
    Commit(String),
    /// The task changed nothing.
    Nothing,
    /// It conflicts with work landed since its base.
    Conflict {
        /// The conflicted files.
        files: Vec<String>,
        /// git's messages.
        messages: String,
        /// The landed commits that touched those files.
        upstream: Vec<String>,
    },
}

fn phase(what: &str, e: impl std::fmt::Display) -> PhaseError {
    PhaseError(format!("{what}: {e}"))
}

impl RoleContext {
    /// The workspace of `task`'s claim number `claim`: its own worktree
    /// (see the module's notes), or the project folder.
    pub fn workspace(&self, task: &Task, claim: u32) -> Result<Workspace, PhaseError> {
        let in_place = || Workspace::InPlace {
            dir: self.project_root.clone(),
        };
        if self.config.isolation.mode == IsolationMode::InPlace {
            return Ok(in_place());
        }
        let Some(repo) = Repo::open(&self.project_root).map_err(|e| phase("git", e))? else {
            return Ok(in_place());
        };
        Repo::check_git_version().map_err(|e| phase("isolation", e))?;
        // The session folder is shared state in the main checkout: never
        // part of the work.
        let session_dir = self
            .session_dir
            .canonicalize()
            .unwrap_or_else(|_| self.session_dir.clone());
        let exclude = session_dir
            .strip_prefix(repo.top())
            .ok()
            .and_then(|rel| rel.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        let exclude: Vec<&str> = exclude.iter().map(String::as_str).collect();
        let integration =
            Integration::start(&repo, &self.session_name(), &exclude, &self.session_dir)
                .map_err(|e| phase("the integration branch", e))?;
        let worktree = integration
            .open_worktree(task.id.as_str(), claim.max(1), &self.config.isolation.copy)
            .map_err(|e| phase("the task's worktree", e))?;
        Ok(Workspace::Isolated {
            integration: Box::new(integration),
            worktree,
        })
    }
}

impl RoleContext {
    /// Where claim number `claim` of `task` would work, without creating
    /// anything (what `wavecrew prompt` shows).
    pub fn workspace_dir(&self, task: &Task, claim: u32) -> Result<PathBuf, PhaseError> {
        if self.config.isolation.mode == IsolationMode::InPlace {
            return Ok(self.project_root.clone());
        }
        Ok(
            match Repo::open(&self.project_root).map_err(|e| phase("git", e))? {
                Some(repo) => wavecrew_isolation::worktree_path(
                    &repo,
                    &self.session_name(),
                    task.id.as_str(),
                    claim.max(1),
                ),
                None => self.project_root.clone(),
            },
        )
    }
}

impl Workspace {
    /// Where the agent works.
    pub fn dir(&self) -> &Path {
        match self {
            Workspace::InPlace { dir } => dir,
            Workspace::Isolated { worktree, .. } => &worktree.path,
        }
    }

    /// The branch and base of an isolated workspace.
    pub fn branch(&self) -> Option<(&str, &str)> {
        match self {
            Workspace::InPlace { .. } => None,
            Workspace::Isolated { worktree, .. } => {
                Some((worktree.branch.as_str(), worktree.base.as_str()))
            }
        }
    }

    /// The files the task changed, exactly (an isolated workspace's diff
    /// against its base); `None` in place (the attempt's own account then).
    pub fn changed_files(&self) -> Result<Option<Vec<String>>, PhaseError> {
        match self {
            Workspace::InPlace { .. } => Ok(None),
            Workspace::Isolated {
                integration,
                worktree,
            } => integration
                .changed_files(worktree)
                .map(Some)
                .map_err(|e| phase("the task's changes", e)),
        }
    }

    /// Commit the task's work on its branch and land it through the merge
    /// queue.
    pub fn land(&self, task: &Task, message: &str) -> Result<Landed, PhaseError> {
        let Workspace::Isolated {
            integration,
            worktree,
        } = self
        else {
            return Ok(Landed::InPlace);
        };
        integration
            .commit(worktree, task.id.as_str(), message)
            .map_err(|e| phase("committing the task's work", e))?;
        let landing = integration
            .land(worktree, task.id.as_str())
            .map_err(|e| phase("the merge queue", e))?;
        Ok(match landing {
            Landing::FastForward { commit }
            | Landing::Merged { commit }
            | Landing::AlreadyMerged { commit } => Landed::Commit(commit),
            Landing::NothingToLand => Landed::Nothing,
            Landing::Conflict {
                files,
                messages,
                upstream,
            } => Landed::Conflict {
                files,
                messages,
                upstream,
            },
        })
    }

    /// After a landed task: its worktree goes (its branch stays as a ref).
    /// A failed task's worktree is kept for inspection.
    pub fn finish(&self, landed: bool) {
        if let (
            true,
            Workspace::Isolated {
                integration,
                worktree,
            },
        ) = (landed, self)
            && let Err(e) = integration.remove_worktree(worktree)
        {
            tracing::warn!("cannot remove {}: {e}", worktree.path.display());
        }
    }
}
