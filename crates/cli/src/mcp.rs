//! `wavecrew mcp`: a stdio MCP server (the official Rust SDK, `rmcp`) whose
//! tools are thin calls of what the command line does, so both stay one
//! behaviour: `plan` is `wavecrew plan waves --json` on a task file's text,
//! `start` is `wavecrew run <file>` started detached, `status` is
//! `wavecrew status --json`, `review`, `cancel` and `retry` are `wavecrew
//! approve|reject|cancel|retry`, `logs` reads a task's last attempt. Its
//! resources are the sessions' reports (`summary.md`, `junit.xml`).
//!
//! The boundary: the server acts on the project it was started for (its
//! `--root`, default the folder it started in) and on folders inside it,
//! never elsewhere; a task file that comes through MCP is checked as a
//! task file is, role files it names must be inside the project, and
//! nothing it carries reaches a shell (a run is `wavecrew run` spawned with
//! argv). It never approves on its own: `review` relays a person's decision.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router,
};
use serde::Deserialize;
use serde_json::{Value, json};
use wavecrew_core::{SessionId, TaskId};

use crate::exit::{CliError, Exit};

/// Where a task file sent as text is written for its run, under the project.
pub const MCP_DIR: &str = ".workflow/mcp";

/// How many lines of output `logs` gives when the client names none.
const DEFAULT_LOG_LINES: usize = 40;

/// The reports a session offers as resources: (file name, MIME type).
const REPORTS: [(&str, &str); 2] = [
    ("summary.md", "text/markdown"),
    ("junit.xml", "application/xml"),
];

/// `plan` and `start` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TaskFileParams {
    /// The task file: its TOML text (`goal = …`, `[[tasks]]` …), or the path of a `.toml`
    /// task file inside the project.
    pub task_file: String,
    /// The project folder: the server's folder (default) or one inside it.
    #[serde(default)]
    pub project: Option<String>,
}

/// `status` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SessionParams {
    /// The session id (`start` returns it).
    pub session: String,
    /// The project folder: the server's folder (default) or one inside it.
    #[serde(default)]
    pub project: Option<String>,
}

/// `cancel` and `retry` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TaskParams {
    /// The session id.
    pub session: String,
    /// The task id.
    pub task: String,
    /// The project folder: the server's folder (default) or one inside it.
    #[serde(default)]
    pub project: Option<String>,
}

/// A person's decision on a task that awaits review.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Land the work.
    Approve,
    /// Send it back for one revision, with a note.
    Reject,
}

/// `review` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ReviewParams {
    /// The session id.
    pub session: String,
    /// The task that awaits review.
    pub task: String,
    /// The person's decision: `approve` or `reject`.
    pub decision: Decision,
    /// For `reject`: what to change (required then).
    #[serde(default)]
    pub note: Option<String>,
    /// For `reject`: comments on lines of the task's diff, `FILE:LINE:TEXT` each.
    #[serde(default)]
    pub comments: Option<Vec<String>>,
    /// The project folder: the server's folder (default) or one inside it.
    #[serde(default)]
    pub project: Option<String>,
}

/// `logs` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct LogsParams {
    /// The session id.
    pub session: String,
    /// The task id.
    pub task: String,
    /// How many of the last lines of each output (default 40).
    #[serde(default)]
    pub lines: Option<usize>,
    /// The project folder: the server's folder (default) or one inside it.
    #[serde(default)]
    pub project: Option<String>,
}

/// The MCP server of one project.
#[derive(Clone)]
pub struct Server {
    /// The project folder it was started for (canonical).
    start: PathBuf,
    /// `--config` of `wavecrew mcp`, handed to the runs it starts.
    config: Option<PathBuf>,
    /// The `wavecrew` binary the runs are started with.
    exe: PathBuf,
    /// The runs this server started, by session folder.
    runs: Arc<Mutex<HashMap<PathBuf, StartedRun>>>,
    tool_router: ToolRouter<Server>,
}

/// A `wavecrew run` this server started.
#[derive(Clone)]
struct StartedRun {
    pid: u32,
    log: PathBuf,
    /// Set by its reaper when it ended.
    end: Arc<Mutex<RunEnd>>,
}

/// Where a started run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunEnd {
    /// Still going.
    Running,
    /// It exited with this code (None: killed by a signal).
    Exited(Option<i32>),
}

impl StartedRun {
    fn end(&self) -> RunEnd {
        *self
            .end
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn running(&self) -> bool {
        self.end() == RunEnd::Running
    }

    /// What `status` adds about it: `{pid, running, exit_code, log}`.
    fn describe(&self) -> Value {
        let end = self.end();
        let code = match end {
            RunEnd::Running => None,
            RunEnd::Exited(code) => code,
        };
        json!({
            "pid": self.pid,
            "running": end == RunEnd::Running,
            "exit_code": code,
            "log": self.log,
        })
    }
}

/// A tool's outcome: the JSON as structured content and as text; a
/// refusal is a tool error carrying `{"error": …, "exit_code": …}`.
fn result(outcome: Result<Value, CliError>) -> CallToolResult {
    match outcome {
        Ok(v) => CallToolResult::structured(v),
        Err(e) => {
            let e = e.classify();
            CallToolResult::structured_error(json!({
                "error": e.to_string(),
                "exit_code": e.exit as u8,
            }))
        }
    }
}

fn bad(msg: String) -> CliError {
    CliError::bad_input(anyhow::anyhow!(msg))
}

/// Run `f` (file I/O, a child to spawn) off the async threads.
async fn blocking<F>(f: F) -> CallToolResult
where
    F: FnOnce() -> Result<Value, CliError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(outcome) => result(outcome),
        Err(e) => result(Err(CliError::internal(anyhow::anyhow!(
            "the tool stopped: {e}"
        )))),
    }
}

impl Server {
    /// A server for the project `start` (which must exist); runs get
    /// `--config config` when given.
    pub fn new(start: &Path, config: Option<PathBuf>) -> Result<Server, CliError> {
        let start = start.canonicalize().map_err(|e| {
            bad(format!(
                "--root {}: {e}; expected an existing project folder",
                start.display()
            ))
        })?;
        let exe = std::env::current_exe().map_err(CliError::internal)?;
        Ok(Server {
            start,
            config,
            exe,
            runs: Arc::default(),
            tool_router: Self::tool_router(),
        })
    }

    /// The project a call names: the server's folder, or a folder inside it.
    pub fn project(&self, given: Option<&str>) -> Result<PathBuf, CliError> {
        resolve_project(&self.start, given)
    }

    fn session_dir(&self, project: Option<&str>, session: &str) -> Result<PathBuf, CliError> {
        let root = self.project(project)?;
        session_folder(&root, session)
    }

    /// `start`: check, write (when sent as text), make or find the
    /// session, then start `wavecrew run` on it detached.
    fn start_run(&self, p: &TaskFileParams) -> Result<Value, CliError> {
        let root = self.project(p.project.as_deref())?;
        let intake = Intake::read(&root, &p.task_file)?;
        let checked = match intake.refused_roles() {
            Some(refused) => refused,
            None => crate::commands::plan::explain_task_text(&intake.text, &intake.path, &root)?,
        };
        if checked["ok"] != true {
            return Err(bad(format!(
                "the task file is not valid; nothing was started:\n{}",
                problems_text(&checked)
            )));
        }
        let plan = wavecrew_taskfile::plan(&intake.text, &intake.path, &root)
            .map_err(CliError::bad_input)?;
        let session = plan.session_id.as_str().to_owned();
        let existed = plan.dir().is_dir();
        if existed && !plan.matches_existing(&plan.dir()) {
            // Refused before the text is written over the file its
            // session was made from.
            return Err(CliError::bad_input(
                wavecrew_taskfile::TaskFileError::SessionExists { dir: plan.dir() },
            ));
        }
        let file = if intake.sent_as_text {
            let file = root.join(MCP_DIR).join(format!("{session}.tasks.toml"));
            wavecrew_core::fsutil::write_atomic(&file, intake.text.as_bytes())
                .map_err(CliError::internal)?;
            file
        } else {
            intake.path.clone()
        };
        let dir = crate::commands::tasks::session_for_run(&file, &root)?;
        let dir = dir.canonicalize().map_err(CliError::internal)?;
        let log = root.join(MCP_DIR).join(format!("{session}.run.log"));
        let mut runs = self
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(run) = runs.get(&dir).filter(|r| r.running()) {
            let pid = run.pid;
            return Ok(json!({
                "session": session, "folder": dir, "task_file": file, "pid": pid,
                "log": log, "started": false, "running": true,
                "message": format!("{session} runs already (pid {pid}); follow it with `status`"),
            }));
        }
        let mut args: Vec<String> = Vec::new();
        if let Some(config) = &self.config {
            args.push("--config".into());
            args.push(config.display().to_string());
        }
        args.extend([
            "run".to_owned(),
            file.display().to_string(),
            "--root".to_owned(),
            root.display().to_string(),
        ]);
        let child = wavecrew_sys::process::spawn_logged(
            &self.exe,
            &args,
            &log,
            wavecrew_sys::process::LoggedSpawn {
                new_group: true,
                kill_on_drop: false,
            },
        )
        .map_err(CliError::internal)?;
        let pid = child.id().unwrap_or_default();
        let run = StartedRun {
            pid,
            log: log.clone(),
            end: Arc::new(Mutex::new(RunEnd::Running)),
        };
        runs.insert(dir.clone(), run.clone());
        // Reaped when it ends, its exit kept for `status`; the run outlives
        // this server.
        let mut child = child;
        tokio::runtime::Handle::current().spawn(async move {
            let code = child.wait().await.ok().and_then(|s| s.code());
            *run.end
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = RunEnd::Exited(code);
        });
        tracing::info!(session, pid, "run started");
        Ok(json!({
            "session": session, "folder": dir, "task_file": file, "pid": pid, "log": log,
            "started": true, "resumed": existed,
            "message": format!(
                "{session} {} in the background (pid {pid}); follow it with `status`",
                if existed { "resumes" } else { "runs" }
            ),
        }))
    }

    fn act(
        &self,
        session: &str,
        project: Option<&str>,
        action: &wavecrew_cockpit::Action,
    ) -> Result<Value, CliError> {
        let dir = self.session_dir(project, session)?;
        let done = crate::commands::control::apply(&dir, action)?;
        serde_json::to_value(done).map_err(CliError::internal)
    }
}

#[tool_router]
impl Server {
    /// `plan`: the task file checked as `wavecrew plan` checks it.
    #[tool(
        description = "Check a wavecrew task file (TOML text, or a .toml path inside the project) \
                       exactly as `wavecrew plan` does, without running anything: `ok: false` with \
                       the errors by line and field, or `ok: true` with the waves, the critical path \
                       and the session id it would make."
    )]
    async fn plan(&self, Parameters(p): Parameters<TaskFileParams>) -> CallToolResult {
        let server = self.clone();
        blocking(move || {
            let root = server.project(p.project.as_deref())?;
            let intake = Intake::read(&root, &p.task_file)?;
            if let Some(problems) = intake.refused_roles() {
                return Ok(problems);
            }
            crate::commands::plan::explain_task_text(&intake.text, &intake.path, &root)
        })
        .await
    }

    /// `start`: make the session and run it detached.
    #[tool(
        description = "Make the session of a task file (TOML text, or a .toml path inside the \
                       project) and start its run in the background, as `wavecrew run <file>` does; \
                       returns at once with `session` (its id) and `folder`. Starting the same task \
                       file again resumes its session. Follow it with `status`."
    )]
    async fn start(&self, Parameters(p): Parameters<TaskFileParams>) -> CallToolResult {
        let server = self.clone();
        let handle = tokio::runtime::Handle::current();
        blocking(move || {
            let _guard = handle.enter();
            server.start_run(&p)
        })
        .await
    }

    /// `status`: what `wavecrew status --json` says.
    #[tool(
        description = "A session's progress, as `wavecrew status --json` prints it: its status, \
                       tasks by state, waves, running attempts, critical path, last records; and \
                       `run` {pid, running, exit_code, log} when this server started its run."
    )]
    async fn status(&self, Parameters(p): Parameters<SessionParams>) -> CallToolResult {
        let server = self.clone();
        blocking(move || {
            let dir = server.session_dir(p.project.as_deref(), &p.session)?;
            let mut v =
                crate::commands::report::status_value(&dir, crate::commands::report::DEFAULT_LAST)?;
            // Beside what the CLI says: the run this server started, if any.
            let run = server
                .runs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&dir)
                .map(StartedRun::describe);
            if let (Some(run), Value::Object(map)) = (run, &mut v) {
                map.insert("run".into(), run);
            }
            Ok(v)
        })
        .await
    }

    /// `review`: a person's decision, relayed.
    #[tool(
        description = "Relay a person's review of a task that awaits it (`review = \"human\"`): \
                       `approve` lands its work (as `wavecrew approve`), `reject` sends it back for \
                       one revision with `note` and optional `comments` (`FILE:LINE:TEXT`), as \
                       `wavecrew reject`. Only relay what the person decided."
    )]
    async fn review(&self, Parameters(p): Parameters<ReviewParams>) -> CallToolResult {
        let server = self.clone();
        blocking(move || {
            let action = match p.decision {
                Decision::Approve => crate::commands::control::action("approve", Some(&p.task))?,
                Decision::Reject => crate::commands::control::rejection(
                    &p.task,
                    p.note.as_deref(),
                    p.comments.as_deref().unwrap_or_default(),
                )?,
            };
            server.act(&p.session, p.project.as_deref(), &action)
        })
        .await
    }

    /// `cancel`: as `wavecrew cancel`.
    #[tool(
        description = "Cancel a running task, as `wavecrew cancel`: its worker and what it started \
                       are stopped, the task is recorded failed."
    )]
    async fn cancel(&self, Parameters(p): Parameters<TaskParams>) -> CallToolResult {
        let server = self.clone();
        blocking(move || {
            let action = crate::commands::control::action("cancel", Some(&p.task))?;
            server.act(&p.session, p.project.as_deref(), &action)
        })
        .await
    }

    /// `retry`: as `wavecrew retry`.
    #[tool(
        description = "Retry a failed, blocked or cancelled task (and the tasks skipped because of \
                       it), as `wavecrew retry`. A run that ended must be started again (`start`) \
                       for the retried tasks to run."
    )]
    async fn retry(&self, Parameters(p): Parameters<TaskParams>) -> CallToolResult {
        let server = self.clone();
        blocking(move || {
            let action = crate::commands::control::action("retry", Some(&p.task))?;
            server.act(&p.session, p.project.as_deref(), &action)
        })
        .await
    }

    /// `logs`: the end of a task's agent output and its evidence.
    #[tool(
        description = "The end of a task's agent output (its last attempt's stream and stderr, \
                       `lines` lines each, default 40) and its evidence: the task's state and \
                       result, the attempt's outcome, the end of the worker's log."
    )]
    async fn logs(&self, Parameters(p): Parameters<LogsParams>) -> CallToolResult {
        let server = self.clone();
        blocking(move || {
            let dir = server.session_dir(p.project.as_deref(), &p.session)?;
            let id = TaskId::new(&p.task).map_err(|e| bad(format!("task {:?}: {e}", p.task)))?;
            wavecrew_cockpit::view::task_logs(&dir, &id, p.lines.unwrap_or(DEFAULT_LOG_LINES))
                .ok_or_else(|| {
                    bad(format!(
                        "{}: no task {} in this session",
                        dir.display(),
                        p.task
                    ))
                })
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("wavecrew", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "wavecrew runs task graphs of coding agents in this project. `plan` checks a task \
             file, `start` runs it in the background, `status` follows it, `logs` shows a task's \
             output; `review` relays a person's approve/reject of a task awaiting review. Never \
             approve on your own. A task file is TOML: `goal = \"…\"`, then `[[tasks]]` tables \
             with `title`, optional `id`, `description`, `depends_on = [ids]`, `files`, \
             `acceptance = [\"text\" or { criterion = \"…\", verify = [\"program\", \"arg\"] }]` \
             (argv, never a shell string), `review = \"human\"`. Tasks of the default developer \
             role have ids `IMPL-…` (leave `id` out and they are made); other ids need a role \
             of your own (`[roles.<name>]` with `prefix` and `instructions`).",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let team = self.start.join(".workflow/.team");
        let mut sessions: Vec<String> = std::fs::read_dir(&team)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                    .filter(|n| SessionId::new(n.as_str()).is_ok())
                    .collect()
            })
            .unwrap_or_default();
        sessions.sort();
        let mut resources = Vec::new();
        for id in sessions {
            for (name, mime) in REPORTS {
                if team.join(&id).join("reports").join(name).is_file() {
                    resources.push(
                        Resource::new(report_uri(&id, name), format!("{id} {name}"))
                            .with_mime_type(mime)
                            .with_description(format!("the {name} report of session {id}")),
                    );
                }
            }
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let (id, name) = parse_report_uri(&uri).ok_or_else(|| {
            McpError::resource_not_found(
                format!(
                    "{uri}: not a report of this server; expected \
                     wavecrew://sessions/<session id>/reports/<summary.md | junit.xml>"
                ),
                None,
            )
        })?;
        let mime = REPORTS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m);
        let path = self
            .start
            .join(".workflow/.team")
            .join(id.as_str())
            .join("reports")
            .join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            McpError::resource_not_found(
                format!("{uri}: cannot read {}: {e}", path.display()),
                None,
            )
        })?;
        let contents = match ResourceContents::text(text, uri) {
            ResourceContents::TextResourceContents {
                uri, text, meta, ..
            } => ResourceContents::TextResourceContents {
                uri,
                mime_type: mime.map(str::to_owned),
                text,
                meta,
            },
            other => other,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// `wavecrew://sessions/<id>/reports/<name>`.
pub fn report_uri(session: &str, name: &str) -> String {
    format!("wavecrew://sessions/{session}/reports/{name}")
}

/// The session id and report name of a report URI, when it is one.
fn parse_report_uri(uri: &str) -> Option<(SessionId, &'static str)> {
    let rest = uri.strip_prefix("wavecrew://sessions/")?;
    let (id, name) = rest.split_once("/reports/")?;
    let id = SessionId::new(id).ok()?;
    let name = REPORTS.iter().find(|(n, _)| *n == name)?.0;
    Some((id, name))
}

/// The project `given` names, resolved against `start` (the server's
/// folder): `start` itself when None, else a folder inside it; anything
/// else is refused, naming both.
pub fn resolve_project(start: &Path, given: Option<&str>) -> Result<PathBuf, CliError> {
    let Some(given) = given.filter(|g| !g.trim().is_empty()) else {
        return Ok(start.to_owned());
    };
    let joined = start.join(given);
    let resolved = joined.canonicalize().map_err(|e| {
        bad(format!(
            "project {given:?}: {e}; expected this server's folder ({}) or a folder inside it",
            start.display()
        ))
    })?;
    if !resolved.starts_with(start) || !resolved.is_dir() {
        return Err(bad(format!(
            "project {given:?} ({}) is outside the folder this server was started for ({}): \
             it acts on that project only",
            resolved.display(),
            start.display()
        )));
    }
    Ok(resolved)
}

/// The folder of session `session` (an id, checked) in `root`.
pub fn session_folder(root: &Path, session: &str) -> Result<PathBuf, CliError> {
    let id = SessionId::new(session).map_err(|e| {
        bad(format!(
            "session {session:?}: {e}; expected a session id such as `start` returns"
        ))
    })?;
    let dir = root.join(".workflow/.team").join(id.as_str());
    crate::commands::report::session_dir(&dir)
}

/// A task file as a call gives it: its text, and the path that names it
/// (the file itself, or `task_file` under the project for text).
struct Intake {
    text: String,
    path: PathBuf,
    sent_as_text: bool,
}

impl Intake {
    fn read(root: &Path, task_file: &str) -> Result<Intake, CliError> {
        let looks_like_path = !task_file.contains('\n')
            && Path::new(task_file.trim())
                .extension()
                .is_some_and(|e| e == "toml");
        if !looks_like_path {
            return Ok(Intake {
                text: task_file.to_owned(),
                path: PathBuf::from("task_file"),
                sent_as_text: true,
            });
        }
        let given = task_file.trim();
        // An absolute path is taken when it is inside the project (checked
        // below, links resolved); a relative one must not climb out.
        let path = if Path::new(given).is_absolute() {
            PathBuf::from(given)
        } else {
            wavecrew_sys::path::ProjectPath::parse(given)
                .map_err(|e| bad(format!("task_file: {e}")))?
                .under(root)
        };
        let canonical = path
            .canonicalize()
            .map_err(|e| bad(format!("task_file {given:?}: {e}")))?;
        if !canonical.starts_with(root) {
            return Err(bad(format!(
                "task_file {given:?} is outside the project ({}): refused",
                root.display()
            )));
        }
        let text = std::fs::read_to_string(&canonical)
            .map_err(|e| bad(format!("task_file {given:?}: {e}")))?;
        Ok(Intake {
            text,
            path: canonical,
            sent_as_text: false,
        })
    }

    /// Role files (`[roles.x] file = …`) must be inside the project; a
    /// task file sent as text names none (it has no folder). The refusals,
    /// in `plan`'s shape, or None when there is none.
    fn refused_roles(&self) -> Option<Value> {
        let Ok(file) = wavecrew_taskfile::parse(&self.text, &self.path) else {
            // The check itself reports it, by line and field.
            return None;
        };
        let mut errors = Vec::new();
        for (name, def) in &file.roles {
            let Some(rel) = &def.file else { continue };
            let field = format!("roles.{}.file", name.get_ref());
            if self.sent_as_text {
                errors.push(json!({
                    "field": field,
                    "message": "a task file sent as text cannot name role files: give the \
                                instructions inline (`instructions = \"\"\"…\"\"\"`) or send the \
                                path of a task file inside the project",
                }));
            } else if let Err(e) = wavecrew_sys::path::ProjectPath::parse(rel) {
                errors.push(json!({"field": field, "message": e.to_string()}));
            }
        }
        (!errors.is_empty()).then(|| json!({"ok": false, "file": self.path, "errors": errors}))
    }
}

/// The errors of a `plan` result, one line each.
fn problems_text(checked: &Value) -> String {
    checked["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let at = e["line"]
                        .as_u64()
                        .map(|l| format!("line {l}: "))
                        .unwrap_or_default();
                    format!(
                        "{at}field `{}`: {}",
                        e["field"].as_str().unwrap_or("(file)"),
                        e["message"].as_str().unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Serve on stdin/stdout until the client closes it.
pub fn serve(start: &Path, config: Option<PathBuf>) -> Result<Exit, CliError> {
    let server = Server::new(start, config)?;
    // stdout is the protocol's: nothing else may be written there.
    crate::output::lines_to_stderr();
    let rt = crate::runtime::runtime()?;
    rt.block_on(async move {
        let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| {
            CliError::internal(anyhow::anyhow!("the MCP session did not start: {e}"))
        })?;
        running
            .waiting()
            .await
            .map_err(|e| CliError::internal(anyhow::anyhow!("the MCP server stopped: {e}")))?;
        Ok::<_, CliError>(())
    })?;
    // The runs it started go on: they are their own process groups.
    rt.shutdown_background();
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_outside_the_start_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let start = tmp.path().join("proj");
        std::fs::create_dir_all(start.join("sub")).unwrap();
        std::fs::create_dir_all(tmp.path().join("other")).unwrap();
        let start = start.canonicalize().unwrap();
        assert_eq!(resolve_project(&start, None).unwrap(), start);
        assert_eq!(
            resolve_project(&start, Some("sub")).unwrap(),
            start.join("sub")
        );
        let abs = start.join("sub").display().to_string();
        assert_eq!(
            resolve_project(&start, Some(&abs)).unwrap(),
            start.join("sub")
        );
        for outside in ["..", "../other", "/", "sub/../.."] {
            let e = resolve_project(&start, Some(outside))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("outside the folder this server was started for"),
                "{outside}: {e}"
            );
        }
        let e = resolve_project(&start, Some("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("project \"missing\""), "{e}");
    }

    #[test]
    fn a_task_file_path_must_be_inside_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("t.toml"), "goal = \"g\"\n").unwrap();
        std::fs::write(tmp.path().join("out.toml"), "goal = \"x\"\n").unwrap();
        let inside = Intake::read(&root, "t.toml").unwrap();
        assert!(!inside.sent_as_text);
        let abs = root.join("t.toml").display().to_string();
        assert_eq!(Intake::read(&root, &abs).unwrap().path, root.join("t.toml"));
        for outside in [
            "../out.toml".to_owned(),
            tmp.path().join("out.toml").display().to_string(),
        ] {
            let Err(e) = Intake::read(&root, &outside) else {
                panic!("{outside} was read")
            };
            assert!(e.to_string().contains("task_file"), "{e}");
        }
        // A link out of the project is refused too.
        std::os::unix::fs::symlink(tmp.path().join("out.toml"), root.join("l.toml")).unwrap();
        let Err(e) = Intake::read(&root, "l.toml") else {
            panic!("a link out was followed")
        };
        assert!(e.to_string().contains("outside the project"), "{e}");
        // Text is text.
        assert!(
            Intake::read(&root, "goal = \"g\"\n[[tasks]]\ntitle = \"t\"\n")
                .unwrap()
                .sent_as_text
        );
    }

    #[test]
    fn session_ids_that_are_paths_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        for bad_id in ["../x", "a/b", "..", ""] {
            let e = session_folder(tmp.path(), bad_id).unwrap_err().to_string();
            assert!(e.contains("session"), "{bad_id}: {e}");
        }
    }

    #[test]
    fn report_uris_name_a_session_and_a_known_report() {
        let (id, name) = parse_report_uri(&report_uri("TC-x-2026", "junit.xml")).unwrap();
        assert_eq!((id.as_str(), name), ("TC-x-2026", "junit.xml"));
        assert!(parse_report_uri("wavecrew://sessions/../reports/summary.md").is_none());
        assert!(parse_report_uri("wavecrew://sessions/TC-x/reports/../../etc").is_none());
        assert!(parse_report_uri("file:///etc/passwd").is_none());
    }

    #[test]
    fn role_files_outside_the_project_or_in_text_are_refused() {
        let text = "goal = \"g\"\n[roles.x]\nfile = \"../../etc/passwd\"\n[[tasks]]\ntitle = \"t\"\nrole = \"x\"\n";
        let sent = Intake {
            text: text.into(),
            path: "task_file".into(),
            sent_as_text: true,
        };
        let v = sent.refused_roles().unwrap();
        assert_eq!(v["errors"][0]["field"], "roles.x.file");
        let on_disk = Intake {
            text: text.into(),
            path: "/p/wavecrew.tasks.toml".into(),
            sent_as_text: false,
        };
        let v = on_disk.refused_roles().unwrap();
        assert!(
            v["errors"][0]["message"].as_str().unwrap().contains(".."),
            "{v}"
        );
        let fine = Intake {
            text: text.replace("../../etc/passwd", "roles/x.md"),
            path: "/p/wavecrew.tasks.toml".into(),
            sent_as_text: false,
        };
        assert!(fine.refused_roles().is_none());
    }
}
