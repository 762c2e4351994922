//! [`RoleContext`]: what every role of a session holds, once, and the bus
//! behind the [`MessageBus`] port with its errors boxed ([`SharedBus`]), so a
//! role never names the concrete file bus.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use wavecrew_backends::config::Config;
use wavecrew_backends::prompts::Prompts;
use wavecrew_backends::routing::{Decision, resolve_executor};
use wavecrew_core::bus::{
    BusCursor, BusMessage, ListFilter, ListResult, MessageBus, NewMessage, StateUpdate,
};
use wavecrew_core::{SessionId, Task};

/// A bus error of any implementation, kept whole (its message is the
/// implementation's).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct BusFault(Box<dyn std::error::Error + Send + Sync>);

/// The bus a role talks to: any [`MessageBus`], its errors as [`BusFault`].
pub type RoleBus = dyn MessageBus<Error = BusFault>;

/// A shared [`RoleBus`].
pub type SharedBus = Arc<RoleBus>;

/// A bus with its error type erased.
struct Erased<B>(B);

fn fault(e: impl std::error::Error + Send + Sync + 'static) -> BusFault {
    BusFault(Box::new(e))
}

impl<B: MessageBus> MessageBus for Erased<B> {
    type Error = BusFault;

    fn log(&self, message: NewMessage) -> Result<BusMessage, BusFault> {
        self.0.log(message).map_err(fault)
    }
    fn broadcast(&self, message: NewMessage) -> Result<BusMessage, BusFault> {
        self.0.broadcast(message).map_err(fault)
    }
    fn read(&self, id: &str) -> Result<Option<BusMessage>, BusFault> {
        self.0.read(id).map_err(fault)
    }
    fn list(&self, filter: &ListFilter) -> Result<ListResult, BusFault> {
        self.0.list(filter).map_err(fault)
    }
    fn get_state(&self, role: Option<&str>) -> Result<Option<Value>, BusFault> {
        self.0.get_state(role).map_err(fault)
    }
    fn update_state(
        &self,
        message: NewMessage,
        update: StateUpdate<'_>,
    ) -> Result<BusMessage, BusFault> {
        self.0.update_state(message, update).map_err(fault)
    }
    fn since(&self, cursor: BusCursor) -> Result<(Vec<BusMessage>, BusCursor), BusFault> {
        self.0.since(cursor).map_err(fault)
    }
}

/// Any bus, shared, as roles hold it.
pub fn share_bus<B: MessageBus + 'static>(bus: B) -> SharedBus {
    Arc::new(Erased(bus))
}

/// What every role of a session holds: where it works, how it is
/// configured, the bus it reports to and the prompt templates. Cheap to
/// clone (the bus and the templates are shared).
#[derive(Clone)]
pub struct RoleContext {
    /// The project root (the folder holding `.workflow/`).
    pub project_root: PathBuf,
    /// The session folder (`.workflow/.team/<id>/`; the folder holding
    /// `attempts/`).
    pub session_dir: PathBuf,
    /// The session id (the bus key).
    pub session_id: SessionId,
    /// `wavecrew.toml`.
    pub config: Config,
    /// `--backend`, when given: every task runs through it.
    pub run_backend: Option<String>,
    /// The session's bus.
    pub bus: SharedBus,
    pub(crate) prompts: Arc<Prompts>,
    /// The session's integration branch once opened (shared by clones):
    /// opened once per process, not once per use.
    pub(crate) integration: Arc<std::sync::OnceLock<wavecrew_isolation::Integration>>,
    /// The task's runs of the project's suite made so far (shared by
    /// clones): one per version of the work ([`crate::suite`]).
    pub(crate) task_runs: crate::suite_run::TaskRuns,
}

impl std::fmt::Debug for RoleContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleContext")
            .field("project_root", &self.project_root)
            .field("session_dir", &self.session_dir)
            .field("session_id", &self.session_id)
            .field("run_backend", &self.run_backend)
            .finish_non_exhaustive()
    }
}

impl RoleContext {
    /// A context with the built-in prompt templates and no `--backend`.
    pub fn new(
        project_root: PathBuf,
        session_dir: PathBuf,
        session_id: SessionId,
        config: Config,
        bus: SharedBus,
    ) -> Self {
        RoleContext {
            project_root,
            session_dir,
            session_id,
            config,
            run_backend: None,
            bus,
            prompts: Arc::new(Prompts::new()),
            integration: Arc::default(),
            task_runs: Arc::default(),
        }
    }

    /// The same context with `--backend` set (or cleared).
    #[must_use]
    pub fn with_backend(mut self, backend: Option<String>) -> Self {
        self.run_backend = backend;
        self
    }

    /// The session folder's name (`TC-x-2026-11-23`).
    pub fn session_name(&self) -> String {
        self.session_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The backend of `task`: `--backend` → task `metadata.executor` →
    /// `plan_backend` (a plan's `Execution Backend:`) → auto from the
    /// description.
    pub fn decide(&self, task: &Task, plan_backend: Option<&str>) -> Decision {
        resolve_executor(
            &self.config,
            self.run_backend.as_deref(),
            task.executor(),
            plan_backend,
            &task.description,
        )
    }

    /// The attempts allowed per backend: `[routing] max_retries` + 1.
    pub fn max_attempts(&self) -> u32 {
        self.config.routing.max_retries + 1
    }
}
