//! JUnit XML (pytest `--junitxml`, jest-junit, vitest `junit`, nextest,
//! surefire …), read with quick-junit's deserializer.
//!
//! quick-junit is strict where real producers are loose, so a report it
//! refuses gets one repair pass and a second try: timestamps without a zone
//! (jest-junit writes `2026-03-04T09:15:02`) and unparsable `time` values
//! are dropped (we do not use them), and a bare `<testsuite>` root
//! (older pytest, surefire) is wrapped in `<testsuites>`. A report that
//! still does not parse is a [`ValidationError::MalformedReport`] naming the
//! file and the element at fault.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, Writer};

use super::{Outcome, Source, TestCase, TestReport};
use crate::error::{Result, ValidationError};

const FORMAT: &str = "JUnit XML";

/// Read and parse a JUnit XML file.
pub fn parse_junit_file(path: &Path) -> Result<TestReport> {
    let text = std::fs::read(path).map_err(|e| ValidationError::io("reading", path, e))?;
    let text = String::from_utf8(text)
        .map_err(|e| ValidationError::malformed(path, FORMAT, format!("not UTF-8: {e}")))?;
    parse_junit(&text, path)
}

/// Parse JUnit XML that came from `path` (used in messages and as evidence).
pub fn parse_junit(xml: &str, path: &Path) -> Result<TestReport> {
    let report = match Report::deserialize_from_str(xml) {
        Ok(r) => r,
        Err(first) => {
            let repaired = repair(xml).map_err(|e| malformed(path, &e))?;
            Report::deserialize_from_str(&repaired).map_err(|_| malformed(path, &first))?
        }
    };
    let mut cases = Vec::new();
    for suite in &report.test_suites {
        for tc in &suite.test_cases {
            cases.push(convert(suite.name.as_str(), tc));
        }
    }
    Ok(TestReport::from_cases(
        cases,
        Source::Report,
        vec![PathBuf::from(path)],
    ))
}

fn malformed(path: &Path, e: &dyn std::error::Error) -> ValidationError {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    ValidationError::malformed(path, FORMAT, message)
}

fn convert(suite: &str, tc: &quick_junit::TestCase) -> TestCase {
    let classname = tc.classname.as_ref().map(|c| c.as_str().to_owned());
    let file = tc
        .extra
        .iter()
        .find(|(k, _)| k.as_str() == "file")
        .map(|(_, v)| v.as_str().to_owned());
    let (outcome, message) = match &tc.status {
        TestCaseStatus::Success { .. } => (Outcome::Passed, None),
        TestCaseStatus::NonSuccess {
            kind,
            message,
            description,
            ..
        } => {
            let outcome = match kind {
                NonSuccessKind::Failure => Outcome::Failed,
                NonSuccessKind::Error => Outcome::Error,
            };
            (
                outcome,
                join_message(message.as_ref(), description.as_ref()),
            )
        }
        TestCaseStatus::Skipped {
            message,
            description,
            ..
        } => (
            Outcome::Skipped,
            join_message(message.as_ref(), description.as_ref()),
        ),
    };
    let name = tc.name.as_str().to_owned();
    let prefix = classname.as_deref().unwrap_or(suite);
    let id = if prefix.is_empty() {
        name.clone()
    } else {
        format!("{prefix}::{name}")
    };
    TestCase {
        id,
        name,
        classname,
        file,
        outcome,
        message,
    }
}

fn join_message(
    message: Option<&quick_junit::XmlString>,
    description: Option<&quick_junit::XmlString>,
) -> Option<String> {
    let m = message.map(|m| m.as_str().trim()).filter(|m| !m.is_empty());
    let d = description
        .map(|d| d.as_str().trim())
        .filter(|d| !d.is_empty());
    match (m, d) {
        (Some(m), Some(d)) if d.contains(m) => Some(d.to_owned()),
        (Some(m), Some(d)) => Some(format!("{m}\n{d}")),
        (Some(x), None) | (None, Some(x)) => Some(x.to_owned()),
        (None, None) => None,
    }
}

/// One streaming pass that makes a loose report acceptable to quick-junit.
fn repair(xml: &str) -> std::result::Result<String, quick_xml::Error> {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().trim_text(false);
    let mut writer = Writer::new(Vec::with_capacity(xml.len() + 32));
    let mut depth = 0usize;
    let mut wrapped = false;
    loop {
        let event = reader.read_event()?;
        match event {
            Event::Eof => break,
            Event::Start(e) => {
                if depth == 0 && e.name().as_ref() == b"testsuite" {
                    writer.write_event(Event::Start(BytesStart::new("testsuites")))?;
                    wrapped = true;
                }
                depth += 1;
                writer.write_event(Event::Start(clean(&e)))?;
            }
            Event::Empty(e) => {
                if depth == 0 && e.name().as_ref() == b"testsuite" {
                    writer.write_event(Event::Start(BytesStart::new("testsuites")))?;
                    writer.write_event(Event::Empty(clean(&e)))?;
                    writer
                        .write_event(Event::End(quick_xml::events::BytesEnd::new("testsuites")))?;
                } else {
                    writer.write_event(Event::Empty(clean(&e)))?;
                }
            }
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                writer.write_event(Event::End(e))?;
                if depth == 0 && wrapped {
                    writer
                        .write_event(Event::End(quick_xml::events::BytesEnd::new("testsuites")))?;
                    wrapped = false;
                }
            }
            other => writer.write_event(other)?,
        }
    }
    Ok(String::from_utf8_lossy(&writer.into_inner()).into_owned())
}

/// Drop the attributes we do not use and quick-junit would refuse.
fn clean<'a>(e: &BytesStart<'a>) -> BytesStart<'a> {
    let mut out = BytesStart::new(String::from_utf8_lossy(e.name().as_ref()).into_owned());
    for attr in e.attributes().flatten() {
        let value: Cow<'_, str> = String::from_utf8_lossy(&attr.value);
        let keep = match attr.key.as_ref() {
            b"timestamp" => value.parse::<jiff::Timestamp>().is_ok(),
            b"time" => value
                .parse::<f64>()
                .is_ok_and(|t| t.is_finite() && t >= 0.0),
            _ => true,
        };
        if keep {
            out.push_attribute(attr);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_testsuite_root_and_loose_timestamps() {
        let xml = r#"<?xml version="1.0"?>
<testsuite name="jest tests" tests="2" timestamp="2026-03-04T09:15:02" time="1,5">
  <testcase classname="math adds" name="math adds" time="0.002"/>
  <testcase classname="math fails" name="math fails" time="0.001"><failure message="boom">Error: boom</failure></testcase>
</testsuite>"#;
        let r = parse_junit(xml, Path::new("junit.xml")).unwrap();
        assert_eq!(r.counts.passed, 1);
        assert_eq!(r.counts.failed, 1);
        assert_eq!(r.cases[1].message.as_deref(), Some("Error: boom"));
    }

    #[test]
    fn malformed_names_file_and_place() {
        let err = parse_junit(
            "<testsuites><testsuite name=\"a\"><testcase>",
            Path::new("r.xml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("`r.xml`: malformed JUnit XML report"),
            "{err}"
        );
    }
}
