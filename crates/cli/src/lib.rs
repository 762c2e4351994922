//! The command-line front ends of wavecrew. Each binary in `src/bin/` is a few
//! lines that call a `main` here; the commands live in [`commands`], one module
//! per subcommand, and every error maps to an [`exit::Exit`] code at the top.
//!
//! ```
//! use clap::Parser;
//! use wavecrew_cli::Cli;
//!
//! // The same parser the `wavecrew` binary uses.
//! let cli = Cli::try_parse_from(["wavecrew", "status", ".workflow/.team/TC-x-2026-11-23", "--json"]).unwrap();
//! assert!(matches!(cli.command, wavecrew_cli::Command::Status(_)));
//! ```

pub mod commands;
pub mod executor;
pub mod exit;
pub mod mcp;
pub mod output;
pub mod planex;
pub mod roadmap;
pub mod runtime;
pub mod scripted_agent;
pub mod team;
pub mod testrun;
pub mod worker;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::{CliError, Exit};

const ABOUT: &str = "Run AI coding-agent pipelines: tasks in dependency order, each sent to an agent CLI \
(Claude Code, Codex, Gemini, …), checked against evidence, resumable at any moment";

const LONG_ABOUT: &str = "\
Run AI coding-agent pipelines: tasks in dependency order, each sent to an agent CLI (Claude \
Code, Codex, Gemini, Qwen, opencode, or any command), checked against evidence, recorded on a \
message bus, resumable at any moment.

Start in any project folder:
  wavecrew init                                 find your agent CLIs, write wavecrew.toml
  (write wavecrew.tasks.toml: a goal and its tasks)
  wavecrew plan waves wavecrew.tasks.toml       what would run, in which order
  wavecrew run wavecrew.tasks.toml              run it; reports in the session's reports/

Or try it first: `wavecrew demo` runs a small pipeline with a scripted agent, no API key.
Sessions written by Claude-Code-Workflow (`.workflow/.team/<id>/`) run as they are:
`wavecrew run <session folder>`.";

const AFTER_HELP: &str = "\
Exit codes: 0 success, 1 a task failed or a check found problems, 2 bad input or usage (the \
message names the file and the field), 3 interrupted (run it again to resume), 4 internal error.
Logs: -v (info) or -vv (debug) on stderr, or RUST_LOG=<filter>.";

/// `wavecrew`: run and inspect AI coding-agent pipelines.
#[derive(Debug, Parser)]
#[command(name = "wavecrew", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    /// Read this configuration file instead of `<project root>/wavecrew.toml`.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// More diagnostic logs on stderr: -v info, -vv debug, -vvv trace (`RUST_LOG` overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `wavecrew`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find the agent CLIs on PATH and write a commented wavecrew.toml that uses them.
    Init(commands::init::InitArgs),
    /// Make a session from a task file (wavecrew.tasks.toml) and print its folder.
    New(commands::tasks::NewArgs),
    /// Run a pipeline in the foreground: a task file, or a session folder.
    Run(commands::run::RunArgs),
    /// Explain the schedule before anything runs: check, waves, graph.
    #[command(subcommand)]
    Plan(commands::plan::PlanCommand),
    /// Print the prompt the next attempt of a task would get, without running anything.
    Prompt(commands::prompt::PromptArgs),
    /// Take tasks of sessions spread over hosts: a host agent on a NATS server (see docs/scale-out.md).
    Worker(commands::worker::WorkerArgs),
    /// Remove every worktree of a session (their branches stay).
    Clean(commands::integration::CleanArgs),
    /// A session's progress: tasks by state, waves, running attempts, the merge queue of an isolated session, critical path, last records.
    Status(commands::report::StatusArgs),
    /// Write every report of a session again (reports/), from its bus and task store.
    Report(commands::report::ReportArgs),
    /// The live cockpit of a session in the browser: watch it, pause, cancel, retry.
    Ui(commands::ui::UiArgs),
    /// Pause a session's dispatch: running tasks go on, no new task starts until `resume`.
    Pause(commands::control::SessionArgs),
    /// Resume a paused session's dispatch.
    Resume(commands::control::SessionArgs),
    /// Cancel a running task: its worker and what it started are stopped, the task is recorded failed.
    Cancel(commands::control::TaskArgs),
    /// Retry a failed or blocked task (and the tasks skipped because of it).
    Retry(commands::control::TaskArgs),
    /// Land the work of a task that awaits a person's review (`review = "human"`).
    Approve(commands::control::TaskArgs),
    /// Send the work of a task that awaits review back for one revision, with a note saying what to change.
    Reject(commands::control::RejectArgs),
    /// Run the demo pipeline on a copy of the embedded demo project.
    Demo(commands::demo::DemoArgs),
    /// The team message bus (`ccw team` compatible): log, read, list, status, …
    Msg(Box<commands::msg::MsgArgs>),
    /// Validate from evidence, one check at a time: syntax, tests, acceptance.
    #[command(subcommand)]
    Check(commands::check::CheckCommand),
    /// Try a backend: probe every configured one, or run one attempt.
    #[command(subcommand)]
    Backend(commands::backend::BackendCommand),
    /// Check wavecrew.toml: every problem names its key.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::shell::CompletionsArgs),
    /// Print the man page (roff): `wavecrew man > wavecrew.1`.
    Man,
    /// Serve this project's MCP server on stdio, or register it with an agent CLI (`mcp install --claude`).
    Mcp(commands::mcp::McpArgs),
    /// Write wavecrew.tasks.toml from a task list kept elsewhere: Task Master's tasks.json, maestro-flow's plan tasks.
    Import(commands::import::ImportArgs),
    /// Print the JSON Schema of the task file, for editors: `wavecrew schema > wavecrew.tasks.schema.json`.
    Schema,
}

/// The `wavecrew` binary's main: parse, run, map the outcome to an exit code.
pub fn wavecrew_main() -> ExitCode {
    // Multi-call: `wavecrew __executor …` is `wavecrew-executor …`, so a
    // build of the `wavecrew` binary alone (`cargo run --bin wavecrew`)
    // can still start every worker.
    let command_line: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(tool) = command_line.get(1).and_then(|a| a.to_str()) {
        let rest = || {
            let mut v = vec![std::ffi::OsString::from(&tool[2..])];
            v.extend(command_line[2..].iter().cloned());
            v
        };
        match tool {
            "__wavecrew-executor" => return executor::executor_main_from(rest()),
            "__wavecrew-team" => return team::team_main_from(rest()),
            "__wavecrew-testrun" => return testrun::testrun_main_from(rest()),
            "__wavecrew-planex" => return planex::planex_main_from(rest()),
            "__wavecrew-roadmap" => return roadmap::roadmap_main_from(rest()),
            "__wavecrew-scripted-agent" => return scripted_agent::scripted_agent_main_from(rest()),
            _ => {}
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    init_tracing_verbose(cli.verbose);
    let result = match cli.command {
        Command::Plan(cmd) => commands::plan::run(cmd),
        Command::Msg(args) => commands::msg::run(&args),
        Command::Check(cmd) => commands::check::run(cmd),
        Command::Backend(cmd) => commands::backend::run(cmd, cli.config.as_deref()),
        Command::Run(a) => commands::run::run(&a, cli.config.as_deref()),
        Command::Init(a) => commands::init::run(&a),
        Command::New(a) => commands::tasks::new(&a),
        Command::Completions(a) => commands::shell::completions(&a),
        Command::Man => commands::shell::man(),
        Command::Schema => {
            output::line(wavecrew_taskfile::schema_text().trim_end());
            Ok(Exit::Success)
        }
        Command::Demo(a) => commands::demo::run(&a),
        Command::Prompt(a) => commands::prompt::run(&a, cli.config.as_deref()),
        Command::Clean(a) => commands::integration::clean(&a),
        Command::Worker(a) => commands::worker::run(&a, cli.config.as_deref()),
        Command::Status(a) => commands::report::status(&a),
        Command::Report(a) => commands::report::report(&a),
        Command::Ui(a) => commands::ui::run(&a),
        Command::Pause(a) => commands::control::pause(&a),
        Command::Resume(a) => commands::control::resume(&a),
        Command::Cancel(a) => commands::control::cancel(&a),
        Command::Retry(a) => commands::control::retry(&a),
        Command::Approve(a) => commands::control::approve(&a),
        Command::Reject(a) => commands::control::reject(&a),
        Command::Config(c) => commands::config::run(&c, cli.config.as_deref()),
        Command::Mcp(a) => commands::mcp::run(&a, cli.config.as_deref()),
        Command::Import(a) => commands::import::run(&a),
    };
    finish(result)
}

/// Print a clap error or help text, with exit 2 for usage errors and 0 for
/// `--help` / `--version`.
pub fn clap_exit(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    if e.use_stderr() {
        Exit::BadInput.into()
    } else {
        Exit::Success.into()
    }
}

/// Turn a command's result into the process exit code, printing the error;
/// an error caused by a full disk is exit 3 ([`CliError::classify`]).
pub fn finish(result: Result<Exit, CliError>) -> ExitCode {
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            let e = e.classify();
            output::error(&e.to_string());
            e.exit.into()
        }
    }
}

/// Logs go to stderr, filtered by `RUST_LOG`, else `WAVECREW_LOG`, else
/// `warn`.
pub fn init_tracing() {
    init_tracing_verbose(0);
}

/// [`init_tracing`] where `-v` flags raise the default level: 1 info,
/// 2 debug, 3 or more trace. `RUST_LOG` (then `WAVECREW_LOG`) overrides.
pub fn init_tracing_verbose(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_from_env("WAVECREW_LOG"))
        .unwrap_or_else(|_| EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(verbose >= 2)
        .try_init();
}
