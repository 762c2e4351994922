//! Embedding the message bus: open a session's bus (ccw's
//! `.workflow/.team/<session>/.msg/` files), log records, share state
//! between roles, and follow the log as records arrive.
//!
//! `cargo run -p wavecrew-msgbus --example embed_bus`

use serde_json::json;
use wavecrew_core::{ListFilter, NewMessage};
use wavecrew_msgbus::{Bus, Durability, KeyUse};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let (bus, _warning) = Bus::open(
        root.path(),
        "TC-embed-2026-11-23",
        KeyUse::Write,
        Durability::Batch,
    )?;

    // A role shares state; another reads it.
    bus.log(NewMessage {
        from: "strategist".into(),
        kind: Some("state_update".into()),
        data: json!({"test_strategy": {"framework": "Pytest"}})
            .as_object()
            .cloned(),
        ..NewMessage::default()
    })?;
    let state = bus.get_state(Some("strategist"))?;
    println!("strategist state: {}", state.unwrap_or_default());

    // Appending to shared arrays without losing a concurrent writer's entry.
    bus.update_state(
        NewMessage {
            from: "executor".into(),
            ..NewMessage::default()
        },
        |s| {
            let mut runs = s
                .get("runs")
                .and_then(|r| r.as_array())
                .cloned()
                .unwrap_or_default();
            runs.push(json!("run-001"));
            json!({"runs": runs})
                .as_object()
                .cloned()
                .unwrap_or_default()
        },
    )?;

    // Records, and following them from an offset.
    let mut follower = bus.follow(0);
    bus.log(NewMessage {
        from: "executor".into(),
        kind: Some("task_complete".into()),
        summary: Some("[executor] IMPL-001 complete".into()),
        ..NewMessage::default()
    })?;
    for m in follower.poll_now()? {
        println!("{} {} ({}) {}", m.id, m.from, m.kind, m.summary);
    }
    let recent = bus.list(&ListFilter {
        last: 5,
        ..ListFilter::default()
    })?;
    println!("{} records in all", recent.total);
    Ok(())
}
