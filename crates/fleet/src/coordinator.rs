//! [`Coordinator`]: `wavecrew run --engine`, the orchestrator's remote
//! workers.
//!
//! At the start it announces the session ([`Registry`]), publishes the
//! integration branch ([`RepoChannel::publish`]) and the [`SessionKit`], and
//! starts the [`Mirror`] (the bus stream into `messages.jsonl`). Then, for
//! every task the scheduler starts, [`Coordinator::run`]:
//!
//! 1. puts the task in the KV store if it is not there (tasks made during
//!    the run, a consensus revision, join as they are dispatched);
//! 2. publishes a ticket `<task>:<attempts + 1>` for its role (an id the
//!    stream de-duplicates, so a resumed coordinator publishes nothing
//!    twice) and polls the task's KV entry; a lease left silent for twice
//!    `ack_wait` (a ticket that ran out of deliveries) is released here, and
//!    the task ticketed again;
//! 3. when the entry has ended, brings the attempt home: the
//!    [`AttemptPack`]'s files into the session folder (`outcome.json` with
//!    its host; artifacts make the kit go out again, for later tasks), its records to the bus stream with ids
//!    `<task>:<attempt>:<n>` (mirrored once), then the attempt's commits
//!    ([`RepoChannel::take_attempt`]) through the merge queue
//!    ([`Integration::land_ref`], with `[integration] verify`), and the new
//!    tip published for the hosts; a conflict or a rejected merge sends the
//!    task out once more on the new tip, a second one blocks it;
//! 4. writes the end into the local task store, where the orchestrator
//!    reads it.
//!
//! A pause (`wavecrew pause`, the session's `control/` folder) holds step
//! 2: no ticket goes out until `wavecrew resume`; tasks out already go on.
//!
//! A person's hand on remote tasks (the human review gate, the revision a
//! rejection starts, a cancel handed on to the host, a retry sent out as a
//! new attempt) is [`steer`].
//!
//! Everything it does is idempotent on the KV state and the session
//! folder, so a killed coordinator resumes with `wavecrew run` again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use wavecrew_core::store::LeasePolicy;
use wavecrew_core::{CoreError, Task, TaskStatus, TaskStore};
use wavecrew_engine_nats::{
    Engine, Mirror, NatsBus, NatsTaskStore, Objects, Registry, RepoChannel, SessionCard,
    SessionState, TicketPolicy, Tickets,
};
use wavecrew_isolation::{Integration, Landing, Verify, Work};

use crate::error::{FleetError, Result};
use crate::kit::{AttemptPack, SessionKit};

mod steer;

pub(crate) use steer::{cancel_asked, cancelled_result};

/// How the coordinator talks to its hosts.
#[derive(Debug, Clone)]
pub struct CoordinatorOptions {
    /// The server (`nats://…`, `tls://…`).
    pub url: String,
    /// The credentials file.
    pub credentials: Option<PathBuf>,
    /// How long a ticket stays with a silent host.
    pub ack_wait: Duration,
    /// How often a dispatched task's KV entry is read.
    pub poll: Duration,
}

/// What the coordinator needs of the session it runs.
#[derive(Debug, Clone)]
pub struct CoordinatedSession {
    /// The session folder.
    pub dir: PathBuf,
    /// The project root.
    pub root: PathBuf,
    /// The session id.
    pub session_id: String,
    /// The session's roles.
    pub roles: Vec<wavecrew_core::RoleEntry>,
    /// The configuration file the run read (it travels in the kit).
    pub config_file: Option<PathBuf>,
}

/// The coordinator of one session.
pub struct Coordinator {
    engine: Engine,
    kv: NatsTaskStore,
    local: Arc<dyn TaskStore>,
    bus: Arc<wavecrew_msgbus::Bus>,
    remote_bus: NatsBus,
    tickets: Tickets,
    repo: RepoChannel,
    objects: Objects,
    registry: Registry,
    card: SessionCard,
    integration: Integration,
    verify: Option<Verify>,
    session_dir: PathBuf,
    scratch: PathBuf,
    options: CoordinatorOptions,
    /// One landing and publish at a time.
    landing: tokio::sync::Mutex<()>,
    /// One kit upload at a time.
    kit_upload: tokio::sync::Mutex<()>,
    /// The session, as the kit is collected from it.
    session: CoordinatedSession,
    mirror_stop: tokio::sync::watch::Sender<bool>,
    mirror: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("url", &self.engine.url())
            .field("session", &self.card.session)
            .finish_non_exhaustive()
    }
}

pub(crate) use wavecrew_sys::process::blocking;

/// The ref a host sends attempt `attempt` of `task` from.
pub(crate) fn attempt_branch(task: &str, attempt: u32) -> String {
    format!("refs/heads/wavecrew-attempt/{task}/{attempt}")
}

/// Whether a task state is an end.
pub(crate) fn ended(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Skipped
    )
}

impl Coordinator {
    /// Connect, announce the session, publish the repository and the kit,
    /// start the mirror. `local` and `bus` are the session's own task store
    /// and bus (where the orchestrator reads).
    pub async fn start(
        options: CoordinatorOptions,
        session: &CoordinatedSession,
        local: Arc<dyn TaskStore>,
        bus: Arc<wavecrew_msgbus::Bus>,
    ) -> Result<Arc<Coordinator>> {
        let engine = Engine::connect(
            &options.url,
            options.credentials.as_deref(),
            &session.session_id,
        )
        .await?;
        let kv = {
            let engine = engine.clone();
            blocking(move || NatsTaskStore::open(&engine)).await?
        };
        let opened = {
            let spec_dir = session.dir.clone();
            let config = session.config_file.clone();
            blocking(move || {
                wavecrew_role_kit::session::RoleSession::open(
                    &wavecrew_role_kit::session::OpenSpec {
                        config: config.as_deref(),
                        ..wavecrew_role_kit::session::OpenSpec::session(&spec_dir)
                    },
                )
            })
            .await
            .map_err(|e| FleetError::Invalid {
                what: session.dir.display().to_string(),
                message: e.to_string(),
            })?
        };
        let integration = {
            let ctx = opened.ctx.clone();
            blocking(move || ctx.integration()).await
        }
        .map_err(|e| FleetError::Invalid {
            what: "the integration branch".into(),
            message: e.to_string(),
        })?
        .ok_or_else(|| FleetError::Invalid {
            what: "[isolation] mode".into(),
            message: "a session on several hosts needs `worktree` (each attempt runs in a worktree of its host's copy and lands through the merge queue); `in-place` was set".into(),
        })?;
        let verify = opened.ctx.verify();
        let scratch = session.dir.join("fleet").join("scratch");
        std::fs::create_dir_all(&scratch).map_err(|e| FleetError::io("creating", &scratch, e))?;
        let repo = RepoChannel::open(&engine).await?;
        repo.publish(integration.repo(), &integration.reference(), &scratch)
            .await?;
        let objects = Objects::open(&engine).await?;
        let kit = {
            let s = session.clone();
            blocking(move || {
                SessionKit::collect(
                    &s.root,
                    &s.dir,
                    &s.session_id,
                    s.roles,
                    s.config_file.as_deref(),
                )
            })
            .await?
        };
        kit.upload(&objects, &scratch).await?;
        let tickets = Tickets::open(
            &engine,
            TicketPolicy {
                ack_wait: options.ack_wait,
                ..TicketPolicy::default()
            },
        )
        .await?;
        let (file_bus, _) = wavecrew_msgbus::Bus::open(
            &session.root,
            &session.session_id,
            wavecrew_msgbus::KeyUse::Write,
            wavecrew_msgbus::Durability::Batch,
        )
        .map_err(|e| FleetError::Invalid {
            what: "the session's bus".into(),
            message: e.to_string(),
        })?;
        let mirror = Mirror::open(&engine, file_bus).await?;
        let remote_bus = NatsBus::open(&engine).await?;
        let registry = Registry::open(&engine).await?;
        let card = SessionCard {
            session: session.session_id.clone(),
            roles: session
                .roles
                .iter()
                .map(|r| r.name.as_str().to_owned())
                .collect(),
            coordinator: wavecrew_core::store::this_host(),
            ack_wait_secs: options.ack_wait.as_secs(),
            state: SessionState::Running,
            version: crate::VERSION.to_owned(),
        };
        registry.announce(&card).await?;
        let (mirror_stop, stop) = tokio::sync::watch::channel(false);
        let coordinator = Arc::new(Coordinator {
            engine,
            kv,
            local,
            bus,
            remote_bus,
            tickets,
            repo,
            objects,
            registry,
            card,
            integration,
            verify,
            session_dir: session.dir.clone(),
            scratch,
            options,
            landing: tokio::sync::Mutex::new(()),
            kit_upload: tokio::sync::Mutex::new(()),
            session: session.clone(),
            mirror_stop,
            mirror: std::sync::Mutex::new(None),
        });
        let handle = tokio::spawn(mirror_loop(mirror, stop));
        *coordinator
            .mirror
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
        Ok(coordinator)
    }

    /// The server URL.
    pub fn url(&self) -> &str {
        self.engine.url()
    }

    /// After the run: the mirror catches up and stops, the session is
    /// marked finished (hosts started with `--exit-when-done` leave).
    pub async fn finish(&self) -> Result<()> {
        let _ = self.mirror_stop.send(true);
        let handle = self
            .mirror
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            let _ = handle.await;
        }
        let card = SessionCard {
            state: SessionState::Finished,
            ..self.card.clone()
        };
        self.registry.announce(&card).await?;
        Ok(())
    }

    async fn kv_get(&self, task: &Task) -> Result<Task> {
        let (kv, local) = (self.kv.clone(), task.clone());
        blocking(move || match kv.get(&local.id) {
            Ok(t) => Ok(t),
            Err(CoreError::TaskNotFound { .. }) => {
                let id = local.id.clone();
                let mut fresh = local;
                if fresh.status == TaskStatus::InProgress {
                    fresh.status = TaskStatus::Pending;
                }
                fresh.lease = None;
                match kv.create(fresh) {
                    Ok(t) => Ok(t),
                    // Created meanwhile by a coordinator before this one.
                    Err(CoreError::TaskExists { .. }) => kv.get(&id),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        })
        .await
        .map_err(FleetError::from)
    }

    async fn run_task(&self, task: &Task, role: &str) -> Result<()> {
        // A person rejected its work: the revision goes out.
        self.take_revision(task).await?;
        // A person retried it: a new attempt goes out, not the old end home.
        let retried = self.take_retry(task).await?;
        let mut progress = Dispatch {
            retried,
            ..Dispatch::default()
        };
        let mut errors = 0;
        loop {
            match self.step(task, role, &mut progress).await {
                Ok(Step::Done) => return Ok(()),
                Ok(Step::Again) => errors = 0,
                Ok(Step::Wait) => {
                    errors = 0;
                    tokio::time::sleep(self.options.poll).await;
                }
                // The server or the repository failed for a moment: try
                // again, for about a minute, before the task fails with it.
                Err(e) if errors < ERRORS_IN_A_ROW => {
                    errors += 1;
                    tracing::warn!("{}: {e} (trying again)", task.id.as_str());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One look at a dispatched task's KV entry, and what it asks for.
    async fn step(&self, task: &Task, role: &str, progress: &mut Dispatch) -> Result<Step> {
        let current = self.kv_get(task).await?;
        match current.status {
            s if ended(s) => match self.bring_home(&current, progress.revised).await? {
                Home::Done => Ok(Step::Done),
                Home::SendAgain => {
                    progress.revised = true;
                    progress.published = None;
                    Ok(Step::Again)
                }
            },
            // Once per attempt: a host that took the task over runs a new
            // attempt, which the request stops in turn.
            _ if progress.cancel_passed != Some(current.attempts)
                && self.cancel_wanted(&current).await =>
            {
                self.pass_cancel(&current).await?;
                progress.cancel_passed = Some(current.attempts);
                Ok(Step::Again)
            }
            TaskStatus::Pending => {
                let attempt = current.attempts + 1;
                if progress.published != Some(attempt) {
                    // Dispatch paused by a person: no ticket goes out
                    // (tasks out already go on and come home).
                    if self.hold_while_paused(&current, progress).await {
                        return Ok(Step::Wait);
                    }
                    // A person's approval may have moved the tip.
                    self.publish_tip().await?;
                    let sent = self.tickets.publish(role, &task.id, attempt).await?;
                    if std::mem::take(&mut progress.retried) && sent.duplicate {
                        // The id went out before the retry: a new one.
                        self.skip_ticket_id(&current).await?;
                        return Ok(Step::Again);
                    }
                    progress.published = Some(attempt);
                }
                Ok(Step::Wait)
            }
            _ => {
                // A lease silent for twice `ack_wait`: its ticket ran out
                // of deliveries with its host gone. Release it; the task
                // is ticketed again as its next attempt.
                let stall = LeasePolicy {
                    stall_after: self.options.ack_wait * 2,
                };
                let silent = current
                    .lease
                    .as_ref()
                    .is_none_or(|l| stall.is_expired(l, jiff::Timestamp::now()));
                if !silent {
                    self.show_running(&current, progress).await?;
                    return Ok(Step::Wait);
                }
                let (kv, id) = (self.kv.clone(), task.id.clone());
                blocking(move || {
                    kv.update(&id, &mut |t| {
                        wavecrew_core::store::release_if_expired(t, &stall, jiff::Timestamp::now());
                        Ok(())
                    })
                })
                .await?;
                Ok(Step::Again)
            }
        }
    }

    /// Whether dispatch is paused (`wavecrew pause`, the session's
    /// `control/` folder) before `current`'s ticket goes out; the wait is
    /// recorded once on the bus (`dispatch_held`), as on one machine.
    async fn hold_while_paused(&self, current: &Task, progress: &mut Dispatch) -> bool {
        let control = wavecrew_core::Control::new(&self.session_dir);
        let paused = blocking(move || control.is_paused()).await;
        if paused && !std::mem::replace(&mut progress.held, true) {
            let id = current.id.as_str();
            self.record(
                "dispatch_held",
                &format!("{id} waits: dispatch is paused"),
                id,
                json!({}),
            );
        }
        paused
    }

    /// Show a task a host works on in the local store (in progress, the
    /// lease naming the worker and its host, pid 0), once per lease:
    /// `wavecrew status` reads it there.
    async fn show_running(&self, current: &Task, progress: &mut Dispatch) -> Result<()> {
        let Some(lease) = current.lease.clone() else {
            return Ok(());
        };
        if progress.shown.as_deref() == Some(lease.worker.as_str()) {
            return Ok(());
        }
        progress.shown = Some(lease.worker.clone());
        let (local, id, attempts) = (
            Arc::clone(&self.local),
            current.id.clone(),
            current.attempts,
        );
        blocking(move || {
            local.update(&id, &mut |t| {
                if !ended(t.status) {
                    t.status = TaskStatus::InProgress;
                    t.attempts = attempts;
                    t.lease = Some(wavecrew_core::Lease {
                        pid: 0,
                        ..lease.clone()
                    });
                }
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    /// The attempt that ended `current` (in KV), brought into the session.
    async fn bring_home(&self, current: &Task, revised: bool) -> Result<Home> {
        let id = current.id.as_str().to_owned();
        let remote = current
            .result
            .as_ref()
            .and_then(|r| r.get("remote"))
            .cloned()
            .unwrap_or(Value::Null);
        let host = remote
            .get("host")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let attempt = current.attempts;
        let mut status = current.status;
        let mut result = current.result.clone().unwrap_or_else(|| json!({}));
        if let Some(pack_name) = remote.get("pack").and_then(Value::as_str) {
            let marker = self
                .session_dir
                .join("fleet")
                .join("received")
                .join(format!("{id}-{attempt}"));
            if !marker.exists() {
                let pack = AttemptPack::download(&self.objects, pack_name, &self.scratch).await?;
                let after = self.attempts_before(&id, attempt)?;
                {
                    let (pack, dir) = (pack.clone(), self.session_dir.clone());
                    blocking(move || pack.write_files(&dir, after)).await?;
                }
                if pack.files.keys().any(|f| f.starts_with("artifacts/")) {
                    self.upload_kit().await?;
                }
                // The records the host could not stream, under the ids it
                // would have used: none lands twice.
                for (n, message) in pack.messages() {
                    self.remote_bus
                        .publish_once(message, &format!("{id}:{attempt}:{n}"))
                        .await?;
                }
                write_marker(&marker)?;
            }
        }
        let commit = remote
            .get("commit")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let held = status == TaskStatus::Completed
            && wavecrew_role_kit::review_gate::wants_human_review(current);
        if held && let Some(commit) = &commit {
            // Validated work waiting for a person: not landed, parked.
            self.hold_for_review(&id, attempt, &host, commit, &mut result)
                .await?;
            status = TaskStatus::Blocked;
        } else if status == TaskStatus::Completed
            && let Some(commit) = commit
        {
            match self.land(&id, attempt, &host, &commit).await? {
                Landed::Commit(merge) => {
                    if let Some(map) = result.as_object_mut() {
                        map.insert("merge_commit".into(), json!(merge));
                    }
                    self.record(
                        "task_merged",
                        &format!(
                            "{id} merged into {} at {}",
                            self.integration.branch(),
                            merge.get(..10).unwrap_or(&merge)
                        ),
                        &id,
                        json!({"merge_commit": merge, "host": host,
                               "integration_branch": self.integration.branch()}),
                    );
                }
                Landed::Before(merge) => {
                    if let Some(map) = result.as_object_mut() {
                        map.insert("merge_commit".into(), json!(merge));
                    }
                }
                Landed::Nothing => {}
                Landed::Refused { kind, error } if !revised => {
                    self.record(
                        kind,
                        &format!("{id}: {error}: one revision on the new tip"),
                        &id,
                        json!({"host": host, "revision": true}),
                    );
                    let kv = self.kv.clone();
                    let tid = current.id.clone();
                    blocking(move || {
                        kv.update(&tid, &mut |t| {
                            t.status = TaskStatus::Pending;
                            t.lease = None;
                            Ok(())
                        })
                    })
                    .await?;
                    return Ok(Home::SendAgain);
                }
                Landed::Refused { kind, error } => {
                    self.record(
                        kind,
                        &format!("{id}: {error}: blocked"),
                        &id,
                        json!({"host": host}),
                    );
                    status = TaskStatus::Blocked;
                    if let Some(map) = result.as_object_mut() {
                        map.insert("error".into(), json!(error));
                    }
                }
            }
        }
        let (local, tid) = (Arc::clone(&self.local), current.id.clone());
        let attempts = current.attempts;
        blocking(move || {
            local.update(&tid, &mut |t| {
                t.status = status;
                t.result = Some(result.clone());
                t.attempts = attempts;
                t.lease = None;
                Ok(())
            })
        })
        .await?;
        self.settle_cancel(&id, &host, &current_result(current))
            .await?;
        Ok(Home::Done)
    }

    /// Collect the session kit again and store it: an attempt brought
    /// artifacts home, and later attempts on any host read them.
    async fn upload_kit(&self) -> Result<()> {
        let _one = self.kit_upload.lock().await;
        let s = self.session.clone();
        let kit = blocking(move || {
            SessionKit::collect(
                &s.root,
                &s.dir,
                &s.session_id,
                s.roles,
                s.config_file.as_deref(),
            )
        })
        .await?;
        kit.upload(&self.objects, &self.scratch).await
    }

    /// How many attempt folders the session held for `task` before
    /// attempt `attempt` came home: counted once and kept in
    /// `fleet/receiving/<task>-<attempt>`, so a coordinator killed while
    /// writing the attempt's files writes them to the same folders again.
    fn attempts_before(&self, task: &str, attempt: u32) -> Result<u32> {
        let note = self
            .session_dir
            .join("fleet")
            .join("receiving")
            .join(format!("{task}-{attempt}"));
        if let Ok(text) = std::fs::read_to_string(&note)
            && let Ok(n) = text.trim().parse()
        {
            return Ok(n);
        }
        let dir = wavecrew_core::SessionLayout::new(&self.session_dir).attempts(task);
        let n = wavecrew_backends::attempts::existing_attempts(&dir)
            .last()
            .copied()
            .unwrap_or(0);
        if let Some(parent) = note.parent() {
            std::fs::create_dir_all(parent).map_err(|e| FleetError::io("creating", parent, e))?;
        }
        wavecrew_core::fsutil::write_atomic(&note, n.to_string().as_bytes())?;
        Ok(n)
    }

    /// Bring attempt `attempt` of `task` (done on `host`, ending at
    /// `commit` as its KV entry says) into the local ref `dest`, from its
    /// bundle; a bundle holding another commit is an error. Call with the
    /// landing lock held.
    async fn take_commits(
        &self,
        task: &str,
        attempt: u32,
        host: &str,
        commit: &str,
        dest: &str,
    ) -> Result<()> {
        let taken = self
            .repo
            .take_attempt(
                self.integration.repo(),
                task,
                attempt,
                &attempt_branch(task, attempt),
                dest,
                &self.scratch,
            )
            .await?;
        if taken == commit {
            Ok(())
        } else {
            Err(FleetError::Invalid {
                what: format!("attempt {attempt} of {task} from {host}"),
                message: format!(
                    "its bundle holds {taken}, but its end in KV names {commit}; expected the same commit"
                ),
            })
        }
    }

    /// Take attempt `attempt` of `task` into a ref and land it.
    async fn land(&self, task: &str, attempt: u32, host: &str, commit: &str) -> Result<Landed> {
        let _one = self.landing.lock().await;
        let dest = format!("refs/wavecrew-remote/{task}/{attempt}");
        self.take_commits(task, attempt, host, commit, &dest)
            .await?;
        let (integration, verify) = (self.integration.clone(), self.verify.clone());
        let (task_owned, label) = (task.to_owned(), format!("attempt {attempt} on {host}"));
        let landing = blocking(move || {
            let work = Work::Ref {
                reference: &dest,
                label: &label,
            };
            integration.land_work(work, &task_owned, verify.as_ref())
        })
        .await?;
        let landed = match (&landing, landing.refusal()) {
            // A resumed coordinator: the landing was recorded before, but
            // the tip may not be published yet.
            (Landing::AlreadyMerged { commit }, _) => Landed::Before(commit.clone()),
            (_, Some((kind, error))) => Landed::Refused { kind, error },
            _ => landing
                .commit()
                .map_or(Landed::Nothing, |c| Landed::Commit(c.to_owned())),
        };
        if matches!(landed, Landed::Commit(_) | Landed::Before(_)) {
            self.publish_integration().await?;
        }
        Ok(landed)
    }

    /// Publish the integration branch's tip for the hosts (the next ticket
    /// builds on it). Call with the landing lock held.
    async fn publish_integration(&self) -> Result<()> {
        self.repo
            .publish(
                self.integration.repo(),
                &self.integration.reference(),
                &self.scratch,
            )
            .await?;
        Ok(())
    }

    /// A record of the coordinator on the session's bus, as the
    /// orchestrator writes its own.
    fn record(&self, kind: &str, summary: &str, task: &str, extra: Value) {
        let mut data = Map::new();
        data.insert("task_id".into(), json!(task));
        if let Value::Object(extra) = extra {
            data.extend(extra);
        }
        wavecrew_orchestrator::log_record(&*self.bus, kind, summary, data);
    }
}

/// What landing an attempt did.
enum Landed {
    Commit(String),
    Before(String),
    Nothing,
    Refused { kind: &'static str, error: String },
}

/// How many failed looks at a task in a row (about a second apart) before
/// it fails with the error.
const ERRORS_IN_A_ROW: u32 = 60;

/// What the coordinator did for one dispatched task so far.
#[derive(Debug, Default)]
struct Dispatch {
    /// The attempt whose ticket was published.
    published: Option<u32>,
    /// Whether it was sent out again after a refused landing.
    revised: bool,
    /// The remote lease last shown in the local store.
    shown: Option<String>,
    /// The attempt a person's cancel was handed on to in KV.
    cancel_passed: Option<u32>,
    /// A person's retry reset the KV entry, and its first ticket is not
    /// out yet.
    retried: bool,
    /// Its ticket was held by a pause (recorded once).
    held: bool,
}

/// What one look at a task asks for next.
enum Step {
    Done,
    Again,
    Wait,
}

/// What bringing an attempt home asks for next.
enum Home {
    Done,
    SendAgain,
}

/// The result of a task's KV entry (an empty object when it has none).
fn current_result(task: &Task) -> Value {
    task.result.clone().unwrap_or_else(|| json!({}))
}

fn write_marker(marker: &Path) -> Result<()> {
    if let Some(parent) = marker.parent() {
        std::fs::create_dir_all(parent).map_err(|e| FleetError::io("creating", parent, e))?;
    }
    wavecrew_core::fsutil::write_atomic(marker, b"").map_err(FleetError::Core)
}

async fn mirror_loop(mut mirror: Mirror, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            break;
        }
        tokio::select! {
            polled = mirror.poll(Duration::from_millis(200)) => {
                if let Err(e) = polled {
                    tracing::error!("the bus mirror: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            _ = stop.changed() => {}
        }
    }
    if let Err(e) = mirror.catch_up().await {
        tracing::error!("the bus mirror: {e}");
    }
}

#[async_trait::async_trait]
impl wavecrew_orchestrator::RemoteWorkers for Coordinator {
    async fn run(&self, task: &Task, role: &str) -> std::result::Result<(), String> {
        self.run_task(task, role).await.map_err(|e| e.to_string())
    }
}
