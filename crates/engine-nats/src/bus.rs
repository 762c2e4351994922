//! The message bus across hosts: [`NatsBus`] publishes, [`Mirror`] lands.
//!
//! A remote worker cannot append to the session's `.msg/messages.jsonl`
//! (no shared disk). It publishes its bus records with [`NatsBus::publish`]
//! to the stream `wavecrew_<session>_bus` (subject `wavecrew.<session>.bus`),
//! and the coordinator runs a [`Mirror`], which reads that stream in
//! sequence order and appends each record once, through the file bus
//! (`wavecrew-msgbus`), so the log stays ccw's: ids `MSG-NNN` are assigned
//! by the file bus as for any local record, defaults filled in the same way.
//!
//! ## Exactly once, across a coordinator kill
//!
//! Each mirrored record carries its stream sequence in `data.nats_seq`. The
//! mirror also keeps a cursor, `.msg/nats-mirror.json` (`{stream, seq,
//! offset}`: the last mirrored sequence and the log's length then), written
//! atomically (temp file, fsync, rename, fsync of the folder) after each
//! batch. A kill between an append and the cursor write leaves records in
//! the log past the cursor; on start, the mirror reads the log from the
//! cursor's offset (the whole log when it shrank, or when there is no
//! cursor) and resumes after the highest `nats_seq` found there or in the
//! cursor, whichever is higher. So a record is never appended twice, and
//! none is skipped. One mirror per session is assumed (the coordinator).
//!
//! A `state_update` record's `data` is merged into `role_state` by the file
//! bus, `nats_seq` included. For power-loss durability open the file bus
//! with `Durability::Every` or `Batch`: the mirror syncs it before moving
//! the cursor.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer, pull};
use async_nats::jetstream::stream::{self, StorageType};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use wavecrew_core::{BusCursor, MessageBus, NewMessage};
use wavecrew_msgbus::Bus;

use crate::connect::Engine;
use crate::error::{EngineError, Result};

/// The key of `data` that carries a mirrored record's stream sequence.
pub const NATS_SEQ: &str = "nats_seq";

/// The cursor file's name, in the session's `.msg/` folder.
pub const CURSOR_FILE: &str = "nats-mirror.json";

/// How long a record's id is remembered for de-duplication.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How many records one poll mirrors at most.
const BATCH: usize = 256;

/// A bus record on the wire: what a caller gives `log` ([`NewMessage`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Wire {
    from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Map<String, Value>>,
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    reference: Option<String>,
}

impl From<NewMessage> for Wire {
    fn from(m: NewMessage) -> Self {
        Wire {
            from: m.from,
            to: m.to,
            kind: m.kind,
            summary: m.summary,
            data: m.data,
            reference: m.reference,
        }
    }
}

impl From<Wire> for NewMessage {
    fn from(w: Wire) -> Self {
        NewMessage {
            from: w.from,
            to: w.to,
            kind: w.kind,
            summary: w.summary,
            data: w.data,
            reference: w.reference,
        }
    }
}

async fn bus_stream(engine: &Engine) -> Result<(stream::Stream, String)> {
    let session = engine.session();
    let name = session.bus_stream();
    let config = stream::Config {
        name: name.clone(),
        subjects: vec![session.bus_subject()],
        storage: StorageType::File,
        // Records published with an id (`publish_once`) are stored once
        // even when a restarted coordinator publishes them again.
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    };
    let stream = crate::tasks::stream_for(
        engine.jetstream(),
        engine.url(),
        config,
        &format!("the stream {name}"),
    )
    .await?;
    Ok((stream, name))
}

/// A remote worker's side of the bus: publishes records to the session's
/// bus stream.
#[derive(Debug, Clone)]
pub struct NatsBus {
    engine: Engine,
    stream: String,
}

impl NatsBus {
    /// The bus of `engine`'s session, creating its stream if needed.
    pub async fn open(engine: &Engine) -> Result<NatsBus> {
        let (_, stream) = bus_stream(engine).await?;
        Ok(NatsBus {
            engine: engine.clone(),
            stream,
        })
    }

    /// Publish a record; returns its stream sequence once the server stored
    /// it. Its `MSG-NNN` id is given when the coordinator mirrors it.
    pub async fn publish(&self, message: NewMessage) -> Result<u64> {
        self.send(message, None).await
    }

    /// [`NatsBus::publish`] with a message id: the server stores a record
    /// once per id within the stream's de-duplication window (a record
    /// published again after a restart is not mirrored twice).
    pub async fn publish_once(&self, message: NewMessage, id: &str) -> Result<u64> {
        self.send(message, Some(id)).await
    }

    async fn send(&self, message: NewMessage, id: Option<&str>) -> Result<u64> {
        if message.from.trim().is_empty() {
            return Err(EngineError::InvalidName {
                kind: "bus record sender (`from`)",
                value: message.from,
                expected: "a non-empty sender",
            });
        }
        let body = serde_json::to_vec(&Wire::from(message))
            .map_err(|e| EngineError::js(self.engine.url(), "encoding a bus record", e))?;
        let subject = self.engine.session().bus_subject();
        let action = format!("publishing a bus record to stream {}", self.stream);
        let mut headers = async_nats::HeaderMap::new();
        if let Some(id) = id {
            headers.insert(async_nats::header::NATS_MESSAGE_ID, id);
        }
        let ack = self
            .engine
            .jetstream()
            .publish_with_headers(subject, headers, body.into())
            .await
            .map_err(|e| EngineError::js(self.engine.url(), action.clone(), e))?
            .await
            .map_err(|e| EngineError::js(self.engine.url(), action, e))?;
        Ok(ack.sequence)
    }
}

/// Where the mirror stands, as persisted in `.msg/nats-mirror.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    /// The stream mirrored.
    stream: String,
    /// The last stream sequence appended to the log.
    seq: u64,
    /// The log's length in bytes after that append.
    offset: u64,
}

/// The coordinator's side: mirrors the bus stream into the session's
/// `messages.jsonl`, each record exactly once, in stream order.
pub struct Mirror {
    engine: Engine,
    stream: stream::Stream,
    name: String,
    bus: Arc<Bus>,
    cursor_path: PathBuf,
    last: u64,
    consumer: Option<PullConsumer>,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror")
            .field("stream", &self.name)
            .field("log", &self.bus.paths().log())
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Mirror {
    /// A mirror of `engine`'s bus stream into `bus`, resuming after the
    /// last record already mirrored (the cursor, or a record past it).
    pub async fn open(engine: &Engine, bus: Bus) -> Result<Mirror> {
        let (stream, name) = bus_stream(engine).await?;
        let bus = Arc::new(bus);
        let cursor_path = bus.paths().msg_dir().join(CURSOR_FILE);
        let (b, path, stream_name) = (bus.clone(), cursor_path.clone(), name.clone());
        let last = tokio::task::spawn_blocking(move || resume_point(&b, &path, &stream_name))
            .await
            .map_err(|e| {
                EngineError::io(
                    "reading",
                    cursor_path.clone(),
                    std::io::Error::other(e.to_string()),
                )
            })??;
        tracing::debug!(stream = %name, last, "bus mirror resumes");
        Ok(Mirror {
            engine: engine.clone(),
            stream,
            name,
            bus,
            cursor_path,
            last,
            consumer: None,
        })
    }

    /// The last stream sequence mirrored into the log.
    pub fn last_mirrored(&self) -> u64 {
        self.last
    }

    /// The cursor file.
    pub fn cursor_path(&self) -> &Path {
        &self.cursor_path
    }

    async fn consumer(&mut self) -> Result<PullConsumer> {
        if let Some(c) = &self.consumer {
            return Ok(c.clone());
        }
        let config = pull::Config {
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: self.last + 1,
            },
            ack_policy: AckPolicy::None,
            inactive_threshold: Duration::from_secs(300),
            ..Default::default()
        };
        let consumer = self.stream.create_consumer(config).await.map_err(|e| {
            EngineError::js(
                self.engine.url(),
                format!(
                    "creating a reader of stream {} from sequence {}",
                    self.name,
                    self.last + 1
                ),
                e,
            )
        })?;
        self.consumer = Some(consumer.clone());
        Ok(consumer)
    }

    /// Mirror the records available now (up to a batch), waiting up to
    /// `wait` for the first; returns how many were appended.
    pub async fn poll(&mut self, wait: Duration) -> Result<usize> {
        let consumer = self.consumer().await?;
        let url = self.engine.url().to_owned();
        let action = format!("reading stream {}", self.name);
        let fetch = consumer.fetch().max_messages(BATCH);
        let fetch = if wait.is_zero() {
            fetch
        } else {
            fetch.expires(wait)
        };
        let mut messages = match fetch.messages().await {
            Ok(m) => m,
            Err(e) => {
                self.consumer = None;
                return Err(EngineError::js(&url, action, e));
            }
        };
        let mut batch = Vec::new();
        while let Some(message) = messages.next().await {
            let message = match message {
                Ok(m) => m,
                Err(e) => {
                    // Records already read are mirrored below; the reader
                    // is made again from the last one.
                    self.consumer = None;
                    tracing::warn!("{action}: {e}");
                    break;
                }
            };
            let seq = match message.info() {
                Ok(info) => info.stream_sequence,
                Err(e) => {
                    self.consumer = None;
                    return Err(EngineError::js(&url, action, e));
                }
            };
            if seq <= self.last {
                continue;
            }
            batch.push((seq, message.payload.clone()));
        }
        if batch.is_empty() {
            return Ok(0);
        }
        let (bus, path, stream) = (
            self.bus.clone(),
            self.cursor_path.clone(),
            self.name.clone(),
        );
        let (done, error) =
            tokio::task::spawn_blocking(move || append_batch(&bus, &path, &stream, batch))
                .await
                .map_err(|e| {
                    EngineError::io(
                        "mirroring into",
                        self.bus.paths().log(),
                        std::io::Error::other(e.to_string()),
                    )
                })?;
        if let Some(&last) = done.last() {
            self.last = last;
        }
        match error {
            None => Ok(done.len()),
            Some(e) => {
                self.consumer = None;
                Err(e)
            }
        }
    }

    /// Mirror until the log holds every record the stream held when this
    /// was called; returns how many were appended.
    pub async fn catch_up(&mut self) -> Result<usize> {
        let target = self.stream_state().await?.last_sequence;
        let mut total = 0;
        while self.last < target {
            let n = self.poll(Duration::from_millis(500)).await?;
            if n == 0 && self.stream_missing_after(target).await? {
                break;
            }
            total += n;
        }
        Ok(total)
    }

    /// Whether nothing is left to read up to `target` (records removed by
    /// the stream's limits leave gaps that are never delivered).
    async fn stream_missing_after(&self, target: u64) -> Result<bool> {
        Ok(self.stream_state().await?.first_sequence > target)
    }

    /// The mirrored stream's state as the server has it now.
    async fn stream_state(&self) -> Result<stream::State> {
        let mut stream = self.stream.clone();
        let info = stream.info().await.map_err(|e| {
            EngineError::js(
                self.engine.url(),
                format!("reading the state of stream {}", self.name),
                e,
            )
        })?;
        Ok(info.state.clone())
    }
}

/// The last sequence mirrored: the cursor's, or a higher `nats_seq` found in
/// the log after the cursor's offset (a kill between append and cursor).
fn resume_point(bus: &Bus, cursor_path: &Path, stream: &str) -> Result<u64> {
    let cursor = read_cursor(cursor_path)?
        .filter(|c| {
            let same = c.stream == stream;
            if !same {
                tracing::warn!(
                    "{}: written for stream {}, not {stream}; reading the whole log",
                    cursor_path.display(),
                    c.stream
                );
            }
            same
        })
        .unwrap_or_default();
    let log = bus.paths().log();
    let (records, _) = bus
        .since(BusCursor(cursor.offset))
        .map_err(|e| EngineError::Mirror {
            stream: stream.to_owned(),
            seq: cursor.seq,
            log: log.clone(),
            source: Box::new(e),
        })?;
    let found = records
        .iter()
        .filter_map(|r| r.data.as_ref()?.get(NATS_SEQ)?.as_u64())
        .max()
        .unwrap_or(0);
    Ok(cursor.seq.max(found))
}

fn read_cursor(path: &Path) -> Result<Option<Cursor>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(EngineError::io("reading", path, e));
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(c) => Ok(Some(c)),
        Err(e) => {
            // The cursor is only a shortcut: the log says the truth.
            tracing::warn!("{}: {e}; reading the whole log", path.display());
            Ok(None)
        }
    }
}

/// The record to append for stream record `seq`: the published one with
/// `data.nats_seq`, or, when it cannot be read, a `mirror_error` record in
/// its place (so one bad record never stops the mirror).
fn record_for(seq: u64, payload: &[u8], stream: &str) -> NewMessage {
    let decoded = serde_json::from_slice::<Wire>(payload)
        .map_err(|e| e.to_string())
        .and_then(|w| {
            if w.from.trim().is_empty() {
                Err("its `from` is empty".to_owned())
            } else {
                Ok(NewMessage::from(w))
            }
        });
    let mut message = decoded.unwrap_or_else(|error| NewMessage {
        from: "nats-mirror".into(),
        kind: Some("mirror_error".into()),
        summary: Some(format!(
            "[nats-mirror] record {seq} of stream {stream} could not be mirrored: {error}"
        )),
        data: Some(Map::from_iter([("error".to_owned(), json!(error))])),
        ..NewMessage::default()
    });
    message
        .data
        .get_or_insert_with(Map::new)
        .insert(NATS_SEQ.to_owned(), json!(seq));
    message
}

/// Append each record, then sync the log and write the cursor once.
/// Returns the sequences appended, and the error that stopped it, if any.
fn append_batch(
    bus: &Bus,
    cursor_path: &Path,
    stream: &str,
    batch: Vec<(u64, bytes::Bytes)>,
) -> (Vec<u64>, Option<EngineError>) {
    let log = bus.paths().log();
    let mut done = Vec::new();
    let mut error = None;
    for (seq, payload) in batch {
        match bus.log(record_for(seq, &payload, stream)) {
            Ok(_) => done.push(seq),
            Err(e) => {
                error = Some(EngineError::Mirror {
                    stream: stream.to_owned(),
                    seq,
                    log: log.clone(),
                    source: Box::new(e),
                });
                break;
            }
        }
    }
    let Some(&last) = done.last() else {
        return (done, error);
    };
    let persisted = bus
        .sync()
        .map_err(|e| EngineError::Mirror {
            stream: stream.to_owned(),
            seq: last,
            log: log.clone(),
            source: Box::new(e),
        })
        .and_then(|()| write_cursor(cursor_path, stream, last, &log));
    if let Err(e) = persisted {
        // The records are in the log; the next start finds them there.
        error.get_or_insert(e);
    }
    (done, error)
}

fn write_cursor(path: &Path, stream: &str, seq: u64, log: &Path) -> Result<()> {
    let offset = std::fs::metadata(log)
        .map_err(|e| EngineError::io("reading the length of", log, e))?
        .len();
    let cursor = Cursor {
        stream: stream.to_owned(),
        seq,
        offset,
    };
    wavecrew_core::fsutil::write_json_atomic(path, &cursor).map_err(|e| {
        EngineError::io(
            "writing",
            path.to_owned(),
            std::io::Error::other(e.to_string()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_carries_its_sequence_and_a_bad_one_is_replaced() {
        let wire = serde_json::to_vec(&Wire::from(NewMessage {
            from: "executor".into(),
            kind: Some("task_complete".into()),
            ..NewMessage::default()
        }))
        .unwrap();
        let m = record_for(7, &wire, "s");
        assert_eq!(m.from, "executor");
        assert_eq!(m.data.unwrap()[NATS_SEQ], json!(7));
        let m = record_for(8, b"{not json", "wavecrew_s_bus");
        assert_eq!(m.kind.as_deref(), Some("mirror_error"));
        assert!(
            m.summary
                .unwrap()
                .contains("record 8 of stream wavecrew_s_bus")
        );
        assert_eq!(m.data.unwrap()[NATS_SEQ], json!(8));
    }
}
