//! The process boundary between the orchestrator and a role binary, typed:
//! the launcher writes a [`WorkerCommand`] as argv ([`WorkerCommand::to_args`])
//! and every role binary parses the same type (it is a `clap::Args`,
//! flattened into each binary's flags), so the two sides cannot drift.
//!
//! ```
//! use clap::Parser;
//! use wavecrew_role_kit::worker_command::{FailurePolicy, WorkerCommand};
//!
//! #[derive(Parser)]
//! struct Bin {
//!     #[command(flatten)]
//!     worker: WorkerCommand,
//! }
//!
//! let sent = WorkerCommand {
//!     task: Some("IMPL-001".into()),
//!     fast_advance: true,
//!     on_failure: FailurePolicy::Always,
//!     ..WorkerCommand::for_session(".workflow/.team/TC-x")
//! };
//! let mut argv = vec!["wavecrew-executor".to_owned()];
//! argv.extend(sent.to_args());
//! assert_eq!(Bin::parse_from(argv).worker, sent);
//! ```

use std::path::{Path, PathBuf};

use wavecrew_backends::config::SandboxMode;
use wavecrew_core::BlockerRule;
use wavecrew_core::role::WorkerOptions;
pub use wavecrew_scheduler::FailurePolicy;

use crate::session::{KitError, OpenSpec, RoleSession};

/// What a role binary is started with: the flags every role binary takes.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct WorkerCommand {
    /// The session folder (`.workflow/.team/<session-id>`).
    #[arg(long)]
    pub session: Option<PathBuf>,
    /// Take exactly this task (without it: every ready task of the role).
    #[arg(long)]
    pub task: Option<String>,
    /// Run every task through this backend.
    #[arg(long)]
    pub backend: Option<String>,
    /// Read this configuration file instead of `<project root>/wavecrew.toml`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With `--task`: then take the one successor of the role it unblocked.
    #[arg(long)]
    pub fast_advance: bool,
    /// The run's failure policy: with `always`, a task whose blockers
    /// ended (failed ones included) may be taken.
    #[arg(long, value_parser = failure_policy_parser(), default_value = "continue")]
    pub on_failure: FailurePolicy,
    /// Replaces `[isolation] sandbox` (`wavecrew run --sandbox`):
    /// `required` refuses to start an agent without every layer.
    #[arg(long, value_name = "MODE", value_parser = sandbox_parser())]
    pub sandbox: Option<SandboxMode>,
}

impl WorkerCommand {
    /// The command for the session folder `dir`, every other flag at its
    /// default.
    pub fn for_session(dir: impl Into<PathBuf>) -> Self {
        WorkerCommand {
            session: Some(dir.into()),
            task: None,
            backend: None,
            config: None,
            fast_advance: false,
            on_failure: FailurePolicy::Continue,
            sandbox: None,
        }
    }

    /// The argv that parses back into `self` (flags at their default are
    /// left out).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut flag = |name: &str, value: String| {
            args.push(name.to_owned());
            args.push(value);
        };
        if let Some(s) = &self.session {
            flag("--session", s.display().to_string());
        }
        if let Some(t) = &self.task {
            flag("--task", t.clone());
        }
        if self.on_failure != FailurePolicy::Continue {
            flag("--on-failure", self.on_failure.name().to_owned());
        }
        if let Some(b) = &self.backend {
            flag("--backend", b.clone());
        }
        if let Some(c) = &self.config {
            flag("--config", c.display().to_string());
        }
        if let Some(mode) = self.sandbox {
            flag("--sandbox", mode.name().to_owned());
        }
        if self.fast_advance {
            args.push("--fast-advance".to_owned());
        }
        args
    }

    /// The claim rule of the run's failure policy: `always` lets a worker
    /// take a task whose blockers ended, failed ones included.
    pub fn blocker_rule(&self) -> BlockerRule {
        blocker_rule(self.on_failure)
    }

    /// The session folder (`--session`), required by every role binary
    /// but the executor's task-folder mode.
    pub fn session_dir(&self) -> Result<&Path, KitError> {
        self.session.as_deref().ok_or_else(|| KitError::Usage {
            message: "--session <folder> is required".into(),
        })
    }

    /// Open the session the flags name.
    pub fn open(&self) -> Result<RoleSession, KitError> {
        RoleSession::open(&OpenSpec {
            config: self.config.as_deref(),
            task: self.task.as_deref(),
            backend: self.backend.clone(),
            sandbox: self.sandbox,
            ..OpenSpec::session(self.session_dir()?)
        })
    }

    /// The worker loop's options for an opened session.
    pub fn options(&self, session: &RoleSession) -> WorkerOptions {
        WorkerOptions {
            task: session.task.clone(),
            fast_advance: self.fast_advance,
            blockers: self.blocker_rule(),
            // `attempts/`: written by wavecrew's workers, never by a
            // confined agent.
            proofs: Some(
                wavecrew_core::SessionLayout::new(&session.ctx.session_dir).attempts_root(),
            ),
            ..WorkerOptions::default()
        }
    }
}

/// The claim rule of a run's failure policy.
pub fn blocker_rule(policy: FailurePolicy) -> BlockerRule {
    match policy {
        FailurePolicy::Always => BlockerRule::Ended,
        _ => BlockerRule::Completed,
    }
}

/// `--sandbox`: a [`SandboxMode`], parsed from its name.
pub fn sandbox_parser() -> impl clap::builder::TypedValueParser<Value = SandboxMode> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(SandboxMode::ALL.map(|m| {
        clap::builder::PossibleValue::new(m.name()).help(match m {
            SandboxMode::Auto => "Every layer this machine has; say which",
            SandboxMode::Off => "No box",
            SandboxMode::Required => "Every layer, or no agent at all",
        })
    }))
    .map(|s| {
        s.parse::<SandboxMode>()
            .expect("clap admits only the modes' names")
    })
}

/// `--on-failure`: the scheduler's [`FailurePolicy`], parsed from its name.
pub fn failure_policy_parser() -> impl clap::builder::TypedValueParser<Value = FailurePolicy> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(FailurePolicy::ALL.map(|p| {
        clap::builder::PossibleValue::new(p.name()).help(match p {
            FailurePolicy::Continue => "Skip its dependents, run the rest",
            FailurePolicy::Stop => "Start nothing new",
            FailurePolicy::Always => "Run its dependents anyway",
        })
    }))
    .map(|s| {
        s.parse::<FailurePolicy>()
            .expect("clap admits only the policies' names")
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Bin {
        #[command(flatten)]
        worker: WorkerCommand,
    }

    fn round_trip(sent: &WorkerCommand) -> WorkerCommand {
        let mut argv = vec!["bin".to_owned()];
        argv.extend(sent.to_args());
        Bin::try_parse_from(argv).unwrap().worker
    }

    #[test]
    fn every_flag_survives_the_process_boundary() {
        let bare = WorkerCommand::for_session("/s/TC-x");
        assert_eq!(round_trip(&bare), bare);
        assert_eq!(bare.to_args(), ["--session", "/s/TC-x"]);
        for on_failure in FailurePolicy::ALL {
            let full = WorkerCommand {
                session: Some("/s/a b".into()),
                task: Some("IMPL-001".into()),
                backend: Some("codex".into()),
                config: Some("/c/wavecrew.toml".into()),
                fast_advance: true,
                on_failure,
                sandbox: Some(SandboxMode::Required),
            };
            assert_eq!(round_trip(&full), full);
        }
    }

    #[test]
    fn only_always_lets_a_failed_blocker_through() {
        assert_eq!(blocker_rule(FailurePolicy::Always), BlockerRule::Ended);
        assert_eq!(blocker_rule(FailurePolicy::Stop), BlockerRule::Completed);
        assert_eq!(
            blocker_rule(FailurePolicy::Continue),
            BlockerRule::Completed
        );
    }
}
