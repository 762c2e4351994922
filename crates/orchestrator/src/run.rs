//! A foreground run from a session folder, for `wavecrew run`,
//! `wavecrew-team run|start|resume` and embedders: open the session (seed
//! 001's validation, the project, `wavecrew.toml`, the store and the bus),
//! reconcile it, check its graph, and
//! build the [`Team`] with the run's options. The caller drives
//! [`Team::run`] (with its own interruption, e.g. Ctrl-C) and reads the end
//! from [`Team::finish`], whose [`crate::Finished`] carries the budget
//! verdict too.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wavecrew_backends::config::{Config, IsolationMode};
use wavecrew_backends::governor::Governor;
use wavecrew_core::store::LeasePolicy;
use wavecrew_core::{FileTaskStore, TaskStore};
use wavecrew_msgbus::{Bus, Durability, KeyUse};

use crate::reconcile::{Reconciled, reconcile};
use crate::team::Team;
use crate::validate::{ValidSession, check_graph, validate};
use crate::vocabulary::{FailurePolicy, RemoteWorkers, TeamOptions};

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The session, its graph or `wavecrew.toml` is wrong: the user's to
    /// fix (exit 2). The message names the file and what is wrong.
    #[error("{0}")]
    BadInput(String),
    /// The machine failed (exit 4): a store, the bus, the disk.
    #[error("{0}")]
    Internal(String),
}

impl RunError {
    /// Whether this is the user's input to fix rather than the machine's.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, RunError::BadInput(_))
    }
}

impl From<wavecrew_core::CoreError> for RunError {
    fn from(e: wavecrew_core::CoreError) -> Self {
        if e.is_bad_input() {
            RunError::BadInput(e.to_string())
        } else {
            RunError::Internal(e.to_string())
        }
    }
}

/// How a run is asked for: the flags of `wavecrew run`.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Workers at once (default: `[limits] max_parallel`; one in place).
    pub max_parallel: Option<usize>,
    /// What a failed task does to the rest of the pipeline.
    pub on_failure: FailurePolicy,
    /// Respawns of a task whose worker crashed.
    pub crash_retries: u32,
    /// Run every task through this backend.
    pub backend: Option<String>,
    /// Crossing the run budget stops the running attempts too.
    pub hard_budget: bool,
    /// `--config`, handed to every worker.
    pub config_file: Option<PathBuf>,
    /// `--sandbox`, handed to every worker.
    pub sandbox: Option<wavecrew_backends::config::SandboxMode>,
    /// Run each task on remote hosts instead of as a local process.
    pub remote: Option<Arc<dyn RemoteWorkers>>,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            max_parallel: None,
            on_failure: FailurePolicy::Continue,
            crash_retries: 2,
            backend: None,
            hard_budget: false,
            config_file: None,
            sandbox: None,
            remote: None,
        }
    }
}

/// An open session, ready to be prepared and run.
#[derive(Debug)]
pub struct OpenSession {
    /// The validated session (its folder canonical).
    pub valid: ValidSession,
    /// The project root (the folder holding `.workflow/`).
    pub root: PathBuf,
    /// The task store.
    pub store: Arc<FileTaskStore>,
    /// The bus, for the orchestrator's records.
    pub bus: Arc<Bus>,
    /// `wavecrew.toml` (or `--config`).
    pub config: Config,
}

impl OpenSession {
    /// Validate the session folder (seed 001's messages, with a hint) and
    /// open its project, configuration, store and bus.
    pub fn open(session: Option<&Path>, config_file: Option<&Path>) -> Result<Self, RunError> {
        let valid =
            validate(session).map_err(|e| RunError::BadInput(format!("{e}\n{}", e.hint())))?;
        let dir = valid
            .dir
            .canonicalize()
            .map_err(|e| RunError::Internal(format!("{}: {e}", valid.dir.display())))?;
        let root = wavecrew_core::source::project_root(&dir).ok_or_else(|| {
            RunError::BadInput(format!(
                "{}: not inside a project (no .workflow folder above it)",
                dir.display()
            ))
        })?;
        let valid = ValidSession { dir, ..valid };
        let config =
            Config::discover(&root, config_file).map_err(|e| RunError::BadInput(e.to_string()))?;
        let store = Arc::new(FileTaskStore::for_session(&valid.dir));
        let (bus, _) = Bus::open(
            &root,
            valid.session.session_id.as_str(),
            KeyUse::Write,
            Durability::Batch,
        )
        .map_err(|e| RunError::Internal(e.to_string()))?;
        Ok(OpenSession {
            valid,
            root,
            store,
            bus: Arc::new(bus),
            config,
        })
    }

    /// Phase 0: reconcile the store, the session file and the bus. What
    /// it did is returned for the caller to tell; then [`Self::check_graph`].
    pub fn reconcile(&mut self) -> Result<Reconciled, RunError> {
        Ok(reconcile(
            &mut self.valid,
            &*self.store,
            &*self.bus,
            &LeasePolicy::default(),
        )?)
    }

    /// The graph of the store's tasks checked before anything starts: a
    /// cycle or an unknown dependency is bad input, with its path.
    pub fn check_graph(&self) -> Result<(), RunError> {
        let tasks = self.store.list()?;
        check_graph(&tasks)
            .map_err(|e| RunError::BadInput(format!("{}: {e}", self.valid.dir.display())))
    }

    /// Whether the project can hold the run's workspaces, checked once
    /// before any task starts: an isolated run in a git repository without
    /// a commit cannot branch from anything, so it is refused here with
    /// what to do, instead of failing every task one by one.
    pub fn check_workspace(&self) -> Result<(), RunError> {
        if self.config.isolation.mode != IsolationMode::Worktree {
            return Ok(());
        }
        // No git work tree: a shadow repository is made from the files. A
        // repository that cannot be read is each task's error to tell.
        let Ok(Some(repo)) = wavecrew_isolation::Repo::open(&self.root) else {
            return Ok(());
        };
        match repo.head_commit() {
            Ok(None) => Err(RunError::BadInput(format!(
                "the git repository at {} has no commit yet, and isolated tasks start from one \
                 (each works in a worktree of a branch made from HEAD); commit your files first \
                 (`git add -A && git commit -m \"start\"`), or run in the folder itself with \
                 `[isolation] mode = \"in-place\"` in wavecrew.toml",
                repo.work_tree().display()
            ))),
            Ok(Some(_)) | Err(_) => Ok(()),
        }
    }

    /// Record whether crossing the run budget stops running attempts too
    /// (the workers read it from the session's governor state).
    pub fn set_hard_budget(&self, hard: bool) -> Result<(), RunError> {
        Governor::for_session(&self.config, &self.valid.dir)
            .set_hard_budget(hard)
            .map_err(|e| RunError::Internal(format!("governor: {e}")))
    }

    /// The orchestrator's options for `spec`.
    pub fn options(&self, spec: &RunSpec) -> TeamOptions {
        TeamOptions {
            max_parallel: max_parallel(spec.max_parallel, &self.config),
            on_failure: spec.on_failure,
            crash_retries: spec.crash_retries,
            backend: spec.backend.clone(),
            config_file: spec.config_file.clone(),
            sandbox: spec.sandbox,
            config: self.config.clone(),
            remote: spec.remote.clone(),
            ..TeamOptions::default()
        }
    }

    /// The orchestrator over this session with `spec`'s options.
    pub fn team(&self, spec: &RunSpec) -> Team<Bus> {
        Team::new(
            self.valid.clone(),
            self.store.clone(),
            self.bus.clone(),
            self.options(spec),
        )
    }
}

/// Workers at once: `--max-parallel`, else `[limits] max_parallel` for an
/// isolated run, else one: in place, every task shares the project folder,
/// so a neighbour's half-done edit would fail a task's validation.
pub fn max_parallel(flag: Option<usize>, config: &Config) -> usize {
    match flag {
        Some(n) => n.max(1),
        None if config.isolation.mode == IsolationMode::InPlace => 1,
        None => config.limits.max_parallel.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_runs_one_at_a_time_unless_told() {
        let mut config = Config::default();
        config.isolation.mode = IsolationMode::InPlace;
        assert_eq!(max_parallel(None, &config), 1);
        assert_eq!(max_parallel(Some(3), &config), 3);
        assert_eq!(max_parallel(Some(0), &config), 1);
        config.isolation.mode = IsolationMode::Worktree;
        assert_eq!(
            max_parallel(None, &config),
            config.limits.max_parallel.max(1)
        );
    }

    #[test]
    fn a_missing_session_is_bad_input_with_the_hint() {
        let e = OpenSession::open(Some(Path::new("/no/such/TC-x")), None).unwrap_err();
        assert!(e.is_bad_input());
        assert!(
            e.to_string().contains("hint: re-run team-coordinate"),
            "{e}"
        );
    }
}
