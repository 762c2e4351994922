//! A project folder without git: the shadow repository in the session's
//! state folder (made, made again after a kill, resumed), a session on it
//! (worktrees, landings, clean), and `--apply` writing the result back as
//! files. The folder never gets a `.git`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use wavecrew_isolation::{Integration, IsolationError, Landing, Repo, SHADOW_BRANCH, Worktree};

use crate::support::{Folder, git_in, set_mode, write};

#[test]
fn a_shadow_snapshots_the_folder_and_never_writes_to_it() {
    let f = Folder::new();
    f.write(".gitignore", "*.log\nbuild/\n");
    f.write("debug.log", "ignored\n");
    f.write("build/out.bin", "ignored too\n");
    f.write("src/lib.rs", "pub fn f() {}\n");
    std::os::unix::fs::symlink("src/lib.rs", f.top.join("lib-link")).unwrap();
    let before = f.listing();

    let repo = f.shadow("S-make", &[]);
    assert!(repo.is_shadow());
    assert_eq!(repo.work_tree(), f.top);
    let git_dir = f.state_dir("S-make").join("shadow.git");
    assert_eq!(repo.common_dir(), git_dir);
    assert_eq!(repo.top(), git_dir, "git runs in the shadow's git dir");
    assert_eq!(f.listing(), before, "the folder is untouched");

    // The first commit, on refs/heads/project, is the folder's files.
    assert_eq!(f.git("S-make", &["symbolic-ref", "HEAD"]), SHADOW_BRANCH);
    let tree = f.git("S-make", &["ls-tree", "-r", "HEAD"]);
    let entries: Vec<(&str, &str)> = tree
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            (path, meta.split(' ').next().unwrap())
        })
        .collect();
    assert_eq!(
        entries,
        [
            (".gitignore", "100644"),
            ("README", "100644"),
            ("lib-link", "120000"),
            ("run.sh", "100755"),
            ("shared.txt", "100644"),
            ("src/lib.rs", "100644"),
        ],
        "ignored files and the session folder stay out"
    );
    assert_eq!(f.git("S-make", &["rev-list", "--count", "HEAD"]), "1");

    // Opening it again takes no new snapshot, whatever the folder holds now.
    let head = f.git("S-make", &["rev-parse", "HEAD"]);
    f.write("README", "edited later\n");
    let again = f.shadow("S-make", &[]);
    assert_eq!(again.common_dir(), git_dir);
    assert_eq!(f.git("S-make", &["rev-parse", "HEAD"]), head);
    let found = Repo::open_shadow(&f.state_dir("S-make")).unwrap().unwrap();
    assert_eq!(found.work_tree(), f.top);
    assert!(found.is_shadow());
    assert!(Repo::open_shadow(&f.state_dir("S-none")).unwrap().is_none());

    // The same state folder for another project folder is refused.
    let other = Folder::new();
    let err = Repo::shadow(&other.top, &f.state_dir("S-make"), &[], &[]).unwrap_err();
    assert!(matches!(err, IsolationError::Shadow { .. }), "{err}");
    assert!(err.to_string().contains("it tracks"), "{err}");
    f.assert_sound("S-make");
}

#[test]
fn a_folder_with_a_broken_git_gets_no_shadow() {
    let f = Folder::new();
    fs::create_dir(f.top.join(".git")).unwrap();
    let err = Repo::shadow(&f.top, &f.state_dir("S-x"), &[], &[]).unwrap_err();
    assert!(matches!(err, IsolationError::Shadow { .. }), "{err}");
    assert!(!f.state_dir("S-x").join("shadow.git").exists());
}

#[test]
fn a_half_made_shadow_is_finished_or_made_again() {
    let f = Folder::new();
    let state = f.state_dir("S-half");
    // A temp folder a killed creation left: removed, then made properly.
    write(&state, ".shadow.git.tmp-abc123/objects/x", "garbage\n");
    let repo = f.shadow("S-half", &[]);
    assert!(!state.join(".shadow.git.tmp-abc123").exists());
    let head = f.git("S-half", &["rev-parse", "HEAD"]);
    let tree = f.git("S-half", &["rev-parse", "HEAD^{tree}"]);

    // The branch lost (made, then a kill before its ref): made again, with
    // the same files.
    f.git("S-half", &["update-ref", "-d", SHADOW_BRANCH, &head]);
    drop(repo);
    f.shadow("S-half", &[]);
    assert_eq!(f.git("S-half", &["rev-parse", "HEAD^{tree}"]), tree);

    // Not a shadow at all, and no session on it: made again.
    fs::remove_dir_all(state.join("shadow.git")).unwrap();
    write(&state, "shadow.git/stray.txt", "not a repository\n");
    f.shadow("S-half", &[]);
    assert_eq!(f.git("S-half", &["rev-parse", "HEAD^{tree}"]), tree);
    assert!(!state.join("shadow.git/stray.txt").exists());

    // Broken under a session that started: refused, nothing removed.
    Integration::start(&f.shadow("S-half", &[]), "S-half", &[".workflow"], &state).unwrap();
    fs::remove_file(state.join("shadow.git/wavecrew-shadow.json")).unwrap();
    let err = Repo::shadow(&f.top, &state, &[".workflow"], &[]).unwrap_err();
    assert!(err.to_string().contains("already started on it"), "{err}");
    assert!(Repo::open_shadow(&state).is_err());
    assert!(state.join("shadow.git/HEAD").exists());
}

/// Killed (SIGKILL, its whole process group) at many points while it makes
/// the shadow of a folder of a few hundred files, a child process leaves
/// something the next `Repo::shadow` opens or makes whole: the same
/// snapshot as an undisturbed one, no temp folder left, no `.git`.
#[test]
fn a_kill_at_any_point_leaves_a_shadow_that_opens_whole() {
    const CHILD: &str = "WAVECREW_ISOLATION_SHADOW_KILL_CHILD";
    if let Some(spec) = std::env::var_os(CHILD) {
        let spec = spec.to_string_lossy().into_owned();
        let (top, state) = spec.split_once('\n').unwrap();
        Repo::shadow(top.as_ref(), state.as_ref(), &[".workflow"], &[]).unwrap();
        return;
    }
    let f = Folder::new();
    for i in 0..300 {
        f.write(&format!("src/m{:02}/f{i}.txt", i % 20), &format!("{i}\n"));
    }
    let reference = f.shadow("S-ref", &[]);
    let want = git_in(reference.common_dir(), &["rev-parse", "HEAD^{tree}"]);
    let state = f.state_dir("S-kill");
    let child = || {
        use std::os::unix::process::CommandExt;
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "shadow::a_kill_at_any_point_leaves_a_shadow_that_opens_whole",
                "--nocapture",
            ])
            .env(CHILD, format!("{}\n{}", f.top.display(), state.display()))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // How long an undisturbed child takes; the kills spread over that.
    let started = std::time::Instant::now();
    assert!(child().wait().unwrap().success());
    let whole = started.elapsed();
    let mut cut_short = 0;
    for tenth in 0..=12 {
        let _ = fs::remove_dir_all(&state);
        let mut child = child();
        std::thread::sleep(whole * tenth / 10);
        let group = format!("-{}", child.id());
        Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status()
            .unwrap();
        child.wait().unwrap();
        if Repo::open_shadow(&state).unwrap().is_none() {
            cut_short += 1;
        }
        let repo = Repo::shadow(&f.top, &state, &[".workflow"], &[]).unwrap();
        assert_eq!(
            git_in(repo.common_dir(), &["rev-parse", "HEAD^{tree}"]),
            want,
            "killed after {tenth}/10 of {whole:?}"
        );
        let left: Vec<_> = fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".shadow.git.tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?} after {tenth}/10 of {whole:?}");
        git_in(
            repo.common_dir(),
            &["fsck", "--strict", "--no-dangling", "--no-progress"],
        );
    }
    eprintln!(
        "{cut_short} of 13 kills (spread over {whole:?}) landed before the shadow was complete"
    );
    f.assert_sound("S-kill");
}

#[test]
fn a_session_on_a_shadow_lands_its_tasks_and_applies_them_as_files() {
    let f = Folder::new();
    f.write("gone.txt", "to be deleted\n");
    f.write("old/only.txt", "the folder goes with it\n");
    let before = f.listing();
    let s = f.start("S-files");
    let state: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(s.state_file()).unwrap()).unwrap();
    assert_eq!(state["shadow"], true);
    assert!(!s.snapshot(), "the shadow's first commit is the base");
    assert_eq!(s.base(), f.git("S-files", &["rev-parse", "HEAD"]));
    assert!(s.worktrees_dir().starts_with(f.state_dir("S-files")));

    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let b = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert!(a.path.join("run.sh").is_file());
    // A: edits, a deletion, a new file, and run.sh loses its executable bit.
    write(&a.path, "README", "hello, edited\n");
    write(&a.path, "a/new.txt", "from a\n");
    fs::remove_file(a.path.join("gone.txt")).unwrap();
    fs::remove_file(a.path.join("old/only.txt")).unwrap();
    set_mode(&a.path.join("run.sh"), 0o644);
    // B: a tracked edit far from A's, a new executable and a symlink.
    write(&b.path, "shared.txt", "one\ntwo\nthree\nfour\n");
    write(&b.path, "tools/go.sh", "#!/bin/sh\n");
    set_mode(&b.path.join("tools/go.sh"), 0o755);
    std::os::unix::fs::symlink("../README", b.path.join("tools/readme")).unwrap();
    assert_eq!(
        s.changed_files(&a).unwrap(),
        ["README", "a/new.txt", "gone.txt", "old/only.txt", "run.sh"]
    );
    assert_eq!(
        s.changed_files(&b).unwrap(),
        ["shared.txt", "tools/go.sh", "tools/readme"]
    );
    s.commit(&a, "IMPL-001", "a").unwrap().unwrap();
    s.commit(&b, "IMPL-002", "b").unwrap().unwrap();
    assert!(matches!(
        s.land(&a, "IMPL-001").unwrap(),
        Landing::FastForward { .. }
    ));
    assert!(matches!(
        s.land(&b, "IMPL-002").unwrap(),
        Landing::Merged { .. }
    ));
    assert!(matches!(
        s.land(&b, "IMPL-002").unwrap(),
        Landing::AlreadyMerged { .. }
    ));
    let merged = s.merged_tasks().unwrap();
    assert_eq!(merged.keys().collect::<Vec<_>>(), ["IMPL-001", "IMPL-002"]);
    let files = f.git(
        "S-files",
        &["ls-tree", "-r", "--name-only", &s.tip().unwrap()],
    );
    assert!(!files.contains(".workflow"), "{files}");
    s.remove_worktree(&a).unwrap();
    s.remove_worktree(&b).unwrap();
    // Nothing reached the folder yet.
    assert_eq!(f.listing(), before);

    let applied = s.apply().unwrap();
    assert_eq!(applied.branch, "");
    assert_eq!(applied.from, s.base());
    assert_eq!(applied.to, s.tip().unwrap());
    assert!(!applied.uncommitted);
    let files = applied.files.unwrap();
    assert_eq!(
        files.written,
        [
            "README",
            "a/new.txt",
            "run.sh",
            "shared.txt",
            "tools/go.sh",
            "tools/readme"
        ]
    );
    assert_eq!(files.deleted, ["gone.txt", "old/only.txt"]);
    assert_eq!(f.read("README"), "hello, edited\n");
    assert_eq!(f.read("a/new.txt"), "from a\n");
    assert_eq!(f.read("shared.txt"), "one\ntwo\nthree\nfour\n");
    assert!(!f.top.join("gone.txt").exists());
    assert!(!f.top.join("old").exists(), "an emptied folder goes too");
    let mode = |rel: &str| fs::metadata(f.top.join(rel)).unwrap().permissions().mode() & 0o111;
    assert_eq!(mode("run.sh"), 0);
    assert_eq!(mode("tools/go.sh"), 0o111);
    assert_eq!(
        fs::read_link(f.top.join("tools/readme")).unwrap(),
        std::path::Path::new("../README")
    );
    // The folder is now the session's result.
    let now = Repo::shadow(&f.top, &f.state_dir("S-ref"), &[".workflow"], &[]).unwrap();
    assert_eq!(
        git_in(now.common_dir(), &["rev-parse", "HEAD^{tree}"]),
        f.git("S-files", &["rev-parse", "wavecrew/S-files^{tree}"])
    );
    // Applying again finds nothing left to do.
    let again = s.apply().unwrap().files.unwrap();
    assert!(
        again.written.is_empty() && again.deleted.is_empty(),
        "{again:?}"
    );
    f.assert_sound("S-files");
}

#[test]
fn apply_refuses_when_the_folder_changed_and_names_the_files() {
    let f = Folder::new();
    let s = f.start("S-moved");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "done.txt", "work\n");
    s.commit(&wt, "IMPL-001", "work").unwrap().unwrap();
    s.land(&wt, "IMPL-001").unwrap();
    // The user edits, adds and deletes meanwhile; the session folder's own
    // files do not count.
    f.write("README", "the user's own edit\n");
    f.write("mine.txt", "new\n");
    fs::remove_file(f.top.join("shared.txt")).unwrap();
    f.write(".workflow/.team/S-moved/more.md", "x\n");
    let before = f.listing();
    let err = s.apply().unwrap_err();
    let IsolationError::Refused { reason, command } = &err else {
        panic!("{err}");
    };
    assert_eq!(
        reason,
        "the project folder changed since the session started (M README, A mine.txt, \
         D shared.txt); the session's work was made on the files as they were"
    );
    assert!(command.contains("--git-dir="), "{command}");
    assert!(
        command.ends_with("wavecrew/S-moved | git apply"),
        "{command}"
    );
    assert_eq!(f.listing(), before, "nothing written");
    // Put back as it was: it applies.
    f.write("README", "hello\n");
    f.write("shared.txt", "one\ntwo\nthree\n");
    fs::remove_file(f.top.join("mine.txt")).unwrap();
    let files = s.apply().unwrap().files.unwrap();
    assert_eq!(files.written, ["done.txt"]);
    f.assert_sound("S-moved");
}

#[test]
fn an_apply_cut_short_is_finished_and_ignored_files_are_not_overwritten() {
    let f = Folder::new();
    f.write(".gitignore", "*.log\n");
    f.write("gone.txt", "x\n");
    f.write("notes.log", "the user's log\n");
    let s = f.start("S-cut");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "a.txt", "a\n");
    write(&wt.path, "b.txt", "b\n");
    fs::remove_file(wt.path.join("gone.txt")).unwrap();
    s.commit(&wt, "IMPL-001", "work").unwrap().unwrap();
    s.land(&wt, "IMPL-001").unwrap();
    // A kill mid-apply: a.txt written, gone.txt deleted, b.txt half
    // written in its temporary file.
    f.write("a.txt", "a\n");
    fs::remove_file(f.top.join("gone.txt")).unwrap();
    f.write(".wavecrew-apply-x1y2z3", "b");
    let files = s.apply().unwrap().files.unwrap();
    assert_eq!(files.written, ["b.txt"]);
    assert!(files.deleted.is_empty());
    assert_eq!(f.read("b.txt"), "b\n");
    assert!(!f.top.join(".wavecrew-apply-x1y2z3").exists());

    // A task that force-adds a file the folder has but ignores: refused.
    let wt2 = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    write(&wt2.path, "notes.log", "the agent's\n");
    git_in(&wt2.path, &["add", "-f", "notes.log"]);
    s.commit(&wt2, "IMPL-002", "log").unwrap().unwrap();
    s.land(&wt2, "IMPL-002").unwrap();
    let err = s.apply().unwrap_err().to_string();
    assert!(err.contains("already has"), "{err}");
    assert!(err.contains("notes.log"), "{err}");
    assert_eq!(f.read("notes.log"), "the user's log\n");
    f.assert_sound("S-cut");
}

#[test]
fn copied_files_are_ignored_by_the_shadow_and_never_committed() {
    let f = Folder::new();
    f.write(".env", "TOKEN=abc\n");
    let repo = f.shadow("S-env", &[".env"]);
    let files = f.git("S-env", &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(!files.lines().any(|l| l == ".env"), "{files}");
    let s = Integration::start(&repo, "S-env", &[".workflow"], &f.state_dir("S-env")).unwrap();
    let copy = vec![".env".to_owned(), "missing.env".to_owned()];
    let wt = s.open_worktree("IMPL-001", 1, &copy).unwrap();
    assert_eq!(
        fs::read_to_string(wt.path.join(".env")).unwrap(),
        "TOKEN=abc\n"
    );
    assert!(!wt.path.join("missing.env").exists());
    write(&wt.path, ".env", "TOKEN=changed by the agent\n");
    assert!(s.changed_files(&wt).unwrap().is_empty());
    assert_eq!(s.commit(&wt, "IMPL-001", "nothing").unwrap(), None);
    // Applying leaves the folder's own .env alone.
    let files = s.apply().unwrap().files.unwrap();
    assert!(files.written.is_empty());
    assert_eq!(f.read(".env"), "TOKEN=abc\n");
    f.assert_sound("S-env");
}

#[test]
fn worktrees_prune_clean_and_resume_on_a_shadow() {
    let f = Folder::new();
    let s = f.start("S-tidy");
    let keep = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let gone = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    s.detached_worktree("review").unwrap();
    fs::remove_dir_all(&gone.path).unwrap();
    write(&s.worktrees_dir(), "stray.txt", "x\n");
    s.prune_stale().unwrap();
    assert!(keep.path.join("README").exists());
    assert!(!s.worktrees_dir().join("stray.txt").exists());

    // Another process finds the session again from its state folder.
    let state = f.state_dir("S-tidy");
    let repo = Repo::open_shadow(&state).unwrap().unwrap();
    let again = Integration::resume(&repo, &state).unwrap().unwrap();
    assert_eq!(again.base(), s.base());
    assert_eq!(
        again.open_worktree("IMPL-001", 1, &[]).unwrap(),
        Worktree {
            fresh: false,
            ..keep
        }
    );
    assert_eq!(again.clean().unwrap(), 2);
    assert!(!s.worktrees_dir().exists());
    f.assert_sound("S-tidy");

    // The folder became a git repository meanwhile: the shadow session is
    // not mistaken for one of it.
    git_in(&f.top, &["init", "-q"]);
    let real = Repo::open(&f.top).unwrap().unwrap();
    let err = Integration::resume(&real, &state).unwrap_err();
    assert!(matches!(err, IsolationError::Inconsistent { .. }), "{err}");
    assert!(err.to_string().contains("shadow repository"), "{err}");
}

#[test]
fn the_state_folder_stays_out_of_snapshots_even_when_not_excluded() {
    let f = Folder::new();
    let state = f.top.join("wavecrew-state/S-self");
    let repo = Repo::shadow(&f.top, &state, &[], &[]).unwrap();
    let s = Integration::start(&repo, "S-self", &[], &state).unwrap();
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "done.txt", "work\n");
    s.commit(&wt, "IMPL-001", "work").unwrap().unwrap();
    s.land(&wt, "IMPL-001").unwrap();
    let files = git_in(
        repo.common_dir(),
        &["ls-tree", "-r", "--name-only", &s.tip().unwrap()],
    );
    assert!(!files.contains("wavecrew-state"), "{files}");
    // The session's own state changing meanwhile is no change of the folder.
    let files = s.apply().unwrap().files.unwrap();
    assert_eq!(files.written, ["done.txt"]);

    // A state folder that holds the project is refused.
    let err = Repo::shadow(&f.top, &f.top, &[], &[]).unwrap_err();
    assert!(matches!(err, IsolationError::Shadow { .. }), "{err}");
    assert!(!f.top.join("shadow.git").exists());
}

#[test]
fn the_merge_queue_checks_candidates_on_a_shadow_too() {
    use wavecrew_isolation::Verdict;
    let f = Folder::new();
    let s = f.start("S-verify");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "bad.txt", "red\n");
    s.commit(&wt, "IMPL-001", "bad").unwrap().unwrap();
    let mut seen = Vec::new();
    let mut check = |i: &Integration, candidate: &str| {
        let cw = i.candidate_worktree(candidate, &[])?;
        seen.push(cw.path.clone());
        Ok(if cw.path.join("bad.txt").exists() {
            Verdict::Fail("bad.txt is there".into())
        } else {
            Verdict::Pass
        })
    };
    let landing = s.land_checked(&wt, "IMPL-001", &mut check).unwrap();
    assert!(matches!(landing, Landing::Rejected { .. }), "{landing:?}");
    assert_eq!(s.tip().unwrap(), s.base(), "nothing landed");
    assert!(seen[0].starts_with(f.state_dir("S-verify")));
    f.assert_sound("S-verify");
}
