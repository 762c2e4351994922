//! Test helpers shared by every wavecrew crate.
//!
//! * [`redact`] and [`insta_settings`]: the filters that make snapshots
//!   stable (timestamps, temp paths, durations, pids);
//! * [`SessionBuilder`]: a project folder with a session in it, built in a few
//!   lines;
//! * [`run_bin`]: run one of the workspace's binaries and render its exit
//!   code, stdout and stderr as one redacted text, ready to snapshot;
//! * [`git`](mod@git): git through wavecrew's one runner, as a test identity;
//! * [`wait::until`]: wait for what another process writes, bounded, saying what
//!   it saw when the bound passes.
//!
//! ```
//! let text = wavecrew_testkit::redact("at 2026-03-04T09:15:02.481+00:00 in /tmp/.tmpAbC123/x took 12ms pid 4242");
//! assert_eq!(text, "at [TIMESTAMP] in [TEMP]/x took [DURATION] pid [PID]");
//! ```

pub mod agent_cli_bins;
mod cli;
pub mod git;
pub mod model_server;
mod redact;
mod session;
pub mod wait;

pub use cli::{CliOutput, bin_path, run_bin};
pub use redact::{FILTERS, insta_settings, redact};
pub use session::{SessionBuilder, TestSession};
