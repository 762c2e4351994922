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

use wavecrew_core::TaskId;

use crate::graph::Adjacency;
use crate::node::TaskNode;

/// The level of a task that is in no wave (completed, or stuck on a cycle).
pub(crate) const UNASSIGNED: u32 = u32::MAX;

/// The waves of a [`Dag`](crate::Dag).
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

/// Kahn levels over node indices.
#[derive(Debug, Clone, Default)]
pub(crate) struct Levels {
    /// Wave of each node, [`UNASSIGNED`] for completed ones.
    pub(crate) level: Vec<u32>,
    /// Node indices grouped by wave, each wave in id order.
    flat: Vec<u32>,
    /// Wave `k` is `flat[starts[k]..starts[k + 1]]`.
    starts: Vec<usize>,
    /// Forced releases, in order.
    pub(crate) forced: Vec<u32>,
    /// One warning per forced release.
    pub(crate) warnings: Vec<String>,
    /// Layering stopped on a cycle (abort policy).
    pub(crate) stalled: bool,
}

impl Levels {
    /// Number of waves.
    pub(crate) fn count(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Wave `k`'s node indices, in id order.
    pub(crate) fn wave(&self, k: usize) -> &[u32] {
        &self.flat[self.starts[k]..self.starts[k + 1]]
    }

    /// Every wave in order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &[u32]> + '_ {
        (0..self.count()).map(|k| self.wave(k))
    }
}

/// Layer the pending nodes: `succ`/`pred` are the edges both ways and
/// `order` lists node indices in id order.
///
/// When every dependency comes earlier in the input (the usual way task
/// lists are written), one pass in input order gives each task
/// `1 + max(level of its dependencies)`. Otherwise Kahn's algorithm runs
/// breadth-first (no sorting), forcing releases if asked. Either way the
/// waves are then filled by walking `order`, so each comes out sorted.
pub(crate) fn kahn_levels(
    nodes: &[TaskNode],
    done: &[bool],
    succ: &Adjacency,
    pred: &Adjacency,
    order: &[u32],
    force: bool,
) -> Levels {
    let mut out = Levels::default();
    let (level, sizes) = match forward_levels(done, pred) {
        Some(found) => found,
        None => breadth_first(nodes, done, succ, pred, order, force, &mut out),
    };
    let assigned = sizes.iter().sum();
    out.starts = Vec::with_capacity(sizes.len() + 1);
    out.starts.push(0);
    for s in &sizes {
        out.starts.push(out.starts[out.starts.len() - 1] + s);
    }
    let mut fill: Vec<usize> = out.starts[..sizes.len()].to_vec();
    out.flat = vec![0; assigned];
    for &i in order {
        let l = level[i as usize];
        if l != UNASSIGNED {
            out.flat[fill[l as usize]] = i;
            fill[l as usize] += 1;
        }
    }
    out.level = level;
    out
}

/// Levels in one pass when each dependency precedes its dependent in the
/// input; `None` as soon as one does not. Returns levels and wave sizes.
fn forward_levels(done: &[bool], pred: &Adjacency) -> Option<(Vec<u32>, Vec<usize>)> {
    let mut level = vec![UNASSIGNED; done.len()];
    let mut sizes: Vec<usize> = Vec::new();
    for i in 0..done.len() {
        if done[i] {
            continue;
        }
        let mut l = 0u32;
        for &j in pred.of(i) {
            if j as usize >= i {
                return None;
            }
            l = l.max(level[j as usize] + 1);
        }
        level[i] = l;
        if sizes.len() <= l as usize {
            sizes.resize(l as usize + 1, 0);
        }
        sizes[l as usize] += 1;
    }
    Some((level, sizes))
}

/// Kahn's algorithm wave by wave; forced releases and warnings go to `out`.
fn breadth_first(
    nodes: &[TaskNode],
    done: &[bool],
    succ: &Adjacency,
    pred: &Adjacency,
    order: &[u32],
    force: bool,
    out: &mut Levels,
) -> (Vec<u32>, Vec<usize>) {
    let n = nodes.len();
    let mut level = vec![UNASSIGNED; n];
    let mut waiting: Vec<u32> = Vec::with_capacity(n);
    let mut current: Vec<u32> = Vec::new();
    let mut pending = 0usize;
    for (i, &is_done) in done.iter().enumerate() {
        #[allow(clippy::cast_possible_truncation)] // node and edge counts fit in u32 (validate)
        let degree = pred.of(i).len() as u32;
        waiting.push(degree);
        if !is_done {
            pending += 1;
            if degree == 0 {
                #[allow(clippy::cast_possible_truncation)]
                current.push(i as u32);
            }
        }
    }
    let mut assigned = 0usize;
    let mut waves = 0u32;
    let mut next = Vec::new();
    let mut force_order: Option<(Vec<u32>, usize)> = None;
    let mut sizes: Vec<usize> = Vec::new();
    while assigned < pending {
        if current.is_empty() {
            if !force {
                out.stalled = true;
                break;
            }
            let (list, cursor) =
                force_order.get_or_insert_with(|| (number_order(nodes, done, order), 0));
            while level[list[*cursor] as usize] != UNASSIGNED {
                *cursor += 1;
            }
            let pick = list[*cursor];
            out.warnings.push(format!(
                "wave {}: no task was ready but {} were still waiting on a dependency cycle; \
                 released `{}`, the lowest-numbered waiting task",
                waves + 1,
                pending - assigned,
                nodes[pick as usize].id
            ));
            out.forced.push(pick);
            current.push(pick);
        }
        for &i in &current {
            level[i as usize] = waves;
        }
        assigned += current.len();
        sizes.push(current.len());
        next.clear();
        for &i in &current {
            for &j in succ.of(i as usize) {
                let w = &mut waiting[j as usize];
                *w -= 1;
                if *w == 0 && level[j as usize] == UNASSIGNED {
                    next.push(j);
                }
            }
        }
        std::mem::swap(&mut current, &mut next);
        waves += 1;
    }
    (level, sizes)
}

/// Pending nodes ordered "lowest-numbered first": by number, then id; ids
/// without a number last.
pub(crate) fn number_order(nodes: &[TaskNode], done: &[bool], order: &[u32]) -> Vec<u32> {
    let mut list: Vec<u32> = order
        .iter()
        .copied()
        .filter(|&i| !done[i as usize])
        .collect();
    // Stable: equal numbers keep id order.
    list.sort_by_key(|&i| {
        let number = nodes[i as usize].id.number();
        (number.is_none(), number)
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
