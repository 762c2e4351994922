//! `wavecrew run` / `wavecrew-team` (seed 001) end to end with the scripted
//! agent: the demo, failures with `continue` and `stop`, a missing backend,
//! a cycle, every session-validation error, a session in team-coordinate's
//! real shape, and spawn-and-stop.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use wavecrew_core::{FileTaskStore, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::{CliOutput, bin_path, insta_settings, run_bin};

pub(crate) const SESSION: &str = "TC-team-test-2026-11-23";

/// A project with a session of `tasks` (`(id, deps, role)`), the roles'
/// files, and a `wavecrew.toml` whose `agent` is the scripted agent
/// playing `scenarios`.
pub(crate) struct Project {
    pub(crate) tmp: wavecrew_testkit::git::TempProject,
}

impl Project {
    pub(crate) fn root(&self) -> &Path {
        self.tmp.path()
    }

    pub(crate) fn session(&self) -> PathBuf {
        self.root().join(".workflow/.team").join(SESSION)
    }

    pub(crate) fn store(&self) -> FileTaskStore {
        FileTaskStore::for_session(&self.session())
    }

    pub(crate) fn status(&self, id: &str) -> TaskStatus {
        self.store().get(&TaskId::new(id).unwrap()).unwrap().status
    }

    pub(crate) fn bus_log(&self) -> Vec<Value> {
        let text =
            std::fs::read_to_string(self.session().join(".msg/messages.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).expect("every bus line parses"))
            .collect()
    }
}

/// `git <args>` in `dir` (argv, with a test identity), its stdout; a
/// failure fails the test with git's words.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    use wavecrew_testkit::git::{TEST_EMAIL, TEST_NAME};
    let out = wavecrew_sys::git::git(dir)
        .identity(TEST_NAME, TEST_EMAIL)
        .args(args)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn role_file(name: &str) -> String {
    format!(
        "# Role: {name}\n\n## Identity\nThe {name}.\n\n## Boundaries\nThe project only.\n\n## Execution\nDo the task.\n"
    )
}

pub(crate) fn project(
    tasks: &[(&str, &[&str], &str)],
    scenarios: &Value,
    toml_extra: &str,
) -> Project {
    let tmp = wavecrew_testkit::git::TempProject::new();
    let s = tmp.path().join(".workflow/.team").join(SESSION);
    std::fs::create_dir_all(s.join("roles")).unwrap();
    let mut roles: Vec<(String, String)> = Vec::new();
    for (id, _, role) in tasks {
        let prefix = id.split('-').next().unwrap().to_owned();
        if !roles.iter().any(|(r, _)| r == role) {
            roles.push(((*role).to_owned(), prefix));
        }
    }
    let graph: serde_json::Map<String, Value> = tasks
        .iter()
        .map(|(id, deps, role)| ((*id).to_owned(), json!({"depends_on": deps, "role": role})))
        .collect();
    std::fs::write(
        s.join("task-analysis.json"),
        json!({"capabilities": [], "dependency_graph": graph,
               "roles": roles.iter().map(|(n, p)| json!({"name": n, "prefix": p})).collect::<Vec<_>>()})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        s.join("team-session.json"),
        json!({"session_id": SESSION, "task_description": "a test pipeline", "status": "active",
               "team_name": SESSION,
               "roles": roles.iter().map(|(n, p)| json!({"name": n, "prefix": p, "inner_loop": false,
                                                        "role_file": format!("roles/{n}.md")})).collect::<Vec<_>>(),
               "active_workers": [], "completed_tasks": []})
        .to_string(),
    )
    .unwrap();
    for (n, _) in &roles {
        std::fs::write(s.join(format!("roles/{n}.md")), role_file(n)).unwrap();
    }
    std::fs::write(
        tmp.path().join("agent.json"),
        json!({"scenarios": scenarios}).to_string(),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\n\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"agent.json\"\nformat = \"codex\"\n\n[routing]\nmax_retries = 0\nfallback = []\nbackoff_ms = 1\n{toml_extra}",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    Project { tmp }
}

pub(crate) fn writes(task: &str) -> Value {
    json!({"match": {"task": task}, "steps": [
        {"write": {"path": format!("out/{task}.txt"), "content": format!("{task}\n")}},
        {"say": format!("{task} written")}
    ]})
}

fn run(p: &Project, extra: &[&str]) -> CliOutput {
    let session = p.session();
    let mut args = vec!["run", session.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_bin("wavecrew", &args, p.root())
}

/// A rendered output without the running totals (`progress d/t done`),
/// whose count depends on when the orchestrator happened to poll.
fn without_totals(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains("] progress "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Bus records as `from type summary`, for snapshots.
fn bus_lines(p: &Project) -> String {
    p.bus_log()
        .iter()
        .map(|m| {
            format!(
                "{} {} {}",
                m["from"].as_str().unwrap_or(""),
                m["type"].as_str().unwrap_or(""),
                m["summary"].as_str().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_demo_runs_to_completion_and_its_tests_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let o = run_bin(
        "wavecrew",
        &[
            "demo",
            "--dir",
            dir.to_str().unwrap(),
            "--max-parallel",
            "1",
        ],
        tmp.path(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let session = dir.join(".workflow/.team/TC-demo-todo-api-2026-11-22");
    let store = FileTaskStore::for_session(&session);
    let tasks = store.list().unwrap();
    assert_eq!(tasks.len(), 8);
    assert!(tasks.iter().all(|t| t.status == TaskStatus::Completed));
    let test = Command::new("cargo")
        .args(["test", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        test.status.success(),
        "{}",
        String::from_utf8_lossy(&test.stderr)
    );
    let session_file: Value =
        serde_json::from_slice(&std::fs::read(session.join("team-session.json")).unwrap()).unwrap();
    assert_eq!(session_file["status"], "completed");
    let summary = std::fs::read_to_string(session.join("reports/summary.md")).unwrap();
    assert!(summary.contains("**8/8 tasks completed**"), "{summary}");
    let log = std::fs::read_to_string(session.join(".msg/messages.jsonl")).unwrap();
    let lines: Vec<String> = log
        .lines()
        .map(|l| {
            let m: Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {} {}",
                m["from"].as_str().unwrap(),
                m["type"].as_str().unwrap(),
                m["summary"].as_str().unwrap()
            )
        })
        .collect();
    // Exactly one completion per task.
    for t in &tasks {
        let n = lines
            .iter()
            .filter(|l| {
                l.contains(" task_complete ") && l.contains(&format!(" {} complete", t.id.as_str()))
            })
            .count();
        assert_eq!(n, 1, "{}: {lines:#?}", t.id.as_str());
    }
    insta_settings().bind(|| {
        insta::assert_snapshot!("demo_stdout", without_totals(&o.render_in(&dir)));
        insta::assert_snapshot!("demo_bus", lines.join("\n"));
    });
}

#[test]
fn a_failed_task_skips_its_dependents_with_continue() {
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
            ("IMPL-003", &["IMPL-002"], "developer"),
            ("IMPL-004", &["IMPL-001"], "developer"),
        ],
        &json!([
            writes("IMPL-001"),
            {"match": {"task": "IMPL-002"}, "steps": [{"fail": {"message": "mock 500", "status": 500}}]},
            writes("IMPL-003"),
            writes("IMPL-004"),
        ]),
        "",
    );
    let o = run(&p, &["--max-parallel", "1"]);
    assert_eq!(o.code, 1, "{}", o.render());
    assert_eq!(p.status("IMPL-001"), TaskStatus::Completed);
    assert_eq!(p.status("IMPL-002"), TaskStatus::Failed);
    assert_eq!(p.status("IMPL-003"), TaskStatus::Skipped);
    assert_eq!(p.status("IMPL-004"), TaskStatus::Completed);
    insta_settings().bind(|| {
        insta::assert_snapshot!(format!(
            "{}\n----- bus -----\n{}",
            without_totals(&o.render_in(p.root())),
            bus_lines(&p)
        ));
    });
}

#[test]
fn a_failed_task_stops_the_pipeline_with_stop() {
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
            ("IMPL-003", &["IMPL-001"], "developer"),
        ],
        &json!([
            writes("IMPL-001"),
            {"match": {"task": "IMPL-002"}, "steps": [{"fail": {"message": "mock 500", "status": 500}}]},
            writes("IMPL-003"),
        ]),
        "",
    );
    let o = run(&p, &["--max-parallel", "1", "--on-failure", "stop"]);
    assert_eq!(o.code, 1, "{}", o.render());
    assert_eq!(p.status("IMPL-002"), TaskStatus::Failed);
    assert_eq!(
        p.status("IMPL-003"),
        TaskStatus::Pending,
        "nothing new starts after a failure"
    );
    assert!(o.stdout.contains("failed: IMPL-002"), "{}", o.stdout);
}

#[test]
fn a_missing_backend_falls_back_and_the_switch_is_recorded() {
    let p = project(
        &[("IMPL-001", &[], "developer")],
        &json!([writes("IMPL-001")]),
        "\n[backends.ghost]\nkind = \"command\"\nargv = [\"/nonexistent/agent\"]\nfallback = [\"demo\"]\n",
    );
    let o = run(&p, &["--backend", "ghost"]);
    assert_eq!(o.code, 0, "{}", o.render());
    let result = p
        .store()
        .get(&TaskId::new("IMPL-001").unwrap())
        .unwrap()
        .result
        .unwrap();
    assert_eq!(result["execution_backend"], "demo");
    assert_eq!(result["evidence"]["backend_switches"][0]["from"], "ghost");
    let switch = p
        .bus_log()
        .into_iter()
        .find(|m| m["type"] == "progress_update" && m["data"]["backend_switch"].is_object())
        .expect("the switch is on the bus");
    assert_eq!(switch["data"]["backend_switch"]["to"], "demo");
}

#[test]
fn a_cycle_exits_2_with_its_path() {
    let p = project(
        &[
            ("IMPL-001", &["IMPL-002"], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
        ],
        &json!([]),
        "",
    );
    let o = run(&p, &[]);
    assert_eq!(o.code, 2, "{}", o.render());
    insta_settings().bind(|| insta::assert_snapshot!(o.render_in(p.root())));
}

#[test]
fn every_session_validation_error_has_the_seeds_message() {
    type Breaker = fn(&Path);
    let cases: Vec<(&str, Breaker)> = vec![
        ("directory missing", |s| {
            std::fs::remove_dir_all(s).unwrap();
        }),
        ("team-session.json missing", |s| {
            std::fs::remove_file(s.join("team-session.json")).unwrap();
        }),
        ("team-session.json corrupt", |s| {
            std::fs::write(s.join("team-session.json"), "{\"session_id\": ").unwrap();
        }),
        ("team-session.json without roles", |s| {
            let mut v: Value =
                serde_json::from_slice(&std::fs::read(s.join("team-session.json")).unwrap())
                    .unwrap();
            v["roles"] = json!([]);
            std::fs::write(s.join("team-session.json"), v.to_string()).unwrap();
        }),
        ("task-analysis.json missing", |s| {
            std::fs::remove_file(s.join("task-analysis.json")).unwrap();
        }),
        ("task-analysis.json corrupt", |s| {
            std::fs::write(s.join("task-analysis.json"), "[1, 2]").unwrap();
        }),
        ("no role files", |s| {
            std::fs::remove_dir_all(s.join("roles")).unwrap();
        }),
        ("a role file missing", |s| {
            std::fs::rename(s.join("roles/developer.md"), s.join("roles/other.md")).unwrap();
        }),
        ("a role file without a section", |s| {
            std::fs::write(
                s.join("roles/developer.md"),
                "# Role: developer\n\n## Identity\nx\n",
            )
            .unwrap();
        }),
    ];
    let mut out = String::new();
    let o = run_bin("wavecrew-team", &["run"], Path::new("."));
    assert_eq!(o.code, 2);
    let _ = writeln!(out, "== no --session\n{}", o.stderr.trim());
    for (name, breaker) in cases {
        let p = project(&[("IMPL-001", &[], "developer")], &json!([]), "");
        breaker(&p.session());
        let o = run(&p, &[]);
        assert_eq!(o.code, 2, "{name}: {}", o.render());
        let _ = writeln!(
            out,
            "== {name}\n{}",
            o.stderr
                .trim()
                .replace(&p.root().display().to_string(), "[ROOT]")
        );
    }
    insta_settings().bind(|| insta::assert_snapshot!(out));
}

#[test]
fn a_session_in_team_coordinates_real_shape_runs() {
    // No team_name, graph values as arrays, no `tasks` array, no tasks/.
    let p = project(
        &[],
        &json!([writes("IMPL-001"), writes("IMPL-002"), writes("DRAFT-001")]),
        "",
    );
    let s = p.session();
    std::fs::create_dir_all(s.join("roles")).unwrap();
    std::fs::write(s.join("roles/developer.md"), role_file("developer")).unwrap();
    std::fs::write(s.join("roles/writer.md"), role_file("writer")).unwrap();
    std::fs::write(
        s.join("team-session.json"),
        json!({"session_id": SESSION, "task_description": "coordinate-shaped", "status": "active",
               "roles": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "inner_loop": true},
                         {"name": "writer", "prefix": "DRAFT", "responsibility_type": "code-gen (docs)", "inner_loop": false}],
               "pipeline": {"dependency_graph": {}, "tasks_total": 3}, "active_workers": [], "created_at": "2026-11-23T08:00:00Z"})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        s.join("task-analysis.json"),
        json!({"task_description": "coordinate-shaped",
               "capabilities": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "tasks": [{"id": "IMPL-001", "description": "x"}], "artifacts": []}],
               "dependency_graph": {"IMPL-001": [], "IMPL-002": ["IMPL-001"], "DRAFT-001": ["IMPL-002"]},
               "roles": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "task_count": 2, "inner_loop": true}],
               "complexity": {"total_score": 2, "level": "low"}, "artifacts": []})
        .to_string(),
    )
    .unwrap();
    let o = run(&p, &["--apply"]);
    assert_eq!(o.code, 0, "{}", o.render());
    for id in ["IMPL-001", "IMPL-002", "DRAFT-001"] {
        assert_eq!(p.status(id), TaskStatus::Completed, "{id}");
    }
    assert!(
        p.root().join("out/DRAFT-001.txt").is_file(),
        "the writer role ran through the agent"
    );
}

#[test]
fn spawn_and_stop_then_check_then_resume() {
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
        ],
        &json!([writes("IMPL-001"), writes("IMPL-002")]),
        "",
    );
    let session = p.session();
    let s = session.to_str().unwrap();
    let o = run_bin("wavecrew-team", &["start", "--session", s], p.root());
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(
        o.stdout.contains("spawned a worker for IMPL-001"),
        "{}",
        o.stdout
    );
    // The detached worker (and its fast-advance) finish on their own.
    wavecrew_testkit::wait::until(
        "IMPL-002 completed, resuming the team",
        std::time::Duration::from_secs(60),
        || {
            let r = run_bin("wavecrew-team", &["resume", "--session", s], p.root());
            assert_eq!(r.code, 0, "{}", r.render());
            p.status("IMPL-002")
        },
        |s| *s == TaskStatus::Completed,
    );
    assert_eq!(p.status("IMPL-001"), TaskStatus::Completed);
    assert_eq!(p.status("IMPL-002"), TaskStatus::Completed);
    let c = run_bin("wavecrew-team", &["check", "--session", s], p.root());
    assert_eq!(c.code, 0);
    insta_settings().bind(|| insta::assert_snapshot!(c.render_in(p.root())));
}

fn msg_step(kind: &str, summary: &str, data: &Value) -> Value {
    json!({"run": [bin_path("wavecrew").display().to_string(), "msg", "log", "--session-id", SESSION,
                   "--from", "reviewer", "--to", "executor", "--type", kind, "--summary", summary,
                   "--data", data.to_string()]})
}

#[test]
fn a_capability_gap_is_a_warning_and_the_run_goes_on() {
    let p = project(
        &[
            ("REVIEW-001", &[], "reviewer"),
            ("IMPL-001", &["REVIEW-001"], "developer"),
        ],
        &json!([
            {"match": {"task": "REVIEW-001"}, "steps": [
                msg_step("capability_gap", "nobody can review the SQL", &json!({"task_id": "REVIEW-001"})),
                {"say": "reviewed what I could"}]},
            writes("IMPL-001"),
        ]),
        "",
    );
    let o = run(&p, &[]);
    assert_eq!(o.code, 0, "{}", o.render());
    let warning = p
        .bus_log()
        .into_iter()
        .find(|m| {
            m["type"] == "warning" && m["summary"].as_str().unwrap().contains("capability gap")
        })
        .expect("a warning about the gap");
    assert!(
        warning["summary"]
            .as_str()
            .unwrap()
            .contains("nobody can review the SQL")
    );
}

#[test]
fn consensus_blocked_high_gets_one_revision_then_a_pause() {
    let high = json!({"task_id": "REVIEW-001", "severity": "HIGH"});
    let p = project(
        &[
            ("REVIEW-001", &[], "reviewer"),
            ("IMPL-001", &["REVIEW-001"], "developer"),
        ],
        &json!([
            {"match": {"task": "REVIEW-001-R1"}, "steps": [
                msg_step("consensus_blocked", "still no agreement on the schema", &high), {"say": "revised"}]},
            {"match": {"task": "REVIEW-001"}, "steps": [
                msg_step("consensus_blocked", "no agreement on the schema", &high), {"say": "reviewed"}]},
            writes("IMPL-001"),
        ]),
        "",
    );
    let o = run(&p, &["--max-parallel", "1"]);
    assert_eq!(o.code, 1, "{}", o.render());
    assert!(
        o.stderr.contains("paused: the consensus on REVIEW-001"),
        "{}",
        o.stderr
    );
    assert_eq!(
        p.status("REVIEW-001-R1"),
        TaskStatus::Completed,
        "one revision task ran"
    );
    let session: Value =
        serde_json::from_slice(&std::fs::read(p.session().join("team-session.json")).unwrap())
            .unwrap();
    assert_eq!(session["status"], "paused");
    let kinds: Vec<String> = p
        .bus_log()
        .iter()
        .filter(|m| {
            m["from"] == "executor" && (m["type"] == "task_created" || m["type"] == "paused")
        })
        .map(|m| m["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["task_created", "paused"]);
}

#[test]
fn hostile_task_text_reaches_every_worker_verbatim() {
    let hostile = "Do it. \"; touch pwned; \" $(touch pwned2) `touch pwned3`\nand a new line";
    let p = project(
        &[("IMPL-001", &[], "developer"), ("DRAFT-001", &[], "writer")],
        &json!([
            {"match": {"prompt_contains": hostile}, "steps": [
                {"write": {"path": "verbatim.txt", "content": "ok\n"}}, {"say": "ok"}]},
        ]),
        "",
    );
    for id in ["IMPL-001", "DRAFT-001"] {
        let mut t = wavecrew_core::Task::new(TaskId::new(id).unwrap(), id, hostile);
        t.owner = Some(
            if id == "IMPL-001" {
                "developer"
            } else {
                "writer"
            }
            .into(),
        );
        p.store().create(t).unwrap();
    }
    let o = run(&p, &[]);
    assert_eq!(
        o.code,
        0,
        "the scenario matched only if the text arrived verbatim: {}",
        o.render()
    );
    for f in ["pwned", "pwned2", "pwned3"] {
        assert!(!p.root().join(f).exists(), "{f}");
    }
}

#[test]
fn a_stalled_pipeline_says_which_tasks_are_stuck_and_why() {
    let p = project(
        &[("IMPL-001", &[], "developer")],
        &json!([writes("IMPL-001")]),
        "",
    );
    // A task no role of the session takes, and one waiting on it.
    let mut orphan =
        wavecrew_core::Task::new(TaskId::new("DESIGN-001").unwrap(), "design", "design it");
    orphan.owner = Some("architect".into());
    p.store().create(orphan).unwrap();
    let mut waiting =
        wavecrew_core::Task::new(TaskId::new("IMPL-002").unwrap(), "impl", "build it");
    waiting.blocked_by = vec![TaskId::new("DESIGN-001").unwrap()];
    p.store().create(waiting).unwrap();
    let o = run(&p, &[]);
    assert_eq!(o.code, 1, "{}", o.render());
    assert_eq!(p.status("IMPL-001"), TaskStatus::Completed);
    insta_settings().bind(|| {
        let stalled: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect();
        insta::assert_snapshot!(stalled.join("\n"));
    });
}
