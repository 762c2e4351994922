//! Build + validate + waves, including the JSON parse, for chain, fan-out,
//! random and layered DAGs of 1k to 1M tasks.
//!
//! The input is the task-analysis shape `{"IMPL-0000001": ["IMPL-0000000",
//! …], …}` as text; the measured time covers parsing it into nodes,
//! [`Dag::build`] (validation and Kahn levels included) and
//! [`Dag::wave_ids`] (the waves as borrowed ids). Dropping the graph
//! (freeing a million strings) happens outside the measurement, and so does
//! [`Dag::waves`], which copies every id; the breakdown table shows both.
//!
//! Before criterion runs (under `cargo bench`), a breakdown table (parse / build / waves, median
//! of 3) is printed so linear growth can be read at a glance.
//!
//! `cargo bench -p wavecrew-scheduler --bench waves -- --quick`

use std::fmt::{self, Write as _};
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use wavecrew_core::TaskId;
use wavecrew_scheduler::{BuildOptions, Dag, TaskNode};

const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];

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

/// The task-analysis JSON text for `n` tasks of this shape.
fn generate(shape: Shape, n: usize, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let width = (n / 1000).clamp(10, 1000);
    let mut out = String::with_capacity(n * 48);
    out.push('{');
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
    out.push('}');
    out
}

/// The parsed task-analysis map, straight into nodes (no intermediate map).
struct Analysis(Vec<TaskNode>);

impl<'de> Deserialize<'de> for Analysis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Analysis;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from task id to its dependency ids")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Analysis, A::Error> {
                let mut nodes = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((id, deps)) = map.next_entry::<TaskId, Vec<TaskId>>()? {
                    nodes.push(TaskNode::new(id, deps));
                }
                Ok(Analysis(nodes))
            }
        }
        d.deserialize_map(V)
    }
}

fn parse(text: &str) -> Vec<TaskNode> {
    serde_json::from_str::<Analysis>(text)
        .expect("generated JSON parses")
        .0
}

/// The measured work: parse, build (validate, levels), waves.
fn parse_build_waves(text: &str) -> Dag {
    let dag =
        Dag::build(parse(text), &BuildOptions::default()).expect("generated graphs are valid");
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

/// Parse / build / waves separately, median of 3 runs, as a table.
fn print_breakdown() {
    println!("\nwaves: median of 3 (ms); total = parse + build + wave_ids");
    println!(
        "| shape | tasks | JSON MB | parse | build | wave_ids | total | waves() owned | drop | waves |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for shape in SHAPES {
        for n in SIZES {
            let text = generate(shape, n, 7);
            let mut times: [Vec<Duration>; 5] = Default::default();
            let mut count = 0;
            for _ in 0..3 {
                let clock = Instant::now();
                let nodes = parse(&text);
                times[0].push(clock.elapsed());
                let clock = Instant::now();
                let dag = Dag::build(nodes, &BuildOptions::default()).expect("valid");
                times[1].push(clock.elapsed());
                let clock = Instant::now();
                count = black_box(dag.wave_ids()).len();
                times[2].push(clock.elapsed());
                let clock = Instant::now();
                drop(black_box(dag.waves()));
                times[3].push(clock.elapsed());
                let clock = Instant::now();
                drop(dag);
                times[4].push(clock.elapsed());
            }
            let [parse_t, build_t, ids_t, owned_t, drop_t] = times.map(median);
            #[allow(clippy::cast_precision_loss)]
            let mb = text.len() as f64 / 1e6;
            println!(
                "| {shape} | {n} | {mb:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {count} |",
                ms(parse_t),
                ms(build_t),
                ms(ids_t),
                ms(parse_t + build_t + ids_t),
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
            group.bench_with_input(BenchmarkId::from_parameter(n), &text, |b, text| {
                // One graph alive at a time, dropped outside the timing.
                b.iter_batched(
                    || (),
                    |()| parse_build_waves(black_box(text)),
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
