//! Bus benchmarks (outside CI), to compare with ccw's figures in
//! `ccw-compat.md` §6.1: appends (durability `none` and `every`), one append /
//! `list` last 20 / `status` on a 1M-message log, 8 concurrent writers, and
//! `wavecrew msg log` per call (when `target/release/wavecrew` is built).
//!
//! `cargo bench -p wavecrew-msgbus --bench bus`; the one-shot figures are
//! printed as `figure: …` lines before criterion's own.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;
use wavecrew_core::{ListFilter, NewMessage, SessionId};
use wavecrew_msgbus::{Bus, BusPaths, Durability};

const SESSION: &str = "TC-bench-2026-11-22";

fn bus(root: &Path, durability: Durability) -> Bus {
    Bus::new(
        BusPaths::new(root, SessionId::new(SESSION).unwrap()),
        durability,
    )
}

fn message(i: usize) -> NewMessage {
    NewMessage {
        from: "executor".into(),
        summary: Some(format!("[executor] record {i}")),
        data: serde_json::json!({"task_id": "IMPL-001", "n": i})
            .as_object()
            .cloned(),
        ..NewMessage::default()
    }
}

/// Write `n` ccw-shaped records directly (fast), as a big existing log.
fn big_log(root: &Path, n: usize) {
    let b = bus(root, Durability::None);
    std::fs::create_dir_all(b.paths().msg_dir()).unwrap();
    let mut w = BufWriter::new(File::create(b.paths().log()).unwrap());
    for i in 1..=n {
        writeln!(
            w,
            r#"{{"id":"MSG-{i:03}","ts":"2026-03-04T09:15:02.481+00:00","from":"executor","to":"coordinator","type":"task_complete","summary":"[executor] task_complete → coordinator","data":{{"task_id":"IMPL-{i:03}","files_modified":["src/a.ts","src/b.ts"]}}}}"#
        )
        .unwrap();
    }
}

fn figure(name: &str, d: Duration) {
    println!("figure: {name}: {:.3} ms", d.as_secs_f64() * 1000.0);
}

fn one_shot_figures() {
    // 100k sequential appends, durability none.
    let tmp = tempfile::tempdir().unwrap();
    let b = bus(tmp.path(), Durability::None);
    let t = Instant::now();
    for i in 0..100_000 {
        b.log(message(i)).unwrap();
    }
    figure("100k sequential appends (none)", t.elapsed());

    // 1k appends with fdatasync per record.
    let tmp = tempfile::tempdir().unwrap();
    let b = bus(tmp.path(), Durability::Every);
    let t = Instant::now();
    for i in 0..1000 {
        b.log(message(i)).unwrap();
    }
    figure("1k appends (every), total", t.elapsed());

    // 8 concurrent writers × 10k.
    let tmp = tempfile::tempdir().unwrap();
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..8 {
            let root = tmp.path();
            s.spawn(move || {
                let b = bus(root, Durability::None);
                for i in 0..10_000 {
                    b.log(message(i)).unwrap();
                }
            });
        }
    });
    let d = t.elapsed();
    figure("8 writers x 10k appends, total", d);
    println!(
        "figure: 8 writers throughput: {:.0} appends/s",
        80_000.0 / d.as_secs_f64()
    );

    // The 1M-message log: the first `status` builds the summary cache.
    let tmp = tempfile::tempdir().unwrap();
    big_log(tmp.path(), 1_000_000);
    let b = bus(tmp.path(), Durability::None);
    let t = Instant::now();
    b.status().unwrap();
    figure("status on 1M, cold (builds the cache)", t.elapsed());

    // `wavecrew msg log` per call, process start to exit.
    let exe = workspace_target().join("release/wavecrew");
    if exe.is_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".workflow/.team").join(SESSION)).unwrap();
        let n = 200;
        let t = Instant::now();
        for _ in 0..n {
            let ok = std::process::Command::new(&exe)
                .args(["msg", "log", "--session-id", SESSION, "--from", "executor"])
                .current_dir(tmp.path())
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        figure("wavecrew msg log, per call", t.elapsed() / n);
    } else {
        println!(
            "figure: wavecrew msg log per call: skipped (build target/release/wavecrew first)"
        );
    }
}

fn workspace_target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}

fn benches(c: &mut Criterion) {
    one_shot_figures();

    let tmp = tempfile::tempdir().unwrap();
    let b = bus(tmp.path(), Durability::None);
    let mut i = 0;
    c.bench_function("append (none)", |x| {
        x.iter(|| {
            i += 1;
            b.log(message(i)).unwrap()
        });
    });

    let tmp = tempfile::tempdir().unwrap();
    big_log(tmp.path(), 1_000_000);
    let b = bus(tmp.path(), Durability::None);
    b.status().unwrap(); // warm the summary cache
    let mut group = c.benchmark_group("1M-message log");
    group.sample_size(50);
    group.bench_function("append", |x| {
        x.iter(|| {
            i += 1;
            b.log(message(i)).unwrap()
        });
    });
    group.bench_function("list last 20", |x| {
        x.iter(|| b.list(&ListFilter::default()).unwrap());
    });
    group.bench_function("status (warm cache)", |x| x.iter(|| b.status().unwrap()));
    group.finish();
}

fn main() {
    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .configure_from_args();
    // The one-shot figures only under `cargo bench`, not in test mode.
    if std::env::args().any(|a| a == "--bench") {
        benches(&mut c);
    }
    c.final_summary();
}
