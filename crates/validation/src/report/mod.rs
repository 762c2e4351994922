//! Test results as evidence: one [`TestReport`] model filled from whichever
//! machine-readable report the framework wrote (JUnit XML, jest or vitest
//! JSON, `go test -json`), or, only when there is none, from the console
//! ([`Source::Console`]).

mod console;
mod gotest;
mod jest;
mod junit;
mod libtest;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use console::parse_console_summary;
pub use gotest::parse_go_test_json;
pub use jest::parse_jest_json;
pub use junit::{parse_junit, parse_junit_file};
pub use libtest::parse_libtest_output;

/// What became of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It passed.
    Passed,
    /// An assertion failed.
    Failed,
    /// It could not run, or crashed outside an assertion.
    Error,
    /// It was skipped, ignored, pending or todo.
    Skipped,
}

/// One test case from a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    /// A stable id that a rerun can select the test by (framework-specific:
    /// a pytest node id, `file::full name` for jest, the libtest path).
    pub id: String,
    /// The test's name.
    pub name: String,
    /// The suite, class or module it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classname: Option<String>,
    /// The file it lives in, when the report says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The outcome.
    pub outcome: Outcome,
    /// The failure or skip message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Where the numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A machine-readable report file or stream.
    Report,
    /// The console output (a fallback, less trustworthy).
    Console,
}

/// Test counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed an assertion.
    pub failed: u64,
    /// Tests skipped, ignored, pending or todo.
    pub skipped: u64,
    /// Tests (or whole files) that errored.
    pub errors: u64,
    /// All of the above.
    pub total: u64,
}

impl Counts {
    /// Count the outcomes of `cases`.
    pub fn of(cases: &[TestCase]) -> Self {
        let mut c = Counts::default();
        for case in cases {
            match case.outcome {
                Outcome::Passed => c.passed += 1,
                Outcome::Failed => c.failed += 1,
                Outcome::Error => c.errors += 1,
                Outcome::Skipped => c.skipped += 1,
            }
        }
        c.total = c.passed + c.failed + c.skipped + c.errors;
        c
    }

    /// Tests that ran: everything but the skipped ones.
    pub fn executed(&self) -> u64 {
        self.passed + self.failed + self.errors
    }

    /// `passed / executed`, 0.0 when nothing ran (nothing was proven).
    #[allow(clippy::cast_precision_loss)]
    pub fn pass_rate(&self) -> f64 {
        let executed = self.executed();
        if executed == 0 {
            0.0
        } else {
            self.passed as f64 / executed as f64
        }
    }
}

/// The results of one test run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestReport {
    /// The counts. From the cases when the report lists them, otherwise
    /// from its summary.
    pub counts: Counts,
    /// Every test case the report lists (empty for a console summary).
    pub cases: Vec<TestCase>,
    /// Whether the numbers came from a report or the console.
    pub source: Source,
    /// The files the numbers were read from.
    pub evidence: Vec<PathBuf>,
}

impl TestReport {
    /// A report from a list of cases.
    pub fn from_cases(cases: Vec<TestCase>, source: Source, evidence: Vec<PathBuf>) -> Self {
        TestReport {
            counts: Counts::of(&cases),
            cases,
            source,
            evidence,
        }
    }

    /// The cases that failed or errored.
    pub fn failures(&self) -> impl Iterator<Item = &TestCase> {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed | Outcome::Error))
    }

    /// See [`Counts::pass_rate`].
    pub fn pass_rate(&self) -> f64 {
        self.counts.pass_rate()
    }
}
