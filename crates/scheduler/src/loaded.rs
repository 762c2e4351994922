//! From loaded tasks to the graph: what `wavecrew plan …` (and the
//! benchmark, through the same path) does with [`wavecrew_core::source::load`].
//!
//! Each task becomes a [`TaskNode`]: its dependencies (its own and the
//! plan's lines), `done` (completed in the store or listed in
//! `team-session.json#completed_tasks`), declared files, estimate and class
//! (the backend named by `metadata.executor`). Completed ids are satisfied.
//! O(V + E).

use wavecrew_core::source::LoadedTasks;

use crate::dag::{BuildOptions, CyclePolicy, Dag};
use crate::error::ScheduleError;
use crate::node::TaskNode;

/// One scheduler node per loaded task, in the order of
/// [`LoadedTasks::tasks`].
pub fn nodes_of(loaded: &LoadedTasks) -> Vec<TaskNode> {
    let deps = loaded.dependency_lists();
    let done = loaded.done_flags();
    loaded
        .tasks
        .iter()
        .zip(deps)
        .zip(done)
        .map(|((task, deps), done)| {
            let mut node = TaskNode::new(task.id.clone(), deps)
                .with_done(done)
                .with_files(task.files());
            if let Some(secs) = task.estimate_secs() {
                node = node.with_estimate(secs);
            }
            if let Some(exec) = task.executor() {
                node = node.with_class(exec);
            }
            node
        })
        .collect()
}

/// Build the graph of loaded tasks: [`nodes_of`], with the ids of
/// `completed_tasks` satisfied, under `policy`.
pub fn build_loaded(loaded: &LoadedTasks, policy: CyclePolicy) -> Result<Dag, ScheduleError> {
    let options = BuildOptions::default()
        .with_satisfied(loaded.completed.iter().cloned())
        .with_cycle_policy(policy);
    Dag::build(nodes_of(loaded), &options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn session_with_plan_lines_and_completed_ids() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("S-1");
        write(
            &dir.join("task-analysis.json"),
            r#"{"dependency_graph":{"IMPL-001":[],"IMPL-002":[],"IMPL-003":["IMPL-001"]},
                "tasks":[{"id":"IMPL-002","metadata":{"executor":"gemini","estimated_minutes":2}}]}"#,
        );
        write(&dir.join("plan.md"), "IMPL-3 depends on IMPL-2\n");
        write(
            &dir.join("team-session.json"),
            r#"{"session_id":"S-1","task_description":"x","status":"active","roles":[],"completed_tasks":["IMPL-001"]}"#,
        );
        let loaded = wavecrew_core::source::load(&dir).unwrap();
        let nodes = nodes_of(&loaded);
        let ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["IMPL-001", "IMPL-002", "IMPL-003"]);
        assert!(nodes[0].done && !nodes[1].done);
        assert_eq!(nodes[1].class.as_deref(), Some("gemini"));
        assert!((nodes[1].estimate - 120.0).abs() < f64::EPSILON);
        let deps: Vec<&str> = nodes[2]
            .deps
            .iter()
            .map(wavecrew_core::TaskId::as_str)
            .collect();
        assert_eq!(deps, ["IMPL-001", "IMPL-2"]);
        let dag = build_loaded(&loaded, CyclePolicy::Abort).unwrap();
        assert_eq!(dag.pending_len(), 2);
        assert_eq!(dag.wave_count(), 2);
    }
}
