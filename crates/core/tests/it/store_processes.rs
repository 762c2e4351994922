//! Several processes claim the same task: exactly one wins.
//!
//! The test re-runs its own binary as the children (`CHILD_ENV` set), each of
//! which claims once and prints `won` or `lost`.

use std::process::{Command, Stdio};

use wavecrew_core::{Claim, FileTaskStore, Task, TaskId, TaskStore, WorkerInfo};

const CHILD_ENV: &str = "WAVECREW_TEST_CLAIM_DIR";

#[test]
fn claim_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return; // only meaningful as a child of `processes_racing_for_one_task_have_one_winner`
    };
    let store = FileTaskStore::new(dir);
    let me = WorkerInfo::current(format!("worker-{}", std::process::id()));
    let id = TaskId::new("RACE-001").unwrap();
    match store.claim(&id, &me).unwrap() {
        Claim::Claimed(_) => println!("RESULT won"),
        _ => println!("RESULT lost"),
    }
}

#[test]
fn processes_racing_for_one_task_have_one_winner() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileTaskStore::new(tmp.path().join("tasks"));
    store
        .create(Task::new(TaskId::new("RACE-001").unwrap(), "race", ""))
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "store_processes::claim_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, store.dir())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut won = 0;
    let mut lost = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        if text.contains("RESULT won") {
            won += 1;
        } else if text.contains("RESULT lost") {
            lost += 1;
        } else {
            panic!("child printed no result: {text}");
        }
    }
    assert_eq!((won, lost), (1, 7));
    let task = store.get(&TaskId::new("RACE-001").unwrap()).unwrap();
    assert_eq!(task.attempts, 1);
}
