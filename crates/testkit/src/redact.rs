//! Redaction filters: the parts of an output that change from run to run.

use std::sync::LazyLock;

use regex::Regex;

/// `(pattern, replacement)` pairs, applied in order.
pub const FILTERS: &[(&str, &str)] = &[
    // RFC 3339 timestamps, with `Z`, `+00:00` or no zone, any precision.
    (
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?",
        "[TIMESTAMP]",
    ),
    // Clock times left once the timestamps are gone (`[09:15:02]`, `last: 09:15:02`).
    (r"\b\d{2}:\d{2}:\d{2}\b", "[CLOCK]"),
    // Temp folders made by `tempfile` (and the system temp root generally).
    (
        r"(?:/private)?/(?:tmp|var/folders/[^/\s]+/[^/\s]+/T)/\.tmp[A-Za-z0-9]+",
        "[TEMP]",
    ),
    // Durations as humans and tools print them.
    (r"\b\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m)\b", "[DURATION]"),
    // Process ids.
    (r#"\bpid"?:?\s*"?\d+"?"#, "pid [PID]"),
    // Millisecond fields of JSON outputs.
    (
        r#""(duration_ms|elapsed_ms|delay_ms)": \d+"#,
        "\"$1\": [MS]",
    ),
    // Durations in words.
    (r"\bin \d+ ms\b", "in [DURATION]"),
    // The scripted agent's session ids (it names them after its pid).
    (r"\bscripted-\d+\b", "scripted-[PID]"),
    // Git commit ids, whole or abbreviated (commits carry their time).
    (r"\b[0-9a-f]{10,40}\b", "[COMMIT]"),
];

static COMPILED: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    FILTERS
        .iter()
        .map(|(p, r)| (Regex::new(p).expect("valid redaction regex"), *r))
        .collect()
});

/// Apply every filter of [`FILTERS`] to `text`.
pub fn redact(text: &str) -> String {
    let mut out = text.to_owned();
    for (re, replacement) in COMPILED.iter() {
        out = re.replace_all(&out, *replacement).into_owned();
    }
    out
}

/// insta settings with [`FILTERS`] installed; bind them around a snapshot:
/// `wavecrew_testkit::insta_settings().bind(|| insta::assert_snapshot!(out))`.
pub fn insta_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in FILTERS {
        settings.add_filter(pattern, *replacement);
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_each_kind() {
        assert_eq!(redact("2026-11-22T15:44:49Z"), "[TIMESTAMP]");
        assert_eq!(redact("2026-02-26T13:42:10"), "[TIMESTAMP]");
        assert_eq!(redact("/tmp/.tmpXyZ12/a.json"), "[TEMP]/a.json");
        assert_eq!(redact("took 1.25s, 30ms"), "took [DURATION], [DURATION]");
        assert_eq!(redact(r#"{"pid": 1234}"#), r#"{"pid [PID]}"#);
        assert_eq!(redact("IMPL-001 and 3 tasks"), "IMPL-001 and 3 tasks");
        assert_eq!(redact("MSG-001 [09:15:02] a"), "MSG-001 [[CLOCK]] a");
        assert_eq!(redact("merged at 34e05bffab5b"), "merged at [COMMIT]");
        assert_eq!(redact("face IMPL-001 deadbeef"), "face IMPL-001 deadbeef");
    }
}
