//! Parse time of a 100,000-testcase JUnit report (and the same with the
//! repair pass a jest-junit style report needs). Outside CI:
//! `cargo bench -p wavecrew-validation --bench junit`.

#![allow(missing_docs)]

use std::fmt::Write;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};

fn report(cases: usize, timestamp: &str) -> String {
    let mut xml = String::with_capacity(cases * 120);
    xml.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"big\">\n");
    for suite in 0..cases / 1000 {
        let _ = writeln!(
            xml,
            "<testsuite name=\"suite{suite}\" tests=\"1000\" timestamp=\"{timestamp}\">"
        );
        for case in 0..1000 {
            if case % 97 == 0 {
                let _ = writeln!(
                    xml,
                    "<testcase classname=\"pkg.mod{suite}\" name=\"test_{case}\" time=\"0.001\"><failure message=\"AssertionError: assert 1 == 2\">trace</failure></testcase>"
                );
            } else {
                let _ = writeln!(
                    xml,
                    "<testcase classname=\"pkg.mod{suite}\" name=\"test_{case}\" time=\"0.001\"/>"
                );
            }
        }
        xml.push_str("</testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

fn bench(c: &mut Criterion) {
    let strict = report(100_000, "2026-03-04T09:15:02+00:00");
    let loose = report(100_000, "2026-03-04T09:15:02");
    let mut group = c.benchmark_group("junit_100k");
    group.sample_size(10);
    group.bench_function("parse", |b| {
        b.iter(|| wavecrew_validation::parse_junit(&strict, Path::new("big.xml")).unwrap());
    });
    group.bench_function("parse_with_repair", |b| {
        b.iter(|| wavecrew_validation::parse_junit(&loose, Path::new("big.xml")).unwrap());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
