//! Opening a session folder for a role binary: the folder (canonical), its
//! validated id, the project root above it, `wavecrew.toml`, the task store,
//! the bus and the validated `--task`.

use std::path::{Path, PathBuf};

use wavecrew_backends::config::{Config, ConfigError};
use wavecrew_core::{CoreError, FileTaskStore, IdError, SessionId, TaskId};
use wavecrew_msgbus::{Bus, BusError, Durability, KeyUse};

use crate::context::{BusFault, RoleContext, share_bus};

/// Why a session could not be opened or a role could not run.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// The folder named by a flag cannot be opened.
    #[error("{flag} {}: {source}", path.display())]
    Folder {
        /// The flag (`--session`).
        flag: String,
        /// The folder as given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The folder is not inside a project.
    #[error("{flag} {}: not inside a project (no .workflow folder above it)", path.display())]
    NoProject {
        /// The flag (`--session`).
        flag: String,
        /// The folder as given.
        path: PathBuf,
    },
    /// An invalid session or task id.
    #[error(transparent)]
    Id(#[from] IdError),
    /// `wavecrew.toml` is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The bus cannot be opened.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// A bus operation failed.
    #[error(transparent)]
    BusFault(#[from] BusFault),
    /// The task store or the worker loop failed.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The command line is incomplete.
    #[error("{message}")]
    Usage {
        /// What is missing.
        message: String,
    },
}

impl KitError {
    /// Whether this error is the user's input (exit 2) rather than the
    /// machine's (exit 4).
    pub fn is_bad_input(&self) -> bool {
        match self {
            KitError::Folder { .. }
            | KitError::NoProject { .. }
            | KitError::Id(_)
            | KitError::Config(_)
            | KitError::Usage { .. } => true,
            KitError::Bus(_) | KitError::BusFault(_) | KitError::Runtime(_) => false,
            KitError::Core(e) => e.is_bad_input(),
        }
    }
}

/// Where the tasks of a session are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLayout {
    /// A session folder, tasks in its `tasks/`; the bus key is the folder's
    /// name (or `bus_key`).
    Session,
    /// A bare task folder (seed 000's `.workflow/.team/tasks`): the session
    /// folder is its parent and the records go to the bus `bus_key`.
    TaskFolder {
        /// The bus session the records go to.
        bus_key: String,
    },
}

/// What to open.
#[derive(Debug, Clone)]
pub struct OpenSpec<'a> {
    /// The folder as given.
    pub folder: &'a Path,
    /// The flag that named it (for messages): `--session`.
    pub flag: &'a str,
    /// How the folder holds its tasks.
    pub layout: StoreLayout,
    /// `--config`.
    pub config: Option<&'a Path>,
    /// `--task`, unvalidated.
    pub task: Option<&'a str>,
    /// `--backend`.
    pub backend: Option<String>,
    /// `--sandbox`: replaces `[isolation] sandbox`.
    pub sandbox: Option<wavecrew_backends::config::SandboxMode>,
    /// The bus key when it is not the folder's name (`team-session.json`'s
    /// `session_id`).
    pub bus_key: Option<&'a str>,
}

impl<'a> OpenSpec<'a> {
    /// A session folder named by `--session`.
    pub fn session(folder: &'a Path) -> Self {
        OpenSpec {
            folder,
            flag: "--session",
            layout: StoreLayout::Session,
            config: None,
            task: None,
            backend: None,
            sandbox: None,
            bus_key: None,
        }
    }
}

/// An opened session: the role context, the task store and `--task`.
#[derive(Debug)]
pub struct RoleSession {
    /// What the roles hold.
    pub ctx: RoleContext,
    /// The task store.
    pub store: FileTaskStore,
    /// `--task`, validated.
    pub task: Option<TaskId>,
}

impl RoleSession {
    /// Open what `spec` names.
    pub fn open(spec: &OpenSpec<'_>) -> Result<RoleSession, KitError> {
        let folder = spec
            .folder
            .canonicalize()
            .map_err(|source| KitError::Folder {
                flag: spec.flag.to_owned(),
                path: spec.folder.to_owned(),
                source,
            })?;
        let (session_dir, store, key) = match &spec.layout {
            StoreLayout::Session => {
                let name = folder
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_owned();
                let key = spec.bus_key.map_or(name, str::to_owned);
                (folder.clone(), FileTaskStore::for_session(&folder), key)
            }
            StoreLayout::TaskFolder { bus_key } => (
                folder.parent().unwrap_or(&folder).to_owned(),
                FileTaskStore::new(folder.clone()),
                spec.bus_key.unwrap_or(bus_key).to_owned(),
            ),
        };
        let session_id = SessionId::new(key)?;
        let root =
            wavecrew_core::source::project_root(&folder).ok_or_else(|| KitError::NoProject {
                flag: spec.flag.to_owned(),
                path: spec.folder.to_owned(),
            })?;
        let mut config = Config::discover(&root, spec.config)?;
        if let Some(mode) = spec.sandbox {
            config.isolation.sandbox = mode;
        }
        let task = spec.task.map(TaskId::new).transpose()?;
        let (bus, _) = Bus::open(&root, session_id.as_str(), KeyUse::Write, Durability::Batch)?;
        let ctx = RoleContext::new(root, session_dir, session_id, config, share_bus(bus))
            .with_backend(spec.backend.clone());
        Ok(RoleSession { ctx, store, task })
    }
}
