//! `wavecrew prompt <session> <task>`: the prompt the next attempt of a task
//! would get, printed without running anything, so it can be read before
//! any money is spent.
//!
//! It goes through the role that would take the task (the same templates,
//! the same budget and the same resume note as the run), and prints what
//! the attempt's `prompt.md` would hold; what a budget would cut goes to
//! stderr. Nothing is written: no attempt folder, no bus record, no claim.

use std::path::PathBuf;

use clap::Args;
use wavecrew_core::{Task, TaskId, TaskStore};
use wavecrew_role_kit::{OpenSpec, PromptPreview, RoleSession};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew prompt` arguments.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The session folder (`.workflow/.team/<session-id>`).
    pub session: PathBuf,
    /// The task (`IMPL-002`).
    pub task: String,
    /// As `wavecrew run --backend`: the backend every task would go to.
    #[arg(long)]
    pub backend: Option<String>,
}

fn bad(e: impl std::fmt::Display) -> CliError {
    CliError::bad_input(anyhow::anyhow!("{e}"))
}

/// The task as the store holds it, else as the session's files describe
/// it (a session no run has materialised yet).
fn find_task(session: &RoleSession, id: &TaskId) -> Result<Task, CliError> {
    if let Ok(task) = session.store.get(id) {
        return Ok(task);
    }
    let loaded = wavecrew_core::source::load(&session.ctx.session_dir).map_err(bad)?;
    loaded
        .tasks
        .into_iter()
        .find(|t| &t.id == id)
        .ok_or_else(|| {
            bad(format!(
                "{}: no task {} in this session",
                session.ctx.session_dir.display(),
                id.as_str()
            ))
        })
}

/// Run `wavecrew prompt`.
pub fn run(args: &PromptArgs, config: Option<&std::path::Path>) -> CmdResult {
    // A team session (team-session.json) names its roles; a planex or
    // executor session may have none, and its built-in role is known by
    // the task's prefix.
    let valid = wavecrew_orchestrator::validate(Some(&args.session));
    let dir = match &valid {
        Ok(v) => v.dir.clone(),
        Err(_) => args.session.clone(),
    };
    let session_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session = RoleSession::open(&OpenSpec {
        config,
        task: Some(&args.task),
        backend: args.backend.clone(),
        bus_key: valid.as_ref().ok().map(|v| v.session.session_id.as_str()),
        ..OpenSpec::session(&dir)
    })?;
    let id = session
        .task
        .clone()
        .ok_or_else(|| bad("a task id is required"))?;
    let task = find_task(&session, &id)?;
    let ctx = session.ctx.clone();
    // The role as `wavecrew run` picks it: the owner's, else by prefix.
    let launcher = valid
        .as_ref()
        .ok()
        .map(|v| wavecrew_orchestrator::launch::Launcher {
            session_dir: v.dir.clone(),
            session_id: v.session.session_id.clone(),
            roles: v.session.roles.clone(),
            backend: args.backend.clone(),
            config_file: None,
            sandbox: None,
            bin_dir: None,
            on_failure: wavecrew_orchestrator::FailurePolicy::Continue,
        });
    let role = launcher.as_ref().and_then(|l| l.role_of(&task));
    let prefix = role
        .as_ref()
        .map_or(task.id.prefix(), |(_, p)| Some(p.as_str()));
    let builtin = wavecrew_role_kit::builtin::builtin_role(prefix, &session_name).map(|r| r.name);
    let preview: Box<dyn PromptPreview> = match builtin {
        Some("executor") => Box::new(wavecrew_role_executor::Executor::new(ctx)),
        Some("planex") => Box::new(wavecrew_role_planex::PlanexRole::new(ctx)),
        Some("testrun") => {
            return Err(bad(format!(
                "{}: the test executor runs the tests first; an agent gets a prompt only to fix \
                 the tests that fail, built from their output (see docs/prompts.md)",
                id.as_str()
            )));
        }
        Some(_) => {
            return Err(bad(format!(
                "{}: a roadmap phase runs its own tasks in waves, one prompt per task or \
                 batch; read them in attempts/<IMPL-id>/<n>/prompt.md as the phase runs",
                id.as_str()
            )));
        }
        None => {
            // A role known only by its `roles/<name>.md`: the team session
            // names it.
            let valid = valid.map_err(bad)?;
            let Some((role, prefix)) = role else {
                return Err(bad(format!(
                    "{}: no role of the session takes it (owner {}, prefix {})",
                    id.as_str(),
                    task.owner.as_deref().unwrap_or("none"),
                    task.id.prefix().unwrap_or("none")
                )));
            };
            let entry = valid
                .session
                .roles
                .iter()
                .find(|r| r.name.as_str() == role)
                .ok_or_else(|| bad(format!("role `{role}` is not in team-session.json")))?;
            let role_file = valid.dir.join(entry.instructions_path());
            Box::new(
                wavecrew_role_agent::AgentRole::new(&role, &prefix, &role_file, ctx)
                    .map_err(|e| bad(format!("{}: {e}", role_file.display())))?
                    .with_responsibility(entry.responsibility_type.as_deref()),
            )
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    let preview = rt
        .block_on(preview.preview(&task))
        .map_err(|e| bad(format!("{}: {e}", id.as_str())))?;
    let next = wavecrew_backends::attempts::next_prompt(
        &session.ctx.config,
        &preview.backend,
        &preview.attempts_id,
        &session.ctx.session_dir,
        &preview.marked,
    );
    output::text(&next.text);
    for cut in &next.fitted.cuts {
        output::progress(&format!(
            "the budget of {} characters would cut `{}` from {} to {} characters",
            next.fitted.limit, cut.field, cut.chars, cut.kept
        ));
    }
    if next.fitted.over {
        output::warning(&format!(
            "still over the budget of {} characters: the task's own text is never cut",
            next.fitted.limit
        ));
    }
    output::progress(&format!(
        "attempt {} of {} through `{}`",
        next.attempt,
        id.as_str(),
        next.backend
    ));
    Ok(Exit::Success)
}
