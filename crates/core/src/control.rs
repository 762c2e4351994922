//! What a person asks of a session while it runs, as files in its
//! `control/` folder: the one channel between `wavecrew pause|resume|
//! cancel|retry` (and the cockpit's buttons) and a running orchestrator,
//! which reads it between dispatches. Every file is written atomically
//! ([`crate::fsutil::write_atomic`]), so a reader sees a whole request or
//! none, and works for a session with no orchestrator running (the next
//! run reads it).
//!
//! ```text
//! control/paused          exists while dispatch is paused ({"at": …})
//! control/cancel/<ID>     a request to stop the running task <ID>
//! control/retry/<ID>      <ID> was reset to pending: run another round
//! control/review/<ID>     a person's decision on work awaiting review
//! ```

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::{CoreError, Result};
use crate::id::TaskId;

/// The `control/` folder of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    dir: PathBuf,
}

impl Control {
    /// The control folder of the session folder `session_dir`.
    pub fn new(session_dir: &Path) -> Self {
        Control {
            dir: session_dir.join("control"),
        }
    }

    /// `control/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn paused_file(&self) -> PathBuf {
        self.dir.join("paused")
    }

    fn request(&self, kind: &str, task: &TaskId) -> PathBuf {
        self.dir.join(kind).join(task.as_str())
    }

    /// Whether dispatch is paused.
    pub fn is_paused(&self) -> bool {
        self.paused_file().is_file()
    }

    /// Pause dispatch: no new task starts until [`Control::resume`];
    /// running tasks go on. Returns whether it was running before.
    pub fn pause(&self) -> Result<bool> {
        if self.is_paused() {
            return Ok(false);
        }
        let at = jiff::Timestamp::now().to_string();
        crate::fsutil::write_atomic(
            &self.paused_file(),
            json!({"at": at}).to_string().as_bytes(),
        )?;
        Ok(true)
    }

    /// Resume dispatch. Returns whether it was paused before.
    pub fn resume(&self) -> Result<bool> {
        remove(&self.paused_file())
    }

    /// Ask the orchestrator to stop the running task `task`.
    pub fn request_cancel(&self, task: &TaskId) -> Result<()> {
        let at = jiff::Timestamp::now().to_string();
        crate::fsutil::write_atomic(
            &self.request("cancel", task),
            json!({"at": at}).to_string().as_bytes(),
        )
    }

    /// Whether a cancel of `task` is asked for.
    pub fn cancel_requested(&self, task: &TaskId) -> bool {
        self.request("cancel", task).is_file()
    }

    /// Forget the cancel request of `task` (it was done, or it is stale).
    pub fn clear_cancel(&self, task: &TaskId) -> Result<bool> {
        remove(&self.request("cancel", task))
    }

    /// Forget every cancel request (a run starting: they were for the
    /// workers of an earlier one).
    pub fn clear_cancels(&self) -> Result<usize> {
        self.take("cancel").map(|v| v.len())
    }

    /// Note that `task` was reset for a retry, so that a running
    /// orchestrator runs another round.
    pub fn note_retry(&self, task: &TaskId) -> Result<()> {
        let at = jiff::Timestamp::now().to_string();
        crate::fsutil::write_atomic(
            &self.request("retry", task),
            json!({"at": at}).to_string().as_bytes(),
        )
    }

    /// The tasks reset for a retry since the last call, removed as they
    /// are read.
    pub fn take_retries(&self) -> Result<Vec<TaskId>> {
        self.take("retry")
    }

    fn take(&self, kind: &str) -> Result<Vec<TaskId>> {
        let dir = self.dir.join(kind);
        let mut out = Vec::new();
        for name in crate::fsutil::list_files(&dir) {
            // A temp file of a write under way, or a name that is not a
            // task id (not written by us): leave it.
            if name.starts_with('.') {
                continue;
            }
            let path = dir.join(&name);
            let Ok(id) = TaskId::new(name) else { continue };
            if remove(&path)? {
                out.push(id);
            }
        }
        out.sort();
        Ok(out)
    }
}

/// A person's decision on a task's work that awaits review.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReviewDecision {
    /// Land it (`true`), or revise it (`false`).
    pub approved: bool,
    /// The branch the decision is about (the work the person saw).
    pub branch: String,
    /// What to change (a rejection), as the person wrote it.
    #[serde(default)]
    pub note: String,
    /// Comments on lines of the diff.
    #[serde(default)]
    pub comments: Vec<LineComment>,
    /// When, RFC 3339.
    pub at: String,
}

/// A person's comment on one line of a task's diff.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LineComment {
    /// The file, relative to the project.
    pub file: String,
    /// The line (1-based, in the task's version of the file).
    pub line: u32,
    /// What the person wrote.
    pub text: String,
}

impl Control {
    fn review_file(&self, task: &TaskId) -> PathBuf {
        self.dir
            .join("review")
            .join(format!("{}.json", task.as_str()))
    }

    /// Record a decision on `task`'s work (replacing an earlier one not
    /// taken yet).
    pub fn decide(&self, task: &TaskId, decision: &ReviewDecision) -> Result<()> {
        crate::fsutil::write_json_atomic(&self.review_file(task), decision)
    }

    /// The decision on `task`'s work, if a person made one (left in place).
    pub fn decision(&self, task: &TaskId) -> Result<Option<ReviewDecision>> {
        let path = self.review_file(task);
        if !path.is_file() {
            return Ok(None);
        }
        crate::fsutil::read_json(&path).map(Some)
    }

    /// Forget the decision on `task` (it was acted on).
    pub fn clear_decision(&self, task: &TaskId) -> Result<bool> {
        remove(&self.review_file(task))
    }
}

/// Remove `path`; whether it was there.
fn remove(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CoreError::io("removing", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_and_resume_say_whether_they_changed_anything() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Control::new(tmp.path());
        assert!(!c.is_paused());
        assert!(c.pause().unwrap());
        assert!(c.is_paused());
        assert!(!c.pause().unwrap());
        assert!(c.resume().unwrap());
        assert!(!c.is_paused());
        assert!(!c.resume().unwrap());
    }

    #[test]
    fn cancel_requests_are_per_task_and_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Control::new(tmp.path());
        let a = TaskId::new("IMPL-001").unwrap();
        let b = TaskId::new("IMPL-002").unwrap();
        c.request_cancel(&a).unwrap();
        assert!(c.cancel_requested(&a));
        assert!(!c.cancel_requested(&b));
        assert!(c.clear_cancel(&a).unwrap());
        assert!(!c.cancel_requested(&a));
        c.request_cancel(&a).unwrap();
        c.request_cancel(&b).unwrap();
        assert_eq!(c.clear_cancels().unwrap(), 2);
        assert!(!c.cancel_requested(&b));
    }

    #[test]
    fn a_decision_is_kept_until_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Control::new(tmp.path());
        let a = TaskId::new("IMPL-001").unwrap();
        assert_eq!(c.decision(&a).unwrap(), None);
        let d = ReviewDecision {
            approved: false,
            branch: "wavecrew-tasks/s/IMPL-001/1".into(),
            note: "use a constant".into(),
            comments: vec![LineComment {
                file: "src/lib.rs".into(),
                line: 3,
                text: "<b>not this</b>".into(),
            }],
            at: "2026-11-25T12:00:00Z".into(),
        };
        c.decide(&a, &d).unwrap();
        assert_eq!(c.decision(&a).unwrap(), Some(d));
        assert!(c.clear_decision(&a).unwrap());
        assert_eq!(c.decision(&a).unwrap(), None);
    }

    #[test]
    fn retries_are_taken_once_in_id_order() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Control::new(tmp.path());
        c.note_retry(&TaskId::new("IMPL-002").unwrap()).unwrap();
        c.note_retry(&TaskId::new("IMPL-001").unwrap()).unwrap();
        std::fs::write(c.dir().join("retry/not an id"), "").unwrap();
        let taken: Vec<String> = c
            .take_retries()
            .unwrap()
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
        assert_eq!(taken, ["IMPL-001", "IMPL-002"]);
        assert!(c.take_retries().unwrap().is_empty());
    }
}
