//! Embedding the scheduler: build a graph from your own tasks, print its
//! waves and critical path, then run it with a concurrency limit, a
//! per-class limit and the file-overlap gate.
//!
//! `cargo run -p wavecrew-scheduler --example embed_scheduler`

use std::sync::Arc;
use std::time::Duration;

use wavecrew_core::TaskId;
use wavecrew_scheduler::{
    BuildOptions, Dag, DispatchOptions, Dispatcher, RunOutcome, TaskNode, runner_fn,
};

fn id(s: &str) -> TaskId {
    TaskId::new(s).expect("a valid task id")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A diamond, and two tasks that touch the same file.
    let nodes = vec![
        TaskNode::new(id("IMPL-001"), []).with_estimate(2.0),
        TaskNode::new(id("IMPL-002"), [id("IMPL-001")])
            .with_files(["src/api.rs"])
            .with_class("codex"),
        TaskNode::new(id("IMPL-003"), [id("IMPL-001")])
            .with_files(["src/api.rs"])
            .with_class("claude"),
        TaskNode::new(id("IMPL-004"), [id("IMPL-002"), id("IMPL-003")]).with_estimate(3.0),
    ];
    let dag = Dag::build(nodes, &BuildOptions::default())?;
    for (i, wave) in dag.wave_ids().iter().enumerate() {
        let ids: Vec<&str> = wave.iter().map(|t| t.as_str()).collect();
        println!("wave {}: {}", i + 1, ids.join(", "));
    }
    let path = dag.critical_path();
    let ids: Vec<&str> = path.path.iter().map(TaskId::as_str).collect();
    println!("critical path: {} ({} s)", ids.join(" → "), path.total);

    // Run it: at most 2 at once, 1 codex attempt at once; IMPL-002 and
    // IMPL-003 share src/api.rs, so the gate keeps them apart.
    let options = DispatchOptions::default()
        .with_max_parallel(Some(2))
        .with_class_limit("codex", 1);
    let runner = Arc::new(runner_fn(|task: TaskId| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        println!("ran {}", task.as_str());
        RunOutcome::Succeeded
    }));
    let report = Dispatcher::new(&dag, options)?.run(runner).await;
    println!(
        "all succeeded: {} in {:?}",
        report.all_succeeded(),
        report.makespan
    );
    Ok(())
}
