//! Phase 2 of seed 001 (the completion report) and `check` (read-only
//! progress).
//!
//! The banner keeps the seed's format: deliverables under `artifacts/`
//! with their producer roles, `<completed>/<total>` tasks, roles,
//! duration, session folder, and a summary of the wisdom gathered. The
//! files under `reports/` come from `wavecrew-report`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;
use wavecrew_core::{Task, TaskStatus};

use crate::validate::ValidSession;
use wavecrew_core::fsutil::list_files;

/// Human duration: `1m 05s`, `42s`, `350ms`.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60)
    } else if secs >= 60 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else if secs > 0 {
        format!("{secs}s")
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Deliverables under `artifacts/` with their producer roles (from the
/// task results that list them; `unknown` otherwise).
pub fn deliverables(valid: &ValidSession, tasks: &[Task]) -> Vec<(String, String)> {
    let mut producer: BTreeMap<String, String> = BTreeMap::new();
    for t in tasks {
        let Some(list) = t
            .result
            .as_ref()
            .and_then(|r| r.get("artifacts"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        for a in list.iter().filter_map(Value::as_str) {
            producer.insert(
                a.to_owned(),
                t.owner.clone().unwrap_or_else(|| "unknown".into()),
            );
        }
    }
    list_files(&wavecrew_core::SessionLayout::new(&valid.dir).artifacts())
        .into_iter()
        .map(|a| {
            let p = producer
                .get(&a)
                .cloned()
                .unwrap_or_else(|| "unknown".into());
            (a, p)
        })
        .collect()
}

/// The lines of `wisdom/*.md`, at most `n`.
pub fn wisdom_summary(valid: &ValidSession, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for f in list_files(&valid.dir.join("wisdom")) {
        let text = std::fs::read_to_string(valid.dir.join("wisdom").join(&f)).unwrap_or_default();
        for l in text.lines().filter(|l| l.starts_with("- ")) {
            lines.push(format!(
                "{} {}",
                f.trim_end_matches(".md"),
                l.trim_start_matches("- ")
            ));
        }
    }
    lines.truncate(n);
    lines
}

/// The seed's completion banner.
pub fn banner(valid: &ValidSession, tasks: &[Task], elapsed: Duration) -> String {
    let done = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .count();
    let complete = done == tasks.len();
    let mut out = String::new();
    let line = |out: &mut String, s: &str| {
        let _ = writeln!(out, "[executor] {s}");
    };
    line(&mut out, "============================================");
    line(
        &mut out,
        if complete {
            "TASK COMPLETE"
        } else {
            "PIPELINE ENDED WITH FAILURES"
        },
    );
    line(&mut out, "");
    line(&mut out, "Deliverables:");
    let d = deliverables(valid, tasks);
    if d.is_empty() {
        line(&mut out, "  (none under artifacts/)");
    }
    for (a, p) in d {
        line(&mut out, &format!("  - {a} ({p})"));
    }
    line(&mut out, "");
    line(&mut out, &format!("Pipeline: {done}/{} tasks", tasks.len()));
    for status in [TaskStatus::Failed, TaskStatus::Blocked, TaskStatus::Skipped] {
        let ids: Vec<&str> = tasks
            .iter()
            .filter(|t| t.status == status)
            .map(|t| t.id.as_str())
            .collect();
        if !ids.is_empty() {
            line(
                &mut out,
                &format!("{}: {}", status.as_str(), ids.join(", ")),
            );
        }
    }
    let roles: Vec<&str> = valid
        .session
        .roles
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    line(&mut out, &format!("Roles: {}", roles.join(", ")));
    line(&mut out, &format!("Duration: {}", human_duration(elapsed)));
    let wisdom = wisdom_summary(valid, 10);
    if !wisdom.is_empty() {
        line(&mut out, "Wisdom:");
        for w in wisdom {
            line(&mut out, &format!("  - {w}"));
        }
    }
    line(&mut out, "");
    line(&mut out, &format!("Session: {}", valid.dir.display()));
    line(&mut out, "============================================");
    out
}

/// `check`: counts, the graph with icons, active workers, ready list.
pub fn check_text(valid: &ValidSession, tasks: &[Task]) -> String {
    let done = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .count();
    let total = tasks.len().max(1);
    let mut out = format!(
        "Progress: {done}/{} ({}%)\n\nGraph:\n",
        tasks.len(),
        done * 100 / total
    );
    let by_id: BTreeMap<&str, &Task> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    for a in valid.analysis.effective_tasks() {
        let icon = match by_id.get(a.id.as_str()).map(|t| t.status) {
            Some(TaskStatus::Completed) => "done",
            Some(TaskStatus::InProgress) => ">>>",
            Some(TaskStatus::Failed) => "FAIL",
            Some(TaskStatus::Skipped) => "skip",
            Some(TaskStatus::Blocked) => "BLOCKED",
            Some(_) => "o",
            None => ".",
        };
        let deps: Vec<&str> = a
            .blocked_by
            .iter()
            .map(wavecrew_core::TaskId::as_str)
            .collect();
        let _ = writeln!(
            out,
            "  [{icon:>4}] {}{}",
            a.id.as_str(),
            if deps.is_empty() {
                String::new()
            } else {
                format!(" ← {}", deps.join(", "))
            }
        );
    }
    out.push_str("\nActive workers:\n");
    let now = jiff::Timestamp::now();
    let mut any = false;
    for t in tasks.iter().filter(|t| t.status == TaskStatus::InProgress) {
        any = true;
        let (who, since) = t
            .lease
            .as_ref()
            .map_or(("?".to_owned(), String::new()), |l| {
                let secs = now.duration_since(l.acquired_at).as_secs().max(0);
                (
                    format!("{} (pid {})", l.worker, l.pid),
                    human_duration(Duration::from_secs(u64::try_from(secs).unwrap_or(0))),
                )
            });
        let _ = writeln!(out, "  {} {who} running {since}", t.id.as_str());
    }
    if !any {
        out.push_str("  (none)\n");
    }
    let ready: Vec<&str> = crate::vocabulary::ready_tasks(tasks)
        .into_iter()
        .map(|t| t.id.as_str())
        .collect();
    let _ = writeln!(
        out,
        "\nReady: {}",
        if ready.is_empty() {
            "(none)".to_owned()
        } else {
            ready.join(", ")
        }
    );
    out
}
