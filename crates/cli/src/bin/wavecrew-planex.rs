//! `wavecrew-planex`: seed 003's EXEC-* worker (see `wavecrew_cli::planex`).

fn main() -> std::process::ExitCode {
    wavecrew_cli::planex::planex_main()
}
