//! One attempt through an agent CLI: the [`Backend`] implementation.
//!
//! [`CliBackend::attempt`] snapshots `git status`, writes the prompt, spawns
//! the CLI under supervision, parses its stream as it arrives (recording
//! the native session id in `session.json` the moment it appears, so an
//! interrupted attempt can be resumed), classifies the outcome, redacts
//! secrets from every file it wrote and records `outcome.json`. Every file
//! write and `git` run happens on the blocking pool, never on the async
//! runtime's threads.
//!
//! The attempt folder (`attempts/<task>/<n>/`):
//!
//! | file | what |
//! |---|---|
//! | `prompt.md` | the prompt sent |
//! | `argv.json` | program, arguments, folder (redacted) |
//! | `stdout.log`, `stderr.log` | everything the CLI printed (redacted) |
//! | `session.json` | `{"backend", "session_id"}` as soon as the stream names it |
//! | `outcome.json` | the [`AttemptOutcome`], plus `notes` when something went wrong around the agent |
//!
//! Faults are never silent: a file that cannot be redacted is replaced by a
//! notice (or removed) and the attempt fails; pipes held open by a process
//! that escaped the agent's group are closed after the leak timeout and
//! noted; an `outcome.json` that cannot be written is an [`AttemptError`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;
use wavecrew_core::fsutil::{write_atomic, write_json_atomic};
use wavecrew_core::{AttemptOutcome, AttemptRequest, Backend, CoreError, OutcomeClass, Usage};

use crate::adapter::{self, Invocation, parse_env_file};
use crate::config::{Kind, ResolvedBackend};
use crate::events::StreamState;
use crate::gitdiff::Snapshot;
use crate::outcome::classify_with_exit_hints;
use crate::redact::{Redactor, ScrubError};
use crate::supervise::{DEFAULT_LEAK_TIMEOUT, Ended, Supervised, supervise_until};

/// The files of an attempt that may hold what the agent printed.
const CAPTURED_FILES: [&str; 4] = ["stdout.log", "stderr.log", "session.json", "prompt.txt"];

/// An agent CLI (or command, or the scripted agent) as a [`Backend`].
#[derive(Debug, Clone)]
pub struct CliBackend {
    backend: ResolvedBackend,
    extra_secret_names: Vec<String>,
    isolate_home: bool,
    /// `[isolation] deny_read`, `pass_env` and `sandbox = "required"`:
    /// what a confined agent may not read, the credentials it gets anyway,
    /// and whether it may run unconfined.
    deny_read: Vec<String>,
    pass_env: Vec<String>,
    sandbox_required: bool,
    /// `[isolation] network` and `allow_hosts`: a confined agent's network.
    network: crate::config::NetworkMode,
    allow_hosts: Vec<String>,
    ignored: Vec<PathBuf>,
    governor: Option<crate::governor::Governor>,
    leak_timeout: Duration,
    /// How redaction rewrites a file (atomically; tests make it fail).
    rewrite: RewriteFn,
    /// How `outcome.json` is written (atomically; tests make it fail).
    record: RecordFn,
}

/// Rewrites a file for the redaction.
type RewriteFn = fn(&Path, &[u8]) -> std::io::Result<()>;
/// Writes `outcome.json`.
type RecordFn = fn(&Path, &[u8]) -> wavecrew_core::Result<()>;

/// One finished attempt: its outcome and what went wrong around the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// What the attempt did (also in `outcome.json`).
    pub outcome: AttemptOutcome,
    /// Faults around the agent, one line each (also `notes` in
    /// `outcome.json`): pipes held by an escaped process, files that could
    /// not be written or redacted.
    pub notes: Vec<String>,
    /// Files that could not be redacted (each was replaced by a notice,
    /// removed or emptied); when any, the attempt failed.
    pub unredacted: Vec<PathBuf>,
}

/// An attempt that ran but could not be recorded, or whose secrets could
/// not be kept off the disk.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttemptError {
    /// `outcome.json` could not be written.
    #[error("the attempt ended as {} but its outcome could not be recorded: {message}", outcome.outcome.name())]
    NotRecorded {
        /// The file.
        path: PathBuf,
        /// The kind of the I/O error (`StorageFull` for a full disk).
        kind: Option<std::io::ErrorKind>,
        /// The error, naming the file.
        message: String,
        /// What the attempt did, as it would have been recorded.
        outcome: Box<AttemptOutcome>,
    },
    /// A file could not be redacted, replaced, removed or emptied.
    #[error(transparent)]
    SecretLeft(#[from] ScrubError),
    /// The blocking pool dropped the work (the runtime is shutting down).
    #[error("the attempt was abandoned: {0}")]
    Abandoned(String),
}

impl AttemptError {
    /// Whether the disk (or a quota) is full: the environment's fault, the
    /// attempt can be run again once there is space.
    pub fn is_no_space(&self) -> bool {
        matches!(
            self,
            AttemptError::NotRecorded {
                kind: Some(std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded),
                ..
            }
        )
    }

    /// The outcome to report: `failed`, with this error as its error.
    pub fn as_outcome(&self, backend: &str) -> AttemptOutcome {
        let mut outcome = match self {
            AttemptError::NotRecorded { outcome, .. } => (**outcome).clone(),
            _ => empty_outcome(backend),
        };
        outcome.outcome = OutcomeClass::Failed;
        outcome.error = Some(self.to_string());
        outcome
    }
}

/// `outcome.json`: the outcome, and notes when there are any.
#[derive(Serialize)]
struct OutcomeFile<'a> {
    #[serde(flatten)]
    outcome: &'a AttemptOutcome,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
}

impl CliBackend {
    /// A backend from its resolved configuration.
    pub fn new(backend: ResolvedBackend) -> Self {
        CliBackend {
            isolate_home: backend.spec.isolate_home.unwrap_or(false),
            backend,
            extra_secret_names: Vec::new(),
            deny_read: Vec::new(),
            pass_env: Vec::new(),
            sandbox_required: false,
            network: crate::config::NetworkMode::Open,
            allow_hosts: Vec::new(),
            ignored: Vec::new(),
            governor: None,
            leak_timeout: DEFAULT_LEAK_TIMEOUT,
            rewrite: crate::redact::rewrite_atomic,
            record: write_atomic,
        }
    }

    /// A backend as `config` runs it: its secret names redacted, its leak
    /// timeout, and its home isolated when the backend (else `[limits]`)
    /// says so. Every attempt is built here: a task's (`run_task`) and
    /// `wavecrew backend try`'s alike.
    pub fn configured(backend: ResolvedBackend, config: &crate::config::Config) -> Self {
        let isolate_home = backend
            .spec
            .isolate_home
            .unwrap_or(config.limits.isolate_home);
        let mut configured = CliBackend::new(backend)
            .with_secret_names(config.redact.env.clone())
            .with_leak_timeout(config.leak_timeout())
            .isolating_home(isolate_home);
        configured.deny_read.clone_from(&config.isolation.deny_read);
        configured.pass_env.clone_from(&config.isolation.pass_env);
        configured.sandbox_required =
            config.isolation.sandbox == crate::config::SandboxMode::Required;
        configured.network = config.isolation.network;
        configured
            .allow_hosts
            .clone_from(&config.isolation.allow_hosts);
        configured
    }

    /// Count the stream's usage live against the governor's budgets; an
    /// attempt that crosses its task budget (or the run budget under
    /// `--hard-budget`) is stopped like a timeout (`budget_exceeded`).
    #[must_use]
    pub fn governed_by(mut self, governor: crate::governor::Governor) -> Self {
        self.governor = Some(governor);
        self
    }

    /// Leave files under `folder` out of `files_changed` (wavecrew's own
    /// session files; the attempt's folder is always left out).
    #[must_use]
    pub fn ignoring(mut self, folder: impl Into<PathBuf>) -> Self {
        self.ignored.push(folder.into());
        self
    }

    /// More variable names whose values are secret (`[redact] env`).
    #[must_use]
    pub fn with_secret_names(mut self, names: Vec<String>) -> Self {
        self.extra_secret_names = names;
        self
    }

    /// Give every attempt a private `HOME` and `TMPDIR`.
    #[must_use]
    pub fn isolating_home(mut self, on: bool) -> Self {
        self.isolate_home = on;
        self
    }

    /// How long pipes held open by a process that left the agent's group
    /// are read after the agent has ended (`[limits] leak_timeout_ms`).
    #[must_use]
    pub fn with_leak_timeout(mut self, timeout: Duration) -> Self {
        self.leak_timeout = timeout;
        self
    }

    /// The resolved configuration.
    pub fn config(&self) -> &ResolvedBackend {
        &self.backend
    }

    fn env_file_vars(&self, cwd: &Path) -> Result<Vec<(String, String)>, String> {
        let Some(file) = &self.backend.spec.env_file else {
            return Ok(Vec::new());
        };
        let path = cwd.join(file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("env file {}: {e}", path.display()))?;
        Ok(parse_env_file(&text).into_iter().collect())
    }

    /// Run one attempt to its end: `Ok` with its outcome (recorded in
    /// `outcome.json`), or an error when it could not be recorded or a
    /// secret could not be kept off the disk.
    pub async fn attempt(&self, request: &AttemptRequest) -> Result<Attempt, AttemptError> {
        let started = Instant::now();
        let this = self.clone();
        let req = request.clone();
        let prepared = blocking(move || this.prepare(req, started)).await?;
        let mut prepared = match prepared {
            Ok(p) => p,
            Err(outcome) => {
                return Ok(Attempt {
                    outcome: *outcome,
                    notes: Vec::new(),
                    unredacted: Vec::new(),
                });
            }
        };
        let supervised = self.run_agent(&mut prepared).await;
        let this = self.clone();
        blocking(move || this.finish(prepared, &supervised)).await?
    }

    /// Before the agent (blocking): folders, environment, the prompt and
    /// argv files, the `git status` snapshot.
    fn prepare(
        &self,
        mut request: AttemptRequest,
        started: Instant,
    ) -> Result<Prepared, Box<AttemptOutcome>> {
        let name = &self.backend.name;
        let dir = request.attempt_dir.clone();
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return Err(unavailable(
                name,
                format!("cannot create {}: {e}", dir.display()),
                started,
            ));
        }
        let file_vars = self
            .env_file_vars(&request.cwd)
            .map_err(|e| unavailable(name, e, started))?;
        request.env.extend(file_vars.iter().cloned());
        let mut notes = Vec::new();
        if self.isolate_home {
            let home = dir.join("home");
            let tmp = dir.join("tmp");
            for d in [home.join(".codex"), tmp.clone()] {
                if let Err(e) = std::fs::create_dir_all(&d) {
                    return Err(unavailable(
                        name,
                        format!("cannot create {}: {e}", d.display()),
                        started,
                    ));
                }
            }
            request
                .env
                .insert("HOME".into(), home.to_string_lossy().into_owned());
            request.env.insert(
                "CODEX_HOME".into(),
                home.join(".codex").to_string_lossy().into_owned(),
            );
            request
                .env
                .insert("TMPDIR".into(), tmp.to_string_lossy().into_owned());
        }
        // Read before the private copy's variables are set: its own login
        // is the user's file the copy links to, not the link.
        let (hidden, withheld) = if request.sandbox.is_some() {
            self.kept_from(&request)
        } else {
            (Vec::new(), Vec::new())
        };
        let writable = match request.sandbox.clone() {
            Some(paths) => Some(
                self.confined_to(paths, &mut request, &dir)
                    .map_err(|e| unavailable(name, e, started))?,
            ),
            None => None,
        };
        let redactor = Redactor::from_env(
            self.backend
                .spec
                .env
                .iter()
                .chain(request.env.iter())
                .map(|(k, v)| (k.as_str(), v.as_str())),
            &self.extra_secret_names,
        );
        let mut invocation = adapter::build(&self.backend, &request);
        invocation.spawn.leak_timeout = self.leak_timeout;
        invocation.spawn.writable = writable;
        invocation.spawn.hidden = hidden;
        invocation.spawn.required = self.sandbox_required;
        invocation.spawn.env_remove.extend(withheld);
        if invocation.spawn.writable.is_some() {
            invocation.spawn.network = self
                .agent_network(&request, &invocation.spawn)
                .map_err(|e| unavailable(name, e, started))?;
        }
        if let Err(e) = write_atomic(
            &dir.join("prompt.md"),
            redactor.redact(&request.prompt).as_bytes(),
        ) {
            notes.push(format!("cannot record the prompt: {e}"));
        }
        if let Some(file) = &invocation.prompt_file {
            // The agent reads this one: it must hold the real prompt.
            if let Err(e) = write_atomic(file, request.prompt.as_bytes()) {
                return Err(unavailable(
                    name,
                    format!("cannot write the prompt file: {e}"),
                    started,
                ));
            }
        }
        let argv = json!({
            "backend": name,
            "kind": self.backend.kind.name(),
            "program": invocation.spawn.program,
            "args": invocation.spawn.args,
            "cwd": invocation.spawn.cwd,
            "resume": request.resume_session,
        });
        if let Err(e) = write_atomic(
            &dir.join("argv.json"),
            redactor
                .redact(&serde_json::to_string_pretty(&argv).unwrap_or_default())
                .as_bytes(),
        ) {
            notes.push(format!("cannot record the command line: {e}"));
        }
        let before = match &request.git {
            Some(git) if request.clean_before => Some(Snapshot::clean_pinned(git)),
            Some(git) => Snapshot::take_pinned(git),
            None => Snapshot::take(&request.cwd),
        };
        Ok(Prepared {
            request,
            dir,
            redactor,
            invocation,
            before,
            notes,
            state: Arc::new(Mutex::new(StreamState::default())),
        })
    }

    /// The variables the agent gets besides wavecrew's own: its backend's
    /// configured ones, then the attempt's.
    fn agent_env(&self, request: &AttemptRequest) -> std::collections::BTreeMap<String, String> {
        let mut env = self.backend.spec.env.clone();
        env.extend(request.env.clone());
        env
    }

    /// What a confined agent is kept from: the credential files it may
    /// not read (all but its own backend's login) and the variables of
    /// wavecrew's environment it does not get
    /// ([`crate::confine::withheld_env`]).
    fn kept_from(&self, request: &AttemptRequest) -> (Vec<PathBuf>, Vec<String>) {
        let agent_env = self.agent_env(request);
        let env = |k: &str| agent_env.get(k).cloned();
        let home = crate::confine::home_dir(env("HOME").as_deref());
        let kind = self.backend.kind;
        let own = crate::private_config::own_login_files(kind, &env, home.as_deref());
        // Under the agent's home and under wavecrew's: a home of its own
        // (`isolate_home`, a configured `HOME`) does not make the user's
        // keys readable by their absolute path.
        let mut hidden = crate::confine::hidden(&self.deny_read, home.as_deref(), &own);
        let ours = crate::confine::home_dir(None);
        if ours != home {
            hidden.extend(crate::confine::hidden(
                &self.deny_read,
                ours.as_deref(),
                &own,
            ));
        }
        let withheld = crate::confine::withheld_env(
            &self.pass_env,
            crate::private_config::own_login_vars(kind),
            &|k| agent_env.contains_key(k),
        );
        (hidden, withheld)
    }

    /// The network of a confined agent (`[isolation] network`): for an
    /// allowlist, its backend's hosts ([`crate::config::Kind::api_hosts`]),
    /// the base URLs in the variables it gets and in its Codex
    /// configuration, `[isolation] allow_hosts` and the task's.
    fn agent_network(
        &self,
        request: &AttemptRequest,
        spawn: &crate::supervise::Spawn,
    ) -> Result<crate::supervise::AgentNetwork, String> {
        use crate::config::NetworkMode;
        use crate::supervise::AgentNetwork;
        match self.network {
            NetworkMode::Open => return Ok(AgentNetwork::Open),
            NetworkMode::None => return Ok(AgentNetwork::None),
            NetworkMode::Allowlist => {}
        }
        // `vars_os`: a variable that is not UTF-8 is left out, never a panic.
        let mut vars: std::collections::BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        for k in &spawn.env_remove {
            vars.remove(k);
        }
        vars.extend(spawn.env.clone());
        // Codex's base URL from the user's own configuration folder (its
        // `wavecrew.toml` env, else wavecrew's environment, else
        // `~/.codex`), never from the agent's private copy or an
        // attempt's home: the agent may write those, and what it writes
        // must not widen its network.
        let codex_config = (self.backend.kind == crate::config::Kind::Codex)
            .then(|| {
                self.backend
                    .spec
                    .env
                    .get("CODEX_HOME")
                    .map(PathBuf::from)
                    .or_else(|| std::env::var_os("CODEX_HOME").map(PathBuf::from))
                    .or_else(|| crate::confine::home_dir(None).map(|h| h.join(".codex")))
            })
            .flatten()
            .and_then(|dir| std::fs::read_to_string(dir.join("config.toml")).ok());
        let mut hosts: Vec<String> = self
            .backend
            .kind
            .api_hosts()
            .iter()
            .map(|h| (*h).to_owned())
            .collect();
        hosts.extend(crate::egress::base_url_hosts(
            vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &codex_config.into_iter().collect::<Vec<_>>(),
        ));
        hosts.extend(self.allow_hosts.iter().cloned());
        hosts.extend(request.allow_hosts.iter().cloned());
        crate::egress::AllowList::parse(&hosts)
            .map(AgentNetwork::Allowlist)
            .map_err(|e| format!("the task's allow_hosts: {e}"))
    }

    /// Where a confined agent may write: `paths` (the task's), its CLI's
    /// private copy of its configuration ([`crate::private_config`]) or
    /// its data folders, `/dev`, and its temporary folder: `TMPDIR` when
    /// its environment sets one, or `tmp/` in the attempt's folder, which
    /// becomes its `TMPDIR`.
    fn confined_to(
        &self,
        mut paths: Vec<PathBuf>,
        request: &mut AttemptRequest,
        dir: &Path,
    ) -> Result<Vec<PathBuf>, String> {
        let agent_env = self.agent_env(request);
        let env = |k: &str| agent_env.get(k).cloned();
        let home = crate::confine::home_dir(env("HOME").as_deref());
        let kind = self.backend.kind;
        if self.isolate_home {
            // Its home is the attempt's own: nothing there is the user's.
            paths.extend(home);
        } else {
            let copy = private_config_folder(dir, &self.backend.name, kind);
            match crate::private_config::prepare(kind, &copy, &env, home.as_deref()) {
                Ok(Some(private)) => {
                    request.env.extend(private.env);
                    paths.extend(private.writable);
                }
                Ok(None) => {
                    paths.extend(crate::private_config::data_folders(kind, home.as_deref()));
                }
                Err(e) => {
                    return Err(format!(
                        "cannot make the agent's copy of its {} configuration in {}: {e}",
                        kind.name(),
                        copy.display()
                    ));
                }
            }
        }
        let tmp = if let Some(tmp) = env("TMPDIR") {
            PathBuf::from(tmp)
        } else {
            let tmp = dir.join("tmp");
            let _ = std::fs::create_dir_all(&tmp);
            for k in ["TMPDIR", "TMP", "TEMP"] {
                request
                    .env
                    .insert(k.into(), tmp.to_string_lossy().into_owned());
            }
            tmp
        };
        paths.push(tmp);
        paths.push(PathBuf::from("/dev"));
        Ok(paths)
    }

    /// The agent under supervision; `session.json` is written by a
    /// blocking writer as soon as the stream names the session.
    async fn run_agent(&self, prepared: &mut Prepared) -> Supervised {
        let format = prepared.invocation.format;
        let session_file = prepared.dir.join("session.json");
        let backend_name = self.backend.name.clone();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        // Writes one at a time, in order, each on the blocking pool; holds
        // no thread while the agent is quiet.
        let writer = tokio::spawn(async move {
            let mut failure = None;
            while let Some(id) = rx.recv().await {
                let (file, backend) = (session_file.clone(), backend_name.clone());
                let written = tokio::task::spawn_blocking(move || {
                    write_json_atomic(&file, &json!({"backend": backend, "session_id": id}))
                        .map_err(|e| e.to_string())
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
                if let Err(e) = written {
                    failure = Some(format!(
                        "cannot record the session id (no resume possible): {e}"
                    ));
                }
            }
            failure
        });
        let sink = Arc::clone(&prepared.state);
        let governor = self.governor.clone();
        let governed_backend = self.backend.name.clone();
        let task_id = prepared.request.task_id.clone();
        let mut last_check = Instant::now();
        let supervised = supervise_until(
            &prepared.invocation.spawn,
            &prepared.request.limits,
            Some(&prepared.dir.join("stdout.log")),
            Some(&prepared.dir.join("stderr.log")),
            move |line| {
                let format = format?;
                let mut st = sink
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let had = st.session_id.clone();
                let spent_before = st.spent();
                st.apply_line(format, line);
                if st.session_id != had
                    && let Some(id) = &st.session_id
                {
                    let _ = tx.send(id.clone());
                }
                let governor = governor.as_ref()?;
                let delta = usage_delta(&spent_before, &st.spent());
                drop(st);
                if delta == Usage::default() {
                    // The run budget crossed by another attempt under
                    // `--hard-budget`: looked at about once a second.
                    if last_check.elapsed() < Duration::from_secs(1) {
                        return None;
                    }
                    last_check = Instant::now();
                    return off_runtime(|| governor.check_budget(&task_id))
                        .ok()
                        .flatten();
                }
                match off_runtime(|| governor.record_usage(&governed_backend, &task_id, &delta)) {
                    Ok(stop) => stop,
                    Err(e) => {
                        tracing::warn!("governor: {e}");
                        None
                    }
                }
            },
        )
        .await;
        // The callback (and with it the sender) is gone: the writer ends.
        match writer.await {
            Ok(Some(note)) => prepared.notes.push(note),
            Ok(None) => {}
            Err(e) => prepared
                .notes
                .push(format!("recording the session id failed: {e}")),
        }
        supervised
    }

    /// After the agent (blocking): files changed, the outcome, redaction,
    /// `outcome.json`.
    fn finish(&self, prepared: Prepared, supervised: &Supervised) -> Result<Attempt, AttemptError> {
        let Prepared {
            request,
            dir,
            redactor,
            invocation,
            before,
            mut notes,
            state,
        } = prepared;
        let name = self.backend.name.clone();
        // A confined agent's temporary folder in the attempt's folder
        // (see `confined_to`) goes with what it left there.
        let scratch = dir.join("tmp");
        if request.sandbox.is_some()
            && !self.isolate_home
            && request.env.get("TMPDIR").map(PathBuf::from) == Some(scratch.clone())
        {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        // Outside git before the attempt: no snapshot after it either
        // (its file events say what changed).
        let after = before.as_ref().and_then(Snapshot::again);
        let stream = state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(leak) = &supervised.leak {
            notes.push(leak.note());
        }
        let class = classify_with_exit_hints(
            self.backend.kind,
            &supervised.ended,
            &stream,
            &supervised.stderr_tail,
        );
        let exit_code = match &supervised.ended {
            Ended::Exited { code, .. } => *code,
            _ => None,
        };
        let mut ignored = self.ignored.clone();
        ignored.push(dir.clone());
        let files_changed = match (&before, &after) {
            (Some(b), Some(a)) => {
                let root = b.root().to_owned();
                let kept = b
                    .changed_since(a)
                    .into_iter()
                    .filter(|p| !is_ignored(&root.join(p), &ignored))
                    .collect();
                narrow_to_claimed(
                    relative_to(kept, &root, &request.cwd),
                    &stream,
                    &request.cwd,
                )
            }
            _ => stream.files.clone(),
        };
        let final_message = stream.final_message.clone().or_else(|| {
            // Plain-text CLIs: the last non-empty line of stdout.
            invocation.format.is_none().then(|| {
                supervised
                    .stdout_tail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_owned)
            })?
        });
        let error = error_text(&class, supervised, &stream, &request, exit_code);
        let mut outcome = AttemptOutcome {
            backend: name,
            outcome: class,
            exit_code,
            session_id: stream.session_id.clone(),
            final_message: final_message.map(|m| redactor.redact(&m)),
            error: error.map(|m| redactor.redact(&m)),
            usage: stream
                .usage
                .or_else(|| (!stream.live_usage.is_empty()).then(|| stream.spent())),
            files_changed,
            duration_ms: u64::try_from(supervised.duration.as_millis()).unwrap_or(u64::MAX),
            tree_after: after.as_ref().map(|a| Box::new(a.status().clone())),
            network: supervised.network.clone(),
        };

        // Redaction: a file that cannot be redacted never keeps the secret,
        // and the attempt fails saying so.
        let mut unredacted = Vec::new();
        let mut scrub_errors = Vec::new();
        for file in CAPTURED_FILES {
            if let Err(e) = redactor.scrub_file_with(&dir.join(file), &self.rewrite) {
                if e.secret_may_remain() {
                    return Err(e.into());
                }
                scrub_errors.push(redactor.redact(&e.to_string()));
                unredacted.push(e.path().to_owned());
            }
        }
        if !scrub_errors.is_empty() {
            let why = scrub_errors.join("; ");
            outcome.error = Some(match outcome.error.take() {
                Some(before) => format!("{why} (the agent's own error: {before})"),
                None => why,
            });
            outcome.outcome = OutcomeClass::Failed;
            notes.extend(scrub_errors);
        }

        let path = dir.join("outcome.json");
        let mut bytes = serde_json::to_vec_pretty(&OutcomeFile {
            outcome: &outcome,
            notes: &notes,
        })
        .unwrap_or_default();
        bytes.push(b'\n');
        let bytes = redactor.redact(&String::from_utf8_lossy(&bytes));
        if let Err(e) = (self.record)(&path, bytes.as_bytes()) {
            let (kind, why) = match &e {
                CoreError::Io(e) => (Some(e.source.kind()), e.source.to_string()),
                other => (None, other.to_string()),
            };
            return Err(AttemptError::NotRecorded {
                message: format!("cannot write `{}`: {why}", path.display()),
                path,
                kind,
                outcome: Box::new(outcome),
            });
        }
        tracing::info!(
            task = %request.task_id,
            backend = %outcome.backend,
            outcome = ?outcome.outcome,
            exit_code = ?outcome.exit_code,
            files_changed = outcome.files_changed.len(),
            notes = notes.len(),
            "attempt ended"
        );
        Ok(Attempt {
            outcome,
            notes,
            unredacted,
        })
    }
}

/// What [`CliBackend::prepare`] hands to the agent's run and to
/// [`CliBackend::finish`].
struct Prepared {
    request: AttemptRequest,
    dir: PathBuf,
    redactor: Redactor,
    invocation: Invocation,
    before: Option<Snapshot>,
    notes: Vec<String>,
    state: Arc<Mutex<StreamState>>,
}

/// Run blocking work (file writes with fsync, `git`) off the async
/// runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AttemptError> {
    wavecrew_sys::process::try_blocking(work)
        .await
        .map_err(|e| AttemptError::Abandoned(e.0))
}

/// Why an attempt that did not succeed failed, in one text.
fn error_text(
    class: &OutcomeClass,
    supervised: &Supervised,
    stream: &StreamState,
    request: &AttemptRequest,
    exit_code: Option<i32>,
) -> Option<String> {
    match (class, &supervised.ended) {
        (OutcomeClass::Success, _) => None,
        (_, Ended::SpawnFailed(why) | Ended::Stopped(why)) => Some(why.clone()),
        (_, Ended::TimedOut) => Some(format!(
            "timed out after {} s; the process group was killed",
            request.limits.wall.as_secs()
        )),
        (_, Ended::Stalled) => Some(format!(
            "no output for {} s; the process group was killed",
            request.limits.stall.as_secs()
        )),
        (OutcomeClass::PermissionDenied, _) => {
            Some(format!("tools were denied: {}", stream.denied.join(", ")))
        }
        _ => stream
            .fatal_error
            .as_ref()
            .map(|(m, _)| m.clone())
            .or_else(|| last_lines(&supervised.stderr_tail, 5))
            .or_else(|| exit_code.map(|c| format!("exit code {c}"))),
    }
}

fn empty_outcome(name: &str) -> AttemptOutcome {
    AttemptOutcome {
        backend: name.to_owned(),
        outcome: OutcomeClass::Failed,
        exit_code: None,
        session_id: None,
        final_message: None,
        error: None,
        usage: None,
        files_changed: Vec::new(),
        duration_ms: 0,
        tree_after: None,
        network: None,
    }
}

/// Where the private copy of a CLI's configuration lives for the attempt
/// in `attempt_dir`: beside the task's attempts (`cli-config/<backend>/`),
/// shared by them so that a resumed session finds its transcript. A
/// backend name that is not a plain word is replaced by its kind's.
fn private_config_folder(attempt_dir: &Path, backend: &str, kind: Kind) -> PathBuf {
    let plain = !backend.is_empty()
        && backend
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let name = if plain { backend } else { kind.name() };
    attempt_dir
        .parent()
        .unwrap_or(attempt_dir)
        .join("cli-config")
        .join(name)
}

fn unavailable(name: &str, message: String, started: Instant) -> Box<AttemptOutcome> {
    Box::new(AttemptOutcome {
        outcome: OutcomeClass::Unavailable,
        error: Some(message),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        ..empty_outcome(name)
    })
}

#[async_trait::async_trait]
impl Backend for CliBackend {
    fn name(&self) -> &str {
        &self.backend.name
    }

    /// [`CliBackend::attempt`]; an [`AttemptError`] becomes a `failed`
    /// outcome whose error says why.
    async fn run(&self, request: &AttemptRequest) -> AttemptOutcome {
        match self.attempt(request).await {
            Ok(attempt) => attempt.outcome,
            Err(e) => e.as_outcome(&self.backend.name),
        }
    }
}

/// Paths relative to the work tree root, made relative to `cwd` when
/// `cwd` is a folder inside it (files outside keep their root-relative
/// path with a `../`-free form: the root-relative one).
fn relative_to(paths: Vec<String>, root: &Path, cwd: &Path) -> Vec<String> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let Ok(prefix) = cwd.strip_prefix(&root) else {
        return paths;
    };
    if prefix.as_os_str().is_empty() {
        return paths;
    }
    let prefix = format!("{}/", prefix.to_string_lossy());
    paths
        .into_iter()
        .map(|p| p.strip_prefix(&prefix).map_or(p.clone(), str::to_owned))
        .collect()
}

/// Tools that can change any file (a shell): after one of them, the
/// stream cannot say which files the agent changed.
const SHELL_TOOLS: [&str; 6] = [
    "Bash",
    "exec_command",
    "shell",
    "shell_command",
    "run_shell_command",
    "command_execution",
];

/// When the stream names every file the agent wrote (file tools only, no
/// shell), keep only those of the `git status` diff: another attempt
/// running in the same work tree at the same time does not lend its files
/// to this one. After a shell tool, the whole diff is the evidence.
pub fn narrow_to_claimed(changed: Vec<String>, stream: &StreamState, cwd: &Path) -> Vec<String> {
    let shell = stream
        .tool_calls
        .iter()
        .any(|(name, _)| SHELL_TOOLS.contains(&name.as_str()));
    if shell || stream.files.is_empty() {
        return changed;
    }
    let cwd_abs = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    let claimed: Vec<String> = stream
        .files
        .iter()
        .map(|f| {
            let p = Path::new(f);
            let rel = if p.is_absolute() {
                p.strip_prefix(&cwd_abs)
                    .or_else(|_| p.strip_prefix(cwd))
                    .map_or_else(|_| p.to_path_buf(), Path::to_path_buf)
            } else {
                p.to_path_buf()
            };
            rel.to_string_lossy().trim_start_matches("./").to_owned()
        })
        .collect();
    changed
        .into_iter()
        .filter(|f| claimed.contains(f))
        .collect()
}

fn is_ignored(path: &Path, ignored: &[PathBuf]) -> bool {
    let canon = |p: &Path| {
        // The file may be gone (deleted); canonicalize its folder instead.
        p.canonicalize().unwrap_or_else(|_| {
            p.parent().and_then(|d| d.canonicalize().ok()).map_or_else(
                || p.to_owned(),
                |d| d.join(p.file_name().unwrap_or_default()),
            )
        })
    };
    let path = canon(path);
    ignored.iter().any(|i| path.starts_with(canon(i)))
}

/// What `after` adds to `before` (never negative).
fn usage_delta(before: &Usage, after: &Usage) -> Usage {
    Usage {
        input_tokens: after.input_tokens.saturating_sub(before.input_tokens),
        output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
        cached_input_tokens: after
            .cached_input_tokens
            .saturating_sub(before.cached_input_tokens),
        cost_usd: None,
    }
}

/// Run the governor's locked, fsync'd file work where it blocks no async
/// task: on a multi-thread runtime the worker thread hands its other tasks
/// away first (`block_in_place`); elsewhere it simply runs.
pub(crate) fn off_runtime<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

fn last_lines(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    Some(lines[lines.len().saturating_sub(n)..].join("\n"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use wavecrew_core::{Limits, Mode};

    use super::*;
    use crate::config::Config;

    const SECRET: &str = "sk-live-7a1f09c3e2";

    /// A command backend that prints the secret on stdout and stderr.
    fn leaky_backend(dir: &Path) -> CliBackend {
        let text = format!(
            "[backends.leaky]\nkind = \"command\"\n\
             argv = [\"sh\", \"-c\", \"echo out $MOCK_API_KEY; echo err $MOCK_API_KEY >&2\"]\n\
             env = {{ MOCK_API_KEY = \"{SECRET}\" }}\n"
        );
        let config = Config::parse(&text, &dir.join("wavecrew.toml")).unwrap();
        CliBackend::new(config.backend("leaky").unwrap())
    }

    fn request(cwd: &Path, attempt_dir: &Path) -> AttemptRequest {
        AttemptRequest {
            task_id: "IMPL-001".into(),
            prompt: "print the key".into(),
            cwd: cwd.to_owned(),
            git: None,
            clean_before: false,
            mode: Mode::Write,
            attempt_dir: attempt_dir.to_owned(),
            limits: Limits {
                wall: Duration::from_secs(60),
                stall: Duration::from_secs(60),
                grace: Duration::from_millis(200),
                ..Limits::default()
            },
            resume_session: None,
            env: BTreeMap::new(),
            sandbox: None,
            allow_hosts: Vec::new(),
        }
    }

    fn every_file(dir: &Path) -> String {
        let mut text = String::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            text.push_str(&String::from_utf8_lossy(
                &std::fs::read(e.path()).unwrap_or_default(),
            ));
        }
        text
    }

    /// A rewrite that fails for the redacted text (as on a full disk), and
    /// works for anything else (the notice).
    fn refuse_redacted(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        if String::from_utf8_lossy(bytes).contains("[REDACTED") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "No space left on device",
            ));
        }
        crate::redact::rewrite_atomic(path, bytes)
    }

    fn refuse_everything(_: &Path, _: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::other("read-only file system"))
    }

    #[tokio::test]
    async fn a_file_that_cannot_be_redacted_fails_the_attempt_without_the_secret() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("attempt");
        let mut backend = leaky_backend(tmp.path());
        backend.rewrite = refuse_redacted;
        let attempt = backend.attempt(&request(tmp.path(), &dir)).await.unwrap();
        assert_eq!(
            attempt.outcome.outcome,
            OutcomeClass::Failed,
            "{attempt:#?}"
        );
        let error = attempt.outcome.error.clone().unwrap();
        assert!(
            error.contains("stdout.log` could not be redacted (No space left on device)"),
            "{error}"
        );
        assert!(error.contains("replaced by a notice"), "{error}");
        assert_eq!(
            attempt.unredacted,
            [dir.join("stdout.log"), dir.join("stderr.log")]
        );
        let on_disk = every_file(&dir);
        assert!(!on_disk.contains(SECRET), "{on_disk}");
        assert!(
            std::fs::read_to_string(dir.join("stdout.log"))
                .unwrap()
                .contains("could not be redacted")
        );
        let recorded: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("outcome.json")).unwrap()).unwrap();
        assert_eq!(recorded["outcome"]["class"], "failed");
        assert_eq!(recorded["notes"].as_array().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_file_that_cannot_be_rewritten_at_all_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("attempt");
        let mut backend = leaky_backend(tmp.path());
        backend.rewrite = refuse_everything;
        let outcome = backend.run(&request(tmp.path(), &dir)).await;
        assert_eq!(outcome.outcome, OutcomeClass::Failed, "{outcome:#?}");
        assert!(!dir.join("stdout.log").exists());
        assert!(!dir.join("stderr.log").exists());
        assert!(!every_file(&dir).contains(SECRET));
    }

    fn disk_full(path: &Path, _: &[u8]) -> wavecrew_core::Result<()> {
        Err(CoreError::io(
            "writing",
            path,
            std::io::Error::new(std::io::ErrorKind::StorageFull, "No space left on device"),
        ))
    }

    #[tokio::test]
    async fn an_outcome_that_cannot_be_recorded_is_an_error_of_the_attempt() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("attempt");
        let mut backend = leaky_backend(tmp.path());
        backend.record = disk_full;
        let e = backend
            .attempt(&request(tmp.path(), &dir))
            .await
            .unwrap_err();
        assert!(e.is_no_space(), "{e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with("the attempt ended as success but its outcome could not be recorded"),
            "{text}"
        );
        assert!(
            text.ends_with(&format!(
                "cannot write `{}`: No space left on device",
                dir.join("outcome.json").display()
            )),
            "{text}"
        );
        assert!(!text.contains(SECRET));
        // Through the port, it is a failed attempt that says why.
        let outcome = backend.run(&request(tmp.path(), &dir)).await;
        assert_eq!(outcome.outcome, OutcomeClass::Failed);
        assert!(
            outcome
                .error
                .as_deref()
                .unwrap()
                .contains("No space left on device")
        );
        assert!(!dir.join("outcome.json").exists());
    }

    /// Threads that wrote files, by the recording hooks below.
    static WRITERS: Mutex<Vec<std::thread::ThreadId>> = Mutex::new(Vec::new());

    fn recording_rewrite(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        WRITERS.lock().unwrap().push(std::thread::current().id());
        crate::redact::rewrite_atomic(path, bytes)
    }

    fn recording_record(path: &Path, bytes: &[u8]) -> wavecrew_core::Result<()> {
        WRITERS.lock().unwrap().push(std::thread::current().id());
        write_atomic(path, bytes)
    }

    #[test]
    fn files_are_written_off_the_runtime_threads() {
        // A current-thread runtime: its only worker is this thread, so a
        // write made on it would block every other task of the runtime.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("attempt");
        let mut backend = leaky_backend(tmp.path());
        backend.rewrite = recording_rewrite;
        backend.record = recording_record;
        let attempt = runtime
            .block_on(backend.attempt(&request(tmp.path(), &dir)))
            .unwrap();
        assert_eq!(attempt.outcome.outcome, OutcomeClass::Success);
        let writers = WRITERS.lock().unwrap().clone();
        // stdout.log and stderr.log redacted, outcome.json recorded.
        assert_eq!(writers.len(), 3, "{writers:?}");
        let runtime_thread = std::thread::current().id();
        assert!(writers.iter().all(|w| *w != runtime_thread), "{writers:?}");
    }
}
