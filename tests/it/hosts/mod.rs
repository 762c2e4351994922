//! Simulated hosts for end-to-end tests: Linux namespaces joined by a bridge,
//! with a real `nats-server -js` on the hub. This module owns everything one
//! [`Hosts`] creates and removes all of it on drop (a failing test too), and
//! `Hosts::start` removes what earlier instances left when their test
//! process died (SIGKILL, abort). `state` holds what outlives a process (the
//! lock, the records, teardown); `tests` the harness's own tests.
//!
//! One instance `wc<pid>x<n>` (`<pid>` the creating process, `<n>` its
//! count in that process) is:
//! - network namespaces `wc<pid>x<n>-hub` and `wc<pid>x<n>-h1`.. (in
//!   `ip netns`); the hub holds the bridge `br0` at 10.a.b.1/24 and one port
//!   `v-hK` per host, whose veth peer is the host's `eth0` at 10.a.b.(K+1)/24.
//!   No interface ever lives in the root namespace, so interface names cannot
//!   collide; the /24 is one the machine does not use and no live instance
//!   holds;
//! - per host, a UTS namespace (hostname `hK`) and a mount namespace holding
//!   a tmpfs on the host's disk, both kept alive by bind mounts of their
//!   namespace files under `/run/wavecrew-hosts/<id>/ns`;
//! - `/run/wavecrew-hosts/<id>/owner` (creator pid and start time) and
//!   `subnet`, which tell later instances whether it is a leftover;
//! - temp folders `<id>-logs-*` (captured output) and `<id>-store-*` (the
//!   JetStream store).
//!
//! How a host is entered, without `unsafe` (the workspace forbids it, so no
//! `pre_exec`) and without a shell: [`Hosts::spawn`] runs `nsenter --net=…
//! --uts=… --mount=… --wdns=<cwd> -- <argv>` (nsenter execs without
//! forking, so the child's pid is the program's); [`Hosts::on_host`] and the
//! set-up use a fresh thread that unshares its filesystem attributes and
//! calls `setns` for the host's UTS, mount and network namespaces.
//!
//! Teardown (drop, or a dead instance's leftovers): SIGKILL the spawned
//! children, then every process whose network or UTS namespace is one of
//! the instance's (found through `/proc/*/ns`) until none is left, then
//! `ip netns delete` (the bridge and veths go with their namespaces), unmount
//! the namespace files, remove the folders.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, setns, unshare};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use state::{
    NsKey, choose_subnet, creator_pid, detach, kill_in, ns_key, remove_leftovers, start_time,
    state_lock, teardown,
};

mod state;
mod tests;

/// Where instances record themselves: owner, subnet, namespace files, disks.
const STATE_ROOT: &str = "/run/wavecrew-hosts";
/// Where `ip netns` keeps the files of named network namespaces.
const NETNS_DIR: &str = "/run/netns";
/// The port of the hub's nats-server.
const NATS_PORT: u16 = 4222;
/// The most hosts one instance holds (10.a.b.2 ..= 10.a.b.201).
const MAX_HOSTS: usize = 200;
/// Instances started by this process so far: the `<n>` of `wc<pid>x<n>`.
static INSTANCES: AtomicUsize = AtomicUsize::new(0);

/// A simulated network: a hub namespace with a Linux bridge and a real
/// `nats-server -js` listening on the hub's address, and N host namespaces,
/// each joined to the bridge by a veth pair. Dropping it kills every process
/// it started, then deletes the namespaces, veths and bridge — also when the
/// test panics.
pub(crate) struct Hosts {
    /// `wc<pid>x<n>`: the prefix of every name this instance creates.
    id: String,
    /// `/run/wavecrew-hosts/<id>`.
    dir: PathBuf,
    /// `[10, a, b]`: the instance's /24.
    subnet: [u8; 3],
    /// "h1".."hN".
    names: Vec<String>,
    /// The programs the harness runs.
    tools: Tools,
    /// The hub's nats-server, once started.
    server: Option<Child>,
    /// Every process spawned on a host, with its host's name.
    procs: Mutex<Vec<(String, Arc<Mutex<Child>>)>>,
    /// Processes spawned so far: numbers the log files.
    spawned: AtomicUsize,
    /// Captured stdout/stderr of the server and of every spawned process;
    /// shared with the [`HostProcess`]es so their output outlives the hosts.
    logs: Arc<tempfile::TempDir>,
    /// The JetStream store.
    store: tempfile::TempDir,
}

/// A process started on a host: its pid, wait/try_wait, kill, its captured
/// output (stdout/stderr to files in a folder the harness keeps, readable
/// after exit and after the [`Hosts`] is dropped, as long as this lives).
pub(crate) struct HostProcess {
    /// The program's pid (nsenter execs it in place).
    pid: u32,
    /// Shared with the [`Hosts`], which kills and reaps it.
    child: Arc<Mutex<Child>>,
    /// Where its stdout goes.
    stdout: PathBuf,
    /// Where its stderr goes.
    stderr: PathBuf,
    /// Keeps the log folder alive.
    _logs: Arc<tempfile::TempDir>,
}

/// The external programs the harness runs.
struct Tools {
    /// iproute2's `ip`.
    ip: PathBuf,
    /// util-linux's `nsenter`.
    nsenter: PathBuf,
    /// util-linux's `unshare`.
    unshare: PathBuf,
    /// `nats-server`.
    nats_server: PathBuf,
}

impl Tools {
    /// Finds every program or panics naming the missing one.
    fn find() -> Tools {
        Tools {
            ip: find_tool("ip", "apt-get install -y iproute2"),
            nsenter: find_tool("nsenter", "apt-get install -y util-linux"),
            unshare: find_tool("unshare", "apt-get install -y util-linux"),
            nats_server: find_tool(
                "nats-server",
                "`scripts/test.sh` installs it; Debian: apt-get install -y nats-server",
            ),
        }
    }
}

impl Hosts {
    /// Start a hub + `count` hosts named "h1".."hN" (1 ≤ `count` ≤ 200).
    /// Panics (test fails, never skips) when not root or when
    /// `ip`/`nsenter`/`unshare`/`nats-server` is missing.
    pub(crate) fn start(count: usize) -> Hosts {
        assert!(
            nix::unistd::geteuid().is_root(),
            "the hosts harness needs root (network namespaces, bridges, mounts)"
        );
        assert!(
            (1..=MAX_HOSTS).contains(&count),
            "Hosts::start({count}): between 1 and {MAX_HOSTS} hosts"
        );
        let tools = Tools::find();
        let pid = std::process::id();
        let id = format!("wc{pid}x{}", INSTANCES.fetch_add(1, Ordering::Relaxed));
        let logs = tempfile::Builder::new()
            .prefix(&format!("{id}-logs-"))
            .tempdir()
            .expect("a temp folder for the hosts' logs");
        let store = tempfile::Builder::new()
            .prefix(&format!("{id}-store-"))
            .tempdir()
            .expect("a temp folder for the JetStream store");
        let dir = Path::new(STATE_ROOT).join(&id);
        let subnet = {
            let lock = state_lock();
            remove_leftovers(&tools.ip);
            let subnet = choose_subnet(&tools.ip);
            fs::create_dir(&dir)
                .unwrap_or_else(|e| panic!("create the instance folder {}: {e}", dir.display()));
            let started = start_time(pid).expect("this process's start time in /proc/self/stat");
            fs::write(dir.join("owner"), format!("{pid} {started}\n"))
                .and_then(|()| {
                    let [a, b, c] = subnet;
                    fs::write(dir.join("subnet"), format!("{a}.{b}.{c}\n"))
                })
                .unwrap_or_else(|e| panic!("write the instance records in {}: {e}", dir.display()));
            drop(lock);
            subnet
        };
        // From here on a panic drops `hosts`, which removes what exists.
        let mut hosts = Hosts {
            id,
            dir,
            subnet,
            names: (1..=count).map(|k| format!("h{k}")).collect(),
            tools,
            server: None,
            procs: Mutex::new(Vec::new()),
            spawned: AtomicUsize::new(0),
            logs: Arc::new(logs),
            store,
        };
        hosts.build_network();
        for host in hosts.names.clone() {
            hosts.build_host(&host);
        }
        hosts.start_server();
        hosts
    }

    /// `nats://<hub ip>:<port>` as seen from inside the hosts.
    pub(crate) fn url(&self) -> String {
        format!("nats://{}", self.server_addr())
    }

    /// The host names, "h1".. in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The address of `host` on the bridge (10.a.b.(K+1) for "hK").
    pub(crate) fn ip(&self, host: &str) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        let k = u8::try_from(self.index(host) + 2).expect("at most 200 hosts");
        Ipv4Addr::new(a, b, c, k)
    }

    /// A private folder of that host: a tmpfs mounted inside the host's own
    /// mount namespace. Seen from the root namespace it is an empty folder;
    /// read and write it from [`Hosts::on_host`] or a process spawned on the
    /// host. Commands spawned on the host use it as their cwd and HOME unless
    /// the Command says otherwise. It survives [`Hosts::kill_host`], as a
    /// disk survives a crash.
    pub(crate) fn disk(&self, host: &str) -> PathBuf {
        self.index(host);
        self.dir.join("disk").join(host)
    }

    /// Spawn `command` on `host`: inside the host's network, UTS (hostname =
    /// `host`) and mount namespaces, through `nsenter` as argv (no shell).
    /// The namespaces are the host's own, created by `start` and shared by
    /// every process on that host, as on a real machine. Taken from
    /// `command`: program, arguments, environment changes (`env_clear` is
    /// not visible and is lost), current dir (relative: to the disk); stdin
    /// is null, stdout and stderr go to files of the harness. The child is
    /// tracked: killed on drop and by [`Hosts::kill_host`]. A bare program
    /// name not on `PATH` is an `Err(NotFound)`, as with `Command::spawn`.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "the contract: callers hand their Command over, like Command::spawn would"
    )]
    pub(crate) fn spawn(&self, host: &str, command: Command) -> io::Result<HostProcess> {
        let disk = self.disk(host);
        let program = command.get_program();
        let path_override = command
            .get_envs()
            .find(|(k, _)| *k == "PATH")
            .map(|(_, v)| v.map(OsStr::to_os_string));
        if !program.as_encoded_bytes().contains(&b'/') {
            let path = path_override.unwrap_or_else(|| std::env::var_os("PATH"));
            let found = path.is_some_and(|path| {
                std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
            });
            if !found {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("`{}` is not on PATH", program.to_string_lossy()),
                ));
            }
        }
        let cwd = match command.get_current_dir() {
            Some(dir) if dir.is_absolute() => dir.to_path_buf(),
            Some(dir) => disk.join(dir),
            None => disk.clone(),
        };
        let seq = self.spawned.fetch_add(1, Ordering::Relaxed);
        let name = Path::new(program).file_name().map_or_else(
            || "process".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        let stdout = self.logs.path().join(format!("{host}-{seq}-{name}.stdout"));
        let stderr = self.logs.path().join(format!("{host}-{seq}-{name}.stderr"));
        let mut cmd = Command::new(&self.tools.nsenter);
        cmd.arg(flag("--net=", &self.netns_path(&self.host_ns(host))))
            .arg(flag("--uts=", &self.ns_file(host, "uts")))
            .arg(flag("--mount=", &self.ns_file(host, "mnt")))
            .arg(flag("--wdns=", &cwd))
            .arg("--")
            .arg(program)
            .args(command.get_args());
        let mut home = true;
        for (key, value) in command.get_envs() {
            home &= key != "HOME";
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        if home {
            cmd.env("HOME", &disk);
        }
        cmd.stdin(Stdio::null())
            .stdout(File::create(&stdout)?)
            .stderr(File::create(&stderr)?);
        let child = cmd.spawn()?;
        let pid = child.id();
        let child = Arc::new(Mutex::new(child));
        lock(&self.procs).push((host.to_owned(), Arc::clone(&child)));
        Ok(HostProcess {
            pid,
            child,
            stdout,
            stderr,
            _logs: Arc::clone(&self.logs),
        })
    }

    /// SIGKILL every process started on `host` (the host "dies"): the
    /// spawned children and everything else in the host's namespaces; the
    /// spawned children are reaped before this returns. The host's
    /// namespaces and disk stay: processes can be spawned on it again.
    pub(crate) fn kill_host(&self, host: &str) {
        let children: Vec<Arc<Mutex<Child>>> = lock(&self.procs)
            .iter()
            .filter(|(h, _)| h == host)
            .map(|(_, child)| Arc::clone(child))
            .collect();
        // The children first: one that nsenter has not moved into the host
        // yet would escape the scan below.
        for child in &children {
            let _ = lock(child).kill();
        }
        let keys: HashSet<NsKey> = [
            self.netns_path(&self.host_ns(host)),
            self.ns_file(host, "uts"),
        ]
        .iter()
        .filter_map(|path| ns_key(path))
        .collect();
        kill_in(&keys).unwrap_or_else(|e| panic!("kill_host({host}): {e}"));
        for child in &children {
            lock(child)
                .wait()
                .unwrap_or_else(|e| panic!("kill_host({host}): reap a child: {e}"));
        }
    }

    /// Cut `host` off the network: its bridge port on the hub goes down, so
    /// the host's `eth0` loses its carrier and nothing passes either way.
    pub(crate) fn partition(&self, host: &str) {
        let hub = self.hub_ns();
        let port = port_name(host);
        self.index(host);
        run(&self.tools.ip, &["-n", &hub, "link", "set", &port, "down"]);
    }

    /// Restore `host`'s link; returns once its `eth0` has a carrier again and
    /// its bridge port forwards. The neighbour (ARP) entries between the host
    /// and the rest are flushed on both sides: a lookup that failed during
    /// the partition would otherwise hold new connections until the kernel's
    /// next ARP retry (up to a second). Connections open across the partition
    /// recover at their own TCP retransmission pace, as on a real network.
    pub(crate) fn heal(&self, host: &str) {
        let hub = self.hub_ns();
        let ns = self.host_ns(host);
        let port = port_name(host);
        self.index(host);
        run(&self.tools.ip, &["-n", &hub, "link", "set", &port, "up"]);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let eth0 = run(
                &self.tools.ip,
                &["-n", &ns, "-o", "link", "show", "dev", "eth0"],
            );
            let bridge = run(
                &self.tools.ip,
                &["-n", &hub, "-o", "-d", "link", "show", "dev", &port],
            );
            if eth0.contains("LOWER_UP") && bridge.contains("bridge_slave state forwarding") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "heal({host}): the link is not back within 5 s:\n{eth0}\n{bridge}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        run(
            &self.tools.ip,
            &["-n", &ns, "neigh", "flush", "dev", "eth0"],
        );
        let address = self.ip(host).to_string();
        run(
            &self.tools.ip,
            &["-n", &hub, "neigh", "flush", "to", &address, "dev", "br0"],
        );
    }

    /// Run `f` on a thread that has joined `host`'s network, UTS and mount
    /// namespaces (setns affects only the calling thread), with the host's
    /// disk as its cwd: for connecting to the server from test code as that
    /// host would, or for reading and writing the host's disk. Threads `f`
    /// starts inherit the namespaces; a runtime built outside does not (build
    /// one inside `f`). A panic in `f` is resumed here.
    pub(crate) fn on_host<T: Send>(&self, host: &str, f: impl FnOnce() -> T + Send) -> T {
        let net = self.netns_path(&self.host_ns(host));
        let uts = self.ns_file(host, "uts");
        let mnt = self.ns_file(host, "mnt");
        let disk = self.disk(host);
        on_namespaces(&net, Some((&uts, &mnt, &disk)), f)
    }

    /// Run `f` on a thread that has joined the hub's network namespace (the
    /// server's side of the bridge).
    pub(crate) fn on_hub<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        on_namespaces(&self.netns_path(&self.hub_ns()), None, f)
    }

    /// The server's address on the bridge.
    fn server_addr(&self) -> SocketAddr {
        let [a, b, c] = self.subnet;
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(a, b, c, 1), NATS_PORT))
    }

    /// The position of `host` in [`Hosts::names`]; panics for a stranger.
    fn index(&self, host: &str) -> usize {
        self.names
            .iter()
            .position(|h| h == host)
            .unwrap_or_else(|| panic!("no host {host:?} here (hosts: {:?})", self.names))
    }

    /// The hub's network namespace name.
    fn hub_ns(&self) -> String {
        format!("{}-hub", self.id)
    }

    /// A host's network namespace name.
    fn host_ns(&self, host: &str) -> String {
        self.index(host);
        format!("{}-{host}", self.id)
    }

    /// The file of a named network namespace.
    fn netns_path(&self, ns: &str) -> PathBuf {
        debug_assert!(ns.starts_with(&self.id));
        Path::new(NETNS_DIR).join(ns)
    }

    /// The file that keeps a host's `uts` or `mnt` namespace.
    fn ns_file(&self, host: &str, kind: &str) -> PathBuf {
        self.dir.join("ns").join(format!("{host}.{kind}"))
    }

    /// The hub: its namespace, the bridge with the hub's address, and the
    /// private mount that will hold the hosts' namespace files.
    fn build_network(&self) {
        let ns_dir = self.dir.join("ns");
        fs::create_dir(&ns_dir).unwrap_or_else(|e| panic!("create {}: {e}", ns_dir.display()));
        // `unshare --mount=<file>` needs the file on a private mount.
        mount(
            Some(&ns_dir),
            &ns_dir,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .unwrap_or_else(|e| panic!("mount --bind {0} {0}: {e}", ns_dir.display()));
        mount(
            None::<&str>,
            &ns_dir,
            None::<&str>,
            MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .unwrap_or_else(|e| panic!("mount --make-private {}: {e}", ns_dir.display()));
        let ip = &self.tools.ip;
        let hub = self.hub_ns();
        let [a, b, c] = self.subnet;
        run(ip, &["netns", "add", &hub]);
        run(ip, &["-n", &hub, "link", "set", "lo", "up"]);
        run(
            ip,
            &[
                "-n",
                &hub,
                "link",
                "add",
                "br0",
                "type",
                "bridge",
                "forward_delay",
                "0",
            ],
        );
        run(
            ip,
            &[
                "-n",
                &hub,
                "addr",
                "add",
                &format!("{a}.{b}.{c}.1/24"),
                "dev",
                "br0",
            ],
        );
        run(ip, &["-n", &hub, "link", "set", "br0", "up"]);
    }

    /// One host: its network namespace on the bridge, its UTS and mount
    /// namespaces, its hostname and disk.
    fn build_host(&self, host: &str) {
        let ip = &self.tools.ip;
        let hub = self.hub_ns();
        let ns = self.host_ns(host);
        let port = port_name(host);
        run(ip, &["netns", "add", &ns]);
        run(ip, &["-n", &ns, "link", "set", "lo", "up"]);
        run(
            ip,
            &[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ],
        );
        run(
            ip,
            &["-n", &hub, "link", "set", &port, "master", "br0", "up"],
        );
        let address = format!("{}/24", self.ip(host));
        run(ip, &["-n", &ns, "addr", "add", &address, "dev", "eth0"]);
        run(ip, &["-n", &ns, "link", "set", "eth0", "up"]);

        let uts = self.ns_file(host, "uts");
        let mnt = self.ns_file(host, "mnt");
        for file in [&uts, &mnt] {
            File::create(file).unwrap_or_else(|e| panic!("create {}: {e}", file.display()));
        }
        // Two new namespaces, kept by bind mounts on the files; `true` is all
        // that runs in them now.
        run(
            &self.tools.unshare,
            &[
                flag("--uts=", &uts),
                flag("--mount=", &mnt),
                "--propagation".into(),
                "private".into(),
                "true".into(),
            ],
        );
        let disk = self.disk(host);
        fs::create_dir_all(&disk).unwrap_or_else(|e| panic!("create {}: {e}", disk.display()));
        let source = format!("{}-{host}", self.id);
        on_namespaces(
            &self.netns_path(&ns),
            Some((&uts, &mnt, Path::new("/"))),
            || {
                nix::unistd::sethostname(host)
                    .unwrap_or_else(|e| panic!("sethostname {host}: {e}"));
                // The new mount namespace copied the bind mounts of every
                // namespace file there was (other hosts', other instances'):
                // detach them, or they would keep those namespaces alive as long
                // as this one lives.
                let mut copies = vec![PathBuf::from(NETNS_DIR)];
                if let Ok(entries) = fs::read_dir(STATE_ROOT) {
                    copies.extend(
                        entries
                            .flatten()
                            .filter(|e| e.file_name().to_str().and_then(creator_pid).is_some())
                            .map(|e| e.path().join("ns")),
                    );
                }
                for copy in copies {
                    detach(&copy).unwrap_or_else(|e| panic!("on {host}: {e}"));
                }
                mount(
                    Some(source.as_str()),
                    &disk,
                    Some("tmpfs"),
                    MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                    Some("size=1g,mode=0755"),
                )
                .unwrap_or_else(|e| panic!("on {host}: mount a tmpfs on {}: {e}", disk.display()));
            },
        );
    }

    /// `ip netns exec <hub> nats-server -js -a <hub ip> -p 4222 -sd <store>`,
    /// then wait until a host reads its greeting.
    fn start_server(&mut self) {
        let log = |name: &str| {
            let path = self.logs.path().join(name);
            File::create(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()))
        };
        let addr = self.server_addr();
        let child = Command::new(&self.tools.ip)
            .args(["netns", "exec", &self.hub_ns()])
            .arg(&self.tools.nats_server)
            .args([
                "-js",
                "-a",
                &addr.ip().to_string(),
                "-p",
                &NATS_PORT.to_string(),
                "-sd",
            ])
            .arg(self.store.path())
            .stdin(Stdio::null())
            .stdout(log("nats-server.stdout"))
            .stderr(log("nats-server.stderr"))
            .spawn()
            .unwrap_or_else(|e| panic!("ip netns exec {} nats-server: {e}", self.hub_ns()));
        self.server = Some(child);
        let first = self.names[0].clone();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self
                .server
                .as_mut()
                .and_then(|s| s.try_wait().ok().flatten())
            {
                let stderr = fs::read_to_string(self.logs.path().join("nats-server.stderr"));
                panic!(
                    "nats-server exited before accepting connections ({status}): {}",
                    stderr.unwrap_or_default()
                );
            }
            let greeting = self.on_host(&first, || nats_greeting(addr, Duration::from_millis(500)));
            if greeting.is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not greet {first} on {addr} within 10 s: {greeting:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let children = std::mem::take(&mut *lock(&self.procs));
        for (_, child) in &children {
            let _ = lock(child).kill();
        }
        if let Some(server) = &mut self.server {
            let _ = server.kill();
        }
        let mut errors = teardown(&self.tools.ip, &self.id, &self.dir);
        for (host, child) in &children {
            if let Err(e) = lock(child).wait() {
                errors.push(format!("reap a process of {host}: {e}"));
            }
        }
        if let Some(server) = &mut self.server
            && let Err(e) = server.wait()
        {
            errors.push(format!("reap nats-server: {e}"));
        }
        if !errors.is_empty() {
            let message = format!("Hosts {}: cleanup failed:\n{}", self.id, errors.join("\n"));
            if std::thread::panicking() {
                eprintln!("{message}");
            } else {
                panic!("{message}");
            }
        }
    }
}

impl HostProcess {
    /// The program's pid.
    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    /// Its exit status if it has exited (and reaps it).
    pub(crate) fn try_wait(&self) -> io::Result<Option<ExitStatus>> {
        lock(&self.child).try_wait()
    }

    /// Wait for it to exit.
    pub(crate) fn wait(&self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait at most `timeout` for it to exit: `None` if it still runs.
    pub(crate) fn wait_timeout(&self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL it (a no-op once it has exited).
    pub(crate) fn kill(&self) -> io::Result<()> {
        lock(&self.child).kill()
    }

    /// Send it `signal` (a no-op once it has been reaped: the pid may be
    /// someone else's by then).
    pub(crate) fn signal(&self, signal: Signal) -> io::Result<()> {
        let mut child = lock(&self.child);
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        let pid = i32::try_from(self.pid).expect("a pid fits in i32");
        kill(Pid::from_raw(pid), signal).map_err(io::Error::from)
    }

    /// Its stdout so far.
    pub(crate) fn stdout(&self) -> String {
        read_log(&self.stdout)
    }

    /// Its stderr so far.
    pub(crate) fn stderr(&self) -> String {
        read_log(&self.stderr)
    }

    /// The file its stdout goes to.
    pub(crate) fn stdout_path(&self) -> &Path {
        &self.stdout
    }

    /// The file its stderr goes to.
    pub(crate) fn stderr_path(&self) -> &Path {
        &self.stderr
    }
}

/// A log file's text (lossy); panics naming the file when it cannot be read.
fn read_log(path: &Path) -> String {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The hub's bridge port for `host`.
fn port_name(host: &str) -> String {
    format!("v-{host}")
}

/// `--name=<path>` as one argument.
fn flag(name: &str, path: &Path) -> OsString {
    let mut flag = OsString::from(name);
    flag.push(path);
    flag
}

/// Locks `mutex`, also after a panic elsewhere poisoned it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `name` on PATH, or in /usr/sbin, /sbin (Debian's nats-server lives in
/// /usr/sbin); panics with `hint` when it is nowhere.
fn find_tool(name: &str, hint: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("`{name}` is not on PATH nor in /usr/sbin: the hosts harness needs it ({hint})")
        })
}

/// Runs `program args…` to completion: its stdout, or an error naming the
/// command, its status and its stderr.
fn try_run<S: AsRef<OsStr>>(program: &Path, args: &[S]) -> Result<String, String> {
    let shown = || {
        std::iter::once(program.display().to_string())
            .chain(
                args.iter()
                    .map(|a| a.as_ref().to_string_lossy().into_owned()),
            )
            .collect::<Vec<_>>()
            .join(" ")
    };
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`{}` could not start: {e}", shown()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            shown(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// [`try_run`], panicking on failure.
fn run<S: AsRef<OsStr>>(program: &Path, args: &[S]) -> String {
    try_run(program, args).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `f` on a new thread that has joined the network namespace in the
/// file `net` and, for a host, its UTS and mount namespaces (`host`: the
/// files, then the thread's cwd inside). A panic in `f` is resumed here.
fn on_namespaces<T: Send>(
    net: &Path,
    host: Option<(&Path, &Path, &Path)>,
    f: impl FnOnce() -> T + Send,
) -> T {
    let open = |path: &Path| {
        File::open(path)
            .unwrap_or_else(|e| panic!("open the namespace file {}: {e}", path.display()))
    };
    // Opened here: after setns(CLONE_NEWNS) paths resolve in the host.
    let net_fd = open(net);
    let host = host.map(|(uts, mnt, cwd)| (open(uts), open(mnt), cwd.to_path_buf()));
    let net = net.display().to_string();
    std::thread::scope(|scope| {
        let thread = scope.spawn(move || {
            if let Some((uts, mnt, cwd)) = host {
                // A mount namespace belongs to the thread's filesystem
                // attributes, which threads share: setns(CLONE_NEWNS)
                // refuses shared ones, so take a private copy first. The
                // process's other threads keep theirs.
                unshare(CloneFlags::CLONE_FS).unwrap_or_else(|e| panic!("unshare(CLONE_FS): {e}"));
                setns(&uts, CloneFlags::CLONE_NEWUTS)
                    .unwrap_or_else(|e| panic!("setns to the UTS namespace of {net}: {e}"));
                setns(&mnt, CloneFlags::CLONE_NEWNS)
                    .unwrap_or_else(|e| panic!("setns to the mount namespace of {net}: {e}"));
                std::env::set_current_dir(&cwd)
                    .unwrap_or_else(|e| panic!("cd {} on {net}: {e}", cwd.display()));
            }
            setns(&net_fd, CloneFlags::CLONE_NEWNET)
                .unwrap_or_else(|e| panic!("setns to the network namespace {net}: {e}"));
            f()
        });
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Connects to `addr` and reads the first line, which must be NATS's
/// `INFO {…}` greeting.
fn nats_greeting(addr: SocketAddr, timeout: Duration) -> io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    let mut line = Vec::new();
    let mut chunk = [0_u8; 1024];
    while !line.ends_with(b"\r\n") && line.len() < 64 * 1024 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        line.extend_from_slice(&chunk[..n]);
    }
    let line = String::from_utf8_lossy(&line).into_owned();
    if line.starts_with("INFO {") {
        Ok(line)
    } else {
        Err(io::Error::other(format!("not a NATS greeting: {line:?}")))
    }
}
