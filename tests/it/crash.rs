//! Crash and resume: `wavecrew run` on a 30-task session is SIGKILLed with
//! all its workers at random moments, ten times, and resumed each time;
//! separately, single workers are SIGKILLed while the orchestrator runs.
//! Every task ends `completed` exactly once, no completion record is
//! written twice, and the bus parses line by line.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use wavecrew_core::{TaskStatus, TaskStore};
use wavecrew_testkit::bin_path;

use crate::team::{Project, project};

/// A small deterministic generator (no seed from the clock: a failure can
/// be replayed).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// 30 tasks: each depends on up to two earlier ones; each takes 50–250 ms.
fn thirty(seed: u64) -> Project {
    random_session(seed, 30, "")
}

/// `n` tasks: each depends on up to two earlier ones; each takes 50–250 ms
/// and writes `out/<id>.txt`.
pub(crate) fn random_session(seed: u64, n: usize, toml_extra: &str) -> Project {
    let mut rng = Lcg(seed);
    let ids: Vec<String> = (1..=n).map(|n| format!("IMPL-{n:03}")).collect();
    let mut deps: Vec<Vec<String>> = Vec::new();
    for i in 0..ids.len() {
        let mut d = Vec::new();
        for _ in 0..2 {
            if i > 0 && rng.next(3) > 0 {
                let j = usize::try_from(rng.next(i as u64)).unwrap();
                if !d.contains(&ids[j]) {
                    d.push(ids[j].clone());
                }
            }
        }
        deps.push(d);
    }
    let scenarios: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"match": {"task": id}, "steps": [
                {"sleep_ms": 50 + rng.next(200)},
                {"write": {"path": format!("out/{id}.txt"), "content": format!("{id}\n")}},
                {"say": format!("{id} done")}
            ]})
        })
        .collect();
    let dep_refs: Vec<Vec<&str>> = deps
        .iter()
        .map(|d| d.iter().map(String::as_str).collect())
        .collect();
    let tasks: Vec<(&str, &[&str], &str)> = ids
        .iter()
        .zip(&dep_refs)
        .map(|(id, d)| (id.as_str(), d.as_slice(), "developer"))
        .collect();
    project(&tasks, &Value::Array(scenarios), toml_extra)
}

pub(crate) fn spawn_run(p: &Project, crash_retries: &str) -> std::process::Child {
    let mut cmd = Command::new(bin_path("wavecrew"));
    cmd.args([
        "run",
        p.session().to_str().unwrap(),
        "--max-parallel",
        "3",
        "--crash-retries",
        crash_retries,
    ])
    .current_dir(p.root())
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .process_group(0);
    cmd.spawn().unwrap()
}

pub(crate) fn pid_of(child: &std::process::Child) -> Pid {
    Pid::from_raw(i32::try_from(child.id()).unwrap())
}

/// Every task completed, each with exactly one completion record.
fn assert_exactly_once(p: &Project) {
    let tasks = p.store().list().unwrap();
    assert_eq!(tasks.len(), 30);
    for t in &tasks {
        assert_eq!(t.status, TaskStatus::Completed, "{}", t.id.as_str());
    }
    let mut completions: BTreeMap<String, usize> = BTreeMap::new();
    for m in p.bus_log() {
        if m["type"] == "task_complete" {
            *completions
                .entry(m["data"]["task_id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(completions.len(), 30, "{completions:?}");
    assert!(
        completions.values().all(|n| *n == 1),
        "a completion was recorded twice: {completions:?}"
    );
    let wisdom = std::fs::read_to_string(p.session().join("wisdom/executor.md")).unwrap();
    assert_eq!(
        wisdom.lines().count(),
        30,
        "a summary line was written twice:\n{wisdom}"
    );
}

#[test]
fn the_orchestrator_killed_ten_times_with_its_workers_resumes_to_the_end() {
    let p = thirty(7);
    let mut rng = Lcg(42);
    for _ in 0..10 {
        let child = spawn_run(&p, "2");
        std::thread::sleep(Duration::from_millis(150 + rng.next(700)));
        let _ = killpg(pid_of(&child), Signal::SIGKILL);
        let mut child = child;
        let _ = child.wait();
        // Workers and agents are in their own groups: kill what is left of
        // this run too, as a power cut would.
        for t in p.store().list().unwrap() {
            if let Some(l) = &t.lease {
                let _ = kill(
                    Pid::from_raw(i32::try_from(l.pid).unwrap()),
                    Signal::SIGKILL,
                );
            }
        }
        // Every file still parses.
        for t in p.store().list().unwrap() {
            assert!(!t.id.as_str().is_empty());
        }
        let _ = p.bus_log();
        let _: Value =
            serde_json::from_slice(&std::fs::read(p.session().join("team-session.json")).unwrap())
                .unwrap();
    }
    let mut last = spawn_run(&p, "2");
    let status = last.wait().unwrap();
    assert!(status.success(), "the final run did not complete");
    assert_exactly_once(&p);
    let resets = p
        .bus_log()
        .iter()
        .filter(|m| m["summary"].as_str().is_some_and(|s| s.contains(" reset")))
        .count();
    assert!(
        resets > 0,
        "no kill interrupted a task: the test proved nothing"
    );
}

#[test]
fn killed_workers_are_retried_and_nothing_runs_twice() {
    let p = thirty(11);
    let mut orchestrator = spawn_run(&p, "5");
    let mut killed = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while killed < 3 && Instant::now() < deadline {
        let held: Vec<u32> = p
            .store()
            .list()
            .unwrap()
            .iter()
            .filter(|t| t.status == TaskStatus::InProgress)
            .filter_map(|t| t.lease.as_ref().map(|l| l.pid))
            .collect();
        if let Some(pid) = held.first() {
            if kill(Pid::from_raw(i32::try_from(*pid).unwrap()), Signal::SIGKILL).is_ok() {
                killed += 1;
            }
            std::thread::sleep(Duration::from_millis(400));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(killed, 3, "three workers were killed");
    let status = orchestrator.wait().unwrap();
    assert!(
        status.success(),
        "the run did not recover from killed workers"
    );
    assert_exactly_once(&p);
}
