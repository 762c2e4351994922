//! [`Engine`]: one connection to a NATS server, for one session.
//!
//! ## The engine's own runtime
//!
//! The client's connection task (socket reads, writes, pings, reconnects)
//! runs on a small runtime the engine owns (one worker thread), never on the
//! caller's. Two reasons:
//!
//! * the [`TaskStore`](wavecrew_core::TaskStore) trait is synchronous, and
//!   wavecrew calls it from plain threads, from `spawn_blocking`, and even
//!   straight from async tasks (the worker loop's heartbeat). A blocking
//!   call waits on a std channel while the engine's runtime does the work,
//!   so it works from all three; `Handle::block_on` panics inside a
//!   runtime, and `block_in_place` panics on a current-thread runtime;
//! * a caller that blocks its only thread (a current-thread runtime) cannot
//!   starve the connection: the connection does not live there.
//!
//! The async parts of the engine (tickets, bus, objects) run on the caller's
//! runtime as ordinary `async-nats` calls; the client's handle talks to the
//! connection task over channels, which works across runtimes.
//!
//! Credentials never come from the command line: [`Engine::connect`] takes a
//! file holding either a NATS `.creds` (a user JWT and its NKey seed) or a
//! token, and refuses a URL carrying a user or password.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use tokio::runtime::{Handle, Runtime};

use crate::error::{EngineError, Result};
use crate::names::SessionName;

/// How long a connect may take before it fails naming the URL.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection to a NATS server with JetStream, scoped to one session.
///
/// Cheap to clone: clones share the connection and the runtime.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    session: SessionName,
    client: async_nats::Client,
    jetstream: jetstream::Context,
    handle: Handle,
    /// Shared by the engines of every session on this connection.
    runtime: Arc<OwnedRuntime>,
}

/// The engine's runtime, shut down without waiting when the last engine on
/// it goes (dropping a runtime inside an async context would panic).
struct OwnedRuntime(Option<Runtime>);

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("url", &self.inner.url)
            .field("session", &self.inner.session)
            .finish_non_exhaustive()
    }
}

/// What the client needs to authenticate, read from the credentials file.
enum Auth {
    None,
    Token(String),
    Creds(String),
}

/// Never prints the secret.
impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Auth::None => "None",
            Auth::Token(_) => "Token(<redacted>)",
            Auth::Creds(_) => "Creds(<redacted>)",
        })
    }
}

/// A checked URL, session and credentials, ready to connect.
struct Prepared {
    url: String,
    session: SessionName,
    auth: Auth,
}

impl Prepared {
    fn new(url: &str, credentials: Option<&Path>, session: &str) -> Result<Prepared> {
        check_url(url)?;
        let session = SessionName::new(session)?;
        let auth = match credentials {
            None => Auth::None,
            Some(path) => read_credentials(path)?,
        };
        Ok(Prepared {
            url: url.to_owned(),
            session,
            auth,
        })
    }

    /// Connect (bounded by [`CONNECT_TIMEOUT`], no retry): runs on the
    /// engine's runtime, so the connection task is spawned there.
    async fn open(self) -> Result<(String, SessionName, async_nats::Client)> {
        let url = self.url;
        let mut options = async_nats::ConnectOptions::new()
            .name(format!("wavecrew-{}", self.session))
            .connection_timeout(CONNECT_TIMEOUT);
        match self.auth {
            Auth::None => {}
            Auth::Token(token) => options = options.token(token),
            Auth::Creds(creds) => {
                options = options
                    .credentials(&creds)
                    .map_err(|e| EngineError::Connect {
                        url: url.clone(),
                        source: e.into(),
                    })?;
            }
        }
        let connect = options.connect(url.as_str());
        // The client's own timeout covers each TCP connect; this one covers
        // the whole handshake (TLS, INFO, CONNECT) too.
        let client =
            match tokio::time::timeout(CONNECT_TIMEOUT + Duration::from_secs(1), connect).await {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => {
                    return Err(EngineError::Connect {
                        url,
                        source: e.into(),
                    });
                }
                Err(_) => {
                    return Err(EngineError::ConnectTimeout {
                        url,
                        timeout: CONNECT_TIMEOUT,
                    });
                }
            };
        Ok((url, self.session, client))
    }
}

/// Accept `nats://` and `tls://` URLs without a user or password.
fn check_url(url: &str) -> Result<()> {
    let bad = |reason: &str| EngineError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad("it has no scheme"));
    };
    if scheme != "nats" && scheme != "tls" {
        return Err(bad(&format!("the scheme `{scheme}` is not supported")));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(bad(
            "it carries a user or password; put credentials in a file instead",
        ));
    }
    let addr: async_nats::ServerAddr = url
        .parse()
        .map_err(|e: std::io::Error| bad(&e.to_string()))?;
    if addr.host().is_empty() {
        return Err(bad("it has no host"));
    }
    Ok(())
}

/// Read a credentials file: a NATS `.creds` (it holds a user JWT block) or
/// a token (the whole file, trimmed, one line).
fn read_credentials(path: &Path) -> Result<Auth> {
    let text = std::fs::read_to_string(path).map_err(|e| EngineError::Credentials {
        path: path.to_owned(),
        reason: format!("cannot be read: {e}"),
    })?;
    if text.contains("BEGIN NATS USER JWT") {
        return Ok(Auth::Creds(text));
    }
    let token = text.trim();
    if token.is_empty() || token.contains(['\n', '\r']) {
        return Err(EngineError::Credentials {
            path: path.to_owned(),
            reason: "expected a NATS .creds file or a file holding one token on one line".into(),
        });
    }
    Ok(Auth::Token(token.to_owned()))
}

fn engine_runtime(url: &str) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("wavecrew-nats")
        .enable_all()
        .build()
        .map_err(|e| EngineError::Connect {
            url: url.to_owned(),
            source: format!("cannot start the engine's runtime: {e}").into(),
        })
}

impl Engine {
    /// Connect to `url` (`nats://host:port` or `tls://host:port`) for the
    /// session `session` (`[A-Za-z0-9_-]+`), authenticating with the
    /// credentials file if one is given. Fails within about
    /// [`CONNECT_TIMEOUT`], naming the URL, when nothing answers there.
    pub async fn connect(url: &str, credentials: Option<&Path>, session: &str) -> Result<Engine> {
        let prepared = Prepared::new(url, credentials, session)?;
        let runtime = engine_runtime(url)?;
        let joined = runtime.spawn(prepared.open()).await;
        let opened = joined.map_err(|_| EngineError::Stopped {
            url: url.to_owned(),
            action: "connecting".into(),
        });
        match opened.and_then(|r| r) {
            Ok(opened) => Ok(Engine::assemble(opened, runtime)),
            Err(e) => {
                // Dropping a runtime inside an async context panics.
                runtime.shutdown_background();
                Err(e)
            }
        }
    }

    /// [`Engine::connect`] for synchronous callers (any thread, inside a
    /// runtime or not).
    pub fn connect_blocking(
        url: &str,
        credentials: Option<&Path>,
        session: &str,
    ) -> Result<Engine> {
        let prepared = Prepared::new(url, credentials, session)?;
        let runtime = engine_runtime(url)?;
        let opened = wait_on(runtime.handle(), url, "connecting", prepared.open());
        // A failed connect drops the runtime here, possibly inside an
        // async context: shut it down without waiting.
        match opened.and_then(|r| r) {
            Ok(opened) => Ok(Engine::assemble(opened, runtime)),
            Err(e) => {
                runtime.shutdown_background();
                Err(e)
            }
        }
    }

    fn assemble(
        (url, session, client): (String, SessionName, async_nats::Client),
        runtime: Runtime,
    ) -> Engine {
        // The context spawns its acker task: on the engine's runtime too.
        let jetstream = {
            let _entered = runtime.enter();
            jetstream::new(client.clone())
        };
        Engine {
            inner: Arc::new(Inner {
                url,
                session,
                client,
                jetstream,
                handle: runtime.handle().clone(),
                runtime: Arc::new(OwnedRuntime(Some(runtime))),
            }),
        }
    }

    /// The same connection, scoped to another session (a host agent learns
    /// its session from the [`Registry`](crate::Registry) after connecting).
    pub fn with_session(&self, session: &str) -> Result<Engine> {
        let session = SessionName::new(session)?;
        Ok(Engine {
            inner: Arc::new(Inner {
                url: self.inner.url.clone(),
                session,
                client: self.inner.client.clone(),
                jetstream: self.inner.jetstream.clone(),
                handle: self.inner.handle.clone(),
                runtime: Arc::clone(&self.inner.runtime),
            }),
        })
    }

    /// The server URL.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The session: the namespace of every stream and bucket.
    pub fn session(&self) -> &SessionName {
        &self.inner.session
    }

    /// The NATS client.
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }

    /// The JetStream context.
    pub fn jetstream(&self) -> &jetstream::Context {
        &self.inner.jetstream
    }

    /// Run `future` on the engine's runtime and wait for it on this thread.
    /// Works from any thread, inside an async context or not (it blocks the
    /// calling thread, like file I/O does). `action` names the operation
    /// should the runtime stop first.
    pub fn block_on<F>(&self, action: &str, future: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        wait_on(&self.inner.handle, &self.inner.url, action, future)
    }
}

/// Spawn `future` on `handle` and wait for its output on a std channel.
fn wait_on<F>(handle: &Handle, url: &str, action: &str, future: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        // The receiver is gone only if the caller gave up; nothing to do.
        let _ = tx.send(future.await);
    });
    rx.recv().map_err(|_| EngineError::Stopped {
        url: url.to_owned(),
        action: action.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_before_any_network() {
        for (url, says) in [
            ("localhost:4222", "no scheme"),
            ("http://localhost:4222", "`http` is not supported"),
            ("ws://localhost:4222", "`ws` is not supported"),
            ("nats://user:pw@localhost:4222", "put credentials in a file"),
            ("nats://", "no host"),
        ] {
            let err = check_url(url).unwrap_err().to_string();
            assert!(
                err.contains(&format!("`{url}`")) && err.contains(says),
                "{err}"
            );
        }
        assert!(check_url("nats://127.0.0.1:4222").is_ok());
        assert!(check_url("tls://nats.example:4443").is_ok());
    }

    #[test]
    fn credentials_are_a_creds_file_or_one_token() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "s3cret\n").unwrap();
        assert!(matches!(read_credentials(&token).unwrap(), Auth::Token(t) if t == "s3cret"));
        std::fs::write(&token, "a\nb\n").unwrap();
        let err = read_credentials(&token).unwrap_err().to_string();
        assert!(err.contains(&token.display().to_string()), "{err}");
        let missing = dir.path().join("missing.creds");
        let err = read_credentials(&missing).unwrap_err().to_string();
        assert!(
            err.contains("missing.creds") && err.contains("cannot be read"),
            "{err}"
        );
    }
}
