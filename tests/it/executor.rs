//! `wavecrew-executor` (seed 000) on a session with the scripted agent:
//! tasks in dependency order, the files the agent really changed, the bus
//! records, and a hostile task description that reaches the agent verbatim
//! and runs nothing.

use serde_json::json;
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::{SessionBuilder, bin_path, insta_settings, run_bin};

const HOSTILE: &str = "Write notes. \"; touch pwned; \" $(touch pwned2) `touch pwned3`\nnext line";

#[test]
fn tasks_run_in_order_and_report_what_changed() {
    let mut t3 = Task::new(TaskId::new("IMPL-003").unwrap(), "Notes", HOSTILE);
    t3.blocked_by = vec![TaskId::new("IMPL-002").unwrap()];
    let s = SessionBuilder::new("TC-exec-demo-2026-11-23")
        .task("IMPL-001", &[])
        .task("IMPL-002", &["IMPL-001"])
        .with_task(t3)
        .file("plan.md", "# Plan\nExecution Backend: agent\n")
        .build();
    let script = json!({"format": "claude", "scenarios": [
        {"match": {"task": "IMPL-001"}, "steps": [{"write": {"path": "src/one.txt", "content": "1\n"}}, {"say": "one done"}]},
        {"match": {"task": "IMPL-002"}, "steps": [{"append": {"path": "src/one.txt", "content": "2\n"}}, {"say": "two done"}]},
        {"match": {"prompt_contains": "\"; touch pwned; \" $(touch pwned2) `touch pwned3`\nnext line"},
         "steps": [{"write": {"path": "notes.md", "content": "verbatim\n"}}, {"say": "notes done"}]}
    ]});
    std::fs::write(s.root().join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        s.root().join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"script.json\"\nformat = \"claude\"\n{}",
            bin_path("wavecrew-scripted-agent").display().to_string(),
            crate::IN_PLACE
        ),
    )
    .unwrap();
    let o = run_bin(
        "wavecrew-executor",
        &["--session", s.dir.to_str().unwrap()],
        s.root(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let store = s.store();
    for id in ["IMPL-001", "IMPL-002", "IMPL-003"] {
        let t = store.get(&TaskId::new(id).unwrap()).unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "{id}");
    }
    assert_eq!(
        std::fs::read_to_string(s.root().join("src/one.txt")).unwrap(),
        "1\n2\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.root().join("notes.md")).unwrap(),
        "verbatim\n"
    );
    for f in ["pwned", "pwned2", "pwned3"] {
        assert!(!s.root().join(f).exists(), "{f}");
    }
    let r = store
        .get(&TaskId::new("IMPL-002").unwrap())
        .unwrap()
        .result
        .unwrap();
    assert_eq!(r["files_modified"], json!(["src/one.txt"]));
    assert_eq!(r["execution_backend"], "demo");
    assert_eq!(r["evidence"]["backend_decision"]["level"], "plan");
    let log = run_bin(
        "wavecrew",
        &[
            "msg",
            "list",
            "--session-id",
            "TC-exec-demo-2026-11-23",
            "--last",
            "10",
        ],
        s.root(),
    );
    insta_settings().bind(|| {
        insta::assert_snapshot!(format!(
            "{}\n{}",
            o.render_in(s.root()),
            log.render_in(s.root())
        ));
    });
}

#[test]
fn a_syntax_error_goes_back_to_the_agent_with_the_compilers_words() {
    let s = tiny_crate_session("TC-exec-syntax-2026-11-23");
    let script = json!({"scenarios": [
        {"match": {"prompt_contains": "the syntax check failed"}, "steps": [
            {"write": {"path": "src/lib.rs", "content": "pub fn one() -> u32 { 1 }\npub fn two() -> u32 { 2 }\n"}},
            {"say": "fixed the missing brace"}]},
        {"steps": [
            {"write": {"path": "src/lib.rs", "content": "pub fn one() -> u32 { 1 }\npub fn two() -> u32 { 2 \n"}},
            {"say": "added two"}]}
    ]});
    std::fs::write(s.root().join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        s.root().join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\ncodex = \"demo\"\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"script.json\"\n{}",
            bin_path("wavecrew-scripted-agent").display().to_string(),
            crate::IN_PLACE
        ),
    )
    .unwrap();
    let o = run_bin(
        "wavecrew-executor",
        &["--session", s.dir.to_str().unwrap()],
        s.root(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let r = s
        .store()
        .get(&TaskId::new("IMPL-001").unwrap())
        .unwrap()
        .result
        .unwrap();
    assert_eq!(r["validation_results"]["syntax"], "pass", "{r:#}");
    assert_eq!(
        r["evidence"]["attempts"].as_array().unwrap().len(),
        2,
        "{r:#}"
    );
    let second = std::fs::read_to_string(s.dir.join("attempts/IMPL-001/2/prompt.md")).unwrap();
    assert!(second.contains("cargo"), "{second}");
}

#[test]
fn seed_000s_own_task_folder_with_dependencies_in_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join(".workflow/.team/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    for (id, desc) in [
        ("IMPL-001", "Create the model"),
        ("IMPL-002", "Add validation"),
    ] {
        std::fs::write(
            tasks.join(format!("{id}.json")),
            json!({"task_id": id, "status": "pending", "assigned_to": "executor", "description": desc,
                   "acceptance_criteria": [], "retry_count": 0,
                   "metadata": {"plan_path": ".workflow/plan.md", "executor": "agent", "code_review": false}})
            .to_string(),
        )
        .unwrap();
    }
    std::fs::write(
        tmp.path().join(".workflow/plan.md"),
        "# Plan\nExecution Backend: codex\n\nIMPL-002 depends on IMPL-001\n",
    )
    .unwrap();
    let script = json!({"scenarios": [
        {"match": {"task": "IMPL-002"}, "steps": [{"append": {"path": "order.txt", "content": "2\n"}}, {"say": "two"}]},
        {"match": {"task": "IMPL-001"}, "steps": [{"append": {"path": "order.txt", "content": "1\n"}}, {"say": "one"}]}
    ]});
    std::fs::write(tmp.path().join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        tmp.path().join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"script.json\"\n{}",
            bin_path("wavecrew-scripted-agent").display().to_string(),
            crate::IN_PLACE
        ),
    )
    .unwrap();
    let o = run_bin(
        "wavecrew-executor",
        &["--tasks", tasks.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("order.txt")).unwrap(),
        "1\n2\n"
    );
    let bus = std::fs::read_to_string(
        tmp.path()
            .join(".workflow/.team/executor/.msg/messages.jsonl"),
    )
    .unwrap();
    assert_eq!(bus.matches("\"task_complete\"").count(), 2, "{bus}");
}

/// A syntax check that runs out of time (a cold build in a fresh worktree,
/// a loaded machine) says nothing of the code: the task is not failed as
/// "syntax check failed", nor sent back to the agent; the check is
/// reported as inconclusive, with its command and its limit.
#[test]
fn a_syntax_check_that_runs_out_of_time_is_inconclusive_not_the_agents_failure() {
    use std::os::unix::fs::PermissionsExt;
    let s = tiny_crate_session("TC-exec-slowcheck-2026-11-23");
    // A `cargo` as slow as a cold build of a large workspace.
    let tools = tempfile::tempdir().unwrap();
    let cargo = tools.path().join("cargo");
    std::fs::write(&cargo, "#!/bin/sh\nsleep 60\n").unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = json!({"scenarios": [{"steps": [
        {"write": {"path": "src/lib.rs", "content": "pub fn one() -> u32 { 1 }\npub fn two() -> u32 { 2 }\n"}},
        {"say": "added two"}]}]});
    std::fs::write(s.root().join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        s.root().join("wavecrew.toml"),
        format!(
            "[limits]\nsyntax_check_secs = 1\n[aliases]\nagent = \"demo\"\ncodex = \"demo\"\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"script.json\"\n{}",
            bin_path("wavecrew-scripted-agent").display().to_string(),
            crate::IN_PLACE
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o: wavecrew_testkit::CliOutput = std::process::Command::new(bin_path("wavecrew-executor"))
        .args(["--session", s.dir.to_str().unwrap()])
        .current_dir(s.root())
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(o.code, 0, "{}", o.render());
    let t = s.store().get(&TaskId::new("IMPL-001").unwrap()).unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    let r = t.result.unwrap();
    assert_eq!(r["validation_results"]["syntax"], "inconclusive", "{r:#}");
    assert_eq!(r["evidence"]["syntax"]["status"], "timed_out", "{r:#}");
    let problem = r["environment_problems"][0].as_str().unwrap();
    assert!(problem.contains("ran out of its 1 s limit"), "{problem}");
    assert!(problem.contains("cargo check"), "{problem}");
    assert_eq!(
        r["evidence"]["attempts"].as_array().unwrap().len(),
        1,
        "not sent back to the agent: {r:#}"
    );
}

/// A session of one task, `IMPL-001`, in a tiny Rust crate (a syntax
/// check runs `cargo check` on it).
fn tiny_crate_session(id: &str) -> wavecrew_testkit::TestSession {
    let s = SessionBuilder::new(id).task("IMPL-001", &[]).build();
    std::fs::write(
        s.root().join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(s.root().join("src")).unwrap();
    std::fs::write(s.root().join("src/lib.rs"), "pub fn one() -> u32 { 1 }\n").unwrap();
    s
}
