//! Isolated parallel tasks: a git worktree per attempt, an integration
//! branch per session, and a merge queue that lands each task exactly once.
//!
//! Parallel agents that share one working tree see each other's half-done
//! edits. Here each task attempt gets its own worktree on its own branch,
//! and finished work lands on the session's integration branch, where it
//! can be validated as merged.
//!
//! - [`Repo::open`] finds the user's repository; [`Repo::check_git_version`]
//!   wants git ≥ 2.38 (`git merge-tree --write-tree`).
//! - [`Repo::shadow`] makes (or opens again) the shadow repository of a
//!   project folder that is not a git repository: a bare repository in the
//!   session's state folder, `state_dir/shadow.git`, whose work tree is the
//!   folder (named with `--git-dir`/`--work-tree` on every command, so the
//!   folder never gets a `.git`) and whose first commit, on
//!   `refs/heads/project`, is a snapshot of the folder's files (its
//!   `.gitignore` honoured, the session folder left out). Everything below
//!   then works on it as on a real repository; [`Repo::open_shadow`] finds
//!   it again. It is built in a temporary folder and renamed into place,
//!   so a kill at any point leaves nothing or a whole shadow.
//! - [`Integration::start`] creates (or finds again) the branch
//!   `wavecrew/<session-id>` from the user's HEAD, or from a snapshot commit
//!   of a dirty work tree (tracked changes and untracked files, the session
//!   folder left out), without touching the user's index, branch or files.
//!   Its state is `state_dir/integration.json`.
//! - [`Integration::open_worktree`] gives attempt `n` of a task a worktree
//!   on `wavecrew-tasks/<session-id>/<task>/<n>` from the integration tip,
//!   beside the project, in `<project>.wavecrew/<session-id>/`;
//!   [`Integration::detached_worktree`] gives read-only roles one of the tip.
//! - [`Integration::commit`] commits a worktree's changes with the trailer
//!   `Wavecrew-Task: <session-id>/<task>`; [`Integration::changed_files`]
//!   lists exactly that worktree's changes.
//! - [`Integration::land`] is the merge queue: fast-forward, or `merge-tree`
//!   plus `commit-tree`, then a compare-and-swap `update-ref`; a conflict is
//!   reported with the files, git's messages and the upstream commits.
//!   [`Integration::merged_tasks`] reads what landed from the trailers.
//!   [`Integration::land_checked`] runs a check on each merge candidate
//!   first (in [`Integration::candidate_worktree`]); a failure lands
//!   nothing.
//! - [`Inspection::read`] reads the branch and what landed on it, in
//!   landing order, without changing anything (for status and reports).
//! - Every attempt works in a numbered slot (`slots/<n>/`) that never
//!   moves; [`Integration::release_worktree`] keeps a landed attempt's
//!   worktree there, detached (the warm pool), and the next new attempt
//!   takes it over, reset to its base by git with the ignored build output
//!   kept, so the second task of a session builds incrementally at the same
//!   path (compilers key incremental state by path).
//! - [`Integration::prune_stale`], [`Integration::remove_worktree`] and
//!   [`Integration::clean`] tidy up; [`Integration::apply`] fast-forwards
//!   the user's branch to the result when nothing moved meanwhile; on a
//!   shadow repository, it writes the result into the folder as files
//!   (added, modified, deleted, modes, symlinks) when the folder's files
//!   are still the ones the session started from, and names the changed
//!   files otherwise.
//!
//! On disk:
//!
//! | what | where |
//! | --- | --- |
//! | integration branch | `refs/heads/wavecrew/<session-id>` |
//! | task branches | `refs/heads/wavecrew-tasks/<session-id>/<task>/<attempt>` (not under `wavecrew/<session-id>/`: git cannot have a ref and a folder of refs of one name) |
//! | worktrees | `<parent>/<project>.wavecrew/<session-id>/slots/<n>/` (an attempt's, found again by its branch; detached when pooled) and `…/.detached/<name>/` (recorded in `integration.json` at the start; inside `<git-common-dir>/wavecrew/worktrees/` for a shadow repository, a parent that cannot be written, or a session started before) |
//! | shadow repository (a folder without git) | `state_dir/shadow.git` (bare; its git common dir, so its worktrees are inside it), `…/wavecrew-shadow.json` (the folder it tracks, what it leaves out and ignores), `…/info/exclude` (the `copy` paths), branch `refs/heads/project` (the folder's snapshot, the session's start) |
//! | state | `state_dir/integration.json` (`"shadow": true` on a shadow repository), `state_dir/worktrees/<task>/<attempt>.json` (each attempt's base), `…/<attempt>.resetting` (while a pooled worktree taken over for it is reset), `…/<attempt>.lock` (held while the attempt's record and branch are made) |
//! | locks | `state_dir/land.lock` (start and the merge queue), `state_dir/worktrees.lock`, `state_dir/shadow.lock` (making the shadow) |
//! | what landed | the `Wavecrew-Task: <session-id>/<task>` trailers on the integration branch |
//!
//! Ground rules: every git call goes through the one runner of
//! `wavecrew_sys::git` (an argv, never a shell, hooks and the fsmonitor
//! off) with the repository-redirecting variables removed (a shadow's git dir and work
//! tree are passed as `--git-dir`/`--work-tree` arguments instead); every ref change is a
//! compare-and-swap `git update-ref <ref> <new> <old>`; every state file is
//! written atomically; every id that becomes a ref or a path is checked
//! (`git check-ref-format` rules on top of wavecrew's id rule). Commits use
//! the repository's `user.name`/`user.email` and, where one is not set,
//! `wavecrew` / `wavecrew@localhost` ([`FALLBACK_NAME`], [`FALLBACK_EMAIL`]);
//! they run no hooks and are not signed. Nothing ever checks out a merge, so
//! no repository is left mid-merge or mid-rebase.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use wavecrew_isolation::{Integration, Landing, Repo};
//! use wavecrew_sys::git::git;
//!
//! let dir = tempfile::tempdir()?;
//! git(dir.path()).args(["init", "-q"]).run()?;
//! std::fs::write(dir.path().join("README"), "hello\n")?;
//! git(dir.path()).args(["add", "README"]).run()?;
//! git(dir.path()).identity("a", "a@b").args(["commit", "-qm", "first"]).run()?;
//!
//! let repo = Repo::open(dir.path())?.expect("a git work tree");
//! let state = dir.path().join(".workflow/isolation");
//! let session = Integration::start(&repo, "S-1", &[".workflow"], &state)?;
//! let wt = session.open_worktree("IMPL-001", 1, &[])?;
//! std::fs::write(wt.path.join("hello.txt"), "hi\n")?;
//! assert_eq!(session.changed_files(&wt)?, ["hello.txt"]);
//! session.commit(&wt, "IMPL-001", "Write hello.txt")?;
//! assert!(matches!(session.land(&wt, "IMPL-001")?, Landing::FastForward { .. }));
//! assert!(matches!(session.land(&wt, "IMPL-001")?, Landing::AlreadyMerged { .. }));
//! assert!(session.merged_tasks()?.contains_key("IMPL-001"));
//! session.clean()?;
//! # Ok(())
//! # }
//! ```

mod bundle;
mod error;
mod git;
mod guard;
mod ids;
mod inspect;
mod integration;
mod land;
mod layout;
mod lock;
mod pool;
mod repo;
mod shadow;
mod verify;
mod worktree;

pub use bundle::Bundled;
pub use error::{IsolationError, Result};
pub use guard::RepoGuard;
pub use inspect::{Inspection, LandedTask};
pub use integration::{
    Applied, AppliedFiles, BRANCH_PREFIX, Integration, STATE_FILE, TRAILER, WORKTREES_SUFFIX,
    worktree_path, worktrees_dir,
};
pub use land::{Landing, Upstream, Work};
pub use layout::{TASK_BRANCH_PREFIX, Worktree};
pub use pool::{POOL_MAX, SLOTS_DIR};
pub use repo::{FALLBACK_EMAIL, FALLBACK_NAME, Repo};
pub use shadow::{SHADOW_BRANCH, SHADOW_DIR, shadow_worktree_path};
pub use verify::{Verdict, Verify};
pub use worktree::DETACHED_DIR;
