//! The session folder's layout, named once: every file and folder of
//! `.workflow/.team/<session-id>/` that more than one crate reads or
//! writes (the bus's own files are `wavecrew_msgbus::BusPaths`, which
//! builds on this).
//!
//! ```text
//! <session>/
//!   team-session.json      the session (ccw's shape)
//!   task-analysis.json     the graph and the tasks as planned
//!   tasks/<ID>.json        the task store (tasks/.lock)
//!   attempts/<ID>/<n>/     each attempt: prompt, events, outcome
//!   workers/<ID>.log       each worker's output
//!   artifacts/             what roles hand to later tasks
//!   reports/               summary, JUnit, trace, HTML, run summary
//!   .msg/                  the message bus
//!   control/               a person's requests (`crate::control::Control`)
//! ```

use std::path::{Path, PathBuf};

/// `team-session.json`.
pub const TEAM_SESSION: &str = "team-session.json";
/// `task-analysis.json`.
pub const TASK_ANALYSIS: &str = "task-analysis.json";

/// The numbers of the attempt folders (`<n>/`) in `dir`, sorted.
pub fn attempt_numbers(dir: &Path) -> Vec<u32> {
    let mut numbers: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The paths of one session folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLayout {
    dir: PathBuf,
}

impl SessionLayout {
    /// The layout of the session folder `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SessionLayout { dir: dir.into() }
    }

    /// The session folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `team-session.json`.
    pub fn team_session(&self) -> PathBuf {
        self.dir.join(TEAM_SESSION)
    }

    /// `task-analysis.json`.
    pub fn task_analysis(&self) -> PathBuf {
        self.dir.join(TASK_ANALYSIS)
    }

    /// `tasks/`: the task store.
    pub fn tasks(&self) -> PathBuf {
        self.dir.join("tasks")
    }

    /// `attempts/`.
    pub fn attempts_root(&self) -> PathBuf {
        self.dir.join("attempts")
    }

    /// `attempts/<task>/`: every attempt of one task.
    pub fn attempts(&self, task: &str) -> PathBuf {
        self.attempts_root().join(task)
    }

    /// The numbers of `task`'s attempt folders there are, sorted.
    pub fn attempt_numbers(&self, task: &str) -> Vec<u32> {
        attempt_numbers(&self.attempts(task))
    }

    /// `workers/`.
    pub fn workers(&self) -> PathBuf {
        self.dir.join("workers")
    }

    /// `workers/<task>.log`: the output of the worker of one task.
    pub fn worker_log(&self, task: &str) -> PathBuf {
        self.workers().join(format!("{task}.log"))
    }

    /// `artifacts/`.
    pub fn artifacts(&self) -> PathBuf {
        self.dir.join("artifacts")
    }

    /// `reports/`.
    pub fn reports(&self) -> PathBuf {
        self.dir.join("reports")
    }

    /// `cache/test-runs/`: the project's test suite as it ran on a base
    /// commit, one file per framework and tree (written by wavecrew only;
    /// see `wavecrew_role_kit::suite`).
    pub fn test_runs(&self) -> PathBuf {
        self.dir.join("cache").join("test-runs")
    }

    /// `.msg/`: the bus.
    pub fn msg(&self) -> PathBuf {
        self.dir.join(".msg")
    }

    /// Whether `dir` looks like a session folder: it has a `tasks/` folder
    /// or a `team-session.json`.
    pub fn looks_like_session(&self) -> bool {
        self.tasks().is_dir() || self.team_session().is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let l = SessionLayout::new("/s");
        assert_eq!(l.team_session(), Path::new("/s/team-session.json"));
        assert_eq!(l.attempts("IMPL-001"), Path::new("/s/attempts/IMPL-001"));
        assert_eq!(
            l.worker_log("IMPL-001"),
            Path::new("/s/workers/IMPL-001.log")
        );
        assert_eq!(l.msg(), Path::new("/s/.msg"));
    }
}
