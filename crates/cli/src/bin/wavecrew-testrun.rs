//! `wavecrew-testrun`: seed 002's TESTRUN-* worker (see `wavecrew_cli::testrun`).

fn main() -> std::process::ExitCode {
    wavecrew_cli::testrun::testrun_main()
}
