//! The typed report builder: every role's success and failure reports are
//! built here, so the bus record (`data`) and the task's `result` are set
//! once, from one value, and can never disagree.

use serde::Serialize;
use serde_json::{Map, Value};
use wavecrew_core::role::{PhaseError, Report};
use wavecrew_core::{Task, TaskStatus};

/// A report under construction: its fields are the record's payload and
/// the task's result at once.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportBuilder {
    status: TaskStatus,
    kind: String,
    summary: String,
    fields: Map<String, Value>,
}

impl ReportBuilder {
    /// A report of `task` ending `status` with a record of type `kind`;
    /// its first field is `task_id`.
    pub fn new(status: TaskStatus, kind: &str, task: &Task) -> Self {
        let mut fields = Map::new();
        fields.insert("task_id".into(), Value::from(task.id.as_str()));
        ReportBuilder {
            status,
            kind: kind.to_owned(),
            summary: task.id.as_str().to_owned(),
            fields,
        }
    }

    /// A completed task's report.
    pub fn completed(kind: &str, task: &Task) -> Self {
        Self::new(TaskStatus::Completed, kind, task)
    }

    /// A failed task's report: `task_id`, `error`, and the summary
    /// `<id> failed: <error>` (the shape of [`Report::failure`]).
    pub fn failed(kind: &str, task: &Task, error: &str) -> Self {
        Self::new(TaskStatus::Failed, kind, task)
            .field("error", error)
            .summary(format!("{} failed: {error}", task.id.as_str()))
    }

    /// [`ReportBuilder::failed`] for a phase's error, with its kind
    /// (`error_kind`: `input`, `agent`, `environment`, …) and what the
    /// agent tampered with (`tampered`), when anything.
    pub fn phase_failed(kind: &str, task: &Task, error: &PhaseError) -> Self {
        let mut report = Self::failed(kind, task, &error.message);
        report.extend(error.report_fields());
        report
    }

    /// The record's summary (without the role tag: the worker loop adds it).
    #[must_use]
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = summary.into();
        self
    }

    /// The record's type.
    #[must_use]
    pub fn kind(mut self, kind: &str) -> Self {
        kind.clone_into(&mut self.kind);
        self
    }

    /// The task's new state.
    #[must_use]
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = status;
        self
    }

    /// A field (a value that does not serialize becomes `null`).
    #[must_use]
    pub fn field(mut self, key: &str, value: impl Serialize) -> Self {
        self.insert(key, value);
        self
    }

    /// Set a field in place (an existing key keeps its position).
    pub fn insert(&mut self, key: &str, value: impl Serialize) {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.fields.insert(key.to_owned(), value);
    }

    /// Set many fields (existing keys keep their positions).
    pub fn extend(&mut self, fields: Map<String, Value>) {
        self.fields.extend(fields);
    }

    /// The fields so far.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// Whether the report fails its task.
    pub fn is_failure(&self) -> bool {
        self.status == TaskStatus::Failed
    }

    /// The report: the record's `data` and the task's `result` are the
    /// same fields.
    pub fn build(self) -> Report {
        Report {
            status: self.status,
            kind: self.kind,
            summary: self.summary,
            result: Value::Object(self.fields.clone()),
            data: self.fields,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wavecrew_core::TaskId;

    use super::*;

    fn task() -> Task {
        Task::new(TaskId::new("IMPL-007").unwrap(), "t", "d")
    }

    #[test]
    fn the_record_and_the_result_agree() {
        let mut b = ReportBuilder::completed("task_complete", &task())
            .field("files_modified", vec!["a.rs"])
            .field("status", "success")
            .summary("IMPL-007 complete");
        b.extend(
            json!({"task_id": "IMPL-007", "extra": 1})
                .as_object()
                .unwrap()
                .clone(),
        );
        let r = b.build();
        assert_eq!(r.status, TaskStatus::Completed);
        assert_eq!(r.kind, "task_complete");
        assert_eq!(r.summary, "IMPL-007 complete");
        assert_eq!(Value::Object(r.data.clone()), r.result);
        let keys: Vec<&str> = r.data.keys().map(String::as_str).collect();
        assert_eq!(keys, ["task_id", "files_modified", "status", "extra"]);
    }

    #[test]
    fn a_failure_has_the_shape_of_the_default_failure_report() {
        let t = task();
        let built = ReportBuilder::failed("task_failed", &t, "boom").build();
        assert_eq!(built, Report::failure("task_failed", &t, "boom"));
        let more = ReportBuilder::phase_failed("impl_failed", &t, &PhaseError::check("x"))
            .field("resume", "wavecrew-planex --task IMPL-007")
            .build();
        assert_eq!(more.status, TaskStatus::Failed);
        assert_eq!(more.result["error"], "x");
        assert_eq!(more.result["resume"], "wavecrew-planex --task IMPL-007");
        assert_eq!(more.result["error_kind"], "check");
        assert_eq!(Value::Object(more.data.clone()), more.result);
    }
}
