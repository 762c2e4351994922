//! Tests of the merge facts and the merge queue.

use serde_json::json;

use super::text::{cell, code};
use super::*;

#[test]
fn a_malformed_field_is_missing_not_a_crash() {
    let result = json!({
        "branch": 7,
        "base": ["x"],
        "merge_commit": {"no": 1},
        "conflict": "text",
        "conflicts": [3, {"files": "a.rs", "with": [1, "IMPL-001"], "upstream": [5, "abc", {"commit": 9, "task": "IMPL-003"}]}],
    });
    let m = task_merge(Some(&result), &[]).expect("one conflict survives");
    assert_eq!(m.branch, None);
    assert_eq!(m.base, None);
    assert_eq!(m.merge_commit, None);
    assert_eq!(m.conflict, None);
    assert_eq!(m.conflicts.len(), 1);
    let c = &m.conflicts[0];
    assert!(c.files.is_empty());
    assert_eq!(c.with, ["IMPL-001"]);
    assert_eq!(c.upstream.len(), 2);
    assert_eq!(c.upstream[0].commit.as_deref(), Some("abc"));
    assert_eq!(c.upstream[1].commit, None);
    assert_eq!(c.upstream[1].task.as_deref(), Some("IMPL-003"));
    // Nothing of the merge queue: no facts.
    assert_eq!(task_merge(Some(&json!({"files_modified": []})), &[]), None);
    assert_eq!(task_merge(Some(&json!("not an object")), &[]), None);
}

#[test]
fn with_falls_back_to_the_upstream_tasks_and_events_are_read() {
    let result = json!({"conflict": {"files": ["f"], "upstream": [
        {"commit": "c2", "subject": "s", "task": "IMPL-002"},
        {"commit": "c1", "subject": "s", "task": "IMPL-001"},
        {"commit": "c0", "subject": "s", "task": null}]}});
    let merged = json!({"ts": "2026-01-01T00:00:01Z", "type": "task_merged",
        "data": {"task_id": "IMPL-009", "merge_commit": "abcdef"}});
    let clash = json!({"ts": "2026-01-01T00:00:00Z", "type": "merge_conflict",
        "data": {"task_id": "IMPL-009", "files": ["f"], "with": ["IMPL-001"], "revision": true}});
    let junk = json!({"ts": 5, "type": "task_merged"});
    let rejected = json!({"ts": "2026-01-01T00:00:02Z", "type": "merge_rejected",
        "data": {"task_id": "IMPL-009", "command": "make check", "output": "x", "revision": true}});
    let m = task_merge(Some(&result), &[&clash, &merged, &junk, &rejected]).unwrap();
    assert_eq!(m.conflict.as_ref().unwrap().with, ["IMPL-001", "IMPL-002"]);
    assert_eq!(m.events.len(), 3);
    assert_eq!(m.events[2].kind, "rejected");
    assert_eq!(m.events[2].command.as_deref(), Some("make check"));
    assert_eq!(m.events[0].revision, Some(true));
    assert_eq!(m.landed_at(), Some("2026-01-01T00:00:01Z"));
    assert_eq!(m.all_conflicts().len(), 1);
}

/// A session folder away from its repository: what landed comes from
/// the results, in the order of the `task_merged` records.
#[test]
fn without_the_repository_the_results_tell_what_landed() {
    use wavecrew_core::{FileTaskStore, Task, TaskId, TaskStatus, TaskStore};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".workflow/.team/S-1");
    std::fs::create_dir_all(dir.join(".msg")).unwrap();
    let state = json!({"version": 1, "session": "S-1", "branch": "wavecrew/S-1",
        "base": "b".repeat(40), "head_at_start": "b".repeat(40),
        "branch_at_start": "refs/heads/main", "snapshot": false, "exclude": [".workflow"]});
    std::fs::write(dir.join("integration.json"), state.to_string()).unwrap();
    let store = FileTaskStore::for_session(&dir);
    let add = |id: &str, status, result: Option<Value>| {
        let mut t = Task::new(TaskId::new(id).unwrap(), id, "");
        t.status = status;
        t.result = result;
        store.create(t).unwrap();
    };
    add(
        "IMPL-001",
        TaskStatus::Completed,
        Some(json!({"branch": "wavecrew-tasks/S-1/IMPL-001/1",
        "base": "b".repeat(40), "merge_commit": "1".repeat(40)})),
    );
    add(
        "IMPL-002",
        TaskStatus::Completed,
        Some(json!({"branch": "wavecrew-tasks/S-1/IMPL-002/1",
        "base": "b".repeat(40), "merge_commit": "2".repeat(40)})),
    );
    add("IMPL-003", TaskStatus::InProgress, None);
    add(
        "IMPL-004",
        TaskStatus::Failed,
        Some(json!({"error": "its work conflicts",
        "conflict": {"files": ["x.rs"], "with": ["IMPL-002"]}})),
    );
    add(
        "IMPL-005",
        TaskStatus::Completed,
        Some(json!({"files_modified": []})),
    );
    add(
        "IMPL-006",
        TaskStatus::Failed,
        Some(
            json!({"error": "after one revision the merged result still fails `make check`",
            "verify": {"command": "make check", "output": "boom"}, "branch": "wavecrew-tasks/S-1/IMPL-006/2"}),
        ),
    );
    std::fs::create_dir_all(dir.join("worktrees/IMPL-003")).unwrap();
    std::fs::write(
        dir.join("worktrees/IMPL-003/2.json"),
        json!({"branch": "wavecrew-tasks/S-1/IMPL-003/2"}).to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("worktrees/IMPL-003/1.json"), "torn").unwrap();
    let rec = |n: u32, kind: &str, data: Value| {
        json!({"id": format!("MSG-{n:03}"), "ts": format!("2026-01-01T00:00:0{n}Z"),
            "from": "executor", "to": "coordinator", "type": kind, "summary": "", "data": data})
        .to_string()
    };
    let bus = [
        rec(1, "task_merged", json!({"task_id": "IMPL-002", "merge_commit": "2".repeat(40)})),
        rec(2, "task_merged", json!({"task_id": "IMPL-001", "merge_commit": "1".repeat(40)})),
        rec(3, "merge_conflict", json!({"task_id": "IMPL-003", "files": ["a.rs"], "with": ["IMPL-001"], "revision": true})),
    ]
    .join("\n");
    std::fs::write(dir.join(".msg/messages.jsonl"), bus).unwrap();

    let run = crate::collect(&dir).unwrap();
    let q = run.merge_queue.as_ref().expect("an isolated session");
    assert_eq!(q.landed_from, "results");
    assert!(q.note.is_some());
    let order: Vec<&str> = q.landed.iter().map(|l| l.task.as_str()).collect();
    assert_eq!(order, ["IMPL-002", "IMPL-001"]);
    assert_eq!(q.waiting.len(), 1);
    assert_eq!(q.waiting[0].task, "IMPL-003");
    assert_eq!(
        q.waiting[0].branch.as_deref(),
        Some("wavecrew-tasks/S-1/IMPL-003/2")
    );
    assert_eq!(q.waiting[0].conflicts, 1);
    let outcomes: Vec<(&str, &str)> = q
        .conflicts
        .iter()
        .map(|c| (c.task.as_str(), c.outcome.as_str()))
        .collect();
    assert_eq!(outcomes, [("IMPL-003", "revising"), ("IMPL-004", "failed")]);
    let blocked: Vec<&str> = q.blocked.iter().map(|b| b.task.as_str()).collect();
    assert_eq!(blocked, ["IMPL-004", "IMPL-006"]);
    assert_eq!(q.blocked[0].with, ["IMPL-002"]);
    assert_eq!(q.take[1], "wavecrew run .workflow/.team/S-1 --apply");
    let status = crate::status::status_text(&run, 0);
    assert!(
        status.contains("IMPL-003 on wavecrew-tasks/S-1/IMPL-003/2, revising after 1 conflict"),
        "{status}"
    );
    assert!(status.contains("(read from the task results)"), "{status}");
    assert!(
        status.contains(
            "IMPL-006 [failed]: after one revision the merged result still fails `make check`"
        ),
        "{status}"
    );
    let summary = crate::render::summary_markdown(&run);
    assert!(
        summary.contains("| IMPL-005 |") && summary.contains("## Merge queue"),
        "{summary}"
    );
    assert!(
        !summary.contains("| IMPL-005 | completed | `"),
        "no merge row for a task without facts"
    );

    // A torn state file: still a merge queue, with a note, no crash.
    std::fs::write(dir.join("integration.json"), "{").unwrap();
    let run = crate::collect(&dir).unwrap();
    let q = run.merge_queue.as_ref().unwrap();
    assert_eq!(q.branch, "wavecrew/S-1");
    assert!(q.note.as_deref().unwrap_or("").contains("integration.json"));

    // In place: no merge queue anywhere.
    std::fs::remove_file(dir.join("integration.json")).unwrap();
    let run = crate::collect(&dir).unwrap();
    assert_eq!(run.merge_queue, None);
    assert!(!crate::status::status_text(&run, 0).contains("Merge queue"));
    assert!(!crate::render::summary_markdown(&run).contains("Merge queue"));
    assert!(!crate::html::index_html(&run).contains("Merge queue"));
}

#[test]
fn code_spans_survive_backticks() {
    assert_eq!(code("a.rs"), "`a.rs`");
    assert_eq!(code("a`b"), "``a`b``");
    assert_eq!(code("`x"), "`` `x ``");
    assert_eq!(cell("a|b\nc"), "a\\|b c");
}

#[test]
fn the_session_folder_in_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".workflow/.team/S-1");
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(session_arg(&dir, Some(tmp.path())), ".workflow/.team/S-1");
    assert_eq!(session_arg(&dir, None), ".workflow/.team/S-1");
    let other = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    assert_eq!(
        session_arg(&other, None),
        other.canonicalize().unwrap().display().to_string()
    );
}

#[test]
fn nothing_landed_yet_offers_nothing_to_take() {
    use wavecrew_core::{FileTaskStore, Task, TaskId, TaskStore};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".workflow/.team/S-2");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("integration.json"),
        r#"{"branch": "wavecrew/S-2"}"#,
    )
    .unwrap();
    FileTaskStore::for_session(&dir)
        .create(Task::new(TaskId::new("IMPL-001").unwrap(), "t", ""))
        .unwrap();
    let run = crate::collect(&dir).unwrap();
    let status = crate::status::status_text(&run, 0);
    assert!(status.contains("Landed: 0 tasks"), "{status}");
    assert!(status.contains("Nothing to take yet."), "{status}");
    let summary = crate::render::summary_markdown(&run);
    assert!(summary.contains("0 tasks landed"), "{summary}");
    assert!(!summary.contains("Take it with"), "{summary}");
}

/// A project folder without git: the branch lives in the session's shadow
/// repository, what landed is read there, and the work is taken with
/// `--apply` alone (`git merge` has no repository to run in).
#[test]
fn a_shadow_repository_is_read_and_only_apply_takes_the_work() {
    use wavecrew_core::{FileTaskStore, Task, TaskId, TaskStatus, TaskStore};
    use wavecrew_isolation::{Integration, Landing, Repo};

    let tmp = tempfile::tempdir().unwrap();
    let top = tmp.path().canonicalize().unwrap();
    std::fs::write(top.join("notes.txt"), "one\n").unwrap();
    let dir = top.join(".workflow/.team/S-3");
    std::fs::create_dir_all(&dir).unwrap();
    if Repo::open(&top).unwrap().is_some() {
        // The temp folder is inside a git work tree here: not this case.
        return;
    }
    let repo = Repo::shadow(&top, &dir, &[".workflow"], &[]).unwrap();
    let s = Integration::start(&repo, "S-3", &[".workflow"], &dir).unwrap();
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    std::fs::write(wt.path.join("notes.txt"), "two\n").unwrap();
    s.commit(&wt, "IMPL-001", "IMPL-001").unwrap();
    let Landing::FastForward { commit } = s.land(&wt, "IMPL-001").unwrap() else {
        panic!("fast-forward")
    };
    let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "");
    t.status = TaskStatus::Completed;
    t.result = Some(json!({"branch": wt.branch, "base": wt.base, "merge_commit": commit}));
    FileTaskStore::for_session(&dir).create(t).unwrap();

    let run = crate::collect(&dir).unwrap();
    let q = run.merge_queue.as_ref().unwrap();
    assert_eq!(q.landed_from, "git", "{:?}", q.note);
    assert_eq!(q.landed[0].commit, commit);
    assert_eq!(q.shadow_repository.as_deref(), Some(repo.common_dir()));
    assert_eq!(q.take, ["wavecrew run .workflow/.team/S-3 --apply"]);
    let status = crate::status::status_text(&run, 0);
    assert!(status.contains("shadow repository"), "{status}");
    assert!(!status.contains("git merge"), "{status}");
    let summary = crate::render::summary_markdown(&run);
    assert!(summary.contains("which has no git"), "{summary}");
    s.clean().unwrap();
}
