//! `wavecrew init [--dir DIR] [--force]`: probe the agent CLIs on `PATH`
//! (claude, codex, gemini, qwen, opencode; `--version` only, never the
//! network) and write a commented `wavecrew.toml` that uses the ones found:
//! the seeds' names `agent`, `codex` and `gemini` become aliases of CLIs
//! that are there, the fallback chain lists them, and the file says which
//! were missing and how to install and log in to each. An existing file is
//! kept unless `--force`.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use wavecrew_backends::config::{BUILT_IN, CONFIG_FILE, Config};
use wavecrew_backends::routing::{Probe, probe};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew init` arguments.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The project folder to write `wavecrew.toml` in.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Replace an existing `wavecrew.toml`.
    #[arg(long)]
    pub force: bool,
}

/// How to install and log in to each built-in CLI.
fn how_to(name: &str) -> (&'static str, &'static str) {
    match name {
        "claude" => (
            "npm install -g @anthropic-ai/claude-code",
            "run `claude` once and log in, or set ANTHROPIC_API_KEY",
        ),
        "codex" => (
            "npm install -g @openai/codex",
            "run `codex login`, or set OPENAI_API_KEY",
        ),
        "gemini" => (
            "npm install -g @google/gemini-cli",
            "run `gemini` once and choose a login, or set GEMINI_API_KEY",
        ),
        "qwen" => (
            "npm install -g @qwen-code/qwen-code",
            "run `qwen` once and log in, or set OPENAI_API_KEY and OPENAI_BASE_URL",
        ),
        _ => ("npm install -g opencode-ai", "run `opencode auth login`"),
    }
}

/// Run `wavecrew init`.
pub fn run(args: &InitArgs) -> CmdResult {
    let file = args.dir.join(CONFIG_FILE);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    let defaults = Config::default();
    let probes: Vec<Probe> = rt.block_on(async {
        let mut out = Vec::new();
        for name in BUILT_IN {
            if let Some(backend) = defaults.backend(name) {
                let p = probe(&backend, &args.dir).await;
                tracing::debug!(backend = name, available = p.available, "probed");
                out.push(p);
            }
        }
        out
    });
    for p in &probes {
        if p.available {
            output::line(&format!(
                "found    {:<9}{}",
                p.backend,
                p.version.as_deref().unwrap_or("(no version)")
            ));
        } else {
            let (install, login) = how_to(&p.backend);
            output::line(&format!(
                "missing  {:<9}{}: install with `{install}`, then {login}",
                p.backend,
                p.reason.as_deref().unwrap_or("not found"),
            ));
        }
    }
    if file.exists() && !args.force {
        output::line(&format!(
            "kept {}: it exists already (`wavecrew init --force` replaces it)",
            file.display()
        ));
        return Ok(Exit::Success);
    }
    let text = config_text(&probes);
    // The file must be one that `wavecrew config check` accepts.
    Config::parse(&text, &file).map_err(CliError::internal)?;
    wavecrew_core::fsutil::write_atomic(&file, text.as_bytes())?;
    output::line(&format!("wrote {}", file.display()));
    output::line(
        "next: write wavecrew.tasks.toml, then `wavecrew plan waves wavecrew.tasks.toml` and \
         `wavecrew run wavecrew.tasks.toml`",
    );
    Ok(Exit::Success)
}

/// The text of `wavecrew.toml` for these probes.
pub fn config_text(probes: &[Probe]) -> String {
    let found: Vec<&str> = probes
        .iter()
        .filter(|p| p.available)
        .map(|p| p.backend.as_str())
        .collect();
    let mut s = String::from(
        "# wavecrew.toml, written by `wavecrew init`. `wavecrew config check` validates it;\n\
         # every key is described in wavecrew's docs/backends.md.\n#\n",
    );
    if found.is_empty() {
        s.push_str("# No agent CLI was found on PATH. Install one and log in (below), then run\n# `wavecrew init --force` again.\n");
    } else {
        s.push_str("# Agent CLIs found on PATH:\n");
        for p in probes.iter().filter(|p| p.available) {
            let (_, login) = how_to(&p.backend);
            let _ = writeln!(
                s,
                "#   {:<9}{}  (if not logged in yet: {login})",
                p.backend,
                p.version.as_deref().unwrap_or("")
            );
        }
    }
    let missing: Vec<&Probe> = probes.iter().filter(|p| !p.available).collect();
    if !missing.is_empty() {
        s.push_str("# Not found (install, then log in, then `wavecrew init --force`):\n");
        for p in missing {
            let (install, login) = how_to(&p.backend);
            let _ = writeln!(s, "#   {:<9}{install}; then {login}", p.backend);
        }
    }
    // The seeds name `agent`, `codex` and `gemini`: send each to a CLI that is there.
    let first = found.first().copied().unwrap_or("claude");
    s.push_str(
        "\n# Tasks and plans name the seeds' backends `agent`, `codex` and `gemini`\n\
         # (or a CLI by its own name); these send each one to a CLI you have.\n[aliases]\n",
    );
    let _ = writeln!(s, "agent = \"{first}\"");
    for seed in ["codex", "gemini"] {
        if found.is_empty() {
            let _ = writeln!(s, "# {seed} = \"{seed}\"");
        } else if found.contains(&seed) {
            let _ = writeln!(s, "# {seed} = \"{seed}\"    (found: used as it is)");
        } else {
            let _ = writeln!(s, "{seed} = \"{first}\"    # {seed} was not found");
        }
    }
    s.push_str(
        "\n# When a CLI is missing or cannot run, the next one of this list is tried.\n[routing]\n",
    );
    if found.is_empty() {
        s.push_str("# fallback = [\"claude\", \"codex\", \"gemini\"]\n");
    } else {
        let list: Vec<String> = found.iter().map(|n| format!("\"{n}\"")).collect();
        let _ = writeln!(s, "fallback = [{}]", list.join(", "));
    }
    s.push_str(
        "# max_retries = 3    # retries of a failed attempt, with the error in the prompt\n",
    );
    s.push_str(
        "\n[limits]\n\
         max_parallel = 2          # agents at once\n\
         # timeout_secs = 1800     # wall-clock limit of one attempt\n\
         # stall_timeout_secs = 300  # no-output limit of one attempt\n",
    );
    s.push_str(
        "\n# A backend of your own: any program, run without a shell.\n\
         # [backends.mine]\n\
         # kind = \"command\"\n\
         # argv = [\"python3\", \"my_agent.py\", \"--task\", \"{task_id}\"]\n\
         # prompt = \"stdin\"\n",
    );
    s
}
