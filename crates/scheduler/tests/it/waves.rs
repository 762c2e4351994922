//! Waves: examples from the seeds and the layering properties.

use std::collections::HashMap;

use proptest::prelude::*;
use wavecrew_scheduler::{BuildOptions, CyclePolicy, Dag};

use crate::support::{id, names, node, random_dag, tid};

#[test]
fn completed_dependency_is_satisfied_not_a_cycle() {
    // Seed 000 called this a cycle: IMPL-002's dependency is already done.
    let opts = BuildOptions::default().with_satisfied([id("IMPL-001")]);
    let dag = Dag::build(
        [
            node("IMPL-002", &["IMPL-001"]),
            node("IMPL-003", &["IMPL-002"]),
        ],
        &opts,
    )
    .unwrap();
    assert_eq!(
        names(&dag.waves().waves),
        [vec!["IMPL-002"], vec!["IMPL-003"]]
    );
}

#[test]
fn plan_text_numbers_resolve() {
    // "IMPL-3 depends on IMPL-1, IMPL-2" gives both edges.
    let dag = Dag::build(
        [
            node("IMPL-001", &[]),
            node("IMPL-002", &[]),
            node("IMPL-003", &["IMPL-1", "IMPL-2"]),
        ],
        &BuildOptions::default(),
    )
    .unwrap();
    assert_eq!(
        names(&dag.waves().waves),
        [vec!["IMPL-001", "IMPL-002"], vec!["IMPL-003"]]
    );
    assert_eq!(
        dag.get("IMPL-003").unwrap().deps,
        [id("IMPL-001"), id("IMPL-002")]
    );
    assert_eq!(
        dag.dependencies("IMPL-003"),
        [&id("IMPL-001"), &id("IMPL-002")]
    );
    assert_eq!(dag.dependents("IMPL-001"), [&id("IMPL-003")]);
}

#[test]
fn force_policy_serialises_a_cycle_like_seed_004() {
    let opts = BuildOptions::default().with_cycle_policy(CyclePolicy::Force);
    let dag = Dag::build(
        [
            node("IMPL-2", &["IMPL-3"]),
            node("IMPL-3", &["IMPL-2"]),
            node("IMPL-4", &["IMPL-3"]),
        ],
        &opts,
    )
    .unwrap();
    let w = dag.waves();
    assert_eq!(
        names(&w.waves),
        [vec!["IMPL-2"], vec!["IMPL-3"], vec!["IMPL-4"]]
    );
    assert_eq!(w.forced, [id("IMPL-2")]);
    assert_eq!(w.warnings.len(), 1);
    assert_eq!(
        dag.cycles()[0].path(),
        [id("IMPL-2"), id("IMPL-3"), id("IMPL-2")]
    );
    // Critical path follows the forced order, ignoring the broken edge.
    assert_eq!(
        dag.critical_path().path,
        [id("IMPL-2"), id("IMPL-3"), id("IMPL-4")]
    );
}

#[test]
fn abort_policy_refuses_the_same_cycle() {
    let err = Dag::build(
        [node("IMPL-2", &["IMPL-3"]), node("IMPL-3", &["IMPL-2"])],
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.problems()[0].kind(), "cycle");
}

#[test]
fn large_chain_is_linear() {
    let n = 200_000;
    let nodes = (0..n).map(|i| {
        let deps = if i == 0 {
            vec![]
        } else {
            vec![id(&format!("C-{:06}", i - 1))]
        };
        wavecrew_scheduler::TaskNode::new(id(&format!("C-{i:06}")), deps)
    });
    let dag = Dag::build(nodes, &BuildOptions::default()).unwrap();
    assert_eq!(dag.waves().len(), n);
    assert_eq!(dag.critical_path().path.len(), n);
}

proptest! {
    #[test]
    fn waves_are_earliest_kahn_levels(g in random_dag(80)) {
        let dag = Dag::build(g.nodes(), &BuildOptions::default()).unwrap();
        let waves = dag.waves();
        prop_assert!(waves.forced.is_empty());
        let mut wave_of = HashMap::new();
        for (k, w) in waves.waves.iter().enumerate() {
            prop_assert!(!w.is_empty());
            prop_assert!(w.windows(2).all(|p| p[0] < p[1]), "wave {} not sorted", k);
            for t in w {
                prop_assert!(wave_of.insert(t.clone(), k).is_none(), "{} in two waves", t);
            }
        }
        for (i, deps) in g.deps.iter().enumerate() {
            let t = tid(i);
            if g.done[i] {
                prop_assert!(!wave_of.contains_key(&t));
                continue;
            }
            // Exactly one wave, after every pending dependency, and the earliest such.
            let mine = wave_of[&t];
            let mut expected = 0;
            for &d in deps {
                if !g.done[d] {
                    let theirs = wave_of[&tid(d)];
                    prop_assert!(theirs < mine, "{} (wave {}) depends on {} (wave {})", t, mine, tid(d), theirs);
                    expected = expected.max(theirs + 1);
                }
            }
            prop_assert_eq!(mine, expected, "{} is not in its earliest wave", t);
            prop_assert_eq!(dag.wave_of(t.as_str()), Some(mine));
        }
        prop_assert_eq!(wave_of.len(), g.done.iter().filter(|d| !**d).count());
    }

    #[test]
    fn critical_path_is_a_longest_chain(g in random_dag(60), ests in prop::collection::vec(0.0f64..10.0, 60)) {
        let nodes: Vec<_> = g.nodes().into_iter().map(|n| {
            let i: usize = n.id.number().unwrap().try_into().unwrap();
            n.with_estimate(ests[i])
        }).collect();
        let dag = Dag::build(nodes, &BuildOptions::default()).unwrap();
        let cp = dag.critical_path();
        // The path is a chain of dependencies and its total matches.
        let mut sum = 0.0;
        for (k, t) in cp.path.iter().enumerate() {
            sum += dag.get(t.as_str()).unwrap().estimate;
            if k > 0 {
                prop_assert!(dag.dependencies(t.as_str()).contains(&&cp.path[k - 1]));
            }
        }
        prop_assert!((sum - cp.total).abs() < 1e-9);
        // No task's remaining length exceeds the total; each is its estimate
        // plus the longest of its dependents'.
        for (t, rem) in dag.remaining_lengths() {
            prop_assert!(rem <= cp.total + 1e-9);
            let tail = dag.dependents(t.as_str()).iter().map(|d| dag.remaining_length(d.as_str()).unwrap()).fold(0.0, f64::max);
            prop_assert!((rem - dag.get(t.as_str()).unwrap().estimate - tail).abs() < 1e-9);
        }
    }
}

#[test]
fn petgraph_view_and_borrowed_waves() {
    let dag = Dag::build(
        [
            node("G-3", &["G-1", "G-2"]),
            node("G-1", &[]),
            node("G-2", &["G-1"]),
            node("G-0", &[]).with_done(true),
        ],
        &BuildOptions::default(),
    )
    .unwrap();
    let g = dag.graph();
    assert_eq!(g.node_count(), 4);
    assert_eq!(g.edge_count(), 3);
    let one = petgraph::graph::NodeIndex::new(dag.node_index("G-1").unwrap() as usize);
    let mut out: Vec<&str> = g.neighbors(one).map(|j| g[j].as_str()).collect();
    out.sort_unstable();
    assert_eq!(out, ["G-2", "G-3"]);
    let topo = petgraph::algo::toposort(g, None).unwrap();
    assert_eq!(g[topo[0]].as_str(), "G-0");
    let borrowed: Vec<Vec<&str>> = dag
        .wave_ids()
        .iter()
        .map(|w| w.iter().map(|t| t.as_str()).collect())
        .collect();
    assert_eq!(borrowed, names(&dag.waves().waves));
    assert_eq!(dag.wave_count(), 3);
    assert_eq!(dag.node_index("nope"), None);
    assert!(dag.node_by_index(99).is_none());
}

#[test]
fn unpadded_and_mixed_width_ids_resolve_exactly() {
    // Unpadded ids use the dense index; a padded spelling is resolved by
    // number, and mixed widths fall back to the hashed index.
    let dag = Dag::build(
        [
            node("U-9", &[]),
            node("U-10", &["U-9"]),
            node("U-11", &["U-09"]),
        ],
        &BuildOptions::default(),
    )
    .unwrap();
    assert_eq!(dag.get("U-11").unwrap().deps, [id("U-9")]);
    let dag = Dag::build(
        [
            node("M-5", &[]),
            node("M-05", &["M-5"]),
            node("M-006", &["M-05"]),
        ],
        &BuildOptions::default(),
    )
    .unwrap();
    assert_eq!(
        names(&dag.waves().waves),
        [vec!["M-5"], vec!["M-05"], vec!["M-006"]]
    );
}
