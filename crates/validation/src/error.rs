//! The error type of `wavecrew-validation`. A check that *ran* and found a
//! problem is a result, not an error; these are the cases where no evidence
//! could be had: a report that does not parse, a command that cannot be
//! split, a folder that cannot be read.

use std::io;
use std::path::PathBuf;

use wavecrew_sys::io::PathIoError;

/// Why validation could not produce evidence.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// A file or folder could not be read or written.
    #[error(transparent)]
    Io(PathIoError),
    /// A test or coverage report is not what its format says it is.
    #[error("`{path}`: malformed {format} report: {message}")]
    MalformedReport {
        /// The report file (or a label such as `<stdin>`).
        path: PathBuf,
        /// The format expected ("JUnit XML", "jest JSON", "lcov", …).
        format: &'static str,
        /// What is wrong, with the position when known.
        message: String,
    },
    /// A command line could not be split into words, or is empty.
    #[error("command `{command}`: {message}")]
    BadCommand {
        /// The command as written.
        command: String,
        /// What is wrong with it.
        message: String,
    },
    /// No test framework was found and no command was configured.
    #[error("`{dir}`: no test framework found ({looked_for}); configure a test command")]
    NoFramework {
        /// The project folder.
        dir: PathBuf,
        /// What was looked for.
        looked_for: &'static str,
    },
    /// The test command ran but left no report and printed no summary.
    #[error("`{command}` produced no test report and no summary line{}", exit_suffix(*code))]
    NoEvidence {
        /// The command that ran.
        command: String,
        /// Its exit code.
        code: Option<i32>,
    },
    /// A tool the test run needs is not installed.
    #[error("`{tool}` is not available: {message}")]
    ToolMissing {
        /// The tool (`pytest`, `jest`, …).
        tool: String,
        /// What was tried and how to install it.
        message: String,
    },
    /// The test command ran out of time before it wrote a report.
    #[error("`{command}` did not finish within {seconds} s")]
    TimedOut {
        /// The command.
        command: String,
        /// The limit.
        seconds: u64,
    },
    /// The fixer reported an error.
    #[error("fixer failed in round {round}: {message}")]
    Fixer {
        /// The fix round (1-based).
        round: u32,
        /// What the fixer said.
        message: String,
    },
    /// An error from the core crate (task files, atomic writes).
    #[error(transparent)]
    Core(#[from] wavecrew_core::CoreError),
}

fn exit_suffix(code: Option<i32>) -> String {
    match code {
        Some(c) => format!(" (exit code {c})"),
        None => " (killed by a signal)".to_owned(),
    }
}

impl ValidationError {
    /// An I/O error on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        ValidationError::Io(PathIoError::new(op, path, source))
    }

    /// A malformed report.
    pub fn malformed(
        path: impl Into<PathBuf>,
        format: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ValidationError::MalformedReport {
            path: path.into(),
            format,
            message: message.into(),
        }
    }

    /// Whether the user can fix this by changing their input (a report, a
    /// command, a configuration) rather than it being an environment fault.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ValidationError::MalformedReport { .. }
            | ValidationError::BadCommand { .. }
            | ValidationError::NoFramework { .. } => true,
            ValidationError::Core(e) => e.is_bad_input(),
            _ => false,
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = ValidationError> = std::result::Result<T, E>;
