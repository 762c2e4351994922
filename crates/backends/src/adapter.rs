//! Per-CLI argv: what each agent CLI needs for a mode, a model, extra
//! folders and native resume, as of the versions in `agent-clis.md`.
//!
//! Everything is argv: the prompt goes to stdin (written, then closed) or
//! into exactly one argv element, never through a shell. Placeholders of a
//! `command` template are substituted inside single elements and never
//! re-split, so a prompt full of quotes, `$(…)` and newlines arrives as it
//! was written.
//!
//! | kind | write | analysis | review | prompt | resume |
//! |---|---|---|---|---|---|
//! | codex | `exec --json --dangerously-bypass-approvals-and-sandbox` (or `-s workspace-write`) | `exec --json -s read-only` | `exec review --uncommitted --json` | stdin (`-`) | `exec resume <id>` |
//! | claude | `-p --output-format stream-json --verbose --permission-mode bypassPermissions` (`IS_SANDBOX=1` as root) | `--permission-mode plan` | `--permission-mode plan` + review prompt | stdin | `--resume <id>` |
//! | gemini, qwen | `-o stream-json --approval-mode yolo --skip-trust` | `--approval-mode plan` | as analysis + review prompt | `--prompt=<text>` | `--resume <id>` |
//! | opencode | `run --format json` | same | same | last argv element | `--session <id>` |

use std::collections::BTreeMap;
use std::path::PathBuf;

use wavecrew_core::{AttemptRequest, Mode};

use crate::config::{Kind, PromptChannel, ResolvedBackend};
use crate::events::StreamFormat;
pub use crate::placeholders::{PLACEHOLDERS, check_placeholders};
use crate::supervise::{Spawn, StdinInput};

/// Substitute placeholders inside one argv element. Values are inserted
/// verbatim; the element stays one element.
pub fn substitute(element: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(element.len());
    let mut rest = element;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if values.contains_key(&after[..close]) => {
                out.push_str(&values[&after[..close]]);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A ready-to-run invocation.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The process.
    pub spawn: Spawn,
    /// The stream format to parse, if the CLI prints one.
    pub format: Option<StreamFormat>,
    /// The prompt file written for `prompt = "file"`.
    pub prompt_file: Option<PathBuf>,
}

/// The program a backend runs.
pub fn program_of(backend: &ResolvedBackend) -> Option<String> {
    if let Some(p) = &backend.spec.program {
        return Some(p.clone());
    }
    if backend.kind == Kind::Command {
        return backend.spec.argv.first().cloned();
    }
    if backend.kind == Kind::Scripted {
        return Some(scripted_agent_program().0);
    }
    backend.kind.default_program().map(str::to_owned)
}

/// `wavecrew-scripted-agent` (see [`wavecrew_core::programs`]): the
/// program and its leading arguments.
pub fn scripted_agent_program() -> (String, Vec<String>) {
    let (p, args) = wavecrew_core::programs::wavecrew_program("wavecrew-scripted-agent");
    (p.to_string_lossy().into_owned(), args)
}

fn running_as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Build the invocation of one attempt.
pub fn build(backend: &ResolvedBackend, request: &AttemptRequest) -> Invocation {
    let spec = &backend.spec;
    let program = program_of(backend).unwrap_or_default();
    let prompt = request.prompt.clone();
    let mut env: BTreeMap<String, String> = spec.env.clone();
    let mut args: Vec<String> = Vec::new();
    let mut stdin = StdinInput::Null;
    let mut prompt_file = None;
    let mut format = backend.kind.stream_format();
    let model = spec.model.clone();
    let resume = request.resume_session.clone();
    let mut program = PathBuf::from(program);

    match backend.kind {
        Kind::Codex => {
            args.push("exec".into());
            match (&resume, request.mode) {
                (Some(id), _) => {
                    args.push("resume".into());
                    args.push(id.clone());
                }
                (None, Mode::Review) => {
                    args.push("review".into());
                    args.push("--uncommitted".into());
                }
                _ => {}
            }
            args.push("--json".into());
            match request.mode {
                Mode::Write => match spec.sandbox.as_deref() {
                    None | Some("danger-full-access") => {
                        args.push("--dangerously-bypass-approvals-and-sandbox".into());
                    }
                    Some(other) => {
                        args.push("-s".into());
                        args.push(other.into());
                    }
                },
                Mode::Analysis if resume.is_none() => {
                    args.push("-s".into());
                    args.push("read-only".into());
                }
                Mode::Analysis | Mode::Review => {}
            }
            args.push("--skip-git-repo-check".into());
            if resume.is_none() && request.mode != Mode::Review {
                args.push("-C".into());
                args.push(request.cwd.to_string_lossy().into_owned());
            }
            if let Some(m) = &model {
                args.push("-m".into());
                args.push(m.clone());
            }
            if resume.is_none() {
                for d in &spec.add_dirs {
                    args.push("--add-dir".into());
                    args.push(d.clone());
                }
            }
            args.extend(spec.args.iter().cloned());
            if request.mode == Mode::Review && resume.is_none() {
                // `exec review --uncommitted` reviews the work tree; a
                // prompt would be dropped (ccw-compat §5.1).
            } else {
                args.push("-".into());
                stdin = StdinInput::Bytes(prompt.into_bytes());
            }
        }
        Kind::Claude => {
            args.push("-p".into());
            args.extend(["--output-format", "stream-json", "--verbose"].map(String::from));
            let mode = match request.mode {
                Mode::Write => spec
                    .permission_mode
                    .clone()
                    .unwrap_or_else(|| "bypassPermissions".into()),
                Mode::Analysis | Mode::Review => "plan".into(),
            };
            if mode == "bypassPermissions" && running_as_root() {
                // claude refuses to bypass permissions as root otherwise
                // (agent-clis.md §0.5).
                env.entry("IS_SANDBOX".into()).or_insert_with(|| "1".into());
            }
            args.push("--permission-mode".into());
            args.push(mode);
            if let Some(id) = &resume {
                args.push("--resume".into());
                args.push(id.clone());
            }
            if let Some(m) = &model {
                args.push("--model".into());
                args.push(m.clone());
            }
            for d in &spec.add_dirs {
                args.push("--add-dir".into());
                args.push(d.clone());
            }
            args.extend(spec.args.iter().cloned());
            stdin = StdinInput::Bytes(prompt.into_bytes());
        }
        Kind::Gemini | Kind::Qwen => {
            args.extend(["-o", "stream-json"].map(String::from));
            args.push("--approval-mode".into());
            args.push(if request.mode == Mode::Write {
                "yolo".into()
            } else {
                "plan".into()
            });
            if backend.kind == Kind::Gemini {
                args.push("--skip-trust".into());
                env.entry("GEMINI_CLI_TRUST_WORKSPACE".into())
                    .or_insert_with(|| "true".into());
                env.entry("GEMINI_CLI_NO_RELAUNCH".into())
                    .or_insert_with(|| "true".into());
            }
            if let Some(id) = &resume {
                args.push("--resume".into());
                args.push(id.clone());
            }
            if let Some(m) = &model {
                args.push("-m".into());
                args.push(m.clone());
            }
            if !spec.add_dirs.is_empty() {
                args.push(format!("--include-directories={}", spec.add_dirs.join(",")));
            }
            args.extend(spec.args.iter().cloned());
            // `--prompt=<text>` is one element: a prompt starting with `-`
            // is never read as a flag.
            args.push(format!("--prompt={prompt}"));
        }
        Kind::Opencode => {
            args.push("run".into());
            if let Some(id) = &resume {
                args.push("--session".into());
                args.push(id.clone());
            }
            if let Some(m) = &model {
                args.push("--model".into());
                args.push(m.clone());
            }
            args.extend(["--format", "json"].map(String::from));
            args.extend(spec.args.iter().cloned());
            args.push("--".into());
            args.push(prompt);
        }
        Kind::Scripted => {
            if spec.program.is_none() {
                args.extend(scripted_agent_program().1);
            }
            let fmt = spec.format.unwrap_or(crate::config::StreamSetting::Claude);
            format = fmt.format();
            args.push("--script".into());
            args.push(spec.script.clone().unwrap_or_default());
            args.push("--format".into());
            args.push(
                match fmt {
                    crate::config::StreamSetting::None => "plain",
                    crate::config::StreamSetting::Codex => "codex",
                    crate::config::StreamSetting::Gemini => "gemini",
                    crate::config::StreamSetting::Claude => "claude",
                }
                .into(),
            );
            args.push("--task".into());
            args.push(request.task_id.clone());
            if let Some(id) = &resume {
                args.push("--resume".into());
                args.push(id.clone());
            }
            args.extend(spec.args.iter().cloned());
            stdin = StdinInput::Bytes(prompt.into_bytes());
        }
        Kind::Command => {
            format = spec.stream.format();
            let file = request.attempt_dir.join("prompt.txt");
            let mut values: BTreeMap<&str, String> = BTreeMap::new();
            values.insert("task_id", request.task_id.clone());
            values.insert("cwd", request.cwd.to_string_lossy().into_owned());
            values.insert("mode", mode_name(request.mode).into());
            values.insert("model", model.clone().unwrap_or_default());
            values.insert(
                "attempt_dir",
                request.attempt_dir.to_string_lossy().into_owned(),
            );
            values.insert("session_id", resume.clone().unwrap_or_default());
            values.insert("prompt_file", file.to_string_lossy().into_owned());
            match spec.prompt {
                PromptChannel::Stdin => stdin = StdinInput::Bytes(prompt.clone().into_bytes()),
                PromptChannel::Arg => {}
                PromptChannel::File => prompt_file = Some(file),
            }
            values.insert("prompt", prompt);
            let mut elements = spec.argv.iter().map(|e| substitute(e, &values));
            let first = elements.next().unwrap_or_default();
            if spec.program.is_none() {
                program = PathBuf::from(first);
            } else {
                args.push(first);
            }
            args.extend(elements);
            args.extend(spec.args.iter().map(|e| substitute(e, &values)));
        }
    }

    let mut spawn = Spawn {
        program,
        args,
        cwd: request.cwd.clone(),
        env,
        env_remove: vec!["CLAUDECODE".into()],
        stdin,
        leak_timeout: crate::supervise::DEFAULT_LEAK_TIMEOUT,
        writable: None,
        hidden: Vec::new(),
        required: false,
        network: crate::supervise::AgentNetwork::Open,
    };
    spawn.env.extend(request.env.clone());
    Invocation {
        spawn,
        format,
        prompt_file,
    }
}

/// The stable name of a mode.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Write => "write",
        Mode::Analysis => "analysis",
        Mode::Review => "review",
    }
}

/// Whether a backend kind can resume its own sessions.
pub fn supports_resume(kind: Kind) -> bool {
    !matches!(kind, Kind::Command)
}

/// `KEY=VALUE` lines (blank lines and `#` comments skipped, optional
/// `export `, surrounding quotes removed).
pub fn parse_env_file(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
                .unwrap_or(v);
            out.insert(k.trim().to_owned(), v.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_stay_inside_one_element() {
        let mut v = BTreeMap::new();
        v.insert("prompt", "a b; $(touch x) \"q\"\n-rf".to_owned());
        v.insert("task_id", "IMPL-1".to_owned());
        assert_eq!(
            substitute("--p={prompt}", &v),
            "--p=a b; $(touch x) \"q\"\n-rf"
        );
        assert_eq!(substitute("{task_id}{nope}", &v), "IMPL-1{nope}");
        assert_eq!(check_placeholders("{task_id}-{oops}"), Err("oops".into()));
        assert!(check_placeholders("{\"json\": 1}").is_ok());
    }

    #[test]
    fn env_files() {
        let m = parse_env_file("# c\nexport A=1\nB=\"two words\"\n\nC='x'\n");
        assert_eq!(m["A"], "1");
        assert_eq!(m["B"], "two words");
        assert_eq!(m["C"], "x");
    }
}
