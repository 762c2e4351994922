//! `task-analysis.json`: capabilities, roles and the dependency graph
//! (ccw-compat §2.4).
//!
//! Two graph shapes exist: the validator's `{<id>: {depends_on: [...], role}}`
//! and what team-coordinate really writes, `{<id>: [<dep>…]}`. Both are read.
//! When the `tasks` array is absent (team-coordinate never writes it) it is
//! derived from the graph.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::id::TaskId;

/// One node of `dependency_graph`, in either shape.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GraphEntry {
    /// The ids this task depends on.
    pub depends_on: Vec<TaskId>,
    /// The role that owns it (object shape only).
    pub role: Option<String>,
    /// Whether it was written as a bare array (kept for round trips).
    pub array_shape: bool,
    /// Other keys of the object shape.
    pub extra: Map<String, Value>,
}

impl Serialize for GraphEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.array_shape {
            return self.depends_on.serialize(s);
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("depends_on", &self.depends_on)?;
        if let Some(role) = &self.role {
            m.serialize_entry("role", role)?;
        }
        for (k, v) in &self.extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for GraphEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = GraphEntry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of task ids or an object with `depends_on`")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<GraphEntry, A::Error> {
                let mut depends_on = Vec::new();
                while let Some(id) = seq.next_element::<TaskId>()? {
                    depends_on.push(id);
                }
                Ok(GraphEntry {
                    depends_on,
                    array_shape: true,
                    ..GraphEntry::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<GraphEntry, A::Error> {
                let mut entry = GraphEntry::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "depends_on" => entry.depends_on = map.next_value()?,
                        "role" => entry.role = map.next_value()?,
                        _ => {
                            let v: Value = map.next_value()?;
                            entry.extra.insert(key, v);
                        }
                    }
                }
                Ok(entry)
            }
        }
        d.deserialize_any(V)
    }
}

/// One entry of `task-analysis.json#tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisTask {
    /// The task id.
    pub id: TaskId,
    /// Its subject (defaults to the id).
    #[serde(default)]
    pub subject: Option<String>,
    /// The role that takes it.
    #[serde(default)]
    pub owner: Option<String>,
    /// Its dependencies.
    #[serde(rename = "blockedBy", default)]
    pub blocked_by: Vec<TaskId>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `task-analysis.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAnalysis {
    /// The capabilities found (shape varies by ccw version; kept as written).
    #[serde(default)]
    pub capabilities: Vec<Value>,
    /// `{<task-id>: …}` in either shape, ordered by id.
    #[serde(default)]
    pub dependency_graph: BTreeMap<TaskId, GraphEntry>,
    /// The roles (kept as written; `team-session.json` has the typed list).
    #[serde(default)]
    pub roles: Vec<Value>,
    /// The tasks; absent in what team-coordinate writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<AnalysisTask>>,
    /// Every other key (`complexity_score`, `complexity`, `artifacts`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskAnalysis {
    /// Read `task-analysis.json`; errors name the file and the field.
    pub fn read(path: &Path) -> Result<Self> {
        crate::fsutil::read_json(path)
    }

    /// The tasks: the `tasks` array when present, otherwise derived from the
    /// graph (id, subject = id, owner = role, blockedBy = depends_on). Tasks
    /// named only in the graph are added to a present array too.
    pub fn effective_tasks(&self) -> Vec<AnalysisTask> {
        let mut tasks = self.tasks.clone().unwrap_or_default();
        for (id, entry) in &self.dependency_graph {
            if let Some(t) = tasks.iter_mut().find(|t| &t.id == id) {
                for dep in &entry.depends_on {
                    if !t.blocked_by.contains(dep) {
                        t.blocked_by.push(dep.clone());
                    }
                }
                if t.owner.is_none() {
                    t.owner.clone_from(&entry.role);
                }
            } else {
                tasks.push(AnalysisTask {
                    id: id.clone(),
                    subject: Some(id.to_string()),
                    owner: entry.role.clone(),
                    blocked_by: entry.depends_on.clone(),
                    extra: Map::new(),
                });
            }
        }
        tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> TaskAnalysis {
        crate::fsutil::parse_json(Path::new("task-analysis.json"), s.as_bytes()).unwrap()
    }

    #[test]
    fn object_shape_with_tasks() {
        let a = parse(
            r#"{ "capabilities": [], "dependency_graph": { "IMPL-001": { "depends_on": [], "role": "developer" },
                 "IMPL-002": { "depends_on": ["IMPL-001"], "role": "developer" } },
                 "roles": [], "tasks": [ { "id": "IMPL-001", "subject": "IMPL-001", "owner": "developer", "blockedBy": [] } ],
                 "complexity_score": 2 }"#,
        );
        let tasks = a.effective_tasks();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[1].blocked_by[0].as_str(), "IMPL-001");
        assert_eq!(tasks[1].owner.as_deref(), Some("developer"));
    }

    #[test]
    fn array_shape_without_tasks_round_trips() {
        let src = r#"{"task_description":"x","dependency_graph":{"A-1":[],"A-2":["A-1"]},"complexity":{"level":"low"}}"#;
        let a = parse(src);
        let tasks = a.effective_tasks();
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[1].blocked_by[0].as_str(), "A-1");
        let back = serde_json::to_value(&a).unwrap();
        assert_eq!(back["dependency_graph"]["A-2"], serde_json::json!(["A-1"]));
        assert_eq!(back["complexity"]["level"], "low");
    }

    #[test]
    fn bad_dependency_is_named() {
        let err = crate::fsutil::parse_json::<TaskAnalysis>(
            Path::new("task-analysis.json"),
            br#"{"dependency_graph":{"A-1":["ok","a/b"]}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("field `dependency_graph.A-1[1]`"), "{err}");
        assert!(err.contains("path separator"), "{err}");
    }
}
