//! Which text of a prompt is the task and which is untrusted material: one
//! table, per template, that the templates follow (a test renders each one
//! and checks every field lands on its side of the fence), that budgets
//! cut by, and that `docs/prompts.md` shows.

/// What a field's text is to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The plan the user approved: plain instructions.
    Task,
    /// From outside the plan (issue trackers, earlier agents, tools):
    /// fenced as data, never followed.
    Untrusted,
}

impl Trust {
    /// How `docs/prompts.md` says it.
    pub fn describe(self) -> &'static str {
        match self {
            Trust::Task => "task (plain)",
            Trust::Untrusted => "untrusted (fenced)",
        }
    }
}

/// One field of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The template (`execution`, `planex`, …).
    pub template: &'static str,
    /// Its name in the template's context (`task.description`).
    pub name: &'static str,
    /// Where the text comes from.
    pub source: &'static str,
    /// Task or untrusted.
    pub trust: Trust,
    /// When a budget may shorten it: lower is cut first; `None` never.
    pub cut: Option<u8>,
}

/// The roles that send each template.
pub const TEMPLATE_ROLES: &[(&str, &str)] = &[
    (
        "execution",
        "executor (`IMPL-*`); roadmap (`EXEC-*`, one task)",
    ),
    ("batch", "roadmap (`EXEC-*`, several tasks of a wave)"),
    ("review", "executor and roadmap code review"),
    ("role", "roles known only by `roles/<name>.md`"),
    ("planex", "planex (`EXEC-*` of a `PEX-` session)"),
    ("test-fix", "test executor (`TESTRUN-*`, each fix round)"),
];

const fn task(template: &'static str, name: &'static str, source: &'static str) -> Field {
    Field {
        template,
        name,
        source,
        trust: Trust::Task,
        cut: None,
    }
}

const fn task_cut(
    template: &'static str,
    name: &'static str,
    source: &'static str,
    cut: u8,
) -> Field {
    Field {
        template,
        name,
        source,
        trust: Trust::Task,
        cut: Some(cut),
    }
}

const fn untrusted(
    template: &'static str,
    name: &'static str,
    source: &'static str,
    cut: u8,
) -> Field {
    Field {
        template,
        name,
        source,
        trust: Trust::Untrusted,
        cut: Some(cut),
    }
}

/// Cut first: a test run's output.
const CUT_TEST_OUTPUT: u8 = 5;
/// Then what earlier agents and tools wrote.
const CUT_OUTPUT: u8 = 10;
/// Then what the team learned.
const CUT_WISDOM: u8 = 20;
/// Then issue-tracker text.
const CUT_TRACKER: u8 = 30;
/// Last: the plan excerpt around the task.
const CUT_PLAN: u8 = 50;

/// Every field of every template.
pub const FIELDS: &[Field] = &[
    task("execution", "task.title", "the task's subject/title"),
    task(
        "execution",
        "task.description",
        "the task's description (team-coordinate: `capabilities[].tasks[].description`)",
    ),
    task(
        "execution",
        "task.implementation",
        "the task's implementation steps (roadmap `implementation[]`: strings or `{step, description, tdd_phase, actions[]}`); optional",
    ),
    task(
        "execution",
        "task.acceptance_criteria",
        "the task's acceptance criteria / convergence criteria",
    ),
    task(
        "execution",
        "task.definition_of_done",
        "the task's definition of done (roadmap `convergence.definition_of_done`); optional",
    ),
    task(
        "execution",
        "task.files",
        "the task's target files: paths, or `{path, action, target, change}` (roadmap `files[]`)",
    ),
    task(
        "execution",
        "task.files[].target",
        "where in each file (roadmap `files[].target`)",
    ),
    task(
        "execution",
        "task.files[].change",
        "what to change in each file (roadmap `files[].change` / `changes[]`)",
    ),
    task_cut(
        "execution",
        "plan_context",
        "the plan's section for the task (`plan.json`, `IMPL_PLAN.md`)",
        CUT_PLAN,
    ),
    untrusted(
        "execution",
        "prior_summaries",
        "`phase-<N>/summary-*.md` of earlier phases, written by earlier agents (roadmap); optional",
        CUT_OUTPUT,
    ),
    untrusted(
        "execution",
        "wisdom",
        "`wisdom/*.md`, written by earlier workers",
        CUT_WISDOM,
    ),
    untrusted(
        "execution",
        "previous_error",
        "the previous attempt's error or the validation's output",
        CUT_OUTPUT,
    ),
    untrusted(
        "execution",
        "conflict",
        "a revision after a merge conflict: the conflicted files, git's messages and the commits that landed on them (isolated sessions); optional",
        CUT_OUTPUT,
    ),
    task("batch", "tasks[].title", "each task's subject/title"),
    task("batch", "tasks[].description", "each task's description"),
    task(
        "batch",
        "tasks[].implementation",
        "each task's implementation steps (roadmap `implementation[]`); optional",
    ),
    task(
        "batch",
        "tasks[].acceptance_criteria",
        "each task's acceptance criteria",
    ),
    task(
        "batch",
        "tasks[].definition_of_done",
        "each task's definition of done (`convergence.definition_of_done`); optional",
    ),
    task(
        "batch",
        "tasks[].files",
        "each task's target files: paths, or `{path, action, target, change}`",
    ),
    task(
        "batch",
        "tasks[].files[].target",
        "where in each file (`files[].target`)",
    ),
    task(
        "batch",
        "tasks[].files[].change",
        "what to change in each file (`files[].change` / `changes[]`)",
    ),
    task_cut(
        "batch",
        "plan_context",
        "the phase plan's excerpt",
        CUT_PLAN,
    ),
    untrusted(
        "batch",
        "prior_summaries",
        "`phase-<N>/summary-*.md` of earlier phases, written by earlier agents; optional",
        CUT_OUTPUT,
    ),
    untrusted(
        "batch",
        "previous_error",
        "the previous attempt's error",
        CUT_OUTPUT,
    ),
    task("review", "task.title", "the reviewed task's subject/title"),
    task(
        "review",
        "task.description",
        "the reviewed task's description",
    ),
    task(
        "review",
        "task.acceptance_criteria",
        "the reviewed task's acceptance criteria",
    ),
    task("role", "instructions", "the role file `roles/<name>.md`"),
    task("role", "task.title", "the task's subject/title"),
    task("role", "task.description", "the task's description"),
    untrusted(
        "role",
        "wisdom",
        "`wisdom/*.md`, written by earlier workers",
        CUT_WISDOM,
    ),
    untrusted(
        "role",
        "previous_error",
        "the previous attempt's error",
        CUT_OUTPUT,
    ),
    untrusted(
        "role",
        "landed",
        "the landed changes of the tasks it depends on (commits, files, diff stat and diff, read from git)",
        CUT_OUTPUT,
    ),
    task(
        "planex",
        "solution.description",
        "the bound solution's `description`",
    ),
    task(
        "planex",
        "solution.approach",
        "the bound solution's `approach`",
    ),
    task(
        "planex",
        "solution.tasks[].title",
        "each solution task's `title`, tasks in `depends_on` order",
    ),
    task(
        "planex",
        "solution.tasks[].action",
        "each solution task's `action` (Add, Fix, …)",
    ),
    task(
        "planex",
        "solution.tasks[].scope",
        "each solution task's `scope` (a string or a list)",
    ),
    task(
        "planex",
        "solution.tasks[].depends_on",
        "each solution task's `depends_on`",
    ),
    task(
        "planex",
        "solution.tasks[].description",
        "each solution task's `description`",
    ),
    task(
        "planex",
        "solution.tasks[].implementation",
        "each solution task's `implementation[]` steps",
    ),
    task(
        "planex",
        "solution.tasks[].files",
        "each solution task's files: `files[].path`, legacy `modification_points[].file`",
    ),
    task(
        "planex",
        "solution.tasks[].files[].target",
        "where in each file (`files[].target`, `modification_points[].target`)",
    ),
    task(
        "planex",
        "solution.tasks[].files[].change",
        "what to change in each file (`files[].change`/`changes[]`, `modification_points[].change`)",
    ),
    task(
        "planex",
        "solution.tasks[].criteria",
        "each solution task's `convergence.criteria` (legacy `acceptance`)",
    ),
    task(
        "planex",
        "solution.tasks[].verification",
        "each solution task's `convergence.verification` commands (legacy `acceptance.verification`)",
    ),
    task(
        "planex",
        "solution.tasks[].definition_of_done",
        "each solution task's `convergence.definition_of_done`",
    ),
    task(
        "planex",
        "solution.tasks[].test_commands",
        "each solution task's `test.commands`",
    ),
    task(
        "planex",
        "solution.tasks[].coverage_target",
        "each solution task's `test.coverage_target`",
    ),
    untrusted(
        "planex",
        "issue.title",
        "the issue's title (issue tracker)",
        CUT_TRACKER,
    ),
    untrusted(
        "planex",
        "issue.body",
        "the issue's body (issue tracker)",
        CUT_TRACKER,
    ),
    untrusted(
        "planex",
        "issue.comments",
        "the issue's `feedback[].content` (issue tracker)",
        CUT_TRACKER,
    ),
    untrusted(
        "planex",
        "previous_error",
        "the previous attempt's error",
        CUT_OUTPUT,
    ),
    untrusted(
        "planex",
        "conflict",
        "a revision after a merge conflict: the conflicted files, git's messages and the commits that landed on them (isolated sessions); optional",
        CUT_OUTPUT,
    ),
    task(
        "test-fix",
        "task.title",
        "the `TESTRUN-*` task's subject/title",
    ),
    task(
        "test-fix",
        "task.description",
        "the `TESTRUN-*` task's description",
    ),
    task(
        "test-fix",
        "test_commands",
        "the command that runs the suite (wavecrew's test runner)",
    ),
    task(
        "test-fix",
        "test_dir",
        "the description's `Input:` test folder",
    ),
    task(
        "test-fix",
        "pass_rate",
        "the pass rate of the round, as wavecrew counted it",
    ),
    task(
        "test-fix",
        "pass_rate_target",
        "the pass rate to reach (0.95 by default)",
    ),
    task(
        "test-fix",
        "coverage",
        "the coverage of the round, as wavecrew read it",
    ),
    task(
        "test-fix",
        "coverage_target",
        "the description's `Coverage target:` (80 % by default)",
    ),
    untrusted(
        "test-fix",
        "failures",
        "each failing test's name, file and failure output (the test report)",
        CUT_TEST_OUTPUT,
    ),
    untrusted(
        "test-fix",
        "test_output",
        "the end of the test run's output, when the report holds no failure messages",
        CUT_TEST_OUTPUT,
    ),
    untrusted(
        "test-fix",
        "previous_error",
        "the previous attempt's error",
        CUT_OUTPUT,
    ),
];

/// The fields of `template`.
pub fn of(template: &str) -> impl Iterator<Item = &'static Field> + '_ {
    FIELDS.iter().filter(move |f| f.template == template)
}

/// The cut order of a field marked `name` (unknown names last).
pub fn cut_rank(name: &str) -> u8 {
    FIELDS
        .iter()
        .filter(|f| f.name == name)
        .filter_map(|f| f.cut)
        .min()
        .unwrap_or(u8::MAX - 1)
}

/// The table as `docs/prompts.md` shows it.
pub fn markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (template, roles) in TEMPLATE_ROLES {
        let _ = write!(out, "### `{template}`: {roles}\n\n");
        out.push_str("| field | from | kind | cut |\n|---|---|---|---|\n");
        for f in of(template) {
            let cut = f.cut.map_or_else(|| "never".to_owned(), |r| r.to_string());
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                f.name,
                f.source,
                f.trust.describe(),
                cut
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_is_in_the_table_and_every_row_names_a_template() {
        for name in super::super::Prompts::names() {
            assert!(
                TEMPLATE_ROLES.iter().any(|(t, _)| *t == name),
                "template {name} has no roles in the table"
            );
            assert!(of(name).next().is_some(), "template {name} has no fields");
        }
        for f in FIELDS {
            assert!(
                super::super::Prompts::names().contains(&f.template),
                "{}: no such template",
                f.template
            );
        }
    }

    #[test]
    fn untrusted_material_is_cut_before_the_plan() {
        assert!(cut_rank("failures") < cut_rank("previous_error"));
        assert!(cut_rank("previous_error") < cut_rank("wisdom"));
        assert!(cut_rank("prior_summaries") < cut_rank("plan_context"));
        assert!(cut_rank("wisdom") < cut_rank("plan_context"));
        assert_eq!(cut_rank("task.description"), u8::MAX - 1);
    }
}
