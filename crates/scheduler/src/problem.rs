//! What validation finds: [`GraphProblem`], and [`CheckReport`], the shape
//! of `wavecrew plan check --json`.
//!
//! A problem serialises as `{"kind", "message", "path"?, "ids"?,
//! "breaking_edges"?}`; a report
//! as `{"ok": bool, "errors": [problem, …]}` (plus `"warnings"` when a
//! forced cycle policy turned cycles into warnings).

use std::fmt;

use serde::{Deserialize, Serialize};
use wavecrew_core::TaskId;

/// The kind of a [`GraphProblem`]; its string form is the JSON `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProblemKind {
    /// Tasks that depend on each other in a circle.
    Cycle,
    /// A dependency that names no task of the session.
    UnknownDependency,
    /// A task that depends on itself.
    SelfDependency,
    /// Two tasks with the same id.
    DuplicateTask,
    /// An estimate that is negative, infinite or not a number.
    InvalidEstimate,
}

impl ProblemKind {
    /// The stable string form: `cycle`, `unknown_dependency`, …
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Cycle => "cycle",
            ProblemKind::UnknownDependency => "unknown_dependency",
            ProblemKind::SelfDependency => "self_dependency",
            ProblemKind::DuplicateTask => "duplicate_task",
            ProblemKind::InvalidEstimate => "invalid_estimate",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong with a task graph, found before anything runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphProblem {
    kind: ProblemKind,
    message: String,
    /// For a cycle: the ids along it, first id repeated at the end; each id
    /// depends on the next one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    path: Vec<TaskId>,
    /// The ids at fault (the task and the missing dependency, the duplicated
    /// id, every member of a cycle's strongly connected group).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ids: Vec<TaskId>,
    /// For a cycle: dependencies (`(task, dependency)`) whose removal breaks
    /// it, as `[task, dependency]` pairs in JSON. Also named in the message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    breaking_edges: Vec<(TaskId, TaskId)>,
}

impl GraphProblem {
    pub(crate) fn new(kind: ProblemKind, message: String) -> Self {
        Self {
            kind,
            message,
            path: Vec::new(),
            ids: Vec::new(),
            breaking_edges: Vec::new(),
        }
    }

    pub(crate) fn with_ids(mut self, ids: Vec<TaskId>) -> Self {
        self.ids = ids;
        self
    }

    pub(crate) fn with_path(mut self, path: Vec<TaskId>) -> Self {
        self.path = path;
        self
    }

    pub(crate) fn with_breaking_edges(mut self, edges: Vec<(TaskId, TaskId)>) -> Self {
        self.breaking_edges = edges;
        self
    }

    /// The kind as its stable string: `cycle`, `unknown_dependency`,
    /// `self_dependency`, `duplicate_task` or `invalid_estimate`.
    pub fn kind(&self) -> &'static str {
        self.kind.as_str()
    }

    /// The kind as an enum.
    pub fn problem_kind(&self) -> ProblemKind {
        self.kind
    }

    /// The message for people; names every id at fault.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// For a cycle, the path `[a, b, …, a]` where each id depends on the
    /// next; empty otherwise.
    pub fn path(&self) -> &[TaskId] {
        &self.path
    }

    /// The ids at fault.
    pub fn ids(&self) -> &[TaskId] {
        &self.ids
    }

    /// For a cycle, the dependencies `(task, dependency)` whose removal
    /// breaks it: every edge of a simple cycle; when the cycle shares its
    /// group with other cycles and some edges break all of them, only those.
    pub fn breaking_edges(&self) -> &[(TaskId, TaskId)] {
        &self.breaking_edges
    }
}

impl fmt::Display for GraphProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The result of checking a graph, as `wavecrew plan check --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// No errors were found.
    pub ok: bool,
    /// Every problem found (empty when `ok`).
    pub errors: Vec<GraphProblem>,
    /// Problems that do not stop a run: cycles under
    /// [`CyclePolicy::Force`](crate::CyclePolicy::Force).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<GraphProblem>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    #[test]
    fn serialises_to_the_contract_shape() {
        let p = GraphProblem::new(
            ProblemKind::SelfDependency,
            "`A-1` depends on itself".into(),
        )
        .with_ids(vec![id("A-1")]);
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "self_dependency", "message": "`A-1` depends on itself", "ids": ["A-1"]})
        );
        let back: GraphProblem = serde_json::from_value(v).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn kinds_have_stable_names() {
        assert_eq!(
            ProblemKind::UnknownDependency.to_string(),
            "unknown_dependency"
        );
        assert_eq!(
            serde_json::to_value(ProblemKind::DuplicateTask).unwrap(),
            serde_json::json!("duplicate_task")
        );
    }
}
