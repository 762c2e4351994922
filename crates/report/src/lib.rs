//! wavecrew's reports, all derived from what a session keeps on disk (the
//! task store, the bus, the attempt folders), so any of them can be made
//! again after the run, even after a crash.
//!
//! * [`data`]: [`data::collect`] gathers a [`data::RunData`];
//! * [`cost`]: tokens and US dollars per task, backend, role and run, the
//!   budgets, paused backends and waiting workers (the governor's state);
//! * [`render`]: `run-summary.json`, `junit.xml`, `summary.md`,
//!   `trace.json` (Chrome trace events);
//! * [`html`]: `index.html`, a self-contained timeline;
//! * [`merge`]: the merge queue of a session that ran isolated (each
//!   task's branch, base, merge commit and conflicts; what landed on the
//!   integration branch, read from git);
//! * [`status`]: the `wavecrew status` view;
//! * [`write_reports`]: every file under `<session>/reports/`.
//!
//! ```no_run
//! let written = wavecrew_report::write_reports(std::path::Path::new(
//!     ".workflow/.team/TC-demo-todo-api-2026-11-22",
//! ))?;
//! for path in written {
//!     println!("{}", path.display());
//! }
//! # Ok::<(), wavecrew_report::ReportError>(())
//! ```

pub mod cost;
pub mod data;
pub mod html;
pub mod merge;
pub mod render;
pub mod status;
mod task;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use data::{ReportError, RunData, collect};
use wavecrew_core::TaskStore;

fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    wavecrew_core::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| ReportError::Write {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// The graph of the session with states as colours: `(dot, mermaid)`.
pub fn graphs(session_dir: &Path) -> Result<Option<(String, String)>, ReportError> {
    let store = wavecrew_core::FileTaskStore::for_session(session_dir);
    let tasks = store.list()?;
    let nodes = tasks
        .iter()
        .map(|t| wavecrew_scheduler::TaskNode::new(t.id.clone(), t.blocked_by.iter().cloned()));
    let Ok(dag) = wavecrew_scheduler::Dag::build(
        nodes,
        &wavecrew_scheduler::BuildOptions::default()
            .with_cycle_policy(wavecrew_scheduler::CyclePolicy::Force),
    ) else {
        return Ok(None);
    };
    let states: HashMap<wavecrew_core::TaskId, &str> = tasks
        .iter()
        .map(|t| (t.id.clone(), t.status.as_str()))
        .collect();
    Ok(Some((
        dag.to_dot(Some(&states)),
        dag.to_mermaid(Some(&states)),
    )))
}

/// Write every report under `<session>/reports/`; returns the files.
pub fn write_reports(session_dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let run = collect(session_dir)?;
    let dir = wavecrew_core::SessionLayout::new(session_dir).reports();
    let mut files: Vec<(PathBuf, String)> = vec![
        (
            dir.join("run-summary.json"),
            serde_json::to_string_pretty(&render::run_summary(&run)).unwrap_or_default() + "\n",
        ),
        (dir.join("junit.xml"), render::junit(&run)),
        (dir.join("summary.md"), render::summary_markdown(&run)),
        (
            dir.join("trace.json"),
            serde_json::to_string_pretty(&render::trace(&run)).unwrap_or_default() + "\n",
        ),
        (dir.join("index.html"), html::index_html(&run)),
    ];
    if let Some((dot, mermaid)) = graphs(session_dir)? {
        files.push((dir.join("graph.dot"), dot));
        files.push((dir.join("graph.mmd"), mermaid));
    }
    for (path, text) in &files {
        write(path, text)?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}
