//! The `Role` trait and the worker loop every role binary shares (DESIGN §7).
//!
//! A role says which tasks it takes (its prefix), and implements phases 2–4
//! of the seeds: [`Role::prepare`] (context), [`Role::execute`] (the work)
//! and [`Role::validate`] (self-validation and the report). The loop in
//! [`run_worker`] does the rest: discovery (prefix, owner, pending,
//! unblocked — or exactly the task given with `--task`), the claim with a
//! lease, a heartbeat while the phases run, the report (a bus record tagged
//! `[<role>]` and the task's new state), and the next task (the inner loop
//! over same-prefix tasks). A worker killed at any instant leaves its task
//! `in_progress` under a lease that stops being refreshed; reconcile
//! (`TaskStore::reconcile`) resets it to pending once the lease expires or
//! the worker's pid is gone.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::bus::{MessageBus, NewMessage};
use crate::error::Result;
use crate::id::TaskId;
use crate::store::{BlockerRule, Claim, TaskStore, WorkerInfo, ready_tasks};
use crate::task::{Task, TaskStatus};

/// The record types the built-in roles write their end-of-task [`Report`]
/// under: how a reader of the bus tells a task's end from its progress. A
/// host streams a running attempt's other records as they are written and
/// sends these with the attempt's end, once it is recorded (an attempt whose
/// end is lost, on a host cut off, leaves no end record behind it).
pub const REPORT_KINDS: [&str; 6] = [
    "task_complete",
    "task_failed",
    "impl_complete",
    "impl_failed",
    "unit_landed",
    "error",
];

/// What a role reports when a task ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The task's new state (`completed` or `failed`).
    pub status: TaskStatus,
    /// The bus record's type (`task_complete`, `task_failed`, …).
    pub kind: String,
    /// The bus record's summary (without the role tag; the loop adds it).
    pub summary: String,
    /// The bus record's payload.
    pub data: Map<String, Value>,
    /// The task's `result`.
    pub result: Value,
}

impl Report {
    /// A failure report of `kind` with an error message.
    pub fn failure(kind: &str, task: &Task, error: &str) -> Report {
        let mut data = Map::new();
        data.insert("task_id".into(), Value::from(task.id.as_str()));
        data.insert("error".into(), Value::from(error));
        Report {
            status: TaskStatus::Failed,
            kind: kind.to_owned(),
            summary: format!("{} failed: {error}", task.id.as_str()),
            data: data.clone(),
            result: Value::Object(data),
        }
    }
}

/// An error inside a role's phase: it becomes a failure report. Its
/// [`kind`](PhaseError::kind) says what failed, for code to tell apart
/// (never its message text, which is for people).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PhaseError {
    /// What failed.
    pub kind: PhaseErrorKind,
    /// What happened, for people: the task's report carries it.
    pub message: String,
    /// What the agent tampered with, one line each (a file, the setting
    /// it added): the report carries it as `tampered`, for a person to see
    /// in `wavecrew status`, the reports and the cockpit. Empty otherwise.
    pub tampered: Vec<String>,
}

/// What a role's phase failed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PhaseErrorKind {
    /// The task's own input: its description, plan, solution, phase or
    /// `working_dir`, an id that cannot be derived.
    Input,
    /// The agent: its attempts did not succeed, or a review or a fix
    /// through it failed.
    Agent,
    /// The environment: a setup command, a tool the checks run, a test
    /// runner that cannot start. Never the agent's failure.
    Environment,
    /// git and the task's worktree: opening, committing, the merge queue.
    Workspace,
    /// The session's files or its bus.
    Session,
    /// A prompt template that does not render.
    Prompt,
    /// A check of the work that failed (the lane, the tests, the review).
    Check,
}

impl PhaseError {
    /// An error of `kind`.
    pub fn new(kind: PhaseErrorKind, message: impl Into<String>) -> Self {
        PhaseError {
            kind,
            message: message.into(),
            tampered: Vec::new(),
        }
    }

    /// What a failure report carries of this error beside its message:
    /// `error_kind`, and `tampered` when the agent tampered with anything.
    pub fn report_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert(
            "error_kind".into(),
            serde_json::to_value(self.kind).unwrap_or(Value::Null),
        );
        if !self.tampered.is_empty() {
            fields.insert("tampered".into(), Value::from(self.tampered.clone()));
        }
        fields
    }

    /// This error, naming what the agent tampered with.
    #[must_use]
    pub fn with_tampered(mut self, tampered: Vec<String>) -> Self {
        self.tampered = tampered;
        self
    }

    /// [`PhaseErrorKind::Input`].
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(PhaseErrorKind::Input, message)
    }

    /// [`PhaseErrorKind::Agent`].
    pub fn agent(message: impl Into<String>) -> Self {
        Self::new(PhaseErrorKind::Agent, message)
    }

    /// [`PhaseErrorKind::Environment`].
    pub fn environment(message: impl Into<String>) -> Self {
        Self::new(PhaseErrorKind::Environment, message)
    }

    /// [`PhaseErrorKind::Workspace`].
    pub fn workspace(message: impl Into<String>) -> Self {
        Self::new(PhaseErrorKind::Workspace, message)
    }

    /// [`PhaseErrorKind::Session`].
    pub fn session(message: impl Into<String>) -> Self {
        Self::new(PhaseErrorKind::Session, message)
    }

    /// [`PhaseErrorKind::Prompt`].
    pub fn prompt(message: impl Into<String>) -> Self {
        Self::new(PhaseErrorKind::Prompt, message)
    }

    /// [`PhaseErrorKind::Check`].
    pub fn check(message: impl Into<String>) -> Self {
        Self::new(PhaseErrorKind::Check, message)
    }
}

/// One role of a team pipeline.
#[async_trait::async_trait]
pub trait Role: Send + Sync {
    /// What phase 2 hands to phase 3 and 4.
    type Work: Send + Sync;

    /// The role's name (`executor`): the bus sender and the tag.
    fn name(&self) -> &str;
    /// The task prefix it takes (`IMPL`).
    fn prefix(&self) -> &str;
    /// The tag of its bus summaries (`[executor]`).
    fn tag(&self) -> String {
        format!("[{}]", self.name())
    }
    /// Whether a task is this role's: owned by it, or unowned with its
    /// prefix (`IMPL-001`, and revisions such as `IMPL-001-R1`).
    fn takes(&self, task: &Task) -> bool {
        match task.owner.as_deref().filter(|o| !o.is_empty()) {
            Some(owner) => owner == self.name(),
            None => task
                .id
                .as_str()
                .strip_prefix(self.prefix())
                .is_some_and(|rest| rest.starts_with('-')),
        }
    }
    /// Phase 2: load what the task needs.
    async fn prepare(&self, task: &Task) -> std::result::Result<Self::Work, PhaseError>;
    /// Phase 3: do the work.
    async fn execute(
        &self,
        task: &Task,
        work: &mut Self::Work,
    ) -> std::result::Result<(), PhaseError>;
    /// Phase 4: check the work and say how the task ended.
    async fn validate(&self, task: &Task, work: &Self::Work) -> Report;
    /// Who the role's records go to (`coordinator`; planex: `planner`).
    #[allow(clippy::unnecessary_literal_bound)] // implementations may borrow from self
    fn report_to(&self) -> &str {
        "coordinator"
    }
    /// The bus type of this role's success record (`task_complete`): a
    /// claimed task that already has one was finished by a worker killed
    /// before it could update the store, and is not done again.
    #[allow(clippy::unnecessary_literal_bound)] // implementations may borrow from self
    fn completion_kind(&self) -> &str {
        "task_complete"
    }
    /// The report of a task whose phase 2 or 3 failed.
    fn failure_report(&self, task: &Task, error: &PhaseError) -> Report {
        let mut report = Report::failure("task_failed", task, &error.message);
        for (key, value) in error.report_fields() {
            report.data.insert(key.clone(), value.clone());
            if let Value::Object(result) = &mut report.result {
                result.insert(key, value);
            }
        }
        report
    }
}

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Take exactly this task (the orchestrator's assignment), then stop.
    pub task: Option<TaskId>,
    /// Keep taking same-prefix tasks after the first (the inner loop).
    pub inner_loop: bool,
    /// How often the lease is refreshed while the phases run.
    pub heartbeat: Duration,
    /// The worker's identity on leases (default: the role's name and this
    /// process).
    pub worker: Option<WorkerInfo>,
    /// With `task`: after it completes, take the one successor of this
    /// role it unblocked (the orchestrator adopts it).
    pub fast_advance: bool,
    /// When a task's blockers let it be claimed (`Ended` under the
    /// `always` failure policy).
    pub blockers: BlockerRule,
    /// Where the worker keeps, before it logs a task's completion record,
    /// its own copy of it (`<proofs>/<task>/completion.json`; a session's
    /// `attempts/`, which no confined agent may write). A task found
    /// completed by an interrupted worker is finished from that copy; a
    /// completion record on the bus is never proof on its own (an agent
    /// may write one, `wavecrew msg log --from`). `None`: nothing is
    /// trusted, and an interrupted task runs again.
    pub proofs: Option<std::path::PathBuf>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            task: None,
            inner_loop: true,
            heartbeat: Duration::from_secs(30),
            worker: None,
            fast_advance: false,
            blockers: BlockerRule::Completed,
            proofs: None,
        }
    }
}

/// What a worker did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerSummary {
    /// Tasks completed.
    pub completed: Vec<TaskId>,
    /// Tasks failed.
    pub failed: Vec<TaskId>,
    /// When `--task` named a task that could not be taken: why.
    pub not_taken: Option<String>,
    /// Tasks taken by fast-advance.
    pub fast_advanced: Vec<TaskId>,
}

/// The next task the role can take: pending, its prefix and owner, every
/// blocker completed; lowest id first.
pub fn discover<R: Role + ?Sized>(role: &R, store: &dyn TaskStore) -> Result<Option<TaskId>> {
    let tasks = store.list()?;
    Ok(ready_tasks(&tasks)
        .into_iter()
        .find(|t| role.takes(t))
        .map(|t| t.id.clone()))
}

/// Run the worker loop of `role` until no task is left (or the one task
/// given is done).
pub async fn run_worker<R, B>(
    role: &R,
    store: &(dyn TaskStore + 'static),
    bus: &B,
    options: &WorkerOptions,
) -> Result<WorkerSummary>
where
    R: Role,
    B: MessageBus,
{
    let worker = options
        .worker
        .clone()
        .unwrap_or_else(|| WorkerInfo::current(role.name()));
    let mut summary = WorkerSummary::default();
    let mut assigned = options.task.clone();
    loop {
        let id = match assigned.take() {
            Some(id) => id,
            None if options.task.is_some() => return Ok(summary),
            None => match discover(role, store)? {
                Some(id) => id,
                None => return Ok(summary),
            },
        };
        if options.task.is_some() && summary.completed.is_empty() && summary.failed.is_empty() {
            let named = store.get(&id)?;
            if !role.takes(&named) {
                summary.not_taken = Some(format!(
                    "{} is not for the {} role (it takes prefix {}; owner: {})",
                    id.as_str(),
                    role.name(),
                    role.prefix(),
                    named.owner.as_deref().unwrap_or("none")
                ));
                return Ok(summary);
            }
        }
        let task = match store.claim_with(&id, &worker, options.blockers)? {
            Claim::Claimed(task) => *task,
            // A fast-advance successor taken by someone else in between
            // is not an error: the orchestrator started a worker for it.
            Claim::NotPending(_) | Claim::Blocked(_) if !summary.fast_advanced.is_empty() => {
                return Ok(summary);
            }
            Claim::NotPending(status) => {
                if options.task.is_some() {
                    summary.not_taken = Some(format!("{} is {status}, not pending", id.as_str()));
                    return Ok(summary);
                }
                continue;
            }
            Claim::Blocked(blockers) => {
                if options.task.is_some() {
                    let ids: Vec<&str> = blockers.iter().map(TaskId::as_str).collect();
                    summary.not_taken =
                        Some(format!("{} is blocked by {}", id.as_str(), ids.join(", ")));
                    return Ok(summary);
                }
                continue;
            }
        };
        // Only a task that was in progress before can have a completion
        // record (a reset keeps `attempts` at 1 or more, so this claim made
        // it 2 or more): a first claim skips the bus scan, which costs the
        // length of the log.
        let claimed_before = task.attempts > 1;
        if claimed_before
            && let Some(done) = earlier_completion(role, bus, options.proofs.as_deref(), &task.id)?
        {
            // The work and its record exist; only the store missed it.
            store.finish(&task.id, &worker, TaskStatus::Completed, Some(done))?;
            if let Some(dir) = &options.proofs {
                let _ = std::fs::remove_file(proof_file(dir, &task.id));
            }
            summary.completed.push(task.id.clone());
            if options.task.is_some() || !options.inner_loop {
                return Ok(summary);
            }
            continue;
        }
        let report = with_heartbeat(store, &task.id, &worker, options.heartbeat, async {
            let mut work = match role.prepare(&task).await {
                Ok(w) => w,
                Err(e) => return role.failure_report(&task, &e),
            };
            if let Err(e) = role.execute(&task, &mut work).await {
                return role.failure_report(&task, &e);
            }
            role.validate(&task, &work).await
        })
        .await;
        let message = NewMessage {
            from: role.name().to_owned(),
            to: Some(role.report_to().to_owned()),
            kind: Some(report.kind.clone()),
            summary: Some(format!("{} {}", role.tag(), report.summary)),
            data: Some(report.data.clone()),
            reference: None,
        };
        // The worker's own copy of a completion first (what a later claim
        // trusts), then the bus record, then the task: a crash between
        // them leaves the task leased (so it is claimed again and finished
        // from the copy), never a completed task without its record.
        let proof = options
            .proofs
            .as_deref()
            .filter(|_| report.status == TaskStatus::Completed)
            .map(|dir| proof_file(dir, &task.id));
        if let Some(proof) = &proof {
            crate::fsutil::write_json_atomic(proof, &message)?;
        }
        bus.log(message)
            .map_err(|e| crate::error::CoreError::Bus(e.to_string()))?;
        store.finish(
            &task.id,
            &worker,
            report.status,
            Some(report.result.clone()),
        )?;
        // Finished: the copy has served (a task run again later, after a
        // person's retry, must not be finished from it).
        if let Some(proof) = &proof {
            let _ = std::fs::remove_file(proof);
        }
        if report.status == TaskStatus::Completed {
            summary.completed.push(task.id.clone());
        } else {
            summary.failed.push(task.id.clone());
        }
        if options.task.is_some() {
            // Fast-advance: the one successor of this role that the task
            // just unblocked, if there is exactly one.
            if options.fast_advance && report.status == TaskStatus::Completed {
                let next = fast_advance_successor(role, store, &task.id)?;
                if let Some(next) = next {
                    summary.fast_advanced.push(next.clone());
                    assigned = Some(next);
                    continue;
                }
            }
            return Ok(summary);
        }
        if !options.inner_loop {
            return Ok(summary);
        }
    }
}

/// The single ready successor of `done` that `role` takes, if exactly one.
pub fn fast_advance_successor<R: Role + ?Sized>(
    role: &R,
    store: &dyn TaskStore,
    done: &TaskId,
) -> Result<Option<TaskId>> {
    let tasks = store.list()?;
    let successors: Vec<&Task> = ready_tasks(&tasks)
        .into_iter()
        .filter(|t| t.blocked_by.contains(done) && role.takes(t))
        .collect();
    Ok(match successors.as_slice() {
        [one] => Some(one.id.clone()),
        _ => None,
    })
}

/// Where a worker keeps its copy of `id`'s completion record, below
/// `proofs` ([`WorkerOptions::proofs`]).
pub fn proof_file(proofs: &std::path::Path, id: &TaskId) -> std::path::PathBuf {
    proofs.join(id.as_str()).join("completion.json")
}

/// The payload of the completion of `id` an interrupted worker of this
/// role recorded: read from its own copy (`proofs`), never from the bus
/// alone. When the copy is there but the bus lacks the record (the worker
/// stopped between the two), the record is logged now.
fn earlier_completion<R: Role, B: MessageBus>(
    role: &R,
    bus: &B,
    proofs: Option<&std::path::Path>,
    id: &TaskId,
) -> Result<Option<Value>> {
    let Some(proofs) = proofs else {
        return Ok(None);
    };
    let file = proof_file(proofs, id);
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(None);
    };
    let message: NewMessage = match serde_json::from_str(&text) {
        Ok(m) => m,
        // Half a file cannot be: it is written atomically. Anything else
        // is not wavecrew's: the task runs again.
        Err(_) => return Ok(None),
    };
    let Some(data) = message.data.clone().filter(|d| {
        message.from == role.name()
            && message.kind.as_deref() == Some(role.completion_kind())
            && d.get("task_id").and_then(Value::as_str) == Some(id.as_str())
    }) else {
        return Ok(None);
    };
    let logged = bus
        .list(&crate::bus::ListFilter {
            from: Some(role.name().to_owned()),
            to: None,
            kind: Some(role.completion_kind().to_owned()),
            last: 100,
        })
        .map_err(|e| crate::error::CoreError::Bus(e.to_string()))?
        .messages
        .into_iter()
        .any(|m| m.data.as_ref() == Some(&data));
    if !logged {
        bus.log(message)
            .map_err(|e| crate::error::CoreError::Bus(e.to_string()))?;
    }
    Ok(Some(Value::Object(data)))
}

/// Run `work`, refreshing the lease every `every` until it ends.
async fn with_heartbeat<T>(
    store: &(dyn TaskStore + 'static),
    id: &TaskId,
    worker: &WorkerInfo,
    every: Duration,
    work: impl std::future::Future<Output = T>,
) -> T {
    let beat = async {
        loop {
            tokio::time::sleep(every).await;
            if let Err(e) = store.heartbeat(id, worker) {
                tracing::warn!("heartbeat of {} failed: {e}", id.as_str());
            }
        }
    };
    tokio::select! {
        out = work => out,
        () = beat => unreachable!("the heartbeat loop never ends"),
    }
}
