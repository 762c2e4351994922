//! Acceptance criteria, judged from evidence.
//!
//! A criterion with a `verify` command passes when that command exits 0. The
//! command is split into words with shell-words and run as argv (the first
//! word is the program), **never through a shell**: `;`, `&&`, `|`, `$(…)`,
//! backticks and newlines are plain characters inside arguments, so nothing
//! but the named program runs. It runs in the task's folder, with a timeout,
//! and its output is kept.
//!
//! A criterion without a command is [`CheckStatus::ManualReview`]. The
//! seed's keyword match ("pass when any word of the criterion appears in
//! the implementation text") is available only as the opt-in
//! [`Strategy::Keyword`]. It is **weak evidence**: it says the words were
//! mentioned, not that the behaviour exists. Even then stop words ("the",
//! "should", "be" …) are ignored, so a criterion no longer passes because
//! the text contains "the".

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use wavecrew_core::Criterion;

use crate::process::{self, Cmd, Ended};
use crate::status::CheckStatus;

/// How criteria without a `verify` command are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Only commands count; plain text is `manual_review` (the default).
    #[default]
    Evidence,
    /// Also the seed's keyword match against the implementation text
    /// (weak: see the module docs). Stop words are ignored.
    Keyword,
}

/// Options of [`check_acceptance`].
#[derive(Debug, Clone)]
pub struct AcceptanceOptions {
    /// Time limit per `verify` command.
    pub timeout: Duration,
    /// How plain-text criteria are judged.
    pub strategy: Strategy,
    /// The implementation text the keyword strategy searches (the agent's
    /// summary, a diff).
    pub implementation_text: String,
    /// Variables for the commands.
    pub env: BTreeMap<OsString, OsString>,
    /// The box its commands run in (they run the agent's work), or `None`
    /// (anywhere, as the caller). Default: a box that may write only the
    /// command's folder and a temporary folder of its own.
    pub confined: Option<wavecrew_sys::confined::CommandBox>,
    /// The task's one run of the project's test suite, when the caller
    /// made it: a command that runs that suite
    /// ([`crate::Framework::runs_suite`]) is judged by it instead of
    /// running the suite again.
    pub suite: Option<SuiteVerdict>,
}

/// What the task's one run of the project's test suite said, for the
/// acceptance commands that run the same suite.
#[derive(Debug, Clone)]
pub struct SuiteVerdict {
    /// The framework that ran.
    pub framework: crate::Framework,
    /// The command line it ran as.
    pub command: String,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// The tests its report lists.
    pub tests: u64,
    /// The end of what it printed.
    pub output: String,
    /// How long it ran.
    pub duration_ms: u64,
    /// Whether this run was made for this check (false: its result was
    /// kept from an earlier check of the same tree).
    pub ran: bool,
}

impl Default for AcceptanceOptions {
    fn default() -> Self {
        AcceptanceOptions {
            timeout: Duration::from_secs(120),
            strategy: Strategy::Evidence,
            implementation_text: String::new(),
            env: BTreeMap::new(),
            confined: Some(wavecrew_sys::confined::CommandBox::default()),
            suite: None,
        }
    }
}

/// How a criterion was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// By running its `verify` command.
    Command,
    /// By the keyword match (weak).
    Keyword,
    /// Not judged: a person has to look.
    None,
}

/// The result of one criterion.
#[derive(Debug, Clone, Serialize)]
pub struct CriterionResult {
    /// The criterion's text.
    pub text: String,
    /// Its command as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// The argv it ran as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The status.
    pub status: CheckStatus,
    /// What the status rests on.
    pub evidence: Evidence,
    /// Why it failed or was not judged; notes about the command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The command's exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The command's output (bounded).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// The keywords matched (keyword strategy).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
    /// How long the command ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What the command's network did (the hosts its proxy let through and
    /// refused), when it ran in a box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<wavecrew_sys::egress::NetworkLog>,
}

/// All criteria of a task.
#[derive(Debug, Clone, Serialize)]
pub struct AcceptanceReport {
    /// `pass` when every criterion passed; otherwise the worst status.
    pub status: CheckStatus,
    /// One result per criterion, in order.
    pub criteria: Vec<CriterionResult>,
}

/// Words that carry no meaning for the keyword match.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "do", "does", "each",
    "for", "from", "has", "have", "if", "in", "into", "is", "it", "its", "must", "no", "not", "of",
    "on", "or", "should", "so", "such", "that", "the", "their", "then", "there", "these", "this",
    "to", "was", "were", "when", "which", "will", "with", "all", "also", "but", "more", "than",
    "shall", "may", "new", "we", "you",
];

/// Shell operators that, in a `verify` command, are only plain arguments.
const SHELL_OPERATORS: &[&str] = &[";", "&&", "||", "|", "&", ">", ">>", "<", "2>&1"];

/// Check each criterion in `cwd` (the task's folder).
pub async fn check_acceptance(
    criteria: &[Criterion],
    cwd: &Path,
    options: &AcceptanceOptions,
) -> AcceptanceReport {
    let mut results = Vec::with_capacity(criteria.len());
    for c in criteria {
        let result = match c.verify.as_deref().filter(|v| !v.trim().is_empty()) {
            Some(cmd) => run_verify(&c.text, cmd, cwd, options).await,
            None => judge_text(&c.text, options),
        };
        results.push(result);
    }
    let status = if results.is_empty() {
        CheckStatus::Skipped
    } else {
        CheckStatus::combine(results.iter().map(|r| r.status))
    };
    AcceptanceReport {
        status,
        criteria: results,
    }
}

fn base(text: &str, verify: Option<&str>) -> CriterionResult {
    CriterionResult {
        text: text.to_owned(),
        verify: verify.map(str::to_owned),
        argv: None,
        status: CheckStatus::ManualReview,
        evidence: Evidence::None,
        reason: None,
        exit_code: None,
        output: String::new(),
        matched: Vec::new(),
        duration_ms: None,
        network: None,
    }
}

/// Split a `verify` command into argv with shell-words (quotes and
/// backslashes as in `sh`, nothing else).
pub fn split_command(command: &str) -> Result<Vec<String>, String> {
    let words = shell_words::split(command).map_err(|e| e.to_string())?;
    if words.is_empty() {
        return Err("empty command".into());
    }
    Ok(words)
}

async fn run_verify(
    text: &str,
    command: &str,
    cwd: &Path,
    options: &AcceptanceOptions,
) -> CriterionResult {
    let mut r = base(text, Some(command));
    r.evidence = Evidence::Command;
    let argv = match split_command(command) {
        Ok(argv) => argv,
        Err(e) => {
            r.status = CheckStatus::Fail;
            r.reason = Some(format!("cannot split the command into words: {e}"));
            return r;
        }
    };
    if let Some(suite) = options
        .suite
        .as_ref()
        .filter(|s| s.framework.runs_suite(&argv))
    {
        return judged_by_suite(r, argv, suite);
    }
    let mut notes = Vec::new();
    if argv.iter().any(|w| SHELL_OPERATORS.contains(&w.as_str()))
        || command.contains([';', '|', '&', '<', '>', '\n', '`'])
        || command.contains("$(")
    {
        notes.push("shell syntax (`;`, `&&`, `|`, `$(…)`, backticks, newlines) is passed to the program as plain arguments: verify commands never run through a shell".to_owned());
    }
    let cmd = Cmd::new(&argv[0], &argv[1..], cwd)
        .timeout(options.timeout)
        .envs(&options.env)
        .confined(options.confined.as_ref());
    let out = process::run(&cmd).await;
    r.argv = Some(argv);
    r.output = out.combined();
    r.duration_ms = Some(out.duration_ms);
    r.exit_code = out.code();
    r.network.clone_from(&out.network);
    r.status = match &out.ended {
        Ended::Exited { code: Some(0), .. } => CheckStatus::Pass,
        Ended::Exited { code, .. } => {
            notes.insert(
                0,
                match code {
                    Some(c) => format!("exit code {c}"),
                    None => "killed by a signal".to_owned(),
                },
            );
            CheckStatus::Fail
        }
        Ended::TimedOut => {
            notes.insert(
                0,
                format!("no result within {} s", options.timeout.as_secs_f64()),
            );
            CheckStatus::TimedOut
        }
        Ended::NotFound => {
            notes.insert(
                0,
                format!("`{}` is not installed", cmd.program.to_string_lossy()),
            );
            CheckStatus::Fail
        }
        Ended::SpawnFailed { message } => {
            notes.insert(0, message.clone());
            CheckStatus::Fail
        }
    };
    if !notes.is_empty() {
        r.reason = Some(notes.join("; "));
    }
    r
}

/// A criterion whose command runs the project's suite, judged by the
/// task's one run of it.
fn judged_by_suite(
    mut r: CriterionResult,
    argv: Vec<String>,
    suite: &SuiteVerdict,
) -> CriterionResult {
    r.argv = Some(argv);
    r.exit_code = suite.exit_code;
    r.output.clone_from(&suite.output);
    r.duration_ms = Some(suite.duration_ms);
    r.status = if suite.exit_code == Some(0) {
        CheckStatus::Pass
    } else {
        CheckStatus::Fail
    };
    let how = if suite.ran {
        "run once for the task"
    } else {
        "kept from the run of the same tree"
    };
    let code = match suite.exit_code {
        Some(c) => format!("exit code {c}"),
        None => "killed by a signal".to_owned(),
    };
    r.reason = Some(format!(
        "judged by the project's test suite ({}), {how}: `{}`, {} tests, {code}",
        suite.framework.name(),
        suite.command,
        suite.tests
    ));
    r
}

/// The meaningful words of a text: lower-case runs of letters and digits,
/// stop words and single characters removed.
pub fn keywords(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 1 && !STOP_WORDS.contains(&w.as_str()))
        .collect();
    out.dedup();
    out
}

fn judge_text(text: &str, options: &AcceptanceOptions) -> CriterionResult {
    let mut r = base(text, None);
    if options.strategy == Strategy::Evidence {
        r.reason = Some("no verify command: a person has to check it".into());
        return r;
    }
    let words = keywords(text);
    let haystack: std::collections::HashSet<String> =
        keywords(&options.implementation_text).into_iter().collect();
    r.matched = words
        .iter()
        .filter(|w| haystack.contains(*w))
        .cloned()
        .collect();
    if words.is_empty() {
        r.reason = Some("only stop words: nothing to match".into());
    } else if r.matched.is_empty() {
        r.reason =
            Some("keyword match (weak evidence): no keyword of the criterion appears".into());
    } else {
        r.status = CheckStatus::Pass;
        r.evidence = Evidence::Keyword;
        r.reason = Some(
            "keyword match (weak evidence): the words appear, the behaviour is not proven".into(),
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_do_not_count() {
        assert_eq!(
            keywords("The user should be able to log in"),
            ["user", "able", "log"]
        );
        let options = AcceptanceOptions {
            strategy: Strategy::Keyword,
            implementation_text: "the thing should be there".into(),
            ..AcceptanceOptions::default()
        };
        assert_eq!(
            judge_text("The token should be refreshed", &options).status,
            CheckStatus::ManualReview
        );
        let options = AcceptanceOptions {
            implementation_text: "added token refresh".into(),
            ..options
        };
        let r = judge_text("The token should be refreshed", &options);
        assert_eq!(
            (r.status, r.evidence),
            (CheckStatus::Pass, Evidence::Keyword)
        );
    }

    #[test]
    fn plain_text_is_manual_review_by_default() {
        let r = judge_text(
            "The API returns 404 for unknown ids",
            &AcceptanceOptions::default(),
        );
        assert_eq!(r.status, CheckStatus::ManualReview);
    }
}
