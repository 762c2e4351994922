//! Running git: argv only (never a shell), a clean environment, output
//! captured, failures turned into errors that carry the command line.
//!
//! Every command runs as `git -C <dir> …` with the variables that would
//! redirect it elsewhere (`GIT_DIR`, `GIT_INDEX_FILE`, …) removed, so a
//! wavecrew started from a git hook still talks to the repository it was
//! pointed at. `LC_ALL=C` keeps messages parseable, `GIT_OPTIONAL_LOCKS=0`
//! keeps `git status` and `git diff` from refreshing (rewriting) an index,
//! and `GIT_TERMINAL_PROMPT=0` keeps git from waiting on a person.
//!
//! A shadow repository (a project folder without git) is never reached
//! through those variables: `Repo::git` passes `--git-dir=<shadow>` and
//! `--work-tree=<project>` as arguments of each command instead. A plain
//! `git -C <shadow git dir>` (what `Repo::top` names for a shadow) works
//! for the commands that need no work tree (`log`, `merge-tree`,
//! `merge-base`, `rev-list`), since the shadow is a bare repository.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use crate::error::{IsolationError, Result};

/// The oldest git with `git merge-tree --write-tree`.
pub(crate) const MIN_GIT: (u32, u32, u32) = (2, 38, 0);

/// Variables that would make git look at another repository, index or
/// object store than the one `-C` names.
const REDIRECTS: &[&str] = &[
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

/// One git command being built.
pub(crate) struct Git {
    dir: PathBuf,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
}

/// Start a git command that runs in `dir`.
pub(crate) fn git(dir: &Path) -> Git {
    Git {
        dir: dir.to_owned(),
        args: Vec::new(),
        envs: Vec::new(),
        stdin: None,
    }
}

impl Git {
    /// Add one argument.
    pub(crate) fn arg(mut self, a: impl AsRef<OsStr>) -> Self {
        self.args.push(a.as_ref().to_owned());
        self
    }

    /// Add several arguments.
    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Set an environment variable for this command.
    pub(crate) fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((k.as_ref().to_owned(), v.as_ref().to_owned()));
        self
    }

    /// Feed `bytes` to the command's stdin.
    pub(crate) fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// The command line, for messages.
    pub(crate) fn line(&self) -> String {
        let mut s = format!("git -C {}", quoted(self.dir.as_os_str()));
        for a in &self.args {
            s.push(' ');
            s.push_str(&quoted(a));
        }
        s
    }

    /// Run and return the raw output, whatever the exit status.
    pub(crate) fn output(self) -> Result<(String, Output)> {
        let line = self.line();
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.dir).args(&self.args);
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
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let spawn_err = |source| IsolationError::Spawn {
            command: line.clone(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn_err)?;
        if let (Some(bytes), Some(mut pipe)) = (self.stdin, child.stdin.take()) {
            // The commands fed here (commit-tree) read all of stdin before
            // writing anything, so writing first cannot deadlock.
            pipe.write_all(&bytes).map_err(spawn_err)?;
        }
        let out = child.wait_with_output().map_err(spawn_err)?;
        Ok((line, out))
    }

    /// Run; a non-zero exit is an error. Returns stdout.
    pub(crate) fn run(self) -> Result<Vec<u8>> {
        let (line, out) = self.output()?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(failed(line, &out))
        }
    }

    /// Run; a non-zero exit is an error. Returns stdout as text, trimmed.
    pub(crate) fn text(self) -> Result<String> {
        let line = self.line();
        let bytes = self.run()?;
        let s = String::from_utf8(bytes).map_err(|e| IsolationError::Unexpected {
            command: line,
            output: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            expected: "UTF-8 text",
        })?;
        Ok(s.trim().to_owned())
    }

    /// Run; Ok(true) on exit 0, Ok(false) on exit 1, an error otherwise.
    pub(crate) fn test(self) -> Result<bool> {
        let (line, out) = self.output()?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failed(line, &out)),
        }
    }
}

/// The error for a command that exited with `out.status`.
pub(crate) fn failed(command: String, out: &Output) -> IsolationError {
    IsolationError::Git {
        command,
        status: out.status.to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
    }
}

/// An argument as a shell would need it, for messages only.
pub(crate) fn quoted(a: &OsStr) -> String {
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
pub(crate) fn split_nul(bytes: &[u8]) -> Vec<String> {
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

/// The installed git's version, checked against [`MIN_GIT`] once per process.
pub(crate) fn check_version() -> Result<(u32, u32, u32)> {
    static CHECKED: OnceLock<std::result::Result<(u32, u32, u32), String>> = OnceLock::new();
    let cached = CHECKED.get_or_init(|| version_now().map_err(|e| e.to_string()));
    match cached {
        Ok(v) => Ok(*v),
        // The first failure is cached as text; run again for a typed error.
        Err(_) => version_now(),
    }
}

fn version_now() -> Result<(u32, u32, u32)> {
    let cmd = git(Path::new(".")).arg("version");
    let line = cmd.line();
    let out = cmd.text()?;
    let found = out.trim_start_matches("git version").trim().to_owned();
    let v = parse_version(&found).ok_or(IsolationError::Unexpected {
        command: line,
        output: out.clone(),
        expected: "`git version X.Y.Z`",
    })?;
    if v < MIN_GIT {
        return Err(IsolationError::GitTooOld { found });
    }
    Ok(v)
}

/// `2.47.3`, `2.39.2 (Apple Git-143)`, `2.45.GIT` → (major, minor, patch).
pub(crate) fn parse_version(s: &str) -> Option<(u32, u32, u32)> {
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
}
