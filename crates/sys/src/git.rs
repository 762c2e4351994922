//! The one way wavecrew runs git: argv only (never a shell), a clean
//! environment, output captured, failures turned into errors that carry
//! the command line.
//!
//! Every command runs as `git -C <dir> …` with:
//!
//! * the variables that would redirect it elsewhere (`GIT_DIR`,
//!   `GIT_INDEX_FILE`, …) removed, so a wavecrew started from a git hook
//!   still talks to the repository it was pointed at;
//! * hooks and the fsmonitor switched off (`-c core.hooksPath=/dev/null
//!   -c core.fsmonitor=false`), so code a repository's hooks or config
//!   name never runs inside wavecrew's own git commands;
//! * `LC_ALL=C` (messages stay parseable), `GIT_OPTIONAL_LOCKS=0` (`git
//!   status` and `git diff` do not rewrite an index), `GIT_TERMINAL_PROMPT=0`
//!   (git never waits on a person) and `GIT_MERGE_AUTOEDIT=no`;
//! * stdin `/dev/null` unless bytes are fed.
//!
//! A caller that needs another repository than `-C` finds (a shadow
//! repository) passes `--git-dir=`/`--work-tree=` as arguments.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

mod repo_paths;
mod status;
pub use repo_paths::{REPO_PATHS_ENV, RepoPaths, opened_repo_env};
pub use status::{StatusEntry, TreeStatus};

/// The oldest git wavecrew runs on: the first with `git merge-tree
/// --write-tree`.
pub const MIN_GIT: (u32, u32, u32) = (2, 38, 0);

/// Variables that would make git look at another repository, index or
/// object store than the one `-C` names.
pub const REDIRECTS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
];

/// The settings every command runs with, ahead of its own arguments:
/// nothing the repository names (hooks, an fsmonitor) is run.
const HYGIENE: &[&str] = &[
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
];

/// Why a git command did not give what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitError {
    /// git could not be started (or fed, or waited for).
    #[error("cannot run `{command}`: {source}; expected git >= 2.38 on PATH")]
    Spawn {
        /// The command line, for the message.
        command: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The command exited with an error.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command line, `git -C <dir> <args>`.
        command: String,
        /// The exit status as text (`exit status: 128`).
        status: String,
        /// What git wrote on stderr, trimmed.
        stderr: String,
    },
    /// The output did not have the expected shape.
    #[error("`{command}` printed {output:?}; expected {expected}")]
    Unexpected {
        /// The command line.
        command: String,
        /// The output, as text.
        output: String,
        /// What was expected.
        expected: &'static str,
    },
    /// The installed git is older than [`MIN_GIT`].
    #[error("git {found} is too old; expected git >= 2.38 (for `git merge-tree --write-tree`)")]
    TooOld {
        /// The version string git printed.
        found: String,
    },
}

/// One git command being built; [`git`] starts one.
#[derive(Debug, Clone)]
#[must_use]
pub struct Git {
    dir: PathBuf,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
}

/// Start a git command that runs in `dir` (`git -C <dir>`).
pub fn git(dir: &Path) -> Git {
    Git {
        dir: dir.to_owned(),
        args: Vec::new(),
        envs: Vec::new(),
        stdin: None,
    }
}

/// The options of every diff wavecrew reads or shows (`git diff`, `git
/// show`): plain text, and no program the configuration names (an
/// external diff, a textconv filter) run to make it.
pub const PLAIN_DIFF: [&str; 3] = ["--no-color", "--no-ext-diff", "--no-textconv"];

/// Start a git command in the work tree `wt`, pinned to the git folders
/// wavecrew recorded for it (`--git-dir`, `--work-tree`, `GIT_COMMON_DIR`),
/// never to what its `.git` file or its git folder's `commondir` say now:
/// an agent may rewrite those to lead git (and the configuration, drivers
/// and attributes it reads) elsewhere.
pub fn git_pinned(wt: &WorkTreeGit) -> Git {
    let mut dir_arg = OsString::from("--git-dir=");
    dir_arg.push(&wt.git_dir);
    let mut tree_arg = OsString::from("--work-tree=");
    tree_arg.push(&wt.top);
    git(&wt.top)
        .arg(dir_arg)
        .arg(tree_arg)
        .env("GIT_COMMON_DIR", &wt.common_dir)
}

impl Git {
    /// Add one argument.
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Self {
        self.args.push(a.as_ref().to_owned());
        self
    }

    /// Add several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Set an environment variable for this command.
    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((k.as_ref().to_owned(), v.as_ref().to_owned()));
        self
    }

    /// Author and commit as `name <email>` (through `GIT_AUTHOR_*` and
    /// `GIT_COMMITTER_*`, so no configuration is needed or read).
    pub fn identity(self, name: &str, email: &str) -> Self {
        self.env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", email)
            .env("GIT_COMMITTER_NAME", name)
            .env("GIT_COMMITTER_EMAIL", email)
    }

    /// Feed `bytes` to the command's stdin.
    pub fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// The command line, for messages (without the fixed hygiene settings).
    pub fn line(&self) -> String {
        let mut s = format!("git -C {}", quoted(self.dir.as_os_str()));
        for a in &self.args {
            s.push(' ');
            s.push_str(&quoted(a));
        }
        s
    }

    /// The process this would start, ready to spawn: for a caller that
    /// must stream or wait on its own terms. Prefer [`Git::output`].
    pub fn command(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.dir).args(HYGIENE).args(&self.args);
        for v in REDIRECTS {
            cmd.env_remove(v);
        }
        cmd.env("LC_ALL", "C")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_MERGE_AUTOEDIT", "no");
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Run and return the command line and the raw output, whatever the
    /// exit status.
    pub fn output(self) -> Result<(String, Output), GitError> {
        let line = self.line();
        let mut cmd = self.command();
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        if self.stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let spawn_err = |source| GitError::Spawn {
            command: line.clone(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn_err)?;
        if let (Some(bytes), Some(mut pipe)) = (self.stdin, child.stdin.take()) {
            // The commands fed here (commit-tree, hash-object) read all of
            // stdin before writing anything, so writing first cannot deadlock.
            pipe.write_all(&bytes).map_err(spawn_err)?;
        }
        let out = child.wait_with_output().map_err(spawn_err)?;
        Ok((line, out))
    }

    /// Run; a non-zero exit is an error. Returns stdout.
    pub fn run(self) -> Result<Vec<u8>, GitError> {
        let (line, out) = self.output()?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(failed(line, &out))
        }
    }

    /// Run; a non-zero exit is an error. Returns stdout as text, trimmed.
    pub fn text(self) -> Result<String, GitError> {
        let line = self.line();
        let bytes = self.run()?;
        let s = String::from_utf8(bytes).map_err(|e| GitError::Unexpected {
            command: line,
            output: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            expected: "UTF-8 text",
        })?;
        Ok(s.trim().to_owned())
    }

    /// Run; `Ok(true)` on exit 0, `Ok(false)` on exit 1, an error otherwise
    /// (`diff --quiet`, `merge-base --is-ancestor`).
    pub fn test(self) -> Result<bool, GitError> {
        let (line, out) = self.output()?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failed(line, &out)),
        }
    }

    /// Run; whether it exited 0 (any failure, a missing git included, is
    /// `false`): for best-effort steps whose failure is not an error.
    pub fn succeeds(self) -> bool {
        self.output().is_ok_and(|(_, out)| out.status.success())
    }
}

/// The error for a command that exited with `out.status`.
pub fn failed(command: String, out: &Output) -> GitError {
    GitError::Failed {
        command,
        status: out.status.to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    }
}

/// An argument as a shell would need it, for messages only.
pub fn quoted(a: &OsStr) -> String {
    let s = a.to_string_lossy();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,^".contains(c))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Split NUL-terminated output into its fields (lossy UTF-8).
pub fn split_nul(bytes: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = bytes
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    // A trailing NUL leaves one empty field after it.
    if v.last().is_some_and(String::is_empty) {
        v.pop();
    }
    v
}

/// The variable through which a process hands the git version it checked
/// to the wavecrew workers it starts ([`checked_version_env`]), so a
/// worker does not ask git again. A value that is not a version of at least
/// [`MIN_GIT`] is ignored (git is asked).
pub const CHECKED_VERSION_ENV: &str = "WAVECREW_GIT_CHECKED";

/// This process's check of git's version, made once.
static CHECKED: OnceLock<Result<(u32, u32, u32), String>> = OnceLock::new();

/// The installed git's version, checked against [`MIN_GIT`] once per
/// process (or taken from [`CHECKED_VERSION_ENV`], set by the wavecrew
/// process that started this one).
pub fn check_version() -> Result<(u32, u32, u32), GitError> {
    let cached = CHECKED.get_or_init(|| match inherited_version() {
        Some(v) => Ok(v),
        None => version_now().map_err(|e| e.to_string()),
    });
    match cached {
        Ok(v) => Ok(*v),
        // The first failure is cached as text; run again for a typed error.
        Err(_) => version_now(),
    }
}

/// The version a parent wavecrew process checked, when it says one.
fn inherited_version() -> Option<(u32, u32, u32)> {
    let v = parse_version(&std::env::var(CHECKED_VERSION_ENV).ok()?)?;
    (v >= MIN_GIT).then_some(v)
}

/// `(CHECKED_VERSION_ENV, "X.Y.Z")` once this process has checked git's
/// version and found it new enough: for the environment of a worker it
/// starts.
pub fn checked_version_env() -> Option<(&'static str, String)> {
    match CHECKED.get()? {
        Ok((major, minor, patch)) => {
            Some((CHECKED_VERSION_ENV, format!("{major}.{minor}.{patch}")))
        }
        Err(_) => None,
    }
}

/// Where the git of the work tree holding a folder is, asked of git once
/// (`git rev-parse`): what the repository guard, the agents' write
/// sandbox and the change snapshots all need before an agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkTreeGit {
    /// The work tree's root.
    pub top: PathBuf,
    /// Its own git folder (a linked worktree's is under the common one).
    pub git_dir: PathBuf,
    /// The repository's git folder, shared by all its worktrees.
    pub common_dir: PathBuf,
    /// What HEAD names (`refs/heads/…`, or `HEAD` when detached); `None`
    /// on a branch with no commit yet.
    pub head: Option<String>,
}

impl WorkTreeGit {
    /// The work tree holding `dir`; `None` when `dir` is not in one (no
    /// repository, a `.git` folder, a bare repository) or git cannot say.
    pub fn locate(dir: &Path) -> Option<WorkTreeGit> {
        let (_, out) = git(dir)
            .args([
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-dir",
                "--git-common-dir",
                "--symbolic-full-name",
                "HEAD",
            ])
            .output()
            .ok()?;
        // On an unborn branch the last question fails after the first
        // three are answered.
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let mut path = || Some(PathBuf::from(lines.next()?)).filter(|p| p.is_absolute());
        let (top, git_dir, common_dir) = (path()?, path()?, path()?);
        let head = lines
            .next()
            .filter(|_| out.status.success())
            .map(str::to_owned);
        Some(WorkTreeGit {
            top,
            git_dir,
            common_dir,
            head,
        })
    }

    /// Whether this is a linked worktree (`git worktree add`), whose own
    /// git folder is not the repository's.
    pub fn is_linked(&self) -> bool {
        self.git_dir != self.common_dir
    }
}

fn version_now() -> Result<(u32, u32, u32), GitError> {
    let cmd = git(Path::new(".")).arg("version");
    let line = cmd.line();
    let out = cmd.text()?;
    let found = out.trim_start_matches("git version").trim().to_owned();
    let v = parse_version(&found).ok_or(GitError::Unexpected {
        command: line,
        output: out.clone(),
        expected: "`git version X.Y.Z`",
    })?;
    if v < MIN_GIT {
        return Err(GitError::TooOld { found });
    }
    Ok(v)
}

/// `2.47.3`, `2.39.2 (Apple Git-143)`, `2.45.GIT` → (major, minor, patch).
pub fn parse_version(s: &str) -> Option<(u32, u32, u32)> {
    let word = s.split_whitespace().next()?;
    let mut parts = word.split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = parts.next().flatten()?;
    let minor = parts.next().flatten()?;
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("2.47.3"), Some((2, 47, 3)));
        assert_eq!(parse_version("2.39.2 (Apple Git-143)"), Some((2, 39, 2)));
        assert_eq!(parse_version("2.45.GIT"), Some((2, 45, 0)));
        assert_eq!(parse_version("2.38"), Some((2, 38, 0)));
        assert_eq!(parse_version("2.50.1.windows.1"), Some((2, 50, 1)));
        assert_eq!(parse_version("banana"), None);
    }

    #[test]
    fn command_lines_are_quoted() {
        let g = git(Path::new("/tmp/a b")).args(["log", "--format=%H x"]);
        assert_eq!(g.line(), "git -C '/tmp/a b' log '--format=%H x'");
    }

    #[test]
    fn nul_fields() {
        assert_eq!(split_nul(b"a\0b\0"), ["a", "b"]);
        assert_eq!(split_nul(b"a\0\0b\0"), ["a", "", "b"]);
        assert!(split_nul(b"").is_empty());
    }

    /// A repository with a commit, in a temporary folder.
    fn repo() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path())
            .args(["init", "-q", "-b", "main"])
            .run()
            .unwrap();
        std::fs::write(tmp.path().join("a.txt"), "a\n").unwrap();
        git(tmp.path()).args(["add", "a.txt"]).run().unwrap();
        git(tmp.path())
            .identity("T", "t@example.invalid")
            .args(["commit", "-qm", "one"])
            .run()
            .unwrap();
        tmp
    }

    #[test]
    fn planted_hooks_and_fsmonitor_never_run() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = repo();
        let dir = tmp.path();
        let marker = dir.join("ran.txt");
        let script = format!("#!/bin/sh\necho ran >> '{}'\n", marker.display());
        for hook in [
            "pre-commit",
            "post-commit",
            "reference-transaction",
            "post-index-change",
        ] {
            let path = dir.join(".git/hooks").join(hook);
            std::fs::write(&path, &script).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let monitor = dir.join("monitor.sh");
        std::fs::write(&monitor, &script).unwrap();
        std::fs::set_permissions(&monitor, std::fs::Permissions::from_mode(0o755)).unwrap();
        git(dir)
            .args(["config", "core.fsmonitor"])
            .arg(&monitor)
            .run()
            .unwrap();
        std::fs::write(dir.join("a.txt"), "b\n").unwrap();
        git(dir).args(["status", "--porcelain"]).run().unwrap();
        git(dir).args(["add", "a.txt"]).run().unwrap();
        git(dir)
            .identity("T", "t@example.invalid")
            .args(["commit", "-qm", "two"])
            .run()
            .unwrap();
        assert!(!marker.exists(), "a planted hook or fsmonitor ran");
    }

    #[test]
    fn a_work_tree_is_located_with_one_question() {
        let tmp = repo();
        let top = tmp.path().canonicalize().unwrap();
        let found = WorkTreeGit::locate(&top.join(".")).unwrap();
        assert_eq!(found.top.canonicalize().unwrap(), top);
        assert_eq!(found.common_dir.canonicalize().unwrap(), top.join(".git"));
        assert_eq!(found.head.as_deref(), Some("refs/heads/main"));
        assert!(!found.is_linked());

        let linked = top.join("wt");
        git(&top)
            .args(["worktree", "add", "-q", "--detach"])
            .arg(&linked)
            .run()
            .unwrap();
        let found = WorkTreeGit::locate(&linked).unwrap();
        assert!(found.is_linked());
        assert_eq!(found.head.as_deref(), Some("HEAD"));
        assert_eq!(found.common_dir.canonicalize().unwrap(), top.join(".git"));

        // No commit yet: located, HEAD unknown.
        let unborn = tempfile::tempdir().unwrap();
        git(unborn.path()).args(["init", "-q"]).run().unwrap();
        let found = WorkTreeGit::locate(unborn.path()).unwrap();
        assert_eq!(found.head, None);
        // Not a work tree: inside `.git`, or no repository at all.
        assert_eq!(WorkTreeGit::locate(&unborn.path().join(".git")), None);
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(WorkTreeGit::locate(outside.path()), None);
    }

    #[test]
    fn the_checked_version_is_handed_on_only_once_checked() {
        let checked = check_version().unwrap();
        let (name, value) = checked_version_env().unwrap();
        assert_eq!(name, CHECKED_VERSION_ENV);
        assert_eq!(parse_version(&value), Some(checked));
    }

    #[test]
    fn failures_name_the_command() {
        let tmp = repo();
        let top = git(tmp.path())
            .args(["rev-parse", "--show-toplevel"])
            .text()
            .unwrap();
        assert_eq!(
            Path::new(&top).canonicalize().unwrap(),
            tmp.path().canonicalize().unwrap()
        );
        let e = git(tmp.path())
            .args(["rev-parse", "--verify", "nope"])
            .run()
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("rev-parse --verify nope"), "{msg}");
        assert!(
            !git(tmp.path())
                .args(["rev-parse", "--verify", "nope"])
                .succeeds()
        );
    }
}
