//! Child processes for the multi-process tests: the test binary re-runs
//! itself with `CHILD_ENV` set to a job, and the matching test does it.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use wavecrew_core::{NewMessage, SessionId};
use wavecrew_msgbus::{Bus, BusPaths, Durability};

pub(crate) const CHILD_ENV: &str = "WAVECREW_BUS_CHILD";

/// Start `count` children running job `job` against the bus under `root`.
pub(crate) fn spawn(test: &str, job: &str, root: &Path, n: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{job}|{}|{n}", root.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn job() -> Option<(String, String, usize)> {
    let v = std::env::var(CHILD_ENV).ok()?;
    let mut parts = v.splitn(3, '|');
    Some((
        parts.next()?.to_owned(),
        parts.next()?.to_owned(),
        parts.next()?.parse().ok()?,
    ))
}

pub(crate) fn bus_at(root: &Path) -> Bus {
    Bus::new(
        BusPaths::new(root, SessionId::new("TC-stress-2026").unwrap()),
        Durability::None,
    )
}

/// Child: append `n` records through the library.
#[test]
fn child_append() {
    let Some((job, root, n)) = job() else { return };
    if job != "append" {
        return;
    }
    let bus = bus_at(Path::new(&root));
    for i in 0..n {
        bus.log(NewMessage {
            from: format!("w{}", std::process::id()),
            summary: Some(format!("record {i}")),
            ..NewMessage::default()
        })
        .unwrap();
    }
}

/// Child: write half a record to the log, then SIGKILL itself.
#[test]
fn child_half_line() {
    let Some((job, root, _)) = job() else { return };
    if job != "half" {
        return;
    }
    let bus = bus_at(Path::new(&root));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(bus.paths().log())
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        br#"{"id":"MSG-999","ts":"2026-01-01T00:00:00.000+00:00","from":"kil"#,
    )
    .unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL).unwrap();
}
