//! The live feed of one open page: what changed in the session since the
//! page read it, as [`Change`]s. Bus records are followed from the byte
//! offset the page's snapshot ended at (only the new bytes are read); a
//! record naming a task makes that task's file be read again at once; a
//! cheap look at the store's file times (no file read unless one changed)
//! catches changes no record announced, and the pause flag is watched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use wavecrew_core::{FileTaskStore, TaskId, TaskStore};

/// How often the bus is looked at.
pub const BUS_POLL: Duration = Duration::from_millis(25);
/// How often the store's file times are looked at.
pub const STORE_POLL: Duration = Duration::from_millis(250);

/// How far a file's time may lag the clock a snapshot's `store_since` is
/// read from (the kernel stamps files with its coarse clock); generous,
/// since sending a change the page has already shown costs nothing.
const MTIME_LAG: Duration = Duration::from_secs(1);

/// One change, as the page receives it (an SSE event name and its JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `record`, `task` or `control`.
    pub event: &'static str,
    /// Its data.
    pub data: Value,
}

/// Follows one session for one page.
#[derive(Debug)]
pub struct Feed {
    session_dir: PathBuf,
    follower: wavecrew_msgbus::Follower,
    seen: HashMap<String, FileStamp>,
    states: HashMap<String, String>,
    paused: bool,
    last_scan: Option<Instant>,
    /// What to send before anything else.
    first: Vec<Change>,
}

impl Feed {
    /// A feed of `session_dir` from the bus byte `offset` and the store as
    /// of `since` (the page's snapshot's `bus_offset` and `store_since`:
    /// what changed between the snapshot and this feed is sent first, so
    /// nothing falls between them).
    pub fn new(session_dir: &Path, offset: u64, since: SystemTime) -> Feed {
        let mut feed = Feed {
            session_dir: session_dir.to_owned(),
            follower: wavecrew_msgbus::Follower::new(
                wavecrew_msgbus::BusPaths::log_in(session_dir),
                offset,
                BUS_POLL,
            ),
            seen: HashMap::new(),
            states: HashMap::new(),
            paused: wavecrew_core::Control::new(session_dir).is_paused(),
            last_scan: None,
            first: Vec::new(),
        };
        // The store as it is now; a task whose file changed since the
        // snapshot began is news already. A file's time comes from the
        // kernel's coarse clock, which lags the clock `since` was read from
        // by up to a tick: a file written just after the snapshot can be
        // stamped just before it, and would be taken for the baseline (the
        // page then never showed that change). Files of the last second
        // before `since` count as news too: a change sent twice is shown
        // once.
        let mut first = Vec::new();
        let since = since
            .checked_sub(MTIME_LAG)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        feed.scan_store_since(&mut first, Some(since));
        first.push(Change {
            event: "control",
            data: json!({"paused": feed.paused}),
        });
        feed.first = first;
        feed.last_scan = Some(Instant::now());
        feed
    }

    /// The changes since the last call, the task store read whatever the
    /// time since its last read (the cockpit's last read before it closes).
    pub fn poll_all(&mut self) -> Vec<Change> {
        self.last_scan = None;
        self.poll()
    }

    /// The changes since the last call.
    pub fn poll(&mut self) -> Vec<Change> {
        let mut out = std::mem::take(&mut self.first);
        let records = self.follower.poll_now().unwrap_or_default();
        let mut touched: Vec<String> = Vec::new();
        for r in records {
            if let Some(id) = r
                .data
                .as_ref()
                .and_then(|d| d.get("task_id"))
                .and_then(Value::as_str)
                && !touched.iter().any(|t| t == id)
            {
                touched.push(id.to_owned());
            }
            out.push(Change {
                event: "record",
                data: serde_json::to_value(&r).unwrap_or(Value::Null),
            });
        }
        for id in touched {
            self.read_task(&id, &mut out);
        }
        if self.last_scan.is_none_or(|at| at.elapsed() >= STORE_POLL) {
            self.scan_store(&mut out);
            self.last_scan = Some(Instant::now());
            let paused = wavecrew_core::Control::new(&self.session_dir).is_paused();
            if paused != self.paused {
                self.paused = paused;
                out.push(Change {
                    event: "control",
                    data: json!({"paused": paused}),
                });
            }
        }
        out
    }

    fn read_task(&mut self, id: &str, out: &mut Vec<Change>) {
        let Ok(tid) = TaskId::new(id) else { return };
        let Ok(task) = FileTaskStore::for_session(&self.session_dir).get(&tid) else {
            return;
        };
        // What the page shows of a task: its state, and whether it waits
        // for a review, of which work (a blocked task may start or stop
        // waiting; a revision waits on a new branch).
        let branch = task
            .result
            .as_ref()
            .and_then(|r| r.get("branch"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        // The host of a running task (a coordinator's remote task changes
        // host when another host takes it over).
        let host = task
            .lease
            .as_ref()
            .filter(|_| task.status == wavecrew_core::TaskStatus::InProgress)
            .map(|l| l.host.clone());
        let mut state = if task.awaiting_review() {
            format!("{}+review:{branch}", task.status.as_str())
        } else {
            task.status.as_str().to_owned()
        };
        if let Some(h) = &host {
            state.push('@');
            state.push_str(h);
        }
        if self.states.get(id) == Some(&state) {
            return;
        }
        self.states.insert(id.to_owned(), state);
        out.push(Change {
            event: "task",
            data: json!({
                "id": id,
                "state": task.status.as_str(),
                "error": task.error(),
                "attempts": task.attempts,
                "awaiting_review": task.awaiting_review(),
                "host": host,
            }),
        });
    }

    fn scan_store(&mut self, out: &mut Vec<Change>) {
        self.scan_store_since(out, None);
    }

    /// Look at the store's file times: a file that changed since the last
    /// look is read again; on the first look (`since` given), only a file
    /// changed at or after `since` is news, the others set the baseline.
    fn scan_store_since(&mut self, out: &mut Vec<Change>, since: Option<SystemTime>) {
        let dir = wavecrew_core::SessionLayout::new(&self.session_dir).tasks();
        let mut changed = Vec::new();
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            if id.starts_with('.') {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            let stamp = FileStamp::of(&meta);
            if self.seen.get(id) != Some(&stamp) {
                self.seen.insert(id.to_owned(), stamp);
                changed.push((id.to_owned(), since.is_none_or(|t| stamp.modified >= t)));
            }
        }
        for (id, news) in changed {
            if news {
                self.read_task(&id, out);
            } else {
                self.read_task(&id, &mut Vec::new());
            }
        }
    }
}

/// What tells one version of a task file from the next. A task file is
/// rewritten whole (a temporary file renamed over it), so each version is
/// a new inode: two rewrites within one tick of the file clock that keep
/// its length still differ there. (Time and length alone missed such a
/// rewrite, and the page never showed it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    modified: SystemTime,
    len: u64,
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            inode: meta.ino(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            len: meta.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::{Task, TaskStatus};

    /// A session folder with an empty task store (the folder lives as long
    /// as the returned guard).
    fn session() -> (tempfile::TempDir, PathBuf, FileTaskStore) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".workflow/.team/TC-live-2026-11-25");
        std::fs::create_dir_all(&dir).unwrap();
        let store = FileTaskStore::for_session(&dir);
        (tmp, dir, store)
    }

    /// The path of `id`'s task file in the session `dir`.
    fn task_file(dir: &Path, id: &str) -> PathBuf {
        wavecrew_core::SessionLayout::new(dir)
            .tasks()
            .join(format!("{id}.json"))
    }

    /// Stamp `file` with the modification time `at`.
    fn set_mtime(file: &Path, at: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    #[test]
    fn new_records_and_store_changes_arrive_once() {
        let (_tmp, dir, store) = session();
        let id = TaskId::new("IMPL-001").unwrap();
        store.create(Task::new(id.clone(), "one", "")).unwrap();
        let bus = crate::actions::session_bus(&dir).unwrap();
        let mut feed = Feed::new(
            &dir,
            0,
            SystemTime::now() + std::time::Duration::from_secs(60),
        );
        let first = feed.poll();
        assert_eq!(first.len(), 1, "{first:?}");
        assert_eq!(first[0].data, json!({"paused": false}));
        assert!(feed.poll().is_empty(), "nothing new yet");
        store
            .update(&id, &mut |t| {
                t.status = TaskStatus::Completed;
                Ok(())
            })
            .unwrap();
        let mut data = serde_json::Map::new();
        data.insert("task_id".into(), json!("IMPL-001"));
        wavecrew_core::MessageBus::log(
            &bus,
            wavecrew_core::NewMessage {
                from: "executor".into(),
                kind: Some("task_complete".into()),
                summary: Some("<b>IMPL-001</b> complete".into()),
                data: Some(data),
                ..Default::default()
            },
        )
        .unwrap();
        let changes = feed.poll();
        let events: Vec<&str> = changes.iter().map(|c| c.event).collect();
        assert_eq!(events, ["record", "task"]);
        assert_eq!(changes[0].data["summary"], "<b>IMPL-001</b> complete");
        assert_eq!(changes[1].data["state"], "completed");
        std::thread::sleep(STORE_POLL);
        assert!(feed.poll().is_empty(), "the store scan finds nothing new");
        wavecrew_core::Control::new(&dir).pause().unwrap();
        std::thread::sleep(STORE_POLL);
        let changes = feed.poll();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].data, json!({"paused": true}));
    }

    /// A rewrite that keeps the file's length within one tick of the file
    /// clock (`blocked` → `pending`, a person's reject) is still seen.
    #[test]
    fn a_rewrite_of_the_same_length_and_time_is_seen() {
        let (_tmp, dir, store) = session();
        let id = TaskId::new("IMPL-001").unwrap();
        let mut task = Task::new(id.clone(), "one", "");
        task.status = TaskStatus::Blocked;
        store.create(task).unwrap();
        let mut feed = Feed::new(&dir, 0, SystemTime::UNIX_EPOCH);
        feed.poll();
        let file = task_file(&dir, "IMPL-001");
        let before = std::fs::metadata(&file).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let after = text.replace("\"blocked\"", "\"pending\"");
        assert_ne!(text, after);
        // Rewritten as the store rewrites it: a new file renamed over it,
        // here with the old one's time.
        let new = file.with_extension("json.tmp");
        std::fs::write(&new, &after).unwrap();
        set_mtime(&new, before.modified().unwrap());
        std::fs::rename(&new, &file).unwrap();
        let now = std::fs::metadata(&file).unwrap();
        assert_eq!(
            (now.len(), now.modified().unwrap()),
            (before.len(), before.modified().unwrap())
        );
        std::thread::sleep(STORE_POLL);
        let changes = feed.poll();
        assert!(
            changes
                .iter()
                .any(|c| c.event == "task" && c.data["state"] == "pending"),
            "{changes:?}"
        );
    }

    /// A task that ends just after the store was read is sent at once by
    /// the last read before the cockpit closes (a plain poll waits for the
    /// store's interval).
    #[test]
    fn the_last_read_sends_a_change_made_within_the_poll_interval() {
        let (_tmp, dir, store) = session();
        let id = TaskId::new("IMPL-003").unwrap();
        store.create(Task::new(id.clone(), "three", "")).unwrap();
        let mut feed = Feed::new(&dir, 0, SystemTime::now());
        let _ = feed.poll();
        store
            .update(&id, &mut |t| {
                t.status = TaskStatus::Completed;
                Ok(())
            })
            .unwrap();
        let completed = |changes: &[Change]| {
            changes
                .iter()
                .any(|c| c.event == "task" && c.data["state"] == "completed")
        };
        assert!(
            completed(&feed.poll_all()),
            "read at once, whatever the interval"
        );
    }

    /// A task file written just after the snapshot began, stamped by the
    /// coarse file clock a little before it, is still news.
    #[test]
    fn a_change_stamped_just_before_the_snapshot_is_still_sent() {
        let (_tmp, dir, store) = session();
        let id = TaskId::new("IMPL-002").unwrap();
        store.create(Task::new(id.clone(), "two", "")).unwrap();
        let since = SystemTime::now();
        store
            .update(&id, &mut |t| {
                t.status = TaskStatus::Completed;
                Ok(())
            })
            .unwrap();
        set_mtime(
            &task_file(&dir, "IMPL-002"),
            since - std::time::Duration::from_millis(4),
        );
        let mut feed = Feed::new(&dir, 0, since);
        let first = feed.poll();
        assert!(
            first
                .iter()
                .any(|c| c.event == "task" && c.data["state"] == "completed"),
            "{first:?}"
        );
    }

    #[test]
    fn what_changed_after_the_snapshot_began_is_sent_first() {
        let (_tmp, dir, store) = session();
        for id in ["IMPL-001", "IMPL-002"] {
            store
                .create(Task::new(TaskId::new(id).unwrap(), id, ""))
                .unwrap();
        }
        // IMPL-001 last changed well before the snapshot (longer ago than
        // the file clock may lag): the baseline.
        let old = SystemTime::now() - std::time::Duration::from_secs(10);
        set_mtime(&task_file(&dir, "IMPL-001"), old);
        // The snapshot begins; then IMPL-002 changes, before the feed.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let since = SystemTime::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        store
            .update(&TaskId::new("IMPL-002").unwrap(), &mut |t| {
                t.status = TaskStatus::InProgress;
                Ok(())
            })
            .unwrap();
        let mut feed = Feed::new(&dir, 0, since);
        let tasks: Vec<Value> = feed
            .poll()
            .into_iter()
            .filter(|c| c.event == "task")
            .map(|c| c.data)
            .collect();
        assert_eq!(tasks.len(), 1, "{tasks:?}");
        assert_eq!(tasks[0]["id"], "IMPL-002");
        assert_eq!(tasks[0]["state"], "in_progress");
    }
}
