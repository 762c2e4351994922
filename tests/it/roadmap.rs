//! `wavecrew-roadmap` (seed 004): a two-phase session (summaries with
//! their frontmatter, earlier phases as context, progress records, the
//! resume check), and 12 tasks in 4 waves with two overlapping-file pairs:
//! the pairs never run at once, everything else in a wave does.

use std::path::Path;

use serde_json::{Value, json};
use wavecrew_core::{Task, TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::{bin_path, insta_settings, run_bin};

const SESSION: &str = "RD-auth-2026-11-23";

/// A roadmap task: id, dependencies, files.
type PhaseTask = (String, Vec<String>, Vec<String>);

fn setup(root: &Path, phases: &[(u32, Vec<PhaseTask>)], scenarios: &Value) -> std::path::PathBuf {
    let session = root.join(".workflow/.team").join(SESSION);
    for (phase, tasks) in phases {
        let dir = session.join(format!("phase-{phase}/.task"));
        std::fs::create_dir_all(&dir).unwrap();
        for (id, deps, files) in tasks {
            std::fs::write(
                dir.join(format!("{id}.json")),
                json!({"id": id, "title": format!("Build \"{id}\""), "description": format!("do {id}"),
                       "depends_on": deps, "files": files.iter().map(|f| json!({"path": f, "action": "create"})).collect::<Vec<_>>(),
                       "convergence": {"criteria": [format!("{id} exists")], "verification": "", "definition_of_done": "done"}})
                .to_string(),
            )
            .unwrap();
        }
        let store = wavecrew_core::FileTaskStore::for_session(&session);
        let mut exec = Task::new(
            TaskId::new(format!("EXEC-{phase}01")).unwrap(),
            format!("EXEC-{phase}01: Execute phase {phase}"),
            format!("## Session\n- Folder: .workflow/.team/{SESSION}\n- Phase: {phase}\n"),
        );
        exec.owner = Some("executor".into());
        if *phase > 1 {
            exec.blocked_by = vec![TaskId::new(format!("EXEC-{}01", phase - 1)).unwrap()];
        }
        store.create(exec).unwrap();
    }
    std::fs::write(
        root.join("script.json"),
        json!({"scenarios": scenarios}).to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"demo\"\ncodex = \"demo\"\n[backends.demo]\nkind = \"scripted\"\nprogram = {:?}\nscript = \"script.json\"\n{}",
            bin_path("wavecrew-scripted-agent").display().to_string(),
            crate::IN_PLACE
        ),
    )
    .unwrap();
    session
}

fn task(id: &str, deps: &[&str], files: &[&str]) -> PhaseTask {
    (
        id.to_owned(),
        deps.iter().map(|d| (*d).to_owned()).collect(),
        files.iter().map(|f| (*f).to_owned()).collect(),
    )
}

fn writes(id: &str, files: &[&str], sleep_ms: u64) -> Value {
    let mut steps = vec![json!({"sleep_ms": sleep_ms})];
    for f in files {
        steps.push(json!({"append": {"path": f, "content": format!("{id}\n")}}));
    }
    steps.push(json!({"append": {"path": ".workflow/runs.txt", "content": format!("{id}\n")}}));
    steps.push(json!({"say": format!("{id} done")}));
    json!({"match": {"task": id}, "steps": steps})
}

#[test]
fn two_phases_with_summaries_context_and_the_resume_check() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let session = setup(
        root,
        &[
            (
                1,
                vec![
                    task("IMPL-101", &[], &["src/a.txt"]),
                    task("IMPL-102", &["IMPL-101"], &["src/b.txt"]),
                ],
            ),
            (2, vec![task("IMPL-201", &[], &["src/c.txt"])]),
        ],
        &json!([
            writes("IMPL-101", &["src/a.txt"], 10),
            writes("IMPL-102", &["src/b.txt"], 10),
            {"match": {"prompt_contains": "summary-IMPL-101.md"}, "steps": [
                {"append": {"path": "src/c.txt", "content": "saw phase 1\n"}},
                {"append": {"path": ".workflow/runs.txt", "content": "IMPL-201\n"}},
                {"say": "phase 2 built on phase 1"}]},
        ]),
    );
    let o = run_bin(
        "wavecrew-roadmap",
        &["--session", session.to_str().unwrap()],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(
        std::fs::read_to_string(root.join("src/c.txt")).unwrap(),
        "saw phase 1\n",
        "phase 1's summaries were the context"
    );
    let summary = std::fs::read_to_string(session.join("phase-1/summary-IMPL-102.md")).unwrap();
    let minutes = regex::Regex::new(r"duration: [0-9.]+m").unwrap();
    insta_settings().bind(|| {
        insta::assert_snapshot!(
            "roadmap_summary",
            minutes.replace(&summary, "duration: [MINUTES]m")
        );
    });
    let yaml = summary.split("---\n").nth(1).unwrap();
    let front: Value = serde_norway::from_str(yaml).unwrap();
    assert_eq!(front["phase"], 1);
    assert_eq!(front["title"], "Build \"IMPL-102\"", "quotes survive");
    assert_eq!(front["requires"], json!(["IMPL-101"]));
    assert_eq!(front["affects"], json!(["src/b.txt"]));
    assert_eq!(front["tech-stack"], json!([]));
    assert_eq!(front["convergence-met"], "pending");
    assert!(
        front["completed"].as_str().unwrap().ends_with('Z'),
        "a zone: {front}"
    );
    assert!(summary.contains("- [ ] IMPL-102 exists"));
    let bus = std::fs::read_to_string(session.join(".msg/messages.jsonl")).unwrap();
    let kinds: Vec<String> = bus
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "exec_progress",
            "exec_progress",
            "exec_complete",
            "exec_progress",
            "exec_complete"
        ]
    );

    // The resume check: every summary is there, so nothing runs again.
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    store
        .update(&TaskId::new("EXEC-101").unwrap(), &mut |t| {
            t.status = TaskStatus::Pending;
            Ok(())
        })
        .unwrap();
    let before = std::fs::read_to_string(root.join(".workflow/runs.txt")).unwrap();
    let again = run_bin(
        "wavecrew-roadmap",
        &["--session", session.to_str().unwrap(), "--task", "EXEC-101"],
        root,
    );
    assert_eq!(again.code, 0, "{}", again.render());
    assert_eq!(
        std::fs::read_to_string(root.join(".workflow/runs.txt")).unwrap(),
        before
    );
}

fn overlaps(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

#[test]
fn a_wave_runs_in_parallel_except_tasks_sharing_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Waves: {101,102} {103,104} {105,106} {107..112}; pairs sharing a
    // file: 101/102 (src/shared.txt) and 107/108 (common/x.txt).
    let files: Vec<(&str, &[&str], Vec<&str>)> = vec![
        ("IMPL-101", &[], vec!["w1/a.txt", "src/shared.txt"]),
        ("IMPL-102", &[], vec!["w1b/b.txt", "src/shared.txt"]),
        ("IMPL-103", &["IMPL-101", "IMPL-102"], vec!["w2/a.txt"]),
        ("IMPL-104", &["IMPL-101", "IMPL-102"], vec!["w2b/b.txt"]),
        ("IMPL-105", &["IMPL-103", "IMPL-104"], vec!["w3/a.txt"]),
        ("IMPL-106", &["IMPL-103", "IMPL-104"], vec!["w3b/b.txt"]),
        (
            "IMPL-107",
            &["IMPL-105", "IMPL-106"],
            vec!["m1/a.txt", "common/x.txt"],
        ),
        (
            "IMPL-108",
            &["IMPL-105", "IMPL-106"],
            vec!["m2/b.txt", "common/x.txt"],
        ),
        ("IMPL-109", &["IMPL-105", "IMPL-106"], vec!["m3/c.txt"]),
        ("IMPL-110", &["IMPL-105", "IMPL-106"], vec!["m4/d.txt"]),
        ("IMPL-111", &["IMPL-105", "IMPL-106"], vec!["m5/e.txt"]),
        ("IMPL-112", &["IMPL-105", "IMPL-106"], vec!["m6/f.txt"]),
    ];
    let tasks: Vec<_> = files
        .iter()
        .map(|(id, deps, f)| task(id, deps, f))
        .collect();
    let scenarios: Vec<Value> = files.iter().map(|(id, _, f)| writes(id, f, 700)).collect();
    let session = setup(root, &[(1, tasks)], &Value::Array(scenarios));
    let o = run_bin(
        "wavecrew-roadmap",
        &[
            "--session",
            session.to_str().unwrap(),
            "--max-parallel",
            "6",
        ],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    let result = store
        .get(&TaskId::new("EXEC-101").unwrap())
        .unwrap()
        .result
        .unwrap();
    let span = |id: &str| {
        let s = &result["spans"][id];
        (s["start"].as_f64().unwrap(), s["end"].as_f64().unwrap())
    };
    assert!(
        !overlaps(span("IMPL-101"), span("IMPL-102")),
        "a pair ran at once: {result:#}"
    );
    assert!(
        !overlaps(span("IMPL-107"), span("IMPL-108")),
        "a pair ran at once: {result:#}"
    );
    assert!(overlaps(span("IMPL-103"), span("IMPL-104")), "{result:#}");
    assert!(overlaps(span("IMPL-105"), span("IMPL-106")), "{result:#}");
    let rest = ["IMPL-109", "IMPL-110", "IMPL-111", "IMPL-112"];
    for a in rest {
        for b in rest {
            if a < b {
                assert!(
                    overlaps(span(a), span(b)),
                    "{a} and {b} did not run at once: {result:#}"
                );
            }
        }
    }
    // Waves never mix: wave 2 starts after wave 1 ends.
    assert!(span("IMPL-103").0 >= span("IMPL-101").1.max(span("IMPL-102").1));
    assert_eq!(
        std::fs::read_to_string(root.join("src/shared.txt"))
            .unwrap()
            .lines()
            .count(),
        2,
        "no write lost"
    );
}

#[test]
fn an_unknown_dependency_is_an_error_not_a_serialisation() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let session = setup(
        root,
        &[(1, vec![task("IMPL-101", &["IMPL-404"], &["a.txt"])])],
        &json!([writes("IMPL-101", &["a.txt"], 1)]),
    );
    let o = run_bin(
        "wavecrew-roadmap",
        &["--session", session.to_str().unwrap()],
        root,
    );
    assert_eq!(o.code, 1, "{}", o.render());
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    let t = store.get(&TaskId::new("EXEC-101").unwrap()).unwrap();
    assert_eq!(t.status, TaskStatus::Failed);
    assert!(
        t.result.unwrap()["error"]
            .as_str()
            .unwrap()
            .contains("IMPL-404")
    );
    assert!(!root.join("a.txt").exists(), "nothing ran");
}

/// An isolated roadmap session (`[isolation] mode = "worktree"`): each unit
/// works in a worktree of the integration tip, so a later wave and a later
/// phase see the earlier ones' landed work; each unit lands once, as
/// `P<phase>-<unit>` (task ids repeat from phase to phase); the user's
/// branch and files are untouched.
#[test]
fn isolated_units_land_in_wave_order_and_the_users_branch_is_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let sees = |id: &str, file: &str, out: &str| {
        json!({"match": {"task": id}, "steps": [
            {"run": ["test", "-f", file]},
            {"write": {"path": out, "content": format!("{id}\n")}},
            {"say": format!("{id} done")}]})
    };
    let session = setup(
        root,
        &[
            (
                1,
                vec![
                    task("IMPL-101", &[], &["src/a.txt"]),
                    task("IMPL-102", &["IMPL-101"], &["src/b.txt"]),
                ],
            ),
            (2, vec![task("IMPL-201", &[], &["src/c.txt"])]),
        ],
        &json!([
            writes("IMPL-101", &["src/a.txt"], 10),
            sees("IMPL-102", "src/a.txt", "src/b.txt"),
            sees("IMPL-201", "src/b.txt", "src/c.txt"),
        ]),
    );
    let toml = root.join("wavecrew.toml");
    let config = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, config.replace(crate::IN_PLACE, "")).unwrap();
    std::fs::write(root.join(".gitignore"), ".workflow/\n").unwrap();
    let git = |args: &[&str]| crate::team::git(root, args);
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "start"]);
    let head = git(&["rev-parse", "HEAD"]);

    let o = run_bin(
        "wavecrew-roadmap",
        &["--session", session.to_str().unwrap()],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let branch = format!("wavecrew/{SESSION}");
    let trailers = git(&[
        "log",
        "--format=%(trailers:key=Wavecrew-Task,valueonly)",
        &branch,
    ]);
    let mut landed: Vec<&str> = trailers.lines().filter(|l| !l.is_empty()).collect();
    landed.sort_unstable();
    assert_eq!(
        landed,
        [
            format!("{SESSION}/P1-IMPL-101"),
            format!("{SESSION}/P1-IMPL-102"),
            format!("{SESSION}/P2-IMPL-201"),
        ]
    );
    assert_eq!(git(&["show", &format!("{branch}:src/c.txt")]), "IMPL-201\n");
    // The user's branch and files are untouched; every worktree is gone.
    assert_eq!(git(&["rev-parse", "HEAD"]), head);
    assert!(!root.join("src/a.txt").exists());
    let worktrees = git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    let bus = std::fs::read_to_string(session.join(".msg/messages.jsonl")).unwrap();
    assert_eq!(bus.matches("\"task_merged\"").count(), 3, "{bus}");
    git(&["fsck", "--no-progress", "--strict"]);
}
