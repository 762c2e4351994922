//! Append N records and print the time per append (for profiling).

use std::time::Instant;

use wavecrew_core::{NewMessage, SessionId};
use wavecrew_msgbus::{Bus, BusPaths, Durability};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let bus = Bus::new(
        BusPaths::new(tmp.path(), SessionId::new("TC-loop-2026").expect("id")),
        Durability::None,
    );
    let t = Instant::now();
    for _ in 0..n {
        bus.log(NewMessage {
            from: "executor".into(),
            ..NewMessage::default()
        })
        .expect("append");
    }
    let d = t.elapsed();
    println!(
        "{n} appends: {:.1} ms ({:.2} µs each)",
        d.as_secs_f64() * 1e3,
        d.as_secs_f64() * 1e6 / f64::from(u32::try_from(n).unwrap_or(u32::MAX))
    );
}
