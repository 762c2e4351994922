//! [`Bus`]: every team_msg operation with ccw's semantics, and the result
//! objects `ccw team … --json` prints.

use std::path::Path;

use serde_json::{Map, Value, json};
use wavecrew_core::{BusCursor, BusMessage, ListFilter, ListResult, MessageBus, NewMessage};

use crate::error::{BusError, Result};
use crate::log::{Durability, LogFile};
use crate::meta::{self, LogFacts};
use crate::paths::{self, BusPaths, KeyUse};
use crate::summary::{self, MemberStats};
use crate::time;

/// One session's message bus.
#[derive(Debug)]
pub struct Bus {
    log: LogFile,
}

/// The result of `status`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// Members sorted by last activity, newest first.
    pub members: Vec<MemberStats>,
    /// Number of records.
    pub total_messages: u64,
}

impl Bus {
    /// The bus of `paths`.
    pub fn new(paths: BusPaths, durability: Durability) -> Self {
        Bus {
            log: LogFile::new(paths, durability),
        }
    }

    /// Open the bus named by a user's key (validated; a session path is
    /// reduced to its folder name and the warning returned). `usage` says
    /// whether the session folder must already exist.
    pub fn open(
        root: &Path,
        key: &str,
        usage: KeyUse,
        durability: Durability,
    ) -> Result<(Bus, Option<String>)> {
        let (paths, warning) = paths::resolve(root, key, usage)?;
        Ok((Bus::new(paths, durability), warning))
    }

    /// The bus's files.
    pub fn paths(&self) -> &BusPaths {
        self.log.paths()
    }

    /// The session key.
    pub fn key(&self) -> &str {
        self.paths().session.as_str()
    }

    /// Fill in ccw's defaults and fold a legacy `ref` into `data.ref`.
    fn complete(message: NewMessage) -> Result<impl FnOnce(String) -> BusMessage> {
        if message.from.trim().is_empty() {
            return Err(BusError::InvalidParams(
                "\"from\" is required for log".into(),
            ));
        }
        let to = message.to.unwrap_or_else(|| "coordinator".to_owned());
        let kind = message.kind.unwrap_or_else(|| "message".to_owned());
        let summary = message
            .summary
            .unwrap_or_else(|| format!("[{}] {kind} → {to}", message.from));
        let mut data = message.data;
        if let Some(r) = message.reference {
            let d = data.get_or_insert_with(Map::new);
            d.entry("ref").or_insert(Value::String(r));
        }
        let from = message.from;
        Ok(move |id: String| BusMessage {
            id,
            ts: time::now_iso(),
            from,
            to,
            kind,
            summary,
            reference: None,
            data,
            extra: Map::new(),
        })
    }

    /// `log`: append a record; a `state_update` with `data` also merges it
    /// into `role_state[from]` of meta.json, under the same lock.
    pub fn log(&self, message: NewMessage) -> Result<BusMessage> {
        let build = Self::complete(message)?;
        let mut guard = self.log.lock()?;
        let record = self.log.append_locked(&mut guard, build)?;
        tracing::trace!(id = %record.id, from = %record.from, to = %record.to, kind = %record.kind, "bus record");
        if record.kind == "state_update"
            && let Some(data) = &record.data
        {
            let facts = LogFacts {
                last_type: Some(record.kind.clone()),
                last_ts: Some(record.ts.clone()),
            };
            let mut meta = meta::effective_meta(self.paths(), &facts);
            meta::apply_state_update(&mut meta, &record.from, data);
            meta::write_meta(self.paths(), &meta)?;
        }
        drop(guard);
        Ok(record)
    }

    /// A `state_update` computed from the current `role_state[from]` under
    /// the bus lock: `update` receives the role's state (empty when none)
    /// and returns the fields to merge. Two workers appending to the same
    /// arrays cannot lose each other's entries (a plain `log` merges what
    /// its caller read earlier, and the later writer wins).
    pub fn update_state(
        &self,
        mut message: NewMessage,
        update: impl FnOnce(&Map<String, Value>) -> Map<String, Value>,
    ) -> Result<BusMessage> {
        let mut guard = self.log.lock()?;
        let facts = LogFacts {
            last_type: None,
            last_ts: None,
        };
        let current = meta::effective_meta(self.paths(), &facts);
        let role = current
            .get("role_state")
            .and_then(|r| r.get(&message.from))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        message.kind = Some("state_update".into());
        message.data = Some(update(&role));
        let build = Self::complete(message)?;
        let record = self.log.append_locked(&mut guard, build)?;
        if let Some(data) = &record.data {
            let facts = LogFacts {
                last_type: Some(record.kind.clone()),
                last_ts: Some(record.ts.clone()),
            };
            let mut meta = meta::effective_meta(self.paths(), &facts);
            meta::apply_state_update(&mut meta, &record.from, data);
            meta::write_meta(self.paths(), &meta)?;
        }
        drop(guard);
        Ok(record)
    }

    /// `broadcast`: `log` with `to` forced to `all`.
    pub fn broadcast(&self, mut message: NewMessage) -> Result<BusMessage> {
        message.to = Some("all".to_owned());
        self.log(message)
    }

    /// `read`: the first record with this id.
    pub fn read(&self, id: &str) -> Result<BusMessage> {
        self.log
            .read_lines()?
            .into_iter()
            .filter_map(|l| l.record)
            .find(|r| r.id == id)
            .ok_or_else(|| BusError::NotFound {
                id: id.to_owned(),
                key: self.key().to_owned(),
            })
    }

    /// `list`: the newest `last` records matching the filter (1–100).
    /// Unfiltered, it reads only the tail and the cached count.
    pub fn list(&self, filter: &ListFilter) -> Result<ListResult> {
        if !(1..=100).contains(&filter.last) {
            return Err(BusError::InvalidParams(format!(
                "last: expected a number from 1 to 100, got {}",
                filter.last
            )));
        }
        let matches = |r: &BusMessage| {
            filter.from.as_ref().is_none_or(|f| &r.from == f)
                && filter.to.as_ref().is_none_or(|t| &r.to == t)
                && filter.kind.as_ref().is_none_or(|k| &r.kind == k)
        };
        if filter.from.is_none() && filter.to.is_none() && filter.kind.is_none() {
            let messages = self.log.tail_records(filter.last, |_| true)?;
            let total = self.summary()?.total;
            return Ok(ListResult {
                total: usize::try_from(total).unwrap_or(usize::MAX),
                messages,
            });
        }
        let all: Vec<BusMessage> = self
            .log
            .read_lines()?
            .into_iter()
            .filter_map(|l| l.record)
            .filter(|r| matches(r))
            .collect();
        let total = all.len();
        let messages = all[total.saturating_sub(filter.last)..].to_vec();
        Ok(ListResult { total, messages })
    }

    fn summary(&self) -> Result<summary::Summary> {
        summary::load(self.paths()).map_err(|e| BusError::io("reading", self.paths().log(), e))
    }

    /// `status`: every member's counts and last action.
    pub fn status(&self) -> Result<Status> {
        let s = self.summary()?;
        Ok(Status {
            members: s.sorted_members(),
            total_messages: s.total,
        })
    }

    /// `delete`: remove the first record with this id. Every other line,
    /// corrupt ones included, is kept; ids are never reused afterwards.
    pub fn delete(&self, id: &str) -> Result<BusMessage> {
        let mut guard = self.log.lock()?;
        let lines = self.log.raw_lines(true)?;
        let mut removed = None;
        let mut kept = Vec::with_capacity(lines.len());
        let mut highest = 0;
        for line in lines {
            let record: Option<BusMessage> = serde_json::from_str(&line).ok();
            if let Some(n) = record.as_ref().and_then(BusMessage::number) {
                highest = highest.max(n);
            }
            match record {
                Some(r) if removed.is_none() && r.id == id => removed = Some(r),
                _ => kept.push(line),
            }
        }
        let Some(removed) = removed else {
            return Err(BusError::NotFound {
                id: id.to_owned(),
                key: self.key().to_owned(),
            });
        };
        self.log.bump_counter_locked(&mut guard, highest)?;
        self.log.rewrite_locked(&mut guard, &kept)?;
        summary::invalidate(self.paths());
        drop(guard);
        Ok(removed)
    }

    /// `clear`: remove every record; meta.json stays unless `all`. Returns
    /// how many records were cleared; ids keep counting up.
    pub fn clear(&self, all: bool) -> Result<usize> {
        let log_path = self.paths().log();
        if !log_path.exists() {
            if all {
                remove_if_present(&self.paths().meta())?;
            }
            return Ok(0);
        }
        let mut guard = self.log.lock()?;
        let lines = self.log.read_lines()?;
        let count = lines.iter().filter(|l| l.record.is_some()).count();
        let highest = lines
            .iter()
            .filter_map(|l| l.record.as_ref()?.number())
            .max()
            .unwrap_or(0);
        self.log.bump_counter_locked(&mut guard, highest)?;
        self.log.rewrite_locked(&mut guard, &[])?;
        summary::invalidate(self.paths());
        if all {
            remove_if_present(&self.paths().meta())?;
        }
        drop(guard);
        Ok(count)
    }

    /// The facts the effective meta needs: the last record.
    fn facts(&self) -> Result<LogFacts> {
        let last = self.log.tail_records(1, |_| true)?.pop();
        Ok(LogFacts {
            last_type: last.as_ref().map(|r| r.kind.clone()),
            last_ts: last.map(|r| r.ts),
        })
    }

    /// The effective meta (§3.6): meta.json enriched from legacy files, or
    /// synthesised; `completed` after a `shutdown` record.
    pub fn effective_meta(&self) -> Result<Map<String, Value>> {
        Ok(meta::effective_meta(self.paths(), &self.facts()?))
    }

    /// `get_state`: one role's state (`None` when it has none), or with no
    /// role the whole `role_state`.
    pub fn get_state(&self, role: Option<&str>) -> Result<Option<Value>> {
        let meta = self.effective_meta()?;
        let role_state = meta
            .get("role_state")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        Ok(match role {
            Some(r) => role_state.get(r).cloned(),
            None => Some(role_state),
        })
    }

    /// Flush a pending `batch` sync.
    pub fn sync(&self) -> Result<()> {
        self.log.sync()
    }
}

fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BusError::io("removing", path, e)),
    }
}

impl MessageBus for Bus {
    type Error = BusError;

    fn log(&self, message: NewMessage) -> Result<BusMessage> {
        Bus::log(self, message)
    }

    fn read(&self, id: &str) -> Result<Option<BusMessage>> {
        match Bus::read(self, id) {
            Ok(r) => Ok(Some(r)),
            Err(BusError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list(&self, filter: &ListFilter) -> Result<ListResult> {
        Bus::list(self, filter)
    }

    fn get_state(&self, role: Option<&str>) -> Result<Option<Value>> {
        Bus::get_state(self, role)
    }

    fn since(&self, cursor: BusCursor) -> Result<(Vec<BusMessage>, BusCursor)> {
        let mut follower = self.follow(cursor.0);
        let records = follower.poll_now()?;
        Ok((records, BusCursor(follower.offset())))
    }

    fn update_state(
        &self,
        message: NewMessage,
        update: wavecrew_core::bus::StateUpdate<'_>,
    ) -> Result<BusMessage> {
        Bus::update_state(self, message, update)
    }
}

/// ccw's result objects and human lines, shared by the CLI and the tests.
pub mod render {
    use super::{BusMessage, ListResult, Status, Value, json, time};

    /// `Logged <id>: [<from> → <to>] <summary>`.
    pub fn logged(r: &BusMessage) -> String {
        format!("Logged {}: [{} → {}] {}", r.id, r.from, r.to, r.summary)
    }

    /// One `list` line: `<id> [HH:MM:SS] <from> → <to> (<type>) <summary>`.
    pub fn list_line(r: &BusMessage) -> String {
        format!(
            "{} [{}] {} → {} ({}) {}",
            r.id,
            time::clock(&r.ts),
            r.from,
            r.to,
            r.kind,
            r.summary
        )
    }

    /// `{total, showing, messages, formatted}`.
    pub fn list_json(l: &ListResult) -> Value {
        let formatted: Vec<String> = l.messages.iter().map(list_line).collect();
        json!({
            "total": l.total,
            "showing": l.messages.len(),
            "messages": l.messages,
            "formatted": formatted.join("\n"),
        })
    }

    /// One `status` line: `<member padded to 12> | last: HH:MM:SS | msgs: N | <action>`.
    pub fn status_line(m: &super::MemberStats) -> String {
        format!(
            "{:<12} | last: {} | msgs: {} | {}",
            m.member,
            time::clock(&m.last_seen),
            m.message_count,
            m.last_action
        )
    }

    /// `{members, total_messages, formatted}`, or ccw's empty form.
    pub fn status_json(s: &Status) -> Value {
        if s.total_messages == 0 {
            return json!({"members": [], "summary": "No messages recorded yet."});
        }
        let formatted: Vec<String> = s.members.iter().map(status_line).collect();
        json!({
            "members": s.members,
            "total_messages": s.total_messages,
            "formatted": formatted.join("\n"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::SessionId;

    fn bus() -> (tempfile::TempDir, Bus) {
        let tmp = tempfile::tempdir().unwrap();
        let paths = BusPaths::new(tmp.path(), SessionId::new("TC-t").unwrap());
        (tmp, Bus::new(paths, Durability::None))
    }

    fn msg(from: &str) -> NewMessage {
        NewMessage {
            from: from.into(),
            ..NewMessage::default()
        }
    }

    #[test]
    fn defaults_and_ids() {
        let (_t, bus) = bus();
        let r = bus.log(msg("executor")).unwrap();
        assert_eq!(r.id, "MSG-001");
        assert_eq!(r.to, "coordinator");
        assert_eq!(r.kind, "message");
        assert_eq!(r.summary, "[executor] message → coordinator");
        let r = bus
            .log(NewMessage {
                reference: Some("a.json".into()),
                ..msg("executor")
            })
            .unwrap();
        assert_eq!(r.id, "MSG-002");
        assert_eq!(r.reference(), Some("a.json"));
        assert!(r.reference.is_none(), "E3 folds ref into data");
        assert!(bus.log(msg(" ")).is_err());
    }

    #[test]
    fn ids_are_not_reused_after_delete_or_clear() {
        let (_t, bus) = bus();
        for _ in 0..3 {
            bus.log(msg("a")).unwrap();
        }
        bus.delete("MSG-003").unwrap();
        assert_eq!(bus.log(msg("a")).unwrap().id, "MSG-004");
        assert_eq!(bus.clear(false).unwrap(), 3);
        assert_eq!(bus.log(msg("a")).unwrap().id, "MSG-005");
    }

    #[test]
    fn clear_keeps_meta_unless_all() {
        let (_t, bus) = bus();
        bus.log(NewMessage {
            kind: Some("state_update".into()),
            data: json!({"x": 1}).as_object().cloned(),
            ..msg("a")
        })
        .unwrap();
        assert_eq!(bus.clear(false).unwrap(), 1);
        assert!(bus.paths().meta().is_file());
        assert_eq!(bus.get_state(Some("a")).unwrap().unwrap()["x"], 1);
        assert_eq!(bus.clear(true).unwrap(), 0);
        assert!(!bus.paths().meta().exists());
    }

    #[test]
    fn every_durability_setting_appends() {
        for d in [Durability::None, Durability::Batch, Durability::Every] {
            let tmp = tempfile::tempdir().unwrap();
            let paths = BusPaths::new(tmp.path(), SessionId::new("TC-d").unwrap());
            let bus = Bus::new(paths, d);
            for _ in 0..3 {
                bus.log(msg("a")).unwrap();
            }
            bus.sync().unwrap();
            assert_eq!(bus.list(&ListFilter::default()).unwrap().total, 3, "{d:?}");
        }
    }

    #[test]
    fn follow_sees_new_records_in_order() {
        let (_t, bus) = bus();
        bus.log(msg("a")).unwrap();
        let mut f = bus.follow(0);
        assert_eq!(f.poll_now().unwrap().len(), 1);
        bus.log(msg("b")).unwrap();
        bus.log(msg("c")).unwrap();
        let got: Vec<String> = f.poll_now().unwrap().into_iter().map(|r| r.from).collect();
        assert_eq!(got, ["b", "c"]);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        bus.log(msg("d")).unwrap();
        let r = rt.block_on(f.next()).unwrap();
        assert_eq!(r.from, "d");
    }

    #[test]
    fn delete_keeps_corrupt_lines() {
        let (_t, bus) = bus();
        bus.log(msg("a")).unwrap();
        let log = bus.paths().log();
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push_str("not json\n");
        std::fs::write(&log, text).unwrap();
        bus.log(msg("b")).unwrap();
        bus.delete("MSG-001").unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with("not json\n"), "{text}");
        assert!(text.contains("MSG-002"));
    }

    #[test]
    fn status_counts_and_order() {
        let (_t, bus) = bus();
        bus.log(NewMessage {
            to: Some("executor".into()),
            kind: Some("task_request".into()),
            ..msg("coordinator")
        })
        .unwrap();
        bus.log(NewMessage {
            kind: Some("task_complete".into()),
            ..msg("executor")
        })
        .unwrap();
        let s = bus.status().unwrap();
        assert_eq!(s.total_messages, 2);
        assert_eq!(s.members.len(), 2);
        let exec = s.members.iter().find(|m| m.member == "executor").unwrap();
        assert_eq!(exec.message_count, 1);
        assert_eq!(exec.last_action, "sent task_complete → coordinator");
        // The cache is used and stays right as the log grows.
        bus.log(msg("executor")).unwrap();
        assert_eq!(bus.status().unwrap().total_messages, 3);
    }

    #[test]
    fn state_update_and_get_state() {
        let (_t, bus) = bus();
        let data = json!({"test_strategy": {"framework": "Vitest"}, "pipeline_mode": "standard"});
        bus.log(NewMessage {
            kind: Some("state_update".into()),
            data: data.as_object().cloned(),
            ..msg("strategist")
        })
        .unwrap();
        let state = bus.get_state(Some("strategist")).unwrap().unwrap();
        assert_eq!(state["test_strategy"]["framework"], "Vitest");
        assert!(bus.get_state(Some("nobody")).unwrap().is_none());
        let meta = bus.effective_meta().unwrap();
        assert_eq!(meta["pipeline_mode"], "standard");
        assert_eq!(meta["status"], "active");
        bus.log(NewMessage {
            kind: Some("shutdown".into()),
            ..msg("coordinator")
        })
        .unwrap();
        assert_eq!(bus.effective_meta().unwrap()["status"], "completed");
    }

    #[test]
    fn concurrent_state_appends_lose_nothing() {
        let (_t, bus) = bus();
        let bus = std::sync::Arc::new(bus);
        let threads: Vec<_> = (0..4)
            .map(|w| {
                let bus = std::sync::Arc::clone(&bus);
                std::thread::spawn(move || {
                    for i in 0..25 {
                        bus.update_state(msg("executor"), |state| {
                            let mut runs = state
                                .get("execution_results")
                                .and_then(Value::as_array)
                                .cloned()
                                .unwrap_or_default();
                            runs.push(json!(format!("{w}-{i}")));
                            let mut out = Map::new();
                            out.insert("execution_results".into(), Value::Array(runs));
                            out
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let state = bus.get_state(Some("executor")).unwrap().unwrap();
        assert_eq!(state["execution_results"].as_array().unwrap().len(), 100);
    }

    #[test]
    fn list_filters_and_limits() {
        let (_t, bus) = bus();
        for n in 0..30 {
            bus.log(NewMessage {
                kind: Some(if n % 2 == 0 { "even" } else { "odd" }.into()),
                ..msg("a")
            })
            .unwrap();
        }
        let l = bus.list(&ListFilter::default()).unwrap();
        assert_eq!((l.total, l.messages.len()), (30, 20));
        assert_eq!(l.messages.last().unwrap().id, "MSG-030");
        let l = bus
            .list(&ListFilter {
                kind: Some("odd".into()),
                last: 5,
                ..ListFilter::default()
            })
            .unwrap();
        assert_eq!((l.total, l.messages.len()), (15, 5));
        for last in [0, 101] {
            let err = bus
                .list(&ListFilter {
                    last,
                    ..ListFilter::default()
                })
                .unwrap_err();
            assert!(err.to_string().starts_with("Invalid params: last"), "{err}");
        }
    }

    /// An agent replaces the log and the lock with links to a file of the
    /// user's: a new bus (the next worker) refuses them, naming the link,
    /// and writes nothing through them; readers refuse them too.
    #[test]
    fn links_planted_in_the_bus_folder_are_never_written_through() {
        let (t, first) = bus();
        first.log(msg("a")).unwrap();
        drop(first);
        let canary = t.path().join("bashrc");
        std::fs::write(&canary, "# the user's\n").unwrap();
        let paths = BusPaths::new(t.path(), SessionId::new("TC-t").unwrap());
        for planted in [paths.log(), paths.lock()] {
            std::fs::remove_file(&planted).unwrap();
            std::os::unix::fs::symlink(&canary, &planted).unwrap();
        }
        let next = Bus::new(paths, Durability::None);
        let err = next.log(msg("b")).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(next.list(&ListFilter::default()).is_err());
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "# the user's\n");
    }

    #[test]
    fn a_torn_last_line_is_skipped_then_repaired() {
        let (_t, bus) = bus();
        bus.log(msg("a")).unwrap();
        let log = bus.paths().log();
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, br#"{"id":"MSG-002","ts":"x","fr"#).unwrap();
        let l = bus.list(&ListFilter::default()).unwrap();
        assert_eq!(l.messages.len(), 1);
        let r = bus.log(msg("b")).unwrap();
        assert_eq!(r.id, "MSG-002");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[2].contains("\"MSG-002\""));
        assert_eq!(bus.list(&ListFilter::default()).unwrap().messages.len(), 2);
    }
}
