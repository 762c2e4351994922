//! Attempts end to end with the scripted agent and small command
//! backends: every outcome class, files changed, redaction, retries with
//! the error in the prompt, fallback, native resume, and prompts that
//! carry shell syntax.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::json;
use wavecrew_backends::attempts::{AttemptEvent, TaskAttempts, TaskRun, run_task};
use wavecrew_backends::config::Config;
use wavecrew_backends::{CliBackend, ResolvedBackend};
use wavecrew_core::{AttemptOutcome, AttemptRequest, Backend, Limits, Mode, TaskId};
use wavecrew_testkit::bin_path;
use wavecrew_testkit::git::git;

fn git_repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    git(tmp.path(), &["init", "-q"]);
    std::fs::write(tmp.path().join("README.md"), "# demo\n").unwrap();
    git(tmp.path(), &["add", "."]);
    git(tmp.path(), &["commit", "-qm", "init"]);
    tmp
}

/// A config whose `name` backend is the scripted agent with `script`.
fn scripted_config(
    dir: &Path,
    name: &str,
    format: &str,
    script: &serde_json::Value,
    extra: &str,
) -> Config {
    let script_path = dir.join(format!("{name}.script.json"));
    std::fs::write(&script_path, serde_json::to_vec(script).unwrap()).unwrap();
    let agent = bin_path("wavecrew-scripted-agent");
    let text = format!(
        "[backends.{name}]\nkind = \"scripted\"\nprogram = {:?}\nscript = {:?}\nformat = \"{format}\"\n{extra}",
        agent.display().to_string(),
        script_path.display().to_string(),
    );
    Config::parse(&text, &dir.join("wavecrew.toml")).unwrap()
}

fn request(cwd: &Path, out: &Path, prompt: &str, limits: Limits) -> AttemptRequest {
    AttemptRequest {
        task_id: "IMPL-001".into(),
        prompt: prompt.into(),
        cwd: cwd.to_owned(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        attempt_dir: out.to_owned(),
        limits,
        resume_session: None,
        env: std::collections::BTreeMap::new(),
        sandbox: None,
        allow_hosts: Vec::new(),
    }
}

fn limits(wall_ms: u64, stall_ms: u64) -> Limits {
    Limits {
        wall: std::time::Duration::from_millis(wall_ms),
        stall: std::time::Duration::from_millis(stall_ms),
        grace: std::time::Duration::from_millis(200),
        ..Limits::default()
    }
}

async fn one(
    config: &Config,
    name: &str,
    cwd: &Path,
    out: &Path,
    prompt: &str,
    l: Limits,
) -> AttemptOutcome {
    let backend: ResolvedBackend = config.backend(name).unwrap();
    CliBackend::new(backend)
        .run(&request(cwd, out, prompt, l))
        .await
}

fn all_files_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in walk(dir) {
        text.push_str(&String::from_utf8_lossy(
            &std::fs::read(&entry).unwrap_or_default(),
        ));
    }
    text
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn every_outcome_class_from_a_real_process() {
    let repo = git_repo();
    let out = tempfile::tempdir().unwrap();
    let cases = [
        (
            "success",
            "claude",
            json!([{"write": {"path": "a.txt", "content": "a"}}, {"say": "done"}]),
        ),
        (
            "failed",
            "codex",
            json!([{"fail": {"message": "mock 500", "status": 500}}]),
        ),
        (
            "auth_error",
            "claude",
            json!([{"fail": {"message": "Failed to authenticate. API Error: 401 mock 401", "status": 401}}]),
        ),
        (
            "rate_limited",
            "gemini",
            json!([{"fail": {"message": "429 Too Many Requests; retry after 7", "status": 429}}]),
        ),
        ("timed_out", "codex", json!([{"sleep_ms": 60_000}])),
        ("stalled", "claude", json!([{"silent_ms": 60_000}])),
    ];
    for (i, (expected, format, steps)) in cases.iter().enumerate() {
        let config = scripted_config(
            out.path(),
            "s",
            format,
            &json!({"scenarios": [{"steps": steps}]}),
            "",
        );
        let l = if *expected == "stalled" {
            limits(20_000, 700)
        } else {
            limits(1_500, 10_000)
        };
        let o = one(
            &config,
            "s",
            repo.path(),
            &out.path().join(i.to_string()),
            "p",
            l,
        )
        .await;
        assert_eq!(o.outcome.name(), *expected, "{o:#?}");
        if *expected == "rate_limited" {
            assert_eq!(
                o.outcome,
                wavecrew_core::OutcomeClass::RateLimited {
                    retry_after_secs: Some(7)
                }
            );
        }
        if *expected == "success" {
            assert_eq!(o.files_changed, vec!["a.txt"]);
            assert!(o.session_id.is_some());
        }
    }
    // unavailable: the program is not there.
    let config = Config::parse(
        "[backends.gone]\nkind = \"command\"\nargv = [\"/nonexistent/agent\", \"{task_id}\"]\n",
        Path::new("wavecrew.toml"),
    )
    .unwrap();
    let o = one(
        &config,
        "gone",
        repo.path(),
        &out.path().join("u"),
        "p",
        limits(5_000, 5_000),
    )
    .await;
    assert_eq!(o.outcome.name(), "unavailable");
    // permission_denied: exit 0 with denials is not success.
    let config = Config::parse(
        r#"[backends.denied]
kind = "command"
stream = "claude"
argv = ["python3", "-c", "import json; print(json.dumps({'type':'result','subtype':'success','is_error':False,'result':'ok','session_id':'s1','permission_denials':[{'tool_name':'Bash'}]}))"]
"#,
        Path::new("wavecrew.toml"),
    )
    .unwrap();
    let o = one(
        &config,
        "denied",
        repo.path(),
        &out.path().join("d"),
        "p",
        limits(10_000, 10_000),
    )
    .await;
    assert_eq!(o.outcome.name(), "permission_denied", "{o:#?}");
    assert_eq!(o.exit_code, Some(0));
}

#[tokio::test]
async fn secrets_never_reach_a_written_file() {
    let repo = git_repo();
    let out = tempfile::tempdir().unwrap();
    let secret = "sk-live-5f3c9a7e1d";
    let config = scripted_config(
        out.path(),
        "s",
        "claude",
        &json!({"scenarios": [{"steps": [
            {"write": {"path": "leak.txt", "content": secret}},
            {"run": ["cat", "leak.txt"]},
            {"say": format!("the key is {secret}")},
            {"fail": {"message": format!("bad key {secret}"), "status": 500}}
        ]}]}),
        &format!("env = {{ MOCK_API_KEY = \"{secret}\" }}\n"),
    );
    let o = one(
        &config,
        "s",
        repo.path(),
        &out.path().join("a"),
        &format!("use {secret}"),
        limits(10_000, 10_000),
    )
    .await;
    let written = all_files_text(&out.path().join("a"));
    assert!(!written.is_empty());
    assert!(!written.contains(secret), "a secret leaked: {written}");
    assert!(written.contains("[REDACTED:MOCK_API_KEY]"));
    assert!(!format!("{o:?}").contains(secret));
}

#[tokio::test]
async fn prompts_and_ids_with_shell_syntax_arrive_unchanged() {
    let repo = git_repo();
    let out = tempfile::tempdir().unwrap();
    let hostile =
        "\"; touch pwned1; \" $(touch pwned2) `touch pwned3` ' ; rm -rf nothing\n-rf --help";
    // argv channel: each placeholder stays one element.
    let config = Config::parse(
        r#"[backends.argv]
kind = "command"
prompt = "arg"
argv = ["python3", "-c", "import json,sys; json.dump(sys.argv[1:], open('argv.json','w'))", "{task_id}", "{prompt}", "--x={prompt}"]
[backends.stdin]
kind = "command"
argv = ["python3", "-c", "import sys; open('stdin.txt','w').write(sys.stdin.read())"]
[backends.file]
kind = "command"
prompt = "file"
argv = ["python3", "-c", "import sys,shutil; shutil.copy(sys.argv[1], 'file.txt')", "{prompt_file}"]
"#,
        Path::new("wavecrew.toml"),
    )
    .unwrap();
    for name in ["argv", "stdin", "file"] {
        let o = one(
            &config,
            name,
            repo.path(),
            &out.path().join(name),
            hostile,
            limits(10_000, 10_000),
        )
        .await;
        assert_eq!(o.outcome.name(), "success", "{name}: {o:#?}");
    }
    let argv: Vec<String> =
        serde_json::from_slice(&std::fs::read(repo.path().join("argv.json")).unwrap()).unwrap();
    assert_eq!(
        argv,
        vec![
            "IMPL-001".to_owned(),
            hostile.to_owned(),
            format!("--x={hostile}")
        ]
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("stdin.txt")).unwrap(),
        hostile
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("file.txt")).unwrap(),
        hostile
    );
    for n in 1..=3 {
        assert!(!repo.path().join(format!("pwned{n}")).exists());
    }
}

fn events_sink() -> (Mutex<Vec<AttemptEvent>>,) {
    (Mutex::new(Vec::new()),)
}

#[tokio::test]
async fn a_failed_attempt_is_retried_with_its_error_in_the_prompt() {
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    let config = scripted_config(
        session.path(),
        "s",
        "codex",
        &json!({"scenarios": [
            {"match": {"prompt_contains": "cannot import name"}, "steps": [
                {"write": {"path": "fixed.txt", "content": "ok"}}, {"say": "fixed"}]},
            {"steps": [{"fail": {"message": "ImportError: cannot import name 'x'", "status": null}}]}
        ]}),
        "[routing]\nbackoff_ms = 1\nmax_backoff_ms = 5\n",
    );
    let (events,) = events_sink();
    let task = TaskId::new("IMPL-001").unwrap();
    let prompt = |n: u32, err: Option<&str>| match err {
        Some(e) => format!("attempt {n}; the previous attempt failed: {e}"),
        None => format!("attempt {n}"),
    };
    let on_event = |e: &AttemptEvent| events.lock().unwrap().push(e.clone());
    let run = run_task(&TaskAttempts {
        config: &config,
        backend: "s",
        task_id: &task,
        cwd: repo.path(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session.path(),
        prompt: &prompt,
        on_event: &on_event,
        allow_hosts: &[],
    })
    .await;
    assert!(run.success, "{run:#?}");
    assert_eq!(run.attempts.len(), 2);
    assert_eq!(run.attempts[0].outcome.outcome.name(), "failed");
    assert_eq!(run.files_changed(), vec!["fixed.txt"]);
    let second =
        std::fs::read_to_string(session.path().join("attempts/IMPL-001/2/prompt.md")).unwrap();
    assert!(second.contains("cannot import name"), "{second}");
    let kinds: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        ["started", "finished", "retrying", "started", "finished"]
    );
}

#[tokio::test]
async fn retries_stop_after_three_and_say_why() {
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    let config = scripted_config(
        session.path(),
        "s",
        "claude",
        &json!({"scenarios": [{"steps": [{"fail": {"message": "mock 500", "status": 500}}]}]}),
        "[routing]\nbackoff_ms = 1\nmax_backoff_ms = 5\nfallback = []\n",
    );
    let task = TaskId::new("IMPL-002").unwrap();
    let prompt = |_: u32, _: Option<&str>| "p".to_owned();
    let run = run_task(&TaskAttempts {
        config: &config,
        backend: "s",
        task_id: &task,
        cwd: repo.path(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session.path(),
        prompt: &prompt,
        on_event: &|_| {},
        allow_hosts: &[],
    })
    .await;
    assert!(!run.success);
    assert_eq!(run.attempts.len(), 4, "one attempt and three retries");
    assert!(run.failure.unwrap().contains("after 3 retries"));
}

#[tokio::test]
async fn an_unavailable_backend_falls_back_and_the_switch_is_reported() {
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    let config = scripted_config(
        session.path(),
        "backup",
        "gemini",
        &json!({"scenarios": [{"steps": [{"say": "done by the backup"}]}]}),
        "[backends.primary]\nkind = \"command\"\nargv = [\"/no/such/agent\"]\nfallback = [\"backup\"]\n",
    );
    let task = TaskId::new("IMPL-003").unwrap();
    let prompt = |_: u32, _: Option<&str>| "p".to_owned();
    let run = run_task(&TaskAttempts {
        config: &config,
        backend: "primary",
        task_id: &task,
        cwd: repo.path(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session.path(),
        prompt: &prompt,
        on_event: &|_| {},
        allow_hosts: &[],
    })
    .await;
    assert!(run.success, "{run:#?}");
    assert_eq!(run.switches.len(), 1);
    assert_eq!(run.switches[0].from, "primary");
    assert_eq!(run.switches[0].to, "backup");
    assert!(
        run.switches[0].reason.contains("/no/such/agent"),
        "{:?}",
        run.switches
    );
    assert_eq!(run.last().unwrap().backend, "backup");
}

#[tokio::test]
async fn an_interrupted_attempt_is_resumed_in_its_native_session() {
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    let config = scripted_config(
        session.path(),
        "s",
        "claude",
        &json!({"scenarios": [{"steps": [{"say": "continued"}]}]}),
        "",
    );
    let task = TaskId::new("IMPL-004").unwrap();
    // Attempt 1 was killed after the stream named its session.
    let first = session.path().join("attempts/IMPL-004/1");
    std::fs::create_dir_all(&first).unwrap();
    std::fs::write(
        first.join("session.json"),
        r#"{"backend":"s","session_id":"sess-1234"}"#,
    )
    .unwrap();
    let prompt = |_: u32, _: Option<&str>| "p".to_owned();
    let run = run_task(&TaskAttempts {
        config: &config,
        backend: "s",
        task_id: &task,
        cwd: repo.path(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session.path(),
        prompt: &prompt,
        on_event: &|_| {},
        allow_hosts: &[],
    })
    .await;
    assert!(run.success);
    assert_eq!(run.attempts[0].attempt, 2);
    assert_eq!(run.last().unwrap().session_id.as_deref(), Some("sess-1234"));
    let argv =
        std::fs::read_to_string(session.path().join("attempts/IMPL-004/2/argv.json")).unwrap();
    assert!(
        argv.contains("--resume") && argv.contains("sess-1234"),
        "{argv}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_attempts_side_by_side_keep_their_own_files() {
    let repo = git_repo();
    let out = tempfile::tempdir().unwrap();
    let config = scripted_config(
        out.path(),
        "s",
        "claude",
        &json!({"scenarios": [
            {"match": {"task": "IMPL-001"}, "steps": [
                {"write": {"path": "a.txt", "content": "a"}}, {"sleep_ms": 600}, {"say": "a"}]},
            {"match": {"task": "IMPL-002"}, "steps": [
                {"sleep_ms": 200}, {"write": {"path": "b.txt", "content": "b"}}, {"say": "b"}]},
            {"match": {"task": "IMPL-003"}, "steps": [
                {"run": ["touch", "c.txt"]}, {"sleep_ms": 900}, {"say": "c"}]}
        ]}),
        "",
    );
    let backend = CliBackend::new(config.backend("s").unwrap());
    let mut first = request(
        repo.path(),
        &out.path().join("1"),
        "p",
        limits(20_000, 20_000),
    );
    first.task_id = "IMPL-001".into();
    let mut second = request(
        repo.path(),
        &out.path().join("2"),
        "p",
        limits(20_000, 20_000),
    );
    second.task_id = "IMPL-002".into();
    let mut shell = request(
        repo.path(),
        &out.path().join("3"),
        "p",
        limits(20_000, 20_000),
    );
    shell.task_id = "IMPL-003".into();
    let (a, b, c) = tokio::join!(
        backend.run(&first),
        backend.run(&second),
        backend.run(&shell)
    );
    assert_eq!(a.files_changed, vec!["a.txt"], "{a:#?}");
    assert_eq!(b.files_changed, vec!["b.txt"], "{b:#?}");
    // After a shell command the stream cannot say what changed: the whole
    // diff is the evidence, the neighbours' files included.
    assert!(c.files_changed.contains(&"c.txt".to_owned()), "{c:#?}");
    assert!(c.files_changed.len() >= 2, "{c:#?}");
}

#[tokio::test]
async fn a_process_that_escaped_with_the_pipes_does_not_hang_the_task() {
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    // The agent starts a sleeper in a session of its own (`setsid`) that
    // keeps stdout and stderr, waits until it has left the group, and exits
    // (unconfined: it writes the sleeper's pid into its attempt folder).
    let script = "setsid sh -c 'echo $$ > \"$0\"; exec sleep 600' \"$1\" & \
                  while [ ! -s \"$1\" ]; do sleep 0.01; done; echo done";
    let text = format!(
        "[limits]\nleak_timeout_ms = 300\n\n[isolation]\nsandbox = \"off\"\n\n\
         [backends.esc]\nkind = \"command\"\n\
         argv = [\"sh\", \"-c\", {}, \"sh\", \"{{attempt_dir}}/escaped.pid\"]\n",
        serde_json::to_string(script).unwrap()
    );
    let config = Config::parse(&text, &session.path().join("wavecrew.toml")).unwrap();
    let task = TaskId::new("IMPL-005").unwrap();
    let prompt = |_: u32, _: Option<&str>| "p".to_owned();
    let spec = TaskAttempts {
        config: &config,
        backend: "esc",
        task_id: &task,
        cwd: repo.path(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session.path(),
        prompt: &prompt,
        on_event: &|_| {},
        allow_hosts: &[],
    };
    // Without a leak timeout this waits for the sleeper (600 s).
    let run = tokio::time::timeout(std::time::Duration::from_secs(60), run_task(&spec)).await;
    let attempt_dir = session.path().join("attempts/IMPL-005/1");
    if let Some(pid) = std::fs::read_to_string(attempt_dir.join("escaped.pid"))
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let run = run.expect("the attempt hung on pipes held by an escaped process");
    assert!(run.success, "{run:#?}");
    let note = "stdout and stderr still held open 300 ms after the agent ended";
    assert!(run.attempts[0].notes[0].contains(note), "{run:#?}");
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(attempt_dir.join("outcome.json")).unwrap()).unwrap();
    assert_eq!(recorded["outcome"]["class"], "success");
    assert!(
        recorded["notes"][0].as_str().unwrap().contains(note),
        "{recorded:#}"
    );
    assert_eq!(recorded["final_message"], "done");
}

/// A session whose backend `sh` runs `script` with `$1` = the attempt
/// folder and a secret in `MOCK_API_KEY`.
/// A `sh -c` agent given its attempt folder, which it may spoil: it runs
/// unconfined (as on a kernel without Landlock), so what is tested is
/// the runner's own defence.
fn shell_agent(session: &Path, script: &str, secret: &str) -> Config {
    let text = format!(
        "[isolation]\nsandbox = \"off\"\n\n[backends.sh]\nkind = \"command\"\n\
         argv = [\"sh\", \"-c\", {}, \"sh\", \"{{attempt_dir}}\"]\n\
         env = {{ MOCK_API_KEY = \"{secret}\" }}\n",
        serde_json::to_string(script).unwrap()
    );
    Config::parse(&text, &session.join("wavecrew.toml")).unwrap()
}

async fn run_one(config: &Config, task: &TaskId, cwd: &Path, session: &Path) -> TaskRun {
    let prompt = |_: u32, _: Option<&str>| "p".to_owned();
    run_task(&TaskAttempts {
        config,
        backend: "sh",
        task_id: task,
        cwd,
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

#[tokio::test]
async fn a_secret_in_a_file_that_cannot_be_rewritten_never_stays_on_disk() {
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    let secret = "sk-live-93be0c11d4";
    // The agent prints the key, then puts a folder holding it where
    // stdout.log was: that file cannot be read nor rewritten in place.
    let config = shell_agent(
        session.path(),
        "echo key $MOCK_API_KEY; rm \"$1/stdout.log\"; mkdir \"$1/stdout.log\"; \
         echo $MOCK_API_KEY > \"$1/stdout.log/copy\"",
        secret,
    );
    let task = TaskId::new("IMPL-006").unwrap();
    let run = run_one(&config, &task, repo.path(), session.path()).await;
    assert!(!run.success, "{run:#?}");
    assert_eq!(run.attempts.len(), 1, "no retry: {run:#?}");
    let failure = run.failure.clone().unwrap();
    assert!(
        failure.contains("stdout.log` could not be redacted") && failure.contains("removed"),
        "{failure}"
    );
    assert_eq!(run.last().unwrap().outcome.name(), "failed");
    let written = all_files_text(session.path());
    assert!(
        !written.contains(secret),
        "a secret stayed on disk: {written}"
    );
    let dir = session.path().join("attempts/IMPL-006/1");
    assert!(!dir.join("stdout.log").exists());
    let recorded = std::fs::read_to_string(dir.join("outcome.json")).unwrap();
    assert!(recorded.contains("could not be redacted"), "{recorded}");
}

#[tokio::test]
async fn an_outcome_that_cannot_be_written_stops_the_task_with_the_error() {
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    // A non-empty folder where outcome.json goes: the rename onto it fails.
    let config = shell_agent(
        session.path(),
        "mkdir -p \"$1/outcome.json/x\"; echo done",
        "sk-unused-0000",
    );
    let task = TaskId::new("IMPL-007").unwrap();
    let run = run_one(&config, &task, repo.path(), session.path()).await;
    assert!(!run.success, "{run:#?}");
    assert_eq!(run.attempts.len(), 1, "no retry: {run:#?}");
    let failure = run.failure.clone().unwrap();
    assert!(
        failure.starts_with(
            "attempt 1: the attempt ended as success but its outcome could not be recorded: \
             cannot write `"
        ) && failure.contains("outcome.json`"),
        "{failure}"
    );
    let error = run.error().cloned().expect("the attempt error is kept");
    assert!(!error.is_no_space());
    assert_eq!(run.last().unwrap().outcome.name(), "failed");
}

/// The governor through `run_task` with the scripted agent: `max_parallel
/// = 1` makes the second task wait (its span says how long and why), and
/// a task whose future is dropped mid-attempt gives its slot back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_governor_holds_a_second_attempt_and_a_dropped_one_frees_its_slot() {
    use wavecrew_backends::governor::{Admission, Governor};
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    let config = scripted_config(
        session.path(),
        "s",
        "codex",
        &json!({"scenarios": [{"steps": [{"sleep_ms": 400}, {"say": "done"}]}]}),
        "max_parallel = 1\n",
    );
    let prompt = |_: u32, _: Option<&str>| "p".to_owned();
    let (a, b) = (TaskId::new("T-1").unwrap(), TaskId::new("T-2").unwrap());
    let spec = |task| TaskAttempts {
        config: &config,
        backend: "s",
        task_id: task,
        cwd: repo.path(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session.path(),
        prompt: &prompt,
        on_event: &|_| {},
        allow_hosts: &[],
    };
    let (sa, sb) = (spec(&a), spec(&b));
    let (ra, rb) = tokio::join!(run_task(&sa), run_task(&sb));
    assert!(ra.success && rb.success);
    let span = |t: &str| -> serde_json::Value {
        serde_json::from_slice(
            &std::fs::read(session.path().join(format!("attempts/{t}/1/governor.json"))).unwrap(),
        )
        .unwrap()
    };
    let (sa, sb) = (span("T-1"), span("T-2"));
    let (first, second) = if sa["admitted_ms"].as_u64() < sb["admitted_ms"].as_u64() {
        (sa, sb)
    } else {
        (sb, sa)
    };
    assert!(
        second["admitted_ms"].as_u64().unwrap() >= first["released_ms"].as_u64().unwrap(),
        "{first} {second}"
    );
    assert_eq!(second["waited_for"], json!(["max_parallel"]));
    assert!(second["waited_ms"].as_u64().unwrap() > 0);

    let c = TaskId::new("T-3").unwrap();
    let sc = spec(&c);
    let cut = tokio::time::timeout(std::time::Duration::from_millis(150), run_task(&sc)).await;
    assert!(cut.is_err(), "the attempt was still running");
    let governor = Governor::for_session(&config, session.path());
    assert!(
        matches!(
            governor.try_admit("s", "T-4", 1).unwrap(),
            Admission::Granted(_)
        ),
        "the dropped attempt's slot is free"
    );
}

/// `--hard-budget`: the attempt that crosses the run budget and every other
/// running one (at its next output) are stopped (`budget_exceeded`), and
/// no new one starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_run_budget_stops_running_attempts() {
    use wavecrew_backends::governor::Governor;
    let repo = git_repo();
    let session = tempfile::tempdir().unwrap();
    let mut config = scripted_config(
        session.path(),
        "s",
        "codex",
        &json!({"scenarios": [
            {"match": {"prompt_contains": "long"}, "steps": [{"sleep_ms": 20000}, {"say": "late"}]},
            {"steps": [{"say": "quick"}]}
        ]}),
        "",
    );
    config.budget.run_tokens = Some(20);
    Governor::for_session(&config, session.path())
        .set_hard_budget(true)
        .unwrap();
    let (a, b) = (TaskId::new("T-1").unwrap(), TaskId::new("T-2").unwrap());
    let long = |_: u32, _: Option<&str>| "long".to_owned();
    let quick = |_: u32, _: Option<&str>| "quick".to_owned();
    let spec_a = TaskAttempts {
        config: &config,
        backend: "s",
        task_id: &a,
        cwd: repo.path(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        session_dir: session.path(),
        prompt: &long,
        on_event: &|_| {},
        allow_hosts: &[],
    };
    let spec_b = TaskAttempts {
        task_id: &b,
        prompt: &quick,
        ..TaskAttempts { ..spec_a }
    };
    let started = std::time::Instant::now();
    let (ra, rb) = tokio::join!(run_task(&spec_a), async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        run_task(&spec_b).await
    });
    assert_eq!(
        rb.attempts[0].outcome.outcome.name(),
        "budget_exceeded",
        "{rb:#?}"
    );
    assert!(!ra.success);
    let o = &ra.attempts[0].outcome;
    assert_eq!(o.outcome.name(), "budget_exceeded", "{o:#?}");
    assert!(
        o.error.as_deref().unwrap().contains("--hard-budget"),
        "{o:#?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    let c = TaskId::new("T-3").unwrap();
    let spec_c = TaskAttempts {
        task_id: &c,
        ..TaskAttempts { ..spec_b }
    };
    let rc = run_task(&spec_c).await;
    assert!(rc.attempts.is_empty());
    assert!(rc.failure.unwrap().contains("run_tokens = 20"));
}
