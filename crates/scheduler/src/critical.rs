//! The critical path over the tasks' estimates.
//!
//! A task's *remaining path length* is the longest sum of estimates along
//! any dependency chain from the task (itself included) to a task nothing
//! waits for; the dispatcher starts the ready task with the longest one
//! first. The critical path is the chain that realises the largest
//! remaining length. Completed tasks take no time and are not on it.
//!
//! Both are computed in O(V + E) by walking the waves backwards. Under a
//! forced cycle policy, a dependency that points back to an earlier wave
//! (a broken cycle edge) is ignored.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::Serialize;
use wavecrew_core::TaskId;

use crate::dag::Dag;

/// The longest chain of dependent tasks, by total estimate.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CriticalPath {
    /// The ids along the chain, first to run first.
    pub path: Vec<TaskId>,
    /// The sum of their estimates, in seconds.
    pub total: f64,
}

impl Dag {
    /// The critical path; ties are broken towards the smaller id.
    pub fn critical_path(&self) -> CriticalPath {
        let rem = self.remaining_by_index();
        let levels = &self.levels().level;
        let better = |a: usize, b: usize| -> bool {
            match rem[a].total_cmp(&rem[b]) {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => self.rank()[a] < self.rank()[b],
            }
        };
        let mut start: Option<usize> = None;
        for wave in self.levels().iter() {
            for &i in wave {
                let i = i as usize;
                if start.is_none_or(|s| better(i, s)) {
                    start = Some(i);
                }
            }
        }
        let Some(mut at) = start else {
            return CriticalPath::default();
        };
        let total = rem[at];
        let mut path = vec![self.node_at(at).id.clone()];
        loop {
            let next = self
                .successors(at)
                .filter(|&j| levels[j] > levels[at])
                .reduce(|a, b| if better(b, a) { b } else { a });
            match next {
                Some(j) => {
                    path.push(self.node_at(j).id.clone());
                    at = j;
                }
                None => break,
            }
        }
        CriticalPath { path, total }
    }

    /// The remaining path length of `id` (itself included); `None` for a
    /// completed or unknown task.
    pub fn remaining_length(&self, id: &str) -> Option<f64> {
        let i = self.index_of(id)?;
        (!self.is_done(i)).then(|| self.remaining_by_index()[i])
    }

    /// The remaining path length of every pending task.
    pub fn remaining_lengths(&self) -> HashMap<TaskId, f64> {
        let rem = self.remaining_by_index();
        self.levels()
            .iter()
            .flatten()
            .map(|&i| (self.node_at(i as usize).id.clone(), rem[i as usize]))
            .collect()
    }

    /// Remaining path length by node index (0 for completed tasks).
    pub(crate) fn remaining_by_index(&self) -> Vec<f64> {
        let levels = &self.levels().level;
        let mut rem = vec![0.0f64; self.len()];
        for wave in self.levels().iter().rev() {
            for &i in wave {
                let i = i as usize;
                let tail = self
                    .successors(i)
                    .filter(|&j| levels[j] > levels[i])
                    .map(|j| rem[j])
                    .fold(0.0, f64::max);
                rem[i] = self.node_at(i).estimate + tail;
            }
        }
        rem
    }
}

#[cfg(test)]
mod tests {
    use crate::{BuildOptions, Dag, TaskNode};
    use wavecrew_core::TaskId;

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    fn node(s: &str, deps: &[&str], est: f64) -> TaskNode {
        TaskNode::new(id(s), deps.iter().map(|d| id(d))).with_estimate(est)
    }

    #[test]
    fn longest_chain_by_estimate() {
        let dag = Dag::build(
            [
                node("T-1", &[], 1.0),
                node("T-2", &["T-1"], 5.0),
                node("T-3", &["T-1"], 2.0),
                node("T-4", &["T-2", "T-3"], 1.0),
                node("T-5", &[], 6.0),
            ],
            &BuildOptions::default(),
        )
        .unwrap();
        let cp = dag.critical_path();
        assert_eq!(cp.path, [id("T-1"), id("T-2"), id("T-4")]);
        assert!((cp.total - 7.0).abs() < 1e-9);
        assert_eq!(dag.remaining_length("T-3"), Some(3.0));
        assert_eq!(dag.remaining_length("T-5"), Some(6.0));
        assert_eq!(dag.remaining_lengths().len(), 5);
    }

    #[test]
    fn ties_go_to_the_smaller_id_and_empty_graphs_have_no_path() {
        let dag = Dag::build(
            [node("B-1", &[], 1.0), node("A-1", &[], 1.0)],
            &BuildOptions::default(),
        )
        .unwrap();
        assert_eq!(dag.critical_path().path, [id("A-1")]);
        let empty = Dag::build([], &BuildOptions::default()).unwrap();
        assert!(empty.critical_path().path.is_empty());
        assert!(empty.critical_path().total.abs() < f64::EPSILON);
    }
}
