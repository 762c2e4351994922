//! `wisdom/*.md`: what workers learned, shared with the workers after them.
//!
//! Every worker reads the session's wisdom files as context and appends
//! one line per task to `wisdom/<role>.md` (under `wisdom/.lock`: read,
//! add, write to a temp file, rename — a crash never leaves half a file; a line already there is
//! not added again, so a resumed task does not repeat itself).

use std::path::{Path, PathBuf};

use crate::id::TaskId;

fn wisdom_files(session_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(session_dir.join("wisdom"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    files
}

/// The session's `wisdom/*.md`, concatenated (empty when none).
pub fn read_wisdom(session_dir: &Path) -> String {
    wisdom_files(session_dir)
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Append `- <task>: <first line of learned>` to `wisdom/<role>.md`.
pub fn append_wisdom(
    session_dir: &Path,
    role: &str,
    task: &TaskId,
    learned: &str,
) -> crate::error::Result<()> {
    let first = learned.lines().map(str::trim).find(|l| !l.is_empty());
    let Some(first) = first else {
        return Ok(());
    };
    let dir = session_dir.join("wisdom");
    std::fs::create_dir_all(&dir).map_err(|e| crate::error::CoreError::io("creating", &dir, e))?;
    // Workers of one session append at the same time: one at a time.
    let _lock = wavecrew_sys::lock::lock_file(&dir.join(".lock"))
        .map_err(|e| crate::error::CoreError::io(e.step, e.path, e.source))?;
    let path = dir.join(format!("{role}.md"));
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    let line = format!("- {}: {first}\n", task.as_str());
    if text.lines().any(|l| format!("{l}\n") == line) {
        return Ok(());
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&line);
    crate::fsutil::write_atomic(&path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_once_and_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let id = TaskId::new("IMPL-001").unwrap();
        append_wisdom(tmp.path(), "executor", &id, "tests live in tests/\nmore").unwrap();
        append_wisdom(tmp.path(), "executor", &id, "tests live in tests/").unwrap();
        assert_eq!(
            read_wisdom(tmp.path()),
            "- IMPL-001: tests live in tests/\n"
        );
    }
}
