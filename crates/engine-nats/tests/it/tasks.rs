//! The KV task store: one claim winner, the revision fences a stale worker,
//! and the same transitions as the file store.

use std::time::Duration;

use serde_json::json;
use wavecrew_core::store::this_host;
use wavecrew_core::{
    BlockerRule, Claim, CoreError, FileTaskStore, LeasePolicy, Task, TaskId, TaskStatus, TaskStore,
    WorkerInfo,
};
use wavecrew_engine_nats::NatsTaskStore;

use crate::support::NatsServer;

fn id(s: &str) -> TaskId {
    TaskId::new(s).unwrap()
}

fn store(server: &NatsServer, session: &str) -> NatsTaskStore {
    NatsTaskStore::open(&server.engine_blocking(session)).unwrap()
}

/// A worker on another host: only the stall limit can expire its lease.
fn remote(name: &str) -> WorkerInfo {
    WorkerInfo {
        worker: name.into(),
        pid: 4242,
        host: format!("host-of-{name}"),
    }
}

#[test]
fn eight_threads_racing_for_one_task_have_one_winner() {
    let server = NatsServer::start();
    let s = store(&server, "race");
    s.create(Task::new(id("RACE-1"), "r", "")).unwrap();
    let start = std::sync::Barrier::new(8);
    let claims: Vec<Claim> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|n| {
                // Each thread its own connection, as separate hosts would.
                let s = store(&server, "race");
                let start = &start;
                scope.spawn(move || {
                    // The same revision read by several before any writes.
                    start.wait();
                    s.claim(&id("RACE-1"), &remote(&format!("w{n}"))).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<&Task> = claims
        .iter()
        .filter_map(|c| match c {
            Claim::Claimed(t) => Some(&**t),
            _ => None,
        })
        .collect();
    let summary: Vec<String> = claims
        .iter()
        .map(|c| match c {
            Claim::Claimed(t) => format!("claimed by {}", t.lease.as_ref().unwrap().worker),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(winners.len(), 1, "{summary:?}");
    assert!(
        claims.iter().all(|c| matches!(
            c,
            Claim::Claimed(_) | Claim::NotPending(TaskStatus::InProgress)
        )),
        "{claims:?}"
    );
    // The stored lease is the winner's, one attempt.
    let stored = s.get(&id("RACE-1")).unwrap();
    assert_eq!(
        stored.lease.as_ref().unwrap().worker,
        winners[0].lease.as_ref().unwrap().worker
    );
    assert_eq!(stored.attempts, 1);
    // Creating it again fails naming the task and the bucket.
    let err = s.create(Task::new(id("RACE-1"), "r", "")).unwrap_err();
    assert!(matches!(err, CoreError::TaskExists { .. }), "{err:?}");
    assert!(err.to_string().contains("RACE-1") && err.to_string().contains("wavecrew_race_tasks"));
}

#[test]
fn a_stale_worker_is_fenced_by_the_revision_after_reconcile_and_reclaim() {
    let server = NatsServer::start();
    let s = store(&server, "fence");
    s.create(Task::new(id("T-1"), "t", "")).unwrap();
    let old = remote("old");
    let new = remote("new");
    assert!(matches!(
        s.claim(&id("T-1"), &old).unwrap(),
        Claim::Claimed(_)
    ));
    s.heartbeat(&id("T-1"), &old).unwrap();
    // The old worker goes quiet past the stall limit.
    std::thread::sleep(Duration::from_millis(120));
    let policy = LeasePolicy {
        stall_after: Duration::from_millis(100),
    };
    assert_eq!(s.reconcile(&policy).unwrap(), [id("T-1")]);
    assert!(matches!(
        s.claim(&id("T-1"), &new).unwrap(),
        Claim::Claimed(_)
    ));
    // The old worker wakes up: its heartbeat and its finish are refused.
    let err = s.heartbeat(&id("T-1"), &old).unwrap_err();
    assert!(
        matches!(&err, CoreError::LeaseLost { id, worker, action: "heartbeat", .. } if id == "T-1" && worker == "old"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`new`"), "{err}");
    let err = s
        .finish(
            &id("T-1"),
            &old,
            TaskStatus::Completed,
            Some(json!({"by": "old"})),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            CoreError::LeaseLost {
                action: "finish",
                ..
            }
        ),
        "{err:?}"
    );
    // The task is still the new worker's, untouched by the old one.
    let t = s.get(&id("T-1")).unwrap();
    assert_eq!(t.status, TaskStatus::InProgress);
    assert_eq!(t.lease.as_ref().unwrap().worker, "new");
    assert_eq!(t.attempts, 2);
    assert_eq!(t.result, None);
    s.heartbeat(&id("T-1"), &new).unwrap();
    let done = s
        .finish(
            &id("T-1"),
            &new,
            TaskStatus::Completed,
            Some(json!({"by": "new"})),
        )
        .unwrap();
    assert_eq!(done.result, Some(json!({"by": "new"})));
    // A finished task fences everyone.
    let err = s.heartbeat(&id("T-1"), &new).unwrap_err();
    assert!(matches!(err, CoreError::LeaseLost { .. }), "{err:?}");
}

#[test]
fn a_heartbeat_keeps_a_lease_that_reconcile_would_reset() {
    let server = NatsServer::start();
    let s = store(&server, "beat");
    s.create(Task::new(id("T-1"), "t", "")).unwrap();
    let w = remote("w");
    s.claim(&id("T-1"), &w).unwrap();
    let policy = LeasePolicy {
        stall_after: Duration::from_millis(300),
    };
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(150));
        s.heartbeat(&id("T-1"), &w).unwrap();
        assert!(s.reconcile(&policy).unwrap().is_empty());
    }
    assert_eq!(s.get(&id("T-1")).unwrap().status, TaskStatus::InProgress);
}

#[test]
fn concurrent_updates_lose_nothing() {
    let server = NatsServer::start();
    let s = store(&server, "upd");
    s.create(Task::new(id("T-1"), "t", "")).unwrap();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let s = store(&server, "upd");
            scope.spawn(move || {
                for _ in 0..10 {
                    s.update(&id("T-1"), &mut |t| {
                        let n = t
                            .metadata
                            .get("n")
                            .and_then(serde_json::Value::as_u64)
                            .unwrap_or(0);
                        t.metadata.insert("n".into(), json!(n + 1));
                        Ok(())
                    })
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(s.get(&id("T-1")).unwrap().metadata["n"], json!(40));
    let err = s
        .update(&id("T-1"), &mut |t| {
            t.id = id("T-2");
            Ok(())
        })
        .unwrap_err();
    assert!(err.to_string().contains("may not change the id"), "{err}");
}

/// One script of calls; each outcome written as a line, so two stores can
/// be compared.
fn script(s: &dyn TaskStore) -> Vec<String> {
    let mut out = Vec::new();
    let mut note = |what: &str, r: String| out.push(format!("{what}: {r}"));
    let w = remote("w");
    let dead = WorkerInfo {
        worker: "dead".into(),
        pid: 0x7fff_fff0,
        host: this_host(),
    };
    let claim = |r: Result<Claim, CoreError>| match r {
        Ok(Claim::Claimed(t)) => format!("claimed attempt {}", t.attempts),
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("error {}", kind(&e)),
    };
    for n in 1..=4 {
        s.create(Task::new(id(&format!("T-{n}")), "t", "")).unwrap();
    }
    let mut t2 = Task::new(id("T-5"), "t", "");
    t2.blocked_by = vec![id("T-1"), id("T-9")];
    s.create(t2).unwrap();
    note("blocked", claim(s.claim(&id("T-5"), &w)));
    note("claim T-1", claim(s.claim(&id("T-1"), &w)));
    note("claim T-1 again", claim(s.claim(&id("T-1"), &w)));
    note(
        "finish T-1 failed",
        format!(
            "{:?}",
            s.finish(&id("T-1"), &w, TaskStatus::Failed, None)
                .map(|t| t.status)
        ),
    );
    note("blocked, completed rule", claim(s.claim(&id("T-5"), &w)));
    note("missing", claim(s.claim(&id("T-9"), &w)));
    s.create(Task::new(id("T-9"), "t", "")).unwrap();
    s.claim(&id("T-9"), &w).unwrap();
    s.finish(
        &id("T-9"),
        &w,
        TaskStatus::Skipped,
        Some(json!({"why": "x"})),
    )
    .unwrap();
    note(
        "ended rule",
        claim(s.claim_with(&id("T-5"), &w, BlockerRule::Ended)),
    );
    note("claim by dead", claim(s.claim(&id("T-2"), &dead)));
    note("claim T-3", claim(s.claim(&id("T-3"), &w)));
    note(
        "reconcile",
        format!("{:?}", s.reconcile(&LeasePolicy::default()).unwrap()),
    );
    note(
        "dead heartbeat",
        format!("{:?}", s.heartbeat(&id("T-2"), &dead).map_err(|e| kind(&e))),
    );
    note("reclaim T-2", claim(s.claim(&id("T-2"), &w)));
    note(
        "get missing",
        format!(
            "{:?}",
            s.get(&id("T-404")).map(|t| t.status).map_err(|e| kind(&e))
        ),
    );
    let listed: Vec<String> = s
        .list()
        .unwrap()
        .into_iter()
        .map(|t| {
            format!(
                "{}={}/{}/{}",
                t.id,
                t.status,
                t.attempts,
                t.lease.map(|l| l.worker).unwrap_or_default()
            )
        })
        .collect();
    note("list", listed.join(" "));
    out
}

fn kind(e: &CoreError) -> &'static str {
    match e {
        CoreError::LeaseLost { .. } => "LeaseLost",
        CoreError::TaskNotFound { .. } => "TaskNotFound",
        CoreError::TaskExists { .. } => "TaskExists",
        _ => "other",
    }
}

#[test]
fn the_kv_store_makes_the_same_transitions_as_the_file_store() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = script(&FileTaskStore::for_session(dir.path()));
    let nats = script(&store(&server, "parity"));
    assert_eq!(nats, file);
    // And the script says what it should (so equal is not equally wrong).
    assert!(
        file.contains(&"blocked: Blocked([TaskId(\"T-1\"), TaskId(\"T-9\")])".to_owned()),
        "{file:#?}"
    );
    assert!(
        file.contains(&"reconcile: [TaskId(\"T-2\")]".to_owned()),
        "{file:#?}"
    );
    assert!(
        file.contains(&"dead heartbeat: Err(\"LeaseLost\")".to_owned()),
        "{file:#?}"
    );
    assert!(
        file.contains(&"reclaim T-2: claimed attempt 2".to_owned()),
        "{file:#?}"
    );
}

#[test]
fn works_from_spawn_blocking_and_from_inside_an_async_task() {
    let server = NatsServer::start();
    let s = store(&server, "ctx");
    s.create(Task::new(id("T-1"), "t", "")).unwrap();
    let w = remote("w");
    // A current-thread runtime whose only thread blocks in the store, as
    // the worker loop's heartbeat does.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        assert!(matches!(
            s.claim(&id("T-1"), &w).unwrap(),
            Claim::Claimed(_)
        ));
        s.heartbeat(&id("T-1"), &w).unwrap();
        let (s2, w2) = (s.clone(), w.clone());
        tokio::task::spawn_blocking(move || s2.heartbeat(&id("T-1"), &w2))
            .await
            .unwrap()
            .unwrap();
    });
    // The store opened and dropped inside an async task.
    rt.block_on(async {
        let engine = server.engine("ctx").await;
        let s = NatsTaskStore::open(&engine).unwrap();
        assert_eq!(s.get(&id("T-1")).unwrap().status, TaskStatus::InProgress);
        drop(s);
        drop(engine);
    });
}

#[test]
fn a_corrupt_value_is_named_and_the_others_listed() {
    let server = NatsServer::start();
    let s = store(&server, "corrupt");
    s.create(Task::new(id("T-1"), "t", "")).unwrap();
    s.create(Task::new(id("T-2"), "t", "")).unwrap();
    let engine = server.engine_blocking("corrupt");
    let js = engine.jetstream().clone();
    engine
        .block_on("test", async move {
            let kv = js.get_key_value("wavecrew_corrupt_tasks").await.unwrap();
            kv.put("T-2", "{\"id\": ".into()).await.unwrap();
        })
        .unwrap();
    let listing = s.list_lenient().unwrap();
    assert_eq!(listing.tasks.len(), 1);
    assert_eq!(listing.problems.len(), 1);
    let err = s.list().unwrap_err().to_string();
    assert!(err.contains("wavecrew_corrupt_tasks/T-2"), "{err}");
    // A task id that is not a key is refused naming it.
    let err = s.get(&id("a..b")).unwrap_err().to_string();
    assert!(err.contains("a..b"), "{err}");
}
