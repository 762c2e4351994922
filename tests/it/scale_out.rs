//! One session over several hosts (`wavecrew run --engine`, `wavecrew
//! worker`), on simulated hosts (`hosts`): network namespaces on a bridge
//! with a real nats-server, each host with its own hostname and private
//! disk. The coordinator runs on `h1`; workers on `h2`, `h3`, `h4`. One
//! worker host is SIGKILLed mid-run, another cut off from the network for
//! longer than a ticket's `ack_wait`, and the coordinator SIGKILLed and
//! started again: every task still completes once, lands once, and the
//! session's `messages.jsonl` holds every record once.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use wavecrew_core::{FileTaskStore, TaskStatus, TaskStore};
use wavecrew_testkit::bin_path;
use wavecrew_testkit::wait::until;

use crate::hosts::{HostProcess, Hosts};
use crate::team::{SESSION, git, role_file};

/// Tasks in the session: three chains of ten (IMPL-k waits for IMPL-(k-3)).
const TASKS: usize = 30;

fn task_id(k: usize) -> String {
    format!("IMPL-{k:03}")
}

/// A git project with a session of `TASKS` tasks whose scripted agent
/// writes `out/<task>.txt` after `sleep_ms`.
fn project(sleep_ms: u64) -> tempfile::TempDir {
    let scenarios: Vec<Value> = (1..=TASKS)
        .map(|k| {
            let t = task_id(k);
            json!({"match": {"task": t}, "steps": [
                {"sleep_ms": sleep_ms},
                {"write": {"path": format!("out/{t}.txt"), "content": format!("{t}\n")}},
                {"say": format!("{t} written")}
            ]})
        })
        .collect();
    project_with(TASKS, &scenarios)
}

/// A git project with a session of `tasks` tasks (IMPL-k waits for
/// IMPL-(k-3)) whose scripted agent plays `scenarios`.
fn project_with(tasks: usize, scenarios: &[Value]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let s = root.join(".workflow/.team").join(SESSION);
    std::fs::create_dir_all(s.join("roles")).unwrap();
    let graph: serde_json::Map<String, Value> = (1..=tasks)
        .map(|k| {
            let deps: Vec<String> = if k > 3 { vec![task_id(k - 3)] } else { vec![] };
            (task_id(k), json!({"depends_on": deps, "role": "developer"}))
        })
        .collect();
    let roles = json!([{"name": "developer", "prefix": "IMPL"}]);
    std::fs::write(
        s.join("task-analysis.json"),
        json!({"capabilities": [], "dependency_graph": graph, "roles": roles}).to_string(),
    )
    .unwrap();
    std::fs::write(
        s.join("team-session.json"),
        json!({"session_id": SESSION, "task_description": "a pipeline over hosts",
               "status": "active", "team_name": SESSION,
               "roles": [{"name": "developer", "prefix": "IMPL", "inner_loop": false,
                          "role_file": "roles/developer.md"}],
               "active_workers": [], "completed_tasks": []})
        .to_string(),
    )
    .unwrap();
    std::fs::write(s.join("roles/developer.md"), role_file("developer")).unwrap();
    std::fs::write(
        root.join("agent.json"),
        json!({"scenarios": scenarios}).to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\n\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\n\
             script = \"agent.json\"\nformat = \"codex\"\n\n[routing]\nmax_retries = 0\n\
             fallback = []\nbackoff_ms = 1\n\n[limits]\nmax_parallel = 6\n\n\
             [engine]\nack_wait_secs = 3\n",
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

pub(crate) fn wavecrew(args: &[&str]) -> Command {
    let mut c = Command::new(bin_path("wavecrew"));
    c.args(args);
    c
}

/// Start a worker on `host`.
pub(crate) fn worker(hosts: &Hosts, host: &str) -> HostProcess {
    let data = hosts.disk(host).join("wavecrew");
    let url = hosts.url();
    hosts
        .spawn(
            host,
            wavecrew(&[
                "worker",
                "--engine",
                &url,
                "--slots",
                "2",
                "--host-id",
                host,
                "--data-dir",
                data.to_str().unwrap(),
                "--exit-when-done",
            ]),
        )
        .expect("the worker starts")
}

/// Start the coordinator of `session` on `h1`.
fn start_coordinator(hosts: &Hosts, session: &Path) -> HostProcess {
    let url = hosts.url();
    hosts
        .spawn(
            "h1",
            wavecrew(&["run", session.to_str().unwrap(), "--engine", &url]),
        )
        .expect("the coordinator starts")
}

/// The session's bus records.
pub(crate) fn records(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session.join(".msg/messages.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line of messages.jsonl is JSON"))
        .collect()
}

/// How many records of `kind` each task has.
pub(crate) fn per_task(records: &[Value], kind: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for r in records.iter().filter(|r| r["type"] == kind) {
        if let Some(t) = r["data"]["task_id"].as_str() {
            *counts.entry(t.to_owned()).or_default() += 1;
        }
    }
    counts
}

/// The hosts the scale-out tests start workers on.
const WORKER_HOSTS: [&str; 3] = ["h2", "h3", "h4"];

/// The first of `candidates` working on a task now, with the task.
fn busy_host<'h>(hosts: &Hosts, candidates: &[&'h str]) -> Option<(&'h str, String)> {
    candidates
        .iter()
        .find_map(|h| busy_task(hosts, h).map(|t| (*h, t)))
}

/// A task `host` is working on now (a worktree of its cache exists).
fn busy_task(hosts: &Hosts, host: &str) -> Option<String> {
    let work = hosts.disk(host).join("wavecrew").join(SESSION).join("work");
    hosts.on_host(host, || {
        std::fs::read_dir(&work)
            .ok()?
            .flatten()
            .filter(|e| e.path().is_dir())
            .find_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let mut parts = name.split('-');
                Some(format!("{}-{}", parts.next()?, parts.next()?))
            })
    })
}

#[test]
fn a_session_survives_a_killed_host_a_partitioned_one_and_a_killed_coordinator() {
    let hosts = Hosts::start(4);
    // Each task takes longer than a ticket's ack_wait (3 s), so a host cut
    // off mid-task is still at it when its lease goes.
    let tmp = project(4000);
    let root = tmp.path();
    let session = root.join(".workflow/.team").join(SESSION);
    // Workers first: they wait for the session.
    let workers: Vec<(String, HostProcess)> = WORKER_HOSTS
        .iter()
        .map(|h| ((*h).to_owned(), worker(&hosts, h)))
        .collect();
    until(
        "every worker waiting for a session",
        Duration::from_secs(30),
        || {
            workers
                .iter()
                .map(|(h, w)| (h.clone(), w.stderr()))
                .collect::<Vec<_>>()
        },
        |seen| {
            seen.iter()
                .all(|(_, stderr)| stderr.contains("waiting for a session"))
        },
    );
    let coordinator = start_coordinator(&hosts, &session);

    // Kill h3 in the middle of a task, once the run is under way.
    let landed = || per_task(&records(&session), "task_merged");
    until(
        "three landings",
        Duration::from_secs(120),
        landed,
        |landed| landed.len() >= 3,
    );
    // While it runs, `wavecrew status` shows where.
    let _ = until(
        "status to show a host at work",
        Duration::from_secs(60),
        || {
            let o = wavecrew_testkit::run_bin(
                "wavecrew",
                &["status", session.to_str().unwrap(), "--json"],
                root,
            );
            serde_json::from_str::<Value>(&o.stdout).map(|v| v["running"].clone())
        },
        |running| {
            running.as_ref().is_ok_and(|r| {
                r.as_array().is_some_and(|r| {
                    r.iter()
                        .any(|t| ["h2", "h3", "h4"].contains(&t["host"].as_str().unwrap_or("")))
                })
            })
        },
    );
    // Which host takes which ticket is the hosts' race: the first one seen
    // at work is killed, the next of the others seen at work is cut off.
    let (dead, killed) = until(
        "a worker host to work on a task",
        Duration::from_secs(120),
        || busy_host(&hosts, &WORKER_HOSTS),
        Option::is_some,
    )
    .unwrap();
    hosts.kill_host(dead);
    // Cut another off in the middle of a task, for longer than a ticket
    // stays with a silent host: the task goes elsewhere, and the cut-off
    // host must record nothing.
    let others: Vec<&str> = WORKER_HOSTS.into_iter().filter(|h| *h != dead).collect();
    let (cut, cut_off) = until(
        "another host to work on a task",
        Duration::from_secs(120),
        || busy_host(&hosts, &others),
        Option::is_some,
    )
    .unwrap();
    hosts.partition(cut);
    std::thread::sleep(Duration::from_secs(10));
    hosts.heal(cut);
    // Kill the coordinator itself; a new one resumes from NATS and the
    // session folder.
    let so_far = landed().len();
    until(
        "one more landing",
        Duration::from_secs(120),
        landed,
        |landed| landed.len() > so_far,
    );
    coordinator.kill().unwrap();
    let _ = coordinator.wait();
    assert!(
        per_task(&records(&session), "task_merged").len() < TASKS,
        "the coordinator was killed mid-run"
    );
    let coordinator = start_coordinator(&hosts, &session);

    let logs = || {
        let mut text = format!("--- coordinator\n{}", coordinator.stderr());
        for (h, w) in &workers {
            let _ = write!(text, "\n--- {h}\n{}", w.stderr());
        }
        text
    };
    let status = coordinator
        .wait_timeout(Duration::from_secs(300))
        .expect("waiting for the coordinator")
        .unwrap_or_else(|| panic!("the coordinator did not end\n{}", logs()));
    assert!(status.success(), "{}", logs());

    // Every task completed, each attempt's end recorded once.
    let tasks = FileTaskStore::for_session(&session).list().unwrap();
    assert_eq!(tasks.len(), TASKS);
    for t in &tasks {
        assert_eq!(t.status, TaskStatus::Completed, "{}: {}", t.id, logs());
    }
    let all = records(&session);
    let expected: BTreeMap<String, usize> = (1..=TASKS).map(|k| (task_id(k), 1)).collect();
    assert_eq!(per_task(&all, "task_complete"), expected, "{}", logs());
    assert_eq!(per_task(&all, "task_merged"), expected, "{}", logs());
    // ccw's log: ids MSG-001.. in order, each record once.
    for (i, r) in all.iter().enumerate() {
        assert_eq!(r["id"], format!("MSG-{:03}", i + 1), "{r}");
        for key in ["ts", "from", "to", "type", "summary"] {
            assert!(r[key].is_string(), "{key} in {r}");
        }
    }
    let remote = all
        .iter()
        .filter(|r| r["data"]["nats_seq"].is_u64())
        .map(|r| r["data"]["nats_seq"].as_u64().unwrap())
        .collect::<Vec<_>>();
    let mut unique = remote.clone();
    unique.dedup();
    assert_eq!(remote, unique, "a mirrored record appears twice");

    // One landing per task on the integration branch, every file there.
    let branch = format!("wavecrew/{SESSION}");
    let trailers = git(
        root,
        &[
            "log",
            "--format=%(trailers:key=Wavecrew-Task,valueonly)",
            &branch,
        ],
    );
    let mut landed: Vec<&str> = trailers.lines().filter(|l| !l.trim().is_empty()).collect();
    landed.sort_unstable();
    let want: Vec<String> = (1..=TASKS)
        .map(|k| format!("{SESSION}/{}", task_id(k)))
        .collect();
    assert_eq!(landed, want);
    for k in 1..=TASKS {
        let t = task_id(k);
        assert_eq!(
            git(root, &["show", &format!("{branch}:out/{t}.txt")]),
            format!("{t}\n")
        );
    }
    // Every attempt came home with its host; h3 ran something and died.
    let hosts_seen: std::collections::BTreeSet<String> = tasks
        .iter()
        .filter_map(|t| {
            t.result.as_ref()?["remote"]["host"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(
        hosts_seen
            .iter()
            .all(|h| ["h2", "h3", "h4"].contains(&h.as_str())),
        "{hosts_seen:?}"
    );
    for t in &tasks {
        let dir = session.join("attempts").join(t.id.as_str());
        let last = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .max()
            .unwrap();
        let outcome = dir.join(last.to_string()).join("outcome.json");
        let outcome: Value = serde_json::from_slice(&std::fs::read(&outcome).unwrap()).unwrap();
        assert_eq!(
            outcome["host"],
            t.result.as_ref().unwrap()["remote"]["host"],
            "{}",
            t.id
        );
    }
    // The task the dead host was at and the one the cut-off host was at
    // were done again elsewhere: a later attempt, on another host.
    for (task, host) in [(killed, dead), (cut_off, cut)] {
        let t = tasks.iter().find(|t| t.id.as_str() == task).unwrap();
        assert!(t.attempts >= 2, "{task} ({host}): {t:?}\n{}", logs());
        assert_ne!(
            t.result.as_ref().unwrap()["remote"]["host"],
            host,
            "{task}: {}",
            logs()
        );
    }
    let cut_worker = &workers.iter().find(|(h, _)| h == cut).unwrap().1;
    assert!(
        cut_worker.stderr().contains("nothing recorded"),
        "{cut} noticed it lost its lease: {}",
        logs()
    );
    // The reports show where each attempt ran.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(session.join("reports/run-summary.json")).unwrap())
            .unwrap();
    for t in summary["tasks"].as_array().unwrap() {
        let task = tasks.iter().find(|x| x.id.as_str() == t["id"]).unwrap();
        let last = t["attempts"].as_array().unwrap().last().unwrap();
        assert_eq!(
            last["host"],
            task.result.as_ref().unwrap()["remote"]["host"],
            "{t}"
        );
    }
    let markdown = std::fs::read_to_string(session.join("reports/summary.md")).unwrap();
    assert!(markdown.contains("| demo on h"), "{markdown}");
    let status = wavecrew_testkit::run_bin(
        "wavecrew",
        &["status", session.to_str().unwrap(), "--json"],
        root,
    );
    assert_eq!(status.code, 0, "{}", status.render());
    let status: Value = serde_json::from_str(&status.stdout).unwrap();
    let by_host = status["hosts"].as_object().unwrap();
    let listed: usize = by_host.values().map(|a| a.as_array().unwrap().len()).sum();
    assert_eq!(listed, TASKS, "one attempt came home per task: {by_host:?}");
    assert!(
        by_host
            .keys()
            .all(|h| ["h2", "h3", "h4"].contains(&h.as_str())),
        "{by_host:?}"
    );
    // The surviving workers leave when the session is finished.
    for (host, w) in &workers {
        if host == dead {
            continue;
        }
        let end = w.wait_timeout(Duration::from_secs(30)).unwrap();
        assert!(end.is_some_and(|s| s.success()), "{host}: {}", w.stderr());
    }
}

#[test]
fn a_bad_or_unreachable_engine_is_a_clear_error_naming_it() {
    let tmp = project(0);
    let root = tmp.path();
    let session = root.join(".workflow/.team").join(SESSION);
    let session = session.to_str().unwrap();
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = format!("nats://127.0.0.1:{port}");
    for (args, says) in [
        (
            vec!["run", session, "--engine", unreachable.as_str()],
            unreachable.as_str(),
        ),
        (
            vec!["run", session, "--engine", "http://127.0.0.1:4222"],
            "`http` is not supported",
        ),
        (
            vec![
                "worker",
                "--engine",
                unreachable.as_str(),
                "--exit-when-done",
            ],
            unreachable.as_str(),
        ),
        (vec!["worker"], "no engine: give --engine"),
    ] {
        let o = wavecrew_testkit::run_bin("wavecrew", &args, root);
        assert_eq!(o.code, 2, "{args:?}: {}", o.render());
        assert!(o.stderr.contains(says), "{args:?}: {}", o.render());
        assert!(!o.stderr.contains("panicked"), "{}", o.render());
    }
    // Spawn-and-stop leaves no coordinator: refused, not run here.
    for command in ["start", "resume"] {
        let o = wavecrew_testkit::run_bin(
            "wavecrew-team",
            &[command, "--session", session, "--engine", &unreachable],
            root,
        );
        let says = "needs a run that stays in the foreground";
        assert_eq!(o.code, 2, "{command}: {}", o.render());
        assert!(o.stderr.contains(says), "{command}: {}", o.render());
    }
    // Nothing ran: every task is still pending.
    let tasks = FileTaskStore::for_session(&root.join(".workflow/.team").join(SESSION))
        .list()
        .unwrap();
    assert!(tasks.iter().all(|t| t.status == TaskStatus::Pending));
    // A configured URL is checked where it is written.
    let toml = root.join("wavecrew.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace("[engine]\n", "[engine]\nurl = \"http://x:4222\"\n"),
    )
    .unwrap();
    let o = wavecrew_testkit::run_bin("wavecrew", &["run", session], root);
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(
        o.stderr.contains("engine.url") && o.stderr.contains("wavecrew.toml"),
        "{}",
        o.render()
    );
}

#[test]
fn an_artifact_one_remote_task_writes_reaches_the_next() {
    // IMPL-001 writes its deliverable into the session folder (as ccw's
    // roles do, by the relative path); IMPL-004, after it on another
    // attempt's worktree, copies it into the project.
    let artifact = format!(".workflow/.team/{SESSION}/artifacts/design.md");
    let scenarios = [
        json!({"match": {"task": "IMPL-001"}, "steps": [
            {"write": {"path": artifact, "content": "the design\n"}},
            {"say": "designed"}
        ]}),
        json!({"match": {"task": "IMPL-004"}, "steps": [
            {"run": ["cp", artifact, "design-copy.md"]},
            {"say": "copied"}
        ]}),
        json!({"steps": [{"say": "nothing to do"}]}),
    ];
    let tmp = project_with(4, &scenarios);
    let root = tmp.path();
    let session = root.join(".workflow/.team").join(SESSION);
    let hosts = Hosts::start(2);
    let w = worker(&hosts, "h2");
    let coordinator = start_coordinator(&hosts, &session);
    let status = coordinator
        .wait_timeout(Duration::from_secs(180))
        .unwrap()
        .unwrap_or_else(|| panic!("{}\n{}", coordinator.stderr(), w.stderr()));
    assert!(
        status.success(),
        "{}\n--- h2\n{}",
        coordinator.stderr(),
        w.stderr()
    );
    // The artifact came home into the session folder, and the later task,
    // on the worker's own copy, read it.
    assert_eq!(
        std::fs::read_to_string(session.join("artifacts/design.md")).unwrap(),
        "the design\n"
    );
    let branch = format!("wavecrew/{SESSION}");
    assert_eq!(
        git(root, &["show", &format!("{branch}:design-copy.md")]),
        "the design\n"
    );
    // The session folder itself is never part of the work.
    let files = git(root, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(!files.contains(".workflow"), "{files}");
}
