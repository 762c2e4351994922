//! Finding the tasks of whatever the user points at.
//!
//! `wavecrew plan …` and the roles accept four kinds of input, told apart by
//! what is on disk:
//!
//! | input | recognised by | tasks from |
//! | --- | --- | --- |
//! | a session folder | `tasks/` or `task-analysis.json` inside | the task store, plus tasks named only in `task-analysis.json` |
//! | a task folder (seed 000 `.workflow/.team/tasks/`, roadmap `phase-N/.task/`) | `*.json` files inside | each file, in any of the three task shapes |
//! | a plan file | a file | the ids the plan declares, with its dependency lines |
//!
//! A plan (`plan.md` in the session, or a task's `metadata.plan_path`,
//! relative to the session or to the project root) adds its dependency lines
//! to every kind of input.
//!
//! A session's `task-analysis.json` given as a file loads its session folder.
//!
//! Loading runs in O(V + E) (plus sorting by id): every look-up by id goes
//! through a hash index, never a scan, so `wavecrew plan waves` on 200,000
//! tasks takes well under a second (`benches/plan-waves.sh`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::analysis::{TaskAnalysis, merge_unique};
use crate::error::{CoreError, Result};
use crate::fsutil;
use crate::id::TaskId;
use crate::plan::Plan;
use crate::session::TeamSession;
use crate::store::{FileTaskStore, TaskStore, task_order};
use crate::task::{Task, TaskStatus};

/// What kind of input was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A session folder.
    Session,
    /// A folder of task JSON files (seed 000 or roadmap).
    TaskFolder,
    /// A plan file.
    PlanFile,
    /// A hand-written task file (`wavecrew.tasks.toml`, read by `wavecrew-taskfile`).
    TaskFile,
}

impl SourceKind {
    /// A short name for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Session => "session",
            SourceKind::TaskFolder => "task folder",
            SourceKind::PlanFile => "plan file",
            SourceKind::TaskFile => "task file",
        }
    }
}

/// Tasks loaded from an input, with what else was found beside them.
#[derive(Debug, Clone)]
pub struct LoadedTasks {
    /// The input path as given.
    pub path: PathBuf,
    /// What kind of input it was.
    pub kind: SourceKind,
    /// The tasks, ordered by id.
    pub tasks: Vec<Task>,
    /// The plan, if one was found.
    pub plan: Option<Plan>,
    /// Where the plan was read from.
    pub plan_path: Option<PathBuf>,
    /// Ids completed according to `team-session.json#completed_tasks`.
    pub completed: Vec<TaskId>,
    /// Things the user should know (a plan that was named but not found …).
    pub warnings: Vec<String>,
}

impl LoadedTasks {
    /// The dependencies of `task`: its own (`blockedBy`, `depends_on`) and the
    /// plan's dependency lines, without repeats. For every task at once, use
    /// [`LoadedTasks::dependency_lists`] (one pass over the plan).
    pub fn dependencies_of(&self, task: &Task) -> Vec<TaskId> {
        let mut deps = task.blocked_by.clone();
        if let Some(plan) = &self.plan {
            merge_unique(&mut deps, plan.dependencies_of(&task.id));
        }
        deps
    }

    /// [`LoadedTasks::dependencies_of`] for every task, in the order of
    /// [`LoadedTasks::tasks`]: O(V + E), the plan's lines indexed once.
    pub fn dependency_lists(&self) -> Vec<Vec<TaskId>> {
        let Some(plan) = self.plan.as_ref().filter(|p| !p.dependencies.is_empty()) else {
            return self.tasks.iter().map(|t| t.blocked_by.clone()).collect();
        };
        // `IMPL-3` in a plan names `IMPL-003`: numbered ids match by
        // (prefix, number), others exactly (as `TaskId::same_task`).
        let mut by_number: HashMap<(Option<&str>, u64), Vec<&TaskId>> = HashMap::new();
        let mut by_id: HashMap<&str, Vec<&TaskId>> = HashMap::new();
        for d in &plan.dependencies {
            match d.task.number() {
                Some(n) => by_number.entry((d.task.prefix(), n)).or_default(),
                None => by_id.entry(d.task.as_str()).or_default(),
            }
            .push(&d.depends_on);
        }
        self.tasks
            .iter()
            .map(|task| {
                let mut deps = task.blocked_by.clone();
                let planned = match task.id.number() {
                    Some(n) => by_number.get(&(task.id.prefix(), n)),
                    None => by_id.get(task.id.as_str()),
                };
                if let Some(planned) = planned {
                    merge_unique(&mut deps, planned.iter().copied());
                }
                deps
            })
            .collect()
    }

    /// Whether the task counts as done for scheduling. For every task at
    /// once, use [`LoadedTasks::done_flags`].
    pub fn is_done(&self, task: &Task) -> bool {
        task.status == TaskStatus::Completed || self.completed.contains(&task.id)
    }

    /// [`LoadedTasks::is_done`] for every task, in the order of
    /// [`LoadedTasks::tasks`]: O(V + completed).
    pub fn done_flags(&self) -> Vec<bool> {
        let completed: HashSet<&TaskId> = self.completed.iter().collect();
        self.tasks
            .iter()
            .map(|t| t.status == TaskStatus::Completed || completed.contains(&t.id))
            .collect()
    }
}

/// Load the tasks of a session folder, task folder or plan file.
pub fn load(path: &Path) -> Result<LoadedTasks> {
    let meta = fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CoreError::NotFound {
                path: path.to_owned(),
                expected: "a session folder, a task folder or a plan file",
            }
        } else {
            CoreError::io("reading", path, e)
        }
    })?;
    let analysis_file =
        meta.is_file() && path.file_name().is_some_and(|n| n == "task-analysis.json");
    let mut loaded = if analysis_file {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut loaded = load_session(dir)?;
        path.clone_into(&mut loaded.path);
        loaded
    } else if meta.is_file() {
        load_plan_file(path)?
    } else if path.join("tasks").is_dir() || path.join("task-analysis.json").is_file() {
        load_session(path)?
    } else {
        load_task_folder(path)?
    };
    if !loaded
        .tasks
        .is_sorted_by(|a, b| task_order(&a.id, &b.id).is_le())
    {
        loaded.tasks.sort_by(|a, b| task_order(&a.id, &b.id));
    }
    Ok(loaded)
}

fn empty(path: &Path, kind: SourceKind) -> LoadedTasks {
    LoadedTasks {
        path: path.to_owned(),
        kind,
        tasks: Vec::new(),
        plan: None,
        plan_path: None,
        completed: Vec::new(),
        warnings: Vec::new(),
    }
}

fn load_plan_file(path: &Path) -> Result<LoadedTasks> {
    let text = fs::read_to_string(path).map_err(|e| CoreError::io("reading", path, e))?;
    let plan = Plan::parse(&text);
    let mut loaded = empty(path, SourceKind::PlanFile);
    loaded.tasks = plan
        .declared_tasks
        .iter()
        .map(|id| Task::new(id.clone(), id.as_str(), ""))
        .collect();
    if loaded.tasks.is_empty() {
        return Err(CoreError::invalid(
            path,
            "tasks",
            "the plan declares no task: expected lines that start with a task id (`- IMPL-001: …`) or `IMPL-2 depends on IMPL-1`",
        ));
    }
    loaded.plan = Some(plan);
    loaded.plan_path = Some(path.to_owned());
    Ok(loaded)
}

fn load_session(dir: &Path) -> Result<LoadedTasks> {
    let mut loaded = empty(dir, SourceKind::Session);
    loaded.tasks = FileTaskStore::for_session(dir).list()?;
    let analysis_path = dir.join("task-analysis.json");
    if analysis_path.is_file() {
        let analysis = TaskAnalysis::read(&analysis_path)?;
        // The analysis's tasks are unique (effective_tasks merges repeats):
        // only the store's need an index.
        let analysed = analysis.into_effective_tasks();
        let position: HashMap<TaskId, usize> = loaded
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        loaded.tasks.reserve(analysed.len());
        for at in analysed {
            if let Some(&i) = position.get(&at.id) {
                merge_unique(&mut loaded.tasks[i].blocked_by, &at.blocked_by);
            } else {
                loaded.tasks.push(at.into_task());
            }
        }
    }
    let session_path = dir.join("team-session.json");
    if session_path.is_file() {
        loaded.completed = TeamSession::read(&session_path)?.completed_tasks;
    }
    attach_plan(&mut loaded, dir)?;
    Ok(loaded)
}

fn load_task_folder(dir: &Path) -> Result<LoadedTasks> {
    let mut loaded = empty(dir, SourceKind::TaskFolder);
    let entries = fs::read_dir(dir).map_err(|e| CoreError::io("listing", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| CoreError::io("listing", dir, e))?;
        let path = entry.path();
        let is_json = path.extension().is_some_and(|e| e == "json");
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if is_json && !hidden && path.is_file() {
            loaded.tasks.push(fsutil::read_json(&path)?);
        }
    }
    if loaded.tasks.is_empty() {
        return Err(CoreError::invalid(
            dir,
            "",
            "no tasks found: expected a session folder (with `tasks/` or `task-analysis.json`), a folder of task JSON files, or a plan file",
        ));
    }
    let mut seen = HashSet::new();
    for task in &loaded.tasks {
        if !seen.insert(task.id.clone()) {
            return Err(CoreError::invalid(
                dir,
                "id",
                format!("two files in the folder hold task `{}`", task.id),
            ));
        }
    }
    attach_plan(&mut loaded, dir)?;
    Ok(loaded)
}

/// The project root: the nearest ancestor of `dir` holding `.workflow/`.
pub fn project_root(dir: &Path) -> Option<PathBuf> {
    let abs = dir.canonicalize().ok()?;
    abs.ancestors()
        .find(|a| a.join(".workflow").is_dir())
        .map(Path::to_owned)
}

/// Find the plan: `<dir>/plan.md`, else the first task's `metadata.plan_path`
/// (relative to `dir`, then to the project root; seed 000's default is
/// `.workflow/plan.md`).
fn attach_plan(loaded: &mut LoadedTasks, dir: &Path) -> Result<()> {
    let named = loaded
        .tasks
        .iter()
        .find_map(|t| t.metadata.get("plan_path").and_then(|v| v.as_str()))
        .map(str::to_owned);
    let root = project_root(dir);
    let mut candidates = vec![dir.join("plan.md")];
    if let Some(named) = &named {
        candidates.push(dir.join(named));
        if let Some(root) = &root {
            candidates.push(root.join(named));
        }
    } else if loaded.kind == SourceKind::TaskFolder
        && let Some(root) = &root
    {
        candidates.push(root.join(".workflow/plan.md"));
    }
    if let Some(path) = candidates.into_iter().find(|p| p.is_file()) {
        let text = fs::read_to_string(&path).map_err(|e| CoreError::io("reading", &path, e))?;
        loaded.plan = Some(Plan::parse(&text));
        loaded.plan_path = Some(path);
    } else if let Some(named) = named {
        loaded.warnings.push(format!(
            "plan `{named}` named by `metadata.plan_path` was not found"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn seed_000_task_folder_with_project_plan() {
        let tmp = tempfile::tempdir().unwrap();
        let tasks = tmp.path().join(".workflow/.team/tasks");
        write(
            &tasks.join("IMPL-001.json"),
            r#"{"task_id":"IMPL-001","status":"completed","description":"a"}"#,
        );
        write(
            &tasks.join("IMPL-002.json"),
            r#"{"task_id":"IMPL-002","status":"pending","description":"b"}"#,
        );
        write(
            &tmp.path().join(".workflow/plan.md"),
            "IMPL-2 depends on IMPL-1\n",
        );
        let loaded = load(&tasks).unwrap();
        assert_eq!(loaded.kind, SourceKind::TaskFolder);
        assert_eq!(loaded.tasks.len(), 2);
        assert!(loaded.is_done(&loaded.tasks[0]));
        let deps = loaded.dependencies_of(&loaded.tasks[1]);
        assert_eq!(deps, vec![TaskId::new("IMPL-1").unwrap()]);
    }

    #[test]
    fn session_merges_store_and_analysis() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("S-1");
        let store = FileTaskStore::for_session(&dir);
        store
            .create(Task::new(TaskId::new("A-1").unwrap(), "a", ""))
            .unwrap();
        write(
            &dir.join("task-analysis.json"),
            r#"{"dependency_graph":{"A-1":[],"A-2":["A-1"]}}"#,
        );
        write(
            &dir.join("team-session.json"),
            r#"{"session_id":"S-1","task_description":"x","status":"active","roles":[],"completed_tasks":["A-1"]}"#,
        );
        let loaded = load(&dir).unwrap();
        assert_eq!(loaded.kind, SourceKind::Session);
        assert_eq!(loaded.tasks.len(), 2);
        assert!(loaded.is_done(&loaded.tasks[0]));
        assert_eq!(loaded.tasks[1].blocked_by[0].as_str(), "A-1");
    }

    #[test]
    fn analysis_file_loads_its_session_with_what_it_says() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("S-2");
        write(
            &dir.join("task-analysis.json"),
            r#"{"capabilities":[{"name":"developer","tasks":[{"id":"IMPL-002","description":"Add the endpoint"}]}],
                "dependency_graph":{"IMPL-001":[],"IMPL-002":["IMPL-001"],"IMPL-010":["IMPL-002"]},
                "tasks":[{"id":"IMPL-001","metadata":{"executor":"codex"}}]}"#,
        );
        write(&dir.join("plan.md"), "IMPL-10 depends on IMPL-1\n");
        let file = dir.join("task-analysis.json");
        let loaded = load(&file).unwrap();
        assert_eq!(loaded.kind, SourceKind::Session);
        assert_eq!(loaded.path, file);
        let ids: Vec<&str> = loaded.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["IMPL-001", "IMPL-002", "IMPL-010"]);
        assert_eq!(loaded.tasks[0].executor(), Some("codex"));
        assert_eq!(loaded.tasks[1].description, "Add the endpoint");
        let lists = loaded.dependency_lists();
        for (task, deps) in loaded.tasks.iter().zip(&lists) {
            assert_eq!(deps, &loaded.dependencies_of(task), "{}", task.id);
        }
        let deps: Vec<&str> = lists[2].iter().map(TaskId::as_str).collect();
        assert_eq!(deps, ["IMPL-002", "IMPL-1"]);
        assert_eq!(loaded.done_flags(), [false, false, false]);
    }

    #[test]
    fn empty_folder_and_planless_file_are_explained() {
        let tmp = tempfile::tempdir().unwrap();
        let err = load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("no tasks found"), "{err}");
        let plan = tmp.path().join("plan.md");
        write(&plan, "nothing");
        let err = load(&plan).unwrap_err().to_string();
        assert!(
            err.contains("field `tasks`") && err.contains("declares no task"),
            "{err}"
        );
        let err = load(&tmp.path().join("missing")).unwrap_err().to_string();
        assert!(err.contains("missing` does not exist"), "{err}");
    }

    #[test]
    fn malformed_task_json_names_file_and_field() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            &tmp.path().join("IMPL-1.json"),
            r#"{"id":"IMPL-1","blockedBy":[1]}"#,
        );
        let err = load(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("IMPL-1.json") && err.contains("field `blockedBy[0]`"),
            "{err}"
        );
    }
}
