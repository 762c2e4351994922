//! [`Registry`]: which sessions a server carries, for host agents to find.
//!
//! A host agent (`wavecrew worker`) connects before it knows a session: it
//! reads the KV bucket `wavecrew_sessions`, where each coordinator announces
//! its session under the session's name ([`SessionCard`]) and marks it
//! finished at the end. A worker started before any coordinator waits for
//! a card to appear.

use std::time::Duration;

use async_nats::jetstream::kv::{self, Operation};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

use crate::connect::Engine;
use crate::error::{EngineError, Result};
use crate::names::SessionName;

/// The bucket every coordinator announces its session in.
pub const SESSIONS_BUCKET: &str = "wavecrew_sessions";

/// How many old values of each card the bucket keeps.
const HISTORY: i64 = 2;

/// What a host agent needs to know of a session before it takes tickets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCard {
    /// The session id (the namespace of its streams and buckets).
    pub session: String,
    /// The roles whose tickets it publishes.
    pub roles: Vec<String>,
    /// The coordinator's host.
    pub coordinator: String,
    /// How long a ticket stays with a silent worker, in seconds; workers
    /// heartbeat every third of it.
    pub ack_wait_secs: u64,
    /// `running`, or `finished` once the coordinator's run ended.
    pub state: SessionState,
    /// The coordinator's wavecrew version: hosts serve only a session of
    /// their own version (the kit, packs and results are its formats).
    #[serde(default)]
    pub version: String,
}

/// Whether a session still takes workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// Its coordinator runs (or was killed and will resume).
    Running,
    /// Its coordinator's run ended.
    Finished,
}

impl SessionCard {
    /// How long a ticket stays with a silent worker.
    pub fn ack_wait(&self) -> Duration {
        Duration::from_secs(self.ack_wait_secs.max(1))
    }
}

/// The session registry of one server.
#[derive(Clone)]
pub struct Registry {
    engine: Engine,
    kv: kv::Store,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("url", &self.engine.url())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// The registry on `engine`'s server, creating its bucket if needed.
    pub async fn open(engine: &Engine) -> Result<Registry> {
        let kv =
            crate::tasks::open_bucket(engine.jetstream(), engine.url(), SESSIONS_BUCKET, HISTORY)
                .await?;
        Ok(Registry {
            engine: engine.clone(),
            kv,
        })
    }

    fn error(&self, action: &str, e: impl Into<crate::error::BoxError>) -> EngineError {
        EngineError::js(
            self.engine.url(),
            format!("{action} in bucket {SESSIONS_BUCKET}"),
            e,
        )
    }

    /// Announce (or update) a session's card.
    pub async fn announce(&self, card: &SessionCard) -> Result<()> {
        let name = SessionName::new(&card.session)?;
        let value =
            serde_json::to_vec(card).map_err(|e| self.error("writing a session card", e))?;
        self.kv
            .put(name.as_str(), value.into())
            .await
            .map_err(|e| self.error(&format!("announcing session {name}"), e))?;
        Ok(())
    }

    /// One session's card, if it was announced.
    pub async fn card(&self, session: &str) -> Result<Option<SessionCard>> {
        let name = SessionName::new(session)?;
        let entry = self
            .kv
            .entry(name.as_str())
            .await
            .map_err(|e| self.error(&format!("reading session {name}"), e))?;
        let Some(entry) = entry.filter(|e| e.operation == Operation::Put) else {
            return Ok(None);
        };
        let card = serde_json::from_slice(&entry.value).map_err(|e| {
            self.error(
                &format!("reading session {name}"),
                format!("not a session card ({e}); expected JSON written by wavecrew"),
            )
        })?;
        Ok(Some(card))
    }

    /// Every session whose coordinator runs, in name order.
    pub async fn running(&self) -> Result<Vec<SessionCard>> {
        let keys = match self.kv.keys().await {
            Ok(keys) => keys,
            Err(e) => return Err(self.error("listing the sessions", e)),
        };
        let mut keys: Vec<String> = keys
            .try_collect()
            .await
            .map_err(|e| self.error("listing the sessions", e))?;
        keys.sort();
        let mut cards = Vec::new();
        for key in keys {
            if let Some(card) = self.card(&key).await?
                && card.state == SessionState::Running
            {
                cards.push(card);
            }
        }
        Ok(cards)
    }
}
