//! The kit's policies through the worker loop and the role main: a template
//! that fails to render fails the task with the template's error (and no
//! agent runs), a review's attempts live apart from the task's, and every
//! report's bus record is its task's result.

use serde_json::{Value, json};
use wavecrew_core::bus::ListFilter;
use wavecrew_core::role::{PhaseError, Report, Role, WorkerOptions};
use wavecrew_core::{Mode, Task, TaskId, TaskStatus, TaskStore};
use wavecrew_role_kit::run::stop;
use wavecrew_role_kit::{
    Attempt, OpenSpec, ReportBuilder, Review, RoleExit, RoleSession, backend_used, derived_id,
    run_role,
};

/// A role whose work is one attempt with a prompt from a template, then a
/// review; `broken` renders the template without its variables.
struct Probe {
    session: wavecrew_role_kit::RoleContext,
}

#[async_trait::async_trait]
impl Role for Probe {
    type Work = Option<wavecrew_backends::TaskRun>;

    fn name(&self) -> &'static str {
        "probe"
    }
    fn prefix(&self) -> &'static str {
        "IMPL"
    }
    async fn prepare(&self, _: &Task) -> Result<Self::Work, PhaseError> {
        Ok(None)
    }
    async fn execute(&self, task: &Task, work: &mut Self::Work) -> Result<(), PhaseError> {
        let ctx = &self.session;
        let broken = task.description.contains("broken");
        let render = |n: u32, error: Option<&str>| {
            if broken {
                ctx.render("execution", &json!({"task": {"id": task.id.as_str()}}))
            } else {
                Ok(format!(
                    "do {} (attempt {n}, error {error:?})",
                    task.id.as_str()
                ))
            }
        };
        let run = ctx
            .attempt(&Attempt::new(
                &task.id,
                "echo",
                &ctx.project_root,
                Mode::Write,
                &render,
            ))
            .await?;
        let review = ctx
            .review(&Review {
                task,
                id: derived_id(&task.id, "review")?,
                backend: "echo",
                cwd: &ctx.project_root,
                criteria: vec!["it works".into()],
            })
            .await?;
        if !review.success {
            return Err(PhaseError::agent("the review failed"));
        }
        *work = Some(run);
        Ok(())
    }
    async fn validate(&self, task: &Task, work: &Self::Work) -> Report {
        ReportBuilder::completed("task_complete", task)
            .field("execution_backend", backend_used(work.as_ref(), "none"))
            .summary(format!("{} complete", task.id.as_str()))
            .build()
    }
}

fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(".workflow/.team/TC-kit-2026-11-23");
    std::fs::create_dir_all(session.join("tasks")).unwrap();
    std::fs::write(
        dir.path().join("wavecrew.toml"),
        "[backends.echo]\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"cat >> prompts.txt\"]\n",
    )
    .unwrap();
    (dir, session)
}

#[test]
fn a_template_that_fails_to_render_fails_the_task_with_its_error() {
    let (dir, session_dir) = project();
    let session = RoleSession::open(&OpenSpec::session(&session_dir)).unwrap();
    for (id, description) in [("IMPL-001", "fine"), ("IMPL-002", "broken template")] {
        session
            .store
            .create(Task::new(TaskId::new(id).unwrap(), id, description))
            .unwrap();
    }
    let role = Probe {
        session: session.ctx.clone(),
    };
    let exit = run_role(&session, &role, &WorkerOptions::default(), stop).unwrap();
    assert_eq!(exit, RoleExit::Failed, "one task failed");

    let done = session
        .store
        .get(&TaskId::new("IMPL-001").unwrap())
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result.as_ref().unwrap()["execution_backend"], "echo");
    let broken = session
        .store
        .get(&TaskId::new("IMPL-002").unwrap())
        .unwrap();
    assert_eq!(broken.status, TaskStatus::Failed);
    let error = broken.result.as_ref().unwrap()["error"].as_str().unwrap();
    assert!(
        error.starts_with("prompt template `execution`: "),
        "{error}"
    );

    // The agent got the good task's prompt and its review, nothing of the
    // broken one: neither an empty prompt nor the error text.
    let prompts = std::fs::read_to_string(dir.path().join("prompts.txt")).unwrap();
    assert!(
        prompts.contains("do IMPL-001 (attempt 1, error None)"),
        "{prompts}"
    );
    assert!(prompts.contains("it works"), "the review prompt: {prompts}");
    assert!(!prompts.contains("IMPL-002"), "{prompts}");
    assert!(!prompts.contains("prompt template"), "{prompts}");
    let attempts = session_dir.join("attempts");
    assert!(attempts.join("IMPL-001/1").is_dir());
    assert!(
        attempts.join("IMPL-001-review/1").is_dir(),
        "the review's attempts are its own"
    );
    assert!(
        !attempts.join("IMPL-002").exists(),
        "no attempt of IMPL-002"
    );

    // Every record is its task's result, set once.
    let records = session
        .ctx
        .bus
        .list(&ListFilter {
            from: Some("probe".into()),
            ..ListFilter::default()
        })
        .unwrap();
    assert_eq!(records.total, 2);
    for m in &records.messages {
        let id = m.data.as_ref().unwrap()["task_id"].as_str().unwrap();
        let task = session.store.get(&TaskId::new(id).unwrap()).unwrap();
        assert_eq!(
            Value::Object(m.data.clone().unwrap()),
            task.result.unwrap(),
            "{id}"
        );
    }
}

#[test]
fn opening_names_the_folder_and_the_flag() {
    let (dir, _) = project();
    let missing = dir.path().join(".workflow/.team/TC-none");
    let e = RoleSession::open(&OpenSpec::session(&missing)).unwrap_err();
    assert!(e.is_bad_input());
    assert!(e.to_string().starts_with("--session "), "{e}");
    let outside = tempfile::tempdir().unwrap();
    let e = RoleSession::open(&OpenSpec::session(outside.path())).unwrap_err();
    assert!(e.is_bad_input());
    assert!(e.to_string().contains("not inside a project"), "{e}");
    let (_dir, session_dir) = project();
    let e = RoleSession::open(&OpenSpec {
        task: Some("../x"),
        ..OpenSpec::session(&session_dir)
    })
    .unwrap_err();
    assert!(e.is_bad_input(), "{e}");
}
