//! End-to-end tests of the wavecrew binaries: one test binary, one module per area.

/// `wavecrew.toml` lines for a test whose subject is a role's own logic,
/// checked on the project's files: it runs in place. The default
/// (worktrees and the merge queue) has its own tests (`isolation`, …).
pub(crate) const IN_PLACE: &str = "\n[isolation]\nmode = \"in-place\"\n";

mod after_agent;
mod backend;
mod check;
mod cockpit;
mod cockpit_browser;
mod cockpit_review;
mod crash;
mod docs;
mod engine;
mod executor;
mod gate;
pub(crate) mod hosts;
mod import;
mod install;
mod isolation;
mod isolation_shadow;
mod mcp;
mod msg;
mod plan;
mod planex;
mod prompts;
mod real_agents;
mod real_workspaces;
mod report;
mod roadmap;
mod runs_later;
mod scale_out;
mod scale_out_cockpit;
mod scripted;
mod session_text;
mod taskfile;
mod team;
mod testrun;
mod untrusted;
pub(crate) mod walkthrough;
