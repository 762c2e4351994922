//! Acceptance criteria: `verify` commands run as argv in the task's folder,
//! with a timeout and their output kept; shell syntax never reaches a
//! shell; plain text is `manual_review`; the keyword strategy is opt-in.

use std::path::Path;
use std::time::Duration;

use wavecrew_core::{Criterion, Task};
use wavecrew_validation::CheckStatus::{Fail, ManualReview, Pass, TimedOut};
use wavecrew_validation::{AcceptanceOptions, CheckStatus, Evidence, Strategy, check_acceptance};

fn verify(cmd: &str) -> Criterion {
    Criterion {
        text: format!("runs {cmd}"),
        verify: Some(cmd.to_owned()),
    }
}

async fn check(criteria: &[Criterion], dir: &Path) -> wavecrew_validation::AcceptanceReport {
    let options = AcceptanceOptions {
        timeout: Duration::from_millis(1500),
        ..AcceptanceOptions::default()
    };
    check_acceptance(criteria, dir, &options).await
}

#[tokio::test]
async fn shell_syntax_runs_nothing_but_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("victim"), "still here").unwrap();
    let criteria = [
        verify("echo ok; rm -rf victim"),
        verify("echo $(touch pwned-subst)"),
        verify("echo `touch pwned-backtick`"),
        verify("echo first\ntouch pwned-newline"),
        verify("echo a && touch pwned-and | touch pwned-pipe > pwned-redirect"),
    ];
    let report = check(&criteria, d).await;
    for r in &report.criteria {
        assert_eq!(r.status, CheckStatus::Pass, "{r:?}");
        assert_eq!(r.argv.as_ref().unwrap()[0], "echo");
        assert!(
            r.reason
                .as_deref()
                .unwrap()
                .contains("never run through a shell"),
            "{r:?}"
        );
    }
    // echo printed its arguments literally.
    assert_eq!(report.criteria[0].output, "ok; rm -rf victim\n");
    assert_eq!(report.criteria[1].output, "$(touch pwned-subst)\n");
    assert_eq!(report.criteria[2].output, "`touch pwned-backtick`\n");
    assert_eq!(
        report.criteria[3].argv.as_ref().unwrap(),
        &["echo", "first", "touch", "pwned-newline"]
    );
    assert_eq!(
        std::fs::read_to_string(d.join("victim")).unwrap(),
        "still here"
    );
    let mut left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["victim"], "no command but echo ran");
}

#[tokio::test]
async fn exit_code_decides_in_the_task_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker.txt"), "x").unwrap();
    let criteria = [
        verify("test -f marker.txt"),
        verify("test -f missing.txt"),
        verify("sh -c 'echo out; echo err >&2; exit 3'"),
        verify("wavecrew-no-such-program --flag"),
        verify("sleep 30"),
        verify("echo 'unterminated"),
        Criterion {
            text: "The API returns 404 for unknown ids".into(),
            verify: None,
        },
    ];
    let report = check(&criteria, dir.path()).await;
    let statuses: Vec<CheckStatus> = report.criteria.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [Pass, Fail, Fail, Fail, TimedOut, Fail, ManualReview]
    );
    assert_eq!(report.status, Fail);
    let r = &report.criteria[2];
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.output, "out\nerr\n", "output kept");
    assert_eq!(
        report.criteria[3].reason.as_deref(),
        Some("`wavecrew-no-such-program` is not installed")
    );
    assert!(
        report.criteria[5]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("cannot split the command into words")
    );
    assert_eq!(report.criteria[6].evidence, Evidence::None);
}

#[tokio::test]
async fn criteria_from_task_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("done.txt"), "").unwrap();
    // Seed 000 objects with `verify`, and the roadmap's convergence.verification.
    let seed: Task = serde_json::from_value(serde_json::json!({
        "task_id": "IMPL-001", "subject": "s", "description": "d",
        "acceptance_criteria": ["Users can log in", {"criterion": "done file exists", "verify": "test -f done.txt"}]
    }))
    .unwrap();
    let roadmap: Task = serde_json::from_value(serde_json::json!({
        "id": "IMPL-101", "title": "t", "description": "d",
        "convergence": {"criteria": ["it works"], "verification": "test -f done.txt"}
    }))
    .unwrap();
    let r = check(&seed.acceptance_criteria(), dir.path()).await;
    assert_eq!(
        r.criteria.iter().map(|c| c.status).collect::<Vec<_>>(),
        [CheckStatus::ManualReview, CheckStatus::Pass]
    );
    assert_eq!(
        r.status,
        CheckStatus::ManualReview,
        "all verified would be pass; one needs a person"
    );
    let r = check(&roadmap.acceptance_criteria(), dir.path()).await;
    assert_eq!(
        r.criteria.iter().map(|c| c.status).collect::<Vec<_>>(),
        [CheckStatus::ManualReview, CheckStatus::Pass]
    );
}

#[tokio::test]
async fn keyword_strategy_is_opt_in_and_ignores_stop_words() {
    let criteria = [
        Criterion {
            text: "The session should be refreshed".into(),
            verify: None,
        },
        Criterion {
            text: "It is the one that should be".into(),
            verify: None,
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let text = "Refreshed the session token on expiry; it should be there".to_owned();
    let evidence = check_acceptance(
        &criteria,
        dir.path(),
        &AcceptanceOptions {
            implementation_text: text.clone(),
            ..AcceptanceOptions::default()
        },
    )
    .await;
    assert!(
        evidence
            .criteria
            .iter()
            .all(|c| c.status == CheckStatus::ManualReview)
    );
    let keyword = AcceptanceOptions {
        strategy: Strategy::Keyword,
        implementation_text: text,
        ..AcceptanceOptions::default()
    };
    let r = check_acceptance(&criteria, dir.path(), &keyword).await;
    assert_eq!(r.criteria[0].status, CheckStatus::Pass);
    assert_eq!(r.criteria[0].evidence, Evidence::Keyword);
    assert_eq!(r.criteria[0].matched, ["session", "refreshed"]);
    // The seed passes this one on "the"/"should"/"be"; here it has no keyword at all.
    assert_eq!(r.criteria[1].status, CheckStatus::ManualReview);
}

/// The library's default is confined: a `verify` command may write its
/// folder and its own temporary folder, nothing beside them; `confined:
/// None` is the caller's explicit choice to run it as itself.
#[tokio::test]
async fn a_verify_command_is_confined_by_default() {
    let top = tempfile::tempdir().unwrap();
    let (work, beside) = (top.path().join("work"), top.path().join("beside"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&beside).unwrap();
    let target = beside.join("planted");
    let criteria = [
        verify("touch here"),
        verify(&format!("touch {}", target.display())),
    ];
    let report = check(&criteria, &work).await;
    assert_eq!(report.criteria[0].status, Pass, "{report:#?}");
    assert_eq!(report.criteria[1].status, Fail, "{report:#?}");
    assert!(work.join("here").exists());
    assert!(!target.exists(), "a default check wrote beside its folder");

    let unconfined = AcceptanceOptions {
        confined: None,
        ..AcceptanceOptions::default()
    };
    let report = check_acceptance(&criteria[1..], &work, &unconfined).await;
    assert_eq!(report.criteria[0].status, Pass, "{report:#?}");
    assert!(target.exists());
}
