//! The dispatcher in virtual time on 1k-task random DAGs with log-normal
//! durations, with 4, 16 and unbounded slots.
//!
//! Under `cargo bench`, a table of virtual-time ratios is printed first
//! (median and worst over 10 seeds):
//! - makespan ÷ max(critical path, total work ÷ slots), the lower bound;
//! - makespan of barrier mode ÷ makespan of the default mode.
//!
//! "oracle" runs give the dispatcher the true durations as estimates;
//! "blind" runs give every task the same estimate (priorities then follow
//! the number of tasks left on the longest chain).
//!
//! Criterion then measures the wall time one virtual dispatch takes (the
//! dispatcher's own overhead).
//!
//! `cargo bench -p wavecrew-scheduler --bench dispatch -- --quick`

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wavecrew_core::TaskId;
use wavecrew_scheduler::{
    BuildOptions, Dag, DispatchOptions, Dispatcher, RunOutcome, TaskNode, TaskRunner,
};

const TASKS: usize = 1_000;
const SEEDS: u64 = 10;
/// Log-normal durations: median e^MU seconds, spread SIGMA.
const MU: f64 = 3.4; // about 30 s
const SIGMA: f64 = 1.0;
const SLOTS: [Option<usize>; 3] = [Some(4), Some(16), None];

/// A 1k-task random DAG (each task depends on up to 3 random earlier
/// tasks) with log-normal durations in seconds.
fn workload(seed: u64) -> (Vec<TaskNode>, HashMap<TaskId, Duration>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let id = |i: usize| TaskId::new(format!("IMPL-{i:04}")).expect("valid id");
    let mut nodes = Vec::with_capacity(TASKS);
    let mut durations = HashMap::with_capacity(TASKS);
    for i in 0..TASKS {
        let deps: Vec<TaskId> = if i == 0 {
            Vec::new()
        } else {
            (0..rng.random_range(0..=3))
                .map(|_| id(rng.random_range(0..i)))
                .collect()
        };
        // Box-Muller: z ~ N(0, 1).
        let (u1, u2): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let secs = (MU + SIGMA * z).exp();
        durations.insert(id(i), Duration::from_secs_f64(secs));
        nodes.push(TaskNode::new(id(i), deps).with_estimate(secs));
    }
    (nodes, durations)
}

/// Sleeps each task's duration (virtual under a paused clock).
struct Sleeper(HashMap<TaskId, Duration>);

#[async_trait]
impl TaskRunner for Sleeper {
    async fn run(&self, id: &TaskId) -> RunOutcome {
        tokio::time::sleep(self.0.get(id).copied().unwrap_or_default()).await;
        RunOutcome::Succeeded
    }
}

/// One dispatch in a fresh paused runtime; the makespan in seconds.
fn makespan(dag: &Dag, runner: &Arc<Sleeper>, slots: Option<usize>, barrier: bool) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let options = DispatchOptions::default()
        .with_max_parallel(slots)
        .with_barrier(barrier);
    let report = rt.block_on(
        Dispatcher::new(dag, options)
            .expect("limits are positive")
            .run(Arc::clone(runner)),
    );
    assert!(report.all_succeeded());
    report.makespan.as_secs_f64()
}

struct Row {
    bound: Vec<f64>,
    barrier: Vec<f64>,
    blind_bound: Vec<f64>,
    blind_barrier: Vec<f64>,
}

fn median_max(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2], s[s.len() - 1])
}

fn slots_name(slots: Option<usize>) -> String {
    slots.map_or_else(|| "unbounded".to_owned(), |s| s.to_string())
}

fn print_ratios() {
    let mut rows: Vec<Row> = SLOTS
        .iter()
        .map(|_| Row {
            bound: vec![],
            barrier: vec![],
            blind_bound: vec![],
            blind_barrier: vec![],
        })
        .collect();
    for seed in 0..SEEDS {
        let (nodes, durations) = workload(seed);
        let oracle = Dag::build(nodes.clone(), &BuildOptions::default()).expect("valid");
        let blind = Dag::build(
            nodes.into_iter().map(|n| n.with_estimate(1.0)),
            &BuildOptions::default(),
        )
        .expect("valid");
        let critical = oracle.critical_path().total;
        let work: f64 = durations.values().map(Duration::as_secs_f64).sum();
        let runner = Arc::new(Sleeper(durations));
        for (row, slots) in rows.iter_mut().zip(SLOTS) {
            #[allow(clippy::cast_precision_loss)]
            let bound = slots.map_or(critical, |s| critical.max(work / s as f64));
            let free = makespan(&oracle, &runner, slots, false);
            let barrier = makespan(&oracle, &runner, slots, true);
            let blind_free = makespan(&blind, &runner, slots, false);
            row.bound.push(free / bound);
            row.barrier.push(barrier / free);
            row.blind_bound.push(blind_free / bound);
            row.blind_barrier.push(barrier / blind_free);
        }
    }
    println!(
        "\ndispatch: 1k-task random DAGs, log-normal durations (median {:.0} s, sigma {SIGMA}), {SEEDS} seeds",
        MU.exp()
    );
    println!(
        "| slots | makespan ÷ bound, oracle (median / max) | blind (median / max) | barrier ÷ default, oracle (median / max) | barrier ÷ blind default (median / max) |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (row, slots) in rows.iter().zip(SLOTS) {
        let f = |v: &[f64]| {
            let (m, x) = median_max(v);
            format!("{m:.3} / {x:.3}")
        };
        println!(
            "| {} | {} | {} | {} | {} |",
            slots_name(slots),
            f(&row.bound),
            f(&row.blind_bound),
            f(&row.barrier),
            f(&row.blind_barrier)
        );
    }
    println!();
}

fn bench_dispatch(c: &mut Criterion) {
    let (nodes, durations) = workload(1);
    let dag = Dag::build(nodes, &BuildOptions::default()).expect("valid");
    let runner = Arc::new(Sleeper(durations));
    let mut group = c.benchmark_group("dispatch/1k-random");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for slots in SLOTS {
        for barrier in [false, true] {
            let name = format!(
                "{}{}",
                slots_name(slots),
                if barrier { "-barrier" } else { "" }
            );
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| black_box(makespan(&dag, &runner, slots, barrier)));
            });
        }
    }
    group.finish();
}

fn main() {
    // Only under `cargo bench` (which passes `--bench`), not in test mode.
    if std::env::args().any(|a| a == "--bench") {
        print_ratios();
    }
    let mut c = Criterion::default().configure_from_args();
    bench_dispatch(&mut c);
    c.final_summary();
}
