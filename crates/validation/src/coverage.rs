//! Coverage read from the files coverage tools write, never from a console
//! table: istanbul `coverage-summary.json` (jest, vitest, nyc), lcov
//! tracefiles, Cobertura XML (coverage.py `xml`, cargo-llvm-cov, gcovr …)
//! and coverage.py JSON. The figure is **line** coverage, the one every
//! format has; coverage.py's is its own `percent_covered` (statements, and
//! branches when measured), which is what `coverage report` and pytest-cov
//! print.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use quick_xml::Reader;
use quick_xml::events::Event;
use serde::{Deserialize, Serialize};

use crate::error::{Result, ValidationError};

/// A coverage file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageFormat {
    /// istanbul `json-summary` (`coverage-summary.json`).
    Istanbul,
    /// An lcov tracefile.
    Lcov,
    /// Cobertura XML.
    Cobertura,
    /// coverage.py JSON (`coverage json`, `--cov-report=json`).
    CoveragePy,
}

impl CoverageFormat {
    fn name(self) -> &'static str {
        match self {
            CoverageFormat::Istanbul => "istanbul coverage-summary",
            CoverageFormat::Lcov => "lcov",
            CoverageFormat::Cobertura => "Cobertura XML",
            CoverageFormat::CoveragePy => "coverage.py JSON",
        }
    }
}

/// Coverage read from one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// The percentage (0–100); `None` when the file measured no line.
    pub percent: Option<f64>,
    /// Lines (statements) covered.
    pub covered: u64,
    /// Lines (statements) measured.
    pub total: u64,
    /// The format it was read as.
    pub format: CoverageFormat,
    /// The file.
    pub file: PathBuf,
}

#[allow(clippy::cast_precision_loss)]
fn percent(covered: u64, total: u64) -> Option<f64> {
    (total > 0).then(|| covered as f64 * 100.0 / total as f64)
}

/// Guess a file's format from its name, then its first bytes.
#[allow(clippy::case_sensitive_file_extension_comparisons)] // the name is lower-cased
pub fn detect_format(path: &Path, head: &[u8]) -> Option<CoverageFormat> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let text = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let trimmed = text.trim_start();
    if name.ends_with(".info")
        || name.starts_with("lcov")
        || trimmed.starts_with("TN:")
        || trimmed.starts_with("SF:")
    {
        Some(CoverageFormat::Lcov)
    } else if trimmed.starts_with('<') {
        Some(CoverageFormat::Cobertura)
    } else if trimmed.starts_with('{') {
        if text.contains("\"totals\"") || text.contains("\"meta\"") {
            Some(CoverageFormat::CoveragePy)
        } else {
            Some(CoverageFormat::Istanbul)
        }
    } else {
        None
    }
}

/// Read a coverage file, detecting its format.
pub fn parse_coverage_file(path: &Path) -> Result<Coverage> {
    let bytes = std::fs::read(path).map_err(|e| ValidationError::io("reading", path, e))?;
    let format = detect_format(path, &bytes).ok_or_else(|| {
        ValidationError::malformed(
            path,
            "coverage",
            "not an lcov, Cobertura, istanbul or coverage.py file",
        )
    })?;
    parse_coverage(format, &bytes, path)
}

/// Parse coverage `bytes` in `format` that came from `path`.
pub fn parse_coverage(format: CoverageFormat, bytes: &[u8], path: &Path) -> Result<Coverage> {
    let bad = |m: String| ValidationError::malformed(path, format.name(), m);
    let (covered, total, pct) = match format {
        CoverageFormat::Istanbul => istanbul(bytes).map_err(bad)?,
        CoverageFormat::CoveragePy => coverage_py(bytes).map_err(bad)?,
        CoverageFormat::Lcov => lcov(bytes).map_err(bad)?,
        CoverageFormat::Cobertura => cobertura(bytes).map_err(bad)?,
    };
    Ok(Coverage {
        percent: pct.or_else(|| percent(covered, total)),
        covered,
        total,
        format,
        file: path.to_owned(),
    })
}

type Parsed = std::result::Result<(u64, u64, Option<f64>), String>;

fn istanbul(bytes: &[u8]) -> Parsed {
    #[derive(Deserialize)]
    struct Summary {
        total: Total,
    }
    #[derive(Deserialize)]
    struct Total {
        lines: Metric,
    }
    #[derive(Deserialize)]
    struct Metric {
        total: u64,
        covered: u64,
    }
    let s: Summary = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if s.total.lines.covered > s.total.lines.total {
        return Err("total.lines.covered is larger than total.lines.total".into());
    }
    Ok((s.total.lines.covered, s.total.lines.total, None))
}

fn coverage_py(bytes: &[u8]) -> Parsed {
    #[derive(Deserialize)]
    struct Report {
        totals: Totals,
    }
    #[derive(Deserialize)]
    struct Totals {
        covered_lines: u64,
        num_statements: u64,
        percent_covered: f64,
    }
    let r: Report = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let t = r.totals;
    if !(0.0..=100.0).contains(&t.percent_covered) {
        return Err(format!(
            "totals.percent_covered out of range: {}",
            t.percent_covered
        ));
    }
    let pct = (t.num_statements > 0).then_some(t.percent_covered);
    Ok((t.covered_lines, t.num_statements, pct))
}

fn lcov(bytes: &[u8]) -> Parsed {
    use lcov::Record;
    let (mut found, mut hit) = (0u64, 0u64);
    // Per record: LF/LH when present, else counted from DA lines.
    let (mut rec_found, mut rec_hit, mut da_found, mut da_hit) = (None, None, 0u64, 0u64);
    let mut records = 0usize;
    for rec in lcov::Reader::new(BufReader::new(bytes)) {
        match rec.map_err(|e| e.to_string())? {
            Record::SourceFile { .. } => {
                records += 1;
                (rec_found, rec_hit, da_found, da_hit) = (None, None, 0, 0);
            }
            Record::LineData { count, .. } => {
                da_found += 1;
                da_hit += u64::from(count > 0);
            }
            Record::LinesFound { found: f } => rec_found = Some(u64::from(f)),
            Record::LinesHit { hit: h } => rec_hit = Some(u64::from(h)),
            Record::EndOfRecord => {
                found += rec_found.unwrap_or(da_found);
                hit += rec_hit.unwrap_or(da_hit);
                (rec_found, rec_hit, da_found, da_hit) = (None, None, 0, 0);
            }
            _ => {}
        }
    }
    if records == 0 && !bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("no `SF:` record".into());
    }
    Ok((hit, found, None))
}

fn cobertura(bytes: &[u8]) -> Parsed {
    let mut reader = Reader::from_reader(bytes);
    let mut buf = Vec::new();
    loop {
        let ev = reader
            .read_event_into(&mut buf)
            .map_err(|e| format!("at byte {}: {e}", reader.error_position()))?;
        match ev {
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"coverage" => {
                let (mut covered, mut valid, mut rate) = (None, None, None);
                for attr in e.attributes() {
                    let attr = attr.map_err(|e| e.to_string())?;
                    let value = String::from_utf8_lossy(&attr.value).into_owned();
                    let num = |what: &str| {
                        value
                            .parse::<f64>()
                            .ok()
                            .filter(|v| v.is_finite() && *v >= 0.0)
                            .ok_or_else(|| format!("<coverage {what}=\"{value}\"> is not a number"))
                    };
                    match attr.key.as_ref() {
                        b"lines-covered" => covered = Some(num("lines-covered")?),
                        b"lines-valid" => valid = Some(num("lines-valid")?),
                        b"line-rate" => rate = Some(num("line-rate")?),
                        _ => {}
                    }
                }
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                return match (covered, valid, rate) {
                    (Some(c), Some(v), _) => Ok((c as u64, v as u64, None)),
                    (_, _, Some(r)) if r <= 1.0 => Ok((0, 0, Some(r * 100.0))),
                    _ => Err(
                        "<coverage> has neither lines-covered/lines-valid nor a line-rate".into(),
                    ),
                };
            }
            Event::Start(e) => {
                return Err(format!(
                    "root element is <{}>, expected <coverage>",
                    String::from_utf8_lossy(e.name().as_ref())
                ));
            }
            Event::Eof => return Err("no <coverage> element".into()),
            _ => {}
        }
        buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcov_without_lf_counts_da_lines() {
        let c = parse_coverage(
            CoverageFormat::Lcov,
            b"SF:a.js\nDA:1,1\nDA:2,0\nend_of_record\nSF:b.js\nDA:1,3\nLF:4\nLH:3\nend_of_record\n",
            Path::new("lcov.info"),
        )
        .unwrap();
        assert_eq!((c.covered, c.total), (4, 6));
    }

    #[test]
    fn cobertura_rate_only() {
        let c = parse_coverage(
            CoverageFormat::Cobertura,
            br#"<?xml version="1.0"?><coverage line-rate="0.5" branch-rate="0"></coverage>"#,
            Path::new("c.xml"),
        )
        .unwrap();
        assert_eq!(c.percent, Some(50.0));
    }
}
