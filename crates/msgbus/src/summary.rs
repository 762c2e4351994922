//! Counts for `list` and `status` without re-reading the whole log.
//!
//! ccw's `list` and `status` parse every record on every call (O(n), about
//! 2 µs per message). wavecrew keeps `.msg/summary.json`: the byte offset it
//! has read up to, a fingerprint of the bytes just before that offset, the
//! record count and the per-member statistics. A reader loads it, checks the
//! fingerprint (a `delete`, a `clear` or a ccw rewrite changes it), reads
//! only the lines appended since, and stores the result back atomically. The
//! appenders never touch it, so an append stays O(1); a reader pays for the
//! new lines once. A stale or corrupt cache is simply rebuilt.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};
use wavecrew_core::BusMessage;

use crate::paths::BusPaths;

const FINGERPRINT_LEN: u64 = 64;
const VERSION: u32 = 1;

/// One member of the team as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberStats {
    /// The role (any `from` or `to` value).
    pub member: String,
    /// Records sent.
    #[serde(rename = "messageCount")]
    pub message_count: u64,
    /// The last record sent (or, for a pure recipient, the first mentioning it).
    #[serde(rename = "lastSeen")]
    pub last_seen: String,
    /// `sent <type> → <to>` of the last record sent; empty for a recipient.
    #[serde(rename = "lastAction")]
    pub last_action: String,
}

/// The cached summary of a log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    v: u32,
    offset: u64,
    fingerprint: String,
    /// Records (lines that parse as records).
    pub(crate) total: u64,
    /// Members in order of first appearance.
    pub(crate) members: Vec<MemberStats>,
}

impl Summary {
    /// Add one record (ccw's `status` rules, §3.3).
    pub(crate) fn add(&mut self, r: &BusMessage) {
        self.total += 1;
        for name in [&r.from, &r.to] {
            if !self.members.iter().any(|m| &m.member == name) {
                self.members.push(MemberStats {
                    member: name.clone(),
                    message_count: 0,
                    last_seen: r.ts.clone(),
                    last_action: String::new(),
                });
            }
        }
        if let Some(m) = self.members.iter_mut().find(|m| m.member == r.from) {
            m.message_count += 1;
            m.last_seen.clone_from(&r.ts);
            m.last_action = format!("sent {} → {}", r.kind, r.to);
        }
    }

    /// The members sorted as ccw sorts them: `lastSeen` descending (a stable
    /// sort over the order of first appearance).
    pub(crate) fn sorted_members(&self) -> Vec<MemberStats> {
        let mut members = self.members.clone();
        members.sort_by(|a, b| b.last_seen.cmp(&a.last_seen));
        members
    }
}

fn fingerprint(file: &File, offset: u64) -> io::Result<String> {
    let start = offset.saturating_sub(FINGERPRINT_LEN);
    let mut buf = vec![0u8; usize::try_from(offset - start).unwrap_or(0)];
    file.read_exact_at(&mut buf, start)?;
    Ok(buf
        .iter()
        .fold(String::with_capacity(buf.len() * 2), |mut s, b| {
            use std::fmt::Write as _;
            let _ = write!(s, "{b:02x}");
            s
        }))
}

/// The up-to-date summary of the log, using and refreshing the cache.
pub(crate) fn load(paths: &BusPaths) -> io::Result<Summary> {
    let mut file =
        match wavecrew_sys::no_follow::open(&paths.log(), std::fs::OpenOptions::new().read(true)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Summary::default()),
            Err(e) => return Err(e),
        };
    let len = file.metadata()?.len();
    let cached: Option<Summary> = std::fs::read(paths.summary())
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let mut summary = match cached {
        Some(s)
            if s.v == VERSION
                && s.offset <= len
                && fingerprint(&file, s.offset).ok().as_deref() == Some(s.fingerprint.as_str()) =>
        {
            s
        }
        _ => Summary {
            v: VERSION,
            ..Summary::default()
        },
    };
    if summary.offset == len {
        return Ok(summary);
    }
    file.seek(SeekFrom::Start(summary.offset))?;
    let mut rest = Vec::new();
    file.read_to_end(&mut rest)?;
    let Some(last_nl) = rest.iter().rposition(|b| *b == b'\n') else {
        return Ok(summary); // only an unterminated fragment is new
    };
    for line in rest[..last_nl].split(|b| *b == b'\n') {
        if let Ok(r) = serde_json::from_slice::<BusMessage>(line) {
            summary.add(&r);
        }
    }
    summary.offset += last_nl as u64 + 1;
    summary.fingerprint = fingerprint(&file, summary.offset)?;
    if let Ok(bytes) = serde_json::to_vec(&summary) {
        // A cache: losing a race with another reader, or a read-only folder,
        // only costs the next reader a rescan.
        let _ = wavecrew_core::fsutil::write_atomic(&paths.summary(), &bytes);
    }
    Ok(summary)
}

/// Drop the cache (after `delete` or `clear`).
pub(crate) fn invalidate(paths: &BusPaths) {
    let _ = std::fs::remove_file(paths.summary());
}
