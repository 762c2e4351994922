//! JSON output.

use serde_json::{Value, json};
use wavecrew_core::TaskId;

use super::{Layout, StateMap};
use crate::dag::Dag;

impl Dag {
    /// The graph as JSON:
    /// `{"tasks": [{"id", "deps", "wave", "estimate", "critical", "state"?}],
    /// "waves": [[ids]], "critical_path": [ids]}`.
    ///
    /// Tasks are sorted by id; `deps` are the resolved dependency ids
    /// (externally satisfied ones included); `wave` is 0-based, `null` for a
    /// completed task; `state` appears when a state map is given.
    pub fn to_json(&self, states: Option<&StateMap<'_>>) -> Value {
        let layout = Layout::new(self);
        let tasks: Vec<Value> = self
            .order()
            .iter()
            .map(|&i| {
                let i = i as usize;
                let node = self.node_at(i);
                let mut deps: Vec<&str> = node.deps.iter().map(TaskId::as_str).collect();
                deps.sort_unstable();
                let mut task = json!({
                    "id": node.id,
                    "deps": deps,
                    "wave": self.wave_of(node.id.as_str()),
                    "estimate": node.estimate,
                    "critical": layout.critical_nodes.contains(&i),
                });
                if let (Some(state), Some(obj)) = (layout.state(states, i), task.as_object_mut()) {
                    obj.insert("state".into(), Value::from(state));
                }
                task
            })
            .collect();
        let waves: Vec<Vec<&str>> = layout
            .waves
            .iter()
            .map(|w| w.iter().map(|&i| layout.id(i).as_str()).collect())
            .collect();
        json!({
            "tasks": tasks,
            "waves": waves,
            "critical_path": layout.critical_path,
        })
    }
}
