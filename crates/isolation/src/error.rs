//! The error type of `wavecrew-isolation`: every variant names the git
//! command, ref, id or path at fault and what was expected instead.

use std::io;
use std::path::PathBuf;

use wavecrew_sys::io::PathIoError;

/// Errors from the worktrees, the integration branch and the merge queue.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// A git command could not be run, failed, printed what was not
    /// expected, or git is older than 2.38: the error of the one git
    /// runner, [`wavecrew_sys::git`], with its message.
    #[error(transparent)]
    Git(#[from] wavecrew_sys::git::GitError),
    /// An id that would become a ref name or a path segment was refused.
    #[error(
        "invalid {kind} {given:?}: {problem}; expected 1-128 ASCII letters, digits, `-`, `_` or `.`, not starting with `-` or `.`, without `..`, not ending with `.` or `.lock`"
    )]
    InvalidId {
        /// Which kind of id (`session id`, `task id`, `worktree name`).
        kind: &'static str,
        /// The id as given (truncated for the message).
        given: String,
        /// Why it was refused.
        problem: String,
    },
    /// A ref name was refused before git saw it.
    #[error("invalid ref name {given:?}; expected a full ref name git accepts (`refs/…`)")]
    InvalidRef {
        /// The name as given.
        given: String,
    },
    /// A project-relative path (in `exclude` or `copy`) was refused.
    #[error(
        "invalid {what} path {given:?}: {problem}; expected a relative path inside the project, without `..`"
    )]
    InvalidPath {
        /// Which list the path came from (`exclude`, `copy`).
        what: &'static str,
        /// The path as given.
        given: String,
        /// Why it was refused.
        problem: &'static str,
    },
    /// A file or folder could not be read or written.
    #[error(transparent)]
    Io(PathIoError),
    /// A state file could not be read, written or parsed.
    #[error(transparent)]
    State(#[from] wavecrew_core::CoreError),
    /// A state file disagrees with the repository or with the caller.
    #[error("`{path}`: {message}")]
    Inconsistent {
        /// The state file.
        path: PathBuf,
        /// What disagrees, and what was expected.
        message: String,
    },
    /// The repository has no commit on HEAD yet.
    #[error("the repository at `{top}` has no commit yet; expected HEAD to name a commit")]
    NoCommit {
        /// The work-tree top.
        top: PathBuf,
    },
    /// The integration branch exists but this session has no state for it.
    #[error(
        "branch `{branch}` already exists but `{state}` does not; expected a new session id, or the session's state folder (a session made anew under a used id: remove the old branch with `git branch -D {branch}`)"
    )]
    BranchExists {
        /// The branch (`wavecrew/<session-id>`).
        branch: String,
        /// The missing state file.
        state: PathBuf,
    },
    /// Task branches of an earlier session under the same id are there,
    /// but this session has no state for them: a session made anew under a
    /// used id. Their work started from another base; taken up, they would
    /// be judged against this one.
    #[error(
        "task branches of an earlier session `{session}` are still there ({}), but `{state}` does not exist; expected a new session id, or remove them first: {remove}",
        branches.join(", ")
    )]
    StaleTaskBranches {
        /// The session id.
        session: String,
        /// The branches' short names.
        branches: Vec<String>,
        /// The missing state file.
        state: PathBuf,
        /// The commands that remove them (their worktrees first).
        remove: String,
    },
    /// A worktree handed in is not one this session made, or not of the right kind.
    #[error("worktree `{path}`: {message}")]
    BadWorktree {
        /// The worktree's folder.
        path: PathBuf,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// A compare-and-swap on a ref kept losing to another writer.
    #[error(
        "`{reference}` kept moving under wavecrew ({attempts} tries); expected no writer outside the merge queue"
    )]
    Contended {
        /// The ref.
        reference: String,
        /// How many times it was tried.
        attempts: u32,
    },
    /// A shadow repository (for a project folder without git) cannot be
    /// made or used as it is.
    #[error("shadow repository `{path}`: {message}")]
    Shadow {
        /// The shadow's git dir, or the project folder at fault.
        path: PathBuf,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// `apply` would change something the user did meanwhile; the user can
    /// run `command` instead.
    #[error("not applied: {reason}; run `{command}` to merge the session's work yourself")]
    Refused {
        /// Why it was refused.
        reason: String,
        /// The command the user can run (`git merge wavecrew/<session-id>`).
        command: String,
    },
}

impl IsolationError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        IsolationError::Io(PathIoError::new(op, path, source))
    }
}

/// Results of this crate.
pub type Result<T, E = IsolationError> = std::result::Result<T, E>;
