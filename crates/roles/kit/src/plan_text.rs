//! The plan's own text as a prompt shows it: the steps, file changes,
//! criteria and commands of a roadmap task (ccw-compat §2.5a) or a planex
//! solution task (§2.8), read from whichever shape the planner wrote (a
//! string, a list, an object). A part of the wrong shape is left out and
//! named in the notes, never a panic, so the caller can log what the agent
//! did not get.
//!
//! ```
//! use serde_json::json;
//! use wavecrew_role_kit::plan_text::{file_changes, steps};
//!
//! let mut notes = Vec::new();
//! let s = steps(Some(&json!(["Create handler", {"step": "2", "description": "Wire the route", "actions": ["edit routes.ts"]}, 7, null])), "implementation", &mut notes);
//! assert_eq!(s, ["Create handler", "Wire the route: edit routes.ts", "7"]);
//! assert_eq!(notes, ["`implementation[3]` is neither text nor a step; left out"]);
//! let f = file_changes(Some(&json!([{"path": "src/routes.ts", "action": "modify", "change": "register route"}])), "files", &mut notes);
//! assert_eq!((f[0].path.as_str(), f[0].change.as_str()), ("src/routes.ts", "register route"));
//! ```

use serde::Serialize;
use serde_json::Value;

/// A value as one piece of text: a string (trimmed), a number or a boolean
/// written out; `None` for anything else or an empty string.
pub fn text(v: &Value) -> Option<String> {
    let s = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!s.is_empty()).then_some(s)
}

/// An optional text field: absent or null is empty; any other non-text
/// value is noted and left out.
pub fn field(v: Option<&Value>, name: &str, notes: &mut Vec<String>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(v) => text(v).unwrap_or_else(|| {
            if !matches!(v, Value::String(_)) {
                notes.push(format!("`{name}` is not text; left out"));
            }
            String::new()
        }),
    }
}

/// A list of texts: one string is a list of one; the items of a list that
/// are not text are noted and left out.
pub fn texts(v: Option<&Value>, name: &str, notes: &mut Vec<String>) -> Vec<String> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let t = text(item);
                if t.is_none() && !matches!(item, Value::String(_)) {
                    notes.push(format!("`{name}[{i}]` is not text; left out"));
                }
                t
            })
            .collect(),
        Some(v) => {
            if let Some(t) = text(v) {
                return vec![t];
            }
            if !matches!(v, Value::String(_)) {
                notes.push(format!("`{name}` is neither text nor a list; left out"));
            }
            Vec::new()
        }
    }
}

/// One implementation step: a string, or `{step, title, description,
/// tdd_phase, actions[]}` (the roadmap's step objects).
fn step(v: &Value) -> Option<String> {
    let Value::Object(o) = v else {
        return text(v);
    };
    let title = o.get("title").and_then(text);
    let description = o.get("description").and_then(text);
    let mut out = match (title, description) {
        (Some(t), Some(d)) => format!("{t}: {d}"),
        (Some(t), None) => t,
        (None, Some(d)) => d,
        (None, None) => o.get("step").and_then(text).unwrap_or_default(),
    };
    if let Some(phase) = o.get("tdd_phase").and_then(text) {
        out = format!("({phase} phase) {out}");
    }
    let mut ignored = Vec::new();
    let actions = texts(o.get("actions"), "actions", &mut ignored);
    if !actions.is_empty() {
        if out.is_empty() {
            out = actions.join("; ");
        } else {
            out = format!("{out}: {}", actions.join("; "));
        }
    }
    (!out.trim().is_empty()).then_some(out)
}

/// Implementation steps (`implementation[]`): strings or step objects; a
/// single string is one step.
pub fn steps(v: Option<&Value>, name: &str, notes: &mut Vec<String>) -> Vec<String> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let s = step(item);
                if s.is_none() {
                    notes.push(format!(
                        "`{name}[{i}]` is neither text nor a step; left out"
                    ));
                }
                s
            })
            .collect(),
        Some(v) => {
            if let Some(s) = step(v) {
                return vec![s];
            }
            notes.push(format!("`{name}` is neither a list nor a step; left out"));
            Vec::new()
        }
    }
}

/// One file a task declares it changes, as the prompt shows it (every key
/// present, empty when the plan does not say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// The file (`path`, or the legacy `file`).
    pub path: String,
    /// `create`, `modify`, `delete`, … (empty when unsaid).
    pub action: String,
    /// The function, type or section in the file (`target`).
    pub target: String,
    /// What to change (`change`, or `changes[]` joined).
    pub change: String,
}

fn file_change(v: &Value) -> Option<FileChange> {
    match v {
        Value::String(p) if !p.trim().is_empty() => Some(FileChange {
            path: p.trim().to_owned(),
            ..FileChange::default()
        }),
        Value::Object(o) => {
            let path = o.get("path").or_else(|| o.get("file")).and_then(text)?;
            let mut ignored = Vec::new();
            let mut change = texts(o.get("change"), "change", &mut ignored);
            change.extend(texts(o.get("changes"), "changes", &mut ignored));
            Some(FileChange {
                path,
                action: o.get("action").and_then(text).unwrap_or_default(),
                target: o.get("target").and_then(text).unwrap_or_default(),
                change: change.join("; "),
            })
        }
        _ => None,
    }
}

/// The files of `files[]` or `modification_points[]`: paths or objects
/// with `path` (or `file`), `action`, `target`, `change` / `changes[]`.
pub fn file_changes(v: Option<&Value>, name: &str, notes: &mut Vec<String>) -> Vec<FileChange> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let f = file_change(item);
                if f.is_none() {
                    notes.push(format!("`{name}[{i}]` names no file; left out"));
                }
                f
            })
            .collect(),
        Some(_) => {
            notes.push(format!("`{name}` is not a list; left out"));
            Vec::new()
        }
    }
}

/// The order to show tasks in: each after the tasks it depends on, else in
/// the order given (`deps[i]` are the ids task `i` depends on). A
/// dependency on an id not in the list is ignored; a cycle is broken by
/// taking the first task left, and noted.
pub fn dependency_order(
    ids: &[String],
    deps: &[Vec<String>],
    notes: &mut Vec<String>,
) -> Vec<usize> {
    let mut done = vec![false; ids.len()];
    let mut order = Vec::with_capacity(ids.len());
    while order.len() < ids.len() {
        let ready = (0..ids.len()).find(|&i| {
            !done[i]
                && deps[i].iter().all(|d| {
                    ids.iter()
                        .enumerate()
                        .all(|(j, id)| id != d || done[j] || j == i)
                })
        });
        let next = ready.unwrap_or_else(|| {
            let first = (0..ids.len()).find(|&i| !done[i]).unwrap_or(0);
            notes.push(format!(
                "the tasks' `depends_on` form a cycle; {} is taken first",
                ids[first]
            ));
            first
        });
        done[next] = true;
        order.push(next);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_parts_are_noted_not_fatal() {
        let mut notes = Vec::new();
        assert!(file_changes(Some(&json!("src/a.rs")), "files", &mut notes).is_empty());
        assert!(steps(Some(&json!({"x": 1})), "implementation", &mut notes).is_empty());
        assert_eq!(
            texts(Some(&json!([1, {}, "a"])), "criteria", &mut notes),
            ["1", "a"]
        );
        assert_eq!(field(Some(&json!([])), "scope", &mut notes), "");
        assert_eq!(notes.len(), 4, "{notes:?}");
    }

    #[test]
    fn file_shapes_of_every_era() {
        let mut notes = Vec::new();
        let f = file_changes(
            Some(&json!([
                "src/a.rs",
                {"file": "src/b.rs", "target": "fn login", "change": "check the expiry"},
                {"path": "src/c.rs", "action": "modify", "changes": ["add x", "drop y"]},
                {"action": "create"}
            ])),
            "files",
            &mut notes,
        );
        assert_eq!(f.len(), 3);
        assert_eq!(f[1].target, "fn login");
        assert_eq!(f[2].change, "add x; drop y");
        assert_eq!(notes, ["`files[3]` names no file; left out"]);
    }

    #[test]
    fn dependencies_come_first_and_cycles_are_broken() {
        let ids: Vec<String> = ["T1", "T2", "T3"].map(String::from).to_vec();
        let mut notes = Vec::new();
        let deps = vec![
            vec!["T3".to_owned()],
            vec![],
            vec!["T2".to_owned(), "T9".to_owned()],
        ];
        assert_eq!(dependency_order(&ids, &deps, &mut notes), [1, 2, 0]);
        assert!(notes.is_empty());
        let cycle = vec![vec!["T2".to_owned()], vec!["T1".to_owned()], vec![]];
        assert_eq!(dependency_order(&ids, &cycle, &mut notes), [2, 0, 1]);
        assert_eq!(notes.len(), 1);
    }
}
