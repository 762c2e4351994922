//! The cockpit's actions from the command line (`wavecrew pause|resume|
//! cancel|retry`) on a running session of gated scripted agents (each waits
//! for a file the test creates, so nothing depends on timing), their
//! refusals, and the live page in headless Chromium (`cockpit_browser`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wavecrew_core::{TaskStatus, TaskStore};
use wavecrew_testkit::{bin_path, run_bin};

use crate::team::{Project, project};

/// How long a wait for something the run will do may take before the
/// test fails (a guard against a hang, not a measure).
const PATIENCE: Duration = Duration::from_secs(120);

/// Gates: a task's agent waits until its gate file exists.
pub(crate) struct Gates {
    dir: tempfile::TempDir,
}

impl Gates {
    pub(crate) fn new() -> Gates {
        Gates {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self, task: &str) -> PathBuf {
        self.dir.path().join(task)
    }

    pub(crate) fn open(&self, task: &str) {
        std::fs::write(self.path(task), "").unwrap();
    }

    /// A scenario: say hello (with `say`), write `out/<task>.txt`, wait
    /// for the gate, say done.
    pub(crate) fn scenario(&self, task: &str, say: &str) -> Value {
        json!({"match": {"task": task}, "steps": [
            {"say": say},
            {"write": {"path": format!("out/{task}.txt"), "content": format!("{task}\n")}},
            // The gate's path is an argument of the script, never part of it.
            {"run": ["sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.05; done", "sh", self.path(task).display().to_string()]},
            {"say": format!("{task} done")}
        ]})
    }
}

/// A `wavecrew run` in the background; on drop every gate opens and the
/// run is waited for, so no process outlives the test.
pub(crate) struct BackgroundRun<'a> {
    pub(crate) child: Option<Child>,
    gates: &'a Gates,
    tasks: Vec<String>,
}

impl<'a> BackgroundRun<'a> {
    pub(crate) fn start(p: &Project, gates: &'a Gates, tasks: &[&str], extra: &[&str]) -> Self {
        let mut args = vec!["run".to_owned(), p.session().display().to_string()];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let child = Command::new(bin_path("wavecrew"))
            .args(&args)
            .current_dir(p.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        BackgroundRun {
            child: Some(child),
            gates,
            tasks: tasks.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    /// Wait for the run to end; its exit code.
    pub(crate) fn wait(&mut self) -> i32 {
        let mut child = self.child.take().expect("the run was not waited for yet");
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the run did not end");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for BackgroundRun<'_> {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            for t in &self.tasks {
                self.gates.open(t);
            }
            let deadline = Instant::now() + PATIENCE;
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Read what the run writes with `read` until `done` holds of it (within
/// PATIENCE); the state that held. Past the bound, the failure shows the
/// state last seen.
pub(crate) fn until<T: std::fmt::Debug>(
    what: &str,
    read: impl FnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    wavecrew_testkit::wait::until(what, PATIENCE, read, done)
}

/// Wait until the run has put `id` in `status`; past the bound, the
/// failure shows the state last seen.
pub(crate) fn until_state(p: &Project, id: &str, status: TaskStatus) {
    until(
        &format!("{id} {}", status.as_str()),
        || state(p, id),
        |s| *s == Some(status),
    );
}

/// The kinds of the bus's records about `task`, in order.
pub(crate) fn record_kinds(p: &Project, task: &str) -> Vec<String> {
    p.bus_log()
        .iter()
        .filter(|m| m["data"]["task_id"] == task)
        .map(|m| m["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Whether the bus has a record of `kind` about `task`.
pub(crate) fn has_record(p: &Project, kind: &str, task: &str) -> bool {
    p.bus_log()
        .iter()
        .any(|m| m["type"] == kind && m["data"]["task_id"] == task)
}

/// The processes whose command line mentions `needle`.
pub(crate) fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|s| s == "Z");
        if cmd.contains(needle) && !zombie {
            found.push(cmd);
        }
    }
    found
}

fn two_tasks(gates: &Gates) -> Project {
    project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
        ],
        &json!([
            gates.scenario("IMPL-001", "IMPL-001 starts"),
            gates.scenario("IMPL-002", "IMPL-002 starts"),
        ]),
        "",
    )
}

/// The state of `id`, once the run has put it in the store.
pub(crate) fn state(p: &Project, id: &str) -> Option<TaskStatus> {
    p.store()
        .get(&wavecrew_core::TaskId::new(id).unwrap())
        .ok()
        .map(|t| t.status)
}

fn cli(p: &Project, args: &[&str]) -> wavecrew_testkit::CliOutput {
    run_bin("wavecrew", args, p.root())
}

#[test]
fn pause_holds_dispatch_until_resume_and_running_tasks_go_on() {
    let gates = Gates::new();
    let p = two_tasks(&gates);
    let session = p.session().display().to_string();
    let mut run = BackgroundRun::start(&p, &gates, &["IMPL-001", "IMPL-002"], &[]);
    until_state(&p, "IMPL-001", TaskStatus::InProgress);
    let o = cli(&p, &["pause", &session]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(o.stdout.contains("dispatch paused"), "{}", o.render());
    let again = cli(&p, &["pause", &session, "--json"]);
    assert_eq!(again.code, 0, "{}", again.render());
    let v: Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(v["message"], "dispatch was already paused");
    // The running task goes on to the end while paused.
    gates.open("IMPL-001");
    gates.open("IMPL-002");
    until_state(&p, "IMPL-001", TaskStatus::Completed);
    // Its dependent is ready, but held.
    until(
        "IMPL-002 held",
        || record_kinds(&p, "IMPL-002"),
        |kinds| kinds.iter().any(|k| k == "dispatch_held"),
    );
    assert_eq!(p.status("IMPL-002"), TaskStatus::Pending);
    let o = cli(&p, &["resume", &session]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(o.stdout.trim(), "dispatch resumed");
    assert_eq!(run.wait(), 0);
    assert_eq!(p.status("IMPL-002"), TaskStatus::Completed);
    let kinds: Vec<String> = p
        .bus_log()
        .iter()
        .filter(|m| m["from"] == "user")
        .map(|m| m["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["dispatch_paused", "dispatch_resumed"]);
}

#[test]
fn cancel_stops_a_running_task_and_its_agent_and_retry_runs_it_again() {
    let gates = Gates::new();
    let p = two_tasks(&gates);
    let session = p.session().display().to_string();
    let gate = gates.path("IMPL-001").display().to_string();
    let mut run = BackgroundRun::start(&p, &gates, &["IMPL-001", "IMPL-002"], &[]);
    until(
        "IMPL-001's agent waiting at its gate",
        || processes_mentioning(&gate),
        |found| !found.is_empty(),
    );
    let o = cli(&p, &["cancel", &session, "IMPL-001"]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(
        o.stdout.contains("cancel of IMPL-001 requested"),
        "{}",
        o.render()
    );
    // The run ends: the task failed (cancelled), its dependent skipped.
    assert_eq!(run.wait(), 1);
    assert_eq!(p.status("IMPL-001"), TaskStatus::Failed);
    assert_eq!(p.status("IMPL-002"), TaskStatus::Skipped);
    let task = p
        .store()
        .get(&wavecrew_core::TaskId::new("IMPL-001").unwrap())
        .unwrap();
    assert_eq!(task.result.as_ref().unwrap()["cancelled"], true);
    assert!(has_record(&p, "task_cancelled", "IMPL-001"));
    // The agent and the command it ran were stopped with the worker.
    assert_eq!(processes_mentioning(&gate), Vec::<String>::new());
    // Cancel applies to a running task only.
    let o = cli(&p, &["cancel", &session, "IMPL-001"]);
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(
        o.stderr
            .contains("IMPL-001 is failed: cancel applies to a task that is in_progress"),
        "{}",
        o.render()
    );
    // Retry: the task and what was skipped because of it are pending again.
    let o = cli(&p, &["retry", &session, "IMPL-001", "--json"]);
    assert_eq!(o.code, 0, "{}", o.render());
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["reset"], json!(["IMPL-001", "IMPL-002"]));
    assert_eq!(p.status("IMPL-001"), TaskStatus::Pending);
    assert_eq!(p.status("IMPL-002"), TaskStatus::Pending);
    gates.open("IMPL-001");
    gates.open("IMPL-002");
    let again = cli(&p, &["run", &session]);
    assert_eq!(again.code, 0, "{}", again.render());
    assert_eq!(p.status("IMPL-002"), TaskStatus::Completed);
}

#[test]
fn retry_during_a_run_starts_the_task_again_in_the_same_run() {
    let gates = Gates::new();
    // IMPL-001 fails at once (its agent runs a program that is not there
    // yet); IMPL-003 keeps the run alive until the test
    // opens its gate.
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
            ("IMPL-003", &[], "developer"),
        ],
        &json!([
            {"match": {"task": "IMPL-001"}, "steps": [
                // A program that does not exist yet: the agent fails.
                {"run": [gates.path("IMPL-001-ok").display().to_string()]},
                {"write": {"path": "out/IMPL-001.txt", "content": "one\n"}}
            ]},
            gates.scenario("IMPL-002", "two"),
            gates.scenario("IMPL-003", "three"),
        ]),
        "",
    );
    let session = p.session().display().to_string();
    let mut run = BackgroundRun::start(&p, &gates, &["IMPL-002", "IMPL-003"], &[]);
    until_state(&p, "IMPL-001", TaskStatus::Failed);
    until_state(&p, "IMPL-002", TaskStatus::Skipped);
    let program = gates.path("IMPL-001-ok");
    std::fs::write(&program, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    gates.open("IMPL-002");
    let o = cli(&p, &["retry", &session, "IMPL-001"]);
    assert_eq!(o.code, 0, "{}", o.render());
    gates.open("IMPL-003");
    assert_eq!(run.wait(), 0);
    for t in ["IMPL-001", "IMPL-002", "IMPL-003"] {
        assert_eq!(p.status(t), TaskStatus::Completed, "{t}");
    }
}

#[test]
fn control_commands_refuse_what_they_cannot_do_with_exit_2() {
    let gates = Gates::new();
    let p = two_tasks(&gates);
    let session = p.session().display().to_string();
    gates.open("IMPL-001");
    gates.open("IMPL-002");
    let o = cli(&p, &["run", &session]);
    assert_eq!(o.code, 0, "{}", o.render());
    let o = cli(&p, &["retry", &session, "IMPL-001"]);
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(
        o.stderr
            .contains("IMPL-001 is completed: retry applies to a task that is failed or blocked"),
        "{}",
        o.render()
    );
    let o = cli(&p, &["cancel", &session, "IMPL-404"]);
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(
        o.stderr.contains("no task IMPL-404 in this session"),
        "{}",
        o.render()
    );
    let o = cli(&p, &["cancel", &session, "../../etc/passwd"]);
    assert_eq!(o.code, 2, "{}", o.render());
    let o = cli(&p, &["pause", "no/such/session"]);
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(o.stderr.contains("not a session folder"), "{}", o.render());
    assert!(!Path::new(&session).join("control/paused").exists());
}
