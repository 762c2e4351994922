//! One attempt through an agent CLI: the [`Backend`] implementation.
//!
//! [`CliBackend::run`] snapshots `git status`, writes the prompt, spawns the
//! CLI under supervision, parses its stream as it arrives (recording the
//! native session id in `session.json` the moment it appears, so an
//! interrupted attempt can be resumed), classifies the outcome, redacts
//! secrets from every file it wrote and records `outcome.json`.
//!
//! The attempt folder (`attempts/<task>/<n>/`):
//!
//! | file | what |
//! |---|---|
//! | `prompt.md` | the prompt sent |
//! | `argv.json` | program, arguments, folder (redacted) |
//! | `stdout.log`, `stderr.log` | everything the CLI printed (redacted) |
//! | `session.json` | `{"backend", "session_id"}` as soon as the stream names it |
//! | `outcome.json` | the [`AttemptOutcome`] |

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::json;
use wavecrew_core::fsutil::{write_atomic, write_json_atomic};
use wavecrew_core::{AttemptOutcome, AttemptRequest, Backend, OutcomeClass, Usage};

use crate::adapter::{self, parse_env_file};
use crate::config::ResolvedBackend;
use crate::events::StreamState;
use crate::gitdiff::Snapshot;
use crate::outcome::classify_with_exit_hints;
use crate::redact::Redactor;
use crate::supervise::{Ended, supervise_until};

/// An agent CLI (or command, or the scripted agent) as a [`Backend`].
#[derive(Debug, Clone)]
pub struct CliBackend {
    backend: ResolvedBackend,
    extra_secret_names: Vec<String>,
    isolate_home: bool,
    ignored: Vec<std::path::PathBuf>,
    governor: Option<crate::governor::Governor>,
}

impl CliBackend {
    /// A backend from its resolved configuration.
    pub fn new(backend: ResolvedBackend) -> Self {
        CliBackend {
            isolate_home: backend.spec.isolate_home.unwrap_or(false),
            backend,
            extra_secret_names: Vec::new(),
            ignored: Vec::new(),
            governor: None,
        }
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
    pub fn ignoring(mut self, folder: impl Into<std::path::PathBuf>) -> Self {
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
}

fn unavailable(name: &str, message: String, started: std::time::Instant) -> AttemptOutcome {
    AttemptOutcome {
        backend: name.to_owned(),
        outcome: OutcomeClass::Unavailable,
        exit_code: None,
        session_id: None,
        final_message: None,
        error: Some(message),
        usage: None,
        files_changed: Vec::new(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

#[async_trait::async_trait]
impl Backend for CliBackend {
    fn name(&self) -> &str {
        &self.backend.name
    }

    async fn run(&self, request: &AttemptRequest) -> AttemptOutcome {
        let started = std::time::Instant::now();
        let name = self.backend.name.clone();
        let dir = &request.attempt_dir;
        if let Err(e) = std::fs::create_dir_all(dir) {
            return unavailable(
                &name,
                format!("cannot create {}: {e}", dir.display()),
                started,
            );
        }
        let file_vars = match self.env_file_vars(&request.cwd) {
            Ok(v) => v,
            Err(e) => return unavailable(&name, e, started),
        };
        let mut request = request.clone();
        request.env.extend(file_vars.iter().cloned());
        if self.isolate_home {
            let home = dir.join("home");
            let tmp = dir.join("tmp");
            let _ = std::fs::create_dir_all(home.join(".codex"));
            let _ = std::fs::create_dir_all(&tmp);
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
        let redactor = Redactor::from_env(
            self.backend
                .spec
                .env
                .iter()
                .chain(request.env.iter())
                .map(|(k, v)| (k.as_str(), v.as_str())),
            &self.extra_secret_names,
        );
        let invocation = adapter::build(&self.backend, &request);
        let _ = write_atomic(
            &dir.join("prompt.md"),
            redactor.redact(&request.prompt).as_bytes(),
        );
        if let Some(file) = &invocation.prompt_file {
            // The agent reads this one: it must hold the real prompt.
            if let Err(e) = write_atomic(file, request.prompt.as_bytes()) {
                return unavailable(&name, format!("cannot write the prompt file: {e}"), started);
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
        let _ = write_atomic(
            &dir.join("argv.json"),
            redactor
                .redact(&serde_json::to_string_pretty(&argv).unwrap_or_default())
                .as_bytes(),
        );

        let before = Snapshot::take(&request.cwd);
        let state = Arc::new(Mutex::new(StreamState::default()));
        let format = invocation.format;
        let session_file = dir.join("session.json");
        let sink = Arc::clone(&state);
        let backend_name = name.clone();
        let governor = self.governor.clone();
        let task_id = request.task_id.clone();
        let mut last_check = std::time::Instant::now();
        let supervised = supervise_until(
            &invocation.spawn,
            &request.limits,
            Some(&dir.join("stdout.log")),
            Some(&dir.join("stderr.log")),
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
                    let _ = write_json_atomic(
                        &session_file,
                        &json!({"backend": backend_name, "session_id": id}),
                    );
                }
                let governor = governor.as_ref()?;
                let delta = usage_delta(&spent_before, &st.spent());
                drop(st);
                if delta == Usage::default() {
                    // The run budget crossed by another attempt under
                    // `--hard-budget`: looked at about once a second.
                    if last_check.elapsed() < std::time::Duration::from_secs(1) {
                        return None;
                    }
                    last_check = std::time::Instant::now();
                    return governor.check_budget(&task_id).ok().flatten();
                }
                match governor.record_usage(&backend_name, &task_id, &delta) {
                    Ok(stop) => stop,
                    Err(e) => {
                        tracing::warn!("governor: {e}");
                        None
                    }
                }
            },
        )
        .await;
        let after = Snapshot::take(&request.cwd);
        let stream = state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();

        let outcome = classify_with_exit_hints(
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
            format.is_none().then(|| {
                supervised
                    .stdout_tail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_owned)
            })?
        });
        let error = match (&outcome, &supervised.ended) {
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
        };
        let outcome = AttemptOutcome {
            backend: name.clone(),
            outcome,
            exit_code,
            session_id: stream.session_id.clone(),
            final_message: final_message.map(|m| redactor.redact(&m)),
            error: error.map(|m| redactor.redact(&m)),
            usage: stream
                .usage
                .or_else(|| (!stream.live_usage.is_empty()).then(|| stream.spent())),
            files_changed,
            duration_ms: u64::try_from(supervised.duration.as_millis()).unwrap_or(u64::MAX),
        };
        tracing::info!(
            task = %request.task_id,
            backend = %name,
            outcome = ?outcome.outcome,
            exit_code = ?outcome.exit_code,
            files_changed = outcome.files_changed.len(),
            "attempt ended"
        );
        for file in ["stdout.log", "stderr.log", "session.json"] {
            let _ = redactor.redact_file(&dir.join(file));
        }
        let _ = write_atomic(
            &dir.join("outcome.json"),
            redactor
                .redact(&serde_json::to_string_pretty(&outcome).unwrap_or_default())
                .as_bytes(),
        );
        outcome
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

fn is_ignored(path: &Path, ignored: &[std::path::PathBuf]) -> bool {
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

fn last_lines(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    Some(lines[lines.len().saturating_sub(n)..].join("\n"))
}
