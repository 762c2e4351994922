//! The task: one type read from three shapes, written in one.
//!
//! wavecrew's task store keeps the Claude Code task shape (`id`, `subject`,
//! `description`, `status`, `owner`, `blockedBy`, `blocks`, `activeForm`,
//! `metadata`; ccw-compat §2.9) plus its own fields (`created_at`,
//! `updated_at`, `attempts`, `lease`, `result`). Readers also accept:
//!
//! * the seed 000 team task (§2.5b): `task_id`, `assigned_to`,
//!   `acceptance_criteria`, `retry_count`, `metadata.executor` …;
//! * the roadmap task (§2.5a): `title`, `depends_on`, `files`, `convergence`.
//!
//! The canonical fields are derived from whichever keys are present (`id` or
//! `task_id`; `subject` or `title`; `owner` or `assigned_to`; `blockedBy` and
//! `depends_on` together). Every key that is not canonical, including the
//! aliases themselves, is kept in [`Task::extra`] in its original order and
//! written back unchanged, so a rewrite never loses a field.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::id::TaskId;

/// The states a task moves through (DESIGN §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting for its blockers or for a worker.
    #[default]
    Pending,
    /// Claimed by a worker that holds a lease.
    InProgress,
    /// Done, with evidence.
    Completed,
    /// Tried and failed.
    Failed,
    /// Not run because an upstream task failed.
    Skipped,
    /// Needs a person.
    Blocked,
    /// Removed (Claude Code's `TaskUpdate(status: deleted)`).
    Deleted,
}

impl TaskStatus {
    /// Every state, in lifecycle order.
    pub const ALL: [TaskStatus; 7] = [
        TaskStatus::Pending,
        TaskStatus::InProgress,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Skipped,
        TaskStatus::Blocked,
        TaskStatus::Deleted,
    ];

    /// Whether the task ended without its work: failed, or blocked for a
    /// person.
    pub fn is_unsuccessful(self) -> bool {
        matches!(self, TaskStatus::Failed | TaskStatus::Blocked)
    }

    /// The name as written in files (`in_progress`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Skipped => "skipped",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Deleted => "deleted",
        }
    }

    /// Whether the task will not change again without a person (or a rerun).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Skipped | TaskStatus::Deleted
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who holds an in-progress task, and since when they last proved alive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The worker's name (`executor`, `executor-2`).
    pub worker: String,
    /// The worker's process id.
    pub pid: u32,
    /// The host the worker runs on.
    pub host: String,
    /// When the lease was taken.
    pub acquired_at: jiff::Timestamp,
    /// The last heartbeat.
    pub heartbeat_at: jiff::Timestamp,
}

/// One acceptance criterion: text, and optionally a command that proves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Criterion {
    /// What must hold, in words.
    pub text: String,
    /// A command whose exit status 0 proves it (split as shell words, never
    /// run through a shell).
    pub verify: Option<String>,
}

/// A task, whatever shape it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The id (`id`, or seed 000's `task_id`).
    pub id: TaskId,
    /// One line (`subject`, or the roadmap's `title`, or the id).
    pub subject: String,
    /// What to do.
    pub description: String,
    /// Where it is in its lifecycle (default `pending`).
    pub status: TaskStatus,
    /// The role that should take it (`owner`, or seed 000's `assigned_to`).
    pub owner: Option<String>,
    /// Tasks that must complete first (`blockedBy` ∪ `depends_on`).
    pub blocked_by: Vec<TaskId>,
    /// Tasks waiting for this one.
    pub blocks: Vec<TaskId>,
    /// Claude Code's present-tense label.
    pub active_form: Option<String>,
    /// Free-form metadata (`executor`, `code_review`, `plan_path`, …).
    pub metadata: Map<String, Value>,
    /// When the task entered the store.
    pub created_at: Option<jiff::Timestamp>,
    /// When the task last changed.
    pub updated_at: Option<jiff::Timestamp>,
    /// How many attempts have started.
    pub attempts: u32,
    /// The lease of the worker running it.
    pub lease: Option<Lease>,
    /// The recorded outcome.
    pub result: Option<Value>,
    /// Every other key, kept in order and written back unchanged.
    pub extra: Map<String, Value>,
}

/// Keys that [`Task`] owns; every other key lands in [`Task::extra`].
const CANONICAL: &[&str] = &[
    "id",
    "subject",
    "description",
    "status",
    "owner",
    "blockedBy",
    "blocks",
    "activeForm",
    "metadata",
    "created_at",
    "updated_at",
    "attempts",
    "lease",
    "result",
];

/// The metadata key that counts how many times a person rejected a task's
/// work (`wavecrew reject`: each rejection starts one revision).
pub const REVIEW_REVISIONS: &str = "review_revisions";

/// The metadata key that counts how many times a person asked to run a
/// task again (`wavecrew retry`); a coordinator over hosts compares it with
/// the task's entry in NATS to send the task out again.
pub const RETRIES: &str = "retries";

impl Task {
    /// A count kept in the task's metadata ([`REVIEW_REVISIONS`],
    /// [`RETRIES`]); 0 when it has none.
    pub fn metadata_count(&self, key: &str) -> u64 {
        self.metadata.get(key).and_then(Value::as_u64).unwrap_or(0)
    }

    /// Whether the task waits for a person's review: blocked, with
    /// `awaiting_review` in its result (a `review = "human"` gate).
    pub fn awaiting_review(&self) -> bool {
        self.status == TaskStatus::Blocked
            && self
                .result
                .as_ref()
                .and_then(|r| r.get("awaiting_review"))
                .and_then(Value::as_bool)
                .unwrap_or(false)
    }

    /// A new pending task with a subject and description.
    pub fn new(id: TaskId, subject: impl Into<String>, description: impl Into<String>) -> Self {
        Task {
            id,
            subject: subject.into(),
            description: description.into(),
            status: TaskStatus::Pending,
            owner: None,
            blocked_by: Vec::new(),
            blocks: Vec::new(),
            active_form: None,
            metadata: Map::new(),
            created_at: None,
            updated_at: None,
            attempts: 0,
            lease: None,
            result: None,
            extra: Map::new(),
        }
    }

    /// Why the task failed: its result's `error`, when it has one.
    pub fn error(&self) -> Option<&str> {
        self.result.as_ref()?.get("error")?.as_str()
    }

    /// The roadmap `title`, or the subject.
    pub fn title(&self) -> &str {
        self.extra
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(&self.subject)
    }

    /// The backend named for this task (`metadata.executor`, or the roadmap's
    /// `meta.execution_config.cli_tool`).
    pub fn executor(&self) -> Option<&str> {
        self.metadata
            .get("executor")
            .and_then(Value::as_str)
            .or_else(|| {
                self.extra
                    .get("meta")?
                    .get("execution_config")?
                    .get("cli_tool")?
                    .as_str()
            })
    }

    /// Whether code review was asked for (`metadata.code_review`), if said.
    pub fn code_review(&self) -> Option<bool> {
        self.metadata.get("code_review").and_then(Value::as_bool)
    }

    /// The files this task declares it touches: roadmap `files[].path`, seed
    /// 000 `metadata.target_files` / `metadata.target_file`, sorted, unique.
    pub fn files(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if let Some(Value::Array(files)) = self.extra.get("files") {
            for f in files {
                match f {
                    Value::String(p) => out.push(p.clone()),
                    Value::Object(o) => {
                        if let Some(p) = o.get("path").and_then(Value::as_str) {
                            out.push(p.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(Value::Array(files)) = self.metadata.get("target_files") {
            out.extend(files.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        if let Some(p) = self.metadata.get("target_file").and_then(Value::as_str) {
            out.push(p.to_owned());
        }
        out.sort();
        out.dedup();
        out
    }

    /// The acceptance criteria: seed 000 `acceptance_criteria` (strings or
    /// `{criterion|text, verify}` objects), or the roadmap's
    /// `convergence.criteria` with `convergence.verification` as the command
    /// of the last criterion-less check.
    pub fn acceptance_criteria(&self) -> Vec<Criterion> {
        let mut out = Vec::new();
        if let Some(Value::Array(items)) = self.extra.get("acceptance_criteria") {
            for item in items {
                match item {
                    Value::String(s) => out.push(Criterion {
                        text: s.clone(),
                        verify: None,
                    }),
                    Value::Object(o) => {
                        let text = ["criterion", "text", "description"]
                            .iter()
                            .find_map(|k| o.get(*k).and_then(Value::as_str))
                            .unwrap_or_default()
                            .to_owned();
                        let verify = o.get("verify").and_then(Value::as_str).map(str::to_owned);
                        out.push(Criterion { text, verify });
                    }
                    _ => {}
                }
            }
        }
        if let Some(conv) = self.extra.get("convergence") {
            if let Some(Value::Array(items)) = conv.get("criteria") {
                out.extend(items.iter().filter_map(Value::as_str).map(|s| Criterion {
                    text: s.to_owned(),
                    verify: None,
                }));
            }
            if let Some(cmd) = conv.get("verification").and_then(Value::as_str)
                && !cmd.trim().is_empty()
            {
                out.push(Criterion {
                    text: format!("verification passes: {cmd}"),
                    verify: Some(cmd.to_owned()),
                });
            }
        }
        out
    }

    /// The duration estimate in seconds, for the critical path:
    /// `metadata.estimated_minutes` or the roadmap/solution
    /// `estimated_minutes`, else `None`.
    pub fn estimate_secs(&self) -> Option<f64> {
        self.metadata
            .get("estimated_minutes")
            .or_else(|| self.extra.get("estimated_minutes"))
            .and_then(Value::as_f64)
            .filter(|m| m.is_finite() && *m >= 0.0)
            .map(|m| m * 60.0)
    }

    /// The working folder named by the task (`metadata.working_dir`).
    pub fn working_dir(&self) -> Option<&str> {
        self.metadata.get("working_dir").and_then(Value::as_str)
    }
}

impl Serialize for Task {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("subject", &self.subject)?;
        m.serialize_entry("description", &self.description)?;
        m.serialize_entry("status", &self.status)?;
        if let Some(owner) = &self.owner {
            m.serialize_entry("owner", owner)?;
        }
        m.serialize_entry("blockedBy", &self.blocked_by)?;
        m.serialize_entry("blocks", &self.blocks)?;
        if let Some(af) = &self.active_form {
            m.serialize_entry("activeForm", af)?;
        }
        m.serialize_entry("metadata", &self.metadata)?;
        if let Some(t) = &self.created_at {
            m.serialize_entry("created_at", t)?;
        }
        if let Some(t) = &self.updated_at {
            m.serialize_entry("updated_at", t)?;
        }
        m.serialize_entry("attempts", &self.attempts)?;
        if let Some(lease) = &self.lease {
            m.serialize_entry("lease", lease)?;
        }
        if let Some(r) = &self.result {
            m.serialize_entry("result", r)?;
        }
        for (k, v) in &self.extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The keys as read, before the shapes are merged.
#[derive(Deserialize)]
struct RawTask {
    id: Option<TaskId>,
    subject: Option<String>,
    description: Option<String>,
    status: Option<TaskStatus>,
    owner: Option<String>,
    #[serde(rename = "blockedBy", default)]
    blocked_by: Vec<TaskId>,
    #[serde(default)]
    blocks: Vec<TaskId>,
    #[serde(rename = "activeForm")]
    active_form: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    created_at: Option<jiff::Timestamp>,
    updated_at: Option<jiff::Timestamp>,
    #[serde(default)]
    attempts: u32,
    lease: Option<Lease>,
    result: Option<Value>,
    // The alias keys are parsed here for validation and kept in `extra` too.
    task_id: Option<TaskId>,
    title: Option<String>,
    assigned_to: Option<String>,
    #[serde(default)]
    depends_on: Option<Vec<TaskId>>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Task {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawTask::deserialize(d)?;
        let id = match (raw.id, &raw.task_id) {
            (Some(id), _) => id,
            (None, Some(tid)) => tid.clone(),
            (None, None) => return Err(D::Error::missing_field("id")),
        };
        let subject = raw
            .subject
            .or_else(|| raw.title.clone())
            .unwrap_or_else(|| id.to_string());
        let mut blocked_by = raw.blocked_by;
        for dep in raw.depends_on.iter().flatten() {
            if !blocked_by.contains(dep) {
                blocked_by.push(dep.clone());
            }
        }
        let mut extra = Map::new();
        // Re-insert the aliases so a rewrite keeps them.
        if let Some(tid) = raw.task_id {
            extra.insert("task_id".into(), Value::String(tid.into()));
        }
        if let Some(t) = raw.title {
            extra.insert("title".into(), Value::String(t));
        }
        if let Some(a) = &raw.assigned_to {
            extra.insert("assigned_to".into(), Value::String(a.clone()));
        }
        if let Some(deps) = raw.depends_on {
            extra.insert(
                "depends_on".into(),
                Value::Array(deps.into_iter().map(|d| Value::String(d.into())).collect()),
            );
        }
        for (k, v) in raw.rest {
            debug_assert!(!CANONICAL.contains(&k.as_str()));
            extra.insert(k, v);
        }
        Ok(Task {
            id,
            subject,
            description: raw.description.unwrap_or_default(),
            status: raw.status.unwrap_or_default(),
            owner: raw.owner.or(raw.assigned_to),
            blocked_by,
            blocks: raw.blocks,
            active_form: raw.active_form,
            metadata: raw.metadata.unwrap_or_default(),
            created_at: raw.created_at,
            updated_at: raw.updated_at,
            attempts: raw.attempts,
            lease: raw.lease,
            result: raw.result,
            extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::parse_json;
    use std::path::Path;

    fn parse(s: &str) -> Task {
        parse_json(Path::new("t.json"), s.as_bytes()).unwrap()
    }

    #[test]
    fn reads_claude_code_shape() {
        let t = parse(
            r#"{ "id": "7", "subject": "TESTRUN-001", "description": "run", "activeForm": "Running",
                 "status": "pending", "owner": "executor", "blocks": ["8"], "blockedBy": ["6"], "metadata": {} }"#,
        );
        assert_eq!(t.id.as_str(), "7");
        assert_eq!(t.blocked_by, vec![TaskId::new("6").unwrap()]);
        assert_eq!(t.owner.as_deref(), Some("executor"));
        assert!(t.extra.is_empty());
    }

    #[test]
    fn reads_seed_000_shape() {
        let t = parse(
            r#"{ "task_id": "IMPL-002", "status": "pending", "assigned_to": "executor",
              "description": "Add input validation to the signup handler",
              "acceptance_criteria": ["Rejects emails without @", {"criterion": "Tests pass", "verify": "npm test"}],
              "retry_count": 0,
              "metadata": { "plan_path": ".workflow/plan.md", "executor": "agent", "code_review": false,
                            "target_files": ["src/signup.ts"], "working_dir": "." } }"#,
        );
        assert_eq!(t.id.as_str(), "IMPL-002");
        assert_eq!(t.owner.as_deref(), Some("executor"));
        assert_eq!(t.executor(), Some("agent"));
        assert_eq!(t.code_review(), Some(false));
        assert_eq!(t.files(), vec!["src/signup.ts"]);
        let ac = t.acceptance_criteria();
        assert_eq!(ac.len(), 2);
        assert_eq!(ac[1].verify.as_deref(), Some("npm test"));
    }

    #[test]
    fn reads_roadmap_shape() {
        let t = parse(
            r#"{ "id": "IMPL-102", "title": "Add refresh-token endpoint", "description": "Expose POST /auth/refresh.",
                 "type": "feature", "depends_on": ["IMPL-101"],
                 "files": [ { "path": "src/auth/refresh.ts", "action": "create" }, { "path": "src/routes.ts", "action": "modify" } ],
                 "convergence": { "criteria": ["exports refreshHandler"], "verification": "npm test -- auth", "definition_of_done": "ok" } }"#,
        );
        assert_eq!(t.subject, "Add refresh-token endpoint");
        assert_eq!(t.blocked_by, vec![TaskId::new("IMPL-101").unwrap()]);
        assert_eq!(t.files(), vec!["src/auth/refresh.ts", "src/routes.ts"]);
        let ac = t.acceptance_criteria();
        assert_eq!(
            ac.last().unwrap().verify.as_deref(),
            Some("npm test -- auth")
        );
    }

    #[test]
    fn unknown_fields_round_trip() {
        let src = r#"{"id":"IMPL-1","subject":"s","description":"d","status":"completed","blockedBy":[],"blocks":[],"metadata":{"x":1},"attempts":2,"future_field":{"a":[1,2]},"title":"T"}"#;
        let t = parse(src);
        let out = serde_json::to_value(&t).unwrap();
        assert_eq!(out["future_field"], serde_json::json!({"a":[1,2]}));
        assert_eq!(out["title"], "T");
        let again: Task = serde_json::from_value(out.clone()).unwrap();
        assert_eq!(again, t);
        assert_eq!(serde_json::to_value(&again).unwrap(), out);
    }

    #[test]
    fn bad_fields_are_named() {
        let err = parse_json::<Task>(
            Path::new("tasks/X.json"),
            br#"{"id":"IMPL-1","status":"running"}"#,
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("`tasks/X.json`"), "{msg}");
        assert!(msg.contains("field `status`"), "{msg}");
        assert!(msg.contains("pending"), "{msg}");
        let err = parse_json::<Task>(
            Path::new("x.json"),
            br#"{"id":"IMPL-1","depends_on":["../etc"]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("field `depends_on[0]`"), "{err}");
        let err = parse_json::<Task>(Path::new("x.json"), br#"{"subject":"s"}"#).unwrap_err();
        assert!(err.to_string().contains("missing field `id`"), "{err}");
    }
}
