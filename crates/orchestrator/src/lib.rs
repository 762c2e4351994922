//! The run engine: seed 001, the team-executor orchestrator, over one
//! session. It validates and reconciles the session, schedules its tasks
//! on the scheduler's dispatcher, starts a worker process for each (or
//! hands it to remote hosts), follows the bus, and finishes with the
//! session's end state, the reports and the completion banner.
//!
//! From the bottom up (no module imports one above it):
//!
//! * [`vocabulary`]: options, run ends, progress, ready tasks, the
//!   orchestrator's bus records;
//! * [`mod@validate`]: every check of the seed with its messages;
//!   [`session_file`]: `team-session.json` with the pipeline's counts;
//! * [`reconcile`]: phase 0 — store, session file and bus back in line;
//! * [`launch`]: which worker binary takes a task, and starting it;
//!   `durations`: what earlier runs measured;
//! * `ledger`: the bookkeeping thread (progress, skipped records, the
//!   session file); `worker_runner`: one task's worker, start to end;
//!   `control`: a person's pause, cancel and retry, read from the
//!   session's `control/` folder; `review`: the human review gate (a
//!   parked task landed on approval, revised on rejection);
//! * [`team`]: spawn-and-stop (`start`, `resume`) and the foreground run
//!   (`run`); [`finish`]: the end state, reports and banner;
//!   [`report`]: the completion banner, `reports/summary.md`, `check`;
//! * [`run`]: a session opened, prepared and turned into a [`Team`] with
//!   a run's options: the library entry point of `wavecrew run`.
//!
//! ```
//! // Validation speaks the seed's messages.
//! let e = wavecrew_orchestrator::validate(None).unwrap_err();
//! assert_eq!(e.to_string(), "Session required. Usage: --session=<path-to-TC-folder>");
//! let e = wavecrew_orchestrator::validate(Some(std::path::Path::new("/no/such/TC-x"))).unwrap_err();
//! assert_eq!(e.to_string(), "Session directory not found: /no/such/TC-x");
//! ```

mod control;
mod durations;
mod evidence;
pub mod finish;
pub mod launch;
mod ledger;
pub mod reconcile;
pub mod report;
mod review;
pub mod run;
pub mod session_file;
pub mod team;
pub mod validate;
pub mod vocabulary;
mod worker_runner;

pub use finish::Finished;
pub use launch::sibling_program;
pub use run::{OpenSession, RunError, RunSpec};
pub use team::Team;
pub use validate::{SessionInvalid, ValidSession, check_graph, validate};
pub use vocabulary::{
    FailurePolicy, Progress, ProgressFn, RemoteWorkers, RunEnd, TeamOptions, log_record,
    ready_tasks,
};
