//! `wavecrew-executor`: seed 000's IMPL-* worker (see `wavecrew_cli::executor`).

fn main() -> std::process::ExitCode {
    wavecrew_cli::executor::executor_main()
}
