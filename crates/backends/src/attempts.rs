//! All the attempts of one task: routing, retries, fallback and resume.
//!
//! [`run_task`] routes the requested backend (falling back along the chain
//! when it is unavailable), runs attempts in `attempts/<task>/<n>/`
//! (numbered after any earlier ones, so nothing is overwritten), and after
//! each one asks [`next_step`] what to do: retry with a backoff (the error
//! in the next prompt, at most `routing.max_retries` times), fall back to
//! the next backend, or stop. An attempt that was interrupted (its folder
//! holds `session.json` but no `outcome.json`) is resumed through the CLI's
//! native resume instead of starting over.
//!
//! Faults of the environment stop the task at once, without retries: an
//! attempt whose files could not be redacted, or whose `outcome.json`
//! could not be written ([`TaskRun::failure`] says why; [`TaskRun::error`]
//! gives the [`AttemptError`] of an attempt that could not be recorded).

use std::path::{Path, PathBuf};

use serde::Serialize;
use wavecrew_core::{AttemptOutcome, AttemptRequest, Mode, OutcomeClass, TaskId};
use wavecrew_sys::git::WorkTreeGit;

use crate::adapter::supports_resume;
use crate::config::{Config, ResolvedBackend};
use crate::governor::{Admission, Governor, Permit, WaitReason, iso};
use crate::routing::{NextStep, Switch, next_step, route};
use crate::runner::{AttemptError, CliBackend, off_runtime};

/// Something that happened while running a task's attempts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AttemptEvent {
    /// An attempt starts.
    Started {
        /// Its number.
        attempt: u32,
        /// The backend.
        backend: String,
        /// The native session it resumes, if any.
        resume: Option<String>,
    },
    /// An attempt ended.
    Finished {
        /// Its number.
        attempt: u32,
        /// What it did.
        outcome: Box<AttemptOutcome>,
    },
    /// Another backend takes over.
    Switched(Switch),
    /// The same backend is tried again.
    Retrying {
        /// The next attempt's number.
        attempt: u32,
        /// Milliseconds of backoff first.
        delay_ms: u64,
    },
}

/// One finished attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptRecord {
    /// Its number (the folder name).
    pub attempt: u32,
    /// Its folder.
    pub dir: PathBuf,
    /// What it did.
    pub outcome: AttemptOutcome,
    /// Faults around the agent (an escaped process holding the pipes, a
    /// file that could not be redacted or written), one line each.
    pub notes: Vec<String>,
    /// The error of an attempt that could not be recorded (its
    /// `outcome.json` could not be written, say on a full disk:
    /// [`AttemptError::is_no_space`]); it stopped the task.
    #[serde(skip)]
    pub error: Option<AttemptError>,
}

/// What all the attempts of a task came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskRun {
    /// Every attempt, in order.
    pub attempts: Vec<AttemptRecord>,
    /// Backend switches.
    pub switches: Vec<Switch>,
    /// Whether the last attempt succeeded.
    pub success: bool,
    /// Why it stopped, when it did not succeed.
    pub failure: Option<String>,
}

impl TaskRun {
    /// The last attempt's outcome.
    pub fn last(&self) -> Option<&AttemptOutcome> {
        self.attempts.last().map(|a| &a.outcome)
    }

    /// The error of the last attempt, when it could not be recorded (then
    /// it stopped the task; [`AttemptError::is_no_space`] tells a full
    /// disk, the environment's fault).
    pub fn error(&self) -> Option<&AttemptError> {
        self.attempts.last()?.error.as_ref()
    }

    /// Files changed by any attempt, sorted.
    pub fn files_changed(&self) -> Vec<String> {
        let mut files: Vec<String> = self
            .attempts
            .iter()
            .flat_map(|a| a.outcome.files_changed.iter().cloned())
            .collect();
        files.sort();
        files.dedup();
        files
    }
}

/// What to run.
pub struct TaskAttempts<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The backend asked for (any name: `agent`, `codex`, `mine`).
    pub backend: &'a str,
    /// The task.
    pub task_id: &'a TaskId,
    /// Where the agent works.
    pub cwd: &'a Path,
    /// The git of the work tree `cwd` is in, when the caller located it
    /// already (`None`: looked up where needed).
    pub git: Option<&'a WorkTreeGit>,
    /// The work tree is known to have no change before the first attempt
    /// (see [`AttemptRequest::clean_before`]); later attempts follow one
    /// that may have changed it, and git is asked before them.
    pub clean_before: bool,
    /// What it may do.
    pub mode: Mode,
    /// The folder holding `attempts/` (the session folder).
    pub session_dir: &'a Path,
    /// The prompt of attempt `n` given the previous error, if any.
    pub prompt: &'a (dyn Fn(u32, Option<&str>) -> String + Sync),
    /// Called for every event.
    pub on_event: &'a (dyn Fn(&AttemptEvent) + Sync),
    /// Hosts the task's agent may reach besides its backend's and
    /// `[isolation] allow_hosts` (see [`AttemptRequest::allow_hosts`]).
    pub allow_hosts: &'a [String],
}

/// The attempts folder of a task.
pub fn task_attempts_dir(session_dir: &Path, task_id: &TaskId) -> PathBuf {
    wavecrew_core::SessionLayout::new(session_dir).attempts(task_id.as_str())
}

/// Numbers of the attempt folders that exist, sorted.
pub fn existing_attempts(dir: &Path) -> Vec<u32> {
    wavecrew_core::layout::attempt_numbers(dir)
}

/// The native session of an interrupted attempt: `(backend, session id)`.
pub fn interrupted_session(dir: &Path) -> Option<(String, String)> {
    let last = *existing_attempts(dir).last()?;
    let attempt = dir.join(last.to_string());
    if attempt.join("outcome.json").exists() {
        return None;
    }
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(attempt.join("session.json")).ok()?).ok()?;
    Some((
        v.get("backend")?.as_str()?.to_owned(),
        v.get("session_id")?.as_str()?.to_owned(),
    ))
}

/// The number the next attempt kept under `id` gets (`attempts/<id>/<n>/`).
pub fn next_attempt(session_dir: &Path, id: &TaskId) -> u32 {
    existing_attempts(&task_attempts_dir(session_dir, id))
        .last()
        .copied()
        .unwrap_or(0)
        + 1
}

/// What an attempt that resumes an interrupted agent session is told first.
const RESUME_NOTE: &str =
    "Your previous run of this task was interrupted. Continue it and finish the task.";

fn with_resume_note(prompt: String, resumes: bool) -> String {
    if resumes {
        format!("{RESUME_NOTE}\n\n{prompt}")
    } else {
        prompt
    }
}

/// The prompt the next attempt of a task would be sent.
#[derive(Debug, Clone)]
pub struct NextPrompt {
    /// The attempt's number.
    pub attempt: u32,
    /// The backend it would go to (before any fallback for availability).
    pub backend: String,
    /// The text, as `prompt.md` would hold it.
    pub text: String,
    /// What the budget would cut.
    pub fitted: crate::prompts::budget::Fitted,
}

/// The prompt the next attempt of `task_id` through `backend` would get,
/// from a `marked` rendering (the role's first prompt): the same budget
/// and resume note as [`run_task`], nothing written and nothing run.
pub fn next_prompt(
    config: &Config,
    backend: &str,
    task_id: &TaskId,
    session_dir: &Path,
    marked: &str,
) -> NextPrompt {
    let dir = task_attempts_dir(session_dir, task_id);
    let attempt = next_attempt(session_dir, task_id);
    let name = config.canonical_name(backend);
    let resolved = config.backend(&name);
    let budget = resolved
        .as_ref()
        .map_or(config.limits.prompt_max_chars, |r| config.prompt_budget(r));
    let fitted = crate::prompts::budget::fit(marked, budget, &dir.join(attempt.to_string()));
    let resumes = interrupted_session(&dir).is_some_and(|(b, _)| {
        b == name && resolved.as_ref().is_some_and(|r| supports_resume(r.kind))
    });
    NextPrompt {
        attempt,
        backend: name,
        text: with_resume_note(fitted.text.clone(), resumes),
        fitted,
    }
}

/// Run the attempts of one task to success or to a stop.
pub async fn run_task(spec: &TaskAttempts<'_>) -> TaskRun {
    let config = spec.config;
    let dir = task_attempts_dir(spec.session_dir, spec.task_id);
    let mut run = TaskRun {
        attempts: Vec::new(),
        switches: Vec::new(),
        success: false,
        failure: None,
    };
    let mut tried: Vec<String> = Vec::new();
    let mut requested = config.canonical_name(spec.backend);
    let listing = dir.clone();
    let (mut resume, mut attempt_no) = match tokio::task::spawn_blocking(move || {
        (
            interrupted_session(&listing),
            existing_attempts(&listing).last().copied().unwrap_or(0),
        )
    })
    .await
    {
        Ok(found) => found,
        Err(e) => {
            run.failure = Some(format!("listing {}: {e}", dir.display()));
            return run;
        }
    };
    let mut previous_error: Option<String> = None;
    // Whether an attempt of this run started (the tree may have changed).
    let mut ran_one = false;
    let governor = Governor::for_session(config, spec.session_dir);
    loop {
        let routed = route(config, &requested, spec.cwd, &tried).await;
        for s in &routed.switches {
            (spec.on_event)(&AttemptEvent::Switched(s.clone()));
        }
        run.switches.extend(routed.switches.iter().cloned());
        let Some(resolved) = routed.backend else {
            run.failure = routed.failure;
            return run;
        };
        tried.extend(routed.switches.iter().map(|s| s.from.clone()));
        let backend = CliBackend::configured(resolved.clone(), config)
            .governed_by(governor.clone())
            .ignoring(spec.session_dir);
        let mut retries = 0;
        loop {
            attempt_no += 1;
            let resume_session = resume
                .take()
                .filter(|(b, _)| b == &resolved.name && supports_resume(resolved.kind))
                .map(|(_, id)| id);
            let attempt_dir = dir.join(attempt_no.to_string());
            let admitted;
            let permit = match admit(
                &governor,
                config,
                &resolved,
                spec.task_id,
                attempt_no,
                &tried,
            )
            .await
            {
                Gate::Go(permit, span) => {
                    // A start that waited says so at once (a killed run
                    // keeps it); every span is completed at the release.
                    if span.get("waited_ms").and_then(serde_json::Value::as_u64) != Some(0) {
                        let _ = off_runtime(|| {
                            wavecrew_core::fsutil::write_json_atomic(
                                &attempt_dir.join(GOVERNOR_SPAN),
                                &span,
                            )
                        });
                    }
                    admitted = span;
                    Slot {
                        governor: &governor,
                        permit: Some(permit),
                    }
                }
                Gate::Fallback(to, why) => {
                    attempt_no -= 1;
                    tried.push(resolved.name.clone());
                    off_runtime(|| {
                        governor.announce_fallback(
                            spec.task_id.as_str(),
                            &resolved.name,
                            &to,
                            &why,
                        );
                    });
                    let switch = Switch {
                        from: resolved.name.clone(),
                        to: to.clone(),
                        reason: why,
                    };
                    (spec.on_event)(&AttemptEvent::Switched(switch.clone()));
                    run.switches.push(switch);
                    requested = to;
                    resume = None;
                    break;
                }
                Gate::Stop(why) => {
                    run.failure = Some(why);
                    return run;
                }
            };
            let marked = (spec.prompt)(attempt_no, previous_error.as_deref());
            let fitted =
                crate::prompts::budget::fit(&marked, config.prompt_budget(&resolved), &attempt_dir);
            // A prompt that names a file of its full text is only sent
            // once that file exists.
            if let Err(e) =
                off_runtime(|| crate::prompts::budget::write_cuts(&attempt_dir, &fitted))
            {
                run.failure = Some(format!(
                    "cannot record what the prompt budget cut in {}: {e}",
                    attempt_dir.display()
                ));
                return run;
            }
            let prompt = fitted.text;
            let request = AttemptRequest {
                task_id: spec.task_id.as_str().to_owned(),
                prompt: with_resume_note(prompt, resume_session.is_some()),
                cwd: spec.cwd.to_owned(),
                git: spec.git.cloned(),
                clean_before: spec.clean_before && !ran_one,
                mode: spec.mode,
                attempt_dir: attempt_dir.clone(),
                limits: config.limits_for(&resolved),
                resume_session: resume_session.clone(),
                env: std::collections::BTreeMap::new(),
                sandbox: crate::confine::writable(config, spec.cwd, spec.git, spec.session_dir),
                allow_hosts: spec.allow_hosts.to_vec(),
            };
            (spec.on_event)(&AttemptEvent::Started {
                attempt: attempt_no,
                backend: resolved.name.clone(),
                resume: resume_session,
            });
            ran_one = true;
            let (outcome, notes, error, fault) = match backend.attempt(&request).await {
                Ok(a) => {
                    let fault = (!a.unredacted.is_empty())
                        .then(|| a.outcome.error.clone().unwrap_or_default());
                    (a.outcome, a.notes, None, fault)
                }
                Err(e) => {
                    let outcome = e.as_outcome(&resolved.name);
                    let fault = e.to_string();
                    (outcome, Vec::new(), Some(e), Some(fault))
                }
            };
            // Pause before the slot is given back, so no waiting worker
            // slips in between.
            if let OutcomeClass::RateLimited { retry_after_secs } = &outcome.outcome
                && let Err(e) = off_runtime(|| {
                    governor.pause(&resolved.name, spec.task_id.as_str(), *retry_after_secs)
                })
            {
                tracing::warn!("governor: {e}");
            }
            permit.release(outcome.outcome.is_success());
            off_runtime(|| record_release(&attempt_dir, &governor, admitted));
            (spec.on_event)(&AttemptEvent::Finished {
                attempt: attempt_no,
                outcome: Box::new(outcome.clone()),
            });
            let jitter: f64 = fastrand::f64();
            let step = next_step(&outcome, retries, &config.routing, jitter);
            previous_error = outcome.error.clone().or_else(|| {
                (outcome.outcome != OutcomeClass::Success)
                    .then(|| format!("the attempt ended as {}", outcome.outcome.name()))
            });
            run.attempts.push(AttemptRecord {
                attempt: attempt_no,
                dir: request.attempt_dir.clone(),
                outcome,
                notes,
                error,
            });
            if let Some(fault) = fault {
                // The environment is at fault: another attempt would meet
                // the same disk.
                run.failure = Some(format!("attempt {attempt_no}: {fault}"));
                return run;
            }
            match step {
                NextStep::Done => {
                    run.success = true;
                    return run;
                }
                NextStep::Retry {
                    delay,
                    error_in_prompt,
                } => {
                    retries += 1;
                    if !error_in_prompt {
                        previous_error = None;
                    }
                    // A rate limit paused the backend in the governor: the
                    // next admission waits for the reset, for every worker.
                    let delay = if run
                        .last()
                        .is_some_and(|o| matches!(o.outcome, OutcomeClass::RateLimited { .. }))
                    {
                        std::time::Duration::ZERO
                    } else {
                        delay
                    };
                    (spec.on_event)(&AttemptEvent::Retrying {
                        attempt: attempt_no + 1,
                        delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    });
                    tokio::time::sleep(delay).await;
                }
                NextStep::Fallback { reason } => {
                    tried.push(resolved.name.clone());
                    let next = config
                        .fallback_after(&resolved)
                        .into_iter()
                        .find(|n| !tried.contains(n));
                    let Some(next) = next else {
                        run.failure = Some(format!("{reason}; no fallback backend left"));
                        return run;
                    };
                    let switch = Switch {
                        from: resolved.name.clone(),
                        to: next.clone(),
                        reason,
                    };
                    (spec.on_event)(&AttemptEvent::Switched(switch.clone()));
                    run.switches.push(switch);
                    requested = next;
                    break;
                }
                NextStep::GiveUp { reason } => {
                    run.failure = Some(reason);
                    return run;
                }
            }
        }
    }
}

/// The governor's record in an attempt folder: when the attempt was let
/// start, how long it waited and why, when it gave its slot back.
pub const GOVERNOR_SPAN: &str = "governor.json";

/// A granted start: the slot goes back when the attempt ends, and also
/// when the future running it is dropped (a cancelled task never keeps a
/// slot of a live process).
struct Slot<'a> {
    governor: &'a Governor,
    permit: Option<Permit>,
}

impl Slot<'_> {
    fn release(mut self, success: bool) {
        if let Some(p) = self.permit.take() {
            off_runtime(|| self.governor.release(&p, success));
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.permit.take() {
            off_runtime(|| self.governor.release(&p, false));
        }
    }
}

/// Forgets the wait of a task whose admission future is dropped.
struct WaitGuard<'a> {
    governor: &'a Governor,
    task: &'a str,
    armed: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            off_runtime(|| self.governor.forget_wait(self.task));
        }
    }
}

/// What the governor said about a start.
enum Gate {
    /// Start, with the span to record.
    Go(Permit, serde_json::Value),
    /// The backend is paused and a fallback is configured: go there.
    Fallback(String, String),
    /// A budget is spent (or the state cannot be read): no attempt.
    Stop(String),
}

/// Ask the governor until it lets the attempt start; wait (visibly: the
/// governor records the wait on the bus and in its state) meanwhile.
async fn admit(
    governor: &Governor,
    config: &Config,
    backend: &ResolvedBackend,
    task: &TaskId,
    attempt: u32,
    tried: &[String],
) -> Gate {
    let asked = governor.now_ms();
    let mut reasons: Vec<String> = Vec::new();
    let mut guard = WaitGuard {
        governor,
        task: task.as_str(),
        armed: false,
    };
    loop {
        let answer = off_runtime(|| governor.try_admit(&backend.name, task.as_str(), attempt));
        guard.armed = matches!(answer, Ok(Admission::Wait { .. }));
        match answer {
            Ok(Admission::Granted(permit)) => {
                // Let in at the first ask: no wait, whatever the clock
                // moved during the admission itself.
                let waited = if reasons.is_empty() {
                    0
                } else {
                    permit.granted_ms.saturating_sub(asked)
                };
                let span = serde_json::json!({
                    "backend": backend.name,
                    "asked_at": iso(asked),
                    "asked_ms": asked,
                    "admitted_at": iso(permit.granted_ms),
                    "admitted_ms": permit.granted_ms,
                    "waited_ms": waited,
                    "waited_for": reasons,
                });
                return Gate::Go(permit, span);
            }
            Ok(Admission::Refused(verdict)) => return Gate::Stop(verdict),
            Ok(Admission::Wait { reason, until_ms }) => {
                if let WaitReason::Paused { .. } = &reason
                    && let Some(to) = pause_fallback(governor, config, backend, tried)
                {
                    off_runtime(|| governor.forget_wait(task.as_str()));
                    return Gate::Fallback(
                        to,
                        format!("{} is {}", backend.name, reason.describe()),
                    );
                }
                let name = reason.name().to_owned();
                if !reasons.contains(&name) {
                    tracing::info!(
                        task = task.as_str(),
                        backend = backend.name.as_str(),
                        "waiting: {}",
                        reason.describe()
                    );
                    reasons.push(name);
                }
                governor.nap(until_ms).await;
            }
            Err(e) => return Gate::Stop(format!("the governor's state: {e}")),
        }
    }
}

/// Where a task waiting for a paused backend goes instead: the first
/// backend of the paused backend's own `fallback` list (configured in its
/// `[backends.<name>]` table) that was not tried and is not paused itself.
/// Without such a list the task waits for the reset.
fn pause_fallback(
    governor: &Governor,
    config: &Config,
    backend: &ResolvedBackend,
    tried: &[String],
) -> Option<String> {
    backend.spec.fallback.as_ref()?;
    config
        .fallback_after(backend)
        .into_iter()
        .find(|n| !tried.contains(n) && governor.paused(n).is_none())
}

/// Write the attempt's governor span: its admission with the release time.
fn record_release(attempt_dir: &Path, governor: &Governor, admitted: serde_json::Value) {
    let path = attempt_dir.join(GOVERNOR_SPAN);
    let serde_json::Value::Object(mut span) = admitted else {
        return;
    };
    let now = governor.now_ms();
    span.insert("released_at".into(), iso(now).into());
    span.insert("released_ms".into(), now.into());
    let _ = wavecrew_core::fsutil::write_json_atomic(&path, &span);
}
