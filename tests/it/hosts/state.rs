//! What outlives one test process: the harness-wide lock, the instances'
//! records, the choice of a subnet, finding and killing the processes in a
//! namespace, and tearing an instance down (at drop, or as a leftover of a
//! dead process).

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::mount::{MntFlags, umount2};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::{NETNS_DIR, STATE_ROOT, run, try_run};

/// Lazily unmounts `path` (with everything under it) if it is a mount point.
pub(super) fn detach(path: &Path) -> Result<(), String> {
    match umount2(path, MntFlags::MNT_DETACH) {
        Ok(()) | Err(Errno::EINVAL | Errno::ENOENT) => Ok(()),
        Err(e) => Err(format!("umount -l {}: {e}", path.display())),
    }
}

/// Device and inode of a namespace (what `stat` of its file or of
/// `/proc/<pid>/ns/<kind>` reports).
pub(super) type NsKey = (u64, u64);

/// The namespace behind `path`, if it exists.
pub(super) fn ns_key(path: &Path) -> Option<NsKey> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The pids (other than this process) whose network or UTS namespace is
/// one of `keys`.
pub(super) fn pids_in(keys: &HashSet<NsKey>) -> Vec<i32> {
    let me = std::process::id();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            ["net", "uts"].iter().any(|kind| {
                ns_key(
                    &Path::new("/proc")
                        .join(pid.to_string())
                        .join("ns")
                        .join(kind),
                )
                .is_some_and(|key| keys.contains(&key))
            })
        })
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}

/// SIGKILLs every process in the namespaces `keys` until none is left (a
/// dead process leaves its namespaces at once, before it is reaped).
pub(super) fn kill_in(keys: &HashSet<NsKey>) -> Result<(), String> {
    if keys.is_empty() {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pids = pids_in(keys);
        if pids.is_empty() {
            return Ok(());
        }
        for &pid in &pids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if Instant::now() > deadline {
            return Err(format!("processes {pids:?} survive SIGKILL for 5 s"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes everything of instance `id` (folder `dir`): kills its processes,
/// deletes its network namespaces (with the bridge and veths in them),
/// unmounts its namespace files, removes its folder. Idempotent; the
/// errors it met.
pub(super) fn teardown(ip: &Path, id: &str, dir: &Path) -> Vec<String> {
    let mut errors = Vec::new();
    let prefix = format!("{id}-");
    let netns: Vec<String> = fs::read_dir(NETNS_DIR)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    let ns_dir = dir.join("ns");
    let ns_files: Vec<PathBuf> = fs::read_dir(&ns_dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let keys: HashSet<NsKey> = netns
        .iter()
        .map(|name| Path::new(NETNS_DIR).join(name))
        .chain(ns_files.iter().cloned())
        .filter_map(|path| ns_key(&path))
        .collect();
    if let Err(e) = kill_in(&keys) {
        errors.push(e);
    }
    for name in &netns {
        if let Err(e) = try_run(ip, &["netns", "delete", name])
            && Path::new(NETNS_DIR).join(name).exists()
        {
            errors.push(e);
        }
    }
    for file in ns_files.iter().chain([&ns_dir]) {
        if let Err(e) = detach(file) {
            errors.push(e);
        }
    }
    if errors.is_empty()
        && let Err(e) = fs::remove_dir_all(dir)
        && e.kind() != io::ErrorKind::NotFound
    {
        errors.push(format!("remove {}: {e}", dir.display()));
    }
    errors
}

/// The harness-wide lock (`/run/wavecrew-hosts/lock`), held while an
/// instance removes leftovers, picks its subnet and records itself.
pub(super) fn state_lock() -> File {
    fs::create_dir_all(STATE_ROOT).unwrap_or_else(|e| panic!("create {STATE_ROOT}: {e}"));
    let path = Path::new(STATE_ROOT).join("lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
    file
}

/// The creating pid of an instance id `wc<pid>x<n>`; `None` for any other
/// name (never ours to touch).
pub(super) fn creator_pid(id: &str) -> Option<u32> {
    let (pid, n) = id.strip_prefix("wc")?.split_once('x')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

/// The start time of `pid` (field 22 of `/proc/<pid>/stat`), `None` when
/// there is no such process.
pub(super) fn start_time(pid: u32) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = stat.rsplit_once(')')?;
    fields.split_whitespace().nth(19).map(str::to_owned)
}

/// Whether the process that created instance `id` (folder `dir`) still
/// runs: its pid exists with the start time its `owner` file records. A
/// live pid without a readable `owner` counts as alive.
pub(super) fn creator_alive(id: &str, dir: &Path) -> bool {
    let Some(pid) = creator_pid(id) else {
        return true;
    };
    let Some(started) = start_time(pid) else {
        return false;
    };
    match fs::read_to_string(dir.join("owner")) {
        Ok(owner) => {
            let mut fields = owner.split_whitespace();
            fields.next() == Some(pid.to_string().as_str())
                && fields.next() == Some(started.as_str())
        }
        Err(_) => true,
    }
}

/// Removes the instances whose creator is dead: their folders under
/// `/run/wavecrew-hosts`, network namespaces `wc<pid>x<n>-*` (with their
/// processes) and temp folders `wc<pid>x<n>-logs-*`, `-store-*`. Call with
/// the lock.
pub(super) fn remove_leftovers(ip: &Path) {
    let root = Path::new(STATE_ROOT);
    let names = |dir: &Path| -> Vec<String> {
        fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let dead_id = |id: &str| creator_pid(id).is_some() && !creator_alive(id, &root.join(id));
    let mut dead: HashSet<String> = HashSet::new();
    for id in names(root) {
        if dead_id(&id) {
            dead.insert(id);
        }
    }
    for ns in names(Path::new(NETNS_DIR)) {
        if let Some((id, _)) = ns.split_once('-')
            && dead_id(id)
        {
            dead.insert(id.to_owned());
        }
    }
    let mut errors: Vec<String> = dead
        .iter()
        .flat_map(|id| teardown(ip, id, &root.join(id)))
        .collect();
    // The temp folders (`<id>-logs-*`, `<id>-store-*`) a killed process
    // could not remove.
    let tmp = std::env::temp_dir();
    for name in names(&tmp) {
        if let Some((id, rest)) = name.split_once('-')
            && (rest.starts_with("logs-") || rest.starts_with("store-"))
            && dead_id(id)
            && let Err(e) = fs::remove_dir_all(tmp.join(&name))
            && e.kind() != io::ErrorKind::NotFound
        {
            errors.push(format!("remove {}: {e}", tmp.join(&name).display()));
        }
    }
    assert!(
        errors.is_empty(),
        "removing the leftovers of dead instances {dead:?} failed:\n{}",
        errors.join("\n")
    );
}

/// The IPv4 networks in use: the machine's addresses and routes (in the
/// root namespace) and the subnets of live instances.
pub(super) fn used_networks(ip: &Path) -> Vec<(u32, u8)> {
    let parse = |text: &str| -> Option<(u32, u8)> {
        let (addr, prefix) = text.split_once('/').unwrap_or((text, "32"));
        Some((
            u32::from(addr.parse::<Ipv4Addr>().ok()?),
            prefix.parse().ok()?,
        ))
    };
    let mut used = Vec::new();
    for line in run(ip, &["-o", "-4", "addr", "show"]).lines() {
        let mut words = line.split_whitespace();
        if words.any(|w| w == "inet") {
            used.extend(words.next().and_then(parse));
        }
    }
    for line in run(ip, &["-4", "route", "show", "table", "all"]).lines() {
        // `[type] <dest> …`: the first word that parses.
        used.extend(line.split_whitespace().take(2).find_map(parse));
    }
    if let Ok(entries) = fs::read_dir(STATE_ROOT) {
        for entry in entries.flatten() {
            if let Ok(subnet) = fs::read_to_string(entry.path().join("subnet")) {
                used.extend(parse(&format!("{}.0/24", subnet.trim())));
            }
        }
    }
    used
}

/// A /24 in 10.100.0.0–10.254.255.0 that overlaps nothing in use, chosen
/// from a start that depends on the pid. Call with the lock.
pub(super) fn choose_subnet(ip: &Path) -> [u8; 3] {
    let used = used_networks(ip);
    let overlaps = |net: u32, (other, prefix): (u32, u8)| {
        let prefix = prefix.min(24);
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        net & mask == other & mask
    };
    let count = 155 * 256;
    let start = std::process::id() as usize * 7919 % count;
    (0..count)
        .map(|k| (start + k) % count)
        .map(|i| {
            let a = u8::try_from(100 + i / 256).expect("a ≤ 254");
            let b = u8::try_from(i % 256).expect("b ≤ 255");
            [10, a, b]
        })
        .find(|&[x, a, b]| {
            let net = u32::from(Ipv4Addr::new(x, a, b, 0));
            !used.iter().any(|&u| overlaps(net, u))
        })
        .expect("a free /24 in 10.100.0.0/16–10.254.0.0/16")
}
