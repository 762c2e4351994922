//! What a run spent: tokens and US dollars per task, backend, role and for
//! the run, against the budgets, with the paused backends and the waiting
//! workers, from the governor's `governor.json` (counted live from the
//! agents' streams, priced from `[prices]`). A session without that file
//! (older runs) is counted from the attempts' `outcome.json` usage, in
//! tokens only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use wavecrew_backends::config::BudgetConfig;
use wavecrew_backends::governor::iso;
use wavecrew_backends::governor::store::{GovernorState, Spend, read_state};

use crate::task::TaskReport;

/// One row of spend.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SpendLine {
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Prompt tokens served from a cache.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Input plus output.
    pub tokens: u64,
    /// US dollars of the priced tokens; `null` when none had a price.
    pub cost_usd: Option<f64>,
    /// Tokens of models without a price (never priced by a guess).
    pub unpriced_tokens: u64,
    /// Those models.
    pub unpriced_models: Vec<String>,
}

impl SpendLine {
    fn from_spend(s: &Spend) -> Self {
        let tokens = s.tokens();
        SpendLine {
            input_tokens: s.input_tokens,
            cached_input_tokens: s.cached_input_tokens,
            output_tokens: s.output_tokens,
            tokens,
            cost_usd: (tokens > s.unpriced_tokens).then_some(s.usd),
            unpriced_tokens: s.unpriced_tokens,
            unpriced_models: s.unpriced_models.iter().cloned().collect(),
        }
    }

    fn add(&mut self, o: &SpendLine) {
        self.input_tokens += o.input_tokens;
        self.cached_input_tokens += o.cached_input_tokens;
        self.output_tokens += o.output_tokens;
        self.tokens += o.tokens;
        self.cost_usd = match (self.cost_usd, o.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.unpriced_tokens += o.unpriced_tokens;
        let mut models: BTreeSet<String> = self.unpriced_models.drain(..).collect();
        models.extend(o.unpriced_models.iter().cloned());
        self.unpriced_models = models.into_iter().collect();
    }

    /// `$0.0123`, `$0.0123 + 40 unpriced tokens`, or `no price`.
    pub fn cost_text(&self) -> String {
        match (self.cost_usd, self.unpriced_tokens) {
            (None, _) if self.tokens == 0 => "-".into(),
            (None, _) => "no price".into(),
            (Some(c), 0) => dollars(c),
            (Some(c), n) => format!("{} + {n} tokens without a price", dollars(c)),
        }
    }
}

/// `$1.2345`, or six decimals below a cent (`$0.000210`).
pub fn dollars(c: f64) -> String {
    if c < 0.01 {
        format!("${c:.6}")
    } else {
        format!("${c:.4}")
    }
}

/// A backend paused after a rate limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PausedBackend {
    /// The backend.
    pub backend: String,
    /// The reset, RFC 3339.
    pub until: String,
    /// Why.
    pub reason: String,
}

/// A worker waiting for a backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waiting {
    /// The task.
    pub task: String,
    /// The backend.
    pub backend: String,
    /// Why it waits.
    pub reason: String,
    /// Since when, RFC 3339.
    pub since: String,
}

/// What the run spent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostReport {
    /// Where the numbers come from: `governor` (live, priced) or
    /// `attempts` (tokens of finished attempts only).
    pub source: String,
    /// The whole run.
    pub run: SpendLine,
    /// Per task.
    pub tasks: BTreeMap<String, SpendLine>,
    /// Per backend.
    pub backends: BTreeMap<String, SpendLine>,
    /// Per role (the tasks' owners).
    pub roles: BTreeMap<String, SpendLine>,
    /// The budgets in force.
    pub budget: BudgetConfig,
    /// The verdict when the run budget was crossed.
    pub run_budget_crossed: Option<String>,
    /// Backends paused at `now`.
    pub paused: Vec<PausedBackend>,
    /// Workers waiting for a backend.
    pub waiting: Vec<Waiting>,
}

impl CostReport {
    /// The spend tables, each with the name of its first column: per task,
    /// per backend, per role (every renderer shows them in this order).
    pub fn tables(&self) -> [(&'static str, &BTreeMap<String, SpendLine>); 3] {
        [
            ("task", &self.tasks),
            ("backend", &self.backends),
            ("role", &self.roles),
        ]
    }

    /// Whether there is anything to show.
    pub fn is_empty(&self) -> bool {
        self.run.tokens == 0 && !self.budget.any() && self.paused.is_empty()
    }
}

fn usage_line(u: &wavecrew_core::Usage) -> SpendLine {
    let tokens = u.input_tokens + u.output_tokens;
    SpendLine {
        input_tokens: u.input_tokens,
        cached_input_tokens: u.cached_input_tokens,
        output_tokens: u.output_tokens,
        tokens,
        cost_usd: None,
        unpriced_tokens: tokens,
        unpriced_models: if tokens > 0 {
            vec!["(no price recorded)".into()]
        } else {
            Vec::new()
        },
    }
}

/// Gather the spend of a session; `now_ms` decides which pauses last.
pub fn collect_cost(session_dir: &Path, tasks: &[TaskReport], now_ms: u64) -> CostReport {
    let state: Option<GovernorState> = read_state(session_dir);
    let mut report = CostReport::default();
    match &state {
        Some(s)
            if session_dir
                .join(wavecrew_backends::governor::store::STATE_FILE)
                .exists() =>
        {
            report.source = "governor".into();
            report.run = SpendLine::from_spend(&s.run);
            for (task, t) in &s.tasks {
                report
                    .tasks
                    .insert(task.clone(), SpendLine::from_spend(&t.spend));
            }
            for (name, b) in &s.backends {
                if b.spend.tokens() > 0 {
                    report
                        .backends
                        .insert(name.clone(), SpendLine::from_spend(&b.spend));
                }
                if let Some(p) = &b.paused
                    && p.until_ms > now_ms
                {
                    report.paused.push(PausedBackend {
                        backend: name.clone(),
                        until: iso(p.until_ms),
                        reason: p.reason.clone(),
                    });
                }
            }
            report.budget = s.budget.clone();
            report.run_budget_crossed.clone_from(&s.run_budget_crossed);
            report.waiting = s
                .waiting
                .iter()
                .map(|w| Waiting {
                    task: w.task.clone(),
                    backend: w.backend.clone(),
                    reason: w.reason.clone(),
                    since: iso(w.since_ms),
                })
                .collect();
        }
        _ => {
            report.source = "attempts".into();
            for t in tasks {
                for a in &t.attempts {
                    if let Some(u) = &a.usage {
                        let line = usage_line(u);
                        report.tasks.entry(t.id.clone()).or_default().add(&line);
                        report
                            .backends
                            .entry(a.backend.clone())
                            .or_default()
                            .add(&line);
                        report.run.add(&line);
                    }
                }
            }
        }
    }
    for t in tasks {
        if let Some(line) = report.tasks.get(&t.id).cloned() {
            let role = t.role.clone().unwrap_or_else(|| "-".into());
            report.roles.entry(role).or_default().add(&line);
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_backends::governor::store::{BackendState, Pause, TaskSpend, Waiter};

    #[test]
    fn the_governors_state_becomes_the_cost_report() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = GovernorState::default();
        let usage = wavecrew_core::Usage {
            input_tokens: 1000,
            output_tokens: 100,
            ..wavecrew_core::Usage::default()
        };
        let mut priced = Spend::default();
        priced.add(&usage, "gpt-x", Some(0.5));
        let mut unpriced = Spend::default();
        unpriced.add(&usage, "claude (default model)", None);
        state.tasks.insert(
            "T-1".into(),
            TaskSpend {
                backends: vec!["codex".into()],
                spend: priced.clone(),
            },
        );
        state.tasks.insert(
            "T-2".into(),
            TaskSpend {
                backends: vec!["claude".into()],
                spend: unpriced.clone(),
            },
        );
        state.run.merge(&priced);
        state.run.merge(&unpriced);
        state.backends.insert(
            "claude".into(),
            BackendState {
                paused: Some(Pause {
                    since_ms: 0,
                    until_ms: 2_000,
                    reason: "rate limited".into(),
                    task: "T-2".into(),
                }),
                spend: unpriced,
                ..BackendState::default()
            },
        );
        state.waiting.push(Waiter {
            pid: 1,
            task: "T-3".into(),
            backend: "claude".into(),
            reason: "paused".into(),
            since_ms: 1_000,
            until_ms: 2_000,
        });
        state.budget.run_tokens = Some(10_000);
        wavecrew_core::fsutil::write_json_atomic(&dir.path().join("governor.json"), &state)
            .unwrap();
        let task = |id: &str, role: &str| TaskReport {
            id: id.into(),
            title: String::new(),
            role: Some(role.into()),
            state: "completed".into(),
            wave: None,
            critical: false,
            backend: None,
            attempts: Vec::new(),
            started_at: None,
            ended_at: None,
            duration_ms: None,
            files_changed: Vec::new(),
            validation: None,
            usage: None,
            error: None,
            summary: None,
            merge: None,
            last_record_at: None,
        };
        let tasks = [task("T-1", "dev"), task("T-2", "dev")];
        let c = collect_cost(dir.path(), &tasks, 1_500);
        assert_eq!(c.source, "governor");
        assert_eq!(c.run.tokens, 2_200);
        assert_eq!(c.run.cost_text(), "$0.5000 + 1100 tokens without a price");
        assert_eq!(c.tasks["T-2"].cost_text(), "no price");
        assert_eq!(c.roles["dev"].tokens, 2_200);
        assert_eq!(c.paused.len(), 1);
        assert_eq!(c.paused[0].until, "1970-01-01T00:00:02Z");
        assert_eq!(c.waiting[0].task, "T-3");
        // After the reset, the pause is not shown.
        assert!(collect_cost(dir.path(), &tasks, 2_000).paused.is_empty());
    }
}
