//! The last resort: a summary line on the console (pytest's `2 failed, 3
//! passed`, jest's `Tests: 1 failed, 3 passed, 4 total`, vitest's `Tests 1
//! failed | 3 passed (4)`, libtest's `test result: … 3 passed; 1 failed`, or
//! the plain `N passed, N failed`). Only counts, no cases, and always marked
//! [`Source::Console`]. Unlike the seed, the word `FAIL` inside a test name
//! means nothing here: only numbers next to a count word are read.

use super::{Counts, Source, TestReport};

/// Read the counts from the console summary of a test run. `None` when no
/// summary line is found.
pub fn parse_console_summary(text: &str) -> Option<TestReport> {
    let plain = strip_ansi(text);
    let text = plain.as_str();
    // nextest's closing line (its output also embeds the libtest lines of
    // failed tests, which must not be added up).
    if let Some(counts) = text
        .lines()
        .rev()
        .filter(|l| l.trim_start().starts_with("Summary ["))
        .find_map(|l| counts_in(l.split_once(']').map_or(l, |(_, rest)| rest)))
    {
        return Some(TestReport {
            counts,
            cases: Vec::new(),
            source: Source::Console,
            evidence: Vec::new(),
        });
    }
    // libtest prints one `test result:` line per test binary: add them up.
    let libtest: Vec<Counts> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("test result:"))
        .filter_map(counts_in)
        .collect();
    let counts = if libtest.is_empty() {
        text.lines().rev().find_map(|line| {
            let l = line.trim().trim_matches('=').trim();
            let l = l
                .strip_prefix("Tests:")
                .or_else(|| l.strip_prefix("Tests "))
                .unwrap_or(l);
            counts_in(l)
        })?
    } else {
        libtest.into_iter().fold(Counts::default(), |a, c| Counts {
            passed: a.passed + c.passed,
            failed: a.failed + c.failed,
            skipped: a.skipped + c.skipped,
            errors: a.errors + c.errors,
            total: a.total + c.total,
        })
    };
    Some(TestReport {
        counts,
        cases: Vec::new(),
        source: Source::Console,
        evidence: Vec::new(),
    })
}

/// Remove ANSI escape sequences (`ESC [ … letter`), which tools print
/// when they believe a terminal or CI wants colours.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final letter.
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() || d == '~' {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The counts in one summary line: `<n> <word>` pairs separated by `,`, `;`
/// or `|`. `None` unless a `passed` or `failed` count is among them.
fn counts_in(line: &str) -> Option<Counts> {
    let mut c = Counts::default();
    let mut seen = false;
    for part in line.split([',', ';', '|']) {
        // The last `<number> <word>` pair of the part counts ("5 tests
        // run: 3 passed" → 3 passed).
        let words: Vec<&str> = part.split_whitespace().collect();
        let pair = words.windows(2).rev().find_map(|w| {
            let n = w[0].parse::<u64>().ok()?;
            let word = w[1]
                .trim_end_matches(|ch: char| !ch.is_ascii_alphabetic())
                .to_ascii_lowercase();
            Some((n, word))
        });
        let Some((n, word)) = pair else { continue };
        match word.as_str() {
            "passed" | "passing" | "xpassed" => {
                c.passed += n;
                seen = true;
            }
            "failed" | "failing" | "failures" => {
                c.failed += n;
                seen = true;
            }
            "skipped" | "ignored" | "pending" | "todo" | "xfailed" => c.skipped += n,
            "error" | "errors" => c.errors += n,
            _ => {}
        }
    }
    c.total = c.passed + c.failed + c.skipped + c.errors;
    seen.then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(text: &str) -> (u64, u64, u64, u64) {
        let c = parse_console_summary(text).unwrap().counts;
        (c.passed, c.failed, c.skipped, c.errors)
    }

    #[test]
    fn summaries() {
        assert_eq!(
            counts("==== 2 failed, 3 passed, 1 skipped, 1 error in 0.12s ===="),
            (3, 2, 1, 1)
        );
        assert_eq!(
            counts("Tests:       1 failed, 1 skipped, 3 passed, 5 total"),
            (3, 1, 1, 0)
        );
        assert_eq!(counts("      Tests  1 failed | 3 passed (4)"), (3, 1, 0, 0));
        // Coloured, as vitest prints it under `CI`.
        assert_eq!(
            counts(
                "\u{1b}[2m      Tests  \u{1b}[22m\u{1b}[1m\u{1b}[31m2 failed\u{1b}[39m\u{1b}[22m\u{1b}[2m | \u{1b}[22m\u{1b}[1m\u{1b}[32m2 passed\u{1b}[39m\u{1b}[22m\u{1b}[2m | \u{1b}[22m\u{1b}[33m1 skipped\u{1b}[39m\u{1b}[90m (5)\u{1b}[39m"
            ),
            (2, 2, 1, 0)
        );
        assert_eq!(
            counts(
                "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out\n\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"
            ),
            (3, 1, 1, 0)
        );
        assert_eq!(counts("summary: 4 passed, 0 failed"), (4, 0, 0, 0));
        assert_eq!(
            counts("     Summary [   0.012s] 5 tests run: 3 passed, 2 failed, 1 skipped"),
            (3, 2, 1, 0)
        );
        // A test named FAIL_something does not make a run fail.
        assert_eq!(
            counts("test_FAIL_mode PASSED\n1 passed in 0.01s"),
            (1, 0, 0, 0)
        );
        assert!(parse_console_summary("no summary here").is_none());
    }
}
