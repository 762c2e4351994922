//! The scheduler's error type; every variant names the ids at fault.

use std::fmt::Write as _;

use wavecrew_core::TaskId;

use crate::problem::GraphProblem;

/// Errors from building a [`Dag`](crate::Dag) or setting up a
/// [`Dispatcher`](crate::Dispatcher).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The task graph failed validation; every problem found is listed.
    #[error("{}", invalid_message(problems))]
    Invalid {
        /// All problems, in a stable order.
        problems: Vec<GraphProblem>,
    },
    /// A concurrency limit of zero would leave these tasks never started.
    #[error("{}", zero_limit_message(class.as_deref(), ids))]
    ZeroLimit {
        /// The class whose limit is 0, or `None` for the global limit.
        class: Option<String>,
        /// The pending tasks that could never start (sorted).
        ids: Vec<TaskId>,
    },
}

impl ScheduleError {
    /// The validation problems carried by [`ScheduleError::Invalid`]; empty
    /// for other errors.
    pub fn problems(&self) -> &[GraphProblem] {
        match self {
            ScheduleError::Invalid { problems } => problems,
            ScheduleError::ZeroLimit { .. } => &[],
        }
    }
}

fn invalid_message(problems: &[GraphProblem]) -> String {
    let mut s = match problems.len() {
        1 => "the task graph has 1 problem:".to_owned(),
        n => format!("the task graph has {n} problems:"),
    };
    for p in problems {
        let _ = write!(s, "\n  - {}", p.message());
    }
    s
}

fn zero_limit_message(class: Option<&str>, ids: &[TaskId]) -> String {
    const SHOWN: usize = 10;
    let mut list = ids
        .iter()
        .take(SHOWN)
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        let _ = write!(list, " and {} more", ids.len() - SHOWN);
    }
    match class {
        Some(c) => format!("the limit for class `{c}` is 0, so {list} could never run"),
        None => format!("the global limit (max_parallel) is 0, so {list} could never run"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_limit_names_the_ids() {
        let ids: Vec<TaskId> = (0..12)
            .map(|i| TaskId::new(format!("T-{i:02}")).unwrap())
            .collect();
        let e = ScheduleError::ZeroLimit {
            class: Some("codex".into()),
            ids,
        };
        assert_eq!(
            e.to_string(),
            "the limit for class `codex` is 0, so `T-00`, `T-01`, `T-02`, `T-03`, `T-04`, `T-05`, \
             `T-06`, `T-07`, `T-08`, `T-09` and 2 more could never run"
        );
        assert!(e.problems().is_empty());
    }
}
