//! Many writers at once, and writers killed mid-write.

use std::collections::BTreeSet;
use std::time::Duration;

use wavecrew_core::{ListFilter, NewMessage};

use crate::children::{bus_at, spawn};

fn ids_of(root: &std::path::Path) -> Vec<u64> {
    let text = std::fs::read_to_string(bus_at(root).paths().log()).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            v["id"].as_str().unwrap()[4..].parse().unwrap()
        })
        .collect()
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn eight_processes_never_mint_the_same_id() {
    let procs = env_count("WAVECREW_STRESS_PROCS", 8);
    let each = env_count("WAVECREW_STRESS_EACH", 2000);
    let tmp = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..procs)
        .map(|_| spawn("children::child_append", "append", tmp.path(), each))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let ids = ids_of(tmp.path());
    let expected: Vec<u64> = (1..=(procs * each) as u64).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, expected, "every id exactly once");
    assert_eq!(ids, expected, "ids are in file order");
}

#[test]
fn threads_share_one_bus_safely() {
    let tmp = tempfile::tempdir().unwrap();
    let bus = bus_at(tmp.path());
    std::thread::scope(|s| {
        for t in 0..8 {
            let bus = &bus;
            s.spawn(move || {
                for _ in 0..200 {
                    bus.log(NewMessage {
                        from: format!("t{t}"),
                        ..NewMessage::default()
                    })
                    .unwrap();
                }
            });
        }
    });
    let ids: BTreeSet<u64> = ids_of(tmp.path()).into_iter().collect();
    assert_eq!(ids, (1..=1600).collect());
}

#[test]
fn a_writer_killed_mid_line_leaves_a_readable_log() {
    let tmp = tempfile::tempdir().unwrap();
    let bus = bus_at(tmp.path());
    for _ in 0..3 {
        bus.log(NewMessage {
            from: "a".into(),
            ..NewMessage::default()
        })
        .unwrap();
    }
    let out = spawn("children::child_half_line", "half", tmp.path(), 0)
        .wait_with_output()
        .unwrap();
    assert!(!out.status.success(), "the child killed itself");
    // Readers skip the fragment.
    let fresh = bus_at(tmp.path());
    let list = fresh.list(&ListFilter::default()).unwrap();
    assert_eq!(list.messages.len(), 3);
    assert_eq!(fresh.status().unwrap().total_messages, 3);
    // The next append repairs the line and takes the next id.
    let r = fresh
        .log(NewMessage {
            from: "b".into(),
            ..NewMessage::default()
        })
        .unwrap();
    assert_eq!(r.id, "MSG-004");
    let text = std::fs::read_to_string(fresh.paths().log()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        5,
        "the fragment keeps its bytes on its own line"
    );
    assert!(lines[3].ends_with(r#""from":"kil"#));
    assert!(lines[4].contains(r#""id":"MSG-004""#));
    assert_eq!(
        fresh.list(&ListFilter::default()).unwrap().messages.len(),
        4
    );
}

#[test]
fn a_writer_killed_at_a_random_moment_loses_nothing_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let bus = bus_at(tmp.path());
    bus.log(NewMessage {
        from: "first".into(),
        ..NewMessage::default()
    })
    .unwrap();
    for delay_ms in [5_u64, 20, 50] {
        let mut child = spawn("children::child_append", "append", tmp.path(), 1_000_000);
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        let before = bus_at(tmp.path())
            .list(&ListFilter {
                last: 1,
                ..ListFilter::default()
            })
            .unwrap();
        let last = before.messages[0].number().unwrap();
        let r = bus_at(tmp.path())
            .log(NewMessage {
                from: "after".into(),
                ..NewMessage::default()
            })
            .unwrap();
        assert_eq!(r.number().unwrap(), last + 1);
    }
    let text = std::fs::read_to_string(bus.paths().log()).unwrap();
    let parsed = text
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
        .count();
    assert!(
        parsed + 3 >= text.lines().count(),
        "at most one torn line per kill"
    );
}
