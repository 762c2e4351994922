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

use rand::Rng;
use serde::Serialize;
use wavecrew_core::{AttemptOutcome, AttemptRequest, Mode, OutcomeClass, TaskId};

use crate::adapter::supports_resume;
use crate::config::Config;
use crate::routing::{NextStep, Switch, next_step, route};
use crate::runner::{AttemptError, CliBackend};

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
        outcome: AttemptOutcome,
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
    /// What it may do.
    pub mode: Mode,
    /// The folder holding `attempts/` (the session folder).
    pub session_dir: &'a Path,
    /// The prompt of attempt `n` given the previous error, if any.
    pub prompt: &'a (dyn Fn(u32, Option<&str>) -> String + Sync),
    /// Called for every event.
    pub on_event: &'a (dyn Fn(&AttemptEvent) + Sync),
}

/// The attempts folder of a task.
pub fn task_attempts_dir(session_dir: &Path, task_id: &TaskId) -> PathBuf {
    session_dir.join("attempts").join(task_id.as_str())
}

/// Numbers of the attempt folders that exist, sorted.
pub fn existing_attempts(dir: &Path) -> Vec<u32> {
    let mut n: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    n.sort_unstable();
    n
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
        let backend = CliBackend::new(resolved.clone())
            .ignoring(spec.session_dir)
            .with_secret_names(config.redact.env.clone())
            .with_leak_timeout(config.leak_timeout())
            .isolating_home(
                resolved
                    .spec
                    .isolate_home
                    .unwrap_or(config.limits.isolate_home),
            );
        let mut retries = 0;
        loop {
            attempt_no += 1;
            let resume_session = resume
                .take()
                .filter(|(b, _)| b == &resolved.name && supports_resume(resolved.kind))
                .map(|(_, id)| id);
            let prompt = (spec.prompt)(attempt_no, previous_error.as_deref());
            let request = AttemptRequest {
                task_id: spec.task_id.as_str().to_owned(),
                prompt: if resume_session.is_some() {
                    format!(
                        "Your previous run of this task was interrupted. Continue it and finish the task.\n\n{prompt}"
                    )
                } else {
                    prompt
                },
                cwd: spec.cwd.to_owned(),
                mode: spec.mode,
                attempt_dir: dir.join(attempt_no.to_string()),
                limits: config.limits_for(&resolved),
                resume_session: resume_session.clone(),
                env: std::collections::BTreeMap::new(),
            };
            (spec.on_event)(&AttemptEvent::Started {
                attempt: attempt_no,
                backend: resolved.name.clone(),
                resume: resume_session,
            });
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
            (spec.on_event)(&AttemptEvent::Finished {
                attempt: attempt_no,
                outcome: outcome.clone(),
            });
            let jitter: f64 = rand::rng().random();
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
