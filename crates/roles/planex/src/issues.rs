//! The issue store of ccw, read and written directly (`.workflow/issues/`):
//! `issues.jsonl` (one issue per line), `solutions/<issue-id>.jsonl` (one
//! solution per line, the bound one has `is_bound: true`), and
//! `issue-history.jsonl` (where a completed issue moves, as `ccw issue
//! update --status completed` does). Every change takes `.workflow/issues/
//! .lock` and rewrites the file atomically; unknown fields are kept.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// An issue-store problem: the file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A line is not a JSON object.
    #[error("{path}: line {line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What serde said.
        message: String,
    },
    /// The issue is in neither `issues.jsonl` nor the history.
    #[error("issue {0} not found in .workflow/issues/issues.jsonl")]
    NotFound(String),
}

/// The issue store under a project root.
#[derive(Debug, Clone)]
pub struct IssueStore {
    dir: PathBuf,
}

fn io(path: &Path, e: impl std::fmt::Display) -> IssueError {
    IssueError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

fn read_lines(path: &Path) -> Result<Vec<Map<String, Value>>, IssueError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(path, e)),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str::<Map<String, Value>>(l).map_err(|e| IssueError::Parse {
                path: path.to_owned(),
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

fn write_lines(path: &Path, items: &[Map<String, Value>]) -> Result<(), IssueError> {
    let mut text = String::new();
    for item in items {
        text.push_str(&serde_json::to_string(item).map_err(|e| io(path, e))?);
        text.push('\n');
    }
    wavecrew_core::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| io(path, e))
}

impl IssueStore {
    /// The store of `project_root` (`.workflow/issues/`).
    pub fn new(project_root: &Path) -> Self {
        IssueStore {
            dir: project_root.join(".workflow/issues"),
        }
    }

    fn lock(&self) -> Result<wavecrew_sys::lock::FileLock, IssueError> {
        wavecrew_sys::lock::lock_file(&self.dir.join(".lock")).map_err(|e| io(&e.path, e.source))
    }

    /// The issue, from `issues.jsonl` or the history.
    pub fn issue(&self, id: &str) -> Result<Map<String, Value>, IssueError> {
        for file in ["issues.jsonl", "issue-history.jsonl"] {
            if let Some(i) = read_lines(&self.dir.join(file))?
                .into_iter()
                .find(|i| i.get("id").and_then(Value::as_str) == Some(id))
            {
                return Ok(i);
            }
        }
        Err(IssueError::NotFound(id.to_owned()))
    }

    /// The bound solution of an issue: the `is_bound` line of
    /// `solutions/<id>.jsonl`, else the one the issue's
    /// `bound_solution_id` names.
    pub fn bound_solution(&self, id: &str) -> Result<Option<Map<String, Value>>, IssueError> {
        let solutions = read_lines(&self.dir.join("solutions").join(format!("{id}.jsonl")))?;
        if let Some(s) = solutions
            .iter()
            .find(|s| s.get("is_bound").and_then(Value::as_bool) == Some(true))
        {
            return Ok(Some(s.clone()));
        }
        let bound_id = self.issue(id).ok().and_then(|i| {
            i.get("bound_solution_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        Ok(bound_id.and_then(|b| {
            solutions
                .into_iter()
                .find(|s| s.get("id").and_then(Value::as_str) == Some(b.as_str()))
        }))
    }

    /// Set an issue's status (`executing`, `completed`, `failed`); a
    /// completed issue moves to `issue-history.jsonl` with `completed_at`.
    pub fn set_status(&self, id: &str, status: &str) -> Result<(), IssueError> {
        let _lock = self.lock()?;
        let path = self.dir.join("issues.jsonl");
        let mut issues = read_lines(&path)?;
        let Some(pos) = issues
            .iter()
            .position(|i| i.get("id").and_then(Value::as_str) == Some(id))
        else {
            // Already moved to the history: completing again is a no-op.
            if status == "completed" && self.issue(id).is_ok() {
                return Ok(());
            }
            return Err(IssueError::NotFound(id.to_owned()));
        };
        let now = jiff::Timestamp::now().to_string();
        issues[pos].insert("status".into(), Value::from(status));
        issues[pos].insert("updated_at".into(), Value::from(now.clone()));
        if status == "completed" {
            let mut done = issues.remove(pos);
            done.insert("completed_at".into(), Value::from(now));
            let history_path = self.dir.join("issue-history.jsonl");
            let mut history = read_lines(&history_path)?;
            history.push(done);
            // History first: a crash in between leaves the issue in both
            // files (harmless), never in neither.
            write_lines(&history_path, &history)?;
        }
        write_lines(&path, &issues)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_updates_and_the_move_to_history() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".workflow/issues");
        std::fs::create_dir_all(dir.join("solutions")).unwrap();
        std::fs::write(
            dir.join("issues.jsonl"),
            "{\"id\":\"ISS-20260226-001\",\"title\":\"Login\",\"status\":\"planned\",\"custom\":1}\n{\"id\":\"GH-7\",\"title\":\"x\",\"status\":\"queued\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("solutions/ISS-20260226-001.jsonl"),
            "{\"id\":\"SOL-1\",\"is_bound\":false,\"tasks\":[]}\n{\"id\":\"SOL-2\",\"is_bound\":true,\"tasks\":[{\"id\":\"T1\"}]}\n",
        )
        .unwrap();
        let store = IssueStore::new(tmp.path());
        assert_eq!(
            store.bound_solution("ISS-20260226-001").unwrap().unwrap()["id"],
            "SOL-2"
        );
        store.set_status("ISS-20260226-001", "executing").unwrap();
        assert_eq!(
            store.issue("ISS-20260226-001").unwrap()["status"],
            "executing"
        );
        assert_eq!(store.issue("ISS-20260226-001").unwrap()["custom"], 1);
        store.set_status("ISS-20260226-001", "completed").unwrap();
        let left = std::fs::read_to_string(dir.join("issues.jsonl")).unwrap();
        assert!(!left.contains("ISS-20260226-001") && left.contains("GH-7"));
        assert_eq!(
            store.issue("ISS-20260226-001").unwrap()["status"],
            "completed"
        );
        store.set_status("ISS-20260226-001", "completed").unwrap();
        assert!(matches!(
            store.set_status("ISS-1", "executing"),
            Err(IssueError::NotFound(_))
        ));
    }
}
