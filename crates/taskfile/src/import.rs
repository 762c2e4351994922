//! Task lists people already keep, turned into a task file: Task Master's
//! `tasks.json` (tasks, subtasks, dependencies, details, test strategy) and
//! maestro-flow's plan tasks (`outputs/tasks/TASK-NNN.json`: `deps` or
//! `depends_on`, `convergence_criteria` or `convergence.criteria`,
//! `verify` or `convergence.verification`, `test.commands`).
//!
//! Ids and dependencies are kept. A verification becomes an acceptance
//! command only where it is one (a single line naming a program, without
//! shell syntax: wavecrew runs argv, never a shell), else a criterion in
//! words. What cannot be carried over is listed in [`Imported::dropped`]
//! and in the file's header. The result is checked as a task file before
//! it is returned.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use wavecrew_core::TaskId;

/// Where an imported list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Task Master's `tasks.json` (`.taskmaster/tasks/tasks.json`).
    TaskMaster,
    /// maestro-flow's plan tasks (`outputs/tasks/TASK-NNN.json`).
    MaestroFlow,
}

impl Format {
    /// The role its tasks get in the task file: (name, id prefix).
    fn role(self) -> (&'static str, &'static str) {
        match self {
            Format::TaskMaster => ("taskmaster", "TM"),
            Format::MaestroFlow => ("maestro", "TASK"),
        }
    }

    /// The name people know it by.
    pub fn name(self) -> &'static str {
        match self {
            Format::TaskMaster => "Task Master",
            Format::MaestroFlow => "maestro-flow",
        }
    }
}

/// An imported task list.
#[derive(Debug, Clone)]
pub struct Imported {
    /// What it was.
    pub format: Format,
    /// The task file's text (checked: it plans).
    pub text: String,
    /// How many tasks it has.
    pub tasks: usize,
    /// What could not be carried over, one line each.
    pub dropped: Vec<String>,
}

/// A list that could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file or folder could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("`{}`: not valid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Where and why.
        #[source]
        source: serde_json::Error,
    },
    /// A field is missing or of the wrong kind.
    #[error("`{}`: field `{field}`: {message}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field path (`master.tasks[2].id`).
        field: String,
        /// What was expected.
        message: String,
    },
    /// Neither a Task Master nor a maestro-flow file.
    #[error(
        "`{}`: not a task list wavecrew imports: expected Task Master's tasks.json (`tasks` \
         or `<tag>.tasks`, an array) or maestro-flow's plan tasks (a folder of TASK-NNN.json, or \
         one of them)",
        path.display()
    )]
    Unknown {
        /// The input.
        path: PathBuf,
    },
    /// The tasks imported do not make a valid task file (a cycle, …).
    #[error("`{}`: the imported tasks do not make a valid task file:\n{source}", path.display())]
    Invalid {
        /// The input.
        path: PathBuf,
        /// The task file's check.
        #[source]
        source: Box<crate::TaskFileError>,
    },
}

/// The task file's shape, as written.
#[derive(Serialize)]
struct OutFile {
    goal: String,
    roles: BTreeMap<&'static str, OutRole>,
    tasks: Vec<OutTask>,
}

/// The role imported tasks are taken by: the built-in developer's
/// instructions under a name of its own, so that the tasks keep their ids
/// (the built-in developer takes `IMPL-*` ids only).
#[derive(Serialize)]
struct OutRole {
    prefix: &'static str,
    responsibility: &'static str,
    instructions: &'static str,
}

impl OutFile {
    fn new(goal: String, format: Format, tasks: Vec<OutTask>) -> OutFile {
        let developer = crate::roles::built_in("developer").expect("developer is built in");
        let (name, prefix) = format.role();
        OutFile {
            goal,
            roles: BTreeMap::from([(
                name,
                OutRole {
                    prefix,
                    responsibility: developer.responsibility,
                    instructions: developer.instructions,
                },
            )]),
            tasks: tasks
                .into_iter()
                .map(|t| OutTask {
                    role: Some(name),
                    ..t
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct OutTask {
    id: String,
    title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    files: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    acceptance: Vec<OutCriterion>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum OutCriterion {
    Text(String),
    Command {
        criterion: String,
        verify: Vec<String>,
    },
}

/// Programs a verification line may start with to be taken as a command.
const PROGRAMS: &[&str] = &[
    "bun",
    "cargo",
    "deno",
    "dotnet",
    "eslint",
    "go",
    "gradle",
    "jest",
    "just",
    "make",
    "mvn",
    "mypy",
    "node",
    "npm",
    "npx",
    "pnpm",
    "pytest",
    "python",
    "python3",
    "ruff",
    "test",
    "tsc",
    "uv",
    "vitest",
    "yarn",
    "./gradlew",
    "./mvnw",
];

/// `line` as an argv when it is a command wavecrew can run without a
/// shell: one line, starting with a known program (in backticks or not),
/// no shell syntax (pipes, `&&`, redirections, variables, globs).
pub fn as_command(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    // "`npm test` exits 0": the command is what exits 0.
    let line = [" exits 0", " exits with 0", " passes", " succeeds"]
        .iter()
        .find_map(|s| line.strip_suffix(s))
        .unwrap_or(line)
        .trim();
    let line = line
        .strip_prefix('`')
        .and_then(|l| l.strip_suffix('`'))
        .unwrap_or(line)
        .trim();
    if line.is_empty() || line.contains('\n') {
        return None;
    }
    if line.chars().any(|c| {
        matches!(
            c,
            '|' | '&' | ';' | '<' | '>' | '$' | '`' | '*' | '?' | '(' | ')'
        )
    }) {
        return None;
    }
    let words = shell_words::split(line).ok()?;
    let first = words.first()?;
    PROGRAMS.contains(&first.as_str()).then_some(words)
}

/// The acceptance criterion a verification line becomes.
fn criterion_of(line: &str) -> OutCriterion {
    match as_command(line) {
        Some(argv) => OutCriterion::Command {
            criterion: format!("`{}` exits 0", argv.join(" ")),
            verify: argv,
        },
        None => OutCriterion::Text(line.trim().to_owned()),
    }
}

/// Import the task list at `path` (a Task Master `tasks.json`; a
/// maestro-flow `TASK-NNN.json` or its folder). `tag` picks a Task Master
/// tag (default `master`, else the only one).
pub fn import(path: &Path, tag: Option<&str>) -> Result<Imported, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    let (format, out, dropped) = if meta.is_dir() {
        maestro(path, &maestro_files(path)?)?
    } else {
        let value = read_json(path)?;
        if is_maestro_task(&value) {
            let dir = path.parent().unwrap_or(Path::new("."));
            // One of a plan's TASK-NNN.json stands for its folder.
            let named_as_plan_task = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("TASK-"));
            if named_as_plan_task {
                maestro(dir, &maestro_files(dir)?)?
            } else {
                maestro(dir, &[path.to_owned()])?
            }
        } else if let Some((tasks, goal, dropped)) = task_master_tasks(path, &value, tag)? {
            let (out, more) = task_master(path, tasks, goal)?;
            (
                Format::TaskMaster,
                out,
                dropped.into_iter().chain(more).collect(),
            )
        } else {
            return Err(ImportError::Unknown {
                path: path.to_owned(),
            });
        }
    };
    finish(path, format, &out, dropped)
}

fn read_json(path: &Path) -> Result<Value, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| ImportError::Json {
        path: path.to_owned(),
        source,
    })
}

/// The task file's text, with a header naming the source and what was
/// left behind; checked.
fn finish(
    path: &Path,
    format: Format,
    out: &OutFile,
    dropped: Vec<String>,
) -> Result<Imported, ImportError> {
    let body = toml::to_string_pretty(out).map_err(|e| ImportError::Field {
        path: path.to_owned(),
        field: "(file)".into(),
        message: format!("cannot be written as TOML: {e}"),
    })?;
    let mut text = format!(
        "# Imported by `wavecrew import` from {} ({}).\n",
        path.display(),
        format.name()
    );
    if dropped.is_empty() {
        text.push_str("# Everything was carried over.\n");
    } else {
        text.push_str("# Not carried over:\n");
        for d in &dropped {
            let _ = writeln!(text, "# - {}", d.replace('\n', " "));
        }
    }
    text.push('\n');
    text.push_str(&body);
    crate::plan(&text, Path::new(crate::TASK_FILE), Path::new(".")).map_err(|e| {
        ImportError::Invalid {
            path: path.to_owned(),
            source: Box::new(e),
        }
    })?;
    Ok(Imported {
        format,
        text,
        tasks: out.tasks.len(),
        dropped,
    })
}

fn field_err(path: &Path, field: String, message: &str) -> ImportError {
    ImportError::Field {
        path: path.to_owned(),
        field,
        message: message.to_owned(),
    }
}

/// A Task Master id (a number, or a string) as text.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Task Master's tasks: `{"tasks": […]}` (before tags) or
/// `{"<tag>": {"tasks": […], "metadata": {…}}}`. None when it is neither.
#[allow(clippy::type_complexity)]
fn task_master_tasks<'a>(
    path: &Path,
    value: &'a Value,
    tag: Option<&str>,
) -> Result<Option<(&'a [Value], Option<String>, Vec<String>)>, ImportError> {
    let Some(top) = value.as_object() else {
        return Ok(None);
    };
    if let Some(tasks) = top.get("tasks") {
        let tasks = tasks
            .as_array()
            .ok_or_else(|| field_err(path, "tasks".into(), "expected an array of tasks"))?;
        let goal = value
            .pointer("/metadata/projectName")
            .and_then(Value::as_str)
            .map(str::to_owned);
        return Ok(Some((tasks, goal, Vec::new())));
    }
    let tags: Vec<&String> = top
        .iter()
        .filter(|(_, v)| v.get("tasks").is_some_and(Value::is_array))
        .map(|(k, _)| k)
        .collect();
    if tags.is_empty() {
        return Ok(None);
    }
    let chosen = match tag {
        Some(t) => top.get_key_value(t).map(|(k, _)| k).ok_or_else(|| {
            field_err(
                path,
                t.to_owned(),
                &format!(
                    "no such tag; the file has {}",
                    tags.iter()
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?,
        None if top.contains_key("master") => {
            top.get_key_value("master").map_or(tags[0], |(k, _)| k)
        }
        None if tags.len() == 1 => tags[0],
        None => {
            return Err(field_err(
                path,
                "(file)".into(),
                &format!(
                    "several tags and no `master`: choose one with --tag ({})",
                    tags.iter()
                        .map(|t| t.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    };
    let dropped: Vec<String> = tags
        .iter()
        .filter(|t| **t != chosen)
        .map(|t| format!("the tasks of tag `{t}` (import them with --tag {t})"))
        .collect();
    let tasks = top[chosen.as_str()]["tasks"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let goal = top[chosen.as_str()]
        .pointer("/metadata/description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Some((tasks, goal, dropped)))
}

fn task_master(
    path: &Path,
    tasks: &[Value],
    goal: Option<String>,
) -> Result<(OutFile, Vec<String>), ImportError> {
    let mut dropped = Vec::new();
    let mut out = Vec::new();
    let mut done = 0usize;
    let mut fields_left: BTreeSet<&str> = BTreeSet::new();
    // Every id first, to drop dependencies on tasks that are not there.
    let mut known: BTreeSet<String> = BTreeSet::new();
    for (i, t) in tasks.iter().enumerate() {
        let id = t.get("id").and_then(id_text).ok_or_else(|| {
            field_err(
                path,
                format!("tasks[{i}].id"),
                "expected a number or a string",
            )
        })?;
        for s in t
            .get("subtasks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(sid) = s.get("id").and_then(id_text) {
                known.insert(format!("{id}.{sid}"));
            }
        }
        known.insert(id);
    }
    for (i, t) in tasks.iter().enumerate() {
        let id = t.get("id").and_then(id_text).expect("checked above");
        check_id(path, &format!("tasks[{i}].id"), &id)?;
        let title = str_of(t, "title")
            .ok_or_else(|| field_err(path, format!("tasks[{i}].title"), "expected a string"))?;
        if t.get("status").and_then(Value::as_str) == Some("done") {
            done += 1;
        }
        for k in ["priority", "status"] {
            if t.get(k).is_some() {
                fields_left.insert(k);
            }
        }
        let mut deps = Vec::new();
        for d in t
            .get("dependencies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match id_text(d) {
                Some(d) if known.contains(&d) => deps.push(d),
                Some(d) => dropped.push(format!("task {id}: dependency on {d}, not in the list")),
                None => dropped.push(format!("task {id}: a dependency that is not an id ({d})")),
            }
        }
        let mut acceptance = listed_criteria(t);
        if let Some(ts) = str_of(t, "testStrategy") {
            acceptance.push(criterion_of(ts));
        }
        let subtasks = t
            .get("subtasks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut sub_ids = Vec::new();
        for (j, s) in subtasks.iter().enumerate() {
            let field = format!("tasks[{i}].subtasks[{j}]");
            let sid = s.get("id").and_then(id_text).ok_or_else(|| {
                field_err(path, format!("{field}.id"), "expected a number or a string")
            })?;
            let full = format!("{id}.{sid}");
            check_id(path, &format!("{field}.id"), &full)?;
            if s.get("status").and_then(Value::as_str) == Some("done") {
                done += 1;
            }
            let stitle = str_of(s, "title")
                .ok_or_else(|| field_err(path, format!("{field}.title"), "expected a string"))?;
            let mut sdeps = Vec::new();
            for d in s
                .get("dependencies")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                // A sibling by its number (`2`) or by its full id (`1.2`);
                // a top-level task by its full id when it is one.
                let d = match d {
                    Value::Number(n) => format!("{id}.{n}"),
                    other => id_text(other).unwrap_or_default(),
                };
                if known.contains(&d) && d != full {
                    sdeps.push(d);
                } else {
                    dropped.push(format!(
                        "subtask {full}: dependency on {d:?}, not in the list"
                    ));
                }
            }
            // The subtasks do the parent's work: they wait for what it waits for.
            if sdeps.is_empty() {
                sdeps.clone_from(&deps);
            }
            let mut sacc = listed_criteria(s);
            if let Some(ts) = str_of(s, "testStrategy") {
                sacc.push(criterion_of(ts));
            }
            out.push(OutTask {
                id: full.clone(),
                title: stitle.to_owned(),
                role: None,
                description: description(&[
                    (None, str_of(s, "description")),
                    (Some("Details"), str_of(s, "details")),
                    (Some("Part of"), Some(&format!("task {id}: {title}"))),
                ]),
                depends_on: sdeps,
                files: Vec::new(),
                acceptance: sacc,
            });
            sub_ids.push(full);
        }
        // A parent with subtasks is done when they are: it waits for them
        // and checks the whole.
        deps.extend(sub_ids.iter().cloned());
        let what = if sub_ids.is_empty() {
            None
        } else {
            Some(format!(
                "Bring together and check the work of its subtasks ({}).",
                sub_ids.join(", ")
            ))
        };
        out.push(OutTask {
            id: id.clone(),
            title: title.to_owned(),
            role: None,
            description: description(&[
                (None, str_of(t, "description")),
                (Some("Details"), str_of(t, "details")),
                (None, what.as_deref()),
            ]),
            depends_on: dedup(deps),
            files: Vec::new(),
            acceptance: dedup_criteria(acceptance),
        });
    }
    if done > 0 {
        dropped.push(format!(
            "the state of {done} task(s) marked done: a task file has no state, they are to do again \
             (remove them, and the dependencies on them, to skip them)"
        ));
    }
    if !fields_left.is_empty() {
        dropped.push(format!(
            "fields wavecrew has no place for: {}",
            fields_left.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let goal = goal.unwrap_or_else(|| format!("The Task Master tasks of {}", project_name(path)));
    Ok((OutFile::new(goal, Format::TaskMaster, out), dropped))
}

/// A task's `acceptanceCriteria`: a list of strings, or one text whose
/// `- ` lines are the criteria (the whole text when it has none).
fn listed_criteria(t: &Value) -> Vec<OutCriterion> {
    let lines: Vec<String> = match t.get("acceptanceCriteria") {
        Some(Value::String(text)) => {
            let items: Vec<String> = text
                .lines()
                .filter_map(|l| l.trim().strip_prefix("- ").map(|i| i.trim().to_owned()))
                .filter(|i| !i.is_empty())
                .collect();
            if items.is_empty() && !text.trim().is_empty() {
                vec![text.trim().to_owned()]
            } else {
                items
            }
        }
        other => strings(other),
    };
    lines.iter().map(|l| criterion_of(l)).collect()
}

/// The name of the project a task list belongs to: the first folder
/// above it that is not Task Master's or maestro-flow's own.
fn project_name(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    absolute
        .ancestors()
        .skip(1)
        .filter_map(|a| a.file_name().and_then(|n| n.to_str()))
        .find(|n| !matches!(*n, "tasks" | ".taskmaster" | "outputs" | ".task"))
        .unwrap_or("this project")
        .to_owned()
}

fn check_id(path: &Path, field: &str, id: &str) -> Result<(), ImportError> {
    TaskId::new(id).map(|_| ()).map_err(|e| {
        field_err(
            path,
            field.to_owned(),
            &format!("{id:?} cannot be a task id: {e}"),
        )
    })
}

/// Criteria without repeats (the same words, or the same command).
fn dedup_criteria(v: Vec<OutCriterion>) -> Vec<OutCriterion> {
    let mut seen = BTreeSet::new();
    v.into_iter()
        .filter(|c| {
            seen.insert(match c {
                OutCriterion::Text(t) => t.clone(),
                OutCriterion::Command { verify, .. } => verify.join("\u{0}"),
            })
        })
        .collect()
}

/// `1. a`, `2. b`, one a line.
fn numbered(steps: &[String]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {s}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    v.into_iter().filter(|d| seen.insert(d.clone())).collect()
}

/// Paragraphs, each with its heading when it has one.
fn description(parts: &[(Option<&str>, Option<&str>)]) -> Option<String> {
    let text: Vec<String> = parts
        .iter()
        .filter_map(|(head, body)| {
            let body = (*body)?.trim();
            (!body.is_empty()).then(|| match head {
                Some(h) => format!("{h}:\n{body}"),
                None => body.to_owned(),
            })
        })
        .collect();
    (!text.is_empty()).then(|| text.join("\n\n"))
}

/// Whether `v` is one maestro-flow plan task.
fn is_maestro_task(v: &Value) -> bool {
    let kind = v.pointer("/_meta/kind").and_then(Value::as_str);
    kind == Some("plan-task")
        || (v
            .get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| id.starts_with("TASK-"))
            && (v.get("convergence").is_some()
                || v.get("convergence_criteria").is_some()
                || v.get("deps").is_some()
                || v.get("depends_on").is_some()))
}

/// The `TASK-*.json` files of a maestro-flow plan's task folder, sorted.
fn maestro_files(dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let rd = std::fs::read_dir(dir).map_err(|source| ImportError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("TASK-"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ImportError::Unknown {
            path: dir.to_owned(),
        });
    }
    Ok(files)
}

/// Strings of `v[key]`: an array of strings, or one string.
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_owned()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| match x {
                Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
                Value::Object(o) => o
                    .get("path")
                    .or_else(|| o.get("command"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn maestro(dir: &Path, files: &[PathBuf]) -> Result<(Format, OutFile, Vec<String>), ImportError> {
    let mut dropped = Vec::new();
    let mut tasks = Vec::new();
    let mut values = Vec::new();
    for f in files {
        values.push((f.clone(), read_json(f)?));
    }
    let known: BTreeSet<String> = values
        .iter()
        .filter_map(|(_, v)| str_of(v, "id").map(str::to_owned))
        .collect();
    let mut fields_left: BTreeMap<&str, usize> = BTreeMap::new();
    for (f, v) in &values {
        let id = str_of(v, "id")
            .ok_or_else(|| field_err(f, "id".into(), "expected a string (`TASK-001`)"))?;
        check_id(f, "id", id)?;
        let title =
            str_of(v, "title").ok_or_else(|| field_err(f, "title".into(), "expected a string"))?;
        let mut deps = Vec::new();
        let raw_deps = v.get("deps").or_else(|| v.get("depends_on"));
        for d in strings(raw_deps) {
            if known.contains(&d) {
                deps.push(d);
            } else {
                dropped.push(format!(
                    "{id}: dependency on {d}, not among the plan's tasks"
                ));
            }
        }
        let mut acceptance: Vec<OutCriterion> = Vec::new();
        let criteria = strings(
            v.get("convergence_criteria")
                .or_else(|| v.pointer("/convergence/criteria")),
        );
        acceptance.extend(criteria.iter().map(|c| criterion_of(c)));
        let mut verify = strings(v.get("verify"));
        verify.extend(strings(v.pointer("/convergence/verification")));
        verify.extend(strings(v.pointer("/test/commands")));
        for line in verify {
            // One verification may be several lines: each is judged alone.
            for l in line.lines().filter(|l| !l.trim().is_empty()) {
                let c = criterion_of(l);
                if let OutCriterion::Text(t) = &c
                    && as_command(t).is_none()
                    && looks_like_shell(t)
                {
                    dropped.push(format!(
                        "{id}: the verification {t:?} needs a shell; kept as a criterion in words"
                    ));
                }
                acceptance.push(c);
            }
        }
        let mut files_out = Vec::new();
        for p in strings(v.get("files")) {
            if p.starts_with('/') || p.split('/').any(|s| s == "..") || p.contains('{') {
                dropped.push(format!(
                    "{id}: the file {p:?} (not a path inside the project)"
                ));
            } else {
                files_out.push(p);
            }
        }
        let steps = strings(v.get("implementation"));
        let read_first = strings(v.get("read_first"));
        let dod = v
            .pointer("/convergence/definition_of_done")
            .and_then(Value::as_str);
        for k in [
            "priority",
            "wave",
            "effort",
            "requirement_refs",
            "risks",
            "status",
        ] {
            if v.get(k).is_some_and(|x| !x.is_null()) {
                *fields_left.entry(k).or_default() += 1;
            }
        }
        tasks.push(OutTask {
            id: id.to_owned(),
            title: title.to_owned(),
            role: None,
            description: description(&[
                (None, str_of(v, "description")),
                (Some("Action"), str_of(v, "action")),
                (
                    Some("Steps"),
                    (!steps.is_empty()).then(|| numbered(&steps)).as_deref(),
                ),
                (
                    Some("Read first"),
                    (!read_first.is_empty())
                        .then(|| read_first.join("\n"))
                        .as_deref(),
                ),
                (Some("Done when"), dod),
            ]),
            depends_on: dedup(deps),
            files: files_out,
            acceptance: dedup_criteria(acceptance),
        });
    }
    if !fields_left.is_empty() {
        dropped.push(format!(
            "fields wavecrew has no place for: {}",
            fields_left.keys().copied().collect::<Vec<_>>().join(", ")
        ));
    }
    // The plan's objective, when the plan is beside (`outputs/plan.json`).
    let goal = dir
        .parent()
        .map(|p| p.join("plan.json"))
        .and_then(|p| read_json(&p).ok())
        .and_then(|p| {
            ["objective", "summary", "title"]
                .iter()
                .find_map(|k| str_of(&p, k).map(str::to_owned))
        })
        .unwrap_or_else(|| {
            format!(
                "The maestro-flow plan tasks of {}",
                project_name(&dir.join("x"))
            )
        });
    Ok((
        Format::MaestroFlow,
        OutFile::new(goal, Format::MaestroFlow, tasks),
        dropped,
    ))
}

/// Whether a verification line reads as a shell command line (rather than
/// a sentence): it has shell syntax.
fn looks_like_shell(line: &str) -> bool {
    ["&&", "||", " | ", "$(", "2>", "; "]
        .iter()
        .any(|s| line.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_commands_without_shell_syntax_become_commands() {
        assert_eq!(
            as_command("npm test"),
            Some(vec!["npm".into(), "test".into()])
        );
        assert_eq!(
            as_command("`cargo test -p core`"),
            Some(vec![
                "cargo".into(),
                "test".into(),
                "-p".into(),
                "core".into()
            ])
        );
        assert_eq!(as_command("npm test && npm run lint"), None);
        assert_eq!(as_command("grep -q foo src/*.ts"), None);
        assert_eq!(as_command("Verify the page renders"), None);
        assert_eq!(as_command("rm -rf /"), None);
        assert_eq!(as_command("pytest\nnpm test"), None);
        assert_eq!(
            as_command("`go test ./...` exits 0"),
            Some(vec!["go".into(), "test".into(), "./...".into()])
        );
    }

    fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
        p
    }

    #[test]
    fn task_master_subtasks_come_before_their_parent_and_keep_their_ids() {
        let tmp = tempfile::tempdir().unwrap();
        let p = write(
            tmp.path(),
            "tasks.json",
            &serde_json::json!({"master": {"tasks": [
                {"id": 1, "title": "One", "description": "d", "details": "x",
                 "testStrategy": "npm test", "status": "done", "dependencies": [], "subtasks": [
                    {"id": 1, "title": "One a", "dependencies": []},
                    {"id": 2, "title": "One b", "dependencies": ["1.1"]}]},
                {"id": 2, "title": "Two", "dependencies": [1, 9], "testStrategy": "Check it by hand"}
            ]}, "feature": {"tasks": []}}),
        );
        let imported = import(&p, None).unwrap();
        assert_eq!(imported.format, Format::TaskMaster);
        assert_eq!(imported.tasks, 4);
        let plan = crate::plan(&imported.text, Path::new("t.toml"), Path::new(".")).unwrap();
        let deps = |id: &str| -> Vec<String> {
            let t = plan.tasks.iter().find(|t| t.id.as_str() == id).unwrap();
            t.blocked_by.iter().map(|d| d.as_str().to_owned()).collect()
        };
        assert_eq!(deps("1.2"), ["1.1"]);
        assert_eq!(deps("1"), ["1.1", "1.2"]);
        assert_eq!(deps("2"), ["1"]);
        assert!(
            imported
                .text
                .contains("verify = [\n    \"npm\",\n    \"test\",\n]")
                || imported.text.contains("verify = [\"npm\", \"test\"]"),
            "{}",
            imported.text
        );
        assert!(
            imported.text.contains("Check it by hand"),
            "{}",
            imported.text
        );
        let dropped = imported.dropped.join("\n");
        assert!(dropped.contains("dependency on 9"), "{dropped}");
        assert!(dropped.contains("tag `feature`"), "{dropped}");
        assert!(dropped.contains("1 task(s) marked done"), "{dropped}");
    }

    #[test]
    fn several_tags_without_master_need_a_choice() {
        let tmp = tempfile::tempdir().unwrap();
        let p = write(
            tmp.path(),
            "tasks.json",
            &serde_json::json!({"a": {"tasks": [{"id": 1, "title": "x"}]}, "b": {"tasks": []}}),
        );
        let e = import(&p, None).unwrap_err().to_string();
        assert!(e.contains("choose one with --tag"), "{e}");
        assert_eq!(import(&p, Some("a")).unwrap().tasks, 1);
        let e = import(&p, Some("c")).unwrap_err().to_string();
        assert!(e.contains("field `c`: no such tag"), "{e}");
    }

    #[test]
    fn maestro_tasks_keep_deps_and_turn_commands_into_checks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("outputs/tasks");
        write(
            &tmp.path().join("outputs"),
            "plan.json",
            &serde_json::json!({"objective": "Ship it"}),
        );
        write(
            &dir,
            "TASK-001.json",
            &serde_json::json!({
            "id": "TASK-001", "title": "a", "deps": [], "files": ["src/a.rs", "/etc/x"],
            "convergence_criteria": ["src/a.rs contains 'fn a'"], "verify": ["cargo test", "curl x | sh"]}),
        );
        let second = write(
            &dir,
            "TASK-002.json",
            &serde_json::json!({
            "id": "TASK-002", "title": "b", "depends_on": ["TASK-001", "TASK-404"]}),
        );
        let imported = import(&second, None).unwrap();
        assert_eq!(imported.format, Format::MaestroFlow);
        assert!(
            imported.text.contains("goal = \"Ship it\""),
            "{}",
            imported.text
        );
        let plan = crate::plan(&imported.text, Path::new("t.toml"), Path::new(".")).unwrap();
        let two = plan
            .tasks
            .iter()
            .find(|t| t.id.as_str() == "TASK-002")
            .unwrap();
        assert_eq!(two.blocked_by.len(), 1);
        let dropped = imported.dropped.join("\n");
        assert!(dropped.contains("TASK-404"), "{dropped}");
        assert!(dropped.contains("\"/etc/x\""), "{dropped}");
        assert!(dropped.contains("needs a shell"), "{dropped}");
    }

    #[test]
    fn other_json_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let p = write(tmp.path(), "x.json", &serde_json::json!({"hello": 1}));
        assert!(matches!(import(&p, None), Err(ImportError::Unknown { .. })));
        std::fs::write(&p, "{").unwrap();
        assert!(
            import(&p, None)
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
    }
}
