//! The task file a person writes by hand, `wavecrew.tasks.toml`, and the
//! ccw-shaped session it becomes.
//!
//! [`read`] parses the file into the types of [`model`] (unknown keys are
//! refused), checks it (ids, roles, unknown dependencies, cycles through
//! `wavecrew-scheduler`'s validation, `verify` as an argv array), and
//! returns a [`SessionPlan`]: the files ccw's coordinator writes
//! (`team-session.json`, `task-analysis.json`, `roles/<name>.md`,
//! `tasks/<ID>.json`), which [`SessionPlan::create`] writes under
//! `<root>/.workflow/.team/<session-id>/` in one rename, never over an
//! existing session. Every error names the file, the line and the field.
//!
//! ```
//! use std::path::Path;
//!
//! let text = r#"
//! goal = "Greet the world"
//! session = "TC-greet"
//!
//! [[tasks]]
//! id = "IMPL-001"
//! title = "Write hello.txt"
//! acceptance = [{ criterion = "it exists", verify = ["test", "-f", "hello.txt"] }]
//!
//! [[tasks]]
//! title = "Review it"
//! role = "reviewer"
//! depends_on = ["IMPL-001"]
//! "#;
//! let plan = wavecrew_taskfile::plan(text, Path::new("wavecrew.tasks.toml"), Path::new(".")).unwrap();
//! assert_eq!(plan.session_id.as_str(), "TC-greet");
//! let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
//! assert_eq!(ids, ["IMPL-001", "REVIEW-001"]);
//!
//! let bad = text.replace(r#"["test", "-f", "hello.txt"]"#, r#""test -f hello.txt""#);
//! let err = wavecrew_taskfile::plan(&bad, Path::new("wavecrew.tasks.toml"), Path::new(".")).unwrap_err();
//! assert!(err.to_string().starts_with("wavecrew.tasks.toml:8:"), "{err}");
//! assert!(err.to_string().contains("field `tasks[0].acceptance[0].verify`"), "{err}");
//! ```

pub mod import;
pub mod model;
pub mod roles;
mod session;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

use wavecrew_core::{CoreError, RoleName, SessionId, Task, TaskId};
use wavecrew_scheduler::{BuildOptions, Dag, ProblemKind, ScheduleError, TaskNode};

pub use model::{Argv, Criterion, Review, RoleDef, TaskDef, TaskFile, schema, schema_text};
pub use session::{PlannedRole, SessionPlan};

/// The file name `wavecrew init` and the documentation use.
pub const TASK_FILE: &str = "wavecrew.tasks.toml";

/// One thing wrong with a task file, where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The field path (`tasks[2].depends_on[0]`), `(file)` for the whole file.
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// Errors of reading a task file or creating its session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskFileError {
    /// The file could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid task file; every problem found is listed.
    #[error("{}", invalid_message(path, problems))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The problems, in file order.
        problems: Vec<Problem>,
    },
    /// The session folder exists already.
    #[error(
        "`{}` exists already: a session is never overwritten (set `session = \"…\"` in the task \
         file for a new one, or delete that folder)",
        dir.display()
    )]
    SessionExists {
        /// The existing folder.
        dir: PathBuf,
    },
    /// Writing the session failed.
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl TaskFileError {
    /// Whether the user's input is at fault (exit 2) rather than the system.
    pub fn is_bad_input(&self) -> bool {
        match self {
            TaskFileError::Invalid { .. } | TaskFileError::SessionExists { .. } => true,
            TaskFileError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            TaskFileError::Core(e) => e.is_bad_input(),
        }
    }
}

fn invalid_message(path: &Path, problems: &[Problem]) -> String {
    let mut s = String::new();
    for (i, p) in problems.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let _ = write!(
            s,
            "{}:{}:{}: field `{}`: {}",
            path.display(),
            p.line,
            p.column,
            p.field,
            p.message
        );
    }
    s
}

/// Read and check the task file at `path`; the session's project root is
/// `root` (role files named by `file = …` are relative to the task file).
pub fn read(path: &Path, root: &Path) -> Result<SessionPlan, TaskFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| TaskFileError::Io {
        path: path.to_owned(),
        source,
    })?;
    plan(&text, path, root)
}

/// Parse and check a task file's text (`path` is for messages and for role
/// files given by `file = …`), giving the session it becomes.
pub fn plan(text: &str, path: &Path, root: &Path) -> Result<SessionPlan, TaskFileError> {
    let file = parse(text, path)?;
    Checker {
        text,
        path,
        problems: Vec::new(),
    }
    .check(&file, root)
}

/// Parse a task file's text into its model, without the graph checks.
pub fn parse(text: &str, path: &Path) -> Result<TaskFile, TaskFileError> {
    let fail = |span: Option<Range<usize>>, field: String, message: String| {
        let (line, column) = line_col(text, span.map_or(0, |s| s.start));
        TaskFileError::Invalid {
            path: path.to_owned(),
            problems: vec![Problem {
                line,
                column,
                field,
                message,
            }],
        }
    };
    let de = toml::Deserializer::parse(text)
        .map_err(|e| fail(e.span(), "(file)".into(), e.message().to_owned()))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        // `Spanned` values add a segment of their own: not the user's.
        let mut field = e
            .path()
            .to_string()
            .replace(".$__serde_spanned_private_value", "")
            .replace("$__serde_spanned_private_value", ".");
        let inner = e.into_inner();
        let message = inner.message().to_owned();
        if let Some(missing) = message
            .strip_prefix("missing field `")
            .and_then(|m| m.strip_suffix('`'))
        {
            field = if field == "." {
                missing.to_owned()
            } else {
                format!("{field}.{missing}")
            };
        } else if field == "." {
            "(file)".clone_into(&mut field);
        }
        fail(inner.span(), field, message)
    })
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.chars().count(), |nl| {
        before[nl + 1..].chars().count()
    }) + 1;
    (line, column)
}

struct Checker<'a> {
    text: &'a str,
    path: &'a Path,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn problem(&mut self, span: &Range<usize>, field: String, message: String) {
        let (line, column) = line_col(self.text, span.start);
        self.problems.push(Problem {
            line,
            column,
            field,
            message,
        });
    }

    fn check(mut self, file: &TaskFile, root: &Path) -> Result<SessionPlan, TaskFileError> {
        let roles = self.roles(file);
        if file.tasks.is_empty() {
            self.problem(
                &(0..0),
                "tasks".into(),
                "the file has no task: add at least one `[[tasks]]` table with a `title`".into(),
            );
            return Err(self.fail());
        }
        // Roles and ids of every task; ids made for tasks without one.
        let mut taken: HashMap<TaskId, usize> = HashMap::new();
        let mut task_roles: Vec<Option<&PlannedRole>> = Vec::new();
        for (i, task) in file.tasks.iter().enumerate() {
            let role_name = task
                .get_ref()
                .role
                .as_ref()
                .map_or(roles::DEFAULT_ROLE, |r| r.get_ref().as_str());
            let role = roles.iter().find(|r| r.name.as_str() == role_name);
            if role.is_none() {
                let span = task
                    .get_ref()
                    .role
                    .as_ref()
                    .map_or_else(|| task.span(), toml::Spanned::span);
                let known: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
                self.problem(
                    &span,
                    format!("tasks[{i}].role"),
                    format!(
                        "unknown role `{role_name}`: define it in a `[roles.{role_name}]` table \
                         with its instructions, or use one of {}",
                        known.join(", ")
                    ),
                );
            }
            task_roles.push(role);
            if let (Some(id), Some(role)) = (&task.get_ref().id, role)
                && role.prefix == roles::DEVELOPER_PREFIX
                && !id
                    .get_ref()
                    .as_str()
                    .strip_prefix(roles::DEVELOPER_PREFIX)
                    .is_some_and(|rest| rest.starts_with('-'))
            {
                // The developer's worker (the executor) takes `IMPL-*`
                // tasks only: any other id would be started and refused,
                // until the run gives up on it.
                self.problem(
                    &id.span(),
                    format!("tasks[{i}].id"),
                    format!(
                        "`{}` is a task of the `{}` role, whose worker takes ids `{p}-…` only: \
                         name it `{p}-…` (or leave `id` out and one is made), or give it a role of \
                         its own (`[roles.<name>]` with its `instructions`)",
                        id.get_ref(),
                        role.name,
                        p = roles::DEVELOPER_PREFIX
                    ),
                );
            }
            if let Some(id) = &task.get_ref().id {
                if let Some(first) = taken.get(id.get_ref()) {
                    let first_line = line_col(self.text, file.tasks[*first].span().start).0;
                    self.problem(
                        &id.span(),
                        format!("tasks[{i}].id"),
                        format!(
                            "`{}` is the id of another task already (tasks[{first}], line \
                             {first_line}); task ids must be unique",
                            id.get_ref()
                        ),
                    );
                } else {
                    taken.insert(id.get_ref().clone(), i);
                }
            }
        }
        let mut ids: Vec<Option<TaskId>> = file
            .tasks
            .iter()
            .map(|t| t.get_ref().id.as_ref().map(|id| id.get_ref().clone()))
            .collect();
        for (i, slot) in ids.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let prefix = task_roles[i].map_or("IMPL", |r| r.prefix.as_str());
            // Of `taken.len() + 1` numbers, one at least is free.
            let made = (1..=taken.len() + 1)
                .map(|n| format!("{prefix}-{n:03}"))
                .filter_map(|s| TaskId::new(s).ok())
                .find(|id| !taken.contains_key(id));
            if let Some(id) = made {
                taken.insert(id.clone(), i);
                *slot = Some(id);
            } else {
                let span = file.tasks[i].span();
                self.problem(
                    &span,
                    format!("tasks[{i}].id"),
                    format!("no id can be made from the prefix `{prefix}`: give the task an `id`"),
                );
            }
        }
        for (j, host) in file.allow_hosts.iter().enumerate() {
            if let Err(e) = wavecrew_core::allow_hosts::AllowList::parse(std::slice::from_ref(host))
            {
                self.problem(&(0..0), format!("allow_hosts[{j}]"), e);
            }
        }
        for (i, task) in file.tasks.iter().enumerate() {
            for (j, host) in task.get_ref().allow_hosts.iter().enumerate() {
                if let Err(e) =
                    wavecrew_core::allow_hosts::AllowList::parse(std::slice::from_ref(host))
                {
                    self.problem(&task.span(), format!("tasks[{i}].allow_hosts[{j}]"), e);
                }
            }
        }
        if !self.problems.is_empty() {
            return Err(self.fail());
        }
        let ids: Vec<TaskId> = ids.into_iter().flatten().collect();
        let dag = self.graph(file, &ids)?;
        let session_id = match &file.session {
            Some(s) => s.get_ref().clone(),
            None => default_session_id(&file.goal, jiff::Zoned::now().date()),
        };
        let mut tasks = Vec::new();
        for (i, spanned) in file.tasks.iter().enumerate() {
            let def = spanned.get_ref();
            let id = ids[i].clone();
            let role = task_roles[i].expect("every role was found");
            let deps: Vec<TaskId> = dag.dependencies(id.as_str()).into_iter().cloned().collect();
            let mut blocks: Vec<TaskId> =
                dag.dependents(id.as_str()).into_iter().cloned().collect();
            blocks.sort();
            let mut task =
                session::task_record(&id, def, role, file.backend.as_deref(), deps, blocks);
            // The hosts its agent may reach: the file's, then its own.
            let hosts: Vec<&str> = file
                .allow_hosts
                .iter()
                .chain(&def.allow_hosts)
                .map(String::as_str)
                .collect();
            if !hosts.is_empty() {
                task.metadata.insert("allow_hosts".into(), hosts.into());
            }
            // A person reviews its work before it lands: the task's word,
            // else its role's, else the file's.
            if def.review.or(role.review).or(file.review) == Some(model::Review::Human) {
                task.metadata.insert("review".into(), "human".into());
            }
            tasks.push(task);
        }
        let used: Vec<PlannedRole> = roles
            .into_iter()
            .filter(|r| {
                !r.built_in
                    || tasks
                        .iter()
                        .any(|t: &Task| t.owner.as_deref() == Some(r.name.as_str()))
            })
            .collect();
        Ok(SessionPlan {
            source: self.path.to_owned(),
            root: root.to_owned(),
            session_id,
            goal: file.goal.clone(),
            roles: used,
            tasks,
        })
    }

    fn fail(&mut self) -> TaskFileError {
        let mut problems = std::mem::take(&mut self.problems);
        problems.sort_by_key(|p| (p.line, p.column));
        TaskFileError::Invalid {
            path: self.path.to_owned(),
            problems,
        }
    }

    /// The built-in roles, then those of `[roles.*]` (which may replace a
    /// built-in one's instructions).
    fn roles(&mut self, file: &TaskFile) -> Vec<PlannedRole> {
        let mut out: Vec<PlannedRole> = roles::BUILT_IN
            .iter()
            .map(|r| PlannedRole {
                name: RoleName::new(r.name).expect("built-in role names are valid"),
                prefix: r.prefix.to_owned(),
                responsibility: r.responsibility.to_owned(),
                inner_loop: r.inner_loop,
                instructions: r.instructions.to_owned(),
                built_in: true,
                review: None,
            })
            .collect();
        for (name, def) in &file.roles {
            let field = |k: &str| format!("roles.{}.{k}", name.get_ref());
            let span = name.span();
            let builtin = roles::built_in(name.get_ref().as_str());
            let instructions = match (&def.instructions, &def.file) {
                (Some(_), Some(_)) => {
                    self.problem(
                        &span,
                        format!("roles.{}", name.get_ref()),
                        "give `instructions` or `file`, not both".into(),
                    );
                    continue;
                }
                (Some(text), None) => text.clone(),
                (None, Some(rel)) => {
                    let p = self.path.parent().unwrap_or(Path::new(".")).join(rel);
                    match std::fs::read_to_string(&p) {
                        Ok(t) => t,
                        Err(e) => {
                            self.problem(
                                &span,
                                field("file"),
                                format!("cannot read `{}`: {e}", p.display()),
                            );
                            continue;
                        }
                    }
                }
                (None, None) => {
                    if let Some(b) = builtin {
                        b.instructions.to_owned()
                    } else {
                        self.problem(
                            &span,
                            field("instructions"),
                            "missing: a role of your own needs its instructions (`instructions = \
                             \"\"\"…\"\"\"`) or a Markdown `file`"
                                .into(),
                        );
                        continue;
                    }
                }
            };
            if instructions.trim().is_empty() {
                let (key, what) = if def.file.is_some() {
                    ("file", "the file is empty")
                } else {
                    ("instructions", "empty")
                };
                self.problem(
                    &span,
                    field(key),
                    format!(
                        "{what}: the role `{}` needs instructions for its agent (what it does, \
                         in plain words)",
                        name.get_ref()
                    ),
                );
                continue;
            }
            let prefix = def.prefix.clone().unwrap_or_else(|| {
                builtin.map_or_else(
                    || {
                        name.get_ref()
                            .as_str()
                            .to_ascii_uppercase()
                            .replace(['-', '.'], "_")
                    },
                    |b| b.prefix.to_owned(),
                )
            });
            if prefix.is_empty()
                || !prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                self.problem(
                    &span,
                    field("prefix"),
                    format!("`{prefix}`: a prefix is letters, digits and `_` (`REVIEW`)"),
                );
                continue;
            }
            let role = PlannedRole {
                name: name.get_ref().clone(),
                prefix,
                responsibility: def
                    .responsibility
                    .clone()
                    .or_else(|| builtin.map(|b| b.responsibility.to_owned()))
                    .unwrap_or_else(|| "code-gen (code)".into()),
                inner_loop: builtin.is_some_and(|b| b.inner_loop),
                instructions,
                built_in: false,
                review: def.review,
            };
            out.retain(|r| r.name != role.name);
            out.push(role);
        }
        out
    }

    /// Validate the graph with the scheduler; problems point at the
    /// dependency (or id) at fault.
    fn graph(&mut self, file: &TaskFile, ids: &[TaskId]) -> Result<Dag, TaskFileError> {
        let nodes = file.tasks.iter().zip(ids).map(|(t, id)| {
            TaskNode::new(
                id.clone(),
                t.get_ref().depends_on.iter().map(|d| d.get_ref().clone()),
            )
            .with_files(t.get_ref().files.iter().cloned())
        });
        let problems = match Dag::build(nodes, &BuildOptions::default()) {
            Ok(dag) => return Ok(dag),
            Err(ScheduleError::Invalid { problems }) => problems,
            Err(other) => {
                let span = file.tasks.first().map_or(0..0, toml::Spanned::span);
                self.problem(&span, "tasks".into(), other.to_string());
                return Err(self.fail());
            }
        };
        let index: BTreeMap<&TaskId, usize> =
            ids.iter().enumerate().map(|(i, id)| (id, i)).collect();
        for p in problems {
            // The task and the dependency at fault.
            let edge = match p.problem_kind() {
                ProblemKind::Cycle => p.breaking_edges().first().cloned().or_else(|| {
                    let path = p.path();
                    (path.len() >= 2).then(|| (path[0].clone(), path[1].clone()))
                }),
                ProblemKind::UnknownDependency => match p.ids() {
                    [task, dep, ..] => Some((task.clone(), dep.clone())),
                    _ => None,
                },
                ProblemKind::SelfDependency => p.ids().first().map(|t| (t.clone(), t.clone())),
                _ => None,
            };
            let mut message = p.message().to_owned();
            if p.problem_kind() == ProblemKind::Cycle {
                message.push_str(" (a task can only wait for tasks that do not wait for it)");
            }
            let located = edge.and_then(|(task, dep)| {
                let i = *index.get(&task)?;
                let deps = &file.tasks[i].get_ref().depends_on;
                let j = deps
                    .iter()
                    .position(|d| d.get_ref() == &dep)
                    .or_else(|| deps.iter().position(|d| d.get_ref().same_task(&dep)))?;
                Some((deps[j].span(), format!("tasks[{i}].depends_on[{j}]")))
            });
            let (span, field) = located.unwrap_or_else(|| {
                let i = p
                    .ids()
                    .first()
                    .and_then(|id| index.get(id).copied())
                    .unwrap_or(0);
                (
                    file.tasks.get(i).map_or(0..0, toml::Spanned::span),
                    format!("tasks[{i}]"),
                )
            });
            self.problem(&span, field, message);
        }
        Err(self.fail())
    }
}

/// `TC-<three words of the goal>-<YYYY-MM-DD>`, as team-coordinate names
/// its sessions.
pub fn default_session_id(goal: &str, date: jiff::civil::Date) -> SessionId {
    const SKIP: &[&str] = &[
        "a", "an", "the", "to", "and", "or", "of", "for", "in", "on", "with", "by", "at", "from",
        "into", "it", "its", "is", "be", "that", "this",
    ];
    let words: Vec<String> = goal
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(str::to_ascii_lowercase)
        .filter(|w| !w.is_empty() && !SKIP.contains(&w.as_str()))
        .take(3)
        .collect();
    let slug = if words.is_empty() {
        "tasks".to_owned()
    } else {
        words.join("-")
    };
    SessionId::new(format!("TC-{slug}-{}", date.strftime("%Y-%m-%d")))
        .expect("letters, digits and dashes make a valid id")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        plan(text, Path::new("t.toml"), Path::new("."))
            .unwrap_err()
            .to_string()
    }

    const HEAD: &str = "goal = \"g\"\nsession = \"TC-x\"\n";

    #[test]
    fn session_ids_from_the_goal() {
        let d = jiff::civil::date(2026, 11, 23);
        assert_eq!(
            default_session_id("Add a /health endpoint to the API", d).as_str(),
            "TC-add-health-endpoint-2026-11-23"
        );
        assert_eq!(default_session_id("¿?", d).as_str(), "TC-tasks-2026-11-23");
    }

    #[test]
    fn missing_field_is_named_with_its_line() {
        let e = err(&format!("{HEAD}[[tasks]]\nid = \"IMPL-001\"\n"));
        assert!(
            e.starts_with("t.toml:3:1: field `tasks[0].title`: missing field `title`"),
            "{e}"
        );
    }

    #[test]
    fn unknown_key_is_named() {
        let e = err(&format!("{HEAD}[[tasks]]\ntitle = \"x\"\ndepend_on = []\n"));
        assert!(e.starts_with("t.toml:5:1:"), "{e}");
        assert!(e.contains("unknown field `depend_on`"), "{e}");
    }

    #[test]
    fn bad_id_is_named() {
        let e = err(&format!("{HEAD}[[tasks]]\nid = \"../x\"\ntitle = \"x\"\n"));
        assert!(e.starts_with("t.toml:4:6: field `tasks[0].id`:"), "{e}");
    }

    #[test]
    fn allow_hosts_of_the_file_and_the_task_reach_its_metadata_and_bad_ones_are_named() {
        let text = "goal = \"g\"\nsession = \"TC-x\"\nallow_hosts = [\"*.crates.io\"]\n\
                    [[tasks]]\nid = \"IMPL-1\"\ntitle = \"a\"\nallow_hosts = [\"registry.npmjs.org\"]\n";
        let plan = plan(text, Path::new("t.toml"), Path::new(".")).unwrap();
        assert_eq!(
            plan.tasks[0].metadata["allow_hosts"],
            serde_json::json!(["*.crates.io", "registry.npmjs.org"])
        );
        let e = err(&format!(
            "{HEAD}[[tasks]]\ntitle = \"x\"\nallow_hosts = [\"ok.example\", \"bad host\"]\n"
        ));
        assert!(
            e.starts_with("t.toml:3:1: field `tasks[0].allow_hosts[1]`"),
            "{e}"
        );
        assert!(e.contains("`bad host` is not a host"), "{e}");
    }

    #[test]
    fn shell_string_in_verify_is_refused() {
        let e = err(&format!(
            "{HEAD}[[tasks]]\ntitle = \"x\"\nacceptance = [{{ criterion = \"c\", verify = \"cargo test --quiet\" }}]\n"
        ));
        assert!(e.starts_with("t.toml:5:"), "{e}");
        assert!(e.contains("field `tasks[0].acceptance[0].verify`"), "{e}");
        assert!(
            e.contains(r#"verify = ["cargo", "test", "--quiet"]"#),
            "{e}"
        );
    }

    #[test]
    fn unknown_dependency_and_cycle_point_at_the_dependency() {
        let e = err(&format!(
            "{HEAD}[[tasks]]\nid = \"IMPL-1\"\ntitle = \"a\"\ndepends_on = [\"IMPL-2\"]\n\
             [[tasks]]\nid = \"IMPL-2\"\ntitle = \"b\"\ndepends_on = [\"IMPL-1\", \"IMPL-9\"]\n"
        ));
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 2, "{e}");
        assert!(
            lines[0].starts_with("t.toml:6:15: field `tasks[0].depends_on[0]`:"),
            "{e}"
        );
        assert!(lines[0].contains("cycle"), "{e}");
        assert!(
            lines[1].starts_with("t.toml:10:25: field `tasks[1].depends_on[1]`:"),
            "{e}"
        );
        assert!(lines[1].contains("`IMPL-9`"), "{e}");
    }

    #[test]
    fn developer_tasks_take_impl_ids_and_other_ids_need_a_role_of_their_own() {
        let e = err(&format!(
            "{HEAD}[[tasks]]\nid = \"T1\"\ntitle = \"a\"\n[[tasks]]\nid = \"IMPLX-2\"\ntitle = \"b\"\n"
        ));
        assert!(
            e.contains("t.toml:4:6: field `tasks[0].id`: `T1` is a task of the `developer` role"),
            "{e}"
        );
        assert!(e.contains("field `tasks[1].id`: `IMPLX-2`"), "{e}");
        let p = plan(
            &format!(
                "{HEAD}[roles.coder]\ninstructions = \"# Role: coder\"\n\
             [[tasks]]\nid = \"T1\"\ntitle = \"a\"\nrole = \"coder\"\n\
             [[tasks]]\nid = \"IMPL-7\"\ntitle = \"b\"\n"
            ),
            Path::new("t.toml"),
            Path::new("."),
        )
        .unwrap();
        assert_eq!(p.tasks.len(), 2);
    }

    #[test]
    fn duplicate_ids_and_unknown_roles() {
        let e = err(&format!(
            "{HEAD}[[tasks]]\nid = \"IMPL-1\"\ntitle = \"a\"\n[[tasks]]\nid = \"IMPL-1\"\ntitle = \"b\"\nrole = \"poet\"\n"
        ));
        assert!(
            e.contains("t.toml:7:6: field `tasks[1].id`: `IMPL-1` is the id of another task"),
            "{e}"
        );
        assert!(
            e.contains("t.toml:9:8: field `tasks[1].role`: unknown role `poet`"),
            "{e}"
        );
    }

    #[test]
    fn ids_are_made_per_role_and_roles_defined() {
        let p = plan(
            &format!(
                "{HEAD}[roles.writer]\ninstructions = \"# Role: writer\"\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"a\"\n\
                 [[tasks]]\ntitle = \"b\"\ndepends_on = [\"IMPL-001\"]\n\
                 [[tasks]]\ntitle = \"c\"\nrole = \"writer\"\nbackend = \"codex\"\n"
            ),
            Path::new("t.toml"),
            Path::new("."),
        )
        .unwrap();
        let ids: Vec<&str> = p.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["IMPL-001", "IMPL-002", "WRITER-001"]);
        let roles: Vec<&str> = p.roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(roles, ["developer", "writer"]);
        assert_eq!(p.tasks[2].executor(), Some("codex"));
        assert_eq!(p.tasks[0].blocks[0].as_str(), "IMPL-002");
    }

    #[test]
    fn a_role_of_plain_instructions_gets_the_role_file_ccw_expects() {
        let p = plan(
            &format!(
                "{HEAD}[roles.docs]\ninstructions = \"Write clear documentation.\"\n\
                 [[tasks]]\ntitle = \"a\"\nrole = \"docs\"\n"
            ),
            Path::new("t.toml"),
            Path::new("."),
        )
        .unwrap();
        let docs = p.roles.iter().find(|r| r.name.as_str() == "docs").unwrap();
        let file = docs.role_file();
        assert_eq!(
            wavecrew_core::role_file::missing_section(&file),
            None,
            "{file}"
        );
        assert!(file.starts_with("# Role: docs\n"), "{file}");
        assert!(
            file.contains("## Execution\nWrite clear documentation.\n"),
            "{file}"
        );
    }

    #[test]
    fn a_role_with_empty_instructions_is_refused_with_its_field() {
        let e = err(&format!(
            "{HEAD}[roles.docs]\ninstructions = \"  \"\n[[tasks]]\ntitle = \"a\"\nrole = \"docs\"\n"
        ));
        assert!(
            e.contains(
                "field `roles.docs.instructions`: empty: the role `docs` needs instructions"
            ),
            "{e}"
        );
    }
}
