//! Confining what a child process tree may write, with Landlock (Linux
//! 5.13 on): the one place wavecrew builds a sandbox.
//!
//! [`spawn_confined`] prepares a Landlock ruleset (every write right the
//! kernel knows is handled: writing, truncating, creating, removing,
//! linking and renaming files and folders) with one rule per writable
//! hierarchy, restricts a fresh thread with it and starts the child from
//! that thread: the child and everything it starts inherit the
//! restriction, for good, and wavecrew's own threads stay free (no code
//! runs between `fork` and `exec`).
//! Reading and running programs stay allowed everywhere. Where the kernel
//! has Landlock's scopes (ABI 6, Linux 6.12 on), the tree is also scoped:
//! it can neither signal a process outside it (wavecrew, the user's other
//! programs) nor connect to an abstract unix socket made outside it.
//! A kernel without Landlock runs the child unconfined: [`support`] says
//! so beforehand (and whether the scopes are on), so a caller can tell its
//! user once.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

/// The newest Landlock ABI wavecrew knows; older kernels get what they
/// have of it.
const ABI_TARGET: ABI = ABI::V6;

/// What the running kernel offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Writes can be confined; `scoped`: signals and abstract unix sockets
    /// are kept inside the tree too.
    Enforced {
        /// Landlock's scopes (ABI 6) are on.
        scoped: bool,
    },
    /// Landlock is missing or disabled: nothing can be confined (why).
    Unavailable(String),
}

impl Support {
    /// What confined agents are kept from, in words that follow "agents
    /// are kept from", for the run's note.
    pub fn describe(&self) -> String {
        match self {
            Support::Enforced { scoped: true } => "writing outside their worktree, reading your \
                credentials, signalling processes outside their own tree and connecting to \
                abstract unix sockets made outside it (Landlock)"
                .to_owned(),
            Support::Enforced { scoped: false } => "writing outside their worktree and reading \
                your credentials (Landlock); signals and abstract unix sockets are not scoped on \
                this kernel (Landlock ABI 6, Linux 6.12, is needed)"
                .to_owned(),
            Support::Unavailable(why) => format!("nothing (Landlock: {why})"),
        }
    }
}

/// Why a sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel refused the ruleset or a rule.
    #[error("cannot prepare the Landlock sandbox: {0}")]
    Ruleset(String),
}

/// Whether this kernel can confine writes (a ruleset is made and dropped).
pub fn support() -> Support {
    match ruleset() {
        Ok(_) => Support::Enforced {
            scoped: scoped_ruleset().is_ok(),
        },
        Err(e) => Support::Unavailable(e.to_string()),
    }
}

/// The ruleset every confined tree gets: every write right the kernel
/// knows handled (writes of ABI 1 required), and the scopes when the
/// kernel has them.
fn ruleset() -> Result<RulesetCreated, SandboxError> {
    ruleset_handling(false)
}

/// [`ruleset`], handling reads too when `reads` (some paths are hidden).
fn ruleset_handling(reads: bool) -> Result<RulesetCreated, SandboxError> {
    let read = if reads {
        READS
    } else {
        landlock::BitFlags::EMPTY
    };
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI::V1) | read)
        .and_then(|r| {
            r.set_compatibility(CompatLevel::BestEffort)
                .handle_access(AccessFs::from_write(ABI_TARGET))
        })
        .and_then(|r| r.scope(Scope::from_all(ABI_TARGET)))
        .and_then(Ruleset::create)
        .map_err(|e| SandboxError::Ruleset(e.to_string()))?;
    Ok(created)
}

/// A ruleset that requires the scopes: made only where the kernel has
/// them (what [`support`] asks).
fn scoped_ruleset() -> Result<RulesetCreated, SandboxError> {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI::V1))
        .and_then(|r| r.scope(Scope::from_all(ABI_TARGET)))
        .and_then(Ruleset::create)
        .map_err(|e| SandboxError::Ruleset(e.to_string()))
}

/// The read rights handled when some paths are hidden.
const READS: landlock::BitFlags<AccessFs> =
    landlock::make_bitflags!(AccessFs::{ReadFile | ReadDir});

/// The rights a rule on `path` grants: every write right below a folder
/// (and `extra`); on a file, the rights a file can have.
fn rights_for(path: &Path, extra: landlock::BitFlags<AccessFs>) -> landlock::BitFlags<AccessFs> {
    let all = AccessFs::from_write(ABI_TARGET) | extra;
    if path.is_dir() {
        all
    } else {
        all & AccessFs::from_file(ABI_TARGET)
    }
}

/// What may be read when `hidden` may not: every entry of every folder
/// above a hidden path that neither is hidden nor leads to one (read
/// whole), and those folders themselves (their names listed, nothing
/// below read but through the entries granted). Hidden paths that do not
/// exist hide nothing.
pub fn readable_around(hidden: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let hidden: Vec<PathBuf> = hidden
        .iter()
        .filter(|p| p.is_absolute() && std::fs::symlink_metadata(p).is_ok())
        .flat_map(|p| {
            let real = std::fs::canonicalize(p).ok();
            std::iter::once(p.clone()).chain(real)
        })
        .collect();
    let mut above: Vec<PathBuf> = hidden
        .iter()
        .flat_map(|p| p.ancestors().skip(1).map(Path::to_owned))
        .collect();
    above.sort();
    above.dedup();
    let mut whole = Vec::new();
    for dir in &above {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if !hidden.contains(&path) && !above.contains(&path) {
                whole.push(path);
            }
        }
    }
    (whole, above)
}

/// Run `start` (which spawns a child) on a thread of its own that is
/// first confined to writing below `writable` (folders, or single files):
/// the child and everything it starts inherit the confinement for good,
/// while this process and its other threads stay free. Paths that do not
/// exist are left out (nothing can be written there). Returns what `start`
/// returned and the paths the rules were made for. On a kernel without
/// Landlock this fails before `start` runs: the caller decides whether to
/// run unconfined.
pub fn spawn_confined<T: Send>(
    writable: &[PathBuf],
    start: impl FnOnce() -> T + Send,
) -> Result<(T, Vec<PathBuf>), SandboxError> {
    spawn_confined_hiding(writable, &[], start)
}

/// [`spawn_confined`], and the tree may read nothing below `hidden`
/// (credential files and folders): everything else stays readable
/// ([`readable_around`]), what it may write too (so a hidden path below a
/// writable one is not hidden).
pub fn spawn_confined_hiding<T: Send>(
    writable: &[PathBuf],
    hidden: &[PathBuf],
    start: impl FnOnce() -> T + Send,
) -> Result<(T, Vec<PathBuf>), SandboxError> {
    let (created, granted) = rules(writable, hidden)?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // Landlock restricts the calling thread (and what it forks),
                // never the process's other threads.
                restrict(created)?;
                Ok(start())
            })
            .join()
            .unwrap_or_else(|_| Err(SandboxError::Ruleset("the spawning thread panicked".into())))
    })
    .map(|t| (t, granted))
}

/// Confine the calling thread (and what it starts, for good) as
/// [`spawn_confined_hiding`] confines its child: for a process that is
/// about to become the confined program (the agent's box,
/// [`crate::agent_box`]). Returns the paths the rules were made for.
pub fn confine_this_thread(
    writable: &[PathBuf],
    hidden: &[PathBuf],
) -> Result<Vec<PathBuf>, SandboxError> {
    let (created, granted) = rules(writable, hidden)?;
    restrict(created)?;
    Ok(granted)
}

/// The ruleset of a tree that may write below `writable` and read
/// nothing below `hidden`, and the paths its rules were made for.
fn rules(
    writable: &[PathBuf],
    hidden: &[PathBuf],
) -> Result<(RulesetCreated, Vec<PathBuf>), SandboxError> {
    // Reads are handled only when something there is to hide: a hidden
    // path that does not exist hides nothing.
    let (whole, above) = readable_around(hidden);
    let reads = !above.is_empty();
    let mut created = ruleset_handling(reads)?;
    let mut granted = Vec::new();
    let extra = if reads {
        READS
    } else {
        landlock::BitFlags::EMPTY
    };
    for path in writable {
        let Ok(fd) = PathFd::new(path) else {
            continue;
        };
        created = created
            .add_rule(PathBeneath::new(fd, rights_for(path, extra)))
            .map_err(|e| SandboxError::Ruleset(format!("{}: {e}", path.display())))?;
        granted.push(path.clone());
    }
    if reads {
        let rules = whole
            .iter()
            .map(|p| {
                (
                    p,
                    if p.is_dir() {
                        READS
                    } else {
                        READS & AccessFs::from_file(ABI_TARGET)
                    },
                )
            })
            .chain(
                above
                    .iter()
                    .map(|p| (p, landlock::make_bitflags!(AccessFs::{ReadDir}))),
            );
        for (path, rights) in rules {
            let Ok(fd) = PathFd::new(path) else {
                continue;
            };
            created = created
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(|e| SandboxError::Ruleset(format!("{}: {e}", path.display())))?;
        }
    }
    Ok((created, granted))
}

/// Restrict the calling thread with `created`, or say why not.
fn restrict(created: RulesetCreated) -> Result<(), SandboxError> {
    let status = created
        .restrict_self()
        .map_err(|e| SandboxError::Ruleset(e.to_string()))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Ruleset("Landlock is not enforced".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A confined shell writes where it may and nowhere else, and what it
    /// starts is confined too; reading stays allowed.
    #[tokio::test]
    async fn a_confined_process_tree_writes_only_where_it_may() {
        assert!(
            matches!(support(), Support::Enforced { .. }),
            "this machine has Landlock"
        );
        let tmp = tempfile::tempdir().unwrap();
        let allowed = tmp.path().join("allowed");
        let denied = tmp.path().join("denied");
        std::fs::create_dir_all(&allowed).unwrap();
        std::fs::create_dir_all(&denied).unwrap();
        std::fs::write(denied.join("read-me"), "readable\n").unwrap();
        let script = "cat denied/read-me > allowed/copy; echo x > denied/new; \
                      sh -c 'echo y > denied/grandchild'; rm -f denied/read-me; \
                      echo z > allowed/ok";
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", script]).current_dir(tmp.path());
        let handle = tokio::runtime::Handle::current();
        let (child, granted) =
            spawn_confined(&[allowed.clone(), tmp.path().join("missing")], || {
                let _entered = handle.enter();
                cmd.spawn()
            })
            .unwrap();
        assert_eq!(granted, std::slice::from_ref(&allowed));
        child.unwrap().wait().await.unwrap();
        assert_eq!(
            std::fs::read_to_string(allowed.join("copy")).unwrap(),
            "readable\n"
        );
        assert_eq!(std::fs::read_to_string(allowed.join("ok")).unwrap(), "z\n");
        assert!(!denied.join("new").exists());
        assert!(!denied.join("grandchild").exists());
        assert!(denied.join("read-me").exists(), "nor can it remove");
        // The parent is not confined.
        std::fs::write(denied.join("by-the-parent"), "").unwrap();
    }

    /// A hidden file and folder cannot be read, even by a program started
    /// from the tree; everything beside them can, and a hidden path that
    /// does not exist hides nothing.
    #[tokio::test]
    async fn hidden_paths_cannot_be_read_and_the_rest_can() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        for d in [".ssh", ".config/gh", ".config/other"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        for (rel, text) in [
            (".ssh/id", "key"),
            (".config/gh/hosts.yml", "token"),
            (".config/other/x", "fine"),
            ("notes", "fine"),
        ] {
            std::fs::write(home.join(rel), text).unwrap();
        }
        let hidden = [
            home.join(".ssh"),
            home.join(".config/gh/hosts.yml"),
            home.join(".missing"),
        ];
        let script = "for f in .ssh/id .config/gh/hosts.yml .config/other/x notes; do \
                      if cat $f >/dev/null 2>&1; then echo read $f; else echo denied $f; fi; done";
        let outdir = tmp.path().join("out");
        std::fs::create_dir_all(&outdir).unwrap();
        let out = outdir.join("said");
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", script])
            .current_dir(&home)
            .stdout(std::fs::File::create(&out).unwrap());
        let handle = tokio::runtime::Handle::current();
        let writable = [PathBuf::from("/dev")];
        let (child, _) = spawn_confined_hiding(&writable, &hidden, || {
            let _entered = handle.enter();
            cmd.spawn()
        })
        .unwrap();
        child.unwrap().wait().await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "denied .ssh/id\ndenied .config/gh/hosts.yml\nread .config/other/x\nread notes\n"
        );
    }

    /// A confined tree can signal its own processes, but neither the
    /// process that started it nor another process of the user: the
    /// kernel answers `EPERM` (Landlock's scopes, ABI 6; this machine has
    /// them).
    #[tokio::test]
    async fn a_confined_tree_cannot_signal_outside_itself() {
        assert_eq!(
            support(),
            Support::Enforced { scoped: true },
            "this machine has Landlock ABI 6"
        );
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        // `kill -0` asks whether a signal may be sent to this test (a
        // failing test must not stop itself), SIGKILL at another process
        // of the user, then at one of its own.
        let script = format!(
            "kill -0 {me} 2>/dev/null && echo MAY-SIGNAL-PARENT; \
             kill -KILL {other} 2>/dev/null && echo KILLED-OTHER; \
             sleep 30 & kill -KILL $! && echo KILLED-OWN",
            me = std::process::id(),
            other = other.id()
        );
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", &script])
            .current_dir(tmp.path())
            .stdout(std::process::Stdio::piped());
        let handle = tokio::runtime::Handle::current();
        let (child, _) = spawn_confined(&[tmp.path().to_owned()], || {
            let _entered = handle.enter();
            cmd.spawn()
        })
        .unwrap();
        let out = child.unwrap().wait_with_output().await.unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(said.trim(), "KILLED-OWN", "{said}");
        assert!(
            other.try_wait().unwrap().is_none(),
            "the other process lives"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
