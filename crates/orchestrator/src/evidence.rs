//! Task state the run did not write is not believed. An agent runs as the
//! user, and without the sandbox it can write the session's task files: a
//! task file that says `completed` counts only with its own attempt's
//! evidence (an attempt of the task that ran to its end, its
//! `attempts/<task>/<n>/outcome.json`); anything else is reported as
//! tampered, by path, and the task runs. A task file that disappeared is
//! made again from the session's analysis, and reported.
//!
//! Runs over hosts are not checked here: their attempts live on the hosts
//! (the engine there holds the truth of a task).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use wavecrew_core::bus::MessageBus;
use wavecrew_core::{SessionLayout, Task, TaskId, TaskStatus, TaskStore};

use crate::vocabulary::{log_record, task_data};

/// What the run checks a task's state against: the session folder and the
/// tasks of its analysis (to make a deleted task file again).
#[derive(Clone)]
pub(crate) struct Evidence {
    session_dir: PathBuf,
    analysis: Arc<HashMap<TaskId, Task>>,
}

impl Evidence {
    /// The evidence of the session at `session_dir`, whose analysis
    /// defines `analysis`.
    pub(crate) fn new(session_dir: &Path, analysis: impl IntoIterator<Item = Task>) -> Self {
        Evidence {
            session_dir: session_dir.to_owned(),
            analysis: Arc::new(analysis.into_iter().map(|t| (t.id.clone(), t)).collect()),
        }
    }

    /// Whether an attempt of `task` ran to its end (its `outcome.json`).
    fn attempt_ended(&self, task: &TaskId) -> bool {
        let layout = SessionLayout::new(&self.session_dir);
        layout.attempt_numbers(task.as_str()).iter().any(|n| {
            layout
                .attempts(task.as_str())
                .join(n.to_string())
                .join("outcome.json")
                .is_file()
        })
    }

    /// The file of `task` in the store.
    fn file_of(&self, task: &TaskId) -> PathBuf {
        wavecrew_core::FileTaskStore::for_session(&self.session_dir).path_of(task)
    }

    /// `task` as the store has it, unless it says it ended without
    /// evidence: then it is reported as tampered, set back to pending
    /// (its forged result dropped) and returned so. Only `completed` is
    /// checked: a failed, blocked or skipped task runs nothing more, and a
    /// pending one runs anyway.
    pub(crate) fn believe<B: MessageBus + ?Sized>(
        &self,
        store: &dyn TaskStore,
        bus: &B,
        task: Task,
    ) -> wavecrew_core::Result<Task> {
        if task.status != TaskStatus::Completed || self.attempt_ended(&task.id) {
            return Ok(task);
        }
        let path = self.file_of(&task.id);
        tampered(
            bus,
            &task.id,
            &path,
            &format!(
                "tampered: {} says {} is completed, but no attempt of it ran; wavecrew did not \
                 write that, and the task runs",
                path.display(),
                task.id.as_str()
            ),
        );
        store.update(&task.id, &mut |t| {
            t.status = TaskStatus::Pending;
            t.result = None;
            t.lease = None;
            Ok(())
        })
    }

    /// Make `task`'s file again from the analysis after it disappeared
    /// during the run, reported as tampered; `None` when the analysis does
    /// not know it.
    pub(crate) fn recreate<B: MessageBus + ?Sized>(
        &self,
        store: &dyn TaskStore,
        bus: &B,
        task: &TaskId,
    ) -> wavecrew_core::Result<Option<Task>> {
        let Some(planned) = self.analysis.get(task) else {
            return Ok(None);
        };
        let path = self.file_of(task);
        tampered(
            bus,
            task,
            &path,
            &format!(
                "tampered: {} was deleted during the run; made again from the session's analysis, \
                 and the task runs",
                path.display()
            ),
        );
        match store.create(planned.clone()) {
            Ok(t) => Ok(Some(t)),
            // Made again meanwhile (by another worker's read): read it.
            Err(wavecrew_core::CoreError::TaskExists { .. }) => store.get(task).map(Some),
            Err(e) => Err(e),
        }
    }
}

/// Say `summary` on the console and on the bus (`error`, with the path in
/// `data.tampered`).
fn tampered<B: MessageBus + ?Sized>(bus: &B, task: &TaskId, path: &Path, summary: &str) {
    tracing::error!("{summary}");
    let mut data = task_data(task);
    data.insert("tampered".into(), json!(path.display().to_string()));
    log_record(bus, "error", summary, data);
}
