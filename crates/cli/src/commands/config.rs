//! `wavecrew config check [--cwd DIR] [--json]`: read `wavecrew.toml` (or
//! the file given by `--config`), report every problem with the key that
//! has it, and list what it configures. Exit 0 when valid, 2 otherwise.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::json;
use wavecrew_backends::config::Config;

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew config …`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate wavecrew.toml; errors name the key.
    Check(CheckArgs),
}

/// `wavecrew config check` arguments.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The project folder (where `wavecrew.toml` is looked up).
    #[arg(long, default_value = ".")]
    pub cwd: PathBuf,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Run `wavecrew config`.
pub fn run(cmd: &ConfigCommand, config_file: Option<&Path>) -> CmdResult {
    let ConfigCommand::Check(args) = cmd;
    let file = config_file.map_or_else(
        || args.cwd.join(wavecrew_backends::config::CONFIG_FILE),
        Path::to_owned,
    );
    if config_file.is_none() && !file.is_file() {
        let msg = format!("{}: no wavecrew.toml; the defaults apply", file.display());
        if args.json {
            output::json(&json!({"ok": true, "file": null, "note": msg}));
        } else {
            output::line(&format!("ok: {msg}"));
        }
        return Ok(Exit::Success);
    }
    match Config::load(&file) {
        Ok(config) => {
            let backends: Vec<String> = config
                .names()
                .into_iter()
                .map(|n| {
                    let kind = config.backend(&n).map_or("?", |b| b.kind.name());
                    format!("{n} ({kind})")
                })
                .collect();
            if args.json {
                output::json(
                    &json!({"ok": true, "file": file, "backends": config.names(),
                                     "aliases": config.aliases, "limits": config.limits,
                                     "routing": config.routing}),
                );
            } else {
                output::line(&format!(
                    "ok: {}: backends {}; aliases {}; max_parallel {}; fallback {}",
                    file.display(),
                    backends.join(", "),
                    if config.aliases.is_empty() {
                        "none".to_owned()
                    } else {
                        config
                            .aliases
                            .iter()
                            .map(|(a, b)| format!("{a} → {b}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                    config.limits.max_parallel,
                    config.routing.fallback.join(" → ")
                ));
            }
            Ok(Exit::Success)
        }
        Err(e) => {
            if args.json {
                output::json(&json!({"ok": false, "error": e.to_string()}));
                Ok(Exit::BadInput)
            } else {
                Err(CliError::bad_input(e))
            }
        }
    }
}
