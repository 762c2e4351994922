//! Which worker takes a task, and starting it.
//!
//! A task's role is its owner, else the session role whose prefix it
//! carries. Built-in roles have their own binaries (the kit's table,
//! [`wavecrew_role_kit::builtin`]); a role known only by its
//! `roles/<name>.md` runs as `wavecrew-team worker --role`.
//! Every worker is started with argv (never a shell), its output in
//! `workers/<ID>.log`.

use std::path::{Path, PathBuf};

use wavecrew_core::{RoleEntry, SessionId, Task};
use wavecrew_role_kit::WorkerCommand;
use wavecrew_scheduler::FailurePolicy;

/// The program (and leading arguments) of a built-in worker binary.
pub fn sibling_program(name: &str, bin_dir: Option<&Path>) -> (PathBuf, Vec<String>) {
    match bin_dir {
        Some(dir) => (dir.join(name), Vec::new()),
        None => wavecrew_core::programs::wavecrew_program(name),
    }
}

/// What a launcher needs to know of the session and the run.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The session folder.
    pub session_dir: PathBuf,
    /// The session id (`PEX-…` and `RD-…` pick their `EXEC` binaries).
    pub session_id: SessionId,
    /// The session's roles.
    pub roles: Vec<RoleEntry>,
    /// `--backend` for every worker.
    pub backend: Option<String>,
    /// `--config` for every worker.
    pub config_file: Option<PathBuf>,
    /// `--sandbox` for every worker.
    pub sandbox: Option<wavecrew_backends::config::SandboxMode>,
    /// Folder holding the worker binaries (default: beside this program).
    pub bin_dir: Option<PathBuf>,
    /// The run's failure policy (`always` lets workers take tasks whose
    /// blockers failed).
    pub on_failure: FailurePolicy,
}

/// A started worker.
#[derive(Debug)]
pub struct Started {
    /// The process.
    pub child: tokio::process::Child,
    /// Its pid.
    pub pid: u32,
    /// The role it runs.
    pub role: String,
}

impl Launcher {
    /// The role of a task (name, prefix): its owner, else the session role
    /// with its prefix.
    pub fn role_of(&self, task: &Task) -> Option<(String, String)> {
        let by_owner = task
            .owner
            .as_deref()
            .and_then(|o| self.roles.iter().find(|r| r.name.as_str() == o));
        let by_prefix = || {
            self.roles
                .iter()
                .find(|r| Some(r.prefix.as_str()) == task.id.prefix())
        };
        by_owner
            .or_else(by_prefix)
            .map(|r| (r.name.as_str().to_owned(), r.prefix.clone()))
    }

    /// The worker command of a task: program, arguments, role. With
    /// `fast_advance` a built-in worker then takes the one successor of its
    /// role that the task unblocked (spawn-and-stop, where no orchestrator
    /// stays to start it).
    pub fn command(
        &self,
        task: &Task,
        fast_advance: bool,
    ) -> Option<(PathBuf, Vec<String>, String)> {
        let (role, prefix) = self.role_of(task)?;
        let bin = self.bin_dir.as_deref();
        let session_id = self.session_id.as_str();
        let builtin =
            wavecrew_role_kit::builtin::builtin_role(Some(&prefix), session_id).map(|r| r.binary);
        let worker = WorkerCommand {
            task: Some(task.id.as_str().into()),
            backend: self.backend.clone(),
            config: self.config_file.clone(),
            sandbox: self.sandbox,
            fast_advance,
            // Only `always` changes what a worker may take.
            on_failure: match self.on_failure {
                FailurePolicy::Always => FailurePolicy::Always,
                _ => FailurePolicy::Continue,
            },
            ..WorkerCommand::for_session(&self.session_dir)
        };
        let (program, mut args) = if let Some(binary) = builtin {
            sibling_program(binary, bin)
        } else {
            let (program, mut lead) = sibling_program("wavecrew-team", bin);
            lead.extend(["worker".into(), "--role".into(), role.clone()]);
            (program, lead)
        };
        args.extend(worker.to_args());
        Some((program, args, role))
    }

    /// Start the worker of `task`, its output in `workers/<ID>.log`.
    /// `detached`: in its own process group, so it outlives this process
    /// and a terminal's Ctrl-C (spawn-and-stop).
    pub fn spawn(&self, task: &Task, detached: bool) -> std::io::Result<Started> {
        let Some((program, args, role)) = self.command(task, detached) else {
            return Err(std::io::Error::other(format!(
                "no role takes {}",
                task.id.as_str()
            )));
        };
        // Checked once here (a cached answer after the first task), so
        // that no worker asks git for its version again.
        let _ = wavecrew_sys::git::check_version();
        let log = wavecrew_core::SessionLayout::new(&self.session_dir).worker_log(task.id.as_str());
        let child = wavecrew_sys::process::spawn_logged(
            &program,
            &args,
            &log,
            wavecrew_sys::process::LoggedSpawn {
                new_group: detached,
                kill_on_drop: false,
            },
        )?;
        // A child that has not been waited for always has its pid.
        let pid = child
            .id()
            .ok_or_else(|| std::io::Error::other("the worker exited before its pid was read"))?;
        Ok(Started { child, pid, role })
    }
}
