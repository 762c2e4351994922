//! What the tasks a task depends on landed, for its prompt: for each
//! blocker that landed a commit on the integration branch (its result's
//! `merge_commit`), the commit and its subject, the files with a diff stat,
//! and the diff itself (`<commit>^1..<commit>`: what landing it added),
//! read from git without changing anything. A reviewer sees the work it
//! reviews; the prompt fences it as untrusted data and its budget may cut
//! it (`landed` in the prompt field table).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use wavecrew_core::{FileTaskStore, Task, TaskStore};
use wavecrew_isolation::Repo;

/// At most this much of each blocker's diff (the prompt's budget may cut
/// the whole section further).
pub const DIFF_LIMIT: usize = 48 * 1024;

fn git_in(repo: &Repo) -> wavecrew_sys::git::Git {
    if repo.is_shadow() {
        wavecrew_sys::git::git(repo.work_tree())
            .arg(format!("--git-dir={}", repo.common_dir().display()))
            .arg(format!("--work-tree={}", repo.work_tree().display()))
    } else {
        wavecrew_sys::git::git(repo.top())
    }
}

/// The landed changes of `task`'s blockers in the session at
/// `session_dir`, as text; empty when none landed a commit (or the session
/// has no repository: it ran in place).
pub fn landed_changes(session_dir: &Path, task: &Task) -> String {
    if task.blocked_by.is_empty() {
        return String::new();
    }
    let repo = match Repo::open(session_dir) {
        Ok(Some(r)) => r,
        _ => match Repo::open_shadow(session_dir) {
            Ok(Some(r)) => r,
            _ => return String::new(),
        },
    };
    let store = FileTaskStore::for_session(session_dir);
    let mut out = String::new();
    for dep in &task.blocked_by {
        let Ok(d) = store.get(dep) else { continue };
        let Some(commit) = d
            .result
            .as_ref()
            .and_then(|r| r.get("merge_commit"))
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_hexdigit()))
        else {
            continue;
        };
        let stat = git_in(&repo)
            .arg("show")
            .args(wavecrew_sys::git::PLAIN_DIFF)
            .args(["--stat", "--format=commit %H%n%s", commit])
            .text()
            .unwrap_or_default();
        let diff = git_in(&repo)
            .arg("diff")
            .args(wavecrew_sys::git::PLAIN_DIFF)
            .arg(format!("{commit}^1"))
            .arg(commit)
            .arg("--")
            .run()
            .unwrap_or_default();
        let cut = diff.len().min(DIFF_LIMIT);
        let _ = write!(out, "### {} ({})\n{stat}\n\n", dep.as_str(), d.title());
        out.push_str(&String::from_utf8_lossy(&diff[..cut]));
        if cut < diff.len() {
            let _ = write!(
                out,
                "\n[diff cut at {DIFF_LIMIT} bytes of {}]\n",
                diff.len()
            );
        }
        out.push('\n');
    }
    out
}
