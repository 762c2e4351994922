//! Validation from evidence, not keyword matches.
//!
//! The seeds judge an agent's work by words ("any word of the criterion
//! appears", "the output lacks FAIL"). This crate judges it by what the
//! project's own tools say, and every result names the evidence it used:
//!
//! * [`check_syntax`]: `tsc --noEmit`, `cargo check`, `python3 -m
//!   py_compile`, `go vet` by project type ([`project::detect`]), with a
//!   timeout; a missing tool is [`CheckStatus::Skipped`] with the reason,
//!   never a pass.
//! * [`check_files`]: every declared file exists inside the project.
//! * [`check_acceptance`]: a criterion's `verify` command, split with
//!   shell-words and run as argv (never through a shell) in the task's
//!   folder; plain text is [`CheckStatus::ManualReview`]; the seed's keyword
//!   match only as the opt-in, weak [`Strategy::Keyword`].
//! * [`affected_tests`]: the test files of changed files, by language.
//! * [`TestRunner`]: detect the framework ([`Framework`]), run it with a
//!   machine-readable reporter, read counts and cases ([`TestReport`]) and
//!   coverage ([`Coverage`]) from the files it wrote; the console only as a
//!   fallback, marked [`Source::Console`].
//! * [`run_fix_loop`]: the test-fix loop as a state machine over a
//!   [`TestSource`] and a [`Fixer`], with flaky-test detection, snapshots
//!   and rollback, producing the `results/run-<NNN>.json` record
//!   ([`RunResult`], [`write_run_result`]).
//!
//! The commands these run on a project run its code (a test, a
//! `conftest.py`, a build script): by default ([`SyntaxOptions`],
//! [`AcceptanceOptions`], [`TestOptions`]) they are confined, and may write
//! only the project's folder, their reports and a temporary folder of their
//! own; a caller gives them the agent's whole box (its hidden paths,
//! withheld variables and network) with `confined`, or runs them as itself
//! with `confined: None`.
//!
//! Parsers take text and name the file in every error:
//!
//! ```
//! use std::path::Path;
//! use wavecrew_validation::{parse_junit, parse_coverage, CoverageFormat, defect_patterns};
//!
//! let xml = r#"<testsuites>
//!   <testsuite name="tests.test_calc" tests="3">
//!     <testcase classname="tests.test_calc" name="test_add"/>
//!     <testcase classname="tests.test_calc" name="test_user">
//!       <failure message="TypeError: Cannot read properties of undefined (reading 'id')"/>
//!     </testcase>
//!     <testcase classname="tests.test_calc" name="test_later"><skipped/></testcase>
//!   </testsuite>
//! </testsuites>"#;
//! let report = parse_junit(xml, Path::new("junit.xml"))?;
//! assert_eq!((report.counts.passed, report.counts.failed, report.counts.skipped), (1, 1, 1));
//! assert_eq!(report.pass_rate(), 0.5);
//! assert_eq!(defect_patterns(&report), ["null_reference"]);
//!
//! let lcov = b"SF:src/a.js\nDA:1,1\nDA:2,0\nLF:2\nLH:1\nend_of_record\n";
//! let cov = parse_coverage(CoverageFormat::Lcov, lcov, Path::new("lcov.info"))?;
//! assert_eq!(cov.percent, Some(50.0));
//!
//! let err = parse_junit("<testsuites><testsuite", Path::new("broken.xml")).unwrap_err();
//! assert!(err.to_string().starts_with("`broken.xml`: malformed JUnit XML report"));
//! # Ok::<(), wavecrew_validation::ValidationError>(())
//! ```

mod acceptance;
mod affected;
mod coverage;
mod drift;
mod error;
mod files;
mod fixloop;
mod framework;
mod patterns;
pub mod process;
pub mod project;
mod report;
mod results;
mod run;
mod snapshot;
mod status;
mod syntax;

pub use acceptance::{
    AcceptanceOptions, AcceptanceReport, CriterionResult, Evidence, Strategy, SuiteVerdict,
    check_acceptance, keywords, split_command,
};
pub use affected::{AffectedTest, affected_tests, is_test_file};
pub use coverage::{Coverage, CoverageFormat, detect_format, parse_coverage, parse_coverage_file};
pub use drift::{TestDrift, touches_tests};
pub use error::{Result, ValidationError};
pub use files::{FileCheck, check_files};
pub use fixloop::{
    FailureDetail, FixReply, FixRequest, Fixer, LoopOptions, LoopOutcome, RoundRecord, StateName,
    SuiteRun, TestSource, Verdict, run_fix_loop,
};
pub use framework::{Framework, detect as detect_framework};
pub use patterns::{
    defect_patterns, defect_patterns_of, effective_patterns, effective_patterns_of,
};
pub use project::ProjectKind;
pub use report::{
    Counts, Outcome, Source, TestCase, TestReport, parse_console_summary, parse_go_test_json,
    parse_jest_json, parse_junit, parse_junit_file, parse_libtest_output,
};
pub use results::{RunResult, next_run_number, write_run_result};
pub use run::{TestOptions, TestRun, TestRunner, describe_source};
pub use snapshot::{EXCLUDED_DIRS, Snapshot};
pub use status::CheckStatus;
pub use syntax::{SyntaxCheck, SyntaxOptions, SyntaxReport, check_syntax};
