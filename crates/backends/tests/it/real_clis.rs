//! The real agent CLIs (codex, gemini, claude, pinned versions installed by
//! `scripts/test.sh`) run through wavecrew's adapters against the mock
//! model server of the testkit on 127.0.0.1: a write task edits the work
//! tree; 401, 429, 500, a cut stream, an unreachable server and a server
//! that never answers end in the outcome classes `agent-clis.md` predicts,
//! within the configured limits; resume continues the same session.
//!
//! No API key and no network: every CLI gets a private `HOME`/`TMPDIR`
//! and its endpoint points at the mock.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use wavecrew_backends::CliBackend;
use wavecrew_backends::config::{BackendSpec, Kind, ResolvedBackend};
use wavecrew_core::{AttemptOutcome, AttemptRequest, Backend, Limits, Mode};
use wavecrew_testkit::agent_cli_bins::{AgentCli, cli_bin};
use wavecrew_testkit::git::git;
use wavecrew_testkit::model_server::{Api, Fail, MockLlm, MockOptions, unreachable_base_url};

/// The hostile prompt every run sends: it must reach the model verbatim.
const PROMPT: &str = "Create a file hello.txt containing hi. \"; touch pwned; \" $(touch pwned2) `touch pwned3`\n-- done";

pub(crate) struct World {
    pub(crate) _tmp: tempfile::TempDir,
    pub(crate) repo: std::path::PathBuf,
    pub(crate) home: std::path::PathBuf,
    pub(crate) out: std::path::PathBuf,
}

pub(crate) fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::create_dir_all(tmp.path().join("tmp")).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("README"), "seed\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);
    World {
        out: tmp.path().join("attempts"),
        repo,
        home,
        _tmp: tmp,
    }
}

pub(crate) fn backend(cli: AgentCli, w: &World, base_url: &str) -> ResolvedBackend {
    let mut env = BTreeMap::new();
    env.insert("HOME".to_owned(), w.home.display().to_string());
    env.insert(
        "TMPDIR".to_owned(),
        w.home.parent().unwrap().join("tmp").display().to_string(),
    );
    let (kind, model) = match cli {
        AgentCli::Codex => {
            env.insert(
                "CODEX_HOME".into(),
                w.home.join(".codex").display().to_string(),
            );
            env.insert("MOCK_API_KEY".into(), "sk-mock-codex".into());
            std::fs::write(
                w.home.join(".codex/config.toml"),
                format!(
                    "model_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
                     base_url = \"{base_url}/v1\"\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n\
                     request_max_retries = 0\nstream_max_retries = 0\nstream_idle_timeout_ms = 10000\n"
                ),
            )
            .unwrap();
            (Kind::Codex, "gpt-5.5")
        }
        AgentCli::Gemini => {
            env.insert("GEMINI_API_KEY".into(), "mock-gemini-key".into());
            env.insert("GOOGLE_GEMINI_BASE_URL".into(), base_url.to_owned());
            std::fs::write(
                w.home.join(".gemini/settings.json"),
                r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},
                    "general":{"maxAttempts":1,"retryFetchErrors":false,"disableAutoUpdate":true,"disableUpdateNag":true},
                    "privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}"#,
            )
            .unwrap();
            (Kind::Gemini, "gemini-2.5-pro")
        }
        AgentCli::Claude => {
            env.insert("ANTHROPIC_BASE_URL".into(), base_url.to_owned());
            env.insert("ANTHROPIC_API_KEY".into(), "sk-ant-mock".into());
            env.insert("CLAUDE_CODE_MAX_RETRIES".into(), "0".into());
            env.insert("API_TIMEOUT_MS".into(), "4000".into());
            for v in [
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                "DISABLE_AUTOUPDATER",
                "DISABLE_TELEMETRY",
                "DISABLE_ERROR_REPORTING",
            ] {
                env.insert(v.into(), "1".into());
            }
            (Kind::Claude, "claude-sonnet-4-5")
        }
    };
    ResolvedBackend {
        name: cli.name().to_owned(),
        kind,
        spec: BackendSpec {
            program: Some(cli_bin(cli).display().to_string()),
            model: Some(model.to_owned()),
            env,
            ..BackendSpec::default()
        },
    }
}

async fn attempt(
    cli: AgentCli,
    w: &World,
    base_url: &str,
    n: u32,
    resume: Option<String>,
    wall_secs: u64,
    stall_secs: u64,
) -> AttemptOutcome {
    let request = AttemptRequest {
        task_id: "IMPL-001".into(),
        prompt: PROMPT.into(),
        cwd: w.repo.clone(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        attempt_dir: w.out.join(n.to_string()),
        limits: Limits {
            wall: Duration::from_secs(wall_secs),
            stall: Duration::from_secs(stall_secs),
            grace: Duration::from_secs(2),
            ..Limits::default()
        },
        resume_session: resume,
        env: BTreeMap::new(),
        sandbox: None,
        allow_hosts: Vec::new(),
    };
    CliBackend::new(backend(cli, w, base_url))
        .run(&request)
        .await
}

pub(crate) fn api(cli: AgentCli) -> Api {
    match cli {
        AgentCli::Codex => Api::Responses,
        AgentCli::Gemini => Api::Gemini,
        AgentCli::Claude => Api::Anthropic,
    }
}

fn no_injection(w: &World) {
    for f in ["pwned", "pwned2", "pwned3"] {
        assert!(!w.repo.join(f).exists(), "{f} was created");
    }
}

fn prompt_reached_the_model(mock: &MockLlm) {
    let seen = mock.requests().iter().any(|r| {
        r["body"]
            .to_string()
            .contains(&serde_json::to_string(PROMPT).unwrap()[1..40])
    });
    assert!(seen, "the prompt did not reach the model verbatim");
}

/// A write task edits the work tree, and resume continues the session.
async fn writes_and_resumes(cli: AgentCli) {
    let w = world();
    let mock = MockLlm::start(api(cli), MockOptions::default());
    let first = attempt(cli, &w, &mock.base_url(), 1, None, 120, 60).await;
    assert_eq!(
        first.outcome.name(),
        "success",
        "{first:#?}\n{}",
        stderr(&w, 1)
    );
    assert_eq!(
        std::fs::read_to_string(w.repo.join("hello.txt"))
            .unwrap()
            .trim(),
        "hi"
    );
    assert_eq!(first.files_changed, vec!["hello.txt"], "{first:#?}");
    assert_eq!(
        first.final_message.as_deref(),
        Some("Done: created hello.txt")
    );
    let session = first.session_id.clone().expect("a session id");
    assert!(w.out.join("1/session.json").is_file());
    prompt_reached_the_model(&mock);
    no_injection(&w);

    std::fs::remove_file(w.repo.join("hello.txt")).unwrap();
    let calls = mock.model_calls();
    let second = attempt(cli, &w, &mock.base_url(), 2, Some(session.clone()), 120, 60).await;
    assert_eq!(
        second.outcome.name(),
        "success",
        "{second:#?}\n{}",
        stderr(&w, 2)
    );
    assert_eq!(
        second.session_id.as_deref(),
        Some(session.as_str()),
        "resume keeps the session"
    );
    assert!(mock.model_calls() > calls);
    // The resumed conversation carries the first turn's history.
    let last = mock.requests().last().unwrap().to_string();
    assert!(
        last.matches("Create a file hello.txt").count() >= 2,
        "history was not replayed"
    );
}

fn stderr(w: &World, n: u32) -> String {
    std::fs::read_to_string(w.out.join(format!("{n}/stderr.log"))).unwrap_or_default()
}

/// Each failure mode ends in the class the notes predict.
async fn failure(cli: AgentCli, fail: &str, expected: &str) {
    let w = world();
    let (mock, base) = if fail == "unreachable" {
        (None, unreachable_base_url())
    } else {
        let f = match fail {
            "401" => Fail::Status(401),
            "429" => Fail::Status(429),
            "500" => Fail::Status(500),
            "hang" => Fail::Hang,
            "midstream" => Fail::Midstream,
            other => panic!("unknown failure {other}"),
        };
        let m = MockLlm::start(
            api(cli),
            MockOptions {
                fail: f,
                ..MockOptions::default()
            },
        );
        let base = m.base_url();
        (Some(m), base)
    };
    // Limits small enough for a test, large enough for a node CLI to start.
    // Where the wall limit is the class under test (codex retries an unreachable
    // server until it ends), a short one is as good a test; the stall limit
    // stays above it, so the wall limit is the one that ends it.
    let (timeout, stall) = if expected == "timed_out" {
        (10, 12)
    } else {
        (25, 12)
    };
    let o = attempt(cli, &w, &base, 1, None, timeout, stall).await;
    assert_eq!(
        o.outcome.name(),
        expected,
        "{cli:?} with {fail}: {o:#?}\nstderr: {}",
        stderr(&w, 1)
    );
    assert!(o.duration_ms < 40_000, "{o:#?}");
    drop(mock);
}

macro_rules! real_cli_tests {
    ($($name:ident: $cli:expr, $fail:expr => $expected:expr;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                failure($cli, $fail, $expected).await;
            }
        )*
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_writes_and_resumes() {
    writes_and_resumes(AgentCli::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_writes_and_resumes() {
    writes_and_resumes(AgentCli::Gemini).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_writes_and_resumes() {
    writes_and_resumes(AgentCli::Claude).await;
}

real_cli_tests! {
    codex_401: AgentCli::Codex, "401" => "auth_error";
    codex_429: AgentCli::Codex, "429" => "rate_limited";
    codex_500: AgentCli::Codex, "500" => "failed";
    codex_midstream: AgentCli::Codex, "midstream" => "failed";
    codex_unreachable: AgentCli::Codex, "unreachable" => "timed_out";
    codex_hang: AgentCli::Codex, "hang" => "stalled";
    gemini_401: AgentCli::Gemini, "401" => "auth_error";
    gemini_429: AgentCli::Gemini, "429" => "rate_limited";
    gemini_500: AgentCli::Gemini, "500" => "failed";
    gemini_midstream: AgentCli::Gemini, "midstream" => "failed";
    gemini_unreachable: AgentCli::Gemini, "unreachable" => "failed";
    gemini_hang: AgentCli::Gemini, "hang" => "stalled";
    claude_401: AgentCli::Claude, "401" => "auth_error";
    claude_429: AgentCli::Claude, "429" => "rate_limited";
    claude_500: AgentCli::Claude, "500" => "failed";
    claude_midstream: AgentCli::Claude, "midstream" => "success";
    claude_unreachable: AgentCli::Claude, "unreachable" => "failed";
    claude_hang: AgentCli::Claude, "hang" => "failed";
}

#[test]
fn the_testkit_knows_where_the_clis_are() {
    for cli in [AgentCli::Codex, AgentCli::Gemini, AgentCli::Claude] {
        assert!(cli_bin(cli).exists());
    }
    let _ = Path::new("unused");
}
