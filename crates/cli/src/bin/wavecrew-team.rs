//! `wavecrew-team`: seed 001's orchestrator (see `wavecrew_cli::team`).

fn main() -> std::process::ExitCode {
    wavecrew_cli::team::team_main()
}
