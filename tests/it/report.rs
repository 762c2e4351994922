//! Reports (`wavecrew report`, `wavecrew status`, and the files every run
//! writes): snapshots for the demo, the JUnit file through a parser, the
//! HTML timeline in headless Chromium, and a report regenerated after a
//! SIGKILL that agrees with the one written at the end of the resumed run.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use wavecrew_testkit::{bin_path, insta_settings, run_bin};

fn demo(max_parallel: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let o = run_bin(
        "wavecrew",
        &[
            "demo",
            "--dir",
            dir.to_str().unwrap(),
            "--max-parallel",
            max_parallel,
        ],
        tmp.path(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let session = dir.join(".workflow/.team/TC-demo-todo-api-2026-11-22");
    (tmp, session)
}

/// JUnit times change from run to run, and so does the critical path
/// (it follows the measured durations, and two tasks of a wave take about
/// as long); the temp root too.
fn stable(text: &str, root: &Path) -> String {
    let times = regex::Regex::new(r#"time="[0-9.]+""#).unwrap();
    let path = regex::Regex::new(r"Critical path: .*").unwrap();
    let text = times.replace_all(text, "time=\"[SECS]\"");
    path.replace_all(&text, "Critical path: [PATH]")
        .replace(" ★", "")
        .replace(&root.display().to_string(), "[ROOT]")
}

/// `run-summary.json` without the duration-dependent critical path.
fn stable_summary(text: &str, root: &Path) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    v["critical_path"] = Value::String("[PATH]".into());
    for t in v["tasks"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().shift_remove("critical");
        // The governor's spans hold times: their keys are the contract.
        for a in t["attempts"].as_array_mut().unwrap() {
            if let Some(g) = a.get_mut("governor").and_then(Value::as_object_mut) {
                for (_, v) in g.iter_mut() {
                    if v.is_string() || v.is_u64() {
                        *v = Value::String("[VALUE]".into());
                    }
                }
            }
        }
    }
    stable(&serde_json::to_string_pretty(&v).unwrap(), root)
}

#[test]
fn the_demos_reports() {
    let (tmp, session) = demo("1");
    let reports = session.join("reports");
    for f in [
        "run-summary.json",
        "junit.xml",
        "summary.md",
        "trace.json",
        "index.html",
        "graph.dot",
        "graph.mmd",
    ] {
        assert!(reports.join(f).is_file(), "{f}");
    }
    let junit = std::fs::read_to_string(reports.join("junit.xml")).unwrap();
    let parsed =
        quick_junit::Report::deserialize_from_str(&junit).expect("junit.xml parses as JUnit");
    assert_eq!(parsed.tests, 8);
    assert_eq!(parsed.failures, 0);
    assert_eq!(parsed.test_suites.len(), 6, "one testsuite per wave");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("run-summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["schema_version"], 3);
    // The demo runs isolated (the default): seven writing tasks landed, in
    // git (in an order parallel tasks may change); the reviewer's read-only
    // task lands nothing.
    let queue = &summary["merge_queue"];
    assert_eq!(queue["branch"], "wavecrew/TC-demo-todo-api-2026-11-22");
    assert_eq!(queue["landed_from"], "git");
    let mut landed: Vec<&str> = queue["landed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["task"].as_str().unwrap())
        .collect();
    landed.sort_unstable();
    assert_eq!(
        landed,
        [
            "IMPL-001", "IMPL-002", "IMPL-003", "IMPL-004", "IMPL-005", "IMPL-006", "IMPL-007"
        ]
    );
    assert_eq!(queue["blocked"], json!([]));
    // 8 tasks of the scripted agent, 30 tokens each, its model unpriced.
    assert_eq!(summary["cost"]["run"]["tokens"], 240);
    assert_eq!(summary["cost"]["run"]["cost_usd"], Value::Null);
    assert_eq!(summary["tasks"].as_array().unwrap().len(), 8);
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("trace.json")).unwrap())
            .unwrap();
    let spans = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    assert_eq!(spans, 8);
    let status = run_bin(
        "wavecrew",
        &["status", session.to_str().unwrap(), "--last", "3"],
        tmp.path(),
    );
    assert_eq!(status.code, 0);
    let status_json = run_bin(
        "wavecrew",
        &["status", session.to_str().unwrap(), "--json"],
        tmp.path(),
    );
    let sj: Value = serde_json::from_str(&status_json.stdout).unwrap();
    assert_eq!(sj["counts"]["completed"], 8);
    assert_eq!(sj["merge_queue"]["landed"], queue["landed"]);
    insta_settings().bind(|| {
        insta::assert_snapshot!(
            "demo_status",
            stable(&status.render_in(tmp.path()), tmp.path())
        );
        insta::assert_snapshot!(
            "demo_summary",
            stable(
                &std::fs::read_to_string(reports.join("summary.md")).unwrap(),
                tmp.path()
            )
        );
        insta::assert_snapshot!("demo_junit", stable(&junit, tmp.path()));
        insta::assert_snapshot!(
            "demo_run_summary",
            stable_summary(
                &std::fs::read_to_string(reports.join("run-summary.json")).unwrap(),
                tmp.path()
            )
        );
    });
    // `wavecrew report` writes the same files again.
    let again = run_bin(
        "wavecrew",
        &["report", session.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(again.code, 0, "{}", again.render());
    assert_eq!(
        std::fs::read_to_string(reports.join("junit.xml")).unwrap(),
        junit
    );
}

#[test]
fn the_timeline_renders_in_headless_chromium() {
    let (tmp, session) = demo("2");
    let page = session.join("reports/index.html");
    let shot = tmp.path().join("shot.png");
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("chromium is not installed: scripts/test.sh installs Debian's chromium");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,900",
            &format!("--screenshot={}", shot.display()),
            &format!("file://{}", page.display()),
        ])
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let console_errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:#?}"
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let pixels = &buf[..info.buffer_size()];
    let first = &pixels[..3];
    let different = pixels
        .chunks(info.color_type.samples())
        .filter(|p| &p[..3] != first)
        .count();
    assert!(
        different > 1000,
        "the screenshot is blank ({different} pixels differ)"
    );
}

#[test]
fn a_report_regenerated_after_a_kill_agrees_with_the_resumed_runs() {
    // The crash test's session: 30 tasks, SIGKILL once mid-run.
    let p = crate::team::project(
        &(1..=12)
            .map(|n| {
                let id: &'static str = Box::leak(format!("IMPL-{n:03}").into_boxed_str());
                let deps: &'static [&'static str] = if n > 1 {
                    Box::leak(vec![&*Box::leak(format!("IMPL-{:03}", n - 1).into_boxed_str())].into_boxed_slice())
                } else {
                    &[]
                };
                (id, deps, "developer")
            })
            .collect::<Vec<_>>(),
        &Value::Array(
            (1..=12)
                .map(|n| {
                    serde_json::json!({"match": {"task": format!("IMPL-{n:03}")}, "steps": [
                        {"sleep_ms": 150}, {"write": {"path": format!("out/{n}.txt"), "content": "x\n"}}, {"say": "done"}]})
                })
                .collect(),
        ),
        "",
    );
    let session = p.session();
    let mut cmd = Command::new(bin_path("wavecrew"));
    cmd.args(["run", session.to_str().unwrap()])
        .current_dir(p.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let _ = killpg(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGKILL,
    );
    let _ = child.wait();
    let regenerated = run_bin("wavecrew", &["report", session.to_str().unwrap()], p.root());
    assert_eq!(regenerated.code, 0, "{}", regenerated.render());
    let before: Value = serde_json::from_str(
        &std::fs::read_to_string(session.join("reports/run-summary.json")).unwrap(),
    )
    .unwrap();
    let resumed = run_bin("wavecrew", &["run", session.to_str().unwrap()], p.root());
    assert_eq!(resumed.code, 0, "{}", resumed.render());
    let after: Value = serde_json::from_str(
        &std::fs::read_to_string(session.join("reports/run-summary.json")).unwrap(),
    )
    .unwrap();
    let done_before: Vec<&Value> = before["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["state"] == "completed")
        .collect();
    assert!(
        !done_before.is_empty() && done_before.len() < 12,
        "the kill landed mid-run: {} done",
        done_before.len()
    );
    for t in done_before {
        let same = after["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == t["id"])
            .unwrap();
        for key in [
            "state",
            "attempts",
            "backend",
            "started_at",
            "ended_at",
            "duration_ms",
            "files_changed",
            "validation",
            "usage",
            "wave",
        ] {
            assert_eq!(t[key], same[key], "{} {key}", t["id"]);
        }
    }
}

/// A run budget: the demo's agent spends 30 tokens a task; with
/// `run_tokens = 50` the second task crosses it, no task starts after, the
/// run exits 1 naming the budget, and the cost table (priced from the
/// `[prices]` of the demo's model) says so.
#[test]
fn a_run_budget_stops_new_starts_and_the_run_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let o = run_bin(
        "wavecrew",
        &["demo", "--dir", dir.to_str().unwrap(), "--no-run"],
        tmp.path(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let toml = dir.join("wavecrew.toml");
    let text = std::fs::read_to_string(&toml).unwrap().replace(
        "format = \"claude\"",
        "format = \"claude\"\nmodel = \"demo-model\"",
    ) + "\n[budget]\nrun_tokens = 50\n\n[prices.\"demo-model\"]\ninput = 3.0\noutput = 15.0\n";
    std::fs::write(&toml, text).unwrap();
    let session = dir.join(".workflow/.team/TC-demo-todo-api-2026-11-22");
    let run = run_bin(
        "wavecrew",
        &["run", session.to_str().unwrap(), "--max-parallel", "1"],
        &dir,
    );
    assert_eq!(run.code, 1, "{}", run.render());
    assert!(
        run.stderr
            .contains("the run stopped: run budget run_tokens = 50 crossed: 60 tokens used"),
        "{}",
        run.render()
    );
    let attempts = std::fs::read_dir(session.join("attempts")).unwrap().count();
    assert_eq!(attempts, 2, "no attempt after the budget was crossed");
    let summary = std::fs::read_to_string(session.join("reports/summary.md")).unwrap();
    let cost = summary
        .split("\n## Cost\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a cost section");
    insta_settings().bind(|| insta::assert_snapshot!("budget_cost_table", cost));
    let status = run_bin("wavecrew", &["status", session.to_str().unwrap()], &dir);
    assert!(
        status
            .stdout
            .contains("budget crossed: run budget run_tokens = 50 crossed"),
        "{}",
        status.render()
    );
}

/// An isolated session built by hand: a real repository whose integration
/// branch (made by `wavecrew-isolation`) holds IMPL-001's landing, and
/// IMPL-002, whose worktree started before that landing, conflicting with
/// it on `shared.txt`, twice, and now blocked; its task results and bus
/// records are those the executor writes.
#[test]
fn an_isolated_sessions_merge_queue_in_status_and_the_report() {
    use wavecrew_isolation::{Integration, Landing, Repo};

    const SID: &str = "TC-merge-queue-2026-11-24";
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let git = |args: &[&str]| crate::team::git(&root, args);
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(root.join("shared.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(root.join(".gitignore"), ".workflow/\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "start"]);
    let session = root.join(".workflow/.team").join(SID);
    std::fs::create_dir_all(&session).unwrap();

    // The merge queue, for real: both worktrees start from the same tip;
    // IMPL-001 lands first, so IMPL-002's edit of the same line conflicts.
    let repo = Repo::open(&root).unwrap().unwrap();
    let integration = Integration::start(&repo, SID, &[".workflow"], &session).unwrap();
    let wt1 = integration.open_worktree("IMPL-001", 1, &[]).unwrap();
    let wt2 = integration.open_worktree("IMPL-002", 1, &[]).unwrap();
    std::fs::write(wt1.path.join("shared.txt"), "one\nTWO\nthree\n").unwrap();
    std::fs::write(wt2.path.join("shared.txt"), "one\n2\nthree\n").unwrap();
    integration
        .commit(&wt1, "IMPL-001", "IMPL-001: capitalise")
        .unwrap();
    let Landing::FastForward { commit: landed } = integration.land(&wt1, "IMPL-001").unwrap()
    else {
        panic!("IMPL-001 fast-forwards")
    };
    integration
        .commit(&wt2, "IMPL-002", "IMPL-002: digits")
        .unwrap();
    let Landing::Conflict {
        files, messages, ..
    } = integration.land(&wt2, "IMPL-002").unwrap()
    else {
        panic!("IMPL-002 conflicts")
    };
    assert_eq!(files, ["shared.txt"]);
    let subject = git(&["log", "-1", "--format=%s", &landed])
        .trim()
        .to_owned();
    let conflict = serde_json::json!({
        "files": files, "messages": messages,
        "upstream": [{"commit": landed, "subject": subject, "task": "IMPL-001"}],
        "with": ["IMPL-001"],
    });
    integration.remove_worktree(&wt1).unwrap();

    // The task store, as the executor leaves it.
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    let task = |id: &str, status, result: Value| {
        let mut t = wavecrew_core::Task::new(
            wavecrew_core::TaskId::new(id).unwrap(),
            format!("{id} edits shared.txt"),
            "",
        );
        t.owner = Some("developer".into());
        t.status = status;
        t.result = Some(result);
        wavecrew_core::TaskStore::create(&store, t).unwrap();
    };
    task(
        "IMPL-001",
        wavecrew_core::TaskStatus::Completed,
        serde_json::json!({"task_id": "IMPL-001", "status": "success",
            "files_modified": ["shared.txt"], "branch": wt1.branch, "base": wt1.base,
            "merge_commit": landed}),
    );
    let branch2 = integration.task_branch("IMPL-002", 2);
    task(
        "IMPL-002",
        wavecrew_core::TaskStatus::Blocked,
        serde_json::json!({"task_id": "IMPL-002",
            "error": "its work conflicts with work landed since its base in shared.txt",
            "branch": branch2, "base": wt2.base,
            "conflict": conflict, "conflicts": [conflict, conflict]}),
    );
    std::fs::write(
        session.join("team-session.json"),
        serde_json::json!({"session_id": SID, "task_description": "Two tasks, one line",
            "status": "active", "roles": [], "active_workers": [], "completed_tasks": ["IMPL-001"]})
        .to_string(),
    )
    .unwrap();
    // The bus: each landing and conflict where it happened.
    let records = [
        (
            "00",
            "progress_update",
            "IMPL-001 attempt 1 via demo",
            serde_json::json!({"task_id": "IMPL-001"}),
        ),
        (
            "01",
            "progress_update",
            "IMPL-002 attempt 1 via demo",
            serde_json::json!({"task_id": "IMPL-002"}),
        ),
        (
            "05",
            "task_merged",
            "IMPL-001 landed on wavecrew/TC-merge-queue-2026-11-24",
            serde_json::json!({
            "task_id": "IMPL-001", "branch": wt1.branch, "base": wt1.base, "merge_commit": landed,
            "integration_branch": integration.branch()}),
        ),
        (
            "06",
            "task_complete",
            "IMPL-001 complete (demo): 1 file(s) changed",
            serde_json::json!({"task_id": "IMPL-001"}),
        ),
        (
            "08",
            "merge_conflict",
            "IMPL-002 conflicts with IMPL-001 in shared.txt; revising",
            serde_json::json!({
            "task_id": "IMPL-002", "files": ["shared.txt"], "with": ["IMPL-001"], "revision": true}),
        ),
        (
            "09",
            "progress_update",
            "IMPL-002 attempt 2 via demo",
            serde_json::json!({"task_id": "IMPL-002"}),
        ),
        (
            "14",
            "merge_conflict",
            "IMPL-002 conflicts with IMPL-001 in shared.txt again; blocked",
            serde_json::json!({
            "task_id": "IMPL-002", "files": ["shared.txt"], "with": ["IMPL-001"], "revision": false}),
        ),
    ];
    let bus: String = records
        .iter()
        .enumerate()
        .map(|(i, (sec, kind, summary, data))| {
            serde_json::json!({"id": format!("MSG-{:03}", i + 1),
                "ts": format!("2026-11-24T10:00:{sec}.000+00:00"), "from": "executor",
                "to": "coordinator", "type": kind, "summary": format!("[executor] {summary}"),
                "data": data})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::create_dir_all(session.join(".msg")).unwrap();
    std::fs::write(session.join(".msg/messages.jsonl"), bus).unwrap();

    let s = session.to_str().unwrap();
    let status = run_bin("wavecrew", &["status", s, "--last", "2"], &root);
    assert_eq!(status.code, 0, "{}", status.render());
    let json = run_bin("wavecrew", &["status", s, "--json"], &root);
    let sj: Value = serde_json::from_str(&json.stdout).unwrap();
    let q = &sj["merge_queue"];
    assert_eq!(q["branch"], integration.branch());
    assert_eq!(q["tip"], Value::String(landed.clone()));
    assert_eq!(q["landed_from"], "git");
    assert_eq!(q["landed"][0]["task"], "IMPL-001");
    assert_eq!(q["landed"][0]["commit"], Value::String(landed.clone()));
    assert_eq!(q["blocked"][0]["task"], "IMPL-002");
    assert_eq!(q["blocked"][0]["with"], serde_json::json!(["IMPL-001"]));
    assert_eq!(q["blocked"][0]["files"], serde_json::json!(["shared.txt"]));
    assert_eq!(
        q["take"],
        serde_json::json!([
            format!("git merge wavecrew/{SID}"),
            format!("wavecrew run .workflow/.team/{SID} --apply")
        ])
    );
    // Existing keys are unchanged.
    assert_eq!(sj["counts"]["blocked"], 1);

    let report = run_bin("wavecrew", &["report", s], &root);
    assert_eq!(report.code, 0, "{}", report.render());
    let summary = std::fs::read_to_string(session.join("reports/summary.md")).unwrap();
    let merge_section = summary
        .split("\n## Merge queue\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a merge section");
    let run_summary: Value = serde_json::from_str(
        &std::fs::read_to_string(session.join("reports/run-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(run_summary["schema_version"], 3);
    let t2 = &run_summary["tasks"][1];
    assert_eq!(t2["merge"]["branch"], Value::String(branch2));
    assert_eq!(t2["merge"]["conflicts"].as_array().unwrap().len(), 2);
    assert_eq!(
        t2["merge"]["conflict"]["upstream"][0]["task"], "IMPL-001",
        "{t2}"
    );
    assert_eq!(
        run_summary["tasks"][0]["merge"]["merge_commit"],
        Value::String(landed.clone())
    );
    // The timeline: one landing marker, two conflict markers.
    let html = std::fs::read_to_string(session.join("reports/index.html")).unwrap();
    assert_eq!(html.matches("<g class=\"merge\">").count(), 1, "{html}");
    assert_eq!(html.matches("<g class=\"conflict\">").count(), 2, "{html}");
    assert!(html.contains("<h2>Merge queue</h2>"));

    insta_settings().bind(|| {
        insta::assert_snapshot!("merge_queue_status", status.render_in(&root));
        insta::assert_snapshot!("merge_queue_summary", merge_section);
    });

    // The branch deleted after its work was taken: status says so, reads
    // what landed from the results, and does not make the branch again.
    git(&["branch", "-D", integration.branch()]);
    let status = run_bin("wavecrew", &["status", s], &root);
    assert_eq!(status.code, 0, "{}", status.render());
    assert!(
        status.stdout.contains("no longer exists") && status.stdout.contains("1. IMPL-001"),
        "{}",
        status.render()
    );
    assert_eq!(git(&["branch", "--list", integration.branch()]), "");
    integration.clean().unwrap();
}
