//! Tests compared with the task's base. A task whose change touches a test
//! file or a test runner's configuration has the project's tests compared
//! with the framework's own reporter (pytest, jest, vitest, cargo, go):
//! the task's one run of the suite in its worktree (shared with its
//! acceptance command, [`crate::suite`]), and the base's run in a detached
//! worktree of the commit its work started from (kept by the base's tree
//! id, shared by every task with that base). Tests of the base that
//! are gone, or that ran there and are skipped now, are named
//! ([`TestDrift`]); the executor fails such a task, since a criterion that
//! passes only because its tests went away must not pass.
//!
//! Only isolated tasks are compared (in place there is no base to run),
//! and only when a framework is found.

use serde::Serialize;
use wavecrew_core::Task;
use wavecrew_core::role::PhaseError;
use wavecrew_validation::{TestDrift, touches_tests};

use crate::context::RoleContext;
use crate::suite_run::{SuiteNote, task_note};
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
    /// The runs of the suite it rests on (the task's, the base's), made
    /// for it or kept, with their time.
    pub runs: Vec<SuiteNote>,
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
        let (framework, after, ran) = match self.task_suite(task, workspace).await {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(None),
            // Tests that cannot run say nothing of the change: reported as
            // an environment problem, not the agent's failure.
            Err(e) => {
                let framework = wavecrew_validation::detect_framework(
                    workspace.dir(),
                    &std::collections::BTreeMap::default(),
                )
                .await;
                return Ok(Some(BaseComparison {
                    framework: framework.map(|f| f.name().to_owned()).unwrap_or_default(),
                    base_tests: 0,
                    task_tests: 0,
                    drift: TestDrift::default(),
                    inconclusive: Some(format!(
                        "the tests could not run in the task's worktree: {e}"
                    )),
                    runs: Vec::new(),
                }));
            }
        };
        let mut runs = vec![task_note(&after, ran)];
        let base_run = self
            .base_suite(task, integration, &worktree.base, &framework)
            .await;
        let (base_tests, drift, inconclusive) = match base_run {
            Ok((base, note)) => {
                runs.push(note);
                if base.report.cases.is_empty() {
                    (
                        0,
                        TestDrift::default(),
                        Some("the base's tests reported no test case".to_owned()),
                    )
                } else {
                    (
                        base.report.cases.len(),
                        TestDrift::between(&base.report, &after.report),
                        None,
                    )
                }
            }
            Err(e) if e.kind == wavecrew_core::role::PhaseErrorKind::Environment => (
                0,
                TestDrift::default(),
                Some(format!("the base's tests could not run: {}", e.message)),
            ),
            Err(e) => return Err(e),
        };
        Ok(Some(BaseComparison {
            framework: framework.name().to_owned(),
            base_tests,
            task_tests: after.report.cases.len(),
            drift,
            inconclusive,
            runs,
        }))
    }
}
