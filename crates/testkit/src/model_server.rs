//! A scripted model server on 127.0.0.1, so the real agent CLIs (codex,
//! gemini, claude) run offline in tests (`agent-clis.md`).
//!
//! It speaks the OpenAI Responses API (codex), the Anthropic Messages API
//! (claude) and the Gemini API (gemini), all with server-sent events, and
//! decides each answer from the request alone, keeping no state: it looks
//! only at what came after the latest real user message —
//! * a tool result is there → the final text;
//! * tools are offered → one tool call, picked from the *offered* tool
//!   names (the CLIs choose their tool sets per model);
//! * no tools (titles, routing, quota probes) → `ok`, or a JSON instance of
//!   the requested schema.
//!
//! Failures can be injected: an HTTP status with each API's error body, a
//! server that accepts and never answers, a stream cut in the middle, and a
//! 401 for any request without the expected key. Every request is
//! recorded.
//!
//! With [`MockOptions::reads`] the scripted call gives way to a model that
//! reads: it finds the directives `create <path> containing "<text>"` in
//! the prompt and creates each file in turn, with the CLI's write tool (see
//! [`parse_directives`] and the `reading` module). A prompt that lost its
//! task gets "nothing to do", and no file.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use regex::Regex;
use serde_json::{Value, json};

mod reading;

pub use reading::{Directive, parse_directives};
use reading::{Step, add_file_patch, shell_command};

/// Which wire protocol to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Responses API (codex).
    Responses,
    /// Anthropic Messages API (claude).
    Anthropic,
    /// Gemini API (gemini).
    Gemini,
}

/// A failure to inject into every model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// Answer normally.
    None,
    /// Answer with this HTTP status (401, 429, 500) and the API's error body.
    Status(u16),
    /// Accept the request and never answer.
    Hang,
    /// Start the event stream, then cut the connection.
    Midstream,
}

/// Which tool the scripted call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolPref {
    /// A shell tool (`exec_command`, `Bash`, `run_shell_command`).
    Shell,
    /// A file-writing tool (`apply_patch`, `Write`, `write_file`).
    Write,
}

/// What the scripted agent does.
#[derive(Debug, Clone)]
pub struct MockOptions {
    /// The failure to inject.
    pub fail: Fail,
    /// The tool to call.
    pub tool: ToolPref,
    /// Answer 401 to model calls that do not carry this key.
    pub expect_key: Option<String>,
    /// The shell command of a shell tool call.
    pub shell_command: String,
    /// The file a write tool call creates.
    pub file_name: String,
    /// Its content.
    pub file_content: String,
    /// The final message.
    pub final_text: String,
    /// Inject [`MockOptions::fail`] into the first this many model calls
    /// only (all of them when `None`).
    pub fail_first: Option<usize>,
    /// With `Fail::Status(429)`: the `retry-after` header (seconds), also
    /// named in the error text as providers do ("retry after N s").
    pub retry_after_secs: Option<u64>,
    /// The usage each model call reports: `(input, output)` tokens.
    pub usage: (u64, u64),
    /// Act on the prompt instead of the script: every
    /// `create <path> containing "<text>"` of the user messages, in order
    /// and once per path, becomes one tool call creating that file (the
    /// write tool offered: `apply_patch`, `Write`, `write_file`; a shell
    /// `printf` only when none is), then the final text
    /// `done: created <paths>`; a prompt without a directive gets the final
    /// text `nothing to do`. [`MockOptions::tool`], `shell_command`,
    /// `file_name`, `file_content` and `final_text` are then unused.
    /// Requests without tools (titles, probes) are answered as always.
    pub reads: bool,
}

impl MockOptions {
    /// The options of a model that reads its prompt
    /// ([`MockOptions::reads`]), the rest as the default.
    pub fn reading() -> Self {
        MockOptions {
            reads: true,
            ..MockOptions::default()
        }
    }
}

impl Default for MockOptions {
    fn default() -> Self {
        MockOptions {
            fail: Fail::None,
            tool: ToolPref::Shell,
            expect_key: None,
            shell_command: "printf hi > hello.txt".into(),
            file_name: "hello.txt".into(),
            file_content: "hi".into(),
            final_text: "Done: created hello.txt".into(),
            fail_first: None,
            retry_after_secs: None,
            usage: (10, 5),
            reads: false,
        }
    }
}

struct Shared {
    api: Api,
    options: MockOptions,
    requests: Mutex<Vec<Value>>,
    model_calls: Mutex<usize>,
    counter: Mutex<u64>,
}

impl Shared {
    fn next_id(&self, prefix: &str) -> String {
        let mut n = self.counter.lock().unwrap();
        *n += 1;
        format!("{prefix}_{n}")
    }
}

/// A running mock model server; dropping it stops it.
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for MockLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockLlm")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockLlm {
    /// Start a server on 127.0.0.1 (a free port), on its own thread.
    pub fn start(api: Api, options: MockOptions) -> MockLlm {
        let shared = Arc::new(Shared {
            api,
            options,
            requests: Mutex::new(Vec::new()),
            model_calls: Mutex::new(0),
            counter: Mutex::new(0),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let raw_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let state = Arc::clone(&shared);
        let raw_flag = Arc::clone(&raw_stop);
        let thread = std::thread::spawn(move || {
            if state.options.fail == Fail::Midstream {
                let flag = Arc::clone(&raw_flag);
                let raw = std::thread::spawn(move || serve_raw(&listener, &state, &flag));
                let _ = stopped.blocking_recv();
                raw_flag.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = raw.join();
                return;
            }
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("mock server runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let app = Router::new().fallback(handle).with_state(state);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
            rt.shutdown_background();
        });
        MockLlm {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far: `{"method", "path", "headers", "body"}`.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// How many model calls (not side requests) arrived.
    pub fn model_calls(&self) -> usize {
        *self.shared.model_calls.lock().unwrap()
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A base URL on 127.0.0.1 where nothing listens.
pub fn unreachable_base_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("address").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

fn presented_key(headers: &[(String, String)], uri: &str) -> Option<String> {
    let h = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
    };
    if let Some(auth) = h("authorization")
        && auth.len() > 7
        && auth[..7].eq_ignore_ascii_case("bearer ")
    {
        return Some(auth[7..].to_owned());
    }
    h("x-api-key").or_else(|| h("x-goog-api-key")).or_else(|| {
        uri.split_once('?')?
            .1
            .split('&')
            .find_map(|kv| kv.strip_prefix("key=").map(str::to_owned))
    })
}

/// What to answer, decided without I/O so both servers share it.
enum Reply {
    /// A JSON body.
    Json(u16, Value),
    /// A server-sent event stream (`cut` when the failure says so).
    Events(String),
    /// Never answer.
    Hang,
}

fn json_response(status: u16, body: &Value) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn sse_text(events: &[(Option<&str>, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    }
    out
}

/// The first third of a stream (on a character boundary).
fn cut(text: &str) -> &str {
    let mut at = (text.len() / 3).max(1).min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    &text[..at]
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header_pairs: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    match respond(
        &shared,
        method.as_str(),
        &uri.to_string(),
        &header_pairs,
        &body,
    ) {
        Reply::Json(status, v) => {
            let mut r = json_response(status, &v);
            if status == 429
                && let Some(secs) = shared.options.retry_after_secs
                && let Ok(value) = header::HeaderValue::from_str(&secs.to_string())
            {
                r.headers_mut().insert(header::RETRY_AFTER, value);
            }
            r
        }
        Reply::Events(text) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from(text))
            .expect("response"),
        Reply::Hang => {
            std::future::pending::<()>().await;
            unreachable!("a pending future never completes")
        }
    }
}

/// The cut-stream server: plain HTTP/1.1 with close-delimited bodies, so
/// a cut stream looks to the client like a stream that simply ended early
/// (as a proxy dropping the connection does), not like a broken chunk.
fn serve_raw(
    listener: &std::net::TcpListener,
    shared: &Arc<Shared>,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::io::{BufRead, BufReader, Read, Write};
    listener.set_nonblocking(true).expect("non-blocking");
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            }
            Err(_) => continue,
        };
        let shared = Arc::clone(shared);
        std::thread::spawn(move || {
            let _ = stream.set_nonblocking(false);
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("GET").to_owned();
            let path = parts.next().unwrap_or("/").to_owned();
            let mut headers = Vec::new();
            let mut length = 0usize;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.trim_end().split_once(':') {
                    let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
                    if k == "content-length" {
                        length = v.parse().unwrap_or(0);
                    }
                    headers.push((k, v));
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let mut out = stream;
            let (status, ctype, text) = match respond(&shared, &method, &path, &headers, &body) {
                Reply::Json(status, v) => (status, "application/json", v.to_string()),
                Reply::Events(text) => (200, "text/event-stream", cut(&text).to_owned()),
                Reply::Hang => return,
            };
            let _ = write!(
                out,
                "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nConnection: close\r\n\r\n{text}"
            );
            let _ = out.flush();
            let _ = out.shutdown(std::net::Shutdown::Both);
        });
    }
}

fn respond(
    shared: &Shared,
    method: &str,
    uri: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Reply {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let header_map: serde_json::Map<String, Value> =
        headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    shared.requests.lock().unwrap().push(json!({
        "method": method,
        "path": uri,
        "headers": header_map,
        "body": parsed,
    }));
    let path = uri.split('?').next().unwrap_or(uri).to_owned();
    if method == "GET" {
        if path.ends_with("/models") {
            return Reply::Json(
                200,
                match shared.api {
                    Api::Gemini => json!({"models": [{"name": "models/gemini-2.5-pro"}]}),
                    Api::Anthropic => {
                        json!({"data": [{"id": "claude-sonnet-4-5", "type": "model", "display_name": "mock"}], "has_more": false, "first_id": null, "last_id": null})
                    }
                    Api::Responses => {
                        json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "mock"}], "models": []})
                    }
                },
            );
        }
        return Reply::Json(
            404,
            json!({"error": {"message": format!("not found: {uri}")}}),
        );
    }
    let is_model_call = path.ends_with("/responses")
        || (path.ends_with("/messages") && !path.ends_with("/count_tokens"))
        || path.contains(":streamGenerateContent")
        || path.contains(":generateContent");
    if is_model_call {
        let call = {
            let mut n = shared.model_calls.lock().unwrap();
            *n += 1;
            *n
        };
        let opts = &shared.options;
        let mut fail = opts.fail;
        if opts.fail_first.is_some_and(|n| call > n) {
            fail = Fail::None;
        }
        if let Some(expected) = &opts.expect_key
            && presented_key(headers, uri).as_deref() != Some(expected.as_str())
        {
            fail = Fail::Status(401);
        }
        match fail {
            Fail::Hang => return Reply::Hang,
            Fail::Status(code) => return error_reply(shared.api, code, opts.retry_after_secs),
            Fail::None | Fail::Midstream => {}
        }
    }
    match shared.api {
        Api::Responses if path.ends_with("/responses") => {
            Reply::Events(sse_text(&responses_reply(shared, &parsed)))
        }
        Api::Anthropic if path.ends_with("/messages/count_tokens") => {
            Reply::Json(200, json!({"input_tokens": 10}))
        }
        Api::Anthropic if path.ends_with("/messages") => {
            let (blocks, stop) = anthropic_blocks(shared, &parsed);
            if parsed.get("stream").and_then(Value::as_bool) == Some(true) {
                Reply::Events(sse_text(&anthropic_events(shared, &parsed, &blocks, stop)))
            } else {
                Reply::Json(
                    200,
                    json!({"id": shared.next_id("msg"), "type": "message", "role": "assistant",
                            "model": parsed.get("model").cloned().unwrap_or(json!("claude-mock")),
                            "content": blocks, "stop_reason": stop, "stop_sequence": null,
                            "usage": {"input_tokens": shared.options.usage.0, "output_tokens": shared.options.usage.1}}),
                )
            }
        }
        Api::Gemini if path.contains(":countTokens") => {
            Reply::Json(200, json!({"totalTokens": 10}))
        }
        Api::Gemini if path.contains(":streamGenerateContent") => {
            Reply::Events(sse_text(&[(None, gemini_reply(shared, &parsed))]))
        }
        Api::Gemini if path.contains(":generateContent") => {
            Reply::Json(200, gemini_reply(shared, &parsed))
        }
        Api::Gemini if path.contains(":embedContent") => {
            Reply::Json(200, json!({"embedding": {"values": vec![0.0; 8]}}))
        }
        _ => Reply::Json(200, json!({})),
    }
}

fn error_reply(api: Api, code: u16, retry_after: Option<u64>) -> Reply {
    let message = match retry_after {
        Some(s) if code == 429 => format!("mock {code}: rate limit reached; retry after {s} s"),
        _ => format!("mock {code}"),
    };
    let body = match api {
        Api::Anthropic => {
            let kind = match code {
                401 => "authentication_error",
                429 => "rate_limit_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Api::Gemini => {
            let st = match code {
                401 => "UNAUTHENTICATED",
                429 => "RESOURCE_EXHAUSTED",
                _ => "INTERNAL",
            };
            json!({"error": {"code": code, "message": message, "status": st}})
        }
        Api::Responses => {
            json!({"error": {"message": message, "type": "mock_error", "code": code.to_string()}})
        }
    };
    Reply::Json(code, body)
}

fn items(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The reading mode's step for a request offering tools (`None`
/// otherwise, or when the mode is off).
fn reading_step(
    opts: &MockOptions,
    offers_tools: bool,
    state: impl FnOnce() -> (String, usize),
) -> Option<Step> {
    (opts.reads && offers_tools).then(|| {
        let (text, done) = state();
        reading::next_step(&text, done)
    })
}

/// The text of a final answer that has nothing to say about tools.
fn plain_text(opts: &MockOptions, has_result: bool) -> String {
    if has_result {
        opts.final_text.clone()
    } else {
        "ok".to_owned()
    }
}

/// A Responses tool call among the offered `tools`: `apply_patch` with
/// `patch` when `write` is preferred and offered (freeform or function),
/// else the first shell tool offered running `command`.
fn responses_call(
    shared: &Shared,
    tools: &[Value],
    write: bool,
    patch: &str,
    command: &str,
) -> Option<Value> {
    let tool = |name: &str| {
        tools.iter().find(|t| {
            t.get("name").and_then(Value::as_str) == Some(name)
                || t.pointer("/function/name").and_then(Value::as_str) == Some(name)
        })
    };
    let call_id = shared.next_id("call");
    let function = |name: &str, arguments: Value| json!({"type": "function_call", "id": shared.next_id("fc"), "status": "completed", "call_id": call_id, "name": name, "arguments": arguments.to_string()});
    if write && let Some(t) = tool("apply_patch") {
        return Some(if t.get("type").and_then(Value::as_str) == Some("custom") {
            json!({"type": "custom_tool_call", "id": shared.next_id("ctc"), "status": "completed", "call_id": call_id, "name": "apply_patch", "input": patch})
        } else {
            function("apply_patch", json!({"input": patch}))
        });
    }
    if tool("exec_command").is_some() {
        Some(function("exec_command", json!({"cmd": command})))
    } else if tool("shell_command").is_some() {
        Some(function("shell_command", json!({"command": command})))
    } else if tool("shell").is_some() {
        Some(function(
            "shell",
            json!({"command": ["bash", "-lc", command]}),
        ))
    } else {
        None
    }
}

fn responses_reply(shared: &Shared, body: &Value) -> Vec<(Option<&'static str>, Value)> {
    let opts = &shared.options;
    let input = items(body, "input");
    let start = input
        .iter()
        .rposition(|it| {
            it.get("type").and_then(Value::as_str).unwrap_or("message") == "message"
                && it.get("role").and_then(Value::as_str) == Some("user")
        })
        .unwrap_or(0);
    let has_result = input[start.min(input.len())..].iter().any(|it| {
        matches!(
            it.get("type").and_then(Value::as_str),
            Some("function_call_output" | "custom_tool_call_output")
        )
    });
    let tools = items(body, "tools");
    let model = body.get("model").cloned().unwrap_or(json!("mock-model"));
    let resp_id = shared.next_id("resp");
    let mut ev = vec![(
        Some("response.created"),
        json!({"type": "response.created", "response": {"id": resp_id, "object": "response", "model": model, "status": "in_progress", "output": []}}),
    )];
    let mut output = Vec::new();
    let mut text = plain_text(opts, has_result);
    let item = match reading_step(opts, !tools.is_empty(), || reading::responses_state(body)) {
        Some(Step::Write(d)) => {
            let call = responses_call(
                shared,
                &tools,
                true,
                &add_file_patch(&d),
                &shell_command(&d),
            );
            if call.is_none() {
                text = format!("no tool to create {}", d.path);
            }
            call
        }
        Some(Step::Final(t)) => {
            text = t;
            None
        }
        None if !has_result && !tools.is_empty() => {
            let patch = format!(
                "*** Begin Patch\n*** Add File: {}\n+{}\n*** End Patch\n",
                opts.file_name, opts.file_content
            );
            responses_call(
                shared,
                &tools,
                opts.tool == ToolPref::Write,
                &patch,
                &opts.shell_command,
            )
        }
        None => None,
    };
    if let Some(item) = item {
        ev.push((
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ));
        ev.push((
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ));
        output.push(item);
    }
    if output.is_empty() {
        let msg_id = shared.next_id("msg");
        let item = json!({"type": "message", "id": msg_id, "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]});
        ev.push((Some("response.output_item.added"), json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": msg_id, "status": "in_progress", "role": "assistant", "content": []}})));
        ev.push((Some("response.output_text.delta"), json!({"type": "response.output_text.delta", "item_id": msg_id, "output_index": 0, "content_index": 0, "delta": text})));
        ev.push((
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ));
        output.push(item);
    }
    ev.push((
        Some("response.completed"),
        json!({"type": "response.completed", "response": {"id": resp_id, "object": "response", "model": model, "status": "completed", "output": output,
            "usage": {"input_tokens": shared.options.usage.0, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": shared.options.usage.1, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": shared.options.usage.0 + shared.options.usage.1}}}),
    ));
    ev
}

fn is_tool_result_message(m: &Value) -> bool {
    m.get("content").and_then(Value::as_array).is_some_and(|c| {
        c.iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
    })
}

fn anthropic_blocks(shared: &Shared, body: &Value) -> (Vec<Value>, &'static str) {
    let opts = &shared.options;
    let msgs = items(body, "messages");
    let start = msgs
        .iter()
        .rposition(|m| {
            m.get("role").and_then(Value::as_str) == Some("user") && !is_tool_result_message(m)
        })
        .unwrap_or(0);
    let has_result = msgs[start.min(msgs.len())..]
        .iter()
        .any(is_tool_result_message);
    let tools: Vec<String> = items(body, "tools")
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let text = format!(
        "{}{}",
        body.get("system").map(Value::to_string).unwrap_or_default(),
        msgs.first().map(Value::to_string).unwrap_or_default()
    );
    let re = Regex::new(r#"(?:Primary working directory|Working directory):\s*(/[^\s"\\]+)"#)
        .expect("regex");
    let cwd = re.captures(&text).map(|c| c[1].to_owned());
    // `Write` (an absolute path under the working directory) when preferred
    // and possible, else `Bash`.
    let call = |write: bool, file: &str, content: &str, command: &str| {
        if write
            && tools.iter().any(|t| t == "Write")
            && let Some(cwd) = &cwd
        {
            return Some(
                json!({"type": "tool_use", "id": shared.next_id("toolu"), "name": "Write",
                "input": {"file_path": format!("{cwd}/{file}"), "content": content}}),
            );
        }
        tools.iter().any(|t| t == "Bash").then(|| {
            json!({"type": "tool_use", "id": shared.next_id("toolu"), "name": "Bash",
                "input": {"command": command, "description": "Run the scripted command"}})
        })
    };
    let mut text = plain_text(opts, has_result);
    let block = match reading_step(opts, !tools.is_empty(), || reading::anthropic_state(body)) {
        Some(Step::Write(d)) => {
            let block = call(true, &d.path, &d.content, &shell_command(&d));
            if block.is_none() {
                text = format!("no tool to create {}", d.path);
            }
            block
        }
        Some(Step::Final(t)) => {
            text = t;
            None
        }
        None if !has_result && !tools.is_empty() => call(
            opts.tool == ToolPref::Write,
            &opts.file_name,
            &opts.file_content,
            &opts.shell_command,
        ),
        None => None,
    };
    match block {
        Some(block) => (vec![block], "tool_use"),
        None => (vec![json!({"type": "text", "text": text})], "end_turn"),
    }
}

fn anthropic_events(
    shared: &Shared,
    body: &Value,
    blocks: &[Value],
    stop: &str,
) -> Vec<(Option<&'static str>, Value)> {
    let model = body.get("model").cloned().unwrap_or(json!("claude-mock"));
    let mut ev = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {"id": shared.next_id("msg"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": shared.options.usage.0, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    )];
    for (i, b) in blocks.iter().enumerate() {
        if b["type"] == "text" {
            ev.push((Some("content_block_start"), json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})));
            ev.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}})));
        } else {
            ev.push((Some("content_block_start"), json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})));
            ev.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": b["input"].to_string()}})));
        }
        ev.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    ev.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": shared.options.usage.1}})));
    ev.push((Some("message_stop"), json!({"type": "message_stop"})));
    ev
}

/// The smallest plausible instance of a (JSON or OpenAPI) schema.
fn example_for_schema(schema: &Value, key: &str) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let t = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_ascii_lowercase();
    match t.as_str() {
        "object" => {
            let props = schema.get("properties").and_then(Value::as_object);
            Value::Object(
                props
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), example_for_schema(v, k)))
                    .collect(),
            )
        }
        "array" => json!([]),
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        _ if key == "next_speaker" => json!("user"),
        _ => json!("mock"),
    }
}

fn gemini_reply(shared: &Shared, body: &Value) -> Value {
    let opts = &shared.options;
    let contents = items(body, "contents");
    let is_fr = |c: &Value| {
        c.get("parts")
            .and_then(Value::as_array)
            .is_some_and(|p| p.iter().any(|x| x.get("functionResponse").is_some()))
    };
    let start = contents
        .iter()
        .rposition(|c| c.get("role").and_then(Value::as_str) == Some("user") && !is_fr(c))
        .unwrap_or(0);
    let has_result = contents[start.min(contents.len())..].iter().any(is_fr);
    let decls: Vec<String> = items(body, "tools")
        .iter()
        .flat_map(|t| items(t, "functionDeclarations"))
        .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let has = |n: &str| decls.iter().any(|d| d == n);
    let gen_config = body.get("generationConfig").cloned().unwrap_or(Value::Null);
    let schema = gen_config
        .get("responseJsonSchema")
        .or_else(|| gen_config.get("responseSchema"));
    let write = |file: &str, content: &str| json!([{"functionCall": {"name": "write_file", "args": {"file_path": file, "content": content}}}]);
    let shell = |command: &str| json!([{"functionCall": {"name": "run_shell_command", "args": {"command": command, "description": "Run the scripted command"}}}]);
    let text = |t: &str| json!([{"text": t}]);
    let parts = if gen_config.get("responseMimeType").and_then(Value::as_str)
        == Some("application/json")
        || schema.is_some()
    {
        let obj = example_for_schema(schema.unwrap_or(&json!({})), "");
        json!([{"text": obj.to_string()}])
    } else if let Some(step) = reading_step(opts, !decls.is_empty(), || reading::gemini_state(body))
    {
        match step {
            Step::Write(d) if has("write_file") => write(&d.path, &d.content),
            Step::Write(d) if has("run_shell_command") => shell(&shell_command(&d)),
            Step::Write(d) => text(&format!("no tool to create {}", d.path)),
            Step::Final(t) => text(&t),
        }
    } else if !has_result && !decls.is_empty() {
        if opts.tool == ToolPref::Write && has("write_file") {
            write(&opts.file_name, &opts.file_content)
        } else if has("run_shell_command") {
            shell(&opts.shell_command)
        } else if has("write_file") {
            write(&opts.file_name, &opts.file_content)
        } else {
            text("ok")
        }
    } else {
        text(&plain_text(opts, has_result))
    };
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
           "modelVersion": "gemini-mock", "responseId": shared.next_id("r")})
}
