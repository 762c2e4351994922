//! `wavecrew-testrun` (seed 002) through `wavecrew run`, on the real pytest
//! fixture of the validation crate: the test-fix loop with the scripted
//! agent fixing the test files, `results/run-NNN.json` numbered per
//! session, the state appended under the bus lock, `tests_passed` with
//! `data.ref`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::bin_path;

use crate::team::{SESSION, project};

fn cache() -> PathBuf {
    std::env::var_os("WAVECREW_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/wavecrew"),
        PathBuf::from,
    )
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// One framework's run: the fixture, the fixer's edits, what to add
/// before the run, and the tool folder to put first on `PATH`.
struct Case {
    fixture: &'static str,
    framework: &'static str,
    fix: Value,
    tool_bin: PathBuf,
    prepare: fn(&Path),
    /// `[isolation] mode = "worktree"` in a git repository.
    isolated: bool,
}

/// Run two `TESTRUN-*` tasks of a project through `wavecrew run` and check
/// the records; returns the first run record, redacted for a snapshot.
fn run_case(case: &Case) -> String {
    let isolation = if case.isolated {
        "[isolation]\nmode = \"worktree\"\n"
    } else {
        ""
    };
    let p = project(&[], &json!([case.fix]), isolation);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/validation/tests/fixtures")
            .join(case.fixture),
        p.root(),
    );
    (case.prepare)(p.root());
    if case.isolated {
        let root = p.root();
        std::fs::write(
            root.join(".gitignore"),
            ".workflow/\n__pycache__/\n.pytest_cache/\n.coverage\ncoverage.*\n",
        )
        .unwrap();
        crate::team::git(root, &["init", "-q", "-b", "main"]);
        crate::team::git(root, &["add", "."]);
        crate::team::git(root, &["commit", "-qm", "start"]);
    }
    let s = p.session();
    std::fs::create_dir_all(s.join("roles")).unwrap();
    std::fs::write(
        s.join("roles/executor.md"),
        crate::team::role_file("executor"),
    )
    .unwrap();
    std::fs::write(
        s.join("team-session.json"),
        json!({"session_id": SESSION, "task_description": "test the calculator", "status": "active",
               "roles": [{"name": "executor", "prefix": "TESTRUN", "inner_loop": true, "role_file": "roles/executor.md"}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        s.join("task-analysis.json"),
        json!({"dependency_graph": {"TESTRUN-001": {"depends_on": [], "role": "executor"},
                                    "TESTRUN-002": {"depends_on": ["TESTRUN-001"], "role": "executor"}}})
        .to_string(),
    )
    .unwrap();
    for (id, target) in [("TESTRUN-001", 50), ("TESTRUN-002", 50)] {
        let mut t = Task::new(
            TaskId::new(id).unwrap(),
            id,
            format!(
                "PURPOSE: Execute L1 unit tests\nCONTEXT:\n  - Session: .workflow/.team/{SESSION}\n  - Input: tests\n  - Coverage target: {target}%"
            ),
        );
        t.owner = Some("executor".into());
        if id == "TESTRUN-002" {
            t.blocked_by = vec![TaskId::new("TESTRUN-001").unwrap()];
        }
        p.store().create(t).unwrap();
    }
    let wavecrew = bin_path("wavecrew");
    let path = format!(
        "{}:{}",
        case.tool_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let strategist = Command::new(&wavecrew)
        .args([
            "msg",
            "log",
            "--session-id",
            SESSION,
            "--from",
            "strategist",
            "--type",
            "state_update",
            "--summary",
            "strategy",
            "--data",
            &format!(
                r#"{{"test_strategy": {{"framework": "{}"}}}}"#,
                case.framework
            ),
        ])
        .current_dir(p.root())
        .output()
        .unwrap();
    assert!(strategist.status.success());
    let out = Command::new(&wavecrew)
        .args(["run", s.to_str().unwrap(), "--max-parallel", "1"])
        .current_dir(p.root())
        .env("PATH", path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stderr}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for id in ["TESTRUN-001", "TESTRUN-002"] {
        assert_eq!(p.status(id), TaskStatus::Completed);
    }
    let run1: Value =
        serde_json::from_slice(&std::fs::read(s.join("results/run-001.json")).unwrap()).unwrap();
    let run2: Value =
        serde_json::from_slice(&std::fs::read(s.join("results/run-002.json")).unwrap()).unwrap();
    assert_eq!(run1["run_id"], "run-001");
    assert_eq!(run1["iterations"], 1, "one fix round: {run1:#}");
    assert_eq!(run1["passed"], true, "{run1:#}");
    assert_eq!(run1["flaky"].as_array().unwrap().len(), 1, "{run1:#}");
    assert_eq!(run2["iterations"], 0, "already fixed: {run2:#}");
    let keys: Vec<&str> = run1
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .take(11)
        .collect();
    assert_eq!(
        keys,
        [
            "run_id",
            "pass_rate",
            "coverage",
            "coverage_target",
            "iterations",
            "passed",
            "failure_summary",
            "defect_patterns",
            "effective_patterns",
            "timestamp",
            "framework"
        ],
        "ccw's field order first"
    );
    let log = p.bus_log();
    let passed: Vec<&Value> = log.iter().filter(|m| m["type"] == "tests_passed").collect();
    assert_eq!(passed.len(), 2);
    assert!(
        passed[0]["data"]["ref"]
            .as_str()
            .unwrap()
            .ends_with("results/run-001.json")
    );
    assert!(
        passed[0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("[executor] PASSED: ")
    );
    assert!(
        passed[0]["data"]["report"]
            .as_str()
            .unwrap()
            .contains("## [executor] Test Execution Results")
    );
    let state: Value =
        serde_json::from_slice(&std::fs::read(s.join(".msg/meta.json")).unwrap()).unwrap();
    let executor = &state["role_state"]["executor"];
    assert_eq!(
        executor["execution_results"].as_array().unwrap().len(),
        2,
        "{executor:#}"
    );
    assert_eq!(executor["coverage_history"].as_array().unwrap().len(), 2);
    assert_eq!(executor["coverage_history"][0]["layer"], "L1");
    assert!(
        executor["defect_patterns"].is_array() && executor["effective_test_patterns"].is_array()
    );
    assert_eq!(
        state["role_state"]["strategist"]["test_strategy"]["framework"], case.framework,
        "the strategist's state is kept"
    );
    if case.isolated {
        // The fixes landed on the integration branch, where TESTRUN-002
        // found them (no fix round); the user's files are untouched.
        let root = p.root();
        let branch = format!("wavecrew/{SESSION}");
        let fixed = crate::team::git(root, &["show", &format!("{branch}:tests/test_calc.py")]);
        assert!(fixed.contains("calc.multiply(3, 4) == 7"), "{fixed}");
        let theirs = std::fs::read_to_string(root.join("tests/test_calc.py")).unwrap();
        assert!(theirs.contains("calc.multiply(3, 4) == 12"), "{theirs}");
        assert_eq!(crate::team::git(root, &["status", "--porcelain"]), "");
    }
    let mut record = run1.clone();
    for key in ["timestamp", "evidence", "rounds", "coverage"] {
        record.as_object_mut().unwrap().shift_remove(key);
    }
    serde_json::to_string_pretty(&record).unwrap()
}

/// The pytest fixture's case, isolated or in place.
fn pytest_case(isolated: bool) -> Case {
    let pytest = cache().join("py/bin/pytest");
    assert!(
        pytest.exists(),
        "run scripts/test.sh: it installs pytest into {}",
        cache().display()
    );
    Case {
        fixture: "pytest-project",
        framework: "Pytest",
        fix: json!({"match": {"prompt_contains": "Only fix the test files"}, "steps": [
            {"replace": {"path": "tests/test_calc.py", "find": "calc.multiply(3, 4) == 12", "with": "calc.multiply(3, 4) == 7"}},
            {"replace": {"path": "tests/test_calc.py", "find": "calc.find_user(\"bob\").name == \"Bob\"", "with": "calc.find_user(\"ada\")[\"name\"] == \"Ada Lovelace\""}},
            {"say": "fixed two expectations in tests/test_calc.py"}
        ]}),
        tool_bin: pytest.parent().unwrap().to_owned(),
        // A passing test whose name says FAIL: the seed's "output lacks FAIL" rule failed the run.
        prepare: |root| {
            std::fs::write(
                root.join("tests/test_names.py"),
                "def test_reports_FAILED_status():\n    assert True\n",
            )
            .unwrap();
        },
        isolated,
    }
}

#[test]
fn the_test_fix_loop_on_a_real_pytest_project() {
    let record = run_case(&pytest_case(false));
    insta::assert_snapshot!("pytest_run_record", record);
}

/// Isolated: the tests run in a worktree of the integration branch, the
/// fixes land through the merge queue, and the record is the same.
#[test]
fn the_test_fix_loop_isolated_lands_its_fixes() {
    let record = run_case(&pytest_case(true));
    insta::assert_snapshot!("pytest_run_record", record);
}

#[test]
fn the_test_fix_loop_on_a_real_jest_project() {
    let modules = cache().join("node/node_modules");
    assert!(
        modules.join(".bin/jest").exists(),
        "run scripts/test.sh: it installs jest into {}",
        cache().display()
    );
    let record = run_case(&Case {
        fixture: "jest-project",
        framework: "Jest",
        fix: json!({"match": {"prompt_contains": "Only fix the test files"}, "steps": [
            {"replace": {"path": "src/math.test.js", "find": "expect(multiply(3, 4)).toBe(12)", "with": "expect(multiply(3, 4)).toBe(7)"}},
            {"replace": {"path": "src/math.test.js", "find": "expect(user({}, 'id')).toBe('Ada')", "with": "expect(user({ id: { name: 'Ada' } }, 'id')).toBe('Ada')"}},
            {"say": "fixed two expectations in src/math.test.js"}
        ]}),
        tool_bin: modules.join(".bin"),
        prepare: |root| {
            let modules = cache().join("node/node_modules");
            std::os::unix::fs::symlink(modules, root.join("node_modules")).unwrap();
        },
        isolated: false,
    });
    insta::assert_snapshot!("jest_run_record", record);
}
