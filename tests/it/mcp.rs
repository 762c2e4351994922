//! `wavecrew mcp` driven by a real MCP client of its ecosystem: the
//! official Python SDK (`mcp`, pinned in scripts/test.sh into the cache's
//! venv), through `tests/it/mcp/client.py`, which relays one request per
//! line. Tools are listed; `plan` checks a broken and a good task file;
//! `start` runs one in the background (scripted agents, the default
//! worktrees and merge queue) and `status` follows it; a task with
//! `review = "human"` waits until `review` approves it; `cancel` and
//! `retry` act on a running task; a report is read as a resource; the
//! server refuses a project outside its folder.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use wavecrew_core::TaskStatus;
use wavecrew_testkit::bin_path;

use crate::cockpit::{Gates, processes_mentioning, until};
use crate::cockpit_review::{SESSION, TASKS, review_project, task, until_awaiting, until_status};

/// The Python of the cache's venv, where scripts/test.sh installs `mcp`.
fn python() -> PathBuf {
    let p = wavecrew_testkit::agent_cli_bins::cache_dir().join("py/bin/python");
    let sdk = Command::new(&p)
        .args(["-c", "import mcp"])
        .output()
        .map(|o| o.status.success());
    assert!(
        matches!(sdk, Ok(true)),
        "{} cannot import the Python MCP SDK (`mcp`): run scripts/test.sh, it installs the \
         pinned SDK into that venv",
        p.display()
    );
    p
}

/// The Python SDK's client, connected to `wavecrew mcp` started in
/// `cwd` (with `server_args` after `mcp`).
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Client {
    fn start(cwd: &Path, server_args: &[&str]) -> Client {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("it/mcp/client.py");
        let mut child = Command::new(python())
            .arg(script)
            .arg(bin_path("wavecrew"))
            .arg("mcp")
            .args(server_args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Client {
            child,
            stdin,
            stdout,
        };
        let ready = c.read();
        assert_eq!(ready["ready"], "wavecrew", "{ready}");
        c
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "the MCP client ended without answering");
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(v.get("exception").is_none(), "the MCP client failed: {v}");
        v
    }

    fn ask(&mut self, req: &Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{req}").unwrap();
        stdin.flush().unwrap();
        self.read()
    }

    /// A tool's reply: `is_error`, `structured`, `text`.
    fn call(&mut self, tool: &str, args: &Value) -> Value {
        let reply = self.ask(&json!({"op": "call", "tool": tool, "args": args}));
        // The same JSON as structured content and as text.
        let text: Value = serde_json::from_str(reply["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, reply["structured"], "{reply}");
        reply
    }

    /// A tool's structured result, which must not be an error.
    fn ok(&mut self, tool: &str, args: &Value) -> Value {
        let reply = self.call(tool, args);
        assert_eq!(reply["is_error"], false, "{tool} {args}: {reply}");
        reply["structured"].clone()
    }

    /// A tool's error message, which must be one.
    fn refused(&mut self, tool: &str, args: &Value) -> String {
        let reply = self.call(tool, args);
        assert_eq!(reply["is_error"], true, "{tool} {args}: {reply}");
        reply["structured"]["error"].as_str().unwrap().to_owned()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Closing stdin ends the client, which ends the server.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// A run `start` began: its process group is stopped if the test ends
/// before the run does.
struct Started(u32);

impl Started {
    fn of(v: &Value) -> Started {
        Started(u32::try_from(v["pid"].as_u64().unwrap()).unwrap())
    }

    fn ended(&self) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.0)).unwrap_or_default();
        // Gone, or a zombie the server has not reaped yet.
        stat.is_empty() || stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z'))
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if !self.ended() {
            wavecrew_sys::process::kill_group(Some(self.0));
        }
    }
}

/// The states of the session's tasks in `status`, by id.
fn states(status: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = status["waves"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w.as_array().unwrap().iter())
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn an_mcp_client_plans_starts_follows_and_reviews_a_run() {
    let p = review_project("Name it v2.");
    let root = p.path();
    let mut c = Client::start(root, &[]);

    // At most seven tools, these names.
    let tools = c.ask(&json!({"op": "tools"}));
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "cancel", "logs", "plan", "retry", "review", "start", "status"
        ]
    );
    for t in tools["tools"].as_array().unwrap() {
        assert!(
            t["input_schema"]["properties"]["project"].is_object(),
            "every tool takes `project`: {t}"
        );
    }

    // A broken graph: its errors by line and field, as `wavecrew plan` finds them.
    let broken = "goal = \"g\"\n\n[[tasks]]\nid = \"IMPL-001\"\ntitle = \"one\"\ndepends_on = [\"IMPL-009\"]\n";
    let v = c.ok("plan", &json!({"task_file": broken}));
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["errors"][0]["field"], "tasks[0].depends_on[0]", "{v}");
    assert_eq!(v["errors"][0]["line"], 6, "{v}");
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("IMPL-009"),
        "{v}"
    );
    let v = c.ok(
        "plan",
        &json!({"task_file": "goal = \"g\"\n[[tasks]]\ntitle = \"t\"\nverify = \"make\"\n"}),
    );
    assert_eq!(v["errors"][0]["field"], "tasks[0].verify", "{v}");
    assert_eq!(v["errors"][0]["line"], 4, "{v}");
    // A shell string where an argv belongs: refused, never run.
    let v = c.ok(
        "plan",
        &json!({"task_file": "goal = \"g\"\n[[tasks]]\ntitle = \"t\"\nacceptance = [{ criterion = \"c\", verify = \"rm -rf / && echo\" }]\n"}),
    );
    assert_eq!(
        v["errors"][0]["field"], "tasks[0].acceptance[0].verify",
        "{v}"
    );
    // An id the developer's worker would refuse at run time is refused now.
    let v = c.ok(
        "plan",
        &json!({"task_file": "goal = \"g\"\n[[tasks]]\nid = \"T1\"\ntitle = \"t\"\n"}),
    );
    assert_eq!(v["errors"][0]["field"], "tasks[0].id", "{v}");
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("whose worker takes ids `IMPL-…` only"),
        "{v}"
    );
    // The good one, by its text and by its path: the waves and the critical path.
    let v = c.ok("plan", &json!({"task_file": TASKS}));
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["session"], SESSION);
    assert_eq!(v["critical_path"], json!(["IMPL-001", "IMPL-002"]), "{v}");
    assert_eq!(v["waves"][0], json!(["IMPL-001", "IMPL-003"]), "{v}");
    let by_path = c.ok("plan", &json!({"task_file": "wavecrew.tasks.toml"}));
    assert_eq!(by_path["waves"], v["waves"]);
    // The same object `wavecrew plan waves --json` prints for the file.
    let cli = wavecrew_testkit::run_bin(
        "wavecrew",
        &["plan", "waves", "wavecrew.tasks.toml", "--json"],
        root,
    );
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    for key in ["waves", "critical_path", "critical_path_seconds", "tasks"] {
        assert_eq!(by_path[key], cli[key], "{key}");
    }

    // The boundary: no project outside the server's folder, no session
    // id that is a path, no role file from elsewhere.
    let e = c.refused("status", &json!({"session": SESSION, "project": ".."}));
    assert!(
        e.contains("outside the folder this server was started for"),
        "{e}"
    );
    let e = c.refused("status", &json!({"session": "../../etc"}));
    assert!(e.contains("invalid session id"), "{e}");
    let e = c.refused("plan", &json!({"task_file": "../outside.toml"}));
    assert!(e.contains("task_file"), "{e}");
    let v = c.ok(
        "plan",
        &json!({"task_file": "goal = \"g\"\n[roles.spy]\nfile = \"/etc/passwd\"\n[[tasks]]\ntitle = \"t\"\nrole = \"spy\"\n"}),
    );
    assert_eq!(v["errors"][0]["field"], "roles.spy.file", "{v}");

    // A broken graph starts nothing.
    let e = c.refused("start", &json!({"task_file": broken}));
    assert!(e.contains("nothing was started"), "{e}");
    assert!(e.contains("field `tasks[0].depends_on[0]`"), "{e}");
    assert!(!root.join(".workflow/.team").exists());

    // Start: it returns at once with the session and its folder.
    let started = c.ok("start", &json!({"task_file": TASKS}));
    let run = Started::of(&started);
    assert_eq!(started["session"], SESSION);
    assert_eq!(started["started"], true);
    let folder = PathBuf::from(started["folder"].as_str().unwrap());
    assert_eq!(
        folder,
        root.join(".workflow/.team")
            .join(SESSION)
            .canonicalize()
            .unwrap()
    );
    // Started twice while it runs: the same run, not a second one.
    let again = c.ok("start", &json!({"task_file": TASKS}));
    assert!(again["started"] == false || run.ended(), "{again}");

    // IMPL-001 waits for a person's review; nothing approves it meanwhile.
    until_awaiting(root, "IMPL-001");
    until_status(root, "IMPL-003", TaskStatus::Completed);
    let status = c.ok("status", &json!({"session": SESSION}));
    assert_eq!(status["session"], SESSION, "{status}");
    assert_eq!(
        status["run"]["running"], true,
        "the run waits for the review: {status}"
    );
    assert!(!run.ended(), "the run waits for the review");
    assert_eq!(task(root, "IMPL-002").unwrap().status, TaskStatus::Pending);
    // A rejection needs a note, as `wavecrew reject` does.
    let e = c.refused(
        "review",
        &json!({"session": SESSION, "task": "IMPL-001", "decision": "reject"}),
    );
    assert!(e.contains("a rejection needs a note"), "{e}");
    let v = c.ok(
        "review",
        &json!({"session": SESSION, "task": "IMPL-001", "decision": "approve"}),
    );
    assert_eq!(v["action"], "approve", "{v}");

    // Status until it ends: every task completed.
    // `status` says when the run it started ended, and how.
    let last = until(
        "the run ends",
        || c.ok("status", &json!({"session": SESSION})),
        |last| last["run"]["running"] == false,
    );
    assert_eq!(last["run"]["exit_code"], 0, "{last}");
    assert!(run.ended());
    assert_eq!(
        states(&last),
        [
            ("IMPL-001".to_owned(), "completed".to_owned()),
            ("IMPL-002".to_owned(), "completed".to_owned()),
            ("IMPL-003".to_owned(), "completed".to_owned()),
        ],
        "{last}"
    );
    assert_eq!(
        task(root, "IMPL-001").unwrap().result.unwrap()["approved"],
        true
    );
    // Landed through the merge queue on the session's branch.
    assert_eq!(
        crate::cockpit_review::show(root, &format!("wavecrew/{SESSION}:out/two.txt")).as_deref(),
        Some("two")
    );

    // Logs: the end of the agent's output and the evidence.
    let logs = c.ok(
        "logs",
        &json!({"session": SESSION, "task": "IMPL-002", "lines": 5}),
    );
    assert_eq!(logs["status"], "completed", "{logs}");
    assert!(
        logs["last_attempt"]["output"]
            .as_str()
            .unwrap()
            .contains("IMPL-002 written"),
        "{logs}"
    );
    assert!(logs["last_attempt"]["outcome"].is_object(), "{logs}");
    let e = c.refused("logs", &json!({"session": SESSION, "task": "IMPL-404"}));
    assert!(e.contains("no task IMPL-404"), "{e}");

    // The reports, as resources.
    let resources = c.ask(&json!({"op": "resources"}));
    let uris: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let junit = format!("wavecrew://sessions/{SESSION}/reports/junit.xml");
    let summary = format!("wavecrew://sessions/{SESSION}/reports/summary.md");
    assert!(
        uris.contains(&junit.as_str()) && uris.contains(&summary.as_str()),
        "{uris:?}"
    );
    let read = c.ask(&json!({"op": "read", "uri": junit}));
    let text = read["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("<testsuite"), "{text}");
    assert!(text.contains("IMPL-002"), "{text}");
    assert_eq!(read["contents"][0]["mime_type"], "application/xml");

    // Another graph under the same session id is refused, and the task
    // file the session was made from is left as it was.
    let kept = root
        .join(".workflow/mcp")
        .join(format!("{SESSION}.tasks.toml"));
    let changed = TASKS.replace("beside one", "beside one, changed");
    let e = c.refused("start", &json!({"task_file": changed}));
    assert!(e.contains("exists already"), "{e}");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), TASKS);

    // Starting the same session again resumes it: nothing is left to do.
    let resumed = c.ok("start", &json!({"task_file": TASKS}));
    let rerun = Started::of(&resumed);
    assert_eq!(resumed["resumed"], true, "{resumed}");
    until("the resumed run ends", || rerun.ended(), |ended| *ended);
    let log = std::fs::read_to_string(resumed["log"].as_str().unwrap()).unwrap();
    assert!(log.contains("resuming the session"), "{log}");
}

/// A git project whose scripted agents are gated, with a task file of two
/// tasks (IMPL-002 after IMPL-001).
fn gated_project(gates: &Gates) -> wavecrew_testkit::git::TempProject {
    let repo = crate::walkthrough::git_repo();
    let scenarios = json!([
        gates.scenario("IMPL-001", "one"),
        gates.scenario("IMPL-002", "two")
    ]);
    std::fs::write(
        repo.path().join("agent.json"),
        json!({ "scenarios": scenarios }).to_string(),
    )
    .unwrap();
    std::fs::write(
        repo.path().join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"scripted\"\n\n[backends.scripted]\nkind = \"scripted\"\n\
             program = {:?}\nscript = \"agent.json\"\nformat = \"codex\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    repo
}

const GATED: &str = r#"
goal = "two gated tasks"
session = "TC-gated-2026-11-27"

[[tasks]]
id = "IMPL-001"
title = "write one"

[[tasks]]
id = "IMPL-002"
title = "after one"
depends_on = ["IMPL-001"]
"#;

#[test]
fn an_mcp_client_cancels_a_running_task_and_retries_it() {
    let gates = Gates::new();
    let p = gated_project(&gates);
    let root = p.path();
    let session = "TC-gated-2026-11-27";
    // The server is started for the project by --root, from elsewhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let root_arg = root.display().to_string();
    let mut c = Client::start(elsewhere.path(), &["--root", &root_arg]);
    let started = c.ok("start", &json!({"task_file": GATED}));
    let run = Started::of(&started);
    let gate = gates.path("IMPL-001").display().to_string();
    until(
        "IMPL-001's agent waiting at its gate",
        || processes_mentioning(&gate),
        |found| !found.is_empty(),
    );
    let e = c.refused("retry", &json!({"session": session, "task": "IMPL-001"}));
    assert!(e.contains("IMPL-001 is in_progress"), "{e}");
    let v = c.ok("cancel", &json!({"session": session, "task": "IMPL-001"}));
    assert_eq!(v["action"], "cancel", "{v}");
    let status = until(
        "the run ends after the cancel",
        || c.ok("status", &json!({"session": session})),
        |status| status["run"]["running"] == false,
    );
    assert_eq!(status["run"]["exit_code"], 1, "a task failed: {status}");
    assert!(run.ended());
    assert_eq!(
        states(&status),
        [
            ("IMPL-001".to_owned(), "failed".to_owned()),
            ("IMPL-002".to_owned(), "skipped".to_owned()),
        ],
        "{status}"
    );
    assert_eq!(processes_mentioning(&gate), Vec::<String>::new());
    // Retry resets it and what was skipped; `start` runs the session again.
    let v = c.ok("retry", &json!({"session": session, "task": "IMPL-001"}));
    assert_eq!(v["reset"], json!(["IMPL-001", "IMPL-002"]), "{v}");
    gates.open("IMPL-001");
    gates.open("IMPL-002");
    let again = c.ok("start", &json!({"task_file": GATED}));
    assert_eq!(again["resumed"], true, "{again}");
    let rerun = Started::of(&again);
    let (_, last) = until(
        "the run ends with both tasks completed",
        || (rerun.ended(), c.ok("status", &json!({"session": session}))),
        |(ended, _)| *ended,
    );
    assert_eq!(
        states(&last),
        [
            ("IMPL-001".to_owned(), "completed".to_owned()),
            ("IMPL-002".to_owned(), "completed".to_owned()),
        ],
        "{last}"
    );
    // The task file sent as text was kept in the project for the run.
    assert!(
        root.join(".workflow/mcp")
            .join(format!("{session}.tasks.toml"))
            .is_file()
    );
}

/// Every tool name offered to the model in the requests the mock saw
/// (Anthropic and Responses `tools[].name`, Gemini's
/// `functionDeclarations[].name`).
fn offered_tools(mock: &wavecrew_testkit::model_server::MockLlm) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "tools" || k == "functionDeclarations" {
                        for t in x.as_array().into_iter().flatten() {
                            if let Some(n) = t["name"].as_str() {
                                out.push(n.to_owned());
                            }
                        }
                    }
                    walk(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for r in mock.requests() {
        walk(&r["body"], &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// `wavecrew mcp install --<cli>` in a fresh project, then the real CLI
/// (offline: a private HOME, the mock model on 127.0.0.1): `mcp list`
/// names the server (connected, for claude and gemini, whose list
/// connects; codex's lists its configuration only), and a one-line prompt
/// shows that the CLI started `wavecrew mcp` and listed its tools: claude
/// and gemini offer the model every one of them; codex 0.169 defers MCP
/// tools out of the model request, so its MCP client's trace is read.
fn a_real_cli_lists_the_tools(cli: wavecrew_testkit::agent_cli_bins::AgentCli) {
    use wavecrew_testkit::agent_cli_bins::{AgentCli, cli_bin};
    use wavecrew_testkit::model_server::{Api, MockLlm, MockOptions};
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let home = tmp.path().join("home");
    for d in [&project, &home, &tmp.path().join("tmp")] {
        std::fs::create_dir_all(d).unwrap();
    }
    wavecrew_testkit::git::git(&project, &["init", "-q"]);
    let project = project.canonicalize().unwrap();
    let flag = format!("--{}", cli.name());
    let o = wavecrew_testkit::run_bin("wavecrew", &["mcp", "install", &flag], &project);
    assert_eq!(o.code, 0, "{}", o.render());
    let api = match cli {
        AgentCli::Claude => Api::Anthropic,
        AgentCli::Codex => Api::Responses,
        AgentCli::Gemini => Api::Gemini,
    };
    let mock = MockLlm::start(
        api,
        MockOptions {
            final_text: "nothing to do".into(),
            ..MockOptions::default()
        },
    );
    let base = mock.base_url();
    let mut env: Vec<(&str, String)> = vec![
        ("HOME", home.display().to_string()),
        ("TMPDIR", tmp.path().join("tmp").display().to_string()),
    ];
    // What a person does once per project for codex and gemini: trust it.
    let prompt_args: Vec<&str> = match cli {
        AgentCli::Claude => {
            env.extend([
                ("ANTHROPIC_BASE_URL", base.clone()),
                ("ANTHROPIC_API_KEY", "sk-ant-mock".into()),
                ("CLAUDE_CODE_MAX_RETRIES", "0".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                ("DISABLE_AUTOUPDATER", "1".into()),
                ("DISABLE_TELEMETRY", "1".into()),
                ("DISABLE_ERROR_REPORTING", "1".into()),
            ]);
            vec![
                "-p",
                "say hi",
                "--output-format",
                "json",
                "--model",
                "claude-sonnet-4-5",
            ]
        }
        AgentCli::Codex => {
            let codex_home = home.join(".codex");
            std::fs::create_dir_all(&codex_home).unwrap();
            std::fs::write(
                codex_home.join("config.toml"),
                format!(
                    "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
                     name = \"mock\"\nbase_url = \"{base}/v1\"\nenv_key = \"MOCK_API_KEY\"\n\
                     wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n\
                     [projects.{:?}]\ntrust_level = \"trusted\"\n",
                    project.display().to_string()
                ),
            )
            .unwrap();
            env.extend([
                ("CODEX_HOME", codex_home.display().to_string()),
                ("MOCK_API_KEY", "sk-mock-codex".into()),
            ]);
            // codex 0.169 defers MCP tools (they are not in the model
            // request); the tools its MCP client listed are in its trace.
            env.push(("RUST_LOG", "rmcp=trace,warn".into()));
            vec!["exec", "say hi"]
        }
        AgentCli::Gemini => {
            let dir = home.join(".gemini");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("settings.json"),
                r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},
                    "general":{"maxAttempts":1,"retryFetchErrors":false,"disableAutoUpdate":true,"disableUpdateNag":true},
                    "privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}"#,
            )
            .unwrap();
            std::fs::write(
                dir.join("trustedFolders.json"),
                json!({ project.display().to_string(): "TRUST_FOLDER" }).to_string(),
            )
            .unwrap();
            env.extend([
                ("GEMINI_API_KEY", "mock-gemini-key".into()),
                ("GOOGLE_GEMINI_BASE_URL", base.clone()),
            ]);
            // Headless gemini offers the model only the tools it may run
            // without asking; MCP tools ask unless approvals are off.
            vec![
                "-p",
                "say hi",
                "--model",
                "gemini-2.5-pro",
                "--approval-mode",
                "yolo",
            ]
        }
    };
    let run = |args: &[&str]| {
        let o = Command::new(cli_bin(cli))
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(&project)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["mcp", "list"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    // gemini prints its list on stderr.
    let both = format!("{out}\n{err}");
    let line = both
        .lines()
        .find(|l| l.contains("wavecrew"))
        .unwrap_or_else(|| {
            panic!(
                "`{} mcp list` does not name wavecrew:\n{out}\n{err}",
                cli.name()
            )
        });
    assert!(
        line.contains(&format!("mcp --root {}", project.display())),
        "{line}"
    );
    match cli {
        // claude and gemini connect to list: the server answered.
        AgentCli::Claude | AgentCli::Gemini => {
            assert!(line.contains("Connected"), "{line}");
        }
        // codex lists its configuration without starting the server.
        AgentCli::Codex => assert!(line.contains("enabled"), "{line}"),
    }
    let (code, out, err) = run(&prompt_args);
    let tools = [
        "plan", "start", "status", "review", "cancel", "retry", "logs",
    ];
    if cli == AgentCli::Codex {
        assert!(
            err.contains("name: \"wavecrew\""),
            "codex did not connect to wavecrew:\n{err}"
        );
        for tool in tools {
            assert!(
                err.contains(&format!("Tool {{ name: \"{tool}\"")),
                "codex's MCP client did not list wavecrew's `{tool}` (exit {code:?}):\n{out}\n{err}"
            );
        }
        return;
    }
    let offered = offered_tools(&mock);
    for tool in tools {
        assert!(
            offered
                .iter()
                .any(|n| n.contains("wavecrew") && n.ends_with(tool)),
            "{} did not offer wavecrew's `{tool}` to the model (exit {code:?}); offered: \
             {offered:?}\n{out}\n{err}",
            cli.name()
        );
    }
}

#[test]
fn real_claude_lists_wavecrews_tools_after_install() {
    a_real_cli_lists_the_tools(wavecrew_testkit::agent_cli_bins::AgentCli::Claude);
}

#[test]
fn real_codex_lists_wavecrews_tools_after_install() {
    a_real_cli_lists_the_tools(wavecrew_testkit::agent_cli_bins::AgentCli::Codex);
}

#[test]
fn real_gemini_lists_wavecrews_tools_after_install() {
    a_real_cli_lists_the_tools(wavecrew_testkit::agent_cli_bins::AgentCli::Gemini);
}

#[test]
fn the_server_refuses_a_project_folder_that_is_not_there() {
    let tmp = tempfile::tempdir().unwrap();
    let o = wavecrew_testkit::run_bin("wavecrew", &["mcp", "--root", "missing"], tmp.path());
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(
        o.stderr.contains("--root missing")
            && o.stderr.contains("expected an existing project folder"),
        "{}",
        o.render()
    );
    assert_eq!(o.stdout, "", "stdout is the protocol's");
}
