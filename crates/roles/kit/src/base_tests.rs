//! Tests compared with the task's base. A task whose change touches a test
//! file or a test runner's configuration has the project's tests run twice
//! with the framework's own reporter (pytest, jest, vitest, cargo, go):
//! in its worktree, and in a detached worktree of its base (seeded and set
//! up as a task's worktree is, removed afterwards). Tests of the base that
//! are gone, or that ran there and are skipped now, are named
//! ([`TestDrift`]); the executor fails such a task, since a criterion that
//! passes only because its tests went away must not pass.
//!
//! Only isolated tasks are compared (in place there is no base to run),
//! and only when a framework is found.

use serde::Serialize;
use wavecrew_core::Task;
use wavecrew_core::role::PhaseError;
use wavecrew_validation::{TestDrift, TestOptions, TestRunner, touches_tests};

use crate::context::RoleContext;
use crate::workspace::Workspace;

/// The two runs and what changed between them.
#[derive(Debug, Clone, Serialize)]
pub struct BaseComparison {
    /// The framework that ran both.
    pub framework: String,
    /// Tests in the base's report.
    pub base_tests: usize,
    /// Tests in the task's report.
    pub task_tests: usize,
    /// What went away or was newly skipped.
    pub drift: TestDrift,
    /// Why the comparison says nothing, when it could not be made (the
    /// base's tests did not run): an environment problem, not the agent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
}

impl RoleContext {
    /// Compare `task`'s tests with its base's when `files` (what it
    /// changed) touch tests; `None` when there is nothing to compare (in
    /// place, no test or test configuration touched, no framework found).
    pub async fn compare_tests_with_base(
        &self,
        task: &Task,
        workspace: &Workspace,
        files: &[String],
    ) -> Result<Option<BaseComparison>, PhaseError> {
        let Workspace::Isolated {
            integration,
            worktree,
        } = workspace
        else {
            return Ok(None);
        };
        if !files.iter().any(|f| touches_tests(f)) {
            return Ok(None);
        }
        let folder =
            wavecrew_core::SessionLayout::new(&self.session_dir).attempts(task.id.as_str());
        let options = |name: &str| TestOptions {
            coverage: false,
            evidence_dir: Some(folder.join(name)),
            confined: self.command_box(),
            ..TestOptions::default()
        };
        let Ok(mut after) = TestRunner::new(&worktree.path, options("tests-task")).await else {
            return Ok(None);
        };
        let framework = after.framework().clone();
        let after = match after.run().await {
            Ok(run) => run,
            // Tests that cannot run say nothing of the change: reported as
            // an environment problem, not the agent's failure.
            Err(e) => {
                return Ok(Some(BaseComparison {
                    framework: framework.name().to_owned(),
                    base_tests: 0,
                    task_tests: 0,
                    drift: TestDrift::default(),
                    inconclusive: Some(format!(
                        "the tests could not run in the task's worktree: {e}"
                    )),
                }));
            }
        };

        // The base, checked out beside it.
        let (integration, base, name) = (
            (**integration).clone(),
            worktree.base.clone(),
            format!("base-{}", task.id.as_str()),
        );
        let seed = self.config.isolation.seed.clone();
        let max = self.config.isolation.seed_max_mb.saturating_mul(1 << 20);
        let made = {
            let integration = integration.clone();
            tokio::task::spawn_blocking(move || {
                let wt = integration.detached_worktree_at(&name, &base)?;
                integration.seed_build_state(&wt, &seed, max)?;
                Ok::<_, wavecrew_isolation::IsolationError>(wt)
            })
            .await
            .map_err(|e| PhaseError::workspace(format!("the base's worktree: {e}")))?
            .map_err(|e| PhaseError::workspace(format!("the base's worktree: {e}")))?
        };
        let base_run = async {
            self.run_setup(&made.path, &folder.join("setup-base.log"))?;
            let mut runner = TestRunner::new(
                &made.path,
                TestOptions {
                    framework: Some(framework.clone()),
                    ..options("tests-base")
                },
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
        let _ = tokio::task::spawn_blocking(move || integration.remove_worktree(&removed)).await;

        let (base_tests, drift, inconclusive) = match base_run {
            Ok(base) if !base.report.cases.is_empty() => (
                base.report.cases.len(),
                TestDrift::between(&base.report, &after.report),
                None,
            ),
            Ok(_) => (
                0,
                TestDrift::default(),
                Some("the base's tests reported no test case".to_owned()),
            ),
            Err(e) => (
                0,
                TestDrift::default(),
                Some(format!("the base's tests could not run: {}", e.message)),
            ),
        };
        Ok(Some(BaseComparison {
            framework: framework.name().to_owned(),
            base_tests,
            task_tests: after.report.cases.len(),
            drift,
            inconclusive,
        }))
    }
}
