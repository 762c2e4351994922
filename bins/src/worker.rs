//! What every role binary does before its role runs: open the session
//! folder (validated id, project root above it), `wavecrew.toml`, the task
//! store and the bus; and the common flags.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use wavecrew_backends::config::Config;
use wavecrew_core::{FileTaskStore, SessionId, TaskId};
use wavecrew_msgbus::{Bus, Durability, KeyUse};

use crate::exit::CliError;

/// The flags of every role binary.
#[derive(Debug, Args)]
pub struct WorkerFlags {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: PathBuf,
    /// Take exactly this task (without it: every ready task of the role).
    #[arg(long)]
    pub task: Option<String>,
    /// Run every task through this backend.
    #[arg(long)]
    pub backend: Option<String>,
    /// Read this configuration file instead of `<project root>/wavecrew.toml`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With `--task`: then take the one successor of the role it unblocked.
    #[arg(long)]
    pub fast_advance: bool,
    /// The run's failure policy: with `always`, a task whose blockers
    /// ended (failed ones included) may be taken.
    #[arg(long, value_parser = crate::team::failure_policy_parser(), default_value = "continue")]
    pub on_failure: wavecrew_role_team::FailurePolicy,
}

/// The claim rule of a run's failure policy.
pub fn blocker_rule(policy: wavecrew_role_team::FailurePolicy) -> wavecrew_core::BlockerRule {
    match policy {
        wavecrew_role_team::FailurePolicy::Always => wavecrew_core::BlockerRule::Ended,
        _ => wavecrew_core::BlockerRule::Completed,
    }
}

/// An opened session.
pub struct SessionContext {
    /// The session folder (canonical).
    pub dir: PathBuf,
    /// The project root.
    pub root: PathBuf,
    /// The session id (the folder's name).
    pub id: SessionId,
    /// `wavecrew.toml`.
    pub config: Config,
    /// The task store.
    pub store: FileTaskStore,
    /// The bus.
    pub bus: Arc<Bus>,
    /// `--task`, validated.
    pub task: Option<TaskId>,
}

impl SessionContext {
    /// Open the session named by the flags.
    pub fn open(flags: &WorkerFlags) -> Result<Self, CliError> {
        Self::open_dir(
            &flags.session,
            flags.config.as_deref(),
            flags.task.as_deref(),
        )
    }

    /// Open a session folder.
    pub fn open_dir(
        session: &Path,
        config: Option<&Path>,
        task: Option<&str>,
    ) -> Result<Self, CliError> {
        let dir = session.canonicalize().map_err(|e| {
            CliError::bad_input(anyhow::anyhow!("--session {}: {e}", session.display()))
        })?;
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let id = SessionId::new(name)?;
        let root = wavecrew_core::source::project_root(&dir).ok_or_else(|| {
            CliError::bad_input(anyhow::anyhow!(
                "--session {}: not inside a project (no .workflow folder above it)",
                session.display()
            ))
        })?;
        let config = Config::discover(&root, config).map_err(CliError::bad_input)?;
        let task = task.map(TaskId::new).transpose()?;
        let store = FileTaskStore::for_session(&dir);
        let (bus, _) = Bus::open(&root, id.as_str(), KeyUse::Write, Durability::Batch)
            .map_err(CliError::internal)?;
        Ok(SessionContext {
            dir,
            root,
            id,
            config,
            store,
            bus: Arc::new(bus),
            task,
        })
    }
}
