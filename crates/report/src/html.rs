//! `index.html`: a self-contained timeline of the run (no script, no
//! network): one row per slot with a bar per task (colour = state, a thick
//! outline = critical path), the waves, and each task's attempts.

use std::fmt::Write as _;

use crate::data::RunData;
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
                format!(
                    "#{} {} {} ({}{waited})",
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
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>wavecrew: {id}</title>\
<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#111}}table{{border-collapse:collapse;margin-top:12px}}\
td,th{{border:1px solid #ddd;padding:4px 8px;font-size:13px;vertical-align:top}}.chip{{padding:1px 6px;border-radius:4px;font-size:12px}}\
li{{margin:4px 0}}</style></head><body>\
<h1>{id}</h1><p>{desc}</p><p>Status: <b>{status}</b> · {n} tasks · critical path: {cp}</p>\
<h2>Timeline</h2>{svg}<h2>Waves</h2><ul>{waves}</ul><h2>Tasks</h2>{table}{cost}</body></html>\n",
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
