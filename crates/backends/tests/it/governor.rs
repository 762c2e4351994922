//! The governor with the real codex and claude CLIs behind the mock model
//! server: a 429 with `retry-after` pauses that backend for every worker
//! (no attempt of it starts before the reset, the other backend goes on),
//! waiting tasks move to a configured fallback, and budgets counted from
//! the streams' usage stop an attempt mid-stream and the run's new starts.
//!
//! The "workers" are concurrent `run_task` calls sharing the session's
//! `governor.json` (the same file and lock separate processes share).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use wavecrew_backends::attempts::{TaskAttempts, TaskRun, run_task};
use wavecrew_backends::config::Config;
use wavecrew_backends::governor::store::read_state;
use wavecrew_core::{Mode, TaskId};
use wavecrew_testkit::agent_cli_bins::AgentCli;
use wavecrew_testkit::model_server::{Api, Fail, MockLlm, MockOptions};

use crate::real_clis::{World, backend, world};

const LIMITED: AgentCli = AgentCli::Claude;
const OTHER: AgentCli = AgentCli::Codex;

fn session_dir(w: &World) -> PathBuf {
    let dir = w
        .out
        .parent()
        .unwrap()
        .join("root/.workflow/.team/TC-governor-2026-11-23");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn config(w: &World, limited: &MockLlm, other: &MockLlm, fallback: bool) -> Config {
    let mut config = Config::default();
    config.routing.backoff_ms = 10;
    config.routing.max_backoff_ms = 50;
    config.routing.fallback = Vec::new();
    let mut spec = backend(LIMITED, w, &limited.base_url()).spec;
    spec.max_parallel = Some(1);
    if fallback {
        spec.fallback = Some(vec![OTHER.name().to_owned()]);
    }
    config.backends.insert(LIMITED.name().to_owned(), spec);
    config.backends.insert(
        OTHER.name().to_owned(),
        backend(OTHER, w, &other.base_url()).spec,
    );
    config
}

async fn task(config: &Config, w: &World, session: &Path, id: &str, cli: AgentCli) -> TaskRun {
    let task = TaskId::new(id).unwrap();
    let prompt = |_: u32, _: Option<&str>| "Create a file hello.txt containing hi.".to_owned();
    run_task(&TaskAttempts {
        config,
        backend: cli.name(),
        task_id: &task,
        cwd: &w.repo,
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session,
        prompt: &prompt,
        on_event: &|_| {},
        allow_hosts: &[],
    })
    .await
}

fn bus(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session.join(".msg/messages.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn span(session: &Path, task: &str, attempt: u32) -> Value {
    let path = session.join(format!("attempts/{task}/{attempt}/governor.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// Wait until the governor's state shows `backend` paused; its reset.
async fn paused_until(session: &Path, backend: &str) -> u64 {
    for _ in 0..1200 {
        if let Some(p) =
            read_state(session).and_then(|s| s.backends.get(backend).and_then(|b| b.paused.clone()))
        {
            return p.until_ms;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{backend} was never paused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_pauses_the_backend_for_every_worker_until_the_reset() {
    let w = world();
    let limited = MockLlm::start(
        crate::real_clis::api(LIMITED),
        MockOptions {
            fail: Fail::Status(429),
            fail_first: Some(1),
            retry_after_secs: Some(3),
            ..MockOptions::default()
        },
    );
    let other = MockLlm::start(crate::real_clis::api(OTHER), MockOptions::default());
    let config = config(&w, &limited, &other, false);
    let session = session_dir(&w);
    let until = Arc::new(AtomicU64::new(0));
    let late_other = async {
        let u = paused_until(&session, LIMITED.name()).await;
        until.store(u, Ordering::SeqCst);
        task(&config, &w, &session, "T-4", OTHER).await
    };
    let (t1, t2, t3, t4) = tokio::join!(
        task(&config, &w, &session, "T-1", LIMITED),
        task(&config, &w, &session, "T-2", LIMITED),
        task(&config, &w, &session, "T-3", OTHER),
        late_other,
    );
    for (id, run) in [("T-1", &t1), ("T-2", &t2), ("T-3", &t3), ("T-4", &t4)] {
        assert!(run.success, "{id}: {run:#?}");
    }
    let until = until.load(Ordering::SeqCst);
    // The one attempt that met the 429, then nothing of that backend
    // before the reset.
    let mut limited_spans = Vec::new();
    for (id, run) in [("T-1", &t1), ("T-2", &t2)] {
        for a in &run.attempts {
            limited_spans.push((a.outcome.outcome.name(), span(&session, id, a.attempt)));
        }
    }
    let limited_names: Vec<&str> = limited_spans.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        limited_names
            .iter()
            .filter(|n| **n == "rate_limited")
            .count(),
        1,
        "{limited_names:?}"
    );
    for (name, s) in &limited_spans {
        if *name != "rate_limited" {
            let admitted = s["admitted_ms"].as_u64().unwrap();
            assert!(
                admitted >= until,
                "started {admitted} before the reset {until}: {s}"
            );
        }
    }
    // The other backend went on during the pause.
    let t4_admitted = span(&session, "T-4", 1)["admitted_ms"].as_u64().unwrap();
    assert!(t4_admitted < until, "{t4_admitted} vs {until}");
    let records = bus(&session);
    let paused: Vec<&Value> = records
        .iter()
        .filter(|m| m["type"] == "backend_paused")
        .collect();
    assert_eq!(paused.len(), 1, "{records:#?}");
    assert_eq!(paused[0]["data"]["retry_after_secs"], 3);
    assert_eq!(paused[0]["data"]["backend"], LIMITED.name());
    assert!(records.iter().any(|m| m["type"] == "backend_resumed"));
    assert!(
        records
            .iter()
            .any(|m| m["type"] == "backend_wait" && m["data"]["reason"] == "paused"),
        "{records:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_tasks_move_to_the_configured_fallback_and_the_bus_says_why() {
    let w = world();
    let limited = MockLlm::start(
        crate::real_clis::api(LIMITED),
        MockOptions {
            fail: Fail::Status(429),
            retry_after_secs: Some(600),
            ..MockOptions::default()
        },
    );
    let other = MockLlm::start(crate::real_clis::api(OTHER), MockOptions::default());
    let config = config(&w, &limited, &other, true);
    let session = session_dir(&w);
    let (t1, t2) = tokio::join!(
        task(&config, &w, &session, "T-1", LIMITED),
        task(&config, &w, &session, "T-2", LIMITED),
    );
    for run in [&t1, &t2] {
        assert!(run.success, "{run:#?}");
        assert_eq!(run.last().unwrap().backend, OTHER.name());
    }
    assert_eq!(
        limited.model_calls(),
        1,
        "one 429, then nobody asked it again"
    );
    let records = bus(&session);
    let moves: Vec<&Value> = records
        .iter()
        .filter(|m| m["type"] == "backend_fallback")
        .collect();
    assert_eq!(moves.len(), 2, "{records:#?}");
    for m in moves {
        assert_eq!(m["data"]["to"], OTHER.name());
        assert!(
            m["data"]["reason"]
                .as_str()
                .unwrap()
                .contains("paused until"),
            "{m}"
        );
    }
}

fn outcome_tokens(run: &TaskRun) -> u64 {
    run.attempts
        .iter()
        .filter_map(|a| a.outcome.usage)
        .map(|u| u.input_tokens + u.output_tokens)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_stop_an_attempt_mid_stream_and_the_runs_new_starts() {
    let w = world();
    let options = MockOptions {
        tool: wavecrew_testkit::model_server::ToolPref::Write,
        usage: (100, 5),
        ..MockOptions::default()
    };
    // A task budget below one model call: stopped at the first usage
    // event, before the agent's second call.
    let claude = MockLlm::start(Api::Anthropic, options.clone());
    let codex = MockLlm::start(Api::Responses, options.clone());
    let mut cfg = config(&w, &claude, &codex, false);
    cfg.budget.task_tokens = Some(50);
    let session = session_dir(&w);
    let run = task(&cfg, &w, &session, "T-1", AgentCli::Claude).await;
    assert!(!run.success);
    assert_eq!(run.attempts.len(), 1, "not retried: {run:#?}");
    let o = &run.attempts[0].outcome;
    assert_eq!(o.outcome.name(), "budget_exceeded", "{o:#?}");
    assert!(
        o.error.as_deref().unwrap().contains("task_tokens = 50"),
        "{o:#?}"
    );
    assert_eq!(claude.model_calls(), 1, "stopped before its second call");
    assert!(!w.repo.join("hello.txt").exists());

    // A run budget: the first task crosses it and finishes; no new start.
    let session2 = w
        .out
        .parent()
        .unwrap()
        .join("root/.workflow/.team/TC-budget-2026-11-23");
    std::fs::create_dir_all(&session2).unwrap();
    let mut cfg = config(&w, &claude, &codex, false);
    cfg.budget.run_tokens = Some(150);
    let first = task(&cfg, &w, &session2, "T-1", AgentCli::Codex).await;
    assert!(first.success, "{first:#?}");
    let second = task(&cfg, &w, &session2, "T-2", AgentCli::Codex).await;
    assert!(!second.success);
    assert!(second.attempts.is_empty());
    let why = second.failure.unwrap();
    assert!(why.contains("run_tokens = 150"), "{why}");
    // The totals are the mock's usage, counted live.
    let state = read_state(&session2).unwrap();
    let mock_total = u64::try_from(codex.model_calls()).unwrap() * 105;
    assert_eq!(state.run.tokens(), mock_total);
    assert_eq!(outcome_tokens(&first), mock_total);
    assert!(bus(&session2).iter().any(|m| {
        m["type"] == "budget_exceeded"
            && m["data"]["verdict"]
                .as_str()
                .unwrap()
                .contains("run_tokens")
    }));
}

/// `rpm = 30` and 40 quick tasks from as many workers: no 60-second window
/// holds more than 30 starts, and every task starts. On tokio's paused
/// clock (the governor's [`TokioClock`]): the minute passes in no time.
#[tokio::test(start_paused = true)]
async fn rpm_30_never_lets_more_than_30_starts_into_a_minute() {
    use wavecrew_backends::governor::store::FileGovernorStore;
    use wavecrew_backends::governor::{
        Admission, BackendLimits, Governor, GovernorConfig, TokioClock,
    };
    let dir = tempfile::tempdir().unwrap();
    let mut config = GovernorConfig::default();
    config.backends.insert(
        "codex".into(),
        BackendLimits {
            rpm: Some(30),
            ..BackendLimits::default()
        },
    );
    let governor = Governor::new(
        Arc::new(FileGovernorStore::for_session(dir.path())),
        Arc::new(TokioClock::starting_at(1_700_000_000_000)),
        config,
    );
    let mut workers = tokio::task::JoinSet::new();
    for i in 0..40 {
        let g = governor.clone();
        workers.spawn(async move {
            let task = format!("T-{i}");
            loop {
                match g.try_admit("codex", &task, 1).unwrap() {
                    Admission::Granted(p) => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        g.release(&p, true);
                        return p.granted_ms;
                    }
                    Admission::Wait { until_ms, .. } => g.nap(until_ms).await,
                    Admission::Refused(v) => panic!("{v}"),
                }
            }
        });
    }
    let mut starts = workers.join_all().await;
    starts.sort_unstable();
    assert_eq!(starts.len(), 40);
    for (i, t) in starts.iter().enumerate() {
        let in_window = starts[i..].iter().take_while(|u| **u < t + 60_000).count();
        assert!(in_window <= 30, "{in_window} starts in the minute from {t}");
    }
    assert!(starts[30] - starts[0] >= 60_000, "{starts:?}");
    // The state file keeps only the last minute of starts.
    let state = read_state(dir.path()).unwrap();
    assert!(state.backends["codex"].starts.len() <= 30);
}
