//! The admission gate: may this task start now?
//!
//! Three independent checks, all O(1) or O(files × depth):
//! - global slots: a task takes `weight` slots (capped at the limit, so a
//!   task heavier than the limit runs alone);
//! - per-class limits: a task takes one slot of every limited class it is
//!   in (a backend and a role, say);
//! - declared files: no running task may hold the same path, a folder that
//!   contains it, or a path inside it.

use std::collections::HashMap;

use wavecrew_core::TaskId;

use crate::dag::Dag;
use crate::error::ScheduleError;

/// Per-task admission facts, indexed like the graph's nodes.
#[derive(Debug)]
pub(super) struct Gate {
    capacity: Option<u64>,
    used: u64,
    weight: Vec<u64>,
    class_of: Vec<Vec<usize>>,
    class_cap: Vec<usize>,
    class_used: Vec<usize>,
    /// Normalised files per task, each with its proper ancestor folders.
    files: Vec<Vec<(String, Vec<String>)>>,
    /// Paths held by running tasks (count of holders).
    held: HashMap<String, u32>,
    /// Proper ancestor folders of held paths (count of holders).
    held_within: HashMap<String, u32>,
}

impl Gate {
    pub(super) fn new(
        dag: &Dag,
        max_parallel: Option<usize>,
        class_limits: &HashMap<String, usize>,
    ) -> Result<Self, ScheduleError> {
        let n = dag.len();
        let pending = || (0..n).filter(|&i| !dag.node_at(i).done);
        let sorted_ids = |mut ids: Vec<TaskId>| {
            ids.sort();
            ids
        };
        if max_parallel == Some(0) && pending().next().is_some() {
            let ids = pending().map(|i| dag.node_at(i).id.clone()).collect();
            return Err(ScheduleError::ZeroLimit {
                class: None,
                ids: sorted_ids(ids),
            });
        }
        let mut names: Vec<&String> = class_limits.keys().collect();
        names.sort();
        for name in &names {
            if class_limits[*name] == 0 {
                let ids: Vec<TaskId> = pending()
                    .filter(|&i| dag.node_at(i).classes().any(|c| c == name.as_str()))
                    .map(|i| dag.node_at(i).id.clone())
                    .collect();
                if !ids.is_empty() {
                    return Err(ScheduleError::ZeroLimit {
                        class: Some((*name).clone()),
                        ids: sorted_ids(ids),
                    });
                }
            }
        }
        let class_index: HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(k, c)| (c.as_str(), k))
            .collect();
        let capacity = max_parallel.map(|m| m as u64);
        let mut gate = Gate {
            capacity,
            used: 0,
            weight: Vec::with_capacity(n),
            class_of: Vec::with_capacity(n),
            class_cap: names.iter().map(|c| class_limits[*c]).collect(),
            class_used: vec![0; names.len()],
            files: Vec::with_capacity(n),
            held: HashMap::new(),
            held_within: HashMap::new(),
        };
        for i in 0..n {
            let node = dag.node_at(i);
            let w = u64::from(node.effective_weight());
            gate.weight.push(capacity.map_or(w, |c| w.min(c)));
            let mut classes: Vec<usize> = node
                .classes()
                .filter_map(|c| class_index.get(c).copied())
                .collect();
            classes.sort_unstable();
            classes.dedup();
            gate.class_of.push(classes);
            gate.files.push(
                node.files
                    .iter()
                    .map(|f| {
                        let f = normalise(f);
                        let up = ancestors(&f);
                        (f, up)
                    })
                    .collect(),
            );
        }
        Ok(gate)
    }

    /// Every global slot is taken.
    pub(super) fn full(&self) -> bool {
        self.capacity.is_some_and(|c| self.used >= c)
    }

    /// Whether task `i` may start now.
    pub(super) fn fits(&self, i: usize) -> bool {
        if self
            .capacity
            .is_some_and(|c| self.used + self.weight[i] > c)
        {
            return false;
        }
        if self.class_of[i]
            .iter()
            .any(|&k| self.class_used[k] >= self.class_cap[k])
        {
            return false;
        }
        self.files[i].iter().all(|(f, up)| {
            !self.held.contains_key(f)
                && !self.held_within.contains_key(f)
                && !up.iter().any(|a| self.held.contains_key(a))
        })
    }

    /// Take task `i`'s slots and files.
    pub(super) fn acquire(&mut self, i: usize) {
        self.used += self.weight[i];
        for &k in &self.class_of[i] {
            self.class_used[k] += 1;
        }
        for (f, up) in &self.files[i] {
            *self.held.entry(f.clone()).or_default() += 1;
            for a in up {
                *self.held_within.entry(a.clone()).or_default() += 1;
            }
        }
    }

    /// Give back what [`Gate::acquire`] took.
    pub(super) fn release(&mut self, i: usize) {
        self.used -= self.weight[i];
        for &k in &self.class_of[i] {
            self.class_used[k] -= 1;
        }
        for (f, up) in &self.files[i] {
            decrement(&mut self.held, f);
            for a in up {
                decrement(&mut self.held_within, a);
            }
        }
    }
}

fn decrement(map: &mut HashMap<String, u32>, key: &str) {
    if let Some(c) = map.get_mut(key) {
        *c -= 1;
        if *c == 0 {
            map.remove(key);
        }
    }
}

/// `./src//a/./b.rs/` → `src/a/b.rs`; the project root (`.`, `./`, ``)
/// becomes the empty string, which contains every path.
pub(crate) fn normalise(path: &str) -> String {
    let parts: Vec<&str> = path
        .trim()
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    parts.join("/")
}

/// The proper ancestor folders of a normalised path, root (``) first.
fn ancestors(path: &str) -> Vec<String> {
    if path.is_empty() {
        return Vec::new();
    }
    let mut out = vec![String::new()];
    out.extend(path.match_indices('/').map(|(k, _)| path[..k].to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_paths() {
        assert_eq!(normalise("./src//a/./b.rs/"), "src/a/b.rs");
        assert_eq!(normalise("."), "");
        assert_eq!(normalise("src\\lib.rs"), "src/lib.rs");
        assert_eq!(ancestors("a/b/c"), ["", "a", "a/b"]);
        assert!(ancestors("").is_empty());
    }
}
