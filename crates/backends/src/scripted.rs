//! The scripted agent: an agent CLI that replays a script.
//!
//! `wavecrew-scripted-agent --script <file> [--format codex|gemini|claude|plain]
//! [--task <ID>] [PROMPT]` reads the prompt from the argument or from stdin,
//! picks the first scenario whose `match` fits (task id, or text in the
//! prompt; a scenario without `match` fits everything), and runs its steps:
//!
//! ```json
//! { "format": "codex",
//!   "scenarios": [
//!     { "match": { "task": "IMPL-001" },
//!       "steps": [
//!         { "write": { "path": "todo/model.py", "content": "class Todo: ...\n" } },
//!         { "replace": { "path": "README.md", "find": "TODO", "with": "done" } },
//!         { "run": ["python3", "-m", "py_compile", "todo/model.py"] },
//!         { "say": "Done: created the model" } ] },
//!     { "steps": [ { "sleep_ms": 50 }, { "fail": { "message": "mock 500", "status": 500 } } ] } ] }
//! ```
//!
//! Steps: `write`, `append`, `replace` (files inside the working folder
//! only), `run` (argv, never a shell), `say`, `sleep_ms` (with a heartbeat
//! line every 100 ms), `silent_ms` (no output at all), `hang` (silent
//! forever), `fail` (a fatal error event, exit 1), `exit` (a code). Every
//! step is reported in the chosen stream format, so the real parsers of
//! [`crate::events`] read it: it is the backend of the demo and of most
//! tests.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::events::StreamFormat;

/// A script file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The stream format (overridden by `--format`).
    #[serde(default)]
    pub format: Option<String>,
    /// The scenarios, tried in order.
    pub scenarios: Vec<Scenario>,
}

/// One scenario: when it applies and what it does.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// When it applies (always, when absent).
    #[serde(default, rename = "match")]
    pub when: Option<Match>,
    /// What it does.
    pub steps: Vec<Step>,
}

/// A scenario's condition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// The task id given with `--task`.
    #[serde(default)]
    pub task: Option<String>,
    /// Text the prompt contains.
    #[serde(default)]
    pub prompt_contains: Option<String>,
}

/// A file edit.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEdit {
    /// Relative to the working folder.
    pub path: String,
    /// For `write` and `append`.
    #[serde(default)]
    pub content: String,
}

/// A find-and-replace edit.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replace {
    /// Relative to the working folder.
    pub path: String,
    /// The text to find (first occurrence).
    pub find: String,
    /// Its replacement.
    pub with: String,
}

/// A failure to report.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// What the "model server" said.
    pub message: String,
    /// The HTTP status it used.
    #[serde(default)]
    pub status: Option<u16>,
}

/// One step.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Create or replace a file.
    Write(FileEdit),
    /// Append to a file.
    Append(FileEdit),
    /// Replace text in a file.
    Replace(Replace),
    /// Run a command (argv).
    Run(Vec<String>),
    /// Say something (an assistant message).
    Say(String),
    /// Work for a while, with a heartbeat line every 100 ms.
    SleepMs(u64),
    /// Print nothing for a while.
    SilentMs(u64),
    /// Print nothing, forever.
    Hang(bool),
    /// Report a fatal error and exit 1.
    Fail(Failure),
    /// Exit with a code.
    Exit(i32),
}

/// Errors of the scripted agent (its own usage errors exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script could not be read or parsed.
    #[error("script `{path}`: {message}")]
    Script {
        /// The script file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// A step named a path outside the working folder.
    #[error("step {step}: path {path:?} must be relative and stay inside the working folder")]
    Path {
        /// The step number (1-based).
        step: usize,
        /// The path.
        path: String,
    },
    /// A step failed.
    #[error("step {step}: {message}")]
    Step {
        /// The step number (1-based).
        step: usize,
        /// What failed.
        message: String,
    },
}

impl Script {
    /// Read a script file.
    pub fn read(path: &Path) -> Result<Script, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScriptError::Script {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| ScriptError::Script {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }

    /// The first scenario that fits `task` and `prompt`.
    pub fn pick(&self, task: Option<&str>, prompt: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| match &s.when {
            None => true,
            Some(m) => {
                m.task.as_deref().is_none_or(|t| Some(t) == task)
                    && m.prompt_contains
                        .as_deref()
                        .is_none_or(|p| prompt.contains(p))
            }
        })
    }
}

/// Parse a `--format` value; `plain` (or none) prints text lines.
pub fn parse_format(s: &str) -> Result<Option<StreamFormat>, String> {
    match s {
        "codex" => Ok(Some(StreamFormat::Codex)),
        "gemini" => Ok(Some(StreamFormat::Gemini)),
        "claude" => Ok(Some(StreamFormat::Claude)),
        "plain" => Ok(None),
        other => Err(format!(
            "unknown format {other:?}; expected codex, gemini, claude or plain"
        )),
    }
}

/// Writes the events of one run in a stream format.
struct Emitter<W: Write> {
    format: Option<StreamFormat>,
    out: W,
    session: String,
    tool_n: usize,
}

impl<W: Write> Emitter<W> {
    fn line(&mut self, v: &serde_json::Value) {
        let _ = writeln!(self.out, "{v}");
        let _ = self.out.flush();
    }

    fn text(&mut self, s: &str) {
        let _ = writeln!(self.out, "{s}");
        let _ = self.out.flush();
    }

    fn start(&mut self, prompt: &str) {
        let session = self.session.clone();
        match self.format {
            Some(StreamFormat::Codex) => {
                self.line(&json!({"type": "thread.started", "thread_id": session}));
                self.line(&json!({"type": "turn.started"}));
            }
            Some(StreamFormat::Gemini) => {
                self.line(&json!({"type": "init", "session_id": session, "model": "scripted"}));
                self.line(&json!({"type": "message", "role": "user", "content": prompt}));
            }
            Some(StreamFormat::Claude) => {
                self.line(&json!({"type": "system", "subtype": "init", "session_id": session, "model": "scripted"}));
            }
            None => self.text(&format!("scripted agent session {session}")),
        }
    }

    fn tool(&mut self, name: &str, detail: &str, file: Option<&str>) {
        self.tool_n += 1;
        let id = format!("tool_{}", self.tool_n);
        match self.format {
            Some(StreamFormat::Codex) => {
                self.line(&json!({"type": "item.started", "item": {"id": id, "type": "command_execution", "command": detail, "status": "in_progress"}}));
                if let Some(f) = file {
                    self.line(&json!({"type": "item.completed", "item": {"id": id, "type": "file_change", "changes": [{"path": f, "kind": "update"}], "status": "completed"}}));
                }
            }
            Some(StreamFormat::Gemini) => {
                self.line(&json!({"type": "tool_use", "tool_name": name, "tool_id": id, "parameters": {"command": detail}}));
                self.line(&json!({"type": "tool_result", "tool_id": id, "status": "success", "output": ""}));
            }
            Some(StreamFormat::Claude) => {
                let input = match file {
                    Some(f) => json!({"file_path": f}),
                    None => json!({"command": detail}),
                };
                self.line(&json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}, "session_id": self.session}));
            }
            None => self.text(&format!("[{name}] {detail}")),
        }
    }

    fn say(&mut self, text: &str) {
        match self.format {
            Some(StreamFormat::Codex) => {
                self.line(&json!({"type": "item.completed", "item": {"id": "msg", "type": "agent_message", "text": text}}));
            }
            Some(StreamFormat::Gemini) => {
                self.line(&json!({"type": "message", "role": "assistant", "content": text, "delta": true}));
            }
            Some(StreamFormat::Claude) => {
                self.line(&json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}, "session_id": self.session}));
            }
            None => self.text(text),
        }
    }

    fn heartbeat(&mut self) {
        match self.format {
            Some(StreamFormat::Codex) => self.line(
                &json!({"type": "item.started", "item": {"id": "work", "type": "reasoning"}}),
            ),
            Some(StreamFormat::Gemini) => self.line(&json!({"type": "heartbeat"})),
            Some(StreamFormat::Claude) => {
                self.line(&json!({"type": "system", "subtype": "heartbeat"}));
            }
            None => self.text("."),
        }
    }

    fn finish(&mut self, last_message: Option<&str>) {
        let usage = json!({"input_tokens": 20, "output_tokens": 10});
        match self.format {
            Some(StreamFormat::Codex) => self.line(&json!({"type": "turn.completed", "usage": usage})),
            Some(StreamFormat::Gemini) => self.line(&json!({"type": "result", "status": "success", "stats": usage})),
            Some(StreamFormat::Claude) => self.line(&json!({"type": "result", "subtype": "success", "is_error": false, "result": last_message.unwrap_or("done"), "session_id": self.session, "usage": usage})),
            None => {}
        }
    }

    fn fail(&mut self, f: &Failure) {
        let message = match f.status {
            Some(s) => format!("{s} {}", f.message),
            None => f.message.clone(),
        };
        match self.format {
            Some(StreamFormat::Codex) => {
                self.line(&json!({"type": "error", "message": message}));
                self.line(&json!({"type": "turn.failed", "error": {"message": message}}));
            }
            Some(StreamFormat::Gemini) => self.line(&json!({"type": "result", "status": "error", "error": {"type": "api", "message": message}})),
            Some(StreamFormat::Claude) => self.line(&json!({"type": "result", "subtype": "success", "is_error": true, "api_error_status": f.status, "result": format!("API Error: {message}"), "session_id": self.session})),
            None => {
                let _ = writeln!(std::io::stderr(), "error: {message}");
            }
        }
    }
}

/// Resolve a step's path inside `cwd`, refusing absolute paths and `..`.
fn inside(cwd: &Path, step: usize, path: &str) -> Result<PathBuf, ScriptError> {
    let p = Path::new(path);
    let ok = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if ok {
        Ok(cwd.join(p))
    } else {
        Err(ScriptError::Path {
            step,
            path: path.to_owned(),
        })
    }
}

fn write_file(path: &Path, content: &str, append: bool, step: usize) -> Result<(), ScriptError> {
    let fail = |e: std::io::Error| ScriptError::Step {
        step,
        message: format!("`{}`: {e}", path.display()),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .map_err(fail)?;
    f.write_all(content.as_bytes()).map_err(fail)
}

/// Run `scenario` in `cwd`, writing the stream to `out`; returns the exit code.
pub fn run<W: Write>(
    scenario: &Scenario,
    format: Option<StreamFormat>,
    cwd: &Path,
    prompt: &str,
    out: W,
) -> Result<i32, ScriptError> {
    run_in_session(scenario, format, cwd, prompt, None, out)
}

/// [`run`], continuing the native session `session` (as `--resume` does)
/// instead of starting a new one.
pub fn run_in_session<W: Write>(
    scenario: &Scenario,
    format: Option<StreamFormat>,
    cwd: &Path,
    prompt: &str,
    session: Option<&str>,
    out: W,
) -> Result<i32, ScriptError> {
    let mut em = Emitter {
        format,
        out,
        session: session.map_or_else(|| format!("scripted-{}", std::process::id()), str::to_owned),
        tool_n: 0,
    };
    em.start(prompt);
    let mut last_message: Option<String> = None;
    for (i, step) in scenario.steps.iter().enumerate() {
        let n = i + 1;
        match step {
            Step::Write(e) | Step::Append(e) => {
                let path = inside(cwd, n, &e.path)?;
                let append = matches!(step, Step::Append(_));
                write_file(&path, &e.content, append, n)?;
                let name = if append { "Edit" } else { "Write" };
                em.tool(name, &e.path, Some(&e.path));
            }
            Step::Replace(r) => {
                let path = inside(cwd, n, &r.path)?;
                let text = std::fs::read_to_string(&path).map_err(|e| ScriptError::Step {
                    step: n,
                    message: format!("`{}`: {e}", path.display()),
                })?;
                if !text.contains(&r.find) {
                    return Err(ScriptError::Step {
                        step: n,
                        message: format!("{:?} not found in `{}`", r.find, r.path),
                    });
                }
                write_file(&path, &text.replacen(&r.find, &r.with, 1), false, n)?;
                em.tool("Edit", &r.path, Some(&r.path));
            }
            Step::Run(argv) => {
                let Some((program, rest)) = argv.split_first() else {
                    return Err(ScriptError::Step {
                        step: n,
                        message: "`run` needs a program".into(),
                    });
                };
                em.tool("Bash", &argv.join(" "), None);
                let status = std::process::Command::new(program)
                    .args(rest)
                    .current_dir(cwd)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .status()
                    .map_err(|e| ScriptError::Step {
                        step: n,
                        message: format!("cannot run `{program}`: {e}"),
                    })?;
                if !status.success() {
                    em.say(&format!("`{}` failed: {status}", argv.join(" ")));
                }
            }
            Step::Say(text) => {
                em.say(text);
                last_message = Some(text.clone());
            }
            Step::SleepMs(ms) => {
                let mut left = *ms;
                while left > 0 {
                    let slice = left.min(100);
                    std::thread::sleep(Duration::from_millis(slice));
                    left -= slice;
                    em.heartbeat();
                }
            }
            Step::SilentMs(ms) => std::thread::sleep(Duration::from_millis(*ms)),
            Step::Hang(_) => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            Step::Fail(f) => {
                em.fail(f);
                return Ok(1);
            }
            Step::Exit(code) => {
                if *code == 0 {
                    em.finish(last_message.as_deref());
                }
                return Ok(*code);
            }
        }
    }
    em.finish(last_message.as_deref());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::StreamState;

    fn script(text: &str) -> Script {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn every_format_reads_back_through_the_parsers() {
        let s = script(
            r#"{"scenarios":[{"steps":[{"write":{"path":"a/b.txt","content":"hi"}},{"say":"Done"}]}]}"#,
        );
        for format in [
            StreamFormat::Codex,
            StreamFormat::Gemini,
            StreamFormat::Claude,
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let mut out = Vec::new();
            let code = run(&s.scenarios[0], Some(format), tmp.path(), "p", &mut out).unwrap();
            assert_eq!(code, 0);
            assert_eq!(
                std::fs::read_to_string(tmp.path().join("a/b.txt")).unwrap(),
                "hi"
            );
            let mut st = StreamState::default();
            for line in String::from_utf8(out).unwrap().lines() {
                st.apply_line(format, line);
            }
            assert!(st.completed, "{format:?}");
            assert!(st.session_id.is_some(), "{format:?}");
            assert_eq!(st.final_message.as_deref(), Some("Done"), "{format:?}");
            assert!(st.fatal_error.is_none());
        }
    }

    #[test]
    fn failures_are_fatal_events() {
        let s =
            script(r#"{"scenarios":[{"steps":[{"fail":{"message":"mock 429","status":429}}]}]}"#);
        for format in [
            StreamFormat::Codex,
            StreamFormat::Gemini,
            StreamFormat::Claude,
        ] {
            let mut out = Vec::new();
            let code = run(&s.scenarios[0], Some(format), Path::new("."), "p", &mut out).unwrap();
            assert_eq!(code, 1);
            let mut st = StreamState::default();
            for line in String::from_utf8(out).unwrap().lines() {
                st.apply_line(format, line);
            }
            assert_eq!(st.fatal_error.as_ref().unwrap().1, Some(429), "{format:?}");
        }
    }

    #[test]
    fn scenarios_match_task_and_prompt() {
        let s = script(
            r#"{"scenarios":[{"match":{"task":"IMPL-2"},"steps":[{"exit":2}]},
                             {"match":{"prompt_contains":"refactor"},"steps":[{"exit":3}]},
                             {"steps":[{"exit":0}]}]}"#,
        );
        let code_of = |task, prompt| match s.pick(task, prompt).unwrap().steps[0] {
            Step::Exit(c) => c,
            _ => unreachable!(),
        };
        assert_eq!(code_of(Some("IMPL-2"), "x"), 2);
        assert_eq!(code_of(Some("IMPL-1"), "please refactor"), 3);
        assert_eq!(code_of(None, "x"), 0);
    }

    #[test]
    fn paths_stay_inside() {
        let s = script(
            r#"{"scenarios":[{"steps":[{"write":{"path":"../escape.txt","content":"x"}}]}]}"#,
        );
        let tmp = tempfile::tempdir().unwrap();
        let err = run(&s.scenarios[0], None, tmp.path(), "p", Vec::new()).unwrap_err();
        assert!(err.to_string().contains("inside the working folder"));
        assert!(!tmp.path().join("../escape.txt").exists());
        let s = script(r#"{"scenarios":[{"steps":[{"write":{"path":"/etc/x","content":"x"}}]}]}"#);
        assert!(run(&s.scenarios[0], None, tmp.path(), "p", Vec::new()).is_err());
    }
}
