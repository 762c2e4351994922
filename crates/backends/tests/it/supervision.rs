//! Supervision: limits, process groups, SIGTERM-proof children, argv.
//!
//! The children are this test binary itself, re-run with `JOB_ENV` naming
//! what to do, so no shell and no external program is involved.

use std::path::PathBuf;
use std::time::Duration;

use wavecrew_backends::supervise::{Ended, Spawn, StdinInput, supervise};
use wavecrew_core::Limits;

const JOB_ENV: &str = "WAVECREW_SUPERVISE_JOB";
const PID_FILE_ENV: &str = "WAVECREW_SUPERVISE_PIDFILE";

fn job_spawn(job: &str, extra_args: &[&str]) -> Spawn {
    let mut args = vec![
        "--exact",
        "supervision::child",
        "--nocapture",
        "--test-threads=1",
    ];
    args.extend_from_slice(extra_args);
    let mut spawn = Spawn::new(
        std::env::current_exe().unwrap(),
        &args,
        std::env::temp_dir(),
    );
    spawn.env.insert(JOB_ENV.into(), job.into());
    spawn
}

fn limits(wall_ms: u64, stall_ms: u64) -> Limits {
    Limits {
        wall: Duration::from_millis(wall_ms),
        stall: Duration::from_millis(stall_ms),
        grace: Duration::from_millis(300),
        ..Limits::default()
    }
}

/// The child side: does what `JOB_ENV` says.
#[test]
fn child() {
    let Ok(job) = std::env::var(JOB_ENV) else {
        return;
    };
    match job.as_str() {
        "hang" => loop {
            println!("still working");
            std::thread::sleep(Duration::from_millis(50));
        },
        "silent" => {
            println!("started");
            std::thread::sleep(Duration::from_secs(3600));
        }
        "grandchild" => {
            // Start a grandchild that sleeps for an hour, record its pid, exit.
            let mut spawn = std::process::Command::new(std::env::current_exe().unwrap());
            spawn
                .args([
                    "--exact",
                    "supervision::child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(JOB_ENV, "sleep-hour");
            // Deliberately not waited for: the point is to leave it behind.
            #[allow(clippy::zombie_processes)]
            let grandchild = spawn.spawn().unwrap();
            std::fs::write(
                std::env::var(PID_FILE_ENV).unwrap(),
                grandchild.id().to_string(),
            )
            .unwrap();
            println!("left a grandchild behind");
        }
        "escape" => {
            // Start a grandchild in a session of its own (`setsid`), so it
            // is outside our process group, sharing our stdout and stderr;
            // record its pid and exit.
            let mut spawn = std::process::Command::new("setsid");
            spawn
                .arg(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "supervision::child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(JOB_ENV, "sleep-hour");
            #[allow(clippy::zombie_processes)]
            let escaped = spawn.spawn().unwrap();
            // Exit only once it has left our group, or the group's SIGTERM
            // would still reach it.
            while session_of(escaped.id()) != Some(escaped.id()) {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::fs::write(
                std::env::var(PID_FILE_ENV).unwrap(),
                escaped.id().to_string(),
            )
            .unwrap();
            println!("escaped: {}", escaped.id());
        }
        "sleep-hour" => std::thread::sleep(Duration::from_secs(3600)),
        "ignore-term" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .unwrap();
                println!("ignoring SIGTERM");
                loop {
                    term.recv().await;
                    println!("got SIGTERM, ignoring it");
                }
            });
        }
        "echo" => {
            // Print argv after the `--` marker and stdin, as JSON.
            let args: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
            let mut stdin = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut stdin).unwrap();
            println!("{}", serde_json::json!({"args": args, "stdin": stdin}));
        }
        other => panic!("unknown job {other}"),
    }
}

/// The session id of a process, from `/proc/<pid>/stat`.
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the `(comm)` field: state, ppid, pgrp, session.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

fn alive(pid: i32) -> bool {
    // A zombie counts as gone: read its state.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
}

#[tokio::test]
async fn a_hang_is_killed_at_the_wall_limit() {
    let out = supervise(
        &job_spawn("hang", &[]),
        &limits(600, 10_000),
        None,
        None,
        |_| {},
    )
    .await;
    assert_eq!(out.ended, Ended::TimedOut);
    assert!(out.duration < Duration::from_secs(5));
    assert!(out.stdout_tail.contains("still working"));
}

#[tokio::test]
async fn a_silent_agent_is_killed_at_the_stall_limit() {
    let out = supervise(
        &job_spawn("silent", &[]),
        &limits(20_000, 500),
        None,
        None,
        |_| {},
    )
    .await;
    assert_eq!(out.ended, Ended::Stalled);
    assert!(out.duration < Duration::from_secs(5));
}

#[tokio::test]
async fn a_grandchild_does_not_outlive_the_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file: PathBuf = tmp.path().join("grandchild.pid");
    let mut spawn = job_spawn("grandchild", &[]);
    spawn
        .env
        .insert(PID_FILE_ENV.into(), pid_file.display().to_string());
    let out = supervise(&spawn, &limits(20_000, 20_000), None, None, |_| {}).await;
    assert!(
        matches!(out.ended, Ended::Exited { code: Some(0), .. }),
        "{:?}",
        out.ended
    );
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().parse().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while alive(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "grandchild {pid} survived");
}

#[tokio::test]
async fn an_escaped_descendant_holding_the_pipes_does_not_hang_the_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file: PathBuf = tmp.path().join("escaped.pid");
    let mut spawn = job_spawn("escape", &[]);
    spawn
        .env
        .insert(PID_FILE_ENV.into(), pid_file.display().to_string());
    spawn.leak_timeout = Duration::from_millis(500);
    let out_file = tmp.path().join("stdout.log");
    // Without a leak timeout this waits for the escaped sleeper (an hour):
    // the outer timeout turns that hang into a failure.
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        supervise(
            &spawn,
            &limits(20_000, 20_000),
            Some(&out_file),
            None,
            |_| {},
        ),
    )
    .await;
    let pid: Option<i32> = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|s| s.parse().ok());
    if let Some(pid) = pid {
        // The test cleans up after itself; wavecrew cannot reach it.
        assert!(alive(pid), "the escaped process {pid} was expected to run");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let out = out.expect("supervision hung on pipes held by an escaped process");
    assert!(pid.is_some(), "the child did not start its escapee");
    assert!(
        matches!(out.ended, Ended::Exited { code: Some(0), .. }),
        "{:?}",
        out.ended
    );
    let leak = out.leak.expect("the leak is reported");
    assert_eq!(leak.streams, ["stdout", "stderr"]);
    assert_eq!(leak.waited, Duration::from_millis(500));
    assert!(
        leak.note()
            .contains("stdout and stderr still held open 500 ms")
    );
    // What the child printed before it left is kept.
    assert!(out.stdout_tail.contains("escaped: "), "{}", out.stdout_tail);
    assert!(
        std::fs::read_to_string(&out_file)
            .unwrap()
            .contains("escaped: ")
    );
}

#[tokio::test]
async fn pipes_closed_in_time_are_no_leak() {
    let out = supervise(
        &job_spawn("echo", &["--", "hello"]),
        &limits(20_000, 20_000),
        None,
        None,
        |_| {},
    )
    .await;
    assert!(matches!(out.ended, Ended::Exited { code: Some(0), .. }));
    assert_eq!(out.leak, None);
}

#[tokio::test]
async fn a_child_that_ignores_sigterm_gets_sigkill() {
    let mut lines = Vec::new();
    let out = supervise(
        &job_spawn("ignore-term", &[]),
        &limits(800, 10_000),
        None,
        None,
        |l| {
            lines.push(l.to_owned());
        },
    )
    .await;
    assert_eq!(out.ended, Ended::TimedOut);
    // (libtest prints `test … ... ` before the child's own output.)
    assert!(
        lines.iter().any(|l| l.ends_with("ignoring SIGTERM")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("got SIGTERM, ignoring it")),
        "{lines:?}"
    );
    assert!(out.duration < Duration::from_secs(5));
}

#[tokio::test]
async fn hostile_text_reaches_the_child_unchanged() {
    let hostile = [
        "\"quoted\"",
        "'single'",
        "$(touch /tmp/wavecrew-pwned)",
        "`touch /tmp/wavecrew-pwned`",
        "a; rm -rf /",
        "line one\nline two",
        "-leading-dash",
    ];
    let mut args = vec!["--"];
    args.extend_from_slice(&hostile);
    let mut spawn = job_spawn("echo", &args);
    spawn.stdin = StdinInput::Bytes(hostile.join("|").into_bytes());
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("stdout.log");
    let mut got = None;
    let out = supervise(
        &spawn,
        &limits(20_000, 20_000),
        Some(&out_file),
        None,
        |l| {
            // (libtest prints `test … ... ` before the child's own output.)
            if let Some(start) = l.find('{')
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&l[start..])
            {
                got = Some(v);
            }
        },
    )
    .await;
    assert!(
        matches!(out.ended, Ended::Exited { code: Some(0), .. }),
        "{:?}",
        out.ended
    );
    let got = got.expect("the child echoed its argv");
    let args: Vec<&str> = got["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args, hostile);
    assert_eq!(got["stdin"], hostile.join("|"));
    assert!(!std::path::Path::new("/tmp/wavecrew-pwned").exists());
    assert!(
        std::fs::read_to_string(out_file)
            .unwrap()
            .contains("rm -rf")
    );
}

#[tokio::test]
async fn a_missing_program_is_unavailable() {
    let spawn = Spawn::new("/nonexistent/agent-cli", &[], std::env::temp_dir());
    let out = supervise(&spawn, &limits(1000, 1000), None, None, |_| {}).await;
    assert!(matches!(out.ended, Ended::SpawnFailed(ref m) if m.contains("/nonexistent/agent-cli")));
}

/// A flood of output keeps the first and the last half of
/// `max_output_bytes` on disk, with the count of bytes dropped between;
/// a line far longer than the cap (no newline at all) is bounded too.
#[tokio::test]
async fn a_flood_of_output_keeps_its_head_and_tail_with_the_count_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stdout.log");
    let err = dir.path().join("stderr.log");
    let spawn = Spawn::new(
        "sh",
        &[
            "-c",
            "seq 1 300000; head -c 3000000 /dev/zero | tr '\\0' a >&2",
        ],
        dir.path(),
    );
    let mut limits = limits(60_000, 60_000);
    limits.max_output_bytes = 64 << 10;
    let mut lines = 0;
    let ran = supervise(&spawn, &limits, Some(&out), Some(&err), |_| lines += 1).await;
    assert!(
        matches!(ran.ended, Ended::Exited { code: Some(0), .. }),
        "{:?}",
        ran.ended
    );
    assert_eq!(lines, 300_000, "every line is still read");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..20]);
    assert!(text.ends_with("299999\n300000\n"));
    let total: usize = (1..=300_000).map(|n: u32| n.to_string().len() + 1).sum();
    let dropped = total - (32 << 10) - (32 << 10);
    assert!(
        text.contains(&format!(
            "[wavecrew: {dropped} bytes dropped here: the output passed [limits] max_output_bytes = 65536; its first 32768 and last 32768 bytes are kept]"
        )),
        "{}",
        &text[(32 << 10) - 10..(32 << 10) + 200]
    );
    assert!(text.len() < (64 << 10) + 300);
    let err_len = std::fs::metadata(&err).unwrap().len();
    assert!(err_len < (64 << 10) + 300, "{err_len}");
}
