//! `wavecrew-planex` (seed 003) on a git repository with an issue store:
//! issues in ccw's id formats, solutions from the store and from a
//! planner artifact, one commit per task with exactly its files, the issue
//! moved to the history, `impl_complete` to the planner, `wave_done` after
//! `all_planned`, and a resume after a crash between the commit and the
//! report that does not commit twice.

use serde_json::{Value, json};
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::{bin_path, run_bin};

use crate::team::git;

const SESSION: &str = "PEX-auth-2026-11-23";

fn task(id: &str, subject: &str, description: &str) -> Task {
    let mut t = Task::new(TaskId::new(id).unwrap(), subject, description);
    t.owner = Some("executor".into());
    t
}

#[test]
fn issues_become_commits_and_a_resume_never_commits_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("README.md"), "# app\n").unwrap();
    std::fs::write(root.join(".gitignore"), ".workflow/\n").unwrap();
    git(root, &["add", "."]);
    git(
        root,
        &[
            "-c",
            "user.email=t@e",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            "init",
        ],
    );
    std::fs::write(
        root.join("notes.txt"),
        "a dirty file nobody asked to commit\n",
    )
    .unwrap();
    let issues = root.join(".workflow/issues");
    std::fs::create_dir_all(issues.join("solutions")).unwrap();
    std::fs::write(
        issues.join("issues.jsonl"),
        [
            json!({"id": "ISS-20261123-001", "title": "Add a greeting", "status": "planned",
                   "context": "Say hello. \"; touch pwned; \" $(touch pwned2)", "bound_solution_id": "SOL-ISS-20261123-001-1"}),
            json!({"id": "ISS-20261123-002", "title": "Add a farewell", "status": "planned", "context": "Say bye."}),
        ]
        .iter()
        .map(|v| v.to_string() + "\n")
        .collect::<String>(),
    )
    .unwrap();
    std::fs::write(
        issues.join("solutions/ISS-20261123-001.jsonl"),
        json!({"id": "SOL-ISS-20261123-001-1", "is_bound": true, "description": "one file",
               "tasks": [{"id": "T1", "title": "Greeting", "action": "Create", "files": [{"path": "src/greet.txt"}]}]})
        .to_string() + "\n",
    )
    .unwrap();
    let session = root.join(".workflow/.team").join(SESSION);
    std::fs::create_dir_all(session.join("artifacts/solutions")).unwrap();
    std::fs::write(
        session.join("artifacts/solutions/ISS-20261123-002.json"),
        json!({"session_id": SESSION, "issue_id": "ISS-20261123-002", "id": "SOL-2", "is_bound": true,
               "tasks": [{"id": "T1", "title": "Farewell"}],
               "execution_config": {"execution_method": "Agent", "code_review": "Skip"}})
        .to_string(),
    )
    .unwrap();
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    store
        .create(task(
            "EXEC-001",
            "EXEC-W1-ISS-20261123-001: Implement Add a greeting",
            "## Execution Task\n**Wave**: 1\n**Issue**: ISS-20261123-001\n**execution_method**: Auto\n**code_review**: Skip",
        ))
        .unwrap();
    store
        .create(task(
            "EXEC-002",
            "EXEC-W1-ISS-20261123-002: Implement Add a farewell",
            &format!("## Execution Task\n**Issue**: ISS-20261123-002\n**solution_file**: .workflow/.team/{SESSION}/artifacts/solutions/ISS-20261123-002.json\n**execution_method**: Agent"),
        ))
        .unwrap();
    let script = json!({"scenarios": [
        {"match": {"prompt_contains": "\"; touch pwned; \" $(touch pwned2)"}, "steps": [
            {"write": {"path": "src/greet.txt", "content": "hello\n"}},
            {"append": {"path": ".workflow/runs.txt", "content": "greet\n"}},
            {"say": "greeting added"}]},
        {"match": {"prompt_contains": "ISS-20261123-002"}, "steps": [
            {"write": {"path": "src/bye.txt", "content": "bye\n"}},
            {"say": "farewell added"}]}
    ]});
    std::fs::write(root.join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"script.json\"\n",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    let planned = run_bin(
        "wavecrew",
        &[
            "msg",
            "log",
            "--session-id",
            SESSION,
            "--from",
            "planner",
            "--to",
            "executor",
            "--type",
            "all_planned",
            "--summary",
            "[planner] all planned",
        ],
        root,
    );
    assert_eq!(planned.code, 0, "{}", planned.render());
    // What the first attempt will be sent, read before anything runs.
    let shown = run_bin(
        "wavecrew",
        &["prompt", session.to_str().unwrap(), "EXEC-001"],
        root,
    );
    assert_eq!(shown.code, 0, "{}", shown.render());
    assert!(
        shown.stdout.contains("Create src/greet.txt") || shown.stdout.contains("src/greet.txt"),
        "{}",
        shown.stdout
    );
    let o = run_bin(
        "wavecrew-planex",
        &["--session", session.to_str().unwrap()],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let attempts = session.join("attempts");
    let first = std::fs::read_dir(&attempts)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("planex-ISS-20261123-001"))
        })
        .expect("the attempts of EXEC-001");
    let sent = std::fs::read_to_string(first.join("1/prompt.md")).unwrap();
    assert_eq!(
        shown.stdout, sent,
        "wavecrew prompt showed what the run sent"
    );

    let log = git(root, &["log", "--format=%s%n%b---"]);
    assert!(
        log.contains("feat(ISS-20261123-001): Add a greeting"),
        "{log}"
    );
    assert!(
        log.contains("feat(ISS-20261123-002): Add a farewell"),
        "{log}"
    );
    assert!(
        log.contains(&format!("Wavecrew-Task: {SESSION}/EXEC-001")),
        "{log}"
    );
    let commits = git(
        root,
        &[
            "log",
            "--reverse",
            "--format=%s%n%b",
            "--name-only",
            "HEAD~2..HEAD",
        ],
    );
    insta::assert_snapshot!("planex_commits", commits);
    let first = git(root, &["log", "--format=%H", "--grep=ISS-20261123-001"]);
    let files = git(root, &["show", "--name-only", "--format=", first.trim()]);
    assert_eq!(files.trim(), "src/greet.txt", "exactly the attempt's files");
    assert!(
        git(root, &["status", "--porcelain"]).contains("notes.txt"),
        "the dirty file stays uncommitted"
    );
    for f in ["pwned", "pwned2"] {
        assert!(!root.join(f).exists());
    }
    let history = std::fs::read_to_string(issues.join("issue-history.jsonl")).unwrap();
    assert!(history.contains("ISS-20261123-001") && history.contains("\"completed\""));
    let bus: Vec<Value> = std::fs::read_to_string(session.join(".msg/messages.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<(&str, &str)> = bus
        .iter()
        .filter(|m| m["from"] == "executor")
        .map(|m| (m["type"].as_str().unwrap(), m["to"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("impl_complete", "planner"),
            ("impl_complete", "planner"),
            ("wave_done", "planner")
        ]
    );

    // A crash between the commit and the report: the record never reached
    // the bus and the task is still leased by a dead worker.
    let commits_before = git(root, &["rev-list", "--count", "HEAD"]);
    let text = std::fs::read_to_string(session.join(".msg/messages.jsonl")).unwrap();
    let mut kept = String::new();
    for l in text
        .lines()
        .filter(|l| !(l.contains("impl_complete") && l.contains("ISS-20261123-001")))
    {
        kept.push_str(l);
        kept.push('\n');
    }
    std::fs::write(session.join(".msg/messages.jsonl"), kept).unwrap();
    store
        .update(&TaskId::new("EXEC-001").unwrap(), &mut |t| {
            t.status = TaskStatus::Pending;
            t.lease = None;
            Ok(())
        })
        .unwrap();
    let again = run_bin(
        "wavecrew-planex",
        &["--session", session.to_str().unwrap(), "--task", "EXEC-001"],
        root,
    );
    assert_eq!(again.code, 0, "{}", again.render());
    assert_eq!(
        git(root, &["rev-list", "--count", "HEAD"]),
        commits_before,
        "no second commit"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".workflow/runs.txt")).unwrap(),
        "greet\n",
        "the agent did not run again"
    );
    assert_eq!(
        store.get(&TaskId::new("EXEC-001").unwrap()).unwrap().status,
        TaskStatus::Completed
    );
}
