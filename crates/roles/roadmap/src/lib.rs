//! Seed 004, the roadmap-dev `EXEC-*` executor, as a [`Role`].
//!
//! * phase 2: the phase (`- Folder:` / `- Phase:` as the coordinator
//!   writes them, or `Session:` / `Phase:`), its tasks from
//!   `phase-<N>/.task/IMPL-*.json` (the roadmap task shape), waves through
//!   the scheduler (cycles broken as the seed does; an unknown dependency is
//!   an error, not a silent serialisation), the resume check (a task with
//!   its `summary-<ID>.md` is done; all done → report only), and the
//!   summaries of earlier phases as context (fenced in the prompt: earlier
//!   agents wrote them);
//! * phase 3: each task's prompt carries its title, description,
//!   implementation steps, criteria, definition of done and each declared
//!   file's action, target and change ([`task_prompt_values`]); the tasks
//!   of each wave run in parallel through the
//!   dispatcher, whose file-overlap gate keeps two tasks that touch the
//!   same file apart (the seed ran them one by one and let the last write
//!   win); the seed's strategy table decides how prompts are batched
//!   (≤ 2 tasks in a wave: one attempt each; 3–5: one attempt for the
//!   wave; more: one attempt per module); `exec_progress` after each wave;
//!   `summary-<ID>.md` per task with its §2.6 frontmatter written by a YAML
//!   serializer;
//! * phase 4: every affected file exists, the syntax check passes, then
//!   `exec_complete`.
//!
//! ```
//! use wavecrew_core::{Task, TaskId};
//! use wavecrew_role_roadmap::batch_wave;
//!
//! // The strategy table: two tasks in a wave run as two attempts.
//! let wave: Vec<Task> = ["IMPL-101", "IMPL-102"]
//!     .iter()
//!     .map(|id| Task::new(TaskId::new(*id).unwrap(), *id, "do it"))
//!     .collect();
//! assert_eq!(batch_wave(&wave).len(), 2);
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value, json};
use wavecrew_backends::attempts::TaskRun;
use wavecrew_core::role::{PhaseError, Report, Role};
use wavecrew_core::{Mode, NewMessage, Task, TaskId, TaskStatus};
use wavecrew_role_kit::{
    Attempt, Checked, Finish, Gate, Landed, ReportBuilder, RoleContext, Workspace, plan_text,
};
use wavecrew_scheduler::{
    BuildOptions, CyclePolicy, Dag, DispatchOptions, Dispatcher, RunOutcome, TaskNode, TaskRunner,
};
use wavecrew_validation::{CheckStatus, check_syntax};

static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?im)^\s*(?:-\s*)?(folder|session|phase)\s*:\s*(.+?)\s*$").expect("valid regex")
});

/// Where and which phase an `EXEC-*` task is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseSpec {
    /// The session folder, as written (`Folder:` or `Session:`).
    pub folder: Option<String>,
    /// The phase number.
    pub phase: u32,
}

/// Read `- Folder:` / `- Phase:` (or `Session:` / `Phase:`); without a
/// phase line, `EXEC-N01` means phase N.
pub fn parse_description(task: &Task) -> Option<PhaseSpec> {
    let mut folder = None;
    let mut phase = None;
    for c in FIELD.captures_iter(&task.description) {
        let v = c[2].trim().trim_matches('`').to_owned();
        match c[1].to_ascii_lowercase().as_str() {
            "phase" => phase = v.parse().ok(),
            _ => folder = Some(v),
        }
    }
    let phase = phase.or_else(|| {
        let n = task.id.number()?;
        u32::try_from(n / 100).ok().filter(|p| *p > 0)
    })?;
    Some(PhaseSpec { folder, phase })
}

/// The frontmatter of `summary-<ID>.md` (§2.6), serialized as YAML: quotes
/// escaped, empty lists as `[]`, `completed` with its zone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryFront {
    /// The phase.
    pub phase: u32,
    /// The task id.
    pub task: String,
    /// Its title.
    pub title: String,
    /// Its dependencies.
    pub requires: Vec<String>,
    /// What it provides (itself).
    pub provides: Vec<String>,
    /// The files it affects.
    pub affects: Vec<String>,
    /// Always empty at write time.
    #[serde(rename = "tech-stack")]
    pub tech_stack: Vec<String>,
    /// The key files (= affects).
    #[serde(rename = "key-files")]
    pub key_files: Vec<String>,
    /// Always empty at write time.
    #[serde(rename = "key-decisions")]
    pub key_decisions: Vec<String>,
    /// Always empty at write time.
    #[serde(rename = "patterns-established")]
    pub patterns_established: Vec<String>,
    /// `pending` until the verifier runs.
    #[serde(rename = "convergence-met")]
    pub convergence_met: String,
    /// `<minutes>m`, one decimal (the seed rounded fast tasks to `0m`).
    pub duration: String,
    /// RFC 3339 with the zone.
    pub completed: String,
}

/// A whole `summary-<ID>.md`.
pub fn summary_markdown(front: &SummaryFront, result: &str, criteria: &[String]) -> String {
    let yaml = serde_norway::to_string(front).unwrap_or_default();
    let mut out = format!(
        "---\n{yaml}---\n\n# Summary: {} - {}\n\n## Implementation Result\n\n{}\n\n## Files Affected\n\n",
        front.task,
        front.title,
        result.trim()
    );
    for f in &front.affects {
        let _ = writeln!(out, "- `{f}`");
    }
    out.push_str("\n## Convergence Criteria\n\n");
    for c in criteria {
        let _ = writeln!(out, "- [ ] {c}");
    }
    out
}

/// The seed's strategy table: how the tasks of one wave are grouped into
/// attempts.
pub fn batch_wave(tasks: &[Task]) -> Vec<Vec<Task>> {
    match tasks.len() {
        0 => Vec::new(),
        1 | 2 => tasks.iter().map(|t| vec![t.clone()]).collect(),
        3..=5 => vec![tasks.to_vec()],
        _ => {
            let mut by_module: BTreeMap<String, Vec<Task>> = BTreeMap::new();
            for t in tasks {
                by_module.entry(module_of(t)).or_default().push(t.clone());
            }
            by_module.into_values().collect()
        }
    }
}

/// A task's module: `meta.module`, else the folder of the first file it
/// lists (in the order written: the first is its main file).
pub fn module_of(task: &Task) -> String {
    if let Some(m) = task
        .extra
        .get("meta")
        .and_then(|m| m.get("module"))
        .and_then(Value::as_str)
    {
        return m.to_owned();
    }
    let first = task
        .extra
        .get("files")
        .and_then(Value::as_array)
        .and_then(|f| f.first())
        .and_then(|f| f.get("path").and_then(Value::as_str).or_else(|| f.as_str()))
        .map(str::to_owned)
        .or_else(|| task.files().into_iter().next());
    first
        .and_then(|f| Path::new(&f).parent().map(|p| p.display().to_string()))
        .unwrap_or_default()
}

/// The roadmap role.
#[derive(Debug, Clone)]
pub struct RoadmapRole {
    /// The session, configuration, bus (for `exec_progress`) and templates.
    pub ctx: RoleContext,
    /// Units of a wave at once.
    pub max_parallel: usize,
}

/// What the phases carry.
#[derive(Debug)]
pub struct PhaseWork {
    spec: PhaseSpec,
    phase_dir: PathBuf,
    tasks: Vec<Task>,
    waves: Vec<Vec<TaskId>>,
    done: BTreeSet<TaskId>,
    context: String,
    spans: BTreeMap<String, (f64, f64)>,
    failures: Vec<String>,
    /// Where the phase's work is, as one: its own worktree when the phase
    /// waits for a person's review as a whole (`review = "human"` in an
    /// isolated session); else the project folder (each unit lands on its
    /// own).
    workspace: Workspace,
    /// The summaries of a phase held for review, written once its work is
    /// committed on its branch.
    held_summaries: HeldSummaries,
}

/// Summaries (their paths and texts) held back until the phase's work is
/// committed on its branch.
type HeldSummaries = Arc<Mutex<Vec<(PathBuf, String)>>>;

fn summary_path(phase_dir: &Path, id: &TaskId) -> PathBuf {
    phase_dir.join(format!("summary-{}.md", id.as_str()))
}

/// The summaries of phases `1..phase`, concatenated, each under a heading
/// naming its file (relative to the session folder). Earlier agents wrote
/// them: the prompt fences them as untrusted.
pub fn prior_summaries(session_dir: &Path, phase: u32) -> String {
    let mut out = String::new();
    for p in 1..phase {
        let dir = session_dir.join(format!("phase-{p}"));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|f| {
                f.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("summary-"))
                    && f.extension().is_some_and(|x| x.eq_ignore_ascii_case("md"))
            })
            .collect();
        files.sort();
        for f in files {
            if let Ok(t) = std::fs::read_to_string(&f) {
                let shown = f.strip_prefix(session_dir).unwrap_or(&f);
                let _ = writeln!(out, "### phase {p}: {}\n{t}", shown.display());
            }
        }
    }
    out
}

/// A roadmap task as the `execution` and `batch` templates show it: title,
/// description, implementation steps, acceptance criteria (with the
/// verification command), definition of done, and each declared file with
/// its action, target and change. Parts of the wrong shape are left out
/// and added to `notes`.
pub fn task_prompt_values(t: &Task, notes: &mut Vec<String>) -> Value {
    let mut own = Vec::new();
    let implementation =
        plan_text::steps(t.extra.get("implementation"), "implementation", &mut own);
    let mut files = plan_text::file_changes(t.extra.get("files"), "files", &mut own);
    for path in t.files() {
        if !files.iter().any(|f| f.path == path) {
            files.push(plan_text::FileChange {
                path,
                ..plan_text::FileChange::default()
            });
        }
    }
    let definition_of_done = match t.extra.get("convergence") {
        Some(Value::Object(c)) => plan_text::field(
            c.get("definition_of_done"),
            "convergence.definition_of_done",
            &mut own,
        ),
        _ => String::new(),
    };
    notes.extend(own.into_iter().map(|n| format!("{}: {n}", t.id.as_str())));
    json!({
        "id": t.id.as_str(), "title": t.title(), "description": t.description,
        "implementation": implementation,
        "acceptance_criteria": t.acceptance_criteria().into_iter().map(|c| c.text).collect::<Vec<_>>(),
        "definition_of_done": definition_of_done,
        "files": files,
    })
}

/// The template (`execution` for one task, `batch` for several) and its
/// context for one attempt at `tasks`, with the earlier phases' summaries;
/// the notes say what of the tasks was left out.
pub fn prompt_context(
    tasks: &[Task],
    cwd: &str,
    prior_summaries: &str,
    previous_error: Option<&str>,
    attempt: u32,
    max_attempts: u32,
) -> (&'static str, Value, Vec<String>) {
    let mut notes = Vec::new();
    let values: Vec<Value> = tasks
        .iter()
        .map(|t| task_prompt_values(t, &mut notes))
        .collect();
    let template = if values.len() == 1 {
        "execution"
    } else {
        "batch"
    };
    let context = json!({
        "task": values.first(), "tasks": values,
        "cwd": cwd,
        "plan_context": "", "wisdom": "",
        "prior_summaries": prior_summaries,
        "previous_error": previous_error, "attempt": attempt,
        "max_attempts": max_attempts,
    });
    (template, context, notes)
}

struct UnitRunner {
    role: RoadmapShared,
    units: HashMap<TaskId, (usize, Vec<Task>)>,
    wave_sizes: Vec<usize>,
    finished: Mutex<Vec<usize>>,
    started: Instant,
    spans: Mutex<BTreeMap<String, (f64, f64)>>,
    failures: Mutex<Vec<String>>,
}

#[derive(Clone)]
struct RoadmapShared {
    ctx: RoleContext,
    phase_dir: PathBuf,
    phase: u32,
    backend: String,
    context: String,
    /// The phase task's claim number: an isolated unit's worktree is that
    /// claim's.
    claim: u32,
    /// The phase task's metadata (`review`, `may_remove_tests`, …): what
    /// each unit's gate reads as its task's.
    metadata: Map<String, Value>,
    /// A phase held for a person's review as a whole: the folder (the
    /// phase's own worktree) every unit works in, and the summaries held
    /// back until the phase's work is committed on its branch.
    shared: Option<(PathBuf, HeldSummaries)>,
}

impl RoadmapShared {
    /// A unit as the merge queue knows it: `P<phase>-<unit>`, unique in
    /// the session (task ids repeat from phase to phase).
    fn unit_task(&self, unit: &TaskId, tasks: &[Task]) -> Result<Task, PhaseError> {
        let id = TaskId::new(format!("P{}-{}", self.phase, unit.as_str()))
            .map_err(|e| PhaseError::input(format!("{}: {e}", unit.as_str())))?;
        let titles: Vec<&str> = tasks.iter().map(Task::title).collect();
        let mut unit = Task::new(
            id,
            format!("phase {}: {}", self.phase, titles.join("; ")),
            "",
        );
        // The gate reads the phase's own settings, and the files the
        // unit's tasks declare.
        unit.metadata.clone_from(&self.metadata);
        let files: BTreeSet<String> = tasks.iter().flat_map(Task::files).collect();
        unit.metadata.insert("target_files".into(), json!(files));
        Ok(unit)
    }

    /// One attempt of a unit's tasks in `dir`, the agent told
    /// `first_error` first (a revision's account of why its first version
    /// did not land).
    async fn attempt_unit(
        &self,
        unit: &TaskId,
        tasks: &[Task],
        dir: &Path,
        first_error: Option<String>,
    ) -> Result<TaskRun, PhaseError> {
        let cwd = dir.display().to_string();
        let max_attempts = self.ctx.max_attempts();
        let (_, _, notes) = prompt_context(tasks, &cwd, &self.context, None, 1, max_attempts);
        for note in notes {
            tracing::warn!("{}: {note}", unit.as_str());
        }
        let first_error = Mutex::new(first_error);
        let render = |n: u32, error: Option<&str>| {
            let pending = first_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let (template, values, _) = prompt_context(
                tasks,
                &cwd,
                &self.context,
                pending.as_deref().or(error),
                n,
                max_attempts,
            );
            self.ctx.render(template, &values)
        };
        self.ctx
            .attempt(&Attempt::new(
                unit,
                &self.backend,
                dir,
                Mode::Write,
                &render,
            ))
            .await
    }
}

/// A unit's work on its way to the integration branch.
struct UnitWork {
    /// The unit's id in the phase's dispatcher.
    id: TaskId,
    /// The roadmap tasks it does.
    tasks: Vec<Task>,
    /// Its worktree.
    workspace: Workspace,
    /// Its agent's attempts.
    run: TaskRun,
}

/// Each unit's work goes through the role kit's finish phase, as every
/// writing role's: the lane against the files its tasks declare, the
/// tests against its base, and the merge queue with `[integration]
/// verify` and one revision.
#[async_trait::async_trait]
impl Finish for RoadmapShared {
    type Work = UnitWork;
    type Evidence = ();

    fn finish_role(&self) -> &'static str {
        "executor"
    }

    fn finish_ctx(&self) -> &RoleContext {
        &self.ctx
    }

    fn workspace<'w>(&self, work: &'w UnitWork) -> &'w Workspace {
        &work.workspace
    }

    fn files_in_place(&self, work: &UnitWork) -> Vec<String> {
        work.run.files_changed()
    }

    fn commit_message(&self, task: &Task, _work: &UnitWork) -> String {
        task.subject.clone()
    }

    /// The phase's own checks (files there, syntax) run on the whole phase
    /// once it is done.
    async fn check(
        &self,
        _task: &Task,
        _work: &UnitWork,
        _files: &[String],
        _lane_failed: bool,
    ) -> Result<Checked<()>, PhaseError> {
        Ok(Checked::passed(()))
    }

    async fn completed(
        &self,
        task: &Task,
        _work: &UnitWork,
        _gate: &Gate<'_, ()>,
    ) -> ReportBuilder {
        ReportBuilder::completed("unit_landed", task)
    }

    /// The unit's tasks again, in a worktree of the new integration tip,
    /// the agent told what conflicted or what the merged result failed.
    async fn revise(
        &self,
        task: &Task,
        work: &UnitWork,
        unlanded: &Landed,
    ) -> Result<UnitWork, PhaseError> {
        let workspace = self.ctx.workspace(task, self.claim + 1)?;
        let brief = unlanded
            .conflict_brief(&work.workspace)
            .or_else(|| unlanded.rejection_brief());
        let run = self
            .attempt_unit(&work.id, &work.tasks, workspace.dir(), brief)
            .await?;
        if !run.success {
            return Err(PhaseError::agent(run.failure.unwrap_or_default()));
        }
        Ok(UnitWork {
            id: work.id.clone(),
            tasks: work.tasks.clone(),
            workspace,
            run,
        })
    }
}

#[async_trait::async_trait]
impl TaskRunner for UnitRunner {
    async fn run(&self, unit: &TaskId) -> RunOutcome {
        let Some((wave, tasks)) = self.units.get(unit) else {
            return RunOutcome::failed("unknown unit");
        };
        let begin = self.started.elapsed().as_secs_f64();
        let r = &self.role;
        let fail = |why: String| {
            self.failures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{}: {why}", unit.as_str()));
            RunOutcome::failed(why)
        };
        // Isolated: the unit works in a worktree of its own, from the
        // integration tip (which holds the earlier waves' landed work);
        // in a phase held for review, in the phase's worktree.
        let workspace = match &r.shared {
            Some((dir, _)) => r
                .unit_task(unit, tasks)
                .map(|u| (Workspace::InPlace { dir: dir.clone() }, u)),
            None => r
                .unit_task(unit, tasks)
                .and_then(|u| Ok((r.ctx.workspace(&u, r.claim)?, u))),
        };
        let (workspace, unit_task) = match workspace {
            Ok(w) => w,
            Err(e) => return fail(e.message),
        };
        let run = match r.attempt_unit(unit, tasks, workspace.dir(), None).await {
            Ok(run) => run,
            Err(e) => return fail(e.message),
        };
        // The work lands before its summaries are written: a summary is
        // what a resume takes as done. A phase held for review goes
        // through the gate as a whole, after its last unit.
        let run = if run.success && r.shared.is_none() {
            let work = UnitWork {
                id: unit.clone(),
                tasks: tasks.clone(),
                workspace,
                run,
            };
            let report = wavecrew_role_kit::finish(r, &unit_task, &work).await;
            if report.status != TaskStatus::Completed {
                let why = report.data.get("error").and_then(Value::as_str);
                return fail(why.unwrap_or(&report.summary).to_owned());
            }
            work.run
        } else {
            run
        };
        let end = self.started.elapsed().as_secs_f64();
        let result = run
            .last()
            .and_then(|o| o.final_message.clone().or_else(|| o.error.clone()))
            .unwrap_or_default();
        for t in tasks {
            self.spans
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(t.id.as_str().to_owned(), (begin, end));
            if !run.success {
                continue;
            }
            let files = t.files();
            let front = SummaryFront {
                phase: r.phase,
                task: t.id.as_str().to_owned(),
                title: t.title().to_owned(),
                requires: t.blocked_by.iter().map(|d| d.as_str().to_owned()).collect(),
                provides: vec![t.id.as_str().to_owned()],
                affects: files.clone(),
                tech_stack: Vec::new(),
                key_files: files,
                key_decisions: Vec::new(),
                patterns_established: Vec::new(),
                convergence_met: "pending".into(),
                duration: format!("{:.1}m", (end - begin) / 60.0),
                completed: jiff::Zoned::now().timestamp().to_string(),
            };
            let criteria: Vec<String> = t
                .acceptance_criteria()
                .into_iter()
                .map(|c| c.text)
                .collect();
            let text = summary_markdown(&front, &result, &criteria);
            let path = summary_path(&r.phase_dir, &t.id);
            if let Some((_, held)) = &r.shared {
                held.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((path, text));
                continue;
            }
            if let Err(e) = wavecrew_core::fsutil::write_atomic(&path, text.as_bytes()) {
                self.failures
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(format!("{}: {e}", t.id.as_str()));
            }
        }
        if !run.success {
            let why = run.failure.unwrap_or_default();
            self.failures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{}: {why}", unit.as_str()));
            return RunOutcome::failed(why);
        }
        // exec_progress when this unit finished its wave.
        let mut finished = self
            .finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        finished[*wave] += 1;
        if finished[*wave] == self.wave_sizes[*wave] {
            let waves = self.wave_sizes.len();
            let done_units: usize = finished.iter().sum();
            let total_units: usize = self.wave_sizes.iter().sum();
            let mut data = Map::new();
            data.insert("phase".into(), json!(r.phase));
            data.insert("wave".into(), json!(wave + 1));
            data.insert("waves".into(), json!(waves));
            let _ = r.ctx.bus.log(NewMessage {
                from: "executor".into(),
                to: Some("coordinator".into()),
                kind: Some("exec_progress".into()),
                summary: Some(format!(
                    "[executor] Wave {}/{waves} complete ({done_units}/{total_units} attempts done)",
                    wave + 1
                )),
                data: Some(data),
                reference: None,
            });
        }
        RunOutcome::Succeeded
    }
}

#[async_trait::async_trait]
impl Role for RoadmapRole {
    type Work = PhaseWork;

    fn name(&self) -> &'static str {
        "executor"
    }

    fn prefix(&self) -> &'static str {
        "EXEC"
    }

    fn takes(&self, task: &Task) -> bool {
        task.id.as_str().starts_with("EXEC-")
    }

    fn completion_kind(&self) -> &'static str {
        "exec_complete"
    }

    async fn prepare(&self, task: &Task) -> Result<PhaseWork, PhaseError> {
        let spec = parse_description(task).ok_or_else(|| {
            PhaseError::input(format!(
                "{}: no phase (`- Phase: <N>` in the description, or an id EXEC-N01)",
                task.id.as_str()
            ))
        })?;
        let phase_dir = self.ctx.session_dir.join(format!("phase-{}", spec.phase));
        let task_dir = phase_dir.join(".task");
        let loaded = wavecrew_core::source::load(&task_dir).map_err(|e| {
            PhaseError::input(format!(
                "phase {}: no task files in {} ({e}); the planner has not written them",
                spec.phase,
                task_dir.display()
            ))
        })?;
        let tasks: Vec<Task> = loaded
            .tasks
            .iter()
            .filter(|t| t.id.as_str().starts_with("IMPL-"))
            .cloned()
            .collect();
        if tasks.is_empty() {
            return Err(PhaseError::input(format!(
                "phase {}: no IMPL-*.json in {}",
                spec.phase,
                task_dir.display()
            )));
        }
        // A phase a person reviews is held as one piece of work: its units
        // work in one worktree (the dispatcher's file-overlap gate keeps
        // two that touch the same file apart, as in place), and it is done
        // again whole until a person approves it (its summaries do not make
        // its units done: its work is not on the integration branch).
        let reviewed = wavecrew_role_kit::review_gate::wants_human_review(task)
            && self.ctx.integration()?.is_some();
        let workspace = if reviewed {
            self.ctx.workspace(task, task.attempts)?
        } else {
            Workspace::InPlace {
                dir: self.ctx.project_root.clone(),
            }
        };
        let done: BTreeSet<TaskId> = tasks
            .iter()
            .filter(|t| !reviewed && summary_path(&phase_dir, &t.id).is_file())
            .map(|t| t.id.clone())
            .collect();
        let nodes = tasks
            .iter()
            .map(|t| TaskNode::new(t.id.clone(), loaded.dependencies_of(t)).with_files(t.files()));
        let dag = Dag::build(
            nodes,
            &BuildOptions::default().with_cycle_policy(CyclePolicy::Force),
        )
        .map_err(|e| PhaseError::input(format!("phase {}: {e}", spec.phase)))?;
        let waves: Vec<Vec<TaskId>> = dag
            .wave_ids()
            .into_iter()
            .map(|w| w.into_iter().cloned().collect())
            .collect();
        let context = prior_summaries(&self.ctx.session_dir, spec.phase);
        Ok(PhaseWork {
            spec,
            phase_dir,
            tasks,
            waves,
            done,
            context,
            spans: BTreeMap::new(),
            failures: Vec::new(),
            workspace,
            held_summaries: Arc::default(),
        })
    }

    async fn execute(&self, task: &Task, work: &mut PhaseWork) -> Result<(), PhaseError> {
        if work.done.len() == work.tasks.len() {
            return Ok(()); // resume check: every summary is there.
        }
        let decision = self.ctx.decide(task, None);
        let shared = match &work.workspace {
            Workspace::Isolated { .. } => Some((
                work.workspace.dir().to_owned(),
                Arc::clone(&work.held_summaries),
            )),
            Workspace::InPlace { .. } => None,
        };
        let by_id: HashMap<&TaskId, &Task> = work.tasks.iter().map(|t| (&t.id, t)).collect();
        let mut units: HashMap<TaskId, (usize, Vec<Task>)> = HashMap::new();
        let mut nodes: Vec<TaskNode> = Vec::new();
        let mut previous: Vec<TaskId> = Vec::new();
        let mut wave_sizes = Vec::new();
        for (w, wave) in work.waves.iter().enumerate() {
            let todo: Vec<Task> = wave
                .iter()
                .filter(|id| !work.done.contains(*id))
                .filter_map(|id| by_id.get(id).map(|t| (*t).clone()))
                .collect();
            let groups = batch_wave(&todo);
            let mut this = Vec::new();
            for (u, group) in groups.into_iter().enumerate() {
                let id = if group.len() == 1 {
                    group[0].id.clone()
                } else {
                    TaskId::new(format!(
                        "P{}W{}U{}-{:03}",
                        work.spec.phase,
                        w + 1,
                        u + 1,
                        u + 1
                    ))
                    .map_err(|e| PhaseError::input(e.to_string()))?
                };
                let files: Vec<String> = group.iter().flat_map(Task::files).collect();
                nodes.push(TaskNode::new(id.clone(), previous.clone()).with_files(files));
                units.insert(id.clone(), (w, group));
                this.push(id);
            }
            wave_sizes.push(this.len());
            if !this.is_empty() {
                previous = this;
            }
        }
        let dag = Dag::build(nodes, &BuildOptions::default())
            .map_err(|e| PhaseError::input(format!("phase {}: {e}", work.spec.phase)))?;
        let runner = Arc::new(UnitRunner {
            role: RoadmapShared {
                ctx: self.ctx.clone(),
                phase_dir: work.phase_dir.clone(),
                phase: work.spec.phase,
                backend: decision.backend,
                context: work.context.clone(),
                claim: task.attempts.max(1),
                metadata: task.metadata.clone(),
                shared,
            },
            units,
            finished: Mutex::new(vec![0; wave_sizes.len()]),
            wave_sizes,
            started: Instant::now(),
            spans: Mutex::new(BTreeMap::new()),
            failures: Mutex::new(Vec::new()),
        });
        let dispatcher = Dispatcher::new(
            &dag,
            DispatchOptions::default().with_max_parallel(Some(self.max_parallel.max(1))),
        )
        .map_err(|e| PhaseError::input(e.to_string()))?;
        let report = dispatcher.run(Arc::clone(&runner)).await;
        work.spans = runner
            .spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        work.failures.clone_from(
            &runner
                .failures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if report.all_succeeded() && work.failures.is_empty() {
            Ok(())
        } else {
            Err(PhaseError::agent(format!(
                "phase {}: {}",
                work.spec.phase,
                work.failures.join("; ")
            )))
        }
    }

    /// The phase's own checks (every affected file there, the syntax
    /// check), then its report. Isolated, the phase is checked as it
    /// landed, in a detached worktree of the integration tip; a phase held
    /// for review goes through the role kit's finish phase as one piece of
    /// work, checked in its own worktree.
    async fn validate(&self, task: &Task, work: &PhaseWork) -> Report {
        if let Workspace::Isolated { .. } = &work.workspace {
            // The phase's lane is its tasks' declared files.
            let mut gated = task.clone();
            let files: BTreeSet<String> = work.tasks.iter().flat_map(Task::files).collect();
            gated.metadata.insert("target_files".into(), json!(files));
            return wavecrew_role_kit::finish(self, &gated, work).await;
        }
        let view = match self.ctx.read_only_workspace(task) {
            Ok(view) => view,
            Err(e) => return self.failure_report(task, &e),
        };
        let checks = self.phase_checks(work, view.dir()).await;
        view.finish(true);
        self.phase_report(task, work, &checks).build()
    }
}

/// What the phase's own checks found.
#[derive(Debug)]
pub struct PhaseChecks {
    /// Declared files that are not there (`<task>: <file>`).
    missing: Vec<String>,
    /// The syntax check of every affected file.
    syntax: wavecrew_validation::SyntaxReport,
}

impl PhaseChecks {
    /// What the checks found wrong, in the report's words.
    fn problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = Vec::new();
        if !self.missing.is_empty() {
            problems.push(format!("target files missing: {}", self.missing.join(", ")));
        }
        if self.syntax.status == CheckStatus::Fail {
            problems.push("the syntax check failed".into());
        }
        problems
    }
}

impl RoadmapRole {
    /// Every affected file of the phase's tasks is in `root` (but those a
    /// task deletes), and the syntax check passes on them.
    async fn phase_checks(&self, work: &PhaseWork, root: &Path) -> PhaseChecks {
        let mut missing = Vec::new();
        let mut affected: Vec<String> = Vec::new();
        for t in &work.tasks {
            for f in t.files() {
                let removed = t
                    .extra
                    .get("files")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|x| {
                        x.get("path").and_then(Value::as_str) == Some(f.as_str())
                            && x.get("action").and_then(Value::as_str) == Some("delete")
                    });
                if !removed && !root.join(&f).exists() {
                    missing.push(format!("{}: {f}", t.id.as_str()));
                }
                affected.push(f);
            }
        }
        affected.sort();
        affected.dedup();
        let syntax = check_syntax(root, &self.ctx.syntax_options(affected)).await;
        PhaseChecks { missing, syntax }
    }

    /// `exec_complete` (or `error` when the checks found problems) with
    /// seed 004's fields.
    fn phase_report(&self, task: &Task, work: &PhaseWork, checks: &PhaseChecks) -> ReportBuilder {
        let problems = checks.problems();
        let failed = !problems.is_empty();
        let summary = format!(
            "Phase {} execution complete. Tasks executed: {}, Waves: {}, Summaries: {}.{}",
            work.spec.phase,
            work.tasks.len() - work.done.len(),
            work.waves.len(),
            work.tasks.len(),
            if failed {
                " Self-validation found problems."
            } else {
                " Ready for verification."
            }
        );
        let (status, kind) = if failed {
            (TaskStatus::Failed, "error")
        } else {
            (TaskStatus::Completed, "exec_complete")
        };
        let mut report = ReportBuilder::new(status, kind, task);
        if failed {
            // What `wavecrew run` and the reports show as the task's error.
            report.insert("error", problems.join("; "));
        }
        self.phase_fields(work, report)
            .field("missing_files", &checks.missing)
            .field("syntax", &checks.syntax)
            .summary(summary)
    }

    /// The phase's counts, summaries and spans on `report`.
    fn phase_fields(&self, work: &PhaseWork, report: ReportBuilder) -> ReportBuilder {
        report
            .field("phase", work.spec.phase)
            .field("tasks_executed", work.tasks.len() - work.done.len())
            .field("tasks_resumed", work.done.len())
            .field("waves", work.waves.len())
            .field(
                "summaries",
                work.tasks
                    .iter()
                    .map(|t| {
                        summary_path(&work.phase_dir, &t.id)
                            .strip_prefix(&self.ctx.session_dir)
                            .map(|p| p.display().to_string())
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>(),
            )
            .field(
                "spans",
                work.spans
                    .iter()
                    .map(|(k, (a, b))| (k.clone(), json!({"start": a, "end": b})))
                    .collect::<Map<String, Value>>(),
            )
    }

    /// Write the summaries held back while the phase's work was not yet
    /// committed; a summary that cannot be written is a warning (the
    /// phase's work is safe on its branch).
    fn write_held_summaries(work: &PhaseWork) {
        let held = std::mem::take(
            &mut *work
                .held_summaries
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for (path, text) in held {
            if let Err(e) = wavecrew_core::fsutil::write_atomic(&path, text.as_bytes()) {
                tracing::warn!("{}: {e}", path.display());
            }
        }
    }
}

/// A phase a person reviews goes through the role kit's finish phase as
/// one piece of work: the lane, the tests against its base, and the
/// review gate, which commits it on its branch and holds it (`wavecrew
/// approve` lands it through the merge queue).
#[async_trait::async_trait]
impl Finish for RoadmapRole {
    type Work = PhaseWork;
    type Evidence = PhaseChecks;

    fn finish_role(&self) -> &'static str {
        "executor"
    }

    fn finish_ctx(&self) -> &RoleContext {
        &self.ctx
    }

    fn workspace<'w>(&self, work: &'w PhaseWork) -> &'w Workspace {
        &work.workspace
    }

    /// Only a phase in its own worktree goes through the gate: its branch
    /// says what changed.
    fn files_in_place(&self, _work: &PhaseWork) -> Vec<String> {
        Vec::new()
    }

    fn commit_message(&self, task: &Task, work: &PhaseWork) -> String {
        format!("{}: phase {}", task.id.as_str(), work.spec.phase)
    }

    async fn check(
        &self,
        _task: &Task,
        work: &PhaseWork,
        _files: &[String],
        _lane_failed: bool,
    ) -> Result<Checked<PhaseChecks>, PhaseError> {
        let checks = self.phase_checks(work, work.workspace.dir()).await;
        let problems = checks.problems();
        Ok(Checked {
            failure: (!problems.is_empty()).then(|| problems.join("; ")),
            inconclusive: Vec::new(),
            evidence: checks,
        })
    }

    async fn completed(
        &self,
        task: &Task,
        work: &PhaseWork,
        gate: &Gate<'_, PhaseChecks>,
    ) -> ReportBuilder {
        Self::write_held_summaries(work);
        self.phase_report(task, work, &gate.checked.evidence)
    }

    fn failed(&self, task: &Task, work: &PhaseWork, gate: &Gate<'_, PhaseChecks>) -> ReportBuilder {
        let report = self.phase_report(task, work, &gate.checked.evidence);
        match gate.failure {
            Some(why) => report
                .status(TaskStatus::Failed)
                .kind("error")
                .field("error", why),
            None => report,
        }
    }

    fn awaiting(
        &self,
        _task: &Task,
        work: &PhaseWork,
        gate: &Gate<'_, PhaseChecks>,
        held: ReportBuilder,
    ) -> ReportBuilder {
        // Its work is committed on its branch: what a resume takes as
        // done may be written now.
        Self::write_held_summaries(work);
        self.phase_fields(work, held)
            .field("missing_files", &gate.checked.evidence.missing)
            .field("syntax", &gate.checked.evidence.syntax)
    }

    /// A phase held for review lands only through a person's approval,
    /// whose conflicts block it for that person; the gate never lands it
    /// itself, so there is nothing to revise here.
    async fn revise(
        &self,
        task: &Task,
        _work: &PhaseWork,
        unlanded: &Landed,
    ) -> Result<PhaseWork, PhaseError> {
        Err(PhaseError::workspace(format!(
            "{}: a roadmap phase held for review is not revised by itself ({}); run it again",
            task.id.as_str(),
            unlanded
                .rejection_brief()
                .unwrap_or_else(|| unlanded.conflicting_tasks().join(", "))
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_description_forms() {
        let a = Task::new(
            TaskId::new("EXEC-201").unwrap(),
            "x",
            "## Session\n- Folder: .workflow/.team/RD-auth-2026-02-26\n- Phase: 2\n",
        );
        assert_eq!(
            parse_description(&a),
            Some(PhaseSpec {
                folder: Some(".workflow/.team/RD-auth-2026-02-26".into()),
                phase: 2
            })
        );
        let b = Task::new(TaskId::new("EXEC-301").unwrap(), "x", "Session: s\n");
        assert_eq!(parse_description(&b).unwrap().phase, 3);
    }

    #[test]
    fn frontmatter_is_real_yaml() {
        let front = SummaryFront {
            phase: 1,
            task: "IMPL-102".into(),
            title: "Handle \"quoted\" titles: and colons".into(),
            requires: vec![],
            provides: vec!["IMPL-102".into()],
            affects: vec![],
            tech_stack: vec![],
            key_files: vec![],
            key_decisions: vec![],
            patterns_established: vec![],
            convergence_met: "pending".into(),
            duration: "0.1m".into(),
            completed: "2026-11-23T09:00:00Z".into(),
        };
        let md = summary_markdown(&front, "done", &["it works".into()]);
        let yaml = md.split("---\n").nth(1).unwrap();
        let back: serde_json::Value = serde_norway::from_str(yaml).unwrap();
        assert_eq!(back["title"], "Handle \"quoted\" titles: and colons");
        assert_eq!(back["affects"], json!([]), "empty lists stay lists");
        assert_eq!(back["completed"], "2026-11-23T09:00:00Z");
    }

    #[test]
    fn the_strategy_table() {
        let t = |id: &str, file: &str| {
            let mut t = Task::new(TaskId::new(id).unwrap(), id, "d");
            t.extra.insert("files".into(), json!([{"path": file}]));
            t
        };
        assert_eq!(batch_wave(&[t("IMPL-1", "a/x")]).len(), 1);
        assert_eq!(
            batch_wave(&[t("IMPL-1", "a/x"), t("IMPL-2", "b/y")]).len(),
            2
        );
        let four: Vec<Task> = (1..=4).map(|i| t(&format!("IMPL-{i}"), "a/x")).collect();
        assert_eq!(batch_wave(&four).len(), 1);
        let six: Vec<Task> = (1..=6)
            .map(|i| t(&format!("IMPL-{i}"), if i % 2 == 0 { "a/x" } else { "b/y" }))
            .collect();
        assert_eq!(batch_wave(&six).len(), 2, "by module");
    }
}
