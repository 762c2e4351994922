//! DOT, Mermaid and JSON output of a small fixture graph.

use std::collections::HashMap;

use wavecrew_core::TaskId;
use wavecrew_scheduler::{BuildOptions, Dag, state_colour};

use crate::support::{id, node};

/// Seven tasks, one already done, three waves; the critical path is
/// IMPL-001 → IMPL-002 → IMPL-004.
fn fixture() -> Dag {
    Dag::build(
        [
            node("IMPL-000", &[]).with_done(true),
            node("IMPL-001", &["IMPL-000"]).with_estimate(2.0),
            node("IMPL-002", &["IMPL-001"]).with_estimate(5.0),
            node("IMPL-003", &["IMPL-1"]),
            node("IMPL-004", &["IMPL-002", "IMPL-003"]),
            node("IMPL-005", &[]).with_estimate(3.0),
            node("IMPL-006", &["IMPL-005", "IMPL-003"]),
        ],
        &BuildOptions::default(),
    )
    .unwrap()
}

fn states() -> HashMap<TaskId, &'static str> {
    [
        ("IMPL-001", "completed"),
        ("IMPL-002", "in_progress"),
        ("IMPL-003", "failed"),
        ("IMPL-004", "pending"),
        ("IMPL-005", "skipped"),
        ("IMPL-006", "blocked"),
    ]
    .into_iter()
    .map(|(k, v)| (id(k), v))
    .collect()
}

#[test]
fn dot() {
    insta::assert_snapshot!(fixture().to_dot(None));
}

#[test]
fn dot_with_states() {
    insta::assert_snapshot!(fixture().to_dot(Some(&states())));
}

#[test]
fn mermaid() {
    insta::assert_snapshot!(fixture().to_mermaid(None));
}

#[test]
fn mermaid_with_states() {
    insta::assert_snapshot!(fixture().to_mermaid(Some(&states())));
}

#[test]
fn json() {
    insta::assert_json_snapshot!(fixture().to_json(Some(&states())));
}

#[test]
fn json_shape_without_states() {
    let v = fixture().to_json(None);
    assert_eq!(
        v["waves"],
        serde_json::json!([
            ["IMPL-001", "IMPL-005"],
            ["IMPL-002", "IMPL-003"],
            ["IMPL-004", "IMPL-006"]
        ])
    );
    assert_eq!(
        v["critical_path"],
        serde_json::json!(["IMPL-001", "IMPL-002", "IMPL-004"])
    );
    let first = &v["tasks"][0];
    assert_eq!(first["id"], "IMPL-000");
    assert!(first["wave"].is_null());
    assert!(first.get("state").is_none());
    let keys: Vec<&String> = v["tasks"][1].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "deps", "wave", "estimate", "critical"]);
}

#[test]
fn output_is_deterministic_whatever_the_input_order() {
    let a = fixture();
    let mut nodes: Vec<_> = a.nodes().cloned().collect();
    nodes.reverse();
    let b = Dag::build(nodes, &BuildOptions::default()).unwrap();
    assert_eq!(a.to_dot(None), b.to_dot(None));
    assert_eq!(a.to_mermaid(Some(&states())), b.to_mermaid(Some(&states())));
    assert_eq!(a.to_json(None), b.to_json(None));
}

#[test]
fn every_state_has_a_colour() {
    for s in [
        "pending",
        "in_progress",
        "completed",
        "failed",
        "skipped",
        "blocked",
    ] {
        assert!(state_colour(s).is_some(), "{s}");
    }
    assert_eq!(state_colour("weird"), None);
}
