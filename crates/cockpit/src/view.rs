//! What the page reads, from the session on disk: the whole session once
//! when the page opens ([`session_view`]: the report's [`RunData`] plus the
//! pause flag, the tasks running now with their hosts, and where the bus
//! ends, so the live feed starts there), one
//! task in depth when a person opens it ([`task_view`]: its store record,
//! each attempt's prompt, the agent's event stream (`stdout.log`), stderr
//! and outcome), and the diff
//! of its branch against its base ([`task_diff`]), read-only through git.

use std::fmt::Write as _;
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
        .filter(|t| t.awaiting_review())
        .map(|t| t.id.as_str())
        .collect();
    // Who works on what now, with the host (a task a host of `wavecrew
    // run --engine` runs has no local process: its host is all there is).
    let running: Vec<Value> = tasks
        .iter()
        .filter(|t| t.status == wavecrew_core::TaskStatus::InProgress)
        .filter_map(|t| {
            let lease = t.lease.as_ref()?;
            Some(json!({
                "id": t.id.as_str(),
                "host": lease.host,
                "worker": lease.worker,
                "remote": lease.pid == 0,
                "since": lease.acquired_at.to_string(),
            }))
        })
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
        "running": running,
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
    let numbers = layout.attempt_numbers(id.as_str());
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

/// The last `lines` lines of `path` (None when it cannot be read).
fn tail_lines(path: &Path, lines: usize) -> Option<String> {
    let text = text(path)?;
    let all: Vec<&str> = text.lines().collect();
    let skip = all.len().saturating_sub(lines);
    Some(all[skip..].join("\n"))
}

/// The end of a task's agent output and its evidence, for `wavecrew mcp`'s
/// `logs`: the task's state and result (the validation's evidence), and of
/// its last attempt the last `lines` lines of the agent's stream
/// (`stdout.log`) and of its stderr, with the attempt's `outcome.json`;
/// then the end of the worker's log. None when the session has no such
/// task.
pub fn task_logs(session_dir: &Path, id: &TaskId, lines: usize) -> Option<Value> {
    let task = FileTaskStore::for_session(session_dir).get(id).ok()?;
    let layout = SessionLayout::new(session_dir);
    let last = layout.attempt_numbers(id.as_str()).into_iter().max();
    let attempt = last.map(|n| {
        let a = layout.attempts(id.as_str()).join(n.to_string());
        json!({
            "attempt": n,
            "folder": a,
            "output": tail_lines(&a.join("stdout.log"), lines),
            "stderr": tail_lines(&a.join("stderr.log"), lines),
            "outcome": std::fs::read(a.join("outcome.json")).ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok()),
        })
    });
    Some(json!({
        "task": id.as_str(),
        "status": task.status,
        "result": task.result,
        "attempts": layout.attempt_numbers(id.as_str()).len(),
        "last_attempt": attempt,
        "worker_log": tail_lines(&layout.worker_log(id.as_str()), lines),
    }))
}

/// A task's diff, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskDiff {
    /// `git diff --stat --patch`, at most [`TEXT_LIMIT`] bytes.
    pub text: String,
    /// Whether it is the work in progress in the task's worktree (not
    /// committed yet: tracked changes against its base, and new files not
    /// added yet), rather than its branch.
    pub live: bool,
}

fn repo_of(session_dir: &Path) -> Result<wavecrew_isolation::Repo, String> {
    match wavecrew_isolation::Repo::open(session_dir) {
        Ok(None) => wavecrew_isolation::Repo::open_shadow(session_dir),
        other => other,
    }
    .map_err(|e| e.to_string())?
    .ok_or_else(|| format!("{}: no git repository", session_dir.display()))
}

fn cut(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(TEXT_LIMIT)]).into_owned()
}

/// The diff of `id`'s branch against its base (from its result's `branch`
/// and `base`) once it committed; while it works, the work in its
/// worktree as it is now; None when it has neither (it ran in place, or
/// has not started).
pub fn task_diff(session_dir: &Path, id: &TaskId) -> Result<Option<TaskDiff>, String> {
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
    // An attempt a host ran (`wavecrew run --engine`) came home as a
    // commit on the tip it started from: that is its diff.
    let remote = |k: &str| {
        task.result
            .as_ref()
            .and_then(|r| r.pointer(&format!("/remote/{k}")))
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(str::to_owned)
    };
    let committed = match (field("branch"), field("base")) {
        (Some(branch), Some(base)) => (branch, base),
        _ => match (remote("commit"), remote("base")) {
            (Some(commit), Some(base)) => (commit, base),
            _ => return live_diff(session_dir, id),
        },
    };
    let (branch, base) = committed;
    if task.status == wavecrew_core::TaskStatus::InProgress {
        // A new attempt (a revision) is at work: show it.
        if let Some(live) = live_diff(session_dir, id)? {
            return Ok(Some(live));
        }
    }
    // Only what git itself would take as a revision: no option-like name.
    if branch.starts_with('-') || base.starts_with('-') {
        return Err(format!(
            "{}: a branch or base that looks like an option",
            id.as_str()
        ));
    }
    let repo = repo_of(session_dir)?;
    let git = if repo.is_shadow() {
        wavecrew_sys::git::git(repo.work_tree())
            .arg(format!("--git-dir={}", repo.common_dir().display()))
            .arg(format!("--work-tree={}", repo.work_tree().display()))
    } else {
        wavecrew_sys::git::git(repo.top())
    };
    let out = git
        .arg("diff")
        .args(wavecrew_sys::git::PLAIN_DIFF)
        .args(["--stat", "--patch"])
        .arg(format!("{base}...{branch}"))
        .arg("--")
        .run()
        .map_err(|e| e.to_string())?;
    Ok(Some(TaskDiff {
        text: cut(&out),
        live: false,
    }))
}

/// The work in progress in the worktree of `id`'s latest attempt (its
/// record `worktrees/<task>/<n>.json` names the base): tracked changes
/// against the base, then each new file not added yet as an addition.
fn live_diff(session_dir: &Path, id: &TaskId) -> Result<Option<TaskDiff>, String> {
    let records = session_dir.join("worktrees").join(id.as_str());
    let latest = std::fs::read_dir(&records)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json")?.parse::<u32>().ok()
        })
        .max();
    let Some(attempt) = latest else {
        return Ok(None);
    };
    let record: Value = std::fs::read(records.join(format!("{attempt}.json")))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let Some(base) = record
        .get("base")
        .and_then(Value::as_str)
        .filter(|b| !b.is_empty() && b.bytes().all(|c| c.is_ascii_hexdigit()))
    else {
        return Ok(None);
    };
    let repo = repo_of(session_dir)?;
    let Some(integration) =
        wavecrew_isolation::Integration::resume(&repo, session_dir).map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let Some(dir) = integration
        .attempt_worktree(id.as_str(), attempt)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    // The agent may be at work there: git is pinned to the folders git
    // wrote for the worktree, never led by its `.git` to drivers of the
    // agent's own.
    let pinned = integration
        .pinned_work_tree(&dir)
        .map_err(|e| e.to_string())?;
    let tracked = wavecrew_sys::git::git_pinned(&pinned)
        .arg("diff")
        .args(wavecrew_sys::git::PLAIN_DIFF)
        .args(["--stat", "--patch", base, "--"])
        .run()
        .map_err(|e| e.to_string())?;
    let mut text = cut(&tracked);
    let untracked = wavecrew_sys::git::git_pinned(&pinned)
        .args(["ls-files", "--others", "--exclude-standard", "-z"])
        .run()
        .map_err(|e| e.to_string())?;
    for file in wavecrew_sys::git::split_nul(&untracked) {
        if text.len() >= TEXT_LIMIT {
            break;
        }
        let content = std::fs::read(dir.join(&file)).unwrap_or_default();
        let content = String::from_utf8_lossy(&content[..content.len().min(TEXT_LIMIT)]);
        let lines: Vec<&str> = content.lines().collect();
        let _ = write!(
            text,
            "diff --git a/{file} b/{file}\nnew file, not added yet\n--- /dev/null\n+++ b/{file}\n@@ -0,0 +1,{} @@\n",
            lines.len()
        );
        for l in lines {
            text.push('+');
            text.push_str(l);
            text.push('\n');
        }
    }
    Ok(Some(TaskDiff { text, live: true }))
}
