//! `go test -json` events (one JSON object per line, `test2json` format):
//! the final `pass` / `fail` / `skip` action of each test, with its `output`
//! lines kept as the failure message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Outcome, Source, TestCase, TestReport};
use crate::error::{Result, ValidationError};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    #[serde(default)]
    package: Option<String>,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    output: Option<String>,
}

/// Parse `go test -json` output that came from `path`. Lines that are not
/// JSON (build errors printed before the stream) are ignored; a line that
/// is JSON but not an event is an error.
pub fn parse_go_test_json(text: &str, path: &Path) -> Result<TestReport> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut results: BTreeMap<(String, String), (Option<Outcome>, String)> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let ev: Event = serde_json::from_str(line).map_err(|e| {
            ValidationError::malformed(path, "go test JSON", format!("line {}: {e}", n + 1))
        })?;
        let Some(test_name) = ev.test else { continue };
        let key = (ev.package.unwrap_or_default(), test_name);
        let entry = results.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            (None, String::new())
        });
        match ev.action.as_str() {
            "pass" => entry.0 = Some(Outcome::Passed),
            "fail" => entry.0 = Some(Outcome::Failed),
            "skip" => entry.0 = Some(Outcome::Skipped),
            "output" => entry.1.push_str(ev.output.as_deref().unwrap_or_default()),
            _ => {}
        }
    }
    let cases = order
        .into_iter()
        .filter_map(|key| {
            let (outcome, output) = results.remove(&key)?;
            let (package, name) = key;
            let outcome = outcome.unwrap_or(Outcome::Error);
            Some(TestCase {
                id: format!("{package}::{name}"),
                name,
                classname: Some(package),
                file: None,
                outcome,
                message: (outcome != Outcome::Passed).then_some(output),
            })
        })
        .collect();
    Ok(TestReport::from_cases(
        cases,
        Source::Report,
        vec![PathBuf::from(path)],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events() {
        let text = r#"{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"ok\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"x_test.go:9: want 2\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"skip","Package":"p","Test":"TestC"}
{"Action":"fail","Package":"p"}"#;
        let r = parse_go_test_json(text, Path::new("go.json")).unwrap();
        assert_eq!(
            (r.counts.passed, r.counts.failed, r.counts.skipped),
            (1, 1, 1)
        );
        assert_eq!(r.cases[1].message.as_deref(), Some("x_test.go:9: want 2\n"));
    }
}
