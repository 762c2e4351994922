//! `wavecrew completions <shell>` and `wavecrew man`: shell completions
//! (clap_complete) and the man page (clap_mangen), generated on demand from
//! the same clap definitions as the binary, printed on stdout.

use clap::{Args, CommandFactory};

use crate::exit::{CliError, CmdResult, Exit};

/// `wavecrew completions` arguments.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell (bash, zsh, fish, elvish, powershell).
    pub shell: clap_complete::Shell,
}

/// Print the completion script of `wavecrew` for a shell.
pub fn completions(args: &CompletionsArgs) -> CmdResult {
    let mut cmd = crate::Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "wavecrew", &mut out);
    Ok(Exit::Success)
}

/// Print the man page of `wavecrew` (roff), with a section per subcommand.
pub fn man() -> CmdResult {
    let mut buf = Vec::new();
    man_page(&mut buf).map_err(CliError::internal)?;
    let text = String::from_utf8_lossy(&buf);
    crate::output::line(text.trim_end());
    Ok(Exit::Success)
}

/// Write the man page of `wavecrew` (roff): name, synopsis, the long
/// help, options, subcommands, version.
pub fn man_page(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    clap_mangen::Man::new(crate::Cli::command()).render(out)
}
