//! The status every check reports, and how several combine.

use serde::Serialize;

/// The status of one check. Only [`CheckStatus::Pass`] is a pass: a check
/// that could not run is [`CheckStatus::Skipped`] with a reason, never a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The evidence says it holds.
    Pass,
    /// Nobody could check it automatically: a person has to look.
    ManualReview,
    /// It could not be checked (the tool is missing, nothing to check).
    Skipped,
    /// The check ran out of time.
    TimedOut,
    /// The evidence says it does not hold.
    Fail,
}

impl CheckStatus {
    /// The lower-case name used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::ManualReview => "manual_review",
            CheckStatus::Skipped => "skipped",
            CheckStatus::TimedOut => "timed_out",
            CheckStatus::Fail => "fail",
        }
    }

    /// The combined status of several checks: the worst of them (fail >
    /// timed out > skipped > manual review > pass); `skipped` when there
    /// are none.
    pub fn combine(statuses: impl IntoIterator<Item = CheckStatus>) -> CheckStatus {
        statuses.into_iter().max().unwrap_or(CheckStatus::Skipped)
    }
}

impl std::fmt::Display for CheckStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
