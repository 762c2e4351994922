//! Running one agent process under supervision (the nextest model).
//!
//! * argv only, never a shell; stdin is `/dev/null`, or a pipe that is
//!   written and closed at once (an open stdin hangs `codex exec`);
//! * the child leads its own process group, so everything it starts can be
//!   signalled together;
//! * a wall-clock limit and a no-output (stall) limit; on expiry the group
//!   gets SIGTERM, a grace period, then SIGKILL, and the child is reaped;
//! * when the child exits by itself, whatever it left running in its group
//!   (a background grandchild) is terminated the same way, so no process
//!   outlives the attempt;
//! * a descendant that left the group (`setsid`) cannot be signalled with
//!   it; if it still holds stdout or stderr open, the pipes are read for
//!   [`Spawn::leak_timeout`] more after the child has ended, then closed
//!   unread, and [`Supervised::leak`] says so: supervision never hangs on
//!   an escaped process;
//! * the group is stopped only through `wavecrew_sys::process` (the one
//!   module that signals groups), with a [`Pgid`] that cannot name group 0,
//!   1 or wavecrew's own; a child whose pid is unknown is killed through
//!   its handle;
//! * stdout and stderr are copied to files as they arrive, and the last
//!   [`TAIL_BYTES`] of each are kept in memory; every stdout line is handed
//!   to a callback (the event parser).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::time::Instant;
use wavecrew_core::Limits;

/// How much of each stream is kept in memory.
pub const TAIL_BYTES: usize = 64 * 1024;

/// How long the pipes are read after the child has ended, by default.
pub const DEFAULT_LEAK_TIMEOUT: Duration = Duration::from_secs(2);

/// What the child reads on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdinInput {
    /// `/dev/null`.
    Null,
    /// These bytes, then end of file.
    Bytes(Vec<u8>),
}

/// A process to run: argv, folder, environment, stdin.
#[derive(Debug, Clone)]
pub struct Spawn {
    /// The program (a path, or a name looked up in `PATH`).
    pub program: PathBuf,
    /// The arguments, each passed as one argv element.
    pub args: Vec<String>,
    /// The working folder.
    pub cwd: PathBuf,
    /// Variables to set.
    pub env: BTreeMap<String, String>,
    /// Variables to remove.
    pub env_remove: Vec<String>,
    /// What stdin holds.
    pub stdin: StdinInput,
    /// After the child has ended (and its group was terminated), how long
    /// stdout and stderr are still read before they are closed unread: a
    /// process that left the group (`setsid`) may hold them open forever.
    pub leak_timeout: Duration,
    /// Where the process tree may write (Landlock, see
    /// `wavecrew_sys::sandbox`); `None`, or a kernel without Landlock:
    /// anywhere the user may.
    pub writable: Option<Vec<PathBuf>>,
    /// What the confined tree may not read (credentials); with `writable`.
    pub hidden: Vec<PathBuf>,
    /// Refuse to start unconfined where the kernel cannot confine
    /// (`[isolation] sandbox = "required"`).
    pub required: bool,
    /// The network of a confined tree (with `writable`).
    pub network: AgentNetwork,
}

/// The network a confined agent gets (`[isolation] network`): the same
/// as the checks of its work get ([`wavecrew_sys::confined::Network`]).
pub type AgentNetwork = wavecrew_sys::confined::Network;

impl Spawn {
    /// `program args…` in `cwd`, stdin `/dev/null`, environment inherited.
    pub fn new(program: impl Into<PathBuf>, args: &[&str], cwd: impl Into<PathBuf>) -> Self {
        Spawn {
            program: program.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            env_remove: Vec::new(),
            stdin: StdinInput::Null,
            leak_timeout: DEFAULT_LEAK_TIMEOUT,
            writable: None,
            hidden: Vec::new(),
            required: false,
            network: AgentNetwork::Open,
        }
    }
}

/// Why the process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited (with a code, or by a signal it did not get from us).
    Exited {
        /// The exit code, when it exited normally.
        code: Option<i32>,
        /// The signal that ended it, otherwise.
        signal: Option<i32>,
    },
    /// The wall-clock limit expired and the group was killed.
    TimedOut,
    /// It printed nothing for the stall limit and the group was killed.
    Stalled,
    /// It could not be started (missing program, not executable, bad folder).
    SpawnFailed(String),
    /// The line callback stopped it (the reason: a budget crossed); the
    /// process group was killed.
    Stopped(String),
}

/// What a supervised run produced.
#[derive(Debug, Clone)]
pub struct Supervised {
    /// How it ended.
    pub ended: Ended,
    /// The last bytes of stdout.
    pub stdout_tail: String,
    /// The last bytes of stderr.
    pub stderr_tail: String,
    /// How long it ran.
    pub duration: Duration,
    /// Where stdout was written.
    pub stdout_path: Option<PathBuf>,
    /// Where stderr was written.
    pub stderr_path: Option<PathBuf>,
    /// Pipes that were still held open [`Spawn::leak_timeout`] after the
    /// child had ended, and were closed unread.
    pub leak: Option<PipeLeak>,
    /// What its network did, when it had one of its own.
    pub network: Option<crate::egress::NetworkLog>,
}

/// Pipes an escaped descendant still held when supervision gave up on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeLeak {
    /// The streams left open (`stdout`, `stderr`).
    pub streams: Vec<&'static str>,
    /// How long they were read after the child had ended.
    pub waited: Duration,
}

impl PipeLeak {
    /// One line for a person: what happened and what it means.
    pub fn note(&self) -> String {
        format!(
            "{} still held open {} ms after the agent ended, by a process that left its \
             process group (setsid); wavecrew closed {} unread and did not wait for it \
             (that process may still be running)",
            self.streams.join(" and "),
            self.waited.as_millis(),
            if self.streams.len() == 1 {
                "it"
            } else {
                "them"
            },
        )
    }
}

pub use wavecrew_sys::process::Pgid;
use wavecrew_sys::process::{Tail, new_group, terminate};

async fn open_sink(path: Option<&Path>, cap: u64) -> Option<Sink> {
    let path = path?;
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await.ok()?;
    }
    let file = tokio::fs::File::create(path).await.ok()?;
    let head = cap / 2;
    Some(Sink {
        file,
        head,
        tail_cap: usize::try_from(cap - head).unwrap_or(usize::MAX),
        written: 0,
        total: 0,
        tail: std::collections::VecDeque::new(),
        cap,
    })
}

/// A stream's log file with a cap: the first half of the cap is written
/// as it comes, the last half is kept in memory and written at the end
/// after a line with the count of bytes dropped between.
struct Sink {
    file: tokio::fs::File,
    head: u64,
    tail_cap: usize,
    written: u64,
    total: u64,
    tail: std::collections::VecDeque<u8>,
    cap: u64,
}

impl Sink {
    async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.total += bytes.len() as u64;
        let room = usize::try_from(self.head - self.written).unwrap_or(usize::MAX);
        let (now, later) = bytes.split_at(room.min(bytes.len()));
        if !now.is_empty() {
            self.file.write_all(now).await?;
            self.written += now.len() as u64;
        }
        if !later.is_empty() {
            self.tail.extend(later);
            let over = self.tail.len().saturating_sub(self.tail_cap);
            self.tail.drain(..over);
        }
        Ok(())
    }

    async fn finish(mut self) {
        if !self.tail.is_empty() {
            let kept = self.written + self.tail.len() as u64;
            let dropped = self.total - kept;
            if dropped > 0 {
                let note = format!(
                    "\n[wavecrew: {dropped} bytes dropped here: the output passed [limits] \
                     max_output_bytes = {}; its first {} and last {} bytes are kept]\n",
                    self.cap,
                    self.written,
                    self.tail.len()
                );
                let _ = self.file.write_all(note.as_bytes()).await;
            }
            let (a, b) = self.tail.as_slices();
            let _ = self.file.write_all(a).await;
            let _ = self.file.write_all(b).await;
        }
        let _ = self.file.flush().await;
    }
}

/// Run `spawn` under `limits`, copying stdout to `stdout_path` and stderr to
/// `stderr_path` (when given), calling `on_line` with each stdout line.
pub async fn supervise(
    spawn: &Spawn,
    limits: &Limits,
    stdout_path: Option<&Path>,
    stderr_path: Option<&Path>,
    mut on_line: impl FnMut(&str),
) -> Supervised {
    supervise_until(spawn, limits, stdout_path, stderr_path, move |line| {
        on_line(line);
        None
    })
    .await
}

/// [`supervise`], where the line callback can stop the process: when it
/// returns a reason, the group is terminated like at a timeout and the
/// attempt ends as [`Ended::Stopped`] (a budget crossed mid-stream).
pub async fn supervise_until(
    spawn: &Spawn,
    limits: &Limits,
    stdout_path: Option<&Path>,
    stderr_path: Option<&Path>,
    mut on_line: impl FnMut(&str) -> Option<String>,
) -> Supervised {
    let started = Instant::now();
    let mut result = Supervised {
        ended: Ended::SpawnFailed(String::new()),
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        duration: Duration::ZERO,
        stdout_path: stdout_path.map(Path::to_owned),
        stderr_path: stderr_path.map(Path::to_owned),
        leak: None,
        network: None,
    };
    // The agent's confinement, made by the one spawner of everything that
    // runs an agent's code (`wavecrew_sys::confined::Confined`): a network
    // of its own comes from the box, which also confines the agent
    // (wavecrew starts the box, the box becomes the agent); else a
    // confined thread starts it.
    let confined = match &spawn.writable {
        Some(writable) => {
            let rules = wavecrew_sys::confined::CommandBox {
                writable: writable.clone(),
                hidden: spawn.hidden.clone(),
                required: spawn.required,
                withheld_env: spawn.env_remove.clone(),
                network: spawn.network.clone(),
            };
            match rules.confine("the agent") {
                Ok(confined) => Some(confined),
                Err(why) => {
                    result.ended = Ended::SpawnFailed(why.to_string());
                    return result;
                }
            }
        }
        None => None,
    };
    let mut cmd = if let Some(c) = &confined {
        c.command(&spawn.program, &spawn.args)
    } else {
        let mut cmd = Command::new(&spawn.program);
        cmd.args(&spawn.args);
        cmd
    };
    new_group(&mut cmd);
    cmd.current_dir(&spawn.cwd)
        .kill_on_drop(true)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(match spawn.stdin {
            StdinInput::Null => Stdio::null(),
            StdinInput::Bytes(_) => Stdio::piped(),
        });
    for k in &spawn.env_remove {
        cmd.env_remove(k);
    }
    cmd.envs(&spawn.env);
    // Opened before the child starts, so the files are there (and ours)
    // from its first instant.
    let mut out_sink = open_sink(stdout_path, limits.max_output_bytes).await;
    let mut err_sink = open_sink(stderr_path, limits.max_output_bytes).await;
    let spawned = match &confined {
        Some(c) => c.spawn(&mut cmd).map_err(|e| {
            let said = e.to_string();
            if said.starts_with("[isolation]") {
                // The confinement's own refusal (`required`), as it said.
                said
            } else {
                format!("cannot start `{}`: {said}", spawn.program.display())
            }
        }),
        None => cmd
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", spawn.program.display())),
    };
    let mut child = match spawned {
        Ok(c) => c,
        Err(why) => {
            result.ended = Ended::SpawnFailed(why);
            return result;
        }
    };
    tracing::debug!(
        program = %spawn.program.display(),
        args = spawn.args.len(),
        cwd = %spawn.cwd.display(),
        pid = child.id(),
        "agent process started"
    );
    // Taken now: once the child is reaped its id is gone.
    let pgid = Pgid::of_leader(child.id());
    if let (StdinInput::Bytes(bytes), Some(mut stdin)) = (&spawn.stdin, child.stdin.take()) {
        // Written from a task so a child that does not read cannot block
        // us; dropped at the end, which closes the pipe.
        let bytes = bytes.clone();
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let mut stdout = child.stdout.take().map(BufReader::new);
    let mut stderr = child.stderr.take().map(BufReader::new);
    let (mut out_tail, mut err_tail) = (Tail::new(TAIL_BYTES), Tail::new(TAIL_BYTES));
    let wall_deadline = started + limits.wall;
    let mut last_output = Instant::now();
    let mut out_buf = Vec::new();
    let mut err_buf = Vec::new();
    let mut status: Option<std::io::Result<ExitStatus>> = None;
    let mut killed: Option<Ended> = None;

    // Set once the child has ended and its group is gone: pipes still open
    // after it are held by a process that left the group.
    let mut leak_deadline: Option<Instant> = None;

    while status.is_none() || stdout.is_some() || stderr.is_some() {
        if status.is_some() && leak_deadline.is_none() {
            leak_deadline = Some(Instant::now() + spawn.leak_timeout);
        }
        let stall_deadline = last_output + limits.stall;
        let deadline = wall_deadline.min(stall_deadline);
        tokio::select! {
            s = child.wait(), if status.is_none() => {
                status = Some(s);
                // Whatever the child left in its group goes with it; this
                // also closes pipes a background grandchild still holds.
                terminate(&mut child, pgid, limits.grace).await;
            }
            n = read_line(&mut stdout, &mut out_buf) => {
                if n > 0 {
                    last_output = Instant::now();
                    out_tail.push(&out_buf);
                    write_sink(&mut out_sink, &out_buf).await;
                    let stop = on_line(String::from_utf8_lossy(&out_buf).trim_end_matches(['\n', '\r']));
                    if let Some(why) = stop
                        && killed.is_none()
                    {
                        killed = Some(Ended::Stopped(why));
                        terminate(&mut child, pgid, limits.grace).await;
                        if status.is_none() {
                            status = Some(child.wait().await);
                        }
                    }
                } else {
                    stdout = None;
                }
                out_buf.clear();
            }
            n = read_line(&mut stderr, &mut err_buf) => {
                if n > 0 {
                    last_output = Instant::now();
                    err_tail.push(&err_buf);
                    write_sink(&mut err_sink, &err_buf).await;
                } else {
                    stderr = None;
                }
                err_buf.clear();
            }
            () = tokio::time::sleep_until(deadline), if killed.is_none() && status.is_none() => {
                killed = Some(if Instant::now() >= wall_deadline { Ended::TimedOut } else { Ended::Stalled });
                terminate(&mut child, pgid, limits.grace).await;
                status = Some(child.wait().await);
            }
            () = sleep_until_some(leak_deadline) => {
                let mut streams = Vec::new();
                // A partial last line is kept; the rest of the pipe is not read.
                if stdout.take().is_some() {
                    streams.push("stdout");
                    if !out_buf.is_empty() {
                        out_tail.push(&out_buf);
                        write_sink(&mut out_sink, &out_buf).await;
                        on_line(String::from_utf8_lossy(&out_buf).trim_end_matches(['\n', '\r']));
                    }
                }
                if stderr.take().is_some() {
                    streams.push("stderr");
                    if !err_buf.is_empty() {
                        err_tail.push(&err_buf);
                        write_sink(&mut err_sink, &err_buf).await;
                    }
                }
                result.leak = Some(PipeLeak { streams, waited: spawn.leak_timeout });
            }
        }
    }
    for sink in [out_sink, err_sink].into_iter().flatten() {
        sink.finish().await;
    }
    result.duration = started.elapsed();
    result.stdout_tail = out_tail.text();
    result.stderr_tail = err_tail.text();
    result.ended = match (killed, status) {
        (Some(k), _) => k,
        (None, Some(Ok(s))) => {
            use std::os::unix::process::ExitStatusExt;
            Ended::Exited {
                code: s.code(),
                signal: s.signal(),
            }
        }
        (None, Some(Err(e))) => Ended::SpawnFailed(format!("waiting for the child: {e}")),
        (None, None) => Ended::SpawnFailed("the child vanished".into()),
    };
    if let Some(confined) = confined.as_ref().filter(|c| c.through_box()) {
        // A box that could not set its layers up never started the agent.
        if let Ended::Exited {
            code: Some(wavecrew_sys::agent_box::BOX_FAILED),
            ..
        } = result.ended
            && let Some(why) = result
                .stderr_tail
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix(wavecrew_sys::agent_box::BOX_ERROR_PREFIX))
        {
            result.ended = Ended::SpawnFailed(why.to_owned());
        }
        result.network = Some(confined.network_log());
    }
    tracing::debug!(
        program = %spawn.program.display(),
        ended = ?result.ended,
        duration_ms = u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
        "agent process ended"
    );
    result
}

/// Sleep until `deadline`; never resolves without one.
async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The longest piece of a line read at once.
const MAX_LINE_BYTES: u64 = 1 << 20;

/// Read one line (or what is left, or the first [`MAX_LINE_BYTES`] of a
/// longer one) into `buf`; 0 at end of stream. A missing stream never
/// resolves.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut Option<BufReader<R>>,
    buf: &mut Vec<u8>,
) -> usize {
    match reader {
        // A line longer than this comes in pieces: memory stays bounded
        // whatever the agent prints.
        Some(r) => (&mut *r)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', buf)
            .await
            .unwrap_or(0),
        None => std::future::pending().await,
    }
}

async fn write_sink(sink: &mut Option<Sink>, bytes: &[u8]) {
    if let Some(f) = sink
        && f.write(bytes).await.is_err()
    {
        *sink = None;
    }
}
