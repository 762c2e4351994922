//! The task graph: [`Dag::build`] validates the nodes, builds the
//! adjacency in both directions, and computes the waves once.
//!
//! Edges run from a dependency to its dependent, and exist only between
//! pending tasks: a dependency on a completed task (`done`), or on an id in
//! [`BuildOptions::satisfied`], is satisfied and leaves no edge.
//!
//! The adjacency is compressed sparse rows (every neighbour list
//! contiguous), built in O(V + E) by counting sorts: a million-task graph
//! builds in a fraction of a second. [`Dag::graph`] gives the same graph as
//! a petgraph [`DiGraph`] (built on first use) for petgraph's algorithms;
//! cycle analysis runs petgraph's Tarjan SCC on a petgraph [`Csr`](petgraph::csr::Csr) view.

use std::collections::HashSet;
use std::sync::OnceLock;

use petgraph::graph::{DiGraph, NodeIndex};
use wavecrew_core::TaskId;

use crate::cycles::cycle_problems;
use crate::error::ScheduleError;
use crate::graph::Adjacency;
use crate::index::IdIndex;
use crate::node::TaskNode;
use crate::problem::{CheckReport, GraphProblem};
use crate::validate::{Resolved, resolve};
use crate::waves::{Levels, UNASSIGNED, Waves, kahn_levels};

/// The petgraph form of a [`Dag`]: node `i` (weight: the task id) is
/// [`Dag::node_by_index`]`(i)`; edges run dependency → dependent.
pub type TaskGraph = DiGraph<TaskId, ()>;

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
    nodes: Vec<TaskNode>,
    done: Vec<bool>,
    index: IdIndex,
    /// dependency → dependents.
    succ: Adjacency,
    /// dependent → dependencies.
    pred: Adjacency,
    /// `rank[i]`: position of node `i` in id order.
    rank: Vec<u32>,
    /// Node indices in id order.
    order: Vec<u32>,
    levels: Levels,
    policy: CyclePolicy,
    cycles: Vec<GraphProblem>,
    graph: OnceLock<TaskGraph>,
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
    ///
    /// Runs in O(V + E) plus sorting the ids (skipped when the input is
    /// already in id order); cycle analysis only runs when there is a cycle.
    pub fn build(
        nodes: impl IntoIterator<Item = TaskNode>,
        options: &BuildOptions,
    ) -> Result<Dag, ScheduleError> {
        let Resolved {
            nodes,
            done,
            index,
            preds,
            mut problems,
        } = resolve(nodes.into_iter().collect(), &options.satisfied);
        let n = nodes.len();
        #[allow(clippy::cast_possible_truncation)] // at most u32::MAX nodes (validate)
        let mut order: Vec<u32> = (0..n as u32).collect();
        if !nodes.is_sorted_by(|a, b| a.id <= b.id) {
            order.sort_unstable_by(|&a, &b| nodes[a as usize].id.cmp(&nodes[b as usize].id));
        }
        let mut rank = vec![0u32; n];
        for (r, &i) in order.iter().enumerate() {
            #[allow(clippy::cast_possible_truncation)]
            {
                rank[i as usize] = r as u32;
            }
        }

        let pred = Adjacency::from_sorted(n, &preds);
        drop(preds);
        let succ = pred.transpose();

        let force = options.cycle_policy == CyclePolicy::Force;
        let levels = kahn_levels(&nodes, &done, &succ, &pred, &order, force);
        let cycles = if levels.stalled || !levels.forced.is_empty() {
            cycle_problems(&nodes, &succ.to_csr(), &pred, &rank)
        } else {
            Vec::new()
        };
        if !problems.is_empty() || (!force && !cycles.is_empty()) {
            problems.extend(cycles);
            return Err(ScheduleError::Invalid { problems });
        }
        Ok(Dag {
            nodes,
            done,
            index,
            succ,
            pred,
            rank,
            order,
            levels,
            policy: options.cycle_policy,
            cycles,
            graph: OnceLock::new(),
        })
    }

    /// Number of tasks, completed ones included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no task at all.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Number of tasks still to run (not `done`).
    pub fn pending_len(&self) -> usize {
        self.levels
            .level
            .iter()
            .filter(|&&l| l != UNASSIGNED)
            .count()
    }

    /// The task with this id.
    pub fn get(&self, id: &str) -> Option<&TaskNode> {
        self.index_of(id).map(|i| &self.nodes[i])
    }

    /// Every task, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = &TaskNode> + '_ {
        self.order.iter().map(|&i| &self.nodes[i as usize])
    }

    /// The graph as a petgraph [`DiGraph`] (built on first use): node `i`
    /// carries the id of [`Dag::node_by_index`]`(i)` (input order,
    /// duplicates removed); edges run dependency → dependent between
    /// pending tasks.
    pub fn graph(&self) -> &TaskGraph {
        self.graph.get_or_init(|| {
            let mut g = DiGraph::with_capacity(self.nodes.len(), self.succ.targets.len());
            for node in &self.nodes {
                g.add_node(node.id.clone());
            }
            for a in 0..self.nodes.len() {
                for &b in self.succ.of(a) {
                    g.add_edge(NodeIndex::new(a), NodeIndex::new(b as usize), ());
                }
            }
            g
        })
    }

    /// The task at graph node `index`.
    pub fn node_by_index(&self, index: u32) -> Option<&TaskNode> {
        self.nodes.get(index as usize)
    }

    /// The graph node of the task `id`.
    pub fn node_index(&self, id: &str) -> Option<u32> {
        self.index.get(id, |p| self.nodes[p as usize].id.as_str())
    }

    /// The pending tasks that wait for `id`, in id order.
    pub fn dependents(&self, id: &str) -> Vec<&TaskId> {
        self.neighbours(&self.succ, id)
    }

    /// The pending tasks `id` waits for, in id order.
    pub fn dependencies(&self, id: &str) -> Vec<&TaskId> {
        self.neighbours(&self.pred, id)
    }

    fn neighbours<'a>(&'a self, adjacency: &'a Adjacency, id: &str) -> Vec<&'a TaskId> {
        let Some(i) = self.index_of(id) else {
            return Vec::new();
        };
        let mut n: Vec<u32> = adjacency.of(i).to_vec();
        n.sort_unstable_by_key(|&j| self.rank[j as usize]);
        n.into_iter().map(|j| &self.nodes[j as usize].id).collect()
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
        &self.nodes[i]
    }

    pub(crate) fn is_done(&self, i: usize) -> bool {
        self.done[i]
    }

    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        self.node_index(id).map(|i| i as usize)
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

    /// Pending nodes, lowest-numbered first (the force policy's order).
    pub(crate) fn number_order(&self) -> Vec<u32> {
        crate::waves::number_order(&self.nodes, &self.done, &self.order)
    }

    /// Pending successors (dependents) of node `i`.
    pub(crate) fn successors(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.succ.of(i).iter().map(|&j| j as usize)
    }

    /// Number of pending dependencies of node `i`.
    pub(crate) fn in_degree(&self, i: usize) -> usize {
        self.pred.of(i).len()
    }
}

impl Dag {
    /// The waves (Kahn levels, computed at build time), as owned ids.
    pub fn waves(&self) -> Waves {
        let levels = self.levels();
        let id = |i: &u32| self.node_at(*i as usize).id.clone();
        Waves {
            waves: levels.iter().map(|w| w.iter().map(id).collect()).collect(),
            forced: levels.forced.iter().map(id).collect(),
            warnings: levels.warnings.clone(),
        }
    }

    /// The waves as borrowed ids: the same as [`Dag::waves`] without
    /// copying an id (what a million-task graph wants).
    pub fn wave_ids(&self) -> Vec<Vec<&TaskId>> {
        self.levels()
            .iter()
            .map(|w| w.iter().map(|&i| &self.node_at(i as usize).id).collect())
            .collect()
    }

    /// Number of waves.
    pub fn wave_count(&self) -> usize {
        self.levels().count()
    }

    /// The wave (0-based) of the task `id`; `None` for a completed or
    /// unknown task.
    pub fn wave_of(&self, id: &str) -> Option<usize> {
        let level = *self.levels().level.get(self.index_of(id)?)?;
        (level != UNASSIGNED).then_some(level as usize)
    }
}

impl CheckReport {
    /// The report for the result of [`Dag::build`], which fails only with
    /// [`ScheduleError::Invalid`] (at least one problem).
    pub fn from_build(result: &Result<Dag, ScheduleError>) -> Self {
        match result {
            Ok(dag) => Self {
                ok: true,
                errors: Vec::new(),
                warnings: dag.cycles().to_vec(),
            },
            Err(e) => Self {
                ok: false,
                errors: e.problems().to_vec(),
                warnings: Vec::new(),
            },
        }
    }
}
