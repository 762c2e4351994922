//! Running a child process for a check: argv only (never a shell), in its
//! own process group, with a timeout after which the whole group is killed
//! (SIGTERM, a short grace, SIGKILL) and the child reaped, and with bounded
//! output capture (the last [`OUTPUT_LIMIT`] bytes of each stream).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::time::Instant;
use wavecrew_sys::confined::CommandBox;
use wavecrew_sys::process::{Pgid, Tail, new_group, terminate};

/// How much of each stream is kept.
pub const OUTPUT_LIMIT: usize = 256 * 1024;

/// How long a group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(500);

/// A command to run: a program and its arguments, each one argv element.
#[derive(Debug, Clone)]
pub struct Cmd {
    /// The program (a path, or a name looked up in `PATH`).
    pub program: OsString,
    /// The arguments.
    pub args: Vec<OsString>,
    /// The working folder.
    pub cwd: PathBuf,
    /// Variables to set for the child.
    pub env: BTreeMap<OsString, OsString>,
    /// The wall-clock limit.
    pub timeout: Duration,
    /// The box it runs in (a command on an agent's work), or `None`.
    pub confined: Option<CommandBox>,
    /// Places a confined command may write besides its working folder (a
    /// report folder).
    pub also_writes: Vec<PathBuf>,
}

impl Cmd {
    /// `program args…` in `cwd`, with a 30 s timeout.
    pub fn new<I, S>(program: impl Into<OsString>, args: I, cwd: impl Into<PathBuf>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Cmd {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            timeout: Duration::from_secs(30),
            confined: None,
            also_writes: Vec::new(),
        }
    }

    /// Run it in `confined` when given.
    #[must_use]
    pub fn confined(mut self, confined: Option<&CommandBox>) -> Self {
        self.confined = confined.cloned();
        self
    }

    /// A place it may write when confined, besides its working folder.
    #[must_use]
    pub fn also_writes(mut self, path: impl Into<PathBuf>) -> Self {
        self.also_writes.push(path.into());
        self
    }

    /// Set the timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Set an environment variable for the child.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Set several environment variables.
    #[must_use]
    pub fn envs(mut self, vars: &BTreeMap<OsString, OsString>) -> Self {
        self.env
            .extend(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    /// The command line for messages: words quoted where needed.
    pub fn display(&self) -> String {
        let mut words = vec![self.program.to_string_lossy().into_owned()];
        words.extend(self.args.iter().map(|a| a.to_string_lossy().into_owned()));
        shell_words::join(words)
    }
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Ended {
    /// It exited by itself.
    Exited {
        /// The exit code, when it exited normally.
        code: Option<i32>,
        /// The signal that ended it, otherwise.
        signal: Option<i32>,
    },
    /// The timeout expired and its process group was killed.
    TimedOut,
    /// The program was not found.
    NotFound,
    /// It could not be started for another reason.
    SpawnFailed {
        /// Why.
        message: String,
    },
}

/// What a child did.
#[derive(Debug, Clone, Serialize)]
pub struct Output {
    /// How it ended.
    pub ended: Ended,
    /// The last [`OUTPUT_LIMIT`] bytes of stdout.
    pub stdout: String,
    /// The last [`OUTPUT_LIMIT`] bytes of stderr.
    pub stderr: String,
    /// Whether either stream was cut.
    pub truncated: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// What its network did, when it ran in a box.
    pub network: Option<wavecrew_sys::egress::NetworkLog>,
}

impl Output {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        matches!(self.ended, Ended::Exited { code: Some(0), .. })
    }

    /// The exit code, when it exited normally.
    pub fn code(&self) -> Option<i32> {
        match self.ended {
            Ended::Exited { code, .. } => code,
            _ => None,
        }
    }

    /// stdout and stderr, one after the other.
    pub fn combined(&self) -> String {
        match (self.stdout.is_empty(), self.stderr.is_empty()) {
            (_, true) => self.stdout.clone(),
            (true, false) => self.stderr.clone(),
            (false, false) => format!("{}\n{}", self.stdout.trim_end(), self.stderr),
        }
    }
}

async fn drain<R: AsyncRead + Unpin>(reader: Option<R>) -> Tail {
    let mut tail = Tail::new(OUTPUT_LIMIT);
    let Some(mut reader) = reader else {
        return tail;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => tail.push(&buf[..n]),
        }
    }
    tail
}

/// Run `cmd` to the end or to its timeout. Never fails: a program that
/// cannot be started is reported in [`Output::ended`].
pub async fn run(cmd: &Cmd) -> Output {
    let started = Instant::now();
    let boxed = match cmd
        .confined
        .as_ref()
        .map(|b| b.around(&cmd.cwd, &cmd.also_writes))
    {
        Some(Err(e)) => {
            return Output {
                ended: Ended::SpawnFailed {
                    message: format!("cannot set the box of a confined command up: {e}"),
                },
                stdout: String::new(),
                stderr: String::new(),
                truncated: false,
                duration_ms: 0,
                network: None,
            };
        }
        Some(Ok(boxed)) => Some(boxed),
        None => None,
    };
    let mut command = if let Some(boxed) = &boxed {
        boxed.command(&cmd.program, &cmd.args)
    } else {
        let mut command = Command::new(&cmd.program);
        command.args(&cmd.args);
        command
    };
    // Plain output: tools force colours under `CI`, and escape codes would
    // hide the console summary from the fallback parser. `cmd.env` may
    // override this.
    command
        .current_dir(&cmd.cwd)
        .env("NO_COLOR", "1")
        .env_remove("FORCE_COLOR")
        .envs(&cmd.env)
        .kill_on_drop(true)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    new_group(&mut command);
    let spawned = match &boxed {
        Some(boxed) => boxed.spawn(&mut command),
        None => command.spawn(),
    };
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let ended = if e.kind() == std::io::ErrorKind::NotFound && cmd.cwd.is_dir() {
                Ended::NotFound
            } else {
                Ended::SpawnFailed {
                    message: format!("cannot start `{}`: {e}", cmd.program.to_string_lossy()),
                }
            };
            return Output {
                ended,
                stdout: String::new(),
                stderr: String::new(),
                truncated: false,
                duration_ms: 0,
                network: None,
            };
        }
    };
    // Taken now: once the child is reaped its id is gone. `None` (no
    // group that may be signalled) kills the child through its handle.
    let pgid = Pgid::of_leader(child.id());
    tracing::debug!(
        program = %cmd.program.to_string_lossy(),
        args = ?cmd.args,
        cwd = %cmd.cwd.display(),
        "check started"
    );
    let out = tokio::spawn(drain(child.stdout.take()));
    let err = tokio::spawn(drain(child.stderr.take()));
    let ended = match tokio::time::timeout(cmd.timeout, child.wait()).await {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            // Whatever the child left running in its group goes too, so
            // that the pipes close and nothing outlives the check.
            terminate(&mut child, pgid, GRACE).await;
            Ended::Exited {
                code: status.code(),
                signal: status.signal(),
            }
        }
        Ok(Err(e)) => Ended::SpawnFailed {
            message: format!("waiting for `{}`: {e}", cmd.program.to_string_lossy()),
        },
        Err(_) => {
            terminate(&mut child, pgid, GRACE).await;
            let _ = child.wait().await;
            Ended::TimedOut
        }
    };
    let out = out.await.unwrap_or_else(|_| Tail::new(OUTPUT_LIMIT));
    let err = err.await.unwrap_or_else(|_| Tail::new(OUTPUT_LIMIT));
    tracing::debug!(
        program = %cmd.program.to_string_lossy(),
        ended = ?ended,
        "check ended"
    );
    let stderr = err.text();
    // A box that could not start the program says why on stderr.
    let ended = match (&ended, &boxed) {
        (
            Ended::Exited {
                code: Some(code), ..
            },
            Some(b),
        ) if *code == wavecrew_sys::agent_box::BOX_FAILED && b.through_box() => {
            match stderr
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix(wavecrew_sys::agent_box::BOX_ERROR_PREFIX))
            {
                Some(why) if why.starts_with("cannot start") && why.contains("No such file") => {
                    Ended::NotFound
                }
                Some(why) => Ended::SpawnFailed {
                    message: why.to_owned(),
                },
                None => ended,
            }
        }
        _ => ended,
    };
    Output {
        ended,
        stdout: out.text(),
        stderr,
        truncated: out.was_cut() || err.was_cut(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        network: boxed
            .as_ref()
            .map(wavecrew_sys::confined::Boxed::network_log),
    }
}

/// Find `program` the way the child would: a path with a `/` as is,
/// otherwise the first executable of that name in `path` (a `PATH` value;
/// the process's own when `None`).
pub fn which(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = match path {
        Some(p) => p.to_owned(),
        None => std::env::var_os("PATH")?,
    };
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exit_codes_and_output() {
        let out = run(&Cmd::new(
            "sh",
            ["-c", "echo hi; echo oops >&2; exit 3"],
            ".",
        ))
        .await;
        assert_eq!(out.code(), Some(3));
        assert_eq!(out.stdout, "hi\n");
        assert_eq!(out.stderr, "oops\n");
        assert!(!out.success());
    }

    #[tokio::test]
    async fn missing_program_is_not_found() {
        let out = run(&Cmd::new(
            "wavecrew-no-such-tool",
            Vec::<String>::new(),
            ".",
        ))
        .await;
        assert_eq!(out.ended, Ended::NotFound);
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("late");
        // A grandchild that would write the marker after the timeout.
        let script = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let started = std::time::Instant::now();
        let out =
            run(&Cmd::new("sh", ["-c", &script], dir.path()).timeout(Duration::from_millis(300)))
                .await;
        assert_eq!(out.ended, Ended::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "the grandchild outlived the timeout");
    }

    #[tokio::test]
    async fn output_is_bounded() {
        let out = run(&Cmd::new(
            "sh",
            ["-c", "head -c 1000000 /dev/zero | tr '\\0' a; echo END"],
            ".",
        ))
        .await;
        assert!(out.truncated);
        assert_eq!(out.stdout.len(), OUTPUT_LIMIT);
        assert!(out.stdout.ends_with("END\n"));
    }

    #[test]
    fn which_finds_sh() {
        assert!(which("sh", None).is_some());
        assert!(which("wavecrew-no-such-tool", None).is_none());
    }
}
