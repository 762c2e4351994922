//! Isolated parallel tasks in a folder that is not a git repository
//! (`[isolation] mode = "worktree"`): the work goes through a shadow
//! repository kept in the session folder, the folder gets no `.git`, and
//! `wavecrew run --apply` writes the result back as files. Also: a git too
//! old for the merge queue, and `[isolation] copy` with the file missing
//! and present.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use wavecrew_core::{TaskId, TaskStore};
use wavecrew_testkit::{CliOutput, bin_path, run_bin};

use crate::team::{Project, SESSION, project};

/// A plain folder (no git) with a session of `tasks` (independent
/// developer tasks), a `command` agent running `agent` (Python, argv only,
/// given the task id) and `[isolation] mode = "worktree"` plus `extra`.
fn folder_project(tasks: &[&str], agent: &str, extra: &str) -> Project {
    let graph: Vec<(&str, &[&str], &str)> = tasks
        .iter()
        .map(|t| (*t, &[] as &[&str], "developer"))
        .collect();
    let p = project(&graph, &serde_json::json!([]), "");
    let root = p.root();
    std::fs::write(root.join("README.md"), "# a folder without git\n").unwrap();
    std::fs::write(root.join("agent.py"), agent).unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"py\"\ncodex = \"py\"\n\n[backends.py]\nkind = \"command\"\n\
             argv = [\"python3\", {:?}, \"{{task_id}}\"]\nprompt = \"stdin\"\nstream = \"none\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n\n\
             [isolation]\nmode = \"worktree\"\n{extra}",
            root.join("agent.py").display().to_string()
        ),
    )
    .unwrap();
    assert_no_git(root);
    p
}

/// No `.git` in the folder, outside its session folder; git sees no work
/// tree there.
fn assert_no_git(root: &Path) {
    fn walk(dir: &Path, root: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            assert_ne!(
                path.file_name().unwrap(),
                ".git",
                "{} in the project folder",
                path.display()
            );
            if path.is_dir() && !path.is_symlink() && path != root.join(".workflow") {
                walk(&path, root);
            }
        }
    }
    walk(root, root);
    assert!(
        !wavecrew_testkit::git::git_ok(root, &["rev-parse", "--is-inside-work-tree"]),
        "{} is a git work tree",
        root.display()
    );
}

/// git on the session's shadow repository.
fn shadow_git(p: &Project, args: &[&str]) -> String {
    let out = wavecrew_sys::git::git(&p.session())
        .arg("--git-dir")
        .arg(p.session().join("shadow.git"))
        .args(args)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8_lossy(&out).into_owned()
}

fn result(p: &Project, id: &str) -> Value {
    p.store()
        .get(&TaskId::new(id).unwrap())
        .unwrap()
        .result
        .unwrap_or(Value::Null)
}

fn run(p: &Project, extra: &[&str]) -> CliOutput {
    let session = p.session();
    let mut args = vec!["run", session.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_bin("wavecrew", &args, p.root())
}

#[test]
fn a_folder_without_git_runs_isolated_through_a_shadow_repository_and_applies_as_files() {
    // IMPL-001 writes a.txt, waits while IMPL-002 writes b/b.txt, and
    // notes whether it could see its neighbour's file.
    let p = folder_project(
        &["IMPL-001", "IMPL-002"],
        "import os, pathlib, sys, time\n\
         task = sys.argv[1]\n\
         if task == 'IMPL-001':\n\
         \x20   pathlib.Path('a.txt').write_text('from IMPL-001\\n')\n\
         \x20   time.sleep(3)\n\
         \x20   if os.path.exists('b/b.txt'):\n\
         \x20       pathlib.Path('saw-b.txt').write_text('the neighbour leaked\\n')\n\
         else:\n\
         \x20   time.sleep(1)\n\
         \x20   pathlib.Path('b').mkdir(exist_ok=True)\n\
         \x20   pathlib.Path('b/b.txt').write_text('from IMPL-002\\n')\n\
         print(task + ' done')\n",
        "",
    );
    let root = p.root();
    let o = run(&p, &["--max-parallel", "2"]);
    assert_eq!(o.code, 0, "{}", o.render());
    // Each task changed exactly its own files, in its own worktree.
    assert_eq!(
        result(&p, "IMPL-001")["files_modified"],
        serde_json::json!(["a.txt"]),
        "{}",
        o.render()
    );
    assert_eq!(
        result(&p, "IMPL-002")["files_modified"],
        serde_json::json!(["b/b.txt"])
    );
    // The folder is untouched, and still has no git.
    assert!(!root.join("a.txt").exists());
    assert!(!root.join("b").exists());
    assert_no_git(root);
    assert!(
        o.stderr.contains("shadow repository") && o.stderr.contains("--apply"),
        "{}",
        o.render()
    );
    // Both landed on the integration branch of the shadow repository.
    let branch = format!("wavecrew/{SESSION}");
    let files = shadow_git(&p, &["ls-tree", "-r", "--name-only", &branch]);
    let files: Vec<&str> = files.lines().collect();
    assert!(
        files.contains(&"a.txt") && files.contains(&"b/b.txt"),
        "{files:?}"
    );
    assert!(
        !files.iter().any(|f| f.starts_with(".workflow")),
        "{files:?}"
    );
    shadow_git(&p, &["fsck", "--no-progress"]);

    // --apply writes the work into the folder as files.
    let o = run(&p, &["--apply"]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(
        o.stderr
            .contains(&format!("applied: the work of {branch} is in")),
        "{}",
        o.render()
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "from IMPL-001\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b/b.txt")).unwrap(),
        "from IMPL-002\n"
    );
    assert!(
        !root.join("saw-b.txt").exists(),
        "IMPL-001 saw IMPL-002's file"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("README.md")).unwrap(),
        "# a folder without git\n"
    );
    assert_no_git(root);
    // Applying again: the folder already holds it.
    let o = run(&p, &["--apply"]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(
        o.stderr.contains("already holds the work"),
        "{}",
        o.render()
    );
}

/// Where the real git is, from `PATH`.
fn real_git() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .expect("git on PATH")
}

#[test]
fn a_git_older_than_2_38_is_named_and_the_run_fails() {
    let p = folder_project(
        &["IMPL-001"],
        "import pathlib\npathlib.Path('a.txt').write_text('a\\n')\n",
        "",
    );
    // A `git` first on PATH that says 2.30.0 and is the real git otherwise.
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("git");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do\n  case \"$a\" in\n    --version|version) echo 'git version 2.30.0'; exit 0 ;;\n  esac\ndone\nexec '{}' \"$@\"\n",
            real_git().display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = std::env::join_paths(
        std::iter::once(bin.path().to_owned())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let o: CliOutput = Command::new(bin_path("wavecrew"))
        .args(["run", p.session().to_str().unwrap()])
        .current_dir(p.root())
        .env("PATH", path)
        .env_remove("CCW_PROJECT_ROOT")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(o.code, 1, "{}", o.render());
    // The run's own words, and the task's recorded error.
    assert!(
        o.stderr.contains(
            "IMPL-001 failed: isolation: git 2.30.0 is too old; expected git >= 2.38 \
             (for `git merge-tree --write-tree`)"
        ),
        "{}",
        o.render()
    );
    assert_eq!(
        result(&p, "IMPL-001")["error"],
        "isolation: git 2.30.0 is too old; expected git >= 2.38 (for `git merge-tree --write-tree`)"
    );
    assert!(!p.root().join("a.txt").exists());
    assert!(!p.session().join("shadow.git").exists());
    assert_no_git(p.root());
}

/// The agent reports whether it sees `.env`, and edits it.
const ENV_AGENT: &str = "import os, pathlib\n\
    if os.path.exists('.env'):\n\
    \x20   seen = pathlib.Path('.env').read_text()\n\
    \x20   pathlib.Path('seen-env.txt').write_text(seen)\n\
    \x20   pathlib.Path('.env').write_text(seen + 'CHANGED=by the agent\\n')\n\
    else:\n\
    \x20   pathlib.Path('no-env.txt').write_text('no .env here\\n')\n";

#[test]
fn copy_of_a_missing_env_is_skipped_and_the_run_works() {
    let p = folder_project(&["IMPL-001"], ENV_AGENT, "copy = [\".env\"]\n");
    let o = run(&p, &[]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(
        result(&p, "IMPL-001")["files_modified"],
        serde_json::json!(["no-env.txt"])
    );
    let o = run(&p, &["--apply"]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(p.root().join("no-env.txt").is_file());
    assert!(!p.root().join(".env").exists());
    assert_no_git(p.root());
}

#[test]
fn a_copied_env_is_seen_by_the_agent_and_never_committed() {
    let p = folder_project(&["IMPL-001"], ENV_AGENT, "copy = [\".env\"]\n");
    std::fs::write(p.root().join(".env"), "TOKEN=abc\n").unwrap();
    let o = run(&p, &[]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(
        result(&p, "IMPL-001")["files_modified"],
        serde_json::json!(["seen-env.txt"])
    );
    let branch = format!("wavecrew/{SESSION}");
    assert_eq!(
        shadow_git(&p, &["show", &format!("{branch}:seen-env.txt")]),
        "TOKEN=abc\n"
    );
    // Never in any commit of the shadow repository.
    let touched = shadow_git(&p, &["log", "--all", "--name-only", "--format="]);
    assert!(!touched.lines().any(|f| f == ".env"), "{touched}");
    let o = run(&p, &["--apply"]);
    assert_eq!(o.code, 0, "{}", o.render());
    assert_eq!(
        std::fs::read_to_string(p.root().join("seen-env.txt")).unwrap(),
        "TOKEN=abc\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.root().join(".env")).unwrap(),
        "TOKEN=abc\n",
        "the folder's own .env is untouched"
    );
    assert_no_git(p.root());
}
