//! `wavecrew`: the user's front door.

fn main() -> std::process::ExitCode {
    wavecrew_cli::wavecrew_main()
}
