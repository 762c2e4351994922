//! What a run of the project's suite leaves for the checks after an agent
//! ([`crate::suite`]): the run as the base's cache keeps it, the note a
//! task's evidence carries, and the task runs a context holds.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use wavecrew_validation::{Framework, TestReport, TestRun};

/// One run of the suite, as the cache keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteRun {
    /// The framework's name (`pytest`, `jest`, …).
    pub framework: String,
    /// The command line it ran as.
    pub command: String,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// What its reporter said.
    pub report: TestReport,
    /// The end of what it printed.
    #[serde(default)]
    pub output_tail: String,
    /// What its network did, when it ran in a box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<wavecrew_sys::egress::NetworkLog>,
}

/// A run of the suite a task's checks used, for its evidence.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteNote {
    /// Whose tree: `task` (its work) or `base` (the commit it started from).
    pub of: &'static str,
    /// The base's tree id (the cache's key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// Whether it ran for this check (false: kept from an earlier one).
    pub ran: bool,
    /// The command line.
    pub command: String,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// The tests its report lists.
    pub tests: usize,
    /// How long it ran (when kept, how long it ran then).
    pub duration_ms: u64,
    /// What its network did, when it ran in a box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<wavecrew_sys::egress::NetworkLog>,
}

impl SuiteRun {
    /// What the cache keeps of `run`, made by `framework`.
    pub fn of(framework: &Framework, run: TestRun) -> Self {
        SuiteRun {
            framework: framework.name().to_owned(),
            command: run.command,
            exit_code: run.exit_code,
            duration_ms: run.duration_ms,
            report: run.report,
            output_tail: run.output_tail,
            network: run.network,
        }
    }
}

impl SuiteNote {
    pub(crate) fn of(of: &'static str, tree: Option<String>, run: &SuiteRun, ran: bool) -> Self {
        SuiteNote {
            of,
            tree,
            ran,
            command: run.command.clone(),
            exit_code: run.exit_code,
            tests: run.report.cases.len(),
            duration_ms: run.duration_ms,
            network: run.network.clone(),
        }
    }
}

/// The task runs a context made, by the task, and the folder and branch
/// of its version of the work (a worker that goes on to the next task, in
/// the same folder in place, never reads the last one's run).
pub(crate) type TaskRuns =
    Arc<Mutex<HashMap<(String, PathBuf, String), (Framework, Arc<SuiteRun>)>>>;

/// The note of the task's own run.
pub(crate) fn task_note(run: &SuiteRun, ran: bool) -> SuiteNote {
    SuiteNote::of("task", None, run, ran)
}
