//! The `MessageBus` port: the team_msg bus every role writes to.
//!
//! `wavecrew-msgbus` implements it over ccw's files (`.msg/messages.jsonl`
//! and `meta.json`); a networked bus can implement the same trait later. The
//! record keeps ccw's keys in ccw's order (`id, ts, from, to, type, summary[,
//! ref][, data]`, ccw-compat §2.1) and any other key it was read with.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One record of the bus, as ccw writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusMessage {
    /// `MSG-NNN` (at least three digits).
    pub id: String,
    /// ISO-8601 time with `+00:00`.
    pub ts: String,
    /// The sender (a role, or a task id in HEAD-era progress records).
    pub from: String,
    /// The recipient; `all` for a broadcast.
    pub to: String,
    /// The message type (`task_complete`, `state_update`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// One line for people.
    pub summary: String,
    /// E1 only: a top-level reference (E3 keeps it in `data.ref`).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The payload, always an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Map<String, Value>>,
    /// Keys this version does not know, kept in order.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BusMessage {
    /// The reference: top-level `ref` (E1) or `data.ref` (E3).
    pub fn reference(&self) -> Option<&str> {
        self.reference
            .as_deref()
            .or_else(|| self.data.as_ref()?.get("ref")?.as_str())
    }

    /// The numeric part of an `MSG-NNN` id.
    pub fn number(&self) -> Option<u64> {
        message_number(&self.id)
    }
}

/// The number of an id of the form `MSG-<digits>` (ccw's `^MSG-(\d+)$`).
pub fn message_number(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("MSG-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What a caller supplies to `log`; the bus fills in the defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    /// The sender (required).
    pub from: String,
    /// The recipient (default `coordinator`).
    pub to: Option<String>,
    /// The type (default `message`).
    pub kind: Option<String>,
    /// The summary (default `[<from>] <type> → <to>`).
    pub summary: Option<String>,
    /// The payload.
    pub data: Option<Map<String, Value>>,
    /// The legacy `ref`, folded into `data.ref` (E3).
    pub reference: Option<String>,
}

/// Filters of `list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilter {
    /// Only records from this sender.
    pub from: Option<String>,
    /// Only records to this recipient.
    pub to: Option<String>,
    /// Only records of this type.
    pub kind: Option<String>,
    /// How many of the newest matches to return (1–100).
    pub last: usize,
}

impl Default for ListFilter {
    fn default() -> Self {
        ListFilter {
            from: None,
            to: None,
            kind: None,
            last: 20,
        }
    }
}

/// The result of `list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListResult {
    /// How many records match the filter.
    pub total: usize,
    /// The newest matches, oldest first.
    pub messages: Vec<BusMessage>,
}

/// A team message bus (ccw's `team_msg`).
pub trait MessageBus: Send + Sync {
    /// The error type of this implementation.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Append a record (defaults filled in, id assigned); returns it as written.
    fn log(&self, message: NewMessage) -> Result<BusMessage, Self::Error>;
    /// Append a record to `all`.
    fn broadcast(&self, mut message: NewMessage) -> Result<BusMessage, Self::Error> {
        message.to = Some("all".to_owned());
        self.log(message)
    }
    /// The first record with this id.
    fn read(&self, id: &str) -> Result<Option<BusMessage>, Self::Error>;
    /// The newest records matching a filter.
    fn list(&self, filter: &ListFilter) -> Result<ListResult, Self::Error>;
    /// The shared state of one role (`role_state[role]`), or all of it.
    fn get_state(&self, role: Option<&str>) -> Result<Option<Value>, Self::Error>;
    /// A `state_update` record from `message.from`, its fields computed by
    /// `update` from that role's current state (empty when none) while the
    /// bus is held: two writers appending to the same arrays never lose
    /// each other's entries.
    fn update_state(
        &self,
        message: NewMessage,
        update: StateUpdate<'_>,
    ) -> Result<BusMessage, Self::Error>;
    /// The records appended after `cursor`, oldest first, and the cursor to
    /// pass next time; [`BusCursor::START`] reads from the first record. This
    /// is how an orchestrator follows the bus: each call costs what was
    /// appended since, not the length of the log.
    fn since(&self, cursor: BusCursor) -> Result<(Vec<BusMessage>, BusCursor), Self::Error>;
}

/// A position in a bus, from [`MessageBus::since`] (opaque: a byte offset
/// for the file bus, a sequence number for others).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BusCursor(pub u64);

impl BusCursor {
    /// Before the first record.
    pub const START: BusCursor = BusCursor(0);
}

/// The function of [`MessageBus::update_state`]: a role's current state in,
/// the fields to merge out.
pub type StateUpdate<'a> = Box<dyn FnOnce(&Map<String, Value>) -> Map<String, Value> + 'a>;

/// A borrowed bus is a bus (so `&dyn MessageBus<…>` goes where a sized
/// bus is expected, e.g. the worker loop).
impl<T: MessageBus + ?Sized> MessageBus for &T {
    type Error = T::Error;

    fn log(&self, message: NewMessage) -> Result<BusMessage, Self::Error> {
        (**self).log(message)
    }
    fn broadcast(&self, message: NewMessage) -> Result<BusMessage, Self::Error> {
        (**self).broadcast(message)
    }
    fn read(&self, id: &str) -> Result<Option<BusMessage>, Self::Error> {
        (**self).read(id)
    }
    fn list(&self, filter: &ListFilter) -> Result<ListResult, Self::Error> {
        (**self).list(filter)
    }
    fn get_state(&self, role: Option<&str>) -> Result<Option<Value>, Self::Error> {
        (**self).get_state(role)
    }
    fn update_state(
        &self,
        message: NewMessage,
        update: StateUpdate<'_>,
    ) -> Result<BusMessage, Self::Error> {
        (**self).update_state(message, update)
    }
    fn since(&self, cursor: BusCursor) -> Result<(Vec<BusMessage>, BusCursor), Self::Error> {
        (**self).since(cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_ccw_order() {
        let line = r#"{"id":"MSG-003","ts":"2026-02-26T13:40:11.002+00:00","from":"executor","to":"planner","type":"impl_complete","summary":"[executor] done","ref":"a.json","team":"planex"}"#;
        let m: BusMessage = serde_json::from_str(line).unwrap();
        assert_eq!(m.reference(), Some("a.json"));
        assert_eq!(serde_json::to_string(&m).unwrap(), line);
        assert_eq!(m.number(), Some(3));
        assert_eq!(message_number("MSG-x1"), None);
        assert_eq!(message_number("MSG-1000"), Some(1000));
    }
}
