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
use serde_json::Value;
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
    assert_eq!(summary["schema_version"], 2);
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
