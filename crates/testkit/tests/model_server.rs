//! The mock model server (`wavecrew_testkit::mock_llm`): its three wire
//! protocols spoken over raw HTTP/1.1, its failure injection, and the real
//! codex, gemini and claude CLIs (installed by `scripts/test.sh`) driven by
//! it offline until they write `hello.txt` into a temp git repo.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wavecrew_testkit::agent_cli_bins::{AgentCli, VERSIONS, cache_dir, cli_bin};
use wavecrew_testkit::git::git;
use wavecrew_testkit::model_server::{
    Api, Directive, Fail, MockLlm, MockOptions, ToolPref, parse_directives, unreachable_base_url,
};

// ---------------------------------------------------------------------------
// A tiny HTTP/1.1 client.

struct Reply {
    status: u16,
    /// The header block, lower-cased.
    headers: String,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// `(event name, data)` for every server-sent event.
    fn events(&self) -> Vec<(Option<String>, Value)> {
        self.body
            .split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut name = None;
                let mut data = Value::Null;
                for line in block.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = Some(n.to_owned());
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(d).expect("event data is JSON");
                    }
                }
                (name, data)
            })
            .collect()
    }
}

fn send(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    try_send(port, method, path, headers, body, Duration::from_secs(20)).expect("an answer")
}

fn try_send(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
    timeout: Duration,
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(timeout))?;
    let payload = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        payload.len()
    );
    for (k, v) in headers {
        let _ = write!(head, "{k}: {v}\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(payload.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8(raw).expect("UTF-8 answer");
    let Some((head, rest)) = text.split_once("\r\n\r\n") else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("no HTTP answer, only {text:?}"),
        ));
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = head.to_ascii_lowercase();
    let body = if headers.contains("transfer-encoding: chunked") {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

fn post(mock: &MockLlm, path: &str, body: &Value) -> Reply {
    send(mock.port(), "POST", path, &[], body)
}

fn with(api: Api, f: impl FnOnce(&mut MockOptions)) -> MockLlm {
    let mut options = MockOptions::default();
    f(&mut options);
    MockLlm::start(api, options)
}

// ---------------------------------------------------------------------------
// Request bodies as the CLIs send them (trimmed).

fn responses_body(tools: &Value, after_user: &[Value]) -> Value {
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Create a file hello.txt containing hi"}]}),
    ];
    input.extend_from_slice(after_user);
    json!({"model": "gpt-5.5", "stream": true, "input": input, "tools": tools, "tool_choice": "auto"})
}

fn exec_command_tool() -> Value {
    json!({"type": "function", "name": "exec_command", "parameters": {"type": "object"}})
}

fn apply_patch_tool() -> Value {
    json!({"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}})
}

fn anthropic_body(stream: bool, tools: &[&str], messages: &[Value]) -> Value {
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t, "input_schema": {"type": "object"}}))
        .collect();
    json!({"model": "claude-sonnet-4-5", "stream": stream, "max_tokens": 100,
           "system": [{"type": "text", "text": "You are Claude Code.\nPrimary working directory: /tmp/repo-x\nIs a git repo: true"}],
           "tools": tools, "messages": messages})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

fn gemini_body(decls: &[&str], contents: &[Value]) -> Value {
    let decls: Vec<Value> = decls
        .iter()
        .map(|d| json!({"name": d, "parameters": {"type": "OBJECT"}}))
        .collect();
    json!({"contents": contents, "tools": [{"functionDeclarations": decls}]})
}

fn gemini_user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

const GEMINI_STREAM: &str = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
const GEMINI_PLAIN: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

// ---------------------------------------------------------------------------
// OpenAI Responses API (codex).

#[test]
fn responses_offers_a_shell_call_then_the_final_text() {
    let mock = MockLlm::start(Api::Responses, MockOptions::default());
    let first = post(
        &mock,
        "/v1/responses",
        &responses_body(&json!([exec_command_tool(), apply_patch_tool()]), &[]),
    );
    assert_eq!(first.status, 200);
    assert!(
        first.headers.contains("content-type: text/event-stream"),
        "{}",
        first.headers
    );
    let events = first.events();
    let names: Vec<&str> = events.iter().filter_map(|(n, _)| n.as_deref()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed"
        ]
    );
    for (name, data) in &events {
        assert_eq!(
            data["type"].as_str(),
            name.as_deref(),
            "type is repeated in the data"
        );
    }
    let item = &events[2].1["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"cmd": "printf hi > hello.txt"}));
    let completed = &events[3].1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["usage"]["total_tokens"], 15);
    assert_eq!(completed["output"][0]["call_id"], item["call_id"]);

    let call_id = item["call_id"].clone();
    let second = post(
        &mock,
        "/v1/responses",
        &responses_body(
            &json!([exec_command_tool()]),
            &[
                item.clone(),
                json!({"type": "function_call_output", "call_id": call_id, "output": "Process exited with code 0"}),
            ],
        ),
    );
    let events = second.events();
    let delta = events
        .iter()
        .find(|(n, _)| n.as_deref() == Some("response.output_text.delta"))
        .expect("a text delta");
    assert_eq!(delta.1["delta"], "Done: created hello.txt");
    let last = events.last().unwrap();
    assert_eq!(last.0.as_deref(), Some("response.completed"));
    assert_eq!(
        last.1["response"]["output"][0]["content"][0]["text"],
        "Done: created hello.txt"
    );
    assert_eq!(mock.model_calls(), 2);
}

#[test]
fn responses_write_uses_the_custom_apply_patch_tool_and_no_tools_means_ok() {
    let mock = with(Api::Responses, |o| o.tool = ToolPref::Write);
    let reply = post(
        &mock,
        "/v1/responses",
        &responses_body(&json!([exec_command_tool(), apply_patch_tool()]), &[]),
    );
    let item = &reply.events()[2].1["item"];
    assert_eq!(item["type"], "custom_tool_call");
    assert_eq!(item["name"], "apply_patch");
    assert_eq!(
        item["input"],
        "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
    );

    // Write preferred but apply_patch not offered: the shell tool is used.
    let reply = post(
        &mock,
        "/v1/responses",
        &responses_body(&json!([exec_command_tool()]), &[]),
    );
    assert_eq!(reply.events()[2].1["item"]["name"], "exec_command");

    // A side call without tools.
    let reply = post(&mock, "/v1/responses", &responses_body(&json!([]), &[]));
    let last = reply.events().pop().unwrap();
    assert_eq!(last.1["response"]["output"][0]["content"][0]["text"], "ok");
}

#[test]
fn a_new_user_turn_gets_a_fresh_tool_call() {
    let mock = MockLlm::start(Api::Responses, MockOptions::default());
    let old_turn = [
        json!({"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}),
        json!({"type": "function_call_output", "call_id": "c1", "output": "done"}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done"}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}),
    ];
    let reply = post(
        &mock,
        "/v1/responses",
        &responses_body(&json!([exec_command_tool()]), &old_turn),
    );
    assert_eq!(reply.events()[2].1["item"]["type"], "function_call");
}

// ---------------------------------------------------------------------------
// Anthropic Messages API (claude).

#[test]
fn anthropic_streams_a_bash_call_then_the_final_text() {
    let mock = MockLlm::start(Api::Anthropic, MockOptions::default());
    let reply = post(
        &mock,
        "/v1/messages?beta=true",
        &anthropic_body(true, &["Bash", "Write", "Read"], &[user("make hello")]),
    );
    assert_eq!(reply.status, 200);
    assert!(reply.headers.contains("content-type: text/event-stream"));
    let events = reply.events();
    let names: Vec<&str> = events.iter().filter_map(|(n, _)| n.as_deref()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let start = &events[1].1["content_block"];
    assert_eq!(start["type"], "tool_use");
    assert_eq!(start["name"], "Bash");
    let input: Value =
        serde_json::from_str(events[2].1["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input["command"], "printf hi > hello.txt");
    assert_eq!(events[4].1["delta"]["stop_reason"], "tool_use");

    let tool_id = start["id"].clone();
    let messages = [
        user("make hello"),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": input}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": ""}]}),
    ];
    let reply = post(
        &mock,
        "/v1/messages",
        &anthropic_body(true, &["Bash"], &messages),
    );
    let events = reply.events();
    assert_eq!(
        events[2].1["delta"],
        json!({"type": "text_delta", "text": "Done: created hello.txt"})
    );
    assert_eq!(events[4].1["delta"]["stop_reason"], "end_turn");
}

#[test]
fn anthropic_write_uses_the_primary_working_directory() {
    let mock = with(Api::Anthropic, |o| o.tool = ToolPref::Write);
    let reply = post(
        &mock,
        "/v1/messages",
        &anthropic_body(false, &["Bash", "Write"], &[user("make hello")]),
    );
    assert!(reply.headers.contains("content-type: application/json"));
    let body = reply.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["stop_reason"], "tool_use");
    assert_eq!(body["content"][0]["name"], "Write");
    assert_eq!(
        body["content"][0]["input"],
        json!({"file_path": "/tmp/repo-x/hello.txt", "content": "hi"})
    );
}

#[test]
fn anthropic_side_endpoints() {
    let mock = MockLlm::start(Api::Anthropic, MockOptions::default());
    // No tools, not streamed (a title or quota probe): plain JSON "ok".
    let reply = post(
        &mock,
        "/v1/messages",
        &anthropic_body(false, &[], &[user("title?")]),
    );
    assert_eq!(
        reply.json()["content"],
        json!([{"type": "text", "text": "ok"}])
    );
    let reply = post(&mock, "/v1/messages/count_tokens", &json!({"messages": []}));
    assert_eq!(reply.json(), json!({"input_tokens": 10}));
    let reply = send(mock.port(), "GET", "/v1/models?limit=5", &[], &Value::Null);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["data"][0]["id"], "claude-sonnet-4-5");
    assert_eq!(
        mock.model_calls(),
        1,
        "count_tokens and GET are no model calls"
    );
    assert_eq!(mock.requests().len(), 3);
}

// ---------------------------------------------------------------------------
// Gemini API (gemini).

#[test]
fn gemini_streams_a_shell_call_then_the_final_text() {
    let mock = MockLlm::start(Api::Gemini, MockOptions::default());
    let reply = post(
        &mock,
        GEMINI_STREAM,
        &gemini_body(
            &["read_file", "write_file", "run_shell_command"],
            &[gemini_user("make hello")],
        ),
    );
    assert!(reply.headers.contains("content-type: text/event-stream"));
    assert!(!reply.body.contains("event:"), "Gemini events are unnamed");
    let events = reply.events();
    assert_eq!(events.len(), 1);
    let part = &events[0].1["candidates"][0]["content"]["parts"][0];
    assert_eq!(part["functionCall"]["name"], "run_shell_command");
    assert_eq!(
        part["functionCall"]["args"]["command"],
        "printf hi > hello.txt"
    );
    assert_eq!(events[0].1["usageMetadata"]["totalTokenCount"], 15);

    let contents = [
        gemini_user("make hello"),
        json!({"role": "model", "parts": [{"functionCall": part["functionCall"]}]}),
        json!({"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": ""}}}]}),
    ];
    let reply = post(
        &mock,
        GEMINI_STREAM,
        &gemini_body(&["run_shell_command"], &contents),
    );
    assert_eq!(
        reply.events()[0].1["candidates"][0]["content"]["parts"][0]["text"],
        "Done: created hello.txt"
    );
}

#[test]
fn gemini_write_and_json_schema_answers() {
    let mock = with(Api::Gemini, |o| o.tool = ToolPref::Write);
    let reply = post(
        &mock,
        GEMINI_PLAIN,
        &gemini_body(
            &["run_shell_command", "write_file"],
            &[gemini_user("make hello")],
        ),
    );
    assert!(reply.headers.contains("content-type: application/json"));
    assert_eq!(
        reply.json()["candidates"][0]["content"]["parts"][0]["functionCall"],
        json!({"name": "write_file", "args": {"file_path": "hello.txt", "content": "hi"}})
    );

    // A utility call (next-speaker check) asks for JSON of a schema.
    let body = json!({
        "contents": [gemini_user("who speaks next?")],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
            "type": "object",
            "properties": {
                "reasoning": {"type": "string"},
                "next_speaker": {"type": "string"},
                "count": {"type": "integer"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "flag": {"type": "boolean"},
                "list": {"type": "array", "items": {"type": "string"}},
            }
        }}
    });
    let reply = post(&mock, GEMINI_PLAIN, &body);
    let text = reply.json()["candidates"][0]["content"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        json!({"reasoning": "mock", "next_speaker": "user", "count": 1, "mode": "fast", "flag": false, "list": []})
    );

    let reply = post(
        &mock,
        "/v1beta/models/gemini-2.5-pro:countTokens",
        &json!({}),
    );
    assert_eq!(reply.json(), json!({"totalTokens": 10}));
    let reply = post(
        &mock,
        "/v1beta/models/text-embedding-004:embedContent",
        &json!({}),
    );
    assert_eq!(
        reply.json()["embedding"]["values"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
    assert_eq!(mock.model_calls(), 2);
}

// ---------------------------------------------------------------------------
// The reading mode: the directives of the prompt, one tool call each.

const TWO: &str = "Do the task.\n<<<UNTRUSTED DATA (task description)>>>\nFirst create notes/a.md containing \"alpha one\" and then\ncreate b.txt containing \"it's b\".\n<<<END>>>";

#[test]
fn directives_are_read_in_order_once_per_path() {
    let d = |path: &str, content: &str| Directive {
        path: path.into(),
        content: content.into(),
    };
    assert_eq!(
        parse_directives(TWO),
        [d("notes/a.md", "alpha one"), d("b.txt", "it's b")]
    );
    // A path named again keeps its first text; the others keep their order.
    assert_eq!(
        parse_directives(
            r#"create x containing "1" create y containing "2" create x containing "3" create z containing """#
        ),
        [d("x", "1"), d("y", "2"), d("z", "")]
    );
    // A text may span lines.
    assert_eq!(
        parse_directives("create m.md containing \"line 1\nline 2\""),
        [d("m.md", "line 1\nline 2")]
    );
    // None: prose, an absolute path, a path with a space, a missing quote,
    // another verb that ends in "create", two spaces.
    for text in [
        "",
        "Create the notes and say what you created.",
        r#"create /etc/passwd containing "x""#,
        r#"create my notes.md containing "x""#,
        "create a.md containing x",
        r#"recreate a.md containing "x""#,
        r#"create  a.md containing "x""#,
    ] {
        assert_eq!(parse_directives(text), [], "{text:?}");
    }
}

fn reading(api: Api) -> MockLlm {
    MockLlm::start(api, MockOptions::reading())
}

/// The one output item of a Responses answer.
fn responses_item(reply: &Reply) -> Value {
    let last = reply.events().pop().expect("events");
    let output = last.1["response"]["output"].as_array().unwrap().clone();
    assert_eq!(output.len(), 1, "{output:?}");
    output[0].clone()
}

fn responses_text(item: &Value) -> &str {
    assert_eq!(item["type"], "message", "{item}");
    item["content"][0]["text"].as_str().unwrap()
}

/// codex's request: its developer and context messages around the prompt,
/// then the conversation so far.
fn codex_request(prompt: &str, tools: &Value, after: &[Value]) -> Value {
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex. Never create files unasked."}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context><cwd>/tmp/repo</cwd></environment_context>"}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
    ];
    input.extend_from_slice(after);
    json!({"model": "gpt-5.5", "stream": true, "input": input, "tools": tools})
}

#[test]
fn responses_reading_patches_each_file_then_names_them() {
    let mock = reading(Api::Responses);
    let tools = json!([exec_command_tool(), apply_patch_tool()]);
    let mut after = Vec::new();
    let mut patches = Vec::new();
    for n in 0..2 {
        let item = responses_item(&post(
            &mock,
            "/v1/responses",
            &codex_request(TWO, &tools, &after),
        ));
        assert_eq!(item["type"], "custom_tool_call", "call {n}: {item}");
        assert_eq!(item["name"], "apply_patch");
        patches.push(item["input"].as_str().unwrap().to_owned());
        after.push(item.clone());
        after.push(json!({"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "Success"}));
    }
    assert_eq!(
        patches,
        [
            "*** Begin Patch\n*** Add File: notes/a.md\n+alpha one\n*** End Patch\n",
            "*** Begin Patch\n*** Add File: b.txt\n+it's b\n*** End Patch\n"
        ]
    );
    let last = responses_item(&post(
        &mock,
        "/v1/responses",
        &codex_request(TWO, &tools, &after),
    ));
    assert_eq!(responses_text(&last), "done: created notes/a.md, b.txt");

    // apply_patch as a function tool; a text ending in a newline is
    // written as it is, lines and all.
    let function_patch =
        json!([{"type": "function", "name": "apply_patch", "parameters": {"type": "object"}}]);
    let item = responses_item(&post(
        &mock,
        "/v1/responses",
        &codex_request("create m.md containing \"x\ny\n\"", &function_patch, &[]),
    ));
    assert_eq!(item["type"], "function_call");
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        args,
        json!({"input": "*** Begin Patch\n*** Add File: m.md\n+x\n+y\n*** End Patch\n"})
    );

    // No write tool: the shell writes the exact text, quotes and all.
    let item = responses_item(&post(
        &mock,
        "/v1/responses",
        &codex_request(TWO, &json!([exec_command_tool()]), &after[..2]),
    ));
    assert_eq!(item["name"], "exec_command");
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"cmd": "printf '%s' 'it'\\''s b' > 'b.txt'"}));
    let item = responses_item(&post(
        &mock,
        "/v1/responses",
        &codex_request(TWO, &json!([exec_command_tool()]), &[]),
    ));
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        args,
        json!({"cmd": "mkdir -p 'notes' && printf '%s' 'alpha one' > 'notes/a.md'"})
    );

    // A prompt without a directive: nothing to do, and no tool call.
    let item = responses_item(&post(
        &mock,
        "/v1/responses",
        &codex_request("Create the notes of the task.", &tools, &[]),
    ));
    assert_eq!(responses_text(&item), "nothing to do");
    // A directive outside the user messages is not the task.
    let mut body = codex_request("Nothing here.", &tools, &[]);
    body["instructions"] = json!("create evil.txt containing \"x\"");
    body["input"][0]["content"][0]["text"] = json!("create evil.txt containing \"x\"");
    assert_eq!(
        responses_text(&responses_item(&post(&mock, "/v1/responses", &body))),
        "nothing to do"
    );
    // A side call without tools: ok, as always.
    let item = responses_item(&post(
        &mock,
        "/v1/responses",
        &codex_request(TWO, &json!([]), &[]),
    ));
    assert_eq!(responses_text(&item), "ok");
}

/// claude's request: the prompt after a context reminder in the first
/// user message.
fn claude_messages(prompt: &str) -> Vec<Value> {
    vec![json!({"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>As you answer, use this context.</system-reminder>"},
        {"type": "text", "text": prompt}]})]
}

fn anthropic_block(reply: &Reply) -> (Value, Value) {
    let body = reply.json();
    let blocks = body["content"].as_array().unwrap().clone();
    assert_eq!(blocks.len(), 1, "{body}");
    (blocks[0].clone(), body["stop_reason"].clone())
}

#[test]
fn anthropic_reading_writes_each_file_then_names_them() {
    let mock = reading(Api::Anthropic);
    let tools = ["Bash", "Read", "Write", "Edit"];
    let mut messages = claude_messages(TWO);
    let mut written = Vec::new();
    for _ in 0..2 {
        let (block, stop) = anthropic_block(&post(
            &mock,
            "/v1/messages",
            &anthropic_body(false, &tools, &messages),
        ));
        assert_eq!(
            (block["type"].as_str(), stop.as_str()),
            (Some("tool_use"), Some("tool_use"))
        );
        assert_eq!(block["name"], "Write");
        written.push(block["input"].clone());
        messages.push(json!({"role": "assistant", "content": [block.clone()]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": block["id"], "content": "File created"}]}));
    }
    assert_eq!(
        written,
        [
            json!({"file_path": "/tmp/repo-x/notes/a.md", "content": "alpha one"}),
            json!({"file_path": "/tmp/repo-x/b.txt", "content": "it's b"})
        ]
    );
    // Streamed, the final text names the files.
    let reply = post(
        &mock,
        "/v1/messages",
        &anthropic_body(true, &tools, &messages),
    );
    let events = reply.events();
    assert_eq!(
        events[2].1["delta"],
        json!({"type": "text_delta", "text": "done: created notes/a.md, b.txt"})
    );
    assert_eq!(events[4].1["delta"]["stop_reason"], "end_turn");

    // Without Write: Bash.
    let (block, _) = anthropic_block(&post(
        &mock,
        "/v1/messages",
        &anthropic_body(false, &["Bash"], &messages[..3]),
    ));
    assert_eq!(block["name"], "Bash");
    assert_eq!(
        block["input"]["command"],
        "printf '%s' 'it'\\''s b' > 'b.txt'"
    );

    // No directive: nothing to do; a directive in the system prompt only
    // is not the task.
    for messages in [claude_messages("Write the notes."), vec![user("hi")]] {
        let mut body = anthropic_body(false, &tools, &messages);
        body["system"][0]["text"] =
            json!("Primary working directory: /tmp/r\ncreate evil.txt containing \"x\"");
        let (block, stop) = anthropic_block(&post(&mock, "/v1/messages", &body));
        assert_eq!(block, json!({"type": "text", "text": "nothing to do"}));
        assert_eq!(stop, "end_turn");
    }
    // Titles and probes (no tools): ok.
    let (block, _) = anthropic_block(&post(
        &mock,
        "/v1/messages",
        &anthropic_body(false, &[], &claude_messages(TWO)),
    ));
    assert_eq!(block["text"], "ok");
}

fn gemini_part(reply: &Reply) -> Value {
    let events = reply.events();
    assert_eq!(events.len(), 1);
    let parts = events[0].1["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(parts.len(), 1);
    parts[0].clone()
}

#[test]
fn gemini_reading_writes_each_file_then_names_them() {
    let mock = reading(Api::Gemini);
    let decls = ["read_file", "write_file", "run_shell_command"];
    let mut contents = vec![
        gemini_user("This is the Gemini CLI. Context: /tmp/repo"),
        gemini_user(TWO),
    ];
    let mut calls = Vec::new();
    for _ in 0..2 {
        let part = gemini_part(&post(&mock, GEMINI_STREAM, &gemini_body(&decls, &contents)));
        calls.push(part["functionCall"].clone());
        contents.push(json!({"role": "model", "parts": [part.clone()]}));
        contents.push(json!({"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {"output": "ok"}}}]}));
    }
    assert_eq!(
        calls,
        [
            json!({"name": "write_file", "args": {"file_path": "notes/a.md", "content": "alpha one"}}),
            json!({"name": "write_file", "args": {"file_path": "b.txt", "content": "it's b"}})
        ]
    );
    let part = gemini_part(&post(&mock, GEMINI_STREAM, &gemini_body(&decls, &contents)));
    assert_eq!(part, json!({"text": "done: created notes/a.md, b.txt"}));

    let part = gemini_part(&post(
        &mock,
        GEMINI_STREAM,
        &gemini_body(&["run_shell_command"], &contents[..2]),
    ));
    assert_eq!(
        part["functionCall"]["args"]["command"],
        "mkdir -p 'notes' && printf '%s' 'alpha one' > 'notes/a.md'"
    );
    let part = gemini_part(&post(
        &mock,
        GEMINI_STREAM,
        &gemini_body(&decls, &[gemini_user("Write the notes.")]),
    ));
    assert_eq!(part, json!({"text": "nothing to do"}));
    // Utility calls asking for JSON still get JSON.
    let body = json!({"contents": [gemini_user(TWO)],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
            "type": "object", "properties": {"next_speaker": {"type": "string"}}}}});
    let text =
        post(&mock, GEMINI_PLAIN, &body).json()["candidates"][0]["content"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
    assert_eq!(text, r#"{"next_speaker":"user"}"#);
}

// ---------------------------------------------------------------------------
// Failures, keys, the rest.

#[test]
fn each_api_answers_injected_statuses_with_its_error_shape() {
    for code in [401_u16, 429, 500] {
        let mock = with(Api::Responses, |o| o.fail = Fail::Status(code));
        let reply = post(&mock, "/v1/responses", &responses_body(&json!([]), &[]));
        assert_eq!(reply.status, code);
        assert_eq!(
            reply.json(),
            json!({"error": {"message": format!("mock {code}"), "type": "mock_error", "code": code.to_string()}})
        );

        let mock = with(Api::Anthropic, |o| o.fail = Fail::Status(code));
        let reply = post(
            &mock,
            "/v1/messages",
            &anthropic_body(true, &[], &[user("hi")]),
        );
        assert_eq!(reply.status, code);
        let kind = match code {
            401 => "authentication_error",
            429 => "rate_limit_error",
            _ => "api_error",
        };
        assert_eq!(
            reply.json(),
            json!({"type": "error", "error": {"type": kind, "message": format!("mock {code}")}})
        );

        let mock = with(Api::Gemini, |o| o.fail = Fail::Status(code));
        let reply = post(
            &mock,
            GEMINI_STREAM,
            &gemini_body(&[], &[gemini_user("hi")]),
        );
        assert_eq!(reply.status, code);
        let status = match code {
            401 => "UNAUTHENTICATED",
            429 => "RESOURCE_EXHAUSTED",
            _ => "INTERNAL",
        };
        assert_eq!(
            reply.json(),
            json!({"error": {"code": code, "message": format!("mock {code}"), "status": status}})
        );
        // Side endpoints still answer.
        let reply = send(mock.port(), "GET", "/v1beta/models", &[], &Value::Null);
        assert_eq!(reply.status, 200);
    }
}

#[test]
fn expect_key_accepts_every_way_of_presenting_a_key() {
    let key = "the-right-key";
    let mock = with(Api::Gemini, |o| o.expect_key = Some(key.to_owned()));
    let body = gemini_body(&[], &[gemini_user("hi")]);
    let bearer = format!("Bearer {key}");
    let accepted: [(&str, Vec<(&str, &str)>); 4] = [
        (GEMINI_STREAM, vec![("Authorization", bearer.as_str())]),
        (GEMINI_STREAM, vec![("x-api-key", key)]),
        (GEMINI_STREAM, vec![("x-goog-api-key", key)]),
        (
            "/v1beta/models/m:streamGenerateContent?alt=sse&key=the-right-key",
            vec![],
        ),
    ];
    for (path, headers) in &accepted {
        let reply = send(mock.port(), "POST", path, headers, &body);
        assert_eq!(reply.status, 200, "{path} {headers:?}");
    }
    for headers in [
        vec![],
        vec![("x-goog-api-key", "wrong")],
        vec![("Authorization", "Bearer wrong")],
    ] {
        let reply = send(mock.port(), "POST", GEMINI_STREAM, &headers, &body);
        assert_eq!(reply.status, 401, "{headers:?}");
        assert_eq!(reply.json()["error"]["status"], "UNAUTHENTICATED");
    }
}

#[test]
fn midstream_sends_a_third_of_the_stream_then_closes() {
    let full = MockLlm::start(Api::Responses, MockOptions::default());
    let cut = with(Api::Responses, |o| o.fail = Fail::Midstream);
    let body = responses_body(&json!([exec_command_tool()]), &[]);
    let whole = post(&full, "/v1/responses", &body).body;
    let reply = post(&cut, "/v1/responses", &body);
    assert_eq!(reply.status, 200);
    assert!(reply.headers.contains("content-type: text/event-stream"));
    assert!(reply.body.starts_with("event: response.created"));
    assert!(
        reply.body.len() < whole.len() / 2,
        "{} of {} bytes",
        reply.body.len(),
        whole.len()
    );
    assert!(!reply.body.contains("response.completed"));

    let cut = with(Api::Anthropic, |o| o.fail = Fail::Midstream);
    let reply = post(
        &cut,
        "/v1/messages",
        &anthropic_body(true, &["Bash"], &[user("hi")]),
    );
    assert_eq!(reply.status, 200);
    assert!(!reply.body.contains("message_stop"));
    assert_eq!(cut.model_calls(), 1);
}

#[test]
fn hang_never_answers_but_blocks_neither_other_requests_nor_drop() {
    let mock = with(Api::Anthropic, |o| o.fail = Fail::Hang);
    let port = mock.port();
    let hung = std::thread::spawn(move || {
        try_send(
            port,
            "POST",
            "/v1/messages",
            &[],
            &anthropic_body(true, &[], &[user("hi")]),
            Duration::from_secs(3),
        )
    });
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let reply = send(port, "GET", "/v1/models", &[], &Value::Null);
    assert_eq!(reply.status, 200);
    let reply = post(&mock, "/v1/messages/count_tokens", &json!({}));
    assert_eq!(reply.status, 200);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(mock.model_calls(), 1);
    let started = Instant::now();
    drop(mock);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "drop took {:?}",
        started.elapsed()
    );
    // The hung request got nothing (a timeout, or the connection closed by
    // the shutdown: either way no HTTP answer).
    match hung.join().unwrap() {
        Ok(reply) => panic!("a hung request was answered: {}", reply.status),
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::UnexpectedEof
            ) || e.to_string().is_empty(),
            "{e:?}"
        ),
    }
}

#[test]
fn unknown_requests_requests_log_and_unreachable() {
    let mock = MockLlm::start(Api::Responses, MockOptions::default());
    let reply = post(&mock, "/v1/telemetry", &json!({"event": "x"}));
    assert_eq!((reply.status, reply.json()), (200, json!({})));
    let reply = send(mock.port(), "GET", "/nothing", &[], &Value::Null);
    assert_eq!(reply.status, 404);
    let reply = send(mock.port(), "GET", "/v1/models", &[], &Value::Null);
    assert_eq!(reply.json()["data"][0]["id"], "mock-model");
    assert_eq!(mock.model_calls(), 0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["method"], "POST");
    assert_eq!(requests[0]["path"], "/v1/telemetry");
    assert_eq!(requests[0]["body"], json!({"event": "x"}));
    assert_eq!(requests[0]["headers"]["content-type"], "application/json");
    assert_eq!(requests[1]["method"], "GET");
    assert_eq!(mock.base_url(), format!("http://127.0.0.1:{}", mock.port()));

    let url = unreachable_base_url();
    let port: u16 = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap()
        .parse()
        .unwrap();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());

    let port = mock.port();
    drop(mock);
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "drop frees the port"
    );
}

#[test]
fn agent_clis_paths_and_pins() {
    assert_eq!(
        VERSIONS,
        [
            ("@openai/codex", "0.169.0"),
            ("@google/gemini-cli", "0.61.0"),
            ("@anthropic-ai/claude-code", "2.1.197")
        ]
    );
    assert!(cli_bin(AgentCli::Codex).starts_with(cache_dir().join("agent-clis/node_modules/.bin")));
}

// ---------------------------------------------------------------------------
// The real CLIs, offline, as agent-clis/e2e.sh runs them.

const PROMPT: &str = "Create a file hello.txt containing hi";

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    hello: Option<String>,
}

fn run_real(cli: AgentCli, mock: &MockLlm) -> Run {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    let tmpdir = tmp.path().join("tmp");
    for dir in [&home, &repo, &tmpdir] {
        std::fs::create_dir_all(dir).unwrap();
    }
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    git(&repo, &["config", "user.name", "t"]);
    std::fs::write(repo.join("README"), "seed\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);

    let base = mock.base_url();
    let mut cmd = Command::new(cli_bin(cli));
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_CLOUD_PROJECT",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", &home)
        .env("TMPDIR", &tmpdir)
        .env("IS_SANDBOX", "1")
        .current_dir(&repo)
        .stdin(Stdio::null());
    match cli {
        AgentCli::Codex => {
            let codex_home = home.join(".codex");
            std::fs::create_dir_all(&codex_home).unwrap();
            std::fs::write(
                codex_home.join("config.toml"),
                format!(
                    "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n\
                     [model_providers.mock]\nname = \"mock\"\nbase_url = \"{base}/v1\"\n\
                     env_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n\
                     request_max_retries = 0\nstream_max_retries = 0\n\
                     stream_idle_timeout_ms = 10000\n"
                ),
            )
            .unwrap();
            cmd.env("CODEX_HOME", &codex_home)
                .env("MOCK_API_KEY", "sk-mock")
                .args([
                    "exec",
                    "--json",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--skip-git-repo-check",
                    "-C",
                ])
                .arg(&repo)
                .arg(PROMPT);
        }
        AgentCli::Gemini => {
            std::fs::create_dir_all(home.join(".gemini")).unwrap();
            std::fs::write(
                home.join(".gemini/settings.json"),
                r#"{ "security": { "auth": { "selectedType": "gemini-api-key" } },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "disableAutoUpdate": true, "disableUpdateNag": true,
               "maxAttempts": 1, "retryFetchErrors": false } }
"#,
            )
            .unwrap();
            cmd.env("GEMINI_API_KEY", "mock-key")
                .env("GOOGLE_GEMINI_BASE_URL", &base)
                .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
                .args([
                    "--yolo",
                    "--skip-trust",
                    "-o",
                    "json",
                    "-m",
                    "gemini-2.5-pro",
                    "-p",
                    PROMPT,
                ]);
        }
        AgentCli::Claude => {
            cmd.env("ANTHROPIC_BASE_URL", &base)
                .env("ANTHROPIC_API_KEY", "sk-ant-mock")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("DISABLE_TELEMETRY", "1")
                .env("DISABLE_ERROR_REPORTING", "1")
                .env("CLAUDE_CODE_MAX_RETRIES", "0")
                .env("API_TIMEOUT_MS", "15000")
                .args([
                    "-p",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--dangerously-skip-permissions",
                    "--model",
                    "claude-sonnet-4-5",
                    PROMPT,
                ]);
        }
    }
    let stdout_path = tmp.path().join("stdout");
    let stderr_path = tmp.path().join("stderr");
    cmd.stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let mut child = cmd.spawn().expect("the CLI starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    Run {
        code,
        stdout: read(&stdout_path),
        stderr: read(&stderr_path),
        hello: std::fs::read_to_string(repo.join("hello.txt")).ok(),
    }
}

/// Run `cli` against a fresh mock and assert it exited 0 having written
/// `hello.txt` = `hi` (as `$(cat hello.txt)` reads it in e2e.sh: codex's
/// `apply_patch` adds a final newline, the shell and write tools do not).
fn assert_edits(cli: AgentCli, api: Api, tool: ToolPref) -> (MockLlm, Run) {
    let mock = with(api, |o| o.tool = tool);
    let run = run_real(cli, &mock);
    assert!(
        run.code == Some(0) && run.hello.as_deref().map(|h| h.trim_end_matches('\n')) == Some("hi"),
        "{cli:?} exit {:?}, hello.txt {:?}, {} requests ({} model calls)\n--- stdout\n{}\n--- stderr\n{}",
        run.code,
        run.hello,
        mock.requests().len(),
        mock.model_calls(),
        run.stdout,
        run.stderr
    );
    assert!(mock.model_calls() >= 2, "a tool call, then the final text");
    assert!(
        run.stdout.contains("Done: created hello.txt"),
        "{}",
        run.stdout
    );
    (mock, run)
}

#[test]
fn real_codex_writes_hello_txt() {
    let (mock, _) = assert_edits(AgentCli::Codex, Api::Responses, ToolPref::Shell);
    let first = mock
        .requests()
        .into_iter()
        .find(|r| r["path"] == "/v1/responses")
        .expect("a model call");
    assert_eq!(first["headers"]["authorization"], "Bearer sk-mock");
}

#[test]
fn real_gemini_writes_hello_txt() {
    let (mock, _) = assert_edits(AgentCli::Gemini, Api::Gemini, ToolPref::Shell);
    assert!(mock.requests().iter().any(|r| {
        r["path"]
            .as_str()
            .unwrap()
            .contains(":streamGenerateContent")
    }));
}

#[test]
fn real_claude_writes_hello_txt() {
    let (mock, _) = assert_edits(AgentCli::Claude, Api::Anthropic, ToolPref::Write);
    assert!(
        mock.requests()
            .iter()
            .any(|r| r["headers"]["x-api-key"] == "sk-ant-mock")
    );
}

#[test]
fn real_clis_write_with_their_other_tool() {
    // codex: the freeform apply_patch tool; gemini: write_file; claude: Bash.
    assert_edits(AgentCli::Codex, Api::Responses, ToolPref::Write);
    assert_edits(AgentCli::Gemini, Api::Gemini, ToolPref::Write);
    assert_edits(AgentCli::Claude, Api::Anthropic, ToolPref::Shell);
}
