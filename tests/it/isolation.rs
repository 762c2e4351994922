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
    // In place: one tree for both agents (here two at once, as asked).
    let p = crate_project(crate::IN_PLACE);
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

/// A text project under git (no build), a session of `tasks` with no
/// dependencies, and `agent` (a Python script run with the task id, the
/// prompt on stdin) as the agent, isolated.
fn text_project(tasks: &[&str], agent: &str) -> Project {
    text_project_with(tasks, agent, "")
}

/// [`text_project`] with more of `wavecrew.toml`, and `check.py` (fails
/// when a text file says `bad`) committed for a verify command to run.
fn text_project_with(tasks: &[&str], agent: &str, toml_extra: &str) -> Project {
    let spec: Vec<(&str, &[&str], &str)> =
        tasks.iter().map(|t| (*t, &[][..], "developer")).collect();
    text_project_of(&spec, agent, toml_extra)
}

/// [`text_project_with`] with the tasks' blockers: `(id, blocked by, role)`.
fn text_project_of(spec: &[(&str, &[&str], &str)], agent: &str, toml_extra: &str) -> Project {
    let p = project(spec, &serde_json::json!([]), "");
    let root = p.root();
    std::fs::write(root.join("shared.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(root.join(".gitignore"), ".workflow/\n").unwrap();
    std::fs::write(root.join("agent.py"), agent).unwrap();
    let agent = root.join("agent.py");
    std::fs::write(
        root.join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"py\"\ncodex = \"py\"\n\n[backends.py]\nkind = \"command\"\n\
             argv = [\"python3\", {:?}, \"{{task_id}}\"]\nprompt = \"stdin\"\nstream = \"none\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n\n[isolation]\nmode = \"worktree\"\n{toml_extra}",
            agent.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("check.py"),
        "import pathlib, sys\n\
         bad = [str(p) for p in pathlib.Path('.').glob('*.txt') if 'bad' in p.read_text()]\n\
         print('bad files: ' + ', '.join(bad) if bad else 'all good')\n\
         sys.exit(1 if bad else 0)\n",
    )
    .unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
    p
}

/// Three tasks rewrite the same line. IMPL-001 lands first. IMPL-002 and
/// IMPL-003 conflict with it, and each gets one revision on the new tip;
/// IMPL-002's revision lands; IMPL-003's, which started before that,
/// conflicts again, with IMPL-002, and is blocked.
const SAME_LINE_AGENT: &str = "import pathlib, sys, time\n\
task = sys.argv[1]\n\
prompt = sys.stdin.read()\n\
revision = 'This is a revision' in prompt\n\
p = pathlib.Path('shared.txt')\n\
lines = p.read_text().split('\\n')\n\
who = {'IMPL-001': 'a', 'IMPL-002': 'b', 'IMPL-003': 'c'}[task]\n\
if not revision:\n\
\x20   time.sleep(0 if task == 'IMPL-001' else 1)\n\
\x20   lines[1] = 'two by ' + who\n\
else:\n\
\x20   time.sleep(3 if task == 'IMPL-002' else 7)\n\
\x20   lines[1] = lines[1] + ' and ' + who\n\
p.write_text('\\n'.join(lines))\n\
print(task + (' revised' if revision else ' done'))\n";

#[test]
fn a_conflict_gets_one_revision_then_the_task_is_blocked_naming_both() {
    let p = text_project(&["IMPL-001", "IMPL-002", "IMPL-003"], SAME_LINE_AGENT);
    let root = p.root();
    let head = git(root, &["rev-parse", "HEAD"]);
    let o = run_bin(
        "wavecrew",
        &["run", p.session().to_str().unwrap(), "--max-parallel", "3"],
        root,
    );
    assert_ne!(o.code, 0, "a blocked task fails the run: {}", o.render());
    let branch = format!("wavecrew/{SESSION}");
    // IMPL-002 landed after its revision, on top of IMPL-001's work.
    assert_eq!(
        git(root, &["show", &format!("{branch}:shared.txt")]),
        "one\ntwo by a and b\nthree\n"
    );
    let r2 = result(&p, "IMPL-002");
    assert_eq!(r2["status"], "success", "{r2:#}");
    assert_eq!(r2["conflicts"][0]["with"], serde_json::json!(["IMPL-001"]));
    assert_eq!(
        r2["conflicts"][0]["files"],
        serde_json::json!(["shared.txt"])
    );
    // IMPL-003 conflicted again, with IMPL-002: blocked, both named.
    let t3 = p.store().get(&TaskId::new("IMPL-003").unwrap()).unwrap();
    assert_eq!(
        t3.status,
        wavecrew_core::TaskStatus::Blocked,
        "{}",
        o.render()
    );
    let r3 = t3.result.unwrap();
    let error = r3["error"].as_str().unwrap();
    assert!(
        error.contains("IMPL-002") && error.contains("shared.txt"),
        "{error}"
    );
    assert_eq!(r3["conflict"]["with"], serde_json::json!(["IMPL-002"]));
    assert_eq!(r3["conflicts"][0]["with"], serde_json::json!(["IMPL-001"]));
    assert!(o.stderr.contains("IMPL-003"), "{}", o.render());
    // Each landed task once; the blocked one not at all.
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
    // The user's branch and files are untouched; the bus has the story.
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(root.join("shared.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    let bus = std::fs::read_to_string(p.session().join(".msg/messages.jsonl")).unwrap();
    assert_eq!(bus.matches("\"task_merged\"").count(), 2, "{bus}");
    assert_eq!(bus.matches("\"merge_conflict\"").count(), 3, "{bus}");

    // What the revision's agent read: the conflict, fenced as data.
    let prompt = revision_prompt(&p, "IMPL-002");
    wavecrew_testkit::insta_settings().bind(|| {
        let mut settings = insta::Settings::clone_current();
        settings.add_filter(r"\b[0-9a-f]{10,40}\b", "[COMMIT]");
        settings.add_filter(r"working in \S+", "working in [WORKTREE]");
        settings.bind(|| insta::assert_snapshot!("conflict_revision_prompt", prompt));
    });
}

/// The prompt of `task`'s last attempt (its revision).
fn revision_prompt(p: &Project, task: &str) -> String {
    let dir = p.session().join("attempts").join(task);
    let last = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .max()
        .unwrap();
    std::fs::read_to_string(dir.join(last.to_string()).join("prompt.md")).unwrap()
}

#[test]
fn a_merge_that_fails_verify_does_not_land_and_the_task_gets_one_revision() {
    // IMPL-002 first writes a file the project's check rejects; told why,
    // its revision fixes it.
    let agent = "import pathlib, sys\n\
task = sys.argv[1]\n\
prompt = sys.stdin.read()\n\
if task == 'IMPL-001':\n\
\x20   pathlib.Path('a.txt').write_text('fine\\n')\n\
elif 'failed `python3 check.py`' in prompt and 'bad files: b.txt' in prompt:\n\
\x20   pathlib.Path('b.txt').write_text('good\\n')\n\
else:\n\
\x20   pathlib.Path('b.txt').write_text('bad\\n')\n\
print(task + ' done')\n";
    let p = text_project_with(
        &["IMPL-001", "IMPL-002"],
        agent,
        "\n[integration]\nverify = \"python3 check.py\"\n",
    );
    let root = p.root();
    let o = run_bin(
        "wavecrew",
        &["run", p.session().to_str().unwrap(), "--max-parallel", "2"],
        root,
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let branch = format!("wavecrew/{SESSION}");
    assert_eq!(git(root, &["show", &format!("{branch}:b.txt")]), "good\n");
    assert_eq!(git(root, &["show", &format!("{branch}:a.txt")]), "fine\n");
    // The bad version never reached the integration branch.
    let history = git(root, &["log", "-p", "--format=%H", &branch, "--", "b.txt"]);
    assert!(!history.contains("+bad"), "{history}");
    let bus = std::fs::read_to_string(p.session().join(".msg/messages.jsonl")).unwrap();
    assert_eq!(bus.matches("\"merge_rejected\"").count(), 1, "{bus}");
    assert_eq!(bus.matches("\"task_merged\"").count(), 2, "{bus}");
    let prompt = revision_prompt(&p, "IMPL-002");
    assert!(prompt.contains("bad files: b.txt"), "{prompt}");
}

/// 20 isolated tasks with dependencies, landing as they finish (merge
/// commits where they ran side by side); `wavecrew run` and every worker
/// SIGKILLed at random instants, eight times, then resumed to the end.
/// Every task lands exactly once (the trailers on the integration branch's
/// first-parent history, counted, not deduplicated), the repository passes
/// `git fsck`, nothing is left mid-rebase or mid-merge, no stale worktree
/// survives the next start, and the user's branch never moved.
#[test]
fn killed_at_random_instants_every_task_lands_exactly_once() {
    use crate::crash::{Lcg, pid_of, random_session, spawn_run};
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;

    let p = random_session(11, 20, "[isolation]\nmode = \"worktree\"\n");
    let root = p.root();
    std::fs::write(root.join(".gitignore"), ".workflow/\n").unwrap();
    std::fs::write(root.join("README"), "a project\n").unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
    let head = git(root, &["rev-parse", "HEAD"]);
    let mut rng = Lcg(2026);
    for _ in 0..8 {
        let mut child = spawn_run(&p, "9");
        std::thread::sleep(std::time::Duration::from_millis(300 + rng.next(1500)));
        let _ = killpg(pid_of(&child), Signal::SIGKILL);
        let _ = child.wait();
        for t in p.store().list().unwrap() {
            if let Some(l) = &t.lease {
                let _ = kill(
                    Pid::from_raw(i32::try_from(l.pid).unwrap()),
                    Signal::SIGKILL,
                );
            }
        }
    }
    // A killed run's leftover under wavecrew's worktree folder, and a
    // folder of the user's beside it.
    let repo = wavecrew_isolation::Repo::open(root).unwrap().unwrap();
    let ours = wavecrew_isolation::worktrees_dir(&repo, SESSION).join("IMPL-999/1");
    std::fs::create_dir_all(&ours).unwrap();
    std::fs::write(ours.join("half-made"), "x").unwrap();
    let theirs = root.join(".git/wavecrew-user-notes");
    std::fs::create_dir_all(&theirs).unwrap();
    let o = run_bin(
        "wavecrew",
        &[
            "run",
            p.session().to_str().unwrap(),
            "--max-parallel",
            "3",
            "--crash-retries",
            "9",
        ],
        root,
    );
    assert_eq!(o.code, 0, "the final run did not complete: {}", o.render());
    assert!(
        !ours.exists(),
        "a stale worktree folder survived the start: {}",
        o.render()
    );
    assert!(theirs.exists(), "a folder outside wavecrew's was removed");
    let interrupted = p
        .store()
        .list()
        .unwrap()
        .iter()
        .filter(|t| t.attempts > 1)
        .count();
    assert!(
        interrupted > 0,
        "no kill interrupted a task: the test proved nothing"
    );

    let branch = format!("wavecrew/{SESSION}");
    let trailers = git(
        root,
        &[
            "log",
            "--first-parent",
            "--format=%(trailers:key=Wavecrew-Task,valueonly)",
            &branch,
        ],
    );
    let mut landed = std::collections::BTreeMap::<&str, usize>::new();
    for t in trailers.lines().filter(|l| !l.is_empty()) {
        *landed.entry(t).or_default() += 1;
    }
    assert_eq!(landed.len(), 20, "{landed:?}");
    assert!(landed.values().all(|n| *n == 1), "landed twice: {landed:?}");
    let files = git(root, &["ls-tree", "-r", "--name-only", &branch, "out"]);
    assert_eq!(files.lines().count(), 20, "{files}");
    let merges = git(root, &["rev-list", "--merges", "--count", &branch]);
    assert_ne!(
        merges, "0",
        "no task landed beside another: no merge was tested"
    );
    git(root, &["fsck", "--no-progress", "--strict"]);
    let git_dir = root.join(".git");
    for leftover in ["rebase-merge", "rebase-apply", "MERGE_HEAD"] {
        assert!(!git_dir.join(leftover).exists(), "{leftover} left behind");
    }
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    // Merged attempts' worktrees are gone; what git lists is not stale.
    let listed = git(root, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("prunable"), "{listed}");
}

/// Role-file roles on worktrees: a writing role (`writer`, DRAFT-*) lands
/// its work through the merge queue like the executor; a read-only role
/// (`reviewer`, REVIEW-*, "read-only (analysis)") looks at a detached
/// worktree of the integration tip, which holds its dependencies' landed
/// work, and nothing it leaves there lands.
#[test]
fn role_file_roles_land_their_work_and_read_only_roles_land_nothing() {
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("DRAFT-001", &["IMPL-001"], "writer"),
            ("REVIEW-001", &["DRAFT-001"], "reviewer"),
        ],
        &serde_json::json!([]),
        "\n[isolation]\nmode = \"worktree\"\n",
    );
    let root = p.root();
    let session = p.session();
    let saw = session.join("artifacts/review-saw.md");
    std::fs::write(
        root.join("agent.json"),
        serde_json::json!({"scenarios": [
            crate::team::writes("IMPL-001"),
            {"match": {"task": "DRAFT-001"}, "steps": [
                {"run": ["cp", "out/IMPL-001.txt", "draft.md"]},
                {"append": {"path": "draft.md", "content": "drafted\n"}},
                {"say": "draft written"}]},
            {"match": {"task": "REVIEW-001"}, "steps": [
                {"run": ["cp", "draft.md", saw.display().to_string()]},
                {"write": {"path": "scribble.txt", "content": "a reviewer's note\n"}},
                {"say": "reviewed"}]},
        ]})
        .to_string(),
    )
    .unwrap();
    let team_session = session.join("team-session.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&team_session).unwrap()).unwrap();
    for role in meta["roles"].as_array_mut().unwrap() {
        let kind = match role["name"].as_str().unwrap() {
            "reviewer" => "read-only (analysis)",
            "writer" => "code-gen (docs)",
            _ => "code-gen (code)",
        };
        role["responsibility_type"] = kind.into();
    }
    std::fs::write(&team_session, meta.to_string()).unwrap();
    std::fs::write(root.join(".gitignore"), ".workflow/\n").unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
    let head = git(root, &["rev-parse", "HEAD"]);
    let shown = run_bin(
        "wavecrew",
        &["prompt", session.to_str().unwrap(), "REVIEW-001"],
        root,
    );
    assert_eq!(shown.code, 0, "{}", shown.render());

    let o = run_bin("wavecrew", &["run", session.to_str().unwrap()], root);
    assert_eq!(o.code, 0, "{}", o.render());
    let sent = std::fs::read_to_string(session.join("attempts/REVIEW-001/1/prompt.md")).unwrap();
    // Where it works, as `wavecrew prompt` showed before the run (the
    // team's wisdom grew meanwhile).
    let first_line = |text: &str| text.lines().next().unwrap_or_default().to_owned();
    assert_eq!(first_line(&shown.stdout), first_line(&sent));
    assert!(
        first_line(&sent).ends_with(".detached/REVIEW-001."),
        "{sent}"
    );
    // The reviewer saw the writer's landed work, which holds the developer's.
    assert_eq!(
        std::fs::read_to_string(&saw).unwrap(),
        "IMPL-001\ndrafted\n"
    );
    let branch = format!("wavecrew/{SESSION}");
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
    assert_eq!(
        landed,
        [
            format!("{SESSION}/DRAFT-001"),
            format!("{SESSION}/IMPL-001")
        ]
    );
    let draft = result(&p, "DRAFT-001");
    assert_eq!(draft["files_modified"], serde_json::json!(["draft.md"]));
    assert!(draft["merge_commit"].is_string(), "{draft:#}");
    let review = result(&p, "REVIEW-001");
    assert_eq!(review["discarded"], serde_json::json!(["scribble.txt"]));
    assert!(review.get("merge_commit").is_none(), "{review:#}");
    let files = git(root, &["ls-tree", "-r", "--name-only", &branch]);
    assert!(!files.contains("scribble.txt"), "{files}");
    // Every worktree is gone; the user's branch and files are untouched.
    let worktrees = git(root, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert!(!root.join("draft.md").exists());
}

/// A repository without a commit yet (`git init`, files added, nothing
/// committed): an isolated run is refused once, before any task starts,
/// with what to do; no task is failed or started.
#[test]
fn a_repository_without_a_commit_is_refused_once_before_any_task() {
    let spec: Vec<(&str, &[&str], &str)> = ["IMPL-001", "IMPL-002", "IMPL-003"]
        .iter()
        .map(|t| (*t, &[][..], "developer"))
        .collect();
    let p = project(&spec, &serde_json::json!([]), "");
    let root = p.root();
    std::fs::write(root.join("shared.txt"), "one\n").unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        "[isolation]\nmode = \"worktree\"\n",
    )
    .unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "shared.txt"]);
    let o = run_bin("wavecrew", &["run", p.session().to_str().unwrap()], root);
    assert_eq!(o.code, 2, "{}", o.render());
    assert_eq!(
        o.stderr.matches("has no commit yet").count(),
        1,
        "{}",
        o.render()
    );
    assert!(
        o.stderr.contains("git add -A && git commit"),
        "{}",
        o.render()
    );
    assert!(o.stderr.contains("mode = \"in-place\""), "{}", o.render());
    let store = wavecrew_core::FileTaskStore::for_session(&p.session());
    for t in store.list().unwrap() {
        assert_eq!(t.status, wavecrew_core::TaskStatus::Pending, "{}", t.id);
    }
    assert!(!p.session().join("attempts").exists());
}

/// The agent of the setup tests: it needs what setup made (`build/ready`,
/// git-ignored) in its worktree, and writes its task's file.
const NEEDS_SETUP_AGENT: &str = "import pathlib, sys\n\
task = sys.argv[1]\n\
ready = pathlib.Path('build/ready')\n\
if not ready.exists():\n\
\x20   print('no build/ready: setup did not run here')\n\
\x20   sys.exit(1)\n\
pathlib.Path(task + '.txt').write_text(ready.read_text())\n\
print(task + ' done')\n";

/// `[isolation] setup` runs once in each new worktree before its agent,
/// its output in the attempt folder; what it makes (ignored by git) is
/// there for the agent and never lands.
#[test]
fn setup_commands_prepare_each_new_worktree_before_its_agent() {
    let p = text_project_with(
        &["IMPL-001", "IMPL-002"],
        NEEDS_SETUP_AGENT,
        "setup = [[\"python3\", \"-c\", \"import os; os.makedirs('build', exist_ok=True); open('build/ready', 'w').write('made by setup')\"], \"python3 -c 'print(42)'\"]\n",
    );
    let root = p.root();
    std::fs::write(root.join(".gitignore"), ".workflow/\nbuild/\n").unwrap();
    git(root, &["commit", "-qam", "ignore build/"]);
    let o = run_bin("wavecrew", &["run", p.session().to_str().unwrap()], root);
    assert_eq!(o.code, 0, "{}", o.render());
    for id in ["IMPL-001", "IMPL-002"] {
        let r = result(&p, id);
        assert_eq!(
            r["files_modified"],
            serde_json::json!([format!("{id}.txt")]),
            "{r:#}"
        );
        let log = std::fs::read_to_string(p.session().join(format!("attempts/{id}/setup-1.log")))
            .unwrap();
        assert!(log.contains("$ python3 -c"), "{log}");
        assert!(log.contains("42"), "{log}");
    }
    let tip = git(root, &["rev-parse", "wavecrew/TC-team-test-2026-11-23"]);
    let tip = tip.trim();
    let landed = git(root, &["show", &format!("{tip}:IMPL-001.txt")]);
    assert_eq!(landed.trim(), "made by setup");
    assert!(
        !git(root, &["ls-tree", "-r", "--name-only", tip]).contains("build/"),
        "setup output landed"
    );
}

/// A chain of three tasks with `setup`: the second takes the first's warm
/// worktree, where setup already ran and no dependency file changed, so
/// setup does not run again (its build state says so, and what setup made
/// is still there); the second changes `requirements.txt`, so the third,
/// warm too, is set up again.
#[test]
fn setup_runs_again_in_a_warm_worktree_only_when_a_dependency_file_changed() {
    let agent = "import pathlib, sys
task = sys.argv[1]
ready = pathlib.Path('build/ready')
if not ready.exists():
\x20   print('no build/ready: setup did not run here')
\x20   sys.exit(1)
pathlib.Path(task + '.txt').write_text(ready.read_text())
if task == 'IMPL-002':
\x20   pathlib.Path('requirements.txt').write_text('attrs\\n')
print(task + ' done')
";
    let p = text_project_of(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &["IMPL-001"], "developer"),
            ("IMPL-003", &["IMPL-002"], "developer"),
        ],
        agent,
        "setup = [[\"python3\", \"-c\", \"import os; os.makedirs('build', exist_ok=True); open('build/ready', 'w').write('made by setup')\"]]\n",
    );
    let root = p.root();
    std::fs::write(root.join(".gitignore"), ".workflow/\nbuild/\n").unwrap();
    git(root, &["commit", "-qam", "ignore build/"]);
    let o = run_bin("wavecrew", &["run", p.session().to_str().unwrap()], root);
    assert_eq!(o.code, 0, "{}", o.render());
    let set_up = |id: &str| {
        p.session()
            .join(format!("attempts/{id}/setup-1.log"))
            .exists()
    };
    assert!(set_up("IMPL-001"), "a fresh worktree is set up");
    assert!(!set_up("IMPL-002"), "warm, nothing changed: not again");
    let r = result(&p, "IMPL-002");
    let said = r["build_state"].to_string();
    assert!(
        said.contains("warm:") && said.contains("setup: not run again"),
        "{r:#}"
    );
    assert!(set_up("IMPL-003"), "requirements.txt changed: set up again");
    assert!(
        result(&p, "IMPL-003")["build_state"]
            .to_string()
            .contains("warm:")
    );
}

/// A setup command that fails is the attempt's environment error: the task
/// fails as `setup_failed`, naming the command and its output, and its
/// agent never runs.
#[test]
fn a_failing_setup_is_an_environment_error_and_the_agent_never_runs() {
    let p = text_project_with(
        &["IMPL-001"],
        NEEDS_SETUP_AGENT,
        "setup = [[\"sh\", \"-c\", \"echo registry unreachable; exit 4\"]]\n",
    );
    let o = run_bin(
        "wavecrew",
        &["run", p.session().to_str().unwrap()],
        p.root(),
    );
    assert_eq!(o.code, 1, "{}", o.render());
    let t = p.store().get(&TaskId::new("IMPL-001").unwrap()).unwrap();
    let error = t.error().unwrap_or_default().to_owned();
    assert!(
        error.starts_with("setup_failed: `sh -c 'echo registry unreachable; exit 4'` exited 4"),
        "{error}"
    );
    assert!(error.contains("registry unreachable"), "{error}");
    // The kind says it, for scripts: never the agent's failure.
    assert_eq!(
        t.result.as_ref().unwrap()["error_kind"],
        "environment",
        "{:#}",
        t.result.as_ref().unwrap()
    );
    assert!(
        !p.session().join("attempts/IMPL-001/1").exists(),
        "the agent ran"
    );
}

/// The agent of the `.worktreeinclude` test: it reports which of the
/// project's untracked files its worktree has.
const SEES_INCLUDES_AGENT: &str = "import pathlib, sys\n\
task = sys.argv[1]\n\
seen = [n for n in ['.env', 'local/config.toml', 'secret-link'] if pathlib.Path(n).exists()]\n\
pathlib.Path(task + '.txt').write_text(' '.join(seen) + '\\n')\n\
print(task + ' done')\n";

/// The ignored files the user lists in `.worktreeinclude` are copied into
/// each new worktree (a link among them is not); nothing copied lands.
#[test]
fn worktreeinclude_files_that_git_ignores_are_copied_into_each_worktree() {
    let p = text_project(&["IMPL-001"], SEES_INCLUDES_AGENT);
    let root = p.root();
    std::fs::write(
        root.join(".gitignore"),
        ".workflow/\n.env\nlocal/\nsecret-link\n",
    )
    .unwrap();
    std::fs::write(root.join(".worktreeinclude"), ".env\nlocal/\nsecret-link\n").unwrap();
    git(root, &["add", ".gitignore", ".worktreeinclude"]);
    git(root, &["commit", "-qm", "includes"]);
    std::fs::write(root.join(".env"), "TOKEN=x\n").unwrap();
    std::fs::create_dir_all(root.join("local")).unwrap();
    std::fs::write(root.join("local/config.toml"), "a = 1\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join("secret-link")).unwrap();
    let o = run_bin("wavecrew", &["run", p.session().to_str().unwrap()], root);
    assert_eq!(o.code, 0, "{}", o.render());
    let tip = git(root, &["rev-parse", "wavecrew/TC-team-test-2026-11-23"]);
    let tip = tip.trim();
    let seen = git(root, &["show", &format!("{tip}:IMPL-001.txt")]);
    assert_eq!(seen.trim(), ".env local/config.toml");
    let files = git(root, &["ls-tree", "-r", "--name-only", tip]);
    for never in [".env", "local/config.toml", "secret-link"] {
        assert!(
            !files.lines().any(|f| f == never),
            "{never} landed: {files}"
        );
    }
}

/// Jest ignores every file under a `.git` folder: a task's worktree must
/// not be there, or its acceptance `jest` finds no tests and the task
/// fails for the environment's sake. The worktrees live beside the
/// project, so jest runs the task's tests in its worktree and the task
/// completes.
#[test]
fn jest_finds_the_tests_of_a_task_in_its_worktree() {
    let jest = wavecrew_testkit::agent_cli_bins::cache_dir().join("node/node_modules/.bin/jest");
    assert!(
        jest.exists(),
        "jest is not installed at {}: run scripts/test.sh (never skipped)",
        jest.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("app");
    std::fs::create_dir(&root).unwrap();
    let write = |rel: &str, text: &str| std::fs::write(root.join(rel), text).unwrap();
    write(
        "package.json",
        "{\"name\": \"app\", \"version\": \"1.0.0\"}\n",
    );
    write(
        "sum.test.js",
        "const sum = require('./sum');\ntest('adds', () => { expect(sum(1, 2)).toBe(3); });\n",
    );
    write(".gitignore", ".workflow/\n");
    write(
        "agent.py",
        "import pathlib\npathlib.Path('sum.js').write_text('module.exports = (a, b) => a + b;\\n')\nprint('wrote sum.js')\n",
    );
    write(
        "wavecrew.toml",
        &format!(
            "[aliases]\nagent = \"py\"\ncodex = \"py\"\n\n[backends.py]\nkind = \"command\"\n\
             argv = [\"python3\", {:?}]\nprompt = \"stdin\"\nstream = \"none\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n",
            root.join("agent.py").display().to_string()
        ),
    );
    write(
        "wavecrew.tasks.toml",
        &format!(
            "goal = \"Add numbers\"\nsession = \"TC-jest\"\n\n[[tasks]]\nid = \"IMPL-001\"\n\
             title = \"Write sum.js\"\nfiles = [\"sum.js\"]\nacceptance = [\n  \
             {{ criterion = \"jest passes\", verify = [{:?}, \"--ci\", \"--watchman=false\"] }},\n]\n",
            jest.display().to_string()
        ),
    );
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "start"]);
    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    let store = wavecrew_core::FileTaskStore::for_session(&root.join(".workflow/.team/TC-jest"));
    let t = store.get(&TaskId::new("IMPL-001").unwrap()).unwrap();
    let r = t.result.unwrap();
    assert_eq!(r["validation_results"]["acceptance"], "pass", "{r:#}");
    // Nothing is left beside the project once the work has landed.
    assert!(!tmp.path().join("app.wavecrew").exists());
}
