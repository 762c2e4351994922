//! Graph output: DOT ([`Dag::to_dot`]), Mermaid ([`Dag::to_mermaid`]) and
//! JSON ([`Dag::to_json`]).
//!
//! All three draw waves as ranks, the critical path in bold red, and
//! optionally each task's state as a colour (see [`state_colour`]). Output
//! is deterministic: tasks and edges are sorted by id. Edges run from a
//! dependency to its dependent; completed tasks appear outside the waves,
//! dashed; externally satisfied ids are not drawn.

mod dot;
mod json;
mod mermaid;

use std::collections::{HashMap, HashSet};

use wavecrew_core::TaskId;

use crate::dag::Dag;

/// A map from task id to state name (`pending`, `in_progress`,
/// `completed`, `failed`, `skipped`, `blocked`), as the render functions
/// take it.
pub type StateMap<'s> = HashMap<TaskId, &'s str>;

/// The fill colour for a task state; `None` for an unknown state.
pub fn state_colour(state: &str) -> Option<&'static str> {
    Some(match state {
        "pending" => "#e5e7eb",
        "in_progress" => "#fde68a",
        "completed" => "#86efac",
        "failed" => "#fca5a5",
        "skipped" => "#c4b5fd",
        "blocked" => "#fdba74",
        _ => return None,
    })
}

/// The colour of the critical path.
pub(crate) const CRITICAL_COLOUR: &str = "#dc2626";

/// What every format needs, computed once.
pub(crate) struct Layout<'d> {
    pub(crate) dag: &'d Dag,
    /// Node indices per wave (sorted by id).
    pub(crate) waves: Vec<Vec<usize>>,
    /// Completed tasks (sorted by id).
    pub(crate) done: Vec<usize>,
    /// Edges `(dependency, dependent)` between tasks of the graph, sorted.
    pub(crate) edges: Vec<(usize, usize)>,
    pub(crate) critical_nodes: HashSet<usize>,
    pub(crate) critical_edges: HashSet<(usize, usize)>,
    pub(crate) critical_path: Vec<TaskId>,
}

impl<'d> Layout<'d> {
    pub(crate) fn new(dag: &'d Dag) -> Self {
        let waves = dag
            .levels()
            .iter()
            .map(|w| w.iter().map(|&i| i as usize).collect())
            .collect();
        let done = dag
            .order()
            .iter()
            .map(|&i| i as usize)
            .filter(|&i| dag.is_done(i))
            .collect();
        let mut edges: Vec<(usize, usize)> = Vec::new();
        for &i in dag.order() {
            let i = i as usize;
            for dep in &dag.node_at(i).deps {
                if let Some(j) = dag.index_of(dep.as_str()) {
                    edges.push((j, i));
                }
            }
        }
        let rank = dag.rank();
        edges.sort_unstable_by_key(|&(a, b)| (rank[a], rank[b]));
        edges.dedup();
        let critical_path = dag.critical_path().path;
        let crit: Vec<usize> = critical_path
            .iter()
            .filter_map(|id| dag.index_of(id.as_str()))
            .collect();
        Self {
            dag,
            waves,
            done,
            edges,
            critical_nodes: crit.iter().copied().collect(),
            critical_edges: crit.windows(2).map(|w| (w[0], w[1])).collect(),
            critical_path,
        }
    }

    pub(crate) fn id(&self, i: usize) -> &'d TaskId {
        &self.dag.node_at(i).id
    }

    /// The state of task `i`: from the map, else `completed` for done tasks
    /// when a map was given; `None` without a map.
    pub(crate) fn state<'s>(&self, states: Option<&StateMap<'s>>, i: usize) -> Option<&'s str> {
        let states = states?;
        states
            .get(self.id(i))
            .copied()
            .or(self.dag.is_done(i).then_some("completed"))
    }
}
