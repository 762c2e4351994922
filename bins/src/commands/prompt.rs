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
    let valid = wavecrew_role_team::validate(Some(&args.session)).map_err(bad)?;
    let session = RoleSession::open(&OpenSpec {
        config,
        task: Some(&args.task),
        backend: args.backend.clone(),
        bus_key: Some(valid.session.session_id.as_str()),
        ..OpenSpec::session(&valid.dir)
    })?;
    let id = session
        .task
        .clone()
        .ok_or_else(|| bad("a task id is required"))?;
    let task = find_task(&session, &id)?;
    let launcher = wavecrew_role_team::launch::Launcher {
        session_dir: valid.dir.clone(),
        session_id: valid.session.session_id.clone(),
        roles: valid.session.roles.clone(),
        backend: args.backend.clone(),
        config_file: None,
        bin_dir: None,
        on_failure: wavecrew_role_team::FailurePolicy::Continue,
    };
    let Some((role, prefix)) = launcher.role_of(&task) else {
        return Err(bad(format!(
            "{}: no role of the session takes it (owner {}, prefix {})",
            id.as_str(),
            task.owner.as_deref().unwrap_or("none"),
            task.id.prefix().unwrap_or("none")
        )));
    };
    let ctx = session.ctx.clone();
    let preview: Box<dyn PromptPreview> = match prefix.as_str() {
        "IMPL" => Box::new(wavecrew_role_executor::Executor::new(ctx)),
        "TESTRUN" => {
            return Err(bad(format!(
                "{}: the test executor runs the tests first; an agent gets a prompt only to fix \
                 the tests that fail, built from their output (see docs/prompts.md)",
                id.as_str()
            )));
        }
        "EXEC" if is_builtin_exec(&valid) => {
            return Err(bad(format!(
                "{}: `wavecrew prompt` does not know the {} role yet",
                id.as_str(),
                role
            )));
        }
        _ => {
            let entry = valid
                .session
                .roles
                .iter()
                .find(|r| r.name.as_str() == role)
                .ok_or_else(|| bad(format!("role `{role}` is not in team-session.json")))?;
            let role_file = valid.dir.join(entry.instructions_path());
            Box::new(
                wavecrew_role_team::agent_role::AgentRole::new(&role, &prefix, &role_file, ctx)
                    .map_err(|e| bad(format!("{}: {e}", role_file.display())))?,
            )
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    let (marked, backend) = rt
        .block_on(preview.preview(&task))
        .map_err(|e| bad(format!("{}: {e}", id.as_str())))?;
    let next = wavecrew_backends::attempts::next_prompt(
        &session.ctx.config,
        &backend,
        &task.id,
        &session.ctx.session_dir,
        &marked,
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

/// Whether a session's `EXEC-*` tasks belong to a built-in role (planex,
/// roadmap).
fn is_builtin_exec(valid: &wavecrew_role_team::ValidSession) -> bool {
    let id = valid.session.session_id.as_str();
    id.starts_with("PEX-") || id.starts_with("RD-")
}
