//! Parser tests on recorded reports (pytest, jest, jest-junit, vitest,
//! nextest; istanbul, lcov, Cobertura, coverage.py), empty and zero-test
//! reports, a 100k-case report, and malformed input (a clear error naming
//! the file, never a panic).

use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use wavecrew_validation::{
    CoverageFormat, Outcome, Source, TestReport, ValidationError, defect_patterns,
    effective_patterns, parse_coverage, parse_coverage_file, parse_jest_json, parse_junit,
    parse_junit_file,
};

use crate::support::recorded;

fn counts(r: &TestReport) -> (u64, u64, u64, u64, u64) {
    let c = r.counts;
    (c.passed, c.failed, c.skipped, c.errors, c.total)
}

#[test]
fn pytest_junit_xunit1_and_xunit2() {
    let (path, _) = recorded("pytest-xunit1.xml");
    let r = parse_junit_file(&path).unwrap();
    // pytest printed: 3 failed, 3 passed, 1 skipped.
    assert_eq!(counts(&r), (3, 3, 1, 0, 7));
    assert_eq!(r.source, Source::Report);
    assert_eq!(r.evidence, [path]);
    let user = r
        .cases
        .iter()
        .find(|c| c.name == "test_user_lookup")
        .unwrap();
    assert_eq!(user.file.as_deref(), Some("tests/test_calc.py"));
    assert_eq!(user.classname.as_deref(), Some("tests.test_calc"));
    assert!(
        user.message
            .as_deref()
            .unwrap()
            .contains("'NoneType' object has no attribute 'name'")
    );
    assert_eq!(defect_patterns(&r), ["assertion_failure", "null_reference"]);

    // The second run (flaky test passed): 2 failed, 4 passed, 1 skipped.
    let (path, _) = recorded("pytest-xunit2.xml");
    let r = parse_junit_file(&path).unwrap();
    assert_eq!(counts(&r), (4, 2, 1, 0, 7));
    assert!(
        r.cases.iter().all(|c| c.file.is_none()),
        "xunit2 has no file attribute"
    );
}

#[test]
fn jest_json() {
    let (path, text) = recorded("jest.json");
    let r = parse_jest_json(&text, &path, Some(Path::new("/project"))).unwrap();
    // jest printed: 3 failed, 1 skipped, 1 todo, 3 passed, 8 total.
    assert_eq!(counts(&r), (3, 3, 2, 0, 8));
    let user = r
        .cases
        .iter()
        .find(|c| c.name == "math reads a user")
        .unwrap();
    assert_eq!(user.file.as_deref(), Some("src/math.test.js"));
    assert_eq!(user.outcome, Outcome::Failed);
    assert!(
        user.message
            .as_deref()
            .unwrap()
            .starts_with("TypeError: Cannot read properties of undefined (reading 'name')")
    );
    assert!(defect_patterns(&r).contains(&"null_reference".to_owned()));
}

#[test]
fn jest_junit_with_zoneless_timestamps() {
    let (path, text) = recorded("jest-junit.xml");
    assert!(
        text.contains("timestamp=\"2026-11-22T17:34:08\""),
        "the recording has a zone-less timestamp"
    );
    let r = parse_junit(&text, &path).unwrap();
    // jest-junit writes the todo test as an empty <testcase> (so it reads
    // as passed) while its own `tests="7"` leaves it out: one reason the
    // runner reads jest's `--json` rather than jest-junit.
    assert_eq!(counts(&r), (4, 3, 1, 0, 8));
    assert!(
        r.cases
            .iter()
            .any(|c| c.name == "math rounds" && c.outcome == Outcome::Passed)
    );
}

#[test]
fn vitest_json_and_junit() {
    let (path, text) = recorded("vitest.json");
    let r = parse_jest_json(&text, &path, Some(Path::new("/project"))).unwrap();
    // vitest printed: Tests 2 failed | 2 passed | 1 skipped (5).
    assert_eq!(counts(&r), (2, 2, 1, 0, 5));
    assert!(
        r.cases
            .iter()
            .any(|c| c.name == "strings takes initials" && c.outcome == Outcome::Failed)
    );
    let (path, text) = recorded("vitest-junit.xml");
    let r = parse_junit(&text, &path).unwrap();
    assert_eq!(counts(&r), (2, 2, 1, 0, 5));
    assert_eq!(
        effective_patterns(&r),
        Vec::<String>::new(),
        "pass rate 0.5 records no effective pattern"
    );
}

#[test]
fn nextest_junit() {
    let (path, text) = recorded("nextest-junit.xml");
    let r = parse_junit(&text, &path).unwrap();
    // nextest printed: 5 tests run: 3 passed, 2 failed, 1 skipped; the
    // ignored test is not in its JUnit report.
    assert_eq!(counts(&r), (3, 2, 0, 0, 5));
    let multiplies = r
        .cases
        .iter()
        .find(|c| c.name == "tests::multiplies")
        .unwrap();
    assert_eq!(multiplies.classname.as_deref(), Some("wavecrew-fixture"));
    assert!(
        multiplies
            .message
            .as_deref()
            .unwrap()
            .contains("assertion `left == right` failed")
    );
}

#[test]
fn coverage_formats() {
    let dir = crate::support::fixture("reports");
    let istanbul = parse_coverage_file(&dir.join("istanbul-coverage-summary.json")).unwrap();
    // jest printed: Lines : 77.77% ( 7/9 ).
    assert_eq!(
        (istanbul.format, istanbul.covered, istanbul.total),
        (CoverageFormat::Istanbul, 7, 9)
    );
    assert!((istanbul.percent.unwrap() - 77.777).abs() < 0.01);
    let lcov = parse_coverage_file(&dir.join("jest-lcov.info")).unwrap();
    assert_eq!(
        (lcov.format, lcov.covered, lcov.total),
        (CoverageFormat::Lcov, 7, 9)
    );
    // pytest-cov printed: TOTAL 20 6 70%.
    let cobertura = parse_coverage_file(&dir.join("cobertura-coveragepy.xml")).unwrap();
    assert_eq!(
        (cobertura.format, cobertura.covered, cobertura.total),
        (CoverageFormat::Cobertura, 14, 20)
    );
    assert_eq!(cobertura.percent, Some(70.0));
    let py = parse_coverage_file(&dir.join("coveragepy.json")).unwrap();
    assert_eq!(
        (py.format, py.covered, py.total, py.percent),
        (CoverageFormat::CoveragePy, 14, 20, Some(70.0))
    );
}

#[test]
fn empty_and_zero_test_reports() {
    let p = Path::new("empty.xml");
    let r = parse_junit("<testsuites/>", p).unwrap();
    assert_eq!(counts(&r), (0, 0, 0, 0, 0));
    assert_eq!(r.pass_rate(), 0.0, "nothing ran, nothing proven");
    let r = parse_junit(r#"<?xml version="1.0"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="0"/></testsuites>"#, p).unwrap();
    assert_eq!(r.counts.total, 0);
    let r = parse_junit(r#"<testsuite name="empty" tests="0"></testsuite>"#, p).unwrap();
    assert_eq!(r.counts.total, 0);
    let r = parse_jest_json(
        r#"{"numTotalTests":0,"testResults":[]}"#,
        Path::new("j.json"),
        None,
    )
    .unwrap();
    assert_eq!(r.counts.total, 0);
    let c = parse_coverage(CoverageFormat::Lcov, b"", Path::new("lcov.info")).unwrap();
    assert_eq!(c.percent, None);
    let c = parse_coverage(
        CoverageFormat::Istanbul,
        br#"{"total":{"lines":{"total":0,"covered":0,"skipped":0,"pct":"Unknown"}}}"#,
        Path::new("coverage-summary.json"),
    )
    .unwrap();
    assert_eq!(
        c.percent, None,
        "istanbul's \"Unknown\" is no coverage, not 0 or 100"
    );
}

fn big_report(cases: usize) -> String {
    let mut xml = String::with_capacity(cases * 100);
    xml.push_str("<testsuites>");
    for s in 0..cases / 1000 {
        let _ = write!(xml, "<testsuite name=\"s{s}\" tests=\"1000\">");
        for c in 0..1000 {
            if c == 0 {
                let _ = write!(
                    xml,
                    "<testcase classname=\"m{s}\" name=\"t{c}\"><failure message=\"boom\"/></testcase>"
                );
            } else {
                let _ = write!(
                    xml,
                    "<testcase classname=\"m{s}\" name=\"t{c}\" time=\"0.001\"/>"
                );
            }
        }
        xml.push_str("</testsuite>");
    }
    xml.push_str("</testsuites>");
    xml
}

#[test]
fn hundred_thousand_cases() {
    let xml = big_report(100_000);
    let started = Instant::now();
    let r = parse_junit(&xml, Path::new("big.xml")).unwrap();
    let took = started.elapsed();
    assert_eq!(counts(&r), (99_900, 100, 0, 0, 100_000));
    // The bench (release) measures the real figure; this bound holds in
    // an unoptimised test build on a busy 2-core machine.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

fn assert_malformed(err: &ValidationError, file: &str) {
    let text = err.to_string();
    assert!(
        matches!(err, ValidationError::MalformedReport { .. })
            && text.starts_with(&format!("`{file}`: malformed")),
        "{text}"
    );
}

#[test]
fn malformed_reports_are_clear_errors() {
    for xml in [
        "",
        "not xml at all",
        "<testsuites><testsuite name=\"a\"><testcase name=\"x\">",
        "<testsuites><testsuite name=\"a\"><testcase/></testsuite></testsuites>",
        "<testsuites tests=\"many\"></testsuites>",
        "<testsuites><testsuite name=\"a\"></testsuites>",
        "<html><body>502</body></html>",
    ] {
        assert_malformed(&parse_junit(xml, Path::new("r.xml")).unwrap_err(), "r.xml");
    }
    for json in [
        "",
        "{",
        "[]",
        r#"{"testResults":[{"name":"a","assertionResults":[{"title":"t","status":"exploded"}]}]}"#,
    ] {
        assert_malformed(
            &parse_jest_json(json, Path::new("j.json"), None).unwrap_err(),
            "j.json",
        );
    }
    let bad: [(CoverageFormat, &[u8]); 7] = [
        (CoverageFormat::Istanbul, b"{}"),
        (
            CoverageFormat::Istanbul,
            br#"{"total":{"lines":{"total":1,"covered":5}}}"#,
        ),
        (CoverageFormat::CoveragePy, br#"{"totals":{}}"#),
        (CoverageFormat::Lcov, b"SF:a.js\nDA:x,y\nend_of_record\n"),
        (CoverageFormat::Cobertura, b"<coverage line-rate=\"lots\"/>"),
        (CoverageFormat::Cobertura, b"<report/>"),
        (CoverageFormat::Cobertura, b"<coverage"),
    ];
    for (format, bytes) in bad {
        assert_malformed(
            &parse_coverage(format, bytes, Path::new("cov")).unwrap_err(),
            "cov",
        );
    }
}

#[test]
fn truncated_reports_never_panic() {
    for name in [
        "pytest-xunit1.xml",
        "jest-junit.xml",
        "nextest-junit.xml",
        "jest.json",
        "vitest.json",
    ] {
        let (path, text) = recorded(name);
        for cut in (0..text.len())
            .step_by(13)
            .filter(|i| text.is_char_boundary(*i))
        {
            let part = &text[..cut];
            if Path::new(name).extension().is_some_and(|e| e == "json") {
                let _ = parse_jest_json(part, &path, None);
            } else {
                let _ = parse_junit(part, &path);
            }
        }
    }
}
