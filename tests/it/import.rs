//! `wavecrew import` on task lists from public repositories (the fixtures
//! under `tests/it/import/`, each naming its source in the README there):
//! Task Master's `tasks.json` and maestro-flow's plan tasks become a task
//! file that plans, and runs with scripted agents; what could not be
//! carried over is said; a file that is not one is refused by field.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wavecrew_testkit::{bin_path, run_bin};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("it/import")
}

/// A git project holding a copy of the fixture `rel` (at the same
/// relative path) and a scripted agent that writes `out/<id>.txt` for
/// each of `ids`.
fn project_with(rel: &str, ids: &[&str]) -> wavecrew_testkit::git::TempProject {
    project_with_at(rel, rel, ids)
}

/// [`project_with`], the fixture `rel` copied to `to` in the project.
fn project_with_at(rel: &str, to: &str, ids: &[&str]) -> wavecrew_testkit::git::TempProject {
    let repo = crate::walkthrough::git_repo();
    let from = fixtures().join(rel);
    let rel = to;
    let copy = |src: &Path, dst: &Path| {
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(src, dst).unwrap();
    };
    if from.is_dir() {
        for e in std::fs::read_dir(&from).unwrap().flatten() {
            copy(&e.path(), &repo.path().join(rel).join(e.file_name()));
        }
    } else {
        copy(&from, &repo.path().join(rel));
    }
    let scenarios: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"match": {"task": id}, "steps": [
                {"write": {"path": format!("out/{id}.txt"), "content": format!("{id}\n")}},
                {"say": format!("{id} written")}]})
        })
        .collect();
    std::fs::write(
        repo.path().join("agent.json"),
        json!({ "scenarios": scenarios }).to_string(),
    )
    .unwrap();
    std::fs::write(
        repo.path().join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"scripted\"\n\n[backends.scripted]\nkind = \"scripted\"\n\
             program = {:?}\nscript = \"agent.json\"\nformat = \"codex\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    repo
}

/// `wavecrew plan waves --json` of the imported file.
fn waves(root: &Path) -> Value {
    let o = run_bin(
        "wavecrew",
        &["plan", "waves", "wavecrew.tasks.toml", "--json"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    serde_json::from_str(&o.stdout).unwrap()
}

/// Run the imported file (every task on the scripted agent, whatever the
/// routing would pick for its length); every task completed.
fn runs_to_completion(root: &Path, ids: &[&str]) {
    let o = run_bin(
        "wavecrew",
        &[
            "run",
            "wavecrew.tasks.toml",
            "--json",
            "--backend",
            "scripted",
        ],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["outcome"], "complete", "{v}");
    assert_eq!(v["counts"]["completed"], ids.len(), "{v}");
}

#[test]
fn a_task_master_list_imports_keeps_ids_and_dependencies_plans_and_runs() {
    let ids = ["1", "2", "3", "4.1", "4.2", "4.3", "4.4", "4"];
    let p = project_with("claude-task-master/tasks.json", &ids);
    let root = p.path();
    let o = run_bin(
        "wavecrew",
        &["import", "claude-task-master/tasks.json"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(o.stdout.contains("8 tasks imported"), "{}", o.render());
    // What could not be carried over is said.
    assert!(
        o.stderr.contains("the state of 8 task(s) marked done"),
        "{}",
        o.render()
    );
    let text = std::fs::read_to_string(root.join("wavecrew.tasks.toml")).unwrap();
    insta::assert_snapshot!("import_task_master", text);
    // Ids and dependencies: 4's subtasks wait for what 4 waits for (1, 3),
    // 4 waits for its subtasks.
    let v = waves(root);
    assert_eq!(
        v["waves"],
        json!([["1", "2"], ["3"], ["4.1"], ["4.2", "4.3"], ["4.4"], ["4"]]),
        "{v}"
    );
    runs_to_completion(root, &ids);
    // A second import does not overwrite the file without --force.
    let o = run_bin(
        "wavecrew",
        &["import", "claude-task-master/tasks.json"],
        root,
    );
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(o.stderr.contains("exists already"), "{}", o.render());
}

#[test]
fn a_task_master_list_with_subtask_ids_as_strings_imports_and_plans() {
    let p = project_with_at("edu-parser/tasks.json", ".taskmaster/tasks/tasks.json", &[]);
    let o = run_bin(
        "wavecrew",
        &["import", ".taskmaster/tasks/tasks.json"],
        p.path(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let v = waves(p.path());
    assert_eq!(v["tasks"], 3 + 4 + 5 + 3, "{v}");
    // 2.5 waits for 2.2, 2.3 and 2.4; 2 for all its subtasks; 3.1 for 2.
    let critical: Vec<&str> = v["critical_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    assert_eq!(
        critical,
        [
            "1.1", "1.2", "1", "2.1", "2.3", "2.4", "2.5", "2", "3.1", "3.2", "3"
        ],
        "{v}"
    );
    let text = std::fs::read_to_string(p.path().join("wavecrew.tasks.toml")).unwrap();
    assert!(
        text.starts_with(
            "# Imported by `wavecrew import` from .taskmaster/tasks/tasks.json (Task Master)."
        ),
        "{text}"
    );
    assert!(
        text.contains("goal = \"The Task Master tasks of "),
        "{text}"
    );
}

#[test]
fn maestro_flow_plan_tasks_import_with_commands_only_where_they_are_commands_and_run() {
    let ids = ["TASK-001", "TASK-002", "TASK-003"];
    let p = project_with("maestro-flow/outputs/tasks", &ids);
    let root = p.path();
    std::fs::copy(
        fixtures().join("maestro-flow/outputs/plan.json"),
        root.join("maestro-flow/outputs/plan.json"),
    )
    .unwrap();
    let o = run_bin(
        "wavecrew",
        &["import", "maestro-flow/outputs/tasks/TASK-002.json"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    // A verification that needs a shell stays a sentence, and is said.
    assert!(
        o.stderr
            .contains("needs a shell; kept as a criterion in words"),
        "{}",
        o.render()
    );
    let text = std::fs::read_to_string(root.join("wavecrew.tasks.toml")).unwrap();
    insta::assert_snapshot!("import_maestro_flow", text);
    let v = waves(root);
    assert_eq!(
        v["waves"],
        json!([["TASK-001"], ["TASK-002"], ["TASK-003"]]),
        "{v}"
    );
    // The commands run as acceptance checks (`test -f out/TASK-00N.txt`).
    runs_to_completion(root, &ids);
}

#[test]
fn what_is_not_a_task_list_is_refused_by_file_and_field() {
    let p = project_with("maestro-flow/template-task.json", &[]);
    // maestro-flow's own task template: its placeholder id is no task id.
    let o = run_bin(
        "wavecrew",
        &["import", "maestro-flow/template-task.json"],
        p.path(),
    );
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(
        o.stderr.contains(
            "`maestro-flow/template-task.json`: field `id`: \"TASK-{{NNN}}\" cannot be a task id"
        ),
        "{}",
        o.render()
    );
    assert!(!p.path().join("wavecrew.tasks.toml").exists());
    std::fs::write(p.path().join("other.json"), "{\"name\": \"x\"}").unwrap();
    let o = run_bin("wavecrew", &["import", "other.json"], p.path());
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(
        o.stderr.contains("not a task list wavecrew imports"),
        "{}",
        o.render()
    );
    let o = run_bin("wavecrew", &["import", "missing.json"], p.path());
    assert_eq!(o.code, 2, "{}", o.render());
    assert!(o.stderr.contains("missing.json"), "{}", o.render());
}
