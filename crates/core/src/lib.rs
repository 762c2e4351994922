//! The core of wavecrew: validated ids, the task / plan / session models, the
//! file task store, and the ports (traits) that the other crates implement.
//!
//! Everything that becomes a path segment is an id type ([`SessionId`],
//! [`TaskId`], [`RoleName`]) validated once at the edge. Every file is written
//! atomically ([`fsutil::write_atomic`]) and every parse error names the file
//! and the field at fault ([`CoreError`]).
//!
//! ```
//! use wavecrew_core::{Plan, TaskId};
//!
//! let plan = Plan::parse("Execution Backend: codex\nIMPL-3 depends on IMPL-1 and IMPL-2\n");
//! assert_eq!(plan.execution_backend.as_deref(), Some("codex"));
//! let deps: Vec<&str> = plan.dependencies.iter().map(|d| d.depends_on.as_str()).collect();
//! assert_eq!(deps, ["IMPL-1", "IMPL-2"]);
//! assert!(TaskId::new("../etc").is_err());
//! ```

pub use wavecrew_sys::allow_hosts;
pub mod analysis;
pub mod backend;
pub mod bus;
pub mod control;
pub mod error;
pub mod fsutil;
pub mod id;
pub mod layout;
pub mod plan;
pub mod programs;
pub mod role;
pub mod role_file;
pub mod session;
pub mod source;
pub mod store;
pub mod task;
pub mod wisdom;

pub use analysis::{AnalysisTask, GraphEntry, TaskAnalysis};
pub use backend::{AttemptOutcome, AttemptRequest, Backend, Limits, Mode, OutcomeClass, Usage};
pub use bus::{BusCursor, BusMessage, ListFilter, ListResult, MessageBus, NewMessage};
pub use control::{Control, LineComment, ReviewDecision};
pub use error::{CoreError, Result};
pub use id::{IdError, IdKind, IdProblem, RoleName, SessionId, TaskId};
pub use layout::SessionLayout;
pub use plan::{Plan, PlanDependency};
pub use role::{
    PhaseError, PhaseErrorKind, Report, Role, WorkerOptions, WorkerSummary, run_worker,
};
pub use session::{RoleEntry, SessionStatus, TeamSession};
pub use source::{LoadedTasks, SourceKind};
pub use store::{
    BlockerRule, Claim, FileTaskStore, LeasePolicy, TaskFileProblem, TaskListing, TaskStore,
    WorkerInfo,
};
pub use task::{Criterion, Lease, Task, TaskStatus};
