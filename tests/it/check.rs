//! `wavecrew check syntax|tests|acceptance`: what wavecrew sees in a
//! project, from the command line, as text and as JSON.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use wavecrew_testkit::{CliOutput, bin_path, run_bin};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/validation/tests/fixtures")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `PATH` with the Python venv that `scripts/test.sh` installs first.
fn python_path() -> OsString {
    let cache = std::env::var_os("WAVECREW_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/wavecrew"),
        PathBuf::from,
    );
    let bin = cache.join("py/bin");
    assert!(
        bin.join("pytest").exists(),
        "pytest is not installed in `{}`: run scripts/test.sh (these tests never skip)",
        bin.display()
    );
    let mut path = bin.into_os_string();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

fn wavecrew_with_path(args: &[&str], cwd: &Path, path: &OsString) -> CliOutput {
    Command::new(bin_path("wavecrew"))
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into()
}

fn json_stdout(out: &CliOutput) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr))
}

#[test]
fn tests_json_on_a_pytest_project() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    copy_dir(&fixture("pytest-project"), &project);
    let evidence = dir.path().join("evidence");
    let out = wavecrew_with_path(
        &[
            "check",
            "tests",
            "--json",
            "--evidence-dir",
            evidence.to_str().unwrap(),
            "project",
        ],
        dir.path(),
        &python_path(),
    );
    assert_eq!(out.code, 1, "{}", out.render());
    let v = json_stdout(&out);
    assert_eq!(v["framework"], "pytest");
    assert_eq!(
        [
            &v["passed"],
            &v["failed"],
            &v["skipped"],
            &v["errors"],
            &v["total"]
        ],
        [&json!(3), &json!(3), &json!(1), &json!(0), &json!(7)]
    );
    assert_eq!(v["pass_rate"], 0.5);
    assert_eq!(v["coverage"], 70.0);
    assert_eq!(v["source"], "report");
    assert_eq!(v["verdict"], "fail");
    assert_eq!(v["flaky"], json!(["tests.test_calc::test_flaky_first_run"]));
    let failures: Vec<&str> = v["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(failures, ["test_multiply", "test_user_lookup"]);
    let files: Vec<PathBuf> = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| PathBuf::from(f.as_str().unwrap()))
        .collect();
    assert_eq!(files.len(), 2);
    assert!(
        files
            .iter()
            .all(|f| f.starts_with(&evidence) && f.is_file()),
        "{files:?}"
    );
}

#[test]
fn tests_human_output_and_console_fallback() {
    let dir = tempfile::tempdir().unwrap();
    // A configured command with no report: read from the console, and said so.
    let out = run_bin(
        "wavecrew",
        &[
            "check",
            "tests",
            ".",
            "--command",
            "sh -c 'echo \"summary: 4 passed, 0 failed\"'",
        ],
        dir.path(),
    );
    assert_eq!(out.code, 0, "{}", out.render());
    insta::assert_snapshot!(out.render_in(dir.path()), @r#"
    exit_code: 0
    ----- stdout -----
    framework: command (sh -c 'echo "summary: 4 passed, 0 failed"')
    tests: 4 passed, 0 failed, 0 skipped, 0 errors, 4 total
    pass rate: 100.0%
    coverage: unknown (no coverage file configured)
    source: console
    verdict: pass

    ----- stderr -----
    "#);
    let out = run_bin(
        "wavecrew",
        &[
            "check",
            "tests",
            ".",
            "--json",
            "--command",
            "sh -c 'echo 1 passed, 3 failed'",
        ],
        dir.path(),
    );
    let v = json_stdout(&out);
    assert_eq!(
        (
            v["source"].as_str(),
            v["verdict"].as_str(),
            v["coverage"].is_null()
        ),
        (Some("console"), Some("fail"), true)
    );
    assert_eq!(out.code, 1);
}

#[test]
fn tests_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_bin("wavecrew", &["check", "tests", "missing"], dir.path());
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`missing` is not a folder"),
        "{}",
        out.stderr
    );
    let out = run_bin(
        "wavecrew",
        &["check", "tests", ".", "--command", "echo 'unterminated"],
        dir.path(),
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("command `echo 'unterminated`"),
        "{}",
        out.stderr
    );
    let out = run_bin("wavecrew", &["check", "tests", "."], dir.path());
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no test framework found"),
        "{}",
        out.stderr
    );
}

#[test]
fn syntax_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("requirements.txt"), "").unwrap();
    std::fs::write(dir.path().join("ok.py"), "x = 1\n").unwrap();
    let out = run_bin("wavecrew", &["check", "syntax", "."], dir.path());
    assert_eq!(out.code, 0, "{}", out.render());
    assert_eq!(out.stdout, "python: pass (python3 -m py_compile ok.py)\n");
    std::fs::write(dir.path().join("bad.py"), "def f(:\n").unwrap();
    let out = run_bin("wavecrew", &["check", "syntax", ".", "--json"], dir.path());
    assert_eq!(out.code, 1);
    let v = json_stdout(&out);
    assert_eq!(v["status"], "fail");
    assert_eq!(v["checks"][0]["kind"], "python");
    // A missing tool is skipped with the reason, and is not a pass.
    std::fs::write(dir.path().join("go.mod"), "module x\n").unwrap();
    std::fs::remove_file(dir.path().join("bad.py")).unwrap();
    let out = wavecrew_with_path(
        &["check", "syntax", "."],
        dir.path(),
        &OsString::from("/usr/bin:/bin"),
    );
    assert_eq!(out.code, 1, "{}", out.render());
    assert!(
        out.stdout
            .contains("go: skipped (go vet ./...): `go` is not installed"),
        "{}",
        out.stdout
    );
}

#[test]
fn acceptance_runs_verify_commands_as_argv() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".workflow/.team/tasks")).unwrap();
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(root.join("app/built.txt"), "").unwrap();
    let task = json!({
        "task_id": "IMPL-001", "subject": "build", "description": "d",
        "metadata": {"working_dir": "app"},
        "acceptance_criteria": [
            {"criterion": "the build output exists", "verify": "test -f built.txt"},
            {"criterion": "no injection", "verify": "echo ok; touch pwned $(touch pwned2) `touch pwned3`"}
        ]
    });
    std::fs::write(
        root.join(".workflow/.team/tasks/IMPL-001.json"),
        task.to_string(),
    )
    .unwrap();
    let out = run_bin(
        "wavecrew",
        &["check", "acceptance", ".workflow/.team/tasks", "--json"],
        root,
    );
    assert_eq!(out.code, 0, "{}", out.render());
    let v = json_stdout(&out);
    assert_eq!(v["status"], "pass");
    let c = &v["tasks"][0]["criteria"];
    assert_eq!(
        c[1]["argv"],
        json!([
            "echo", "ok;", "touch", "pwned", "$(touch", "pwned2)", "`touch", "pwned3`"
        ])
    );
    assert_eq!(
        c[1]["output"],
        "ok; touch pwned $(touch pwned2) `touch pwned3`\n"
    );
    let left: Vec<_> = std::fs::read_dir(root.join("app"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["built.txt"], "only echo ran");

    // A plain-text criterion needs a person: exit 1.
    let task = json!({"task_id": "IMPL-002", "subject": "s", "description": "d", "acceptance_criteria": ["Users can log in"]});
    std::fs::write(
        root.join(".workflow/.team/tasks/IMPL-002.json"),
        task.to_string(),
    )
    .unwrap();
    let out = run_bin(
        "wavecrew",
        &[
            "check",
            "acceptance",
            ".workflow/.team/tasks",
            "--task",
            "IMPL-002",
        ],
        root,
    );
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(out.render(), @r"
    exit_code: 1
    ----- stdout -----
    IMPL-002: manual_review
      manual_review: Users can log in (no verify command: a person has to check it)

    ----- stderr -----
    ");
}
