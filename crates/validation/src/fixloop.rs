//! The test-fix loop (seed 002 Phase 3) as an explicit state machine.
//!
//! ```text
//!            ┌──────────────────────────────────────────────┐
//!            v                                              │
//!  Start ─> Run ─> Rerun ─> Judge ─┬─ targets met ───────> Done(passed)
//!                                  ├─ worse than before ─> Restore ─┬─> Fix ─┘
//!                                  │                                └─> Done(failed)
//!                                  ├─ rounds used up ────> Done(failed)
//!                                  └─ otherwise ─────────> Fix (snapshot, ask the fixer) ─> Run
//! ```
//!
//! * **Run** runs the whole suite (with coverage).
//! * **Rerun** runs the failing tests once more: a test that passes then is
//!   *flaky*. Flaky tests are reported, count as passed for the decision,
//!   and are never sent to the fixer.
//! * **Judge** records the round's numbers and decides: stop when the pass
//!   rate is at least [`LoopOptions::pass_rate_target`] (0.95) and coverage
//!   at least [`LoopOptions::coverage_target`] (80 %, `None` to ignore); a
//!   round whose pass rate is lower than the round it started from goes to
//!   **Restore**, which puts back the working tree saved before that fix.
//! * **Fix** saves a [`Snapshot`] of the working tree and hands the failures
//!   (message, name, file) to the [`Fixer`]. At most
//!   [`LoopOptions::max_rounds`] (3) fixes are asked for.
//!
//! The outcome, [`LoopOutcome`], holds every round's numbers and converts
//! into the `results/run-<NNN>.json` record ([`crate::RunResult`]).

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Serialize;

use crate::error::{Result, ValidationError};
use crate::patterns;
use crate::report::{Outcome, Source, TestCase, TestReport};
use crate::run::TestRunner;
use crate::snapshot::Snapshot;

/// One failing test as the fixer sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureDetail {
    /// The test's id.
    pub id: String,
    /// The test's name.
    pub name: String,
    /// Its file, when known.
    pub file: Option<String>,
    /// Failed or errored.
    pub outcome: Outcome,
    /// The failure message from the report.
    pub message: Option<String>,
}

impl From<&TestCase> for FailureDetail {
    fn from(c: &TestCase) -> Self {
        FailureDetail {
            id: c.id.clone(),
            name: c.name.clone(),
            file: c.file.clone(),
            outcome: c.outcome,
            message: c.message.clone(),
        }
    }
}

/// What the fixer is asked to do in one round.
#[derive(Debug, Clone, Serialize)]
pub struct FixRequest {
    /// The round (1-based).
    pub round: u32,
    /// The working tree to edit.
    pub root: PathBuf,
    /// The tests that really fail (flaky ones left out).
    pub failures: Vec<FailureDetail>,
    /// The pass rate now.
    pub pass_rate: f64,
    /// The pass rate to reach.
    pub pass_rate_target: f64,
    /// The coverage now, when known.
    pub coverage: Option<f64>,
    /// The coverage to reach, if any.
    pub coverage_target: Option<f64>,
}

/// What the fixer says it did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FixReply {
    /// A short account, kept in the round's record.
    pub summary: String,
}

/// Something that edits the working tree to make failing tests pass: an
/// agent backend in production, a script in tests.
#[async_trait]
pub trait Fixer: Send + Sync {
    /// Try to fix what `request` describes by editing files under
    /// `request.root`.
    async fn fix(&self, request: &FixRequest) -> Result<FixReply>;
}

/// The evidence of one suite run, as the loop needs it.
#[derive(Debug, Clone)]
pub struct SuiteRun {
    /// The report.
    pub report: TestReport,
    /// The coverage percentage, when known.
    pub coverage: Option<f64>,
    /// The evidence files.
    pub evidence: Vec<PathBuf>,
}

/// Where the loop gets its test results: a [`TestRunner`] in production.
#[async_trait]
pub trait TestSource: Send {
    /// The framework's name, for the record.
    fn framework(&self) -> String;
    /// The working tree (what is snapshotted).
    fn root(&self) -> &Path;
    /// Paths under the root never to snapshot or restore (evidence).
    fn exclude(&self) -> Vec<PathBuf>;
    /// Run the whole suite.
    async fn run_suite(&mut self) -> Result<SuiteRun>;
    /// Run `cases` again; `None` when single tests cannot be selected.
    async fn rerun_cases(&mut self, cases: &[TestCase]) -> Result<Option<TestReport>>;
}

#[async_trait]
impl TestSource for TestRunner {
    fn framework(&self) -> String {
        self.framework().name().to_owned()
    }

    fn root(&self) -> &Path {
        self.dir()
    }

    fn exclude(&self) -> Vec<PathBuf> {
        vec![self.evidence_dir().to_owned()]
    }

    async fn run_suite(&mut self) -> Result<SuiteRun> {
        let run = self.run().await?;
        Ok(SuiteRun {
            coverage: run.coverage_percent(),
            evidence: run.evidence(),
            report: run.report,
        })
    }

    async fn rerun_cases(&mut self, cases: &[TestCase]) -> Result<Option<TestReport>> {
        Ok(self.rerun(cases).await?.map(|r| r.report))
    }
}

/// Options of the loop.
#[derive(Debug, Clone)]
pub struct LoopOptions {
    /// Stop when the pass rate reaches this (default 0.95).
    pub pass_rate_target: f64,
    /// …and coverage reaches this percentage (default 80; `None` ignores
    /// coverage). Unknown coverage never meets a target.
    pub coverage_target: Option<f64>,
    /// At most this many fix rounds (default 3).
    pub max_rounds: u32,
    /// Rerun failing tests once to find flaky ones (default true).
    pub detect_flaky: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            pass_rate_target: 0.95,
            coverage_target: Some(80.0),
            max_rounds: 3,
            detect_flaky: true,
        }
    }
}

/// The numbers of one round (round 0 is the first run; round n follows
/// fix n).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundRecord {
    /// The round.
    pub round: u32,
    /// Tests passed (as the report says).
    pub passed: u64,
    /// Tests failed.
    pub failed: u64,
    /// Tests skipped.
    pub skipped: u64,
    /// Tests errored.
    pub errors: u64,
    /// All tests.
    pub total: u64,
    /// The pass rate used for the decision: flaky tests count as passed.
    pub pass_rate: f64,
    /// The coverage percentage, when known.
    pub coverage: Option<f64>,
    /// Tests that failed and then passed on the rerun.
    pub flaky: Vec<String>,
    /// Tests that failed on the rerun too (or were not rerun).
    pub failing: Vec<String>,
    /// Whether this round's changes were rolled back.
    pub reverted: bool,
    /// What the fixer said it did before this round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix_summary: Option<String>,
    /// Where the numbers came from.
    pub source: Source,
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Pass rate and coverage reached their targets.
    Passed,
    /// They did not within the allowed rounds.
    Failed,
}

/// The states of the loop (kept in [`LoopOutcome::states`] as a trace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateName {
    /// Running the suite.
    Run,
    /// Rerunning the failures.
    Rerun,
    /// Recording and deciding.
    Judge,
    /// Putting the tree back.
    Restore,
    /// Snapshot, then the fixer.
    Fix,
    /// Finished.
    Done,
}

/// Everything the loop found.
#[derive(Debug, Clone, Serialize)]
pub struct LoopOutcome {
    /// Passed or failed.
    pub verdict: Verdict,
    /// Fix rounds used.
    pub iterations: u32,
    /// Every round, in order, reverted ones included.
    pub rounds: Vec<RoundRecord>,
    /// Flaky tests seen in any round.
    pub flaky: Vec<String>,
    /// The final (kept) report.
    pub final_report: TestReport,
    /// Defect patterns of every real failure seen, all rounds.
    pub defect_patterns: Vec<String>,
    /// Effective-test patterns of the final report.
    pub effective_patterns: Vec<String>,
    /// The framework.
    pub framework: String,
    /// The evidence files of the final kept run.
    pub evidence: Vec<PathBuf>,
    /// The pass-rate target.
    pub pass_rate_target: f64,
    /// The coverage target.
    pub coverage_target: Option<f64>,
    /// The states visited, in order.
    pub states: Vec<StateName>,
}

impl LoopOutcome {
    /// The last round that was kept.
    pub fn final_round(&self) -> &RoundRecord {
        self.rounds
            .iter()
            .rev()
            .find(|r| !r.reverted)
            .unwrap_or(&self.rounds[0])
    }
}

/// A judged round: its record, report and evidence.
struct Judged {
    record: RoundRecord,
    report: TestReport,
    real_failures: Vec<TestCase>,
    evidence: Vec<PathBuf>,
}

enum State {
    Run,
    Rerun(SuiteRun),
    Judge(SuiteRun, Vec<String>),
    Restore,
    Fix,
    Done(Verdict),
}

/// Run the test-fix loop over `source` with `fixer`.
pub async fn run_fix_loop(
    source: &mut dyn TestSource,
    fixer: &dyn Fixer,
    options: &LoopOptions,
) -> Result<LoopOutcome> {
    let mut states = Vec::new();
    let mut rounds: Vec<RoundRecord> = Vec::new();
    let mut kept: Option<Judged> = None;
    let mut snapshot: Option<Snapshot> = None;
    let mut iterations = 0u32;
    let mut last_fix_summary: Option<String> = None;
    let mut defects: Vec<String> = Vec::new();
    let mut state = State::Run;
    let verdict = loop {
        state = match state {
            State::Run => {
                states.push(StateName::Run);
                State::Rerun(source.run_suite().await?)
            }
            State::Rerun(run) => {
                states.push(StateName::Rerun);
                let failures: Vec<TestCase> = run.report.failures().cloned().collect();
                let mut flaky = Vec::new();
                if options.detect_flaky
                    && !failures.is_empty()
                    && let Some(again) = source.rerun_cases(&failures).await?
                {
                    for f in &failures {
                        let passed_now = again.cases.iter().any(|c| {
                            c.outcome == Outcome::Passed && (c.id == f.id || c.name == f.name)
                        });
                        if passed_now {
                            flaky.push(f.id.clone());
                        }
                    }
                }
                State::Judge(run, flaky)
            }
            State::Judge(run, flaky) => {
                states.push(StateName::Judge);
                let judged = judge(rounds.len(), run, flaky, last_fix_summary.take());
                for case in &judged.real_failures {
                    defects.extend(
                        patterns::defect_patterns_of(case)
                            .into_iter()
                            .map(str::to_owned),
                    );
                }
                rounds.push(judged.record.clone());
                let met = meets(&judged.record, options);
                let worse = kept
                    .as_ref()
                    .is_some_and(|k| judged.record.pass_rate < k.record.pass_rate);
                if met {
                    kept = Some(judged);
                    State::Done(Verdict::Passed)
                } else if worse && snapshot.is_some() {
                    State::Restore
                } else {
                    kept = Some(judged);
                    if iterations >= options.max_rounds {
                        State::Done(Verdict::Failed)
                    } else {
                        State::Fix
                    }
                }
            }
            State::Restore => {
                states.push(StateName::Restore);
                if let Some(snap) = snapshot.take() {
                    snap.restore()?;
                }
                if let Some(last) = rounds.last_mut() {
                    last.reverted = true;
                }
                if iterations >= options.max_rounds {
                    State::Done(Verdict::Failed)
                } else {
                    State::Fix
                }
            }
            State::Fix => {
                states.push(StateName::Fix);
                let current = kept.as_ref().expect("a judged round precedes every fix");
                snapshot = Some(Snapshot::take(source.root(), &source.exclude())?);
                iterations += 1;
                let request = FixRequest {
                    round: iterations,
                    root: source.root().to_owned(),
                    failures: current
                        .real_failures
                        .iter()
                        .map(FailureDetail::from)
                        .collect(),
                    pass_rate: current.record.pass_rate,
                    pass_rate_target: options.pass_rate_target,
                    coverage: current.record.coverage,
                    coverage_target: options.coverage_target,
                };
                let reply = fixer.fix(&request).await.map_err(|e| match e {
                    ValidationError::Fixer { .. } => e,
                    other => ValidationError::Fixer {
                        round: iterations,
                        message: other.to_string(),
                    },
                })?;
                last_fix_summary = Some(reply.summary);
                State::Run
            }
            State::Done(v) => {
                states.push(StateName::Done);
                break v;
            }
        };
    };
    let kept = kept.expect("the loop judges at least one round");
    let mut flaky_all: Vec<String> = rounds
        .iter()
        .flat_map(|r| r.flaky.iter().cloned())
        .collect();
    flaky_all.sort();
    flaky_all.dedup();
    defects.sort();
    defects.dedup();
    Ok(LoopOutcome {
        verdict,
        iterations,
        effective_patterns: effective(&kept),
        rounds,
        flaky: flaky_all,
        defect_patterns: defects,
        framework: source.framework(),
        evidence: kept.evidence,
        final_report: kept.report,
        pass_rate_target: options.pass_rate_target,
        coverage_target: options.coverage_target,
        states,
    })
}

fn effective(j: &Judged) -> Vec<String> {
    if j.record.pass_rate <= 0.8 {
        return Vec::new();
    }
    let mut out: Vec<String> = j
        .report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Passed)
        .flat_map(|c| patterns::effective_patterns_of(&c.name))
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

fn meets(r: &RoundRecord, options: &LoopOptions) -> bool {
    let coverage_ok = match options.coverage_target {
        None => true,
        Some(target) => r.coverage.is_some_and(|c| c >= target),
    };
    r.pass_rate >= options.pass_rate_target && coverage_ok
}

#[allow(clippy::cast_precision_loss)]
fn judge(round: usize, run: SuiteRun, flaky: Vec<String>, fix_summary: Option<String>) -> Judged {
    let c = run.report.counts;
    let executed = c.executed();
    let flaky_n = flaky.len() as u64;
    let pass_rate = if executed == 0 {
        0.0
    } else {
        (c.passed + flaky_n).min(executed) as f64 / executed as f64
    };
    let real_failures: Vec<TestCase> = run
        .report
        .failures()
        .filter(|f| !flaky.contains(&f.id))
        .cloned()
        .collect();
    let record = RoundRecord {
        round: u32::try_from(round).unwrap_or(u32::MAX),
        passed: c.passed,
        failed: c.failed,
        skipped: c.skipped,
        errors: c.errors,
        total: c.total,
        pass_rate,
        coverage: run.coverage,
        failing: real_failures.iter().map(|f| f.id.clone()).collect(),
        flaky,
        reverted: false,
        fix_summary,
        source: run.report.source,
    };
    Judged {
        record,
        report: run.report,
        real_failures,
        evidence: run.evidence,
    }
}
