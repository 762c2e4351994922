//! Process groups, and the small pieces every spawner shares.
//!
//! wavecrew starts each child it supervises (an agent CLI, a check
//! command, a role worker, a host's role binary) as the leader of a new
//! process group ([`new_group`]), so everything the child starts can be
//! signalled together. This module is the only place that signals a
//! group, and only through a [`Pgid`], which cannot name group 0
//! (`killpg(0, …)` signals the caller's own group), group 1 (init's) or
//! wavecrew's own group.
//!
//! * [`terminate_group`]: SIGTERM, a grace period for the group to empty,
//!   then SIGKILL;
//! * [`kill_group`]: SIGKILL at once;
//! * [`terminate_tree`]: a worker's group and the groups of what it
//!   started (an agent leads its own), found in `/proc`;
//! * [`Tail`]: the last bytes of a stream, bounded;
//! * [`blocking`]: synchronous work (fsync, git, the stores) off the async
//!   runtime's threads;
//! * [`pid_alive`]: whether a process still exists (signal 0).

use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// A process group that may be signalled: a positive id above 1 that is
/// not wavecrew's own group. Neither `killpg(0, …)` (the caller's own
/// group) nor `killpg(1, …)` (init's) can be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pgid(Pid);

impl Pgid {
    /// The group led by the process `pid` (a child spawned as the leader
    /// of its own group, see [`new_group`]); `None` when there is no pid,
    /// or it is 0, 1, out of range, or wavecrew's own group.
    pub fn of_leader(pid: Option<u32>) -> Option<Pgid> {
        let raw = i32::try_from(pid?).ok().filter(|p| *p > 1)?;
        let pid = Pid::from_raw(raw);
        (pid != nix::unistd::getpgrp()).then_some(Pgid(pid))
    }

    /// The raw id.
    pub fn as_raw(self) -> i32 {
        self.0.as_raw()
    }

    /// Send `signal` to the group; `false` when the group no longer exists.
    pub fn signal(self, signal: Signal) -> bool {
        !matches!(killpg(self.0, signal), Err(Errno::ESRCH))
    }

    /// Whether any process of the group is still there.
    pub fn alive(self) -> bool {
        !matches!(killpg(self.0, None), Err(Errno::ESRCH))
    }
}

/// Make the command's child the leader of a new process group (its pgid
/// is its pid), so [`Pgid::of_leader`] names everything it starts.
pub fn new_group(cmd: &mut tokio::process::Command) -> &mut tokio::process::Command {
    cmd.process_group(0)
}

/// The same for a `std` command.
pub fn new_group_std(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0)
}

/// How [`spawn_logged`] starts a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedSpawn {
    /// The child leads a new process group: it outlives a terminal's
    /// Ctrl-C, and [`kill_group`] stops it with everything it started.
    pub new_group: bool,
    /// The child is killed when its handle is dropped.
    pub kill_on_drop: bool,
}

/// Start `program args…` with stdin `/dev/null` and stdout and stderr
/// appended to the file `log` (created anew, with its folder): how a
/// worker process is started, on one host or on a fleet host. The worker
/// inherits the git version this process checked, and the repository it
/// opened, if it did. The error names what failed (the log file, or
/// starting the program).
pub fn spawn_logged(
    program: &std::path::Path,
    args: &[String],
    log: &std::path::Path,
    how: LoggedSpawn,
) -> std::io::Result<tokio::process::Child> {
    let named = |what: String| {
        move |e: std::io::Error| std::io::Error::new(e.kind(), format!("{what}: {e}"))
    };
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(named(format!("creating {}", dir.display())))?;
    }
    let out = std::fs::File::create(log).map_err(named(format!("creating {}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(named(format!("opening {}", log.display())))?;
    let mut cmd = tokio::process::Command::new(program);
    // A worker need not ask git's version again (see `check_version`).
    if let Some((name, version)) = crate::git::checked_version_env() {
        cmd.env(name, version);
    }
    // Nor where the repository it opened is (see `RepoPaths`).
    if let Some((name, paths)) = crate::git::opened_repo_env() {
        cmd.env(name, paths);
    }
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(how.kill_on_drop);
    if how.new_group {
        new_group(&mut cmd);
    }
    cmd.spawn()
        .map_err(named(format!("cannot start {}", program.display())))
}

/// How [`run_to_log`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoggedEnd {
    /// It exited with this code (`None`: killed by a signal).
    Exited(Option<i32>),
    /// It ran out of its time limit; its group was killed.
    TimedOut,
}

/// Run `program args…` in `cwd` to its end (or `limit`, when its whole
/// group is killed), stdin `/dev/null`, stdout and stderr appended to
/// `log`: for a step whose output is kept as a file (a worktree's setup
/// commands). In `confined` when given (a command on an agent's work).
/// Blocking.
pub fn run_to_log(
    program: &std::path::Path,
    args: &[String],
    cwd: &std::path::Path,
    log: &std::path::Path,
    limit: Duration,
    confined: Option<&crate::confined::CommandBox>,
) -> std::io::Result<LoggedEnd> {
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let err = out.try_clone()?;
    let boxed = confined.map(|b| b.around(cwd, &[])).transpose()?;
    let mut cmd = if let Some(boxed) = &boxed {
        boxed.command_std(program, args)
    } else {
        let mut cmd = std::process::Command::new(program);
        cmd.args(args);
        cmd
    };
    cmd.current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err);
    new_group_std(&mut cmd);
    let mut child = match &boxed {
        Some(boxed) => boxed.spawn_std(&mut cmd)?,
        None => cmd.spawn()?,
    };
    let pgid = Pgid::of_leader(Some(child.id()));
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            // Whatever it left running in its group goes with it.
            if let Some(g) = pgid {
                g.signal(Signal::SIGKILL);
            }
            // What its network did, after its output.
            if let Some(boxed) = boxed.as_ref().filter(|b| b.through_box()) {
                use std::io::Write;
                let net = boxed.network_log();
                let mut log = std::fs::OpenOptions::new().append(true).open(log)?;
                writeln!(
                    log,
                    "[wavecrew] network ({}): reached [{}], refused [{}]",
                    net.mode,
                    net.reached.iter().cloned().collect::<Vec<_>>().join(", "),
                    net.refused.iter().cloned().collect::<Vec<_>>().join(", ")
                )?;
            }
            return Ok(LoggedEnd::Exited(status.code()));
        }
        if std::time::Instant::now() >= deadline {
            match pgid {
                Some(g) => {
                    g.signal(Signal::SIGKILL);
                }
                None => child.kill()?,
            }
            child.wait()?;
            return Ok(LoggedEnd::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM the group, wait up to `grace` for it to empty, then SIGKILL.
pub async fn terminate_group(pgid: Pgid, grace: Duration) {
    if !pgid.signal(Signal::SIGTERM) {
        return;
    }
    let deadline = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < deadline {
        if !pgid.alive() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pgid.signal(Signal::SIGKILL);
}

/// Stop a child and everything in its group: [`terminate_group`] when it
/// leads one, else the child alone through its handle (never group 0).
pub async fn terminate(child: &mut tokio::process::Child, pgid: Option<Pgid>, grace: Duration) {
    match pgid {
        Some(pgid) => terminate_group(pgid, grace).await,
        None => {
            let _ = child.start_kill();
        }
    }
}

/// SIGKILL the group led by `pid` at once (nothing when `pid` names no
/// group that may be signalled); `false` when there was nothing to kill.
pub fn kill_group(pid: Option<u32>) -> bool {
    Pgid::of_leader(pid).is_some_and(|g| g.signal(Signal::SIGKILL))
}

/// The process groups of everything `pid` started, at any depth (read
/// from `/proc`): a supervised agent leads a group of its own, which
/// stopping its parent's group does not reach. Groups that may not be
/// signalled (wavecrew's own) are left out.
pub fn descendant_groups(pid: u32) -> Vec<Pgid> {
    // (pid, ppid, pgid) of every process.
    let mut procs: Vec<(u32, u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`, comm may hold spaces and `)`.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(ppid), Some(pgrp)) = (
            fields.get(1).and_then(|f| f.parse().ok()),
            fields.get(2).and_then(|f| f.parse().ok()),
        ) {
            procs.push((p, ppid, pgrp));
        }
    }
    let mut seen = vec![pid];
    let mut groups: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < seen.len() {
        let parent = seen[i];
        for &(p, ppid, pgrp) in &procs {
            if ppid == parent && !seen.contains(&p) {
                seen.push(p);
                if !groups.contains(&pgrp) {
                    groups.push(pgrp);
                }
            }
        }
        i += 1;
    }
    groups
        .into_iter()
        .filter(|g| *g != pid)
        .filter_map(|g| Pgid::of_leader(Some(g)))
        .collect()
}

/// Stop the worker `pid` leads a group of and everything it started,
/// groups of their own included ([`descendant_groups`], read before the
/// worker is signalled): each group gets [`terminate_group`], the
/// worker's first, so that it cannot start anything new.
pub async fn terminate_tree(pid: u32, grace: Duration) {
    let below = descendant_groups(pid);
    if let Some(g) = Pgid::of_leader(Some(pid)) {
        terminate_group(g, grace).await;
    }
    for g in below {
        terminate_group(g, grace).await;
    }
}

/// Whether the process `pid` exists and has not ended (it may belong to
/// another user). A zombie (ended, not reaped) counts as gone.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match kill(Pid::from_raw(raw), None) {
        Ok(()) | Err(Errno::EPERM) => !is_zombie(raw),
        Err(_) => false,
    }
}

/// Whether the process has exited but was not reaped (state `Z` or `X` in
/// `/proc/<pid>/stat`). A worker whose parent died is reparented, and in a
/// container whose first process does not reap, it stays a zombie for
/// good: it still answers `kill(pid, 0)`, but it holds nothing.
fn is_zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S …`: the state follows the last `)` (comm may hold one).
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|state| state == "Z" || state == "X")
}

/// The last `limit` bytes of a stream, and whether anything was cut.
#[derive(Debug, Clone, Default)]
pub struct Tail {
    bytes: Vec<u8>,
    limit: usize,
    cut: bool,
}

impl Tail {
    /// A tail that keeps at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Tail {
            bytes: Vec::new(),
            limit,
            cut: false,
        }
    }

    /// Append `chunk`, dropping the oldest bytes past the limit.
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > self.limit {
            let excess = self.bytes.len() - self.limit;
            self.bytes.drain(..excess);
            self.cut = true;
        }
    }

    /// The bytes kept.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether bytes were dropped.
    pub fn was_cut(&self) -> bool {
        self.cut
    }

    /// The bytes kept, as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Blocking work that never ran to its end: the runtime was shutting down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the blocking pool dropped the work: {0}")]
pub struct Cancelled(pub String);

/// Run blocking work (file I/O with fsync, git, the synchronous stores)
/// off the async runtime's threads. A panic in `f` is resumed here; a
/// runtime shutting down is [`Cancelled`].
pub async fn try_blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Cancelled> {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => Ok(v),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(Cancelled(e.to_string())),
    }
}

/// [`try_blocking`] where a cancelled task is a panic: for callers that
/// only run while the runtime does.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match try_blocking(f).await {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn no_group_from_a_missing_zero_init_own_or_out_of_range_pid() {
        let own = u32::try_from(nix::unistd::getpgrp().as_raw()).unwrap();
        for pid in [None, Some(0), Some(1), Some(own), Some(u32::MAX)] {
            assert_eq!(Pgid::of_leader(pid), None, "{pid:?}");
            assert!(!kill_group(pid), "{pid:?}");
        }
        let Some(pgid) = Pgid::of_leader(Some(4242)) else {
            panic!("a plain pid is a group")
        };
        assert_eq!(pgid.as_raw(), 4242);
    }

    #[tokio::test]
    async fn a_child_without_a_group_is_killed_through_its_handle() {
        // Were this a `killpg(0, …)`, the SIGTERM would end this test
        // process (its own group) instead of the child.
        let mut child = tokio::process::Command::new("sleep")
            .arg("600")
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        terminate(&mut child, None, Duration::from_millis(100)).await;
        let status = child.wait().await.unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    }

    #[tokio::test]
    async fn a_group_and_its_background_child_are_terminated() {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "sleep 600 & sleep 600"]).kill_on_drop(true);
        let mut child = new_group(&mut cmd).spawn().unwrap();
        let pgid = Pgid::of_leader(child.id()).expect("a new group");
        assert!(pgid.alive());
        assert!(!running_members(pgid.as_raw()).is_empty());
        terminate(&mut child, Some(pgid), Duration::from_millis(200)).await;
        let _ = child.wait().await.unwrap();
        // An orphaned member may stay a zombie until init reaps it (in a
        // container, maybe never): what counts is that none still runs.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !running_members(pgid.as_raw()).is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            running_members(pgid.as_raw()),
            Vec::<i32>::new(),
            "the background sleep outlived its group"
        );
    }

    #[tokio::test]
    async fn a_tree_is_stopped_with_the_groups_its_children_lead() {
        // A "worker" group whose child starts its own group (as a
        // supervised agent does): `setsid` makes `sleep` lead a new one.
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "setsid sleep 600 & wait"])
            .kill_on_drop(true);
        let mut child = new_group(&mut cmd).spawn().unwrap();
        let pid = child.id().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut below = descendant_groups(pid);
        while below.is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            below = descendant_groups(pid);
        }
        assert_eq!(below.len(), 1, "the setsid child's group is found");
        let agent = below[0];
        assert_ne!(agent.as_raw(), i32::try_from(pid).unwrap());
        terminate_tree(pid, Duration::from_millis(200)).await;
        let _ = child.wait().await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !running_members(agent.as_raw()).is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(running_members(agent.as_raw()), Vec::<i32>::new());
    }

    /// The processes of group `pgid` that have not ended (zombies left out).
    fn running_members(group: i32) -> Vec<i32> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(member) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // `pid (comm) state ppid pgrp …`: after the last `)`.
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.len() > 2 && fields[2] == group.to_string() && !matches!(fields[0], "Z" | "X")
            {
                found.push(member);
            }
        }
        found
    }

    #[test]
    fn a_logged_run_ends_or_runs_out_of_time_with_its_group() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("logs/setup.log");
        let sh = std::path::Path::new("sh");
        let end = run_to_log(
            sh,
            &["-c".into(), "echo out; echo err >&2; exit 3".into()],
            tmp.path(),
            &log,
            Duration::from_secs(10),
            None,
        )
        .unwrap();
        assert_eq!(end, LoggedEnd::Exited(Some(3)));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("out") && text.contains("err"), "{text}");
        let end = run_to_log(
            sh,
            &["-c".into(), "sleep 60 & sleep 60".into()],
            tmp.path(),
            &log,
            Duration::from_millis(200),
            None,
        )
        .unwrap();
        assert_eq!(end, LoggedEnd::TimedOut);
    }

    #[test]
    fn tails_keep_the_last_bytes() {
        let mut t = Tail::new(4);
        t.push(b"ab");
        assert!(!t.was_cut());
        t.push(b"cdef");
        assert_eq!(t.text(), "cdef");
        assert!(t.was_cut());
    }

    #[test]
    fn liveness() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
    }
}
