//! `wavecrew msg <op>`: the team message bus, with the flags and outputs of
//! `ccw team <op>` (ccw-compat §3.7), so scripts written against `ccw team …
//! --json` keep working. The E1 flags `--team` and `--ref` are accepted too.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use wavecrew_core::{ListFilter, NewMessage};
use wavecrew_msgbus::{Bus, BusError, Durability, KeyUse, existing_sessions, render};

use crate::exit::{CliError, CmdResult, Exit};
use crate::output;

/// The operation of `wavecrew msg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MsgOp {
    /// Append a record (`--from` required).
    Log,
    /// Append a record to `all`.
    Broadcast,
    /// Show one record (`--id`).
    Read,
    /// Show the newest records (`--from`/`--to`/`--type` filters, `--last` 1–100).
    List,
    /// Show every member's counts and last action.
    Status,
    /// Remove one record (`--id`); other lines are kept and ids never reused.
    Delete,
    /// Remove every record; meta.json stays unless `--all`.
    Clear,
    /// Show `role_state` (one role with `--role`).
    #[value(name = "get-state", alias = "get_state")]
    GetState,
    /// Print records as they are appended (stop with Ctrl-C or `--count`).
    Follow,
}

/// `wavecrew msg <op> [flags]`
#[derive(Debug, Args)]
pub struct MsgArgs {
    /// The operation.
    pub op: MsgOp,
    /// The session id (the folder name under `.workflow/.team/`); a session
    /// path is reduced to its folder name.
    #[arg(long = "session-id", alias = "team", value_name = "ID")]
    pub session_id: Option<String>,
    /// The sender role.
    #[arg(long)]
    pub from: Option<String>,
    /// The recipient role (default `coordinator`).
    #[arg(long)]
    pub to: Option<String>,
    /// The message type (default `message`).
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
    /// One line for people (default `[<from>] <type> → <to>`; prefixed with
    /// `[<from>]` when it lacks the tag).
    #[arg(long)]
    pub summary: Option<String>,
    /// The payload: a JSON object.
    #[arg(long)]
    pub data: Option<String>,
    /// A reference (stored as `data.ref`).
    #[arg(long = "ref", value_name = "PATH")]
    pub reference: Option<String>,
    /// A message id (`MSG-NNN`) for `read` and `delete`.
    #[arg(long)]
    pub id: Option<String>,
    /// How many records `list` shows (1–100, default 20).
    #[arg(long)]
    pub last: Option<i64>,
    /// The role for `get-state`.
    #[arg(long)]
    pub role: Option<String>,
    /// Print ccw's result object as JSON.
    #[arg(long)]
    pub json: bool,
    /// The project root (default: `$CCW_PROJECT_ROOT`, else the current folder).
    #[arg(long, env = "CCW_PROJECT_ROOT", value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// `clear`: also remove meta.json (role_state).
    #[arg(long)]
    pub all: bool,
    /// `log`: create the session's bus even when the key looks like a team name.
    #[arg(long)]
    pub create: bool,
    /// `follow`: start at this byte offset of the log (default: the start).
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// `follow`: stop after this many records.
    #[arg(long)]
    pub count: Option<usize>,
    /// How appends reach the disk: none, batch or every (fdatasync per record).
    #[arg(long, default_value = "none", value_parser = parse_durability)]
    pub durability: Durability,
}

fn parse_durability(s: &str) -> Result<Durability, String> {
    s.parse()
}

fn bus_error(e: BusError) -> CliError {
    if e.is_bad_input() {
        CliError::bad_input(e)
    } else {
        CliError::internal(e)
    }
}

/// Run `wavecrew msg`.
pub fn run(args: &MsgArgs) -> CmdResult {
    let Some(key) = args.session_id.as_deref() else {
        return Err(CliError::bad_input(anyhow::anyhow!(
            "--session-id is required"
        )));
    };
    let root = match &args.root {
        Some(r) => r.clone(),
        None => std::env::current_dir().map_err(CliError::internal)?,
    };
    let usage = match args.op {
        MsgOp::Log | MsgOp::Broadcast => KeyUse::Write,
        _ => KeyUse::Read,
    };
    let (bus, warning) = Bus::open(&root, key, usage, args.durability).map_err(bus_error)?;
    if let Some(w) = warning {
        output::warning(&w);
    }
    if usage == KeyUse::Write && !args.create && !bus.paths().session_dir().is_dir() {
        refuse_team_name(&bus, key)?;
    }
    match args.op {
        MsgOp::Log | MsgOp::Broadcast => log(&bus, args),
        MsgOp::Read => read(&bus, args),
        MsgOp::List => list(&bus, args),
        MsgOp::Status => status(&bus, args),
        MsgOp::Delete => delete(&bus, args),
        MsgOp::Clear => clear(&bus, args),
        MsgOp::GetState => get_state(&bus, args),
        MsgOp::Follow => follow(&bus, args),
    }
}

/// ccw session ids always end in a date (`TC-<slug>-<date>`); a key for a
/// new bus with no digit at all is a team name (`planex`, `roadmap-dev`),
/// the mistake that created orphan buses in ccw (§3.2). `--create` overrides.
fn refuse_team_name(bus: &Bus, key: &str) -> Result<(), CliError> {
    if bus.key().bytes().any(|b| b.is_ascii_digit()) {
        return Ok(());
    }
    let team_dir = bus.paths().team_dir();
    Err(bus_error(BusError::TeamName {
        key: key.to_owned(),
        existing: existing_sessions(&team_dir),
        root: team_dir,
    }))
}

fn print(args: &MsgArgs, value: &Value, human: &str) {
    if args.json {
        output::json(value);
    } else {
        output::line(human);
    }
}

fn log(bus: &Bus, args: &MsgArgs) -> CmdResult {
    let Some(from) = args.from.clone() else {
        return Err(bus_error(BusError::InvalidParams(
            "\"from\" is required for log".into(),
        )));
    };
    let data = match &args.data {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Some(m),
            Ok(other) => {
                return Err(bus_error(BusError::InvalidParams(format!(
                    "data: expected a JSON object, got {}",
                    json_kind(&other)
                ))));
            }
            Err(e) => {
                return Err(CliError::bad_input(anyhow::anyhow!(
                    "--data must be valid JSON: {e}"
                )));
            }
        },
    };
    let tag = format!("[{from}]");
    let summary = args.summary.as_ref().map(|s| {
        if s.starts_with(&tag) {
            s.clone()
        } else {
            format!("{tag} {s}")
        }
    });
    let message = NewMessage {
        from,
        to: args.to.clone(),
        kind: args.kind.clone(),
        summary,
        data,
        reference: args.reference.clone(),
    };
    let record = if args.op == MsgOp::Broadcast {
        bus.broadcast(message)
    } else {
        bus.log(message)
    }
    .map_err(bus_error)?;
    let message = render::logged(&record);
    print(
        args,
        &json!({"id": record.id, "message": message}),
        &format!("✓ {message}"),
    );
    Ok(Exit::Success)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn required_id(args: &MsgArgs, op: &str) -> Result<String, CliError> {
    args.id.clone().ok_or_else(|| {
        bus_error(BusError::InvalidParams(format!(
            "\"id\" is required for {op}"
        )))
    })
}

fn read(bus: &Bus, args: &MsgArgs) -> CmdResult {
    let id = required_id(args, "read")?;
    let r = bus.read(&id).map_err(bus_error)?;
    if args.json {
        output::json(&serde_json::to_value(&r).map_err(CliError::internal)?);
        return Ok(Exit::Success);
    }
    output::line(&format!("{} [{}]", r.id, r.ts));
    output::line(&format!("{} → {} ({})", r.from, r.to, r.kind));
    output::line(&r.summary);
    if let Some(reference) = r.reference() {
        output::line(&format!("ref: {reference}"));
    }
    if let Some(data) = &r.data {
        output::line(&format!(
            "data: {}",
            serde_json::to_string_pretty(data).unwrap_or_default()
        ));
    }
    Ok(Exit::Success)
}

fn list(bus: &Bus, args: &MsgArgs) -> CmdResult {
    let last = match args.last {
        None => 20,
        Some(n) => usize::try_from(n).unwrap_or(0),
    };
    let filter = ListFilter {
        from: args.from.clone(),
        to: args.to.clone(),
        kind: args.kind.clone(),
        last,
    };
    let result = bus.list(&filter).map_err(bus_error)?;
    if args.json {
        output::json(&render::list_json(&result));
    } else {
        output::line(&format!(
            "Showing {} of {} messages",
            result.messages.len(),
            result.total
        ));
        for r in &result.messages {
            output::line(&render::list_line(r));
        }
    }
    Ok(Exit::Success)
}

fn status(bus: &Bus, args: &MsgArgs) -> CmdResult {
    let s = bus.status().map_err(bus_error)?;
    if args.json {
        output::json(&render::status_json(&s));
    } else if s.total_messages == 0 {
        output::line("No messages recorded yet.");
    } else {
        output::line(&format!("Total messages: {}", s.total_messages));
        for m in &s.members {
            output::line(&render::status_line(m));
        }
    }
    Ok(Exit::Success)
}

fn delete(bus: &Bus, args: &MsgArgs) -> CmdResult {
    let id = required_id(args, "delete")?;
    let removed = bus.delete(&id).map_err(bus_error)?;
    let message = format!("Deleted {}", removed.id);
    print(
        args,
        &json!({"deleted": removed.id, "message": message}),
        &format!("✓ {message}"),
    );
    Ok(Exit::Success)
}

fn clear(bus: &Bus, args: &MsgArgs) -> CmdResult {
    let n = bus.clear(args.all).map_err(bus_error)?;
    let message = if n == 0 {
        format!("Team \"{}\" has no messages to clear", bus.key())
    } else {
        format!("Cleared {n} messages for team \"{}\"", bus.key())
    };
    print(
        args,
        &json!({"cleared": n, "message": message}),
        &format!("✓ {message}"),
    );
    Ok(Exit::Success)
}

fn get_state(bus: &Bus, args: &MsgArgs) -> CmdResult {
    let state = bus.get_state(args.role.as_deref()).map_err(bus_error)?;
    match (&args.role, state) {
        (Some(role), Some(state)) => print(
            args,
            &json!({"role": role, "state": state}),
            &format!(
                "Role: {role}\n{}",
                serde_json::to_string_pretty(&state).unwrap_or_default()
            ),
        ),
        (Some(role), None) => {
            let message = format!("No state found for role \"{role}\"");
            print(
                args,
                &json!({"role": role, "state": null, "message": message}),
                &message,
            );
        }
        (None, state) => {
            let role_state = state.unwrap_or_else(|| Value::Object(Map::new()));
            print(
                args,
                &json!({"role_state": role_state}),
                &serde_json::to_string_pretty(&role_state).unwrap_or_default(),
            );
        }
    }
    Ok(Exit::Success)
}

fn follow(bus: &Bus, args: &MsgArgs) -> CmdResult {
    // `enable_all`: Ctrl-C handling needs the IO driver, polling the timer.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::internal)?;
    let mut follower = bus.follow(args.offset);
    runtime.block_on(async {
        let mut seen = 0;
        while args.count.is_none_or(|c| seen < c) {
            let record = tokio::select! {
                r = follower.next() => r.map_err(bus_error)?,
                _ = tokio::signal::ctrl_c() => return Ok(Exit::Interrupted),
            };
            if args.json {
                output::line(&serde_json::to_string(&record).map_err(CliError::internal)?);
            } else {
                output::line(&render::list_line(&record));
            }
            seen += 1;
        }
        Ok(Exit::Success)
    })
}
