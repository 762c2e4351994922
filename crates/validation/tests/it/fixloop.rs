//! The test-fix loop against a scripted fixer: fixes in one round, needs
//! three rounds, never fixes, makes things worse (restored), flaky tests
//! (reported, never sent to the fixer), coverage below target; the
//! `results/run-<NNN>.json` record; and one loop over the real pytest
//! project.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use wavecrew_validation::{
    FixReply, FixRequest, Fixer, LoopOptions, Outcome, Source, StateName, SuiteRun, TestCase,
    TestOptions, TestReport, TestRunner, TestSource, Verdict, run_fix_loop, write_run_result,
};

use crate::support::{copy_fixture, python_env};
use StateName::{Done, Fix, Judge, Rerun, Restore, Run};

/// Tests whose results live in the working tree: `results.txt` holds one
/// `name pass|fail|flaky [message]` line per test (a flaky test fails in a
/// suite run and passes when rerun alone), `coverage.txt` the coverage.
struct FileTests {
    root: PathBuf,
}

impl FileTests {
    fn new(results: &str, coverage: f64) -> (tempfile::TempDir, FileTests) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.txt"), results).unwrap();
        std::fs::write(dir.path().join("coverage.txt"), coverage.to_string()).unwrap();
        std::fs::write(dir.path().join("src.txt"), "original source\n").unwrap();
        let root = dir.path().to_owned();
        (dir, FileTests { root })
    }

    fn report(&self, rerun: bool, only: Option<&[TestCase]>) -> TestReport {
        let text = std::fs::read_to_string(self.root.join("results.txt")).unwrap();
        let cases = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let mut parts = line.splitn(3, ' ');
                let name = parts.next().unwrap().to_owned();
                let status = parts.next().unwrap();
                let message = parts.next().map(str::to_owned);
                let outcome = match (status, rerun) {
                    ("pass", _) | ("flaky", true) => Outcome::Passed,
                    ("skip", _) => Outcome::Skipped,
                    _ => Outcome::Failed,
                };
                TestCase {
                    id: name.clone(),
                    name,
                    classname: None,
                    file: Some("results.txt".into()),
                    outcome,
                    message: (outcome == Outcome::Failed)
                        .then(|| message.unwrap_or_else(|| "AssertionError".into())),
                }
            })
            .filter(|c| only.is_none_or(|o| o.iter().any(|x| x.id == c.id)))
            .collect();
        TestReport::from_cases(cases, Source::Report, vec![self.root.join("results.txt")])
    }
}

#[async_trait]
impl TestSource for FileTests {
    fn framework(&self) -> String {
        "scripted".into()
    }
    fn root(&self) -> &Path {
        &self.root
    }
    fn exclude(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    async fn run_suite(&mut self) -> wavecrew_validation::Result<SuiteRun> {
        let coverage = std::fs::read_to_string(self.root.join("coverage.txt"))
            .unwrap()
            .trim()
            .parse()
            .ok();
        Ok(SuiteRun {
            report: self.report(false, None),
            coverage,
            evidence: vec![self.root.join("results.txt")],
        })
    }
    async fn rerun_cases(
        &mut self,
        cases: &[TestCase],
    ) -> wavecrew_validation::Result<Option<TestReport>> {
        Ok(Some(self.report(true, Some(cases))))
    }
}

type Step = Box<dyn Fn(&Path) + Send + Sync>;

/// A fixer that plays one scripted step per round (nothing once they run
/// out) and records every request.
struct ScriptedFixer {
    steps: Vec<Step>,
    requests: Mutex<Vec<FixRequest>>,
}

impl ScriptedFixer {
    fn new(steps: Vec<Step>) -> Self {
        ScriptedFixer {
            steps,
            requests: Mutex::new(Vec::new()),
        }
    }
    fn requests(&self) -> Vec<FixRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl Fixer for ScriptedFixer {
    async fn fix(&self, request: &FixRequest) -> wavecrew_validation::Result<FixReply> {
        self.requests.lock().unwrap().push(request.clone());
        if let Some(step) = self.steps.get(request.round as usize - 1) {
            step(&request.root);
        }
        Ok(FixReply {
            summary: format!("round {}", request.round),
        })
    }
}

fn set_results(text: &'static str) -> Step {
    Box::new(move |root: &Path| std::fs::write(root.join("results.txt"), text).unwrap())
}

fn no_coverage_target() -> LoopOptions {
    LoopOptions {
        coverage_target: None,
        ..LoopOptions::default()
    }
}

#[tokio::test]
async fn fixes_in_one_round() {
    let (_dir, mut tests) = FileTests::new(
        "a pass\nb fail TypeError: Cannot read properties of undefined (reading 'id')\n",
        90.0,
    );
    let fixer = ScriptedFixer::new(vec![set_results("a pass\nb pass\n")]);
    let out = run_fix_loop(&mut tests, &fixer, &LoopOptions::default())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Passed);
    assert_eq!(out.iterations, 1);
    assert_eq!(out.rounds.len(), 2);
    assert_eq!(
        (out.rounds[0].pass_rate, out.rounds[1].pass_rate),
        (0.5, 1.0)
    );
    assert_eq!(out.rounds[1].fix_summary.as_deref(), Some("round 1"));
    assert_eq!(out.defect_patterns, ["null_reference"]);
    assert_eq!(
        out.states,
        [Run, Rerun, Judge, Fix, Run, Rerun, Judge, Done]
    );
    let req = &fixer.requests()[0];
    assert_eq!(req.failures.len(), 1);
    assert_eq!(req.failures[0].name, "b");
    assert!(
        req.failures[0]
            .message
            .as_deref()
            .unwrap()
            .contains("Cannot read properties")
    );
}

#[tokio::test]
async fn needs_three_rounds() {
    let (_dir, mut tests) = FileTests::new("a pass\nx fail\ny fail\nz fail\n", 90.0);
    let fixer = ScriptedFixer::new(vec![
        set_results("a pass\nx pass\ny fail\nz fail\n"),
        set_results("a pass\nx pass\ny pass\nz fail\n"),
        set_results("a pass\nx pass\ny pass\nz pass\n"),
    ]);
    let out = run_fix_loop(&mut tests, &fixer, &LoopOptions::default())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Passed);
    assert_eq!(out.iterations, 3);
    let rates: Vec<f64> = out.rounds.iter().map(|r| r.pass_rate).collect();
    assert_eq!(rates, [0.25, 0.5, 0.75, 1.0]);
    let sent: Vec<usize> = fixer.requests().iter().map(|r| r.failures.len()).collect();
    assert_eq!(sent, [3, 2, 1]);
}

#[tokio::test]
async fn never_fixes() {
    let (dir, mut tests) = FileTests::new("a pass\nb fail\n", 90.0);
    let fixer = ScriptedFixer::new(Vec::new());
    let out = run_fix_loop(&mut tests, &fixer, &LoopOptions::default())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Failed);
    assert_eq!(out.iterations, 3, "at most 3 rounds");
    assert_eq!(out.rounds.len(), 4);
    assert!(out.rounds.iter().all(|r| r.pass_rate == 0.5 && !r.reverted));
    // The record of the run.
    let (path, result) = write_run_result(dir.path(), &out).unwrap();
    assert!(path.ends_with("results/run-001.json"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let keys: Vec<&str> = v
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .take(10)
        .collect();
    assert_eq!(
        keys,
        [
            "run_id",
            "pass_rate",
            "coverage",
            "coverage_target",
            "iterations",
            "passed",
            "failure_summary",
            "defect_patterns",
            "effective_patterns",
            "timestamp"
        ],
        "ccw's fields first, in ccw's order"
    );
    assert_eq!(v["run_id"], "run-001");
    assert_eq!(v["passed"], false);
    assert_eq!(v["iterations"], 3);
    assert_eq!(v["failure_summary"], "1 failing: AssertionError");
    assert_eq!(
        v["defect_patterns"],
        serde_json::json!(["assertion_failure"])
    );
    assert_eq!(v["rounds"].as_array().unwrap().len(), 4);
    assert_eq!(result.coverage_target, Some(80.0));
    let (path, _) = write_run_result(dir.path(), &out).unwrap();
    assert!(path.ends_with("results/run-002.json"));
}

#[tokio::test]
async fn a_round_that_makes_things_worse_is_restored() {
    let (dir, mut tests) = FileTests::new("a pass\nb pass\nc fail\n", 90.0);
    let fixer = ScriptedFixer::new(vec![
        Box::new(|root: &Path| {
            std::fs::write(root.join("results.txt"), "a fail\nb fail\nc fail\n").unwrap();
            std::fs::write(root.join("src.txt"), "broken source\n").unwrap();
            std::fs::write(root.join("stray.txt"), "left by the fixer\n").unwrap();
        }),
        set_results("a pass\nb pass\nc pass\n"),
    ]);
    let out = run_fix_loop(&mut tests, &fixer, &no_coverage_target())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Passed);
    assert_eq!(out.iterations, 2);
    let reverted: Vec<bool> = out.rounds.iter().map(|r| r.reverted).collect();
    assert_eq!(reverted, [false, true, false]);
    assert_eq!(out.rounds[1].pass_rate, 0.0);
    assert_eq!(
        out.states,
        [
            Run, Rerun, Judge, Fix, Run, Rerun, Judge, Restore, Fix, Run, Rerun, Judge, Done
        ]
    );
    // The second request started from the restored tree.
    let second = &fixer.requests()[1];
    assert_eq!(
        second
            .failures
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>(),
        ["c"]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src.txt")).unwrap(),
        "original source\n"
    );
    assert!(!dir.path().join("stray.txt").exists());
}

#[tokio::test]
async fn worse_in_the_last_round_is_restored_and_reported() {
    let (dir, mut tests) = FileTests::new("a pass\nb fail\n", 90.0);
    let fixer = ScriptedFixer::new(vec![
        Box::new(|_: &Path| {}),
        Box::new(|_: &Path| {}),
        Box::new(|root: &Path| {
            std::fs::write(root.join("results.txt"), "a fail\nb fail\n").unwrap();
        }),
    ]);
    let out = run_fix_loop(&mut tests, &fixer, &no_coverage_target())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Failed);
    assert!(out.rounds[3].reverted);
    assert_eq!(
        out.final_round().pass_rate,
        0.5,
        "the kept state is the one before the bad round"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("results.txt")).unwrap(),
        "a pass\nb fail\n"
    );
}

#[tokio::test]
async fn flaky_tests_are_reported_not_fixed() {
    // Only a flaky failure: passes at once, no fixer call.
    let (_dir, mut tests) = FileTests::new("a pass\nb pass\nf flaky\n", 90.0);
    let fixer = ScriptedFixer::new(Vec::new());
    let out = run_fix_loop(&mut tests, &fixer, &LoopOptions::default())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Passed);
    assert_eq!(out.iterations, 0);
    assert_eq!(out.flaky, ["f"]);
    assert_eq!(out.rounds[0].failed, 1, "the report's own numbers are kept");
    assert_eq!(
        out.rounds[0].pass_rate, 1.0,
        "a flaky test counts as passed for the decision"
    );
    assert!(fixer.requests().is_empty());
    assert!(
        out.defect_patterns.is_empty(),
        "flaky failures are not defects"
    );

    // A flaky and a real failure: the fixer sees only the real one.
    let (_dir, mut tests) = FileTests::new("a pass\nf flaky\nb fail\n", 90.0);
    let fixer = ScriptedFixer::new(vec![set_results("a pass\nf flaky\nb pass\n")]);
    let out = run_fix_loop(&mut tests, &fixer, &LoopOptions::default())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Passed);
    let names: Vec<String> = fixer.requests()[0]
        .failures
        .iter()
        .map(|f| f.name.clone())
        .collect();
    assert_eq!(names, ["b"]);
    assert_eq!(out.rounds[0].flaky, ["f"]);
    assert_eq!(out.rounds[0].failing, ["b"]);
}

#[tokio::test]
async fn coverage_below_target_keeps_the_loop_going() {
    let (_dir, mut tests) = FileTests::new("a pass\n", 60.0);
    let fixer = ScriptedFixer::new(vec![Box::new(|root: &Path| {
        std::fs::write(root.join("coverage.txt"), "85").unwrap();
    })]);
    let out = run_fix_loop(&mut tests, &fixer, &LoopOptions::default())
        .await
        .unwrap();
    assert_eq!(out.verdict, Verdict::Passed);
    assert_eq!(out.iterations, 1);
    let req = &fixer.requests()[0];
    assert!(req.failures.is_empty());
    assert_eq!(
        (req.coverage, req.coverage_target),
        (Some(60.0), Some(80.0))
    );
}

/// A fixer that repairs the pytest fixture's two real bugs.
struct PythonFixer;

#[async_trait]
impl Fixer for PythonFixer {
    async fn fix(&self, request: &FixRequest) -> wavecrew_validation::Result<FixReply> {
        let calc = request.root.join("calc.py");
        let text = std::fs::read_to_string(&calc).unwrap();
        let text = text.replace(
            "    # The known bug the fixer has to find.\n    return a + b",
            "    return a * b",
        );
        std::fs::write(&calc, text).unwrap();
        let test_file = request.root.join("tests/test_calc.py");
        let text = std::fs::read_to_string(&test_file).unwrap();
        std::fs::write(
            &test_file,
            text.replace(
                "calc.find_user(\"bob\").name == \"Bob\"",
                "calc.find_user(\"bob\") is None",
            ),
        )
        .unwrap();
        Ok(FixReply {
            summary: format!("fixed {} failures", request.failures.len()),
        })
    }
}

#[tokio::test]
async fn the_loop_over_a_real_pytest_project() {
    let project = copy_fixture("pytest-project");
    let evidence = tempfile::tempdir().unwrap();
    let options = TestOptions {
        env: python_env(),
        evidence_dir: Some(evidence.path().to_owned()),
        ..TestOptions::default()
    };
    let mut runner = TestRunner::new(project.path(), options).await.unwrap();
    let out = run_fix_loop(
        &mut runner,
        &PythonFixer,
        &LoopOptions {
            coverage_target: Some(60.0),
            ..LoopOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(out.verdict, Verdict::Passed);
    assert_eq!(out.iterations, 1);
    assert_eq!(out.flaky, ["tests.test_calc::test_flaky_first_run"]);
    assert_eq!(
        (
            out.rounds[0].passed,
            out.rounds[0].failed,
            out.rounds[0].skipped
        ),
        (3, 3, 1)
    );
    assert_eq!((out.rounds[1].passed, out.rounds[1].failed), (6, 0));
    assert_eq!(out.defect_patterns, ["assertion_failure", "null_reference"]);
    assert!(out.final_round().coverage.unwrap() >= 60.0);
    assert!(out.evidence.iter().all(|f| f.starts_with(evidence.path())));
}
