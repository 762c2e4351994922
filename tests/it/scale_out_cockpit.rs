//! A person's hand on a session run over hosts (`wavecrew run --engine`,
//! `wavecrew worker`), on simulated hosts (`hosts`): the coordinator on
//! `h1`, a worker on `h2`. Work of a task under `review = "human"` done on
//! `h2` waits as awaiting review and lands nothing until `wavecrew approve`;
//! `wavecrew reject` sends one revision out to a host with the note in its
//! prompt; `wavecrew cancel` stops a task `h2` runs (its agent's process
//! group) and records it cancelled; `wavecrew ui` shows the running task
//! with its host; `wavecrew retry` sends a task that failed on a host out
//! again as a new attempt, during the run and at the next `wavecrew run`;
//! `wavecrew pause` holds new tickets while a task on `h2` finishes and
//! lands, and `wavecrew resume` sends them out.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use wavecrew_core::{FileTaskStore, Task, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::{bin_path, run_bin};

use crate::hosts::{HostProcess, Hosts};
use crate::scale_out::{per_task, records, wavecrew, worker};
use crate::team::git;
use wavecrew_testkit::wait::until;

const SESSION: &str = "TC-hoststeer-2026-11-25";

/// How long a step over hosts may take on a loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(180);

/// A git project with a task file of `tasks` (TOML `[[tasks]]` tables) and
/// a scripted agent playing `scenarios`, everything committed (the hosts
/// read the agent's script from their worktree).
fn project(tasks: &str, scenarios: &Value) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(
        root.join("wavecrew.tasks.toml"),
        format!("goal = \"steered over hosts\"\nsession = \"{SESSION}\"\n{tasks}"),
    )
    .unwrap();
    std::fs::write(
        root.join("agent.json"),
        json!({ "scenarios": scenarios }).to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\n\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\n\
             script = \"agent.json\"\nformat = \"codex\"\n\n[routing]\nmax_retries = 0\n\
             fallback = []\nbackoff_ms = 1\n\n[engine]\nack_wait_secs = 3\n",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(root.join(".gitignore"), ".workflow/\n").unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "the project"]);
    tmp
}

fn session_dir(root: &Path) -> std::path::PathBuf {
    root.join(".workflow/.team").join(SESSION)
}

fn task(root: &Path, id: &str) -> Option<Task> {
    FileTaskStore::for_session(&session_dir(root))
        .get(&TaskId::new(id).unwrap())
        .ok()
}

/// The branch `id` waits for review on, once it does.
fn awaiting(root: &Path, id: &str) -> Option<String> {
    let t = task(root, id)?;
    let r = t.result?;
    (t.status == TaskStatus::Blocked && r["awaiting_review"] == true)
        .then(|| r["branch"].as_str().unwrap_or_default().to_owned())
}

/// `git show <rev>` in `root`, or None when git refuses.
fn show(root: &Path, rev: &str) -> Option<String> {
    wavecrew_sys::git::git(root).args(["show", rev]).text().ok()
}

/// The coordinator of the task file's session on `h1`.
fn coordinator(hosts: &Hosts, root: &Path) -> HostProcess {
    let url = hosts.url();
    let mut c = wavecrew(&["run", "wavecrew.tasks.toml", "--engine", &url]);
    c.current_dir(root);
    hosts.spawn("h1", c).expect("the coordinator starts")
}

/// What the coordinator and the worker said, for a failure's message.
fn logs(c: &HostProcess, w: &HostProcess) -> String {
    format!(
        "--- coordinator (h1)\n{}\n--- worker (h2)\n{}",
        c.stderr(),
        w.stderr()
    )
}

#[test]
fn remote_work_under_human_review_waits_is_revised_on_a_host_when_rejected_and_lands_when_approved()
{
    let note = "Name it v2.";
    let tasks = r#"
[[tasks]]
id = "IMPL-001"
title = "write one"
review = "human"

[[tasks]]
id = "IMPL-002"
title = "copy one"
depends_on = ["IMPL-001"]
"#;
    let scenarios = json!([
        {"match": {"task": "IMPL-001", "prompt_contains": note}, "steps": [
            {"write": {"path": "out/one.txt", "content": "one v2\n"}},
            {"say": "IMPL-001 revised"}]},
        {"match": {"task": "IMPL-001"}, "steps": [
            {"write": {"path": "out/one.txt", "content": "one v1\n"}},
            {"say": "IMPL-001 written"}]},
        // Runs on a host after the approval: it sees the approved work
        // only if the coordinator published the new tip.
        {"match": {"task": "IMPL-002"}, "steps": [
            {"run": ["cp", "out/one.txt", "out/two.txt"]},
            {"say": "IMPL-002 copied"}]},
    ]);
    let tmp = project(tasks, &scenarios);
    let root = tmp.path();
    let session = session_dir(root);
    let session_arg = session.display().to_string();
    let hosts = Hosts::start(2);
    let w = worker(&hosts, "h2");
    let c = coordinator(&hosts, root);
    let integration = format!("wavecrew/{SESSION}");

    let (first, _) = until(
        "IMPL-001 awaiting review (or the coordinator's end)",
        PATIENCE,
        || (awaiting(root, "IMPL-001"), c.try_wait().ok().flatten()),
        |(first, ended)| first.is_some() || ended.is_some(),
    );
    let first = first.unwrap_or_else(|| panic!("{}", logs(&c, &w)));
    // Done on h2, brought home, not landed: it waits on its branch.
    let t = task(root, "IMPL-001").unwrap();
    assert_eq!(t.result.as_ref().unwrap()["remote"]["host"], "h2");
    assert_eq!(
        show(root, &format!("{integration}:out/one.txt")),
        None,
        "landed without approval\n{}",
        logs(&c, &w)
    );
    assert_eq!(
        show(root, &format!("{first}:out/one.txt")).as_deref(),
        Some("one v1")
    );
    assert_eq!(task(root, "IMPL-002").unwrap().status, TaskStatus::Pending);
    assert!(per_task(&records(&session), "task_merged").is_empty());
    // `wavecrew status` says what it waits for.
    let o = run_bin("wavecrew", &["status", &session_arg], root);
    assert!(
        o.stdout.contains("IMPL-001 [awaiting_review]"),
        "{}",
        o.render()
    );

    // Rejected: one revision goes out to a host, its prompt carrying the
    // note and the line comment.
    let o = run_bin(
        "wavecrew",
        &[
            "reject",
            &session_arg,
            "IMPL-001",
            "--note",
            note,
            "--comment",
            "out/one.txt:1:say v2 here",
        ],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let (second, _) = until(
        "the revision awaiting review (or the coordinator's end)",
        PATIENCE,
        || (awaiting(root, "IMPL-001"), c.try_wait().ok().flatten()),
        |(b, ended)| b.as_ref().is_some_and(|b| *b != first) || ended.is_some(),
    );
    let second = second
        .filter(|b| *b != first)
        .unwrap_or_else(|| panic!("no revision awaits review\n{}", logs(&c, &w)));
    assert_eq!(
        show(root, &format!("{second}:out/one.txt")).as_deref(),
        Some("one v2"),
        "{}",
        logs(&c, &w)
    );
    let revised = task(root, "IMPL-001").unwrap();
    assert_eq!(revised.attempts, 2);
    assert_eq!(revised.result.as_ref().unwrap()["remote"]["host"], "h2");
    let prompt = std::fs::read_to_string(session.join("attempts/IMPL-001/2/prompt.md"))
        .unwrap_or_else(|e| panic!("the revision's prompt came home: {e}\n{}", logs(&c, &w)));
    assert!(prompt.contains(note), "{prompt}");
    assert!(
        prompt.contains("`out/one.txt` line 1: say v2 here"),
        "{prompt}"
    );
    assert_eq!(
        show(root, &format!("{integration}:out/one.txt")),
        None,
        "the revision landed without approval"
    );

    // Approved: it lands (once), and the task after it builds on it.
    let o = run_bin("wavecrew", &["approve", &session_arg, "IMPL-001"], root);
    assert_eq!(o.code, 0, "{}", o.render());
    let end = c
        .wait_timeout(PATIENCE)
        .unwrap()
        .unwrap_or_else(|| panic!("the coordinator did not end\n{}", logs(&c, &w)));
    assert!(end.success(), "{}", logs(&c, &w));
    assert_eq!(
        show(root, &format!("{integration}:out/one.txt")).as_deref(),
        Some("one v2")
    );
    assert_eq!(
        show(root, &format!("{integration}:out/two.txt")).as_deref(),
        Some("one v2"),
        "IMPL-002 ran on the approved tip\n{}",
        logs(&c, &w)
    );
    for id in ["IMPL-001", "IMPL-002"] {
        assert_eq!(
            task(root, id).unwrap().status,
            TaskStatus::Completed,
            "{id}"
        );
    }
    assert_eq!(
        task(root, "IMPL-001").unwrap().result.unwrap()["approved"],
        true
    );
    let merged = per_task(&records(&session), "task_merged");
    assert_eq!(merged.get("IMPL-001"), Some(&1), "{merged:?}");
    assert_eq!(merged.get("IMPL-002"), Some(&1), "{merged:?}");
}

/// A `wavecrew ui` of a session, in the test's own network namespace
/// (it reads the session folder), killed on drop.
struct Ui {
    child: Child,
    addr: String,
    token: String,
}

impl Ui {
    fn start(root: &Path, session: &Path) -> Ui {
        let mut child = Command::new(bin_path("wavecrew"))
            .args(["ui", session.to_str().unwrap()])
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim();
        let rest = url
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("a URL: {url}"));
        let (addr, query) = rest.split_once("/?token=").unwrap();
        Ui {
            child,
            addr: addr.to_owned(),
            token: query.to_owned(),
        }
    }

    /// GET `path` with the token: the status and the JSON body.
    fn get(&self, path: &str) -> (u16, Value) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        write!(
            s,
            "GET {path}?token={} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.token, self.addr
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let code = out[9..12].parse().unwrap();
        let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (code, serde_json::from_str(body).unwrap_or(Value::Null))
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The folder of `host`'s worker (its `--data-dir`), where its attempts'
/// worktrees are: what tells this test's agents from those of the tests
/// beside it. (Not the host's network namespace: each agent has one of its
/// own, inside its box.)
fn host_data(hosts: &Hosts, host: &str) -> PathBuf {
    hosts.disk(host).join("wavecrew")
}

/// The scripted agents working for `task` now on the host whose worker
/// keeps its data in `data` (their working folder is an attempt's worktree
/// there); an agent left without its worker still counts.
fn agents_of(task: &str, data: &Path) -> Vec<u32> {
    let needle = format!("/work/{task}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains("wavecrew-scripted-agent")
                && cwd.starts_with(data)
                && cwd.to_string_lossy().contains(&needle)
        })
        .collect()
}

#[test]
fn a_task_another_host_runs_is_shown_with_its_host_and_cancelled_there() {
    let tasks = r#"
[[tasks]]
id = "IMPL-001"
title = "sleep long"

[[tasks]]
id = "IMPL-002"
title = "quick"
"#;
    let scenarios = json!([
        {"match": {"task": "IMPL-001"}, "steps": [
            {"sleep_ms": 600_000},
            {"write": {"path": "out/one.txt", "content": "one\n"}}]},
        {"match": {"task": "IMPL-002"}, "steps": [
            {"write": {"path": "out/two.txt", "content": "two\n"}},
            {"say": "IMPL-002 written"}]},
    ]);
    let tmp = project(tasks, &scenarios);
    let root = tmp.path();
    let session = session_dir(root);
    let session_arg = session.display().to_string();
    let hosts = Hosts::start(2);
    let w = worker(&hosts, "h2");
    let net = host_data(&hosts, "h2");
    let c = coordinator(&hosts, root);

    until(
        "IMPL-001 running on h2, its agent there",
        PATIENCE,
        || {
            let t = task(root, "IMPL-001");
            let lease = t
                .as_ref()
                .and_then(|t| t.lease.as_ref().map(|l| l.host.clone()));
            (t.map(|t| t.status), lease, agents_of("IMPL-001", &net))
        },
        |(status, host, agents)| {
            *status == Some(TaskStatus::InProgress)
                && host.as_deref() == Some("h2")
                && !agents.is_empty()
        },
    );
    // h2's records reach the session's bus while its attempt runs (the
    // agent sleeps ten minutes): the start of the attempt is there long
    // before its end, stamped when it landed, with when h2 wrote it.
    let started = |all: &[Value]| {
        all.iter()
            .find(|r| {
                r["data"]["host"] == "h2"
                    && r["data"]["task_id"] == "IMPL-001"
                    && r["summary"]
                        .as_str()
                        .is_some_and(|s| s.contains("IMPL-001 attempt 1 via demo"))
            })
            .cloned()
    };
    let record = until(
        "h2's record of IMPL-001's attempt on the session's bus",
        Duration::from_secs(60),
        || records(&session),
        |all| started(all).is_some(),
    );
    let record = started(&record).unwrap();
    assert!(
        agents_of("IMPL-001", &net).len() == 1
            && task(root, "IMPL-001").is_some_and(|t| t.status == TaskStatus::InProgress),
        "the record came with the attempt's end, not while it ran: {record}\n{}",
        logs(&c, &w)
    );
    let at = |v: &Value| v.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
    if let (Some(written), Some(landed)) = (at(&record["data"]["host_ts"]), at(&record["ts"])) {
        eprintln!(
            "h2's record landed {} ms after h2 wrote it",
            landed.duration_since(written).as_millis()
        );
    }
    // The page shows where it runs.
    let ui = Ui::start(root, &session);
    let (code, view) = ui.get("/api/session");
    assert_eq!(code, 200, "{view}");
    let running = view["running"].as_array().cloned().unwrap_or_default();
    assert!(
        running
            .iter()
            .any(|r| r["id"] == "IMPL-001" && r["host"] == "h2" && r["remote"] == true),
        "{view}"
    );
    let (code, detail) = ui.get("/api/task/IMPL-001");
    assert_eq!(code, 200, "{detail}");
    assert_eq!(detail["task"]["lease"]["host"], "h2", "{detail}");

    // Cancelled from this host: the request travels to h2, whose worker
    // stops the agent and records the attempt cancelled.
    let o = run_bin(
        "wavecrew",
        &["cancel", &session_arg, "IMPL-001", "--json"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let applied: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(applied["action"], "cancel", "{applied}");
    assert_eq!(applied["task"], "IMPL-001", "{applied}");
    let t = until(
        "IMPL-001 recorded cancelled",
        Duration::from_secs(60),
        || task(root, "IMPL-001"),
        |t| t.as_ref().is_some_and(|t| t.status == TaskStatus::Failed),
    )
    .unwrap();
    assert_eq!(t.status, TaskStatus::Failed, "{t:?}\n{}", logs(&c, &w));
    let result = t.result.unwrap();
    assert_eq!(result["cancelled"], true, "{result}");
    assert_eq!(result["error"], "cancelled by a person", "{result}");
    assert_eq!(result["remote"]["host"], "h2", "{result}");
    until(
        "the agent on h2 to stop",
        Duration::from_secs(30),
        || agents_of("IMPL-001", &net),
        Vec::is_empty,
    );
    // The cancel's record lands through the bus mirror: waited for.
    let cancelled = until(
        "IMPL-001's task_cancelled record",
        Duration::from_secs(60),
        || {
            records(&session)
                .into_iter()
                .filter(|r| r["type"] == "task_cancelled" && r["data"]["task_id"] == "IMPL-001")
                .collect::<Vec<Value>>()
        },
        |found| !found.is_empty(),
    );
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["data"]["host"], "h2");
    assert!(
        !wavecrew_core::Control::new(&session).cancel_requested(&TaskId::new("IMPL-001").unwrap())
    );
    // The attempt came home: the page shows it with its host.
    let (_, detail) = ui.get("/api/task/IMPL-001");
    let attempts = detail["attempts"].as_array().cloned().unwrap_or_default();
    assert!(attempts.iter().any(|a| a["prompt"].is_string()), "{detail}");
    let (_, view) = ui.get("/api/session");
    assert!(
        view["running"]
            .as_array()
            .is_some_and(|r| r.iter().all(|x| x["id"] != "IMPL-001")),
        "{view}"
    );

    // The rest of the session goes on; the run ends failed (a cancelled
    // task is a failure, as on one machine).
    let end = c
        .wait_timeout(PATIENCE)
        .unwrap()
        .unwrap_or_else(|| panic!("the coordinator did not end\n{}", logs(&c, &w)));
    assert_eq!(end.code(), Some(1), "{}", logs(&c, &w));
    assert_eq!(
        task(root, "IMPL-002").unwrap().status,
        TaskStatus::Completed,
        "{}",
        logs(&c, &w)
    );
}

/// How many records of `kind` the session's bus holds for `task`.
fn count(session: &Path, kind: &str, task: &str) -> usize {
    per_task(&records(session), kind)
        .get(task)
        .copied()
        .unwrap_or(0)
}

/// Wait until `id` is in `status` in the store, or the coordinator `c`
/// ended (the caller's asserts then say how, with its logs).
fn until_status_or_end(root: &Path, c: &HostProcess, id: &str, status: TaskStatus) {
    until(
        &format!("{id} {} (or the coordinator's end)", status.as_str()),
        PATIENCE,
        || {
            (
                task(root, id).map(|t| t.status),
                c.try_wait().ok().flatten(),
            )
        },
        |(s, ended)| *s == Some(status) || ended.is_some(),
    );
}

/// Wait for `c` to end; its exit code (the logs when it does not end).
fn exit_code(c: &HostProcess, w: &HostProcess) -> Option<i32> {
    c.wait_timeout(PATIENCE)
        .unwrap()
        .unwrap_or_else(|| panic!("the coordinator did not end\n{}", logs(c, w)))
        .code()
}

#[test]
fn a_task_that_failed_on_a_host_is_retried_as_a_new_attempt_during_the_run_and_after_it() {
    // Files the hosts see (the simulated hosts share this filesystem): a
    // program IMPL-001's agent runs, missing until the test writes it (the
    // agent fails until then), and the gate IMPL-003 waits for.
    let gates = tempfile::tempdir().unwrap();
    let program = gates.path().join("IMPL-001-ok");
    let gate = gates.path().join("IMPL-003");
    let tasks = r#"
[[tasks]]
id = "IMPL-001"
title = "write one"

[[tasks]]
id = "IMPL-002"
title = "copy one"
depends_on = ["IMPL-001"]

[[tasks]]
id = "IMPL-003"
title = "wait for the test"
"#;
    let scenarios = json!([
        {"match": {"task": "IMPL-001"}, "steps": [
            {"run": [program.display().to_string()]},
            {"write": {"path": "out/one.txt", "content": "one\n"}},
            {"say": "IMPL-001 written"}]},
        {"match": {"task": "IMPL-002"}, "steps": [
            {"run": ["cp", "out/one.txt", "out/two.txt"]},
            {"say": "IMPL-002 copied"}]},
        // The gate's path is an argument of the script, never part of it.
        {"match": {"task": "IMPL-003"}, "steps": [
            {"run": ["sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.05; done", "sh",
                     gate.display().to_string()]},
            {"write": {"path": "out/three.txt", "content": "three\n"}},
            {"say": "IMPL-003 written"}]},
    ]);
    let tmp = project(tasks, &scenarios);
    let root = tmp.path();
    let session = session_dir(root);
    let session_arg = session.display().to_string();
    let integration = format!("wavecrew/{SESSION}");
    // Dropped first: every process on the hosts is killed, on a failure too.
    let hosts = Hosts::start(2);
    let w = worker(&hosts, "h2");
    let c = coordinator(&hosts, root);
    let retry = || {
        let o = run_bin(
            "wavecrew",
            &["retry", &session_arg, "IMPL-001", "--json"],
            root,
        );
        assert_eq!(o.code, 0, "{}", o.render());
        let applied: Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(
            applied["reset"],
            json!(["IMPL-001", "IMPL-002"]),
            "{applied}"
        );
    };

    // Attempt 1 fails on h2; what depends on it is skipped.
    until_status_or_end(root, &c, "IMPL-002", TaskStatus::Skipped);
    let t = task(root, "IMPL-001").unwrap();
    assert_eq!(t.status, TaskStatus::Failed, "{t:?}\n{}", logs(&c, &w));
    assert_eq!(t.attempts, 1);
    assert_eq!(t.result.as_ref().unwrap()["remote"]["host"], "h2");

    // Retried while the run goes on (IMPL-003 keeps it): the run takes
    // another round and sends IMPL-001 out as attempt 2, which fails
    // again on h2 (its program is still missing), not the old end
    // brought home again.
    retry();
    assert_eq!(task(root, "IMPL-001").unwrap().status, TaskStatus::Pending);
    assert_eq!(task(root, "IMPL-002").unwrap().status, TaskStatus::Pending);
    std::fs::write(&gate, "").unwrap();
    assert_eq!(exit_code(&c, &w), Some(1), "{}", logs(&c, &w));
    let t = task(root, "IMPL-001").unwrap();
    assert_eq!(t.status, TaskStatus::Failed, "{t:?}\n{}", logs(&c, &w));
    assert_eq!(t.attempts, 2, "{t:?}\n{}", logs(&c, &w));
    let result = t.result.unwrap();
    assert_eq!(result["remote"]["attempt"], 2, "{result}");
    assert_eq!(result["remote"]["host"], "h2", "{result}");
    assert!(session.join("attempts/IMPL-001/2").is_dir());
    assert_eq!(task(root, "IMPL-002").unwrap().status, TaskStatus::Skipped);
    assert_eq!(
        task(root, "IMPL-003").unwrap().status,
        TaskStatus::Completed
    );
    // The worker leaves with the finished session (stopped, if not yet).
    if w.wait_timeout(Duration::from_secs(30)).unwrap().is_none() {
        let _ = w.kill();
        let _ = w.wait();
    }

    // Retried while no coordinator runs: the next `wavecrew run` sends it
    // out as attempt 3, which now succeeds on a host and lands; IMPL-002
    // runs after it on the landed work.
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::write(&program, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&program, mode).unwrap();
    retry();
    let w = worker(&hosts, "h2");
    let c = coordinator(&hosts, root);
    assert_eq!(exit_code(&c, &w), Some(0), "{}", logs(&c, &w));
    let t = task(root, "IMPL-001").unwrap();
    assert_eq!(t.status, TaskStatus::Completed, "{t:?}\n{}", logs(&c, &w));
    assert_eq!(t.attempts, 3, "{t:?}");
    let result = t.result.unwrap();
    assert_eq!(result["remote"]["attempt"], 3, "{result}");
    assert_eq!(result["remote"]["host"], "h2", "{result}");
    assert_eq!(
        task(root, "IMPL-002").unwrap().status,
        TaskStatus::Completed,
        "{}",
        logs(&c, &w)
    );
    assert_eq!(
        show(root, &format!("{integration}:out/one.txt")).as_deref(),
        Some("one")
    );
    assert_eq!(
        show(root, &format!("{integration}:out/two.txt")).as_deref(),
        Some("one")
    );
    // Each attempt came home once, into a folder of its own.
    for n in 1..=3 {
        assert!(
            session.join(format!("attempts/IMPL-001/{n}")).is_dir(),
            "attempt {n}"
        );
    }
    // The bus has both retries, and each task landed once.
    assert_eq!(count(&session, "task_retry", "IMPL-001"), 2);
    assert_eq!(count(&session, "task_merged", "IMPL-001"), 1);
    assert_eq!(count(&session, "task_merged", "IMPL-002"), 1);
    assert_eq!(count(&session, "task_merged", "IMPL-003"), 1);
}

#[test]
fn a_pause_holds_new_tickets_while_tasks_on_a_host_finish_and_a_resume_sends_them_out() {
    // The gate IMPL-001's agent on h2 waits for (the simulated hosts share
    // this filesystem).
    let gates = tempfile::tempdir().unwrap();
    let gate = gates.path().join("IMPL-001");
    let tasks = r#"
[[tasks]]
id = "IMPL-001"
title = "wait for the test"

[[tasks]]
id = "IMPL-002"
title = "copy one"
depends_on = ["IMPL-001"]

[[tasks]]
id = "IMPL-003"
title = "copy one again"
depends_on = ["IMPL-001"]
"#;
    let scenarios = json!([
        // The gate's path is an argument of the script, never part of it.
        {"match": {"task": "IMPL-001"}, "steps": [
            {"run": ["sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.05; done", "sh",
                     gate.display().to_string()]},
            {"write": {"path": "out/one.txt", "content": "one\n"}},
            {"say": "IMPL-001 written"}]},
        {"match": {"task": "IMPL-002"}, "steps": [
            {"run": ["cp", "out/one.txt", "out/two.txt"]},
            {"say": "IMPL-002 copied"}]},
        {"match": {"task": "IMPL-003"}, "steps": [
            {"run": ["cp", "out/one.txt", "out/three.txt"]},
            {"say": "IMPL-003 copied"}]},
    ]);
    let tmp = project(tasks, &scenarios);
    let root = tmp.path();
    let session = session_dir(root);
    let session_arg = session.display().to_string();
    let integration = format!("wavecrew/{SESSION}");
    // Dropped first: every process on the hosts is killed, on a failure too.
    let hosts = Hosts::start(2);
    let w = worker(&hosts, "h2");
    let net = host_data(&hosts, "h2");
    let c = coordinator(&hosts, root);
    let held = ["IMPL-002", "IMPL-003"];

    until(
        "IMPL-001 running on h2 (or the coordinator's end)",
        PATIENCE,
        || {
            let t = task(root, "IMPL-001");
            let lease = t
                .as_ref()
                .and_then(|t| t.lease.as_ref().map(|l| l.host.clone()));
            (t.map(|t| t.status), lease, c.try_wait().ok().flatten())
        },
        |(s, host, ended)| {
            (*s == Some(TaskStatus::InProgress) && host.as_deref() == Some("h2")) || ended.is_some()
        },
    );
    let o = run_bin("wavecrew", &["pause", &session_arg], root);
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(o.stdout.contains("dispatch paused"), "{}", o.render());
    // The page says so.
    let ui = Ui::start(root, &session);
    let (code, view) = ui.get("/api/session");
    assert_eq!(code, 200, "{view}");
    assert_eq!(view["paused"], true, "{view}");

    // The task out already goes on on h2, comes home and lands.
    std::fs::write(&gate, "").unwrap();
    until_status_or_end(root, &c, "IMPL-001", TaskStatus::Completed);
    let t = task(root, "IMPL-001").unwrap();
    assert_eq!(t.status, TaskStatus::Completed, "{t:?}\n{}", logs(&c, &w));
    assert_eq!(t.result.as_ref().unwrap()["remote"]["host"], "h2");
    assert_eq!(
        show(root, &format!("{integration}:out/one.txt")).as_deref(),
        Some("one")
    );
    // Its dependents are ready, but no ticket of theirs goes out: for a
    // while, neither is taken by h2 nor has an attempt.
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        for id in held {
            let t = task(root, id).unwrap();
            assert_eq!(
                t.status,
                TaskStatus::Pending,
                "{id} went out while paused: {t:?}\n{}",
                logs(&c, &w)
            );
            assert_eq!(t.attempts, 0, "{t:?}");
            assert!(
                agents_of(id, &net).is_empty(),
                "{id} runs on a host while paused"
            );
            assert!(!session.join("attempts").join(id).exists(), "{id}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The coordinator said why they wait.
    for id in held {
        until(
            &format!("{id} held once"),
            Duration::from_secs(30),
            || count(&session, "dispatch_held", id),
            |n| *n == 1,
        );
        // Held before the run counts it as a worker: no ticket, no
        // `task_unblocked` record.
        assert_eq!(count(&session, "task_unblocked", id), 0, "{id}");
    }
    assert!(c.try_wait().unwrap().is_none(), "{}", logs(&c, &w));

    // Resumed: their tickets go out, the run completes.
    let o = run_bin("wavecrew", &["resume", &session_arg], root);
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(o.stdout.trim(), "dispatch resumed");
    let (_, view) = ui.get("/api/session");
    assert_eq!(view["paused"], false, "{view}");
    assert_eq!(exit_code(&c, &w), Some(0), "{}", logs(&c, &w));
    for id in held {
        let t = task(root, id).unwrap();
        assert_eq!(t.status, TaskStatus::Completed, "{t:?}\n{}", logs(&c, &w));
        assert_eq!(t.attempts, 1, "{t:?}");
        assert_eq!(t.result.as_ref().unwrap()["remote"]["host"], "h2");
        assert_eq!(count(&session, "task_merged", id), 1, "{id}");
        assert_eq!(count(&session, "dispatch_held", id), 1, "{id}");
    }
    for file in ["two", "three"] {
        assert_eq!(
            show(root, &format!("{integration}:out/{file}.txt")).as_deref(),
            Some("one"),
            "{file}"
        );
    }
    let kinds: Vec<String> = records(&session)
        .iter()
        .filter(|m| m["from"] == "user")
        .map(|m| m["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(kinds, ["dispatch_paused", "dispatch_resumed"]);
}
