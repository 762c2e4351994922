//! `wavecrew status`'s merge-queue section and `summary.md`'s: where the
//! work is and how to take it, what landed in order, what waits, conflicts
//! and blocked tasks, and per task its branch, base, merge commit and
//! conflicts.

use std::fmt::Write as _;

use super::{BlockedEntry, MergeQueue, TaskMerge, short};
use crate::task::TaskReport;

pub(crate) fn with_text(with: &[String]) -> String {
    if with.is_empty() {
        "landed work".to_owned()
    } else {
        with.join(", ")
    }
}

fn files_text(files: &[String]) -> String {
    if files.is_empty() {
        "files not recorded".to_owned()
    } else {
        files.join(", ")
    }
}

fn tasks_word(n: usize) -> &'static str {
    if n == 1 { "task" } else { "tasks" }
}

/// The merge-queue section of `wavecrew status`.
pub fn queue_text(q: &MergeQueue) -> String {
    let mut out = format!("\nMerge queue: {}", q.branch);
    match &q.tip {
        Some(tip) => {
            let _ = write!(out, " at {}", short(tip));
        }
        None => out.push_str(" (tip not read)"),
    }
    if let Some(base) = &q.base {
        let _ = write!(
            out,
            ", from {}{}",
            short(base),
            if q.snapshot {
                " (a snapshot of the uncommitted changes at the start)"
            } else {
                ""
            }
        );
    }
    out.push('\n');
    if let Some(shadow) = &q.shadow_repository {
        let _ = writeln!(
            out,
            "  In the session's shadow repository {} (the project folder has no git)",
            shadow.display()
        );
    }
    if let Some(note) = &q.note {
        let _ = writeln!(out, "  Note: {note}");
    }
    let _ = writeln!(
        out,
        "  Landed: {} {} (read from {})",
        q.landed.len(),
        tasks_word(q.landed.len()),
        if q.landed_from == "git" {
            "git"
        } else {
            "the task results"
        }
    );
    for (i, l) in q.landed.iter().enumerate() {
        let _ = writeln!(out, "    {}. {} {}", i + 1, l.task, short(&l.commit));
    }
    for w in &q.awaiting_review {
        let _ = writeln!(
            out,
            "  Awaiting review: {}{} (wavecrew approve|reject <session> {})",
            w.task,
            w.branch
                .as_deref()
                .map_or_else(String::new, |b| format!(" on {b}")),
            w.task
        );
    }
    if q.waiting.is_empty() {
        out.push_str("  Waiting to land: none\n");
    } else {
        out.push_str("  Waiting to land:\n");
        for w in &q.waiting {
            let _ = writeln!(
                out,
                "    {}{}{}",
                w.task,
                w.branch
                    .as_deref()
                    .map_or_else(String::new, |b| format!(" on {b}")),
                if w.conflicts > 0 {
                    format!(
                        ", revising after {} conflict{}",
                        w.conflicts,
                        if w.conflicts == 1 { "" } else { "s" }
                    )
                } else {
                    String::new()
                }
            );
        }
    }
    if !q.conflicts.is_empty() {
        out.push_str("  Conflicts:\n");
        for c in &q.conflicts {
            let _ = writeln!(
                out,
                "    {} with {} in {}: {}",
                c.task,
                with_text(&c.with),
                files_text(&c.files),
                c.outcome
            );
        }
    }
    if !q.blocked.is_empty() {
        out.push_str("  Blocked:\n");
        for b in &q.blocked {
            let _ = writeln!(out, "    {} [{}]: {}", b.task, b.state, blocked_reason(b));
        }
    }
    if !q.take.is_empty() {
        if q.landed.is_empty() {
            out.push_str("  Nothing to take yet.\n");
        } else {
            for (i, command) in q.take.iter().enumerate() {
                let lead = if i == 0 {
                    "Take the work"
                } else {
                    "           or"
                };
                let _ = writeln!(out, "  {lead}: {command}");
            }
        }
    }
    out
}

/// "Take it with …": the commands of `q.take`, each through `code`, and
/// what `--apply` does.
pub(crate) fn take_sentence(q: &MergeQueue, code: impl Fn(&str) -> String) -> String {
    let commands: Vec<String> = q.take.iter().map(|c| code(c)).collect();
    let what = if q.shadow_repository.is_some() {
        "it writes the work into the project folder, which has no git"
    } else {
        "it fast-forwards your branch when nothing moved since the start"
    };
    format!("Take it with {} ({what}).", commands.join(", or "))
}

/// Why a task stopped on the way in, in words: the conflict it ended on
/// (the other tasks and the files), else its error; a blocked task needs
/// a person.
pub(crate) fn blocked_reason(b: &BlockedEntry) -> String {
    let why = if b.files.is_empty() && b.with.is_empty() {
        b.error
            .clone()
            .unwrap_or_else(|| "no error recorded".into())
    } else {
        format!(
            "conflicts with {} in {}",
            with_text(&b.with),
            files_text(&b.files)
        )
    };
    if b.state == "blocked" {
        format!("{why}; it needs a person")
    } else {
        why
    }
}

/// Text in a Markdown table cell: `|` escaped, one line.
pub(super) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Text as Markdown code (a fence longer than any run of backticks in it).
pub(super) fn code(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn conflicts_cell(task: &str, q: &MergeQueue) -> String {
    let mine: Vec<String> = q
        .conflicts
        .iter()
        .filter(|c| c.task == task)
        .map(|c| {
            format!(
                "{} with {} ({})",
                c.files
                    .iter()
                    .map(|f| code(f))
                    .collect::<Vec<_>>()
                    .join(", "),
                with_text(&c.with),
                c.outcome
            )
        })
        .collect();
    if mine.is_empty() {
        "-".to_owned()
    } else {
        cell(&mine.join("; "))
    }
}

/// The merge section of `summary.md`: where the work is and how to take
/// it, what landed in order, and per task its branch, base, merge commit
/// and conflicts. Empty for a session that ran in place.
pub fn queue_markdown(q: Option<&MergeQueue>, tasks: &[TaskReport]) -> String {
    let Some(q) = q else {
        return String::new();
    };
    let mut out = String::from("\n## Merge queue\n\n");
    let _ = write!(out, "The work is on branch {}", code(&q.branch));
    if let Some(shadow) = &q.shadow_repository {
        let _ = write!(
            out,
            " of the session's shadow repository {} (the project folder has no git)",
            code(&shadow.display().to_string())
        );
    }
    let mut facts = Vec::new();
    if let Some(tip) = &q.tip {
        facts.push(format!("tip {}", code(short(tip))));
    }
    if let Some(base) = &q.base {
        facts.push(format!(
            "started from {}{}",
            code(short(base)),
            if q.snapshot {
                ", a snapshot of the uncommitted changes at the start"
            } else {
                ""
            }
        ));
    }
    if !facts.is_empty() {
        let _ = write!(out, " ({})", facts.join(", "));
    }
    let _ = writeln!(
        out,
        ": {} {} landed (read from {}).",
        q.landed.len(),
        tasks_word(q.landed.len()),
        if q.landed_from == "git" {
            "git"
        } else {
            "the task results"
        }
    );
    if !q.take.is_empty() && !q.landed.is_empty() {
        let _ = writeln!(out, "{}", take_sentence(q, code));
    }
    if let Some(note) = &q.note {
        let _ = writeln!(out, "\nNote: {note}");
    }
    if !q.landed.is_empty() {
        out.push_str("\nLanded, in order:\n\n");
        for (i, l) in q.landed.iter().enumerate() {
            let _ = writeln!(out, "{}. {} {}", i + 1, l.task, code(short(&l.commit)));
        }
    }
    if !q.waiting.is_empty() {
        out.push_str("\nWaiting to land: ");
        out.push_str(
            &q.waiting
                .iter()
                .map(|w| w.task.clone())
                .collect::<Vec<_>>()
                .join(", "),
        );
        out.push('\n');
    }
    if !q.awaiting_review.is_empty() {
        out.push_str("\nAwaiting review (`wavecrew approve` or `wavecrew reject`): ");
        out.push_str(
            &q.awaiting_review
                .iter()
                .map(|w| w.task.clone())
                .collect::<Vec<_>>()
                .join(", "),
        );
        out.push('\n');
    }
    if !q.blocked.is_empty() {
        out.push('\n');
        for b in &q.blocked {
            let why = if b.files.is_empty() && b.with.is_empty() {
                b.error
                    .clone()
                    .unwrap_or_else(|| "no error recorded".into())
            } else {
                format!(
                    "conflicts with {} in {}",
                    with_text(&b.with),
                    b.files
                        .iter()
                        .map(|f| code(f))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let _ = writeln!(
                out,
                "- **{}** {}: {why}{}",
                b.task,
                b.state,
                if b.state == "blocked" {
                    "; it needs a person"
                } else {
                    ""
                }
            );
        }
    }
    let rows: Vec<&TaskReport> = tasks.iter().filter(|t| t.merge.is_some()).collect();
    if !rows.is_empty() {
        out.push_str(
            "\n| task | state | branch | base | merge commit | conflicts |\n|---|---|---|---|---|---|\n",
        );
        for t in rows {
            let m = t
                .merge
                .as_ref()
                .map_or_else(TaskMerge::default, Clone::clone);
            let merge_commit = match (&m.merge_commit, t.state.as_str(), &m.branch) {
                (Some(c), _, _) => code(short(c)),
                (None, "completed", Some(_)) => "nothing to land".to_owned(),
                _ => "-".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                t.id,
                t.state,
                m.branch
                    .as_deref()
                    .map_or_else(|| "-".into(), |b| cell(&code(b))),
                m.base
                    .as_deref()
                    .map_or_else(|| "-".into(), |b| code(short(b))),
                merge_commit,
                conflicts_cell(&t.id, q)
            );
        }
    }
    out
}
