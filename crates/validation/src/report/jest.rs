//! jest `--json` and vitest `--reporter=json` output (vitest writes jest's
//! shape). A test file that failed to run at all (a syntax error, a missing
//! module) has no assertion results and a suite `message`: it counts as one
//! error, named after the file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Outcome, Source, TestCase, TestReport};
use crate::error::{Result, ValidationError};

const FORMAT: &str = "jest/vitest JSON";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JestOutput {
    test_results: Vec<FileResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    name: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    assertion_results: Vec<Assertion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Assertion {
    #[serde(default)]
    full_name: Option<String>,
    title: String,
    #[serde(default)]
    ancestor_titles: Vec<String>,
    status: String,
    #[serde(default)]
    failure_messages: Vec<String>,
}

/// Parse jest or vitest JSON that came from `path`. Test files are named
/// relative to `root` when they lie inside it.
pub fn parse_jest_json(text: &str, path: &Path, root: Option<&Path>) -> Result<TestReport> {
    let out: JestOutput = serde_json::from_str(text)
        .map_err(|e| ValidationError::malformed(path, FORMAT, e.to_string()))?;
    let mut cases = Vec::new();
    for file in out.test_results {
        let rel = root
            .and_then(|r| Path::new(&file.name).strip_prefix(r).ok())
            .map_or_else(|| file.name.clone(), |p| p.display().to_string());
        if file.assertion_results.is_empty() {
            let failed = file.status.as_deref() == Some("failed")
                || file
                    .message
                    .as_deref()
                    .is_some_and(|m| !m.trim().is_empty());
            if failed {
                cases.push(TestCase {
                    id: rel.clone(),
                    name: rel.clone(),
                    classname: None,
                    file: Some(rel),
                    outcome: Outcome::Error,
                    message: file.message.map(|m| strip_ansi(&m)),
                });
            }
            continue;
        }
        for a in file.assertion_results {
            let outcome = match a.status.as_str() {
                "passed" => Outcome::Passed,
                "failed" => Outcome::Failed,
                "pending" | "skipped" | "todo" | "disabled" => Outcome::Skipped,
                other => {
                    return Err(ValidationError::malformed(
                        path,
                        FORMAT,
                        format!("test `{}`: unknown status `{other}`", a.title),
                    ));
                }
            };
            let name = a.full_name.clone().unwrap_or_else(|| {
                let mut parts = a.ancestor_titles.clone();
                parts.push(a.title.clone());
                parts.join(" ")
            });
            let message = (!a.failure_messages.is_empty())
                .then(|| strip_ansi(&a.failure_messages.join("\n")));
            cases.push(TestCase {
                id: format!("{rel}::{name}"),
                name,
                classname: (!a.ancestor_titles.is_empty()).then(|| a.ancestor_titles.join(" ")),
                file: Some(rel.clone()),
                outcome,
                message,
            });
        }
    }
    Ok(TestReport::from_cases(
        cases,
        Source::Report,
        vec![PathBuf::from(path)],
    ))
}

/// Remove ANSI colour sequences (`ESC [ … letter`).
pub(crate) fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_that_failed_to_run_is_one_error() {
        let json = r#"{"numTotalTests":0,"testResults":[{"name":"/p/bad.test.js","status":"failed","message":"\u001b[1mSyntaxError\u001b[22m: x","assertionResults":[]}]}"#;
        let r = parse_jest_json(json, Path::new("j.json"), Some(Path::new("/p"))).unwrap();
        assert_eq!(r.counts.errors, 1);
        assert_eq!(r.cases[0].file.as_deref(), Some("bad.test.js"));
        assert_eq!(r.cases[0].message.as_deref(), Some("SyntaxError: x"));
    }

    #[test]
    fn malformed_names_the_file() {
        let err = parse_jest_json("{\"testResults\": 3}", Path::new("out.json"), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("`out.json`: malformed jest/vitest JSON report: invalid type"),
            "{err}"
        );
    }
}
