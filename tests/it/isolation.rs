//! Isolated parallel tasks (`[isolation] mode = "worktree"`, in a git work
//! tree): each task's agent works in a worktree of its own, its
//! validation sees only its own edits, and the work lands on the session's
//! integration branch through the merge queue; the user's branch and files
//! are never touched.

use std::process::{Command, Stdio};

use serde_json::Value;
use wavecrew_core::{TaskId, TaskStore};
use wavecrew_testkit::run_bin;

use crate::team::{Project, git, project};

use crate::team::SESSION;

/// A Rust crate under git with two modules, a session of two independent
/// tasks, and a `command` agent (a Python script, argv only): IMPL-001
/// writes `src/a.rs` broken, then fixes it seconds later; IMPL-002 writes a
/// correct `src/b.rs` meanwhile.
fn crate_project(toml_extra: &str) -> Project {
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &[], "developer"),
        ],
        &serde_json::json!([]),
        "",
    );
    let root = p.root();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"iso\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(root.join("src/a.rs"), "pub fn a() -> u32 {\n    0\n}\n").unwrap();
    std::fs::write(root.join("src/b.rs"), "pub fn b() -> u32 {\n    0\n}\n").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n.workflow/\n").unwrap();
    std::fs::write(
        root.join("agent.py"),
        "import pathlib, sys, time\n\
         task = sys.argv[1]\n\
         if task == 'IMPL-001':\n\
         \x20   pathlib.Path('src/a.rs').write_text('pub fn a() -> u32 {\\n    1\\n')\n\
         \x20   time.sleep(5)\n\
         \x20   pathlib.Path('src/a.rs').write_text('pub fn a() -> u32 {\\n    1\\n}\\n')\n\
         else:\n\
         \x20   time.sleep(1)\n\
         \x20   pathlib.Path('src/b.rs').write_text('pub fn b() -> u32 {\\n    2\\n}\\n')\n\
         print(task + ' done')\n",
    )
    .unwrap();
    let agent = root.join("agent.py");
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"py\"\ncodex = \"py\"\n\n[backends.py]\nkind = \"command\"\n\
             argv = [\"python3\", {:?}, \"{{task_id}}\"]\nprompt = \"stdin\"\nstream = \"none\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n{toml_extra}",
            agent.display().to_string()
        ),
    )
    .unwrap();
    // A crate keeps its lock file, as one with a binary does: a check in a
    // worktree then changes nothing but the agent's files.
    let lock = Command::new("cargo")
        .args(["generate-lockfile", "--offline"])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
    p
}

fn result(p: &Project, id: &str) -> Value {
    p.store()
        .get(&TaskId::new(id).unwrap())
        .unwrap()
        .result
        .unwrap_or(Value::Null)
}

#[test]
fn parallel_tasks_each_see_only_their_own_edits_and_land_on_the_integration_branch() {
    let p = crate_project("\n[isolation]\nmode = \"worktree\"\n");
    let root = p.root();
    let head = git(root, &["rev-parse", "HEAD"]);
    let o = run_bin(
        "wavecrew",
        &["run", p.session().to_str().unwrap(), "--max-parallel", "2"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    // Each task changed exactly its own file.
    assert_eq!(
        result(&p, "IMPL-001")["files_modified"],
        serde_json::json!(["src/a.rs"])
    );
    assert_eq!(
        result(&p, "IMPL-002")["files_modified"],
        serde_json::json!(["src/b.rs"])
    );
    // The user's branch and files are untouched.
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(root.join("src/a.rs")).unwrap(),
        "pub fn a() -> u32 {\n    0\n}\n"
    );
    // Both landed on the integration branch, once each.
    let branch = format!("wavecrew/{SESSION}");
    assert_eq!(
        git(root, &["show", &format!("{branch}:src/a.rs")]),
        "pub fn a() -> u32 {\n    1\n}\n"
    );
    assert_eq!(
        git(root, &["show", &format!("{branch}:src/b.rs")]),
        "pub fn b() -> u32 {\n    2\n}\n"
    );
    let trailers = git(
        root,
        &[
            "log",
            "--format=%(trailers:key=Wavecrew-Task,valueonly)",
            &branch,
        ],
    );
    let mut landed: Vec<&str> = trailers.lines().filter(|l| !l.is_empty()).collect();
    landed.sort_unstable();
    landed.dedup();
    assert_eq!(
        landed,
        [format!("{SESSION}/IMPL-001"), format!("{SESSION}/IMPL-002")]
    );
    // No session file on any task branch, and a sound repository.
    let files = git(root, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(!files.contains(".workflow"), "{files}");
    git(root, &["fsck", "--no-progress"]);
    // Taking the work: the resumed (finished) session with --apply
    // fast-forwards the user's branch and files to it.
    let o = run_bin(
        "wavecrew",
        &["run", p.session().to_str().unwrap(), "--apply"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(
        o.stderr
            .contains("applied: your branch now holds the work of"),
        "{}",
        o.render()
    );
    assert_eq!(
        git(root, &["rev-parse", "HEAD"]),
        git(root, &["rev-parse", &branch])
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/a.rs")).unwrap(),
        "pub fn a() -> u32 {\n    1\n}\n"
    );
}

#[test]
fn in_place_the_neighbours_half_done_edit_fails_the_task() {
    // In place (the default): one tree for both agents.
    let p = crate_project("");
    let o = run_bin(
        "wavecrew",
        &["run", p.session().to_str().unwrap(), "--max-parallel", "2"],
        p.root(),
    );
    assert_ne!(o.code, 0, "{}", o.render());
    assert_eq!(
        result(&p, "IMPL-002")["error"],
        "syntax check failed",
        "{}",
        o.render()
    );
}
