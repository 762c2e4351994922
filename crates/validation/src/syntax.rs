//! Syntax checks by project type (seed 000 Phase 4, seed 004 Phase 4):
//! `tsc --noEmit`, `cargo check`, `python3 -m py_compile` on the changed
//! files, `go vet`. Each runs as argv with a timeout (30 s by default, as
//! in the seed). A tool that is not installed gives
//! [`CheckStatus::Skipped`] with the reason, never a pass.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::process::{self, Cmd, Ended};
use crate::project::{self, ProjectKind};
use crate::status::CheckStatus;

/// Options of [`check_syntax`].
#[derive(Debug, Clone)]
pub struct SyntaxOptions {
    /// Per-tool time limit.
    pub timeout: Duration,
    /// The changed files (relative to the project): Python checks compile
    /// these; when empty, every `.py` file of the project.
    pub changed_files: Vec<String>,
    /// Variables for the tools (a `PATH` here is also where tools are
    /// looked up).
    pub env: BTreeMap<OsString, OsString>,
    /// The box its commands run in (they run the agent's work), or `None`
    /// (anywhere, as the caller). Default: a box that may write only the
    /// project's folder and a temporary folder of its own.
    pub confined: Option<wavecrew_sys::confined::CommandBox>,
}

impl Default for SyntaxOptions {
    fn default() -> Self {
        SyntaxOptions {
            timeout: Duration::from_secs(30),
            changed_files: Vec::new(),
            env: BTreeMap::new(),
            confined: Some(wavecrew_sys::confined::CommandBox::default()),
        }
    }
}

/// The result of one tool.
#[derive(Debug, Clone, Serialize)]
pub struct SyntaxCheck {
    /// The project type checked.
    pub kind: ProjectKind,
    /// The command line (for people; it ran as argv).
    pub command: String,
    /// The status.
    pub status: CheckStatus,
    /// Why it was skipped, timed out or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the tool printed (bounded).
    pub output: String,
    /// How long it ran.
    pub duration_ms: u64,
    /// What its network did (the hosts its proxy let through and
    /// refused), when it ran in a box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<wavecrew_sys::egress::NetworkLog>,
}

/// Every syntax check of a project.
#[derive(Debug, Clone, Serialize)]
pub struct SyntaxReport {
    /// The worst status of the checks; `skipped` when no type was detected.
    pub status: CheckStatus,
    /// The project types found.
    pub kinds: Vec<ProjectKind>,
    /// One entry per check.
    pub checks: Vec<SyntaxCheck>,
}

impl SyntaxReport {
    /// The checks that ran out of time, each as a sentence for a person:
    /// the command, its limit, and that this says nothing of the code (an
    /// environment problem: a cold build, a loaded machine).
    pub fn inconclusive(&self, limit: Duration) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| c.status == CheckStatus::TimedOut)
            .map(|c| {
                format!(
                    "the {} syntax check `{}` ran out of its {} s limit after {} ms: \
                     inconclusive, an environment problem (a cold build, a loaded machine), \
                     not a finding about the code; raise `[limits] syntax_check_secs` or warm \
                     the build",
                    c.kind.as_str(),
                    c.command,
                    limit.as_secs(),
                    c.duration_ms
                )
            })
            .collect()
    }
}

/// Find a tool: `node_modules/.bin` of the project first for node tools,
/// then the `PATH` of `env` (or of this process).
pub(crate) fn find_tool(
    name: &str,
    dir: &Path,
    env: &BTreeMap<OsString, OsString>,
) -> Option<PathBuf> {
    let local = dir.join("node_modules/.bin").join(name);
    if local.is_file() {
        return Some(local);
    }
    process::which(
        name,
        env.get(&OsString::from("PATH")).map(OsString::as_os_str),
    )
}

/// Run the syntax checks that fit the project in `dir`.
pub async fn check_syntax(dir: &Path, options: &SyntaxOptions) -> SyntaxReport {
    let kinds = project::detect(dir);
    let mut checks = Vec::new();
    for &kind in &kinds {
        let check = match kind {
            ProjectKind::TypeScript => tool_check(kind, "tsc", &["--noEmit"], dir, options).await,
            ProjectKind::Rust => {
                tool_check(
                    kind,
                    "cargo",
                    &["check", "--quiet", "--message-format", "short"],
                    dir,
                    options,
                )
                .await
            }
            ProjectKind::Go => tool_check(kind, "go", &["vet", "./..."], dir, options).await,
            ProjectKind::Python => python_check(dir, options).await,
            ProjectKind::JavaScript => continue,
        };
        checks.push(check);
    }
    SyntaxReport {
        status: CheckStatus::combine(checks.iter().map(|c| c.status)),
        kinds,
        checks,
    }
}

async fn tool_check(
    kind: ProjectKind,
    tool: &str,
    args: &[&str],
    dir: &Path,
    options: &SyntaxOptions,
) -> SyntaxCheck {
    let display = std::iter::once(tool)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let Some(program) = find_tool(tool, dir, &options.env) else {
        return skipped(
            kind,
            display,
            format!("`{tool}` is not installed (not in node_modules/.bin or PATH)"),
        );
    };
    let cmd = Cmd::new(program, args.iter().copied(), dir)
        .timeout(options.timeout)
        .envs(&options.env)
        .confined(options.confined.as_ref());
    finish(kind, display, &cmd).await
}

async fn python_check(dir: &Path, options: &SyntaxOptions) -> SyntaxCheck {
    let kind = ProjectKind::Python;
    let files: Vec<String> = if options.changed_files.is_empty() {
        let mut all = Vec::new();
        python_files(dir, dir, 0, &mut all);
        all
    } else {
        options
            .changed_files
            .iter()
            .filter(|f| {
                Path::new(f).extension().is_some_and(|e| e == "py") && dir.join(f).is_file()
            })
            .cloned()
            .collect()
    };
    let mut display = "python3 -m py_compile".to_owned();
    if files.is_empty() {
        return skipped(kind, display, "no Python file to compile".into());
    }
    for f in &files {
        display.push(' ');
        display.push_str(&shell_words::quote(f));
    }
    let Some(python) = find_tool("python3", dir, &options.env) else {
        return skipped(
            kind,
            display,
            "`python3` is not installed (not in PATH)".into(),
        );
    };
    // Compiled files go to a scratch folder, not into the project.
    let cache = tempfile::tempdir().ok();
    let mut args = vec!["-m".to_owned(), "py_compile".to_owned()];
    args.extend(files);
    let mut cmd = Cmd::new(python, args, dir)
        .timeout(options.timeout)
        .envs(&options.env)
        .confined(options.confined.as_ref());
    if let Some(cache) = &cache {
        cmd = cmd
            .env("PYTHONPYCACHEPREFIX", cache.path())
            .also_writes(cache.path());
    }
    finish(kind, display, &cmd).await
}

/// `.py` files under `dir`, skipping hidden folders, virtual environments
/// and `node_modules`, at most 6 levels deep.
#[allow(clippy::case_sensitive_file_extension_comparisons)] // naming conventions are case-sensitive
fn python_files(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    if depth > 6 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            let skip = name.starts_with('.')
                || matches!(
                    name.as_str(),
                    "node_modules" | "venv" | "__pycache__" | "target" | "site-packages"
                );
            if !skip {
                python_files(root, &path, depth + 1, out);
            }
        } else if name.ends_with(".py")
            && let Ok(rel) = path.strip_prefix(root)
        {
            out.push(rel.display().to_string());
        }
    }
}

fn skipped(kind: ProjectKind, command: String, reason: String) -> SyntaxCheck {
    SyntaxCheck {
        kind,
        command,
        status: CheckStatus::Skipped,
        reason: Some(reason),
        output: String::new(),
        duration_ms: 0,
        network: None,
    }
}

async fn finish(kind: ProjectKind, command: String, cmd: &Cmd) -> SyntaxCheck {
    let out = process::run(cmd).await;
    let (status, reason) = match &out.ended {
        Ended::Exited { code: Some(0), .. } => (CheckStatus::Pass, None),
        Ended::Exited { code, signal } => (
            CheckStatus::Fail,
            Some(match (code, signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("killed by signal {s}"),
                (None, None) => "failed".to_owned(),
            }),
        ),
        Ended::TimedOut => (
            CheckStatus::TimedOut,
            Some(format!("no result within {} s", cmd.timeout.as_secs_f64())),
        ),
        Ended::NotFound => (
            CheckStatus::Skipped,
            Some(format!(
                "`{}` is not installed",
                cmd.program.to_string_lossy()
            )),
        ),
        Ended::SpawnFailed { message } => (CheckStatus::Skipped, Some(message.clone())),
    };
    SyntaxCheck {
        kind,
        command,
        status,
        reason,
        output: out.combined(),
        duration_ms: out.duration_ms,
        network: out.network,
    }
}
