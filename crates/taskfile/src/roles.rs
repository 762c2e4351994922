//! The built-in roles a task file can name without defining them:
//! `developer` (the default, taken by the `IMPL-*` executor) and `reviewer`.

/// A built-in role: name, id prefix, ccw's responsibility type, whether one
/// worker keeps taking its tasks, and its instructions.
#[derive(Debug, Clone, Copy)]
pub struct BuiltInRole {
    /// The role's name.
    pub name: &'static str,
    /// Its task-id prefix.
    pub prefix: &'static str,
    /// ccw's `responsibility_type`.
    pub responsibility: &'static str,
    /// ccw's `inner_loop`.
    pub inner_loop: bool,
    /// The text of `roles/<name>.md`.
    pub instructions: &'static str,
}

/// The default role of a task.
pub const DEFAULT_ROLE: &str = "developer";

/// The id prefix of the developer's tasks: its worker, the executor,
/// takes `IMPL-*` tasks only.
pub const DEVELOPER_PREFIX: &str = "IMPL";

/// Every built-in role.
pub const BUILT_IN: [BuiltInRole; 2] = [
    BuiltInRole {
        name: "developer",
        prefix: DEVELOPER_PREFIX,
        responsibility: "code-gen (code)",
        inner_loop: true,
        instructions: "# Role: developer\n\n\
## Identity\n\
Implements one task of the plan in the project's code.\n\n\
## Boundaries\n\
Changes only what the task asks for, in the files it names when it names them. Does not\n\
rewrite tests to make them pass, does not commit, does not touch `.workflow/`.\n\n\
## Execution\n\
Read the task and its acceptance criteria, change the code, run the project's own checks\n\
(build, tests, linters) and the task's `verify` commands, fix what fails, then report what\n\
changed and how it was checked.\n",
    },
    BuiltInRole {
        name: "reviewer",
        prefix: "REVIEW",
        responsibility: "read-only (analysis)",
        inner_loop: false,
        instructions: "# Role: reviewer\n\n\
## Identity\n\
Reviews the work of the tasks it depends on.\n\n\
## Boundaries\n\
Reads the code; writes only its report under the session's `artifacts/`. Never changes the\n\
project's files.\n\n\
## Execution\n\
Read the task, read the changes, check them against the goal and the acceptance criteria,\n\
and write what holds, what does not, and what to change, most important first.\n",
    },
];

/// The built-in role with this name.
pub fn built_in(name: &str) -> Option<&'static BuiltInRole> {
    BUILT_IN.iter().find(|r| r.name == name)
}
