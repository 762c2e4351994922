//! Plan text (`plan.md`, `IMPL_PLAN.md`): the execution backend, the code
//! review setting, and the dependency lines.
//!
//! The seed's dependency regex caught one edge per line (`IMPL-3 depends on
//! IMPL-1 and IMPL-2` gave only 3→2). Here every id after `depends on` on a
//! line is a dependency of every id before it, so both `IMPL-3 depends on
//! IMPL-1, IMPL-2` and `… IMPL-1 and IMPL-2` yield both edges.

use std::sync::LazyLock;

use regex::Regex;

use crate::id::TaskId;

static BACKEND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?im)^[\s>*_#-]*\**execution backend\**\s*:\s*\**\s*`?([A-Za-z0-9][A-Za-z0-9_.-]*)",
    )
    .expect("static regex")
});
static REVIEW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\**code review\**\s*:\s*\**\s*(enabled|disabled)").expect("static regex")
});
static DEPENDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bdepends?\s+(?:up)?on\b").expect("static regex"));
/// A task id as plans write them: an upper-case prefix, optional dash
/// segments, a dash and a number (`IMPL-3`, `IMPL-003`, `TESTRUN-001`).
static TASK_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z][A-Z0-9_]*(?:-[A-Za-z0-9]+)*-[0-9]+\b").expect("static regex")
});
/// An id that starts a line (a heading, a list item, a bold label).
static DECLARED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[ \t]*(?:#+|[-*+]|\d+[.)])?[ \t]*(?:\*\*|`|\[ \]|\[x\])?[ \t]*([A-Z][A-Z0-9_]*(?:-[A-Za-z0-9]+)*-[0-9]+)\b")
        .expect("static regex")
});

/// One dependency found in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDependency {
    /// The task that waits.
    pub task: TaskId,
    /// The task it waits for.
    pub depends_on: TaskId,
    /// The 1-based line it was found on.
    pub line: usize,
}

/// A parsed plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The whole text.
    pub text: String,
    /// `Execution Backend: <name>`, lower-cased.
    pub execution_backend: Option<String>,
    /// `Code Review: enabled|disabled`.
    pub code_review: Option<bool>,
    /// Every dependency edge, in order of appearance.
    pub dependencies: Vec<PlanDependency>,
    /// Ids that start a line or a dependency sentence, in order of first
    /// appearance: the tasks the plan declares.
    pub declared_tasks: Vec<TaskId>,
}

impl Plan {
    /// Parse plan text. Never fails: text without the markers yields `None`s.
    pub fn parse(text: &str) -> Plan {
        let execution_backend = BACKEND.captures(text).map(|c| c[1].to_ascii_lowercase());
        let code_review = REVIEW
            .captures(text)
            .map(|c| c[1].eq_ignore_ascii_case("enabled"));
        let mut dependencies = Vec::new();
        let mut declared: Vec<TaskId> = Vec::new();
        let mut seen: std::collections::HashSet<TaskId> = std::collections::HashSet::new();
        let mut declare = |id: TaskId| {
            if seen.insert(id.clone()) {
                declared.push(id);
            }
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(c) = DECLARED.captures(line)
                && let Ok(id) = TaskId::new(&c[1])
            {
                declare(id);
            }
            let Some(m) = DEPENDS.find(line) else {
                continue;
            };
            let ids = |s: &str| -> Vec<TaskId> {
                TASK_ID
                    .find_iter(s)
                    .filter_map(|m| TaskId::new(m.as_str()).ok())
                    .collect()
            };
            let (before, after) = (ids(&line[..m.start()]), ids(&line[m.end()..]));
            for task in &before {
                declare(task.clone());
                for dep in &after {
                    dependencies.push(PlanDependency {
                        task: task.clone(),
                        depends_on: dep.clone(),
                        line: n + 1,
                    });
                }
            }
        }
        Plan {
            text: text.to_owned(),
            execution_backend,
            code_review,
            dependencies,
            declared_tasks: declared,
        }
    }

    /// The body of the markdown section `## <title>` (up to the next heading
    /// of the same or a higher level), if present.
    pub fn section(&self, title: &str) -> Option<&str> {
        let mut start = None;
        let mut level = 0;
        let mut offset = 0;
        for line in self.text.split_inclusive('\n') {
            let hashes = line.bytes().take_while(|b| *b == b'#').count();
            if hashes > 0 && line[hashes..].starts_with(' ') {
                if let Some(s) = start {
                    if hashes <= level {
                        return Some(self.text[s..offset].trim());
                    }
                } else if line[hashes..].trim().eq_ignore_ascii_case(title) {
                    start = Some(offset + line.len());
                    level = hashes;
                }
            }
            offset += line.len();
        }
        start.map(|s| self.text[s..].trim())
    }

    /// The dependencies of `task` named in the plan (`IMPL-3` in the plan
    /// names task `IMPL-003`, see [`TaskId::same_task`]).
    pub fn dependencies_of<'a>(&'a self, task: &'a TaskId) -> impl Iterator<Item = &'a TaskId> {
        self.dependencies
            .iter()
            .filter(move |d| d.task.same_task(task))
            .map(|d| &d.depends_on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(text: &str) -> Vec<(String, String)> {
        Plan::parse(text)
            .dependencies
            .into_iter()
            .map(|d| (d.task.to_string(), d.depends_on.to_string()))
            .collect()
    }

    #[test]
    fn comma_and_and_both_yield_every_edge() {
        let want = vec![
            ("IMPL-3".to_owned(), "IMPL-1".to_owned()),
            ("IMPL-3".to_owned(), "IMPL-2".to_owned()),
        ];
        assert_eq!(edges("IMPL-3 depends on IMPL-1, IMPL-2"), want);
        assert_eq!(edges("IMPL-3 depends on IMPL-1 and IMPL-2"), want);
        assert_eq!(edges("- IMPL-3 Depends On IMPL-1 & IMPL-2."), want);
    }

    #[test]
    fn backend_and_review() {
        let p = Plan::parse("# Plan\n\nExecution Backend: Codex\nCode Review: Enabled\n");
        assert_eq!(p.execution_backend.as_deref(), Some("codex"));
        assert_eq!(p.code_review, Some(true));
        let p = Plan::parse("**Execution Backend**: my-agent\n**Code Review**: disabled");
        assert_eq!(p.execution_backend.as_deref(), Some("my-agent"));
        assert_eq!(p.code_review, Some(false));
        let p = Plan::parse("nothing here");
        assert_eq!(p.execution_backend, None);
        assert_eq!(p.code_review, None);
    }

    #[test]
    fn declared_tasks_and_sections() {
        let text = "## Architecture\nLayers.\n### Detail\nmore\n## Tasks\n- IMPL-001: first\n### IMPL-002: second\nIMPL-002 depends on IMPL-001\nIMPL-004 depends on IMPL-009\n";
        let p = Plan::parse(text);
        let ids: Vec<_> = p.declared_tasks.iter().map(TaskId::as_str).collect();
        assert_eq!(ids, ["IMPL-001", "IMPL-002", "IMPL-004"]);
        assert_eq!(p.section("architecture"), Some("Layers.\n### Detail\nmore"));
        assert_eq!(p.section("Missing"), None);
        assert_eq!(p.dependencies[1].line, 9);
    }
}
