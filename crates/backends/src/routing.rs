//! Which backend runs a task, and what happens after an attempt.
//!
//! * [`resolve_executor`]: seed 000's three levels (task → plan → auto),
//!   with a per-run override on top; [`resolve_execution_method`]: seed
//!   003's `execution_method` table. Each [`Decision`] carries its reason.
//! * [`probe`]: is the backend's program there, and which version (cached
//!   for the process's lifetime, five minutes at most).
//! * [`route`]: the chosen backend, or the first available one along the
//!   fallback chain, with every switch reported.
//! * [`next_step`]: retry, fall back or stop, by outcome class.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use wavecrew_core::{AttemptOutcome, Limits, OutcomeClass};

use crate::config::{Config, ResolvedBackend, RoutingConfig};
use crate::supervise::{Ended, Spawn, supervise};

/// Where a routing decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// `--backend` on the command line.
    Run,
    /// The task's `metadata.executor` (or `execution_method`).
    Task,
    /// The plan's `Execution Backend:`.
    Plan,
    /// The automatic rule.
    Auto,
}

/// A routing decision and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The name as written (`agent`, `Codex`).
    pub requested: String,
    /// The backend it resolves to (after `[aliases]`).
    pub backend: String,
    /// Which level decided.
    pub level: Level,
    /// Why, in words.
    pub reason: String,
}

/// The seed-000 "simple task" rule: shorter than 200 characters and naming
/// neither refactor nor architecture (case-insensitive; the seed matched
/// only lower case, so "Refactor the parser" counted as simple).
pub fn is_simple(description: &str) -> bool {
    let lower = description.to_lowercase();
    description.chars().count() < 200
        && !lower.contains("refactor")
        && !lower.contains("architecture")
}

/// Seed 000's backend resolution, with the run's `--backend` on top:
/// run → task `metadata.executor` → plan `Execution Backend:` → auto
/// (simple → `agent`, else `codex`).
pub fn resolve_executor(
    config: &Config,
    run_override: Option<&str>,
    task_executor: Option<&str>,
    plan_backend: Option<&str>,
    description: &str,
) -> Decision {
    let decide = |requested: &str, level: Level, reason: String| Decision {
        requested: requested.to_owned(),
        backend: config.canonical_name(requested),
        level,
        reason,
    };
    if let Some(name) = run_override.filter(|s| !s.trim().is_empty()) {
        return decide(name, Level::Run, format!("--backend {name}"));
    }
    if let Some(name) = task_executor.filter(|s| !s.trim().is_empty()) {
        return decide(
            name,
            Level::Task,
            format!("task metadata.executor = {name}"),
        );
    }
    if let Some(name) = plan_backend.filter(|s| !s.trim().is_empty()) {
        return decide(
            name,
            Level::Plan,
            format!("plan: Execution Backend: {name}"),
        );
    }
    let n = description.chars().count();
    if is_simple(description) {
        decide(
            "agent",
            Level::Auto,
            format!("auto: simple task ({n} chars < 200, no refactor/architecture)"),
        )
    } else {
        let why = if n >= 200 {
            format!("{n} chars ≥ 200")
        } else {
            "names refactor/architecture".into()
        };
        decide("codex", Level::Auto, format!("auto: complex task ({why})"))
    }
}

/// Seed 003's `execution_method` table: `Agent`, `Codex`, `Gemini` as
/// named; `Auto` (or nothing) → `agent` for at most 3 solution tasks, else
/// `codex`.
pub fn resolve_execution_method(
    config: &Config,
    run_override: Option<&str>,
    method: Option<&str>,
    task_count: usize,
) -> Decision {
    let decide = |requested: &str, level: Level, reason: String| Decision {
        requested: requested.to_owned(),
        backend: config.canonical_name(requested),
        level,
        reason,
    };
    if let Some(name) = run_override.filter(|s| !s.trim().is_empty()) {
        return decide(name, Level::Run, format!("--backend {name}"));
    }
    match method.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) if !m.eq_ignore_ascii_case("auto") => {
            decide(m, Level::Task, format!("execution_method: {m}"))
        }
        _ if task_count <= 3 => decide(
            "agent",
            Level::Auto,
            format!("execution_method: Auto, {task_count} task(s) ≤ 3"),
        ),
        _ => decide(
            "codex",
            Level::Auto,
            format!("execution_method: Auto, {task_count} tasks > 3"),
        ),
    }
}

/// Whether a backend can run, and which version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// The backend's name.
    pub backend: String,
    /// Its adapter.
    pub kind: String,
    /// The program (as configured).
    pub program: String,
    /// Where it was found.
    pub path: Option<PathBuf>,
    /// Whether it can run.
    pub available: bool,
    /// The first line of `--version`.
    pub version: Option<String>,
    /// Why not, when it cannot.
    pub reason: Option<String>,
}

const PROBE_TTL: Duration = Duration::from_secs(300);

fn probe_cache() -> &'static Mutex<HashMap<String, (Instant, Probe)>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<String, (Instant, Probe)>>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Find a program: a path as given (relative to `cwd`), or on `PATH`.
pub fn find_program(program: &str, cwd: &std::path::Path) -> Option<PathBuf> {
    if program.contains('/') {
        let p = cwd.join(program);
        return p.is_file().then_some(p);
    }
    which::which(program).ok()
}

/// Probe a backend (cached by backend and program).
pub async fn probe(backend: &ResolvedBackend, cwd: &std::path::Path) -> Probe {
    let program = crate::adapter::program_of(backend).unwrap_or_default();
    let key = format!("{}\u{0}{}\u{0}{}", backend.name, program, cwd.display());
    if let Some((at, hit)) = probe_cache()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
        && at.elapsed() < PROBE_TTL
    {
        return hit.clone();
    }
    let mut result = Probe {
        backend: backend.name.clone(),
        kind: backend.kind.name().to_owned(),
        program: program.clone(),
        path: None,
        available: false,
        version: None,
        reason: None,
    };
    // `which` reads folders: off the async runtime's threads.
    let found = {
        let (program, cwd) = (program.clone(), cwd.to_owned());
        tokio::task::spawn_blocking(move || find_program(&program, &cwd))
            .await
            .ok()
            .flatten()
    };
    match found {
        None => {
            result.reason = Some(if program.contains('/') {
                format!("`{program}` does not exist")
            } else {
                format!("`{program}` is not on PATH")
            });
        }
        Some(path) if backend.kind == crate::config::Kind::Command => {
            // A command need not understand `--version` (and may do
            // something else with it): it is available when it is there,
            // and probing it costs no process.
            result.path = Some(path);
            result.available = true;
        }
        Some(path) => {
            result.path = Some(path.clone());
            let mut spawn = Spawn::new(&path, &["--version"], cwd);
            spawn.env = backend.spec.env.clone();
            let limits = Limits {
                wall: Duration::from_secs(20),
                stall: Duration::from_secs(20),
                grace: Duration::from_secs(1),
                ..Limits::default()
            };
            let ran = supervise(&spawn, &limits, None, None, |_| {}).await;
            match ran.ended {
                Ended::Exited { code: Some(0), .. } => {
                    result.available = true;
                    result.version = ran
                        .stdout_tail
                        .lines()
                        .chain(ran.stderr_tail.lines())
                        .map(str::trim)
                        .find(|l| !l.is_empty())
                        .map(str::to_owned);
                }
                Ended::Exited { code, .. } => {
                    result.reason = Some(format!(
                        "`{program} --version` failed (exit code {code:?}): {}",
                        ran.stderr_tail.lines().last().unwrap_or("").trim()
                    ));
                }
                Ended::TimedOut | Ended::Stalled => {
                    result.reason = Some(format!("`{program} --version` did not answer in 20 s"));
                }
                Ended::SpawnFailed(why) | Ended::Stopped(why) => {
                    result.reason = Some(format!("cannot start `{program}`: {why}"));
                }
            }
        }
    }
    probe_cache()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key, (Instant::now(), result.clone()));
    result
}

/// A switch to another backend, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Switch {
    /// The backend left.
    pub from: String,
    /// The backend taken.
    pub to: String,
    /// Why.
    pub reason: String,
}

/// The outcome of routing.
#[derive(Debug, Clone)]
pub struct Route {
    /// The backend to use, when one is available.
    pub backend: Option<ResolvedBackend>,
    /// The switches made on the way (empty when the first choice is there).
    pub switches: Vec<Switch>,
    /// Why no backend is available, when none is.
    pub failure: Option<String>,
}

/// Route `name`: itself when available, else along its fallback chain.
/// `skip` names backends already tried.
pub async fn route(config: &Config, name: &str, cwd: &std::path::Path, skip: &[String]) -> Route {
    let mut switches = Vec::new();
    let Some(first) = config.backend(name) else {
        return Route {
            backend: None,
            switches,
            failure: Some(format!(
                "unknown backend `{name}`; known: {}",
                config.names().join(", ")
            )),
        };
    };
    let mut candidates = vec![first.name.clone()];
    candidates.extend(config.fallback_after(&first));
    let mut previous: Option<(String, String)> = None;
    let mut reasons = Vec::new();
    for candidate in candidates {
        if skip.contains(&candidate) {
            continue;
        }
        let Some(backend) = config.backend(&candidate) else {
            continue;
        };
        if let Some((from, reason)) = previous.take() {
            switches.push(Switch {
                from,
                to: backend.name.clone(),
                reason,
            });
        }
        let p = probe(&backend, cwd).await;
        if p.available {
            return Route {
                backend: Some(backend),
                switches,
                failure: None,
            };
        }
        let reason = p.reason.unwrap_or_else(|| "unavailable".into());
        reasons.push(format!("{}: {reason}", backend.name));
        previous = Some((backend.name.clone(), reason));
    }
    Route {
        backend: None,
        switches,
        failure: Some(format!("no backend available ({})", reasons.join("; "))),
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum NextStep {
    /// It succeeded.
    Done,
    /// Try the same backend again after `delay`.
    Retry {
        /// How long to wait.
        delay: Duration,
        /// Put the error in the next prompt.
        error_in_prompt: bool,
    },
    /// Try the next backend of the chain.
    Fallback {
        /// Why.
        reason: String,
    },
    /// Stop: a person has to look.
    GiveUp {
        /// Why.
        reason: String,
    },
}

/// Exponential backoff from `routing.backoff_ms`, capped, with ±25 % jitter.
pub fn backoff(policy: &RoutingConfig, retry: u32, jitter: f64) -> Duration {
    let base = policy.backoff_ms.saturating_mul(1u64 << retry.min(16));
    let capped = base.min(policy.max_backoff_ms);
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let jittered = (capped as f64 * (0.75 + 0.5 * jitter.clamp(0.0, 1.0))) as u64;
    Duration::from_millis(jittered)
}

/// Decide by outcome class. `retries_done` counts retries of this backend
/// so far; `jitter` is a number in `[0, 1)`.
pub fn next_step(
    outcome: &AttemptOutcome,
    retries_done: u32,
    policy: &RoutingConfig,
    jitter: f64,
) -> NextStep {
    let exhausted = retries_done >= policy.max_retries;
    match &outcome.outcome {
        OutcomeClass::Success => NextStep::Done,
        OutcomeClass::Unavailable => NextStep::Fallback {
            reason: format!(
                "{} unavailable: {}",
                outcome.backend,
                outcome.error.as_deref().unwrap_or("cannot start")
            ),
        },
        OutcomeClass::AuthError => NextStep::Fallback {
            reason: format!(
                "{} refused the credentials (not retried): {}",
                outcome.backend,
                outcome.error.as_deref().unwrap_or("auth error")
            ),
        },
        OutcomeClass::RateLimited { retry_after_secs } if !exhausted => NextStep::Retry {
            delay: retry_after_secs.map_or_else(
                || backoff(policy, retries_done, jitter),
                |s| Duration::from_secs(s) + backoff(policy, 0, jitter) / 4,
            ),
            error_in_prompt: false,
        },
        OutcomeClass::RateLimited { .. } => NextStep::Fallback {
            reason: format!(
                "{} still rate limited after {retries_done} retries",
                outcome.backend
            ),
        },
        OutcomeClass::BudgetExceeded => NextStep::GiveUp {
            reason: format!(
                "{} stopped: {}",
                outcome.backend,
                outcome.error.as_deref().unwrap_or("a budget was crossed")
            ),
        },
        OutcomeClass::PermissionDenied => NextStep::GiveUp {
            reason: format!(
                "{}: {} (allow the tools in wavecrew.toml: permission_mode)",
                outcome.backend,
                outcome.error.as_deref().unwrap_or("tools were denied")
            ),
        },
        OutcomeClass::Failed | OutcomeClass::TimedOut | OutcomeClass::Stalled if !exhausted => {
            NextStep::Retry {
                delay: backoff(policy, retries_done, jitter) / 4,
                error_in_prompt: true,
            }
        }
        OutcomeClass::Failed | OutcomeClass::TimedOut | OutcomeClass::Stalled => NextStep::GiveUp {
            reason: format!(
                "{} {} after {retries_done} retries: {}",
                outcome.backend,
                outcome.outcome.name(),
                outcome.error.as_deref().unwrap_or("no error text")
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters() {
        let p = RoutingConfig::default();
        assert_eq!(backoff(&p, 0, 0.5), Duration::from_secs(2));
        assert_eq!(backoff(&p, 1, 0.5), Duration::from_secs(4));
        assert_eq!(backoff(&p, 10, 0.5), Duration::from_mins(1));
        assert_eq!(backoff(&p, 0, 0.0), Duration::from_millis(1500));
        assert_eq!(backoff(&p, 0, 1.0), Duration::from_millis(2500));
    }
}
