//! `wavecrew.toml`: the backends, their limits, the seeds' name remapping,
//! fallback chains, retries and redaction.
//!
//! The file is optional; every key has a default, so an empty file (or
//! none) gives the built-in backends (`claude`, `codex`, `gemini`, `qwen`,
//! `opencode`) with the seeds' names mapped as ccw maps them (`agent` →
//! `claude`). Unknown keys are errors that name the key, so a typo never
//! silently falls back to a default.
//!
//! ```toml
//! [limits]
//! timeout_secs = 1800        # wall clock per attempt
//! stall_timeout_secs = 300   # no output for this long: killed
//! leak_timeout_ms = 2000     # pipes held after the agent ended: closed
//! max_parallel = 4           # attempts at once, all backends together
//!
//! [limits.roles]             # tasks of a role at once, within max_parallel
//! reviewer = 1
//!
//! [aliases]                  # the seeds' names → any backend
//! agent = "mine"
//!
//! [routing]
//! fallback = ["claude", "codex", "gemini"]
//! max_retries = 3
//!
//! [redact]
//! env = ["MY_PRIVATE_THING"]
//!
//! [backends.mine]
//! kind = "command"
//! argv = ["python3", "my_agent.py", "--task", "{task_id}"]
//! prompt = "stdin"           # or "arg" ({prompt}), "file" ({prompt_file})
//! max_parallel = 2           # the governor: attempts at once, all workers
//! rpm = 30                   # starts per minute
//! tpm = 200000               # tokens per minute
//!
//! [budget]                   # counted live from the agents' usage events
//! task_tokens = 200000
//! run_usd = 5.0
//!
//! [prices."gpt-5.5"]         # US dollars per million tokens
//! input = 1.25
//! output = 10.0
//! cached_input = 0.125
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wavecrew_core::Limits;

use crate::events::StreamFormat;

/// The file name looked up in the project root.
pub const CONFIG_FILE: &str = "wavecrew.toml";

/// A configuration problem: the file, the key and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or a key has the wrong shape.
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The dotted key (`backends.mine.prompt`), or `(file)`.
        key: String,
        /// What was expected.
        message: String,
    },
}

/// Which adapter runs a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Claude Code, `claude -p` (the seeds' `agent`).
    Claude,
    /// OpenAI Codex CLI, `codex exec`.
    Codex,
    /// Google Gemini CLI, `gemini -p`.
    Gemini,
    /// Qwen Code (a Gemini CLI fork), `qwen -p`.
    Qwen,
    /// opencode, `opencode run`.
    Opencode,
    /// Any program, from an argv template.
    Command,
    /// `wavecrew-scripted-agent` with a script file.
    Scripted,
}

impl Kind {
    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Claude => "claude",
            Kind::Codex => "codex",
            Kind::Gemini => "gemini",
            Kind::Qwen => "qwen",
            Kind::Opencode => "opencode",
            Kind::Command => "command",
            Kind::Scripted => "scripted",
        }
    }

    /// The hosts each built-in CLI needs for its model API and its login.
    pub fn api_hosts(self) -> &'static [&'static str] {
        match self {
            Kind::Claude => &["api.anthropic.com:443", "console.anthropic.com:443"],
            Kind::Codex => &[
                "api.openai.com:443",
                "auth.openai.com:443",
                "chatgpt.com:443",
            ],
            Kind::Gemini => &[
                "generativelanguage.googleapis.com:443",
                "cloudcode-pa.googleapis.com:443",
                "oauth2.googleapis.com:443",
            ],
            Kind::Qwen => &[
                "dashscope.aliyuncs.com:443",
                "dashscope-intl.aliyuncs.com:443",
                "portal.qwen.ai:443",
                "chat.qwen.ai:443",
            ],
            Kind::Opencode => &[
                "api.anthropic.com:443",
                "api.openai.com:443",
                "generativelanguage.googleapis.com:443",
                "opencode.ai:443",
                "models.dev:443",
            ],
            Kind::Command | Kind::Scripted => &[],
        }
    }

    /// The program a built-in kind runs when none is configured.
    pub fn default_program(self) -> Option<&'static str> {
        match self {
            Kind::Claude => Some("claude"),
            Kind::Codex => Some("codex"),
            Kind::Gemini => Some("gemini"),
            Kind::Qwen => Some("qwen"),
            Kind::Opencode => Some("opencode"),
            Kind::Scripted => Some("wavecrew-scripted-agent"),
            Kind::Command => None,
        }
    }

    /// The event stream the kind's CLI prints.
    pub fn stream_format(self) -> Option<StreamFormat> {
        match self {
            Kind::Claude => Some(StreamFormat::Claude),
            Kind::Codex => Some(StreamFormat::Codex),
            Kind::Gemini | Kind::Qwen => Some(StreamFormat::Gemini),
            Kind::Opencode | Kind::Command | Kind::Scripted => None,
        }
    }
}

/// How a `command` backend receives the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptChannel {
    /// Written to stdin, then closed.
    #[default]
    Stdin,
    /// As one argv element, where the template says `{prompt}`.
    Arg,
    /// In a file whose path replaces `{prompt_file}`.
    File,
}

/// The stream a backend prints, as configured (`stream = "claude"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamSetting {
    /// Plain text: the outcome comes from the exit code alone.
    #[default]
    None,
    /// codex `--json` lines.
    Codex,
    /// gemini `-o stream-json` lines.
    Gemini,
    /// claude `stream-json` lines.
    Claude,
}

impl StreamSetting {
    /// The parser, if any.
    pub fn format(self) -> Option<StreamFormat> {
        match self {
            StreamSetting::None => None,
            StreamSetting::Codex => Some(StreamFormat::Codex),
            StreamSetting::Gemini => Some(StreamFormat::Gemini),
            StreamSetting::Claude => Some(StreamFormat::Claude),
        }
    }
}

/// One `[backends.<name>]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSpec {
    /// The adapter (defaults to the table's name when that is a built-in kind).
    #[serde(default)]
    pub kind: Option<Kind>,
    /// The program to run (a path or a name on `PATH`).
    #[serde(default)]
    pub program: Option<String>,
    /// `command` backends: the argv template (the program first).
    #[serde(default)]
    pub argv: Vec<String>,
    /// `command` backends: how the prompt is passed.
    #[serde(default)]
    pub prompt: PromptChannel,
    /// `command` backends: the stream format they print.
    #[serde(default)]
    pub stream: StreamSetting,
    /// The model (`-m` / `--model`).
    #[serde(default)]
    pub model: Option<String>,
    /// Extra folders the agent may use (`--add-dir`, `--include-directories`).
    #[serde(default)]
    pub add_dirs: Vec<String>,
    /// Extra argv elements, after the adapter's own.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the child.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A `KEY=VALUE` file read into the child's environment.
    #[serde(default)]
    pub env_file: Option<String>,
    /// Wall-clock limit of one attempt, seconds.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// No-output limit, seconds.
    #[serde(default)]
    pub stall_timeout_secs: Option<u64>,
    /// Attempts of this backend at once, across every worker of a session
    /// (the governor's slots).
    #[serde(default)]
    pub max_parallel: Option<usize>,
    /// Attempts of this backend started per minute (any 60-second window),
    /// across every worker of a session.
    #[serde(default)]
    pub rpm: Option<u64>,
    /// Tokens (input + output) this backend may use per minute (any
    /// 60-second window), across every worker of a session.
    #[serde(default)]
    pub tpm: Option<u64>,
    /// Where to go when this backend is unavailable.
    #[serde(default)]
    pub fallback: Option<Vec<String>>,
    /// A private `HOME`/`TMPDIR` per attempt (under the attempt folder).
    #[serde(default)]
    pub isolate_home: Option<bool>,
    /// claude: the permission mode for write attempts
    /// (`bypassPermissions` by default; `acceptEdits`, …).
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// codex: the sandbox for write attempts (`danger-full-access` by
    /// default = `--dangerously-bypass-approvals-and-sandbox`;
    /// `workspace-write`).
    #[serde(default)]
    pub sandbox: Option<String>,
    /// The budget of one prompt to this backend, in characters (default:
    /// `[limits] prompt_max_chars`).
    #[serde(default)]
    pub prompt_max_chars: Option<usize>,
    /// `scripted` backends: the script file.
    #[serde(default)]
    pub script: Option<String>,
    /// `scripted` backends: the stream format it speaks.
    #[serde(default)]
    pub format: Option<StreamSetting>,
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Wall-clock limit of one attempt, seconds.
    pub timeout_secs: u64,
    /// No-output limit, seconds.
    pub stall_timeout_secs: u64,
    /// Between SIGTERM and SIGKILL, seconds.
    pub grace_secs: u64,
    /// After the agent has ended, how long its stdout and stderr are still
    /// read when a process that left its group holds them, milliseconds.
    pub leak_timeout_ms: u64,
    /// Attempts at once, all backends together.
    pub max_parallel: usize,
    /// A private `HOME`/`TMPDIR` per attempt, for every backend.
    pub isolate_home: bool,
    /// `[limits.roles]`: at most this many tasks of a role at once
    /// (`developer = 2`), within `max_parallel`.
    pub roles: BTreeMap<String, usize>,
    /// The budget of one prompt, in characters: longer prompts have their
    /// untrusted material, then their plan excerpt, cut (a backend's own
    /// `prompt_max_chars` overrides it).
    pub prompt_max_chars: usize,
    /// The time limit of each syntax check (`cargo check`, `tsc`, …), in
    /// seconds. A check that runs out of it is inconclusive (an
    /// environment problem: a cold build, a loaded machine), never a
    /// failure of the agent.
    pub syntax_check_secs: u64,
    /// The most of an attempt's stdout, and of its stderr, kept on disk, in
    /// bytes: past it the first and the last halves are kept, with the
    /// count of bytes dropped between (reading goes on at full speed).
    pub max_output_bytes: u64,
}

/// The default limit of a syntax check: 30 s, as in the seeds.
pub const DEFAULT_SYNTAX_CHECK_SECS: u64 = 30;

/// The default prompt budget: 400,000 characters (about 100,000 tokens),
/// within every supported model's context with room for its work.
pub const DEFAULT_PROMPT_MAX_CHARS: usize = 400_000;

impl Default for LimitsConfig {
    fn default() -> Self {
        let d = Limits::default();
        LimitsConfig {
            timeout_secs: d.wall.as_secs(),
            stall_timeout_secs: d.stall.as_secs(),
            grace_secs: d.grace.as_secs(),
            leak_timeout_ms: u64::try_from(crate::supervise::DEFAULT_LEAK_TIMEOUT.as_millis())
                .unwrap_or(u64::MAX),
            max_parallel: 4,
            isolate_home: false,
            roles: BTreeMap::new(),
            prompt_max_chars: DEFAULT_PROMPT_MAX_CHARS,
            syntax_check_secs: DEFAULT_SYNTAX_CHECK_SECS,
            max_output_bytes: d.max_output_bytes,
        }
    }
}

/// `[routing]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingConfig {
    /// The fallback chain when a backend is unavailable.
    pub fallback: Vec<String>,
    /// Retries of a failed attempt (with the error in the prompt), at most 3.
    pub max_retries: u32,
    /// First backoff for rate limits and transient errors, milliseconds.
    pub backoff_ms: u64,
    /// The longest backoff, milliseconds.
    pub max_backoff_ms: u64,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            fallback: vec!["claude".into(), "codex".into(), "gemini".into()],
            max_retries: 3,
            backoff_ms: 2_000,
            max_backoff_ms: 60_000,
        }
    }
}

/// `[redact]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedactConfig {
    /// More variable names whose values are secret.
    pub env: Vec<String>,
}

/// `[isolation] mode`: where a writing task's agent works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IsolationMode {
    /// A git worktree per task attempt, on its own branch from the
    /// session's integration branch; the work lands through the merge
    /// queue (a folder that is not a git work tree works through a shadow
    /// repository in the session folder, and `--apply` writes its result
    /// back as files). Every role works this way: writing roles land
    /// their work, read-only ones look at a detached worktree of the tip.
    /// The default.
    #[default]
    Worktree,
    /// In the project folder itself, as ccw does: tasks run one at a time
    /// there (an explicit `--max-parallel` overrides that, at the risk of
    /// one task's half-done edit failing a neighbour's validation).
    InPlace,
}

/// The default `[isolation] sandbox_writable`: the caches real builds
/// fill, only where they hold data (downloaded packages, build caches,
/// lock files), never configuration or programs that another process, or
/// the user's next build, would run: `~/.cargo/config.toml` (a
/// `rustc-wrapper`), `~/.cargo/bin`, toolchains under `~/.rustup` and tools
/// installed under `~/.cache` stay out of reach.
pub const DATA_CACHES: [&str; 12] = [
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/.cargo/.package-cache",
    "~/.cargo/.package-cache-mutate",
    "~/.cargo/.global-cache",
    "~/.npm/_cacache",
    "~/.cache/pip",
    "~/.cache/uv",
    "~/.cache/go-build",
    "~/go/pkg/mod",
    "~/.local/share/pnpm/store",
    "~/.yarn/berry/cache",
];

/// The default `[isolation] runs_later`: files the user's own tools run by
/// themselves, later, outside any session (CI, direnv, the editors' tasks
/// and dev containers, git hooks and submodules, the agents' instruction
/// files), at any depth. A folder's entry (`**/.vscode/**`) covers
/// everything below it.
pub const RUNS_LATER: [&str; 20] = [
    // CI configuration.
    "**/.github/**",
    "**/.gitlab-ci.yml",
    "**/.circleci/**",
    "**/.buildkite/**",
    "**/Jenkinsfile",
    "**/azure-pipelines.yml",
    // What a shell, an editor or a container runs on its own.
    "**/.envrc",
    "**/.vscode/**",
    "**/.idea/**",
    "**/.devcontainer/**",
    "**/.devcontainer.json",
    // git's hooks and submodules.
    "**/.husky/**",
    "**/.githooks/**",
    "**/.pre-commit-config.yaml",
    "**/.gitmodules",
    // The agents' instruction files.
    "**/AGENTS.md",
    "**/CLAUDE.md",
    "**/GEMINI.md",
    "**/.cursor/**",
    "**/.cursorrules",
];

/// `[isolation]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IsolationConfig {
    /// `worktree` (default) or `in-place`.
    pub mode: IsolationMode,
    /// Git-ignored files a build needs (`.env`), copied from the project
    /// into each worktree when present.
    pub copy: Vec<String>,
    /// Commands run once in each new worktree before its agent starts
    /// (`[["npm", "ci"]]`), in order, as argv (a string is split into
    /// words, never given to a shell). Their output goes to the task's
    /// attempt folder; one that fails is the attempt's environment error
    /// (`setup_failed`), not the agent's.
    pub setup: Vec<CommandLine>,
    /// When `setup` runs again in a warm worktree (one an earlier task
    /// used, taken from the pool): `when-dependencies-change` (default:
    /// only when a dependency file, a lockfile or manifest such as
    /// `package-lock.json`, `uv.lock`, `requirements.txt` or `go.sum`,
    /// changed with the switch; a fresh worktree is always set up) or
    /// `always` (a setup that generates files from tracked sources).
    pub setup_again: SetupAgain,
    /// How long each setup command may run, in seconds.
    pub setup_timeout_secs: u64,
    /// Build folders git ignores (`target`, `node_modules`, the default)
    /// copied from the project into each new worktree, so its first build
    /// is incremental; keyed by their lockfiles (see
    /// `wavecrew_isolation::Integration::seed_build_state`). `[]` turns
    /// seeding off.
    pub seed: Vec<String>,
    /// The largest folder seeded, in MiB; a larger one is not copied (and
    /// the result says so).
    pub seed_max_mb: u64,
    /// `auto` (default): where the kernel has Landlock, an agent's process
    /// tree (and the checks on its work) may write only its worktree, its
    /// temporary folder, the session's `artifacts/`, the git metadata its
    /// commits need, its CLI's private copy of its configuration and
    /// [`IsolationConfig::sandbox_writable`], may not read the credential
    /// files, and keeps its signals inside; `required`: the same, or no
    /// run at all where the kernel cannot; `off`: anywhere the user may
    /// (see `crate::confine`).
    pub sandbox: SandboxMode,
    /// More places agents may write (`~` is their home): the caches real
    /// builds fill, where they hold data and never code or configuration
    /// another program runs. Default: [`DATA_CACHES`]
    /// (Cargo's registry and git checkouts and its lock files, npm's
    /// content cache, pip's, uv's and Go's caches, the pnpm and Yarn
    /// stores); not `~/.cargo/config.toml`, `~/.cargo/bin`, toolchains
    /// under `~/.rustup`, nor tools installed under `~/.cache`.
    pub sandbox_writable: Vec<String>,
    /// More places a confined agent and the checks on its work may not
    /// read, besides the usual credential files
    /// ([`crate::confine::SECRET_FILES`]: `~/.ssh`, `~/.aws`, the other
    /// CLIs' logins…).
    pub deny_read: Vec<String>,
    /// Variables a confined agent gets although they look like a
    /// credential (by default, only its backend's own login and what its
    /// configuration sets are passed on).
    pub pass_env: Vec<String>,
    /// A confined agent's network: `allowlist` (default: a network of its
    /// own whose only way out is wavecrew's egress proxy, which lets
    /// through its backend's model API, the base URLs its configuration
    /// sets and [`IsolationConfig::allow_hosts`]), `none` (nothing out) or
    /// `open` (the machine's network, as before).
    pub network: NetworkMode,
    /// The network of the checks that run an agent's work (its acceptance
    /// commands, the project's tests, syntax checks, `[isolation] setup`
    /// after it, `[integration] verify`), which run its code (a
    /// `conftest.py`, a build script): `allowlist` (default: a network of
    /// their own whose only way out is the egress proxy, which lets through
    /// the package registries the project's manifests and lockfiles name
    /// and [`IsolationConfig::allow_hosts`]), `none`, or `open` (the
    /// machine's network, as before). Only with `sandbox` on.
    pub check_network: NetworkMode,
    /// More hosts every confined agent may reach through the proxy:
    /// `registry.npmjs.org`, `*.crates.io`, `127.0.0.1:8080` (an IP
    /// literal only when listed; no port: any port). A task adds its own
    /// in its metadata's `allow_hosts`.
    pub allow_hosts: Vec<String>,
    /// Changes outside a task's declared `files`: `warn` (default: listed
    /// in its result and on the bus) or `fail` (the task fails, naming
    /// them).
    pub undeclared: UndeclaredMode,
    /// Paths no task may change (globs, `*` within a folder, `**` across
    /// folders): a change there fails the task, naming the path. Default:
    /// wavecrew's own `wavecrew.toml` and task files (`*.tasks.toml`), and
    /// the agent CLIs' project settings (`.mcp.json`,
    /// `.claude/settings.json`, `.claude/settings.local.json`,
    /// `.codex/config.toml`, `.gemini/settings.json`: the hooks, commands
    /// and MCP servers your next session runs); add CI configuration,
    /// `AGENTS.md`, verifier configs.
    pub protected: Vec<String>,
    /// Files the user's own tools run by themselves later (globs as in
    /// [`IsolationConfig::protected`], matched ignoring case): a task that
    /// changes one without declaring it in its `files` is held for a
    /// person's review (as with `review = "human"`), the files named; in
    /// place, where there is no branch to hold, it fails. Default:
    /// [`RUNS_LATER`] (CI configuration, `.envrc`, `.vscode/`, `.idea/`,
    /// `.devcontainer/`, git hooks, `.gitmodules`, the agents' instruction
    /// files, at any depth); `[]` turns it off.
    pub runs_later: Vec<String>,
    /// The largest file a task's work may hold, in MiB: a changed file
    /// over it fails the task, naming it and its size. 0: no cap.
    pub max_file_mb: u64,
    /// Believe a task file that says `completed` without an attempt of the
    /// task (the seed's behaviour: a hand-edited status skips the task).
    /// Default false: such a file is reported as tampered and the task
    /// runs.
    pub trust_task_files: bool,
}

/// `[isolation] undeclared`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndeclaredMode {
    /// Listed in the result and on the bus.
    #[default]
    Warn,
    /// The task fails.
    Fail,
}

/// `[isolation] setup_again`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SetupAgain {
    /// In a warm worktree, only when a dependency file changed.
    #[default]
    WhenDependenciesChange,
    /// In every attempt's worktree.
    Always,
}

/// `[isolation] network`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// A network of its own, out only through the egress proxy to the
    /// hosts allowed.
    #[default]
    Allowlist,
    /// A network of its own with nothing out.
    None,
    /// The machine's network.
    Open,
}

impl NetworkMode {
    /// The name in `wavecrew.toml`.
    pub fn name(self) -> &'static str {
        match self {
            NetworkMode::Allowlist => "allowlist",
            NetworkMode::None => "none",
            NetworkMode::Open => "open",
        }
    }
}

/// `[isolation] sandbox`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Confine agents where the kernel can (Landlock), say so once where
    /// it cannot.
    #[default]
    Auto,
    /// Never confine.
    Off,
    /// Confine, or refuse to run: a run whose kernel cannot set up a
    /// layer (write rules, hidden reads, scoped signals) stops before any
    /// task, naming it.
    Required,
}

impl SandboxMode {
    /// Every mode, in the order `--sandbox` lists them.
    pub const ALL: [SandboxMode; 3] = [SandboxMode::Auto, SandboxMode::Off, SandboxMode::Required];

    /// The name in `wavecrew.toml` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Off => "off",
            SandboxMode::Required => "required",
        }
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("expected auto, off or required, got {s:?}"))
    }
}

impl Default for IsolationConfig {
    fn default() -> Self {
        IsolationConfig {
            mode: IsolationMode::default(),
            copy: Vec::new(),
            setup: Vec::new(),
            setup_timeout_secs: 900,
            seed: vec!["target".to_owned(), "node_modules".to_owned()],
            seed_max_mb: 2048,
            sandbox: SandboxMode::default(),
            sandbox_writable: DATA_CACHES.iter().map(|p| (*p).to_owned()).collect(),
            deny_read: Vec::new(),
            pass_env: Vec::new(),
            network: NetworkMode::default(),
            check_network: NetworkMode::default(),
            allow_hosts: Vec::new(),
            undeclared: UndeclaredMode::default(),
            setup_again: SetupAgain::default(),
            trust_task_files: false,
            protected: [
                "wavecrew.toml",
                "**/wavecrew.toml",
                "*.tasks.toml",
                "**/*.tasks.toml",
                // The agent CLIs' project settings: hooks, commands and MCP
                // servers your next session of that CLI runs.
                ".mcp.json",
                ".claude/settings.json",
                ".claude/settings.local.json",
                ".codex/config.toml",
                ".gemini/settings.json",
            ]
            .map(str::to_owned)
            .to_vec(),
            runs_later: RUNS_LATER.map(str::to_owned).to_vec(),
            max_file_mb: 50,
        }
    }
}

/// `[integration]`: checks on the merged result, in isolated sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IntegrationConfig {
    /// A command run on each merge candidate (the integration tip with the
    /// task's work merged), in a worktree of it, before it lands: `"cargo
    /// test"` (split into words, never given to a shell) or an argv list.
    /// It fails → not merged, and the task gets a revision with its output.
    pub verify: Option<CommandLine>,
    /// How long `verify` may run, in seconds.
    pub verify_timeout_secs: u64,
}

impl Default for IntegrationConfig {
    fn default() -> Self {
        IntegrationConfig {
            verify: None,
            verify_timeout_secs: 900,
        }
    }
}

/// `[engine]`: where task state, leases, tickets and the bus live when one
/// session runs on several hosts. Without `url`, the file engine on the
/// local disk (the default; no server needed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// `nats://host:4222` or `tls://host:4443` (a NATS server with
    /// JetStream); never a user or password in it.
    pub url: Option<String>,
    /// A NATS `.creds` file, or a file holding one token on one line; a
    /// relative path is read from this file's folder.
    pub credentials: Option<PathBuf>,
    /// How long a ticket stays with a silent host before it goes to another,
    /// in seconds; hosts heartbeat every third of it.
    pub ack_wait_secs: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            url: None,
            credentials: None,
            ack_wait_secs: 30,
        }
    }
}

impl EngineConfig {
    /// The credentials file, resolved against the folder of `source` (the
    /// configuration file it was read from).
    pub fn credentials_path(&self, source: Option<&Path>) -> Option<PathBuf> {
        let file = self.credentials.as_ref()?;
        let dir = source.and_then(Path::parent).filter(|_| file.is_relative());
        Some(dir.map_or_else(|| file.clone(), |d| d.join(file)))
    }
}

/// A command as a user writes it: one line, split into words as a shell
/// would split them (quotes honoured, nothing expanded, no shell run), or
/// the argv itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    /// `"cargo test --workspace"`.
    Line(String),
    /// `["cargo", "test", "--workspace"]`.
    Argv(Vec<String>),
}

impl CommandLine {
    /// The argv, or why there is none (unbalanced quotes, empty).
    pub fn argv(&self) -> Result<Vec<String>, String> {
        let argv = match self {
            CommandLine::Line(line) => {
                shell_words::split(line).map_err(|e| format!("cannot split {line:?}: {e}"))?
            }
            CommandLine::Argv(argv) => argv.clone(),
        };
        if argv.first().is_none_or(String::is_empty) {
            return Err("expected a command, got an empty one".into());
        }
        Ok(argv)
    }
}

/// `[budget]`: spend limits, counted live from the agents' usage events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// Tokens (input + output) of one task, all its attempts together.
    pub task_tokens: Option<u64>,
    /// Tokens of the whole run.
    pub run_tokens: Option<u64>,
    /// US dollars of one task (priced from `[prices]`).
    pub task_usd: Option<f64>,
    /// US dollars of the whole run.
    pub run_usd: Option<f64>,
}

impl BudgetConfig {
    /// Whether any budget is set.
    pub fn any(&self) -> bool {
        self.task_tokens.is_some()
            || self.run_tokens.is_some()
            || self.task_usd.is_some()
            || self.run_usd.is_some()
    }
}

/// `[prices."<model>"]`: US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input (prompt) tokens not served from a cache.
    pub input: f64,
    /// Per million output (completion) tokens.
    pub output: f64,
    /// Per million input tokens served from a cache (defaults to `input`).
    #[serde(default)]
    pub cached_input: Option<f64>,
}

impl Price {
    /// The cost of `usage` in US dollars. Cached tokens are a part of the
    /// input tokens (as codex and the Responses API count them).
    pub fn cost(&self, usage: &wavecrew_core::Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        #[allow(clippy::cast_precision_loss)]
        let dollars = (fresh as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0;
        dollars
    }
}

/// The whole `wavecrew.toml`, as far as the backends read it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[limits]`.
    pub limits: LimitsConfig,
    /// `[aliases]`: seed names (`agent`, `codex`, `gemini`) → backend names.
    pub aliases: BTreeMap<String, String>,
    /// `[routing]`.
    pub routing: RoutingConfig,
    /// `[redact]`.
    pub redact: RedactConfig,
    /// `[backends.<name>]`.
    pub backends: BTreeMap<String, BackendSpec>,
    /// `[budget]`.
    pub budget: BudgetConfig,
    /// `[prices."<model>"]`.
    pub prices: BTreeMap<String, Price>,
    /// `[isolation]`.
    pub isolation: IsolationConfig,
    /// `[integration]`.
    pub integration: IntegrationConfig,
    /// `[engine]`.
    pub engine: EngineConfig,
    /// Where the file was read from (not a key).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// The built-in backend names.
pub const BUILT_IN: [&str; 5] = ["claude", "codex", "gemini", "qwen", "opencode"];

/// A backend with everything resolved: name, kind and spec.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedBackend {
    /// The name users choose it by.
    pub name: String,
    /// The adapter.
    pub kind: Kind,
    /// The configuration.
    pub spec: BackendSpec,
}

impl Config {
    /// Parse a file's text; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let invalid = |key: String, message: String| ConfigError::Invalid {
            path: path.to_owned(),
            key,
            message,
        };
        let de = toml::Deserializer::parse(text)
            .map_err(|e| invalid("(file)".into(), e.message().to_owned()))?;
        let mut config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let message = e.inner().message().to_owned();
            invalid(if key == "." { "(file)".into() } else { key }, message)
        })?;
        config.source = Some(path.to_owned());
        config.validate(path)?;
        Ok(config)
    }

    /// Read `file`.
    pub fn load(file: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Io {
            path: file.to_owned(),
            source,
        })?;
        Config::parse(&text, file)
    }

    /// `explicit` when given, else `<project_root>/wavecrew.toml` when it
    /// exists, else the defaults.
    pub fn discover(project_root: &Path, explicit: Option<&Path>) -> Result<Config, ConfigError> {
        if let Some(file) = explicit {
            return Config::load(file);
        }
        let file = project_root.join(CONFIG_FILE);
        if file.is_file() {
            Config::load(&file)
        } else {
            Ok(Config::default())
        }
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: String, message: String| ConfigError::Invalid {
            path: path.to_owned(),
            key,
            message,
        };
        if self.engine.ack_wait_secs < 3 {
            return Err(invalid(
                "engine.ack_wait_secs".into(),
                format!(
                    "at least 3 (hosts heartbeat every third of it), got {}",
                    self.engine.ack_wait_secs
                ),
            ));
        }
        if let Some(url) = &self.engine.url
            && !(url.starts_with("nats://") || url.starts_with("tls://"))
        {
            return Err(invalid(
                "engine.url".into(),
                format!("expected a nats:// or tls:// URL, got {url:?}"),
            ));
        }
        if self.routing.max_retries > 3 {
            return Err(invalid(
                "routing.max_retries".into(),
                format!("at most 3, got {}", self.routing.max_retries),
            ));
        }
        if self.limits.max_parallel == 0 {
            return Err(invalid(
                "limits.max_parallel".into(),
                "expected at least 1".into(),
            ));
        }
        for (i, path) in self.isolation.copy.iter().enumerate() {
            let p = Path::new(path);
            if path.is_empty()
                || p.is_absolute()
                || p.components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                return Err(invalid(
                    format!("isolation.copy[{i}]"),
                    format!("expected a path inside the project, got {path:?}"),
                ));
            }
        }
        if let Some(verify) = &self.integration.verify {
            verify
                .argv()
                .map_err(|message| invalid("integration.verify".into(), message))?;
        }
        for (i, command) in self.isolation.setup.iter().enumerate() {
            command
                .argv()
                .map_err(|message| invalid(format!("isolation.setup[{i}]"), message))?;
        }
        if self.isolation.setup_timeout_secs == 0 {
            return Err(invalid(
                "isolation.setup_timeout_secs".into(),
                "expected at least 1".into(),
            ));
        }
        if self.integration.verify_timeout_secs == 0 {
            return Err(invalid(
                "integration.verify_timeout_secs".into(),
                "expected at least 1".into(),
            ));
        }
        // A budget too small for any task would cut everything and help
        // no one: at least 1,000 characters.
        if self.limits.syntax_check_secs == 0 {
            return Err(invalid(
                "limits.syntax_check_secs".into(),
                "expected at least 1".into(),
            ));
        }
        for (i, host) in self.isolation.allow_hosts.iter().enumerate() {
            if let Err(e) = wavecrew_core::allow_hosts::AllowList::parse(std::slice::from_ref(host))
            {
                return Err(invalid(format!("isolation.allow_hosts[{i}]"), e));
            }
        }
        for (i, glob) in self.isolation.protected.iter().enumerate() {
            if let Err(e) = globset::Glob::new(glob) {
                return Err(invalid(
                    format!("isolation.protected[{i}]"),
                    format!("a glob such as `.github/**`; {e}"),
                ));
            }
        }
        for (i, glob) in self.isolation.runs_later.iter().enumerate() {
            if let Err(e) = globset::Glob::new(glob) {
                return Err(invalid(
                    format!("isolation.runs_later[{i}]"),
                    format!("a glob such as `**/.vscode/**`; {e}"),
                ));
            }
        }
        if self.limits.max_output_bytes < 4096 {
            return Err(invalid(
                "limits.max_output_bytes".into(),
                format!("at least 4096, got {}", self.limits.max_output_bytes),
            ));
        }
        if self.limits.prompt_max_chars < 1000 {
            return Err(invalid(
                "limits.prompt_max_chars".into(),
                format!("at least 1000, got {}", self.limits.prompt_max_chars),
            ));
        }
        for (name, spec) in &self.backends {
            if let Some(n) = spec.prompt_max_chars
                && n < 1000
            {
                return Err(invalid(
                    format!("backends.{name}.prompt_max_chars"),
                    format!("at least 1000, got {n}"),
                ));
            }
        }
        for (role, limit) in &self.limits.roles {
            if *limit == 0 {
                return Err(invalid(
                    format!("limits.roles.{role}"),
                    "expected at least 1".into(),
                ));
            }
        }
        for (name, spec) in &self.backends {
            let key = |k: &str| format!("backends.{name}.{k}");
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(invalid(
                    format!("backends.{name}"),
                    "a backend name is letters, digits, '-' and '_'".into(),
                ));
            }
            let kind = spec.kind.or_else(|| builtin_kind(name)).ok_or_else(|| {
                invalid(
                    key("kind"),
                    format!(
                        "missing: `{name}` is not a built-in backend, so say which adapter runs it \
                         (claude, codex, gemini, qwen, opencode, command, scripted)"
                    ),
                )
            })?;
            if kind == Kind::Command {
                if spec.argv.is_empty() {
                    return Err(invalid(
                        key("argv"),
                        "a command backend needs an argv template, e.g. [\"python3\", \"agent.py\", \"{task_id}\"]".into(),
                    ));
                }
                let joined = spec.argv.join("\u{0}");
                if spec.prompt == PromptChannel::Arg && !joined.contains("{prompt}") {
                    return Err(invalid(
                        key("argv"),
                        "prompt = \"arg\" needs a {prompt} placeholder in argv".into(),
                    ));
                }
                if spec.prompt == PromptChannel::File && !joined.contains("{prompt_file}") {
                    return Err(invalid(
                        key("argv"),
                        "prompt = \"file\" needs a {prompt_file} placeholder in argv".into(),
                    ));
                }
                for element in &spec.argv {
                    if let Err(bad) = crate::placeholders::check_placeholders(element) {
                        return Err(invalid(
                            key("argv"),
                            format!(
                                "unknown placeholder {{{bad}}}; known: {}",
                                crate::placeholders::PLACEHOLDERS.join(", ")
                            ),
                        ));
                    }
                }
            }
            if kind == Kind::Scripted && spec.script.is_none() {
                return Err(invalid(
                    key("script"),
                    "a scripted backend needs a script file".into(),
                ));
            }
            if spec.max_parallel == Some(0) {
                return Err(invalid(key("max_parallel"), "expected at least 1".into()));
            }
            if spec.rpm == Some(0) {
                return Err(invalid(
                    key("rpm"),
                    "expected at least 1 (leave it out for no limit)".into(),
                ));
            }
            if spec.tpm == Some(0) {
                return Err(invalid(
                    key("tpm"),
                    "expected at least 1 (leave it out for no limit)".into(),
                ));
            }
            for target in spec.fallback.iter().flatten() {
                self.check_name(target)
                    .map_err(|m| invalid(key("fallback"), m))?;
            }
        }
        for (k, v) in [
            ("task_tokens", self.budget.task_tokens),
            ("run_tokens", self.budget.run_tokens),
        ] {
            if v == Some(0) {
                return Err(invalid(
                    format!("budget.{k}"),
                    "expected at least 1 token".into(),
                ));
            }
        }
        for (k, v) in [
            ("task_usd", self.budget.task_usd),
            ("run_usd", self.budget.run_usd),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                return Err(invalid(
                    format!("budget.{k}"),
                    format!("expected a positive number of US dollars, got {v}"),
                ));
            }
        }
        for (model, price) in &self.prices {
            for (k, v) in [
                ("input", Some(price.input)),
                ("output", Some(price.output)),
                ("cached_input", price.cached_input),
            ] {
                if let Some(v) = v
                    && !(v.is_finite() && v >= 0.0)
                {
                    return Err(invalid(
                        format!("prices.\"{model}\".{k}"),
                        format!("expected US dollars per million tokens (0 or more), got {v}"),
                    ));
                }
            }
        }
        for (alias, target) in &self.aliases {
            self.check_name(target)
                .map_err(|m| invalid(format!("aliases.{alias}"), m))?;
        }
        for target in &self.routing.fallback {
            self.check_name(target)
                .map_err(|m| invalid("routing.fallback".into(), m))?;
        }
        Ok(())
    }

    fn check_name(&self, name: &str) -> Result<(), String> {
        if self.backends.contains_key(name) || BUILT_IN.contains(&name) {
            Ok(())
        } else {
            Err(format!(
                "unknown backend `{name}`; known: {}",
                self.names().join(", ")
            ))
        }
    }

    /// Every backend name: built-in and configured, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILT_IN.iter().map(|s| (*s).to_owned()).collect();
        for name in self.backends.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names.sort();
        names
    }

    /// A name as the seeds or a user wrote it (`agent`, `Codex`), mapped
    /// through `[aliases]` and the built-in alias `agent` → `claude`.
    pub fn canonical_name(&self, name: &str) -> String {
        let lower = name.trim().to_ascii_lowercase();
        if let Some(target) = self.aliases.get(&lower) {
            return target.clone();
        }
        if lower == "agent" && !self.backends.contains_key("agent") {
            return "claude".into();
        }
        lower
    }

    /// Resolve a backend by any name it can be chosen by.
    pub fn backend(&self, name: &str) -> Option<ResolvedBackend> {
        let name = self.canonical_name(name);
        let spec = self.backends.get(&name).cloned();
        let kind = spec
            .as_ref()
            .and_then(|s| s.kind)
            .or_else(|| builtin_kind(&name))?;
        Some(ResolvedBackend {
            name,
            kind,
            spec: spec.unwrap_or_default(),
        })
    }

    /// The prompt budget of `backend`, in characters.
    pub fn prompt_budget(&self, backend: &ResolvedBackend) -> usize {
        backend
            .spec
            .prompt_max_chars
            .unwrap_or(self.limits.prompt_max_chars)
    }

    /// The limits of one attempt of `backend`.
    pub fn limits_for(&self, backend: &ResolvedBackend) -> Limits {
        Limits {
            wall: Duration::from_secs(
                backend
                    .spec
                    .timeout_secs
                    .unwrap_or(self.limits.timeout_secs),
            ),
            stall: Duration::from_secs(
                backend
                    .spec
                    .stall_timeout_secs
                    .unwrap_or(self.limits.stall_timeout_secs),
            ),
            grace: Duration::from_secs(self.limits.grace_secs),
            max_output_bytes: self.limits.max_output_bytes,
        }
    }

    /// How long pipes held by an escaped process are read after the agent
    /// has ended (`[limits] leak_timeout_ms`).
    pub fn leak_timeout(&self) -> Duration {
        Duration::from_millis(self.limits.leak_timeout_ms)
    }

    /// The fallback chain after `backend`: its own, else the global one,
    /// without itself.
    pub fn fallback_after(&self, backend: &ResolvedBackend) -> Vec<String> {
        let chain = backend
            .spec
            .fallback
            .clone()
            .unwrap_or_else(|| self.routing.fallback.clone());
        chain
            .into_iter()
            .map(|n| self.canonical_name(&n))
            .filter(|n| n != &backend.name)
            .collect()
    }

    /// Concurrency limits: all backends together, and per backend (for
    /// the scheduler's class limits).
    pub fn concurrency(&self) -> (usize, BTreeMap<String, usize>) {
        let per = self
            .backends
            .iter()
            .filter_map(|(n, s)| s.max_parallel.map(|m| (n.clone(), m)))
            .collect();
        (self.limits.max_parallel, per)
    }
}

/// The kind of a built-in backend name.
pub fn builtin_kind(name: &str) -> Option<Kind> {
    match name {
        "claude" => Some(Kind::Claude),
        "codex" => Some(Kind::Codex),
        "gemini" => Some(Kind::Gemini),
        "qwen" => Some(Kind::Qwen),
        "opencode" => Some(Kind::Opencode),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("wavecrew.toml"))
    }

    #[test]
    fn empty_file_gives_the_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.backend("agent").unwrap().kind, Kind::Claude);
        assert_eq!(c.backend("Codex").unwrap().kind, Kind::Codex);
        assert!(c.backend("nope").is_none());
        assert_eq!(c.limits.max_parallel, 4);
    }

    #[test]
    fn aliases_remap_the_seed_names() {
        let c = parse(
            r#"
            [aliases]
            agent = "mine"
            [backends.mine]
            kind = "command"
            argv = ["python3", "my_agent.py", "--task", "{task_id}"]
            "#,
        )
        .unwrap();
        let b = c.backend("agent").unwrap();
        assert_eq!((b.name.as_str(), b.kind), ("mine", Kind::Command));
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse("[backends.mine]\nkind = \"command\"\nargv = [\"x\"]\nprompt = \"pipe\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("backends.mine.prompt"), "{e}");
        let e = parse("[limits]\ntimeout = 3\n").unwrap_err().to_string();
        assert!(e.contains("limits") && e.contains("timeout"), "{e}");
        let e = parse("[backends.mine]\nargv = [\"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("backends.mine.kind"), "{e}");
        let e = parse("[aliases]\nagent = \"nobody\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("aliases.agent") && e.contains("unknown backend"),
            "{e}"
        );
        let e = parse("[backends.m]\nkind = \"command\"\nargv = [\"x\", \"{oops}\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("{oops}"), "{e}");
        let e = parse("[routing]\nmax_retries = 9\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("routing.max_retries"), "{e}");
    }

    #[test]
    fn governor_keys_are_read_and_checked() {
        let c = parse(
            r#"
            [backends.codex]
            max_parallel = 2
            rpm = 30
            tpm = 100000
            model = "gpt-5.5"
            [budget]
            task_tokens = 1000
            run_usd = 2.5
            [prices."gpt-5.5"]
            input = 1.25
            output = 10.0
            cached_input = 0.125
            "#,
        )
        .unwrap();
        let b = c.backend("codex").unwrap();
        assert_eq!((b.spec.rpm, b.spec.tpm), (Some(30), Some(100_000)));
        assert_eq!(c.budget.task_tokens, Some(1000));
        let usage = wavecrew_core::Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 400_000,
            output_tokens: 100_000,
            cost_usd: None,
        };
        let cost = c.prices["gpt-5.5"].cost(&usage);
        assert!(
            (cost - (0.6 * 1.25 + 0.4 * 0.125 + 0.1 * 10.0)).abs() < 1e-9,
            "{cost}"
        );
        for (text, key) in [
            ("[backends.codex]\nrpm = 0\n", "backends.codex.rpm"),
            ("[backends.codex]\nburst = 3\n", "burst"),
            ("[budget]\nrun_usd = -1.0\n", "budget.run_usd"),
            ("[budget]\ntask_tokens = 0\n", "budget.task_tokens"),
            ("[budget]\nrun_dollars = 3\n", "run_dollars"),
            ("[prices.\"m\"]\ninput = 1.0\n", "prices"),
            (
                "[prices.\"m\"]\ninput = 1.0\noutput = 2.0\ncache = 0.1\n",
                "cache",
            ),
            (
                "[prices.\"m\"]\ninput = -1.0\noutput = 2.0\n",
                "prices.\"m\".input",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn runs_later_and_max_file_mb_are_read_and_checked() {
        let c = parse("").unwrap();
        assert!(c.isolation.runs_later.iter().any(|g| g == "**/.envrc"));
        assert_eq!(c.isolation.max_file_mb, 50);
        let c = parse("[isolation]\nruns_later = []\nmax_file_mb = 0\n").unwrap();
        assert!(c.isolation.runs_later.is_empty());
        assert_eq!(c.isolation.max_file_mb, 0);
        let e = parse("[isolation]\nruns_later = [\"**/.envrc\", \"a/[b\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("isolation.runs_later[1]"), "{e}");
        let e = parse("[isolation]\nmax_file_mb = -1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_file_mb"), "{e}");
    }
}
