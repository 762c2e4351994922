//! The `results/run-<NNN>.json` record of the team-testing executor
//! (`ccw-compat.md` §2.7): ccw's fields first, in ccw's order, with
//! `defect_patterns` and `effective_patterns` filled, then wavecrew's
//! additions (every round's numbers, flaky tests, the evidence used). The
//! number is the next free one in the folder (`run-001`, `run-002`, …), and
//! `run_id` matches the file name.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Result, ValidationError};
use crate::fixloop::{LoopOutcome, RoundRecord, Verdict};

/// One `results/run-<NNN>.json`.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// `run-<NNN>`.
    pub run_id: String,
    /// The final pass rate (0.0–1.0).
    pub pass_rate: f64,
    /// The final coverage percentage, `null` when unknown.
    pub coverage: Option<f64>,
    /// The coverage target (percent), `null` when coverage was not required.
    pub coverage_target: Option<f64>,
    /// Fix rounds used (≤ 3).
    pub iterations: u32,
    /// `pass_rate >= target && coverage >= coverage_target`.
    pub passed: bool,
    /// `"<n> failing: <first message line>"`, `null` when nothing fails.
    pub failure_summary: Option<String>,
    /// Defect patterns of the failures seen.
    pub defect_patterns: Vec<String>,
    /// Effective-test patterns of the final run.
    pub effective_patterns: Vec<String>,
    /// When the record was made (RFC 3339).
    pub timestamp: String,
    /// The framework that ran.
    pub framework: String,
    /// Where the numbers came from (`report` or `console`).
    pub source: crate::Source,
    /// The evidence files of the final run.
    pub evidence: Vec<PathBuf>,
    /// Flaky tests (failed, then passed on the rerun).
    pub flaky: Vec<String>,
    /// Every round's numbers.
    pub rounds: Vec<RoundRecord>,
}

impl RunResult {
    /// The record of a finished loop, numbered `number`.
    pub fn from_outcome(outcome: &LoopOutcome, number: u32) -> Self {
        let last = outcome.final_round();
        let failures: Vec<_> = outcome
            .final_report
            .failures()
            .filter(|f| !last.flaky.contains(&f.id))
            .collect();
        let failure_summary = (!failures.is_empty()).then(|| {
            let first = failures
                .iter()
                .find_map(|f| f.message.as_deref())
                .and_then(|m| m.lines().map(str::trim).find(|l| !l.is_empty()))
                .map_or_else(|| failures[0].name.clone(), str::to_owned);
            format!("{} failing: {first}", failures.len())
        });
        RunResult {
            run_id: format!("run-{number:03}"),
            pass_rate: last.pass_rate,
            coverage: last.coverage,
            coverage_target: outcome.coverage_target,
            iterations: outcome.iterations,
            passed: outcome.verdict == Verdict::Passed,
            failure_summary,
            defect_patterns: outcome.defect_patterns.clone(),
            effective_patterns: outcome.effective_patterns.clone(),
            timestamp: jiff::Timestamp::now().to_string(),
            framework: outcome.framework.clone(),
            source: last.source,
            evidence: outcome.evidence.clone(),
            flaky: outcome.flaky.clone(),
            rounds: outcome.rounds.clone(),
        }
    }
}

/// The next free run number in `results_dir` (1 when there is none).
pub fn next_run_number(results_dir: &Path) -> Result<u32> {
    let entries = match std::fs::read_dir(results_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(1),
        Err(e) => return Err(ValidationError::io("listing", results_dir, e)),
    };
    let mut max = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_prefix("run-")
            .and_then(|r| r.strip_suffix(".json"))
            .and_then(|n| n.parse::<u32>().ok())
        {
            max = max.max(n);
        }
    }
    Ok(max + 1)
}

/// Write the record of `outcome` to `<session>/results/run-<NNN>.json`
/// atomically; returns the path and the record.
pub fn write_run_result(session: &Path, outcome: &LoopOutcome) -> Result<(PathBuf, RunResult)> {
    let dir = session.join("results");
    std::fs::create_dir_all(&dir).map_err(|e| ValidationError::io("creating", &dir, e))?;
    // Two workers of one session must not take the same number.
    let _lock = wavecrew_sys::lock::lock_file(&dir.join(".lock"))
        .map_err(|e| ValidationError::io(e.step, e.path, e.source))?;
    let number = next_run_number(&dir)?;
    let result = RunResult::from_outcome(outcome, number);
    let path = dir.join(format!("{}.json", result.run_id));
    wavecrew_core::fsutil::write_json_atomic(&path, &result)?;
    Ok((path, result))
}
