//! Helpers shared by the test modules.

use proptest::prelude::*;
use wavecrew_core::TaskId;
use wavecrew_scheduler::TaskNode;

/// A task id; panics on an invalid one (tests only).
pub(crate) fn id(s: &str) -> TaskId {
    TaskId::new(s).unwrap()
}

/// A pending node with these dependencies.
pub(crate) fn node(s: &str, deps: &[&str]) -> TaskNode {
    TaskNode::new(id(s), deps.iter().map(|d| id(d)))
}

/// Ids of waves as plain strings, for assertions.
pub(crate) fn names(waves: &[Vec<TaskId>]) -> Vec<Vec<&str>> {
    waves
        .iter()
        .map(|w| w.iter().map(TaskId::as_str).collect())
        .collect()
}

/// The id of the `i`-th random task.
pub(crate) fn tid(i: usize) -> TaskId {
    id(&format!("T-{i:03}"))
}

/// A random DAG description: for each task, its dependencies among earlier
/// tasks, and whether it is already done. Node order is shuffled by the
/// caller's choice of `rotate`.
#[derive(Debug, Clone)]
pub(crate) struct RandomDag {
    pub(crate) deps: Vec<Vec<usize>>,
    pub(crate) done: Vec<bool>,
    pub(crate) rotate: usize,
}

impl RandomDag {
    /// The nodes, in a rotated order so input order differs from id order.
    pub(crate) fn nodes(&self) -> Vec<TaskNode> {
        let mut nodes: Vec<TaskNode> = self
            .deps
            .iter()
            .enumerate()
            .map(|(i, d)| TaskNode::new(tid(i), d.iter().map(|&j| tid(j))).with_done(self.done[i]))
            .collect();
        let n = nodes.len();
        nodes.rotate_left(self.rotate % n.max(1));
        nodes
    }
}

/// Random DAGs of 1 to `max` tasks, each with up to 4 earlier dependencies.
pub(crate) fn random_dag(max: usize) -> impl Strategy<Value = RandomDag> {
    (1..=max)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 0..4), n),
                prop::collection::vec(prop::bool::weighted(0.1), n),
                0..n,
            )
        })
        .prop_map(|(picks, done, rotate)| {
            let deps = picks
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    let mut d: Vec<usize> = if i == 0 {
                        Vec::new()
                    } else {
                        p.iter().map(|x| x.index(i)).collect()
                    };
                    d.sort_unstable();
                    d.dedup();
                    d
                })
                .collect();
            RandomDag { deps, done, rotate }
        })
}
