//! Seed 001, the team-executor orchestrator, and the generic agent role.
//!
//! * [`mod@validate`]: every check of the seed with its messages;
//! * [`reconcile`]: phase 0 — store, session file and bus back in line;
//! * [`orchestrate`]: spawn-and-stop (`start`, `resume`) and the
//!   foreground run (`run`) over worker processes, on the scheduler's
//!   dispatcher; [`launch`]: which worker takes a task, and starting it;
//!   [`finish`]: the session's end state, reports and banner;
//! * [`report`]: the completion banner, `reports/summary.md`, `check`;
//! * [`agent_role`]: a role known only by its `roles/<name>.md`, run as an
//!   agent CLI with the role file as instructions.
//!
//! ```
//! // Validation speaks the seed's messages.
//! let e = wavecrew_role_team::validate(None).unwrap_err();
//! assert_eq!(e.to_string(), "Session required. Usage: --session=<path-to-TC-folder>");
//! let e = wavecrew_role_team::validate(Some(std::path::Path::new("/no/such/TC-x"))).unwrap_err();
//! assert_eq!(e.to_string(), "Session directory not found: /no/such/TC-x");
//! ```

pub mod agent_role;
pub mod finish;
pub mod launch;
mod ledger;
pub mod orchestrate;
pub mod reconcile;
pub mod report;
pub mod validate;

pub use finish::Finished;
pub use orchestrate::{FailurePolicy, Progress, RemoteWorkers, RunEnd, Team, TeamOptions};
pub use validate::{SessionInvalid, ValidSession, check_graph, validate};
