//! One module per `wavecrew` subcommand.

pub mod backend;
pub mod check;
pub mod config;
pub mod control;
pub mod demo;
pub mod engine;
pub mod import;
pub mod init;
pub mod integration;
pub mod mcp;
pub mod msg;
pub mod plan;
pub mod prompt;
pub mod report;
pub mod run;
pub mod shell;
pub mod tasks;
pub mod ui;
pub mod worker;
