//! [`Objects`]: files between hosts, in the object store bucket
//! `wavecrew_<session>_objects` (git bundles of the repository, attempt
//! files). No shared disk: what one host needs from another travels here.
//!
//! Names are validated ([`check_object_name`]): one segment of ASCII
//! letters, digits, `_`, `-`, `.`. [`Objects::get_file`] writes atomically
//! (a temp file in the destination's folder, fsync, rename, fsync of the
//! folder), so a reader never sees half a bundle.

use std::path::Path;

use async_nats::jetstream::object_store::{self, GetErrorKind, ObjectStore};
use tokio::io::AsyncWriteExt;

use crate::connect::Engine;
use crate::error::{EngineError, Result};
use crate::names::check_object_name;

/// The object store of one session.
#[derive(Clone)]
pub struct Objects {
    engine: Engine,
    store: ObjectStore,
    bucket: String,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects")
            .field("url", &self.engine.url())
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

fn io(op: &'static str, path: &Path, source: std::io::Error) -> EngineError {
    EngineError::io(op, path, source)
}

impl Objects {
    /// The object store of `engine`'s session, creating its bucket if needed.
    pub async fn open(engine: &Engine) -> Result<Objects> {
        let bucket = engine.session().objects_bucket();
        let js = engine.jetstream();
        let store = if let Ok(store) = js.get_object_store(&bucket).await {
            store
        } else {
            let created = js
                .create_object_store(object_store::Config {
                    bucket: bucket.clone(),
                    ..Default::default()
                })
                .await;
            match created {
                Ok(store) => store,
                // Two hosts creating it at once: the loser reads the
                // winner's bucket.
                Err(e) => js.get_object_store(&bucket).await.map_err(|_| {
                    EngineError::js(
                        engine.url(),
                        format!("creating the object store bucket {bucket}"),
                        e,
                    )
                })?,
            }
        };
        Ok(Objects {
            engine: engine.clone(),
            store,
            bucket,
        })
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Store the file at `path` under `name` (replacing an object of that
    /// name); returns its size in bytes.
    pub async fn put_file(&self, name: &str, path: &Path) -> Result<u64> {
        check_object_name(name)?;
        let mut file = tokio::fs::File::open(path)
            .await
            .map_err(|e| io("opening", path, e))?;
        let info = self.store.put(name, &mut file).await.map_err(|e| {
            EngineError::js(
                self.engine.url(),
                format!(
                    "storing `{}` as object {name} in bucket {}",
                    path.display(),
                    self.bucket
                ),
                e,
            )
        })?;
        Ok(info.size as u64)
    }

    /// Write the object `name` to `dest`, atomically; returns its size in
    /// bytes. Fails naming the object and the bucket when it is missing.
    pub async fn get_file(&self, name: &str, dest: &Path) -> Result<u64> {
        check_object_name(name)?;
        let action = format!("reading object {name} of bucket {}", self.bucket);
        let mut object = self.store.get(name).await.map_err(|e| {
            if e.kind() == GetErrorKind::NotFound {
                EngineError::js(
                    self.engine.url(),
                    action.clone(),
                    format!(
                        "no object {name} in bucket {}; expected one put there earlier",
                        self.bucket
                    ),
                )
            } else {
                EngineError::js(self.engine.url(), action.clone(), e)
            }
        })?;
        let dir = dest
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| io("creating", dir, e))?;
        let tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(dir)
            .map_err(|e| io("creating a temp file in", dir, e))?;
        let std_file = tmp
            .as_file()
            .try_clone()
            .map_err(|e| io("opening", tmp.path(), e))?;
        let mut file = tokio::fs::File::from_std(std_file);
        // A read error here includes a digest that does not match.
        let size = tokio::io::copy(&mut object, &mut file)
            .await
            .map_err(|e| EngineError::js(self.engine.url(), action, e))?;
        file.flush().await.map_err(|e| io("writing", dest, e))?;
        file.sync_all().await.map_err(|e| io("writing", dest, e))?;
        drop(file);
        tmp.persist(dest)
            .map_err(|e| io("replacing", dest, e.error))?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(size)
    }
}
