//! What a session says about a task reaches the store task and the agent's
//! prompt (issue 12, item 5): for a session in team-coordinate's own shape,
//! the description (and title) of `capabilities[].tasks[]`; for a `tasks[]`
//! entry, its `metadata` (a per-task `metadata.executor` picks the backend).

use serde_json::{Value, json};
use wavecrew_core::{TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::{SessionBuilder, TestSession, bin_path, insta_settings, run_bin};

use crate::team::{role_file, writes};

const SESSION: &str = "TC-coordinate-text-2026-11-23";

/// A session as team-coordinate writes it (graph values as arrays,
/// descriptions under `capabilities[].tasks[]`), plus a `tasks[]` entry
/// whose `metadata.executor` names the backend `other`.
fn coordinate_session() -> TestSession {
    let session = SessionBuilder::new(SESSION)
        .file("roles/developer.md", role_file("developer"))
        .json(
            "team-session.json",
            &json!({"session_id": SESSION, "task_description": "a todo app", "status": "active",
                    "roles": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "inner_loop": true}],
                    "active_workers": [], "completed_tasks": []}),
        )
        .json(
            "task-analysis.json",
            &json!({"task_description": "a todo app",
                    "capabilities": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)",
                                      "tasks": [{"id": "IMPL-001", "description": "Write the Todo data model in src/model.rs."},
                                                {"id": "IMPL-002", "title": "REST endpoints",
                                                 "description": "Add GET and POST /todos on top of the model,\nwith input validation."}],
                                      "artifacts": []}],
                    "dependency_graph": {"IMPL-001": [], "IMPL-002": ["IMPL-001"]},
                    "tasks": [{"id": "IMPL-001", "subject": "IMPL-001", "owner": "developer", "blockedBy": [],
                               "metadata": {"executor": "other", "target_files": ["src/model.rs"]}}],
                    "roles": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "task_count": 2, "inner_loop": true}],
                    "complexity": {"total_score": 2, "level": "low"}}),
        )
        .build();
    let root = session.root();
    std::fs::write(
        root.join("agent.json"),
        // IMPL-001 changes the file its task declares (a task that
        // declares files and changes none of them fails).
        json!({"scenarios": [
            {"match": {"task": "IMPL-001"}, "steps": [
                {"write": {"path": "src/model.rs", "content": "pub struct Todo;\n"}},
                {"say": "IMPL-001 written"}]},
            writes("IMPL-002")]})
        .to_string(),
    )
    .unwrap();
    let agent = bin_path("wavecrew-scripted-agent").display().to_string();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\n\n\
             [backends.demo]\nkind = \"scripted\"\nprogram = {agent:?}\nscript = \"agent.json\"\nformat = \"codex\"\n\n\
             [backends.other]\nkind = \"scripted\"\nprogram = {agent:?}\nscript = \"agent.json\"\nformat = \"codex\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\nbackoff_ms = 1\n"
        ),
    )
    .unwrap();
    session
}

/// The attempts of a task: `(prompt.md, outcome.json)` of each, in order.
fn attempts(session: &TestSession, task: &str) -> Vec<(String, Value)> {
    let dir = session.dir.join("attempts").join(task);
    let mut dirs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("prompt.md").is_file())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let prompt = std::fs::read_to_string(d.join("prompt.md")).unwrap();
            let outcome = std::fs::read_to_string(d.join("outcome.json")).unwrap();
            (prompt, serde_json::from_str(&outcome).unwrap())
        })
        .collect()
}

#[test]
fn a_team_coordinate_session_gives_the_agent_its_description_and_title() {
    let session = coordinate_session();
    let dir = session.dir.to_str().unwrap().to_owned();
    let o = run_bin("wavecrew", &["run", &dir], session.root());
    assert_eq!(o.code, 0, "{}", o.render());

    let store = session.store();
    let t1 = store.get(&TaskId::new("IMPL-001").unwrap()).unwrap();
    let t2 = store.get(&TaskId::new("IMPL-002").unwrap()).unwrap();
    assert_eq!(t1.status, TaskStatus::Completed);
    assert_eq!(t2.status, TaskStatus::Completed);
    assert_eq!(t1.description, "Write the Todo data model in src/model.rs.");
    assert_eq!(t1.subject, "Write the Todo data model in src/model.rs.");
    assert_eq!(t2.title(), "REST endpoints");
    // The tasks[] entry's metadata reached the store task, and its executor
    // chose the backend.
    assert_eq!(t1.executor(), Some("other"));
    assert_eq!(t1.files(), ["src/model.rs"]);
    let (_, outcome) = attempts(&session, "IMPL-001").pop().unwrap();
    assert_eq!(outcome["backend"], "other", "{outcome}");
    let (prompt, outcome) = attempts(&session, "IMPL-002").pop().unwrap();
    assert_eq!(outcome["backend"], "demo", "{outcome}");

    let root = session.root().display().to_string();
    let prompt = prompt.replace(&root, "[ROOT]");
    insta_settings().bind(|| insta::assert_snapshot!("team_coordinate_prompt", prompt));
}
