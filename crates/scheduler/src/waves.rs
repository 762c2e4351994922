//! Waves: Kahn levels in O(V + E).
//!
//! Wave 0 holds the pending tasks with no pending dependency; wave `k + 1`
//! the tasks whose last pending dependency sits in wave `k`, so each task
//! is in the earliest wave possible. Completed tasks are in no wave. Ids in
//! a wave are sorted.
//!
//! Under [`CyclePolicy::Force`](crate::CyclePolicy::Force), when no task is
//! ready but tasks remain (they wait on a cycle), the lowest-numbered waiting
//! task (by [`TaskId::number`], then id; ids without a number last) is
//! released alone into the next wave, with a warning, and layering goes on.

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use wavecrew_core::TaskId;

use crate::dag::Dag;
use crate::node::TaskNode;

/// The level of a task that is in no wave (completed, or stuck on a cycle).
pub(crate) const UNASSIGNED: u32 = u32::MAX;

/// The waves of a [`Dag`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waves {
    /// The waves in order; ids sorted within each.
    pub waves: Vec<Vec<TaskId>>,
    /// Tasks released by the force policy, in release order.
    pub forced: Vec<TaskId>,
    /// One warning per forced release.
    pub warnings: Vec<String>,
}

impl Waves {
    /// Number of waves.
    pub fn len(&self) -> usize {
        self.waves.len()
    }

    /// Whether there is no wave (nothing pending).
    pub fn is_empty(&self) -> bool {
        self.waves.is_empty()
    }

    /// Number of tasks over all waves.
    pub fn task_count(&self) -> usize {
        self.waves.iter().map(Vec::len).sum()
    }

    /// The wave (0-based) holding `id`.
    pub fn wave_of(&self, id: &str) -> Option<usize> {
        self.waves
            .iter()
            .position(|w| w.iter().any(|t| t.as_str() == id))
    }
}

impl Dag {
    /// The waves (Kahn levels), computed once at build time.
    pub fn waves(&self) -> Waves {
        let levels = self.levels();
        let id = |i: &u32| self.node_at(*i as usize).id.clone();
        Waves {
            waves: levels
                .waves
                .iter()
                .map(|w| w.iter().map(id).collect())
                .collect(),
            forced: levels.forced.iter().map(id).collect(),
            warnings: levels.warnings.clone(),
        }
    }

    /// The wave (0-based) of the task `id`; `None` for a completed or
    /// unknown task.
    pub fn wave_of(&self, id: &str) -> Option<usize> {
        let level = *self.levels().level.get(self.index_of(id)?)?;
        (level != UNASSIGNED).then_some(level as usize)
    }
}

/// Kahn levels over node indices.
#[derive(Debug, Clone, Default)]
pub(crate) struct Levels {
    /// Node indices per wave, sorted by rank.
    pub(crate) waves: Vec<Vec<u32>>,
    /// Wave of each node, [`UNASSIGNED`] for completed ones.
    pub(crate) level: Vec<u32>,
    /// Forced releases, in order.
    pub(crate) forced: Vec<u32>,
    /// One warning per forced release.
    pub(crate) warnings: Vec<String>,
    /// Layering stopped on a cycle (abort policy).
    pub(crate) stalled: bool,
}

/// Layer the pending nodes of `graph`; `rank` orders nodes by id.
pub(crate) fn kahn_levels(graph: &DiGraph<TaskNode, ()>, rank: &[u32], force: bool) -> Levels {
    let n = graph.node_count();
    let mut waiting = vec![0u32; n];
    for e in graph.raw_edges() {
        waiting[e.target().index()] += 1;
    }
    let mut level = vec![UNASSIGNED; n];
    let pending = graph.node_weights().filter(|t| !t.done).count();
    #[allow(clippy::cast_possible_truncation)] // node counts fit in u32 (see validate::dedupe)
    let mut current: Vec<u32> = (0..n)
        .filter(|&i| waiting[i] == 0 && !graph[NodeIndex::new(i)].done)
        .map(|i| i as u32)
        .collect();
    let mut out = Levels::default();
    let mut assigned = 0usize;
    let mut force_order: Option<(Vec<u32>, usize)> = None;

    while assigned < pending {
        if current.is_empty() {
            if !force {
                out.stalled = true;
                break;
            }
            let (list, cursor) = force_order.get_or_insert_with(|| (number_order(graph, rank), 0));
            while level[list[*cursor] as usize] != UNASSIGNED {
                *cursor += 1;
            }
            let pick = list[*cursor];
            let wave = out.waves.len() + 1;
            out.warnings.push(format!(
                "wave {wave}: no task was ready but {} were still waiting on a dependency cycle; \
                 released `{}`, the lowest-numbered waiting task",
                pending - assigned,
                graph[NodeIndex::new(pick as usize)].id
            ));
            out.forced.push(pick);
            current.push(pick);
        }
        current.sort_unstable_by_key(|&i| rank[i as usize]);
        #[allow(clippy::cast_possible_truncation)] // at most one wave per task
        let this_level = out.waves.len() as u32;
        for &i in &current {
            level[i as usize] = this_level;
        }
        assigned += current.len();
        let mut next = Vec::new();
        for &i in &current {
            for j in graph.neighbors_directed(NodeIndex::new(i as usize), Direction::Outgoing) {
                let j = j.index();
                waiting[j] -= 1;
                if waiting[j] == 0 && level[j] == UNASSIGNED {
                    #[allow(clippy::cast_possible_truncation)]
                    next.push(j as u32);
                }
            }
        }
        out.waves.push(std::mem::replace(&mut current, next));
    }
    out.level = level;
    out
}

/// Pending nodes ordered "lowest-numbered first": by number, then id; ids
/// without a number last.
fn number_order(graph: &DiGraph<TaskNode, ()>, rank: &[u32]) -> Vec<u32> {
    #[allow(clippy::cast_possible_truncation)]
    let mut list: Vec<u32> = graph
        .node_indices()
        .filter(|&i| !graph[i].done)
        .map(|i| i.index() as u32)
        .collect();
    list.sort_unstable_by_key(|&i| {
        let number = graph[NodeIndex::new(i as usize)].id.number();
        (number.is_none(), number, rank[i as usize])
    });
    list
}

#[cfg(test)]
mod tests {
    use crate::{BuildOptions, CyclePolicy, Dag, TaskNode};
    use wavecrew_core::TaskId;

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    fn node(s: &str, deps: &[&str]) -> TaskNode {
        TaskNode::new(id(s), deps.iter().map(|d| id(d)))
    }

    fn names(w: &[Vec<TaskId>]) -> Vec<Vec<&str>> {
        w.iter()
            .map(|w| w.iter().map(TaskId::as_str).collect())
            .collect()
    }

    #[test]
    fn diamond_has_three_waves() {
        let dag = Dag::build(
            [
                node("T-4", &["T-2", "T-3"]),
                node("T-2", &["T-1"]),
                node("T-3", &["T-1"]),
                node("T-1", &[]),
            ],
            &BuildOptions::default(),
        )
        .unwrap();
        let w = dag.waves();
        assert_eq!(
            names(&w.waves),
            [vec!["T-1"], vec!["T-2", "T-3"], vec!["T-4"]]
        );
        assert!(w.forced.is_empty());
        assert_eq!(dag.wave_of("T-3"), Some(1));
        assert_eq!(w.wave_of("T-4"), Some(2));
    }

    #[test]
    fn done_tasks_are_in_no_wave() {
        let dag = Dag::build(
            [node("T-1", &[]).with_done(true), node("T-2", &["T-1"])],
            &BuildOptions::default(),
        )
        .unwrap();
        assert_eq!(names(&dag.waves().waves), [vec!["T-2"]]);
        assert_eq!(dag.wave_of("T-1"), None);
        assert_eq!(dag.pending_len(), 1);
    }

    #[test]
    fn force_releases_the_lowest_numbered_waiting_task() {
        let opts = BuildOptions::default().with_cycle_policy(CyclePolicy::Force);
        let dag = Dag::build(
            [
                node("E-1", &[]),
                node("E-7", &["E-3"]),
                node("E-3", &["E-7", "E-1"]),
                node("E-8", &["E-7"]),
            ],
            &opts,
        )
        .unwrap();
        let w = dag.waves();
        assert_eq!(
            names(&w.waves),
            [vec!["E-1"], vec!["E-3"], vec!["E-7"], vec!["E-8"]]
        );
        assert_eq!(w.forced, [id("E-3")]);
        assert_eq!(
            w.warnings,
            [
                "wave 2: no task was ready but 3 were still waiting on a dependency cycle; released `E-3`, the lowest-numbered waiting task"
            ]
        );
        assert_eq!(dag.cycles().len(), 1);
    }
}
