//! `wavecrew-box`: the process an agent is started through when it gets a
//! network of its own; see `wavecrew_sys::agent_box`.

fn main() -> std::process::ExitCode {
    wavecrew_sys::agent_box::main_of_box()
}
