//! The prompt carries the whole task (issue 13): the real `claude` and
//! `codex` CLIs, started by `wavecrew run`, against the mock model that
//! reads (`MockOptions::reads`). Each task of a session says in its own
//! words which file to create (`create <path> containing "<text>"`); the
//! mock creates exactly the files its prompt names, so a prompt that lost
//! its task leaves the file missing (the mock answers "nothing to do") and
//! the test fails.
//!
//! Three shapes of session: a team-coordinate session (the directive in a
//! task's description; gemini too), a planex solution and a roadmap phase
//! (the directive in a task's `implementation` steps). Offline: the CLIs
//! talk to 127.0.0.1 only, with a private `HOME` and fake keys; confined,
//! as by default, each with its private copy of its configuration.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};
use wavecrew_core::{FileTaskStore, Task, TaskId, TaskStore};
use wavecrew_testkit::agent_cli_bins::{AgentCli, cli_bin};
use wavecrew_testkit::model_server::{Api, MockLlm, MockOptions};
use wavecrew_testkit::{CliOutput, run_bin};

use crate::team::role_file;

/// A project folder (`project/`) beside the CLI's private home (`home/`),
/// and the reading mock the CLI talks to.
struct World {
    tmp: tempfile::TempDir,
    cli: AgentCli,
    mock: MockLlm,
}

impl World {
    fn new(cli: AgentCli) -> World {
        let api = match cli {
            AgentCli::Claude => Api::Anthropic,
            AgentCli::Codex => Api::Responses,
            AgentCli::Gemini => Api::Gemini,
        };
        let w = World {
            tmp: tempfile::tempdir().unwrap(),
            cli,
            mock: MockLlm::start(api, MockOptions::reading()),
        };
        for dir in [w.root(), w.home(), w.tmp.path().join("tmp")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(w.root().join("wavecrew.toml"), w.config()).unwrap();
        w
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("project")
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn session(&self, id: &str) -> PathBuf {
        self.root().join(".workflow/.team").join(id)
    }

    /// `wavecrew.toml`: every name a role may ask for (`agent`, `codex`,
    /// `gemini`) is the CLI under test, pointed at the mock; one attempt
    /// at a time (the CLIs share the private home), no retries; isolated,
    /// the default, as users run it (each task in a worktree of its own,
    /// the work landed and applied with `--apply`).
    fn config(&self) -> String {
        let home = self.home();
        let base = self.mock.base_url();
        let mut env = vec![
            ("HOME", home.display().to_string()),
            ("TMPDIR", self.tmp.path().join("tmp").display().to_string()),
        ];
        let (kind, model) = match self.cli {
            AgentCli::Codex => {
                let codex_home = home.join(".codex");
                std::fs::create_dir_all(&codex_home).unwrap();
                std::fs::write(
                    codex_home.join("config.toml"),
                    format!(
                        "model_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
                         base_url = \"{base}/v1\"\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n\
                         request_max_retries = 0\nstream_max_retries = 0\nstream_idle_timeout_ms = 20000\n"
                    ),
                )
                .unwrap();
                env.push(("CODEX_HOME", codex_home.display().to_string()));
                env.push(("MOCK_API_KEY", "sk-mock-codex".into()));
                ("codex", "gpt-5.5")
            }
            AgentCli::Claude => {
                env.push(("ANTHROPIC_BASE_URL", base));
                env.push(("ANTHROPIC_API_KEY", "sk-ant-mock".into()));
                env.push(("CLAUDE_CODE_MAX_RETRIES", "0".into()));
                env.push(("API_TIMEOUT_MS", "20000".into()));
                for v in [
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                    "DISABLE_AUTOUPDATER",
                    "DISABLE_TELEMETRY",
                    "DISABLE_ERROR_REPORTING",
                ] {
                    env.push((v, "1".into()));
                }
                ("claude", "claude-sonnet-4-5")
            }
            AgentCli::Gemini => {
                let gemini = home.join(".gemini");
                std::fs::create_dir_all(&gemini).unwrap();
                std::fs::write(
                    gemini.join("settings.json"),
                    r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},
                        "general":{"maxAttempts":1,"retryFetchErrors":false,"disableAutoUpdate":true,"disableUpdateNag":true},
                        "privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}"#,
                )
                .unwrap();
                env.push(("GEMINI_API_KEY", "mock-gemini-key".into()));
                env.push(("GOOGLE_GEMINI_BASE_URL", base));
                ("gemini", "gemini-2.5-pro")
            }
        };
        let env = env
            .iter()
            .map(|(k, v)| format!("{k} = {v:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "[aliases]\nagent = \"cli\"\ncodex = \"cli\"\ngemini = \"cli\"\n\n\
             [limits]\nmax_parallel = 1\ntimeout_secs = 240\nstall_timeout_secs = 120\n\n\
             [routing]\nmax_retries = 0\nfallback = []\nbackoff_ms = 1\n\n\
             [backends.cli]\nkind = \"{kind}\"\nprogram = {:?}\nmodel = \"{model}\"\nenv = {{ {env} }}\n",
            cli_bin(self.cli).display().to_string(),
        )
    }

    /// `git init` with one commit, `.workflow/` ignored (planex commits).
    fn git_repo(&self) {
        let root = self.root();
        let git = |args: &[&str]| {
            wavecrew_testkit::git::git(&root, args);
        };
        git(&["init", "-q"]);
        git(&["config", "user.email", "t@example.com"]);
        git(&["config", "user.name", "t"]);
        std::fs::write(root.join(".gitignore"), ".workflow/\nwavecrew.toml\n").unwrap();
        std::fs::write(root.join("README.md"), "# notes\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "init"]);
    }

    /// `wavecrew run <session> --apply`: the landed work in the folder.
    fn run(&self, session: &str) -> CliOutput {
        let dir = self.session(session);
        run_bin(
            "wavecrew",
            &["run", dir.to_str().unwrap(), "--apply"],
            &self.root(),
        )
    }

    /// What the file holds when the mock created it with `text`: codex's
    /// `apply_patch` ends the last line with a newline, claude's `Write`
    /// writes the text as it is.
    fn written(&self, text: &str) -> String {
        match self.cli {
            AgentCli::Codex => format!("{text}\n"),
            _ => text.to_owned(),
        }
    }

    /// Every attempt of the session: its folder, `prompt.md` and
    /// `outcome.json`, by path.
    fn attempts(&self, session: &str) -> Vec<(PathBuf, String, Value)> {
        let mut out = Vec::new();
        let mut stack = vec![self.session(session).join("attempts")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                }
            }
            if let Ok(prompt) = std::fs::read_to_string(dir.join("prompt.md")) {
                let outcome = std::fs::read_to_string(dir.join("outcome.json"))
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or(Value::Null);
                out.push((dir, prompt, outcome));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The run, its attempts (prompt and outcome) and the mock's count of
    /// model calls, to read when a test fails.
    fn story(&self, session: &str, o: &CliOutput) -> String {
        let mut s = format!(
            "{:?} against the mock ({} model calls)\n{}\n",
            self.cli,
            self.mock.model_calls(),
            o.render_in(&self.root())
        );
        let workers = self.session(session).join("workers");
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&workers)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        logs.sort();
        for log in logs {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = write!(s, "\n===== {}\n{text}", log.display());
        }
        for (dir, prompt, outcome) in self.attempts(session) {
            let _ = write!(
                s,
                "\n===== {}\n--- prompt.md\n{prompt}\n--- outcome.json\n{outcome:#}\n",
                dir.display()
            );
        }
        s
    }

    /// Each task's agent kept its CLI's sessions in its private copy of the
    /// CLI's configuration (beside the task's attempts), and none in the
    /// user's folder: a confined agent never writes the user's settings.
    fn assert_private_config(&self, session: &str, tasks: &[&str]) {
        let (user_state, copy_state) = match self.cli {
            AgentCli::Claude => (".claude/projects", "projects"),
            AgentCli::Codex => (".codex/sessions", "sessions"),
            AgentCli::Gemini => (".gemini/tmp", ".gemini/tmp"),
        };
        assert!(
            !self.home().join(user_state).exists(),
            "the user's {user_state} was written"
        );
        if self.cli == AgentCli::Claude {
            assert!(!self.home().join(".claude.json").exists());
        }
        for task in tasks {
            let copy = self
                .session(session)
                .join("attempts")
                .join(task)
                .join("cli-config/cli");
            assert!(
                copy.join(copy_state).is_dir(),
                "{task}: no {copy_state} in {}",
                copy.display()
            );
        }
    }

    /// The run exited 0, every file holds exactly its text, and every
    /// attempt's final message names exactly the files of its own task.
    fn assert_done(&self, session: &str, o: &CliOutput, files: &[(&str, &str)], finals: &[&str]) {
        let story = || self.story(session, o);
        assert_eq!(o.code, 0, "{}", story());
        for (path, text) in files {
            let got = std::fs::read_to_string(self.root().join(path)).ok();
            assert_eq!(
                got.as_deref(),
                Some(self.written(text).as_str()),
                "{path}\n{}",
                story()
            );
        }
        let mut got: Vec<String> = self
            .attempts(session)
            .iter()
            .map(|(_, _, o)| o["final_message"].as_str().unwrap_or("").to_owned())
            .collect();
        got.sort();
        assert_eq!(got, finals, "{}", story());
        // Confined in the default mode, each agent had a network of its
        // own and reached its mock model server through wavecrew's egress
        // proxy (its base URL on 127.0.0.1 allowed by configuration), and
        // nothing else.
        let mock = self
            .mock
            .base_url()
            .trim_start_matches("http://")
            .to_owned();
        for (dir, _, outcome) in self.attempts(session) {
            let network = &outcome["network"];
            assert_eq!(
                network["mode"],
                "allowlist",
                "{}\n{}",
                dir.display(),
                story()
            );
            assert_eq!(
                network["reached"],
                json!([mock]),
                "{}: {network}\n{}",
                dir.display(),
                story()
            );
            // What the CLI asks for besides its model (Codex's analytics
            // and update checks) is refused and named.
            let refused = network["refused"].as_array().cloned().unwrap_or_default();
            assert!(
                refused
                    .iter()
                    .all(|r| r.as_str().is_some_and(|r| !r.starts_with(&mock))),
                "{}: {network}",
                dir.display()
            );
        }
    }
}

/// The session files `wavecrew run` validates, for one `EXEC` role.
fn exec_session(w: &World, id: &str, task: Task) {
    let s = w.session(id);
    std::fs::create_dir_all(s.join("roles")).unwrap();
    std::fs::write(s.join("roles/executor.md"), role_file("executor")).unwrap();
    let write = |name: &str, v: Value| std::fs::write(s.join(name), v.to_string()).unwrap();
    write(
        "team-session.json",
        json!({"session_id": id, "task_description": "release notes", "status": "active",
               "roles": [{"name": "executor", "prefix": "EXEC", "inner_loop": false, "role_file": "roles/executor.md"}],
               "active_workers": [], "completed_tasks": []}),
    );
    write(
        "task-analysis.json",
        json!({"capabilities": [], "dependency_graph": {task.id.as_str(): {"depends_on": [], "role": "executor"}},
               "roles": [{"name": "executor", "prefix": "EXEC"}]}),
    );
    FileTaskStore::for_session(&s).create(task).unwrap();
}

// ---------------------------------------------------------------------------
// a. team-coordinate: the directive in each task's description.

const TC: &str = "TC-reading-notes-2026-11-23";

const TC_NOTES: [(&str, &str); 3] = [
    (
        "notes/IMPL-001.md",
        "The data model: a Todo has a title and a done flag.",
    ),
    (
        "notes/IMPL-002.md",
        "The endpoints: GET and POST /todos, validated.",
    ),
    (
        "notes/IMPL-003.md",
        "The docs: how to run it, in 3 steps; that's all.",
    ),
];

fn team_coordinate(cli: AgentCli) {
    let w = World::new(cli);
    let s = w.session(TC);
    std::fs::create_dir_all(s.join("roles")).unwrap();
    std::fs::write(s.join("roles/developer.md"), role_file("developer")).unwrap();
    let tasks: Vec<Value> = TC_NOTES
        .iter()
        .enumerate()
        .map(|(i, (path, text))| {
            json!({"id": format!("IMPL-00{}", i + 1),
                   "title": format!("Part {}", i + 1),
                   "description": format!("Write down part {} of the design.\nTo do so, create {path} containing \"{text}\" and nothing else.", i + 1)})
        })
        .collect();
    std::fs::write(
        s.join("team-session.json"),
        json!({"session_id": TC, "task_description": "a todo app", "status": "active",
               "roles": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "inner_loop": true}],
               "active_workers": [], "completed_tasks": []})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        s.join("task-analysis.json"),
        json!({"task_description": "a todo app",
               "capabilities": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)",
                                 "tasks": tasks, "artifacts": []}],
               "dependency_graph": {"IMPL-001": [], "IMPL-002": ["IMPL-001"], "IMPL-003": []},
               "roles": [{"name": "developer", "prefix": "IMPL", "responsibility_type": "code-gen (code)", "task_count": 3, "inner_loop": true}],
               "complexity": {"total_score": 3, "level": "low"}})
        .to_string(),
    )
    .unwrap();
    let o = w.run(TC);
    w.assert_done(
        TC,
        &o,
        &TC_NOTES,
        &[
            "done: created notes/IMPL-001.md",
            "done: created notes/IMPL-002.md",
            "done: created notes/IMPL-003.md",
        ],
    );
    w.assert_private_config(TC, &["IMPL-001", "IMPL-002", "IMPL-003"]);
}

#[test]
fn claude_follows_a_team_coordinate_description() {
    team_coordinate(AgentCli::Claude);
}

#[test]
fn codex_follows_a_team_coordinate_description() {
    team_coordinate(AgentCli::Codex);
}

#[test]
fn gemini_follows_a_team_coordinate_description() {
    team_coordinate(AgentCli::Gemini);
}

// ---------------------------------------------------------------------------
// b. planex: the directive in a solution task's implementation steps.

const PEX: &str = "PEX-reading-notes-2026-11-23";
const ISSUE: &str = "ISS-20261123-001";

const PEX_NOTES: [(&str, &str); 2] = [
    ("notes/T1.md", "Release 1.2: faster start, one bug fixed."),
    (
        "notes/T2.md",
        "Upgrading: nothing to change; it's compatible.",
    ),
];

fn planex(cli: AgentCli) {
    let w = World::new(cli);
    w.git_repo();
    let issues = w.root().join(".workflow/issues");
    std::fs::create_dir_all(issues.join("solutions")).unwrap();
    std::fs::write(
        issues.join("issues.jsonl"),
        json!({"id": ISSUE, "title": "Release notes", "status": "planned",
               "context": "The release needs its notes.", "bound_solution_id": format!("SOL-{ISSUE}-1")})
        .to_string()
            + "\n",
    )
    .unwrap();
    // Title and description say what the task is about; only the steps say
    // which file and what text.
    std::fs::write(
        issues.join(format!("solutions/{ISSUE}.jsonl")),
        json!({"id": format!("SOL-{ISSUE}-1"), "is_bound": true, "description": "Two notes files.",
               "tasks": [
                   {"id": "T1", "title": "Release notes", "scope": "notes", "action": "Create",
                    "description": "Write the release notes.",
                    "files": [{"path": PEX_NOTES[0].0, "action": "create"}],
                    "implementation": [format!("create {} containing \"{}\"", PEX_NOTES[0].0, PEX_NOTES[0].1)]},
                   {"id": "T2", "title": "Upgrade notes", "scope": "notes", "action": "Create",
                    "description": "Write the upgrade notes.",
                    "files": [{"path": PEX_NOTES[1].0, "action": "create"}],
                    "implementation": [{"step": "1", "description": format!("create {} containing \"{}\"", PEX_NOTES[1].0, PEX_NOTES[1].1)}]}]})
        .to_string()
            + "\n",
    )
    .unwrap();
    let mut task = Task::new(
        TaskId::new("EXEC-001").unwrap(),
        format!("EXEC-W1-{ISSUE}: Implement Release notes"),
        format!(
            "## Execution Task\n**Wave**: 1\n**Issue**: {ISSUE}\n**execution_method**: Auto\n**code_review**: Skip"
        ),
    );
    task.owner = Some("executor".into());
    exec_session(&w, PEX, task);
    let o = w.run(PEX);
    w.assert_done(
        PEX,
        &o,
        &PEX_NOTES,
        &["done: created notes/T1.md, notes/T2.md"],
    );
}

#[test]
fn claude_follows_a_planex_solution_step() {
    planex(AgentCli::Claude);
}

#[test]
fn codex_follows_a_planex_solution_step() {
    planex(AgentCli::Codex);
}

// ---------------------------------------------------------------------------
// c. roadmap: the directive in a phase task's implementation steps.

const RD: &str = "RD-reading-notes-2026-11-23";

const RD_NOTES: [(&str, &str); 2] = [
    ("notes/IMPL-101.md", "Phase 1 plan: sign-in first."),
    (
        "notes/IMPL-102.md",
        "Phase 1 risks: tokens expire; renew them.",
    ),
];

fn roadmap(cli: AgentCli) {
    let w = World::new(cli);
    let dir = w.session(RD).join("phase-1/.task");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (path, text)) in RD_NOTES.iter().enumerate() {
        let id = format!("IMPL-10{}", i + 1);
        let step = format!("create {path} containing \"{text}\"");
        let implementation = if i == 0 {
            json!([step])
        } else {
            json!([{"step": "1", "description": step}])
        };
        std::fs::write(
            dir.join(format!("{id}.json")),
            json!({"id": id, "title": format!("Notes {}", i + 1), "description": "Write the phase notes.",
                   "depends_on": [], "files": [{"path": path, "action": "create"}],
                   "implementation": implementation,
                   "convergence": {"criteria": [format!("{path} exists")], "verification": "", "definition_of_done": "written"}})
            .to_string(),
        )
        .unwrap();
    }
    let mut task = Task::new(
        TaskId::new("EXEC-101").unwrap(),
        "EXEC-101: Execute phase 1",
        format!("## Session\n- Folder: .workflow/.team/{RD}\n- Phase: 1\n"),
    );
    task.owner = Some("executor".into());
    exec_session(&w, RD, task);
    let o = w.run(RD);
    w.assert_done(
        RD,
        &o,
        &RD_NOTES,
        &[
            "done: created notes/IMPL-101.md",
            "done: created notes/IMPL-102.md",
        ],
    );
}

#[test]
fn claude_follows_a_roadmap_task_step() {
    roadmap(AgentCli::Claude);
}

#[test]
fn codex_follows_a_roadmap_task_step() {
    roadmap(AgentCli::Codex);
}
