//! `cargo test` (libtest) console output: its per-test lines
//! (`test path::name ... ok|FAILED|ignored`) and the `---- name stdout ----`
//! sections holding the failure messages. libtest's JSON format needs a
//! nightly flag, so this is read from the console and marked
//! [`Source::Console`]; `cargo nextest` with JUnit is preferred when present.

use super::{Outcome, Source, TestCase, TestReport};

/// Parse the combined stdout/stderr of `cargo test`. `None` when it holds
/// no per-test line at all.
pub fn parse_libtest_output(text: &str) -> Option<TestReport> {
    let mut cases: Vec<TestCase> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, status)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        let outcome = match status.trim() {
            "ok" => Outcome::Passed,
            "FAILED" => Outcome::Failed,
            s if s.starts_with("ignored") => Outcome::Skipped,
            _ => continue,
        };
        let name = name.trim().to_owned();
        cases.push(TestCase {
            id: name.clone(),
            name,
            classname: None,
            file: None,
            outcome,
            message: None,
        });
    }
    if cases.is_empty() {
        return None;
    }
    // Failure sections: "---- name stdout ----" up to the next section.
    let mut current: Option<(String, String)> = None;
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            if let Some(done) = current.take() {
                sections.push(done);
            }
            current = Some((name.to_owned(), String::new()));
        } else if line.trim() == "failures:" || line.starts_with("test result:") {
            if let Some(done) = current.take() {
                sections.push(done);
            }
        } else if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some(done) = current.take() {
        sections.push(done);
    }
    for (name, body) in sections {
        if let Some(case) = cases
            .iter_mut()
            .find(|c| c.name == name && c.outcome == Outcome::Failed)
        {
            case.message = Some(body.trim().to_owned());
        }
    }
    Some(TestReport::from_cases(cases, Source::Console, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_test_lines_and_failure_sections() {
        let out = "running 3 tests
test tests::adds ... ok
test tests::ignored_one ... ignored, slow
test tests::fails ... FAILED

failures:

---- tests::fails stdout ----
thread 'tests::fails' panicked at src/lib.rs:9:5:
assertion `left == right` failed

failures:
    tests::fails

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out
";
        let r = parse_libtest_output(out).unwrap();
        assert_eq!(
            (r.counts.passed, r.counts.failed, r.counts.skipped),
            (1, 1, 1)
        );
        assert!(
            r.cases[2]
                .message
                .as_deref()
                .unwrap()
                .contains("assertion `left == right` failed")
        );
        assert!(parse_libtest_output("nothing here").is_none());
    }
}
