//! Running a project's tests with a machine-readable reporter and reading
//! the counts, the cases and the coverage from the files it wrote.
//!
//! Every run writes into a fresh folder of its own under the evidence
//! folder (`run-1/`, `run-2/`, …), so a report left over from an earlier
//! run can never be mistaken for this one's. The console is read only when
//! no report exists, and the result then says [`Source::Console`].

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::coverage::{self, Coverage, CoverageFormat};
use crate::error::{Result, ValidationError};
use crate::framework::{self, Framework};
use crate::process::{self, Cmd, Ended};
use crate::report::{
    self, Source, TestCase, TestReport, parse_console_summary, parse_libtest_output,
};
use crate::syntax::find_tool;

/// Options of a [`TestRunner`].
#[derive(Debug, Clone)]
pub struct TestOptions {
    /// The framework or command to use; detected when `None`.
    pub framework: Option<Framework>,
    /// Collect coverage (default true).
    pub coverage: bool,
    /// Time limit of one run (default 10 minutes).
    pub timeout: Duration,
    /// Variables for the test processes (a `PATH` here is also where the
    /// tools are looked up).
    pub env: BTreeMap<OsString, OsString>,
    /// Where reports are written; a temp folder (kept as long as the
    /// runner and its results live) when `None`.
    pub evidence_dir: Option<PathBuf>,
    /// The box its commands run in (they run the agent's work), or `None`
    /// (anywhere, as the caller). Default: a box that may write only the
    /// project's folder, the reports and a temporary folder of its own.
    pub confined: Option<wavecrew_sys::confined::CommandBox>,
}

impl Default for TestOptions {
    fn default() -> Self {
        TestOptions {
            framework: None,
            coverage: true,
            timeout: Duration::from_secs(600),
            env: BTreeMap::new(),
            evidence_dir: None,
            confined: Some(wavecrew_sys::confined::CommandBox::default()),
        }
    }
}

/// The result of one run of the tests.
#[derive(Debug, Clone, Serialize)]
pub struct TestRun {
    /// The framework that ran.
    pub framework: Framework,
    /// The command line (it ran as argv).
    pub command: String,
    /// Counts and cases.
    pub report: TestReport,
    /// Coverage, when a coverage file was written.
    pub coverage: Option<Coverage>,
    /// Why there is no coverage, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage_note: Option<String>,
    /// The command's exit code.
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The end of what it printed.
    #[serde(skip)]
    pub output_tail: String,
    /// What its network did (the hosts its proxy let through and
    /// refused), when it ran in a box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<wavecrew_sys::egress::NetworkLog>,
    /// Keeps a temp evidence folder alive while the result is used.
    #[serde(skip)]
    _scratch: Option<Arc<tempfile::TempDir>>,
}

impl TestRun {
    /// The coverage percentage, when known.
    pub fn coverage_percent(&self) -> Option<f64> {
        self.coverage.as_ref().and_then(|c| c.percent)
    }

    /// Every evidence file: the report and the coverage file.
    pub fn evidence(&self) -> Vec<PathBuf> {
        let mut files = self.report.evidence.clone();
        if let Some(c) = &self.coverage {
            files.push(c.file.clone());
        }
        files
    }
}

/// Where a run leaves its results.
enum ReportSpec {
    JUnit(PathBuf),
    Jest(PathBuf),
    GoJson(PathBuf),
    Libtest,
    Console,
}

/// Runs one project's tests, again and again (the test-fix loop).
#[derive(Debug)]
pub struct TestRunner {
    dir: PathBuf,
    options: TestOptions,
    framework: Framework,
    evidence: PathBuf,
    scratch: Option<Arc<tempfile::TempDir>>,
    runs: u32,
    pytest_cov: Option<bool>,
}

impl TestRunner {
    /// A runner for the project in `dir`: detects the framework unless one
    /// is configured.
    pub async fn new(dir: &Path, options: TestOptions) -> Result<Self> {
        let framework = match &options.framework {
            Some(f) => f.clone(),
            None => framework::detect(dir, &options.env)
                .await
                .ok_or_else(|| ValidationError::NoFramework {
                    dir: dir.to_owned(),
                    looked_for: "package.json test scripts, jest, vitest, pytest, Cargo.toml, go.mod",
                })?,
        };
        let (evidence, scratch) = if let Some(d) = &options.evidence_dir {
            (d.clone(), None)
        } else {
            let t = tempfile::Builder::new()
                .prefix("wavecrew-evidence-")
                .tempdir()
                .map_err(|e| ValidationError::io("creating", std::env::temp_dir(), e))?;
            (t.path().to_owned(), Some(Arc::new(t)))
        };
        Ok(TestRunner {
            dir: dir.to_owned(),
            options,
            framework,
            evidence,
            scratch,
            runs: 0,
            pytest_cov: None,
        })
    }

    /// The framework in use.
    pub fn framework(&self) -> &Framework {
        &self.framework
    }

    /// The project folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the runs leave their reports.
    pub fn evidence_dir(&self) -> &Path {
        &self.evidence
    }

    /// Run the whole suite, with coverage when asked for.
    pub async fn run(&mut self) -> Result<TestRun> {
        let coverage = self.options.coverage;
        self.execute(None, coverage).await
    }

    /// Run only `cases` again (no coverage). `None` when this framework
    /// cannot select single tests (an npm script, a configured command).
    pub async fn rerun(&mut self, cases: &[TestCase]) -> Result<Option<TestRun>> {
        if cases.is_empty()
            || matches!(
                self.framework,
                Framework::NpmScript { .. } | Framework::Command { .. }
            )
        {
            return Ok(None);
        }
        self.execute(Some(cases), false).await.map(Some)
    }

    async fn execute(&mut self, selection: Option<&[TestCase]>, coverage: bool) -> Result<TestRun> {
        self.runs += 1;
        let out = self.evidence.join(format!("run-{}", self.runs));
        if out.exists() {
            std::fs::remove_dir_all(&out).map_err(|e| ValidationError::io("clearing", &out, e))?;
        }
        std::fs::create_dir_all(&out).map_err(|e| ValidationError::io("creating", &out, e))?;
        let (cmd, spec, cov_files, cov_note) = self.command(&out, selection, coverage).await?;
        let output = process::run(&cmd).await;
        let command = cmd.display();
        match &output.ended {
            Ended::NotFound => {
                return Err(ValidationError::ToolMissing {
                    tool: cmd.program.to_string_lossy().into_owned(),
                    message: "not found in PATH".into(),
                });
            }
            Ended::SpawnFailed { message } => {
                return Err(ValidationError::ToolMissing {
                    tool: cmd.program.to_string_lossy().into_owned(),
                    message: message.clone(),
                });
            }
            _ => {}
        }
        let timed_out = output.ended == Ended::TimedOut;
        let console = output.combined();
        let report = match &spec {
            ReportSpec::JUnit(p) if p.is_file() => Some(report::parse_junit_file(p)?),
            ReportSpec::Jest(p) if p.is_file() => {
                let text =
                    std::fs::read_to_string(p).map_err(|e| ValidationError::io("reading", p, e))?;
                let root = self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone());
                Some(report::parse_jest_json(&text, p, Some(&root))?)
            }
            ReportSpec::GoJson(p) => {
                std::fs::write(p, &output.stdout)
                    .map_err(|e| ValidationError::io("writing", p, e))?;
                let r = report::parse_go_test_json(&output.stdout, p)?;
                (!r.cases.is_empty()).then_some(r)
            }
            ReportSpec::Libtest => parse_libtest_output(&console),
            _ => None,
        };
        let report = match report {
            Some(r) => r,
            None if timed_out => {
                return Err(ValidationError::TimedOut {
                    command,
                    seconds: self.options.timeout.as_secs(),
                });
            }
            None => parse_console_summary(&console).ok_or_else(|| ValidationError::NoEvidence {
                command: command.clone(),
                code: output.code(),
            })?,
        };
        let mut report = report;
        if self.framework == Framework::CargoNextest && report.source == Source::Report {
            // nextest leaves ignored tests out of its JUnit report; their
            // number is on its summary line.
            if let Some(summary) = parse_console_summary(&console)
                && summary.counts.skipped > report.counts.skipped
            {
                let extra = summary.counts.skipped - report.counts.skipped;
                report.counts.skipped += extra;
                report.counts.total += extra;
            }
        }
        let mut coverage_note = cov_note;
        let mut cov = None;
        if coverage && coverage_note.is_none() {
            match cov_files.iter().find(|(p, _)| p.is_file()) {
                Some((p, format)) => {
                    let bytes =
                        std::fs::read(p).map_err(|e| ValidationError::io("reading", p, e))?;
                    cov = Some(coverage::parse_coverage(*format, &bytes, p)?);
                }
                None => coverage_note = Some("the run wrote no coverage file".into()),
            }
        } else if !coverage && coverage_note.is_none() {
            coverage_note = Some("coverage not collected".into());
        }
        let tail_start = console.len().saturating_sub(8 * 1024);
        let tail_start = (tail_start..console.len())
            .find(|i| console.is_char_boundary(*i))
            .unwrap_or(console.len());
        Ok(TestRun {
            framework: self.framework.clone(),
            command,
            report,
            coverage: cov,
            coverage_note,
            exit_code: output.code(),
            duration_ms: output.duration_ms,
            output_tail: console[tail_start..].to_owned(),
            network: output.network.clone(),
            _scratch: self.scratch.clone(),
        })
    }

    fn tool(&self, name: &str) -> Option<PathBuf> {
        find_tool(name, &self.dir, &self.options.env)
    }

    /// A node tool: the project's own, or one on `PATH`; `npx --no-install`
    /// (which never downloads) otherwise.
    fn node_tool(&self, name: &str) -> (PathBuf, Vec<String>) {
        match self.tool(name) {
            Some(p) => (p, Vec::new()),
            None => (
                PathBuf::from("npx"),
                vec!["--no-install".into(), name.into()],
            ),
        }
    }

    async fn python_has(&self, python: &Path, module: &str) -> bool {
        let probe = Cmd::new(python, ["-c", &format!("import {module}")], &self.dir)
            .timeout(Duration::from_secs(60))
            .envs(&self.options.env)
            .confined(self.options.confined.as_ref());
        process::run(&probe).await.success()
    }

    #[allow(clippy::type_complexity)]
    async fn command(
        &mut self,
        out: &Path,
        selection: Option<&[TestCase]>,
        coverage: bool,
    ) -> Result<(
        Cmd,
        ReportSpec,
        Vec<(PathBuf, CoverageFormat)>,
        Option<String>,
    )> {
        let s = |p: &Path| p.display().to_string();
        let mut args: Vec<String> = Vec::new();
        let mut env = self.options.env.clone();
        let mut cov_files = Vec::new();
        let mut cov_note = None;
        let (program, spec) = match self.framework.clone() {
            Framework::Jest | Framework::Vitest => {
                let jest = self.framework == Framework::Jest;
                let (program, pre) = self.node_tool(if jest { "jest" } else { "vitest" });
                args.extend(pre);
                let report = out.join(if jest { "jest.json" } else { "vitest.json" });
                let cov_dir = out.join("coverage");
                if jest {
                    args.extend([
                        "--ci".into(),
                        "--json".into(),
                        format!("--outputFile={}", s(&report)),
                    ]);
                    if coverage {
                        args.extend([
                            "--coverage".into(),
                            "--coverageReporters=json-summary".into(),
                            "--coverageReporters=lcov".into(),
                            "--coverageReporters=text-summary".into(),
                            format!("--coverageDirectory={}", s(&cov_dir)),
                        ]);
                    }
                } else {
                    args.extend([
                        "run".into(),
                        // The console summary too, for people (and the fallback).
                        "--reporter=default".into(),
                        "--reporter=json".into(),
                        format!("--outputFile.json={}", s(&report)),
                    ]);
                    if coverage {
                        args.extend([
                            "--coverage.enabled=true".into(),
                            // Coverage even when tests fail (vitest's default is not to).
                            "--coverage.reportOnFailure=true".into(),
                            "--coverage.reporter=json-summary".into(),
                            "--coverage.reporter=lcov".into(),
                            "--coverage.reporter=text-summary".into(),
                            format!("--coverage.reportsDirectory={}", s(&cov_dir)),
                        ]);
                    }
                }
                if let Some(cases) = selection {
                    let mut files: Vec<String> =
                        cases.iter().filter_map(|c| c.file.clone()).collect();
                    files.sort();
                    files.dedup();
                    let names: Vec<String> = cases.iter().map(|c| regex_escape(&c.name)).collect();
                    args.push(format!("--testNamePattern=^(?:{})$", names.join("|")));
                    if !jest {
                        // vitest takes `-t`; jest's long flag also works there.
                        let last = args.pop().unwrap_or_default();
                        args.push("-t".into());
                        args.push(last.trim_start_matches("--testNamePattern=").to_owned());
                    }
                    // jest takes test paths as patterns, vitest as plain filters.
                    args.extend(
                        files
                            .iter()
                            .map(|f| if jest { regex_escape(f) } else { f.clone() }),
                    );
                }
                cov_files.push((
                    cov_dir.join("coverage-summary.json"),
                    CoverageFormat::Istanbul,
                ));
                cov_files.push((cov_dir.join("lcov.info"), CoverageFormat::Lcov));
                (program, ReportSpec::Jest(report))
            }
            Framework::Pytest => {
                let python = self
                    .tool("python3")
                    .ok_or_else(|| ValidationError::ToolMissing {
                        tool: "python3".into(),
                        message: "not found in PATH".into(),
                    })?;
                if !self.python_has(&python, "pytest").await {
                    return Err(ValidationError::ToolMissing {
                        tool: "pytest".into(),
                        message: format!(
                            "`{} -c 'import pytest'` failed: install pytest (and pytest-cov for coverage)",
                            python.display()
                        ),
                    });
                }
                let report = out.join("pytest.xml");
                args.extend([
                    "-m".into(),
                    "pytest".into(),
                    "-p".into(),
                    "no:cacheprovider".into(),
                    "-o".into(),
                    "junit_family=xunit1".into(),
                    format!("--junitxml={}", s(&report)),
                ]);
                if coverage {
                    if self.pytest_cov.is_none() {
                        self.pytest_cov = Some(self.python_has(&python, "pytest_cov").await);
                    }
                    if self.pytest_cov == Some(true) {
                        let cov = out.join("coverage.json");
                        args.extend([
                            "--cov".into(),
                            format!("--cov-report=json:{}", s(&cov)),
                            "--cov-report=term".into(),
                        ]);
                        env.insert("COVERAGE_FILE".into(), out.join(".coverage").into());
                        cov_files.push((cov, CoverageFormat::CoveragePy));
                    } else {
                        cov_note = Some("pytest-cov is not installed: pass rate only".into());
                    }
                }
                if let Some(cases) = selection {
                    args.extend(cases.iter().map(pytest_node_id));
                }
                (python, ReportSpec::JUnit(report))
            }
            Framework::CargoNextest | Framework::CargoTest => {
                let cargo = self
                    .tool("cargo")
                    .ok_or_else(|| ValidationError::ToolMissing {
                        tool: "cargo".into(),
                        message: "not found in PATH".into(),
                    })?;
                cov_note = Some(
                    "coverage of Rust tests is not collected (no coverage tool configured)".into(),
                );
                if self.framework == Framework::CargoNextest {
                    let store = out.join("nextest");
                    let config = out.join("nextest-tool.toml");
                    let text = format!(
                        "[store]\ndir = {}\n\n[profile.wavecrew]\nfail-fast = false\n\n[profile.wavecrew.junit]\npath = \"junit.xml\"\n",
                        toml_string(&s(&store))
                    );
                    std::fs::write(&config, text)
                        .map_err(|e| ValidationError::io("writing", &config, e))?;
                    args.extend([
                        "nextest".into(),
                        "run".into(),
                        "--no-fail-fast".into(),
                        "--tool-config-file".into(),
                        format!("wavecrew:{}", s(&config)),
                        "--profile".into(),
                        "wavecrew".into(),
                    ]);
                    if let Some(cases) = selection {
                        let expr: Vec<String> =
                            cases.iter().map(|c| format!("test(={})", c.name)).collect();
                        args.extend(["-E".into(), expr.join(" | ")]);
                    }
                    (cargo, ReportSpec::JUnit(store.join("wavecrew/junit.xml")))
                } else {
                    args.extend(["test".into(), "--no-fail-fast".into()]);
                    if let Some(cases) = selection {
                        args.extend(["--".into(), "--exact".into()]);
                        args.extend(cases.iter().map(|c| c.name.clone()));
                    }
                    (cargo, ReportSpec::Libtest)
                }
            }
            Framework::GoTest => {
                let go = self
                    .tool("go")
                    .ok_or_else(|| ValidationError::ToolMissing {
                        tool: "go".into(),
                        message: "not found in PATH".into(),
                    })?;
                cov_note = Some("Go coverage profiles are not read".into());
                args.extend(["test".into(), "-json".into()]);
                if let Some(cases) = selection {
                    let names: Vec<String> = cases.iter().map(|c| regex_escape(&c.name)).collect();
                    args.push(format!("-run=^(?:{})$", names.join("|")));
                }
                args.push("./...".into());
                (go, ReportSpec::GoJson(out.join("go-test.json")))
            }
            Framework::NpmScript { script } => {
                args.extend(["run".into(), script]);
                cov_note = Some("an npm script is read from the console: no coverage".into());
                (PathBuf::from("npm"), ReportSpec::Console)
            }
            Framework::Command {
                argv,
                junit,
                coverage: cov,
            } => {
                let Some((program, rest)) = argv.split_first() else {
                    return Err(ValidationError::BadCommand {
                        command: String::new(),
                        message: "empty command".into(),
                    });
                };
                args.extend(rest.iter().cloned());
                let spec = match junit {
                    Some(j) => {
                        let p = self.dir.join(j);
                        // A report left from an earlier run must not count.
                        let _ = std::fs::remove_file(&p);
                        ReportSpec::JUnit(p)
                    }
                    None => ReportSpec::Console,
                };
                match cov {
                    Some(c) => {
                        let p = self.dir.join(c);
                        let _ = std::fs::remove_file(&p);
                        let head = std::fs::read(&p).unwrap_or_default();
                        let format = coverage::detect_format(&p, &head)
                            .or_else(|| guess_format(&p))
                            .unwrap_or(CoverageFormat::Lcov);
                        cov_files.push((p, format));
                    }
                    None => cov_note = Some("no coverage file configured".into()),
                }
                (PathBuf::from(program), spec)
            }
        };
        let cmd = Cmd::new(program, args, &self.dir)
            .timeout(self.options.timeout)
            .envs(&env)
            .confined(self.options.confined.as_ref())
            .also_writes(out);
        Ok((cmd, spec, cov_files, cov_note))
    }
}

#[allow(clippy::case_sensitive_file_extension_comparisons)] // the name is lower-cased
fn guess_format(p: &Path) -> Option<CoverageFormat> {
    let name = p.file_name()?.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".xml") {
        Some(CoverageFormat::Cobertura)
    } else if name == "coverage-summary.json" {
        Some(CoverageFormat::Istanbul)
    } else if name.ends_with(".json") {
        Some(CoverageFormat::CoveragePy)
    } else {
        Some(CoverageFormat::Lcov)
    }
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Escape regex metacharacters (jest and vitest patterns, `go test -run`).
pub(crate) fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The pytest node id of a case from an xunit1 report: `file::Class::name`.
fn pytest_node_id(case: &TestCase) -> String {
    let Some(file) = &case.file else {
        return case.id.clone();
    };
    let module = file.trim_end_matches(".py").replace('/', ".");
    let class = case
        .classname
        .as_deref()
        .and_then(|c| c.strip_prefix(&module))
        .map(|rest| rest.trim_start_matches('.'))
        .filter(|rest| !rest.is_empty());
    match class {
        Some(class) => format!("{file}::{}::{}", class.replace('.', "::"), case.name),
        None => format!("{file}::{}", case.name),
    }
}

/// The source of a report, for messages.
pub fn describe_source(source: Source) -> &'static str {
    match source {
        Source::Report => "report",
        Source::Console => "console",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Outcome;

    #[test]
    fn pytest_ids() {
        let case = |classname: &str, name: &str| TestCase {
            id: String::new(),
            name: name.into(),
            classname: Some(classname.into()),
            file: Some("tests/test_calc.py".into()),
            outcome: Outcome::Failed,
            message: None,
        };
        assert_eq!(
            pytest_node_id(&case("tests.test_calc", "test_add")),
            "tests/test_calc.py::test_add"
        );
        assert_eq!(
            pytest_node_id(&case("tests.test_calc.TestDiv", "test_zero")),
            "tests/test_calc.py::TestDiv::test_zero"
        );
    }

    #[test]
    fn escape() {
        assert_eq!(regex_escape("a (b) c.d"), "a \\(b\\) c\\.d");
    }
}
