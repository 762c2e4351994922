//! `wavecrew-planex` (seed 003) on a git repository with an issue store:
//! issues in ccw's id formats, solutions from the store and from a
//! planner artifact, one commit per task with exactly its files, the issue
//! moved to the history, `impl_complete` to the planner, `wave_done` after
//! `all_planned`, and a resume after a crash between the commit and the
//! report that does not commit twice.

use std::path::{Path, PathBuf};

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

/// A git repository with an issue store, two `EXEC-*` tasks (one solution
/// from the store, one from a planner artifact), a dirty file nobody asked
/// to commit, and a scripted agent; `extra` is appended to `wavecrew.toml`.
fn planex_project(root: &Path, extra: &str) -> (PathBuf, PathBuf, wavecrew_core::FileTaskStore) {
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
            "[aliases]\nagent = \"demo\"\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"script.json\"\n{extra}",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    (session, issues, store)
}

#[test]
fn issues_become_commits_and_a_resume_never_commits_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (session, issues, store) = planex_project(root, crate::IN_PLACE);
    all_planned(root);
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

/// The planner's `all_planned` on the session's bus.
fn all_planned(root: &Path) {
    all_planned_in(root, SESSION);
}

/// The planner's `all_planned` on the bus of the session `session` in
/// `root`: a planex worker ends once its queue is empty.
pub(crate) fn all_planned_in(root: &Path, session: &str) {
    let planned = run_bin(
        "wavecrew",
        &[
            "msg",
            "log",
            "--session-id",
            session,
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
}

/// The attempts of `issue`'s task: `attempts/planex-<issue>*/<n>`.
fn attempt_count(session: &Path, issue: &str) -> usize {
    std::fs::read_dir(session.join("attempts"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("planex-{issue}"))
        })
        .flat_map(|e| std::fs::read_dir(e.path()).unwrap().filter_map(Result::ok))
        .filter(|e| e.path().join("prompt.md").is_file())
        .count()
}

#[test]
fn isolated_each_issue_lands_once_on_the_integration_branch_and_the_users_branch_is_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (session, _issues, store) = planex_project(root, "[isolation]\nmode = \"worktree\"\n");
    all_planned(root);
    let head = git(root, &["rev-parse", "HEAD"]);
    let status = git(root, &["status", "--porcelain"]);
    let shown = run_bin(
        "wavecrew",
        &["prompt", session.to_str().unwrap(), "EXEC-001"],
        root,
    );
    assert_eq!(shown.code, 0, "{}", shown.render());
    let o = run_bin(
        "wavecrew-planex",
        &["--session", session.to_str().unwrap()],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let sent = std::fs::read_dir(session.join("attempts"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("planex-ISS-20261123-001")
        })
        .map(|e| std::fs::read_to_string(e.path().join("1/prompt.md")).unwrap())
        .expect("the first attempt of EXEC-001");
    assert_eq!(
        shown.stdout, sent,
        "wavecrew prompt showed what the run sent"
    );
    assert!(
        sent.contains(".wavecrew/"),
        "the agent works in its worktree, beside the project:\n{sent}"
    );

    // The user's branch, files and dirty file are as they were.
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(root, &["status", "--porcelain"]), status);
    assert!(!root.join("src/greet.txt").exists());
    // The integration branch holds one commit per issue, each with exactly
    // its files and its trailer.
    let branch = format!("wavecrew/{SESSION}");
    let log = git(
        root,
        &[
            "log",
            "--format=%s%n%b---",
            &format!("{}..{branch}", head.trim()),
        ],
    );
    assert_eq!(log.matches("Wavecrew-Task: ").count(), 2, "{log}");
    for (issue, task, file) in [
        ("ISS-20261123-001", "EXEC-001", "src/greet.txt"),
        ("ISS-20261123-002", "EXEC-002", "src/bye.txt"),
    ] {
        assert!(log.contains(&format!("feat({issue}): ")), "{log}");
        let commit = git(
            root,
            &[
                "log",
                "--format=%H",
                &format!("--grep=Wavecrew-Task: {SESSION}/{task}"),
                &branch,
            ],
        );
        let files = git(root, &["show", "--name-only", "--format=", commit.trim()]);
        assert_eq!(files.trim(), file, "exactly the task's files");
        let result = store
            .get(&TaskId::new(task).unwrap())
            .unwrap()
            .result
            .unwrap();
        assert_eq!(result["merge_commit"], commit.trim(), "{result:#}");
        assert_eq!(result["commit"], commit.trim(), "{result:#}");
    }
    let bus = std::fs::read_to_string(session.join(".msg/messages.jsonl")).unwrap();
    assert_eq!(bus.matches("\"task_merged\"").count(), 2, "{bus}");
    // A merged attempt's worktree is gone.
    let worktrees = git(root, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");

    // A crash between the landing and the report: the record never reached
    // the bus and the task is still leased by a dead worker. The resume
    // finds the landed commit on the integration branch: no second commit,
    // no second attempt.
    let tip = git(root, &["rev-parse", &branch]);
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
            t.result = None;
            Ok(())
        })
        .unwrap();
    let attempts = attempt_count(&session, "ISS-20261123-001");
    let again = run_bin(
        "wavecrew-planex",
        &["--session", session.to_str().unwrap(), "--task", "EXEC-001"],
        root,
    );
    assert_eq!(again.code, 0, "{}", again.render());
    assert_eq!(
        git(root, &["rev-parse", &branch]),
        tip,
        "nothing landed twice"
    );
    assert_eq!(
        attempt_count(&session, "ISS-20261123-001"),
        attempts,
        "the agent did not run again"
    );
    let task = store.get(&TaskId::new("EXEC-001").unwrap()).unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    assert!(task.result.unwrap()["commit"].is_string());
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
}
