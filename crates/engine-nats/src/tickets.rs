//! [`Tickets`]: "task X is ready for role R", on a JetStream work queue.
//!
//! The stream `wavecrew_<session>_tickets` keeps one message per ticket on
//! the subject `wavecrew.<session>.ticket.<role>` until it is acked or
//! terminated (work-queue retention). Each role has one durable pull
//! consumer (`tickets-<role>`) that every worker of that role shares, so a
//! ticket goes to one worker at a time; one left unacked for `ack_wait` goes
//! to another, up to `max_deliver` deliveries.
//!
//! A ticket is only a wake-up call. Whether a worker may run the task is
//! decided by the task store's claim (a compare-and-set on the KV revision),
//! and whether it may record the result by its heartbeats and finish (same).
//! An ack from a worker whose delivery was already redelivered still removes
//! the message, so a worker must ack only after its `finish` succeeded, and
//! never after a [`LeaseLost`](wavecrew_core::CoreError::LeaseLost).
//!
//! Publishing is de-duplicated by `Nats-Msg-Id` `<task>:<attempt>` within
//! the stream's duplicate window: the coordinator may publish again after a
//! restart without making a second ticket for the same attempt.
//!
//! On nats-server 2.9, `max_deliver` stops the redeliveries but leaves the
//! message in the stream: on a ticket's final delivery
//! ([`Ticket::is_final_delivery`]) the worker acks it when done or calls
//! [`Ticket::term`] on failure.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
use async_nats::jetstream::message::AckKind;
use async_nats::jetstream::stream::{self, RetentionPolicy, StorageType};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use wavecrew_core::TaskId;

use crate::connect::Engine;
use crate::error::{EngineError, Result};
use crate::names::{check_role, check_task_key};

/// How tickets are redelivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TicketPolicy {
    /// How long a delivered ticket stays with its worker without an ack or a
    /// progress ack before it goes to another (default 30 s).
    pub ack_wait: Duration,
    /// How many times a ticket is delivered at most (default 5).
    pub max_deliver: i64,
    /// How long a ticket's message id is remembered for de-duplication
    /// (default 2 minutes).
    pub duplicate_window: Duration,
}

impl Default for TicketPolicy {
    fn default() -> Self {
        TicketPolicy {
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            duplicate_window: Duration::from_secs(120),
        }
    }
}

/// The body of a ticket message.
#[derive(Debug, Serialize, Deserialize)]
struct Body {
    task_id: TaskId,
    attempt: u32,
}

/// What publishing a ticket did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// The ticket's sequence in the stream.
    pub sequence: u64,
    /// Whether the same `<task>:<attempt>` was already published (no new
    /// ticket was made).
    pub duplicate: bool,
}

/// The ticket queue of one session.
pub struct Tickets {
    engine: Engine,
    stream: stream::Stream,
    name: String,
    policy: TicketPolicy,
    consumers: tokio::sync::Mutex<HashMap<String, PullConsumer>>,
}

impl std::fmt::Debug for Tickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tickets")
            .field("url", &self.engine.url())
            .field("stream", &self.name)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Tickets {
    /// The ticket queue of `engine`'s session, creating its stream if
    /// needed. `policy` applies to the consumers this handle creates.
    pub async fn open(engine: &Engine, policy: TicketPolicy) -> Result<Tickets> {
        let session = engine.session();
        let name = session.tickets_stream();
        let config = stream::Config {
            name: name.clone(),
            subjects: vec![session.ticket_subject("*")],
            retention: RetentionPolicy::WorkQueue,
            duplicate_window: policy.duplicate_window,
            storage: StorageType::File,
            ..Default::default()
        };
        let stream = crate::tasks::stream_for(
            engine.jetstream(),
            engine.url(),
            config,
            &format!("the stream {name}"),
        )
        .await?;
        Ok(Tickets {
            engine: engine.clone(),
            stream,
            name,
            policy,
            consumers: tokio::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.name
    }

    /// How many tickets the stream holds now (delivered or not, not yet
    /// acked or terminated).
    pub async fn pending(&self) -> Result<u64> {
        let mut stream = self.stream.clone();
        let info = stream.info().await.map_err(|e| {
            EngineError::js(
                self.engine.url(),
                format!("reading the state of stream {}", self.name),
                e,
            )
        })?;
        Ok(info.state.messages)
    }

    /// Publish a ticket for attempt `attempt` of `task` to `role`'s workers,
    /// with the message id `<task>:<attempt>`.
    pub async fn publish(&self, role: &str, task: &TaskId, attempt: u32) -> Result<Published> {
        check_role(role)?;
        check_task_key(task)?;
        let subject = self.engine.session().ticket_subject(role);
        let msg_id = format!("{task}:{attempt}");
        let body = serde_json::to_vec(&Body {
            task_id: task.clone(),
            attempt,
        })
        .map_err(|e| EngineError::js(self.engine.url(), "encoding a ticket", e))?;
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, msg_id.as_str());
        let action = format!("publishing ticket {msg_id} to {subject}");
        let ack = self
            .engine
            .jetstream()
            .publish_with_headers(subject, headers, body.into())
            .await
            .map_err(|e| EngineError::js(self.engine.url(), action.clone(), e))?
            .await
            .map_err(|e| EngineError::js(self.engine.url(), action, e))?;
        Ok(Published {
            sequence: ack.sequence,
            duplicate: ack.duplicate,
        })
    }

    /// The durable consumer of `role`, created on first use.
    async fn consumer(&self, role: &str) -> Result<PullConsumer> {
        let mut consumers = self.consumers.lock().await;
        if let Some(c) = consumers.get(role) {
            return Ok(c.clone());
        }
        let durable = format!("tickets-{role}");
        let config = pull::Config {
            durable_name: Some(durable.clone()),
            filter_subject: self.engine.session().ticket_subject(role),
            ack_policy: AckPolicy::Explicit,
            ack_wait: self.policy.ack_wait,
            max_deliver: self.policy.max_deliver,
            ..Default::default()
        };
        let consumer = self
            .stream
            .get_or_create_consumer(&durable, config)
            .await
            .map_err(|e| {
                EngineError::js(
                    self.engine.url(),
                    format!("creating the consumer {durable} on stream {}", self.name),
                    e,
                )
            })?;
        consumers.insert(role.to_owned(), consumer.clone());
        Ok(consumer)
    }

    /// The next ticket for `role`, waiting up to `wait` for one; `None`
    /// when none came.
    pub async fn next(&self, role: &str, wait: Duration) -> Result<Option<Ticket>> {
        check_role(role)?;
        let consumer = self.consumer(role).await?;
        let action = format!("fetching a ticket of role {role} from stream {}", self.name);
        let url = self.engine.url();
        let fetch = consumer.fetch().max_messages(1);
        let fetch = if wait.is_zero() {
            fetch
        } else {
            fetch.expires(wait)
        };
        let mut batch = fetch
            .messages()
            .await
            .map_err(|e| EngineError::js(url, action.clone(), e))?;
        let Some(message) = batch.next().await else {
            return Ok(None);
        };
        let message = message.map_err(|e| EngineError::js(url, action.clone(), e))?;
        let (sequence, delivered) = {
            let info = message
                .info()
                .map_err(|e| EngineError::js(url, action.clone(), e))?;
            (info.stream_sequence, info.delivered)
        };
        let what = format!("ticket {sequence} of stream {}", self.name);
        let body: Body =
            serde_json::from_slice(&message.payload).map_err(|e| EngineError::Malformed {
                url: url.to_owned(),
                what: what.clone(),
                reason: format!("{e}; expected {{\"task_id\": …, \"attempt\": …}}"),
            })?;
        Ok(Some(Ticket {
            task_id: body.task_id,
            attempt: body.attempt,
            sequence,
            delivered,
            max_deliver: self.policy.max_deliver,
            url: url.to_owned(),
            what,
            message,
        }))
    }
}

/// One delivery of a ticket to this worker.
pub struct Ticket {
    task_id: TaskId,
    attempt: u32,
    sequence: u64,
    delivered: i64,
    max_deliver: i64,
    url: String,
    what: String,
    message: async_nats::jetstream::Message,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("task_id", &self.task_id)
            .field("attempt", &self.attempt)
            .field("sequence", &self.sequence)
            .field("delivered", &self.delivered)
            .finish_non_exhaustive()
    }
}

impl Ticket {
    /// The task this ticket is for.
    pub fn task_id(&self) -> &TaskId {
        &self.task_id
    }

    /// The attempt number it was published for.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The ticket's sequence in the stream.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// How many times it has been delivered, this delivery included.
    pub fn delivered(&self) -> i64 {
        self.delivered
    }

    /// Whether this is the last delivery `max_deliver` allows: the server
    /// will not send it again, but (on 2.9) keeps it in the stream until it
    /// is acked or terminated.
    pub fn is_final_delivery(&self) -> bool {
        self.max_deliver > 0 && self.delivered >= self.max_deliver
    }

    async fn send(&self, kind: AckKind, confirmed: bool, what: &str) -> Result<()> {
        let sent = if confirmed {
            self.message.double_ack_with(kind).await
        } else {
            self.message.ack_with(kind).await
        };
        sent.map_err(|e| EngineError::js(&self.url, format!("{what} {}", self.what), e))
    }

    /// A progress ack: the ticket stays this worker's for another
    /// `ack_wait`. Send one with every task heartbeat.
    pub async fn progress(&self) -> Result<()> {
        self.send(AckKind::Progress, false, "sending a progress ack for")
            .await
    }

    /// Done: the ticket leaves the stream (confirmed by the server). Only
    /// after the task store's `finish` succeeded.
    pub async fn ack(self) -> Result<()> {
        self.send(AckKind::Ack, true, "acking").await
    }

    /// Give the ticket back, to be delivered again after `delay`.
    pub async fn nak_after(self, delay: Duration) -> Result<()> {
        self.send(AckKind::Nak(Some(delay)), false, "giving back")
            .await
    }

    /// Stop redelivering: the ticket leaves the stream without being done
    /// (confirmed by the server). For a final failure.
    pub async fn term(self) -> Result<()> {
        self.send(AckKind::Term, true, "terminating").await
    }
}
