//! Where the test command installs the real agent CLIs.
//!
//! `scripts/test.sh` installs the pinned npm packages into
//! `$WAVECREW_CACHE/agent-clis` (default `~/.cache/wavecrew/agent-clis`).
//! Tests that need a CLI panic with a clear message when it is missing:
//! they never skip.

use std::path::PathBuf;

/// The pinned packages, as `scripts/test.sh` installs them.
pub const VERSIONS: [(&str, &str); 3] = [
    ("@openai/codex", "0.169.0"),
    ("@google/gemini-cli", "0.61.0"),
    ("@anthropic-ai/claude-code", "2.1.197"),
];

/// One of the real agent CLIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentCli {
    /// `codex`.
    Codex,
    /// `gemini`.
    Gemini,
    /// `claude`.
    Claude,
}

impl AgentCli {
    /// The launcher's name.
    pub fn name(self) -> &'static str {
        match self {
            AgentCli::Codex => "codex",
            AgentCli::Gemini => "gemini",
            AgentCli::Claude => "claude",
        }
    }
}

/// `$WAVECREW_CACHE`, else `~/.cache/wavecrew`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WAVECREW_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/wavecrew")
}

/// The installed launcher of `cli`; panics (never skips) when missing.
pub fn cli_bin(cli: AgentCli) -> PathBuf {
    let bin = cache_dir()
        .join("agent-clis/node_modules/.bin")
        .join(cli.name());
    assert!(
        bin.exists(),
        "{} is not installed at {}: run scripts/test.sh, which installs the pinned agent CLIs",
        cli.name(),
        bin.display()
    );
    bin
}
