//! What kind of project a folder is, from the files present.

use std::path::Path;

use serde::Serialize;

/// A project type wavecrew knows how to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectKind {
    /// `tsconfig.json`.
    TypeScript,
    /// `Cargo.toml`.
    Rust,
    /// `pyproject.toml`, `setup.py`, `setup.cfg`, `requirements.txt`, or
    /// `.py` files at the top.
    Python,
    /// `go.mod`.
    Go,
    /// `package.json` (without `tsconfig.json`).
    JavaScript,
}

impl ProjectKind {
    /// The lower-case name used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectKind::TypeScript => "typescript",
            ProjectKind::Rust => "rust",
            ProjectKind::Python => "python",
            ProjectKind::Go => "go",
            ProjectKind::JavaScript => "javascript",
        }
    }
}

/// The kinds of project `dir` is (a folder can be several), in a fixed order.
pub fn detect(dir: &Path) -> Vec<ProjectKind> {
    let has = |name: &str| dir.join(name).exists();
    let mut kinds = Vec::new();
    if has("tsconfig.json") {
        kinds.push(ProjectKind::TypeScript);
    } else if has("package.json") {
        kinds.push(ProjectKind::JavaScript);
    }
    if has("Cargo.toml") {
        kinds.push(ProjectKind::Rust);
    }
    let py_files = std::fs::read_dir(dir).ok().is_some_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "py"))
    });
    if [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
    ]
    .iter()
    .any(|f| has(f))
        || py_files
    {
        kinds.push(ProjectKind::Python);
    }
    if has("go.mod") {
        kinds.push(ProjectKind::Go);
    }
    kinds.sort();
    kinds
}
