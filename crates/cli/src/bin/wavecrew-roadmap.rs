//! `wavecrew-roadmap`: seed 004's EXEC-* worker (see `wavecrew_cli::roadmap`).

fn main() -> std::process::ExitCode {
    wavecrew_cli::roadmap::roadmap_main()
}
