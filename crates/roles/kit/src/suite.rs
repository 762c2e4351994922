//! The project's test suite as the checks after an agent run it: at most
//! once for a version of a task's work, and once for a base.
//!
//! - **The task's run** ([`RoleContext::task_suite`]): the suite with the
//!   framework's own reporter in the task's folder, made once and shared by
//!   every check of that version of the work: an acceptance command that
//!   runs the same suite ([`wavecrew_validation::Framework::runs_suite`])
//!   and the comparison with the base.
//! - **The base's run** (`RoleContext::base_suite`): the suite in a
//!   detached worktree of the commit the task's work started from, kept in
//!   the session's `cache/test-runs/<framework>-<tree>.json` by the base's
//!   tree id: a commit never changes, so every task with the same base
//!   shares one run (the first takes the tree's lock and runs it, the
//!   others wait and read it). Only wavecrew writes there, and only the
//!   runs of a fresh checkout of a commit: never a run in a worktree an
//!   agent worked in, whose ignored files the tree does not show.
//!
//! Every run (made, or kept) is noted ([`SuiteNote`]) for the task's
//! evidence, with its time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wavecrew_core::Task;
use wavecrew_core::role::PhaseError;
use wavecrew_validation::{AcceptanceOptions, Framework, SuiteVerdict, TestOptions, TestRunner};

use crate::context::RoleContext;
pub use crate::suite_run::{SuiteNote, SuiteRun};
use crate::workspace::Workspace;

impl RoleContext {
    /// The options of every run of the suite the checks make: no coverage,
    /// reports in `folder`, in the checks' box.
    fn suite_options(&self, folder: PathBuf, framework: Option<Framework>) -> TestOptions {
        TestOptions {
            framework,
            coverage: false,
            evidence_dir: Some(folder),
            confined: self.command_box(),
            ..TestOptions::default()
        }
    }

    /// The task's one run of the suite in `workspace` (made now, or the one
    /// made for this version of the work already: the flag says which);
    /// `None` when no framework is found there. `Err`: the suite could not
    /// run (a tool missing, a time limit): an environment problem.
    pub async fn task_suite(
        &self,
        task: &Task,
        workspace: &Workspace,
    ) -> Result<Option<(Framework, Arc<SuiteRun>, bool)>, String> {
        let key = (
            task.id.as_str().to_owned(),
            workspace.dir().to_owned(),
            workspace
                .branch()
                .map(|(b, _)| b.to_owned())
                .unwrap_or_default(),
        );
        let known = self
            .task_runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .cloned();
        if let Some((framework, run)) = known {
            return Ok(Some((framework, run, false)));
        }
        let folder =
            wavecrew_core::SessionLayout::new(&self.session_dir).attempts(task.id.as_str());
        let Ok(mut runner) = TestRunner::new(
            workspace.dir(),
            self.suite_options(folder.join("tests-task"), None),
        )
        .await
        else {
            return Ok(None);
        };
        let framework = runner.framework().clone();
        let run = runner.run().await.map_err(|e| e.to_string())?;
        let run = Arc::new(SuiteRun::of(&framework, run));
        self.task_runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, (framework.clone(), Arc::clone(&run)));
        Ok(Some((framework, run, true)))
    }

    /// The acceptance options of `task`'s checks, run in `cwd` of
    /// `workspace`: in the checks' box, and, when one of `criteria` runs
    /// the project's suite where the task's run is made (the workspace's
    /// root, not a `working_dir` below it), judged by the task's one run of
    /// it (made here when none was).
    pub async fn acceptance_options(
        &self,
        task: &Task,
        workspace: &Workspace,
        cwd: &Path,
        criteria: &[wavecrew_core::Criterion],
        implementation_text: String,
    ) -> AcceptanceOptions {
        let mut options = AcceptanceOptions {
            implementation_text,
            confined: self.command_box(),
            ..AcceptanceOptions::default()
        };
        if cwd != workspace.dir() {
            return options;
        }
        let commands: Vec<Vec<String>> = criteria
            .iter()
            .filter_map(|c| c.verify.as_deref())
            .filter_map(|v| wavecrew_validation::split_command(v).ok())
            .collect();
        if commands.is_empty() {
            return options;
        }
        let Some(framework) = wavecrew_validation::detect_framework(
            workspace.dir(),
            &std::collections::BTreeMap::default(),
        )
        .await
        else {
            return options;
        };
        if !commands.iter().any(|argv| framework.runs_suite(argv)) {
            return options;
        }
        // A suite that cannot run here is judged by running the command
        // itself, as before: its own output says why.
        if let Ok(Some((framework, run, ran))) = self.task_suite(task, workspace).await {
            options.suite = Some(SuiteVerdict {
                framework,
                command: run.command.clone(),
                exit_code: run.exit_code,
                tests: run.report.counts.total,
                output: run.output_tail.clone(),
                duration_ms: run.duration_ms,
                ran,
            });
        }
        options
    }

    /// The suite's run on `base` (a commit), with `framework`: kept by the
    /// base's tree id, or run now in a detached worktree of it (seeded and
    /// set up as a task's worktree is, removed afterwards) and kept.
    pub(crate) async fn base_suite(
        &self,
        task: &Task,
        integration: &wavecrew_isolation::Integration,
        base: &str,
        framework: &Framework,
    ) -> Result<(Arc<SuiteRun>, SuiteNote), PhaseError> {
        let environment = |e: String| PhaseError::environment(format!("the base's tests: {e}"));
        let tree = {
            let (integration, base) = (integration.clone(), base.to_owned());
            tokio::task::spawn_blocking(move || integration.tree_id(&base))
                .await
                .map_err(|e| environment(e.to_string()))?
                .map_err(|e| environment(e.to_string()))?
        };
        let cache = wavecrew_core::SessionLayout::new(&self.session_dir).test_runs();
        let file = cache.join(format!("{}-{tree}.json", framework.name()));
        // One run per tree: the first check takes its lock and runs it, the
        // others wait for the lock and find it kept.
        let lock = {
            let path = file.with_extension("lock");
            tokio::task::spawn_blocking(move || wavecrew_sys::lock::lock_file(&path))
                .await
                .map_err(|e| environment(e.to_string()))?
                .map_err(|e| environment(e.to_string()))?
        };
        if let Some(kept) = read_kept(&file) {
            drop(lock);
            let note = SuiteNote::of("base", Some(tree), &kept, false);
            return Ok((Arc::new(kept), note));
        }
        let folder =
            wavecrew_core::SessionLayout::new(&self.session_dir).attempts(task.id.as_str());
        let name = format!("base-{}", task.id.as_str());
        let seed = self.config.isolation.seed.clone();
        let max = self.config.isolation.seed_max_mb.saturating_mul(1 << 20);
        let made = {
            let (integration, base) = (integration.clone(), base.to_owned());
            tokio::task::spawn_blocking(move || {
                let wt = integration.detached_worktree_at(&name, &base)?;
                integration.seed_build_state(&wt, &seed, max)?;
                Ok::<_, wavecrew_isolation::IsolationError>(wt)
            })
            .await
            .map_err(|e| PhaseError::workspace(format!("the base's worktree: {e}")))?
            .map_err(|e| PhaseError::workspace(format!("the base's worktree: {e}")))?
        };
        let ran = async {
            self.run_setup(&made.path, &folder.join("setup-base.log"))?;
            let mut runner = TestRunner::new(
                &made.path,
                self.suite_options(folder.join("tests-base"), Some(framework.clone())),
            )
            .await
            .map_err(|e| PhaseError::environment(e.to_string()))?;
            runner
                .run()
                .await
                .map_err(|e| PhaseError::environment(e.to_string()))
        }
        .await;
        let removed = made.clone();
        let owner = integration.clone();
        let _ = tokio::task::spawn_blocking(move || owner.remove_worktree(&removed)).await;
        let run = ran?;
        let run = SuiteRun::of(framework, run);
        // Kept only when it says something (a run that listed no test may
        // be the environment's fault: the next task tries again).
        if !run.report.cases.is_empty() {
            let _ = wavecrew_core::fsutil::write_json_atomic(&file, &run);
        }
        drop(lock);
        let note = SuiteNote::of("base", Some(tree), &run, true);
        Ok((Arc::new(run), note))
    }
}

/// A kept run, when its file is there and reads back.
fn read_kept(file: &Path) -> Option<SuiteRun> {
    let text = std::fs::read_to_string(file).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::TaskId;

    /// A worker that goes on to another task in the same folder (in
    /// place) never reads the last task's run as its own.
    #[tokio::test]
    async fn a_run_is_the_tasks_own() {
        let (_dir, ctx) = crate::attempt::tests::context();
        let workspace = Workspace::InPlace {
            dir: ctx.project_root.clone(),
        };
        let first = Task::new(TaskId::new("IMPL-001").unwrap(), "one", "");
        let run = SuiteRun {
            framework: "pytest".to_owned(),
            command: "pytest".to_owned(),
            exit_code: Some(0),
            duration_ms: 1,
            report: wavecrew_validation::TestReport::from_cases(
                Vec::new(),
                wavecrew_validation::Source::Report,
                Vec::new(),
            ),
            output_tail: String::new(),
            network: None,
        };
        ctx.task_runs.lock().unwrap().insert(
            (
                "IMPL-001".to_owned(),
                workspace.dir().to_owned(),
                String::new(),
            ),
            (Framework::Pytest, Arc::new(run)),
        );
        let kept = ctx.task_suite(&first, &workspace).await.unwrap();
        assert!(
            matches!(kept, Some((_, _, false))),
            "the first task's own run, kept"
        );
        let second = Task::new(TaskId::new("IMPL-002").unwrap(), "two", "");
        // No framework in this folder: nothing ran, and nothing of the
        // first task's was taken for the second's.
        assert!(ctx.task_suite(&second, &workspace).await.unwrap().is_none());
    }
}
