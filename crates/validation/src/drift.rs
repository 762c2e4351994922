//! Tests compared with a task's base: which tests the task's change made
//! disappear, and which it made skipped, by the framework's own reports
//! of the two trees. A criterion that passes only because its tests went
//! away must not pass; [`TestDrift`] names them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::report::{Outcome, TestReport};

/// File names whose change can remove or skip tests without touching a
/// test file (collection and runner configuration).
const TEST_CONFIG: &[&str] = &[
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "package.json",
    "Cargo.toml",
    "go.mod",
    ".mocharc.json",
    "karma.conf.js",
];

/// Whether a change to `path` (project-relative) can change which tests
/// run: a test file, or a test runner's configuration
/// (`jest.config.*`, `vitest.config.*`, `conftest.py`, `pyproject.toml`,
/// …).
pub fn touches_tests(path: &str) -> bool {
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    crate::affected::is_test_file(path)
        || TEST_CONFIG.contains(&name.as_str())
        || [
            "jest.config.",
            "vitest.config.",
            "vite.config.",
            "babel.config.",
        ]
        .iter()
        .any(|p| name.starts_with(p))
}

/// What changed in the tests from the base's report to the task's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TestDrift {
    /// Tests the base's report has and the task's has not (deleted,
    /// renamed, or no longer collected), by id.
    pub gone: Vec<String>,
    /// Tests that ran at the base and are skipped after the task, by id.
    pub newly_skipped: Vec<String>,
}

impl TestDrift {
    /// Compare the base's report with the task's.
    pub fn between(base: &TestReport, after: &TestReport) -> Self {
        let after: BTreeMap<&str, Outcome> = after
            .cases
            .iter()
            .map(|c| (c.id.as_str(), c.outcome))
            .collect();
        let mut drift = TestDrift::default();
        for case in &base.cases {
            match after.get(case.id.as_str()) {
                None => drift.gone.push(case.id.clone()),
                Some(Outcome::Skipped) if case.outcome != Outcome::Skipped => {
                    drift.newly_skipped.push(case.id.clone());
                }
                Some(_) => {}
            }
        }
        drift.gone.sort();
        drift.gone.dedup();
        drift.newly_skipped.sort();
        drift.newly_skipped.dedup();
        drift
    }

    /// Whether nothing went away and nothing was newly skipped.
    pub fn is_empty(&self) -> bool {
        self.gone.is_empty() && self.newly_skipped.is_empty()
    }

    /// One sentence naming the tests (at most 10 of each kind), for a
    /// task's error.
    pub fn describe(&self) -> String {
        let list = |ids: &[String]| {
            let mut s = ids
                .iter()
                .take(10)
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if ids.len() > 10 {
                let _ = write!(s, " and {} more", ids.len() - 10);
            }
            s
        };
        let mut parts = Vec::new();
        if !self.gone.is_empty() {
            parts.push(format!(
                "tests of the task's base are gone: {}",
                list(&self.gone)
            ));
        }
        if !self.newly_skipped.is_empty() {
            parts.push(format!(
                "tests that ran at the task's base are skipped now: {}",
                list(&self.newly_skipped)
            ));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Source, TestCase};

    fn report(cases: &[(&str, Outcome)]) -> TestReport {
        TestReport::from_cases(
            cases
                .iter()
                .map(|(id, outcome)| TestCase {
                    id: (*id).to_owned(),
                    name: (*id).to_owned(),
                    classname: None,
                    file: None,
                    outcome: *outcome,
                    message: None,
                })
                .collect(),
            Source::Report,
            Vec::new(),
        )
    }

    #[test]
    fn gone_and_newly_skipped_tests_are_named_added_ones_are_not() {
        let base = report(&[
            ("t::a", Outcome::Failed),
            ("t::b", Outcome::Passed),
            ("t::c", Outcome::Skipped),
            ("t::d", Outcome::Passed),
        ]);
        let after = report(&[
            ("t::b", Outcome::Skipped),
            ("t::c", Outcome::Skipped),
            ("t::d", Outcome::Passed),
            ("t::new", Outcome::Passed),
        ]);
        let drift = TestDrift::between(&base, &after);
        assert_eq!(drift.gone, ["t::a"]);
        assert_eq!(drift.newly_skipped, ["t::b"]);
        assert_eq!(
            drift.describe(),
            "tests of the task's base are gone: `t::a`; tests that ran at the task's base are \
             skipped now: `t::b`"
        );
        assert!(TestDrift::between(&base, &base).is_empty());
    }

    #[test]
    fn test_files_and_runner_configuration_touch_tests() {
        for p in [
            "tests/test_calc.py",
            "conftest.py",
            "web/jest.config.js",
            "src/a.test.ts",
        ] {
            assert!(touches_tests(p), "{p}");
        }
        for p in ["src/calc.py", "README.md", "src/lib.rs"] {
            assert!(!touches_tests(p), "{p}");
        }
    }
}
