//! One gate after every agent: under each writing role (the developer, a
//! role a task file defines with plain instructions, planex, a roadmap
//! phase, the test executor), in the default mode, agents that misbehave
//! are held exactly as under the developer role, with the same message: a
//! change to a protected path, a link out of the repository, a file
//! outside the declared ones with `undeclared = "fail"`, a failing test
//! deleted instead of fixed, and `review = "human"`. Nothing of theirs
//! lands on the integration branch.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wavecrew_core::{Task, TaskId, TaskStore};
use wavecrew_testkit::git::{TempProject, git};
use wavecrew_testkit::{CliOutput, bin_path};

/// The ways an agent misbehaves, each the marker its task's text carries
/// (`misbehave=<name>`), which the agent reads in its prompt.
const MISBEHAVIOURS: [&str; 5] = ["protected", "link", "undeclared", "deletes_test", "review"];

/// The agent: reads its prompt on stdin and misbehaves as its task's
/// marker says; but for the test it deletes, it also fixes the bug, so
/// that what holds its work is the gate and nothing else.
const AGENT: &str = "import os, pathlib, re, sys\n\
prompt = sys.stdin.read()\n\
found = re.search(r'misbehave=(\\w+)', prompt)\n\
mode = found.group(1) if found else 'none'\n\
calc, tests = pathlib.Path('calc.py'), pathlib.Path('test_calc.py')\n\
if mode == 'deletes_test':\n\
\x20   tests.write_text(tests.read_text().split('def test_add')[0])\n\
else:\n\
\x20   calc.write_text(calc.read_text().replace('a - b', 'a + b'))\n\
if mode == 'protected':\n\
\x20   with open('wavecrew.toml', 'a') as f:\n\
\x20       f.write('\\n# the agent was here\\n')\n\
if mode == 'link':\n\
\x20   os.symlink('/etc/passwd', 'evil')\n\
if mode == 'undeclared':\n\
\x20   pathlib.Path('extra.txt').write_text('not declared\\n')\n\
print('did ' + mode)\n";

/// The files every task declares.
const FILES: [&str; 2] = ["calc.py", "test_calc.py"];

/// A git project with a bug (`add` subtracts), its pytest tests (one
/// failing, one passing), the agent and a tracked `wavecrew.toml` whose
/// agent is the command `python3 agent.py` (prompt on stdin), with
/// `[isolation] undeclared = "fail"`; `files` are written too.
fn project(tmp: &TempProject, files: &[(&str, String)]) -> PathBuf {
    let root = tmp.path().canonicalize().unwrap().join("app");
    std::fs::create_dir_all(&root).unwrap();
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        ".gitignore",
        ".workflow/\nagent.py\n__pycache__/\n.pytest_cache/\n.coverage\ncoverage.*\n",
    );
    write("calc.py", "def add(a, b):\n    return a - b\n");
    write(
        "test_calc.py",
        "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n\n\n\
         def test_add():\n    assert add(2, 3) == 5\n",
    );
    write("agent.py", AGENT);
    let agent = root.join("agent.py").display().to_string();
    write(
        "wavecrew.toml",
        &format!(
            "[aliases]\nagent = \"py\"\ncodex = \"py\"\ngemini = \"py\"\nclaude = \"py\"\n\n\
             [backends.py]\nkind = \"command\"\nargv = [\"python3\", {agent:?}]\n\
             prompt = \"stdin\"\nstream = \"none\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n\n\
             [isolation]\nundeclared = \"fail\"\n"
        ),
    );
    for (rel, text) in files {
        write(rel, text);
    }
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "."]);
    git(
        &root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "start",
        ],
    );
    root
}

/// `program args…` in `root` with pytest first on `PATH` (the base-test
/// comparison and the test executor run it).
fn with_pytest(program: &str, args: &[&str], root: &Path) -> std::process::Command {
    let py = wavecrew_testkit::agent_cli_bins::cache_dir().join("py/bin");
    assert!(
        py.join("pytest").exists(),
        "pytest is not installed in {}: run scripts/test.sh (never skipped)",
        py.display()
    );
    let path = format!(
        "{}:{}",
        py.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new(bin_path(program));
    cmd.args(args)
        .current_dir(root)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("CCW_PROJECT_ROOT")
        .stdin(std::process::Stdio::null());
    cmd
}

/// Run `program args…` to its end (see [`with_pytest`]).
fn run_with_pytest(program: &str, args: &[&str], root: &Path) -> CliOutput {
    with_pytest(program, args, root)
        .output()
        .expect("run binary")
        .into()
}

/// How the task of `misbehaviour` must end, whatever its role: `(status,
/// what its error says)`, or, for a task held for review, `blocked`
/// awaiting review.
fn expected(misbehaviour: &str) -> (&'static str, &'static str) {
    match misbehaviour {
        "protected" => (
            "failed",
            "changes to protected paths ([isolation] protected): wavecrew.toml",
        ),
        "link" => (
            "failed",
            "links out of the repository are refused: evil -> /etc/passwd",
        ),
        "undeclared" => (
            "failed",
            "changes outside the declared files ([isolation] undeclared = \"fail\"): extra.txt",
        ),
        "deletes_test" => ("failed", "gone: `test_calc::test_add`"),
        "review" => ("blocked", "awaiting a person's review"),
        other => panic!("no such misbehaviour: {other}"),
    }
}

/// Check the task `id` of `session` that misbehaved as `misbehaviour`.
fn assert_held(role: &str, session: &Path, id: &str, misbehaviour: &str, all: &str) {
    let store = wavecrew_core::FileTaskStore::for_session(session);
    let task = store.get(&TaskId::new(id).unwrap()).unwrap();
    let result = task.result.clone().unwrap_or(Value::Null);
    let error = result["error"].as_str().unwrap_or_default();
    let (status, says) = expected(misbehaviour);
    assert_eq!(
        task.status.as_str(),
        status,
        "{role}, {misbehaviour} ({id}): {result:#}\n{all}"
    );
    assert!(
        error.contains(says),
        "{role}, {misbehaviour} ({id}): the error should say {says:?}: {error}"
    );
    if misbehaviour == "review" {
        assert_eq!(result["awaiting_review"], true, "{role}: {result:#}");
        assert!(
            result["branch"].as_str().is_some_and(|b| !b.is_empty()),
            "{role}: {result:#}"
        );
    }
}

/// Nothing any misbehaving agent wrote is on the integration branch.
fn assert_nothing_landed(root: &Path, session_id: &str) {
    let branch = format!("wavecrew/{session_id}");
    let files = git(root, &["ls-tree", "-r", "--name-only", &branch]);
    for never in ["evil", "extra.txt"] {
        assert!(
            !files.lines().any(|f| f == never),
            "{never} landed: {files}"
        );
    }
    let config = git(root, &["show", &format!("{branch}:wavecrew.toml")]);
    assert!(!config.contains("the agent was here"), "{config}");
    let tests = git(root, &["show", &format!("{branch}:test_calc.py")]);
    assert!(tests.contains("def test_add"), "{tests}");
}

/// A task file with one task per misbehaviour under `role` (and `roles`
/// tables before them).
fn task_file(session: &str, role: Option<&str>, roles: &str) -> String {
    let mut text = format!("goal = \"Fix add\"\nsession = \"{session}\"\n\n{roles}\n");
    for m in MISBEHAVIOURS {
        let _ = write!(
            text,
            "[[tasks]]\ntitle = \"Fix add ({m})\"\ndescription = \"Make add add. misbehave={m}\"\n\
             files = {FILES:?}\n"
        );
        if let Some(role) = role {
            let _ = writeln!(text, "role = \"{role}\"");
        }
        if m == "review" {
            text.push_str("review = \"human\"\n");
        }
        text.push('\n');
    }
    text
}

/// The ids the task file's tasks get, in order.
fn task_file_ids(session: &Path) -> Vec<String> {
    let store = wavecrew_core::FileTaskStore::for_session(session);
    let mut tasks = store.list().unwrap();
    tasks.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    tasks.iter().map(|t| t.id.as_str().to_owned()).collect()
}

/// Run the task file of `role` and check every task is held: `wavecrew
/// run` waits for the person's review of the last one, who approves it
/// once every task is where it must be.
fn task_file_role(role_name: &str, role: Option<&str>, roles: &str) {
    let tmp = TempProject::new();
    let session_id = format!("TC-gate-{role_name}");
    let root = project(
        &tmp,
        &[("wavecrew.tasks.toml", task_file(&session_id, role, roles))],
    );
    let mut cmd = with_pytest("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut run = crate::cockpit_review::Run(Some(cmd.spawn().unwrap()));
    let session = root.join(".workflow/.team").join(&session_id);
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    // (Ok: the condition holds of what was read.)
    let _ = crate::cockpit::until(
        "every task failed or awaits review",
        || {
            store.list().map(|tasks| {
                tasks
                    .into_iter()
                    .map(|t| {
                        let awaiting = t
                            .result
                            .as_ref()
                            .is_some_and(|r| r["awaiting_review"] == true);
                        (t.id.to_string(), t.status.as_str(), awaiting)
                    })
                    .collect::<Vec<_>>()
            })
        },
        |tasks| {
            tasks.as_ref().is_ok_and(|tasks| {
                tasks.len() == MISBEHAVIOURS.len()
                    && tasks
                        .iter()
                        .all(|(_, status, awaiting)| *status == "failed" || *awaiting)
            })
        },
    );
    let ids = task_file_ids(&session);
    assert_eq!(ids.len(), MISBEHAVIOURS.len(), "{ids:?}");
    for (id, m) in ids.iter().zip(MISBEHAVIOURS) {
        assert_held(role_name, &session, id, m, "");
    }
    let session_arg = session.display().to_string();
    let review = ids.last().unwrap();
    // The person approves the reviewed work (it only fixes the bug): it
    // lands, and nothing of the others does.
    let o = wavecrew_testkit::run_bin("wavecrew", &["approve", &session_arg, review], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    assert_ne!(run.wait(), 0);
    assert_nothing_landed(&root, &session_id);
    let landed = git(&root, &["show", &format!("wavecrew/{session_id}:calc.py")]);
    assert!(
        landed.contains("a + b"),
        "the approved work landed: {landed}"
    );
}

#[test]
fn the_developer_role_holds_each_misbehaving_agent() {
    task_file_role("developer", None, "");
}

/// A role defined the README's way, with plain instructions: it runs
/// (wavecrew writes the role file around them), and its agents are held
/// as the developer's are.
#[test]
fn a_role_defined_in_the_task_file_holds_each_misbehaving_agent() {
    task_file_role(
        "docs",
        Some("docs"),
        "[roles.docs]\ninstructions = \"Write clear documentation for the people who use this \
         project.\"\n",
    );
}

/// The test executor's fixes go through the same gate: a fixer that
/// deletes the failing test instead of fixing the code is caught by the
/// tests compared with the base.
#[test]
fn the_test_executor_holds_each_misbehaving_fixer() {
    task_file_role(
        "tester",
        Some("tester"),
        "[roles.tester]\nprefix = \"TESTRUN\"\ninstructions = \"Run the tests and fix them.\"\n",
    );
}

/// A role defined in the task file with the README's plain instructions
/// runs to completion; one whose instructions are empty is refused with
/// the task file, the role and the field.
#[test]
fn a_task_file_role_runs_with_plain_instructions_and_a_broken_one_is_refused() {
    let tmp = TempProject::new();
    let good = "goal = \"Docs\"\nsession = \"TC-docs\"\n\n[roles.docs]\ninstructions = \"Write \
                clear documentation for the people who use this project.\"\n\n[[tasks]]\n\
                title = \"Fix add\"\nrole = \"docs\"\nfiles = [\"calc.py\"]\n";
    let broken = "goal = \"Docs\"\nsession = \"TC-broken\"\n\n[roles.docs]\ninstructions = \"\"\n\n\
                  [[tasks]]\ntitle = \"Fix add\"\nrole = \"docs\"\n";
    let root = project(
        &tmp,
        &[
            ("good.tasks.toml", good.to_owned()),
            ("broken.tasks.toml", broken.to_owned()),
        ],
    );
    let o = run_with_pytest("wavecrew", &["run", "good.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    let session = root.join(".workflow/.team/TC-docs");
    let role_file = std::fs::read_to_string(session.join("roles/docs.md")).unwrap();
    assert!(role_file.starts_with("# Role: docs\n"), "{role_file}");
    let prompt = std::fs::read_to_string(session.join("attempts/DOCS-001/1/prompt.md")).unwrap();
    assert!(
        prompt.contains("Write clear documentation for the people who use this project."),
        "{prompt}"
    );
    let landed = git(&root, &["show", "wavecrew/TC-docs:calc.py"]);
    assert!(landed.contains("a + b"), "{landed}");

    let o = run_with_pytest("wavecrew", &["run", "broken.tasks.toml"], &root);
    let all = o.render();
    assert_eq!(o.code, 2, "{all}");
    assert!(all.contains("broken.tasks.toml:"), "{all}");
    assert!(all.contains("field `roles.docs.instructions`"), "{all}");
    assert!(!all.contains("team-coordinate"), "{all}");
}

/// planex (`PEX-*`): one issue per misbehaviour, each with its solution
/// and an `EXEC-*` task declaring the files.
#[test]
fn planex_holds_each_misbehaving_agent() {
    const SESSION: &str = "PEX-gate-2026-11-27";
    let tmp = TempProject::new();
    let mut issues = String::new();
    let mut solutions = Vec::new();
    for (i, m) in MISBEHAVIOURS.iter().enumerate() {
        let id = format!("ISS-20261127-00{}", i + 1);
        issues.push_str(
            &(json!({"id": id, "title": format!("Fix add ({m})"), "status": "planned",
                     "context": format!("Make add add. misbehave={m}"),
                     "bound_solution_id": format!("SOL-{id}")})
            .to_string()
                + "\n"),
        );
        solutions.push((
            format!(".workflow/issues/solutions/{id}.jsonl"),
            json!({"id": format!("SOL-{id}"), "is_bound": true, "description": "fix add",
                   "tasks": [{"id": "T1", "title": "Fix add", "action": "Update",
                              "files": [{"path": "calc.py"}]}]})
            .to_string()
                + "\n",
        ));
    }
    let mut files = vec![(".workflow/issues/issues.jsonl".to_owned(), issues)];
    files.extend(solutions);
    let files: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    let root = project(&tmp, &files);
    let session = root.join(".workflow/.team").join(SESSION);
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    for (i, m) in MISBEHAVIOURS.iter().enumerate() {
        let issue = format!("ISS-20261127-00{}", i + 1);
        let mut t = Task::new(
            TaskId::new(format!("EXEC-00{}", i + 1)).unwrap(),
            format!("EXEC-W1-{issue}: Implement Fix add"),
            format!(
                "## Execution Task\n**Issue**: {issue}\n**execution_method**: Agent\n\
                 **code_review**: Skip"
            ),
        );
        t.owner = Some("executor".into());
        t.metadata.insert("target_files".into(), json!(FILES));
        if *m == "review" {
            t.metadata.insert("review".into(), json!("human"));
        }
        store.create(t).unwrap();
    }
    // The planner's last wave is out: the worker ends with the queue.
    crate::planex::all_planned_in(&root, SESSION);
    let o = run_with_pytest(
        "wavecrew-planex",
        &["--session", session.to_str().unwrap()],
        &root,
    );
    let all = o.render();
    for (i, m) in MISBEHAVIOURS.iter().enumerate() {
        assert_held("planex", &session, &format!("EXEC-00{}", i + 1), m, &all);
    }
    assert_nothing_landed(&root, SESSION);
}

/// A roadmap (`RD-*`): one phase per misbehaviour, each with one task
/// declaring the files; the phase that asks for a person's review is held
/// as a whole.
#[test]
fn a_roadmap_phase_holds_each_misbehaving_agent() {
    const SESSION: &str = "RD-gate-2026-11-27";
    let tmp = TempProject::new();
    let mut files = Vec::new();
    for (i, m) in MISBEHAVIOURS.iter().enumerate() {
        let phase = i + 1;
        let id = format!("IMPL-{phase}01");
        files.push((
            format!(".workflow/.team/{SESSION}/phase-{phase}/.task/{id}.json"),
            json!({"id": id, "title": "Fix add", "description": format!("Make add add. misbehave={m}"),
                   "depends_on": [], "files": FILES.iter().map(|f| json!({"path": f, "action": "update"})).collect::<Vec<_>>(),
                   "convergence": {"criteria": ["add adds"], "verification": "", "definition_of_done": "done"}})
            .to_string(),
        ));
    }
    let files: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    let root = project(&tmp, &files);
    let session = root.join(".workflow/.team").join(SESSION);
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    for (i, m) in MISBEHAVIOURS.iter().enumerate() {
        let phase = i + 1;
        let mut exec = Task::new(
            TaskId::new(format!("EXEC-{phase}01")).unwrap(),
            format!("EXEC-{phase}01: Execute phase {phase}"),
            format!("## Session\n- Folder: .workflow/.team/{SESSION}\n- Phase: {phase}\n"),
        );
        exec.owner = Some("executor".into());
        if *m == "review" {
            exec.metadata.insert("review".into(), json!("human"));
        }
        store.create(exec).unwrap();
    }
    let o = run_with_pytest(
        "wavecrew-roadmap",
        &["--session", session.to_str().unwrap()],
        &root,
    );
    let all = o.render();
    for (i, m) in MISBEHAVIOURS.iter().enumerate() {
        assert_held("roadmap", &session, &format!("EXEC-{}01", i + 1), m, &all);
    }
    assert_nothing_landed(&root, SESSION);
}
