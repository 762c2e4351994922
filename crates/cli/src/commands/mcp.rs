//! `wavecrew mcp` (serve this project's MCP server on stdio, see
//! [`crate::mcp`]) and `wavecrew mcp install --claude | --codex | --gemini`:
//! the server's entry written into that client's own MCP configuration for
//! this project (`.mcp.json`, `.codex/config.toml`, `.gemini/settings.json`),
//! other entries and keys kept; when the file cannot be edited, the exact
//! entry to paste is printed instead.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// `wavecrew mcp` arguments.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    /// Register the server with an agent CLI instead of serving.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// The project the server acts on (tools may name it or a folder inside it, nothing else).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

/// `wavecrew mcp …`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Write the server's entry into an agent CLI's MCP configuration for this project.
    Install(InstallArgs),
}

/// `wavecrew mcp install` arguments.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("client").required(true).args(["claude", "codex", "gemini"])))]
pub struct InstallArgs {
    /// Claude Code: the project's `.mcp.json`.
    #[arg(long)]
    pub claude: bool,
    /// Codex: the project's `.codex/config.toml` (codex reads it once the project is trusted).
    #[arg(long)]
    pub codex: bool,
    /// Gemini CLI: the project's `.gemini/settings.json`.
    #[arg(long)]
    pub gemini: bool,
    /// The project folder.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

/// The name the server is registered under.
pub const SERVER_NAME: &str = "wavecrew";

/// Run `wavecrew mcp`.
pub fn run(a: &McpArgs, config: Option<&Path>) -> CmdResult {
    match &a.command {
        Some(McpCommand::Install(i)) => install(i, config),
        None => crate::mcp::serve(&a.root, config.map(Path::to_owned)),
    }
}

/// The command line a client starts the server with: this binary, `mcp`,
/// the project (absolute), and `--config` when given.
fn server_argv(root: &Path, config: Option<&Path>) -> Result<(String, Vec<String>), CliError> {
    let exe = std::env::current_exe().map_err(CliError::internal)?;
    let mut args = Vec::new();
    if let Some(config) = config {
        let config = config.canonicalize().map_err(|e| {
            CliError::bad_input(anyhow::anyhow!("--config {}: {e}", config.display()))
        })?;
        args.extend(["--config".to_owned(), config.display().to_string()]);
    }
    args.extend([
        "mcp".to_owned(),
        "--root".to_owned(),
        root.display().to_string(),
    ]);
    Ok((exe.display().to_string(), args))
}

/// Run `wavecrew mcp install`.
pub fn install(a: &InstallArgs, config: Option<&Path>) -> CmdResult {
    let root = a.root.canonicalize().map_err(|e| {
        CliError::bad_input(anyhow::anyhow!(
            "--root {}: {e}; expected the project folder",
            a.root.display()
        ))
    })?;
    let (command, args) = server_argv(&root, config)?;
    let (file, written) = if a.claude {
        let file = root.join(".mcp.json");
        let entry = json!({"type": "stdio", "command": command, "args": args, "env": {}});
        let written = merge_json(&file, &entry).and_then(|()| {
            // Claude Code asks before it starts a server of a project's
            // .mcp.json; this install is that consent, for this server
            // only, in the project's local (uncommitted) settings.
            let local = root.join(".claude/settings.local.json");
            enable_in_claude(&local).map_err(|r| Refused {
                why: format!("{}: {}", local.display(), r.why),
                paste: r.paste,
            })
        });
        (file, written)
    } else if a.gemini {
        let file = root.join(".gemini/settings.json");
        let entry = json!({"command": command, "args": args, "cwd": root});
        (file.clone(), merge_json(&file, &entry))
    } else {
        let file = root.join(".codex/config.toml");
        (file.clone(), merge_codex(&file, &command, &args))
    };
    match written {
        Ok(()) => {
            output::line(&format!(
                "{}: the MCP server `{SERVER_NAME}` is registered for {}",
                file.display(),
                root.display()
            ));
            if a.gemini {
                output::progress(&format!(
                    "gemini starts a project's servers once you trust the folder (it asks when \
                     it first starts in {})",
                    root.display()
                ));
            }
            if a.codex {
                output::progress(&format!(
                    "codex reads a project's .codex/config.toml once you trust the project (codex \
                     asks when it first starts in {}); or register it for every project with: \
                     codex mcp add {SERVER_NAME} -- {}",
                    root.display(),
                    shown_argv(&command, &args)
                ));
            }
            Ok(Exit::Success)
        }
        Err(Refused { why, paste }) => Err(CliError::bad_input(anyhow::anyhow!(
            "{}: {why}; nothing was written. Paste this entry into it yourself:\n{paste}",
            file.display()
        ))),
    }
}

/// A configuration file that could not be edited, and what to paste.
struct Refused {
    why: String,
    paste: String,
}

/// `command arg…`, each word quoted when it needs to be, for a person to read.
fn shown_argv(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(|w| {
            if w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:".contains(c))
            {
                w.to_owned()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Set `mcpServers.wavecrew` in the JSON file `file` (made when missing),
/// keeping everything else.
fn merge_json(file: &Path, entry: &Value) -> Result<(), Refused> {
    let paste = serde_json::to_string_pretty(&json!({"mcpServers": {SERVER_NAME: entry}}))
        .unwrap_or_default();
    let refuse = |why: String| Refused {
        why,
        paste: paste.clone(),
    };
    let mut doc = read_json_object(file).map_err(&refuse)?;
    let top = doc
        .as_object_mut()
        .expect("read_json_object gives an object");
    let servers = top.entry("mcpServers").or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Err(refuse("field `mcpServers`: expected an object".into()));
    };
    servers.insert(SERVER_NAME.to_owned(), entry.clone());
    write_json(file, &doc).map_err(refuse)
}

/// Add `wavecrew` to `enabledMcpjsonServers` in Claude Code's settings
/// file `file` (made when missing), keeping everything else.
fn enable_in_claude(file: &Path) -> Result<(), Refused> {
    let paste = serde_json::to_string_pretty(&json!({"enabledMcpjsonServers": [SERVER_NAME]}))
        .unwrap_or_default();
    let refuse = |why: String| Refused {
        why,
        paste: paste.clone(),
    };
    let mut doc = read_json_object(file).map_err(&refuse)?;
    let top = doc
        .as_object_mut()
        .expect("read_json_object gives an object");
    let list = top
        .entry("enabledMcpjsonServers")
        .or_insert_with(|| json!([]));
    let Some(list) = list.as_array_mut() else {
        return Err(refuse(
            "field `enabledMcpjsonServers`: expected an array".into(),
        ));
    };
    if !list.iter().any(|v| v == SERVER_NAME) {
        list.push(json!(SERVER_NAME));
    }
    write_json(file, &doc).map_err(refuse)
}

/// The JSON object in `file`: `{}` when it is missing or empty.
fn read_json_object(file: &Path) -> Result<Value, String> {
    let doc: Value = match std::fs::read(file) {
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => json!({}),
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("not valid JSON ({e})"))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(format!("cannot read it ({e})")),
    };
    if doc.is_object() {
        Ok(doc)
    } else {
        Err("expected a JSON object at the top".into())
    }
}

/// Write `doc` to `file`, pretty, atomically.
fn write_json(file: &Path, doc: &Value) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(doc).unwrap_or_default();
    text.push('\n');
    wavecrew_core::fsutil::write_atomic(file, text.as_bytes())
        .map_err(|e| format!("cannot write it ({e})"))
}

/// Set `[mcp_servers.wavecrew]` in codex's TOML file `file` (made when
/// missing), keeping everything else and its comments.
fn merge_codex(file: &Path, command: &str, args: &[String]) -> Result<(), Refused> {
    let mut entry = toml_edit::Table::new();
    entry.insert("command", toml_edit::value(command));
    let mut list = toml_edit::Array::new();
    for a in args {
        list.push(a.as_str());
    }
    entry.insert("args", toml_edit::value(list));
    let paste = {
        let mut d = toml_edit::DocumentMut::new();
        let mut servers = toml_edit::Table::new();
        servers.set_implicit(true);
        servers.insert(SERVER_NAME, toml_edit::Item::Table(entry.clone()));
        d.insert("mcp_servers", toml_edit::Item::Table(servers));
        d.to_string()
    };
    let refuse = |why: String| Refused {
        why,
        paste: paste.clone(),
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(refuse(format!("cannot read it ({e})"))),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| refuse(format!("not valid TOML ({e})")))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| refuse("field `mcp_servers`: expected a table".into()))?;
    servers.insert(SERVER_NAME, toml_edit::Item::Table(entry));
    wavecrew_core::fsutil::write_atomic(file, doc.to_string().as_bytes())
        .map_err(|e| refuse(format!("cannot write it ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_entries_are_merged_and_other_keys_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join(".mcp.json");
        std::fs::write(
            &f,
            r#"{"mcpServers": {"other": {"command": "x"}}, "keep": 1}"#,
        )
        .unwrap();
        merge_json(&f, &json!({"command": "/bin/wavecrew", "args": ["mcp"]}))
            .unwrap_or_else(|r| panic!("{}", r.why));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(v["keep"], 1);
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(v["mcpServers"]["wavecrew"]["args"][0], "mcp");
    }

    #[test]
    fn a_broken_json_file_is_left_alone_and_the_entry_is_given_to_paste() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("settings.json");
        std::fs::write(&f, "{ not json").unwrap();
        let Err(r) = merge_json(&f, &json!({"command": "w"})) else {
            panic!("a broken file was edited")
        };
        assert!(r.why.contains("not valid JSON"), "{}", r.why);
        assert!(r.paste.contains("\"mcpServers\""), "{}", r.paste);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "{ not json");
    }

    #[test]
    fn claude_settings_enable_the_server_once_and_keep_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join(".claude/settings.local.json");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, r#"{"enabledMcpjsonServers": ["other"], "model": "x"}"#).unwrap();
        for _ in 0..2 {
            enable_in_claude(&f).unwrap_or_else(|r| panic!("{}", r.why));
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(v["enabledMcpjsonServers"], json!(["other", "wavecrew"]));
        assert_eq!(v["model"], "x");
    }

    #[test]
    fn codex_toml_keeps_its_comments() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("config.toml");
        std::fs::write(
            &f,
            "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
        )
        .unwrap();
        merge_codex(
            &f,
            "/bin/wavecrew",
            &["mcp".into(), "--root".into(), "/p".into()],
        )
        .unwrap_or_else(|r| panic!("{}", r.why));
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.starts_with("# mine\nmodel = \"o3\""), "{text}");
        let v: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(v["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(
            v["mcp_servers"]["wavecrew"]["command"].as_str(),
            Some("/bin/wavecrew")
        );
        assert_eq!(v["mcp_servers"]["wavecrew"]["args"][2].as_str(), Some("/p"));
    }
}
