//! Prompt budgets: a size limit per prompt, what is cut first, and the cut
//! recorded in the attempt's files.
//!
//! A template marks its long fields with the `cut` filter ([`cuttable`]).
//! When a rendered prompt is longer than its budget (`[limits]
//! prompt_max_chars`, or the backend's own `prompt_max_chars`), [`fit`]
//! shortens the marked fields in the order of [`super::fields`] (untrusted
//! material first: earlier errors, tool output, wisdom; then the plan
//! excerpt), each to its head, followed by a visible marker that says how
//! much was cut and names the file holding the full text. The task's own
//! text is never marked, so never cut: a prompt still over budget after
//! every cut is sent whole, and [`Fitted::over`] says so. [`write_cuts`]
//! puts the full texts and `prompt-cuts.json` in the attempt folder.

use std::path::Path;

use serde::Serialize;

const START: char = '\u{E000}';
const BODY: char = '\u{E001}';
const END: char = '\u{E002}';

/// The name of the record of what a budget cut, in the attempt folder.
pub const CUTS_FILE: &str = "prompt-cuts.json";

/// Mark `text` as field `field` that a budget may cut.
pub fn cuttable(text: &str, field: &str) -> String {
    let field: String = field.chars().filter(|c| !is_marker(*c)).collect();
    format!("{START}{field}{BODY}{}{END}", unmarked(text))
}

fn is_marker(c: char) -> bool {
    matches!(c, START | BODY | END)
}

/// `text` without cut markers (what the agent reads when nothing is cut).
pub fn unmarked(text: &str) -> String {
    if !text.contains(is_marker) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut in_name = false;
    for c in text.chars() {
        match c {
            START => in_name = true,
            BODY => in_name = false,
            END => {}
            _ if in_name => {}
            _ => out.push(c),
        }
    }
    out
}

/// A field a budget shortened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cut {
    /// The template field (`previous_error`, `plan_context`, …).
    pub field: String,
    /// The file in the attempt folder holding its full text.
    pub file: String,
    /// Its length, in characters.
    pub chars: usize,
    /// What the prompt kept of it, in characters (the marker excluded).
    pub kept: usize,
    /// The full text.
    #[serde(skip)]
    pub full: String,
}

/// A prompt within its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The prompt to send.
    pub text: String,
    /// The budget, in characters.
    pub limit: usize,
    /// What was cut, in the order it was cut.
    pub cuts: Vec<Cut>,
    /// Still over the budget after every cut (the task's own text is never
    /// cut).
    pub over: bool,
}

enum Segment {
    Plain(String),
    Field { name: String, text: String },
}

fn segments(marked: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = marked;
    while let Some(start) = rest.find(START) {
        out.push(Segment::Plain(rest[..start].to_owned()));
        let after = &rest[start + START.len_utf8()..];
        let Some(body) = after.find(BODY) else {
            out.push(Segment::Plain(unmarked(after)));
            return out;
        };
        let name = after[..body].to_owned();
        let text = &after[body + BODY.len_utf8()..];
        let end = text.find(END).unwrap_or(text.len());
        out.push(Segment::Field {
            name,
            text: unmarked(&text[..end]),
        });
        rest = text.get(end + END.len_utf8()..).unwrap_or("");
    }
    out.push(Segment::Plain(rest.to_owned()));
    out
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The first `n` characters of `text`, ending at a line break when one
/// is in its second half.
fn head(text: &str, n: usize) -> &str {
    let end = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    match head.rfind('\n') {
        Some(i) if i >= end / 2 => &head[..i],
        _ => head,
    }
}

/// A file name for a field's full text, unique among `taken`.
fn file_name(field: &str, taken: &[Cut]) -> String {
    let base: String = field
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut name = format!("cut-{base}.txt");
    let mut n = 2;
    while taken.iter().any(|c| c.file == name) {
        name = format!("cut-{base}-{n}.txt");
        n += 1;
    }
    name
}

/// Fit a marked prompt (from [`super::Prompts::render_marked`]) into
/// `limit` characters; the markers name files in `dir` (the attempt
/// folder), which [`write_cuts`] then writes.
pub fn fit(marked: &str, limit: usize, dir: &Path) -> Fitted {
    let mut parts = segments(marked);
    let length = |parts: &[Segment]| -> usize {
        parts
            .iter()
            .map(|p| match p {
                Segment::Plain(t) | Segment::Field { text: t, .. } => chars(t),
            })
            .sum()
    };
    let mut total = length(&parts);
    let mut cuts: Vec<Cut> = Vec::new();
    if total > limit {
        // The order: the table's rank, then the longest first.
        let mut order: Vec<usize> = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, Segment::Field { .. }))
            .map(|(i, _)| i)
            .collect();
        let key = |i: &usize| match &parts[*i] {
            Segment::Field { name, text } => {
                (super::fields::cut_rank(name), usize::MAX - chars(text))
            }
            Segment::Plain(_) => (u8::MAX, 0),
        };
        order.sort_by_key(key);
        for i in order {
            if total <= limit {
                break;
            }
            let Segment::Field { name, text } = &mut parts[i] else {
                continue;
            };
            let file = file_name(name, &cuts);
            let path = dir.join(&file);
            let len = chars(text);
            // The marker's own length counts against the budget too.
            let probe = marker(len, limit, &path);
            let room = len.saturating_sub(total - limit + chars(&probe));
            let kept = head(text, room).to_owned();
            let kept_len = chars(&kept);
            let note = marker(len - kept_len, limit, &path);
            let new = if kept.is_empty() {
                note.trim_start().to_owned()
            } else {
                format!("{kept}{note}")
            };
            total = total - len + chars(&new);
            cuts.push(Cut {
                field: name.clone(),
                file,
                chars: len,
                kept: kept_len,
                full: std::mem::replace(text, new),
            });
        }
    }
    let text: String = parts
        .into_iter()
        .map(|p| match p {
            Segment::Plain(t) | Segment::Field { text: t, .. } => t,
        })
        .collect();
    Fitted {
        over: chars(&text) > limit,
        text,
        limit,
        cuts,
    }
}

fn marker(cut: usize, limit: usize, path: &Path) -> String {
    format!(
        "\n[… {cut} characters cut to keep this prompt within its budget of {limit}; the full text is in {}]",
        path.display()
    )
}

/// Write what `fitted` cut into `dir`: each field's full text, and
/// [`CUTS_FILE`] saying what was cut. Nothing when nothing was cut.
pub fn write_cuts(dir: &Path, fitted: &Fitted) -> std::io::Result<()> {
    if fitted.cuts.is_empty() && !fitted.over {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    for cut in &fitted.cuts {
        wavecrew_core::fsutil::write_atomic(&dir.join(&cut.file), cut.full.as_bytes())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    let record = serde_json::json!({
        "limit": fitted.limit,
        "chars": chars(&fitted.text),
        "over_budget": fitted.over,
        "cuts": fitted.cuts,
    });
    wavecrew_core::fsutil::write_json_atomic(&dir.join(CUTS_FILE), &record)
        .map_err(|e| std::io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> &'static Path {
        Path::new("/s/attempts/IMPL-1/2")
    }

    #[test]
    fn a_prompt_within_budget_is_sent_unmarked() {
        let marked = format!(
            "Task: do it.\n{}\n",
            cuttable("old error", "previous_error")
        );
        let f = fit(&marked, 1000, dir());
        assert_eq!(f.text, "Task: do it.\nold error\n");
        assert!(f.cuts.is_empty() && !f.over);
    }

    #[test]
    fn untrusted_material_is_cut_first_with_a_visible_marker() {
        let error = "e".repeat(2000);
        let plan = "p".repeat(500);
        let marked = format!(
            "Task: do it.\n{}\n{}\n",
            cuttable(&plan, "plan_context"),
            cuttable(&error, "previous_error")
        );
        let f = fit(&marked, 1000, dir());
        assert!(!f.over, "{}", f.text.len());
        assert!(chars(&f.text) <= 1000);
        assert_eq!(f.cuts.len(), 1, "the error alone was enough");
        assert_eq!(f.cuts[0].field, "previous_error");
        assert_eq!(f.cuts[0].full, error);
        assert!(f.text.contains(&plan), "the plan excerpt is whole");
        assert!(
            f.text
                .contains("the full text is in /s/attempts/IMPL-1/2/cut-previous_error.txt]"),
            "{}",
            f.text
        );
        assert!(f.text.starts_with("Task: do it.\n"));
    }

    #[test]
    fn the_task_text_is_never_cut() {
        let task = "t".repeat(300);
        let marked = format!("{task}\n{}", cuttable(&"w".repeat(300), "wisdom"));
        let f = fit(&marked, 100, dir());
        assert!(f.over);
        assert!(f.text.starts_with(&task));
        assert_eq!(f.cuts[0].kept, 0);
    }

    #[test]
    fn markers_inside_input_text_are_taken_out() {
        let hostile = format!("a{START}x{BODY}b{END}c");
        assert_eq!(unmarked(&cuttable(&hostile, "wisdom")), "abc");
    }

    #[test]
    fn cuts_are_written_beside_the_prompt() {
        let tmp = tempfile::tempdir().unwrap();
        let marked = format!("x\n{}", cuttable(&"e".repeat(500), "previous_error"));
        let f = fit(&marked, 200, tmp.path());
        write_cuts(tmp.path(), &f).unwrap();
        let full = std::fs::read_to_string(tmp.path().join("cut-previous_error.txt")).unwrap();
        assert_eq!(full.len(), 500);
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join(CUTS_FILE)).unwrap()).unwrap();
        assert_eq!(record["cuts"][0]["field"], "previous_error");
        assert_eq!(record["limit"], 200);
    }
}
