//! The real CLIs' recorded output (`agent-clis/samples`) through the parsers
//! and the classifier.

use std::path::Path;

use wavecrew_backends::events::{StreamFormat, StreamState};
use wavecrew_backends::outcome::classify;
use wavecrew_backends::supervise::Ended;
use wavecrew_core::OutcomeClass;

fn fold(format: StreamFormat, file: &str) -> StreamState {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    let mut state = StreamState::default();
    for line in text.lines() {
        state.apply_line(format, line);
    }
    state
}

fn exited(code: i32) -> Ended {
    Ended::Exited {
        code: Some(code),
        signal: None,
    }
}

#[test]
fn codex_success_and_500() {
    let ok = fold(StreamFormat::Codex, "codex-exec-json.success.jsonl");
    assert_eq!(
        ok.session_id.as_deref(),
        Some("01a202cf-8386-7cd0-87d9-02baee5052b2")
    );
    assert_eq!(ok.final_message.as_deref(), Some("Done: created hello.txt"));
    assert_eq!(ok.usage.unwrap().input_tokens, 20);
    assert_eq!(ok.tool_calls.len(), 1);
    assert!(ok.completed);
    assert_eq!(classify(&exited(0), &ok, ""), OutcomeClass::Success);
    let failed = fold(StreamFormat::Codex, "codex-exec-json.http500.jsonl");
    assert!(failed.fatal_error.is_some());
    assert_eq!(classify(&exited(1), &failed, ""), OutcomeClass::Failed);
}

#[test]
fn gemini_success_and_500() {
    let ok = fold(StreamFormat::Gemini, "gemini-stream-json.success.jsonl");
    assert_eq!(
        ok.session_id.as_deref(),
        Some("9b94a2e9-4f0f-4285-857f-cef72495c3c9")
    );
    assert_eq!(ok.final_message.as_deref(), Some("Done: created hello.txt"));
    assert_eq!(ok.tool_calls[0].1, "printf hi > hello.txt");
    assert_eq!(classify(&exited(0), &ok, ""), OutcomeClass::Success);
    let failed = fold(StreamFormat::Gemini, "gemini-stream-json.http500.txt");
    assert_eq!(failed.fatal_error.as_ref().unwrap().1, Some(500));
    assert_eq!(classify(&exited(1), &failed, ""), OutcomeClass::Failed);
}

#[test]
fn claude_success_and_500() {
    let ok = fold(StreamFormat::Claude, "claude-stream-json.success.jsonl");
    assert_eq!(
        ok.session_id.as_deref(),
        Some("ed993ad7-94b6-4bab-9658-3a3fc79745e5")
    );
    assert!(ok.completed);
    assert_eq!(ok.tool_calls[0].0, "Bash");
    assert_eq!(classify(&exited(0), &ok, ""), OutcomeClass::Success);
    let failed = fold(StreamFormat::Claude, "claude-stream-json.http500.jsonl");
    assert_eq!(failed.fatal_error.as_ref().unwrap().1, Some(500));
    // claude's `subtype: success` with `is_error: true` is a failure.
    assert_eq!(classify(&exited(1), &failed, ""), OutcomeClass::Failed);
    assert_eq!(classify(&exited(0), &failed, ""), OutcomeClass::Failed);
}
