//! Exit codes, the same for every wavecrew binary (DESIGN §1), and the error
//! type that carries one up to `main`.

use std::fmt;
use std::process::ExitCode;

/// What a binary's exit status means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: everything asked for succeeded.
    Success = 0,
    /// 1: some task failed or needs a person (or a check found problems).
    Failed = 1,
    /// 2: bad input or usage; the message names the file and field.
    BadInput = 2,
    /// 3: interrupted; the session can be resumed.
    Interrupted = 3,
    /// 4: an internal error (I/O, a bug).
    Internal = 4,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// An error on its way to `main`, with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    /// The exit code to use.
    pub exit: Exit,
    /// What went wrong.
    pub error: anyhow::Error,
}

impl CliError {
    /// A bad-input error (exit 2).
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Self {
        CliError {
            exit: Exit::BadInput,
            error: error.into(),
        }
    }

    /// An internal error (exit 4).
    pub fn internal(error: impl Into<anyhow::Error>) -> Self {
        CliError {
            exit: Exit::Internal,
            error: error.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Our error messages already include their causes; `{:#}` would
        // print each cause twice.
        write!(f, "{}", self.error)
    }
}

impl From<wavecrew_core::CoreError> for CliError {
    fn from(e: wavecrew_core::CoreError) -> Self {
        if e.is_bad_input() {
            CliError::bad_input(e)
        } else {
            CliError::internal(e)
        }
    }
}

impl From<wavecrew_core::IdError> for CliError {
    fn from(e: wavecrew_core::IdError) -> Self {
        CliError::bad_input(e)
    }
}

/// The result type of every command: the exit code to use on success, or an error.
pub type CmdResult = Result<Exit, CliError>;
