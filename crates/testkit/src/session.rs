//! A project folder with one session in it, for tests.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use wavecrew_core::{FileTaskStore, SessionId, Task, TaskId, TaskStore};

/// Builds `<tmp>/.workflow/.team/<session>/` with whatever files a test needs.
#[derive(Debug)]
pub struct SessionBuilder {
    id: SessionId,
    tasks: Vec<Task>,
    files: Vec<(PathBuf, String)>,
}

/// A built session; the folder is removed when this is dropped.
#[derive(Debug)]
pub struct TestSession {
    /// The temporary project root (holds `.workflow/`).
    pub root: tempfile::TempDir,
    /// The session folder.
    pub dir: PathBuf,
    /// The session id.
    pub id: SessionId,
}

impl SessionBuilder {
    /// A session with this id (panics on an invalid id: tests only).
    pub fn new(id: &str) -> Self {
        SessionBuilder {
            id: SessionId::new(id).expect("test session id"),
            tasks: Vec::new(),
            files: Vec::new(),
        }
    }

    /// Add a task to the task store, depending on `deps`.
    #[must_use]
    pub fn task(mut self, id: &str, deps: &[&str]) -> Self {
        let mut task = Task::new(
            TaskId::new(id).expect("test task id"),
            id,
            format!("do {id}"),
        );
        task.blocked_by = deps
            .iter()
            .map(|d| TaskId::new(*d).expect("test dep id"))
            .collect();
        self.tasks.push(task);
        self
    }

    /// Add a fully built task.
    #[must_use]
    pub fn with_task(mut self, task: Task) -> Self {
        self.tasks.push(task);
        self
    }

    /// Write a file relative to the session folder.
    #[must_use]
    pub fn file(mut self, rel: impl Into<PathBuf>, contents: impl Into<String>) -> Self {
        self.files.push((rel.into(), contents.into()));
        self
    }

    /// Write a JSON file relative to the session folder.
    #[must_use]
    pub fn json(self, rel: impl Into<PathBuf>, value: &Value) -> Self {
        let text = serde_json::to_string_pretty(value).expect("json");
        self.file(rel, text)
    }

    /// Create the folders and files.
    pub fn build(self) -> TestSession {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join(".workflow/.team").join(self.id.as_str());
        fs::create_dir_all(&dir).expect("session dir");
        let store = FileTaskStore::for_session(&dir);
        for task in self.tasks {
            store.create(task).expect("create task");
        }
        for (rel, text) in self.files {
            let path = dir.join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            fs::write(path, text).expect("write file");
        }
        TestSession {
            root,
            dir,
            id: self.id,
        }
    }
}

impl Drop for TestSession {
    fn drop(&mut self) {
        crate::git::remove_worktrees_beside(self.root.path());
    }
}

impl TestSession {
    /// The project root (the folder holding `.workflow/`).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The session's task store.
    pub fn store(&self) -> FileTaskStore {
        FileTaskStore::for_session(&self.dir)
    }
}
