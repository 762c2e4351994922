//! The agent's box: `wavecrew-box`, the small process an agent CLI is
//! started through when it gets a network of its own. Single-threaded, it
//! does what a thread of wavecrew cannot: it enters a new user and network
//! namespace ([`crate::netns`]), hands the listener of its loopback to
//! wavecrew's egress proxy and points the agent at it, confines itself
//! with the agent's write and read rules ([`crate::sandbox`]), and becomes
//! the agent (`exec`): the agent keeps its process id, its group and its
//! pipes, and nothing of the box stays behind.
//!
//! Its command line is argv only (paths are never joined into a string):
//!
//! ```text
//! wavecrew-box [--write PATH]… [--hide PATH]… [--required]
//!              [--network none | --network-proxy SOCKET] -- PROGRAM [ARG]…
//! wavecrew-box --probe
//! ```
//!
//! A box that cannot set a layer up exits with [`BOX_FAILED`], its reason
//! on stderr after [`BOX_ERROR_PREFIX`].

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The box's own name, looked up beside the running program and in `PATH`.
pub const BOX_PROGRAM: &str = "wavecrew-box";

/// The exit code of a box that could not set a layer up (the agent never
/// started).
pub const BOX_FAILED: i32 = 125;

/// What starts the line a failing box writes on stderr.
pub const BOX_ERROR_PREFIX: &str = "wavecrew-box: ";

/// The variables that point an agent's HTTP clients at its proxy.
pub const PROXY_VARS: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The variables that would let a client go around its proxy.
pub const NO_PROXY_VARS: [&str; 2] = ["NO_PROXY", "no_proxy"];

/// The network an agent in a box has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoxNetwork {
    /// The machine's own (no namespace).
    Shared,
    /// A namespace with only its loopback: nothing leaves.
    None,
    /// A namespace whose only way out is the egress proxy listening on
    /// this unix socket.
    Proxy(PathBuf),
}

/// What a box sets up before it becomes the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxSpec {
    /// Where the tree may write (see [`crate::sandbox::spawn_confined`]).
    pub writable: Vec<PathBuf>,
    /// What it may not read.
    pub hidden: Vec<PathBuf>,
    /// Fail rather than run without the write rules.
    pub required: bool,
    /// Its network.
    pub network: BoxNetwork,
}

impl BoxSpec {
    /// The box's arguments that start `program args`.
    pub fn argv(&self, program: &Path, args: &[String]) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        for p in &self.writable {
            out.push("--write".into());
            out.push(p.into());
        }
        for p in &self.hidden {
            out.push("--hide".into());
            out.push(p.into());
        }
        if self.required {
            out.push("--required".into());
        }
        match &self.network {
            BoxNetwork::Shared => {}
            BoxNetwork::None => {
                out.push("--network".into());
                out.push("none".into());
            }
            BoxNetwork::Proxy(socket) => {
                out.push("--network-proxy".into());
                out.push(socket.into());
            }
        }
        out.push("--".into());
        out.push(program.into());
        out.extend(args.iter().map(OsString::from));
        out
    }

    /// Read a box's arguments back ([`BoxSpec::argv`]): the spec, the
    /// program and its arguments.
    fn parse(args: &[OsString]) -> Result<(BoxSpec, OsString, Vec<OsString>), String> {
        let mut spec = BoxSpec {
            writable: Vec::new(),
            hidden: Vec::new(),
            required: false,
            network: BoxNetwork::Shared,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |flag: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            match arg.to_str() {
                Some("--write") => spec.writable.push(value("--write")?.into()),
                Some("--hide") => spec.hidden.push(value("--hide")?.into()),
                Some("--required") => spec.required = true,
                Some("--network") => match value("--network")?.to_str() {
                    Some("none") => spec.network = BoxNetwork::None,
                    other => return Err(format!("--network takes `none`, not {other:?}")),
                },
                Some("--network-proxy") => {
                    spec.network = BoxNetwork::Proxy(value("--network-proxy")?.into());
                }
                Some("--") => {
                    let program = it.next().cloned().ok_or("no program after `--`")?;
                    return Ok((spec, program, it.cloned().collect()));
                }
                _ => return Err(format!("unknown argument `{}`", arg.display())),
            }
        }
        Err("no program (`-- PROGRAM [ARG]…`)".to_owned())
    }
}

/// `wavecrew-box`'s main: never returns when the program starts; returns
/// the exit code otherwise.
pub fn main_of_box() -> std::process::ExitCode {
    std::process::ExitCode::from(u8::try_from(box_then_exec()).unwrap_or(1))
}

/// [`main_of_box`]'s work: the exit code when the program did not start.
fn box_then_exec() -> i32 {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().and_then(|a| a.to_str()) == Some("--probe") {
        return match crate::netns::enter() {
            Ok(()) => {
                println!("ok");
                0
            }
            Err(e) => {
                println!("{e}");
                1
            }
        };
    }
    let fail = |why: String| {
        eprintln!("{BOX_ERROR_PREFIX}{why}");
        BOX_FAILED
    };
    let (spec, program, rest) = match BoxSpec::parse(&args) {
        Ok(parsed) => parsed,
        Err(e) => return fail(e),
    };
    let mut command = std::process::Command::new(&program);
    command.args(&rest);
    match &spec.network {
        BoxNetwork::Shared => {}
        BoxNetwork::None => {
            if let Err(e) = crate::netns::enter() {
                return fail(e.to_string());
            }
            for k in PROXY_VARS {
                command.env_remove(k);
            }
        }
        BoxNetwork::Proxy(socket) => {
            let port = match crate::netns::enter()
                .and_then(|()| crate::netns::hand_over_listener(socket))
            {
                Ok(port) => port,
                Err(e) => return fail(e.to_string()),
            };
            let url = format!("http://127.0.0.1:{port}");
            for k in PROXY_VARS {
                command.env(k, &url);
            }
            for k in NO_PROXY_VARS {
                command.env_remove(k);
            }
        }
    }
    // Without Landlock here the agent runs unconfined (the run said so
    // once at its start), unless the box is required.
    if let Err(e) = crate::sandbox::confine_this_thread(&spec.writable, &spec.hidden)
        && spec.required
    {
        return fail(format!(
            "[isolation] sandbox = \"required\" and the agent cannot be confined: {e}"
        ));
    }
    let e = command.exec();
    fail(format!(
        "cannot start `{}`: {e}",
        Path::new(&program).display()
    ))
}

/// Where `wavecrew-box` is: `$WAVECREW_BOX`, else beside the running
/// program (or one folder up, for a test binary in `target/*/deps`), else
/// in `PATH`. Looked up once.
pub fn box_program() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("WAVECREW_BOX") {
                return Some(PathBuf::from(p));
            }
            let exe = std::env::current_exe().ok()?;
            let beside = exe
                .parent()
                .into_iter()
                .flat_map(|d| {
                    [
                        d.to_owned(),
                        d.parent().map(Path::to_owned).unwrap_or_default(),
                    ]
                })
                .map(|d| d.join(BOX_PROGRAM));
            let in_path: Vec<PathBuf> = std::env::var_os("PATH").map_or_else(Vec::new, |p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(BOX_PROGRAM))
                    .collect()
            });
            beside.chain(in_path).find(|p| p.is_file())
        })
        .as_deref()
}

/// Whether an agent can get a network of its own here: the box is found
/// and could enter a namespace with its loopback up (it tries, in a
/// process of its own). `Err` says why not. Asked once.
pub fn network_support() -> Result<(), String> {
    static ASKED: OnceLock<Result<(), String>> = OnceLock::new();
    ASKED
        .get_or_init(|| {
            let program = box_program().ok_or_else(|| {
                format!(
                    "`{BOX_PROGRAM}` is not installed beside wavecrew nor in PATH \
                     (`cargo install` puts it beside `wavecrew`; `WAVECREW_BOX` names it)"
                )
            })?;
            let out = std::process::Command::new(program)
                .arg("--probe")
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("cannot start `{}`: {e}", program.display()))?;
            let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if out.status.success() {
                Ok(())
            } else if said.is_empty() {
                Err(format!(
                    "`{}` --probe failed ({})",
                    program.display(),
                    out.status
                ))
            } else {
                Err(said)
            }
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_read_back_as_they_were_written() {
        let spec = BoxSpec {
            writable: vec![PathBuf::from("/w ith space"), PathBuf::from("/dev")],
            hidden: vec![PathBuf::from("/root/.ssh")],
            required: true,
            network: BoxNetwork::Proxy(PathBuf::from("/tmp/p.sock")),
        };
        let argv = spec.argv(Path::new("claude"), &["-p".into(), "--".into()]);
        let (back, program, rest) = BoxSpec::parse(&argv).unwrap();
        assert_eq!(back, spec);
        assert_eq!(program, "claude");
        assert_eq!(rest, vec![OsString::from("-p"), OsString::from("--")]);
    }

    #[test]
    fn bad_arguments_are_named() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(
            BoxSpec::parse(&args(&["--network", "open", "--", "x"]))
                .unwrap_err()
                .contains("--network takes `none`")
        );
        assert!(
            BoxSpec::parse(&args(&["--write"]))
                .unwrap_err()
                .contains("--write needs")
        );
        assert!(
            BoxSpec::parse(&args(&["--hide", "/x"]))
                .unwrap_err()
                .contains("no program")
        );
    }
}
