//! The reading mode of the mock ([`MockOptions::reads`](super::MockOptions::reads)):
//! the agent does what the prompt says, as long as the prompt says it in
//! directives of the form
//!
//! ```text
//! create <relative/path> containing "<text>"
//! ```
//!
//! (the path without spaces or quotes and not starting with `/`, the text
//! without a double quote). Each answer is decided from the request alone:
//! the directives are read from the text of every user message (the CLIs
//! wrap the prompt and add context messages of their own, so the prompt is
//! found wherever it sits, tool results excepted); the tool results already
//! in the conversation say how many directives are done; the next one is
//! written, or the final text names them all.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\bcreate ([^\s"/][^\s"]*) containing "([^"]*)""#).expect("valid regex")
});

/// One `create <path> containing "<text>"` directive of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// The file to create, relative to the agent's working directory.
    pub path: String,
    /// Its whole content.
    pub content: String,
}

/// Every directive of `text`, in order of appearance; a path named twice
/// keeps its first directive.
///
/// ```
/// use wavecrew_testkit::model_server::{Directive, parse_directives};
///
/// let found = parse_directives(r#"First create a.md containing "one", then create a.md containing "two"."#);
/// assert_eq!(found, [Directive { path: "a.md".into(), content: "one".into() }]);
/// assert!(parse_directives("create nothing here").is_empty());
/// ```
pub fn parse_directives(text: &str) -> Vec<Directive> {
    let mut out: Vec<Directive> = Vec::new();
    for c in DIRECTIVE.captures_iter(text) {
        if out.iter().any(|d| d.path == c[1]) {
            continue;
        }
        out.push(Directive {
            path: c[1].to_owned(),
            content: c[2].to_owned(),
        });
    }
    out
}

/// What the reading agent does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Create this file with one tool call.
    Write(Directive),
    /// Answer this final text, no tool call.
    Final(String),
}

/// The text the final answer gives when the prompt holds no directive.
pub(super) const NOTHING_TO_DO: &str = "nothing to do";

/// The next step, given the user text and the tool calls already answered.
pub(super) fn next_step(user_text: &str, done: usize) -> Step {
    let directives = parse_directives(user_text);
    if directives.is_empty() {
        return Step::Final(NOTHING_TO_DO.to_owned());
    }
    match directives.get(done) {
        Some(d) => Step::Write(d.clone()),
        None => Step::Final(format!(
            "done: created {}",
            directives
                .iter()
                .map(|d| d.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The text of a message's `content`: a string, or the `text` of its
/// blocks (`text`, `input_text`; never a tool result).
fn content_text(content: Option<&Value>, out: &mut String) {
    match content {
        Some(Value::String(s)) => {
            out.push_str(s);
            out.push('\n');
        }
        Some(Value::Array(blocks)) => {
            for b in blocks {
                let kind = b.get("type").and_then(Value::as_str).unwrap_or("text");
                if matches!(kind, "text" | "input_text")
                    && let Some(t) = b.get("text").and_then(Value::as_str)
                {
                    out.push_str(t);
                    out.push('\n');
                }
            }
        }
        _ => {}
    }
}

fn list<'a>(body: &'a Value, key: &str) -> &'a [Value] {
    body.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn is_user(v: &Value) -> bool {
    v.get("role").and_then(Value::as_str) == Some("user")
}

/// Responses API: the text of the user messages of `input`, and how many
/// tool outputs it holds.
pub(super) fn responses_state(body: &Value) -> (String, usize) {
    let input = list(body, "input");
    let mut text = String::new();
    for item in input.iter().filter(|it| {
        is_user(it) && it.get("type").and_then(Value::as_str).unwrap_or("message") == "message"
    }) {
        content_text(item.get("content"), &mut text);
    }
    if let Some(Value::String(s)) = body.get("input") {
        text.push_str(s);
    }
    let done = input
        .iter()
        .filter(|it| {
            matches!(
                it.get("type").and_then(Value::as_str),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .count();
    (text, done)
}

/// Messages API: the text blocks of the user messages, and how many tool
/// results the conversation holds.
pub(super) fn anthropic_state(body: &Value) -> (String, usize) {
    let mut text = String::new();
    let mut done = 0;
    for m in list(body, "messages").iter().filter(|m| is_user(m)) {
        content_text(m.get("content"), &mut text);
        done += m
            .get("content")
            .and_then(Value::as_array)
            .map_or(0, |blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                    .count()
            });
    }
    (text, done)
}

/// Gemini API: the text parts of the user contents, and how many function
/// responses they hold.
pub(super) fn gemini_state(body: &Value) -> (String, usize) {
    let mut text = String::new();
    let mut done = 0;
    for c in list(body, "contents").iter().filter(|c| is_user(c)) {
        for p in list(c, "parts") {
            if let Some(t) = p.get("text").and_then(Value::as_str) {
                text.push_str(t);
                text.push('\n');
            }
            if p.get("functionResponse").is_some() {
                done += 1;
            }
        }
    }
    (text, done)
}

/// `s` as one single-quoted shell word.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The shell command that creates `d` (its folder first), for a CLI whose
/// only tool is a shell: `printf '%s'` writes the text exactly.
pub(super) fn shell_command(d: &Directive) -> String {
    let write = format!(
        "printf '%s' {} > {}",
        sh_quote(&d.content),
        sh_quote(&d.path)
    );
    match d.path.rsplit_once('/') {
        Some((dir, _)) if !dir.is_empty() => format!("mkdir -p {} && {write}", sh_quote(dir)),
        _ => write,
    }
}

/// codex's `apply_patch` input that adds `d`. The tool ends every line,
/// the last one too, with a newline: a text that ends with one is written
/// exactly, any other gains one.
pub(super) fn add_file_patch(d: &Directive) -> String {
    let mut patch = format!("*** Begin Patch\n*** Add File: {}\n", d.path);
    if !d.content.is_empty() {
        let body = d.content.strip_suffix('\n').unwrap_or(&d.content);
        for line in body.split('\n') {
            patch.push('+');
            patch.push_str(line);
            patch.push('\n');
        }
    }
    patch.push_str("*** End Patch\n");
    patch
}
