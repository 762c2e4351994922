//! What the page reads, from the session on disk: the whole session once
//! when the page opens ([`session_view`]: the report's [`RunData`] plus the
//! pause flag and where the bus ends, so the live feed starts there), one
//! task in depth when a person opens it ([`task_view`]: its store record,
//! each attempt's prompt, the agent's event stream (`stdout.log`), stderr
//! and outcome), and the diff
//! of its branch against its base ([`task_diff`]), read-only through git.

use std::path::Path;

use serde_json::{Value, json};
use wavecrew_core::{FileTaskStore, SessionLayout, TaskId, TaskStore};
use wavecrew_report::RunData;

/// At most this much of a prompt, a stderr or a diff goes to the page.
pub const TEXT_LIMIT: usize = 256 * 1024;
/// At most this many agent events per attempt (the last ones).
pub const EVENTS_LIMIT: usize = 2000;

/// The whole session, as the page opens it.
pub fn session_view(session_dir: &Path) -> Result<Value, wavecrew_report::ReportError> {
    // Where the bus ends now: the live feed goes on from here, so no
    // record is missed or sent twice.
    let offset =
        std::fs::metadata(wavecrew_msgbus::BusPaths::log_in(session_dir)).map_or(0, |m| m.len());
    let run: RunData = wavecrew_report::collect(session_dir)?;
    let recent: Vec<Value> = wavecrew_report::data::read_bus(session_dir)
        .into_iter()
        .rev()
        .take(200)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let tasks = FileTaskStore::for_session(session_dir)
        .list()
        .unwrap_or_default();
    let awaiting: Vec<&str> = tasks
        .iter()
        .filter(|t| crate::live::awaiting_review(t))
        .map(|t| t.id.as_str())
        .collect();
    let deps: serde_json::Map<String, Value> = tasks
        .iter()
        .map(|t| {
            let d: Vec<&str> = t.blocked_by.iter().map(TaskId::as_str).collect();
            (t.id.as_str().to_owned(), json!(d))
        })
        .collect();
    Ok(json!({
        "run": run,
        "counts": run.counts(),
        "deps": deps,
        "awaiting_review": awaiting,
        "paused": wavecrew_core::Control::new(session_dir).is_paused(),
        "bus_offset": offset,
        "recent": recent,
    }))
}

/// The text of `path`, at most [`TEXT_LIMIT`] bytes (the end, when cut).
fn text(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let cut = bytes.len().saturating_sub(TEXT_LIMIT);
    Some(String::from_utf8_lossy(&bytes[cut..]).into_owned())
}

/// One task in depth: its record in the store and every attempt.
pub fn task_view(session_dir: &Path, id: &TaskId) -> Option<Value> {
    let task = FileTaskStore::for_session(session_dir).get(id).ok()?;
    let layout = SessionLayout::new(session_dir);
    let dir = layout.attempts(id.as_str());
    let mut numbers: Vec<u32> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    numbers.sort_unstable();
    let attempts: Vec<Value> = numbers
        .iter()
        .map(|n| {
            let a = dir.join(n.to_string());
            // The agent's own stream (JSON lines for the CLIs that speak
            // one; a plain line stays a string).
            let events: Vec<Value> = text(&a.join("stdout.log"))
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_owned())))
                .collect();
            let skip = events.len().saturating_sub(EVENTS_LIMIT);
            json!({
                "attempt": n,
                "prompt": text(&a.join("prompt.md")),
                "events": events[skip..],
                "stderr": text(&a.join("stderr.log")),
                "outcome": std::fs::read(a.join("outcome.json")).ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok()),
            })
        })
        .collect();
    Some(json!({
        "task": task,
        "attempts": attempts,
        "worker_log": text(&layout.worker_log(id.as_str())),
    }))
}

/// The diff of `id`'s branch against its base (from its result's `branch`
/// and `base`), at most [`TEXT_LIMIT`] bytes; None when it has no branch
/// (it ran in place, or has not committed yet).
pub fn task_diff(session_dir: &Path, id: &TaskId) -> Result<Option<String>, String> {
    let task = FileTaskStore::for_session(session_dir)
        .get(id)
        .map_err(|e| e.to_string())?;
    let field = |k: &str| {
        task.result
            .as_ref()
            .and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let (Some(branch), Some(base)) = (field("branch"), field("base")) else {
        return Ok(None);
    };
    // Only what git itself would take as a revision: no option-like name.
    if branch.starts_with('-') || base.starts_with('-') {
        return Err(format!(
            "{}: a branch or base that looks like an option",
            id.as_str()
        ));
    }
    let repo = match wavecrew_isolation::Repo::open(session_dir) {
        Ok(None) => wavecrew_isolation::Repo::open_shadow(session_dir),
        other => other,
    }
    .map_err(|e| e.to_string())?
    .ok_or_else(|| format!("{}: no git repository", session_dir.display()))?;
    let git = if repo.is_shadow() {
        wavecrew_sys::git::git(repo.work_tree())
            .arg(format!("--git-dir={}", repo.common_dir().display()))
            .arg(format!("--work-tree={}", repo.work_tree().display()))
    } else {
        wavecrew_sys::git::git(repo.top())
    };
    let out = git
        .args(["diff", "--no-color", "--no-ext-diff", "--stat", "--patch"])
        .arg(format!("{base}...{branch}"))
        .arg("--")
        .run()
        .map_err(|e| e.to_string())?;
    let cut = out.len().min(TEXT_LIMIT);
    Ok(Some(String::from_utf8_lossy(&out[..cut]).into_owned()))
}
