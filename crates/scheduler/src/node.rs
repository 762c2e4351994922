//! The scheduler's input: one [`TaskNode`] per task.
//!
//! The scheduler does not read task files; the caller turns whatever it
//! loaded (a task store, `task-analysis.json`, plan text) into plain nodes:
//! an id, the ids it depends on, and the few facts scheduling needs.

use serde::{Deserialize, Serialize};
use wavecrew_core::TaskId;

/// The estimate a node gets when none is given, in seconds.
pub const DEFAULT_ESTIMATE: f64 = 1.0;

/// One task as the scheduler sees it.
///
/// Build one with [`TaskNode::new`] and the `with_*` setters:
///
/// ```
/// use wavecrew_core::TaskId;
/// use wavecrew_scheduler::TaskNode;
///
/// let id = |s: &str| TaskId::new(s).unwrap();
/// let node = TaskNode::new(id("IMPL-002"), [id("IMPL-001")])
///     .with_estimate(120.0)
///     .with_class("codex")
///     .with_files(["src/auth.rs"]);
/// assert_eq!(node.deps, [id("IMPL-001")]);
/// assert_eq!(node.weight, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskNode {
    /// The task's id.
    pub id: TaskId,
    /// The tasks this one waits for. Repeated ids count once; an id that
    /// names no task exactly but matches exactly one task by prefix and
    /// number (`IMPL-3` for `IMPL-003`) resolves to that task.
    pub deps: Vec<TaskId>,
    /// The task has already completed: it is not scheduled, and depending
    /// on it is satisfied. Its own dependencies are no longer checked.
    #[serde(default)]
    pub done: bool,
    /// Expected duration in seconds (finite, not negative); drives the
    /// critical path and the dispatcher's priorities.
    #[serde(default = "default_estimate")]
    pub estimate: f64,
    /// How many slots of the global limit the task occupies while it runs
    /// (0 counts as 1; more than the limit means it runs alone).
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// A class such as a backend name, for per-class limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Further classes the task belongs to (its role beside its backend,
    /// say): a task takes one slot of every limited class it is in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_classes: Vec<String>,
    /// Files the task declares it will touch. Two tasks whose files overlap
    /// (the same path, or one path inside the other's folder) never run at
    /// the same time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

fn default_estimate() -> f64 {
    DEFAULT_ESTIMATE
}

fn default_weight() -> u32 {
    1
}

impl TaskNode {
    /// A pending task with the given dependencies, estimate 1 s, weight 1,
    /// no class and no files.
    pub fn new(id: TaskId, deps: impl IntoIterator<Item = TaskId>) -> Self {
        Self {
            id,
            deps: deps.into_iter().collect(),
            done: false,
            estimate: DEFAULT_ESTIMATE,
            weight: 1,
            class: None,
            more_classes: Vec::new(),
            files: Vec::new(),
        }
    }

    /// Mark the task as already completed (or not).
    #[must_use]
    pub fn with_done(mut self, done: bool) -> Self {
        self.done = done;
        self
    }

    /// Set the expected duration in seconds.
    #[must_use]
    pub fn with_estimate(mut self, seconds: f64) -> Self {
        self.estimate = seconds;
        self
    }

    /// Set the number of global slots the task occupies.
    #[must_use]
    pub fn with_weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// Set the task's class (for per-class limits).
    #[must_use]
    pub fn with_class(mut self, class: impl Into<String>) -> Self {
        self.class = Some(class.into());
        self
    }

    /// Add a further class (for per-class limits): a task in several
    /// limited classes runs only when each of them has a free slot.
    #[must_use]
    pub fn with_more_class(mut self, class: impl Into<String>) -> Self {
        self.more_classes.push(class.into());
        self
    }

    /// Every class of the task: [`TaskNode::class`], then
    /// [`TaskNode::more_classes`].
    pub fn classes(&self) -> impl Iterator<Item = &str> + '_ {
        self.class
            .as_deref()
            .into_iter()
            .chain(self.more_classes.iter().map(String::as_str))
    }

    /// Set the files the task declares.
    #[must_use]
    pub fn with_files<S: Into<String>>(mut self, files: impl IntoIterator<Item = S>) -> Self {
        self.files = files.into_iter().map(Into::into).collect();
        self
    }

    /// The weight the dispatcher uses: at least 1.
    pub fn effective_weight(&self) -> u32 {
        self.weight.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    #[test]
    fn defaults_and_setters() {
        let n = TaskNode::new(id("A-1"), []);
        assert!(!n.done);
        assert!((n.estimate - 1.0).abs() < f64::EPSILON);
        assert_eq!(n.weight, 1);
        let n = n
            .with_done(true)
            .with_weight(0)
            .with_class("gemini")
            .with_files(["a", "b"]);
        assert!(n.done);
        assert_eq!(n.effective_weight(), 1);
        assert_eq!(n.class.as_deref(), Some("gemini"));
        assert_eq!(n.files, ["a", "b"]);
        let n = n.with_more_class("role:developer");
        assert_eq!(
            n.classes().collect::<Vec<_>>(),
            ["gemini", "role:developer"]
        );
    }

    #[test]
    fn deserializes_with_defaults() {
        let n: TaskNode = serde_json::from_str(r#"{"id":"IMPL-001","deps":["IMPL-000"]}"#).unwrap();
        assert_eq!(n, TaskNode::new(id("IMPL-001"), [id("IMPL-000")]));
    }
}
