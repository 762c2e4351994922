//! Finding wavecrew's own programs (the workers, the scripted agent).
//!
//! In order: `$WAVECREW_BIN_DIR/<name>`; `<name>` beside the running
//! program (or one folder up, for test binaries under `target/*/deps`);
//! the running program itself when it is `wavecrew`, called as
//! `wavecrew __<name> …` (so `cargo run --bin wavecrew` works without the
//! other binaries built); else `<name>` from `PATH`.

use std::path::PathBuf;

/// The program and leading arguments that run wavecrew's `name`.
pub fn wavecrew_program(name: &str) -> (PathBuf, Vec<String>) {
    if let Some(dir) = std::env::var_os("WAVECREW_BIN_DIR") {
        return (PathBuf::from(dir).join(name), Vec::new());
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in [exe.parent(), exe.parent().and_then(std::path::Path::parent)]
            .into_iter()
            .flatten()
        {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return (candidate, Vec::new());
            }
        }
        if exe.file_stem().is_some_and(|s| s == "wavecrew") {
            return (exe, vec![format!("__{name}")]);
        }
    }
    (PathBuf::from(name), Vec::new())
}
