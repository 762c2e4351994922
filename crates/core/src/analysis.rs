//! `task-analysis.json`: capabilities, roles and the dependency graph
//! (ccw-compat §2.4).
//!
//! Two graph shapes exist: the validator's `{<id>: {depends_on: [...], role}}`
//! and what team-coordinate really writes, `{<id>: [<dep>…]}`. Both are read.
//! When the `tasks` array is absent (team-coordinate never writes it) it is
//! derived from the graph, and what team-coordinate says about each task
//! (`capabilities[].tasks[{id, description}]`) is attached to it, so the
//! store task ([`AnalysisTask::to_task`]) and the agent's prompt carry it.
//!
//! Everything here indexes by id: [`TaskAnalysis::effective_tasks`] runs in
//! O(V + E) (a session of 200,000 tasks loads in a fraction of a second).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::id::TaskId;
use crate::task::Task;

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
///
/// Read by a hand-written visitor rather than `#[serde(flatten)]`, which
/// would buffer every entry before reading it (twice the time and three
/// times the memory on a 200,000-task file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalysisTask {
    /// The task id.
    pub id: TaskId,
    /// Its subject (defaults to the id).
    #[serde(default)]
    pub subject: Option<String>,
    /// A title, when one is written (team-coordinate's capability tasks may
    /// carry one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to do (from the entry, else from its capability task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The role that takes it.
    #[serde(default)]
    pub owner: Option<String>,
    /// Its dependencies.
    #[serde(rename = "blockedBy", default)]
    pub blocked_by: Vec<TaskId>,
    /// Free-form metadata (`executor`, `code_review`, `estimated_minutes`, …).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Keys of a task that only the store sets (state, lease, timestamps): an
/// analysis entry never seeds them.
const STORE_OWNED: &[&str] = &[
    "id",
    "subject",
    "description",
    "status",
    "owner",
    "blockedBy",
    "blocks",
    "metadata",
    "created_at",
    "updated_at",
    "attempts",
    "lease",
    "result",
];

/// The longest subject derived from a description, in characters.
const SUBJECT_CHARS: usize = 80;

impl AnalysisTask {
    /// A task named only in the graph.
    fn from_graph(id: &TaskId, entry: &GraphEntry) -> Self {
        AnalysisTask {
            id: id.clone(),
            subject: Some(id.to_string()),
            title: None,
            description: None,
            owner: entry.role.clone(),
            blocked_by: entry.depends_on.clone(),
            metadata: Map::new(),
            extra: Map::new(),
        }
    }

    /// The one-line subject: the written subject when it says more than the
    /// id, else the title, else the first line of the description (cut at
    /// 80 characters), else the id.
    pub fn effective_subject(&self) -> String {
        let given = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != self.id.as_str())
                .map(str::to_owned)
        };
        given(&self.subject)
            .or_else(|| given(&self.title))
            .or_else(|| {
                let line = self
                    .description
                    .as_deref()?
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())?;
                Some(if line.chars().count() > SUBJECT_CHARS {
                    let cut: String = line.chars().take(SUBJECT_CHARS - 1).collect();
                    format!("{}…", cut.trim_end())
                } else {
                    line.to_owned()
                })
            })
            .unwrap_or_else(|| self.id.to_string())
    }

    /// The store task this entry describes, losing nothing it says: subject
    /// ([`AnalysisTask::effective_subject`]), description (else the
    /// subject), owner, dependencies, `metadata`, and every other key of
    /// the entry (the title, `files`, `acceptance_criteria`, …) in
    /// [`Task::extra`]. State the store owns (`status`, `lease`, …) is not
    /// taken from the analysis: the new task is pending.
    pub fn to_task(&self) -> Task {
        self.clone().into_task()
    }

    /// [`AnalysisTask::to_task`], without copying.
    pub fn into_task(self) -> Task {
        let subject = self.effective_subject();
        let description = self
            .description
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| subject.clone());
        let mut task = Task::new(self.id, subject, description);
        task.owner = self.owner;
        task.blocked_by = self.blocked_by;
        task.metadata = self.metadata;
        if let Some(title) = self.title {
            task.extra.insert("title".into(), Value::String(title));
        }
        for (key, value) in self.extra {
            if key == "activeForm" {
                task.active_form = value.as_str().map(str::to_owned);
            } else if !STORE_OWNED.contains(&key.as_str()) {
                task.extra.insert(key, value);
            }
        }
        task
    }
}

/// What `capabilities[].tasks[]` says about one task.
#[derive(Debug, Clone, Copy)]
struct CapabilityTask<'a> {
    description: Option<&'a str>,
    title: Option<&'a str>,
}

/// Append the ids of `more` that `deps` does not hold yet, in order; linear
/// in both lengths.
pub(crate) fn merge_unique<'a>(deps: &mut Vec<TaskId>, more: impl IntoIterator<Item = &'a TaskId>) {
    const SMALL: usize = 8;
    let mut seen: Option<HashSet<TaskId>> = None;
    for dep in more {
        let known = if deps.len() <= SMALL && seen.is_none() {
            deps.contains(dep)
        } else {
            let set = seen.get_or_insert_with(|| deps.iter().cloned().collect());
            !set.insert(dep.clone())
        };
        if !known {
            deps.push(dep.clone());
        }
    }
}

/// `task-analysis.json` (read by a hand-written visitor, like
/// [`AnalysisTask`], so the whole document is never buffered).
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<AnalysisTask>>,
    /// Every other key (`complexity_score`, `complexity`, `artifacts`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Reads a field once; a repeated key is an error, as with derived impls.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> std::result::Result<(), A::Error> {
    if slot.is_some() {
        return Err(serde::de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Deserialize<'de> for AnalysisTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnalysisTask;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("struct AnalysisTask")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<AnalysisTask, A::Error> {
                let mut id: Option<TaskId> = None;
                let mut subject: Option<Option<String>> = None;
                let mut title: Option<Option<String>> = None;
                let mut description: Option<Option<String>> = None;
                let mut owner: Option<Option<String>> = None;
                let mut blocked_by: Option<Vec<TaskId>> = None;
                let mut metadata: Option<Map<String, Value>> = None;
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "id" => once(&mut map, &mut id, "id")?,
                        "subject" => once(&mut map, &mut subject, "subject")?,
                        "title" => once(&mut map, &mut title, "title")?,
                        "description" => once(&mut map, &mut description, "description")?,
                        "owner" => once(&mut map, &mut owner, "owner")?,
                        "blockedBy" => once(&mut map, &mut blocked_by, "blockedBy")?,
                        "metadata" => once(&mut map, &mut metadata, "metadata")?,
                        _ => {
                            let v: Value = map.next_value()?;
                            extra.insert(key, v);
                        }
                    }
                }
                Ok(AnalysisTask {
                    id: id.ok_or_else(|| serde::de::Error::missing_field("id"))?,
                    subject: subject.flatten(),
                    title: title.flatten(),
                    description: description.flatten(),
                    owner: owner.flatten(),
                    blocked_by: blocked_by.unwrap_or_default(),
                    metadata: metadata.unwrap_or_default(),
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for TaskAnalysis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TaskAnalysis;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("struct TaskAnalysis")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<TaskAnalysis, A::Error> {
                let mut capabilities: Option<Vec<Value>> = None;
                let mut dependency_graph: Option<BTreeMap<TaskId, GraphEntry>> = None;
                let mut roles: Option<Vec<Value>> = None;
                let mut tasks: Option<Option<Vec<AnalysisTask>>> = None;
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "capabilities" => once(&mut map, &mut capabilities, "capabilities")?,
                        "dependency_graph" => {
                            once(&mut map, &mut dependency_graph, "dependency_graph")?;
                        }
                        "roles" => once(&mut map, &mut roles, "roles")?,
                        "tasks" => once(&mut map, &mut tasks, "tasks")?,
                        _ => {
                            let v: Value = map.next_value()?;
                            extra.insert(key, v);
                        }
                    }
                }
                Ok(TaskAnalysis {
                    capabilities: capabilities.unwrap_or_default(),
                    dependency_graph: dependency_graph.unwrap_or_default(),
                    roles: roles.unwrap_or_default(),
                    tasks: tasks.flatten(),
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl TaskAnalysis {
    /// Read `task-analysis.json`; errors name the file and the field.
    pub fn read(path: &Path) -> Result<Self> {
        crate::fsutil::read_json(path)
    }

    /// The tasks: the `tasks` array when present (in its order), then the
    /// tasks named only in the graph (in id order), derived from it (subject
    /// = id, owner = role, blockedBy = depends_on). A graph entry adds its
    /// dependencies and role to the array entry of the same id (the first,
    /// if the array repeats an id). Each task without a description or a
    /// title takes those of its `capabilities[].tasks[]` entry.
    ///
    /// O(V + E): entries are found by id through a hash index.
    pub fn effective_tasks(&self) -> Vec<AnalysisTask> {
        effective(
            self.tasks.clone().unwrap_or_default(),
            self.dependency_graph.iter(),
            &self.capabilities,
        )
    }

    /// [`TaskAnalysis::effective_tasks`] without copying the entries: what
    /// loading a large session wants.
    pub fn into_effective_tasks(self) -> Vec<AnalysisTask> {
        effective(
            self.tasks.unwrap_or_default(),
            self.dependency_graph.iter(),
            &self.capabilities,
        )
    }

    /// `capabilities[].tasks[{id, description, title?}]` by id (the first
    /// entry of an id wins). Entries that are not objects with a string
    /// `id` are skipped: capabilities are kept as written.
    fn capability_tasks(capabilities: &[Value]) -> HashMap<&str, CapabilityTask<'_>> {
        let mut out = HashMap::new();
        let entries = capabilities
            .iter()
            .filter_map(|c| c.get("tasks")?.as_array())
            .flatten();
        for entry in entries {
            let Some(id) = entry.get("id").and_then(Value::as_str) else {
                continue;
            };
            let text = |key: &str| {
                entry
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
            };
            out.entry(id).or_insert(CapabilityTask {
                description: text("description"),
                title: text("title").or_else(|| text("subject")),
            });
        }
        out
    }
}

/// See [`TaskAnalysis::effective_tasks`].
fn effective<'a>(
    mut tasks: Vec<AnalysisTask>,
    graph: impl Iterator<Item = (&'a TaskId, &'a GraphEntry)>,
    capabilities: &[Value],
) -> Vec<AnalysisTask> {
    // Positions by id, borrowed from the entries (no id is copied); an id
    // the array repeats is merged into its first entry.
    let mut merges: Vec<(usize, usize)> = Vec::new();
    let mut added: Vec<(&TaskId, &GraphEntry)> = Vec::new();
    let mut graph_merges: Vec<(usize, &GraphEntry)> = Vec::new();
    {
        let (_, upper) = graph.size_hint();
        let mut position: HashMap<&str, usize> =
            HashMap::with_capacity(tasks.len().max(upper.unwrap_or(0)));
        for (i, t) in tasks.iter().enumerate() {
            if let Some(&first) = position.get(t.id.as_str()) {
                merges.push((first, i));
            } else {
                position.insert(t.id.as_str(), i);
            }
        }
        for (id, entry) in graph {
            match position.get(id.as_str()) {
                Some(&i) => graph_merges.push((i, entry)),
                None => added.push((id, entry)),
            }
        }
    }
    if !merges.is_empty() {
        let mut repeat = vec![false; tasks.len()];
        for &(first, i) in &merges {
            let deps = std::mem::take(&mut tasks[i].blocked_by);
            merge_unique(&mut tasks[first].blocked_by, &deps);
            repeat[i] = true;
        }
        // Positions move down past the dropped repeats.
        let mut new_position = Vec::with_capacity(tasks.len());
        let mut kept = 0;
        for &r in &repeat {
            new_position.push(kept);
            kept += usize::from(!r);
        }
        let mut k = 0;
        tasks.retain(|_| {
            k += 1;
            !repeat[k - 1]
        });
        for (i, _) in &mut graph_merges {
            *i = new_position[*i];
        }
    }
    for (i, entry) in graph_merges {
        let t = &mut tasks[i];
        merge_unique(&mut t.blocked_by, &entry.depends_on);
        if t.owner.is_none() {
            t.owner.clone_from(&entry.role);
        }
    }
    tasks.reserve(added.len());
    for (id, entry) in added {
        tasks.push(AnalysisTask::from_graph(id, entry));
    }
    let described = TaskAnalysis::capability_tasks(capabilities);
    if !described.is_empty() {
        for t in &mut tasks {
            let Some(c) = described.get(t.id.as_str()) else {
                continue;
            };
            if t.description.as_deref().is_none_or(|d| d.trim().is_empty()) {
                t.description = c.description.map(str::to_owned);
            }
            if t.title.is_none() {
                t.title = c.title.map(str::to_owned);
            }
        }
    }
    tasks
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
    fn team_coordinate_shape_carries_descriptions_to_the_task() {
        let a = parse(
            r#"{"task_description":"build a todo app",
                "capabilities":[
                  {"name":"developer","prefix":"IMPL","tasks":[
                    {"id":"IMPL-001","description":"Write the data model\nwith a Todo struct."},
                    {"id":"IMPL-002","description":"Add the REST endpoints","title":"REST API"}]},
                  {"name":"tester","prefix":"TEST","tasks":[{"id":"TEST-001","description":"Test the endpoints"}]},
                  "not an object"],
                "dependency_graph":{"IMPL-001":[],"IMPL-002":["IMPL-001"],"TEST-001":["IMPL-002"]}}"#,
        );
        let tasks: Vec<Task> = a
            .effective_tasks()
            .iter()
            .map(AnalysisTask::to_task)
            .collect();
        let impl1 = &tasks[0];
        assert_eq!(impl1.subject, "Write the data model");
        assert_eq!(
            impl1.description,
            "Write the data model\nwith a Todo struct."
        );
        let impl2 = &tasks[1];
        assert_eq!(impl2.title(), "REST API");
        assert_eq!(impl2.description, "Add the REST endpoints");
        assert_eq!(impl2.blocked_by, [TaskId::new("IMPL-001").unwrap()]);
        assert_eq!(tasks[2].description, "Test the endpoints");
    }

    #[test]
    fn entry_metadata_and_other_keys_reach_the_task() {
        let a = parse(
            r#"{"dependency_graph":{"IMPL-001":{"depends_on":[],"role":"developer"}},
                "tasks":[{"id":"IMPL-001","subject":"IMPL-001","owner":"developer","blockedBy":[],
                          "description":"Do it","metadata":{"executor":"gemini","code_review":true},
                          "files":[{"path":"src/a.rs"}],"activeForm":"Doing it",
                          "status":"completed","attempts":9}]}"#,
        );
        let task = a.effective_tasks()[0].to_task();
        assert_eq!(task.executor(), Some("gemini"));
        assert_eq!(task.code_review(), Some(true));
        assert_eq!(task.files(), ["src/a.rs"]);
        assert_eq!(task.active_form.as_deref(), Some("Doing it"));
        assert_eq!(task.subject, "Do it");
        assert_eq!(task.owner.as_deref(), Some("developer"));
        // State is the store's: a new task is pending, whatever the analysis says.
        assert_eq!(task.status, crate::TaskStatus::Pending);
        assert_eq!(task.attempts, 0);
        assert!(!task.extra.contains_key("status") && !task.extra.contains_key("attempts"));
        let err = crate::fsutil::parse_json::<TaskAnalysis>(
            Path::new("task-analysis.json"),
            br#"{"tasks":[{"id":"A-1","metadata":"codex"}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("field `tasks[0].metadata`"), "{err}");
    }

    #[test]
    fn long_descriptions_give_a_short_subject() {
        let long = "x".repeat(200);
        let t = AnalysisTask {
            description: Some(format!("\n  {long}\nmore")),
            ..AnalysisTask::from_graph(&TaskId::new("A-1").unwrap(), &GraphEntry::default())
        };
        let subject = t.effective_subject();
        assert_eq!(subject.chars().count(), 80);
        assert!(subject.ends_with('…'));
        let bare = AnalysisTask::from_graph(&TaskId::new("A-1").unwrap(), &GraphEntry::default());
        assert_eq!(bare.to_task().subject, "A-1");
        assert_eq!(bare.to_task().description, "A-1");
    }

    #[test]
    fn large_graphs_merge_by_id() {
        // Both the array and the graph name every task; deps merge without repeats.
        let n = 5000;
        let ids: Vec<String> = (0..n).map(|i| format!("T-{i}")).collect();
        let tasks: Vec<Value> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| serde_json::json!({"id": id, "blockedBy": if i > 0 { vec![ids[i - 1].clone()] } else { vec![] }}))
            .collect();
        let graph: Map<String, Value> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                (
                    id.clone(),
                    serde_json::json!(if i > 1 {
                        vec![ids[i - 1].clone(), ids[i - 2].clone()]
                    } else {
                        vec![]
                    }),
                )
            })
            .collect();
        let text = serde_json::json!({"tasks": tasks, "dependency_graph": graph}).to_string();
        let a = parse(&text);
        let eff = a.effective_tasks();
        assert_eq!(eff.len(), n);
        assert_eq!(eff[7].blocked_by.len(), 2);
        assert_eq!(eff[7].blocked_by[0].as_str(), "T-6");
        assert_eq!(eff[7].blocked_by[1].as_str(), "T-5");
    }

    #[test]
    fn a_repeated_array_entry_merges_into_the_first() {
        let a = parse(
            r#"{"tasks":[{"id":"B-1","blockedBy":["A-1"]},{"id":"A-1"},{"id":"B-1","blockedBy":["A-2"]},{"id":"C-1"}],
                "dependency_graph":{"C-1":["B-1"],"A-2":[],"B-1":["A-3"],"A-3":[]}}"#,
        );
        let tasks = a.effective_tasks();
        let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["B-1", "A-1", "C-1", "A-2", "A-3"]);
        let deps =
            |i: usize| -> Vec<&str> { tasks[i].blocked_by.iter().map(TaskId::as_str).collect() };
        assert_eq!(deps(0), ["A-1", "A-2", "A-3"]);
        assert_eq!(deps(2), ["B-1"]);
    }

    #[test]
    fn merge_unique_keeps_order_and_drops_repeats() {
        let id = |n: usize| TaskId::new(format!("D-{n}")).unwrap();
        for size in [0, 3, 20] {
            let mut deps: Vec<TaskId> = (0..size).map(id).collect();
            let more: Vec<TaskId> = (0..size + 5).rev().chain(0..2).map(id).collect();
            merge_unique(&mut deps, &more);
            let want: Vec<TaskId> = (0..size).chain((size..size + 5).rev()).map(id).collect();
            assert_eq!(deps, want, "size {size}");
        }
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
