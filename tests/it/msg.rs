//! `wavecrew msg`: ccw's `team` command, its outputs, and the bus under
//! concurrent library and CLI writers.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use wavecrew_core::{NewMessage, SessionId};
use wavecrew_msgbus::{Bus, BusPaths, Durability};
use wavecrew_testkit::{CliOutput, bin_path, run_bin};

const SESSION: &str = "TC-msg-test-2026-11-22";
const CHILD_ENV: &str = "WAVECREW_E2E_BUS_CHILD";

fn msg(root: &Path, args: &[&str]) -> CliOutput {
    let mut all = vec!["msg"];
    all.extend_from_slice(args);
    run_bin("wavecrew", &all, root)
}

fn session_root() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(".workflow/.team").join(SESSION)).unwrap();
    tmp
}

#[test]
fn human_outputs_match_ccw() {
    let tmp = session_root();
    let root = tmp.path();
    let s = ["--session-id", SESSION];
    let mut transcript = String::new();
    for args in [
        &[
            "log",
            s[0],
            s[1],
            "--from",
            "executor",
            "--summary",
            "did it",
            "--data",
            r#"{"task_id":"IMPL-001"}"#,
        ][..],
        &[
            "log",
            s[0],
            s[1],
            "--from",
            "executor",
            "--type",
            "state_update",
            "--data",
            r#"{"phase":3}"#,
        ],
        &[
            "broadcast",
            s[0],
            s[1],
            "--from",
            "coordinator",
            "--type",
            "shutdown",
            "--summary",
            "[coordinator] done",
        ],
        &["list", s[0], s[1], "--last", "2"],
        &["status", s[0], s[1]],
        &["read", s[0], s[1], "--id", "MSG-001"],
        &["get-state", s[0], s[1], "--role", "executor"],
        &["get_state", s[0], s[1], "--role", "nobody"],
        &["delete", s[0], s[1], "--id", "MSG-002"],
        &["clear", s[0], s[1]],
        &["status", s[0], s[1]],
    ] {
        let out = msg(root, args);
        let _ = writeln!(
            transcript,
            "$ wavecrew msg {}\n{}",
            args.join(" "),
            out.render()
        );
        // Distinct millisecond timestamps keep `status`'s order deterministic.
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    insta::assert_snapshot!(transcript);
}

#[test]
fn json_results_match_ccw() {
    let tmp = session_root();
    let root = tmp.path();
    let s = ["--session-id", SESSION, "--json"];
    let log: Value =
        serde_json::from_str(&msg(root, &[&["log", "--from", "a"][..], &s].concat()).stdout)
            .unwrap();
    assert_eq!(log["id"], "MSG-001");
    assert_eq!(
        log["message"],
        "Logged MSG-001: [a → coordinator] [a] message → coordinator"
    );
    let list: Value =
        serde_json::from_str(&msg(root, &[&["list"][..], &s].concat()).stdout).unwrap();
    assert_eq!(
        (list["total"].as_u64(), list["showing"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(list["formatted"].as_str().unwrap().starts_with("MSG-001 ["));
    let status: Value =
        serde_json::from_str(&msg(root, &[&["status"][..], &s].concat()).stdout).unwrap();
    assert_eq!(status["total_messages"], 1);
    assert!(status["members"].is_array() && status["formatted"].is_string());
    let state: Value =
        serde_json::from_str(&msg(root, &[&["get-state", "--role", "a"][..], &s].concat()).stdout)
            .unwrap();
    assert_eq!(state["role"], "a");
    assert!(state["state"].is_null());
    let all: Value =
        serde_json::from_str(&msg(root, &[&["get-state"][..], &s].concat()).stdout).unwrap();
    assert!(all["role_state"].is_object());
}

#[test]
fn e1_flags_are_aliases() {
    let tmp = session_root();
    let out = msg(
        tmp.path(),
        &[
            "log", "--team", SESSION, "--from", "executor", "--ref", "a/b.json", "--json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.render());
    let out = msg(
        tmp.path(),
        &["read", "--team", SESSION, "--id", "MSG-001", "--json"],
    );
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(r["data"]["ref"], "a/b.json");
}

#[test]
fn the_root_comes_from_ccw_project_root() {
    let tmp = session_root();
    let elsewhere = tempfile::tempdir().unwrap();
    let out: CliOutput = Command::new(bin_path("wavecrew"))
        .args(["msg", "log", "--session-id", SESSION, "--from", "a"])
        .current_dir(elsewhere.path())
        .env("CCW_PROJECT_ROOT", tmp.path())
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 0, "{}", out.render());
    assert!(
        tmp.path()
            .join(".workflow/.team")
            .join(SESSION)
            .join(".msg/messages.jsonl")
            .is_file()
    );
    assert!(!elsewhere.path().join(".workflow").exists());
}

#[test]
fn hostile_input_exits_2_and_creates_nothing_outside() {
    let tmp = session_root();
    let root = tmp.path();
    let long = "x".repeat(10 * 1024);
    let cases: Vec<Vec<&str>> = vec![
        vec!["log", "--session-id", "../../tmp/x", "--from", "a"],
        vec!["log", "--session-id", "a/b", "--from", "a"],
        vec!["log", "--session-id", "", "--from", "a"],
        vec!["log", "--session-id", &long, "--from", "a"],
        vec!["log", "--from", "a"],
        vec![
            "log",
            "--session-id",
            SESSION,
            "--from",
            "a",
            "--data",
            "[1]",
        ],
        vec!["log", "--session-id", SESSION, "--from", "a", "--data", "{"],
        vec!["list", "--session-id", SESSION, "--last", "0"],
        vec!["list", "--session-id", SESSION, "--last", "101"],
        vec!["list", "--session-id", "planex"],
        vec!["log", "--session-id", "planex", "--from", "a"],
        vec!["read", "--session-id", SESSION, "--id", "MSG-404"],
        vec!["frobnicate", "--session-id", SESSION],
    ];
    let mut transcript = String::new();
    for args in &cases {
        let out = msg(root, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.render());
        assert!(!out.stderr.contains("panicked"), "{args:?}");
        assert!(out.stderr.len() < 800, "{args:?}: message is bounded");
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                if a.len() > 40 {
                    "<10 kB>".into()
                } else {
                    (*a).to_owned()
                }
            })
            .collect();
        let _ = writeln!(
            transcript,
            "$ wavecrew msg {}\n{}",
            shown.join(" "),
            out.render_in(root)
        );
    }
    insta::assert_snapshot!(transcript);
    // Nothing outside .workflow/.team/<existing session>; no log written by the failures.
    let team: Vec<_> = std::fs::read_dir(root.join(".workflow/.team"))
        .unwrap()
        .collect();
    assert_eq!(team.len(), 1);
    assert!(!Path::new("/tmp/x/.msg").exists());
    assert!(
        !root
            .join(".workflow/.team")
            .join(SESSION)
            .join(".msg/messages.jsonl")
            .exists()
    );
}

/// Child for the mixed stress test: append through the library.
#[test]
fn child_library_writer() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (root, n) = spec.split_once('|').unwrap();
    let bus = Bus::new(
        BusPaths::new(root, SessionId::new(SESSION).unwrap()),
        Durability::None,
    );
    for _ in 0..n.parse::<usize>().unwrap() {
        bus.log(NewMessage {
            from: "lib".into(),
            ..NewMessage::default()
        })
        .unwrap();
    }
}

/// 8 processes × 2,000 appends through the library and 4 processes × 250
/// through `wavecrew msg log`, all at once: ids are exactly MSG-001 …
/// MSG-17000. (`WAVECREW_STRESS_SCALE=10` divides the counts for quick runs.)
#[test]
fn library_and_cli_writers_at_once() {
    let scale: usize = std::env::var("WAVECREW_STRESS_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let (lib_each, cli_each) = (2000 / scale, 250 / scale);
    let tmp = session_root();
    let root = tmp.path().to_owned();
    let exe = std::env::current_exe().unwrap();
    let wavecrew = bin_path("wavecrew");
    let mut children: Vec<std::process::Child> = (0..8)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "msg::child_library_writer",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, format!("{}|{lib_each}", root.display()))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let cli_threads: Vec<_> = (0..4)
        .map(|t| {
            let (wavecrew, root) = (wavecrew.clone(), root.clone());
            std::thread::spawn(move || {
                for i in 0..cli_each {
                    let status = Command::new(&wavecrew)
                        .args([
                            "msg",
                            "log",
                            "--session-id",
                            SESSION,
                            "--from",
                            &format!("cli{t}"),
                            "--summary",
                            &format!("n {i}"),
                        ])
                        .current_dir(&root)
                        .env_remove("CCW_PROJECT_ROOT")
                        .stdout(Stdio::null())
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
            })
        })
        .collect();
    for c in &mut children {
        assert!(c.wait().unwrap().success());
    }
    for t in cli_threads {
        t.join().unwrap();
    }
    let text = std::fs::read_to_string(
        root.join(".workflow/.team")
            .join(SESSION)
            .join(".msg/messages.jsonl"),
    )
    .unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let total = 8 * lib_each + 4 * cli_each;
    let expected: Vec<String> = (1..=total).map(|n| format!("MSG-{n:03}")).collect();
    assert_eq!(ids, expected);
}

#[test]
fn follow_prints_records_as_they_are_appended() {
    let tmp = session_root();
    let root = tmp.path();
    msg(root, &["log", "--session-id", SESSION, "--from", "before"]);
    let child = Command::new(bin_path("wavecrew"))
        .args([
            "msg",
            "follow",
            "--session-id",
            SESSION,
            "--count",
            "3",
            "--json",
        ])
        .current_dir(root)
        .env_remove("CCW_PROJECT_ROOT")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    for from in ["one", "two"] {
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert_eq!(
            msg(root, &["log", "--session-id", SESSION, "--from", from]).code,
            0
        );
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let froms: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["from"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(froms, ["before", "one", "two"]);
}
