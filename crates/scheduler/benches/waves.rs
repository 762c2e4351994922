//! Load + build + validate + waves, through the same path as the CLI
//! (`wavecrew plan waves`), for chain, fan-out, random and layered DAGs of
//! 1k to 200k tasks.
//!
//! The input is a session folder whose `task-analysis.json` has the shape
//! team-coordinate writes, `{"dependency_graph": {"IMPL-0000001":
//! ["IMPL-0000000", …], …}}`; the measured time covers
//! [`wavecrew_core::source::load`] (reading, parsing, merging by id),
//! [`build_loaded`] (nodes, validation, Kahn levels) and [`Dag::wave_ids`]
//! (the waves as borrowed ids). Dropping the graph happens outside the
//! measurement, and so does [`Dag::waves`], which copies every id; the
//! breakdown table shows both. `benches/plan-waves.sh` times the whole
//! process (the release binary) on the same kind of input.
//!
//! Before criterion runs (under `cargo bench`), a breakdown table (load / build / waves, median
//! of 3) is printed so linear growth can be read at a glance.
//!
//! `cargo bench -p wavecrew-scheduler --bench waves -- --quick`

use std::fmt::{self, Write as _};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wavecrew_core::source::{self, LoadedTasks};
use wavecrew_scheduler::{CyclePolicy, Dag, build_loaded};

const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 200_000];

#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Each task depends on the previous one.
    Chain,
    /// Every task depends on the first.
    FanOut,
    /// Each task depends on up to 3 random earlier tasks.
    Random,
    /// Layers of 1000 (fewer for small graphs); each task depends on 1–3
    /// random tasks of the previous layer.
    Layered,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Shape::Chain => "chain",
            Shape::FanOut => "fan-out",
            Shape::Random => "random",
            Shape::Layered => "layered",
        })
    }
}

const SHAPES: [Shape; 4] = [Shape::Chain, Shape::FanOut, Shape::Random, Shape::Layered];

/// The `task-analysis.json` text for `n` tasks of this shape.
fn generate(shape: Shape, n: usize, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let width = (n / 1000).clamp(10, 1000);
    let mut out = String::with_capacity(n * 48);
    out.push_str("{\"dependency_graph\":{");
    let mut deps: Vec<usize> = Vec::with_capacity(3);
    for i in 0..n {
        deps.clear();
        match shape {
            Shape::Chain if i > 0 => deps.push(i - 1),
            Shape::FanOut if i > 0 => deps.push(0),
            Shape::Random if i > 0 => {
                for _ in 0..rng.random_range(0..=3) {
                    deps.push(rng.random_range(0..i));
                }
            }
            Shape::Layered if i >= width => {
                let layer_start = (i / width - 1) * width;
                for _ in 0..rng.random_range(1..=3) {
                    deps.push(layer_start + rng.random_range(0..width));
                }
            }
            _ => {}
        }
        deps.sort_unstable();
        deps.dedup();
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"IMPL-{i:07}\":[");
        for (k, d) in deps.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"IMPL-{d:07}\"");
        }
        out.push(']');
    }
    out.push_str("}}");
    out
}

/// A session folder holding `text` as its `task-analysis.json`.
fn session(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("task-analysis.json"), text).expect("write analysis");
    dir
}

/// The CLI's path: [`source::load`] (read, parse, merge by id, sort).
fn load(dir: &Path) -> LoadedTasks {
    source::load(dir).expect("generated sessions load")
}

/// The measured work, as `wavecrew plan waves` does it: load, build
/// (nodes, validation, levels), waves.
fn load_build_waves(dir: &Path) -> Dag {
    let loaded = load(dir);
    let dag = build_loaded(&loaded, CyclePolicy::Abort).expect("generated graphs are valid");
    black_box(dag.wave_ids());
    dag
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Load / build / waves separately, median of 3 runs, as a table.
fn print_breakdown() {
    println!("\nwaves: median of 3 (ms); total = load + build + wave_ids");
    println!(
        "| shape | tasks | JSON MB | load | build | wave_ids | total | waves() owned | drop | waves |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for shape in SHAPES {
        for n in SIZES {
            let text = generate(shape, n, 7);
            let dir = session(&text);
            let mut times: [Vec<Duration>; 5] = Default::default();
            let mut count = 0;
            for _ in 0..3 {
                let clock = Instant::now();
                let loaded = load(dir.path());
                times[0].push(clock.elapsed());
                let clock = Instant::now();
                let dag = build_loaded(&loaded, CyclePolicy::Abort).expect("valid");
                times[1].push(clock.elapsed());
                let clock = Instant::now();
                count = black_box(dag.wave_ids()).len();
                times[2].push(clock.elapsed());
                let clock = Instant::now();
                drop(black_box(dag.waves()));
                times[3].push(clock.elapsed());
                let clock = Instant::now();
                drop(dag);
                drop(loaded);
                times[4].push(clock.elapsed());
            }
            let [load_t, build_t, ids_t, owned_t, drop_t] = times.map(median);
            #[allow(clippy::cast_precision_loss)]
            let mb = text.len() as f64 / 1e6;
            println!(
                "| {shape} | {n} | {mb:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {count} |",
                ms(load_t),
                ms(build_t),
                ms(ids_t),
                ms(load_t + build_t + ids_t),
                ms(owned_t),
                ms(drop_t)
            );
        }
    }
    println!();
}

fn bench_waves(c: &mut Criterion) {
    for shape in SHAPES {
        let mut group = c.benchmark_group(format!("waves/{shape}"));
        for n in SIZES {
            let text = generate(shape, n, 7);
            group.throughput(Throughput::Elements(n as u64));
            if n >= 100_000 {
                group
                    .sample_size(10)
                    .warm_up_time(Duration::from_millis(500))
                    .measurement_time(Duration::from_secs(3));
            } else {
                group
                    .sample_size(30)
                    .warm_up_time(Duration::from_millis(300))
                    .measurement_time(Duration::from_secs(1));
            }
            let dir = session(&text);
            group.bench_with_input(BenchmarkId::from_parameter(n), dir.path(), |b, dir| {
                // One graph alive at a time, dropped outside the timing.
                b.iter_batched(
                    || (),
                    |()| load_build_waves(black_box(dir)),
                    BatchSize::PerIteration,
                );
            });
        }
        group.finish();
    }
}

fn main() {
    // Only under `cargo bench` (which passes `--bench`), not in test mode.
    if std::env::args().any(|a| a == "--bench") {
        print_breakdown();
    }
    let mut c = Criterion::default().configure_from_args();
    bench_waves(&mut c);
    c.final_summary();
}
