//! Where the governor's state lives: behind [`GovernorStore`], so the same
//! state can sit in a file shared by the workers of one machine
//! ([`FileGovernorStore`]) or in a networked key-value bucket later.
//!
//! The file store keeps `<session>/governor.json`, changed only under an
//! exclusive `flock` on `<session>/governor.lock` and replaced atomically
//! (temp file, fsync, rename), so a process killed at any instant leaves the
//! old state or the new one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wavecrew_core::Usage;

use super::window::Window;

/// The state file's name in the session folder.
pub const STATE_FILE: &str = "governor.json";
/// The lock file's name in the session folder.
pub const LOCK_FILE: &str = "governor.lock";
/// The state's format version.
pub const STATE_VERSION: u32 = 1;

/// The governor's state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum GovernorError {
    /// A file operation failed.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// An attempt holding one of a backend's concurrent slots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// The holder's process (a dead holder's slot is reclaimed).
    pub pid: u32,
    /// The task.
    pub task: String,
    /// The attempt number.
    pub attempt: u32,
    /// Since when, unix milliseconds.
    pub since_ms: u64,
}

/// A backend paused after a rate limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// Since when, unix milliseconds.
    pub since_ms: u64,
    /// Until when (the reset), unix milliseconds.
    pub until_ms: u64,
    /// Why (`429 retry-after 3 s` …).
    pub reason: String,
    /// The task whose attempt was rate limited.
    pub task: String,
}

/// A worker waiting to start an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiter {
    /// Its process.
    pub pid: u32,
    /// The task.
    pub task: String,
    /// The backend it waits for.
    pub backend: String,
    /// Why it waits.
    pub reason: String,
    /// Since when, unix milliseconds.
    pub since_ms: u64,
    /// Until when it expects to wait, unix milliseconds.
    pub until_ms: u64,
}

/// Tokens and money spent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spend {
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Prompt tokens served from a cache.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// US dollars, of the tokens whose model has a price.
    pub usd: f64,
    /// Tokens of models without a price (counted, never priced).
    pub unpriced_tokens: u64,
    /// The models without a price.
    pub unpriced_models: BTreeSet<String>,
}

impl Spend {
    /// Input plus output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Add `usage` of `model`, costing `usd` when the model has a price.
    pub fn add(&mut self, usage: &Usage, model: &str, usd: Option<f64>) {
        self.input_tokens += usage.input_tokens;
        self.cached_input_tokens += usage.cached_input_tokens;
        self.output_tokens += usage.output_tokens;
        if let Some(d) = usd {
            self.usd += d;
        } else {
            let tokens = usage.input_tokens + usage.output_tokens;
            if tokens > 0 {
                self.unpriced_tokens += tokens;
                self.unpriced_models.insert(model.to_owned());
            }
        }
    }

    /// Add another spend.
    pub fn merge(&mut self, other: &Spend) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.usd += other.usd;
        self.unpriced_tokens += other.unpriced_tokens;
        self.unpriced_models
            .extend(other.unpriced_models.iter().cloned());
    }
}

/// One backend's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendState {
    /// Attempts running now.
    pub slots: Vec<Slot>,
    /// Starts of the last minute (`rpm`).
    pub starts: Window,
    /// Tokens of the last minute (`tpm`).
    pub tokens: Window,
    /// The pause, while one lasts.
    pub paused: Option<Pause>,
    /// Rate limits in a row without a success (the back-off's exponent).
    pub rate_limits_in_row: u32,
    /// What the backend spent.
    pub spend: Spend,
}

/// A task's spend.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskSpend {
    /// Its backends (in the order used).
    pub backends: Vec<String>,
    /// What it spent.
    pub spend: Spend,
}

/// Everything the governor keeps for a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GovernorState {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// Per backend.
    pub backends: BTreeMap<String, BackendState>,
    /// Per task.
    pub tasks: BTreeMap<String, TaskSpend>,
    /// The whole run.
    pub run: Spend,
    /// Workers waiting for a backend.
    pub waiting: Vec<Waiter>,
    /// The verdict once the run budget was crossed: no attempt starts after.
    pub run_budget_crossed: Option<String>,
    /// Whether crossing the run budget stops running attempts too.
    pub hard_budget: bool,
    /// The budgets in force (`[budget]`, copied here so that reports and
    /// `wavecrew status` can show spend against them).
    pub budget: crate::config::BudgetConfig,
}

impl Default for GovernorState {
    fn default() -> Self {
        GovernorState {
            version: STATE_VERSION,
            backends: BTreeMap::new(),
            tasks: BTreeMap::new(),
            run: Spend::default(),
            waiting: Vec::new(),
            run_budget_crossed: None,
            hard_budget: false,
            budget: crate::config::BudgetConfig::default(),
        }
    }
}

/// Where the state lives. `update` is atomic: no other update of any
/// process runs between its read and its write.
pub trait GovernorStore: Send + Sync + std::fmt::Debug {
    /// The current state (the default when there is none yet).
    fn load(&self) -> Result<GovernorState, GovernorError>;
    /// Change the state; returns it as written.
    fn update(
        &self,
        change: &mut dyn FnMut(&mut GovernorState),
    ) -> Result<GovernorState, GovernorError>;
}

/// `<session>/governor.json` under `<session>/governor.lock`.
#[derive(Debug, Clone)]
pub struct FileGovernorStore {
    state: PathBuf,
    lock: PathBuf,
}

impl FileGovernorStore {
    /// The store of a session folder.
    pub fn for_session(session_dir: &Path) -> Self {
        FileGovernorStore {
            state: session_dir.join(STATE_FILE),
            lock: session_dir.join(LOCK_FILE),
        }
    }

    /// The state file.
    pub fn path(&self) -> &Path {
        &self.state
    }

    fn read(&self) -> Result<GovernorState, GovernorError> {
        match std::fs::read(&self.state) {
            Ok(bytes) => wavecrew_core::fsutil::parse_json(&self.state, &bytes).map_err(|e| {
                GovernorError::File {
                    path: self.state.clone(),
                    message: e.to_string(),
                }
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(GovernorState::default()),
            Err(e) => Err(GovernorError::File {
                path: self.state.clone(),
                message: format!("cannot read: {e}"),
            }),
        }
    }
}

/// Read a session's governor state without taking the lock (reports).
pub fn read_state(session_dir: &Path) -> Option<GovernorState> {
    FileGovernorStore::for_session(session_dir).read().ok()
}

impl GovernorStore for FileGovernorStore {
    fn load(&self) -> Result<GovernorState, GovernorError> {
        self.read()
    }

    fn update(
        &self,
        change: &mut dyn FnMut(&mut GovernorState),
    ) -> Result<GovernorState, GovernorError> {
        let err = |path: &Path, message: String| GovernorError::File {
            path: path.to_owned(),
            message,
        };
        let lock = wavecrew_sys::lock::lock_file(&self.lock).map_err(|e| {
            let step = match e.step {
                "creating" => "create",
                "opening" => "open",
                _ => "lock",
            };
            err(&e.path, format!("cannot {step}: {}", e.source))
        })?;
        let mut state = self.read()?;
        let before = state.clone();
        change(&mut state);
        // Nothing changed (an ungoverned backend's start or release): no
        // new file; the state on disk is already this one.
        if state != before || !self.state.exists() {
            wavecrew_core::fsutil::write_json_atomic(&self.state, &state)
                .map_err(|e| err(&self.state, e.to_string()))?;
        }
        drop(lock);
        Ok(state)
    }
}

/// A store in memory (one process; tests and embedders).
#[derive(Debug, Default)]
pub struct MemoryGovernorStore {
    state: std::sync::Mutex<GovernorState>,
}

impl GovernorStore for MemoryGovernorStore {
    fn load(&self) -> Result<GovernorState, GovernorError> {
        Ok(self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone())
    }

    fn update(
        &self,
        change: &mut dyn FnMut(&mut GovernorState),
    ) -> Result<GovernorState, GovernorError> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut state);
        Ok(state.clone())
    }
}
