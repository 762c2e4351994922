//! The run engine under `wavecrew run`: the scheduler's dispatcher starts
//! the most critical ready task first, keeps the limits per role and per
//! backend (checked on the spans the bus records), and the `always` failure
//! policy runs a failed task's dependents.

use serde_json::{Value, json};
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::run_bin;

use crate::team::{Project, project, writes};

fn run(p: &Project, extra: &[&str]) -> wavecrew_testkit::CliOutput {
    let session = p.session();
    let mut args = vec!["run", session.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_bin("wavecrew", &args, p.root())
}

/// The order in which the orchestrator started workers.
fn start_order(p: &Project) -> Vec<String> {
    p.bus_log()
        .iter()
        .filter(|m| m["type"] == "task_unblocked")
        .map(|m| m["data"]["task_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Each task's span on the bus: from its worker's start to its record.
fn spans(p: &Project) -> Vec<(String, String, String)> {
    let log = p.bus_log();
    // ccw's timestamps: fixed width, all `+00:00`, so text order is time
    // order.
    let ts = |m: &Value| m["ts"].as_str().unwrap().to_owned();
    let mut out = Vec::new();
    for m in &log {
        if m["type"] != "task_unblocked" {
            continue;
        }
        let id = m["data"]["task_id"].as_str().unwrap();
        let end = log
            .iter()
            .find(|e| {
                (e["type"] == "task_complete" || e["type"] == "task_failed")
                    && e["data"]["task_id"] == id
            })
            .unwrap_or_else(|| panic!("{id} has a completion record"));
        out.push((id.to_owned(), ts(m), ts(end)));
    }
    out
}

/// The most spans of `ids` open at one instant.
fn max_overlap(spans: &[(String, String, String)], ids: &[&str]) -> usize {
    let mut edges: Vec<(String, i32)> = spans
        .iter()
        .filter(|(id, _, _)| ids.contains(&id.as_str()))
        .flat_map(|(_, s, e)| [(s.clone(), 1), (e.clone(), -1)])
        .collect();
    // An end before a start at the same instant: touching is not overlap.
    edges.sort();
    let (mut open, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        open += d;
        most = most.max(open);
    }
    usize::try_from(most).unwrap()
}

#[test]
fn the_most_critical_ready_task_starts_first() {
    // Store order: IMPL-001 first. Critical order: IMPL-002 heads a chain of
    // three, so it goes first even though it sorts second, then IMPL-003
    // (two left on its path); IMPL-001 and IMPL-004 tie, the smaller id
    // first.
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &[], "developer"),
            ("IMPL-003", &["IMPL-002"], "developer"),
            ("IMPL-004", &["IMPL-003"], "developer"),
        ],
        &json!([
            writes("IMPL-001"),
            writes("IMPL-002"),
            writes("IMPL-003"),
            writes("IMPL-004")
        ]),
        "",
    );
    let o = run(&p, &["--max-parallel", "1"]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(
        start_order(&p),
        ["IMPL-002", "IMPL-003", "IMPL-001", "IMPL-004"]
    );
}

#[test]
fn limits_per_role_and_per_backend_are_never_exceeded() {
    let sleepy = |task: &str| {
        json!({"match": {"task": task}, "steps": [
            {"sleep_ms": 400},
            {"write": {"path": format!("out/{task}.txt"), "content": "ok\n"}},
            {"say": "done"}]})
    };
    let ids = [
        "IMPL-001",
        "IMPL-002",
        "IMPL-003",
        "IMPL-004",
        "IMPL-005",
        "IMPL-006",
        "DRAFT-001",
        "DRAFT-002",
        "DRAFT-003",
    ];
    let p = project(
        &[("IMPL-000", &[], "developer"), ("DRAFT-000", &[], "writer")],
        &Value::Array(
            ids.iter()
                .map(|t| sleepy(t))
                .chain([writes("IMPL-000"), writes("DRAFT-000")])
                .collect(),
        ),
        // A second backend playing the same script, one task at a time; at
        // most two developers and four tasks in all.
        &format!(
            "\n[backends.slow]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"agent.json\"\nformat = \"codex\"\nmax_parallel = 1\n\n[limits]\nmax_parallel = 4\n\n[limits.roles]\ndeveloper = 2\n",
            wavecrew_testkit::bin_path("wavecrew-scripted-agent")
                .display()
                .to_string()
        ),
    );
    for id in ids {
        let mut t = Task::new(TaskId::new(id).unwrap(), id, format!("do {id}"));
        t.owner = Some(
            if id.starts_with("IMPL") {
                "developer"
            } else {
                "writer"
            }
            .into(),
        );
        if ["IMPL-004", "IMPL-005", "IMPL-006"].contains(&id) {
            t.metadata.insert("executor".into(), json!("slow"));
        }
        p.store().create(t).unwrap();
    }
    let o = run(&p, &[]);
    assert_eq!(o.code, 0, "{}", o.render());
    let spans = spans(&p);
    assert_eq!(spans.len(), 11, "{spans:?}");
    let developers: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|i| i.starts_with("IMPL"))
        .collect();
    assert!(max_overlap(&spans, &developers) <= 2, "{spans:?}");
    assert!(
        max_overlap(&spans, &["IMPL-004", "IMPL-005", "IMPL-006"]) <= 1,
        "{spans:?}"
    );
    assert!(max_overlap(&spans, &ids) <= 4, "{spans:?}");
    // The writers are not held back by the developers' limit.
    assert!(
        max_overlap(&spans, &["DRAFT-001", "DRAFT-002", "DRAFT-003"]) >= 2,
        "{spans:?}"
    );
}

#[test]
fn always_runs_the_dependents_of_a_failed_task() {
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
        ],
        &json!([
            {"match": {"task": "IMPL-001"}, "steps": [{"fail": {"message": "mock 500", "status": 500}}]},
            writes("IMPL-002"),
        ]),
        "",
    );
    let o = run(&p, &["--on-failure", "always"]);
    assert_eq!(o.code, 1, "{}", o.render());
    assert_eq!(p.status("IMPL-001"), TaskStatus::Failed);
    assert_eq!(p.status("IMPL-002"), TaskStatus::Completed);
}

/// A tmpfs mounted for one test, unmounted when dropped (even on failure).
struct Tmpfs(std::path::PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_full_disk_interrupts_the_run_and_it_resumes_once_there_is_space() {
    // The project lives on a 3 MB tmpfs; IMPL-001's agent fills it.
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
        ],
        &json!([
            {"match": {"task": "IMPL-001"}, "steps": [
                // Argv, no shell: fills the disk once (`excl`: a resumed
                // attempt finds the file and writes nothing).
                {"run": ["dd", "if=/dev/zero", "of=fill.bin", "bs=1M", "count=8", "conv=excl"]},
                {"write": {"path": "out/IMPL-001.txt", "content": "ok\n"}},
                {"say": "IMPL-001 done"}]},
            writes("IMPL-002"),
        ]),
        "",
    );
    let mount = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"])
        .arg(mount.path())
        .status()
        .expect("mount runs (the tests run as root)");
    assert!(status.success(), "mounting a tmpfs needs root");
    let _guard = Tmpfs(mount.path().to_owned());
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", p.root().display()))
        .arg(mount.path())
        .status()
        .unwrap();
    assert!(copied.success());
    let session = mount
        .path()
        .join(".workflow/.team")
        .join(crate::team::SESSION);
    let o = run_bin(
        "wavecrew",
        &["run", session.to_str().unwrap()],
        mount.path(),
    );
    assert_eq!(o.code, 3, "interrupted and resumable: {}", o.render());
    // The worker hit the full disk (it exits 3, never panics printing to
    // a full log); the orchestrator started nothing more and says so.
    assert!(
        o.stderr
            .contains("interrupted: the worker of IMPL-001 stopped"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("free some space"), "{}", o.stderr);
    // Free space: a larger tmpfs (the filler stays, so a resumed attempt
    // cannot fill it again).
    let grown = std::process::Command::new("mount")
        .args(["-o", "remount,size=64m"])
        .arg(mount.path())
        .status()
        .unwrap();
    assert!(grown.success());
    let o = run_bin(
        "wavecrew",
        &["run", session.to_str().unwrap()],
        mount.path(),
    );
    assert_eq!(o.code, 0, "the resume completes: {}", o.render());
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    for id in ["IMPL-001", "IMPL-002"] {
        let t = store.get(&TaskId::new(id).unwrap()).unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "{id}");
    }
}
