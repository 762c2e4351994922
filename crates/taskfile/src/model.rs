//! The task file's types, as a person writes them, with their JSON Schema
//! (derived by `schemars`; `docs/wavecrew.tasks.schema.json` is generated
//! from [`schema`]).
//!
//! Every table refuses unknown keys, and every id is validated while it is
//! read, so a mistake is reported with the line of the key at fault.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;
use wavecrew_core::{RoleName, SessionId, TaskId};

/// `wavecrew.tasks.toml`: a goal, then the tasks that reach it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "wavecrew task file",
    description = "A goal and the tasks that reach it, written by hand (`wavecrew.tasks.toml`). \
                   `wavecrew new <file>` turns it into a ccw-shaped session; `wavecrew run <file>` \
                   creates and runs it; `wavecrew plan waves <file>` explains it first."
)]
pub struct TaskFile {
    /// What the whole run should achieve; it becomes the session's
    /// `task_description` and every agent sees it.
    pub goal: String,
    /// The session id, which is also its folder name under
    /// `.workflow/.team/`. Default: `TC-<three words of the goal>-<date>`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub session: Option<Spanned<SessionId>>,
    /// The backend for every task that names none (a name from
    /// `wavecrew.toml`, a built-in such as `claude` or `codex`, or a seed
    /// alias such as `agent`). Default: wavecrew's routing decides.
    #[serde(default)]
    pub backend: Option<String>,
    /// `"human"`: every task's validated work waits for a person's review
    /// before it lands (`wavecrew approve` / `reject`, or the cockpit);
    /// a role or a task can say otherwise.
    #[serde(default)]
    pub review: Option<Review>,
    /// Hosts every task's agent may reach besides its backend's model API
    /// and `[isolation] allow_hosts` (`registry.npmjs.org`, `*.crates.io`,
    /// `127.0.0.1:8080`; an IP literal only when listed).
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Roles besides the built-in `developer` and `reviewer`, or new
    /// instructions for those: `[roles.<name>]`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RoleDef>")]
    pub roles: BTreeMap<Spanned<RoleName>, RoleDef>,
    /// The tasks, in any order: `[[tasks]]`.
    #[schemars(length(min = 1))]
    #[schemars(with = "Vec<TaskDef>")]
    pub tasks: Vec<Spanned<TaskDef>>,
}

/// `[roles.<name>]`: a role that tasks name with `role = "<name>"`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleDef {
    /// The prefix of the role's task ids (`REVIEW`); ids made for tasks
    /// without one use it. Default: the name in capitals.
    #[serde(default)]
    pub prefix: Option<String>,
    /// What the role produces, in ccw's words (`code-gen (code)`,
    /// `read-only (analysis)`).
    #[serde(default)]
    pub responsibility: Option<String>,
    /// The role's instructions (Markdown), written to `roles/<name>.md`.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Or a Markdown file holding them, relative to the task file.
    #[serde(default)]
    pub file: Option<String>,
    /// `"human"`: the validated work of this role's tasks waits for a
    /// person's review before it lands; `"none"`: it lands at once.
    /// Default: the file's `review`.
    #[serde(default)]
    pub review: Option<Review>,
}

/// Who reviews a task's validated work before it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Review {
    /// A person: the work waits in the merge queue, awaiting review, until
    /// approved (or rejected with a note, which starts one revision).
    Human,
    /// Nobody: validated work lands at once.
    None,
}

/// `[[tasks]]`: one piece of work for one agent.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskDef {
    /// The task id (`IMPL-001`): letters, digits, `-`, `_` and `.`. Default:
    /// the role's prefix and the next free number.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub id: Option<Spanned<TaskId>>,
    /// One line saying what the task does.
    pub title: String,
    /// What to do, in as many words as the agent needs. Default: the title.
    #[serde(default)]
    pub description: Option<String>,
    /// Ids of the tasks that must be completed first.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub depends_on: Vec<Spanned<TaskId>>,
    /// The role that takes the task. Default: `developer`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub role: Option<Spanned<RoleName>>,
    /// The backend for this task (overrides the file's `backend`).
    #[serde(default)]
    pub backend: Option<String>,
    /// The files the task is expected to touch (tasks that share one do not
    /// run at the same time).
    #[serde(default)]
    pub files: Vec<String>,
    /// The task may end changing none of its `files` (a check that finds
    /// nothing to fix). Default: a task that declares `files` and changes
    /// none of them fails ("no change to the declared files").
    #[serde(default)]
    pub may_change_nothing: bool,
    /// The task may remove or skip tests of its base (a rename, a test
    /// moved or retired on purpose): they are still compared and listed in
    /// its result, but do not fail it. Default: a test of the base that is
    /// gone or newly skipped fails the task, naming it.
    #[serde(default)]
    pub may_remove_tests: bool,
    /// Hosts this task's agent may reach besides the file's `allow_hosts`,
    /// its backend's model API and `[isolation] allow_hosts` (a task that
    /// needs the package registries: `registry.npmjs.org`).
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// What must hold when the task is done: a sentence, or a table with a
    /// `verify` command that proves it.
    #[serde(default)]
    pub acceptance: Vec<Criterion>,
    /// `"human"`: its validated work waits for a person's review before it
    /// lands; `"none"`: it lands at once. Default: its role's `review`, else
    /// the file's.
    #[serde(default)]
    pub review: Option<Review>,
}

/// One acceptance criterion: `"text"`, or `{ criterion = "text", verify =
/// ["argv", "…"] }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion {
    /// What must hold, in words.
    pub criterion: String,
    /// A command (argv, never a shell) whose exit status 0 proves it.
    pub verify: Option<Argv>,
}

/// The table form of a [`Criterion`].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CriterionTable")]
struct CriterionTable {
    /// What must hold, in words.
    criterion: String,
    /// A command whose exit status 0 proves it: the program and its
    /// arguments, one string each (`["cargo", "test"]`). It is run in the
    /// project folder without a shell.
    #[serde(default)]
    verify: Option<Argv>,
}

impl<'de> Deserialize<'de> for Criterion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Criterion;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sentence, or a table { criterion = \"…\", verify = [\"…\"] }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Criterion, E> {
                Ok(Criterion {
                    criterion: v.to_owned(),
                    verify: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Criterion, A::Error> {
                let t = CriterionTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Criterion {
                    criterion: t.criterion,
                    verify: t.verify,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Criterion {
    fn schema_name() -> Cow<'static, str> {
        "Criterion".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let table = generator.subschema_for::<CriterionTable>();
        json_schema!({
            "description": "What must hold when the task is done: a sentence, or a table with a `verify` command that proves it.",
            "anyOf": [ { "type": "string" }, table ]
        })
    }
}

/// A command as an argument vector: the program, then each argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv(pub Vec<String>);

impl<'de> Deserialize<'de> for Argv {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Argv;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of strings: the program, then each argument")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Argv, E> {
                let hint = shell_words::split(v).map_or_else(
                    |_| "[\"program\", \"argument\"]".to_owned(),
                    |words| {
                        let quoted: Vec<String> = words.iter().map(|w| format!("{w:?}")).collect();
                        format!("[{}]", quoted.join(", "))
                    },
                );
                Err(E::custom(format!(
                    "expected an argv array, found the shell string {v:?}: wavecrew never runs a \
                     shell, so write the program and each argument as strings: verify = {hint}"
                )))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Argv, A::Error> {
                let mut argv = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    argv.push(s);
                }
                if argv.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err(de::Error::custom(
                        "expected the program first: an empty command proves nothing",
                    ));
                }
                Ok(Argv(argv))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Argv {
    fn schema_name() -> Cow<'static, str> {
        "Argv".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A command run without a shell: the program, then each argument, one string each.",
            "type": "array",
            "items": { "type": "string" },
            "minItems": 1
        })
    }
}

/// The JSON Schema of the task file, as committed in
/// `docs/wavecrew.tasks.schema.json`.
pub fn schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<TaskFile>();
    schema.to_value()
}

/// [`schema`] as the committed text (pretty JSON and a final newline).
pub fn schema_text() -> String {
    let mut s = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    s.push('\n');
    s
}
