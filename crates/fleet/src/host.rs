//! [`HostAgent`]: `wavecrew worker`, one host's share of a session.
//!
//! It finds a session in the [`Registry`] (waiting for one when a worker
//! starts before the coordinator), downloads the [`SessionKit`], and runs
//! `slots` loops. Each loop takes a ticket of one of its roles and:
//!
//! 1. claims the task in KV (a compare-and-set; a lease silent for longer
//!    than `ack_wait` is released first: its host died or was cut off).
//!    Someone else has it, or it ended: the ticket is acked;
//! 2. brings the host's cache of the repository up to the published tip
//!    and makes a worktree of it for this attempt, writes the kit (read
//!    again for each attempt: it carries the artifacts of earlier ones), the task
//!    and its blockers into the session folder there, and a configuration
//!    with `[isolation] mode = "in-place"` (the worktree *is* the
//!    isolation);
//! 3. runs the role's binary, exactly as one machine runs it, in its own
//!    process group, and heartbeats every third of `ack_wait`: a lease
//!    renewal in KV (a compare-and-set) and a progress ack on the ticket.
//!    A lost lease, or no successful renewal for `ack_wait` (a partition),
//!    kills the whole process group and leaves the ticket unacked;
//!    Every bus record the role writes is published to the session's bus
//!    stream as it is written ([`RecordStream`], looked at every
//!    [`STREAM_EVERY`]), so the coordinator's mirror lands it within a
//!    second, in order, once (each under the id `<task>:<attempt>:<n>`);
//! 4. commits the attempt's work, sends it as a bundle, stores the
//!    [`AttemptPack`], and records the end in KV with a compare-and-set
//!    naming them; only then acks (or `Term`s a final failure). A lost
//!    compare-and-set records nothing and acks nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use wavecrew_core::store::{BlockerRule, Claim, LeasePolicy, WorkerInfo};
use wavecrew_core::{CoreError, FileTaskStore, SessionId, Task, TaskStatus, TaskStore};
use wavecrew_engine_nats::{
    Engine, NatsBus, NatsTaskStore, Objects, Registry, RepoChannel, SessionCard, SessionState,
    Ticket, TicketPolicy, Tickets,
};
use wavecrew_isolation::Repo;
use wavecrew_orchestrator::FailurePolicy;

use crate::coordinator::{attempt_branch, blocking, cancel_asked, cancelled_result, ended};
use crate::error::{FleetError, Result};
use crate::git::{git, git_test};
use crate::kit::{AttemptPack, SessionKit};

/// How a host agent runs.
#[derive(Clone)]
pub struct HostOptions {
    /// The server (`nats://…`, `tls://…`).
    pub url: String,
    /// The credentials file.
    pub credentials: Option<PathBuf>,
    /// Tasks at once on this host.
    pub slots: usize,
    /// The roles it takes (empty: every role of the session).
    pub roles: Vec<String>,
    /// Its name in leases, records and reports.
    pub host_id: String,
    /// Serve only this session.
    pub session: Option<String>,
    /// Where the caches and worktrees live.
    pub data_dir: PathBuf,
    /// Leave once the session it served is finished.
    pub exit_when_done: bool,
    /// Folder of the wavecrew binaries (default: beside this program).
    pub bin_dir: Option<PathBuf>,
    /// Where progress lines go.
    pub on_line: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("url", &self.url)
            .field("slots", &self.slots)
            .field("roles", &self.roles)
            .field("host_id", &self.host_id)
            .field("session", &self.session)
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

/// A host agent.
#[derive(Debug)]
pub struct HostAgent {
    options: HostOptions,
}

/// One session as this host serves it.
struct Served {
    options: HostOptions,
    card: SessionCard,
    store: NatsTaskStore,
    tickets: Tickets,
    repo: RepoChannel,
    objects: Objects,
    /// The session's bus stream, where the records of a running attempt go.
    bus: NatsBus,
    /// The session kit as last downloaded (again before every attempt:
    /// the coordinator uploads it anew when an attempt brings artifacts).
    kit: std::sync::Mutex<Arc<SessionKit>>,
    base: PathBuf,
    scratch: PathBuf,
    cache_dir: PathBuf,
    cache: Repo,
    /// One sync of the cache at a time.
    syncing: tokio::sync::Mutex<()>,
    done: AtomicBool,
}

/// How the role binary of one attempt ended.
enum RoleEnd {
    /// It exited.
    Exited,
    /// The lease was lost: it was killed.
    LeaseLost,
    /// A person cancelled the task: it was stopped.
    Cancelled,
}

/// How long a cancelled agent has to stop before it is killed (as on one
/// machine).
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How often a running attempt's KV entry is read for a person's cancel.
const CANCEL_LOOK: Duration = Duration::from_secs(1);

/// How often a running attempt's new bus records are published.
const STREAM_EVERY: Duration = Duration::from_millis(200);

/// The bus records of one attempt, published as its role writes them: the
/// log's length read so far and how many records it held.
struct RecordStream {
    log: PathBuf,
    offset: u64,
    published: usize,
    task: String,
    attempt: u32,
}

impl RecordStream {
    /// The stream of the attempt whose session folder is `session_dir`.
    fn new(session_dir: &Path, task: &str, attempt: u32) -> RecordStream {
        RecordStream {
            log: wavecrew_msgbus::BusPaths::log_in(session_dir),
            offset: 0,
            published: 0,
            task: task.to_owned(),
            attempt,
        }
    }

    /// Publish the records written since the last call (whole lines only;
    /// a line being written waits for the next call), each under the id
    /// `<task>:<attempt>:<n>`: published twice, it is stored once. The
    /// task's end report ([`wavecrew_core::role::REPORT_KINDS`]) and what
    /// follows it stay for the attempt's pack, sent once its end is
    /// recorded.
    async fn flush(&mut self, bus: &NatsBus, host: &str) -> Result<()> {
        let (log, offset) = (self.log.clone(), self.offset);
        let lines = blocking(move || {
            use std::io::{Read, Seek};
            let mut text = Vec::new();
            if let Ok(mut file) = std::fs::File::open(&log) {
                file.seek(std::io::SeekFrom::Start(offset))
                    .and_then(|_| file.read_to_end(&mut text))
                    .map_err(|e| FleetError::io("reading", &log, e))?;
            }
            let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            text.truncate(whole);
            Ok::<_, FleetError>(String::from_utf8_lossy(&text).into_owned())
        })
        .await?;
        let mut offset = self.offset;
        for line in lines.split_inclusive('\n') {
            if let Some(record) = crate::kit::record_of(line) {
                // The task's end goes with the attempt's end, once that is
                // recorded; so does everything after it (in order).
                let ends_task = record["data"]["task_id"] == self.task.as_str()
                    && record["type"]
                        .as_str()
                        .is_some_and(|k| wavecrew_core::role::REPORT_KINDS.contains(&k));
                if ends_task {
                    break;
                }
                if let Some(message) = crate::kit::host_message(&record, host) {
                    let id = format!("{}:{}:{}", self.task, self.attempt, self.published);
                    bus.publish_once(message, &id).await?;
                }
                self.published += 1;
            }
            offset += line.len() as u64;
            // Published: never read again, even when a later one fails.
            self.offset = offset;
        }
        Ok(())
    }
}

/// How one ticket ended on this host.
enum TicketEnd {
    /// Recorded in KV and acked (or termed).
    Recorded(TaskStatus),
    /// Taken or ended elsewhere: acked, nothing run.
    NotOurs,
    /// The lease was lost: the agent was killed, nothing recorded or acked.
    LeaseLost,
    /// The role binary ended without ending the task: released, nacked.
    Crashed,
}

impl HostAgent {
    /// A host agent with these options.
    pub fn new(options: HostOptions) -> HostAgent {
        HostAgent { options }
    }

    fn say(&self, line: &str) {
        (self.options.on_line)(line);
    }

    /// Serve sessions until stopped (or, with `exit_when_done`, until the
    /// session served is finished).
    pub async fn run(&self) -> Result<()> {
        let o = &self.options;
        let engine = Engine::connect(&o.url, o.credentials.as_deref(), "wavecrew").await?;
        let registry = Registry::open(&engine).await?;
        let mut said_waiting = false;
        loop {
            let cards = registry.running().await?;
            let card = cards
                .into_iter()
                .find(|c| o.session.as_ref().is_none_or(|s| s == &c.session));
            if let Some(card) = card.as_ref().filter(|c| c.version != crate::VERSION) {
                if !said_waiting {
                    self.say(&format!(
                        "[worker {}] session {} runs wavecrew {}, this host {}: waiting for a session of this version",
                        o.host_id,
                        card.session,
                        if card.version.is_empty() { "(unknown)" } else { &card.version },
                        crate::VERSION
                    ));
                    said_waiting = true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            if let Some(card) = card {
                said_waiting = false;
                self.serve(&engine, &registry, card).await?;
                if o.exit_when_done {
                    return Ok(());
                }
                continue;
            }
            if o.exit_when_done
                && let Some(s) = &o.session
                && registry
                    .card(s)
                    .await?
                    .is_some_and(|c| c.state == SessionState::Finished)
            {
                return Ok(());
            }
            if !said_waiting {
                self.say(&format!(
                    "[worker {}] waiting for a session on {}",
                    o.host_id, o.url
                ));
                said_waiting = true;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    async fn serve(&self, engine: &Engine, registry: &Registry, card: SessionCard) -> Result<()> {
        let o = &self.options;
        let engine = engine.with_session(&card.session)?;
        let store = {
            let engine = engine.clone();
            blocking(move || NatsTaskStore::open(&engine)).await?
        };
        let tickets = Tickets::open(
            &engine,
            TicketPolicy {
                ack_wait: card.ack_wait(),
                ..TicketPolicy::default()
            },
        )
        .await?;
        let repo = RepoChannel::open(&engine).await?;
        let objects = Objects::open(&engine).await?;
        let bus = NatsBus::open(&engine).await?;
        // The session name was checked (SessionName): a plain path part.
        let base = o.data_dir.join(engine.session().as_str());
        let scratch = base.join("scratch");
        std::fs::create_dir_all(&scratch).map_err(|e| FleetError::io("creating", &scratch, e))?;
        let kit = SessionKit::download(&objects, &scratch).await?;
        let cache_dir = base.join("cache");
        if !cache_dir.join(".git").exists() {
            std::fs::create_dir_all(&cache_dir)
                .map_err(|e| FleetError::io("creating", &cache_dir, e))?;
            git(&cache_dir, &["init", "-q", "-b", "wavecrew-cache"])?;
        }
        let cache = Repo::open(&cache_dir)?.ok_or_else(|| FleetError::Invalid {
            what: cache_dir.display().to_string(),
            message: "expected the host's git cache".into(),
        })?;
        let mut roles: Vec<String> = card
            .roles
            .iter()
            .filter(|r| o.roles.is_empty() || o.roles.contains(r))
            .cloned()
            .collect();
        roles.sort();
        self.say(&format!(
            "[worker {}] serving {} ({} slots; roles {})",
            o.host_id,
            card.session,
            o.slots,
            roles.join(", ")
        ));
        let served = Arc::new(Served {
            options: o.clone(),
            card,
            store,
            tickets,
            repo,
            objects,
            bus,
            kit: std::sync::Mutex::new(Arc::new(kit)),
            base,
            scratch,
            cache_dir,
            cache,
            syncing: tokio::sync::Mutex::new(()),
            done: AtomicBool::new(false),
        });
        let mut slots = tokio::task::JoinSet::new();
        for slot in 0..o.slots.max(1) {
            let (served, roles) = (Arc::clone(&served), roles.clone());
            slots.spawn(async move { served.slot_loop(slot, &roles).await });
        }
        let session = served.card.session.clone();
        loop {
            tokio::select! {
                joined = slots.join_next() => {
                    match joined {
                        None => break,
                        Some(Ok(Ok(()))) => {}
                        Some(Ok(Err(e))) => tracing::error!("a slot stopped: {e}"),
                        Some(Err(e)) => tracing::error!("a slot stopped: {e}"),
                    }
                }
                () = tokio::time::sleep(Duration::from_secs(1)) => {
                    // A card that cannot be read (the server is out of
                    // reach) says nothing: keep serving.
                    let finished = registry
                        .card(&session)
                        .await
                        .is_ok_and(|c| c.is_none_or(|c| c.state == SessionState::Finished));
                    if finished {
                        served.done.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
        self.say(&format!("[worker {}] {session} finished", o.host_id));
        Ok(())
    }
}

impl Served {
    /// The session kit as last downloaded.
    fn kit(&self) -> Arc<SessionKit> {
        Arc::clone(
            &self
                .kit
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Download the kit again (artifacts of earlier attempts come in it).
    async fn refresh_kit(&self) -> Result<Arc<SessionKit>> {
        let kit = Arc::new(SessionKit::download(&self.objects, &self.scratch).await?);
        *self
            .kit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::clone(&kit);
        Ok(kit)
    }

    fn say(&self, line: &str) {
        (self.options.on_line)(line);
    }

    async fn slot_loop(&self, slot: usize, roles: &[String]) -> Result<()> {
        while !self.done.load(Ordering::SeqCst) {
            let mut took = false;
            for role in roles {
                let ticket = match self.tickets.next(role, Duration::from_millis(500)).await {
                    Ok(t) => t,
                    Err(e) => {
                        tracing::warn!("taking a ticket: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        None
                    }
                };
                let Some(ticket) = ticket else { continue };
                took = true;
                let id = ticket.task_id().as_str().to_owned();
                match self.take(slot, role, ticket).await {
                    Ok(TicketEnd::Recorded(status)) => self.say(&format!(
                        "[worker {}] {id}: {status}",
                        self.options.host_id
                    )),
                    Ok(TicketEnd::LeaseLost) => self.say(&format!(
                        "[worker {}] {id}: its lease went to another worker; the agent was stopped and nothing recorded",
                        self.options.host_id
                    )),
                    Ok(TicketEnd::Crashed) => self.say(&format!(
                        "[worker {}] {id}: the role worker ended without ending the task; released",
                        self.options.host_id
                    )),
                    Ok(TicketEnd::NotOurs) => {}
                    Err(e) => self.say(&format!("[worker {}] {id}: {e}", self.options.host_id)),
                }
            }
            if !took {
                tokio::task::yield_now().await;
            }
        }
        Ok(())
    }

    fn worker(&self, role: &str, slot: usize, ticket: &Ticket) -> WorkerInfo {
        WorkerInfo {
            worker: format!(
                "{role}@{}/{slot}/{}.{}",
                self.options.host_id,
                ticket.sequence(),
                ticket.delivered()
            ),
            pid: std::process::id(),
            host: self.options.host_id.clone(),
        }
    }

    /// Claim the ticket's task: Some(the task as claimed), or None when it
    /// is not ours to run (the ticket was settled here).
    async fn claim(
        &self,
        ticket: Ticket,
        worker: &WorkerInfo,
    ) -> Result<(Option<Task>, Option<Ticket>)> {
        let (store, id, w) = (self.store.clone(), ticket.task_id().clone(), worker.clone());
        let policy = LeasePolicy {
            stall_after: self.card.ack_wait(),
        };
        let claim = blocking(move || {
            if store.get(&id)?.status == TaskStatus::InProgress {
                store.update(&id, &mut |t| {
                    wavecrew_core::store::release_if_expired(t, &policy, jiff::Timestamp::now());
                    Ok(())
                })?;
            }
            store.claim_with(&id, &w, BlockerRule::Ended)
        })
        .await?;
        match claim {
            Claim::Claimed(task) => Ok((Some(*task), Some(ticket))),
            // Someone holds it whose lease has not run out yet (its host
            // may be the one that went silent: this ticket was redelivered
            // just before the lease ran out), or a blocker has not ended:
            // look again after `ack_wait`.
            Claim::NotPending(TaskStatus::InProgress) | Claim::Blocked(_) => {
                ticket.nak_after(self.card.ack_wait()).await?;
                Ok((None, None))
            }
            // Ended, or never ours to take: nothing to run.
            Claim::NotPending(_) => {
                ticket.ack().await?;
                Ok((None, None))
            }
        }
    }

    async fn take(&self, slot: usize, role: &str, ticket: Ticket) -> Result<TicketEnd> {
        let worker = self.worker(role, slot, &ticket);
        let (task, ticket) = self.claim(ticket, &worker).await?;
        let (Some(task), Some(ticket)) = (task, ticket) else {
            return Ok(TicketEnd::NotOurs);
        };
        let attempt = task.attempts;
        let work = self
            .base
            .join("work")
            .join(format!("{}-{attempt}-{slot}", task.id.as_str()));
        let prepared = self.prepare(&task, &work).await;
        let (session_dir, tip, config) = match prepared {
            Ok(p) => p,
            Err(e) => {
                self.say(&format!(
                    "[worker {}] {}: cannot prepare the attempt: {e}",
                    self.options.host_id,
                    task.id.as_str()
                ));
                return self.release(&task, &worker, ticket, &work).await;
            }
        };
        let started_at = SystemTime::now();
        let mut stream = RecordStream::new(&session_dir, task.id.as_str(), attempt);
        let ran = self
            .run_role(&task, &worker, &ticket, &session_dir, &config, &mut stream)
            .await;
        // What the role wrote last, before its end is recorded.
        if let Err(e) = stream.flush(&self.bus, &self.options.host_id).await {
            tracing::warn!("streaming the attempt's bus records: {e}");
        }
        let cancelled = match ran {
            Ok(RoleEnd::Exited) => false,
            Ok(RoleEnd::Cancelled) => true,
            Ok(RoleEnd::LeaseLost) => {
                self.remove_worktree(&work);
                return Ok(TicketEnd::LeaseLost);
            }
            Err(e) => {
                self.say(&format!(
                    "[worker {}] {}: {e}",
                    self.options.host_id,
                    task.id.as_str()
                ));
                return self.release(&task, &worker, ticket, &work).await;
            }
        };
        let replica = if cancelled {
            // Recorded as one machine records a cancel: failed, with
            // `cancelled` in its result (a retry runs it again).
            let mut t = task.clone();
            t.status = TaskStatus::Failed;
            t.result = Some(cancelled_result());
            t
        } else {
            let (dir, id) = (session_dir.clone(), task.id.clone());
            blocking(move || FileTaskStore::for_session(&dir).get(&id)).await?
        };
        if !ended(replica.status) {
            return self.release(&task, &worker, ticket, &work).await;
        }
        let end = self
            .record_end(
                &task,
                &worker,
                ticket,
                &replica,
                &work,
                &session_dir,
                &tip,
                started_at,
                stream.published,
            )
            .await;
        self.remove_worktree(&work);
        end
    }

    /// The worktree of this attempt, the session folder in it, the tip it
    /// starts from and the configuration file its role binary reads.
    async fn prepare(&self, task: &Task, work: &Path) -> Result<(PathBuf, String, PathBuf)> {
        let tip = {
            let _one = self.syncing.lock().await;
            self.repo.sync(&self.cache, &self.scratch).await?
        }
        .ok_or_else(|| FleetError::Invalid {
            what: "the integration tip".into(),
            message: "nothing was published yet".into(),
        })?;
        self.remove_worktree(work);
        let work_arg = work.display().to_string();
        git(
            &self.cache_dir,
            &["worktree", "add", "-q", "--detach", &work_arg, &tip],
        )?;
        let kit = self.refresh_kit().await?;
        let session_dir = kit.write_into(work)?;
        let mut replica = task.clone();
        replica.status = TaskStatus::Pending;
        replica.lease = None;
        replica.attempts = task.attempts.saturating_sub(1);
        let store = FileTaskStore::for_session(&session_dir);
        let mut tasks = vec![replica];
        for blocker in &task.blocked_by {
            let (kv, b) = (self.store.clone(), blocker.clone());
            tasks.push(blocking(move || kv.get(&b)).await?);
        }
        for t in tasks {
            wavecrew_core::fsutil::write_json_atomic(&store.path_of(&t.id), &t)?;
        }
        let config = work.with_extension("toml");
        let text = in_place_config(kit.config.as_deref())?;
        wavecrew_core::fsutil::write_atomic(&config, text.as_bytes())?;
        Ok((session_dir, tip, config))
    }

    /// Whether a person asked to cancel attempt `attempt` of `task` (its KV
    /// entry says so). A store out of reach says no.
    async fn cancel_asked(&self, task: &Task) -> bool {
        let (store, id, attempt) = (self.store.clone(), task.id.clone(), task.attempts);
        let read = tokio::time::timeout(CANCEL_LOOK, blocking(move || store.get(&id))).await;
        matches!(read, Ok(Ok(t)) if cancel_asked(&t, attempt))
    }

    /// One lease renewal and progress ack, whatever comes of them (the end
    /// that follows finds out whether the lease is still this host's).
    async fn renew(&self, task: &Task, worker: &WorkerInfo, ticket: &Ticket) {
        let (store, id, w) = (self.store.clone(), task.id.clone(), worker.clone());
        let renewed = tokio::time::timeout(
            self.card.ack_wait() / 3,
            blocking(move || store.heartbeat(&id, &w)),
        )
        .await;
        if matches!(renewed, Ok(Ok(())))
            && let Err(e) = ticket.progress().await
        {
            tracing::warn!("progress ack: {e}");
        }
    }

    /// Run the role binary with heartbeats, looking for a person's cancel
    /// every second: how it ended (a lost lease or a cancel stopped it).
    async fn run_role(
        &self,
        task: &Task,
        worker: &WorkerInfo,
        ticket: &Ticket,
        session_dir: &Path,
        config: &Path,
        stream: &mut RecordStream,
    ) -> Result<RoleEnd> {
        let kit = self.kit();
        let launcher = wavecrew_orchestrator::launch::Launcher {
            session_dir: session_dir.to_owned(),
            session_id: SessionId::new(&kit.session_id).map_err(|e| FleetError::Invalid {
                what: "the session kit's session id".into(),
                message: e.to_string(),
            })?,
            roles: kit.roles.clone(),
            backend: None,
            config_file: Some(config.to_owned()),
            sandbox: None,
            bin_dir: self.options.bin_dir.clone(),
            on_failure: FailurePolicy::Always,
        };
        let (program, args, _) =
            launcher
                .command(task, false)
                .ok_or_else(|| FleetError::Invalid {
                    what: task.id.as_str().to_owned(),
                    message: "no role of the session takes it".into(),
                })?;
        let log_path = wavecrew_core::SessionLayout::new(session_dir).worker_log(task.id.as_str());
        let mut child = wavecrew_sys::process::spawn_logged(
            &program,
            &args,
            &log_path,
            wavecrew_sys::process::LoggedSpawn {
                new_group: true,
                kill_on_drop: true,
            },
        )
        .map_err(|e| FleetError::io("starting", &program, e))?;
        let pid = child.id();
        let beat = self.card.ack_wait() / 3;
        let mut last_ok = Instant::now();
        let mut next_beat = Instant::now() + beat;
        // One clock for everything the loop does: the records every tick,
        // a look for a cancel every `CANCEL_LOOK`, a heartbeat every `beat`.
        let mut tick = tokio::time::interval(STREAM_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut next_look = Instant::now() + CANCEL_LOOK.min(beat);
        loop {
            tokio::select! {
                status = child.wait() => {
                    status.map_err(|e| FleetError::io("waiting for", &program, e))?;
                    return Ok(RoleEnd::Exited);
                }
                _ = tick.tick() => {
                    // A record that cannot be published now is published
                    // with the next tick, or at the attempt's end.
                    if let Err(e) = stream.flush(&self.bus, &self.options.host_id).await {
                        tracing::warn!("streaming the attempt's bus records: {e}");
                    }
                    if Instant::now() < next_look {
                        continue;
                    }
                    next_look = Instant::now() + CANCEL_LOOK.min(beat);
                    if self.cancel_asked(task).await {
                        // The lease is renewed around the stop, so the
                        // attempt is still this host's to record.
                        self.renew(task, worker, ticket).await;
                        if let Some(pid) = pid {
                            wavecrew_sys::process::terminate_tree(pid, CANCEL_GRACE).await;
                        }
                        let _ = child.wait().await;
                        self.renew(task, worker, ticket).await;
                        return Ok(RoleEnd::Cancelled);
                    }
                    if Instant::now() < next_beat {
                        continue;
                    }
                    next_beat = Instant::now() + beat;
                    let (store, id, w) = (self.store.clone(), task.id.clone(), worker.clone());
                    let renewal = tokio::time::timeout(
                        beat,
                        blocking(move || store.heartbeat(&id, &w)),
                    )
                    .await;
                    match renewal {
                        Ok(Ok(())) => {
                            last_ok = Instant::now();
                            if let Err(e) = ticket.progress().await {
                                tracing::warn!("progress ack: {e}");
                            }
                        }
                        Ok(Err(CoreError::LeaseLost { .. })) => {
                            kill_group(pid);
                            let _ = child.wait().await;
                            return Ok(RoleEnd::LeaseLost);
                        }
                        _ if last_ok.elapsed() >= self.card.ack_wait() => {
                            // Cut off for as long as a ticket stays: the task
                            // is someone else's by now.
                            kill_group(pid);
                            let _ = child.wait().await;
                            return Ok(RoleEnd::LeaseLost);
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // one attempt's whole context
    async fn record_end(
        &self,
        task: &Task,
        worker: &WorkerInfo,
        ticket: Ticket,
        replica: &Task,
        work: &Path,
        session_dir: &Path,
        tip: &str,
        started_at: SystemTime,
        streamed: usize,
    ) -> Result<TicketEnd> {
        let id = task.id.as_str();
        let attempt = task.attempts;
        let kit = self.kit();
        let first = Path::new(&kit.session_rel)
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let branch = attempt_branch(id, attempt);
        let mut commit = None;
        if replica.status == TaskStatus::Completed {
            git(work, &["add", "--all"])?;
            if !first.is_empty() {
                git(work, &["reset", "-q", "--", &format!(":(literal){first}")])?;
            }
            if !git_test(work, &["diff", "--cached", "--quiet"])? {
                let message = format!(
                    "wavecrew: {id} attempt {attempt} on {}",
                    self.options.host_id
                );
                git(work, &["commit", "-q", "--no-verify", "-m", &message])?;
                let head = git(work, &["rev-parse", "HEAD"])?;
                git(work, &["update-ref", &branch, &head, ""])?;
                commit = self
                    .repo
                    .send_attempt(&self.cache, id, attempt, &branch, tip, &self.scratch)
                    .await?;
            }
        }
        let (files, records) = {
            let (dir, id) = (session_dir.to_owned(), id.to_owned());
            blocking(move || AttemptPack::collect(&dir, &id, started_at, streamed)).await?
        };
        let pack = AttemptPack {
            task: id.to_owned(),
            attempt,
            host: self.options.host_id.clone(),
            status: replica.status,
            commit: commit.clone(),
            files,
            records,
            records_from: streamed,
        };
        let pack_name = pack.upload(&self.objects, &self.scratch).await?;
        let mut result = replica.result.clone().unwrap_or_else(|| json!({}));
        if !result.is_object() {
            result = json!({ "value": result });
        }
        if let Some(map) = result.as_object_mut() {
            map.insert(
                "remote".into(),
                json!({
                    "host": self.options.host_id,
                    "attempt": attempt,
                    "pack": pack_name,
                    "commit": commit,
                    "base": tip,
                }),
            );
        }
        let (store, tid, w, status) = (
            self.store.clone(),
            task.id.clone(),
            worker.clone(),
            replica.status,
        );
        let finished = blocking(move || store.finish(&tid, &w, status, Some(result))).await;
        match finished {
            Ok(_) => {}
            Err(CoreError::LeaseLost { .. }) => return Ok(TicketEnd::LeaseLost),
            Err(e) => return Err(e.into()),
        }
        if status == TaskStatus::Completed {
            ticket.ack().await?;
        } else {
            ticket.term().await?;
        }
        Ok(TicketEnd::Recorded(status))
    }

    /// The attempt ended without an end: the task goes back to pending in
    /// KV and the ticket comes back later (on its last delivery the task
    /// fails instead, and the ticket is termed).
    async fn release(
        &self,
        task: &Task,
        worker: &WorkerInfo,
        ticket: Ticket,
        work: &Path,
    ) -> Result<TicketEnd> {
        self.remove_worktree(work);
        let last = ticket.is_final_delivery();
        let (store, id, w) = (self.store.clone(), task.id.clone(), worker.clone());
        let host = self.options.host_id.clone();
        let released = blocking(move || {
            if last {
                store.finish(
                    &id,
                    &w,
                    TaskStatus::Failed,
                    Some(json!({"error": format!("its worker crashed on every delivery (last on {host})")})),
                )
            } else {
                store.finish(&id, &w, TaskStatus::Pending, None)
            }
        })
        .await;
        match released {
            Ok(_) => {}
            Err(CoreError::LeaseLost { .. }) => return Ok(TicketEnd::LeaseLost),
            Err(e) => return Err(e.into()),
        }
        if last {
            ticket.term().await?;
        } else {
            ticket.nak_after(Duration::from_secs(1)).await?;
        }
        Ok(TicketEnd::Crashed)
    }

    fn remove_worktree(&self, work: &Path) {
        if work.exists() {
            let arg = work.display().to_string();
            if git(&self.cache_dir, &["worktree", "remove", "--force", &arg]).is_err() {
                let _ = std::fs::remove_dir_all(work);
            }
        }
        let _ = git(&self.cache_dir, &["worktree", "prune"]);
    }
}

/// The coordinator's configuration with `[isolation] mode = "in-place"`:
/// on a host, the attempt's worktree is the isolation.
fn in_place_config(text: Option<&str>) -> Result<String> {
    let mut table: toml::Table = match text {
        Some(text) => text
            .parse()
            .map_err(|e: toml::de::Error| FleetError::Invalid {
                what: "the session's wavecrew.toml".into(),
                message: e.message().to_owned(),
            })?,
        None => toml::Table::new(),
    };
    let isolation = table
        .entry("isolation")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(isolation) = isolation {
        isolation.insert("mode".into(), toml::Value::String("in-place".into()));
    }
    // The engine is the coordinator's business, not the role binary's.
    table.remove("engine");
    toml::to_string(&table).map_err(|e| FleetError::Invalid {
        what: "the session's wavecrew.toml".into(),
        message: e.to_string(),
    })
}

/// SIGKILL the process group of `pid` (the role binary and its agent).
fn kill_group(pid: Option<u32>) {
    wavecrew_sys::process::kill_group(pid);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_binary_works_in_place_in_its_worktree() {
        let text = in_place_config(Some(
            "[isolation]\nmode = \"worktree\"\ncopy = [\".env\"]\n\n[engine]\nurl = \"nats://x:4222\"\n",
        ))
        .unwrap();
        let table: toml::Table = text.parse().unwrap();
        assert_eq!(table["isolation"]["mode"].as_str(), Some("in-place"));
        assert_eq!(table["isolation"]["copy"][0].as_str(), Some(".env"));
        assert!(table.get("engine").is_none());
        let bare: toml::Table = in_place_config(None).unwrap().parse().unwrap();
        assert_eq!(bare["isolation"]["mode"].as_str(), Some("in-place"));
    }
}
