//! The task store: the `TaskStore` port and its file implementation.
//!
//! [`FileTaskStore`] keeps one JSON file per task in `<session>/tasks/<ID>.json`
//! (our stand-in for Claude Code's TaskList). Reads need no lock: every write
//! replaces a whole file atomically, so a reader sees the old task or the new
//! one. Every read-modify-write (create, update, claim, heartbeat, finish,
//! reconcile) holds an exclusive `flock` on `tasks/.lock`, so two processes
//! claiming the same task cannot both win.
//!
//! A claim moves a task from `pending` to `in_progress` and records a
//! [`Lease`] (worker, pid, host, heartbeat). A lease is expired when its
//! process is gone (pid dead on this host) or its heartbeat is older than the
//! stall limit; [`TaskStore::reconcile`] puts such tasks back to `pending`.
//!
//! A task file that cannot be read (corrupt JSON, an id that does not match
//! its name) is reported with its path by [`TaskStore::list_lenient`], beside
//! every task that can be read; [`TaskStore::list`] fails naming them all.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::error::{CoreError, Result};
use crate::fsutil;
use crate::id::TaskId;
use crate::task::{Lease, Task, TaskStatus};

/// The identity of a worker taking tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerInfo {
    /// The worker's name (a role, possibly with a suffix).
    pub worker: String,
    /// Its process id.
    pub pid: u32,
    /// Its host name.
    pub host: String,
}

impl WorkerInfo {
    /// This process, under the given worker name.
    pub fn current(worker: impl Into<String>) -> Self {
        WorkerInfo {
            worker: worker.into(),
            pid: std::process::id(),
            host: this_host(),
        }
    }

    /// Whether `lease` is this worker's: same name, pid and host.
    pub fn owns(&self, lease: &Lease) -> bool {
        lease.worker == self.worker && lease.pid == self.pid && lease.host == self.host
    }
}

/// This machine's host name (empty when it cannot be read).
pub fn this_host() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
}

/// When a lease counts as expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeasePolicy {
    /// A heartbeat older than this expires the lease, wherever the worker runs.
    pub stall_after: Duration,
}

impl Default for LeasePolicy {
    fn default() -> Self {
        LeasePolicy {
            stall_after: Duration::from_secs(600),
        }
    }
}

impl LeasePolicy {
    /// Whether `lease` is expired at `now`: its pid is dead on this host, or
    /// its heartbeat is older than the stall limit.
    pub fn is_expired(&self, lease: &Lease, now: jiff::Timestamp) -> bool {
        if lease.host == this_host() && !pid_alive(lease.pid) {
            return true;
        }
        let age = now.duration_since(lease.heartbeat_at);
        age.unsigned_abs() > self.stall_after && age.is_positive()
    }
}

/// Whether a process with this pid exists on this host (a zombie counts as
/// gone).
pub use wavecrew_sys::process::pid_alive;

/// What a claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The task is now `in_progress` under the caller's lease.
    Claimed(Box<Task>),
    /// The task is not pending (someone else finished or holds it).
    NotPending(TaskStatus),
    /// Some blockers are not completed yet (ids listed).
    Blocked(Vec<TaskId>),
}

/// When a task's blockers let it be claimed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BlockerRule {
    /// Every blocker completed (the seeds' rule).
    #[default]
    Completed,
    /// Every blocker ended: completed, failed or skipped (the `always`
    /// failure policy: dependents run after a failure).
    Ended,
}

impl BlockerRule {
    /// Whether a blocker in `status` lets its dependent start.
    pub fn met_by(self, status: TaskStatus) -> bool {
        match self {
            BlockerRule::Completed => status == TaskStatus::Completed,
            BlockerRule::Ended => status.is_terminal(),
        }
    }
}

// The transitions every task store applies, whatever holds the tasks (files
// under a lock here, a KV bucket under compare-and-set in engine-nats): one
// place decides what a claim, a heartbeat, a finish and a reconcile do.

/// Whether `task` may be claimed under `rule`: `Ok(None)` when it may, the
/// refusal ([`Claim::NotPending`] or [`Claim::Blocked`]) when not.
/// `blocker` reads a blocker's status, `Ok(None)` for a blocker the store
/// does not hold (it counts as not met).
pub fn claim_refusal(
    task: &Task,
    rule: BlockerRule,
    blocker: &mut dyn FnMut(&TaskId) -> Result<Option<TaskStatus>>,
) -> Result<Option<Claim>> {
    if task.status != TaskStatus::Pending {
        return Ok(Some(Claim::NotPending(task.status)));
    }
    let mut waiting = Vec::new();
    for id in &task.blocked_by {
        match blocker(id)? {
            Some(status) if rule.met_by(status) => {}
            _ => waiting.push(id.clone()),
        }
    }
    Ok((!waiting.is_empty()).then_some(Claim::Blocked(waiting)))
}

/// Give `task` to `worker` at `now`: in progress, one more attempt, a fresh
/// lease. Call it only after [`claim_refusal`] said yes.
pub fn take_lease(task: &mut Task, worker: &WorkerInfo, now: jiff::Timestamp) {
    task.status = TaskStatus::InProgress;
    task.attempts += 1;
    task.lease = Some(Lease {
        worker: worker.worker.clone(),
        pid: worker.pid,
        host: worker.host.clone(),
        acquired_at: now,
        heartbeat_at: now,
    });
}

/// The [`CoreError::LeaseLost`] of `worker` trying `action` on `task`.
fn lease_lost(task: &Task, worker: &WorkerInfo, action: &'static str) -> CoreError {
    let holder = match &task.lease {
        Some(l) => format!("; `{}` (pid {} on `{}`) holds it", l.worker, l.pid, l.host),
        None => String::new(),
    };
    CoreError::LeaseLost {
        id: task.id.to_string(),
        worker: worker.worker.clone(),
        action,
        state: format!(
            "{} and not leased by `{}` (pid {} on `{}`){holder}",
            task.status, worker.worker, worker.pid, worker.host
        ),
    }
}

/// Refresh `worker`'s lease on `task` at `now`; [`CoreError::LeaseLost`]
/// when the task is not in progress under `worker`'s lease.
pub fn renew_lease(task: &mut Task, worker: &WorkerInfo, now: jiff::Timestamp) -> Result<()> {
    match &mut task.lease {
        Some(lease) if task.status == TaskStatus::InProgress && worker.owns(lease) => {
            lease.heartbeat_at = now;
            Ok(())
        }
        _ => Err(lease_lost(task, worker, "heartbeat")),
    }
}

/// End `worker`'s attempt on `task`: the new status, no lease, the result
/// (an earlier one is kept when `result` is `None`);
/// [`CoreError::LeaseLost`] when `worker` does not hold the task.
pub fn end_attempt(
    task: &mut Task,
    worker: &WorkerInfo,
    status: TaskStatus,
    result: Option<Value>,
) -> Result<()> {
    let owned = task.lease.as_ref().is_some_and(|l| worker.owns(l));
    if task.status != TaskStatus::InProgress || !owned {
        return Err(lease_lost(task, worker, "finish"));
    }
    task.status = status;
    task.lease = None;
    if result.is_some() {
        task.result = result;
    }
    Ok(())
}

/// Put `task` back to pending when it is in progress and its lease is
/// expired (or missing) at `now`; returns whether it did.
pub fn release_if_expired(task: &mut Task, policy: &LeasePolicy, now: jiff::Timestamp) -> bool {
    if task.status != TaskStatus::InProgress {
        return false;
    }
    let expired = task
        .lease
        .as_ref()
        .is_none_or(|l| policy.is_expired(l, now));
    if expired {
        task.status = TaskStatus::Pending;
        task.lease = None;
        // It was in progress: an attempt started (even one another
        // program began), so the next claim looks for its record.
        task.attempts = task.attempts.max(1);
    }
    expired
}

/// A task file that could not be read: its path and why.
#[derive(Debug)]
pub struct TaskFileProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it (the message names the file and the field).
    pub error: CoreError,
}

/// The tasks that could be read, and the files that could not.
#[derive(Debug, Default)]
pub struct TaskListing {
    /// Every readable task, ordered by id (number first, then text).
    pub tasks: Vec<Task>,
    /// One entry per unreadable task file (corrupt JSON, an id that does
    /// not match the file name, a name that is not a task id), by path.
    pub problems: Vec<TaskFileProblem>,
}

impl TaskListing {
    /// The tasks, or an error naming every unreadable file.
    pub fn into_result(self) -> Result<Vec<Task>> {
        let mut problems = self.problems;
        match problems.len() {
            0 => Ok(self.tasks),
            1 => Err(problems.remove(0).error),
            _ => Err(CoreError::CorruptTasks {
                count: problems.len(),
                details: problems
                    .iter()
                    .map(|p| p.error.to_string())
                    .collect::<Vec<_>>()
                    .join("\n  "),
            }),
        }
    }
}

/// Where tasks live, and the only way their state changes.
///
/// The trait is synchronous (file I/O); async callers use
/// `tokio::task::spawn_blocking`. A networked store implements the same
/// contract: a claim succeeds for exactly one caller.
pub trait TaskStore: Send + Sync {
    /// Every task, ordered by id (number first, then text). Fails when a
    /// task file cannot be read, naming it (every one of them).
    fn list(&self) -> Result<Vec<Task>> {
        self.list_lenient()?.into_result()
    }
    /// Every task that can be read, and every task file that cannot, with
    /// its path: one corrupt file does not hide the others. Fails only when
    /// the store itself cannot be listed.
    fn list_lenient(&self) -> Result<TaskListing>;
    /// One task.
    fn get(&self, id: &TaskId) -> Result<Task>;
    /// Add a new task; fails if the id exists.
    fn create(&self, task: Task) -> Result<Task>;
    /// Change a task under the lock; `f` sees the current version.
    fn update(&self, id: &TaskId, f: &mut dyn FnMut(&mut Task) -> Result<()>) -> Result<Task>;
    /// Take a pending task whose blockers are all completed.
    fn claim(&self, id: &TaskId, worker: &WorkerInfo) -> Result<Claim> {
        self.claim_with(id, worker, BlockerRule::Completed)
    }
    /// Take a pending task whose blockers all meet `rule`.
    fn claim_with(&self, id: &TaskId, worker: &WorkerInfo, rule: BlockerRule) -> Result<Claim>;
    /// Refresh the caller's lease on a task it holds.
    fn heartbeat(&self, id: &TaskId, worker: &WorkerInfo) -> Result<()>;
    /// Record the end of the caller's attempt: the new state and the result.
    fn finish(
        &self,
        id: &TaskId,
        worker: &WorkerInfo,
        status: TaskStatus,
        result: Option<Value>,
    ) -> Result<Task>;
    /// Reset every in-progress task whose lease is expired (or missing) to
    /// pending; returns their ids.
    fn reconcile(&self, policy: &LeasePolicy) -> Result<Vec<TaskId>>;
}

/// The file task store: `<dir>/<ID>.json`, locked by `<dir>/.lock`.
#[derive(Debug, Clone)]
pub struct FileTaskStore {
    dir: PathBuf,
}

/// Holds the store's exclusive lock until dropped.
struct StoreLock {
    _lock: wavecrew_sys::lock::FileLock,
}

impl FileTaskStore {
    /// A store over `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileTaskStore { dir: dir.into() }
    }

    /// The store of a session folder: `<session>/tasks/`.
    pub fn for_session(session_dir: &Path) -> Self {
        FileTaskStore::new(crate::SessionLayout::new(session_dir).tasks())
    }

    /// The folder holding the task files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of one task.
    pub fn path_of(&self, id: &TaskId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn lock(&self) -> Result<StoreLock> {
        let lock = wavecrew_sys::lock::lock_file(&self.dir.join(".lock"))
            .map_err(|e| CoreError::io(e.step, e.path, e.source))?;
        Ok(StoreLock { _lock: lock })
    }

    fn read(&self, id: &TaskId) -> Result<Task> {
        let path = self.path_of(id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CoreError::TaskNotFound {
                    id: id.to_string(),
                    path: self.dir.clone(),
                });
            }
            Err(e) => return Err(CoreError::io("reading", path, e)),
        };
        let task: Task = fsutil::parse_json(&path, &bytes)?;
        if &task.id != id {
            return Err(CoreError::invalid(
                path,
                "id",
                format!("`{}` does not match the file name `{id}.json`", task.id),
            ));
        }
        Ok(task)
    }

    fn write(&self, task: &mut Task) -> Result<()> {
        task.updated_at = Some(jiff::Timestamp::now());
        fsutil::write_json_atomic(&self.path_of(&task.id), task)
    }
}

/// The tasks that are ready to run: pending, with every blocker completed,
/// in [`task_order`]. The one place that says which tasks are ready.
pub fn ready_tasks(tasks: &[Task]) -> Vec<&Task> {
    let done: std::collections::HashSet<&TaskId> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .map(|t| &t.id)
        .collect();
    let mut ready: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Pending)
        .filter(|t| t.blocked_by.iter().all(|b| done.contains(b)))
        .collect();
    ready.sort_by(|a, b| task_order(&a.id, &b.id));
    ready
}

/// Order tasks by number then text (`IMPL-2` before `IMPL-10`).
pub fn task_order(a: &TaskId, b: &TaskId) -> std::cmp::Ordering {
    fn key(t: &TaskId) -> (Option<&str>, Option<u64>) {
        (t.prefix(), t.number())
    }
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

impl TaskStore for FileTaskStore {
    fn list_lenient(&self) -> Result<TaskListing> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TaskListing::default());
            }
            Err(e) => return Err(CoreError::io("listing", &self.dir, e)),
        };
        let mut listing = TaskListing::default();
        for entry in entries {
            let entry = entry.map_err(|e| CoreError::io("listing", &self.dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            let read = TaskId::new(stem)
                .map_err(|source| CoreError::Id {
                    context: format!("task file `{}`", entry.path().display()),
                    source,
                })
                .and_then(|id| self.read(&id));
            match read {
                Ok(task) => listing.tasks.push(task),
                Err(error) => listing.problems.push(TaskFileProblem {
                    path: entry.path(),
                    error,
                }),
            }
        }
        listing.tasks.sort_by(|a, b| task_order(&a.id, &b.id));
        listing.problems.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listing)
    }

    fn get(&self, id: &TaskId) -> Result<Task> {
        self.read(id)
    }

    fn create(&self, mut task: Task) -> Result<Task> {
        let _lock = self.lock()?;
        if self.path_of(&task.id).exists() {
            return Err(CoreError::TaskExists {
                id: task.id.to_string(),
                path: self.dir.clone(),
            });
        }
        task.created_at.get_or_insert_with(jiff::Timestamp::now);
        self.write(&mut task)?;
        Ok(task)
    }

    fn update(&self, id: &TaskId, f: &mut dyn FnMut(&mut Task) -> Result<()>) -> Result<Task> {
        let _lock = self.lock()?;
        let mut task = self.read(id)?;
        f(&mut task)?;
        if &task.id != id {
            return Err(CoreError::invalid(
                self.path_of(id),
                "id",
                "an update may not change the id",
            ));
        }
        self.write(&mut task)?;
        Ok(task)
    }

    fn claim_with(&self, id: &TaskId, worker: &WorkerInfo, rule: BlockerRule) -> Result<Claim> {
        let _lock = self.lock()?;
        let mut task = self.read(id)?;
        let refusal = claim_refusal(&task, rule, &mut |blocker| match self.read(blocker) {
            Ok(b) => Ok(Some(b.status)),
            Err(CoreError::TaskNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        })?;
        if let Some(refused) = refusal {
            return Ok(refused);
        }
        take_lease(&mut task, worker, jiff::Timestamp::now());
        self.write(&mut task)?;
        tracing::debug!(task = %id, worker = %worker.worker, attempt = task.attempts, "task claimed");
        Ok(Claim::Claimed(Box::new(task)))
    }

    fn heartbeat(&self, id: &TaskId, worker: &WorkerInfo) -> Result<()> {
        let _lock = self.lock()?;
        let mut task = self.read(id)?;
        renew_lease(&mut task, worker, jiff::Timestamp::now())?;
        self.write(&mut task)
    }

    fn finish(
        &self,
        id: &TaskId,
        worker: &WorkerInfo,
        status: TaskStatus,
        result: Option<Value>,
    ) -> Result<Task> {
        let _lock = self.lock()?;
        let mut task = self.read(id)?;
        end_attempt(&mut task, worker, status, result)?;
        self.write(&mut task)?;
        tracing::debug!(task = %id, worker = %worker.worker, status = %status, "task finished");
        Ok(task)
    }

    fn reconcile(&self, policy: &LeasePolicy) -> Result<Vec<TaskId>> {
        let _lock = self.lock()?;
        let now = jiff::Timestamp::now();
        let mut reset = Vec::new();
        // A corrupt file is not this method's to judge: the others go on.
        for mut task in self.list_lenient()?.tasks {
            if release_if_expired(&mut task, policy, now) {
                self.write(&mut task)?;
                reset.push(task.id.clone());
            }
        }
        Ok(reset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreaped_child_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pid_alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Exited, not yet waited for: a zombie holds no lease.
        assert!(!pid_alive(pid));
        child.wait().unwrap();
        assert!(pid_alive(std::process::id()));
    }

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    fn store() -> (tempfile::TempDir, FileTaskStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = FileTaskStore::for_session(dir.path());
        (dir, store)
    }

    #[test]
    fn claim_needs_pending_and_completed_blockers() {
        let (_d, s) = store();
        s.create(Task::new(id("IMPL-1"), "a", "")).unwrap();
        let mut t2 = Task::new(id("IMPL-2"), "b", "");
        t2.blocked_by = vec![id("IMPL-1")];
        s.create(t2).unwrap();
        let w = WorkerInfo::current("executor");
        assert_eq!(
            s.claim(&id("IMPL-2"), &w).unwrap(),
            Claim::Blocked(vec![id("IMPL-1")])
        );
        let Claim::Claimed(t) = s.claim(&id("IMPL-1"), &w).unwrap() else {
            panic!()
        };
        assert_eq!(t.status, TaskStatus::InProgress);
        assert_eq!(t.attempts, 1);
        assert_eq!(
            s.claim(&id("IMPL-1"), &w).unwrap(),
            Claim::NotPending(TaskStatus::InProgress)
        );
        s.heartbeat(&id("IMPL-1"), &w).unwrap();
        s.finish(
            &id("IMPL-1"),
            &w,
            TaskStatus::Completed,
            Some(serde_json::json!({"ok": true})),
        )
        .unwrap();
        assert!(matches!(
            s.claim(&id("IMPL-2"), &w).unwrap(),
            Claim::Claimed(_)
        ));
    }

    #[test]
    fn only_the_lease_holder_finishes() {
        let (_d, s) = store();
        s.create(Task::new(id("A-1"), "a", "")).unwrap();
        let w = WorkerInfo::current("w1");
        let other = WorkerInfo::current("w2");
        s.claim(&id("A-1"), &w).unwrap();
        let err = s
            .finish(&id("A-1"), &other, TaskStatus::Completed, None)
            .unwrap_err();
        assert!(err.to_string().contains("not leased by `w2`"), "{err}");
        assert!(
            matches!(&err, CoreError::LeaseLost { id, worker, action: "finish", .. } if id == "A-1" && worker == "w2"),
            "{err:?}"
        );
        let err = s.heartbeat(&id("A-1"), &other).unwrap_err();
        assert!(
            matches!(
                err,
                CoreError::LeaseLost {
                    action: "heartbeat",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("`w1` (pid"), "{err}");
    }

    #[test]
    fn reconcile_resets_dead_and_stale_leases() {
        let (_d, s) = store();
        for n in 1..=3 {
            s.create(Task::new(id(&format!("T-{n}")), "t", "")).unwrap();
        }
        let alive = WorkerInfo::current("alive");
        let dead = WorkerInfo {
            worker: "dead".into(),
            pid: 0x7fff_fff0,
            host: this_host(),
        };
        s.claim(&id("T-1"), &alive).unwrap();
        s.claim(&id("T-2"), &dead).unwrap();
        s.claim(&id("T-3"), &alive).unwrap();
        // Age T-3's heartbeat past the stall limit.
        s.update(&id("T-3"), &mut |t| {
            let lease = t.lease.as_mut().unwrap();
            lease.heartbeat_at -= jiff::SignedDuration::from_secs(3600);
            Ok(())
        })
        .unwrap();
        let reset = s.reconcile(&LeasePolicy::default()).unwrap();
        assert_eq!(reset, vec![id("T-2"), id("T-3")]);
        assert_eq!(s.get(&id("T-1")).unwrap().status, TaskStatus::InProgress);
        assert_eq!(s.get(&id("T-2")).unwrap().status, TaskStatus::Pending);
        assert!(s.get(&id("T-2")).unwrap().lease.is_none());
    }

    #[test]
    fn threads_racing_for_one_task_have_one_winner() {
        let (_d, s) = store();
        s.create(Task::new(id("RACE-1"), "r", "")).unwrap();
        let wins: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..16)
                .map(|n| {
                    let s = s.clone();
                    scope.spawn(move || {
                        let w = WorkerInfo::current(format!("w{n}"));
                        matches!(s.claim(&id("RACE-1"), &w).unwrap(), Claim::Claimed(_))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| usize::from(h.join().unwrap()))
                .sum()
        });
        assert_eq!(wins, 1);
    }

    #[test]
    fn corrupt_file_is_named_and_mismatched_id_refused() {
        let (_d, s) = store();
        fs::create_dir_all(s.dir()).unwrap();
        fs::write(s.dir().join("IMPL-1.json"), "{\"id\": \"IMPL-2\"}").unwrap();
        let err = s.list().unwrap_err().to_string();
        assert!(
            err.contains("IMPL-1.json") && err.contains("field `id`"),
            "{err}"
        );
        fs::write(s.dir().join("IMPL-1.json"), "{\"id\": ").unwrap();
        let err = s.list().unwrap_err().to_string();
        assert!(err.contains("IMPL-1.json") && err.contains("EOF"), "{err}");
    }

    #[test]
    fn one_corrupt_file_among_20_is_reported_and_the_others_listed() {
        let (_d, s) = store();
        for n in 1..=20 {
            s.create(Task::new(id(&format!("T-{n}")), "t", "")).unwrap();
        }
        let bad = s.dir().join("T-7.json");
        fs::write(&bad, "{\"id\": \"T-7\", \"status\": ").unwrap();
        fs::write(s.dir().join("not an id.json"), "{}").unwrap();
        let listing = s.list_lenient().unwrap();
        assert_eq!(listing.tasks.len(), 19);
        assert!(listing.tasks.iter().all(|t| t.id.as_str() != "T-7"));
        let paths: Vec<&Path> = listing.problems.iter().map(|p| p.path.as_path()).collect();
        assert_eq!(
            paths,
            [bad.as_path(), s.dir().join("not an id.json").as_path()]
        );
        assert!(listing.problems[0].error.to_string().contains("T-7.json"));
        // The strict list names every file.
        let err = s.list().unwrap_err().to_string();
        assert!(
            err.starts_with("2 task files cannot be read:")
                && err.contains("T-7.json")
                && err.contains("not an id.json"),
            "{err}"
        );
        // Reconcile goes on with the others.
        let w = WorkerInfo {
            worker: "dead".into(),
            pid: 0x7fff_fff0,
            host: this_host(),
        };
        s.claim(&id("T-3"), &w).unwrap();
        assert_eq!(s.reconcile(&LeasePolicy::default()).unwrap(), [id("T-3")]);
    }

    #[test]
    fn list_orders_numerically() {
        let (_d, s) = store();
        for n in [10, 2, 1] {
            s.create(Task::new(id(&format!("IMPL-{n}")), "t", ""))
                .unwrap();
        }
        let ids: Vec<String> = s
            .list()
            .unwrap()
            .into_iter()
            .map(|t| t.id.to_string())
            .collect();
        assert_eq!(ids, ["IMPL-1", "IMPL-2", "IMPL-10"]);
    }
}
