//! [`NatsTaskStore`]: the [`TaskStore`] in a JetStream key-value bucket.
//!
//! Tasks live in the bucket `wavecrew_<session>_tasks`, one key per task id,
//! the value the task's JSON (the same shape as a `tasks/<ID>.json` file).
//! Every transition reads the entry and its revision, applies the same rule
//! [`FileTaskStore`](wavecrew_core::FileTaskStore) applies (the transition
//! functions of [`wavecrew_core::store`]), and writes back with a
//! compare-and-set on that revision. When the CAS fails someone else wrote
//! in between: the transition is decided again on the new value. So
//!
//! * a claim succeeds for exactly one caller;
//! * a heartbeat or a finish by a worker whose lease was reset (and
//!   perhaps taken by another worker) fails with
//!   [`CoreError::LeaseLost`]: that worker must kill its agent and never ack
//!   its ticket. The revision is the fence; the ticket's ack is not.
//!
//! One difference from the file store: a claim reads its blockers before
//! its CAS, not under one lock with it. Blockers only move forward (to an
//! ended state) while a session runs, so a blocker seen met stays met.
//!
//! ## Sync over async
//!
//! The trait is synchronous. Each call hands its future to the engine's own
//! runtime and waits for the answer on a std channel ([`Engine::block_on`]),
//! so it works from a plain thread, from `spawn_blocking`, and from an async
//! task on any runtime (it blocks that thread for one round trip, as the
//! file store blocks on disk).

use std::future::Future;
use std::path::PathBuf;

use async_nats::jetstream::kv::{self, CreateErrorKind, Operation, UpdateErrorKind};
use async_nats::jetstream::stream::{self, DiscardPolicy, StorageType};
use futures_util::TryStreamExt;
use serde_json::Value;
use wavecrew_core::store::{
    BlockerRule, Claim, LeasePolicy, TaskFileProblem, TaskListing, TaskStore, WorkerInfo,
    claim_refusal, end_attempt, release_if_expired, renew_lease, take_lease, task_order,
};
use wavecrew_core::{CoreError, Task, TaskId, TaskStatus};

use crate::connect::Engine;
use crate::error::EngineError;
use crate::names::check_task_key;

/// How many times one transition re-reads after losing a CAS before it
/// gives up (each loss means another writer made progress).
const MAX_CAS_ROUNDS: usize = 64;

/// How many old values of each task the bucket keeps (for forensics).
const HISTORY: i64 = 5;

/// The task store of one session, in the KV bucket `wavecrew_<session>_tasks`.
#[derive(Clone)]
pub struct NatsTaskStore {
    engine: Engine,
    kv: kv::Store,
    bucket: String,
}

impl std::fmt::Debug for NatsTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsTaskStore")
            .field("url", &self.engine.url())
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

/// A task as read, with the revision its next write must match.
struct Versioned {
    task: Task,
    revision: u64,
}

impl NatsTaskStore {
    /// The task store of `engine`'s session, creating its bucket if needed.
    ///
    /// The bucket's stream is made here rather than by
    /// `Context::create_key_value`, which first asks for the account's
    /// info in a shape nats-server 2.9 does not send; the stream is the
    /// one that call would make (`KV_<bucket>`, subjects `$KV.<bucket>.>`,
    /// rollups allowed, deletes denied, direct gets, discard new).
    pub fn open(engine: &Engine) -> Result<NatsTaskStore, EngineError> {
        let bucket = engine.session().tasks_bucket();
        let js = engine.jetstream().clone();
        let url = engine.url().to_owned();
        let name = bucket.clone();
        let kv = engine.block_on(
            &format!("opening the key-value bucket {bucket}"),
            async move { open_bucket(&js, &url, &name, HISTORY).await },
        )??;
        Ok(NatsTaskStore {
            engine: engine.clone(),
            kv,
            bucket,
        })
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// `<url>/<bucket>`: how errors name this store.
    fn label(&self) -> String {
        format!("{}/{}", self.engine.url(), self.bucket)
    }

    /// Where a task lives, for errors that carry a path.
    fn place(&self, key: &str) -> PathBuf {
        PathBuf::from(format!("{}/{key}", self.label()))
    }

    fn store_error(&self, e: EngineError) -> CoreError {
        CoreError::Store {
            store: self.label(),
            source: Box::new(e),
        }
    }

    /// Run `future` on the engine's runtime; its errors become
    /// [`CoreError::Store`] naming this store.
    fn run<T, F>(&self, action: &str, future: F) -> Result<T, CoreError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, EngineError>> + Send + 'static,
    {
        self.engine
            .block_on(action, future)
            .and_then(|r| r)
            .map_err(|e| self.store_error(e))
    }

    fn key(&self, id: &TaskId) -> Result<String, CoreError> {
        check_task_key(id).map_err(|e| self.store_error(e))?;
        Ok(id.as_str().to_owned())
    }

    /// The task and its revision, or `None` when the bucket does not hold it.
    fn fetch(&self, id: &TaskId) -> Result<Option<Versioned>, CoreError> {
        let key = self.key(id)?;
        let kv = self.kv.clone();
        let url = self.engine.url().to_owned();
        let action = format!("reading key {key} of bucket {}", self.bucket);
        let entry = self.run(&action.clone(), async move {
            kv.entry(key)
                .await
                .map_err(|e| EngineError::js(&url, action, e))
        })?;
        let Some(entry) = entry else { return Ok(None) };
        if entry.operation != Operation::Put {
            return Ok(None);
        }
        let place = self.place(&entry.key);
        let task: Task = wavecrew_core::fsutil::parse_json(&place, &entry.value)?;
        if &task.id != id {
            return Err(CoreError::invalid(
                place,
                "id",
                format!("`{}` does not match the key `{id}`", task.id),
            ));
        }
        Ok(Some(Versioned {
            task,
            revision: entry.revision,
        }))
    }

    fn fetch_existing(&self, id: &TaskId) -> Result<Versioned, CoreError> {
        self.fetch(id)?.ok_or_else(|| CoreError::TaskNotFound {
            id: id.to_string(),
            path: PathBuf::from(self.label()),
        })
    }

    fn encode(&self, task: &Task) -> Result<bytes::Bytes, CoreError> {
        serde_json::to_vec(task).map(Into::into).map_err(|e| {
            CoreError::invalid(
                self.place(task.id.as_str()),
                "",
                format!("cannot serialise: {e}"),
            )
        })
    }

    /// Write `task` if the entry is still at `revision`: `Ok(true)` when
    /// written, `Ok(false)` when someone wrote first (decide again).
    fn compare_and_set(&self, task: &mut Task, revision: u64) -> Result<bool, CoreError> {
        task.updated_at = Some(jiff::Timestamp::now());
        let key = self.key(&task.id)?;
        let value = self.encode(task)?;
        let kv = self.kv.clone();
        let url = self.engine.url().to_owned();
        let action = format!(
            "writing key {key} of bucket {} at revision {revision}",
            self.bucket
        );
        self.run(&action.clone(), async move {
            match kv.update(key, value, revision).await {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => Ok(false),
                Err(e) => Err(EngineError::js(&url, action, e)),
            }
        })
    }

    /// Read, decide with `step`, CAS; again on a lost CAS. `step` returns
    /// `Ok(Some(out))` to stop without writing, `Ok(None)` to write.
    fn transition<T>(
        &self,
        id: &TaskId,
        what: &str,
        mut step: impl FnMut(&mut Task) -> Result<Option<T>, CoreError>,
        mut written: impl FnMut(Task) -> T,
    ) -> Result<T, CoreError> {
        for _ in 0..MAX_CAS_ROUNDS {
            let Versioned { mut task, revision } = self.fetch_existing(id)?;
            if let Some(out) = step(&mut task)? {
                return Ok(out);
            }
            if self.compare_and_set(&mut task, revision)? {
                return Ok(written(task));
            }
            tracing::trace!(task = %id, what, "lost a compare-and-set; deciding again");
        }
        Err(self.store_error(EngineError::js(
            self.engine.url(),
            format!("{what} task {id} in bucket {}", self.bucket),
            format!("{MAX_CAS_ROUNDS} compare-and-sets in a row lost to other writers"),
        )))
    }
}

/// The stream `config` names, created when missing. Two hosts creating it
/// at once is no error: the loser is told the subjects overlap, and reads
/// the winner's stream.
pub(crate) async fn stream_for(
    js: &async_nats::jetstream::Context,
    url: &str,
    config: stream::Config,
    what: &str,
) -> Result<stream::Stream, EngineError> {
    let name = config.name.clone();
    match js.get_or_create_stream(config).await {
        Ok(stream) => Ok(stream),
        Err(e) => match js.get_stream(&name).await {
            Ok(stream) => Ok(stream),
            Err(_) => Err(EngineError::js(url, format!("creating {what}"), e)),
        },
    }
}

/// Open the bucket `bucket`, creating its stream when missing (2.9-safe).
pub(crate) async fn open_bucket(
    js: &async_nats::jetstream::Context,
    url: &str,
    bucket: &str,
    history: i64,
) -> Result<kv::Store, EngineError> {
    let config = stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: history,
        storage: StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        deny_purge: false,
        allow_direct: true,
        discard: DiscardPolicy::New,
        num_replicas: 1,
        ..Default::default()
    };
    stream_for(js, url, config, &format!("the stream of bucket {bucket}")).await?;
    js.get_key_value(bucket)
        .await
        .map_err(|e| EngineError::js(url, format!("opening the key-value bucket {bucket}"), e))
}

impl TaskStore for NatsTaskStore {
    fn list_lenient(&self) -> Result<TaskListing, CoreError> {
        let kv = self.kv.clone();
        let url = self.engine.url().to_owned();
        let action = format!("listing the keys of bucket {}", self.bucket);
        let keys: Vec<String> = self.run(&action.clone(), async move {
            let keys = kv
                .keys()
                .await
                .map_err(|e| EngineError::js(&url, action.clone(), e))?;
            keys.try_collect()
                .await
                .map_err(|e| EngineError::js(&url, action, e))
        })?;
        let mut listing = TaskListing::default();
        for key in keys {
            let read = TaskId::new(&key)
                .map_err(|source| CoreError::Id {
                    context: format!("key `{}`", self.place(&key).display()),
                    source,
                })
                .and_then(|id| self.fetch(&id));
            match read {
                Ok(Some(v)) => listing.tasks.push(v.task),
                // Deleted between the listing and the read.
                Ok(None) => {}
                Err(error) => listing.problems.push(TaskFileProblem {
                    path: self.place(&key),
                    error,
                }),
            }
        }
        listing.tasks.sort_by(|a, b| task_order(&a.id, &b.id));
        listing.problems.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listing)
    }

    fn get(&self, id: &TaskId) -> Result<Task, CoreError> {
        Ok(self.fetch_existing(id)?.task)
    }

    fn create(&self, mut task: Task) -> Result<Task, CoreError> {
        task.created_at.get_or_insert_with(jiff::Timestamp::now);
        task.updated_at = Some(jiff::Timestamp::now());
        let key = self.key(&task.id)?;
        let value = self.encode(&task)?;
        let kv = self.kv.clone();
        let url = self.engine.url().to_owned();
        let action = format!("creating key {key} in bucket {}", self.bucket);
        let created = self.run(&action.clone(), async move {
            match kv.create(key, value).await {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == CreateErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(EngineError::js(&url, action, e)),
            }
        })?;
        if !created {
            return Err(CoreError::TaskExists {
                id: task.id.to_string(),
                path: PathBuf::from(self.label()),
            });
        }
        Ok(task)
    }

    fn update(
        &self,
        id: &TaskId,
        f: &mut dyn FnMut(&mut Task) -> Result<(), CoreError>,
    ) -> Result<Task, CoreError> {
        self.transition(
            id,
            "updating",
            |task| {
                f(task)?;
                if &task.id != id {
                    return Err(CoreError::invalid(
                        self.place(id.as_str()),
                        "id",
                        "an update may not change the id",
                    ));
                }
                Ok(None)
            },
            |task| task,
        )
    }

    fn claim_with(
        &self,
        id: &TaskId,
        worker: &WorkerInfo,
        rule: BlockerRule,
    ) -> Result<Claim, CoreError> {
        let claim = self.transition(
            id,
            "claiming",
            |task| {
                let refusal = claim_refusal(task, rule, &mut |blocker| {
                    Ok(self.fetch(blocker)?.map(|v| v.task.status))
                })?;
                if refusal.is_none() {
                    take_lease(task, worker, jiff::Timestamp::now());
                }
                Ok(refusal)
            },
            |task| Claim::Claimed(Box::new(task)),
        )?;
        if let Claim::Claimed(task) = &claim {
            tracing::debug!(task = %id, worker = %worker.worker, attempt = task.attempts, "task claimed");
        }
        Ok(claim)
    }

    fn heartbeat(&self, id: &TaskId, worker: &WorkerInfo) -> Result<(), CoreError> {
        self.transition(
            id,
            "renewing the lease of",
            |task| renew_lease(task, worker, jiff::Timestamp::now()).map(|()| None),
            |_| (),
        )
    }

    fn finish(
        &self,
        id: &TaskId,
        worker: &WorkerInfo,
        status: TaskStatus,
        result: Option<Value>,
    ) -> Result<Task, CoreError> {
        let task = self.transition(
            id,
            "finishing",
            |task| end_attempt(task, worker, status, result.clone()).map(|()| None),
            |task| task,
        )?;
        tracing::debug!(task = %id, worker = %worker.worker, status = %status, "task finished");
        Ok(task)
    }

    fn reconcile(&self, policy: &LeasePolicy) -> Result<Vec<TaskId>, CoreError> {
        let mut reset = Vec::new();
        // A task that cannot be read is not this method's to judge.
        for task in self.list_lenient()?.tasks {
            if task.status != TaskStatus::InProgress {
                continue;
            }
            // Decided again on the current value after a lost CAS: a
            // heartbeat that landed first keeps the lease.
            let released = self.transition(
                &task.id,
                "reconciling",
                |task| {
                    let now = jiff::Timestamp::now();
                    Ok((!release_if_expired(task, policy, now)).then_some(false))
                },
                |_| true,
            );
            match released {
                Ok(true) => reset.push(task.id.clone()),
                Ok(false) | Err(CoreError::TaskNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(reset)
    }
}
