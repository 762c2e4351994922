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

pub mod budget;
pub mod commands;
pub mod executor;
pub mod exit;
pub mod output;
pub mod planex;
pub mod roadmap;
pub mod scripted_agent;
pub mod team;
pub mod testrun;
pub mod worker;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::{CliError, Exit};

/// `wavecrew`: run and inspect AI coding-agent pipelines.
#[derive(Debug, Parser)]
#[command(name = "wavecrew", version, about, long_about = None)]
pub struct Cli {
    /// Read this configuration file instead of `<project root>/wavecrew.toml`.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `wavecrew`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Explain the schedule before anything runs: check, waves, graph.
    #[command(subcommand)]
    Plan(commands::plan::PlanCommand),
    /// The team message bus (`ccw team` compatible): log, read, list, status, …
    Msg(Box<commands::msg::MsgArgs>),
    /// Validate from evidence, one check at a time: syntax, tests, acceptance.
    #[command(subcommand)]
    Check(commands::check::CheckCommand),
    /// Try a backend: probe every configured one, or run one attempt.
    #[command(subcommand)]
    Backend(commands::backend::BackendCommand),
    /// Run a session's whole pipeline in the foreground (= `wavecrew-team run`).
    Run(RunArgs),
    /// Run the demo pipeline on a copy of the embedded demo project.
    Demo(commands::demo::DemoArgs),
    /// A session's progress: tasks by state, waves, running attempts, critical path, last records.
    Status(commands::report::StatusArgs),
    /// Write every report of a session again (reports/), from its bus and task store.
    Report(commands::report::ReportArgs),
    /// Check wavecrew.toml: every problem names its key.
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
}

/// `wavecrew run` arguments.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The session folder (`.workflow/.team/<session-id>`).
    pub session: std::path::PathBuf,
    /// Workers at once (default: `[limits] max_parallel`).
    #[arg(long)]
    pub max_parallel: Option<usize>,
    /// What a failed task does to the rest of the pipeline.
    #[arg(long, value_enum, default_value = "continue")]
    pub on_failure: team::OnFailureArg,
    /// Respawns of a task whose worker crashed.
    #[arg(long, default_value_t = 2)]
    pub crash_retries: u32,
    /// Crossing the run budget (`[budget] run_tokens`, `run_usd`) stops the
    /// running attempts too, not only new ones.
    #[arg(long)]
    pub hard_budget: bool,
    /// Run every task through this backend.
    #[arg(long)]
    pub backend: Option<String>,
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
    init_tracing();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let result = match cli.command {
        Command::Plan(cmd) => commands::plan::run(cmd),
        Command::Msg(args) => commands::msg::run(&args),
        Command::Check(cmd) => commands::check::run(cmd),
        Command::Backend(cmd) => commands::backend::run(cmd, cli.config.as_deref()),
        Command::Run(a) => team::run_command(
            team::TeamCommand::Run(team::TeamArgs {
                session: Some(a.session),
                max_parallel: a.max_parallel,
                on_failure: a.on_failure,
                crash_retries: a.crash_retries,
                backend: a.backend,
                hard_budget: a.hard_budget,
            }),
            cli.config.as_deref(),
        ),
        Command::Demo(a) => commands::demo::run(&a),
        Command::Status(a) => commands::report::status(&a),
        Command::Report(a) => commands::report::report(&a),
        Command::Config(c) => commands::config::run(&c, cli.config.as_deref()),
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

/// Turn a command's result into the process exit code, printing the error.
pub fn finish(result: Result<Exit, CliError>) -> ExitCode {
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            output::error(&e.to_string());
            e.exit.into()
        }
    }
}

/// Logs go to stderr, filtered by `WAVECREW_LOG` (default `warn`).
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("WAVECREW_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .try_init();
}
