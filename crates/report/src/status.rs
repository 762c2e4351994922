//! `wavecrew status`: tasks by state, waves, running attempts with their
//! backend and elapsed time, the merge queue of a session that ran
//! isolated, the critical path, and the last bus records.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::data::{RunData, read_bus};

/// A running task: its latest attempt and how long it has run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Running {
    /// The task.
    pub task: String,
    /// The backend of its latest attempt.
    pub backend: Option<String>,
    /// The attempt number.
    pub attempt: Option<u32>,
    /// Seconds since the lease was taken.
    pub elapsed_secs: Option<i64>,
    /// The host it runs on, when another host runs it (`wavecrew worker`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The running tasks, from the store's leases and the attempt folders.
pub fn running(run: &RunData) -> Vec<Running> {
    let store = wavecrew_core::FileTaskStore::for_session(&run.session_dir);
    let tasks = wavecrew_core::TaskStore::list(&store).unwrap_or_default();
    let now = jiff::Timestamp::now();
    tasks
        .iter()
        .filter(|t| t.status == wavecrew_core::TaskStatus::InProgress)
        .map(|t| {
            let report = run.task(t.id.as_str());
            let last = report.and_then(|r| r.attempts.last());
            Running {
                task: t.id.as_str().to_owned(),
                backend: last.map(|a| a.backend.clone()),
                attempt: last.map(|a| a.attempt),
                elapsed_secs: t
                    .lease
                    .as_ref()
                    .map(|l| now.duration_since(l.acquired_at).as_secs()),
                // A remote worker's lease, as the coordinator shows it,
                // has no local pid.
                host: t
                    .lease
                    .as_ref()
                    .filter(|l| l.pid == 0)
                    .map(|l| l.host.clone()),
            }
        })
        .collect()
}

/// `--json`.
pub fn status_json(run: &RunData, last: usize) -> Value {
    let bus = read_bus(&run.session_dir);
    let recent: Vec<&Value> = bus.iter().rev().take(last).rev().collect();
    json!({
        "session": run.session_id,
        "status": run.status,
        "counts": run.counts(),
        "waves": run.waves.iter().map(|w| w.iter().map(|id| json!({"id": id, "state": run.task(id).map(|t| t.state.clone())})).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "running": running(run),
        "critical_path": run.critical_path,
        "spend": {"run": run.cost.run, "budget": run.cost.budget, "run_budget_crossed": run.cost.run_budget_crossed},
        "paused_backends": run.cost.paused,
        "waiting": run.cost.waiting,
        "recent_messages": recent,
        "merge_queue": run.merge_queue,
        "hosts": remote_attempts(run),
    })
}

/// How many attempts listed per host in the text view (`--json` has all).
const HOST_ATTEMPTS_SHOWN: usize = 8;

/// The attempts that ran on other hosts (`wavecrew worker`), by host:
/// `{"h2": [{"task", "attempt", "outcome"}]}`; empty when none did.
pub fn remote_attempts(run: &RunData) -> std::collections::BTreeMap<String, Vec<Value>> {
    let mut hosts = std::collections::BTreeMap::<String, Vec<Value>>::new();
    for t in &run.tasks {
        for a in &t.attempts {
            if let Some(host) = &a.host {
                hosts
                    .entry(host.clone())
                    .or_default()
                    .push(json!({"task": t.id, "attempt": a.attempt, "outcome": a.outcome}));
            }
        }
    }
    hosts
}

/// The text of [`remote_attempts`]: a line per host.
fn hosts_text(run: &RunData) -> String {
    let hosts = remote_attempts(run);
    if hosts.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nAttempts on other hosts:\n");
    for (host, attempts) in &hosts {
        let shown: Vec<String> = attempts
            .iter()
            .take(HOST_ATTEMPTS_SHOWN)
            .map(|a| {
                format!(
                    "{}#{} {}",
                    a["task"].as_str().unwrap_or("?"),
                    a["attempt"],
                    a["outcome"].as_str().unwrap_or("?")
                )
            })
            .collect();
        let more = attempts.len().saturating_sub(HOST_ATTEMPTS_SHOWN);
        let _ = writeln!(
            out,
            "  {host} ({} attempts): {}{}",
            attempts.len(),
            shown.join(", "),
            if more > 0 {
                format!(", … and {more} more (--json lists them all)")
            } else {
                String::new()
            }
        );
    }
    out
}

/// The text view.
pub fn status_text(run: &RunData, last: usize) -> String {
    let mut out = format!("Session {} ({})\n", run.session_id, run.status);
    let counts = run.counts();
    let _ = writeln!(
        out,
        "Tasks: {} ({})",
        run.tasks.len(),
        counts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    out.push_str("\nWaves:\n");
    for (i, w) in run.waves.iter().enumerate() {
        let items: Vec<String> = w
            .iter()
            .map(|id| format!("{id} [{}]", run.task(id).map_or("?", |t| t.state.as_str())))
            .collect();
        let _ = writeln!(out, "  {}: {}", i + 1, items.join("  "));
    }
    if let Some(e) = &run.graph_error {
        let _ = writeln!(out, "  (graph problem: {e})");
    }
    out.push_str("\nRunning:\n");
    let running = running(run);
    if running.is_empty() {
        out.push_str("  (none)\n");
    }
    for r in running {
        if let Some(host) = &r.host {
            let _ = writeln!(
                out,
                "  {} on {host}, {} s",
                r.task,
                r.elapsed_secs.map_or_else(|| "?".into(), |s| s.to_string())
            );
            continue;
        }
        let _ = writeln!(
            out,
            "  {} via {} (attempt {}), {} s",
            r.task,
            r.backend.as_deref().unwrap_or("?"),
            r.attempt.map_or_else(|| "-".into(), |a| a.to_string()),
            r.elapsed_secs.map_or_else(|| "?".into(), |s| s.to_string())
        );
    }
    out.push_str(&spend_text(run));
    out.push_str(&hosts_text(run));
    if let Some(q) = &run.merge_queue {
        out.push_str(&crate::merge::queue_text(q));
    }
    let _ = writeln!(
        out,
        "\nCritical path: {}",
        if run.critical_path.is_empty() {
            "-".to_owned()
        } else {
            run.critical_path.join(" → ")
        }
    );
    let bus = read_bus(&run.session_dir);
    let _ = writeln!(
        out,
        "\nLast {} of {} records:",
        last.min(bus.len()),
        bus.len()
    );
    for m in bus.iter().rev().take(last).rev() {
        let _ = writeln!(
            out,
            "  {} {} {} → {} ({}) {}",
            m["id"].as_str().unwrap_or(""),
            m["ts"].as_str().unwrap_or(""),
            m["from"].as_str().unwrap_or(""),
            m["to"].as_str().unwrap_or(""),
            m["type"].as_str().unwrap_or(""),
            m["summary"].as_str().unwrap_or("")
        );
    }
    out
}

/// Spend against the budgets, paused backends with their reset, waiting
/// workers.
fn spend_text(run: &RunData) -> String {
    let c = &run.cost;
    let mut out = String::new();
    if c.is_empty() && c.waiting.is_empty() {
        return out;
    }
    let b = &c.budget;
    let of = |limit: Option<u64>| limit.map_or_else(String::new, |l| format!(" of {l}"));
    let _ = writeln!(
        out,
        "\nSpend: {} tokens{}, {}{}",
        c.run.tokens,
        of(b.run_tokens),
        c.run.cost_text(),
        b.run_usd.map_or_else(String::new, |u| format!(" of ${u}"))
    );
    if let Some(v) = &c.run_budget_crossed {
        let _ = writeln!(out, "  budget crossed: {v}; no new attempt starts");
    }
    if !c.paused.is_empty() {
        out.push_str("Paused backends:\n");
        for p in &c.paused {
            let _ = writeln!(out, "  {} until {} ({})", p.backend, p.until, p.reason);
        }
    }
    if !c.waiting.is_empty() {
        out.push_str("Waiting:\n");
        for w in &c.waiting {
            let _ = writeln!(
                out,
                "  {} for {} since {}: {}",
                w.task, w.backend, w.since, w.reason
            );
        }
    }
    out
}
