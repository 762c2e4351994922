//! Validation before anything runs: duplicate ids, estimates, dependency
//! resolution (exact, externally satisfied, or by prefix and number), self
//! dependencies and unknown dependencies.
//!
//! Everything happens in place on the caller's node list: in the common
//! case (no duplicates, exact ids) no id is copied and nothing is moved.
//! Cycles are analysed in [`crate::cycles`] once the graph exists.

use std::collections::{HashMap, HashSet};

use wavecrew_core::TaskId;

use crate::index::{IdIndex, MAX_POSITIONS};
use crate::node::TaskNode;
use crate::problem::{GraphProblem, ProblemKind};

/// The nodes kept after removing duplicates, and the problems found so far.
pub(crate) struct Resolved {
    /// Kept nodes, in input order; `deps` rewritten to canonical ids,
    /// repeats dropped.
    pub(crate) nodes: Vec<TaskNode>,
    /// `nodes[i].done`, compactly.
    pub(crate) done: Vec<bool>,
    /// Id → position in `nodes`.
    pub(crate) index: IdIndex,
    /// Scheduling edges `(dependent, dependency)` between pending tasks,
    /// sorted.
    pub(crate) preds: Vec<(u32, u32)>,
    /// Problems in a stable order: duplicates first, then per task in
    /// input order.
    pub(crate) problems: Vec<GraphProblem>,
}

/// Drop duplicate ids (keeping the first), check estimates, and resolve
/// every dependency of every pending task.
pub(crate) fn resolve(mut nodes: Vec<TaskNode>, satisfied: &HashSet<TaskId>) -> Resolved {
    // More than 4 billion tasks cannot be indexed; the rest are dropped.
    nodes.truncate(MAX_POSITIONS);
    let mut problems = Vec::new();
    let index = dedupe(&mut nodes, &mut problems);
    let done: Vec<bool> = nodes.iter().map(|n| n.done).collect();

    let mut resolver = Resolver {
        index: &index,
        satisfied,
        by_number: None,
    };
    let mut preds: Vec<(u32, u32)> = Vec::with_capacity(nodes.iter().map(|n| n.deps.len()).sum());
    let mut targets: Vec<u32> = Vec::new();
    for i in 0..nodes.len() {
        if done[i] {
            continue;
        }
        check_estimate(&nodes[i], &mut problems);
        let mut deps = std::mem::take(&mut nodes[i].deps);
        let me = as_u32(i);
        targets.clear();
        deps.retain_mut(|dep| match resolver.resolve(dep, &nodes) {
            Resolution::Node(j, _) if j == me => {
                let id = &nodes[i].id;
                let as_written = if dep == id {
                    String::new()
                } else {
                    format!(" (as `{dep}`)")
                };
                problems.push(
                    GraphProblem::new(
                        ProblemKind::SelfDependency,
                        format!("`{id}` depends on itself{as_written}"),
                    )
                    .with_ids(vec![id.clone()]),
                );
                false
            }
            Resolution::Node(j, exact) => {
                if !exact {
                    *dep = nodes[j as usize].id.clone();
                }
                if !done[j as usize] {
                    targets.push(j);
                }
                true
            }
            Resolution::Satisfied(canonical) => {
                if *dep != canonical {
                    *dep = canonical;
                }
                true
            }
            Resolution::Unknown(candidates) => {
                problems.push(unknown(&nodes[i].id, dep, &candidates));
                true
            }
        });
        dedupe_strings(&mut deps);
        nodes[i].deps = deps;
        targets.sort_unstable();
        targets.dedup();
        preds.extend(targets.iter().map(|&j| (me, j)));
    }
    Resolved {
        nodes,
        done,
        index,
        preds,
        problems,
    }
}

#[allow(clippy::cast_possible_truncation)] // callers keep positions below u32::MAX
fn as_u32(i: usize) -> u32 {
    i as u32
}

fn check_estimate(node: &TaskNode, problems: &mut Vec<GraphProblem>) {
    if !(node.estimate.is_finite() && node.estimate >= 0.0) {
        problems.push(
            GraphProblem::new(
                ProblemKind::InvalidEstimate,
                format!(
                    "`{}` has an estimate of {} seconds; an estimate must be a finite number, not negative",
                    node.id, node.estimate
                ),
            )
            .with_ids(vec![node.id.clone()]),
        );
    }
}

fn unknown(id: &TaskId, dep: &TaskId, candidates: &[TaskId]) -> GraphProblem {
    let hint = if candidates.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = candidates.iter().map(|c| format!("`{c}`")).collect();
        format!(" (it could mean any of {})", list.join(", "))
    };
    GraphProblem::new(
        ProblemKind::UnknownDependency,
        format!("`{id}` depends on `{dep}`, which is not a task of this session{hint}"),
    )
    .with_ids(vec![id.clone(), dep.clone()])
}

/// Drop repeated ids from a dependency list, keeping the first of each.
fn dedupe_strings(deps: &mut Vec<TaskId>) {
    const SMALL: usize = 16;
    if deps.len() < 2 {
        return;
    }
    if deps.len() <= SMALL {
        let mut k = 1;
        while k < deps.len() {
            if deps[..k].contains(&deps[k]) {
                deps.remove(k);
            } else {
                k += 1;
            }
        }
    } else {
        let mut seen: HashSet<TaskId> = HashSet::with_capacity(deps.len());
        deps.retain(|d| seen.insert(d.clone()));
    }
}

/// Keep the first node of each id; report every id given more than once.
fn dedupe(nodes: &mut Vec<TaskNode>, problems: &mut Vec<GraphProblem>) -> IdIndex {
    let (index, duplicates) = IdIndex::build(nodes.len(), |p| nodes[p as usize].id.as_str());
    if duplicates.is_empty() {
        return index;
    }
    let mut repeats: Vec<(u32, usize)> = Vec::new();
    for &(_, first) in &duplicates {
        match repeats.iter_mut().find(|(p, _)| *p == first) {
            Some((_, count)) => *count += 1,
            None => repeats.push((first, 2)),
        }
    }
    repeats.sort_unstable();
    for &(pos, count) in &repeats {
        let id = nodes[pos as usize].id.clone();
        problems.push(
            GraphProblem::new(
                ProblemKind::DuplicateTask,
                format!("task `{id}` is defined {count} times; task ids must be unique"),
            )
            .with_ids(vec![id]),
        );
    }
    let mut drop = vec![false; nodes.len()];
    for &(pos, _) in &duplicates {
        drop[pos as usize] = true;
    }
    let mut k = 0;
    nodes.retain(|_| {
        k += 1;
        !drop[k - 1]
    });
    // Unique now: no duplicates this time.
    IdIndex::build(nodes.len(), |p| nodes[p as usize].id.as_str()).0
}

/// What a dependency id turned out to name.
enum Resolution {
    /// A task of this graph, by position; `true` when the id was exact.
    Node(u32, bool),
    /// An externally satisfied id (canonical form).
    Satisfied(TaskId),
    /// Nothing; with the candidates when the id was ambiguous.
    Unknown(Vec<TaskId>),
}

/// A task or an externally satisfied id that a loose `(prefix, number)`
/// match may point at.
#[derive(Clone)]
enum Candidate {
    Node(u32),
    External(TaskId),
}

struct Resolver<'a> {
    index: &'a IdIndex,
    satisfied: &'a HashSet<TaskId>,
    /// `(prefix, number)` → candidates; built on the first miss only.
    by_number: Option<HashMap<(String, u64), Vec<Candidate>>>,
}

impl Resolver<'_> {
    fn resolve(&mut self, dep: &TaskId, nodes: &[TaskNode]) -> Resolution {
        if let Some(j) = self
            .index
            .get(dep.as_str(), |p| nodes[p as usize].id.as_str())
        {
            return Resolution::Node(j, true);
        }
        if self.satisfied.contains(dep) {
            return Resolution::Satisfied(dep.clone());
        }
        let (Some(prefix), Some(number)) = (dep.prefix(), dep.number()) else {
            return Resolution::Unknown(Vec::new());
        };
        let map = self
            .by_number
            .get_or_insert_with(|| number_map(nodes, self.satisfied));
        match map.get(&(prefix.to_owned(), number)).map(Vec::as_slice) {
            Some([Candidate::Node(j)]) => Resolution::Node(*j, false),
            Some([Candidate::External(id)]) => Resolution::Satisfied(id.clone()),
            Some(many) => {
                let mut ids: Vec<TaskId> = many
                    .iter()
                    .map(|c| match c {
                        Candidate::Node(j) => nodes[*j as usize].id.clone(),
                        Candidate::External(id) => id.clone(),
                    })
                    .collect();
                ids.sort();
                Resolution::Unknown(ids)
            }
            None => Resolution::Unknown(Vec::new()),
        }
    }
}

fn number_map(
    nodes: &[TaskNode],
    satisfied: &HashSet<TaskId>,
) -> HashMap<(String, u64), Vec<Candidate>> {
    let mut map: HashMap<(String, u64), Vec<Candidate>> = HashMap::new();
    let mut add = |id: &TaskId, c: Candidate| {
        if let (Some(p), Some(n)) = (id.prefix(), id.number()) {
            map.entry((p.to_owned(), n)).or_default().push(c);
        }
    };
    for (j, node) in nodes.iter().enumerate() {
        add(&node.id, Candidate::Node(as_u32(j)));
    }
    for id in satisfied {
        add(id, Candidate::External(id.clone()));
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    fn node(s: &str, deps: &[&str]) -> TaskNode {
        TaskNode::new(id(s), deps.iter().map(|d| id(d)))
    }

    #[test]
    fn resolves_by_number_and_dedupes() {
        let r = resolve(
            vec![
                node("IMPL-001", &[]),
                node("IMPL-003", &["IMPL-1", "IMPL-001", "IMPL-1"]),
            ],
            &HashSet::new(),
        );
        assert!(r.problems.is_empty());
        assert_eq!(r.nodes[1].deps, [id("IMPL-001")]);
        assert_eq!(r.preds, [(1, 0)]);
    }

    #[test]
    fn external_ids_satisfy_exactly_and_by_number() {
        let satisfied: HashSet<TaskId> = [id("IMPL-001")].into();
        let r = resolve(vec![node("IMPL-002", &["IMPL-001", "IMPL-1"])], &satisfied);
        assert!(r.problems.is_empty());
        assert_eq!(r.nodes[0].deps, [id("IMPL-001")]);
        assert!(r.preds.is_empty());
    }

    #[test]
    fn ambiguous_numbers_are_unknown_with_candidates() {
        let r = resolve(
            vec![
                node("IMPL-03", &[]),
                node("IMPL-003", &[]),
                node("IMPL-004", &["IMPL-3"]),
            ],
            &HashSet::new(),
        );
        assert_eq!(r.problems.len(), 1);
        assert_eq!(
            r.problems[0].message(),
            "`IMPL-004` depends on `IMPL-3`, which is not a task of this session (it could mean any of `IMPL-003`, `IMPL-03`)"
        );
    }

    #[test]
    fn done_tasks_are_not_checked_and_satisfy_dependents() {
        let r = resolve(
            vec![
                node("A-1", &["NOPE-9"]).with_done(true),
                node("A-2", &["A-1"]),
            ],
            &HashSet::new(),
        );
        assert!(r.problems.is_empty());
        assert!(r.preds.is_empty());
    }

    #[test]
    fn duplicates_are_dropped_and_positions_stay_consistent() {
        let r = resolve(
            vec![
                node("D-1", &[]),
                node("D-2", &[]),
                node("D-1", &["D-2"]),
                node("D-3", &["D-2", "D-1"]),
            ],
            &HashSet::new(),
        );
        assert_eq!(r.problems.len(), 1);
        assert_eq!(r.nodes.len(), 3);
        assert_eq!(r.preds, [(2, 0), (2, 1)]);
        assert_eq!(
            r.index.get("D-3", |p| r.nodes[p as usize].id.as_str()),
            Some(2)
        );
    }

    #[test]
    fn long_dependency_lists_are_deduplicated() {
        let deps: Vec<String> = (0..40).map(|k| format!("L-{}", k % 20)).collect();
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        let mut nodes: Vec<TaskNode> = (0..20).map(|k| node(&format!("L-{k}"), &[])).collect();
        nodes.push(node("L-99", &deps));
        let r = resolve(nodes, &HashSet::new());
        assert_eq!(r.nodes[20].deps.len(), 20);
        assert_eq!(r.preds.len(), 20);
    }
}
