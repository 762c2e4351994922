//! File checks (seed 004 Phase 4): every file a task declares it affects
//! exists. Paths are relative to the project; one that is absolute or climbs
//! out with `..` fails, since a task may only touch its project.

use std::path::{Component, Path};

use serde::Serialize;

use crate::status::CheckStatus;

/// The check of one declared file.
#[derive(Debug, Clone, Serialize)]
pub struct FileCheck {
    /// The path as declared.
    pub path: String,
    /// `pass` when it exists inside the project.
    pub status: CheckStatus,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Check that each of `files` exists under `root`.
pub fn check_files(root: &Path, files: &[String]) -> Vec<FileCheck> {
    files
        .iter()
        .map(|f| {
            let p = Path::new(f);
            let escapes = p.is_absolute()
                || p.components()
                    .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)));
            let (status, reason) = if escapes {
                (CheckStatus::Fail, Some("outside the project".to_owned()))
            } else if root.join(p).exists() {
                (CheckStatus::Pass, None)
            } else {
                (CheckStatus::Fail, Some("does not exist".to_owned()))
            };
            FileCheck {
                path: f.clone(),
                status,
                reason,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exists_missing_and_escaping() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        let checks = check_files(
            dir.path(),
            &[
                "a.txt".into(),
                "b.txt".into(),
                "../a.txt".into(),
                "/etc/passwd".into(),
            ],
        );
        let statuses: Vec<_> = checks.iter().map(|c| c.status).collect();
        assert_eq!(
            statuses,
            [
                CheckStatus::Pass,
                CheckStatus::Fail,
                CheckStatus::Fail,
                CheckStatus::Fail
            ]
        );
        assert_eq!(checks[2].reason.as_deref(), Some("outside the project"));
    }
}
