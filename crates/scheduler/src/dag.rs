//! The task graph: [`Dag::build`] validates the nodes and builds a petgraph
//! [`DiGraph`], then computes the waves once.
//!
//! Edges run from a dependency to its dependent, and exist only between
//! pending tasks: a dependency on a completed task (`done`), or on an id in
//! [`BuildOptions::satisfied`], is satisfied and leaves no edge.

use std::collections::{HashMap, HashSet};

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use wavecrew_core::TaskId;

use crate::cycles::cycle_problems;
use crate::error::ScheduleError;
use crate::node::TaskNode;
use crate::problem::GraphProblem;
use crate::validate::{Resolved, resolve};
use crate::waves::{Levels, kahn_levels};

/// What to do when tasks wait on each other in a cycle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CyclePolicy {
    /// Refuse the graph: [`Dag::build`] fails with the cycles (seed 000).
    #[default]
    Abort,
    /// Accept it: whenever no task is ready but tasks remain, release the
    /// lowest-numbered waiting task, with a warning (seed 004).
    Force,
}

/// Options for [`Dag::build`].
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Ids of tasks completed outside this graph (not in the node list);
    /// depending on them counts as satisfied.
    pub satisfied: HashSet<TaskId>,
    /// What to do with cycles.
    pub cycle_policy: CyclePolicy,
}

impl BuildOptions {
    /// Options with the given externally satisfied ids.
    #[must_use]
    pub fn with_satisfied(mut self, ids: impl IntoIterator<Item = TaskId>) -> Self {
        self.satisfied.extend(ids);
        self
    }

    /// Options with the given cycle policy.
    #[must_use]
    pub fn with_cycle_policy(mut self, policy: CyclePolicy) -> Self {
        self.cycle_policy = policy;
        self
    }
}

/// A validated task graph with its waves.
#[derive(Debug, Clone)]
pub struct Dag {
    graph: DiGraph<TaskNode, ()>,
    index: HashMap<TaskId, u32>,
    /// `rank[i]`: position of node `i` in id order.
    rank: Vec<u32>,
    /// Node indices in id order.
    order: Vec<u32>,
    levels: Levels,
    policy: CyclePolicy,
    cycles: Vec<GraphProblem>,
}

impl Dag {
    /// Validate `nodes` and build the graph.
    ///
    /// Every problem is collected before failing: duplicate ids (the first
    /// node of an id is kept), invalid estimates, self dependencies, unknown
    /// dependencies, and cycles (unless the policy is
    /// [`CyclePolicy::Force`], which keeps them as [`Dag::cycles`]).
    ///
    /// A dependency resolves, in order, to: the task with exactly that id;
    /// an id in [`BuildOptions::satisfied`]; the single task or satisfied id
    /// with the same prefix and number (`IMPL-3` → `IMPL-003`, as plan text
    /// writes it). The node's `deps` are rewritten to the resolved ids and
    /// repeats dropped. A completed task's own dependencies are not checked.
    pub fn build(
        nodes: impl IntoIterator<Item = TaskNode>,
        options: &BuildOptions,
    ) -> Result<Dag, ScheduleError> {
        let Resolved {
            nodes,
            index,
            edges,
            mut problems,
        } = resolve(nodes.into_iter().collect(), &options.satisfied);

        let mut order: Vec<u32> = (0..index.len())
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect();
        if !nodes.is_sorted_by(|a, b| a.id <= b.id) {
            order.sort_unstable_by(|&a, &b| nodes[a as usize].id.cmp(&nodes[b as usize].id));
        }
        let mut rank = vec![0; order.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = u32::try_from(r).unwrap_or(u32::MAX);
        }

        let mut graph = DiGraph::with_capacity(nodes.len(), edges.len());
        for node in nodes {
            graph.add_node(node);
        }
        for (a, b) in edges {
            graph.add_edge(NodeIndex::new(a as usize), NodeIndex::new(b as usize), ());
        }

        let force = options.cycle_policy == CyclePolicy::Force;
        let levels = kahn_levels(&graph, &rank, force);
        let cycles = if levels.stalled || !levels.forced.is_empty() {
            cycle_problems(&graph, &rank)
        } else {
            Vec::new()
        };
        if !problems.is_empty() || (!force && !cycles.is_empty()) {
            problems.extend(cycles);
            return Err(ScheduleError::Invalid { problems });
        }
        Ok(Dag {
            graph,
            index,
            rank,
            order,
            levels,
            policy: options.cycle_policy,
            cycles,
        })
    }

    /// Number of tasks, completed ones included.
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    /// Whether the graph has no task at all.
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// Number of tasks still to run (not `done`).
    pub fn pending_len(&self) -> usize {
        self.levels
            .level
            .iter()
            .filter(|&&l| l != crate::waves::UNASSIGNED)
            .count()
    }

    /// The task with this id.
    pub fn get(&self, id: &str) -> Option<&TaskNode> {
        self.index
            .get(id)
            .map(|&i| &self.graph[NodeIndex::new(i as usize)])
    }

    /// Every task, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = &TaskNode> + '_ {
        self.order
            .iter()
            .map(|&i| &self.graph[NodeIndex::new(i as usize)])
    }

    /// The petgraph graph: node weights are the tasks (in input order, ids
    /// deduplicated), edges run dependency → dependent between pending tasks.
    pub fn graph(&self) -> &DiGraph<TaskNode, ()> {
        &self.graph
    }

    /// The pending tasks that wait for `id`, in id order.
    pub fn dependents(&self, id: &str) -> Vec<&TaskId> {
        self.neighbors(id, Direction::Outgoing)
    }

    /// The pending tasks `id` waits for, in id order.
    pub fn dependencies(&self, id: &str) -> Vec<&TaskId> {
        self.neighbors(id, Direction::Incoming)
    }

    fn neighbors(&self, id: &str, dir: Direction) -> Vec<&TaskId> {
        let Some(&i) = self.index.get(id) else {
            return Vec::new();
        };
        let mut n: Vec<usize> = self
            .graph
            .neighbors_directed(NodeIndex::new(i as usize), dir)
            .map(NodeIndex::index)
            .collect();
        n.sort_unstable_by_key(|&j| self.rank[j]);
        n.into_iter()
            .map(|j| &self.graph[NodeIndex::new(j)].id)
            .collect()
    }

    /// The cycle policy the graph was built with.
    pub fn cycle_policy(&self) -> CyclePolicy {
        self.policy
    }

    /// The cycles accepted under [`CyclePolicy::Force`] (empty otherwise).
    pub fn cycles(&self) -> &[GraphProblem] {
        &self.cycles
    }

    pub(crate) fn node_at(&self, i: usize) -> &TaskNode {
        &self.graph[NodeIndex::new(i)]
    }

    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        self.index.get(id).map(|&i| i as usize)
    }

    pub(crate) fn rank(&self) -> &[u32] {
        &self.rank
    }

    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    pub(crate) fn levels(&self) -> &Levels {
        &self.levels
    }

    /// Pending successors (dependents) of node `i`.
    pub(crate) fn successors(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.graph
            .neighbors_directed(NodeIndex::new(i), Direction::Outgoing)
            .map(NodeIndex::index)
    }

    /// Number of pending dependencies of node `i`.
    pub(crate) fn in_degree(&self, i: usize) -> usize {
        self.graph
            .neighbors_directed(NodeIndex::new(i), Direction::Incoming)
            .count()
    }
}
