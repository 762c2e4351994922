//! Cycles named as paths, with the dependencies whose removal breaks them.
//!
//! The graph's strongly connected components (Tarjan, through petgraph) are
//! the groups of tasks that wait on each other. For each group of two or
//! more tasks, cycles are reported until every member lies on a reported
//! cycle (at most [`MAX_CYCLES_PER_GROUP`]): for the lowest-ranked member
//! not yet covered, the shortest cycle through it (breadth-first search).
//! A path reads "depends on" from left to right and starts at its
//! lowest-ranked id: `IMPL-003 → IMPL-007 → IMPL-003`.
//!
//! For a group that is exactly one simple cycle, every dependency on it is a
//! candidate whose removal breaks it. For a larger group, each dependency on
//! the reported cycle is tried: those whose removal leaves the whole group
//! acyclic are reported; when there is none, the cycle's own dependencies
//! are (they break this cycle, not the others).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

use wavecrew_core::TaskId;

use crate::graph::{Adjacency, CsrGraph};
use crate::node::TaskNode;
use crate::problem::{GraphProblem, ProblemKind};

/// Cycles reported per strongly connected group, at most.
pub const MAX_CYCLES_PER_GROUP: usize = 8;

/// Work allowed for the "breaks every cycle" test of one cycle
/// (dependencies on the cycle × size of the group).
const BREAK_TEST_BUDGET: usize = 4_000_000;

/// Group members named in a message, at most.
const NAMED_MEMBERS: usize = 10;

/// The cycle problems of the graph (`graph`: dependency → dependent,
/// `pred` the reverse), in order of each group's lowest rank. `rank[i]`
/// orders node `i` by id.
pub(crate) fn cycle_problems(
    nodes: &[TaskNode],
    graph: &CsrGraph,
    pred: &Adjacency,
    rank: &[u32],
) -> Vec<GraphProblem> {
    let mut groups: Vec<Vec<usize>> = petgraph::algo::tarjan_scc(graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut members: Vec<usize> = c.into_iter().map(|m| m as usize).collect();
            members.sort_unstable_by_key(|&m| rank[m]);
            members
        })
        .collect();
    groups.sort_unstable_by_key(|g| rank[g[0]]);
    groups
        .iter()
        .flat_map(|g| Group::new(nodes, pred, g).problems())
        .collect()
}

/// One strongly connected group with local indices (in rank order).
struct Group<'g> {
    nodes: &'g [TaskNode],
    members: &'g [usize],
    /// `deps[a]` = local indices that member `a` depends on, ascending.
    deps: Vec<Vec<usize>>,
    edge_count: usize,
}

impl<'g> Group<'g> {
    fn new(nodes: &'g [TaskNode], pred: &Adjacency, members: &'g [usize]) -> Self {
        let local: HashMap<usize, usize> =
            members.iter().enumerate().map(|(l, &g)| (g, l)).collect();
        let deps: Vec<Vec<usize>> = members
            .iter()
            .map(|&g| {
                let mut d: Vec<usize> = pred
                    .of(g)
                    .iter()
                    .filter_map(|&n| local.get(&(n as usize)).copied())
                    .collect();
                d.sort_unstable();
                d
            })
            .collect();
        let edge_count = deps.iter().map(Vec::len).sum();
        Self {
            nodes,
            members,
            deps,
            edge_count,
        }
    }

    fn id(&self, local: usize) -> &TaskId {
        &self.nodes[self.members[local]].id
    }

    fn problems(&self) -> Vec<GraphProblem> {
        let mut covered = vec![false; self.members.len()];
        let mut cycles: Vec<Vec<usize>> = Vec::new();
        for start in 0..self.members.len() {
            if covered[start] || cycles.len() == MAX_CYCLES_PER_GROUP {
                continue;
            }
            let cycle = self.shortest_cycle(start);
            for &m in &cycle {
                covered[m] = true;
            }
            if !cycles.contains(&cycle) {
                cycles.push(cycle);
            }
        }
        cycles.iter().map(|c| self.problem(c)).collect()
    }

    /// The shortest cycle through `start`, following "depends on", rotated
    /// to begin at its lowest member; without the closing repeat.
    fn shortest_cycle(&self, start: usize) -> Vec<usize> {
        let mut parent = vec![usize::MAX; self.members.len()];
        let mut queue = VecDeque::from([start]);
        let mut last = start;
        'search: while let Some(a) = queue.pop_front() {
            for &b in &self.deps[a] {
                if b == start {
                    last = a;
                    break 'search;
                }
                if parent[b] == usize::MAX {
                    parent[b] = a;
                    queue.push_back(b);
                }
            }
        }
        // Walk back from `last` to `start`: that is the reverse of the path.
        let mut path = vec![last];
        while let Some(&tip) = path.last() {
            if tip == start {
                break;
            }
            path.push(parent[tip]);
        }
        path.reverse();
        let lowest = path
            .iter()
            .enumerate()
            .min_by_key(|&(_, m)| *m)
            .map_or(0, |(i, _)| i);
        path.rotate_left(lowest);
        path
    }

    fn problem(&self, cycle: &[usize]) -> GraphProblem {
        let edges: Vec<(usize, usize)> = (0..cycle.len())
            .map(|i| (cycle[i], cycle[(i + 1) % cycle.len()]))
            .collect();
        let mut path: Vec<TaskId> = cycle.iter().map(|&m| self.id(m).clone()).collect();
        path.push(path[0].clone());
        let shown_path = path
            .iter()
            .map(TaskId::as_str)
            .collect::<Vec<_>>()
            .join(" → ");
        let mut message = format!("dependency cycle: {shown_path} (each task depends on the next)");

        let simple = self.members.len() == cycle.len() && self.edge_count == cycle.len();
        let breaking: Vec<(usize, usize)> = if simple {
            let _ = write!(
                message,
                "; removing any one of these dependencies breaks it: {}",
                self.list(&edges)
            );
            edges
        } else {
            let _ = write!(message, ", one of the cycles among {}", self.members_text());
            let budget_ok = cycle
                .len()
                .saturating_mul(self.members.len() + self.edge_count)
                <= BREAK_TEST_BUDGET;
            let all: Vec<(usize, usize)> = if budget_ok {
                edges
                    .iter()
                    .copied()
                    .filter(|&e| self.acyclic_without(e))
                    .collect()
            } else {
                Vec::new()
            };
            if !all.is_empty() {
                let _ = write!(
                    message,
                    "; removing {} breaks every cycle among them",
                    self.either(&all)
                );
                all
            } else if budget_ok {
                let _ = write!(
                    message,
                    "; removing {} breaks this cycle, but no single dependency breaks every cycle among them",
                    self.either(&edges)
                );
                edges
            } else {
                let _ = write!(
                    message,
                    "; removing {} breaks this cycle (the group is too large to check the others)",
                    self.either(&edges)
                );
                edges
            }
        };
        let mut ids: Vec<TaskId> = self
            .members
            .iter()
            .map(|&g| self.nodes[g].id.clone())
            .collect();
        ids.sort();
        GraphProblem::new(ProblemKind::Cycle, message)
            .with_path(path)
            .with_ids(ids)
            .with_breaking_edges(
                breaking
                    .iter()
                    .map(|&(a, b)| (self.id(a).clone(), self.id(b).clone()))
                    .collect(),
            )
    }

    /// `` `A` on `B`, `B` on `A` `` for dependencies `(task, dependency)`.
    fn list(&self, edges: &[(usize, usize)]) -> String {
        edges
            .iter()
            .map(|&(a, b)| format!("`{}` on `{}`", self.id(a), self.id(b)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn either(&self, edges: &[(usize, usize)]) -> String {
        if edges.len() == 1 {
            self.list(edges)
        } else {
            format!("any one of {}", self.list(edges))
        }
    }

    fn members_text(&self) -> String {
        let mut ids: Vec<&str> = self
            .members
            .iter()
            .map(|&g| self.nodes[g].id.as_str())
            .collect();
        ids.sort_unstable();
        let mut s = ids
            .iter()
            .take(NAMED_MEMBERS)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if ids.len() > NAMED_MEMBERS {
            let _ = write!(s, " and {} more", ids.len() - NAMED_MEMBERS);
        }
        s
    }

    /// Whether the group has no cycle once `task` no longer depends on `dep`.
    fn acyclic_without(&self, (task, dep): (usize, usize)) -> bool {
        let n = self.members.len();
        // Kahn over "depends on": count each member's unresolved deps.
        let mut waiting: Vec<usize> = self.deps.iter().map(Vec::len).collect();
        waiting[task] -= 1;
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (a, ds) in self.deps.iter().enumerate() {
            for &b in ds {
                if (a, b) != (task, dep) {
                    dependents[b].push(a);
                }
            }
        }
        let mut ready: Vec<usize> = (0..n).filter(|&a| waiting[a] == 0).collect();
        let mut done = 0;
        while let Some(b) = ready.pop() {
            done += 1;
            for &a in &dependents[b] {
                waiting[a] -= 1;
                if waiting[a] == 0 {
                    ready.push(a);
                }
            }
        }
        done == n
    }
}
