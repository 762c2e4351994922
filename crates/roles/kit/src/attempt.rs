//! A task's attempts and a review attempt, run through the backends under
//! the one prompt-render policy; the backend a task really used; attempt ids
//! derived from a task's.
//!
//! Before the first attempt starts, [`RoleContext::attempt`] renders the
//! first prompt and the prompt of a retry (with a previous error): a
//! template that fails fails the task before any agent runs. Should a later
//! prompt still fail to render, the attempt gets the last prompt that did
//! render and the task fails with the template's error once the attempts
//! end — never an empty prompt, never the error as the prompt.
//!
//! The repository's git configuration and hooks are recorded before the
//! attempts and checked after them ([`wavecrew_isolation::RepoGuard`]):
//! what an agent changed there is put back, and the task fails naming it.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde_json::json;
use wavecrew_backends::attempts::{AttemptEvent, TaskAttempts, TaskRun, next_attempt, run_task};
use wavecrew_core::id::MAX_ID_LEN;
use wavecrew_core::role::PhaseError;
use wavecrew_core::{Mode, Task, TaskId};

use crate::context::RoleContext;
use crate::prompt::PromptFn;

/// The previous error a retry's prompt is rendered with before anything runs.
const PROBE_ERROR: &str = "(the previous attempt's error)";

fn ignore(_: &AttemptEvent) {}

/// One run of attempts (with the retries and fallbacks of `wavecrew.toml`).
pub struct Attempt<'a> {
    /// The id the attempts are kept under (`attempts/<id>/<n>/`): the
    /// task's, or one [`derived_id`] from it.
    pub id: &'a TaskId,
    /// The backend asked for.
    pub backend: &'a str,
    /// Where the agent works.
    pub cwd: &'a Path,
    /// What it may do.
    pub mode: Mode,
    /// The prompt of attempt `n` given the previous error.
    pub prompt: &'a PromptFn<'a>,
    /// Called for every attempt event.
    pub on_event: &'a (dyn Fn(&AttemptEvent) + Sync),
    /// Where the work tree's git is, when the caller knows it (else git is
    /// asked, from `cwd`).
    pub git: Option<wavecrew_sys::git::WorkTreeGit>,
    /// The work tree has no change as the first attempt starts (see
    /// [`crate::Workspace::starts_clean`]).
    pub clean: bool,
    /// Hosts the task's agent may reach besides its backend's and
    /// `[isolation] allow_hosts` (the task's metadata `allow_hosts`).
    pub allow_hosts: Vec<String>,
}

impl<'a> Attempt<'a> {
    /// Attempts of `id` through `backend` in `cwd`, events ignored.
    pub fn new(
        id: &'a TaskId,
        backend: &'a str,
        cwd: &'a Path,
        mode: Mode,
        prompt: &'a PromptFn<'a>,
    ) -> Self {
        Attempt {
            id,
            backend,
            cwd,
            mode,
            prompt,
            on_event: &ignore,
            git: None,
            clean: false,
            allow_hosts: Vec::new(),
        }
    }

    /// The same attempts for `task`: the hosts its metadata allows
    /// (`allow_hosts`) go to its agent's allowlist.
    #[must_use]
    pub fn for_task(mut self, task: &Task) -> Self {
        self.allow_hosts = wavecrew_backends::egress::task_hosts(&task.metadata);
        self
    }

    /// The same attempts, with `on_event` called for every event.
    #[must_use]
    pub fn on_event(mut self, on_event: &'a (dyn Fn(&AttemptEvent) + Sync)) -> Self {
        self.on_event = on_event;
        self
    }

    /// The same attempts in a work tree whose git is known already
    /// ([`crate::Workspace::work_tree_git`]): no git process asks.
    #[must_use]
    pub fn in_work_tree(mut self, git: Option<wavecrew_sys::git::WorkTreeGit>) -> Self {
        self.git = git;
        self
    }

    /// The same attempts in a work tree known to have no change before
    /// the first of them (with its git given, [`Attempt::in_work_tree`]):
    /// no `git status` is taken before that attempt.
    #[must_use]
    pub fn starting_clean(mut self, clean: bool) -> Self {
        self.clean = clean;
        self
    }
}

/// A review of a task's work: the `review` template, in review mode.
#[derive(Debug, Clone)]
pub struct Review<'a> {
    /// The task reviewed.
    pub task: &'a Task,
    /// The id its attempts are kept under (never the task's own).
    pub id: TaskId,
    /// The backend that reviews.
    pub backend: &'a str,
    /// Where it looks.
    pub cwd: &'a Path,
    /// The acceptance criteria it checks.
    pub criteria: Vec<String>,
}

impl Review<'_> {
    /// The `review` template's context.
    pub fn context(&self) -> serde_json::Value {
        json!({
            "task": {
                "id": self.task.id.as_str(), "title": self.task.title(),
                "description": self.task.description, "acceptance_criteria": self.criteria,
            },
            "cwd": self.cwd.display().to_string(),
        })
    }
}

impl RoleContext {
    /// Run the attempts of `spec` (see the module's notes on prompts).
    /// `Ok` holds the run whatever it came to (`run.success`); `Err` is a
    /// prompt that could not be rendered.
    pub async fn attempt(&self, spec: &Attempt<'_>) -> Result<TaskRun, PhaseError> {
        // The number `run_task` gives the first attempt.
        let first = next_attempt(&self.session_dir, spec.id);
        let first_prompt = (spec.prompt)(first, None)?;
        (spec.prompt)(first + 1, Some(PROBE_ERROR))?;
        let unused_first = Mutex::new(Some(first_prompt.clone()));
        let last_good = Mutex::new(first_prompt);
        let failed: Mutex<Option<PhaseError>> = Mutex::new(None);
        let prompt = |n: u32, error: Option<&str>| {
            if n == first
                && error.is_none()
                && let Some(p) = unused_first
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
            {
                return p;
            }
            let mut good = last_good.lock().unwrap_or_else(PoisonError::into_inner);
            match (spec.prompt)(n, error) {
                Ok(p) => {
                    good.clone_from(&p);
                    p
                }
                Err(e) => {
                    failed
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(e);
                    good.clone()
                }
            }
        };
        // Where the work tree's git is, asked once for the guard, the
        // agent's sandbox and the snapshots of what it changed.
        let git = spec
            .git
            .clone()
            .or_else(|| wavecrew_sys::git::WorkTreeGit::locate(spec.cwd));
        // The repository's configuration and hooks, and what leads git to
        // the work tree's git folder, as they were before the agent (it
        // may not change how git runs, nor which repository git reads).
        let guard = git
            .as_ref()
            .map(wavecrew_isolation::RepoGuard::of_work_tree)
            .transpose()
            .map_err(|e| {
                PhaseError::workspace(format!("reading the repository's git configuration: {e}"))
            })?;
        let run = run_task(&TaskAttempts {
            config: &self.config,
            backend: spec.backend,
            task_id: spec.id,
            cwd: spec.cwd,
            git: git.as_ref(),
            clean_before: spec.clean && spec.git.is_some(),
            mode: spec.mode,
            session_dir: &self.session_dir,
            prompt: &prompt,
            on_event: spec.on_event,
            allow_hosts: &spec.allow_hosts,
        })
        .await;
        if let Some(guard) = guard {
            let found = guard.restore().map_err(|e| {
                PhaseError::check(format!(
                    "{}: the agent changed the repository's git configuration or hooks, and \
                     they could not be put back: {e}",
                    spec.id.as_str()
                ))
            })?;
            if !found.is_empty() {
                return Err(PhaseError::check(format!(
                    "{}: the agent changed what git runs ({}); wavecrew put it back. Git \
                     takes commands from these files (hooks, the fsmonitor, filter and diff \
                     drivers, and the `.git` redirects that choose which configuration it \
                     reads), so an attempt that changes them fails",
                    spec.id.as_str(),
                    found.join("; ")
                ))
                .with_tampered(found));
            }
        }
        match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(e) => Err(e),
            None => Ok(run),
        }
    }

    /// Review a task's work: the `review` template (its failure is the
    /// task's error) through `review.backend` in review mode.
    pub async fn review(&self, review: &Review<'_>) -> Result<TaskRun, PhaseError> {
        let text = self.render("review", &review.context())?;
        let prompt = move |_: u32, _: Option<&str>| Ok(text.clone());
        self.attempt(&Attempt::new(
            &review.id,
            review.backend,
            review.cwd,
            Mode::Review,
            &prompt,
        ))
        .await
    }
}

/// The backend a task really used: its last attempt's, else the one decided.
pub fn backend_used(run: Option<&TaskRun>, decided: &str) -> String {
    run.and_then(TaskRun::last)
        .map_or_else(|| decided.to_owned(), |o| o.backend.clone())
}

/// `<task>-<suffix>` (`IMPL-001-review`), an attempt id of its own: see
/// [`derived_id_from`].
pub fn derived_id(task: &TaskId, suffix: &str) -> Result<TaskId, PhaseError> {
    derived_id_from(&format!("{}-{suffix}", task.as_str()), task)
}

/// `name` as an attempt id that is never `task`'s. A name longer than an
/// id may be (128 bytes) is shortened the same way every time: its head,
/// a hash of the whole name, and its last 32 bytes, so two long names that
/// differ anywhere stay apart. An invalid name (a character an id may not
/// hold) or one equal to the task's id is an error.
pub fn derived_id_from(name: &str, task: &TaskId) -> Result<TaskId, PhaseError> {
    let bad = |why: String| {
        PhaseError::input(format!(
            "{}: cannot derive an attempt id from `{name}`: {why}",
            task.as_str()
        ))
    };
    let candidate = if name.len() <= MAX_ID_LEN {
        name.to_owned()
    } else {
        const TAIL: usize = 32;
        let hash = {
            use std::hash::Hasher as _;
            let mut h = fnv::FnvHasher::default();
            h.write(name.as_bytes());
            format!("{:016x}", h.finish())
        };
        // Byte boundaries: an id is ASCII, anything else fails below.
        let head_len = MAX_ID_LEN - TAIL - hash.len() - 2;
        match (name.get(..head_len), name.get(name.len() - TAIL..)) {
            (Some(head), Some(tail)) => format!("{head}-{hash}-{tail}"),
            _ => return Err(bad("it is not ASCII".into())),
        }
    };
    let id = TaskId::new(candidate).map_err(|e| bad(e.to_string()))?;
    if &id == task {
        return Err(bad("it is the task's own id".into()));
    }
    Ok(id)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use wavecrew_backends::config::Config;
    use wavecrew_core::SessionId;

    use super::*;

    /// A context in a temporary project whose backend `echo` copies its
    /// prompt (stdin) to `prompt.txt` and succeeds.
    pub(crate) fn context() -> (tempfile::TempDir, RoleContext) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let session = root.join(".workflow/.team/TC-kit-2026-11-23");
        std::fs::create_dir_all(&session).unwrap();
        let config = Config::parse(
            "[backends.echo]\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"cat > prompt.txt\"]\n",
            Path::new("wavecrew.toml"),
        )
        .unwrap();
        let (bus, _) = wavecrew_msgbus::Bus::open(
            &root,
            "TC-kit-2026-11-23",
            wavecrew_msgbus::KeyUse::Write,
            wavecrew_msgbus::Durability::Batch,
        )
        .unwrap();
        let ctx = RoleContext::new(
            root,
            session,
            SessionId::new("TC-kit-2026-11-23").unwrap(),
            config,
            crate::share_bus(bus),
        );
        (dir, ctx)
    }

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    #[test]
    fn derived_ids_are_never_the_tasks() {
        let task = id("IMPL-001");
        assert_eq!(
            derived_id(&task, "review").unwrap().as_str(),
            "IMPL-001-review"
        );
        assert_eq!(derived_id(&task, "fix2").unwrap().as_str(), "IMPL-001-fix2");
        // An id near the 128-byte limit: shortened, valid, still distinct,
        // the same every time, and apart from its neighbour's.
        for len in [120, 122, 127, 128] {
            let long = id(&format!("IMPL-{}", "x".repeat(len - 5)));
            let review = derived_id(&long, "review").unwrap();
            assert_ne!(review, long, "{len}");
            assert!(review.as_str().len() <= MAX_ID_LEN, "{len}");
            assert!(review.as_str().ends_with("-review"), "{review:?}");
            assert_eq!(
                review,
                derived_id(&long, "review").unwrap(),
                "deterministic"
            );
            assert_ne!(review, derived_id(&long, "fix1").unwrap());
            let neighbour = id(&format!("IMPL-{}y", "x".repeat(len - 6)));
            assert_ne!(review, derived_id(&neighbour, "review").unwrap(), "{len}");
        }
        // Exactly at the limit needs no shortening.
        let fits = id(&format!("IMPL-{}", "x".repeat(128 - 5 - 7)));
        assert_eq!(
            derived_id(&fits, "review").unwrap().as_str(),
            format!("{}-review", fits.as_str())
        );
        // Never silently the task's own id.
        let e = derived_id_from("IMPL-001", &task).unwrap_err();
        assert!(e.message.contains("the task's own id"), "{e}");
        let e = derived_id(&task, "re/view").unwrap_err();
        assert!(e.message.contains("cannot derive an attempt id"), "{e}");
    }

    #[test]
    fn the_backend_used_is_the_last_attempts_else_the_decision() {
        assert_eq!(backend_used(None, "codex"), "codex");
        let empty = TaskRun {
            attempts: Vec::new(),
            switches: Vec::new(),
            success: false,
            failure: None,
        };
        assert_eq!(backend_used(Some(&empty), "codex"), "codex");
    }

    #[tokio::test]
    async fn a_template_that_fails_runs_no_attempt() {
        let (_dir, ctx) = context();
        let task = id("IMPL-001");
        let cwd = ctx.project_root.clone();
        // The first prompt fails: nothing runs, the error is the template's.
        let broken = |_: u32, _: Option<&str>| ctx.render("execution", &json!({}));
        let e = ctx
            .attempt(&Attempt::new(&task, "echo", &cwd, Mode::Write, &broken))
            .await
            .unwrap_err();
        assert!(e.message.starts_with("prompt template `execution`"), "{e}");
        // Only a retry's prompt fails: still nothing runs.
        let retry_broken = |_: u32, error: Option<&str>| match error {
            None => Ok("do it".to_owned()),
            Some(_) => ctx.render("review", &json!({})),
        };
        let e = ctx
            .attempt(&Attempt::new(
                &task,
                "echo",
                &cwd,
                Mode::Write,
                &retry_broken,
            ))
            .await
            .unwrap_err();
        assert!(e.message.starts_with("prompt template `review`"), "{e}");
        assert!(
            !wavecrew_backends::attempts::task_attempts_dir(&ctx.session_dir, &task).exists(),
            "no attempt started"
        );
    }

    #[tokio::test]
    async fn the_first_prompt_is_rendered_once_and_sent() {
        let (_dir, ctx) = context();
        let task = id("IMPL-002");
        let cwd = ctx.project_root.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let calls = Mutex::new(Vec::new());
        let prompt = |n: u32, error: Option<&str>| {
            calls.lock().unwrap().push((n, error.map(str::to_owned)));
            Ok(format!("attempt {n}"))
        };
        let run = ctx
            .attempt(&Attempt::new(&task, "echo", &cwd, Mode::Write, &prompt))
            .await
            .unwrap();
        assert!(run.success, "{run:#?}");
        assert_eq!(backend_used(Some(&run), "other"), "echo");
        let sent = std::fs::read_to_string(cwd.join("prompt.txt")).unwrap();
        assert!(sent.contains("attempt 1"), "{sent}");
        // The first prompt and the retry probe; the attempt reused the first.
        assert_eq!(
            *calls.lock().unwrap(),
            vec![(1, None), (2, Some(PROBE_ERROR.to_owned()))]
        );
    }
}
