//! One event model for the three CLIs' JSON streams.
//!
//! | CLI | flags | shape |
//! | --- | --- | --- |
//! | codex | `exec --json` | `thread.started`, `item.*` (`agent_message`, `command_execution`, `file_change`, `error`), `turn.completed` / `turn.failed` |
//! | gemini | `-o stream-json` | `init`, `message`, `tool_use`, `tool_result`, `result` (`status` success / error) |
//! | claude | `--output-format stream-json --verbose` | `system/init`, `assistant`, `user` (tool results), `result` (`is_error`, `permission_denials`) |
//!
//! Lines that are not JSON, or JSON of an unknown type, are ignored: the
//! stream is evidence, and unknown evidence is not failure. [`StreamState`]
//! folds the events into what an attempt needs to know.

use serde_json::Value;
use wavecrew_core::Usage;

/// Which stream format a line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// `codex exec --json`.
    Codex,
    /// `gemini -o stream-json`.
    Gemini,
    /// `claude -p --output-format stream-json --verbose`.
    Claude,
}

/// One thing the agent did or said.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The native session id (for resume).
    Session(String),
    /// A message from the assistant.
    Message(String),
    /// A tool call (`Bash`, `run_shell_command`, `command_execution`).
    ToolCall {
        /// The tool's name.
        name: String,
        /// A short description of the input (the command, the path).
        detail: String,
    },
    /// A file the agent says it changed.
    FileChange(String),
    /// Token usage of a turn.
    Usage(Usage),
    /// Usage of one model call as the turn goes (claude's `assistant`
    /// messages): counted live until the turn's total ([`Event::Usage`])
    /// arrives and replaces it. A message repeated per content block counts
    /// once (by its id).
    LiveUsage {
        /// The model message's id.
        id: String,
        /// Its usage so far.
        usage: Usage,
    },
    /// An error line: `fatal` when it ends the turn.
    Error {
        /// What the CLI said.
        message: String,
        /// Whether it ends the turn (a warning otherwise).
        fatal: bool,
        /// The HTTP status, when the CLI names it.
        status: Option<u16>,
    },
    /// The turn ended successfully.
    TurnCompleted,
    /// Tools were denied (claude's `permission_denials`).
    PermissionDenied(Vec<String>),
}

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The HTTP status named in an error text (`status: 429`, `API Error: 500`,
/// `"code":500`, `401 Unauthorized`).
pub fn status_in(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i + 3 <= bytes.len() {
        let window = &bytes[i..i + 3];
        let bounded = (i == 0 || !bytes[i - 1].is_ascii_digit())
            && bytes.get(i + 3).is_none_or(|b| !b.is_ascii_digit());
        if bounded
            && window.iter().all(u8::is_ascii_digit)
            && let Ok(code) = std::str::from_utf8(window).unwrap_or("").parse::<u16>()
            && matches!(code, 400..=599)
        {
            return Some(code);
        }
        i += 1;
    }
    None
}

/// Parse one stdout line of `format` into events.
pub fn parse_line(format: StreamFormat, line: &str) -> Vec<Event> {
    let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
        return Vec::new();
    };
    match format {
        StreamFormat::Codex => codex(&v),
        StreamFormat::Gemini => gemini(&v),
        StreamFormat::Claude => claude(&v),
    }
}

fn codex(v: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "thread.started" => out.extend(s(v, "thread_id").map(Event::Session)),
        "item.completed" | "item.started" => {
            let Some(item) = v.get("item") else {
                return out;
            };
            let completed = v["type"] == "item.completed";
            match item.get("type").and_then(Value::as_str).unwrap_or("") {
                "agent_message" if completed => out.extend(s(item, "text").map(Event::Message)),
                "command_execution" if !completed => out.push(Event::ToolCall {
                    name: "command_execution".into(),
                    detail: s(item, "command").unwrap_or_default(),
                }),
                "file_change" if completed => {
                    for c in item
                        .get("changes")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        out.extend(s(c, "path").map(Event::FileChange));
                    }
                }
                // Not every error item is fatal: warnings arrive this way.
                "error" => out.push(Event::Error {
                    message: s(item, "message").unwrap_or_default(),
                    fatal: false,
                    status: None,
                }),
                _ => {}
            }
        }
        "error" => {
            let message = s(v, "message").unwrap_or_default();
            out.push(Event::Error {
                status: status_in(&message),
                message,
                fatal: false,
            });
        }
        "turn.failed" => {
            let message = v
                .get("error")
                .and_then(|e| s(e, "message"))
                .unwrap_or_default();
            out.push(Event::Error {
                status: status_in(&message),
                message,
                fatal: true,
            });
        }
        "turn.completed" => {
            if let Some(u) = v.get("usage") {
                out.push(Event::Usage(Usage {
                    input_tokens: n(u, "input_tokens"),
                    output_tokens: n(u, "output_tokens"),
                    cached_input_tokens: n(u, "cached_input_tokens"),
                    cost_usd: None,
                }));
            }
            out.push(Event::TurnCompleted);
        }
        _ => {}
    }
    out
}

fn gemini(v: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "init" => out.extend(s(v, "session_id").map(Event::Session)),
        "message" if v.get("role").and_then(Value::as_str) == Some("assistant") => {
            out.extend(s(v, "content").map(Event::Message));
        }
        "tool_use" => out.push(Event::ToolCall {
            name: s(v, "tool_name").unwrap_or_default(),
            detail: v
                .get("parameters")
                .and_then(|p| s(p, "command").or_else(|| s(p, "file_path")))
                .unwrap_or_default(),
        }),
        "result" => {
            if let Some(st) = v.get("stats") {
                out.push(Event::Usage(Usage {
                    input_tokens: n(st, "input_tokens"),
                    output_tokens: n(st, "output_tokens"),
                    cached_input_tokens: n(st, "cached"),
                    cost_usd: None,
                }));
            }
            if v.get("status").and_then(Value::as_str) == Some("success") {
                out.push(Event::TurnCompleted);
            } else {
                let message = v
                    .get("error")
                    .and_then(|e| s(e, "message"))
                    .unwrap_or_else(|| "gemini reported an error".into());
                out.push(Event::Error {
                    status: status_in(&message),
                    message,
                    fatal: true,
                });
            }
        }
        _ => {}
    }
    out
}

fn claude(v: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "system" if v.get("subtype").and_then(Value::as_str) == Some("init") => {
            out.extend(s(v, "session_id").map(Event::Session));
        }
        "assistant" => {
            if let Some(m) = v.get("message")
                && let Some(u) = m.get("usage")
            {
                out.push(Event::LiveUsage {
                    id: s(m, "id").unwrap_or_default(),
                    usage: Usage {
                        input_tokens: n(u, "input_tokens"),
                        output_tokens: n(u, "output_tokens"),
                        cached_input_tokens: n(u, "cache_read_input_tokens"),
                        cost_usd: None,
                    },
                });
            }
            let content = v
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array);
            for part in content.into_iter().flatten() {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => out.extend(s(part, "text").map(Event::Message)),
                    Some("tool_use") => {
                        let input = part.get("input").cloned().unwrap_or(Value::Null);
                        let name = s(part, "name").unwrap_or_default();
                        let path = s(&input, "file_path");
                        if matches!(name.as_str(), "Write" | "Edit" | "NotebookEdit")
                            && let Some(p) = &path
                        {
                            out.push(Event::FileChange(p.clone()));
                        }
                        out.push(Event::ToolCall {
                            detail: s(&input, "command").or(path).unwrap_or_default(),
                            name,
                        });
                    }
                    _ => {}
                }
            }
        }
        "result" => {
            if let Some(u) = v.get("usage") {
                out.push(Event::Usage(Usage {
                    input_tokens: n(u, "input_tokens"),
                    output_tokens: n(u, "output_tokens"),
                    cached_input_tokens: n(u, "cache_read_input_tokens"),
                    cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
                }));
            }
            let denied: Vec<String> = v
                .get("permission_denials")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|d| s(d, "tool_name").unwrap_or_else(|| d.to_string()))
                .collect();
            if !denied.is_empty() {
                out.push(Event::PermissionDenied(denied));
            }
            if v.get("is_error").and_then(Value::as_bool) == Some(true) {
                let message = s(v, "result").unwrap_or_else(|| "claude reported an error".into());
                let status = v
                    .get("api_error_status")
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok())
                    .or_else(|| status_in(&message));
                out.push(Event::Error {
                    message,
                    fatal: true,
                    status,
                });
            } else {
                out.extend(s(v, "result").map(Event::Message));
                out.push(Event::TurnCompleted);
            }
        }
        _ => {}
    }
    out
}

/// What the events of one attempt add up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamState {
    /// The native session id.
    pub session_id: Option<String>,
    /// The last assistant message.
    pub final_message: Option<String>,
    /// Files the agent said it changed.
    pub files: Vec<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<(String, String)>,
    /// Summed usage, when any was reported.
    pub usage: Option<Usage>,
    /// Usage of model calls seen before the turn's total, by message id.
    pub live_usage: Vec<(String, Usage)>,
    /// The fatal error, if the turn failed.
    pub fatal_error: Option<(String, Option<u16>)>,
    /// Non-fatal error lines (warnings, reconnects).
    pub warnings: Vec<String>,
    /// Whether the turn completed.
    pub completed: bool,
    /// Tools that were denied.
    pub denied: Vec<String>,
}

impl StreamState {
    /// The tokens spent so far: the reported totals, or while none arrived,
    /// the usage of the model calls seen (what budgets count live).
    pub fn spent(&self) -> Usage {
        if let Some(u) = self.usage {
            return u;
        }
        let mut total = Usage::default();
        for (_, u) in &self.live_usage {
            total.add(u);
        }
        total
    }

    /// Fold one event in.
    pub fn apply(&mut self, event: Event) {
        match event {
            Event::Session(id) => self.session_id = Some(id),
            Event::Message(m) => self.final_message = Some(m),
            Event::ToolCall { name, detail } => self.tool_calls.push((name, detail)),
            Event::FileChange(p) => {
                if !self.files.contains(&p) {
                    self.files.push(p);
                }
            }
            Event::Usage(u) => self.usage.get_or_insert_with(Usage::default).add(&u),
            Event::LiveUsage { id, usage } => {
                match self.live_usage.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, u)) => *u = usage,
                    None => self.live_usage.push((id, usage)),
                }
            }
            Event::Error {
                message,
                fatal: true,
                status,
            } => self.fatal_error = Some((message, status)),
            Event::Error { message, .. } => self.warnings.push(message),
            Event::TurnCompleted => self.completed = true,
            Event::PermissionDenied(tools) => self.denied.extend(tools),
        }
    }

    /// Fold a whole line in.
    pub fn apply_line(&mut self, format: StreamFormat, line: &str) {
        for e in parse_line(format, line) {
            self.apply(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_in_error_texts() {
        assert_eq!(
            status_in("unexpected status 401 Unauthorized: mock 401"),
            Some(401)
        );
        assert_eq!(status_in("API Error: 500 mock 500."), Some(500));
        assert_eq!(status_in(r#"{"error":{"code":429}}"#), Some(429));
        assert_eq!(status_in("port 8080 and 1500 tokens"), None);
        assert_eq!(status_in("took 200 ms"), None);
    }

    #[test]
    fn codex_warnings_are_not_fatal() {
        let mut st = StreamState::default();
        st.apply_line(
            StreamFormat::Codex,
            r#"{"type":"item.completed","item":{"id":"i","type":"error","message":"Model metadata for `m` not found"}}"#,
        );
        assert!(st.fatal_error.is_none());
        assert_eq!(st.warnings.len(), 1);
    }
}
