//! The governor: one set of rate limits, pauses and budgets for every
//! attempt of every worker of a session.
//!
//! Every attempt asks [`Governor::try_admit`] before it starts and gives
//! its slot back with [`Governor::release`]; the stream's usage events go
//! to [`Governor::record_usage`] as they arrive. What it enforces, per
//! backend (`[backends.<name>]` of `wavecrew.toml`): `max_parallel`
//! attempts at once, `rpm` starts and `tpm` tokens in any 60-second window
//! ([`window`]), and the pause after a rate limit ([`Governor::pause`]),
//! which lasts until the reset the provider named (or an exponential,
//! capped, jittered back-off) for every worker and survives a restart.
//! Budgets (`[budget]`): tokens and US dollars per task and per run, priced
//! from `[prices."<model>"]`; a model without a price is counted in tokens
//! and reported as unpriced, never guessed.
//!
//! The state sits behind [`store::GovernorStore`]: a flock-guarded JSON file
//! in the session folder today ([`store::FileGovernorStore`]), so all the
//! worker processes of a session on one machine share it. What changes
//! state that people should see is recorded on the session's bus
//! (`backend_paused`, `backend_resumed`, `backend_wait`, `budget_exceeded`).

pub mod store;
pub mod window;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use wavecrew_core::{NewMessage, Usage};

use crate::config::{BudgetConfig, Config, Price};
use store::{FileGovernorStore, GovernorError, GovernorState, GovernorStore, Pause, Slot, Waiter};

/// Now, in unix milliseconds: the governor's only source of time, so tests
/// can run it on a simulated clock.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// Tokio's clock from a fixed start: with a paused tokio runtime
/// (`start_paused`), time advances only when every task sleeps, so a test of
/// minutes of rate limits runs in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    base_ms: u64,
    base: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `base_ms` now.
    pub fn starting_at(base_ms: u64) -> Self {
        TokioClock {
            base_ms,
            base: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> u64 {
        self.base_ms + u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX / 2)
    }
}

/// One backend's limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackendLimits {
    /// Attempts at once.
    pub max_parallel: Option<usize>,
    /// Starts per minute.
    pub rpm: Option<u64>,
    /// Tokens per minute.
    pub tpm: Option<u64>,
}

/// What the governor enforces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GovernorConfig {
    /// Per backend name.
    pub backends: BTreeMap<String, BackendLimits>,
    /// The models of the backends (for prices), per backend name.
    pub models: BTreeMap<String, String>,
    /// `[budget]`.
    pub budget: BudgetConfig,
    /// `[prices]`.
    pub prices: BTreeMap<String, Price>,
    /// First back-off of a pause without a named reset, milliseconds.
    pub backoff_ms: u64,
    /// The longest back-off, milliseconds.
    pub max_backoff_ms: u64,
}

impl GovernorConfig {
    /// From `wavecrew.toml`.
    pub fn from_config(config: &Config) -> Self {
        let mut backends = BTreeMap::new();
        let mut models = BTreeMap::new();
        for name in config.names() {
            let Some(b) = config.backend(&name) else {
                continue;
            };
            backends.insert(
                b.name.clone(),
                BackendLimits {
                    max_parallel: b.spec.max_parallel,
                    rpm: b.spec.rpm,
                    tpm: b.spec.tpm,
                },
            );
            if let Some(m) = &b.spec.model {
                models.insert(b.name.clone(), m.clone());
            }
        }
        GovernorConfig {
            backends,
            models,
            budget: config.budget.clone(),
            prices: config.prices.clone(),
            backoff_ms: config.routing.backoff_ms,
            max_backoff_ms: config.routing.max_backoff_ms,
        }
    }

    /// The model a backend's usage is priced by: its configured model, or
    /// `<backend> (default model)` (which has no price).
    pub fn model_of(&self, backend: &str) -> String {
        self.models
            .get(backend)
            .cloned()
            .unwrap_or_else(|| format!("{backend} (default model)"))
    }
}

/// Why a start has to wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitReason {
    /// The backend is paused after a rate limit.
    Paused {
        /// Until when, unix ms.
        until_ms: u64,
        /// Why.
        reason: String,
    },
    /// Every slot (`max_parallel`) is taken.
    Slots {
        /// The limit.
        max_parallel: usize,
    },
    /// `rpm` starts in the last minute.
    Rpm {
        /// The limit.
        rpm: u64,
    },
    /// `tpm` tokens in the last minute.
    Tpm {
        /// The limit.
        tpm: u64,
    },
}

impl WaitReason {
    /// A stable short name (`paused`, `max_parallel`, `rpm`, `tpm`).
    pub fn name(&self) -> &'static str {
        match self {
            WaitReason::Paused { .. } => "paused",
            WaitReason::Slots { .. } => "max_parallel",
            WaitReason::Rpm { .. } => "rpm",
            WaitReason::Tpm { .. } => "tpm",
        }
    }

    /// For people.
    pub fn describe(&self) -> String {
        match self {
            WaitReason::Paused { until_ms, reason } => {
                format!("paused until {} ({reason})", iso(*until_ms))
            }
            WaitReason::Slots { max_parallel } => {
                format!("all {max_parallel} slots (max_parallel) taken")
            }
            WaitReason::Rpm { rpm } => format!("{rpm} starts in the last minute (rpm)"),
            WaitReason::Tpm { tpm } => format!("{tpm} tokens in the last minute (tpm)"),
        }
    }
}

/// A granted start: give it back with [`Governor::release`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permit {
    /// The backend.
    pub backend: String,
    /// The task.
    pub task: String,
    /// The attempt.
    pub attempt: u32,
    /// When it was granted, unix ms.
    pub granted_ms: u64,
}

/// The answer to a start request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Start now.
    Granted(Permit),
    /// Ask again at `until_ms` (or earlier: a slot may free up).
    Wait {
        /// Why.
        reason: WaitReason,
        /// The earliest time it can change, unix ms.
        until_ms: u64,
    },
    /// Never: a budget is spent. The verdict names it.
    Refused(String),
}

/// An RFC 3339 time of unix milliseconds.
pub fn iso(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|m| jiff::Timestamp::from_millisecond(m).ok())
        .map_or_else(|| ms.to_string(), |t| t.to_string())
}

/// The governor of one session.
#[derive(Debug, Clone)]
pub struct Governor {
    store: Arc<dyn GovernorStore>,
    clock: Arc<dyn Clock>,
    config: Arc<GovernorConfig>,
    bus: Option<Arc<wavecrew_msgbus::Bus>>,
    pid: u32,
}

/// Poll interval while waiting for a slot another worker holds.
const POLL_MS: u64 = 250;

impl Governor {
    /// A governor over any store and clock (no bus records).
    pub fn new(
        store: Arc<dyn GovernorStore>,
        clock: Arc<dyn Clock>,
        config: GovernorConfig,
    ) -> Self {
        Governor {
            store,
            clock,
            config: Arc::new(config),
            bus: None,
            pid: std::process::id(),
        }
    }

    /// The governor of a session folder: its `governor.json`, the system
    /// clock, and its bus when the folder is a bus session
    /// (`<root>/.workflow/.team/<id>`).
    pub fn for_session(config: &Config, session_dir: &Path) -> Self {
        let mut g = Governor::new(
            Arc::new(FileGovernorStore::for_session(session_dir)),
            Arc::new(SystemClock),
            GovernorConfig::from_config(config),
        );
        g.bus = session_bus(session_dir).map(Arc::new);
        g
    }

    /// Acting as process `pid` (tests of several workers in one process).
    #[must_use]
    pub fn as_pid(mut self, pid: u32) -> Self {
        self.pid = pid;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &GovernorConfig {
        &self.config
    }

    /// Now, unix ms.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The state as stored.
    pub fn state(&self) -> Result<GovernorState, GovernorError> {
        self.store.load()
    }

    fn limits(&self, backend: &str) -> BackendLimits {
        self.config
            .backends
            .get(backend)
            .copied()
            .unwrap_or_default()
    }

    /// Say whether crossing the run budget stops running attempts
    /// (`--hard-budget`), for every worker of the session.
    pub fn set_hard_budget(&self, hard: bool) -> Result<(), GovernorError> {
        self.store.update(&mut |s| s.hard_budget = hard).map(|_| ())
    }

    /// Ask to start attempt `attempt` of `task` on `backend`.
    pub fn try_admit(
        &self,
        backend: &str,
        task: &str,
        attempt: u32,
    ) -> Result<Admission, GovernorError> {
        let now = self.clock.now_ms();
        let limits = self.limits(backend);
        let budget = self.config.budget.clone();
        let pid = self.pid;
        let mut answer = Admission::Refused(String::new());
        let mut resumed: Option<Pause> = None;
        let mut new_wait = false;
        self.store.update(&mut |s| {
            resumed = None;
            new_wait = false;
            reclaim(s);
            s.budget.clone_from(&budget);
            answer = admit(s, now, backend, task, attempt, pid, limits, &budget);
            let b = s.backends.entry(backend.to_owned()).or_default();
            if matches!(answer, Admission::Granted(_))
                && let Some(p) = b.paused.take()
            {
                resumed = Some(p);
            }
            let was = s
                .waiting
                .iter()
                .position(|w| w.pid == pid && w.task == task);
            match &answer {
                Admission::Wait { reason, until_ms } => {
                    let entry = Waiter {
                        pid,
                        task: task.to_owned(),
                        backend: backend.to_owned(),
                        reason: reason.describe(),
                        since_ms: now,
                        until_ms: *until_ms,
                    };
                    match was {
                        Some(i) if s.waiting[i].backend == backend => {
                            s.waiting[i].reason = entry.reason;
                            s.waiting[i].until_ms = entry.until_ms;
                        }
                        Some(i) => {
                            s.waiting[i] = entry;
                            new_wait = true;
                        }
                        None => {
                            s.waiting.push(entry);
                            new_wait = true;
                        }
                    }
                }
                _ => {
                    if let Some(i) = was {
                        s.waiting.remove(i);
                    }
                }
            }
        })?;
        if let Some(p) = resumed {
            self.announce(
                "backend_resumed",
                format!("[governor] {backend} resumed (paused since {})", iso(p.since_ms)),
                json!({"backend": backend, "paused_since": iso(p.since_ms), "reason": p.reason, "task_id": task}),
            );
        }
        if new_wait && let Admission::Wait { reason, until_ms } = &answer {
            self.announce(
                "backend_wait",
                format!(
                    "[governor] {task} waits for {backend}: {}",
                    reason.describe()
                ),
                json!({"backend": backend, "task_id": task, "reason": reason.name(),
                       "detail": reason.describe(), "until": iso(*until_ms)}),
            );
        }
        Ok(answer)
    }

    /// Wait (asynchronously) until `until_ms`: the reset of a pause, the
    /// time the rate window has room again, or a poll interval while every
    /// slot is taken.
    pub async fn nap(&self, until_ms: u64) {
        let now = self.clock.now_ms();
        let ms = until_ms.saturating_sub(now).max(10);
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }

    /// Stop waiting (the task went elsewhere or gave up).
    pub fn forget_wait(&self, task: &str) {
        let pid = self.pid;
        let _ = self
            .store
            .update(&mut |s| s.waiting.retain(|w| !(w.pid == pid && w.task == task)));
    }

    /// Give the slot back; `success` ends the backend's run of rate limits.
    pub fn release(&self, permit: &Permit, success: bool) {
        let pid = self.pid;
        let _ = self.store.update(&mut |s| {
            let b = s.backends.entry(permit.backend.clone()).or_default();
            b.slots.retain(|x| {
                !(x.pid == pid && x.task == permit.task && x.attempt == permit.attempt)
            });
            if success {
                b.rate_limits_in_row = 0;
            }
        });
    }

    /// Pause `backend` for every worker: until `retry_after_secs` from now
    /// when the provider named it, else for an exponential back-off
    /// (`routing.backoff_ms` doubled per rate limit in a row, capped at
    /// `routing.max_backoff_ms`, ±25 % jitter). Returns the reset time.
    pub fn pause(
        &self,
        backend: &str,
        task: &str,
        retry_after_secs: Option<u64>,
    ) -> Result<u64, GovernorError> {
        let now = self.clock.now_ms();
        let jitter: f64 = fastrand::f64();
        let (base, max) = (self.config.backoff_ms, self.config.max_backoff_ms);
        let mut announced: Option<Pause> = None;
        let state = self.store.update(&mut |s| {
            announced = None;
            let b = s.backends.entry(backend.to_owned()).or_default();
            let (wait, reason) = if let Some(secs) = retry_after_secs {
                (
                    secs.saturating_mul(1000),
                    format!("rate limited; the provider said retry after {secs} s"),
                )
            } else {
                let exp = base
                    .saturating_mul(1u64 << b.rate_limits_in_row.min(16))
                    .min(max);
                #[allow(
                    clippy::cast_precision_loss,
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss
                )]
                let ms = (exp as f64 * (0.75 + 0.5 * jitter)) as u64;
                (
                    ms,
                    format!(
                        "rate limited without a reset time; back-off {ms} ms (rate limit {} in a row)",
                        b.rate_limits_in_row + 1
                    ),
                )
            };
            b.rate_limits_in_row += 1;
            let until = now + wait;
            if b.paused.as_ref().is_none_or(|p| p.until_ms < until) {
                let p = Pause {
                    since_ms: b.paused.as_ref().map_or(now, |p| p.since_ms),
                    until_ms: until,
                    reason,
                    task: task.to_owned(),
                };
                b.paused = Some(p.clone());
                announced = Some(p);
            }
        })?;
        if let Some(p) = announced {
            self.announce(
                "backend_paused",
                format!(
                    "[governor] {backend} paused until {} for every worker: {}",
                    iso(p.until_ms),
                    p.reason
                ),
                json!({"backend": backend, "task_id": task, "until": iso(p.until_ms),
                       "retry_after_secs": retry_after_secs, "reason": p.reason}),
            );
        }
        Ok(state
            .backends
            .get(backend)
            .and_then(|b| b.paused.as_ref())
            .map_or(now, |p| p.until_ms))
    }

    /// The pause of `backend`, while it lasts.
    pub fn paused(&self, backend: &str) -> Option<Pause> {
        let now = self.clock.now_ms();
        self.store
            .load()
            .ok()?
            .backends
            .get(backend)?
            .paused
            .clone()
            .filter(|p| p.until_ms > now)
    }

    /// Record usage that just arrived in an attempt's stream; returns why
    /// the attempt must stop, when a budget says so (its task budget, or
    /// the run budget under `--hard-budget`).
    pub fn record_usage(
        &self,
        backend: &str,
        task: &str,
        usage: &Usage,
    ) -> Result<Option<String>, GovernorError> {
        if usage.input_tokens == 0 && usage.output_tokens == 0 && usage.cached_input_tokens == 0 {
            return self.check_budget(task);
        }
        let now = self.clock.now_ms();
        let model = self.config.model_of(backend);
        let usd = self.config.prices.get(&model).map(|p| p.cost(usage));
        let budget = self.config.budget.clone();
        let mut stop = None;
        let mut crossed_now: Option<String> = None;
        self.store.update(&mut |s| {
            stop = None;
            crossed_now = None;
            let b = s.backends.entry(backend.to_owned()).or_default();
            b.spend.add(usage, &model, usd);
            b.tokens.take(now, usage.input_tokens + usage.output_tokens);
            let t = s.tasks.entry(task.to_owned()).or_default();
            if t.backends.last().is_none_or(|l| l != backend) {
                t.backends.push(backend.to_owned());
            }
            t.spend.add(usage, &model, usd);
            s.run.add(usage, &model, usd);
            if s.run_budget_crossed.is_none()
                && let Some(v) = run_verdict(&s.run, &budget)
            {
                s.run_budget_crossed = Some(v.clone());
                crossed_now = Some(v);
            }
            stop = task_verdict(&s.tasks[task].spend, &budget).or_else(|| {
                s.run_budget_crossed
                    .clone()
                    .filter(|_| s.hard_budget)
                    .map(|v| format!("{v} (--hard-budget)"))
            });
        })?;
        if let Some(v) = crossed_now {
            self.announce(
                "budget_exceeded",
                format!("[governor] {v}; no new attempt starts"),
                json!({"scope": "run", "verdict": v, "task_id": task, "backend": backend}),
            );
        }
        Ok(stop)
    }

    /// Why `task` must stop now, without new usage (the run budget under
    /// `--hard-budget` crossed by another attempt).
    pub fn check_budget(&self, task: &str) -> Result<Option<String>, GovernorError> {
        let s = self.store.load()?;
        let budget = &self.config.budget;
        Ok(s.tasks
            .get(task)
            .and_then(|t| task_verdict(&t.spend, budget))
            .or_else(|| {
                s.run_budget_crossed
                    .filter(|_| s.hard_budget)
                    .map(|v| format!("{v} (--hard-budget)"))
            }))
    }

    /// Put the bus record of a task moving to another backend.
    pub fn announce_fallback(&self, task: &str, from: &str, to: &str, why: &str) {
        self.announce(
            "backend_fallback",
            format!("[governor] {task} moves from {from} to {to}: {why}"),
            json!({"task_id": task, "from": from, "to": to, "reason": why}),
        );
    }

    fn announce(&self, kind: &str, summary: String, data: Value) {
        let Some(bus) = &self.bus else {
            return;
        };
        let data: Map<String, Value> = match data {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if let Err(e) = bus.log(NewMessage {
            from: "governor".into(),
            to: Some("coordinator".into()),
            kind: Some(kind.into()),
            summary: Some(summary),
            data: Some(data),
            reference: None,
        }) {
            tracing::warn!("governor: cannot write to the bus: {e}");
        }
    }
}

/// Whether the stored pid is a live process; slots and waits of dead
/// processes are dropped.
fn reclaim(s: &mut GovernorState) {
    let mut alive: BTreeMap<u32, bool> = BTreeMap::new();
    let mut is_alive = |pid: u32| {
        *alive
            .entry(pid)
            .or_insert_with(|| wavecrew_core::store::pid_alive(pid))
    };
    for b in s.backends.values_mut() {
        b.slots.retain(|x| is_alive(x.pid));
    }
    s.waiting.retain(|w| is_alive(w.pid));
}

#[allow(clippy::too_many_arguments)]
fn admit(
    s: &mut GovernorState,
    now: u64,
    backend: &str,
    task: &str,
    attempt: u32,
    pid: u32,
    limits: BackendLimits,
    budget: &BudgetConfig,
) -> Admission {
    // Judged again at every start: a run resumed with a larger budget
    // goes on.
    s.run_budget_crossed = run_verdict(&s.run, budget);
    if let Some(v) = &s.run_budget_crossed {
        return Admission::Refused(v.clone());
    }
    if let Some(t) = s.tasks.get(task)
        && let Some(v) = task_spent(&t.spend, budget)
    {
        return Admission::Refused(v);
    }
    let b = s.backends.entry(backend.to_owned()).or_default();
    if let Some(p) = &b.paused
        && p.until_ms > now
    {
        return Admission::Wait {
            until_ms: p.until_ms,
            reason: WaitReason::Paused {
                until_ms: p.until_ms,
                reason: p.reason.clone(),
            },
        };
    }
    if let Some(max) = limits.max_parallel
        && b.slots.len() >= max
    {
        return Admission::Wait {
            until_ms: now + POLL_MS,
            reason: WaitReason::Slots { max_parallel: max },
        };
    }
    b.starts.prune(now);
    b.tokens.prune(now);
    if let Some(rpm) = limits.rpm
        && !b.starts.has_room(now, rpm)
    {
        return Admission::Wait {
            until_ms: b.starts.free_at(now, rpm),
            reason: WaitReason::Rpm { rpm },
        };
    }
    if let Some(tpm) = limits.tpm
        && !b.tokens.has_room(now, tpm)
    {
        return Admission::Wait {
            until_ms: b.tokens.free_at(now, tpm),
            reason: WaitReason::Tpm { tpm },
        };
    }
    // Only what a limit counts is recorded: a backend without limits
    // costs its attempts no write of the shared state.
    if limits.rpm.is_some() {
        b.starts.take(now, 1);
    }
    if limits.max_parallel.is_some() {
        b.slots.push(Slot {
            pid,
            task: task.to_owned(),
            attempt,
            since_ms: now,
        });
    }
    Admission::Granted(Permit {
        backend: backend.to_owned(),
        task: task.to_owned(),
        attempt,
        granted_ms: now,
    })
}

/// The verdict once the run's spend crossed a run budget.
fn run_verdict(run: &store::Spend, budget: &BudgetConfig) -> Option<String> {
    if let Some(limit) = budget.run_tokens
        && run.tokens() > limit
    {
        return Some(format!(
            "run budget run_tokens = {limit} crossed: {} tokens used",
            run.tokens()
        ));
    }
    if let Some(limit) = budget.run_usd
        && run.usd > limit
    {
        return Some(format!(
            "run budget run_usd = {limit} crossed: ${:.4} spent",
            run.usd
        ));
    }
    None
}

/// The verdict once a task's spend crossed a task budget.
fn task_verdict(spend: &store::Spend, budget: &BudgetConfig) -> Option<String> {
    if let Some(limit) = budget.task_tokens
        && spend.tokens() > limit
    {
        return Some(format!(
            "task budget task_tokens = {limit} crossed: {} tokens used",
            spend.tokens()
        ));
    }
    if let Some(limit) = budget.task_usd
        && spend.usd > limit
    {
        return Some(format!(
            "task budget task_usd = {limit} crossed: ${:.4} spent",
            spend.usd
        ));
    }
    None
}

/// The verdict when a task has nothing left of its budget (no new attempt).
fn task_spent(spend: &store::Spend, budget: &BudgetConfig) -> Option<String> {
    if let Some(limit) = budget.task_tokens
        && spend.tokens() >= limit
    {
        return Some(format!(
            "task budget task_tokens = {limit} spent: {} tokens used",
            spend.tokens()
        ));
    }
    if let Some(limit) = budget.task_usd
        && spend.usd >= limit
    {
        return Some(format!(
            "task budget task_usd = {limit} spent: ${:.4}",
            spend.usd
        ));
    }
    None
}

/// The bus of a session folder `<root>/.workflow/.team/<id>`, when it is one.
pub fn session_bus(session_dir: &Path) -> Option<wavecrew_msgbus::Bus> {
    let id = session_dir.file_name()?.to_str()?;
    let team = session_dir.parent()?;
    let workflow = team.parent()?;
    if team.file_name()? != ".team" || workflow.file_name()? != ".workflow" {
        return None;
    }
    let root = workflow.parent()?;
    let session = wavecrew_core::SessionId::new(id).ok()?;
    Some(wavecrew_msgbus::Bus::new(
        wavecrew_msgbus::BusPaths::new(root, session),
        wavecrew_msgbus::Durability::None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::MemoryGovernorStore;

    #[derive(Debug, Default)]
    struct Manual(std::sync::atomic::AtomicU64);
    impl Clock for Manual {
        fn now_ms(&self) -> u64 {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    fn governor(limits: BackendLimits, budget: BudgetConfig) -> (Governor, Arc<Manual>) {
        let clock = Arc::new(Manual::default());
        clock
            .0
            .store(1_000_000, std::sync::atomic::Ordering::SeqCst);
        let mut config = GovernorConfig {
            budget,
            backoff_ms: 2_000,
            max_backoff_ms: 60_000,
            ..GovernorConfig::default()
        };
        config.backends.insert("codex".into(), limits);
        config.models.insert("codex".into(), "gpt-x".into());
        config.prices.insert(
            "gpt-x".into(),
            Price {
                input: 1.0,
                output: 10.0,
                cached_input: Some(0.1),
            },
        );
        (
            Governor::new(
                Arc::new(MemoryGovernorStore::default()),
                clock.clone(),
                config,
            ),
            clock,
        )
    }

    fn granted(a: Admission) -> Permit {
        match a {
            Admission::Granted(p) => p,
            other => panic!("not granted: {other:?}"),
        }
    }

    #[test]
    fn slots_are_shared_and_given_back() {
        let (g, _) = governor(
            BackendLimits {
                max_parallel: Some(1),
                ..BackendLimits::default()
            },
            BudgetConfig::default(),
        );
        let p = granted(g.try_admit("codex", "T-1", 1).unwrap());
        let w = g.try_admit("codex", "T-2", 1).unwrap();
        assert!(
            matches!(
                w,
                Admission::Wait {
                    reason: WaitReason::Slots { max_parallel: 1 },
                    ..
                }
            ),
            "{w:?}"
        );
        assert_eq!(g.state().unwrap().waiting.len(), 1);
        // Another backend is not held back.
        granted(g.try_admit("claude", "T-3", 1).unwrap());
        g.release(&p, true);
        granted(g.try_admit("codex", "T-2", 1).unwrap());
        assert!(g.state().unwrap().waiting.is_empty());
    }

    #[test]
    fn a_dead_holders_slot_is_reclaimed() {
        let (g, _) = governor(
            BackendLimits {
                max_parallel: Some(1),
                ..BackendLimits::default()
            },
            BudgetConfig::default(),
        );
        let dead = g.clone().as_pid(i32::MAX as u32 - 7);
        granted(dead.try_admit("codex", "T-1", 1).unwrap());
        granted(g.try_admit("codex", "T-2", 1).unwrap());
    }

    #[test]
    fn a_pause_holds_every_worker_until_the_reset() {
        let (g, clock) = governor(BackendLimits::default(), BudgetConfig::default());
        let until = g.pause("codex", "T-1", Some(3)).unwrap();
        assert_eq!(until, 1_003_000);
        let other = g.clone().as_pid(1);
        match other.try_admit("codex", "T-2", 1).unwrap() {
            Admission::Wait {
                until_ms,
                reason: WaitReason::Paused { .. },
            } => assert_eq!(until_ms, until),
            a => panic!("{a:?}"),
        }
        clock.0.store(until, std::sync::atomic::Ordering::SeqCst);
        granted(g.try_admit("codex", "T-2", 1).unwrap());
        assert!(g.state().unwrap().backends["codex"].paused.is_none());
    }

    #[test]
    fn a_pause_without_a_reset_backs_off_exponentially() {
        let (g, _) = governor(BackendLimits::default(), BudgetConfig::default());
        let first = g.pause("codex", "T-1", None).unwrap() - 1_000_000;
        assert!((1_500..=2_500).contains(&first), "{first}");
        let second = g.pause("codex", "T-1", None).unwrap() - 1_000_000;
        assert!((3_000..=5_000).contains(&second), "{second}");
        for _ in 0..10 {
            g.pause("codex", "T-1", None).unwrap();
        }
        let last = g.state().unwrap().backends["codex"].paused.clone().unwrap();
        assert!(last.until_ms - 1_000_000 <= 75_000, "capped: {last:?}");
    }

    #[test]
    fn budgets_stop_tasks_and_runs() {
        let (g, _) = governor(
            BackendLimits::default(),
            BudgetConfig {
                task_tokens: Some(100),
                run_tokens: Some(150),
                ..BudgetConfig::default()
            },
        );
        let u = |i, o| Usage {
            input_tokens: i,
            output_tokens: o,
            ..Usage::default()
        };
        assert_eq!(g.record_usage("codex", "T-1", &u(50, 10)).unwrap(), None);
        let stop = g.record_usage("codex", "T-1", &u(40, 1)).unwrap().unwrap();
        assert!(stop.contains("task_tokens = 100"), "{stop}");
        assert!(matches!(
            g.try_admit("codex", "T-1", 2).unwrap(),
            Admission::Refused(_)
        ));
        granted(g.try_admit("codex", "T-2", 1).unwrap());
        // The run budget: the running attempt goes on, no new one starts.
        assert_eq!(g.record_usage("codex", "T-2", &u(50, 0)).unwrap(), None);
        let refused = g.try_admit("codex", "T-3", 1).unwrap();
        assert!(
            matches!(&refused, Admission::Refused(v) if v.contains("run_tokens = 150")),
            "{refused:?}"
        );
        g.set_hard_budget(true).unwrap();
        let stop = g.record_usage("codex", "T-2", &u(1, 0)).unwrap().unwrap();
        assert!(stop.contains("--hard-budget"), "{stop}");
        // Priced: 100 input at $1/M + 11 output at $10/M.
        let s = g.state().unwrap();
        let t1 = &s.tasks["T-1"].spend;
        assert!(
            (t1.usd - (90.0 * 1.0 + 11.0 * 10.0) / 1e6).abs() < 1e-12,
            "{t1:?}"
        );
        assert_eq!(s.run.tokens(), 152);
    }

    #[test]
    fn tokens_per_minute_hold_back_the_next_start() {
        let (g, clock) = governor(
            BackendLimits {
                tpm: Some(1_000),
                ..BackendLimits::default()
            },
            BudgetConfig::default(),
        );
        let p = granted(g.try_admit("codex", "T-1", 1).unwrap());
        let u = Usage {
            input_tokens: 900,
            output_tokens: 200,
            ..Usage::default()
        };
        g.record_usage("codex", "T-1", &u).unwrap();
        g.release(&p, true);
        clock
            .0
            .store(1_010_000, std::sync::atomic::Ordering::SeqCst);
        match g.try_admit("codex", "T-2", 1).unwrap() {
            Admission::Wait {
                reason: WaitReason::Tpm { tpm: 1_000 },
                until_ms,
            } => {
                assert_eq!(until_ms, 1_060_000);
            }
            a => panic!("{a:?}"),
        }
        clock
            .0
            .store(1_060_000, std::sync::atomic::Ordering::SeqCst);
        granted(g.try_admit("codex", "T-2", 1).unwrap());
    }

    #[test]
    fn a_model_without_a_price_is_counted_not_priced() {
        let (g, _) = governor(BackendLimits::default(), BudgetConfig::default());
        let u = Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        };
        g.record_usage("claude", "T-1", &u).unwrap();
        let s = g.state().unwrap();
        assert!(s.run.usd.abs() < f64::EPSILON);
        assert_eq!(s.run.unpriced_tokens, 15);
        assert!(s.run.unpriced_models.contains("claude (default model)"));
    }

    #[test]
    fn the_file_store_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::default();
        let g = Governor::for_session(&config, dir.path());
        let until = g.pause("codex", "T-1", Some(30)).unwrap();
        let again = Governor::for_session(&config, dir.path());
        assert_eq!(again.paused("codex").unwrap().until_ms, until);
        assert!(matches!(
            again.try_admit("codex", "T-2", 1).unwrap(),
            Admission::Wait { .. }
        ));
    }
}
