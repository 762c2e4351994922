//! `wavecrew prompt` and prompt budgets, through the binaries: the prompt
//! printed before a run is the `prompt.md` the run writes; a budget cuts
//! untrusted material with a marker and keeps the full text beside it.

use std::path::{Path, PathBuf};

use wavecrew_testkit::{CliOutput, run_bin};

const SESSION: &str = ".workflow/.team/TC-demo-todo-api-2026-11-22";

/// The demo project, written but not run.
fn demo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let o = run_bin(
        "wavecrew",
        &["demo", "--dir", dir.to_str().unwrap(), "--no-run"],
        tmp.path(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    (tmp, dir)
}

fn prompt(dir: &Path, task: &str, extra: &[&str]) -> CliOutput {
    let session = dir.join(SESSION);
    let mut args = vec!["prompt", session.to_str().unwrap(), task];
    args.extend_from_slice(extra);
    run_bin("wavecrew", &args, dir)
}

#[test]
fn the_prompt_printed_before_the_run_is_the_one_the_run_sends() {
    let (_tmp, dir) = demo();
    let shown = prompt(&dir, "IMPL-001", &[]);
    assert_eq!(shown.code, 0, "{}", shown.render());
    assert!(
        shown
            .stderr
            .contains("attempt 1 of IMPL-001 through `demo`"),
        "{}",
        shown.render()
    );
    // Nothing ran: no attempt, no claim.
    let session = dir.join(SESSION);
    assert!(!session.join("attempts").exists());
    let task = std::fs::read_to_string(session.join("tasks/IMPL-001.json")).unwrap();
    assert!(task.contains("\"pending\""), "{task}");
    insta::assert_snapshot!(
        "demo_impl_001_prompt",
        shown.stdout.replace(dir.to_str().unwrap(), "[DEMO]")
    );
    let o = run_bin("wavecrew", &["run", session.to_str().unwrap()], &dir);
    assert_eq!(o.code, 0, "{}", o.render());
    let sent = std::fs::read_to_string(session.join("attempts/IMPL-001/1/prompt.md")).unwrap();
    assert_eq!(shown.stdout, sent);
}

#[test]
fn a_budget_cuts_the_wisdom_first_and_keeps_it_whole_beside_the_prompt() {
    let (_tmp, dir) = demo();
    let session = dir.join(SESSION);
    // Earlier workers wrote a lot: 5,000 characters of wisdom.
    let long = format!(
        "- {}\n",
        "the store keeps todos in insertion order; ".repeat(120)
    );
    std::fs::write(session.join("wisdom/learnings.md"), &long).unwrap();
    let config = dir.join("small-budget.toml");
    let demo_config = std::fs::read_to_string(dir.join("wavecrew.toml")).unwrap();
    std::fs::write(
        &config,
        demo_config.replace("[limits]\n", "[limits]\nprompt_max_chars = 2500\n"),
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let shown = run_bin(
        "wavecrew",
        &[
            "--config",
            config_arg,
            "prompt",
            session.to_str().unwrap(),
            "IMPL-001",
        ],
        &dir,
    );
    assert_eq!(shown.code, 0, "{}", shown.render());
    assert!(
        shown.stdout.chars().count() <= 2500,
        "{}",
        shown.stdout.len()
    );
    let full = session.join("attempts/IMPL-001/1/cut-wisdom.txt");
    assert!(
        shown
            .stdout
            .contains(&format!("the full text is in {}]", full.display())),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stderr.contains("would cut `wisdom`"),
        "{}",
        shown.render()
    );
    // The task's own text is whole.
    assert!(
        shown
            .stdout
            .contains("Make `Todo::new` keep the (trimmed) title and start open.")
    );
    let o = run_bin(
        "wavecrew",
        &["--config", config_arg, "run", session.to_str().unwrap()],
        &dir,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let sent = std::fs::read_to_string(session.join("attempts/IMPL-001/1/prompt.md")).unwrap();
    assert_eq!(shown.stdout, sent);
    let kept = std::fs::read_to_string(&full).unwrap();
    assert!(kept.contains(long.trim()), "the full wisdom is kept");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(session.join("attempts/IMPL-001/1/prompt-cuts.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["limit"], 2500);
    assert_eq!(record["cuts"][0]["field"], "wisdom");
}

#[test]
fn an_unknown_task_is_named() {
    let (_tmp, dir) = demo();
    let o = prompt(&dir, "IMPL-999", &[]);
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(o.stderr.contains("no task IMPL-999"), "{}", o.render());
}
