//! The scale-out engine at the command line: `wavecrew run --engine URL`
//! (the coordinator) and `wavecrew worker` (a host agent) on NATS
//! JetStream, see docs/scale-out.md. The engine is the cargo feature
//! `nats` of this package; a build without it says how to get it (exit 2).

use std::path::Path;
use std::sync::Arc;

use wavecrew_backends::Config;
use wavecrew_orchestrator::{OpenSession, RemoteWorkers};

use crate::exit::CliError;

/// The install line of a build with the engine.
pub const INSTALL_WITH_ENGINE: &str = "cargo install --locked --path bins --features nats";

/// The engine URL of a run: `--engine`, else `[engine] url`.
pub fn url(flag: Option<&str>, config: &Config) -> Option<String> {
    flag.map(str::to_owned)
        .or_else(|| config.engine.url.clone())
}

/// The error of a build without the engine asked to use `url`.
pub fn unavailable(url: &str) -> CliError {
    CliError::bad_input(anyhow::anyhow!(
        "the engine {url} (--engine or [engine] url) needs a wavecrew built with the NATS \
         engine (cargo feature `nats`), and this one was built without it; install it with \
         `{INSTALL_WITH_ENGINE}` (or `cargo run --features nats --bin wavecrew -- …`)"
    ))
}

/// A run's connection to the engine: the coordinator the orchestrator
/// hands its tasks to.
#[derive(Debug)]
pub struct EngineRun {
    #[cfg(feature = "nats")]
    coordinator: Arc<wavecrew_fleet::Coordinator>,
    #[cfg(not(feature = "nats"))]
    never: std::convert::Infallible,
}

impl EngineRun {
    /// The remote workers for the orchestrator.
    pub fn remote(&self) -> Arc<dyn RemoteWorkers> {
        #[cfg(feature = "nats")]
        return self.coordinator.clone();
        #[cfg(not(feature = "nats"))]
        match self.never {}
    }

    /// Leave the engine (the session's end announced); an error is told,
    /// not fatal: the session's files are already whole.
    #[cfg_attr(not(feature = "nats"), allow(clippy::unused_async))]
    pub async fn finish(&self) {
        #[cfg(feature = "nats")]
        if let Err(e) = self.coordinator.finish().await {
            crate::output::error(&format!("the engine at {}: {e}", self.coordinator.url()));
        }
        #[cfg(not(feature = "nats"))]
        match self.never {}
    }
}

/// Connect to the engine at `url`, announce the session, publish what the
/// hosts need.
#[cfg(feature = "nats")]
pub async fn start(
    url: &str,
    opened: &OpenSession,
    config_file: Option<&Path>,
) -> Result<EngineRun, CliError> {
    let config_file = config_file
        .map(Path::to_owned)
        .or_else(|| opened.config.source.clone());
    let engine = &opened.config.engine;
    let options = wavecrew_fleet::CoordinatorOptions {
        url: url.to_owned(),
        credentials: engine.credentials_path(opened.config.source.as_deref()),
        ack_wait: std::time::Duration::from_secs(engine.ack_wait_secs),
        poll: std::time::Duration::from_millis(100),
    };
    let session = wavecrew_fleet::CoordinatedSession {
        dir: opened.valid.dir.clone(),
        root: opened.root.clone(),
        session_id: opened.valid.session.session_id.as_str().to_owned(),
        roles: opened.valid.session.roles.clone(),
        config_file,
    };
    let coordinator = Box::pin(wavecrew_fleet::Coordinator::start(
        options,
        &session,
        opened.store.clone(),
        opened.bus.clone(),
    ))
    .await
    .map_err(|e| CliError::bad_input(anyhow::anyhow!("the engine at {url}: {e}")))?;
    Ok(EngineRun { coordinator })
}

/// A build without the engine: refused with how to get it.
#[cfg(not(feature = "nats"))]
#[allow(clippy::unused_async)]
pub async fn start(
    url: &str,
    _opened: &OpenSession,
    _config_file: Option<&Path>,
) -> Result<EngineRun, CliError> {
    Err(unavailable(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_url_and_the_install_line() {
        let e = unavailable("nats://h:4222");
        assert_eq!(e.exit, crate::exit::Exit::BadInput);
        let text = e.to_string();
        assert!(text.contains("nats://h:4222"), "{text}");
        assert!(text.contains(INSTALL_WITH_ENGINE), "{text}");
    }
}
