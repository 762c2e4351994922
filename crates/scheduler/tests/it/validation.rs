//! Every validation problem kind, with its message snapshotted.

use std::fmt::Write as _;

use wavecrew_scheduler::{
    BuildOptions, CheckReport, CyclePolicy, Dag, GraphProblem, ProblemKind, TaskNode,
};

use crate::support::{id, node};

/// Build and return the problems (the build must fail).
fn problems(nodes: Vec<TaskNode>) -> Vec<GraphProblem> {
    Dag::build(nodes, &BuildOptions::default())
        .unwrap_err()
        .problems()
        .to_vec()
}

/// One problem per paragraph: kind, message, path, ids, breaking edges.
fn render(problems: &[GraphProblem]) -> String {
    let mut s = String::new();
    for p in problems {
        let join = |ids: &[wavecrew_core::TaskId]| {
            ids.iter()
                .map(wavecrew_core::TaskId::as_str)
                .collect::<Vec<_>>()
                .join(" → ")
        };
        let _ = writeln!(s, "kind: {}\nmessage: {}", p.kind(), p.message());
        if !p.path().is_empty() {
            let _ = writeln!(s, "path: {}", join(p.path()));
        }
        if !p.ids().is_empty() {
            let ids: Vec<&str> = p.ids().iter().map(wavecrew_core::TaskId::as_str).collect();
            let _ = writeln!(s, "ids: {}", ids.join(", "));
        }
        for (task, dep) in p.breaking_edges() {
            let _ = writeln!(s, "break: {task} on {dep}");
        }
        s.push('\n');
    }
    s
}

#[test]
fn cycle_of_two() {
    let p = problems(vec![
        node("IMPL-001", &[]),
        node("IMPL-003", &["IMPL-007"]),
        node("IMPL-007", &["IMPL-003", "IMPL-001"]),
    ]);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].problem_kind(), ProblemKind::Cycle);
    assert_eq!(
        p[0].path(),
        [id("IMPL-003"), id("IMPL-007"), id("IMPL-003")]
    );
    insta::assert_snapshot!(render(&p));
}

#[test]
fn cycle_of_three() {
    let p = problems(vec![
        node("A-1", &["A-3"]),
        node("A-2", &["A-1"]),
        node("A-3", &["A-2"]),
    ]);
    assert_eq!(p[0].breaking_edges().len(), 3);
    insta::assert_snapshot!(render(&p));
}

#[test]
fn cycles_sharing_one_dependency() {
    // X-1 → X-2 → X-3 → → X-2 → X-4 → X-1: "X-1 on X-2" breaks both.
    let p = problems(vec![
        node("X-1", &["X-2"]),
        node("X-2", &["X-3", "X-4"]),
        node("X-3", &["X-1"]),
        node("X-4", &["X-1"]),
    ]);
    assert_eq!(p.len(), 2);
    for c in &p {
        assert_eq!(c.breaking_edges(), [(id("X-1"), id("X-2"))]);
    }
    insta::assert_snapshot!(render(&p));
}

#[test]
fn cycles_sharing_only_a_task() {
    // B-1 ↔ B-2 and B-1 ↔ B-3: no single dependency breaks both.
    let p = problems(vec![
        node("B-1", &["B-2", "B-3"]),
        node("B-2", &["B-1"]),
        node("B-3", &["B-1"]),
    ]);
    assert_eq!(p.len(), 2);
    insta::assert_snapshot!(render(&p));
}

#[test]
fn separate_cycles_are_reported_separately() {
    let p = problems(vec![
        node("P-1", &["P-2"]),
        node("P-2", &["P-1"]),
        node("Q-1", &["Q-2"]),
        node("Q-2", &["Q-1"]),
    ]);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].ids(), [id("P-1"), id("P-2")]);
    assert_eq!(p[1].ids(), [id("Q-1"), id("Q-2")]);
}

#[test]
fn unknown_dependency() {
    let p = problems(vec![node("IMPL-001", &[]), node("IMPL-002", &["IMPL-009"])]);
    assert_eq!(
        p[0].message(),
        "`IMPL-002` depends on `IMPL-009`, which is not a task of this session"
    );
    insta::assert_snapshot!(render(&p));
}

#[test]
fn ambiguous_dependency() {
    let p = problems(vec![
        node("IMPL-01", &[]),
        node("IMPL-001", &[]),
        node("IMPL-002", &["IMPL-1"]),
    ]);
    insta::assert_snapshot!(render(&p));
}

#[test]
fn self_dependency() {
    let p = problems(vec![
        node("IMPL-004", &["IMPL-004"]),
        node("IMPL-005", &["IMPL-5"]),
    ]);
    insta::assert_snapshot!(render(&p));
}

#[test]
fn duplicate_task() {
    let p = problems(vec![
        node("IMPL-001", &[]),
        node("IMPL-002", &[]),
        node("IMPL-001", &[]),
        node("IMPL-001", &[]),
    ]);
    insta::assert_snapshot!(render(&p));
}

#[test]
fn invalid_estimate() {
    let p = problems(vec![
        node("IMPL-001", &[]).with_estimate(f64::NAN),
        node("IMPL-002", &[]).with_estimate(-1.0),
        node("IMPL-003", &[])
            .with_estimate(f64::INFINITY)
            .with_done(true),
    ]);
    assert_eq!(p.len(), 2);
    insta::assert_snapshot!(render(&p));
}

/// Every kind in one graph: all are reported, in a stable order, and the
/// `plan check --json` shape holds.
#[test]
fn all_problems_at_once() {
    let nodes = vec![
        node("IMPL-001", &["IMPL-009"]),
        node("IMPL-002", &["IMPL-002"]),
        node("IMPL-003", &["IMPL-007"]),
        node("IMPL-007", &["IMPL-003"]),
        node("IMPL-002", &[]),
    ];
    let result = Dag::build(nodes, &BuildOptions::default());
    let err = result.as_ref().unwrap_err();
    insta::assert_snapshot!("all_problems_display", err.to_string());
    insta::assert_json_snapshot!("all_problems_check_json", CheckReport::from_build(&result));
}

#[test]
fn check_report_under_force_keeps_cycles_as_warnings() {
    let opts = BuildOptions::default().with_cycle_policy(CyclePolicy::Force);
    let result = Dag::build(vec![node("E-1", &["E-2"]), node("E-2", &["E-1"])], &opts);
    let report = CheckReport::from_build(&result);
    assert!(report.ok);
    assert!(report.errors.is_empty());
    assert_eq!(report.warnings.len(), 1);
    let ok = CheckReport::from_build(&Dag::build(
        vec![node("E-1", &[])],
        &BuildOptions::default(),
    ));
    assert_eq!(
        serde_json::to_value(ok).unwrap(),
        serde_json::json!({"ok": true, "errors": []})
    );
}

#[test]
fn large_cycle_is_named_in_full() {
    let n = 50;
    let nodes = (0..n)
        .map(|i| node(&format!("L-{i:02}"), &[&format!("L-{:02}", (i + 1) % n)]))
        .collect();
    let p = problems(nodes);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].path().len(), n + 1);
    assert_eq!(p[0].path().first(), p[0].path().last());
}
