//! A task's work on its way in: the commit in its worktree, the files it
//! changed, and the merge queue that lands its branch on the integration
//! branch exactly once.
//!
//! No checkout-based merge is ever run: a landing is `git merge-tree
//! --write-tree` (or a fast-forward), `git commit-tree` and a
//! compare-and-swap `git update-ref`, so neither the user's repository nor
//! a worktree is ever left mid-merge.

use std::collections::BTreeSet;

use crate::error::{IsolationError, Result};
use crate::git::{self, git};
use crate::integration::{Integration, LAND_LOCK, TRAILER};
use crate::layout::{TASK_BRANCH_PREFIX, Worktree, canon};
use crate::lock::lock;
use crate::verify::{Verdict, Verify};
use wavecrew_sys::git::TreeStatus;

/// What a landing lands: a task's worktree (its uncommitted work is
/// committed on its branch first, with `message`), or a reference holding
/// commits made elsewhere (an attempt that ran on another host, a branch a
/// person approved), named `label` in the merge commit's subject.
#[derive(Debug, Clone, Copy)]
pub enum Work<'a> {
    /// A task's worktree of this integration branch.
    Worktree {
        /// The worktree.
        worktree: &'a Worktree,
        /// The subject of the commit of its uncommitted work.
        message: &'a str,
    },
    /// A full reference name (`refs/…`) holding the task's commits.
    Ref {
        /// The reference.
        reference: &'a str,
        /// What the merge commit calls the work.
        label: &'a str,
    },
}

impl Landing {
    /// The commit that holds the task's work on the integration branch
    /// (new, or an earlier landing's); `None` when nothing landed.
    pub fn commit(&self) -> Option<&str> {
        match self {
            Landing::FastForward { commit }
            | Landing::Merged { commit }
            | Landing::AlreadyMerged { commit } => Some(commit),
            _ => None,
        }
    }

    /// Why nothing landed, when the queue refused the work: the bus
    /// record's type (`merge_conflict`, `merge_rejected`) and one line
    /// saying why.
    pub fn refusal(&self) -> Option<(&'static str, String)> {
        match self {
            Landing::Conflict { files, .. } => Some((
                "merge_conflict",
                format!("conflicts with landed work in {}", files.join(", ")),
            )),
            Landing::Rejected {
                command, output, ..
            } => Some((
                "merge_rejected",
                format!(
                    "the merged result failed `{command}` ([integration] verify): {}",
                    output.lines().last().unwrap_or_default()
                ),
            )),
            _ => None,
        }
    }
}

/// How many times a landing retries after losing the compare-and-swap.
const MAX_TRIES: u32 = 50;

/// What [`Integration::land`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// The integration branch had not moved since the task's base: it now
    /// points at the task's last commit.
    FastForward {
        /// The new integration tip.
        commit: String,
    },
    /// A merge commit (integration tip and task branch as parents) carrying
    /// the task's trailer.
    Merged {
        /// The merge commit, the new integration tip.
        commit: String,
    },
    /// A commit on the integration branch already carries this task's
    /// trailer: nothing was done (never lands twice).
    AlreadyMerged {
        /// The commit that landed the task.
        commit: String,
    },
    /// The task's branch has nothing the integration branch lacks.
    NothingToLand,
    /// The task's changes conflict with what landed since its base; the
    /// integration branch is unchanged.
    Conflict {
        /// The conflicted files.
        files: Vec<String>,
        /// git's messages (`CONFLICT (content): Merge conflict in …`).
        messages: String,
        /// The integration commits since the task's base that touched the
        /// conflicted files, newest first.
        upstream: Vec<Upstream>,
    },
    /// The merged result failed its check (`[integration] verify`); the
    /// integration branch is unchanged.
    Rejected {
        /// The candidate that failed.
        commit: String,
        /// The check's command line (`[integration] verify`), when the
        /// landing was given one.
        command: String,
        /// What the check said.
        output: String,
    },
}

/// A commit that landed since a task's base and touched a file the task
/// conflicts on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Upstream {
    /// The commit.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// The task that landed it (its `Wavecrew-Task` trailer in this
    /// session), when it has one.
    pub task: Option<String>,
}

impl Integration {
    /// Check that `wt` is a task worktree of this session for `task`.
    fn check_task_worktree(&self, wt: &Worktree, task: &str) -> Result<()> {
        let bad = |message: String| {
            Err(IsolationError::BadWorktree {
                path: wt.path.clone(),
                message,
            })
        };
        if wt.is_detached() {
            return bad("it is a read-only worktree without a branch; expected a task's".into());
        }
        if wt.task != task {
            return bad(format!(
                "it belongs to task `{}`; expected `{task}`",
                wt.task
            ));
        }
        let prefix = format!("{TASK_BRANCH_PREFIX}{}/{task}/", self.session_id());
        if !wt.branch.starts_with(&prefix) {
            return bad(format!(
                "its branch is `{}`; expected one under `{prefix}`",
                wt.branch
            ));
        }
        Ok(())
    }

    /// Commit everything changed in the worktree (`git add --all` there);
    /// the commit carries the trailer `Wavecrew-Task: <session-id>/<task>`.
    /// Ok(None) when nothing changed. No hooks run and nothing is signed.
    ///
    /// An agent that switched to a branch of its own (or a detached HEAD)
    /// has its commits taken when they descend from the task branch (see
    /// `take_own_history`); otherwise this fails naming where they are.
    pub fn commit(&self, wt: &Worktree, task: &str, message: &str) -> Result<Option<String>> {
        self.commit_on_branch(wt, task, message)
            .map(|(commit, _)| commit)
    }

    /// [`Integration::commit`], then [`Integration::land_checked`]. A
    /// branch that adds nothing to its base (nothing to commit, and no
    /// commit of the agent's own) has nothing to land: it does not wait
    /// for the queue ([`Landing::NothingToLand`]).
    pub fn commit_and_land(
        &self,
        wt: &Worktree,
        task: &str,
        message: &str,
        check: &mut dyn FnMut(&Integration, &str) -> Result<Verdict>,
    ) -> Result<Landing> {
        let (commit, head) = self.commit_on_branch(wt, task, message)?;
        if commit.is_none() && head == wt.base {
            return Ok(Landing::NothingToLand);
        }
        self.land_checked(wt, task, check)
    }

    /// The tree of `commit`.
    pub fn tree_id(&self, commit: &str) -> Result<String> {
        self.repo.tree_of(commit)
    }

    /// The files that differ between the commits `from` and `to`
    /// (project-relative, renames as a removal and an addition).
    pub fn changed_between(&self, from: &str, to: &str) -> Result<Vec<String>> {
        let out = self
            .repo
            .git()
            .args(["diff", "--name-only", "--no-renames", "-z", from, to, "--"])
            .run()?;
        Ok(git::split_nul(&out))
    }

    /// The commit, and the branch's commit before it.
    fn commit_on_branch(
        &self,
        wt: &Worktree,
        task: &str,
        message: &str,
    ) -> Result<(Option<String>, String)> {
        self.check_task_worktree(wt, task)?;
        let reference = format!("refs/heads/{}", wt.branch);
        // One walk of the tree says where HEAD is and whether anything
        // changed: a worktree still on its branch at its base with nothing
        // changed or untracked outside the session's `exclude` has nothing
        // to commit (what follows would stage only excluded paths, put them
        // back as the base has them, and write the base's tree).
        let status = TreeStatus::read_pinned(&self.pinned_work_tree(&wt.path)?)?;
        match status.branch.as_deref() {
            Some(on) if on == reference => {
                if status.head.as_deref() == Some(wt.base.as_str())
                    && status.paths().all(|p| self.excluded(p))
                {
                    return Ok((None, wt.base.clone()));
                }
            }
            on => self.take_own_history(wt, &reference, on.unwrap_or_default())?,
        }
        self.git_in_worktree(&wt.path)?
            .args(["add", "--all", "--", "."])
            .run()?;
        // The session folder (linked in, see `link_session`) is never work:
        // put back as the task's base has it (an exclude pathspec would
        // fail on an ignored one), also when the agent committed it itself
        // (`git add -A`): nothing of wavecrew's ever lands.
        if !self.state.exclude.is_empty() {
            self.git_in_worktree(&wt.path)?
                .args(["reset", "--quiet", &wt.base, "--"])
                .args(self.state.exclude.iter().map(|x| format!(":(literal){x}")))
                .run()?;
        }
        let tree = self.git_in_worktree(&wt.path)?.arg("write-tree").text()?;
        let (head, head_tree) = self.repo.commit_and_tree(&reference)?;
        if tree == head_tree {
            return Ok((None, head));
        }
        let commit = self
            .repo
            .commit_tree(&tree, &[&head], &self.with_trailer(message, task))?;
        let reason = format!("wavecrew: commit task {task}");
        if !self.repo.update_ref(&reference, &commit, &head, &reason)? {
            return Err(IsolationError::Contended {
                reference,
                attempts: 1,
            });
        }
        Ok((Some(commit), head))
    }

    /// The agent left its task branch (`on`: the branch it switched to, or
    /// empty for a detached HEAD): when what it committed descends from
    /// the task branch, the task branch moves there (compare-and-swap) and
    /// the worktree is put back on it, so the work lands; otherwise the
    /// error names where the work is and how to take it.
    fn take_own_history(&self, wt: &Worktree, reference: &str, on: &str) -> Result<()> {
        let head = self
            .git_in_worktree(&wt.path)?
            .args(["rev-parse", "--verify", "HEAD^{commit}"])
            .text()?;
        let tip = self.repo.must_resolve(reference)?;
        let shown = if on.is_empty() {
            format!("a detached HEAD at {}", &head[..head.len().min(12)])
        } else {
            format!("`{}`", on.trim_start_matches("refs/heads/"))
        };
        if !self.repo.is_ancestor(&tip, &head)? {
            return Err(IsolationError::BadWorktree {
                path: wt.path.clone(),
                message: format!(
                    "the agent committed on {shown}, which does not descend from the task's \
                     branch `{}`: its work is there; take it with `git cherry-pick {}..{}`",
                    wt.branch,
                    &wt.base[..wt.base.len().min(12)],
                    if on.is_empty() {
                        &head
                    } else {
                        on.trim_start_matches("refs/heads/")
                    }
                ),
            });
        }
        if head != tip
            && !self
                .repo
                .update_ref(reference, &head, &tip, "wavecrew: the agent's own commits")?
        {
            return Err(IsolationError::Contended {
                reference: reference.to_owned(),
                attempts: 1,
            });
        }
        self.git_in_worktree(&wt.path)?
            .args(["symbolic-ref", "HEAD", reference])
            .run()?;
        Ok(())
    }

    /// Files the task changed against its base, committed and not
    /// (tracked changes, deletions, untracked files that are not ignored),
    /// sorted: exactly this worktree's, never a neighbour's.
    ///
    /// While the worktree's HEAD is still its base (the agent made no
    /// commit, the usual case), one `git status` walks the tree once and
    /// says both what HEAD is and what changed; otherwise the branch's diff
    /// against its base and the untracked files are read apart.
    pub fn changed_files(&self, wt: &Worktree) -> Result<Vec<String>> {
        self.changed_files_seen(wt, None)
    }

    /// [`Integration::changed_files`], from `seen` when it is given: the
    /// worktree's status read since the last change to it (the snapshot
    /// taken as the agent ended), so git is not asked again. A status of
    /// another work tree (an agent working in a nested repository) is not
    /// used.
    pub fn changed_files_seen(
        &self,
        wt: &Worktree,
        seen: Option<&TreeStatus>,
    ) -> Result<Vec<String>> {
        let read;
        let status = if let Some(status) = seen.filter(|s| canon(&s.top) == canon(&wt.path)) {
            status
        } else {
            read = TreeStatus::read_pinned(&self.pinned_work_tree(&wt.path)?)?;
            &read
        };
        let listed: Vec<String> = if status.head.as_deref() == Some(wt.base.as_str()) {
            status.paths().map(str::to_owned).collect()
        } else {
            let diff = self
                .git_in_worktree(&wt.path)?
                .args([
                    "diff",
                    "--name-only",
                    "-z",
                    "--no-renames",
                    "--no-ext-diff",
                    "--end-of-options",
                    &wt.base,
                    "--",
                ])
                .run()?;
            let untracked = self
                .git_in_worktree(&wt.path)?
                .args(["ls-files", "--others", "--exclude-standard", "-z"])
                .run()?;
            git::split_nul(&diff)
                .into_iter()
                .chain(git::split_nul(&untracked))
                .collect()
        };
        let files: BTreeSet<String> = listed.into_iter().filter(|f| !self.excluded(f)).collect();
        Ok(files.into_iter().collect())
    }

    /// The one landing entry point, for every role, a person's approval and
    /// the coordinator over hosts: `work` through the merge queue, each
    /// merge candidate checked with `verify` (`[integration] verify`) in a
    /// worktree of it first; a failure lands nothing
    /// ([`Landing::Rejected`], with the command).
    pub fn land_work(
        &self,
        work: Work<'_>,
        task: &str,
        verify: Option<&Verify>,
    ) -> Result<Landing> {
        let log = self.state_dir.join("verify.log");
        let mut check = |i: &Integration, candidate: &str| {
            let Some(verify) = verify else {
                return Ok(Verdict::Pass);
            };
            let wt = i.candidate_worktree(candidate, &verify.copy)?;
            Ok(verify.run(&wt.path, &log))
        };
        let landing = match work {
            Work::Worktree { worktree, message } => {
                self.commit_and_land(worktree, task, message, &mut check)?
            }
            Work::Ref { reference, label } => self.land_ref(reference, label, task, &mut check)?,
        };
        Ok(match landing {
            Landing::Rejected { commit, output, .. } => Landing::Rejected {
                commit,
                command: verify.map(Verify::display).unwrap_or_default(),
                output,
            },
            other => other,
        })
    }

    /// The merge queue: land the worktree's branch on the integration
    /// branch, one landing at a time (an exclusive lock on
    /// `state_dir/land.lock`, across threads and processes).
    ///
    /// - a commit on the integration branch carries this task's trailer →
    ///   [`Landing::AlreadyMerged`] (also after a crash right after the
    ///   ref moved). A task lands once per session, whichever attempt;
    /// - the branch adds nothing → [`Landing::NothingToLand`];
    /// - the tip is the branch's base and the branch's last commit carries
    ///   the trailer → [`Landing::FastForward`] (a branch whose last commit
    ///   lacks it, an agent's own commit, gets a merge commit instead, so
    ///   the landing is always recorded);
    /// - otherwise `git merge-tree --write-tree <tip> <branch>`: clean → a
    ///   merge commit with both parents and the trailer
    ///   ([`Landing::Merged`]); conflict → [`Landing::Conflict`] and the
    ///   integration branch is unchanged.
    ///
    /// The branch moves with a compare-and-swap `git update-ref`; a lost
    /// swap starts again from the new tip. Uncommitted changes in the
    /// worktree are not landed: call [`Integration::commit`] first.
    pub fn land(&self, wt: &Worktree, task: &str) -> Result<Landing> {
        self.land_checked(wt, task, &mut |_, _| Ok(Verdict::Pass))
    }

    /// [`Integration::land`], with `check` run on each merge candidate
    /// (the commit the branch would move to) inside the queue's lock,
    /// before the branch moves: [`Verdict::Fail`] →
    /// [`Landing::Rejected`] and nothing lands.
    /// [`Integration::candidate_worktree`] gives a worktree of it.
    pub fn land_checked(
        &self,
        wt: &Worktree,
        task: &str,
        check: &mut dyn FnMut(&Integration, &str) -> Result<Verdict>,
    ) -> Result<Landing> {
        self.check_task_worktree(wt, task)?;
        let task_ref = format!("refs/heads/{}", wt.branch);
        self.land_reference(&task_ref, &wt.branch, task, check)
    }

    /// The merge queue for work that did not come from a worktree of this
    /// repository: `reference` (a full ref name, `refs/…`) holds the task's
    /// commits, made from some earlier integration tip (an attempt that ran
    /// on another host and came back as a bundle). Lands as
    /// [`Integration::land_checked`] does; `label` names the work in the
    /// merge commit's subject.
    pub fn land_ref(
        &self,
        reference: &str,
        label: &str,
        task: &str,
        check: &mut dyn FnMut(&Integration, &str) -> Result<Verdict>,
    ) -> Result<Landing> {
        self.repo.check_ref_name(reference)?;
        crate::ids::check_id("task", task)?;
        self.land_reference(reference, label, task, check)
    }

    fn land_reference(
        &self,
        task_ref: &str,
        label: &str,
        task: &str,
        check: &mut dyn FnMut(&Integration, &str) -> Result<Verdict>,
    ) -> Result<Landing> {
        let _guard = lock(&self.state_dir.join(LAND_LOCK))?;
        let integration = self.reference();
        // A process killed inside `git update-ref` leaves the ref's lock
        // file, and every later landing would fail on it. Only the queue
        // moves this ref, and the queue is ours now: it is stale.
        let stale = self.repo.common_dir().join(format!("{integration}.lock"));
        if stale.is_file() {
            std::fs::remove_file(&stale).map_err(|e| IsolationError::io("removing", &stale, e))?;
        }
        for _ in 0..MAX_TRIES {
            let tip = self.tip()?;
            if let Some(commit) = self.merged_tasks_at(&tip)?.remove(task) {
                return Ok(Landing::AlreadyMerged { commit });
            }
            let head = self.repo.must_resolve(task_ref)?;
            if self.repo.is_ancestor(&head, &tip)? {
                return Ok(Landing::NothingToLand);
            }
            let message = self.with_trailer(&format!("wavecrew: land task {task} ({label})"), task);
            let (new, landing): (String, fn(String) -> Landing) =
                if self.repo.is_ancestor(&tip, &head)? {
                    if self.carries_trailer(&head, task)? {
                        (head.clone(), |commit| Landing::FastForward { commit })
                    } else {
                        let tree = self.repo.tree_of(&head)?;
                        let merge = self.repo.commit_tree(&tree, &[&tip, &head], &message)?;
                        (merge, |commit| Landing::Merged { commit })
                    }
                } else {
                    match self.merge_tree(&tip, &head)? {
                        Ok(tree) => {
                            let merge = self.repo.commit_tree(&tree, &[&tip, &head], &message)?;
                            (merge, |commit| Landing::Merged { commit })
                        }
                        Err(conflict) => return Ok(conflict),
                    }
                };
            if let Verdict::Fail(output) = check(self, &new)? {
                return Ok(Landing::Rejected {
                    commit: new,
                    command: String::new(),
                    output,
                });
            }
            let reason = format!("wavecrew: land task {task}");
            if self.repo.update_ref(&integration, &new, &tip, &reason)? {
                return Ok(landing(new));
            }
        }
        Err(IsolationError::Contended {
            reference: integration,
            attempts: MAX_TRIES,
        })
    }

    /// Whether `commit`'s message carries this task's trailer.
    fn carries_trailer(&self, commit: &str, task: &str) -> Result<bool> {
        let format = format!("--format=%(trailers:key={TRAILER},valueonly)");
        let out = git(self.repo.top())
            .args(["log", "-1", &format, "--end-of-options", commit, "--"])
            .text()?;
        let want = self.trailer_value(task);
        Ok(out.lines().any(|v| v.trim() == want))
    }

    /// `git merge-tree --write-tree <tip> <head>`: Ok(Ok(tree)) when clean,
    /// Ok(Err(Landing::Conflict)) when not.
    fn merge_tree(&self, tip: &str, head: &str) -> Result<Result<String, Landing>> {
        let top = self.repo.top();
        let (line, out) = git(top)
            .args(["merge-tree", "--write-tree", "--name-only", "-z", tip, head])
            .output()?;
        let fields = git::split_nul(&out.stdout);
        let tree = fields.first().cloned().unwrap_or_default();
        match out.status.code() {
            Some(0) if !tree.is_empty() => return Ok(Ok(tree)),
            Some(1) => {}
            _ => return Err(git::failed(line, &out)),
        }
        let (files, messages) = parse_conflict(&fields);
        let base = git(top).args(["merge-base", tip, head]).text()?;
        let base = base.lines().next().unwrap_or_default().to_owned();
        let mut upstream = Vec::new();
        if !files.is_empty() {
            let range = format!("^{base}");
            let format = format!("--format=%x1e%H%x1f%s%x1f%(trailers:key={TRAILER},valueonly)");
            let out = git(top)
                .args(["--literal-pathspecs", "log", &format, tip, &range, "--"])
                .args(&files)
                .run()?;
            let prefix = format!("{}/", self.session_id());
            for record in String::from_utf8_lossy(&out).split('\x1e') {
                let mut fields = record.split('\x1f');
                let (Some(commit), Some(subject), trailers) =
                    (fields.next(), fields.next(), fields.next().unwrap_or(""))
                else {
                    continue;
                };
                upstream.push(Upstream {
                    commit: commit.trim().to_owned(),
                    subject: subject.trim().to_owned(),
                    task: trailers
                        .lines()
                        .find_map(|v| v.trim().strip_prefix(&prefix).map(str::to_owned)),
                });
            }
        }
        Ok(Err(Landing::Conflict {
            files,
            messages,
            upstream,
        }))
    }
}

/// The conflicted files and the messages of `merge-tree --name-only -z`
/// output: `<tree> NUL (<file> NUL)* NUL (<n> NUL (<path> NUL){n} <type> NUL <message> NUL)*`.
fn parse_conflict(fields: &[String]) -> (Vec<String>, String) {
    let mut files = BTreeSet::new();
    let mut i = 1;
    while i < fields.len() && !fields[i].is_empty() {
        files.insert(fields[i].clone());
        i += 1;
    }
    i += 1;
    let mut messages = String::new();
    while i < fields.len() {
        let Ok(n) = fields[i].parse::<usize>() else {
            // Not the shape documented: keep the rest as text.
            messages.push_str(&fields[i..].join("\n"));
            break;
        };
        if let Some(m) = fields.get(i + 2 + n) {
            messages.push_str(m);
            if !m.ends_with('\n') {
                messages.push('\n');
            }
        }
        i += 3 + n;
    }
    (files.into_iter().collect(), messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_output() {
        let raw = "bccc\0f\0\x001\0f\0Auto-merging\0Auto-merging f\n\x001\0f\0CONFLICT (contents)\0CONFLICT (content): Merge conflict in f\n\0";
        let fields = git::split_nul(raw.as_bytes());
        let (files, messages) = parse_conflict(&fields);
        assert_eq!(files, ["f"]);
        assert_eq!(
            messages,
            "Auto-merging f\nCONFLICT (content): Merge conflict in f\n"
        );
    }
}
