//! `wavecrew-scripted-agent` under supervision, read by the real parsers:
//! the path every later backend test and the demo take.

use std::time::Duration;

use wavecrew_backends::events::{StreamFormat, StreamState};
use wavecrew_backends::outcome::classify;
use wavecrew_backends::supervise::{Spawn, supervise};
use wavecrew_core::{Limits, OutcomeClass};
use wavecrew_testkit::{bin_path, run_bin};

const SCRIPT: &str = r#"{
  "scenarios": [
    { "match": { "task": "IMPL-001" },
      "steps": [ { "write": { "path": "todo/model.py", "content": "class Todo:\n    pass\n" } },
                 { "run": ["python3", "-m", "py_compile", "todo/model.py"] },
                 { "say": "Done: created the model" } ] },
    { "match": { "task": "IMPL-002" }, "steps": [ { "sleep_ms": 100 }, { "fail": { "message": "Too Many Requests", "status": 429 } } ] },
    { "match": { "task": "IMPL-003" }, "steps": [ { "say": "thinking" }, { "hang": true } ] }
  ]
}"#;

async fn attempt(
    format: &str,
    task: &str,
    wall_ms: u64,
) -> (OutcomeClass, StreamState, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.json"), SCRIPT).unwrap();
    let spawn = Spawn::new(
        bin_path("wavecrew-scripted-agent"),
        &[
            "--script",
            "script.json",
            "--format",
            format,
            "--task",
            task,
            "do the task",
        ],
        dir.path(),
    );
    let limits = Limits {
        wall: Duration::from_millis(wall_ms),
        stall: Duration::from_secs(30),
        grace: Duration::from_millis(200),
        ..Limits::default()
    };
    let stream_format = match format {
        "codex" => StreamFormat::Codex,
        "gemini" => StreamFormat::Gemini,
        _ => StreamFormat::Claude,
    };
    let mut state = StreamState::default();
    let out = supervise(&spawn, &limits, None, None, |l| {
        state.apply_line(stream_format, l);
    })
    .await;
    (classify(&out.ended, &state, &out.stderr_tail), state, dir)
}

#[tokio::test]
async fn a_write_task_in_every_format() {
    for format in ["codex", "gemini", "claude"] {
        let (outcome, state, dir) = attempt(format, "IMPL-001", 20_000).await;
        assert_eq!(outcome, OutcomeClass::Success, "{format}");
        assert_eq!(
            state.final_message.as_deref(),
            Some("Done: created the model"),
            "{format}"
        );
        assert!(dir.path().join("todo/model.py").is_file(), "{format}");
        assert!(state.session_id.is_some(), "{format}");
    }
}

#[tokio::test]
async fn a_rate_limit_in_every_format() {
    for format in ["codex", "gemini", "claude"] {
        let (outcome, _, _) = attempt(format, "IMPL-002", 20_000).await;
        assert!(
            matches!(outcome, OutcomeClass::RateLimited { .. }),
            "{format}: {outcome:?}"
        );
    }
}

#[tokio::test]
async fn a_hang_times_out() {
    let (outcome, state, _) = attempt("codex", "IMPL-003", 700).await;
    assert_eq!(outcome, OutcomeClass::TimedOut);
    assert_eq!(state.final_message.as_deref(), Some("thinking"));
}

#[test]
fn bad_scripts_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.json"),
        r#"{"scenarios":[{"steps":[{"explode":1}]}]}"#,
    )
    .unwrap();
    let out = run_bin(
        "wavecrew-scripted-agent",
        &["--script", "bad.json", "x"],
        dir.path(),
    );
    assert_eq!(out.code, 2, "{}", out.render());
    assert!(out.stderr.contains("bad.json"), "{}", out.stderr);
    let out = run_bin(
        "wavecrew-scripted-agent",
        &["--script", "missing.json", "x"],
        dir.path(),
    );
    assert_eq!(out.code, 2);
}
