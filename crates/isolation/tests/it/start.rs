//! Starting a session: from a clean HEAD, from a snapshot of a dirty work
//! tree (never touching the user's index or files), and on resume.

use wavecrew_isolation::{Integration, IsolationError, Repo, Worktree};

use crate::support::Project;

#[test]
fn repo_open_and_git_version() {
    let (major, minor, _) = Repo::check_git_version().unwrap();
    assert!((major, minor) >= (2, 38));
    let p = Project::new();
    let repo = Repo::open(&p.top.join(".")).unwrap().unwrap();
    assert_eq!(repo.top(), p.top);
    assert_eq!(repo.common_dir(), p.top.join(".git"));
    // A subfolder finds the same repository.
    std::fs::create_dir(p.top.join("sub")).unwrap();
    assert_eq!(
        Repo::open(&p.top.join("sub")).unwrap().unwrap().top(),
        p.top
    );
    // Outside any repository, and inside `.git`: no work tree.
    let plain = tempfile::tempdir().unwrap();
    assert!(Repo::open(plain.path()).unwrap().is_none());
    assert!(Repo::open(&p.top.join(".git")).unwrap().is_none());
    assert!(Repo::open(&p.top.join("missing")).is_err());
}

#[test]
fn clean_start_is_head() {
    let p = Project::new();
    let head = p.git(&["rev-parse", "HEAD"]);
    let s = p.start("S-clean");
    assert_eq!(s.base(), head);
    assert_eq!(s.head_at_start(), head);
    assert!(!s.snapshot());
    assert_eq!(s.branch(), "wavecrew/S-clean");
    assert_eq!(p.git(&["rev-parse", "wavecrew/S-clean"]), head);
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.state_file()).unwrap()).unwrap();
    assert_eq!(state["branch"], "wavecrew/S-clean");
    assert_eq!(state["base"], head.as_str());
    assert_eq!(state["head_at_start"], head.as_str());
    assert_eq!(state["snapshot"], false);
    // The session folder is ignored, so it does not make the tree dirty.
    assert!(s.state_file().starts_with(p.top.join(".workflow")));
    p.assert_sound();
}

#[test]
fn dirty_start_snapshots_tracked_and_untracked_changes_without_touching_the_user() {
    let p = Project::new();
    // Track a file under the excluded folder to check it keeps HEAD's version.
    std::fs::write(p.top.join(".gitignore"), ".env\n").unwrap();
    p.write(".workflow/tracked.md", "as committed\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "track the session folder"]);
    let head = p.git(&["rev-parse", "HEAD"]);

    p.write("README", "hello, edited\n");
    p.write("notes/new.txt", "untracked\n");
    p.write("staged.txt", "staged only\n");
    p.git(&["add", "staged.txt"]);
    p.write(".workflow/tracked.md", "edited by the session\n");
    p.write(".workflow/.team/x/task.json", "{}\n");
    p.write(".env", "SECRET=1\n");
    // The session's own state folder (here not ignored) is left out of the
    // comparison: it is written by the session, by design.
    let status = [
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--",
        ".",
        ":(exclude).workflow/.team/S-dirty/isolation",
    ];
    let status_before = p.git_bytes(&status);
    let index_before = std::fs::read(p.top.join(".git/index")).unwrap();

    let s = p.start("S-dirty");
    assert!(s.snapshot());
    assert_ne!(s.base(), head);
    assert_eq!(s.head_at_start(), head);
    assert_eq!(p.git(&["rev-parse", &format!("{}^", s.base())]), head);
    let show = |path: &str| p.git(&["show", &format!("{}:{path}", s.base())]);
    assert_eq!(show("README"), "hello, edited");
    assert_eq!(show("notes/new.txt"), "untracked");
    assert_eq!(show("staged.txt"), "staged only");
    assert_eq!(show(".workflow/tracked.md"), "as committed");
    let files = p.git(&["ls-tree", "-r", "--name-only", s.base()]);
    assert!(!files.contains(".team"), "{files}");
    assert!(
        !files.lines().any(|f| f == ".env"),
        "ignored files stay out: {files}"
    );

    // Byte-identical status, untouched index, same HEAD and branch.
    assert_eq!(p.git_bytes(&status), status_before);
    assert_eq!(
        std::fs::read(p.top.join(".git/index")).unwrap(),
        index_before
    );
    assert_eq!(p.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(p.git(&["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(p.read("README"), "hello, edited\n");

    // A worktree starts from the snapshot.
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert_eq!(
        std::fs::read_to_string(wt.path.join("notes/new.txt")).unwrap(),
        "untracked\n"
    );
    assert!(
        !s.worktrees_dir().starts_with(&p.top),
        "outside the project"
    );
    p.assert_sound();
}

#[test]
fn start_again_resumes_the_same_branch() {
    let p = Project::new();
    let s = p.start("S-resume");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    crate::support::write(&wt.path, "a.txt", "a\n");
    s.commit(&wt, "IMPL-001", "a").unwrap();
    s.land(&wt, "IMPL-001").unwrap();
    let tip = s.tip().unwrap();
    // The user commits meanwhile: a resumed session keeps its own base.
    p.write("README", "changed\n");
    p.git(&["commit", "-q", "-am", "user work"]);

    let again = p.start("S-resume");
    assert_eq!(again.base(), s.base());
    assert_eq!(again.tip().unwrap(), tip);
    // The worktree is found again, same branch and base.
    // It keeps its work: not fresh (its first attempt asks git).
    let wt2 = again.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert!(wt.fresh && !wt2.fresh);
    assert_eq!(wt2, Worktree { fresh: false, ..wt });
    // A state folder of another session is refused.
    let repo = Repo::open(&p.top).unwrap().unwrap();
    let err = Integration::start(&repo, "S-other", &[], &p.state_dir("S-resume")).unwrap_err();
    assert!(matches!(err, IsolationError::Inconsistent { .. }), "{err}");
    p.assert_sound();
}

/// The tip a start reads is the branch's commit, whichever way the start
/// went (new, resumed, a lost branch made again), and a worktree opened
/// from it starts there without reading it again.
#[test]
fn a_start_gives_the_tip_it_read_and_a_worktree_starts_from_it() {
    let p = Project::new();
    let repo = Repo::open(&p.top).unwrap().unwrap();
    let state = p.state_dir("S-tip");
    let start = || Integration::start_at_tip(&repo, "S-tip", &[".workflow"], &state).unwrap();
    let (s, tip) = start();
    assert_eq!(tip, s.base(), "new: the base");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    crate::support::write(&wt.path, "a.txt", "a\n");
    s.commit(&wt, "IMPL-001", "a").unwrap();
    s.land(&wt, "IMPL-001").unwrap();
    let (again, tip) = start();
    assert_eq!(tip, again.tip().unwrap(), "resumed: the landed work");
    assert_ne!(tip, again.base());
    let next = again
        .open_worktree_at("IMPL-002", 1, &[], Some(tip.clone()))
        .unwrap();
    assert_eq!(next.base, tip);
    assert_eq!(p.git(&["rev-parse", &next.branch]), tip);
    p.git(&["update-ref", "-d", "refs/heads/wavecrew/S-tip"]);
    let (mended, tip) = start();
    assert_eq!(tip, mended.base(), "a lost branch: made again at the base");
    assert_eq!(mended.tip().unwrap(), tip);
}

#[test]
fn a_lost_branch_is_made_again_and_a_foreign_branch_refused() {
    let p = Project::new();
    let s = p.start("S-lost");
    let base = s.base().to_owned();
    // A crash between the state file and the branch: the branch is missing.
    p.git(&["update-ref", "-d", "refs/heads/wavecrew/S-lost"]);
    let again = p.start("S-lost");
    assert_eq!(again.tip().unwrap(), base);

    // A branch that exists without state is someone else's.
    p.git(&["branch", "wavecrew/S-taken"]);
    let repo = Repo::open(&p.top).unwrap().unwrap();
    let err = Integration::start(&repo, "S-taken", &[], &p.state_dir("S-taken")).unwrap_err();
    assert!(matches!(err, IsolationError::BranchExists { .. }), "{err}");
    assert!(err.to_string().contains("wavecrew/S-taken"), "{err}");
}

/// A session made anew under a used id (its folder and integration branch
/// removed, its task branches and worktrees left) is refused, naming the
/// old task branches and the commands that remove them; once they ran, it
/// starts from the current tip.
#[test]
fn a_session_made_anew_under_a_used_id_refuses_the_old_task_branches() {
    let p = Project::new();
    let old = p.start("S-anew");
    let wt = old.open_worktree("T1", 1, &[]).unwrap();
    std::fs::write(wt.path.join("old.txt"), "old work\n").unwrap();
    p.git(&["-C", wt.path.to_str().unwrap(), "add", "old.txt"]);
    p.git(&["-C", wt.path.to_str().unwrap(), "commit", "-qm", "old"]);
    drop(old);
    // The user moves on: a new commit, the session's folder and its
    // integration branch removed.
    std::fs::write(p.top.join("new.txt"), "new\n").unwrap();
    p.git(&["add", "new.txt"]);
    p.git(&["commit", "-qm", "new"]);
    std::fs::remove_dir_all(p.state_dir("S-anew")).unwrap();
    p.git(&["update-ref", "-d", "refs/heads/wavecrew/S-anew"]);

    let repo = Repo::open(&p.top).unwrap().unwrap();
    let err = Integration::start(&repo, "S-anew", &[], &p.state_dir("S-anew")).unwrap_err();
    let IsolationError::StaleTaskBranches {
        branches, remove, ..
    } = &err
    else {
        panic!("expected the stale task branches refused: {err}");
    };
    assert_eq!(branches, &["wavecrew-tasks/S-anew/T1/1"]);
    let said = err.to_string();
    assert!(said.contains("wavecrew-tasks/S-anew/T1/1"), "{said}");
    assert!(said.contains("git branch -D"), "{said}");
    assert!(!p.state_dir("S-anew").join("integration.json").exists());

    // The commands it names, as a person would run them.
    for command in remove.split(" && ") {
        let words = shell_words::split(command).unwrap();
        assert_eq!(words[0], "git", "{command}");
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        p.git(&args);
    }
    let again = p.start("S-anew");
    assert_eq!(again.base(), p.git(&["rev-parse", "HEAD"]));
    let wt = again.open_worktree("T1", 1, &[]).unwrap();
    assert_eq!(wt.base, again.base());
    assert!(!wt.path.join("old.txt").exists(), "nothing of the old work");
    assert!(wt.path.join("new.txt").exists());
}

#[test]
fn a_repository_without_commits_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::git_in(dir.path(), &["init", "-q"]);
    let repo = Repo::open(dir.path()).unwrap().unwrap();
    let err = Integration::start(&repo, "S-1", &[], &dir.path().join("state")).unwrap_err();
    assert!(matches!(err, IsolationError::NoCommit { .. }), "{err}");
}
