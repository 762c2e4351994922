//! Where a writing task's agent works, and how its work lands.
//!
//! With `[isolation] mode = "worktree"` (the default) in a git work tree,
//! each claim of a task gets a git worktree of its own, on a branch from the
//! session's integration branch (`wavecrew/<session-id>`), in a folder
//! wavecrew owns inside the git directory: the agent, the validation and the
//! review run there, the files it changed are the diff of its branch, and
//! the work lands on the integration branch through the merge queue
//! (`wavecrew-isolation`). The user's branch and files are never touched.
//! A folder that is not a git work tree works the same way through a shadow
//! repository kept in the session folder (`<session>/shadow.git`): the
//! project gets no `.git`, and `--apply` writes the result back as files.
//! In place (`mode = "in-place"`), the agent works in the project folder.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use wavecrew_core::bus::NewMessage;

use wavecrew_backends::config::IsolationMode;
use wavecrew_core::role::PhaseError;
use wavecrew_core::{Task, TaskStatus};
pub use wavecrew_isolation::Verify;
use wavecrew_isolation::{Integration, Landing, Repo, Upstream, Work, Worktree};

use crate::context::RoleContext;
use crate::report::ReportBuilder;

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
        upstream: Vec<Upstream>,
    },
    /// The merged result failed `[integration] verify`: nothing landed.
    Rejected {
        /// The command.
        command: String,
        /// What it said.
        output: String,
    },
}

impl From<Landing> for Landed {
    /// What the merge queue did, as a role sees it.
    fn from(landing: Landing) -> Self {
        match landing {
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
            Landing::Rejected {
                command, output, ..
            } => Landed::Rejected { command, output },
        }
    }
}

/// `[integration] verify` of `config` for the project at `project`, ready
/// to run on merge candidates (in the checks' box), when it names a
/// command.
pub fn verify_of(config: &wavecrew_backends::config::Config, project: &Path) -> Option<Verify> {
    let integration = &config.integration;
    let argv = integration.verify.as_ref()?.argv().ok()?;
    Some(Verify {
        argv,
        timeout: std::time::Duration::from_secs(integration.verify_timeout_secs),
        copy: config.isolation.copy.clone(),
        confined: wavecrew_backends::confine::command_box(config, project),
    })
}

impl Landed {
    /// A conflict as task results and bus records carry it: `files`,
    /// `messages`, `upstream` (commit, subject, task) and `with` (the
    /// tasks); `None` for anything else.
    pub fn conflict_json(&self) -> Option<Value> {
        let Landed::Conflict {
            files,
            messages,
            upstream,
        } = self
        else {
            return None;
        };
        Some(json!({
            "files": files, "messages": messages, "upstream": upstream,
            "with": self.conflicting_tasks(),
        }))
    }

    /// What a revision's agent is told about a conflict: the files, git's
    /// messages, the commits that landed on them, and where its first
    /// version is.
    pub fn conflict_brief(&self, first: &Workspace) -> Option<String> {
        let Landed::Conflict {
            files,
            messages,
            upstream,
        } = self
        else {
            return None;
        };
        let mut text = String::from("Conflicted files:\n");
        for f in files {
            let _ = writeln!(text, "- {f}");
        }
        if !messages.trim().is_empty() {
            let _ = write!(text, "\ngit says:\n{}\n", messages.trim_end());
        }
        if !upstream.is_empty() {
            text.push_str(
                "\nWork that landed since your first version started and touched them:\n",
            );
            for u in upstream {
                let short = u.commit.get(..10).unwrap_or(&u.commit);
                let _ = match &u.task {
                    Some(t) => writeln!(text, "- {short} {} (task {t})", u.subject),
                    None => writeln!(text, "- {short} {}", u.subject),
                };
            }
        }
        if let Some((branch, base)) = first.branch() {
            let short = base.get(..10).unwrap_or(base);
            let _ = write!(
                text,
                "\nYour first version is on the branch {branch}: `git diff {short} {branch}` shows what it changed.\n"
            );
        }
        Some(text)
    }

    /// The tasks a conflict is with (from the landed commits' trailers).
    pub fn conflicting_tasks(&self) -> Vec<String> {
        let Landed::Conflict { upstream, .. } = self else {
            return Vec::new();
        };
        let mut tasks: Vec<String> = upstream.iter().filter_map(|u| u.task.clone()).collect();
        tasks.sort();
        tasks.dedup();
        tasks
    }
}

impl Landed {
    /// What a revision after a failed `[integration] verify` is told as its
    /// previous error; `None` for anything else.
    pub fn rejection_brief(&self) -> Option<String> {
        let Landed::Rejected { command, output } = self else {
            return None;
        };
        Some(format!(
            "your work, merged with the integration branch, failed `{command}` \
             (the session's [integration] verify), so it did not land. \
             This worktree holds the integration branch as it is now; \
             make the task's change so that the merged result passes.\n{output}"
        ))
    }

    /// The report of a task whose revision did not land either (`self` is
    /// the second landing): `blocked` for a person after a second conflict,
    /// naming the other tasks and the files; failed after a second rejected
    /// verify, with its output. `earlier` are the first landing's conflicts
    /// as [`Landed::conflict_json`] gives them; `kind` is the role's
    /// failure record (`task_failed`, `impl_failed`).
    pub fn unlanded_report(
        &self,
        kind: &str,
        task: &Task,
        workspace: &Workspace,
        earlier: &[Value],
    ) -> ReportBuilder {
        let (branch, base) = workspace.branch().unzip();
        if let Landed::Rejected { command, output } = self {
            return ReportBuilder::new(TaskStatus::Failed, kind, task)
                .field(
                    "error",
                    format!("after one revision the merged result still fails `{command}`"),
                )
                .field("verify", json!({"command": command, "output": output}))
                .field("retry_count", task.attempts)
                .field("branch", branch)
                .summary(format!(
                    "{} not merged: the merged result fails `{command}`",
                    task.id.as_str()
                ));
        }
        let second = self.conflict_json().unwrap_or_default();
        let with = self.conflicting_tasks();
        let with = if with.is_empty() {
            "work landed meanwhile".to_owned()
        } else {
            with.join(", ")
        };
        let files = match self {
            Landed::Conflict { files, .. } => files.join(", "),
            _ => String::new(),
        };
        ReportBuilder::new(TaskStatus::Blocked, kind, task)
            .field(
                "error",
                format!(
                    "blocked: after one revision its work still conflicts with {with} in {files}; \
                     a person must merge the branch {} by hand",
                    branch.unwrap_or("of the task")
                ),
            )
            .field("status", "blocked")
            .field("conflict", &second)
            .field(
                "conflicts",
                earlier.iter().chain([&second]).collect::<Vec<_>>(),
            )
            .field("retry_count", task.attempts)
            .field("branch", branch)
            .field("base", base)
            .summary(format!(
                "{} blocked: conflicts with {with} in {files}",
                task.id.as_str()
            ))
    }
}

fn phase(what: &str, e: impl std::fmt::Display) -> PhaseError {
    PhaseError::workspace(format!("{what}: {e}"))
}

impl RoleContext {
    /// The session's integration branch (started at the first call, resumed
    /// after), or `None` in place (`[isolation] mode = "in-place"`).
    pub fn integration(&self) -> Result<Option<Integration>, PhaseError> {
        Ok(self.integration_at_tip()?.map(|(opened, _)| opened))
    }

    /// [`RoleContext::integration`], with the integration tip read while
    /// opening it when this call opened it (the process's first): the
    /// base of a worktree opened next, which then need not read it again.
    /// `None` when it was open already: work may have landed since.
    fn integration_at_tip(&self) -> Result<Option<(Integration, Option<String>)>, PhaseError> {
        if self.config.isolation.mode == IsolationMode::InPlace {
            return Ok(None);
        }
        if let Some(opened) = self.integration.get() {
            return Ok(Some((opened.clone(), None)));
        }
        let repo = Repo::open(&self.project_root).map_err(|e| phase("git", e))?;
        Repo::check_git_version().map_err(|e| phase("isolation", e))?;
        let top = match &repo {
            Some(repo) => repo.work_tree().to_owned(),
            None => self
                .project_root
                .canonicalize()
                .unwrap_or_else(|_| self.project_root.clone()),
        };
        // The session folder is shared state in the main checkout: never
        // part of the work.
        let session_dir = self
            .session_dir
            .canonicalize()
            .unwrap_or_else(|_| self.session_dir.clone());
        let exclude = session_dir
            .strip_prefix(&top)
            .ok()
            .and_then(|rel| rel.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        let exclude: Vec<&str> = exclude.iter().map(String::as_str).collect();
        let repo = match repo {
            Some(repo) => repo,
            // Not a git work tree: a shadow repository in the session folder.
            None => Repo::shadow(
                &self.project_root,
                &self.session_dir,
                &exclude,
                &self.config.isolation.copy,
            )
            .map_err(|e| phase("the shadow repository", e))?,
        };
        let (opened, tip) =
            Integration::start_at_tip(&repo, &self.session_name(), &exclude, &self.session_dir)
                .map_err(|e| phase("the integration branch", e))?;
        Ok(Some((
            self.integration.get_or_init(|| opened).clone(),
            Some(tip),
        )))
    }

    /// The workspace of `task`'s claim number `claim`: its own worktree
    /// (see the module's notes) from the integration tip, or the project
    /// folder.
    pub fn workspace(&self, task: &Task, claim: u32) -> Result<Workspace, PhaseError> {
        self.workspace_from(task, claim, false)
    }

    /// [`RoleContext::workspace`] for a role whose tasks wait only for the
    /// tasks their `blockedBy` names (the executor, a role known by its
    /// `.md`: the dispatcher's graph is the whole order): the first attempt
    /// of a task that depends on none starts from the session's base
    /// unless landed work touched its declared files (see `first_start`).
    /// Roles with an order of their own (roadmap phases and waves, planex's
    /// queue) use [`RoleContext::workspace`].
    pub fn workspace_by_graph(&self, task: &Task, claim: u32) -> Result<Workspace, PhaseError> {
        self.workspace_from(task, claim, true)
    }

    fn workspace_from(
        &self,
        task: &Task,
        claim: u32,
        by_graph: bool,
    ) -> Result<Workspace, PhaseError> {
        let Some((integration, tip)) = self.integration_at_tip()? else {
            return Ok(Workspace::InPlace {
                dir: self.project_root.clone(),
            });
        };
        // A first attempt may start from the session's base; a retry or a
        // revision starts from the tip (it must meet what landed).
        let start = if by_graph && claim.max(1) == 1 {
            Self::first_start(&integration, task, tip)?
        } else {
            tip
        };
        let mut worktree = integration
            .open_worktree_at(
                task.id.as_str(),
                claim.max(1),
                &self.config.isolation.copy,
                start,
            )
            .map_err(|e| phase("the task's worktree", e))?;
        let seeded = integration
            .seed_build_state(
                &worktree,
                &self.config.isolation.seed,
                self.config.isolation.seed_max_mb.saturating_mul(1 << 20),
            )
            .map_err(|e| phase("seeding the task's worktree", e))?;
        worktree.build_state.extend(seeded);
        self.set_up(&integration, task, claim.max(1), &mut worktree)?;
        Ok(Workspace::Isolated {
            integration: Box::new(integration),
            worktree,
        })
    }

    /// Where the first attempt of `task` starts (`tip`: the integration
    /// tip read just now, when it was): the session's base for a task that
    /// depends on no other and declares files nothing that landed since
    /// touched, else the tip. Such tasks then share one base, whatever
    /// order they run in and however many slots there are: their tests are
    /// compared with one run of the base's suite ([`crate::suite`]), and
    /// each one's work does not depend on when unrelated work landed (as
    /// when they run at once); the merge queue puts them together. A task
    /// that depends on another, declares no files, or declares a file
    /// that landed work changed starts from the tip.
    fn first_start(
        integration: &Integration,
        task: &Task,
        tip: Option<String>,
    ) -> Result<Option<String>, PhaseError> {
        let declared = task.files();
        if !task.blocked_by.is_empty() || declared.is_empty() {
            return Ok(tip);
        }
        let now = match tip {
            Some(tip) => tip,
            None => integration
                .tip()
                .map_err(|e| phase("the integration branch", e))?,
        };
        let base = integration.base().to_owned();
        if now == base {
            return Ok(Some(now));
        }
        let landed = integration
            .changed_between(&base, &now)
            .map_err(|e| phase("the integration branch", e))?;
        let touched = landed.iter().any(|file| {
            declared.iter().any(|d| {
                let d = d.trim_start_matches("./").trim_end_matches('/');
                file == d
                    || file
                        .strip_prefix(d)
                        .is_some_and(|rest| rest.starts_with('/'))
                    || d.strip_prefix(file.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
        });
        Ok(Some(if touched { now } else { base }))
    }

    /// `[isolation] setup`: each command once in a new worktree, before its
    /// agent, output in `attempts/<task>/setup-<claim>.log`. A worktree
    /// set up before (a resumed attempt) is not set up again, nor a warm
    /// one whose dependency files did not change with the switch (unless
    /// `setup_again = "always"`). A command that fails is the attempt's
    /// environment error (`setup_failed`), named with its command and the
    /// end of its output.
    fn set_up(
        &self,
        integration: &Integration,
        task: &Task,
        claim: u32,
        worktree: &mut wavecrew_isolation::Worktree,
    ) -> Result<(), PhaseError> {
        let setup = &self.config.isolation.setup;
        if setup.is_empty() {
            return Ok(());
        }
        let dir = worktree.path.as_path();
        let done = integration
            .state_dir()
            .join("worktrees")
            .join(task.id.as_str())
            .join(format!("{claim}.setup-done"));
        if done.exists() {
            return Ok(());
        }
        if worktree.set_up_before
            && self.config.isolation.setup_again
                == wavecrew_backends::config::SetupAgain::WhenDependenciesChange
        {
            worktree.build_state.push(
                "setup: not run again (the warm worktree was set up by an earlier task, and no \
                 dependency file changed since)"
                    .to_owned(),
            );
            return wavecrew_core::fsutil::write_atomic(&done, b"")
                .map_err(|e| PhaseError::environment(format!("setup: {e}")));
        }
        let log = wavecrew_core::SessionLayout::new(&self.session_dir)
            .attempts(task.id.as_str())
            .join(format!("setup-{claim}.log"));
        self.run_setup(dir, &log)?;
        // Setup may change tracked files (`npm install` rewrites a lockfile).
        worktree.fresh = false;
        integration
            .record_set_up(worktree)
            .map_err(|e| phase("setup", e))?;
        wavecrew_core::fsutil::write_atomic(&done, b"")
            .map_err(|e| PhaseError::environment(format!("setup: {e}")))?;
        Ok(())
    }

    /// Run the `[isolation] setup` commands in `dir`, in order, their
    /// output appended to `log`; the first that fails is a `setup_failed`
    /// environment error naming it and the end of its output.
    pub(crate) fn run_setup(&self, dir: &Path, log: &Path) -> Result<(), PhaseError> {
        let limit = std::time::Duration::from_secs(self.config.isolation.setup_timeout_secs);
        for command in &self.config.isolation.setup {
            let argv = command.argv().map_err(|e| {
                PhaseError::environment(format!("setup_failed: [isolation] setup: {e}"))
            })?;
            let line = shell_words::join(&argv);
            let _ = append(log, &format!("$ {line}\n"));
            let end = wavecrew_sys::process::run_to_log(
                Path::new(&argv[0]),
                &argv[1..],
                dir,
                log,
                limit,
                self.command_box().as_ref(),
            );
            let how = match end {
                Ok(wavecrew_sys::process::LoggedEnd::Exited(Some(0))) => continue,
                Ok(wavecrew_sys::process::LoggedEnd::Exited(Some(code))) => {
                    format!("exited {code}")
                }
                Ok(wavecrew_sys::process::LoggedEnd::Exited(None)) => "was killed".to_owned(),
                Ok(wavecrew_sys::process::LoggedEnd::TimedOut) => {
                    format!("ran out of its {} s limit", limit.as_secs())
                }
                Err(e) => format!("could not start: {e}"),
            };
            return Err(PhaseError::environment(format!(
                "setup_failed: `{line}` {how} in the task's worktree {} (an environment \
                 problem, not the agent's: the agent did not run); its output, in {}, ends:\n{}",
                dir.display(),
                log.display(),
                log_tail(log)
            )));
        }
        Ok(())
    }

    /// Where a read-only task (analysis, review) looks: a detached worktree
    /// of the integration tip, which holds every landed dependency's work,
    /// named after the task (or the project folder in place). Nothing it
    /// leaves there lands; [`Workspace::finish`] removes it.
    pub fn read_only_workspace(&self, task: &Task) -> Result<Workspace, PhaseError> {
        let Some(integration) = self.integration()? else {
            return Ok(Workspace::InPlace {
                dir: self.project_root.clone(),
            });
        };
        let worktree = integration
            .detached_worktree(task.id.as_str())
            .map_err(|e| phase("the task's worktree", e))?;
        Ok(Workspace::Isolated {
            integration: Box::new(integration),
            worktree,
        })
    }

    /// The commit that landed `task` on the integration branch (read from
    /// its trailer), when an earlier run landed it; `None` in place.
    pub fn landed_commit(&self, task: &Task) -> Result<Option<String>, PhaseError> {
        let Some(integration) = self.integration()? else {
            return Ok(None);
        };
        integration
            .merged_tasks()
            .map(|mut merged| merged.remove(task.id.as_str()))
            .map_err(|e| phase("the integration branch", e))
    }
}

impl RoleContext {
    /// At the end of a run of this role on its own (not one task of a
    /// run): the warm pool's worktrees go (a cache for the tasks of one
    /// run; failed tasks' worktrees stay for inspection). Nothing in place;
    /// a failure is a warning.
    pub fn drain_warm_pool(&self) {
        match Integration::of_session(&self.session_dir) {
            Ok(Some(integration)) => {
                if let Err(e) = integration.drain_pool() {
                    tracing::warn!("cannot remove the warm worktrees: {e}");
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("cannot open the session's integration branch: {e}"),
        }
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
                None => wavecrew_isolation::shadow_worktree_path(
                    &self.session_dir,
                    &self.session_name(),
                    task.id.as_str(),
                    claim.max(1),
                ),
            },
        )
    }
}

impl RoleContext {
    /// Where a read-only task would look (see
    /// [`RoleContext::read_only_workspace`]), without creating anything.
    pub fn read_only_workspace_dir(&self, task: &Task) -> Result<PathBuf, PhaseError> {
        let dir = self.workspace_dir(task, 1)?;
        if self.config.isolation.mode == IsolationMode::InPlace {
            return Ok(dir);
        }
        // `<worktrees>/<task>/<claim>` → `<worktrees>/.detached/<task>`.
        Ok(match dir.parent().and_then(Path::parent) {
            Some(worktrees) => worktrees
                .join(wavecrew_isolation::DETACHED_DIR)
                .join(task.id.as_str()),
            None => dir,
        })
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

    /// Where an isolated workspace's build state came from (`[isolation]
    /// seed`), one line each; empty in place or when nothing was asked.
    pub fn build_state(&self) -> &[String] {
        match self {
            Workspace::InPlace { .. } => &[],
            Workspace::Isolated { worktree, .. } => &worktree.build_state,
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

    /// Where an isolated workspace's git is, told without a git process,
    /// while the worktree is as this workspace opened it (checked out or
    /// reset: its HEAD is its branch); `None` in place, for a worktree
    /// found again (an earlier agent may have moved its HEAD), or when the
    /// worktree cannot say (git is asked then).
    pub fn work_tree_git(&self) -> Option<wavecrew_sys::git::WorkTreeGit> {
        match self {
            Workspace::Isolated {
                integration,
                worktree,
            } if worktree.fresh => integration.work_tree_git(worktree).ok(),
            _ => None,
        }
    }

    /// Whether the workspace has no change yet: an isolated worktree this
    /// workspace checked out or reset, no setup command run in it since.
    /// Its first attempt then needs no `git status` before the agent.
    pub fn starts_clean(&self) -> bool {
        matches!(self, Workspace::Isolated { worktree, .. } if worktree.fresh)
    }

    /// The files the task changed, exactly (an isolated workspace's diff
    /// against its base); `None` in place (the attempt's own account then).
    pub fn changed_files(&self) -> Result<Option<Vec<String>>, PhaseError> {
        self.changed_files_seen(None)
    }

    /// [`Workspace::changed_files`], read from `seen` when given: the
    /// work tree's status as the last attempt ended, nothing having
    /// touched the tree since (git is not asked again).
    pub fn changed_files_seen(
        &self,
        seen: Option<&wavecrew_sys::git::TreeStatus>,
    ) -> Result<Option<Vec<String>>, PhaseError> {
        match self {
            Workspace::InPlace { .. } => Ok(None),
            Workspace::Isolated {
                integration,
                worktree,
            } => integration
                .changed_files_seen(worktree, seen)
                .map(Some)
                .map_err(|e| phase("the task's changes", e)),
        }
    }

    /// Commit the task's work on its branch and land it through the merge
    /// queue ([`Integration::land_work`]); with `verify` (`[integration]
    /// verify`), each merge candidate is checked first, in a worktree of
    /// it, and a failure lands nothing.
    pub async fn land(
        &self,
        task: &Task,
        message: &str,
        verify: Option<&Verify>,
    ) -> Result<Landed, PhaseError> {
        let Workspace::Isolated {
            integration,
            worktree,
        } = self
        else {
            return Ok(Landed::InPlace);
        };
        let (integration, worktree) = ((**integration).clone(), worktree.clone());
        let (id, message, verify) = (
            task.id.as_str().to_owned(),
            message.to_owned(),
            verify.cloned(),
        );
        tokio::task::spawn_blocking(move || {
            let work = Work::Worktree {
                worktree: &worktree,
                message: &message,
            };
            integration
                .land_work(work, &id, verify.as_ref())
                .map(Landed::from)
                .map_err(|e| phase("committing and landing the task's work", e))
        })
        .await
        .map_err(|e| phase("the merge queue", e))?
    }

    /// After a landed task: its worktree goes back to the session's warm
    /// pool for the next task (its branch stays as a ref). A failed task's
    /// worktree is kept for inspection.
    pub fn finish(&self, landed: bool) {
        if let (
            true,
            Workspace::Isolated {
                integration,
                worktree,
            },
        ) = (landed, self)
            && let Err(e) = integration.release_worktree(worktree)
        {
            tracing::warn!("cannot release {}: {e}", worktree.path.display());
        }
    }
}

impl RoleContext {
    /// Put a landing on the bus, from `role` to the coordinator: a
    /// `task_merged` record when work landed, a `merge_conflict` record on a
    /// conflict and a `merge_rejected` one when `[integration] verify`
    /// failed (`revision`: whether the task gets a revision, or ends).
    /// Nothing in place or when nothing landed.
    pub fn record_landing(
        &self,
        role: &str,
        task: &Task,
        workspace: &Workspace,
        landed: &Landed,
        revision: bool,
    ) {
        let Workspace::Isolated {
            integration,
            worktree,
        } = workspace
        else {
            return;
        };
        let id = task.id.as_str();
        let mut data = Map::new();
        data.insert("task_id".into(), json!(id));
        data.insert("branch".into(), json!(worktree.branch));
        data.insert("base".into(), json!(worktree.base));
        data.insert("integration_branch".into(), json!(integration.branch()));
        let (kind, summary) = match landed {
            Landed::Commit(commit) => {
                data.insert("merge_commit".into(), json!(commit));
                let short = commit.get(..10).unwrap_or(commit);
                (
                    "task_merged",
                    format!("{id} merged into {} at {short}", integration.branch()),
                )
            }
            Landed::Conflict { files, .. } => {
                let with = landed.conflicting_tasks();
                data.insert("files".into(), json!(files));
                data.insert("with".into(), json!(with));
                data.insert("revision".into(), json!(revision));
                let with = if with.is_empty() {
                    "landed work".to_owned()
                } else {
                    with.join(", ")
                };
                (
                    "merge_conflict",
                    format!(
                        "{id} conflicts with {with} in {}{}",
                        files.join(", "),
                        if revision {
                            ": one revision"
                        } else {
                            ": blocked"
                        }
                    ),
                )
            }
            Landed::Rejected { command, output } => {
                data.insert("command".into(), json!(command));
                data.insert("output".into(), json!(output));
                data.insert("revision".into(), json!(revision));
                (
                    "merge_rejected",
                    format!("{id} not merged: the merged result failed `{command}`"),
                )
            }
            Landed::InPlace | Landed::Nothing => return,
        };
        let message = NewMessage {
            from: role.to_owned(),
            to: Some("coordinator".into()),
            kind: Some(kind.into()),
            summary: Some(format!("[{role}] {summary}")),
            data: Some(data),
            reference: None,
        };
        if let Err(e) = self.bus.log(message) {
            tracing::warn!("message bus: {e}");
        }
    }
}

impl RoleContext {
    /// The syntax checks' options for `changed_files`, with the limit of
    /// `[limits] syntax_check_secs`.
    pub fn syntax_options(&self, changed_files: Vec<String>) -> wavecrew_validation::SyntaxOptions {
        wavecrew_validation::SyntaxOptions {
            timeout: self.syntax_limit(),
            changed_files,
            confined: self.command_box(),
            ..wavecrew_validation::SyntaxOptions::default()
        }
    }

    /// The box of every command wavecrew runs on an agent's work (checks,
    /// tests, setup): what the agent may write, no more
    /// ([`wavecrew_backends::confine::command_box`]); `None` when agents are
    /// not confined.
    pub fn command_box(&self) -> Option<wavecrew_sys::confined::CommandBox> {
        wavecrew_backends::confine::command_box(&self.config, &self.project_root)
    }

    /// `[limits] syntax_check_secs`.
    pub fn syntax_limit(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.config.limits.syntax_check_secs)
    }

    /// `[integration] verify` of the session's configuration, when set.
    pub fn verify(&self) -> Option<Verify> {
        verify_of(&self.config, &self.project_root)
    }
}

/// Append `text` to the file `path` (made with its folder).
fn append(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// The last lines of a log, for a message (at most 2 KB).
fn log_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = text.len().saturating_sub(2048);
    String::from_utf8_lossy(&text[start..]).trim().to_owned()
}
