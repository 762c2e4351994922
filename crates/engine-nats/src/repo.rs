//! The repository, carried between hosts that share no filesystem.
//!
//! The coordinator publishes its integration branch: the first time a whole
//! git bundle of it, after that one bundle per move with only the new
//! commits, each an object (`repo-<n>.bundle`), and the list of them with
//! the tip in the session's meta bucket under [`TIP_KEY`], every change a
//! compare-and-set on the entry's revision. A host brings its cache (a git
//! repository of its own) up to the published tip by reading the bundles it
//! lacks, in order; the cache's branch moves by compare-and-swap. A finished
//! attempt sends its commits back the same way (`attempt-<task>-<n>.bundle`)
//! and the coordinator takes them into a ref of its repository, for its
//! merge queue to land.

use std::path::Path;

use async_nats::jetstream::kv;
use serde::{Deserialize, Serialize};
use wavecrew_isolation::{Bundled, Repo};

use crate::connect::Engine;
use crate::error::{EngineError, Result};
use crate::names::check_object_name;
use crate::objects::Objects;

/// The key of the published integration tip in the meta bucket.
pub const TIP_KEY: &str = "integration";

/// How many revisions of the tip the meta bucket keeps.
const HISTORY: i64 = 5;

/// One bundle of the published branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleRef {
    /// Its object name.
    pub object: String,
    /// The branch's commit it brings.
    pub tip: String,
}

/// The published integration branch: its name, its tip, and the bundles
/// that together hold it (the first whole, each next one on top).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TipRecord {
    /// The format's version (1).
    pub version: u32,
    /// The branch, `refs/heads/wavecrew/<session-id>`.
    pub branch: String,
    /// Its commit now.
    pub tip: String,
    /// The bundles, oldest first.
    pub bundles: Vec<BundleRef>,
}

/// The session's repository channel: the meta bucket and the object store.
#[derive(Clone)]
pub struct RepoChannel {
    engine: Engine,
    meta: kv::Store,
    objects: Objects,
}

impl std::fmt::Debug for RepoChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepoChannel")
            .field("session", &self.engine.session().as_str())
            .finish_non_exhaustive()
    }
}

/// Run a git step off the async threads; its error names `action`.
async fn git_step<T: Send + 'static>(
    action: String,
    step: impl FnOnce() -> wavecrew_isolation::Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(step).await {
        Ok(result) => result.map_err(|source| EngineError::Git { action, source }),
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

impl RepoChannel {
    /// The channel of `engine`'s session, creating its buckets if needed.
    pub async fn open(engine: &Engine) -> Result<RepoChannel> {
        let bucket = engine.session().meta_bucket();
        let meta =
            crate::tasks::open_bucket(engine.jetstream(), engine.url(), &bucket, HISTORY).await?;
        Ok(RepoChannel {
            engine: engine.clone(),
            meta,
            objects: Objects::open(engine).await?,
        })
    }

    fn kv_error(&self, action: &str, e: impl Into<crate::error::BoxError>) -> EngineError {
        EngineError::js(
            self.engine.url(),
            format!("{action} in bucket {}", self.engine.session().meta_bucket()),
            e,
        )
    }

    /// The published tip and its revision, if any was published.
    pub async fn record(&self) -> Result<Option<(TipRecord, u64)>> {
        let entry = self
            .meta
            .entry(TIP_KEY)
            .await
            .map_err(|e| self.kv_error("reading the integration tip", e))?;
        let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
            return Ok(None);
        };
        let record: TipRecord = serde_json::from_slice(&entry.value).map_err(|e| {
            self.kv_error(
                "reading the integration tip",
                format!("not a tip record ({e}); expected JSON written by wavecrew"),
            )
        })?;
        Ok(Some((record, entry.revision)))
    }

    /// Coordinator: publish `branch` (`refs/heads/…`) of `repo` as it is
    /// now: a whole bundle the first time, else one with the commits since
    /// the last published tip (nothing when it has not moved). `scratch` is
    /// a folder for the bundle file. A lost compare-and-set (another
    /// coordinator published meanwhile) is an error; the bundle object it
    /// wrote is then replaced by the next publish of that number.
    pub async fn publish(&self, repo: &Repo, branch: &str, scratch: &Path) -> Result<TipRecord> {
        let current = self.record().await?;
        if let Some((record, _)) = &current
            && record.branch != branch
        {
            return Err(EngineError::Diverged {
                what: format!("the session publishes {}, not {branch}", record.branch),
                expected: "one integration branch per session".into(),
            });
        }
        let since = current.as_ref().map(|(r, _)| r.tip.clone());
        let n = current.as_ref().map_or(0, |(r, _)| r.bundles.len());
        let object = format!("repo-{n}.bundle");
        let bundled = self
            .put_bundle(repo, branch, since.as_deref(), &object, scratch)
            .await?;
        let commit = match (bundled, current.as_ref()) {
            (Bundled::Written { commit }, _) => commit,
            (Bundled::UpToDate, Some((record, _))) => return Ok(record.clone()),
            (Bundled::UpToDate, None) => {
                return Err(EngineError::Diverged {
                    what: format!("git wrote no bundle of {branch}"),
                    expected: "a whole bundle of a branch published the first time".into(),
                });
            }
        };
        let mut record = current.as_ref().map_or_else(
            || TipRecord {
                version: 1,
                branch: branch.to_owned(),
                tip: commit.clone(),
                bundles: Vec::new(),
            },
            |(r, _)| r.clone(),
        );
        record.tip.clone_from(&commit);
        record.bundles.push(BundleRef {
            object,
            tip: commit,
        });
        let bytes = serde_json::to_vec(&record).expect("a tip record serializes");
        let written = match &current {
            None => self
                .meta
                .create(TIP_KEY, bytes.into())
                .await
                .map_err(|e| self.kv_error("publishing the integration tip", e)),
            Some((_, revision)) => self
                .meta
                .update(TIP_KEY, bytes.into(), *revision)
                .await
                .map_err(|e| self.kv_error("publishing the integration tip", e)),
        };
        written?;
        Ok(record)
    }

    /// Host: bring `cache`'s copy of the published branch up to the tip,
    /// reading only the bundles it lacks; returns the tip (None: nothing is
    /// published yet, a worker started before its coordinator waits).
    pub async fn sync(&self, cache: &Repo, scratch: &Path) -> Result<Option<String>> {
        let Some((record, _)) = self.record().await? else {
            return Ok(None);
        };
        let have = {
            let (cache, branch) = (cache.clone(), record.branch.clone());
            git_step(format!("reading {branch}"), move || {
                cache.ref_commit(&branch)
            })
            .await?
        };
        let from = match &have {
            None => 0,
            Some(have) => match record.bundles.iter().position(|b| &b.tip == have) {
                Some(i) => i + 1,
                None => {
                    return Err(EngineError::Diverged {
                        what: format!(
                            "this host's {} is at {have}, which the session never published",
                            record.branch
                        ),
                        expected: "a cache that only ever took the session's bundles".into(),
                    });
                }
            },
        };
        let mut at = have.unwrap_or_default();
        for bundle in &record.bundles[from..] {
            let (commit, moved) = self
                .read_bundle(
                    cache,
                    &bundle.object,
                    &record.branch,
                    &record.branch,
                    &at,
                    scratch,
                )
                .await?;
            if !moved {
                return Err(EngineError::Diverged {
                    what: format!(
                        "{} moved on this host while it was brought up to date",
                        record.branch
                    ),
                    expected: "one sync of a cache at a time".into(),
                });
            }
            at = commit;
        }
        Ok(Some(at))
    }

    /// Host: send the commits of `branch` (`refs/heads/…`) since `base`
    /// as attempt `attempt` of `task`; Ok(None) when it has none.
    pub async fn send_attempt(
        &self,
        repo: &Repo,
        task: &str,
        attempt: u32,
        branch: &str,
        base: &str,
        scratch: &Path,
    ) -> Result<Option<String>> {
        let object = attempt_object(task, attempt)?;
        match self
            .put_bundle(repo, branch, Some(base), &object, scratch)
            .await?
        {
            Bundled::Written { commit } => Ok(Some(commit)),
            Bundled::UpToDate => Ok(None),
        }
    }

    /// Coordinator: take attempt `attempt` of `task` (sent from `branch`)
    /// into `dest` (`refs/…`, which must not exist yet or already name the
    /// same commit); returns its commit.
    pub async fn take_attempt(
        &self,
        repo: &Repo,
        task: &str,
        attempt: u32,
        branch: &str,
        dest: &str,
        scratch: &Path,
    ) -> Result<String> {
        let object = attempt_object(task, attempt)?;
        let (commit, _) = self
            .read_bundle(repo, &object, branch, dest, "", scratch)
            .await?;
        let now = {
            let (repo, dest) = (repo.clone(), dest.to_owned());
            git_step(format!("reading {dest}"), move || repo.ref_commit(&dest)).await?
        };
        // Taken before (a resumed coordinator): the same commit is fine.
        if now.as_deref() == Some(commit.as_str()) {
            Ok(commit)
        } else {
            Err(EngineError::Diverged {
                what: format!(
                    "{dest} names {}, not the commit {commit} of {object}",
                    now.as_deref().unwrap_or("nothing")
                ),
                expected: "refs of remote attempts written once".into(),
            })
        }
    }

    /// Bundle `branch` of `repo` since `since` and, when there is
    /// something to send, store it as `object` (the file in `scratch` goes).
    async fn put_bundle(
        &self,
        repo: &Repo,
        branch: &str,
        since: Option<&str>,
        object: &str,
        scratch: &Path,
    ) -> Result<Bundled> {
        let file = scratch.join(object);
        let bundled = {
            let (repo, branch, file, since) = (
                repo.clone(),
                branch.to_owned(),
                file.clone(),
                since.map(str::to_owned),
            );
            git_step(format!("bundling {branch}"), move || {
                repo.create_bundle(&file, &branch, since.as_deref())
            })
            .await?
        };
        if matches!(bundled, Bundled::Written { .. }) {
            self.objects.put_file(object, &file).await?;
            let _ = std::fs::remove_file(&file);
        }
        Ok(bundled)
    }

    /// Read the bundle stored as `object` into `repo` (see
    /// [`Repo::fetch_bundle`]: `dest` moves from `expected` to the commit
    /// its `reference` names); the file in `scratch` goes.
    async fn read_bundle(
        &self,
        repo: &Repo,
        object: &str,
        reference: &str,
        dest: &str,
        expected: &str,
        scratch: &Path,
    ) -> Result<(String, bool)> {
        let file = scratch.join(object);
        self.objects.get_file(object, &file).await?;
        let read = {
            let (repo, reference, dest, expected, file) = (
                repo.clone(),
                reference.to_owned(),
                dest.to_owned(),
                expected.to_owned(),
                file.clone(),
            );
            git_step(format!("reading bundle {object}"), move || {
                repo.fetch_bundle(&file, &reference, &dest, &expected)
            })
            .await
        };
        let _ = std::fs::remove_file(&file);
        read
    }
}

/// `attempt-<task>-<attempt>.bundle`, checked as an object name.
fn attempt_object(task: &str, attempt: u32) -> Result<String> {
    let name = format!("attempt-{task}-{attempt}.bundle");
    check_object_name(&name)?;
    Ok(name)
}
