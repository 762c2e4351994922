//! Syntax checks by project type, timeouts, and missing tools (`skipped`
//! with a reason, never `pass`); file checks; affected tests on a fixture.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use wavecrew_validation::{CheckStatus, ProjectKind, SyntaxOptions, check_syntax};

#[tokio::test]
async fn python_compiles_the_changed_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("requirements.txt"), "").unwrap();
    std::fs::write(d.join("good.py"), "x = 1\n").unwrap();
    std::fs::write(d.join("bad.py"), "def f(:\n").unwrap();
    let good = SyntaxOptions {
        changed_files: vec!["good.py".into()],
        ..SyntaxOptions::default()
    };
    let r = check_syntax(d, &good).await;
    assert_eq!(r.kinds, [ProjectKind::Python]);
    assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
    assert_eq!(r.checks[0].command, "python3 -m py_compile good.py");
    let all = check_syntax(d, &SyntaxOptions::default()).await;
    assert_eq!(all.status, CheckStatus::Fail);
    assert!(
        all.checks[0].output.contains("bad.py"),
        "{}",
        all.checks[0].output
    );
    assert!(
        !d.join("__pycache__").exists(),
        "nothing is written into the project"
    );
}

#[tokio::test]
async fn missing_tools_are_skipped_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("tsconfig.json"), "{}").unwrap();
    std::fs::write(d.join("go.mod"), "module x\n").unwrap();
    std::fs::write(d.join("Cargo.toml"), "[package]\nname='x'\n").unwrap();
    std::fs::write(d.join("setup.py"), "").unwrap();
    // An empty PATH: no tool can be found.
    let options = SyntaxOptions {
        env: BTreeMap::from([(OsString::from("PATH"), OsString::from("/nonexistent"))]),
        ..SyntaxOptions::default()
    };
    let r = check_syntax(d, &options).await;
    assert_eq!(
        r.kinds,
        [
            ProjectKind::TypeScript,
            ProjectKind::Rust,
            ProjectKind::Python,
            ProjectKind::Go
        ]
    );
    assert_eq!(
        r.status,
        CheckStatus::Skipped,
        "never pass without evidence"
    );
    let reasons: Vec<&str> = r
        .checks
        .iter()
        .map(|c| c.reason.as_deref().unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            "`tsc` is not installed (not in node_modules/.bin or PATH)",
            "`cargo` is not installed (not in node_modules/.bin or PATH)",
            "`python3` is not installed (not in PATH)",
            "`go` is not installed (not in node_modules/.bin or PATH)",
        ]
    );
}

#[tokio::test]
async fn a_slow_check_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("requirements.txt"), "").unwrap();
    std::fs::write(d.join("slow.py"), "x = 1\n").unwrap();
    // A `python3` that hangs.
    let bin = d.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("python3"), "#!/bin/sh\nexec /bin/sleep 30\n").unwrap();
    std::fs::set_permissions(
        bin.join("python3"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let options = SyntaxOptions {
        timeout: Duration::from_millis(300),
        env: BTreeMap::from([(OsString::from("PATH"), bin.into_os_string())]),
        ..SyntaxOptions::default()
    };
    let started = std::time::Instant::now();
    let r = check_syntax(d, &options).await;
    assert_eq!(r.status, CheckStatus::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn affected_tests_of_the_pytest_fixture() {
    let root = crate::support::fixture("pytest-project");
    let found = wavecrew_validation::affected_tests(&root, &["calc.py".into()]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].test, "tests/test_calc.py");
    let files = wavecrew_validation::check_files(&root, &["calc.py".into(), "nope.py".into()]);
    assert_eq!(
        files.iter().map(|f| f.status).collect::<Vec<_>>(),
        [CheckStatus::Pass, CheckStatus::Fail]
    );
}
