//! The landing loop every writing role shares: check and land the work;
//! when it does not land (a conflict with work that landed meanwhile, or a
//! failed `[integration] verify`), record that, revise once in a worktree
//! of the new tip with the agent told why, check and land again; a second
//! miss fails the task (blocked for a person), naming the other tasks and
//! the files. A role says how to check and land, how to revise, and how
//! its reports read ([`RevisedLanding`]); [`land_with_one_revision`] is the
//! loop.

use serde_json::Value;
use wavecrew_core::Task;
use wavecrew_core::role::{PhaseError, Report};

use crate::context::RoleContext;
use crate::report::ReportBuilder;
use crate::workspace::{Landed, Workspace};

/// A role whose work lands through the merge queue, with one revision.
#[async_trait::async_trait]
pub trait RevisedLanding: Sync {
    /// What phase 3 produced (the agent's run, its workspace).
    type Work: Send + Sync;

    /// The role named on the landing records.
    fn landing_role(&self) -> &str;

    /// The session, for the landing records.
    fn landing_ctx(&self) -> &RoleContext;

    /// Where `work` was done; `None`: nowhere to land from (a failure).
    fn workspace_of<'w>(&self, work: &'w Self::Work) -> Option<&'w Workspace>;

    /// Check `work` and land it: the task's report, or what kept it from
    /// landing. `conflicts` are the earlier ones, for the report.
    async fn check_and_land(
        &self,
        task: &Task,
        work: &Self::Work,
        conflicts: &[Value],
    ) -> Result<Report, Landed>;

    /// Do the task again after `unlanded`, in a worktree of the new tip.
    async fn revise(
        &self,
        task: &Task,
        work: &Self::Work,
        unlanded: &Landed,
    ) -> Result<Self::Work, PhaseError>;

    /// The report of a failed phase.
    fn failed(&self, task: &Task, error: &PhaseError) -> ReportBuilder {
        ReportBuilder::phase_failed("task_failed", task, error)
    }

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

/// Check and land `work`; on a miss, one revision; a second miss fails the
/// task. Every miss is recorded on the bus.
pub async fn land_with_one_revision<R: RevisedLanding + ?Sized>(
    role: &R,
    task: &Task,
    work: &R::Work,
) -> Report {
    let no_workspace = || {
        role.failed(task, &PhaseError("nothing landed and no workspace".into()))
            .build()
    };
    let first = match role.check_and_land(task, work, &[]).await {
        Ok(report) => return report,
        Err(unlanded) => unlanded,
    };
    let Some(first_ws) = role.workspace_of(work) else {
        return no_workspace();
    };
    role.landing_ctx()
        .record_landing(role.landing_role(), task, first_ws, &first, true);
    let earlier: Vec<Value> = first.conflict_json().into_iter().collect();
    let revision = match role.revise(task, work, &first).await {
        Ok(revision) => revision,
        Err(e) => {
            let report = role
                .failed(task, &e)
                .field("conflict", earlier.first())
                .field("conflicts", &earlier);
            return role.revision_failed(task, report).build();
        }
    };
    let second = match role.check_and_land(task, &revision, &earlier).await {
        Ok(report) => return report,
        Err(unlanded) => unlanded,
    };
    let Some(ws) = role.workspace_of(&revision) else {
        return no_workspace();
    };
    role.landing_ctx()
        .record_landing(role.landing_role(), task, ws, &second, false);
    role.unlanded(task, &revision, &second, ws, &earlier)
        .build()
}
