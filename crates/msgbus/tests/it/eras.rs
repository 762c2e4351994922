//! Logs and metas written by ccw in each era (E1, E2 and E3, ccw-compat §0)
//! read the same through wavecrew: read, list, status and get_state.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wavecrew_core::{ListFilter, NewMessage};
use wavecrew_msgbus::{Bus, Durability, KeyUse, render};

/// Copy a fixture project into a temp dir (readers may write a cache).
fn project(era: &str) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(era);
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&src, tmp.path());
    tmp
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to: PathBuf = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).unwrap();
        }
    }
}

fn open(root: &Path, key: &str) -> Bus {
    Bus::open(root, key, KeyUse::Read, Durability::None)
        .unwrap()
        .0
}

/// Everything a reader sees, as one JSON document.
fn view(bus: &Bus, read_id: &str) -> Value {
    let list = bus.list(&ListFilter::default()).unwrap();
    let mut meta = bus.effective_meta().unwrap();
    if let Some(Value::String(created)) = meta.get_mut("created_at")
        && !created.starts_with("2026-0")
    {
        *created = "[SYNTHESISED FROM THE FOLDER'S BIRTH TIME]".into();
    }
    json!({
        "read": bus.read(read_id).unwrap(),
        "list": render::list_json(&list),
        "status": render::status_json(&bus.status().unwrap()),
        "get_state": bus.get_state(None).unwrap(),
        "effective_meta": meta,
    })
}

#[test]
fn e1_top_level_ref() {
    let tmp = project("e1");
    let bus = open(tmp.path(), "PEX-auth-2026-02-26");
    let r = bus.read("MSG-003").unwrap();
    assert_eq!(
        r.reference(),
        Some(".workflow/.team/PEX-auth-2026-02-26/artifacts/solutions/ISS-20260226-001.json")
    );
    insta::assert_json_snapshot!(view(&bus, "MSG-001"));
}

#[test]
fn e2_legacy_enrichment_and_shutdown() {
    let tmp = project("e2");
    let bus = open(tmp.path(), "TC-rate-limit-2026-03-03");
    let meta = bus.effective_meta().unwrap();
    assert_eq!(
        meta["status"], "completed",
        "a shutdown record completes the session"
    );
    assert_eq!(meta["pipeline_mode"], "standard");
    assert_eq!(meta["roles"], json!(["developer", "reviewer"]));
    insta::assert_json_snapshot!(view(&bus, "MSG-002"));
    // A state_update persists the effective meta; the shutdown still wins.
    bus.log(NewMessage {
        from: "developer".into(),
        kind: Some("state_update".into()),
        data: json!({"k": 1}).as_object().cloned(),
        ..NewMessage::default()
    })
    .unwrap();
    bus.log(NewMessage {
        from: "coordinator".into(),
        kind: Some("shutdown".into()),
        ..NewMessage::default()
    })
    .unwrap();
    assert_eq!(bus.effective_meta().unwrap()["status"], "completed");
}

#[test]
fn e3_corrupt_and_unterminated_lines() {
    let tmp = project("e3");
    let bus = open(tmp.path(), "TST-login-flow-2026-03-04");
    let list = bus.list(&ListFilter::default()).unwrap();
    assert_eq!(
        list.total, 4,
        "the corrupt line and the fragment are not records"
    );
    insta::assert_json_snapshot!(view(&bus, "MSG-003"));
    let state = bus.get_state(Some("strategist")).unwrap().unwrap();
    assert_eq!(state["test_strategy"]["framework"], "Vitest");
    // The next append repairs the fragment and keeps counting.
    let r = bus
        .log(NewMessage {
            from: "analyst".into(),
            ..NewMessage::default()
        })
        .unwrap();
    assert_eq!(r.id, "MSG-005");
    let text = std::fs::read_to_string(bus.paths().log()).unwrap();
    assert!(text.contains("this line is corrupt {\n"));
    // Deleting keeps the corrupt line and the repaired fragment.
    bus.delete("MSG-001").unwrap();
    let after = std::fs::read_to_string(bus.paths().log()).unwrap();
    assert_eq!(after.lines().count(), text.lines().count() - 1);
    assert!(after.contains("this line is corrupt {"));
}
