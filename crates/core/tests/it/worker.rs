//! The worker loop: discovery in dependency order, one task with `--task`,
//! failure reports, and the report order (bus record, then task state).

use std::sync::Mutex;

use serde_json::{Map, Value, json};
use wavecrew_core::bus::{BusCursor, BusMessage, ListFilter, ListResult, MessageBus, NewMessage};
use wavecrew_core::role::{PhaseError, Report, Role, WorkerOptions, discover, run_worker};
use wavecrew_core::{FileTaskStore, Task, TaskId, TaskStatus, TaskStore};

/// A bus in memory.
#[derive(Default)]
struct MemoryBus(Mutex<Vec<BusMessage>>);

impl MessageBus for MemoryBus {
    type Error = std::io::Error;
    fn log(&self, m: NewMessage) -> Result<BusMessage, Self::Error> {
        let mut all = self.0.lock().unwrap();
        let msg = BusMessage {
            id: format!("MSG-{:03}", all.len() + 1),
            ts: String::new(),
            from: m.from,
            to: m.to.unwrap_or_else(|| "coordinator".into()),
            kind: m.kind.unwrap_or_else(|| "message".into()),
            summary: m.summary.unwrap_or_default(),
            reference: None,
            data: m.data,
            extra: Map::new(),
        };
        all.push(msg.clone());
        Ok(msg)
    }
    fn read(&self, _: &str) -> Result<Option<BusMessage>, Self::Error> {
        Ok(None)
    }
    fn list(&self, f: &ListFilter) -> Result<ListResult, Self::Error> {
        let messages: Vec<BusMessage> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|m| f.from.as_ref().is_none_or(|x| &m.from == x))
            .filter(|m| f.kind.as_ref().is_none_or(|x| &m.kind == x))
            .cloned()
            .collect();
        Ok(ListResult {
            total: messages.len(),
            messages,
        })
    }
    fn get_state(&self, _: Option<&str>) -> Result<Option<Value>, Self::Error> {
        Ok(None)
    }
    fn since(&self, cursor: BusCursor) -> Result<(Vec<BusMessage>, BusCursor), Self::Error> {
        let all = self.0.lock().unwrap();
        let from = usize::try_from(cursor.0).unwrap().min(all.len());
        Ok((all[from..].to_vec(), BusCursor(all.len() as u64)))
    }
    fn update_state(
        &self,
        mut m: NewMessage,
        update: wavecrew_core::bus::StateUpdate<'_>,
    ) -> Result<BusMessage, Self::Error> {
        m.kind = Some("state_update".into());
        m.data = Some(update(&Map::new()));
        self.log(m)
    }
}

/// Completes every task except those whose description says "fail".
struct Echo {
    seen: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Role for Echo {
    type Work = String;
    fn name(&self) -> &'static str {
        "executor"
    }
    fn prefix(&self) -> &'static str {
        "IMPL"
    }
    async fn prepare(&self, task: &Task) -> Result<String, PhaseError> {
        self.seen.lock().unwrap().push(task.id.as_str().to_owned());
        if task.description.contains("fail") {
            return Err(PhaseError::input("the plan is missing"));
        }
        Ok(task.description.clone())
    }
    async fn execute(&self, _: &Task, work: &mut String) -> Result<(), PhaseError> {
        work.push_str(" (done)");
        Ok(())
    }
    async fn validate(&self, task: &Task, work: &String) -> Report {
        let mut data = Map::new();
        data.insert("task_id".into(), json!(task.id.as_str()));
        data.insert("status".into(), json!("success"));
        Report {
            status: TaskStatus::Completed,
            kind: "task_complete".into(),
            summary: format!("{} complete", task.id.as_str()),
            data,
            result: json!({"work": work}),
        }
    }
}

fn store_with(tasks: &[(&str, &[&str], &str)]) -> (tempfile::TempDir, FileTaskStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileTaskStore::new(tmp.path().join("tasks"));
    for (id, deps, desc) in tasks {
        let mut t = Task::new(TaskId::new(*id).unwrap(), format!("task {id}"), *desc);
        t.blocked_by = deps.iter().map(|d| TaskId::new(*d).unwrap()).collect();
        store.create(t).unwrap();
    }
    (tmp, store)
}

#[tokio::test]
async fn the_inner_loop_takes_every_ready_task_in_order() {
    let (_tmp, store) = store_with(&[
        ("IMPL-003", &["IMPL-001", "IMPL-002"], "join"),
        ("IMPL-001", &[], "first"),
        ("IMPL-002", &["IMPL-001"], "second"),
        ("TEST-001", &[], "not mine"),
    ]);
    let role = Echo {
        seen: Mutex::new(vec![]),
    };
    let bus = MemoryBus::default();
    let summary = run_worker(&role, &store, &bus, &WorkerOptions::default())
        .await
        .unwrap();
    assert_eq!(
        *role.seen.lock().unwrap(),
        ["IMPL-001", "IMPL-002", "IMPL-003"]
    );
    assert_eq!(summary.completed.len(), 3);
    let msgs = bus.0.lock().unwrap();
    assert_eq!(msgs.len(), 3);
    assert!(
        msgs.iter()
            .all(|m| m.summary.starts_with("[executor] ") && m.kind == "task_complete")
    );
    let t = store.get(&TaskId::new("IMPL-003").unwrap()).unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.result.unwrap()["work"], "join (done)");
    assert_eq!(
        store.get(&TaskId::new("TEST-001").unwrap()).unwrap().status,
        TaskStatus::Pending
    );
}

#[tokio::test]
async fn one_task_only_and_never_a_blocked_one() {
    let (_tmp, store) = store_with(&[
        ("IMPL-001", &[], "first"),
        ("IMPL-002", &["IMPL-001"], "second"),
    ]);
    let role = Echo {
        seen: Mutex::new(vec![]),
    };
    let bus = MemoryBus::default();
    let blocked = WorkerOptions {
        task: Some(TaskId::new("IMPL-002").unwrap()),
        ..WorkerOptions::default()
    };
    let s = run_worker(&role, &store, &bus, &blocked).await.unwrap();
    assert_eq!(
        s.not_taken.as_deref(),
        Some("IMPL-002 is blocked by IMPL-001")
    );
    let one = WorkerOptions {
        task: Some(TaskId::new("IMPL-001").unwrap()),
        ..WorkerOptions::default()
    };
    let s = run_worker(&role, &store, &bus, &one).await.unwrap();
    assert_eq!(s.completed, vec![TaskId::new("IMPL-001").unwrap()]);
    assert_eq!(
        discover(&role, &store).unwrap(),
        Some(TaskId::new("IMPL-002").unwrap())
    );
}

#[tokio::test]
async fn a_failing_phase_is_reported_and_the_task_fails() {
    let (_tmp, store) = store_with(&[("IMPL-001", &[], "this will fail")]);
    let role = Echo {
        seen: Mutex::new(vec![]),
    };
    let bus = MemoryBus::default();
    let s = run_worker(&role, &store, &bus, &WorkerOptions::default())
        .await
        .unwrap();
    assert_eq!(s.failed.len(), 1);
    let msgs = bus.0.lock().unwrap();
    assert_eq!(msgs[0].kind, "task_failed");
    assert_eq!(
        msgs[0].data.as_ref().unwrap()["error"],
        "the plan is missing"
    );
    assert_eq!(
        store.get(&TaskId::new("IMPL-001").unwrap()).unwrap().status,
        TaskStatus::Failed
    );
}

/// `id` claimed by a worker that is gone, and reset by reconcile: a task
/// whose worker was killed while it worked.
fn interrupted(store: &FileTaskStore, id: &TaskId) {
    let gone = wavecrew_core::WorkerInfo {
        worker: "executor".into(),
        pid: u32::MAX - 1,
        host: "elsewhere".into(),
    };
    assert!(matches!(
        store.claim(id, &gone).unwrap(),
        wavecrew_core::Claim::Claimed(_)
    ));
    let policy = wavecrew_core::LeasePolicy {
        stall_after: std::time::Duration::ZERO,
    };
    assert_eq!(store.reconcile(&policy).unwrap(), std::slice::from_ref(id));
}

#[tokio::test]
async fn a_task_whose_completion_is_on_the_bus_is_not_done_twice() {
    // A worker was killed after its record and before the store update:
    // the task stayed in progress under its lease until reconcile reset it.
    let (_tmp, store) = store_with(&[("IMPL-001", &[], "first")]);
    let id = TaskId::new("IMPL-001").unwrap();
    interrupted(&store, &id);
    let bus = MemoryBus::default();
    let mut data = Map::new();
    data.insert("task_id".into(), json!("IMPL-001"));
    data.insert("files_modified".into(), json!(["a.rs"]));
    let record = NewMessage {
        from: "executor".into(),
        kind: Some("task_complete".into()),
        data: Some(data),
        ..NewMessage::default()
    };
    // What the worker wrote before its record: its own copy of it.
    let proofs = tempfile::tempdir().unwrap();
    let proof = wavecrew_core::role::proof_file(proofs.path(), &id);
    std::fs::create_dir_all(proof.parent().unwrap()).unwrap();
    std::fs::write(&proof, serde_json::to_vec(&record).unwrap()).unwrap();
    bus.log(record).unwrap();
    let role = Echo {
        seen: Mutex::new(vec![]),
    };
    let options = WorkerOptions {
        proofs: Some(proofs.path().to_owned()),
        ..WorkerOptions::default()
    };
    let s = run_worker(&role, &store, &bus, &options).await.unwrap();
    assert_eq!(s.completed.len(), 1);
    assert!(role.seen.lock().unwrap().is_empty(), "the phases ran again");
    assert_eq!(
        bus.0.lock().unwrap().len(),
        1,
        "a second record was written"
    );
    let t = store.get(&TaskId::new("IMPL-001").unwrap()).unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.result.unwrap()["files_modified"], json!(["a.rs"]));
    assert!(!proof.exists(), "the copy served once");
}

/// A completion record on the bus that no worker of wavecrew wrote (an
/// agent's `wavecrew msg log --from executor`) is no proof: the task of an
/// interrupted worker runs again, and completes with its own report.
#[tokio::test]
async fn a_forged_completion_record_does_not_complete_a_task() {
    let (_tmp, store) = store_with(&[("IMPL-001", &[], "first")]);
    let id = TaskId::new("IMPL-001").unwrap();
    interrupted(&store, &id);
    let bus = MemoryBus::default();
    let mut data = Map::new();
    data.insert("task_id".into(), json!("IMPL-001"));
    data.insert("files_modified".into(), json!(["forged.rs"]));
    bus.log(NewMessage {
        from: "executor".into(),
        kind: Some("task_complete".into()),
        data: Some(data),
        ..NewMessage::default()
    })
    .unwrap();
    let role = Echo {
        seen: Mutex::new(vec![]),
    };
    let proofs = tempfile::tempdir().unwrap();
    let options = WorkerOptions {
        proofs: Some(proofs.path().to_owned()),
        ..WorkerOptions::default()
    };
    let s = run_worker(&role, &store, &bus, &options).await.unwrap();
    assert_eq!(s.completed.len(), 1);
    assert_eq!(
        role.seen.lock().unwrap().len(),
        1,
        "the phases ran: the record proved nothing"
    );
    let t = store.get(&id).unwrap();
    assert_ne!(t.result.unwrap()["files_modified"], json!(["forged.rs"]));
}
