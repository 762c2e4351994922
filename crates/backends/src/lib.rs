//! wavecrew's backends: running agent CLIs safely and reading what they did.
//!
//! * [`supervise`]: one process under supervision — argv only, its own
//!   process group, wall and stall limits, SIGTERM → grace → SIGKILL of the
//!   whole group, output captured with a bounded tail;
//! * [`events`]: the JSON streams of codex, gemini and claude parsed into one
//!   event model, folded into a [`events::StreamState`];
//! * [`outcome`]: the outcome class of an attempt from its exit code and its
//!   events;
//! * [`config`]: `wavecrew.toml` (backends, aliases, limits, fallbacks);
//! * [`adapter`]: each CLI's argv for a mode, a model and native resume;
//! * [`runner`]: one attempt as a [`wavecrew_core::Backend`] — git status
//!   before and after, session id recorded as it appears, redaction;
//! * [`routing`]: the seeds' backend resolution, probes, fallback chains
//!   and the retry policy; [`attempts`]: all the attempts of one task;
//! * [`governor`]: rate limits, pauses and budgets shared by every worker
//!   of a session, asked before every attempt;
//! * [`prompts`]: the prompt templates, untrusted text fenced;
//! * [`redact`]: secret values out of every file written;
//! * [`scripted`]: the scripted agent, an agent CLI that replays a script in
//!   any of the three stream formats (the demo's and the tests' backend).
//!
//! ```
//! use wavecrew_backends::events::{StreamFormat, StreamState};
//! use wavecrew_backends::outcome::classify;
//! use wavecrew_backends::supervise::Ended;
//!
//! let mut state = StreamState::default();
//! state.apply_line(StreamFormat::Codex, r#"{"type":"thread.started","thread_id":"t-1"}"#);
//! state.apply_line(StreamFormat::Codex, r#"{"type":"turn.completed","usage":{"input_tokens":20,"output_tokens":10}}"#);
//! let ended = Ended::Exited { code: Some(0), signal: None };
//! assert_eq!(classify(&ended, &state, "").name(), "success");
//! assert_eq!(state.session_id.as_deref(), Some("t-1"));
//! ```

pub mod adapter;
pub mod attempts;
pub mod config;
pub mod confine;
pub mod egress;
pub mod events;
pub mod gitdiff;
pub mod governor;
pub mod outcome;
mod placeholders;
pub mod private_config;
pub mod prompts;
pub mod redact;
pub mod registries;
pub mod routing;
pub mod runner;
pub mod scripted;
pub mod supervise;

pub use attempts::{AttemptEvent, TaskAttempts, TaskRun, run_task};
pub use config::{Config, ConfigError, Kind, ResolvedBackend};
pub use runner::CliBackend;
