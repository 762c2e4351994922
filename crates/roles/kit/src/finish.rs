//! The finish phase: the one gate every role that writes work goes
//! through after its agent, whatever its binary.
//!
//! In order, for each version of the work (the first, and one revision):
//!
//! 1. **the lane** ([`Lane`]): links out of the repository, files over
//!    `[isolation] max_file_mb`, protected paths (`[isolation] protected`),
//!    declared files left untouched, files outside the declared ones
//!    (`[isolation] undeclared`), undeclared files the user's tools run by
//!    themselves (`[isolation] runs_later`);
//! 2. **the role's own checks** ([`Finish::check`]): syntax, acceptance,
//!    affected tests, code review, a test run: what the role supplies;
//! 3. **tests compared with the task's base** when the change touches tests
//!    or a runner's configuration (gone or newly skipped tests fail it
//!    unless the task says `may_remove_tests = true`);
//! 4. **the review gate**: a task that asks for a person's review
//!    (`review = "human"`), or whose work changes files that run later, is
//!    committed on its branch and waits ([`review_gate`]);
//! 5. **the landing** through the merge queue with `[integration] verify`
//!    on the merge candidate;
//! 6. **one revision** on a miss (a conflict, a failed verify), in a
//!    worktree of the new tip, the agent told why; a second miss fails the
//!    task (blocked for a person after a conflict);
//! 7. **one record**: the task's report (and the landing's bus records).
//!
//! A role supplies its checks, its reports and its revision ([`Finish`]);
//! a check added here applies to every role without touching them. Work
//! done in place (`[isolation] mode = "in-place"`) goes through the same
//! steps: its lane is checked, and there is no branch to compare, hold or
//! land (so a change to a file that runs later fails it).

use serde_json::Value;
use wavecrew_core::Task;
use wavecrew_core::role::{PhaseError, Report};

use crate::base_tests::BaseComparison;
use crate::context::RoleContext;
use crate::lane::{Held, Lane, LaneRules};
use crate::report::ReportBuilder;
use crate::review_gate;
use crate::workspace::{Landed, Workspace};

/// What a role's own checks said of its work.
#[derive(Debug, Clone, Default)]
pub struct Checked<E> {
    /// Why they fail the task; `None` when they pass.
    pub failure: Option<String>,
    /// Checks that could not say (a limit reached, a tool missing): an
    /// environment problem, reported, never the agent's failure.
    pub inconclusive: Vec<String>,
    /// What the role keeps for its reports.
    pub evidence: E,
}

impl<E> Checked<E> {
    /// Checks that passed, with their evidence.
    pub fn passed(evidence: E) -> Self {
        Checked {
            failure: None,
            inconclusive: Vec::new(),
            evidence,
        }
    }
}

/// What the gate found, for the role's reports.
#[derive(Debug)]
pub struct Gate<'a, E> {
    /// The files the work changed (an isolated task's branch against its
    /// base; in place, the attempts' account).
    pub files: &'a [String],
    /// What the changed files say against the declared ones.
    pub lane: &'a Lane,
    /// The role's own checks.
    pub checked: &'a Checked<E>,
    /// The tests compared with the task's base, when they ran.
    pub base_tests: Option<&'a BaseComparison>,
    /// Why the task fails (the lane, the role's checks, the base tests),
    /// when it does.
    pub failure: Option<&'a str>,
    /// How the work landed (only for a completed task).
    pub landed: Option<&'a Landed>,
}

/// A role whose work goes through the finish phase.
#[async_trait::async_trait]
pub trait Finish: Sync {
    /// What phase 3 produced (the agent's run, its workspace).
    type Work: Send + Sync;
    /// What the role's checks keep for its reports.
    type Evidence: Send + Sync;

    /// The role named on the landing records.
    fn finish_role(&self) -> &str;

    /// The session, its configuration and its bus.
    fn finish_ctx(&self) -> &RoleContext;

    /// Where `work` was done.
    fn workspace<'w>(&self, work: &'w Self::Work) -> &'w Workspace;

    /// The files `work` changed as its attempts account for them: used in
    /// place, where no branch says exactly.
    fn files_in_place(&self, work: &Self::Work) -> Vec<String>;

    /// The files `work` changed: exactly its branch against its base in a
    /// worktree, else [`Finish::files_in_place`].
    fn changed_files(&self, work: &Self::Work) -> Result<Vec<String>, PhaseError> {
        Ok(match self.workspace(work).changed_files()? {
            Some(files) => files,
            None => self.files_in_place(work),
        })
    }

    /// The subject of the commit that holds `work` on its branch.
    fn commit_message(&self, task: &Task, work: &Self::Work) -> String;

    /// The role's own checks of `work`, which changed `files`.
    /// `lane_failed`: the lane fails the task already (a role may skip
    /// what costs time then).
    async fn check(
        &self,
        task: &Task,
        work: &Self::Work,
        files: &[String],
        lane_failed: bool,
    ) -> Result<Checked<Self::Evidence>, PhaseError>;

    /// The report of work that passed every check and landed (or was done
    /// in place). The gate adds the branch, the base, the merge commit and
    /// what every report carries.
    async fn completed(
        &self,
        task: &Task,
        work: &Self::Work,
        gate: &Gate<'_, Self::Evidence>,
    ) -> ReportBuilder;

    /// The report of work a check failed (`gate.failure` says why).
    fn failed(
        &self,
        task: &Task,
        _work: &Self::Work,
        gate: &Gate<'_, Self::Evidence>,
    ) -> ReportBuilder {
        ReportBuilder::failed(
            "task_failed",
            task,
            gate.failure.unwrap_or("a check failed"),
        )
        .field("retry_count", task.attempts)
    }

    /// The report of work held for a person's review: `held` is the
    /// review gate's, with the protected paths named.
    fn awaiting(
        &self,
        _task: &Task,
        _work: &Self::Work,
        _gate: &Gate<'_, Self::Evidence>,
        held: ReportBuilder,
    ) -> ReportBuilder {
        held
    }

    /// The report of a step that could not be taken (git, a worktree).
    fn phase_failed(&self, task: &Task, error: &PhaseError) -> ReportBuilder {
        ReportBuilder::phase_failed("task_failed", task, error)
    }

    /// Do the task again after `unlanded`, in a worktree of the new tip.
    async fn revise(
        &self,
        task: &Task,
        work: &Self::Work,
        unlanded: &Landed,
    ) -> Result<Self::Work, PhaseError>;

    /// The report of a revision that could not be made, after its
    /// `conflict` and `conflicts` fields.
    fn revision_failed(&self, _task: &Task, report: ReportBuilder) -> ReportBuilder {
        report
    }

    /// The report when the revision did not land either.
    fn unlanded(
        &self,
        task: &Task,
        _work: &Self::Work,
        second: &Landed,
        workspace: &Workspace,
        earlier: &[Value],
    ) -> ReportBuilder {
        second.unlanded_report("task_failed", task, workspace, earlier)
    }
}

/// The finish phase of `work` (see the module's notes): the task's report.
pub async fn finish<R: Finish + ?Sized>(role: &R, task: &Task, work: &R::Work) -> Report {
    let first = match check_and_land(role, task, work, &[]).await {
        Ok(report) => return report,
        Err(unlanded) => unlanded,
    };
    let ctx = role.finish_ctx();
    let first_ws = role.workspace(work);
    ctx.record_landing(role.finish_role(), task, first_ws, &first, true);
    let earlier: Vec<Value> = first.conflict_json().into_iter().collect();
    let revision = match role.revise(task, work, &first).await {
        Ok(revision) => revision,
        Err(e) => {
            let report = role
                .phase_failed(task, &e)
                .field("conflict", earlier.first())
                .field("conflicts", &earlier);
            return role.revision_failed(task, report).build();
        }
    };
    let second = match check_and_land(role, task, &revision, &earlier).await {
        Ok(report) => return report,
        Err(unlanded) => unlanded,
    };
    let ws = role.workspace(&revision);
    ctx.record_landing(role.finish_role(), task, ws, &second, false);
    role.unlanded(task, &revision, &second, ws, &earlier)
        .build()
}

/// One version of the work through the gate: the report, or what kept it
/// from landing (a conflict, a failed verify). `conflicts` are the earlier
/// ones, for the report.
async fn check_and_land<R: Finish + ?Sized>(
    role: &R,
    task: &Task,
    work: &R::Work,
    conflicts: &[Value],
) -> Result<Report, Landed> {
    let ctx = role.finish_ctx();
    let workspace = role.workspace(work);
    let failed_step = |e: &PhaseError| Ok(role.phase_failed(task, e).build());
    let files = match role.changed_files(work) {
        Ok(files) => files,
        Err(e) => return failed_step(&e),
    };
    let isolation = &ctx.config.isolation;
    let lane = Lane::check(
        task,
        workspace.dir(),
        &files,
        &LaneRules::from_config(isolation),
    );
    // Where there is a branch to hold, a task held for a person's review
    // waits for it with its changes to protected paths named, instead of
    // failing; so does any task that changed files that run later.
    let can_hold = workspace.branch().is_some();
    let held = Held {
        protected: can_hold && review_gate::wants_human_review(task),
        runs_later: can_hold,
    };
    let lane_failure = lane.failure_with(
        isolation.undeclared == wavecrew_backends::config::UndeclaredMode::Fail,
        held,
    );
    let checked = match role.check(task, work, &files, lane_failure.is_some()).await {
        Ok(checked) => checked,
        Err(e) => return failed_step(&e),
    };
    let mut failure = lane_failure.or_else(|| checked.failure.clone());
    let base_tests = if failure.is_none() {
        match ctx.compare_tests_with_base(task, workspace, &files).await {
            Ok(c) => c,
            Err(e) => return failed_step(&e),
        }
    } else {
        None
    };
    if failure.is_none() {
        failure = drift_failure(task, base_tests.as_ref());
    }
    let mut inconclusive = checked.inconclusive.clone();
    inconclusive.extend(base_tests.as_ref().and_then(|c| c.inconclusive.clone()));
    let mut gate = Gate {
        files: &files,
        lane: &lane,
        checked: &checked,
        base_tests: base_tests.as_ref(),
        failure: failure.as_deref(),
        landed: None,
    };
    let common = |report: ReportBuilder, landed: Option<&Landed>| {
        let report = with_workspace(report, workspace, landed);
        let report = if conflicts.is_empty() {
            report
        } else {
            report.field("conflicts", conflicts)
        };
        let report = if inconclusive.is_empty() {
            report
        } else {
            report.field("environment_problems", &inconclusive)
        };
        let report = if lane.undeclared.is_empty() {
            report
        } else {
            report.field("undeclared_files", &lane.undeclared)
        };
        let build_state = workspace.build_state();
        if build_state.is_empty() {
            report
        } else {
            report.field("build_state", build_state)
        }
    };
    if failure.is_some() {
        // The worktree stays for a person to look at.
        return Ok(common(role.failed(task, work, &gate), None).build());
    }
    let message = role.commit_message(task, work);
    match review_gate::hold(task, workspace, &message, !lane.runs_later.is_empty()).await {
        Ok(Some(held)) => {
            let held = name_held_files(held, &lane);
            let held = role
                .awaiting(task, work, &gate, held)
                .field("files_modified", &files);
            return Ok(common(held, None).build());
        }
        Ok(None) => {}
        Err(e) => return failed_step(&e),
    }
    // The merge queue: only checked work lands; a dependency counts as
    // done once its work is on the integration branch.
    let landed = match workspace.land(task, &message, ctx.verify().as_ref()).await {
        Ok(landed) => landed,
        Err(e) => return failed_step(&e),
    };
    if matches!(landed, Landed::Conflict { .. } | Landed::Rejected { .. }) {
        return Err(landed);
    }
    ctx.record_landing(role.finish_role(), task, workspace, &landed, false);
    workspace.finish(true);
    gate.landed = Some(&landed);
    let report = role.completed(task, work, &gate).await;
    Ok(common(report, Some(&landed)).build())
}

/// A held task's report with the files a person must look at named: the
/// protected paths (`protected_paths`) and the files that run later
/// (`runs_later`), and its `error` saying so.
fn name_held_files(held: ReportBuilder, lane: &Lane) -> ReportBuilder {
    let mut what = Vec::new();
    let mut held = held;
    if !lane.protected.is_empty() {
        what.push(format!(
            "changes to protected paths ({})",
            lane.protected.join(", ")
        ));
        held = held.field("protected_paths", &lane.protected);
    }
    if !lane.runs_later.is_empty() {
        what.push(format!(
            "files your tools run by themselves ({})",
            lane.runs_later.join(", ")
        ));
        held = held.field("runs_later", &lane.runs_later);
    }
    if what.is_empty() {
        return held;
    }
    held.field(
        "error",
        format!(
            "awaiting a person's review of {}: `wavecrew approve` lands them, \
             `wavecrew reject --note` revises them",
            what.join(" and of ")
        ),
    )
}

/// Why gone or newly skipped tests fail the task, unless it says
/// `may_remove_tests = true` (then they are only listed in its evidence).
fn drift_failure(task: &Task, base_tests: Option<&BaseComparison>) -> Option<String> {
    let may_remove_tests = task
        .metadata
        .get("may_remove_tests")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    base_tests
        .filter(|c| !c.drift.is_empty() && !may_remove_tests)
        .map(|c| {
            format!(
                "{} (a task that may remove tests says `may_remove_tests = true`)",
                c.drift.describe()
            )
        })
}

/// An isolated workspace's branch and base on a report, and the merge
/// commit of a landing.
fn with_workspace(
    report: ReportBuilder,
    workspace: &Workspace,
    landed: Option<&Landed>,
) -> ReportBuilder {
    let Some((branch, base)) = workspace.branch() else {
        return report;
    };
    let report = report.field("branch", branch).field("base", base);
    match landed {
        Some(landed) => report.field(
            "merge_commit",
            match landed {
                Landed::Commit(c) => Some(c.as_str()),
                _ => None,
            },
        ),
        None => report,
    }
}
