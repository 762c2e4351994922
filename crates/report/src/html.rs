//! `index.html`: a self-contained timeline of the run (no script, no
//! network): one row per slot with a bar per task (colour = state, a thick
//! outline = critical path), on it a green diamond where the task's work
//! landed on the integration branch, a red triangle where it met a merge
//! conflict and an orange square where `[integration] verify` kept it out;
//! the waves, each task's attempts, and the merge queue of
//! a session that ran isolated.

use std::fmt::Write as _;

use crate::data::RunData;
use crate::merge::{blocked_reason, short, take_sentence, with_text};
use crate::render::lanes;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn colour(state: &str) -> &'static str {
    wavecrew_scheduler::state_colour(state).unwrap_or("#e5e7eb")
}

/// The page.
pub fn index_html(run: &RunData) -> String {
    let lanes = lanes(run);
    let total = lanes.iter().map(|l| l.3).max().unwrap_or(1).max(1);
    let rows = lanes.iter().map(|l| l.1).max().map_or(0, |m| m + 1);
    let width = 960.0_f64;
    let row_h = 28;
    let height = rows * row_h + 30;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"timeline\">",
        width + 80.0
    );
    for r in 0..rows {
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">slot {}</text>",
            r * row_h + 18,
            r + 1
        );
    }
    for (i, lane, a, b) in &lanes {
        let t = &run.tasks[*i];
        #[allow(clippy::cast_precision_loss)]
        let (x, w) = (
            70.0 + width * (*a as f64) / (total as f64),
            (width * ((*b - *a) as f64) / (total as f64)).max(2.0),
        );
        let _ = write!(
            svg,
            "<g><title>{} ({}) {} ms, wave {}</title><rect x=\"{x:.1}\" y=\"{}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\" rx=\"3\"/><text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{}</text></g>",
            esc(&t.id),
            esc(&t.state),
            b - a,
            t.wave.map_or_else(|| "-".into(), |w| w.to_string()),
            lane * row_h + 4,
            row_h - 8,
            colour(&t.state),
            if t.critical { "#dc2626" } else { "#6b7280" },
            if t.critical { 2.5 } else { 0.8 },
            x + 3.0,
            lane * row_h + 18,
            esc(&t.id)
        );
    }
    let markers = merge_markers(run, &lanes, total, width, row_h);
    svg.push_str(&markers);
    let _ = write!(
        svg,
        "<text x=\"70\" y=\"{}\" font-size=\"11\">0</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{} ms</text></svg>",
        rows * row_h + 22,
        width + 70.0,
        rows * row_h + 22,
        total
    );
    let mut waves = String::new();
    for (i, w) in run.waves.iter().enumerate() {
        let _ = write!(waves, "<li><b>wave {}</b>: ", i + 1);
        for id in w {
            let state = run.task(id).map_or("pending", |t| t.state.as_str());
            let _ = write!(
                waves,
                "<span class=\"chip\" style=\"background:{}\">{}</span> ",
                colour(state),
                esc(id)
            );
        }
        waves.push_str("</li>");
    }
    let mut table = String::from(
        "<table><thead><tr><th>task</th><th>state</th><th>wave</th><th>backend</th><th>attempts</th><th>duration</th><th>files</th></tr></thead><tbody>",
    );
    for t in &run.tasks {
        let attempts: Vec<String> = t
            .attempts
            .iter()
            .map(|a| {
                let waited = a
                    .governor
                    .as_ref()
                    .and_then(|g| g["waited_ms"].as_u64())
                    .filter(|w| *w > 0)
                    .map_or_else(String::new, |w| {
                        format!(
                            ", waited {w} ms for {}",
                            a.governor
                                .as_ref()
                                .map_or_else(String::new, |g| esc(&g["waited_for"]
                                    .as_array()
                                    .map(|r| r
                                        .iter()
                                        .filter_map(|x| x.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", "))
                                    .unwrap_or_default()))
                        )
                    });
                let host = a
                    .host
                    .as_deref()
                    .map_or_else(String::new, |h| format!(" on {}", esc(h)));
                format!(
                    "#{} {}{host} {} ({}{waited})",
                    a.attempt,
                    esc(&a.backend),
                    esc(&a.outcome),
                    a.duration_ms
                        .map_or_else(|| "-".into(), |d| format!("{d} ms"))
                )
            })
            .collect();
        let _ = write!(
            table,
            "<tr><td>{}{}</td><td><span class=\"chip\" style=\"background:{}\">{}</span></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.id),
            if t.critical { " ★" } else { "" },
            colour(&t.state),
            esc(&t.state),
            t.wave.map_or_else(|| "-".into(), |w| w.to_string()),
            esc(t.backend.as_deref().unwrap_or("-")),
            attempts.join("<br>"),
            t.duration_ms
                .map_or_else(|| "-".into(), |d| format!("{d} ms")),
            esc(&t.files_changed.join(", "))
        );
    }
    table.push_str("</tbody></table>");
    let cost = cost_html(run);
    let legend = legend(&markers);
    let merge = merge_html(run);
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>wavecrew: {id}</title>\
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#111}}table{{border-collapse:collapse;margin-top:12px}}\
td,th{{border:1px solid #ddd;padding:4px 8px;font-size:13px;vertical-align:top}}.chip{{padding:1px 6px;border-radius:4px;font-size:12px}}\
li{{margin:4px 0}}</style></head><body>\
<h1>{id}</h1><p>{desc}</p><p>Status: <b>{status}</b> · {n} tasks · critical path: {cp}</p>\
<h2>Timeline</h2>{svg}{legend}<h2>Waves</h2><ul>{waves}</ul><h2>Tasks</h2>{table}{merge}{cost}</body></html>\n",
        id = esc(&run.session_id),
        desc = esc(&run.task_description),
        status = esc(&run.status),
        n = run.tasks.len(),
        cp = esc(&run.critical_path.join(" → ")),
    )
}

/// The cost tables (per task, backend, role; the run), or nothing when
/// nothing was spent.
fn cost_html(run: &RunData) -> String {
    let c = &run.cost;
    if c.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<h2>Cost</h2><p>Run: {} tokens, {}</p>",
        c.run.tokens,
        esc(&c.run.cost_text())
    );
    if let Some(v) = &c.run_budget_crossed {
        let _ = write!(out, "<p><b>Stopped by the budget:</b> {}</p>", esc(v));
    }
    for p in &c.paused {
        let _ = write!(
            out,
            "<p>{} paused until {}: {}</p>",
            esc(&p.backend),
            esc(&p.until),
            esc(&p.reason)
        );
    }
    for (title, rows) in c.tables() {
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "<table><thead><tr><th>{title}</th><th>input</th><th>cached</th><th>output</th><th>tokens</th><th>cost</th></tr></thead><tbody>"
        );
        for (name, l) in rows {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(name),
                l.input_tokens,
                l.cached_input_tokens,
                l.output_tokens,
                l.tokens,
                esc(&l.cost_text())
            );
        }
        out.push_str("</tbody></table>");
    }
    out
}

/// Where each `task_merged` (a green diamond), `merge_conflict` (a red
/// triangle) and `merge_rejected` (an orange square) record falls on its
/// task's row; nothing for a task without a bar.
fn merge_markers(
    run: &RunData,
    lanes: &[(usize, usize, u64, u64)],
    total: u64,
    width: f64,
    row_h: usize,
) -> String {
    let Some(origin) = run
        .started_at
        .as_deref()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    else {
        return String::new();
    };
    let mut out = String::new();
    for (i, lane, _, _) in lanes {
        let t = &run.tasks[*i];
        let Some(m) = &t.merge else { continue };
        for e in &m.events {
            let Some(at) = e.ts.parse::<jiff::Timestamp>().ok() else {
                continue;
            };
            let ms = u64::try_from(at.duration_since(origin).as_millis())
                .unwrap_or(0)
                .min(total);
            #[allow(clippy::cast_precision_loss)]
            let x = 70.0 + width * (ms as f64) / (total as f64);
            let y = lane * row_h + 14;
            if e.kind == "merged" {
                let _ = write!(
                    out,
                    "<g class=\"merge\"><title>{} landed{} at {}</title><polygon points=\"{x:.1},{} {:.1},{y} {x:.1},{} {:.1},{y}\" fill=\"#15803d\" stroke=\"#fff\" stroke-width=\"1\"/></g>",
                    esc(&t.id),
                    e.commit
                        .as_deref()
                        .map_or_else(String::new, |c| format!(" as {}", esc(short(c)))),
                    esc(&e.ts),
                    y - 7,
                    x + 6.0,
                    y + 7,
                    x - 6.0,
                );
            } else if e.kind == "rejected" {
                let _ = write!(
                    out,
                    "<g class=\"rejected\"><title>{} not merged: the merged result failed {} at {}{}</title><rect x=\"{:.1}\" y=\"{}\" width=\"11\" height=\"11\" fill=\"#ea580c\" stroke=\"#fff\" stroke-width=\"1\"/></g>",
                    esc(&t.id),
                    esc(e.command.as_deref().unwrap_or("the verify command")),
                    esc(&e.ts),
                    match e.revision {
                        Some(true) => "; a revision follows",
                        Some(false) => "; failed",
                        None => "",
                    },
                    x - 5.5,
                    y - 6,
                );
            } else {
                let _ = write!(
                    out,
                    "<g class=\"conflict\"><title>{} conflicts with {} in {} at {}{}</title><polygon points=\"{:.1},{} {:.1},{} {x:.1},{}\" fill=\"#dc2626\" stroke=\"#fff\" stroke-width=\"1\"/></g>",
                    esc(&t.id),
                    esc(&with_text(&e.with)),
                    esc(&e.files.join(", ")),
                    esc(&e.ts),
                    match e.revision {
                        Some(true) => "; a revision follows",
                        Some(false) => "; blocked",
                        None => "",
                    },
                    x - 6.0,
                    y - 7,
                    x + 6.0,
                    y - 7,
                    y + 6,
                );
            }
        }
    }
    out
}

/// What the timeline's markers mean, for those it has.
fn legend(markers: &str) -> String {
    let items: Vec<&str> = [
        (
            "<g class=\"merge\">",
            "<span style=\"color:#15803d\">◆</span> landed on the integration branch",
        ),
        (
            "<g class=\"conflict\">",
            "<span style=\"color:#dc2626\">▼</span> merge conflict",
        ),
        (
            "<g class=\"rejected\">",
            "<span style=\"color:#ea580c\">■</span> not merged: the merged result failed verify",
        ),
    ]
    .into_iter()
    .filter(|(mark, _)| markers.contains(mark))
    .map(|(_, text)| text)
    .collect();
    if items.is_empty() {
        String::new()
    } else {
        format!("<p class=\"legend\">{}</p>", items.join(" · "))
    }
}

/// The merge queue: where the work is and how to take it, what landed in
/// order, blocked tasks, and per task its branch, base, merge commit and
/// conflicts. Nothing for a session that ran in place.
fn merge_html(run: &RunData) -> String {
    let Some(q) = &run.merge_queue else {
        return String::new();
    };
    let code = |s: &str| format!("<code>{}</code>", esc(s));
    let mut out = format!(
        "<h2>Merge queue</h2><p>The work is on branch {}",
        code(&q.branch)
    );
    if let Some(tip) = &q.tip {
        let _ = write!(out, " (tip {})", code(short(tip)));
    }
    if let Some(shadow) = &q.shadow_repository {
        let _ = write!(
            out,
            " of the session's shadow repository {} (the project folder has no git)",
            code(&shadow.display().to_string())
        );
    }
    let _ = write!(
        out,
        ": {} task(s) landed (read from {}).",
        q.landed.len(),
        if q.landed_from == "git" {
            "git"
        } else {
            "the task results"
        }
    );
    if !q.take.is_empty() && !q.landed.is_empty() {
        // The sentence's own words are plain ASCII; the commands are escaped.
        let _ = write!(out, " {}", take_sentence(q, code));
    }
    out.push_str("</p>");
    if let Some(note) = &q.note {
        let _ = write!(out, "<p>Note: {}</p>", esc(note));
    }
    if !q.landed.is_empty() {
        out.push_str("<ol class=\"landed\">");
        for l in &q.landed {
            let _ = write!(out, "<li>{} {}</li>", esc(&l.task), code(short(&l.commit)));
        }
        out.push_str("</ol>");
    }
    for b in &q.blocked {
        let _ = write!(
            out,
            "<p><b>{}</b> {}: {}</p>",
            esc(&b.task),
            esc(&b.state),
            esc(&blocked_reason(b)),
        );
    }
    out.push_str("<table><thead><tr><th>task</th><th>state</th><th>branch</th><th>base</th><th>merge commit</th><th>conflicts</th></tr></thead><tbody>");
    for t in &run.tasks {
        let Some(m) = &t.merge else { continue };
        let conflicts: Vec<String> = q
            .conflicts
            .iter()
            .filter(|c| c.task == t.id)
            .map(|c| {
                format!(
                    "{} with {} ({})",
                    esc(&c.files.join(", ")),
                    esc(&with_text(&c.with)),
                    esc(&c.outcome)
                )
            })
            .collect();
        let merge_commit = match (&m.merge_commit, t.state.as_str(), &m.branch) {
            (Some(c), _, _) => code(short(c)),
            (None, "completed", Some(_)) => "nothing to land".to_owned(),
            _ => "-".to_owned(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td><span class=\"chip\" style=\"background:{}\">{}</span></td><td>{}</td><td>{}</td><td>{merge_commit}</td><td>{}</td></tr>",
            esc(&t.id),
            colour(&t.state),
            esc(&t.state),
            m.branch.as_deref().map_or_else(|| "-".into(), code),
            m.base
                .as_deref()
                .map_or_else(|| "-".into(), |b| code(short(b))),
            if conflicts.is_empty() {
                "-".to_owned()
            } else {
                conflicts.join("<br>")
            }
        );
    }
    out.push_str("</tbody></table>");
    out
}
