//! The role kit: what every role of a team pipeline shares, written once.
//!
//! * [`RoleContext`]: the project root, the session folder and id,
//!   `wavecrew.toml`, the `--backend` override, the bus (behind the
//!   [`MessageBus`](wavecrew_core::MessageBus) port) and the prompt templates;
//! * [`prompt`]: the render policy: a template that fails to render fails
//!   the task with the template's error ([`RoleContext::render`]), never an
//!   empty prompt and never the error text sent as the prompt;
//! * [`attempt`]: a task's attempts and a review attempt through the
//!   backends ([`RoleContext::attempt`], [`RoleContext::review`]), the
//!   backend a task really used ([`backend_used`]), and attempt ids derived
//!   from a task's that are always distinct from it ([`derived_id`]);
//! * [`plan_text`]: a plan's steps, file changes, criteria and commands
//!   read from whichever shape the planner wrote, for the prompts;
//! * [`finish`](mod@finish): the finish phase every writing role goes through after
//!   its agent (the lane, the role's checks, the tests against the base,
//!   the review gate, the landing with `[integration] verify`, one
//!   revision on a miss, one record);
//! * [`report`]: the typed report builder: the bus record and the task's
//!   result come from one value;
//! * [`session`] and [`run`]: opening a session folder for a role binary
//!   and the role main ([`run_role`]) every binary calls;
//! * [`builtin`]: the table of built-in roles and their binaries, read by
//!   the launcher and `wavecrew prompt`;
//! * [`worker_command`]: the flags a role binary is started with, one type
//!   the launcher writes and every role binary parses.
//!
//! ```
//! use wavecrew_core::{Task, TaskId, TaskStatus};
//! use wavecrew_role_kit::{ReportBuilder, derived_id};
//!
//! let task = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "d");
//! // The record and the result are one value.
//! let report = ReportBuilder::completed("task_complete", &task)
//!     .field("files_modified", ["src/a.rs"])
//!     .summary("IMPL-001 complete")
//!     .build();
//! assert_eq!(report.status, TaskStatus::Completed);
//! assert_eq!(serde_json::Value::Object(report.data.clone()), report.result);
//! // A review's attempts never share the task's folder.
//! assert_eq!(derived_id(&task.id, "review").unwrap().as_str(), "IMPL-001-review");
//! ```

pub mod attempt;
pub mod base_tests;
pub mod builtin;
pub mod context;
pub mod finish;
pub mod landed;
pub mod lane;
pub mod plan_text;
pub mod prompt;
pub mod report;
pub mod review_gate;
pub mod run;
pub mod session;
pub mod suite;
pub mod suite_run;
pub mod worker_command;
pub mod workspace;

pub use attempt::{Attempt, Review, backend_used, derived_id, derived_id_from};
pub use context::{BusFault, RoleBus, RoleContext, SharedBus, share_bus};
pub use finish::{Checked, Finish, Gate, finish};
pub use prompt::{Preview, PromptPreview};
pub use report::ReportBuilder;
pub use run::{Follow, RoleExit, run_role};
pub use session::{KitError, OpenSpec, RoleSession, StoreLayout};
pub use worker_command::WorkerCommand;
pub use workspace::{Landed, Verify, Workspace};
