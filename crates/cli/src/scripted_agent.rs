//! `wavecrew-scripted-agent`: an agent CLI that replays a script (see
//! `wavecrew_backends::scripted`). Exit codes: what the script says; 2 for a
//! bad script or usage.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use wavecrew_backends::scripted::{Script, parse_format};

use crate::exit::Exit;
use crate::output;

/// `wavecrew-scripted-agent --script <file> [--format F] [--task ID] [PROMPT]`
#[derive(Debug, Parser)]
#[command(
    name = "wavecrew-scripted-agent",
    version,
    about = "An agent CLI that replays a script"
)]
pub struct ScriptedArgs {
    /// The script (JSON).
    #[arg(long)]
    pub script: PathBuf,
    /// The stream format: codex, gemini, claude or plain (default: the script's, else plain).
    #[arg(long)]
    pub format: Option<String>,
    /// The task id, matched against scenarios' `match.task`.
    #[arg(long)]
    pub task: Option<String>,
    /// Continue this native session (as the real CLIs' `--resume`).
    #[arg(long)]
    pub resume: Option<String>,
    /// The prompt; read from stdin when absent.
    pub prompt: Option<String>,
}

/// The scripted agent's main.
pub fn scripted_agent_main() -> ExitCode {
    scripted_agent_main_from(std::env::args_os().collect())
}

/// [`scripted_agent_main`] with explicit arguments (the program name first).
pub fn scripted_agent_main_from(command_line: Vec<std::ffi::OsString>) -> ExitCode {
    let args = match ScriptedArgs::try_parse_from(command_line) {
        Ok(a) => a,
        Err(e) => return crate::clap_exit(&e),
    };
    let script = match Script::read(&args.script) {
        Ok(s) => s,
        Err(e) => {
            output::error(&e.to_string());
            return Exit::BadInput.into();
        }
    };
    let format_name = args
        .format
        .clone()
        .or_else(|| script.format.clone())
        .unwrap_or_else(|| "plain".into());
    let format = match parse_format(&format_name) {
        Ok(f) => f,
        Err(e) => {
            output::error(&format!("--format: {e}"));
            return Exit::BadInput.into();
        }
    };
    let prompt = args.prompt.clone().unwrap_or_else(|| {
        let mut s = String::new();
        let _ = std::io::stdin().read_to_string(&mut s);
        s
    });
    let Some(scenario) = script.pick(args.task.as_deref(), &prompt) else {
        output::error(&format!(
            "script `{}`: no scenario matches task {:?}",
            args.script.display(),
            args.task
        ));
        return Exit::BadInput.into();
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match wavecrew_backends::scripted::run_in_session(
        scenario,
        format,
        &cwd,
        &prompt,
        args.resume.as_deref(),
        std::io::stdout().lock(),
    ) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            output::error(&e.to_string());
            Exit::Failed.into()
        }
    }
}
