//! `messages.jsonl`: the append path and the readers.
//!
//! ## The append protocol
//!
//! 1. take an exclusive `flock` on `.msg/lock`;
//! 2. make sure the cached log handle is still the file at the log's path
//!    (a `delete` replaces it; ccw's `clear` removes it);
//! 3. find the last `MSG-NNN` id by reading only the tail of the log, and
//!    take the larger of it and the counter kept in the lock file (so an id
//!    is never reused after `delete`);
//! 4. write one whole line with one `write`; when the log ends without a
//!    newline (a writer killed mid-line) the line starts with one, which
//!    repairs the fragment without losing its bytes;
//! 5. store the new counter, optionally `fdatasync`, unlock.
//!
//! Steps 2–5 cost a fixed number of system calls, whatever the log's size.
//! Readers take no lock: they see whole lines, and skip a last line that has
//! no newline yet.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wavecrew_core::BusMessage;
use wavecrew_core::bus::message_number;

use crate::error::{BusError, Result};
use crate::paths::BusPaths;

/// How hard an append works to survive a power cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Leave it to the OS (the default; what ccw does).
    #[default]
    None,
    /// `fdatasync` at most every 50 ms, and when the bus is dropped.
    Batch,
    /// `fdatasync` after every record.
    Every,
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" => Ok(Durability::None),
            "batch" => Ok(Durability::Batch),
            "every" => Ok(Durability::Every),
            other => Err(format!(
                "unknown durability {other:?}; expected none, batch or every"
            )),
        }
    }
}

const BATCH_INTERVAL: Duration = Duration::from_millis(50);
const TAIL_CHUNK: u64 = 4096;

/// One line of the log as read.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// The text, without the newline.
    pub text: String,
    /// The record, when the line parses as one.
    pub record: Option<BusMessage>,
}

/// Open handles kept between appends.
struct Handles {
    lock: File,
    log: File,
    /// The log's length, read under the lock.
    len: u64,
    /// The id counter of the lock file, read when the log is (re)opened:
    /// only `delete` and `clear` raise it, and both replace the log file,
    /// which makes every other writer reopen it.
    counter: u64,
    /// Whether `counter` has been read since the handles were opened.
    counter_loaded: bool,
    last_sync: Instant,
    unsynced: bool,
}

/// The log of one session.
pub struct LogFile {
    paths: BusPaths,
    /// `paths.log()`, `paths.lock()` and `paths.msg_dir()`, computed once.
    log_path: PathBuf,
    lock_path: PathBuf,
    msg_dir: PathBuf,
    durability: Durability,
    handles: Mutex<Option<Handles>>,
}

impl std::fmt::Debug for LogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFile")
            .field("paths", &self.paths)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

/// Holds the bus lock; unlocks on drop.
pub(crate) struct Guard<'a> {
    handles: std::sync::MutexGuard<'a, Option<Handles>>,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if let Some(h) = self.handles.as_ref() {
            let _ = h.lock.unlock();
        }
    }
}

impl LogFile {
    /// The log of `paths`, appending with `durability`.
    pub fn new(paths: BusPaths, durability: Durability) -> Self {
        LogFile {
            log_path: paths.log(),
            lock_path: paths.lock(),
            msg_dir: paths.msg_dir(),
            paths,
            durability,
            handles: Mutex::new(None),
        }
    }

    /// The bus's paths.
    pub fn paths(&self) -> &BusPaths {
        &self.paths
    }

    /// Take the bus lock, creating `.msg/` and the files if needed, and make
    /// sure the log handle is the file now at the log's path.
    pub(crate) fn lock(&self) -> Result<Guard<'_>> {
        let mut handles = self
            .handles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = &self.msg_dir;
        if handles.is_none() {
            fs::create_dir_all(dir).map_err(|e| BusError::io("creating", dir, e))?;
            let lock_path = &self.lock_path;
            // `.msg/` is a folder agents may write: nothing there is
            // opened through a link they planted.
            let lock = wavecrew_sys::no_follow::open(
                lock_path,
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
            )
            .map_err(|e| BusError::io("opening", lock_path, e))?;
            let (log, len) = self.open_log()?;
            *handles = Some(Handles {
                counter: 0,
                counter_loaded: false,
                lock,
                log,
                len,
                last_sync: Instant::now(),
                unsynced: false,
            });
        }
        let h = handles.as_mut().expect("handles were just set");
        h.lock
            .lock()
            .map_err(|e| BusError::io("locking", &self.lock_path, e))?;
        if !h.counter_loaded {
            h.counter = read_counter(&h.lock);
            h.counter_loaded = true;
        }
        // Under the lock: is the cached handle still the log? `delete`
        // replaces the file and ccw's `clear` removes the whole `.msg/`; both
        // leave our handle on an unlinked inode (no links left). One `fstat`.
        let meta = h
            .log
            .metadata()
            .map_err(|e| BusError::io("reading", &self.log_path, e))?;
        if meta.nlink() == 0 {
            if !dir.is_dir() {
                fs::create_dir_all(dir).map_err(|e| BusError::io("creating", dir, e))?;
            }
            let (log, len) = self.open_log()?;
            h.log = log;
            h.len = len;
            h.counter = read_counter(&h.lock);
        } else {
            h.len = meta.len();
        }
        Ok(Guard { handles })
    }

    fn open_log(&self) -> Result<(File, u64)> {
        let path = &self.log_path;
        let log = wavecrew_sys::no_follow::open(
            path,
            OpenOptions::new().read(true).append(true).create(true),
        )
        .map_err(|e| BusError::io("opening", path, e))?;
        let meta = log
            .metadata()
            .map_err(|e| BusError::io("reading", path, e))?;
        Ok((log, meta.len()))
    }

    /// Append a record built from its id: see the module doc for the protocol.
    pub fn append(&self, build: impl FnOnce(String) -> BusMessage) -> Result<BusMessage> {
        let mut guard = self.lock()?;
        let record = self.append_locked(&mut guard, build)?;
        drop(guard);
        Ok(record)
    }

    /// Append while holding the lock (so meta.json can change under it too).
    pub(crate) fn append_locked(
        &self,
        guard: &mut Guard<'_>,
        build: impl FnOnce(String) -> BusMessage,
    ) -> Result<BusMessage> {
        let log_path = &self.log_path;
        let h = guard.handles.as_mut().expect("locked handles");
        let len = h.len;
        let (tail_max, needs_newline) =
            tail_state(&h.log, len).map_err(|e| BusError::io("reading", log_path, e))?;
        let next = tail_max.max(h.counter) + 1;
        let record = build(format!("MSG-{next:03}"));
        let mut line = Vec::with_capacity(256);
        if needs_newline {
            line.push(b'\n');
        }
        serde_json::to_writer(&mut line, &record).map_err(|e| BusError::Meta {
            path: log_path.clone(),
            message: format!("cannot serialise the record: {e}"),
        })?;
        line.push(b'\n');
        h.log
            .write_all(&line)
            .map_err(|e| BusError::io("appending to", log_path, e))?;
        // The counter is not advanced here: the new line is the tail now.
        // Only `delete` and `clear` raise it, to the highest id they remove.
        h.len += line.len() as u64;
        match self.durability {
            Durability::None => {}
            Durability::Every => h
                .log
                .sync_data()
                .map_err(|e| BusError::io("syncing", log_path, e))?,
            Durability::Batch => {
                h.unsynced = true;
                if h.last_sync.elapsed() >= BATCH_INTERVAL {
                    h.log
                        .sync_data()
                        .map_err(|e| BusError::io("syncing", log_path, e))?;
                    h.last_sync = Instant::now();
                    h.unsynced = false;
                }
            }
        }
        Ok(record)
    }

    /// Replace the log's lines atomically (under the lock): used by `delete`.
    pub(crate) fn rewrite_locked(&self, _guard: &mut Guard<'_>, lines: &[String]) -> Result<()> {
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l.as_bytes());
            bytes.push(b'\n');
        }
        wavecrew_core::fsutil::write_atomic(&self.paths.log(), &bytes).map_err(|e| BusError::Meta {
            path: self.paths.log(),
            message: e.to_string(),
        })
    }

    /// Raise the id counter to at least `n` (under the lock).
    pub(crate) fn bump_counter_locked(&self, guard: &mut Guard<'_>, n: u64) -> Result<()> {
        let h = guard.handles.as_mut().expect("locked handles");
        if read_counter(&h.lock) < n {
            write_counter(&h.lock, n).map_err(|e| BusError::io("writing", self.paths.lock(), e))?;
        }
        h.counter = h.counter.max(n);
        Ok(())
    }

    /// Every complete line of the log (an unterminated last line is skipped).
    pub fn read_lines(&self) -> Result<Vec<LogLine>> {
        read_lines(&self.paths.log())
    }

    /// Every terminated line's text, including the fragment when `all`.
    pub(crate) fn raw_lines(&self, include_fragment: bool) -> Result<Vec<String>> {
        let path = self.paths.log();
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(BusError::io("reading", &path, e)),
        };
        let text = String::from_utf8_lossy(&bytes);
        let terminated = text.ends_with('\n');
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if !terminated && !include_fragment {
            lines.pop();
        }
        Ok(lines)
    }

    /// The newest complete records, newest last, reading only from the end:
    /// stops once `want` records passing `keep` are found.
    pub fn tail_records(
        &self,
        want: usize,
        keep: impl Fn(&BusMessage) -> bool,
    ) -> Result<Vec<BusMessage>> {
        let path = self.paths.log();
        let file =
            match wavecrew_sys::no_follow::open(&path, std::fs::OpenOptions::new().read(true)) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(BusError::io("reading", &path, e)),
            };
        let mut out = Vec::new();
        if want == 0 {
            return Ok(out);
        }
        let mut on_line = |line: &[u8]| {
            if let Ok(record) = serde_json::from_slice::<BusMessage>(line)
                && keep(&record)
            {
                out.push(record);
            }
            out.len() < want
        };
        let len = file
            .metadata()
            .map_err(|e| BusError::io("reading", &path, e))?
            .len();
        scan_backwards(&file, len, &mut on_line).map_err(|e| BusError::io("reading", &path, e))?;
        out.reverse();
        Ok(out)
    }

    /// Flush a pending batch sync.
    pub fn sync(&self) -> Result<()> {
        let mut handles = self
            .handles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(h) = handles.as_mut()
            && h.unsynced
        {
            h.log
                .sync_data()
                .map_err(|e| BusError::io("syncing", self.paths.log(), e))?;
            h.unsynced = false;
            h.last_sync = Instant::now();
        }
        Ok(())
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}

/// Read every complete line of a log file.
pub fn read_lines(path: &Path) -> Result<Vec<LogLine>> {
    let mut bytes = Vec::new();
    match wavecrew_sys::no_follow::open(path, std::fs::OpenOptions::new().read(true)) {
        Ok(mut f) => {
            f.read_to_end(&mut bytes)
                .map_err(|e| BusError::io("reading", path, e))?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(BusError::io("reading", path, e)),
    }
    let complete = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => &bytes[..=i],
        None => &[][..],
    };
    Ok(complete
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|l| LogLine {
            text: String::from_utf8_lossy(l).into_owned(),
            record: serde_json::from_slice(l).ok(),
        })
        .collect())
}

/// Call `on_line` with each complete line from the end backwards (skipping
/// a last line without a newline) until it returns `false`.
fn scan_backwards(file: &File, len: u64, on_line: &mut dyn FnMut(&[u8]) -> bool) -> io::Result<()> {
    let mut end = len;
    let mut carry: Vec<u8> = Vec::new();
    let mut skipped_fragment = false;
    while end > 0 {
        let start = end.saturating_sub(TAIL_CHUNK);
        let mut buf = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
        file.read_exact_at(&mut buf, start)?;
        buf.extend_from_slice(&carry);
        // Lines are the pieces after each newline; the first piece may be
        // incomplete unless we reached the start of the file.
        let mut pieces: Vec<&[u8]> = buf.split(|b| *b == b'\n').collect();
        let first = if start > 0 {
            Some(pieces.remove(0).to_vec())
        } else {
            None
        };
        if !skipped_fragment {
            if pieces.is_empty()
                && let Some(first) = first
            {
                // No newline in this chunk: it is all part of the fragment.
                carry = first;
                end = start;
                continue;
            }
            // The piece after the last newline is the unterminated fragment
            // (empty when the file ends with a newline).
            pieces.pop();
            skipped_fragment = true;
        }
        for piece in pieces.iter().rev() {
            if piece.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if !on_line(piece) {
                return Ok(());
            }
        }
        carry = first.unwrap_or_default();
        end = start;
    }
    Ok(())
}

/// Only the `id` of a record, for the tail scan.
#[derive(serde::Deserialize)]
struct IdOnly {
    id: Option<String>,
}

/// The highest `MSG-NNN` number among the last records, and whether the file
/// ends without a newline. Reads only the tail.
fn tail_state(file: &File, len: u64) -> io::Result<(u64, bool)> {
    if len == 0 {
        return Ok((0, false));
    }
    // One read of the last chunk answers both questions in the common case.
    let start = len.saturating_sub(TAIL_CHUNK);
    let mut buf = vec![0u8; usize::try_from(len - start).unwrap_or(0)];
    file.read_exact_at(&mut buf, start)?;
    let needs_newline = buf.last() != Some(&b'\n');
    let id_of = |line: &[u8]| -> Option<u64> {
        match serde_json::from_slice::<IdOnly>(line) {
            Ok(IdOnly { id: Some(id) }) => message_number(&id),
            _ => None,
        }
    };
    let mut pieces = buf.split(|b| *b == b'\n');
    // A fragment left by a killed writer may hold a whole record without its
    // newline: count its id too, so the repair never duplicates it.
    let fragment = pieces.next_back().unwrap_or(&[]);
    let mut found = id_of(fragment).unwrap_or(0);
    for line in pieces.rev() {
        if start > 0 && line.as_ptr() == buf.as_ptr() {
            break; // the first piece may be cut: fall back to the full scan
        }
        if let Some(n) = id_of(line) {
            return Ok((found.max(n), needs_newline));
        }
    }
    let mut on_line = |line: &[u8]| {
        if let Some(n) = id_of(line) {
            found = found.max(n);
            return false;
        }
        true
    };
    scan_backwards(file, len, &mut on_line)?;
    Ok((found, needs_newline))
}

fn read_counter(lock: &File) -> u64 {
    let mut buf = [0u8; 24];
    let n = lock.read_at(&mut buf, 0).unwrap_or(0);
    std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn write_counter(lock: &File, n: u64) -> io::Result<()> {
    // Fixed width, so a rewrite never leaves old digits behind.
    lock.write_all_at(format!("{n:020}\n").as_bytes(), 0)
}
