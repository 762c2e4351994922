//! `wavecrew demo [--keep DIR]`: the whole pipeline on the embedded demo.
//!
//! The demo (`examples/demo/`, embedded in the binary) is a small Rust crate
//! whose test suite fails, and a session of eight tasks (a diamond, a chain,
//! a fan-out, and a role known only by its `.md`). It is written to a new
//! folder (kept, and printed), put under git, and run by the orchestrator
//! with the scripted agent as backend; the scripts make the tests pass. The
//! run ends with the completion report.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// The demo's files, relative to its root.
pub const FILES: &[(&str, &str)] = &[
    (
        ".gitignore",
        include_str!("../../../../examples/demo/.gitignore"),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/plan.md",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/plan.md"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/roles/developer.md",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/roles/developer.md"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/roles/reviewer.md",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/roles/reviewer.md"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/task-analysis.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/task-analysis.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-001.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-001.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-002.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-002.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-003.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-003.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-004.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-004.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-005.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-005.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-006.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-006.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-007.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/IMPL-007.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/tasks/REVIEW-001.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/tasks/REVIEW-001.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/team-session.json",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/team-session.json"
        ),
    ),
    (
        ".workflow/.team/TC-demo-todo-api-2026-11-22/wisdom/conventions.md",
        include_str!(
            "../../../../examples/demo/.workflow/.team/TC-demo-todo-api-2026-11-22/wisdom/conventions.md"
        ),
    ),
    (
        "Cargo.toml",
        include_str!("../../../../examples/demo/Cargo.toml"),
    ),
    (
        "README.md",
        include_str!("../../../../examples/demo/README.md"),
    ),
    (
        "demo-agent.json",
        include_str!("../../../../examples/demo/demo-agent.json"),
    ),
    (
        "src/api.rs",
        include_str!("../../../../examples/demo/src/api.rs"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../../examples/demo/src/lib.rs"),
    ),
    (
        "src/model.rs",
        include_str!("../../../../examples/demo/src/model.rs"),
    ),
    (
        "src/store.rs",
        include_str!("../../../../examples/demo/src/store.rs"),
    ),
    (
        "src/validate.rs",
        include_str!("../../../../examples/demo/src/validate.rs"),
    ),
    (
        "tests/todo.rs",
        include_str!("../../../../examples/demo/tests/todo.rs"),
    ),
    (
        "wavecrew.toml",
        include_str!("../../../../examples/demo/wavecrew.toml"),
    ),
];

/// The demo's session id.
pub const SESSION: &str = "TC-demo-todo-api-2026-11-22";

/// `wavecrew demo` arguments.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Write the demo here (default: a new folder under the system temp folder).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Only write the demo project (to run it later with `wavecrew run`).
    #[arg(long)]
    pub no_run: bool,
    /// Workers at once (default: the demo's `wavecrew.toml`, 2).
    #[arg(long)]
    pub max_parallel: Option<usize>,
}

/// Write the demo project into `dir` and put it under git.
pub fn write_demo(dir: &Path) -> std::io::Result<()> {
    for (rel, text) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    let git = |args: &[&str]| {
        wavecrew_sys::git::git(dir)
            .identity("wavecrew demo", "demo@wavecrew.invalid")
            .args(args)
            .succeeds()
    };
    // Without git the demo still runs; files changed then come from the
    // agent's own events.
    let _ = git(&["init", "-q"])
        && git(&["add", "."])
        && git(&["commit", "-qm", "demo: starting point"]);
    Ok(())
}

/// Run `wavecrew demo`.
pub fn run(args: &DemoArgs) -> CmdResult {
    let dir = match &args.dir {
        Some(d) => {
            if d.exists()
                && std::fs::read_dir(d)
                    .map_err(CliError::internal)?
                    .next()
                    .is_some()
            {
                return Err(CliError::bad_input(anyhow::anyhow!(
                    "--dir {}: not empty; give a new or empty folder",
                    d.display()
                )));
            }
            std::fs::create_dir_all(d).map_err(CliError::internal)?;
            d.clone()
        }
        None => tempfile::Builder::new()
            .prefix("wavecrew-demo-")
            .tempdir()
            .map_err(CliError::internal)?
            .keep(),
    };
    write_demo(&dir).map_err(CliError::internal)?;
    output::progress(&format!("demo project written to {}", dir.display()));
    let session = dir.join(".workflow/.team").join(SESSION);
    if args.no_run {
        output::line(&format!("run it with: wavecrew run {}", session.display()));
        return Ok(Exit::Success);
    }
    let spec = wavecrew_orchestrator::RunSpec {
        max_parallel: args.max_parallel,
        ..wavecrew_orchestrator::RunSpec::default()
    };
    let code = super::run::foreground(Some(&session), spec, None, None)?;
    // When the demo's tasks ran in worktrees, its folder is the demo's
    // own, so their work is applied to it (as `wavecrew run --apply` does).
    let code = match code {
        Exit::Success => super::integration::apply_if_isolated(&session)?,
        other => other,
    };
    if code == Exit::Success {
        output::line(&format!(
            "demo: every task completed; `cargo test` passes in {}",
            dir.display()
        ));
    }
    Ok(code)
}
