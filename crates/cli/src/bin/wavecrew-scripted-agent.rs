//! `wavecrew-scripted-agent`: an agent CLI that replays a script.

fn main() -> std::process::ExitCode {
    wavecrew_cli::scripted_agent::scripted_agent_main()
}
