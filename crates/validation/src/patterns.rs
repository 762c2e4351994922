//! Defect and effective-test patterns (seed 002 Phase 4), computed per test
//! case from the report: the failure message and name of each failing case
//! for defects, the names of passing cases for effective patterns. Never from
//! the whole console text, so one word in a banner does not tag a run.
//!
//! Matching is on lower-cased words (`snake_case` and `camelCase` names are
//! split), with a few phrases. The seed's table is kept, made precise:
//!
//! | pattern | seed keywords | here |
//! | --- | --- | --- |
//! | `null_reference` | null, undefined, Cannot read property | `cannot read propert…`, `of undefined`, `of null`, `is undefined`, `is null`, `nonetype`, `null pointer`, `on a none value` |
//! | `async_timing` | timeout, async, await, promise | `timeout`, `timed out`, `async`, `await`, `promise` |
//! | `import_error` | Cannot find module, import | `cannot find module`, `modulenotfounderror`, `importerror`, `no module named`, `unresolved import` |
//! | `type_mismatch` | type, expected, received | `typeerror` (unless a null reference), `mismatched types`, `type mismatch`, `is not a function` |
//! | `assertion_failure` | (not in the seed) | `assertionerror`, `assert`, `expect(` — what remains when nothing above matched |
//!
//! Effective patterns (recorded when the pass rate is above 0.8):
//! `happy_path` (`should succeed`, `valid input`, `success`, `happy`),
//! `edge_case` (`edge`, `boundary`, `limit`, `empty`), `error_handling`
//! (`should fail`, `error`, `throw`, `raises`, `invalid`, `panic`).

use crate::report::{Outcome, TestCase, TestReport};

/// Split a name or message into lower-case words, `camelCase` and
/// `snake_case` apart, joined by single spaces (so phrases can be matched).
fn words(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                out.push(' ');
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            out.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !out.ends_with(' ') {
                out.push(' ');
            }
        }
    }
    format!(" {} ", out.trim())
}

fn has_word(w: &str, word: &str) -> bool {
    w.contains(&format!(" {word} "))
}

fn has_phrase(w: &str, phrase: &str) -> bool {
    w.contains(&format!(" {phrase}"))
}

/// The defect patterns of one failing case.
pub fn defect_patterns_of(case: &TestCase) -> Vec<&'static str> {
    let raw = case.message.as_deref().unwrap_or_default().to_lowercase();
    let w = words(&raw);
    let mut out = Vec::new();
    let null_ref = raw.contains("cannot read propert")
        || [
            "of undefined",
            "of null",
            "is undefined",
            "is null",
            "null pointer",
            "on a none value",
            "on a `none` value",
        ]
        .iter()
        .any(|p| raw.contains(p))
        || has_word(&w, "nonetype");
    if null_ref {
        out.push("null_reference");
    }
    if ["timeout", "async", "await", "promise"]
        .iter()
        .any(|k| has_word(&w, k))
        || has_phrase(&w, "timed out")
        || raw.contains("exceeded timeout")
    {
        out.push("async_timing");
    }
    if raw.contains("cannot find module")
        || ["modulenotfounderror", "importerror"]
            .iter()
            .any(|k| has_word(&w, k))
        || has_phrase(&w, "no module named")
        || has_phrase(&w, "unresolved import")
    {
        out.push("import_error");
    }
    if (has_word(&w, "typeerror") && !null_ref)
        || has_phrase(&w, "mismatched types")
        || has_phrase(&w, "type mismatch")
        || has_phrase(&w, "is not a function")
    {
        out.push("type_mismatch");
    }
    if out.is_empty()
        && (has_word(&w, "assertionerror")
            || has_word(&w, "assert")
            || has_word(&w, "assertion")
            || raw.contains("expect("))
    {
        out.push("assertion_failure");
    }
    out
}

/// The effective-test patterns a test's name shows.
pub fn effective_patterns_of(name: &str) -> Vec<&'static str> {
    let w = words(name);
    let mut out = Vec::new();
    if has_phrase(&w, "should succeed")
        || has_phrase(&w, "valid input")
        || ["success", "succeeds", "happy"]
            .iter()
            .any(|k| has_word(&w, k))
    {
        out.push("happy_path");
    }
    if ["edge", "boundary", "limit", "limits", "empty"]
        .iter()
        .any(|k| has_word(&w, k))
    {
        out.push("edge_case");
    }
    if has_phrase(&w, "should fail")
        || [
            "error", "errors", "throw", "throws", "raises", "invalid", "panic", "panics",
        ]
        .iter()
        .any(|k| has_word(&w, k))
    {
        out.push("error_handling");
    }
    out
}

/// The defect patterns of a report, without repeats, in a fixed order.
pub fn defect_patterns(report: &TestReport) -> Vec<String> {
    collect(report.failures().flat_map(defect_patterns_of))
}

/// The effective patterns of a report: from passing test names, and only
/// when the pass rate is above 0.8 (as the seed).
pub fn effective_patterns(report: &TestReport) -> Vec<String> {
    if report.pass_rate() <= 0.8 {
        return Vec::new();
    }
    collect(
        report
            .cases
            .iter()
            .filter(|c| c.outcome == Outcome::Passed)
            .flat_map(|c| effective_patterns_of(&c.name)),
    )
}

fn collect<'a>(items: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = items.map(str::to_owned).collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(message: &str) -> TestCase {
        TestCase {
            id: "x".into(),
            name: "x".into(),
            classname: None,
            file: None,
            outcome: Outcome::Failed,
            message: Some(message.into()),
        }
    }

    #[test]
    fn defects() {
        assert_eq!(
            defect_patterns_of(&failing(
                "TypeError: Cannot read properties of undefined (reading 'id')"
            )),
            ["null_reference"]
        );
        assert_eq!(
            defect_patterns_of(&failing("Exceeded timeout of 5000 ms for a test")),
            ["async_timing"]
        );
        assert_eq!(
            defect_patterns_of(&failing("ModuleNotFoundError: No module named 'calc'")),
            ["import_error"]
        );
        assert_eq!(
            defect_patterns_of(&failing("TypeError: x.map is not a function")),
            ["type_mismatch"]
        );
        assert_eq!(
            defect_patterns_of(&failing("AssertionError: assert 3 == 4")),
            ["assertion_failure"]
        );
        // The seed's "type" keyword would tag every message with "prototype".
        assert!(defect_patterns_of(&failing("prototype chain broken")).is_empty());
    }

    #[test]
    fn effective() {
        assert_eq!(
            effective_patterns_of("test_divide_by_zero_raises"),
            ["error_handling"]
        );
        assert_eq!(effective_patterns_of("parses empty input"), ["edge_case"]);
        assert_eq!(
            effective_patterns_of("login should succeed with valid input"),
            ["happy_path"]
        );
        assert!(effective_patterns_of("adds numbers").is_empty());
    }
}
