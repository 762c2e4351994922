//! Validation before anything runs: duplicate ids, estimates, dependency
//! resolution (exact, externally satisfied, or by prefix and number), self
//! dependencies and unknown dependencies.
//!
//! Cycles are analysed in [`crate::cycles`] once the graph exists.

use std::collections::{HashMap, HashSet};

use wavecrew_core::TaskId;

use crate::node::TaskNode;
use crate::problem::{GraphProblem, ProblemKind};

/// The nodes kept after removing duplicates, and the problems found so far.
pub(crate) struct Resolved {
    /// Kept nodes, in input order; `deps` rewritten to canonical ids.
    pub(crate) nodes: Vec<TaskNode>,
    /// Id → position in `nodes`.
    pub(crate) index: HashMap<TaskId, u32>,
    /// Scheduling edges `(dependency, dependent)` between pending tasks.
    pub(crate) edges: Vec<(u32, u32)>,
    /// Problems in a stable order: duplicates first, then per task in
    /// input order.
    pub(crate) problems: Vec<GraphProblem>,
}

/// Drop duplicate ids (keeping the first), check estimates, and resolve
/// every dependency of every pending task.
pub(crate) fn resolve(input: Vec<TaskNode>, satisfied: &HashSet<TaskId>) -> Resolved {
    let mut problems = Vec::new();
    let (mut nodes, index) = dedupe(input, &mut problems);

    let mut resolver = Resolver {
        index: &index,
        satisfied,
        by_number: None,
    };
    let mut edges = Vec::with_capacity(nodes.iter().map(|n| n.deps.len()).sum());
    let mut seen: Vec<u32> = Vec::new();
    for i in 0..nodes.len() {
        let this = &nodes[i];
        if this.done {
            continue;
        }
        if !(this.estimate.is_finite() && this.estimate >= 0.0) {
            problems.push(
                GraphProblem::new(
                    ProblemKind::InvalidEstimate,
                    format!(
                        "`{}` has an estimate of {} seconds; an estimate must be a finite number, not negative",
                        this.id, this.estimate
                    ),
                )
                .with_ids(vec![this.id.clone()]),
            );
        }
        let deps = std::mem::take(&mut nodes[i].deps);
        let mut kept = Vec::with_capacity(deps.len());
        seen.clear();
        #[allow(clippy::cast_possible_truncation)] // positions fit in u32 (checked by `dedupe`)
        let me = i as u32;
        for dep in deps {
            match resolver.resolve(&dep, &nodes) {
                Resolution::Node(j) if j == me => {
                    let as_written = if dep == nodes[i].id {
                        String::new()
                    } else {
                        format!(" (as `{dep}`)")
                    };
                    let id = nodes[i].id.clone();
                    problems.push(
                        GraphProblem::new(
                            ProblemKind::SelfDependency,
                            format!("`{id}` depends on itself{as_written}"),
                        )
                        .with_ids(vec![id]),
                    );
                }
                Resolution::Node(j) => {
                    if !seen.contains(&j) {
                        seen.push(j);
                        kept.push(nodes[j as usize].id.clone());
                        if !nodes[j as usize].done {
                            edges.push((j, me));
                        }
                    }
                }
                Resolution::Satisfied(canonical) => {
                    if !kept.contains(&canonical) {
                        kept.push(canonical);
                    }
                }
                Resolution::Unknown(candidates) => {
                    let id = nodes[i].id.clone();
                    let hint = if candidates.is_empty() {
                        String::new()
                    } else {
                        let list: Vec<String> =
                            candidates.iter().map(|c| format!("`{c}`")).collect();
                        format!(" (it could mean any of {})", list.join(", "))
                    };
                    problems.push(
                        GraphProblem::new(
                            ProblemKind::UnknownDependency,
                            format!("`{id}` depends on `{dep}`, which is not a task of this session{hint}"),
                        )
                        .with_ids(vec![id, dep.clone()]),
                    );
                    kept.push(dep);
                }
            }
        }
        nodes[i].deps = kept;
    }
    Resolved {
        nodes,
        index,
        edges,
        problems,
    }
}

/// Keep the first node of each id; report every id given more than once.
fn dedupe(
    input: Vec<TaskNode>,
    problems: &mut Vec<GraphProblem>,
) -> (Vec<TaskNode>, HashMap<TaskId, u32>) {
    let mut index: HashMap<TaskId, u32> = HashMap::with_capacity(input.len());
    let mut nodes = Vec::with_capacity(input.len());
    let mut repeats: Vec<(u32, usize)> = Vec::new();
    for node in input {
        if let Some(&first) = index.get(&node.id) {
            match repeats.iter_mut().find(|(p, _)| *p == first) {
                Some((_, count)) => *count += 1,
                None => repeats.push((first, 2)),
            }
            continue;
        }
        let Ok(pos) = u32::try_from(nodes.len()) else {
            // More than 4 billion tasks: the rest cannot be indexed.
            break;
        };
        index.insert(node.id.clone(), pos);
        nodes.push(node);
    }
    repeats.sort_unstable();
    for (pos, count) in repeats {
        let id = nodes[pos as usize].id.clone();
        problems.push(
            GraphProblem::new(
                ProblemKind::DuplicateTask,
                format!("task `{id}` is defined {count} times; task ids must be unique"),
            )
            .with_ids(vec![id]),
        );
    }
    (nodes, index)
}

/// What a dependency id turned out to name.
enum Resolution {
    /// A task of this graph, by position.
    Node(u32),
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
    index: &'a HashMap<TaskId, u32>,
    satisfied: &'a HashSet<TaskId>,
    /// `(prefix, number)` → candidates; built on the first miss only.
    by_number: Option<HashMap<(String, u64), Vec<Candidate>>>,
}

impl Resolver<'_> {
    fn resolve(&mut self, dep: &TaskId, nodes: &[TaskNode]) -> Resolution {
        if let Some(&j) = self.index.get(dep) {
            return Resolution::Node(j);
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
            Some([Candidate::Node(j)]) => Resolution::Node(*j),
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
        #[allow(clippy::cast_possible_truncation)] // positions fit in u32 (checked by `dedupe`)
        add(&node.id, Candidate::Node(j as u32));
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
        assert_eq!(r.edges, [(0, 1)]);
    }

    #[test]
    fn external_ids_satisfy_exactly_and_by_number() {
        let satisfied: HashSet<TaskId> = [id("IMPL-001")].into();
        let r = resolve(vec![node("IMPL-002", &["IMPL-001", "IMPL-1"])], &satisfied);
        assert!(r.problems.is_empty());
        assert_eq!(r.nodes[0].deps, [id("IMPL-001")]);
        assert!(r.edges.is_empty());
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
        assert!(r.edges.is_empty());
    }
}
