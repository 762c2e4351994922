//! `wavecrew plan check|waves|graph`: the schedule explained before anything runs.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wavecrew_testkit::{CliOutput, run_bin};

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22")
}

fn wavecrew(args: &[&str], cwd: &Path) -> CliOutput {
    run_bin("wavecrew", args, cwd)
}

/// A folder of task files, one per `(file name, JSON)`.
fn task_folder(files: &[(&str, Value)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, value) in files {
        fs::write(dir.path().join(name), value.to_string()).unwrap();
    }
    dir
}

fn json_stdout(out: &CliOutput) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn waves_of_the_demo_session() {
    let out = wavecrew(&["plan", "waves", demo().to_str().unwrap()], &demo());
    insta::assert_snapshot!(out.render_in(&demo()));
}

#[test]
fn waves_json_contract() {
    let out = wavecrew(&["plan", "waves", "--json", "."], &demo());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = json_stdout(&out);
    assert_eq!(
        v["waves"],
        json!([
            ["IMPL-001"],
            ["IMPL-002", "IMPL-003"],
            ["IMPL-004"],
            ["IMPL-005", "REVIEW-001"],
            ["IMPL-006"],
            ["IMPL-007"]
        ])
    );
    assert_eq!(
        v["critical_path"],
        json!([
            "IMPL-001", "IMPL-002", "IMPL-004", "IMPL-005", "IMPL-006", "IMPL-007"
        ])
    );
    assert_eq!(v["tasks"], 8);
}

#[test]
fn check_of_the_demo_session_is_clean() {
    let out = wavecrew(&["plan", "check", "--json", "."], &demo());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(json_stdout(&out), json!({"ok": true, "errors": []}));
    let out = wavecrew(&["plan", "check", "."], &demo());
    insta::assert_snapshot!(out.render());
}

#[test]
fn graph_formats() {
    let dot = wavecrew(&["plan", "graph", "."], &demo());
    assert_eq!(dot.code, 0, "{}", dot.stderr);
    insta::assert_snapshot!("demo_dot", dot.stdout);
    let mermaid = wavecrew(&["plan", "graph", "--format", "mermaid", "."], &demo());
    insta::assert_snapshot!("demo_mermaid", mermaid.stdout);
    let json = wavecrew(&["plan", "graph", "--format", "json", "."], &demo());
    let v = json_stdout(&json);
    assert_eq!(v["waves"].as_array().unwrap().len(), 6);
}

fn cyclic() -> tempfile::TempDir {
    task_folder(&[
        ("IMPL-001.json", json!({"id": "IMPL-001", "blockedBy": []})),
        (
            "IMPL-003.json",
            json!({"id": "IMPL-003", "blockedBy": ["IMPL-007"]}),
        ),
        (
            "IMPL-007.json",
            json!({"id": "IMPL-007", "depends_on": ["IMPL-003"]}),
        ),
        (
            "IMPL-009.json",
            json!({"id": "IMPL-009", "depends_on": ["IMPL-404", "IMPL-009"]}),
        ),
    ])
}

#[test]
fn check_reports_every_problem() {
    let dir = cyclic();
    let out = wavecrew(&["plan", "check", "."], dir.path());
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(out.render());
    let out = wavecrew(&["plan", "check", "--json", "."], dir.path());
    assert_eq!(out.code, 1);
    let v = json_stdout(&out);
    assert_eq!(v["ok"], false);
    let kinds: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"cycle"), "{kinds:?}");
    assert!(kinds.contains(&"unknown_dependency"), "{kinds:?}");
    assert!(kinds.contains(&"self_dependency"), "{kinds:?}");
    let cycle = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "cycle")
        .unwrap();
    assert_eq!(cycle["path"], json!(["IMPL-003", "IMPL-007", "IMPL-003"]));
}

#[test]
fn waves_refuse_a_cycle_unless_forced() {
    let dir = task_folder(&[
        ("A-1.json", json!({"id": "A-1", "depends_on": ["A-2"]})),
        ("A-2.json", json!({"id": "A-2", "depends_on": ["A-1"]})),
        ("A-3.json", json!({"id": "A-3", "depends_on": ["A-1"]})),
    ]);
    let out = wavecrew(&["plan", "waves", "."], dir.path());
    assert_eq!(out.code, 2, "{}", out.render());
    assert!(out.stderr.contains("A-1 → A-2 → A-1") || out.stderr.contains("A-2 → A-1 → A-2"));
    let out = wavecrew(
        &["plan", "waves", "--json", "--cycle-policy", "force", "."],
        dir.path(),
    );
    assert_eq!(out.code, 0, "{}", out.render());
    let v = json_stdout(&out);
    assert_eq!(v["waves"], json!([["A-1"], ["A-2", "A-3"]]));
    assert!(out.stderr.contains("warning"), "{}", out.stderr);
}

#[test]
fn a_completed_dependency_is_satisfied() {
    let dir = task_folder(&[
        (
            "IMPL-001.json",
            json!({"task_id": "IMPL-001", "status": "completed"}),
        ),
        (
            "IMPL-002.json",
            json!({"task_id": "IMPL-002", "status": "pending", "depends_on": ["IMPL-001"]}),
        ),
    ]);
    let out = wavecrew(&["plan", "waves", "--json", "."], dir.path());
    assert_eq!(out.code, 0, "{}", out.render());
    assert_eq!(json_stdout(&out)["waves"], json!([["IMPL-002"]]));
}

#[test]
fn seed_000_plan_lines_give_every_edge() {
    let root = tempfile::tempdir().unwrap();
    let tasks = root.path().join(".workflow/.team/tasks");
    fs::create_dir_all(&tasks).unwrap();
    for n in 1..=3 {
        let id = format!("IMPL-00{n}");
        fs::write(
            tasks.join(format!("{id}.json")),
            json!({"task_id": id, "status": "pending", "assigned_to": "executor"}).to_string(),
        )
        .unwrap();
    }
    fs::write(
        root.path().join(".workflow/plan.md"),
        "IMPL-3 depends on IMPL-1 and IMPL-2\n",
    )
    .unwrap();
    let out = wavecrew(
        &["plan", "waves", "--json", ".workflow/.team/tasks"],
        root.path(),
    );
    assert_eq!(out.code, 0, "{}", out.render());
    assert_eq!(
        json_stdout(&out)["waves"],
        json!([["IMPL-001", "IMPL-002"], ["IMPL-003"]])
    );
}

#[test]
fn a_plan_file_is_an_input() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("plan.md"),
        "# Plan\n- IMPL-1: a\n- IMPL-2: b\nIMPL-2 depends on IMPL-1\n",
    )
    .unwrap();
    let out = wavecrew(&["plan", "waves", "--json", "plan.md"], dir.path());
    assert_eq!(out.code, 0, "{}", out.render());
    assert_eq!(json_stdout(&out)["waves"], json!([["IMPL-1"], ["IMPL-2"]]));
}

#[test]
fn hostile_ids_exit_2_naming_file_and_field() {
    let long = "x".repeat(10 * 1024);
    for bad in ["../x", "a/b", "", long.as_str(), "a\u{0}b", "a\nb"] {
        let dir = task_folder(&[("bad.json", json!({"id": bad}))]);
        let out = wavecrew(&["plan", "check", "."], dir.path());
        assert_eq!(out.code, 2, "{bad:?}: {}", out.render());
        assert!(out.stderr.contains("bad.json"), "{bad:?}: {}", out.stderr);
        assert!(out.stderr.contains("field `id`"), "{bad:?}: {}", out.stderr);
        assert!(
            out.stderr.len() < 600,
            "long ids are truncated: {}",
            out.stderr.len()
        );
        assert!(!out.stderr.contains("panicked"));
        let dep = task_folder(&[("ok.json", json!({"id": "ok", "depends_on": [bad]}))]);
        let out = wavecrew(&["plan", "waves", "."], dep.path());
        assert_eq!(out.code, 2, "{bad:?}: {}", out.render());
        assert!(
            out.stderr.contains("field `depends_on[0]`"),
            "{bad:?}: {}",
            out.stderr
        );
    }
}

#[test]
fn malformed_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("IMPL-1.json"), "{\"id\": \"IMPL-1\", ").unwrap();
    let out = wavecrew(&["plan", "check", "."], dir.path());
    assert_eq!(out.code, 2);
    insta::assert_snapshot!(out.render_in(dir.path()));

    fs::write(
        dir.path().join("IMPL-1.json"),
        r#"{"id": "IMPL-1", "status": "running"}"#,
    )
    .unwrap();
    let out = wavecrew(&["plan", "check", "."], dir.path());
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("field `status`"), "{}", out.stderr);

    let out = wavecrew(&["plan", "check", "does-not-exist"], dir.path());
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("does-not-exist"), "{}", out.stderr);

    let out = wavecrew(&["plan", "frobnicate"], dir.path());
    assert_eq!(out.code, 2);
    let out = wavecrew(&["plan", "graph", "--format", "png", "."], dir.path());
    assert_eq!(out.code, 2);
}

#[test]
fn a_built_session_with_completed_tasks() {
    use wavecrew_testkit::SessionBuilder;
    let session = SessionBuilder::new("TC-built-2026-11-22")
        .task("IMPL-001", &[])
        .task("IMPL-002", &["IMPL-001"])
        .task("IMPL-003", &["IMPL-002"])
        .json(
            "team-session.json",
            &json!({"session_id": "TC-built-2026-11-22", "task_description": "t", "status": "active",
                    "roles": [], "completed_tasks": ["IMPL-001"]}),
        )
        .build();
    let out = wavecrew(
        &["plan", "waves", "--json", session.dir.to_str().unwrap()],
        session.root(),
    );
    assert_eq!(out.code, 0, "{}", out.render());
    let v = json_stdout(&out);
    assert_eq!(v["waves"], json!([["IMPL-002"], ["IMPL-003"]]));
    assert_eq!(v["completed"], json!(["IMPL-001"]));
}

#[test]
fn a_roadmap_task_folder() {
    let dir = task_folder(&[
        (
            "IMPL-101.json",
            json!({"id": "IMPL-101", "title": "a", "depends_on": [], "convergence": {"criteria": ["x"]}}),
        ),
        (
            "IMPL-102.json",
            json!({"id": "IMPL-102", "title": "b", "depends_on": ["IMPL-101"],
            "files": [{"path": "src/a.ts", "action": "modify"}], "convergence": {"criteria": ["y"]}}),
        ),
    ]);
    let out = wavecrew(&["plan", "waves", "--json", "."], dir.path());
    assert_eq!(out.code, 0, "{}", out.render());
    assert_eq!(
        json_stdout(&out)["waves"],
        json!([["IMPL-101"], ["IMPL-102"]])
    );
}

#[test]
fn a_task_analysis_file_is_its_session_and_its_metadata_counts() {
    let dir = tempfile::tempdir().unwrap();
    let analysis = dir.path().join("task-analysis.json");
    fs::write(
        &analysis,
        json!({"capabilities": [{"name": "developer", "tasks": [{"id": "IMPL-002", "description": "the endpoint"}]}],
               "dependency_graph": {"IMPL-001": [], "IMPL-002": ["IMPL-001"], "IMPL-003": ["IMPL-001"]},
               "tasks": [{"id": "IMPL-003", "metadata": {"executor": "gemini", "estimated_minutes": 30}}]})
        .to_string(),
    )
    .unwrap();
    let by_file = wavecrew(
        &["plan", "waves", "--json", analysis.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(by_file.code, 0, "{}", by_file.stderr);
    let v = json_stdout(&by_file);
    assert_eq!(v["waves"], json!([["IMPL-001"], ["IMPL-002", "IMPL-003"]]));
    // The estimate of the tasks[] entry's metadata makes IMPL-003 critical.
    assert_eq!(v["critical_path"], json!(["IMPL-001", "IMPL-003"]));
    assert_eq!(v["source"]["kind"], "session");
    let by_dir = wavecrew(&["plan", "waves", "--json", "."], dir.path());
    assert_eq!(json_stdout(&by_dir)["waves"], v["waves"]);
    let graph = wavecrew(
        &[
            "plan",
            "graph",
            "--format",
            "json",
            analysis.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(graph.code, 0, "{}", graph.stderr);
    let tasks = json_stdout(&graph)["tasks"].clone();
    let impl3 = tasks
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "IMPL-003")
        .unwrap()
        .clone();
    assert_eq!(impl3["estimate"], json!(1800.0), "{impl3}");
}
