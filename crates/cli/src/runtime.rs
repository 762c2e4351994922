//! The async runtime the commands that run a session (or serve its cockpit)
//! block on: one place, so `run`, `ui` and `wavecrew-team` build it alike.

use crate::exit::CliError;

/// The async runtime of a run: two worker threads.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::internal)
}
