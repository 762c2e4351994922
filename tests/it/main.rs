//! End-to-end tests of the wavecrew binaries: one test binary, one module per area.

mod backend;
mod check;
mod crash;
mod docs;
mod engine;
mod executor;
pub(crate) mod hosts;
mod install;
mod isolation;
mod isolation_shadow;
mod msg;
mod plan;
mod planex;
mod prompts;
mod real_agents;
mod report;
mod roadmap;
mod scripted;
mod session_text;
mod taskfile;
mod team;
mod testrun;
pub(crate) mod walkthrough;
