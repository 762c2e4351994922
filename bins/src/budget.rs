//! The run's budget at the command line: `--hard-budget` handed to every
//! worker through the governor's state, and the verdict at the end of a
//! run that a budget stopped.

use std::path::Path;

use wavecrew_backends::Config;
use wavecrew_backends::governor::Governor;

use crate::output;

/// Record whether crossing the run budget stops running attempts too (the
/// workers read it from the session's governor state).
pub fn set_hard_budget(config: &Config, session_dir: &Path, hard: bool) {
    if let Err(e) = Governor::for_session(config, session_dir).set_hard_budget(hard) {
        output::warning(&format!("governor: {e}"));
    }
}

/// When the run budget was crossed, say so (naming the budget) and return
/// true: the run ends with exit 1.
pub fn report_verdict(session_dir: &Path) -> bool {
    let Some(state) = wavecrew_backends::governor::store::read_state(session_dir) else {
        return false;
    };
    match state.run_budget_crossed {
        Some(v) => {
            output::error(&format!("the run stopped: {v}"));
            true
        }
        None => false,
    }
}
