//! The harness's own tests: hostnames, disks, the server's greeting,
//! partitions, kill_host, cleanup at drop and of what a killed test process
//! left.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::state::{NsKey, ns_key, pids_in, state_lock};
use super::{Hosts, NETNS_DIR, STATE_ROOT, find_tool, nats_greeting, run};

/// `argv` as a Command.
fn argv(argv: &[&str]) -> Command {
    let mut command = Command::new(argv[0]);
    command.args(&argv[1..]);
    command
}

#[test]
fn each_host_has_its_own_hostname_and_disk_and_reaches_the_server() {
    let hosts = Hosts::start(3);
    assert_eq!(hosts.names(), ["h1", "h2", "h3"]);
    let server = hosts.server_addr();
    assert_eq!(hosts.url(), format!("nats://{server}"));
    for host in hosts.names() {
        let hostname = hosts
            .spawn(&host, argv(&["hostname"]))
            .expect("hostname starts");
        let status = hostname.wait().expect("hostname exits");
        assert!(
            status.success(),
            "hostname on {host}: {status}: {}",
            hostname.stderr()
        );
        assert_eq!(hostname.stdout().trim(), host);
        assert_eq!(hostname.stderr(), "");
        assert!(hostname.stdout_path().starts_with(hosts.logs.path()));
        assert!(hostname.stderr_path().starts_with(hosts.logs.path()));

        let greeting = hosts
            .on_host(&host, || nats_greeting(server, Duration::from_secs(2)))
            .unwrap_or_else(|e| panic!("{host} reads the server's greeting: {e}"));
        assert!(greeting.contains("\"jetstream\":true"), "{greeting}");

        // cwd and HOME are the disk, where the host's own file is.
        let disk = hosts.disk(&host);
        hosts.on_host(&host, || {
            fs::write("whoami", &host).expect("write to the disk from on_host");
        });
        for (command, expected) in [
            (argv(&["pwd"]), &disk),
            (argv(&["printenv", "HOME"]), &disk),
        ] {
            let p = hosts.spawn(&host, command).expect("starts");
            assert!(p.wait().expect("exits").success(), "{}", p.stderr());
            assert_eq!(Path::new(p.stdout().trim()), expected.as_path());
        }
        let cat = hosts
            .spawn(&host, argv(&["cat", "whoami"]))
            .expect("cat starts");
        assert!(cat.wait().expect("cat exits").success(), "{}", cat.stderr());
        assert_eq!(cat.stdout(), host);
    }
    // Each disk is private: no host sees another's file, nor does the root
    // namespace.
    let names = hosts.names();
    for host in &names {
        hosts.on_host(host, || {
            for other in &names {
                let seen = fs::read_to_string(hosts.disk(other).join("whoami")).ok();
                let expected = (other == host).then(|| host.clone());
                assert_eq!(seen, expected, "{host} reading {other}'s disk");
            }
        });
        assert!(!hosts.disk(host).join("whoami").exists());
    }
    let missing = hosts.spawn("h1", argv(&["wavecrew-no-such-program"]));
    assert_eq!(
        missing.err().map(|e| e.kind()),
        Some(io::ErrorKind::NotFound)
    );
}

#[test]
fn a_partitioned_host_is_cut_off_both_ways_until_healed() {
    let hosts = Hosts::start(2);
    let server = hosts.server_addr();
    // Failing to connect takes this long; succeeding may take longer.
    let timeout = Duration::from_secs(1);
    let patience = Duration::from_secs(5);
    // Something on h1 for the hub to call.
    let h1_ip = hosts.ip("h1");
    let listener = hosts
        .on_host("h1", || TcpListener::bind((h1_ip, 0)))
        .expect("a listener on h1");
    let on_h1 = listener.local_addr().expect("the listener's address");
    assert!(
        hosts
            .on_hub(|| TcpStream::connect_timeout(&on_h1, patience))
            .is_ok()
    );

    hosts.partition("h1");
    let from_h1 = hosts.on_host("h1", || nats_greeting(server, timeout));
    assert!(from_h1.is_err(), "partitioned h1 still reaches the server");
    let to_h1 = hosts.on_hub(|| TcpStream::connect_timeout(&on_h1, timeout));
    assert!(to_h1.is_err(), "the hub still reaches partitioned h1");
    hosts
        .on_host("h2", || nats_greeting(server, patience))
        .expect("h2 is not cut off with h1");

    hosts.heal("h1");
    hosts
        .on_host("h1", || nats_greeting(server, patience))
        .expect("healed h1 reaches the server");
    hosts
        .on_hub(|| TcpStream::connect_timeout(&on_h1, patience))
        .expect("the hub reaches healed h1");
}

#[test]
fn kill_host_kills_and_reaps_everything_on_that_host_only() {
    let hosts = Hosts::start(2);
    // `timeout` forks: its `sleep` is a grandchild of the test.
    let doomed = hosts
        .spawn("h1", argv(&["timeout", "600", "sleep", "600"]))
        .expect("timeout starts");
    let survivor = hosts
        .spawn("h2", argv(&["sleep", "600"]))
        .expect("sleep starts");
    let h1: HashSet<NsKey> = ns_key(&hosts.ns_file("h1", "uts")).into_iter().collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids_in(&h1).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "timeout did not start sleep on h1"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(doomed.try_wait().expect("try_wait"), None);

    hosts.kill_host("h1");
    let status = doomed
        .try_wait()
        .expect("try_wait")
        .expect("kill_host reaped the process");
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    assert!(!Path::new(&format!("/proc/{}", doomed.id())).exists());
    assert_eq!(pids_in(&h1), Vec::<i32>::new(), "processes left on h1");
    assert_eq!(
        survivor
            .wait_timeout(Duration::from_millis(100))
            .expect("wait"),
        None,
        "h2's process died with h1"
    );
    survivor.signal(Signal::SIGTERM).expect("SIGTERM");
    let status = survivor.wait().expect("wait");
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));

    // The host comes back: its namespaces and disk are still there.
    let again = hosts
        .spawn("h1", argv(&["hostname"]))
        .expect("hostname starts");
    assert!(again.wait().expect("exits").success());
    assert_eq!(again.stdout().trim(), "h1");
}

#[test]
fn dropping_the_hosts_removes_every_namespace_interface_and_process() {
    let hosts = Hosts::start(2);
    let id = hosts.id.clone();
    let dir = hosts.dir.clone();
    let ip = hosts.tools.ip.clone();
    let server = hosts.server.as_ref().map(Child::id).expect("a server");
    let sleeper = hosts
        .spawn("h2", argv(&["sleep", "600"]))
        .expect("sleep starts");
    let netns = run(&ip, &["netns", "list"]);
    for name in ["hub", "h1", "h2"] {
        assert!(
            netns.contains(&format!("{id}-{name}")),
            "{name} in\n{netns}"
        );
    }

    drop(hosts);
    let netns = run(&ip, &["netns", "list"]);
    assert!(!netns.contains(&id), "{netns}");
    let links = run(&ip, &["-o", "link"]);
    assert!(
        !links.contains("v-h1") && !links.contains("v-h2") && !links.contains(&id),
        "{links}"
    );
    assert!(
        !Path::new(&format!("/proc/{server}")).exists(),
        "nats-server {server} lives on"
    );
    let status = sleeper
        .try_wait()
        .expect("try_wait")
        .expect("the drop reaped sleep");
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    sleeper.kill().expect("kill after exit is a no-op");
    assert!(!Path::new(&format!("/proc/{}", sleeper.id())).exists());
    assert!(!dir.exists(), "{} is left", dir.display());
    let mounts = fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    assert!(!mounts.contains(&id), "{mounts}");
    // The output outlives the hosts.
    assert_eq!(sleeper.stdout(), "");
}

#[test]
fn start_removes_what_a_killed_test_process_left() {
    // Another test process, SIGKILLed once its server runs: it leaves its
    // namespaces, mounts, temp folders and nats-server behind.
    let exe = std::env::current_exe().expect("the test binary");
    let mut victim = Command::new(exe)
        .args(["--exact", "--test-threads=1"])
        .arg("hosts::tests::a_partitioned_host_is_cut_off_both_ways_until_healed")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the victim starts");
    let id = format!("wc{}x0", victim.id());
    let hub = Path::new(NETNS_DIR).join(format!("{id}-hub"));
    let deadline = Instant::now() + Duration::from_secs(10);
    let server = loop {
        let keys: HashSet<NsKey> = ns_key(&hub).into_iter().collect();
        let server = pids_in(&keys).into_iter().find(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "nats-server")
        });
        if let Some(server) = server {
            break server;
        }
        assert_eq!(
            victim.try_wait().expect("try_wait"),
            None,
            "the victim ended early"
        );
        assert!(
            Instant::now() < deadline,
            "the victim's server did not start within 10 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // Under the lock, so no other instance starting now removes the
    // leftovers before they are seen.
    let lock = state_lock();
    victim.kill().expect("SIGKILL the victim");
    victim.wait().expect("reap the victim");
    let ip = find_tool("ip", "iproute2");
    let leftovers = || {
        let tmp: Vec<String> = fs::read_dir(std::env::temp_dir())
            .expect("the temp folder")
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.starts_with(&format!("{id}-")))
            .collect();
        let netns: Vec<String> = run(&ip, &["netns", "list"])
            .lines()
            .filter(|line| line.starts_with(&format!("{id}-")))
            .map(str::to_owned)
            .collect();
        let mounts = fs::read_to_string("/proc/self/mountinfo")
            .expect("mountinfo")
            .lines()
            .filter(|line| line.contains(&id))
            .count();
        let dir = Path::new(STATE_ROOT).join(&id).exists();
        (tmp.len(), netns.len(), mounts, dir)
    };
    let (tmp, netns, mounts, dir) = leftovers();
    assert!(
        tmp == 2 && netns == 3 && mounts > 0 && dir,
        "{:?}",
        leftovers()
    );
    drop(lock);

    let hosts = Hosts::start(1);
    assert_eq!(leftovers(), (0, 0, 0, false));
    // Gone, or a zombie until init reaps it.
    let state = fs::read_to_string(format!("/proc/{server}/stat")).unwrap_or_default();
    assert!(
        state.is_empty()
            || state
                .rsplit_once(") ")
                .is_some_and(|(_, s)| s.starts_with('Z')),
        "the victim's nats-server {server} lives on: {state}"
    );
    // The live instance is not a leftover.
    assert!(hosts.dir.exists());
}
