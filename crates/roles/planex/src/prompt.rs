//! The planex prompt's context: the issue as untrusted tracker text, the
//! bound solution and its tasks as the plan.
//!
//! A solution reaches the executor in three eras (ccw-compat §2.8; see
//! [`crate::solution_of_artifact`]): the seed era's solution spread at the
//! top of the planner artifact, `ccw issue status --json`'s `bound`, and
//! HEAD's `{solution: …}` (or the bound line of the issue store). Their
//! tasks differ too: legacy `modification_points[] {file, target, change}`
//! and `acceptance` (a list, or `{criteria, verification}`), or `files[]
//! {path, action, target, change}` and `convergence {criteria,
//! verification, definition_of_done}`. Every one of them, and `action`,
//! `scope`, `description`, `implementation[]`, `test {commands,
//! coverage_target}` and `depends_on`, reaches the prompt; the tasks come
//! in dependency order. A part of the wrong shape is left out and noted.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use wavecrew_role_kit::plan_text::{self, FileChange};

/// The issue as the prompt shows it (all of it untrusted): `title`, the
/// body (`context`, `expected_behavior`, `actual_behavior`) and the
/// comments (`feedback[]`).
pub fn issue_context(issue_id: &str, issue: &Map<String, Value>, fallback_title: &str) -> Value {
    let get = |k: &str| issue.get(k).and_then(plan_text::text);
    let title = get("title").unwrap_or_else(|| fallback_title.to_owned());
    let mut body = get("context").unwrap_or_default();
    for (key, label) in [
        ("expected_behavior", "Expected behaviour"),
        ("actual_behavior", "Actual behaviour"),
    ] {
        if let Some(t) = get(key) {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            let _ = write!(body, "{label}: {t}");
        }
    }
    let comments: Vec<String> = issue
        .get("feedback")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let content = f.get("content").and_then(plan_text::text)?;
            let kind: Vec<String> = ["type", "stage"]
                .iter()
                .filter_map(|k| f.get(*k).and_then(plan_text::text))
                .collect();
            Some(if kind.is_empty() {
                format!("- {content}")
            } else {
                format!("- [{}] {content}", kind.join(", "))
            })
        })
        .collect();
    json!({"id": issue_id, "title": title, "body": body, "comments": comments.join("\n")})
}

/// A percentage as written: a bare number gets a `%`.
fn percent(v: Option<&Value>, name: &str, notes: &mut Vec<String>) -> String {
    let t = plan_text::field(v, name, notes);
    if !t.is_empty() && t.parse::<f64>().is_ok() {
        format!("{t}%")
    } else {
        t
    }
}

/// One solution task's prompt values, its id and what it depends on.
fn task_context(
    t: &Map<String, Value>,
    index: usize,
    notes: &mut Vec<String>,
) -> (String, Vec<String>, Value) {
    let id = t
        .get("id")
        .and_then(plan_text::text)
        .unwrap_or_else(|| format!("T{}", index + 1));
    let mut own = Vec::new();
    let n = &mut own;
    let title = plan_text::field(t.get("title"), "title", n);
    let action = plan_text::field(t.get("action"), "action", n);
    let scope = plan_text::texts(t.get("scope"), "scope", n).join(", ");
    let depends_on = plan_text::texts(t.get("depends_on"), "depends_on", n);
    let description = plan_text::field(t.get("description"), "description", n);
    let implementation = plan_text::steps(t.get("implementation"), "implementation", n);
    let mut files: Vec<FileChange> = plan_text::file_changes(t.get("files"), "files", n);
    files.extend(plan_text::file_changes(
        t.get("modification_points"),
        "modification_points",
        n,
    ));
    let object = |key: &str, n: &mut Vec<String>| -> Option<Map<String, Value>> {
        match t.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Object(o)) => Some(o.clone()),
            Some(_) => {
                n.push(format!("`{key}` is not an object; left out"));
                None
            }
        }
    };
    let mut criteria = Vec::new();
    let mut verification = Vec::new();
    let mut definition_of_done = String::new();
    if let Some(c) = object("convergence", n) {
        criteria = plan_text::texts(c.get("criteria"), "convergence.criteria", n);
        verification = plan_text::texts(c.get("verification"), "convergence.verification", n);
        definition_of_done = plan_text::field(
            c.get("definition_of_done"),
            "convergence.definition_of_done",
            n,
        );
    }
    match t.get("acceptance") {
        Some(Value::Object(a)) => {
            criteria.extend(plan_text::texts(
                a.get("criteria"),
                "acceptance.criteria",
                n,
            ));
            verification.extend(plan_text::texts(
                a.get("verification"),
                "acceptance.verification",
                n,
            ));
        }
        other => criteria.extend(plan_text::texts(other, "acceptance", n)),
    }
    let (mut test_commands, mut coverage_target) = (Vec::new(), String::new());
    if let Some(test) = object("test", n) {
        test_commands = plan_text::texts(test.get("commands"), "test.commands", n);
        coverage_target = percent(test.get("coverage_target"), "test.coverage_target", n);
    }
    notes.extend(own.into_iter().map(|m| format!("task {id}: {m}")));
    let value = json!({
        "id": id, "title": title, "action": action, "scope": scope,
        "depends_on": depends_on, "description": description,
        "implementation": implementation, "files": files,
        "criteria": criteria, "verification": verification,
        "definition_of_done": definition_of_done,
        "test_commands": test_commands, "coverage_target": coverage_target,
    });
    (id, depends_on, value)
}

/// The solution as the prompt shows it (all of it the plan): `id`,
/// `description`, `approach`, and its tasks in dependency order, each
/// saying what it depends on. What is left out is added to `notes`.
pub fn solution_context(solution: &Map<String, Value>, notes: &mut Vec<String>) -> Value {
    let id = solution
        .get("id")
        .and_then(plan_text::text)
        .unwrap_or_else(|| "(unnamed)".to_owned());
    let description = plan_text::field(solution.get("description"), "description", notes);
    let approach = plan_text::field(solution.get("approach"), "approach", notes);
    let items: &[Value] = match solution.get("tasks") {
        Some(Value::Array(items)) => items,
        None | Some(Value::Null) => &[],
        Some(_) => {
            notes.push("`tasks` is not a list; no task reaches the prompt".to_owned());
            &[]
        }
    };
    let mut ids = Vec::new();
    let mut deps = Vec::new();
    let mut values = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Object(t) = item else {
            notes.push(format!("`tasks[{i}]` is not an object; left out"));
            continue;
        };
        let (id, depends_on, value) = task_context(t, i, notes);
        ids.push(id);
        deps.push(depends_on);
        values.push(value);
    }
    for (i, d) in deps.iter().enumerate() {
        for dep in d {
            if !ids.contains(dep) {
                notes.push(format!(
                    "task {}: depends on {dep}, which is not in the solution",
                    ids[i]
                ));
            }
        }
    }
    let tasks: Vec<Value> = plan_text::dependency_order(&ids, &deps, notes)
        .into_iter()
        .map(|i| values[i].clone())
        .collect();
    json!({"id": id, "description": description, "approach": approach, "tasks": tasks})
}

/// What one planex attempt's prompt is rendered from.
#[derive(Debug, Clone, Copy)]
pub struct PromptInput<'a> {
    /// The issue id.
    pub issue_id: &'a str,
    /// The issue's line of the store (empty when not found).
    pub issue: &'a Map<String, Value>,
    /// The title when the issue has none (the task's).
    pub fallback_title: &'a str,
    /// The bound solution.
    pub solution: &'a Map<String, Value>,
    /// The working folder.
    pub cwd: &'a str,
}

/// The context of the `planex` template for attempt `attempt` of
/// `max_attempts`, and the notes on what of the solution was left out.
/// `conflict` is a revision's account of the merge conflict its first
/// version met (isolated sessions).
pub fn prompt_context(
    input: &PromptInput<'_>,
    previous_error: Option<&str>,
    conflict: Option<&str>,
    attempt: u32,
    max_attempts: u32,
) -> (Value, Vec<String>) {
    let mut notes = Vec::new();
    let solution = solution_context(input.solution, &mut notes);
    let value = json!({
        "issue": issue_context(input.issue_id, input.issue, input.fallback_title),
        "solution": solution,
        "cwd": input.cwd,
        "test_command": Value::Null,
        "previous_error": previous_error,
        "conflict": conflict,
        "attempt": attempt,
        "max_attempts": max_attempts,
    });
    (value, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(o) => o,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn malformed_solution_fields_are_noted_never_fatal() {
        let mut notes = Vec::new();
        let s = solution_context(
            &map(json!({"id": "SOL-1", "description": 7, "tasks": [
                "not a task",
                {"id": "T1", "title": ["x"], "implementation": {"nope": 1}, "convergence": "all good",
                 "test": {"commands": "npm test", "coverage_target": 80}, "depends_on": ["T0"]},
            ]})),
            &mut notes,
        );
        assert_eq!(s["description"], "7");
        assert_eq!(s["tasks"].as_array().unwrap().len(), 1);
        assert_eq!(s["tasks"][0]["test_commands"], json!(["npm test"]));
        assert_eq!(s["tasks"][0]["coverage_target"], "80%");
        assert_eq!(notes.len(), 5, "{notes:#?}");
        let no_tasks = solution_context(&map(json!({"tasks": {"T1": {}}})), &mut notes);
        assert_eq!(no_tasks["tasks"], json!([]));
    }
}
