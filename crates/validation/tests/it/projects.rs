//! Real projects, run for real: pytest with pytest-cov, jest and vitest
//! with coverage, cargo (nextest and libtest). Each fixture has known
//! passing, failing, skipped and flaky tests; the counts, pass rate and
//! coverage must equal what the framework itself printed.

use std::path::Path;

use wavecrew_validation::{
    Framework, Outcome, Source, TestOptions, TestRun, TestRunner, parse_console_summary,
};

use crate::support::{copy_fixture, node_modules, python_env};

fn counts(run: &TestRun) -> (u64, u64, u64, u64, u64) {
    let c = run.report.counts;
    (c.passed, c.failed, c.skipped, c.errors, c.total)
}

/// The framework's own summary line must agree with the report.
fn assert_console_agrees(run: &TestRun) {
    let console = parse_console_summary(&run.output_tail)
        .unwrap_or_else(|| panic!("no summary line in:\n{}", run.output_tail));
    let c = console.counts;
    let r = run.report.counts;
    assert_eq!(
        (c.passed, c.failed, c.skipped),
        (r.passed, r.failed, r.skipped),
        "{}",
        run.output_tail
    );
}

/// The percentage printed on the console line starting with `prefix`.
fn printed_percent(text: &str, prefix: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{text}"));
    let word = line
        .split_whitespace()
        .find(|w| w.ends_with('%'))
        .unwrap_or_else(|| panic!("no percentage in `{line}`"));
    word.trim_end_matches('%').parse().unwrap()
}

async fn rerun_failures(runner: &mut TestRunner, run: &TestRun) -> Vec<(String, Outcome)> {
    let failures: Vec<_> = run.report.failures().cloned().collect();
    let again = runner
        .rerun(&failures)
        .await
        .unwrap()
        .expect("this framework can rerun single tests");
    // A name filter leaves the other tests skipped: only the reruns count.
    let mut out: Vec<_> = again
        .report
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Skipped)
        .map(|c| (c.name.clone(), c.outcome))
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn pytest_project() {
    let project = copy_fixture("pytest-project");
    let options = TestOptions {
        env: python_env(),
        ..TestOptions::default()
    };
    let mut runner = TestRunner::new(project.path(), options).await.unwrap();
    assert_eq!(runner.framework(), &Framework::Pytest);
    let run = runner.run().await.unwrap();
    assert_eq!(counts(&run), (3, 3, 1, 0, 7), "{}", run.output_tail);
    assert_eq!(run.report.source, Source::Report);
    assert_console_agrees(&run);
    assert_eq!(run.report.pass_rate(), 0.5);
    // pytest-cov printed `TOTAL 20 6 70%`.
    let cov = run.coverage.clone().expect("coverage.json");
    assert_eq!(
        cov.percent.unwrap().round(),
        printed_percent(&run.output_tail, "TOTAL")
    );
    assert_eq!((cov.covered, cov.total), (14, 20));
    assert!(run.evidence().iter().all(|f| f.is_file()));
    assert!(
        !project.path().join(".coverage").exists(),
        "coverage data stays in the evidence folder"
    );

    let again = rerun_failures(&mut runner, &run).await;
    assert_eq!(
        again,
        [
            ("test_flaky_first_run".to_owned(), Outcome::Passed),
            ("test_multiply".to_owned(), Outcome::Failed),
            ("test_user_lookup".to_owned(), Outcome::Failed),
        ]
    );
}

fn link_node_modules(project: &Path) {
    std::os::unix::fs::symlink(node_modules(), project.join("node_modules")).unwrap();
}

#[tokio::test]
async fn jest_project() {
    let project = copy_fixture("jest-project");
    link_node_modules(project.path());
    let mut runner = TestRunner::new(project.path(), TestOptions::default())
        .await
        .unwrap();
    assert_eq!(runner.framework(), &Framework::Jest);
    let run = runner.run().await.unwrap();
    // jest: 3 failed, 1 skipped, 1 todo, 3 passed, 8 total.
    assert_eq!(counts(&run), (3, 3, 2, 0, 8), "{}", run.output_tail);
    assert_eq!(run.report.source, Source::Report);
    assert_console_agrees(&run);
    // jest printed `Lines : 77.77% ( 7/9 )`.
    let cov = run.coverage.clone().expect("coverage-summary.json");
    assert_eq!((cov.covered, cov.total), (7, 9));
    assert!((cov.percent.unwrap() - printed_percent(&run.output_tail, "Lines")).abs() < 0.01);

    let again = rerun_failures(&mut runner, &run).await;
    assert_eq!(
        again,
        [
            ("flaky on its first run".to_owned(), Outcome::Passed),
            ("math multiplies numbers".to_owned(), Outcome::Failed),
            ("math reads a user".to_owned(), Outcome::Failed),
        ]
    );
}

#[tokio::test]
async fn vitest_project() {
    let project = copy_fixture("vitest-project");
    link_node_modules(project.path());
    // Unconfined: the fixture's `node_modules` is a link to the shared
    // tool cache, where vitest writes its results cache (`.vite/`), and a
    // confined run may write only the project's folder.
    let options = TestOptions {
        confined: None,
        ..TestOptions::default()
    };
    let mut runner = TestRunner::new(project.path(), options).await.unwrap();
    assert_eq!(runner.framework(), &Framework::Vitest);
    let run = runner.run().await.unwrap();
    // vitest: Tests 2 failed | 2 passed | 1 skipped (5).
    assert_eq!(counts(&run), (2, 2, 1, 0, 5), "{}", run.output_tail);
    assert_console_agrees(&run);
    // vitest printed `Lines : 80% ( 8/10 )`.
    let cov = run.coverage.clone().expect("coverage-summary.json");
    assert_eq!((cov.covered, cov.total), (8, 10));
    assert_eq!(
        cov.percent,
        Some(printed_percent(&run.output_tail, "Lines"))
    );

    let again = rerun_failures(&mut runner, &run).await;
    assert_eq!(
        again,
        [
            ("strings flaky on its first run".to_owned(), Outcome::Passed),
            ("strings takes initials".to_owned(), Outcome::Failed),
        ]
    );
}

fn cargo_options(project: &Path, framework: Framework) -> TestOptions {
    let mut options = TestOptions {
        framework: Some(framework),
        ..TestOptions::default()
    };
    // Its own target folder: never the workspace's (and its lock).
    options
        .env
        .insert("CARGO_TARGET_DIR".into(), project.join("target").into());
    options
}

#[tokio::test]
async fn cargo_project_with_nextest() {
    let project = copy_fixture("cargo-project");
    let mut runner = TestRunner::new(
        project.path(),
        cargo_options(project.path(), Framework::CargoNextest),
    )
    .await
    .unwrap();
    let run = runner.run().await.unwrap();
    // nextest: 5 tests run: 3 passed, 2 failed, 1 skipped.
    assert_eq!(counts(&run), (3, 2, 1, 0, 6), "{}", run.output_tail);
    assert_eq!(run.report.source, Source::Report);
    assert_console_agrees(&run);
    assert!(run.coverage.is_none());
    let again = rerun_failures(&mut runner, &run).await;
    assert_eq!(
        again,
        [
            ("tests::flaky_first_run".to_owned(), Outcome::Passed),
            ("tests::multiplies".to_owned(), Outcome::Failed),
        ]
    );
}

#[tokio::test]
async fn cargo_project_with_libtest() {
    let project = copy_fixture("cargo-project");
    let mut runner = TestRunner::new(
        project.path(),
        cargo_options(project.path(), Framework::CargoTest),
    )
    .await
    .unwrap();
    let run = runner.run().await.unwrap();
    // libtest: test result: FAILED. 3 passed; 2 failed; 1 ignored.
    assert_eq!(counts(&run), (3, 2, 1, 0, 6), "{}", run.output_tail);
    assert_eq!(
        run.report.source,
        Source::Console,
        "libtest's lines are console output"
    );
    assert_console_agrees(&run);
    let again = rerun_failures(&mut runner, &run).await;
    assert_eq!(
        again,
        [
            ("tests::flaky_first_run".to_owned(), Outcome::Passed),
            ("tests::multiplies".to_owned(), Outcome::Failed),
        ]
    );
}
