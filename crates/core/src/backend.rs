//! The `Backend` port: one attempt of one task through an agent CLI.
//!
//! `wavecrew-backends` implements it for the real CLIs (claude, codex,
//! gemini, …) and for any configured command; tests use the scripted agent.
//! An attempt is judged by its exit code and its event stream, never by
//! "it printed something" (ccw-compat §7 item 33), and is reported only once
//! the process has finished.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the agent is allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Change the work tree.
    #[default]
    Write,
    /// Read only: answer questions about the code.
    Analysis,
    /// Review the uncommitted changes.
    Review,
}

/// How an attempt ended (`agent-clis.md` tables these per CLI).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "class")]
pub enum OutcomeClass {
    /// The agent finished its turn.
    Success,
    /// The agent or its model failed (the message says why).
    Failed,
    /// The model server refused the credentials.
    AuthError,
    /// The model server asked to slow down.
    RateLimited {
        /// Seconds to wait, when the server said.
        retry_after_secs: Option<u64>,
    },
    /// The wall-clock limit expired; the process group was killed.
    TimedOut,
    /// No output for longer than the stall limit; the process group was killed.
    Stalled,
    /// The CLI is not installed or cannot start.
    Unavailable,
    /// The agent finished but tools it needed were denied.
    PermissionDenied,
    /// The attempt crossed a budget (`[budget]` of `wavecrew.toml`) and was
    /// stopped like a timeout; the error names the budget.
    BudgetExceeded,
}

impl OutcomeClass {
    /// The stable name used in JSON and on the bus (`timed_out`, …).
    pub fn name(&self) -> &'static str {
        match self {
            OutcomeClass::Success => "success",
            OutcomeClass::Failed => "failed",
            OutcomeClass::AuthError => "auth_error",
            OutcomeClass::RateLimited { .. } => "rate_limited",
            OutcomeClass::TimedOut => "timed_out",
            OutcomeClass::Stalled => "stalled",
            OutcomeClass::Unavailable => "unavailable",
            OutcomeClass::PermissionDenied => "permission_denied",
            OutcomeClass::BudgetExceeded => "budget_exceeded",
        }
    }

    /// Whether the attempt did its job.
    pub fn is_success(&self) -> bool {
        matches!(self, OutcomeClass::Success)
    }
}

/// Token usage, as far as the CLI reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from a cache.
    pub cached_input_tokens: u64,
    /// Cost in US dollars, when the CLI says.
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Add another usage report to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
}

/// Limits of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Kill the process group after this long.
    pub wall: Duration,
    /// Kill it after this long without any output.
    pub stall: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The most of each output stream kept on disk: past it, the first and
    /// the last halves are kept with the count of bytes dropped between.
    pub max_output_bytes: u64,
}

/// The default of [`Limits::max_output_bytes`]: 32 MiB per stream.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 32 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall: Duration::from_secs(30 * 60),
            stall: Duration::from_secs(5 * 60),
            grace: Duration::from_secs(5),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// One attempt to run.
#[derive(Debug, Clone)]
pub struct AttemptRequest {
    /// The task id (for placeholders and file names).
    pub task_id: String,
    /// The prompt.
    pub prompt: String,
    /// Where the agent works.
    pub cwd: PathBuf,
    /// The git of the work tree `cwd` is in, when the caller located it
    /// already (`None`: looked up where needed, or not in git).
    pub git: Option<wavecrew_sys::git::WorkTreeGit>,
    /// The work tree is known to have no change as the attempt starts (a
    /// worktree just reset to its branch, `git` given): what the attempt
    /// changed is then what git lists after it, and git is not asked
    /// before.
    pub clean_before: bool,
    /// What it may do.
    pub mode: Mode,
    /// Where the attempt's files go (`attempts/<task>/<n>/`).
    pub attempt_dir: PathBuf,
    /// The limits.
    pub limits: Limits,
    /// A native session to resume, when the CLI supports it.
    pub resume_session: Option<String>,
    /// Extra environment for the child.
    pub env: BTreeMap<String, String>,
    /// Where the agent's process tree may write, when it is confined (the
    /// backend adds its own folders and the attempt's temporary folder);
    /// `None`: unconfined.
    pub sandbox: Option<Vec<PathBuf>>,
    /// Hosts this task's agent may reach besides its backend's and
    /// `[isolation] allow_hosts` (its metadata's `allow_hosts`), when its
    /// network is an allowlist.
    pub allow_hosts: Vec<String>,
}

/// What one attempt did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptOutcome {
    /// The backend's name.
    pub backend: String,
    /// How it ended.
    pub outcome: OutcomeClass,
    /// The exit code (`None` when killed by a signal or never started).
    pub exit_code: Option<i32>,
    /// The CLI's native session id, for resume.
    pub session_id: Option<String>,
    /// The agent's last message.
    pub final_message: Option<String>,
    /// The error the CLI reported, if any.
    pub error: Option<String>,
    /// Token usage.
    pub usage: Option<Usage>,
    /// Files the attempt changed (from `git status` before and after).
    pub files_changed: Vec<String>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The work tree's `git status` as the attempt ended (not recorded):
    /// a caller that needs the tree's changed files reads them from it
    /// rather than asking git again. `None` outside git.
    #[serde(skip)]
    pub tree_after: Option<Box<wavecrew_sys::git::TreeStatus>>,
    /// What the agent's network did, when it had one of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkLog>,
}

pub use wavecrew_sys::egress::NetworkLog;

/// A way to run an attempt: an agent CLI, a command, the scripted agent.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// The backend's name (`claude`, `codex`, `mine`).
    fn name(&self) -> &str;
    /// Run one attempt to its end (or its limits).
    async fn run(&self, request: &AttemptRequest) -> AttemptOutcome;
}
