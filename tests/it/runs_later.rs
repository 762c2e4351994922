//! What an agent's work may not slip in: files the user's own tools run by
//! themselves later (`[isolation] runs_later`: CI, `.envrc`, the editors'
//! tasks, git hooks, dev containers) wait for a person's review, as with
//! `review = "human"`, unless the task declares them (in place, where
//! nothing can wait, they fail the task); and a file over `[isolation]
//! max_file_mb` fails the task, naming it and its size.

use std::path::Path;

use serde_json::{Value, json};
use wavecrew_core::{FileTaskStore, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::git::TempProject;
use wavecrew_testkit::{bin_path, run_bin};

use crate::cockpit::until;
use crate::cockpit_review::{Run, show};

/// Each kind of file that runs later, with the task that adds it beside
/// its declared output.
const KINDS: [(&str, &str); 5] = [
    ("IMPL-001", ".github/workflows/ci.yml"),
    ("IMPL-002", ".envrc"),
    ("IMPL-003", ".vscode/tasks.json"),
    ("IMPL-004", ".husky/pre-commit"),
    ("IMPL-005", ".devcontainer/devcontainer.json"),
];

/// A git project with `wavecrew.toml` (the scripted agent, with
/// `toml_extra`), the agent's `scenarios` and the task file of `session`
/// with `tasks` (`[[tasks]]` tables).
fn project(session: &str, scenarios: &Value, tasks: &str, toml_extra: &str) -> TempProject {
    let repo = crate::walkthrough::git_repo();
    let root = repo.path();
    std::fs::write(
        root.join("agent.json"),
        json!({ "scenarios": scenarios }).to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"scripted\"\n\n[backends.scripted]\nkind = \"scripted\"\n\
             program = {:?}\nscript = \"agent.json\"\nformat = \"codex\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n{toml_extra}",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("wavecrew.tasks.toml"),
        format!("goal = \"what runs later\"\nsession = \"{session}\"\n\n{tasks}"),
    )
    .unwrap();
    repo
}

/// The scenario of `task`: it writes each of `files`, then says so.
fn writes(task: &str, files: &[&str]) -> Value {
    let mut steps: Vec<Value> = files
        .iter()
        .map(|f| json!({"write": {"path": f, "content": format!("written by {task}\n")}}))
        .collect();
    steps.push(json!({"say": format!("{task} done")}));
    json!({"match": {"task": task}, "steps": steps})
}

/// A `[[tasks]]` table: `id`, declaring `files`.
fn task_table(id: &str, files: &[&str]) -> String {
    format!("[[tasks]]\nid = \"{id}\"\ntitle = \"{id}\"\nfiles = {files:?}\n\n")
}

/// `id` of `session` in `root`, once its file can be read.
fn task(root: &Path, session: &str, id: &str) -> Option<wavecrew_core::Task> {
    FileTaskStore::for_session(&root.join(".workflow/.team").join(session))
        .get(&TaskId::new(id).unwrap())
        .ok()
}

/// `id`'s result once it is `status`; past the bound, the failure shows
/// what was seen last.
fn until_status(root: &Path, session: &str, id: &str, status: TaskStatus) -> Value {
    until(
        &format!("{id} {}", status.as_str()),
        || task(root, session, id).map(|t| (t.status, t.result)),
        |t| t.as_ref().is_some_and(|(s, _)| *s == status),
    )
    .and_then(|(_, result)| result)
    .unwrap_or(Value::Null)
}

/// Each kind of file that runs later, added by a task that declares only
/// its own output, is held: the task blocked awaiting a person's review,
/// the file named, its work on its branch and not on the integration
/// branch. A person's approval lands it. A task that declares `.envrc`
/// lands it without a review.
#[test]
fn files_that_run_later_wait_for_a_person_unless_the_task_declares_them() {
    let session = "TC-runs-later";
    let mut scenarios = Vec::new();
    let mut tasks = String::new();
    for (id, file) in KINDS {
        let out = format!("out-{id}.txt");
        scenarios.push(writes(id, &[&out, file]));
        tasks.push_str(&task_table(id, &[&out]));
    }
    scenarios.push(writes("IMPL-006", &["out-IMPL-006.txt", ".envrc"]));
    tasks.push_str(&task_table("IMPL-006", &["out-IMPL-006.txt", ".envrc"]));
    let p = project(session, &Value::Array(scenarios), &tasks, "");
    let root = p.path();
    let integration = format!("wavecrew/{session}");
    let mut run = Run::start(root, &[]);

    let declared = until_status(root, session, "IMPL-006", TaskStatus::Completed);
    assert_eq!(declared.get("runs_later"), None, "{declared:#}");
    assert_eq!(
        show(root, &format!("{integration}:.envrc")).as_deref(),
        Some("written by IMPL-006"),
        "a declared .envrc lands"
    );
    for (id, file) in KINDS {
        let result = until_status(root, session, id, TaskStatus::Blocked);
        assert_eq!(result["awaiting_review"], true, "{id}: {result:#}");
        assert_eq!(result["runs_later"], json!([file]), "{id}: {result:#}");
        assert_eq!(
            result["error"],
            format!(
                "awaiting a person's review of files your tools run by themselves ({file}): \
                 `wavecrew approve` lands them, `wavecrew reject --note` revises them"
            ),
            "{id}"
        );
        let branch = result["branch"].as_str().unwrap();
        assert_eq!(
            show(root, &format!("{branch}:{file}")).as_deref(),
            Some(format!("written by {id}").as_str()),
            "{id}: the work waits committed on its branch"
        );
        // (IMPL-006 lands an `.envrc` of its own.)
        assert_ne!(
            show(root, &format!("{integration}:{file}")).as_deref(),
            Some(format!("written by {id}").as_str()),
            "{id}: {file} must not land before a person's review"
        );
    }

    // A person approves the CI change: it lands like any reviewed task's.
    let session_dir = root.join(".workflow/.team").join(session);
    let o = run_bin(
        "wavecrew",
        &["approve", session_dir.to_str().unwrap(), "IMPL-001"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let approved = until_status(root, session, "IMPL-001", TaskStatus::Completed);
    assert_eq!(approved["approved"], true, "{approved:#}");
    assert_eq!(
        show(root, &format!("{integration}:.github/workflows/ci.yml")).as_deref(),
        Some("written by IMPL-001")
    );
    // The others still wait; the run with them.
    assert!(run.0.as_mut().unwrap().try_wait().unwrap().is_none());
}

/// In place there is no branch to hold: a task that adds a file that runs
/// later fails, naming it; one that declares the folder changes it.
#[test]
fn in_place_a_file_that_runs_later_fails_the_task_naming_it() {
    let session = "TC-runs-later-in-place";
    let scenarios = json!([
        writes("IMPL-001", &["out.txt", ".envrc"]),
        writes("IMPL-002", &["more.txt", ".vscode/tasks.json"]),
    ]);
    let tasks = task_table("IMPL-001", &["out.txt"]) + &task_table("IMPL-002", &[".vscode/"]);
    let p = project(session, &scenarios, &tasks, crate::IN_PLACE);
    let root = p.path();
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], root);
    assert_ne!(o.code, 0, "{}", o.render());
    let failed = task(root, session, "IMPL-001").unwrap();
    assert_eq!(failed.status, TaskStatus::Failed, "{}", o.render());
    let error = failed.error().unwrap_or_default();
    assert!(
        error.contains("([isolation] runs_later)") && error.ends_with(
            "cannot wait for one: .envrc; a task that may change them declares them in its `files`"
        ),
        "{error}"
    );
    let declared = task(root, session, "IMPL-002").unwrap();
    assert_eq!(declared.status, TaskStatus::Completed, "{}", o.render());
}

/// A file over `[isolation] max_file_mb` (50 MiB by default) fails its
/// task, naming the file and its size; nothing of it lands. A 1 MiB file
/// lands. (Sparse files: no disk is spent.)
#[test]
fn a_file_over_max_file_mb_fails_the_task_naming_it_and_its_size() {
    let session = "TC-max-file-mb";
    let truncate = |task: &str, size: &str, file: &str| {
        json!({"match": {"task": task}, "steps": [
            {"run": ["truncate", "-s", size, file]},
            {"say": format!("{task} done")}]})
    };
    let scenarios = json!([
        truncate("IMPL-001", "60M", "big.bin"),
        truncate("IMPL-002", "1M", "fine.bin"),
    ]);
    let tasks = task_table("IMPL-001", &["big.bin"]) + &task_table("IMPL-002", &["fine.bin"]);
    let p = project(session, &scenarios, &tasks, "");
    let root = p.path();
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], root);
    assert_ne!(o.code, 0, "{}", o.render());
    let big = task(root, session, "IMPL-001").unwrap();
    assert_eq!(big.status, TaskStatus::Failed, "{}", o.render());
    assert_eq!(
        big.error(),
        Some("big.bin is 60 MiB, over `[isolation] max_file_mb` (50)"),
        "{}",
        o.render()
    );
    let fine = task(root, session, "IMPL-002").unwrap();
    assert_eq!(fine.status, TaskStatus::Completed, "{}", o.render());
    let integration = format!("wavecrew/{session}");
    let landed = wavecrew_testkit::git::git(root, &["ls-tree", "-r", "--name-only", &integration]);
    assert!(landed.lines().any(|f| f == "fine.bin"), "{landed}");
    assert!(!landed.lines().any(|f| f == "big.bin"), "{landed}");
}
