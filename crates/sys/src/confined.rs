//! The one spawner of everything that runs an agent's code: the agent
//! itself and every check of its work. A [`CommandBox`] is the rules
//! (where the tree may write, what it may not read, the variables it does
//! not get, its network); [`Confined`] is those rules made ready for one
//! tree (its egress proxy started), which starts it through `wavecrew-box`
//! ([`crate::agent_box`]) when it has a network of its own, else from a
//! thread confined by [`crate::sandbox`]; [`Boxed`] is a check's: the same,
//! with a temporary folder of its own.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::sandbox::{SandboxError, spawn_confined_hiding};

/// The network of a confined tree: the agent's, or a check's of its work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// The machine's own.
    #[default]
    Open,
    /// A namespace of its own with nothing out.
    None,
    /// A namespace of its own whose only way out is an egress proxy that
    /// lets these hosts through ([`crate::egress`]).
    Allowlist(crate::allow_hosts::AllowList),
}

/// The box a command wavecrew runs on an agent's work goes in (the
/// project's build and tests, acceptance commands, syntax checks, a
/// worktree's setup, `[integration] verify`): those run code the agent
/// wrote or changed (a test, a `conftest.py`, a build script, a
/// `.cargo/config.toml` in its worktree), so they get no more than the
/// agent: they may write only their working folder, a temporary folder of
/// their own, `/dev` and these places (the data caches of `[isolation]
/// sandbox_writable`); they may not read the credential files; they do
/// not get the credential variables of wavecrew's environment; and they
/// have a network of their own, whose only way out is an egress proxy
/// (through `wavecrew-box`, as the agent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandBox {
    /// Places the command may write besides its working folder and its
    /// temporary folder.
    pub writable: Vec<PathBuf>,
    /// Places it may not even read (credentials).
    pub hidden: Vec<PathBuf>,
    /// Refuse to run it unconfined where the kernel cannot confine.
    pub required: bool,
    /// Variables of wavecrew's environment it does not get (credentials).
    pub withheld_env: Vec<String>,
    /// Its network.
    pub network: Network,
}

/// A [`CommandBox`] made for one command: its confinement, and its
/// temporary folder (`TMPDIR`), removed when this is dropped (after the
/// command).
#[derive(Debug)]
pub struct Boxed {
    confined: Confined,
    tmp: tempfile::TempDir,
}

/// A confinement made ready to start one program tree: the agent's (its
/// attempt's rules) or a check's ([`CommandBox::around`]). The one spawner
/// of everything that runs an agent's code: through `wavecrew-box` when
/// the tree has a network of its own (the box enters the namespace, hands
/// its listener to the egress proxy started here, confines itself with the
/// write and read rules, then becomes the program), else from a thread
/// confined with those rules; in both, without the withheld variables.
#[derive(Debug)]
pub struct Confined {
    writable: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    required: bool,
    withheld_env: Vec<String>,
    /// Whose tree, in messages: `the agent`, `the command`.
    who: &'static str,
    /// Started through `wavecrew-box` (a network of its own): the box and
    /// the proxy its listener goes to (none: nothing out).
    via_box: Option<(PathBuf, Option<crate::egress::EgressProxy>)>,
    /// The network it was meant to have, where it could not get one of
    /// its own (no box here): why.
    network_note: Option<String>,
}

impl CommandBox {
    /// This box's rules made ready for one tree (`who`, in messages): its
    /// egress proxy started when it has a network of its own. `writable`
    /// is taken as the whole list (no working or temporary folder added:
    /// [`CommandBox::around`] adds them for a command). Fails where the
    /// box is `required` and no network of its own can be had.
    pub fn confine(&self, who: &'static str) -> std::io::Result<Confined> {
        let (mut via_box, mut network_note) = (None, None);
        if self.network != Network::Open {
            match (
                crate::agent_box::network_support(),
                crate::agent_box::box_program(),
            ) {
                (Ok(()), Some(program)) => {
                    let proxy = match &self.network {
                        Network::Allowlist(allow) => Some(
                            crate::egress::EgressProxy::start_detached(allow.clone()).map_err(
                                |e| {
                                    std::io::Error::other(format!(
                                        "cannot start the egress proxy of {who}: {e}"
                                    ))
                                },
                            )?,
                        ),
                        _ => None,
                    };
                    via_box = Some((program.to_owned(), proxy));
                }
                (Err(why), _) if self.required => {
                    return Err(std::io::Error::other(format!(
                        "[isolation] sandbox = \"required\" and {who} cannot get a network of \
                         its own: {why}"
                    )));
                }
                (why, _) => {
                    network_note = Some(match why {
                        Err(why) => why,
                        Ok(()) => "no `wavecrew-box` here".to_owned(),
                    });
                }
            }
        }
        Ok(Confined {
            writable: self.writable.clone(),
            hidden: self.hidden.clone(),
            required: self.required,
            withheld_env: self.withheld_env.clone(),
            who,
            via_box,
            network_note,
        })
    }

    /// The box of a command working in `cwd` that also writes `more` (a
    /// report folder): makes its temporary folder and, for a network of
    /// its own, starts its egress proxy.
    pub fn around(&self, cwd: &Path, more: &[PathBuf]) -> std::io::Result<Boxed> {
        let tmp = tempfile::Builder::new()
            .prefix("wavecrew-check-")
            .tempdir()?;
        let mut writable = vec![cwd.to_owned(), tmp.path().to_owned(), PathBuf::from("/dev")];
        writable.extend(more.iter().cloned());
        writable.extend(self.writable.iter().cloned());
        let confined = CommandBox {
            writable,
            ..self.clone()
        }
        .confine("the command")?;
        Ok(Boxed { confined, tmp })
    }
}

impl Confined {
    /// Whether its program starts through `wavecrew-box` (a network of its
    /// own): a box that cannot start the program exits
    /// [`crate::agent_box::BOX_FAILED`], saying why on stderr.
    pub fn through_box(&self) -> bool {
        self.via_box.is_some()
    }

    /// What its network did: the hosts its proxy let through and refused
    /// (`mode` `allowlist`), `mode` `none` for a network with nothing out,
    /// `open` for the machine's (with why, where it was meant to have one
    /// of its own). Read after the tree ended.
    pub fn network_log(&self) -> crate::egress::NetworkLog {
        match &self.via_box {
            Some((_, Some(proxy))) => proxy.log(),
            Some((_, None)) => crate::egress::NetworkLog {
                mode: "none".to_owned(),
                ..Default::default()
            },
            None => crate::egress::NetworkLog {
                mode: match &self.network_note {
                    Some(why) => format!("open ({why})"),
                    None => "open".to_owned(),
                },
                ..Default::default()
            },
        }
    }

    /// The program and arguments that start `program args` in this
    /// confinement: through `wavecrew-box` when it has a network of its
    /// own, else as they are (confined from a thread by
    /// [`Confined::spawn`]).
    fn argv(&self, program: &OsStr, args: &[OsString]) -> (OsString, Vec<OsString>) {
        let Some((boxer, proxy)) = &self.via_box else {
            return (program.to_owned(), args.to_vec());
        };
        let spec = crate::agent_box::BoxSpec {
            writable: self.writable.clone(),
            hidden: self.hidden.clone(),
            required: self.required,
            network: match proxy {
                Some(p) => crate::agent_box::BoxNetwork::Proxy(p.socket()),
                None => crate::agent_box::BoxNetwork::None,
            },
        };
        let mut boxed_argv = spec.argv(Path::new(program), &[]);
        boxed_argv.extend(args.iter().cloned());
        (boxer.clone().into_os_string(), boxed_argv)
    }

    /// A command that runs `program args` in this confinement, without the
    /// withheld variables. Start it with [`Confined::spawn`].
    pub fn command(
        &self,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> tokio::process::Command {
        self.command_std(program, args).into()
    }

    /// [`Confined::command`] for a `std` command.
    pub fn command_std(
        &self,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> std::process::Command {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let (program, args) = self.argv(program.as_ref(), &args);
        let mut cmd = std::process::Command::new(program);
        cmd.args(args);
        for k in &self.withheld_env {
            cmd.env_remove(k);
        }
        cmd
    }

    /// Why a tree cannot be confined here, where it must be.
    fn refused(&self, e: &SandboxError) -> std::io::Error {
        std::io::Error::other(format!(
            "[isolation] sandbox = \"required\" and {} cannot be confined: {e}",
            self.who
        ))
    }

    /// Start `cmd` (made by [`Confined::command`]): through the box
    /// program, whose pid its proxy then expects; else from a confined
    /// thread; on a kernel without Landlock, unconfined (the run said so
    /// once at its start) unless the confinement is required.
    pub fn spawn(
        &self,
        cmd: &mut tokio::process::Command,
    ) -> std::io::Result<tokio::process::Child> {
        if let Some((_, proxy)) = &self.via_box {
            let child = cmd.spawn()?;
            if let (Some(proxy), Some(pid)) = (proxy, child.id()) {
                proxy.expect_box(pid);
            }
            return Ok(child);
        }
        let handle = tokio::runtime::Handle::current();
        let confined = {
            let cmd = &mut *cmd;
            spawn_confined_hiding(&self.writable, &self.hidden, move || {
                let _entered = handle.enter();
                cmd.spawn()
            })
        };
        match confined {
            Ok((spawned, _)) => spawned,
            Err(e) if self.required => Err(self.refused(&e)),
            Err(_) => cmd.spawn(),
        }
    }

    /// The same for a `std` command (made by [`Confined::command_std`]).
    pub fn spawn_std(
        &self,
        cmd: &mut std::process::Command,
    ) -> std::io::Result<std::process::Child> {
        if let Some((_, proxy)) = &self.via_box {
            let child = cmd.spawn()?;
            if let Some(proxy) = proxy {
                proxy.expect_box(child.id());
            }
            return Ok(child);
        }
        let confined = {
            let cmd = &mut *cmd;
            spawn_confined_hiding(&self.writable, &self.hidden, move || cmd.spawn())
        };
        match confined {
            Ok((spawned, _)) => spawned,
            Err(e) if self.required => Err(self.refused(&e)),
            Err(_) => cmd.spawn(),
        }
    }
}

impl Boxed {
    /// The command's temporary folder.
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// Whether its command starts through `wavecrew-box`
    /// ([`Confined::through_box`]).
    pub fn through_box(&self) -> bool {
        self.confined.through_box()
    }

    /// What its network did ([`Confined::network_log`]).
    pub fn network_log(&self) -> crate::egress::NetworkLog {
        self.confined.network_log()
    }

    /// A command that runs `program args` in this box
    /// ([`Confined::command`]), with `TMPDIR` its temporary folder. Start
    /// it with [`Boxed::spawn`].
    pub fn command(
        &self,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> tokio::process::Command {
        self.command_std(program, args).into()
    }

    /// [`Boxed::command`] for a `std` command.
    pub fn command_std(
        &self,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> std::process::Command {
        let mut cmd = self.confined.command_std(program, args);
        for k in ["TMPDIR", "TMP", "TEMP"] {
            cmd.env(k, self.tmp.path());
        }
        cmd
    }

    /// Start `cmd` (made by [`Boxed::command`]) in the box
    /// ([`Confined::spawn`]).
    pub fn spawn(
        &self,
        cmd: &mut tokio::process::Command,
    ) -> std::io::Result<tokio::process::Child> {
        self.confined.spawn(cmd)
    }

    /// The same for a `std` command (made by [`Boxed::command_std`]).
    pub fn spawn_std(
        &self,
        cmd: &mut std::process::Command,
    ) -> std::io::Result<std::process::Child> {
        self.confined.spawn_std(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command in a box writes its working folder, its own `TMPDIR` and
    /// the box's places, nothing else; its temporary folder goes with it.
    #[tokio::test]
    async fn a_boxed_command_writes_its_folder_its_tmp_and_the_caches_only() {
        let tmp = tempfile::tempdir().unwrap();
        let (work, cache, home, sources) = (
            tmp.path().join("work"),
            tmp.path().join("cache"),
            tmp.path().join("home"),
            tmp.path().join("sources"),
        );
        for d in [&work, &cache, &home, &sources] {
            std::fs::create_dir_all(d).unwrap();
        }
        for (name, text) in [("a", "a\n"), ("b", "b\n"), ("c", "c\n"), ("d", "d\n")] {
            std::fs::write(sources.join(name), text).unwrap();
        }
        let boxed = CommandBox {
            writable: vec![cache.clone()],
            required: true,
            ..CommandBox::default()
        }
        .around(&work, &[])
        .unwrap();
        let made = boxed.tmp().to_owned();
        let outside = std::env::temp_dir().join(format!("wavecrew-boxed-{}", std::process::id()));
        // Each try one program, as argv.
        let run = |args: Vec<std::ffi::OsString>| {
            let mut cmd = boxed.command_std(&args[0], &args[1..]);
            cmd.current_dir(&work).stdout(std::process::Stdio::piped());
            let out = boxed
                .spawn_std(&mut cmd)
                .unwrap()
                .wait_with_output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        let cp = |from: &Path, to: &Path| vec!["cp".into(), from.into(), to.into()];
        run(cp(&sources.join("a"), Path::new("built")));
        run(cp(&sources.join("b"), &made.join("t")));
        run(cp(&made.join("t"), Path::new("from-tmp")));
        run(cp(&sources.join("c"), &cache.join("c")));
        run(cp(&sources.join("d"), &home.join(".bashrc")));
        run(cp(&sources.join("d"), &outside));
        assert_eq!(
            run(vec!["printenv".into(), "TMPDIR".into()]),
            made.display().to_string()
        );
        assert_eq!(std::fs::read_to_string(work.join("built")).unwrap(), "a\n");
        assert_eq!(
            std::fs::read_to_string(work.join("from-tmp")).unwrap(),
            "b\n"
        );
        assert_eq!(std::fs::read_to_string(cache.join("c")).unwrap(), "c\n");
        assert!(!home.join(".bashrc").exists());
        assert!(!outside.exists());
        drop(boxed);
        assert!(!made.exists(), "its TMPDIR goes with it");
    }
}
