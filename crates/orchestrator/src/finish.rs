//! The end of a foreground run: the session's final state on disk, the
//! reports, and what to tell the person (the completion banner, each
//! failure with where to look).

use std::path::PathBuf;

use wavecrew_core::bus::MessageBus;
use wavecrew_core::{SessionStatus, Task, TaskId};

use crate::report::banner;
use crate::session_file::write_session;
use crate::team::Team;
use crate::vocabulary::RunEnd;

/// What [`Team::finish`] wrote and has to say.
#[derive(Debug)]
pub struct Finished {
    /// The tasks as they ended.
    pub tasks: Vec<Task>,
    /// The reports folder, or why the reports could not be written.
    pub reports: Result<PathBuf, wavecrew_report::ReportError>,
    /// The completion banner (seed 001's "TASK COMPLETE" block).
    pub banner: String,
    /// Each failed task with its error.
    pub failures: Vec<(TaskId, String)>,
    /// The run budget (`[budget] run_tokens`, `run_usd`) this run crossed,
    /// named: the run then fails, whatever its tasks did.
    pub budget_crossed: Option<String>,
}

impl<B: MessageBus + 'static> Team<B> {
    /// Record how the run ended: the session's status (`completed` or
    /// `paused`; otherwise unchanged), no active workers, the counts; then
    /// the reports. A report that cannot be written is returned in
    /// [`Finished::reports`], never dropped.
    pub fn finish(&mut self, end: &RunEnd) -> wavecrew_core::Result<Finished> {
        let tasks = self.store.list()?;
        match end {
            RunEnd::Complete => self.valid.session.status = SessionStatus::Completed,
            RunEnd::Paused { .. } => self.valid.session.status = SessionStatus::Paused,
            RunEnd::Failed { .. } | RunEnd::Stalled { .. } | RunEnd::Interrupted { .. } => {}
        }
        self.valid.session.active_workers.clear();
        write_session(&mut self.valid, &tasks)?;
        let reports = wavecrew_report::write_reports(&self.valid.dir)
            .map(|_| wavecrew_core::SessionLayout::new(&self.valid.dir).reports());
        let failures = tasks
            .iter()
            .filter(|t| t.status.is_unsuccessful())
            .map(|t| {
                let why = t.error().unwrap_or("no error recorded");
                (t.id.clone(), why.to_owned())
            })
            .collect();
        let budget_crossed = wavecrew_backends::governor::store::read_state(&self.valid.dir)
            .and_then(|state| state.run_budget_crossed);
        Ok(Finished {
            budget_crossed,
            banner: banner(&self.valid, &tasks, self.elapsed()),
            tasks,
            reports,
            failures,
        })
    }
}
