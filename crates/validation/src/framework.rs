//! Which test framework a project uses, and the command that runs it with a
//! machine-readable reporter.
//!
//! Detection order: `package.json` (`scripts.test`, else
//! `scripts["test:unit"]`; the script text, then the dev dependencies, tell
//! jest from vitest; any other script runs as `npm run <script>` and is read
//! from the console), pytest (`pytest.ini`, `conftest.py`, a
//! `[tool.pytest…]` section, or `test_*.py` files), Cargo (nextest when
//! `cargo nextest` is installed, else `cargo test`), Go. A configured
//! command ([`Framework::Command`]) overrides detection.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::process::{self, Cmd};
use crate::syntax::find_tool;

/// A test framework, or a configured command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "name")]
pub enum Framework {
    /// jest, with `--json` and istanbul coverage.
    Jest,
    /// vitest, with the json reporter and v8/istanbul coverage.
    Vitest,
    /// pytest, with `--junitxml` and pytest-cov.
    Pytest,
    /// `cargo nextest run` with a JUnit report.
    CargoNextest,
    /// `cargo test` (libtest console lines).
    CargoTest,
    /// `go test -json`.
    GoTest,
    /// `npm run <script>` of a script that is neither jest nor vitest.
    NpmScript {
        /// The script's name.
        script: String,
    },
    /// A configured command, split into argv.
    Command {
        /// The argv.
        argv: Vec<String>,
        /// Where it writes a JUnit report, if it does (relative to the project).
        junit: Option<PathBuf>,
        /// Where it writes coverage, if it does (relative to the project).
        coverage: Option<PathBuf>,
    },
}

impl Framework {
    /// A short name for messages and JSON.
    pub fn name(&self) -> &str {
        match self {
            Framework::Jest => "jest",
            Framework::Vitest => "vitest",
            Framework::Pytest => "pytest",
            Framework::CargoNextest => "cargo-nextest",
            Framework::CargoTest => "cargo-test",
            Framework::GoTest => "go-test",
            Framework::NpmScript { .. } => "npm-script",
            Framework::Command { .. } => "command",
        }
    }
}

/// Flags that change only how much a test command prints: the same suite
/// runs with or without them.
const VERBOSITY_FLAGS: [&str; 6] = ["-q", "-qq", "-v", "-vv", "--quiet", "--verbose"];

impl Framework {
    /// Whether `argv` (an acceptance command) runs this framework's whole
    /// suite as wavecrew runs it: `pytest`, `python -m pytest`, `npx
    /// jest`, `npm test`, `cargo test`, `go test ./...`, or a configured
    /// command as configured; only verbosity flags may be added. Such a
    /// command is judged by the task's one run of the suite.
    pub fn runs_suite(&self, argv: &[String]) -> bool {
        let words: Vec<&str> = argv
            .iter()
            .map(String::as_str)
            .filter(|w| !VERBOSITY_FLAGS.contains(w))
            .collect();
        let npm_test = |script: &str| {
            matches!(
                words.as_slice(),
                ["npm" | "yarn" | "pnpm", "test"] | ["npm" | "yarn" | "pnpm", "run", _]
                    if words.len() == 2 || words[2] == script
            )
        };
        match self {
            Framework::Pytest => matches!(
                words.as_slice(),
                ["pytest" | "py.test"] | ["python" | "python3", "-m", "pytest"]
            ),
            Framework::Jest => {
                npm_test("test") || matches!(words.as_slice(), ["jest"] | ["npx", "jest"])
            }
            Framework::Vitest => {
                npm_test("test")
                    || matches!(
                        words.as_slice(),
                        ["vitest", "run"] | ["npx", "vitest", "run"]
                    )
            }
            Framework::CargoNextest => {
                matches!(words.as_slice(), ["cargo", "nextest", "run"])
            }
            Framework::CargoTest => matches!(words.as_slice(), ["cargo", "test"]),
            Framework::GoTest => matches!(words.as_slice(), ["go", "test", "./..."]),
            Framework::NpmScript { script } => {
                (script == "test" && npm_test("test"))
                    || matches!(words.as_slice(), ["npm", "run", s] if s == script)
            }
            Framework::Command { argv: own, .. } => own.as_slice() == argv,
        }
    }
}

fn read_package_json(dir: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The npm placeholder script that only fails.
fn is_placeholder(script: &str) -> bool {
    script.contains("no test specified")
}

/// Detect the framework of the project in `dir`; `None` when nothing fits.
/// `env` is the environment the tests will run with (its `PATH` decides
/// whether `cargo nextest` is there).
pub async fn detect(dir: &Path, env: &BTreeMap<OsString, OsString>) -> Option<Framework> {
    if let Some(pkg) = read_package_json(dir) {
        let scripts = pkg.get("scripts");
        let script = ["test", "test:unit"].into_iter().find_map(|name| {
            let text = scripts?.get(name)?.as_str()?;
            (!is_placeholder(text)).then(|| (name.to_owned(), text.to_owned()))
        });
        let has_dep = |dep: &str| {
            ["devDependencies", "dependencies"]
                .iter()
                .any(|k| pkg.get(*k).and_then(|d| d.get(dep)).is_some())
        };
        match &script {
            Some((_, text)) if text.contains("vitest") => return Some(Framework::Vitest),
            Some((_, text)) if text.contains("jest") => return Some(Framework::Jest),
            _ => {}
        }
        if has_dep("vitest") {
            return Some(Framework::Vitest);
        }
        if has_dep("jest") {
            return Some(Framework::Jest);
        }
        if let Some((name, _)) = script {
            return Some(Framework::NpmScript { script: name });
        }
    }
    if is_pytest_project(dir) {
        return Some(Framework::Pytest);
    }
    if dir.join("Cargo.toml").is_file() {
        let nextest = match find_tool("cargo", dir, env) {
            Some(cargo) => {
                // Asked from `/`, not the project: a `.cargo/config.toml`
                // there (an alias named `nextest`) is the project's code.
                let probe = Cmd::new(cargo, ["nextest", "--version"], "/")
                    .timeout(Duration::from_secs(30))
                    .envs(env);
                process::run(&probe).await.success()
            }
            None => false,
        };
        return Some(if nextest {
            Framework::CargoNextest
        } else {
            Framework::CargoTest
        });
    }
    if dir.join("go.mod").is_file() {
        return Some(Framework::GoTest);
    }
    None
}

#[allow(clippy::case_sensitive_file_extension_comparisons)] // naming conventions are case-sensitive
fn is_pytest_project(dir: &Path) -> bool {
    let contains = |file: &str, needle: &str| {
        std::fs::read_to_string(dir.join(file)).is_ok_and(|t| t.contains(needle))
    };
    if dir.join("pytest.ini").is_file()
        || dir.join("conftest.py").is_file()
        || contains("pyproject.toml", "[tool.pytest")
        || contains("setup.cfg", "[tool:pytest]")
        || contains("tox.ini", "[pytest]")
    {
        return true;
    }
    let has_test_py = |d: &Path| {
        std::fs::read_dir(d).ok().is_some_and(|entries| {
            entries.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.ends_with(".py") && (n.starts_with("test_") || n.ends_with("_test.py"))
            })
        })
    };
    has_test_py(dir) || has_test_py(&dir.join("tests"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    /// The commands that run the whole suite are known; a selection, a
    /// different tool or other flags are not.
    #[test]
    fn the_suite_command_is_recognised_and_nothing_else() {
        for yes in [
            "pytest",
            "pytest -q",
            "python -m pytest",
            "python3 -m pytest -v",
        ] {
            assert!(Framework::Pytest.runs_suite(&words(yes)), "{yes}");
        }
        for no in [
            "pytest tests/test_a.py",
            "pytest -k add",
            "python -c pytest",
            "make test",
        ] {
            assert!(!Framework::Pytest.runs_suite(&words(no)), "{no}");
        }
        assert!(Framework::Jest.runs_suite(&words("npm test")));
        assert!(Framework::Jest.runs_suite(&words("npx jest")));
        assert!(!Framework::Jest.runs_suite(&words("npm run lint")));
        assert!(Framework::Vitest.runs_suite(&words("npx vitest run")));
        assert!(!Framework::Vitest.runs_suite(&words("npx vitest")));
        assert!(Framework::CargoTest.runs_suite(&words("cargo test")));
        assert!(!Framework::CargoTest.runs_suite(&words("cargo test --release")));
        assert!(Framework::GoTest.runs_suite(&words("go test ./...")));
        let script = Framework::NpmScript {
            script: "test:unit".into(),
        };
        assert!(script.runs_suite(&words("npm run test:unit")));
        assert!(!script.runs_suite(&words("npm test")));
    }
}
