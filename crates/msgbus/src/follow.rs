//! Following the log as it grows: the orchestrator's callbacks.
//!
//! [`Follower`] polls the log's length (every 20 ms by default) and yields
//! each complete record appended after its byte offset, in order. Polling was
//! chosen over file notification: it needs no extra dependency, works on
//! every filesystem (including network mounts where inotify is silent), and
//! its latency is bounded by the interval (measured in the bench `bus`). A
//! log that shrinks (a `delete` or `clear`) is followed again from its start.

use std::collections::VecDeque;

use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use wavecrew_core::BusMessage;

use crate::error::{BusError, Result};

/// The default polling interval.
pub const DEFAULT_POLL: Duration = Duration::from_millis(20);

/// A reader that yields records as they are appended.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    offset: u64,
    poll: Duration,
    pending: VecDeque<(u64, BusMessage)>,
}

impl Follower {
    /// Follow `path` from byte `offset` (0: from the start).
    pub fn new(path: PathBuf, offset: u64, poll: Duration) -> Self {
        Follower {
            path,
            offset,
            poll,
            pending: VecDeque::new(),
        }
    }

    /// The byte offset after the last record yielded (resume from here).
    pub fn offset(&self) -> u64 {
        self.pending.front().map_or(self.offset, |(o, _)| *o)
    }

    /// Records appended since the last call, without waiting.
    pub fn poll_now(&mut self) -> Result<Vec<BusMessage>> {
        self.fill()
            .map_err(|e| BusError::io("following", &self.path, e))?;
        Ok(self.pending.drain(..).map(|(_, r)| r).collect())
    }

    /// The next record, waiting for it if needed.
    pub async fn next(&mut self) -> Result<BusMessage> {
        loop {
            if let Some((_, r)) = self.pending.pop_front() {
                return Ok(r);
            }
            self.fill()
                .map_err(|e| BusError::io("following", &self.path, e))?;
            if self.pending.is_empty() {
                tokio::time::sleep(self.poll).await;
            }
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut file =
            match wavecrew_sys::no_follow::open(&self.path, std::fs::OpenOptions::new().read(true))
            {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
        let len = file.metadata()?.len();
        if len < self.offset {
            self.offset = 0;
        }
        if len == self.offset {
            return Ok(());
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        file.take(len - self.offset).read_to_end(&mut buf)?;
        let Some(last_nl) = buf.iter().rposition(|b| *b == b'\n') else {
            return Ok(());
        };
        let mut pos = self.offset;
        for line in buf[..=last_nl].split_inclusive(|b| *b == b'\n') {
            pos += line.len() as u64;
            if let Ok(r) = serde_json::from_slice::<BusMessage>(line) {
                self.pending.push_back((pos, r));
            }
        }
        self.offset += last_nl as u64 + 1;
        Ok(())
    }
}

impl crate::Bus {
    /// Follow this bus from byte `from_offset`.
    pub fn follow(&self, from_offset: u64) -> Follower {
        Follower::new(self.paths().log(), from_offset, DEFAULT_POLL)
    }
}
