//! The report files, each a pure function of [`RunData`]:
//!
//! | file | what |
//! |---|---|
//! | `run-summary.json` | schema-versioned: session, timings, per task state, attempts, backend, duration, files, validation, usage, merge facts; the merge queue |
//! | `junit.xml` | one testsuite per wave, one testcase per task (failure text = the verdict), for CI systems |
//! | `summary.md` | fits a CI step summary; a merge section when the session ran isolated |
//! | `trace.json` | Chrome trace events: a Gantt chart in any trace viewer, one lane per slot |
//! | `graph.dot`, `graph.mmd` | the graph with states as colours and the critical path highlighted |

use std::fmt::Write as _;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde_json::{Value, json};

use crate::data::{RunData, TaskReport};

/// The version of `run-summary.json`'s shape.
///
/// * 1: the first;
/// * 2: adds `cost` (tokens and US dollars per task, backend, role and
///   run, the budgets, the run budget's verdict, paused backends);
/// * 3: adds `merge_queue` (the integration branch, what landed in order,
///   what waits, conflicts, blocked tasks, how to take the work; `null`
///   for a session that ran in place) and, on each task that worked in a
///   worktree of its own, `merge` (branch, base, merge commit, conflicts,
///   its merge records).
pub const SCHEMA_VERSION: u32 = 3;

/// `run-summary.json`.
pub fn run_summary(run: &RunData) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "session": {"id": run.session_id, "task_description": run.task_description, "status": run.status},
        "timings": {"started_at": run.started_at, "ended_at": run.ended_at, "duration_ms": run.duration_ms},
        "counts": run.counts(),
        "waves": run.waves,
        "critical_path": run.critical_path,
        "graph_error": run.graph_error,
        "messages": run.messages,
        "tasks": run.tasks,
        "cost": run.cost,
        "merge_queue": run.merge_queue,
    })
}

/// The cost section of `summary.md` (empty when nothing was spent and no
/// budget is set).
pub fn cost_markdown(run: &RunData) -> String {
    let c = &run.cost;
    if c.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Cost\n\n");
    if let Some(v) = &c.run_budget_crossed {
        let _ = writeln!(out, "**Stopped by the budget:** {v}\n");
    }
    let _ = writeln!(
        out,
        "Run: {} tokens ({} input, {} cached, {} output), {}.",
        c.run.tokens,
        c.run.input_tokens,
        c.run.cached_input_tokens,
        c.run.output_tokens,
        c.run.cost_text()
    );
    let b = &c.budget;
    let mut budgets = Vec::new();
    if let Some(t) = b.run_tokens {
        budgets.push(format!("run_tokens {}/{t}", c.run.tokens));
    }
    if let Some(u) = b.run_usd {
        budgets.push(format!(
            "run_usd {}/${u}",
            crate::cost::dollars(c.run.cost_usd.unwrap_or(0.0))
        ));
    }
    if let Some(t) = b.task_tokens {
        budgets.push(format!("task_tokens {t} per task"));
    }
    if let Some(u) = b.task_usd {
        budgets.push(format!("task_usd ${u} per task"));
    }
    if !budgets.is_empty() {
        let _ = writeln!(out, "Budget: {}.", budgets.join(", "));
    }
    if !c.run.unpriced_models.is_empty() {
        let _ = writeln!(
            out,
            "No price for: {} (counted in tokens; add `[prices.\"<model>\"]` to wavecrew.toml).",
            c.run.unpriced_models.join(", ")
        );
    }
    for (title, rows) in c.tables() {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n| {title} | input | cached | output | tokens | cost |\n|---|---:|---:|---:|---:|---|"
        );
        for (name, l) in rows {
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} | {} | {} |",
                l.input_tokens,
                l.cached_input_tokens,
                l.output_tokens,
                l.tokens,
                l.cost_text()
            );
        }
    }
    out
}

fn human_ms(ms: Option<u64>) -> String {
    match ms {
        None => "-".into(),
        Some(ms) if ms < 1000 => format!("{ms}ms"),
        Some(ms) if ms < 60_000 => format!("{:.1}s", Duration::from_millis(ms).as_secs_f64()),
        Some(ms) => format!("{}m {:02}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

fn icon(state: &str) -> &'static str {
    match state {
        "completed" => "✅",
        "failed" => "❌",
        "skipped" => "⏭️",
        "in_progress" => "⏳",
        "blocked" => "⛔",
        crate::data::AWAITING_REVIEW => "👀",
        _ => "⬜",
    }
}

/// `summary.md`.
pub fn summary_markdown(run: &RunData) -> String {
    let counts = run.counts();
    let done = counts.get("completed").copied().unwrap_or(0);
    let mut out = format!(
        "# {}\n\n{}\n\n**{done}/{} tasks completed** in {} ({}).\n\n",
        run.session_id,
        run.task_description,
        run.tasks.len(),
        human_ms(run.duration_ms),
        counts
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !run.critical_path.is_empty() {
        let _ = writeln!(out, "Critical path: {}\n", run.critical_path.join(" → "));
    }
    out.push_str("| task | state | wave | backend | attempts | duration | files changed |\n|---|---|---|---|---|---|---|\n");
    for t in &run.tasks {
        let _ = writeln!(
            out,
            "| {}{} | {} {} | {} | {} | {} | {} | {} |",
            t.id,
            if t.critical { " ★" } else { "" },
            icon(&t.state),
            t.state,
            t.wave.map_or_else(|| "-".into(), |w| w.to_string()),
            backend_cell(t),
            t.attempts.len(),
            human_ms(t.duration_ms),
            t.files_changed.len()
        );
    }
    out.push_str(&crate::merge::queue_markdown(
        run.merge_queue.as_ref(),
        &run.tasks,
    ));
    out.push_str(&cost_markdown(run));
    let failed: Vec<&TaskReport> = run
        .tasks
        .iter()
        .filter(|t| matches!(t.state.as_str(), "failed" | "skipped" | "blocked"))
        .collect();
    if !failed.is_empty() {
        out.push_str("\n## Failures\n\n");
        for t in failed {
            let look = t
                .attempts
                .last()
                .map_or_else(String::new, |a| format!(" (see `{}`)", a.dir));
            let _ = writeln!(
                out,
                "- **{}** {}: {}{look}",
                t.id,
                t.state,
                t.error.as_deref().unwrap_or("no error recorded")
            );
        }
    }
    out
}

/// `junit.xml`: one testsuite per wave, one testcase per task.
pub fn junit(run: &RunData) -> String {
    let mut report = Report::new(format!("wavecrew {}", run.session_id));
    if let Some(ms) = run.duration_ms {
        report.set_time(Duration::from_millis(ms));
    }
    let mut waves: Vec<Vec<&TaskReport>> = run
        .waves
        .iter()
        .map(|w| w.iter().filter_map(|id| run.task(id)).collect())
        .collect();
    let placed: Vec<&str> = run.waves.iter().flatten().map(String::as_str).collect();
    let unplaced: Vec<&TaskReport> = run
        .tasks
        .iter()
        .filter(|t| !placed.contains(&t.id.as_str()))
        .collect();
    if !unplaced.is_empty() {
        waves.push(unplaced);
    }
    for (i, wave) in waves.iter().enumerate() {
        let mut suite = TestSuite::new(format!("wave-{}", i + 1));
        for t in wave {
            let verdict = t
                .error
                .clone()
                .or_else(|| t.validation.as_ref().map(Value::to_string))
                .unwrap_or_else(|| t.state.clone());
            let status = match t.state.as_str() {
                "completed" => TestCaseStatus::success(),
                "failed" => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(verdict.lines().next().unwrap_or("failed").to_owned());
                    s.set_description(verdict.clone());
                    s
                }
                other => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(format!("{other}: {verdict}"));
                    s
                }
            };
            let mut case = TestCase::new(t.id.clone(), status);
            case.set_classname(t.role.clone().unwrap_or_else(|| "wavecrew".into()));
            if let Some(ms) = t.duration_ms {
                case.set_time(Duration::from_millis(ms));
            }
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    report.to_string().unwrap_or_default()
}

/// Lanes for the trace and the timeline: each task gets the lowest lane
/// free at its start. A task spans its start to its end; a blocked task
/// (waiting for a person, so not ended) to its last record. Returns
/// `(task index, lane, start ms, end ms)`.
pub fn lanes(run: &RunData) -> Vec<(usize, usize, u64, u64)> {
    let origin: Option<jiff::Timestamp> = run.started_at.as_deref().and_then(|s| s.parse().ok());
    let Some(origin) = origin else {
        return Vec::new();
    };
    let ms = |s: &str| -> Option<u64> {
        let t: jiff::Timestamp = s.parse().ok()?;
        u64::try_from(t.duration_since(origin).as_millis()).ok()
    };
    let mut spans: Vec<(usize, u64, u64)> = run
        .tasks
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let a = ms(t.started_at.as_deref()?)?;
            let end = t.ended_at.as_deref().or_else(|| {
                (t.state == "blocked" || t.state == crate::data::AWAITING_REVIEW)
                    .then_some(t.last_record_at.as_deref())
                    .flatten()
            })?;
            let b = ms(end)?;
            Some((i, a, b.max(a + 1)))
        })
        .collect();
    spans.sort_by_key(|s| (s.1, s.0));
    let mut lane_free: Vec<u64> = Vec::new();
    let mut out = Vec::new();
    for (i, a, b) in spans {
        let lane = lane_free.iter().position(|f| *f <= a).unwrap_or_else(|| {
            lane_free.push(0);
            lane_free.len() - 1
        });
        lane_free[lane] = b;
        out.push((i, lane, a, b));
    }
    out
}

/// `trace.json` in Chrome trace-event format.
pub fn trace(run: &RunData) -> Value {
    let lanes = lanes(run);
    let mut events: Vec<Value> = vec![json!({"name": "process_name", "ph": "M", "pid": 1,
                                             "args": {"name": format!("wavecrew {}", run.session_id)}})];
    let slots = lanes.iter().map(|l| l.1).max().map_or(0, |m| m + 1);
    for s in 0..slots {
        events.push(
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": s + 1,
                           "args": {"name": format!("slot {}", s + 1)}}),
        );
    }
    for (i, lane, a, b) in lanes {
        let t = &run.tasks[i];
        events.push(json!({
            "name": t.id, "cat": t.role.clone().unwrap_or_else(|| "task".into()), "ph": "X",
            "ts": a * 1000, "dur": (b - a) * 1000, "pid": 1, "tid": lane + 1,
            "args": {"state": t.state, "wave": t.wave, "backend": t.backend, "attempts": t.attempts.len(),
                     "critical": t.critical, "title": t.title},
        }));
    }
    // The governor's waits: one span per attempt that waited to start.
    if let Some(origin) = run
        .started_at
        .as_deref()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    {
        let mut waits = Vec::new();
        for t in &run.tasks {
            for a in &t.attempts {
                let Some(g) = &a.governor else { continue };
                let waited = g["waited_ms"].as_u64().unwrap_or(0);
                let Some(asked) = g["asked_at"]
                    .as_str()
                    .and_then(|s| s.parse::<jiff::Timestamp>().ok())
                else {
                    continue;
                };
                if waited == 0 {
                    continue;
                }
                let at = u64::try_from(asked.duration_since(origin).as_millis()).unwrap_or(0);
                waits.push(json!({
                    "name": format!("{} waits for {}", t.id, a.backend), "cat": "governor", "ph": "X",
                    "ts": at * 1000, "dur": waited * 1000, "pid": 1, "tid": 0,
                    "args": {"task": t.id, "attempt": a.attempt, "backend": a.backend, "waited_for": g["waited_for"]},
                }));
            }
        }
        if !waits.is_empty() {
            events.push(json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 0,
                               "args": {"name": "governor waits"}}));
            events.extend(waits);
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

/// A task's backend in the summary table, with the host of its last
/// attempt when that ran on another host (`wavecrew worker`).
fn backend_cell(t: &crate::data::TaskReport) -> String {
    let backend = t.backend.as_deref().unwrap_or("-");
    match t.attempts.last().and_then(|a| a.host.as_deref()) {
        Some(host) => format!("{backend} on {host}"),
        None => backend.to_owned(),
    }
}
