//! Worktrees: exact changed files, copied ignored files, read-only
//! worktrees, removal, the sweep of leftovers, and clean.

use std::fs;

use wavecrew_sys::git::TreeStatus;

use crate::support::{Project, git_in, write};

#[test]
fn changed_files_are_exactly_the_tasks() {
    let p = Project::new();
    p.write("gone.txt", "x\n");
    p.write("later-gone.txt", "x\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "more files"]);
    let s = p.start("S-files");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let b = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    // A: a committed edit and deletion, then uncommitted ones and a new file.
    write(&a.path, "README", "edited\n");
    fs::remove_file(a.path.join("gone.txt")).unwrap();
    s.commit(&a, "IMPL-001", "first half").unwrap().unwrap();
    write(&a.path, "new/file.txt", "new\n");
    fs::remove_file(a.path.join("later-gone.txt")).unwrap();
    write(&a.path, "ignored/.env", "x\n");
    // B, the neighbour, edits another file.
    write(&b.path, "shared.txt", "b's edit\n");
    write(&b.path, "b-only.txt", "b\n");

    assert_eq!(
        s.changed_files(&a).unwrap(),
        ["README", "gone.txt", "later-gone.txt", "new/file.txt"]
    );
    assert_eq!(s.changed_files(&b).unwrap(), ["b-only.txt", "shared.txt"]);
    // An edit undone is no change.
    write(&b.path, "shared.txt", "one\ntwo\nthree\n");
    assert_eq!(s.changed_files(&b).unwrap(), ["b-only.txt"]);
    p.assert_sound();
}

/// What an agent does with git's index, without committing, is read the
/// same as its plain edits: staged files, removals, a file taken out of
/// the index but left on disk, names with spaces; the same list as the
/// branch's diff and the untracked files give.
#[test]
fn changed_files_see_the_index_too() {
    let p = Project::new();
    p.write("kept.txt", "x\n");
    p.write("removed.txt", "x\n");
    p.write("untracked-now.txt", "x\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "more files"]);
    let s = p.start("S-index");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "staged new.txt", "new\n");
    git_in(&wt.path, &["add", "staged new.txt"]);
    git_in(&wt.path, &["rm", "-q", "removed.txt"]);
    git_in(&wt.path, &["rm", "-q", "--cached", "untracked-now.txt"]);
    write(&wt.path, "dir/deep/plain.txt", "plain\n");
    write(&wt.path, "README", "edited\n");
    let expected = [
        "README",
        "dir/deep/plain.txt",
        "removed.txt",
        "staged new.txt",
        "untracked-now.txt",
    ];
    assert_eq!(s.changed_files(&wt).unwrap(), expected);
    // The agent's own commit: the branch's diff is read instead, the same.
    git_in(
        &wt.path,
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@a",
            "commit",
            "-q",
            "-m",
            "own",
        ],
    );
    assert_eq!(s.changed_files(&wt).unwrap(), expected);
    p.assert_sound();
}

/// What the session tells of a worktree's git is what git itself says:
/// for a task's worktree (a new slot, and one taken over from the pool)
/// and a read-only, detached one.
#[test]
fn a_worktrees_git_is_known_without_asking_git() {
    let p = Project::new();
    let s = p.start("S-where");
    let first = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let detached = s.detached_worktree("REVIEW-001").unwrap();
    for wt in [&first, &detached] {
        assert_eq!(
            s.work_tree_git(wt).unwrap(),
            wavecrew_sys::git::WorkTreeGit::locate(&wt.path).unwrap(),
            "{}",
            wt.path.display()
        );
    }
    s.release_worktree(&first).unwrap();
    let pooled = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert_eq!(pooled.path, first.path, "taken over from the pool");
    assert_eq!(
        s.work_tree_git(&pooled).unwrap(),
        wavecrew_sys::git::WorkTreeGit::locate(&pooled.path).unwrap()
    );
    p.assert_sound();
}

/// A worktree this open checked out or reset (`fresh`) differs from its
/// base in nothing but the linked session folder, as git itself says: its
/// first attempt needs no `git status` before the agent, and a task that
/// changed nothing has nothing to commit (found without staging anything).
/// One found again keeps its work and is not fresh; a status read in
/// another work tree is never taken for a worktree's.
#[test]
fn a_fresh_worktree_differs_from_its_base_in_the_session_folder_only() {
    let p = Project::new();
    // The session folder is not ignored here: its link shows in git status.
    p.write(".gitignore", ".env\n");
    p.git(&["commit", "-q", "-am", "no session in .gitignore"]);
    let s = p.start("S-fresh");
    let only_the_session = |wt: &wavecrew_isolation::Worktree| {
        let status = TreeStatus::read(&wt.path).unwrap();
        assert_eq!(status.branch, Some(format!("refs/heads/{}", wt.branch)));
        assert_eq!(status.head.as_deref(), Some(wt.base.as_str()));
        status.paths().map(str::to_owned).collect::<Vec<_>>()
    };
    let first = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert!(first.fresh, "a new slot");
    assert_eq!(
        only_the_session(&first),
        [".workflow/.team/S-fresh/isolation"]
    );
    // The agent leaves a mess behind: an edit, a removal, new files.
    write(&first.path, "README", "edited\n");
    write(&first.path, "junk/new.txt", "x\n");
    fs::remove_file(first.path.join("shared.txt")).unwrap();
    s.commit(&first, "IMPL-001", "mess").unwrap().unwrap();
    write(&first.path, "after-the-commit.txt", "x\n");
    s.land(&first, "IMPL-001").unwrap();
    s.release_worktree(&first).unwrap();

    let second = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert_eq!(second.path, first.path, "taken over from the pool");
    assert!(second.fresh, "reset");
    assert_eq!(
        only_the_session(&second),
        [".workflow/.team/S-fresh/isolation"]
    );
    // Nothing changed: no commit, no file, the branch where it was.
    assert_eq!(s.changed_files(&second).unwrap(), Vec::<String>::new());
    assert_eq!(s.commit(&second, "IMPL-002", "nothing").unwrap(), None);
    assert_eq!(p.git(&["rev-parse", &second.branch]), second.base);
    // The project's own status is not the worktree's.
    p.write("in-the-project.txt", "x\n");
    let elsewhere = TreeStatus::read(&p.top).unwrap();
    assert_eq!(
        s.changed_files_seen(&second, Some(&elsewhere)).unwrap(),
        Vec::<String>::new()
    );
    // Found again (a resumed attempt): its work is kept, it is not fresh.
    write(&second.path, "work.txt", "x\n");
    let again = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert!(!again.fresh);
    let seen = TreeStatus::read(&again.path).unwrap();
    assert_eq!(
        s.changed_files_seen(&again, Some(&seen)).unwrap(),
        ["work.txt"]
    );
    fs::remove_file(again.path.join("work.txt")).unwrap();
    assert_eq!(s.commit(&again, "IMPL-002", "nothing").unwrap(), None);
    s.release_worktree(&again).unwrap();

    // Given back at the very base the next attempt starts from: taken over
    // as it is when git finds nothing in it, reset when something is.
    let third = s.open_worktree("IMPL-003", 1, &[]).unwrap();
    assert_eq!(
        (third.path.as_path(), third.base.as_str()),
        (first.path.as_path(), second.base.as_str())
    );
    assert!(third.fresh);
    assert_eq!(
        only_the_session(&third),
        [".workflow/.team/S-fresh/isolation"]
    );
    s.commit(&third, "IMPL-003", "nothing").unwrap();
    s.release_worktree(&third).unwrap();
    // Something wrote into the worktree after it was given back.
    write(&third.path, "README", "stray edit\n");
    write(&third.path, "stray/new.txt", "x\n");
    let fourth = s.open_worktree("IMPL-004", 1, &[]).unwrap();
    assert_eq!(
        (fourth.path.as_path(), fourth.base.as_str()),
        (first.path.as_path(), second.base.as_str())
    );
    assert!(fourth.fresh);
    assert_eq!(
        only_the_session(&fourth),
        [".workflow/.team/S-fresh/isolation"]
    );
    assert_eq!(
        fs::read_to_string(fourth.path.join("README")).unwrap(),
        "edited\n"
    );
    assert!(!fourth.path.join("stray").exists());
    p.assert_sound();
}

#[test]
fn the_session_folder_is_reached_from_a_worktree_and_never_committed() {
    let p = Project::new();
    // This project tracks its session folder (as the demo's first commit
    // does): the worktree's stale copy gives way to the live folder.
    p.git(&["rm", "-q", "--cached", ".gitignore"]);
    p.write(".gitignore", ".env\n");
    p.write(".workflow/.team/S-link/isolation/plan.md", "the plan\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "track the session"]);
    let s = p.start("S-link");
    let rel = ".workflow/.team/S-link/isolation";
    for wt in [
        s.open_worktree("IMPL-001", 1, &[]).unwrap(),
        s.detached_worktree("REVIEW-001").unwrap(),
    ] {
        let linked = wt.path.join(rel);
        assert!(
            fs::symlink_metadata(&linked)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // An agent writing its deliverable by the relative path writes into
        // the one session folder.
        write(
            &wt.path,
            &format!("{rel}/artifacts/{}.md", wt.task),
            "done\n",
        );
        assert_eq!(p.read(&format!("{rel}/artifacts/{}.md", wt.task)), "done\n");
    }
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "src/lib.rs", "// work\n");
    assert_eq!(s.changed_files(&wt).unwrap(), ["src/lib.rs"]);
    let commit = s.commit(&wt, "IMPL-001", "work").unwrap().unwrap();
    let files = p.git(&["diff-tree", "--no-commit-id", "--name-only", "-r", &commit]);
    assert_eq!(files, "src/lib.rs");
    p.assert_sound();
}

#[test]
fn copy_brings_ignored_files_when_present() {
    let p = Project::new();
    p.write(".env", "TOKEN=abc\n");
    let s = p.start("S-copy");
    let copy = vec![".env".to_owned(), "missing.env".to_owned()];
    let wt = s.open_worktree("IMPL-001", 1, &copy).unwrap();
    assert_eq!(
        fs::read_to_string(wt.path.join(".env")).unwrap(),
        "TOKEN=abc\n"
    );
    assert!(!wt.path.join("missing.env").exists());
    // Copied files are ignored there: never listed, never committed.
    assert!(s.changed_files(&wt).unwrap().is_empty());
    assert_eq!(s.commit(&wt, "IMPL-001", "nothing").unwrap(), None);
    // A copy already there is left alone on resume.
    write(&wt.path, ".env", "TOKEN=changed by the agent\n");
    let again = s.open_worktree("IMPL-001", 1, &copy).unwrap();
    assert_eq!(
        fs::read_to_string(again.path.join(".env")).unwrap(),
        "TOKEN=changed by the agent\n"
    );
    // A file git would not ignore is not copied (it could be committed).
    p.write("notignored.txt", "x\n");
    let other = s
        .open_worktree("IMPL-002", 1, &["notignored.txt".to_owned()])
        .unwrap();
    assert!(!other.path.join("notignored.txt").exists());
    p.assert_sound();
}

#[test]
fn worktrees_live_beside_the_project_on_their_own_branches() {
    let p = Project::new();
    let s = p.start("S-where");
    let wt = s.open_worktree("IMPL-001", 2, &[]).unwrap();
    assert_eq!(wt.path, s.worktrees_dir().join("slots/1"));
    // A second attempt at once takes the next slot.
    let other = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert_eq!(other.path, s.worktrees_dir().join("slots/2"));
    // Opened again (a resumed attempt), it is found by its branch.
    assert_eq!(s.open_worktree("IMPL-001", 2, &[]).unwrap().path, wt.path);
    // Beside the project, never under a `.git` folder, never inside the
    // project (where upward look-ups would find the user's folder).
    assert_eq!(
        s.worktrees_dir(),
        p.top.parent().unwrap().join("project.wavecrew/S-where")
    );
    assert!(!wt.path.components().any(|c| c.as_os_str() == ".git"));
    assert_eq!(wt.branch, "wavecrew-tasks/S-where/IMPL-001/2");
    assert_eq!(wt.base, s.tip().unwrap());
    assert_eq!(
        git_in(&wt.path, &["symbolic-ref", "HEAD"]),
        "refs/heads/wavecrew-tasks/S-where/IMPL-001/2"
    );
    // The user's status does not see it.
    assert_eq!(
        p.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    p.assert_sound();
}

#[test]
fn detached_worktrees_follow_the_tip() {
    let p = Project::new();
    let s = p.start("S-ro");
    let ro = s.detached_worktree("review").unwrap();
    assert!(ro.is_detached());
    assert_eq!(git_in(&ro.path, &["rev-parse", "HEAD"]), s.tip().unwrap());
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "a.txt", "a\n");
    s.commit(&wt, "IMPL-001", "a").unwrap();
    s.land(&wt, "IMPL-001").unwrap();
    let ro2 = s.detached_worktree("review").unwrap();
    assert_eq!(ro2.path, ro.path);
    assert_eq!(git_in(&ro2.path, &["rev-parse", "HEAD"]), s.tip().unwrap());
    assert!(ro2.path.join("a.txt").exists());
    p.assert_sound();
}

#[test]
fn remove_keeps_the_branch() {
    let p = Project::new();
    let s = p.start("S-rm");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "a.txt", "a\n");
    let commit = s.commit(&wt, "IMPL-001", "a").unwrap().unwrap();
    write(&wt.path, "dirty.txt", "uncommitted\n");
    s.remove_worktree(&wt).unwrap();
    assert!(!wt.path.exists());
    assert!(
        !wt.path.parent().unwrap().exists(),
        "the empty task folder goes too"
    );
    // Nothing is left beside the project once its last worktree is gone.
    assert!(!s.worktrees_dir().exists());
    assert!(!s.worktrees_dir().parent().unwrap().exists());
    assert_eq!(p.git(&["rev-parse", &wt.branch]), commit);
    assert!(!p.git(&["worktree", "list"]).contains("IMPL-001"));
    // Opening the attempt again resumes its branch.
    let again = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert!(again.path.join("a.txt").exists());
    // A folder that is not ours is refused.
    let mut foreign = again.clone();
    foreign.path = p.top.clone();
    assert!(s.remove_worktree(&foreign).is_err());
    assert!(p.top.join("README").exists());
    p.assert_sound();
}

#[test]
fn prune_stale_removes_leftovers_under_its_folder_only() {
    let p = Project::new();
    let s = p.start("S-prune");
    let keep = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let gone = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    // A worktree whose folder vanished, and leftovers git does not list.
    fs::remove_dir_all(&gone.path).unwrap();
    let dir = s.worktrees_dir();
    write(&dir, "IMPL-003/1/half-made.txt", "x\n");
    write(&dir, "IMPL-001/9/x.txt", "x\n");
    write(&dir, "stray.txt", "x\n");
    // Things outside the session's folder stay.
    let other_session = dir.parent().unwrap().join("S-other/IMPL-001/1");
    write(&other_session, "x.txt", "x\n");
    p.write("user.txt", "mine\n");

    s.prune_stale().unwrap();
    assert!(keep.path.join("README").exists());
    assert!(!dir.join("IMPL-003").exists());
    assert!(!dir.join("IMPL-001/9").exists());
    assert!(!dir.join("stray.txt").exists());
    assert!(!p.git(&["worktree", "list"]).contains("IMPL-002"));
    assert!(other_session.join("x.txt").exists());
    assert_eq!(p.read("user.txt"), "mine\n");
    // The forgotten attempt can be opened again.
    let back = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert!(back.path.join("README").exists());
    p.assert_sound();
}

#[test]
fn clean_removes_every_worktree_of_the_session() {
    let p = Project::new();
    let s = p.start("S-clean-up");
    let other = p.start("S-neighbour");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    s.open_worktree("IMPL-002", 1, &[]).unwrap();
    s.detached_worktree("review").unwrap();
    let theirs = other.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert_eq!(s.clean().unwrap(), 3);
    assert!(!s.worktrees_dir().exists());
    let list = p.git(&["worktree", "list", "--porcelain"]);
    assert!(!list.contains("S-clean-up"), "{list}");
    assert!(
        theirs.path.join("README").exists(),
        "another session's worktree stays"
    );
    // Branches stay.
    p.git(&["rev-parse", "--verify", &a.branch]);
    assert_eq!(s.clean().unwrap(), 0);
    p.assert_sound();
}

#[test]
fn a_worktree_add_killed_half_way_does_not_stop_the_next() {
    let p = Project::new();
    let s = p.start("S-half");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    // What `git worktree add` killed after writing `gitdir` leaves: an
    // entry whose `commondir` is still empty, on which `git worktree list`
    // fails.
    let admin = admin_dir(&p, &a);
    std::fs::write(admin.join("commondir"), "").unwrap();
    let b = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert!(b.path.is_dir());
    // The half-made entry is gone (its name may be b's now).
    let listed = p.git(&["worktree", "list", "--porcelain"]);
    assert!(listed.contains(b.path.to_str().unwrap()), "{listed}");
    assert!(!listed.contains(a.path.to_str().unwrap()), "{listed}");
}

#[test]
fn a_worktree_add_killed_before_its_checkout_is_removed_and_made_again() {
    let p = Project::new();
    let s = p.start("S-unborn");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    // What `git worktree add` killed after its entry was complete but
    // before it pointed HEAD at the branch leaves: HEAD the null id, a
    // folder without a checkout; `git fsck --strict` flags it.
    let admin = admin_dir(&p, &a);
    std::fs::write(admin.join("HEAD"), format!("{}\n", "0".repeat(40))).unwrap();
    // The next claim of the same attempt makes it again, on its branch.
    let again = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert_eq!(again.path, a.path);
    assert_eq!(
        p.git(&["-C", a.path.to_str().unwrap(), "symbolic-ref", "HEAD"])
            .trim(),
        format!("refs/heads/{}", a.branch)
    );
    // One left elsewhere in the session goes at the next start's pruning,
    // also when the add was killed still holding its `initializing` lock
    // (which `git worktree prune` alone respects).
    let b = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    let admin_b = admin_dir(&p, &b);
    std::fs::write(admin_b.join("HEAD"), format!("{}\n", "0".repeat(40))).unwrap();
    std::fs::write(admin_b.join("locked"), "initializing").unwrap();
    s.prune_stale().unwrap();
    let listed = p.git(&["worktree", "list", "--porcelain"]);
    assert!(!listed.contains(b.path.to_str().unwrap()), "{listed}");
    p.assert_sound();
}

/// The entry in `.git/worktrees/` of `wt`.
fn admin_dir(p: &Project, wt: &wavecrew_isolation::Worktree) -> std::path::PathBuf {
    std::fs::read_dir(p.top.join(".git/worktrees"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|d| {
            std::fs::read_to_string(d.join("gitdir"))
                .is_ok_and(|g| g.trim().starts_with(wt.path.to_str().unwrap()))
        })
        .unwrap()
}

/// `seed_build_state`: an ignored build folder is copied into a new
/// worktree when its lockfile matches the project's (relative links kept,
/// links to absolute paths left out), not when the lockfile differs, and a
/// virtualenv never; each decision is said.
#[test]
fn build_state_is_seeded_only_where_the_lockfile_matches() {
    let p = Project::new();
    p.write(
        ".gitignore",
        ".env\n.workflow/\ntarget/\nnode_modules/\n.venv/\n",
    );
    p.write("Cargo.lock", "# lock v1\n");
    p.write("package-lock.json", "{\"lockfileVersion\": 3}\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "lockfiles"]);
    p.write("target/debug/libdep.rlib", "built\n");
    std::fs::File::open(p.top.join("target/debug/libdep.rlib"))
        .unwrap()
        .set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    p.write("node_modules/tool/bin.js", "run\n");
    std::fs::create_dir_all(p.top.join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink("../tool/bin.js", p.top.join("node_modules/.bin/tool")).unwrap();
    std::os::unix::fs::symlink(&p.top, p.top.join("node_modules/back-to-the-project")).unwrap();
    p.write(".venv/pyvenv.cfg", "home = /usr/bin\n");
    let s = p.start("S-seed");
    let names: Vec<String> = ["target", "node_modules", ".venv"]
        .iter()
        .map(|n| (*n).to_owned())
        .collect();

    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let said = s.seed_build_state(&wt, &names, u64::MAX).unwrap();
    assert_eq!(
        said,
        [
            "target: seeded from the project (Cargo.lock matches)",
            "node_modules: seeded from the project (package-lock.json matches)",
            ".venv: not seeded (a virtualenv names the project's interpreter by absolute path; make it in the worktree with [isolation] setup)",
        ]
    );
    assert_eq!(
        fs::read_to_string(wt.path.join("target/debug/libdep.rlib")).unwrap(),
        "built\n"
    );
    let modified = |path: std::path::PathBuf| fs::metadata(path).unwrap().modified().unwrap();
    assert_eq!(
        modified(wt.path.join("target/debug/libdep.rlib")),
        modified(p.top.join("target/debug/libdep.rlib")),
        "a copy keeps its time (Cargo compares times)"
    );
    assert_eq!(
        fs::read_to_string(wt.path.join("node_modules/.bin/tool")).unwrap(),
        "run\n",
        "a relative link is kept"
    );
    assert!(
        fs::symlink_metadata(wt.path.join("node_modules/back-to-the-project")).is_err(),
        "a link to an absolute path is left out"
    );
    // Seeded folders are ignored: nothing of them is a change of the task.
    assert!(s.changed_files(&wt).unwrap().is_empty());
    // Seeding again changes nothing.
    assert!(s.seed_build_state(&wt, &names, u64::MAX).unwrap().len() == 1);

    // The user's lockfile moved on (another install): their node_modules
    // was built for other dependencies and is not seeded.
    p.write(
        "package-lock.json",
        "{\"lockfileVersion\": 3, \"other\": true}\n",
    );
    let wt2 = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    let said = s.seed_build_state(&wt2, &names[..2], u64::MAX).unwrap();
    assert_eq!(
        said,
        [
            "target: seeded from the project (Cargo.lock matches)",
            "node_modules: not seeded (package-lock.json differs from the project's: built for other dependencies)",
        ]
    );
    assert!(!wt2.path.join("node_modules").exists());

    // A folder over the size limit is not copied, and that is said.
    p.write("target/debug/big.rlib", &"x".repeat(3 << 19));
    let wt3 = s.open_worktree("IMPL-003", 1, &[]).unwrap();
    let said = s.seed_build_state(&wt3, &names[..1], 1 << 20).unwrap();
    assert_eq!(
        said,
        ["target: not seeded (more than 1 MiB; raise [isolation] seed_max_mb to copy it)"]
    );
    assert!(!wt3.path.join("target").exists());
}

/// The warm pool: a landed attempt's worktree comes back detached, and the
/// next new attempt takes it over at its own path and branch, reset to its
/// base by git: tracked files exact (the landed work included), untracked
/// files gone, ignored build output kept, unchanged files untouched (their
/// times kept, so a build stays incremental), and `node_modules` removed
/// when its lockfile changed with the switch.
#[test]
fn a_landed_worktree_is_reused_warm_by_the_next_attempt() {
    use std::os::unix::fs::MetadataExt;
    let p = Project::new();
    p.write(".gitignore", ".workflow/\ntarget/\nnode_modules/\n");
    p.write("package-lock.json", "{\"v\": 1}\n");
    p.write("src/lib.rs", "pub fn a() {}\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "project"]);
    let s = p.start("S-pool");

    let first = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert!(
        first.build_state.is_empty(),
        "a fresh worktree: {:?}",
        first.build_state
    );
    write(&first.path, "target/debug/built", "incremental state\n");
    write(&first.path, "node_modules/dep/index.js", "v1\n");
    write(&first.path, "README", "IMPL-001's edit\n");
    s.commit(&first, "IMPL-001", "edit").unwrap().unwrap();
    write(&first.path, "scratch.txt", "untracked, not ignored\n");
    let lib_mtime = fs::metadata(first.path.join("src/lib.rs"))
        .unwrap()
        .mtime_nsec();
    s.land(&first, "IMPL-001").unwrap();
    s.release_worktree(&first).unwrap();
    assert_eq!(
        p.git(&[
            "-C",
            first.path.to_str().unwrap(),
            "status",
            "--porcelain",
            "--branch"
        ])
        .lines()
        .next(),
        Some("## HEAD (no branch)"),
        "pooled: detached where it was"
    );
    assert!(first.path.join("target/debug/built").exists());

    assert!(!first.set_up_before, "a fresh worktree is set up");
    s.record_set_up(&first).unwrap();
    let second = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert_eq!(second.path, first.path, "the same slot: the same path");
    assert!(second.set_up_before, "no dependency file changed");
    assert!(second.build_state[0].starts_with("warm: an earlier task's worktree"));
    assert_eq!(second.build_state.len(), 1, "{:?}", second.build_state);
    assert_eq!(
        p.git(&["-C", second.path.to_str().unwrap(), "symbolic-ref", "HEAD"])
            .trim(),
        format!("refs/heads/{}", s.task_branch("IMPL-002", 1))
    );
    assert_eq!(
        fs::read_to_string(second.path.join("README")).unwrap(),
        "IMPL-001's edit\n"
    );
    assert!(
        !second.path.join("scratch.txt").exists(),
        "untracked files go"
    );
    assert_eq!(
        fs::read_to_string(second.path.join("target/debug/built")).unwrap(),
        "incremental state\n"
    );
    assert!(second.path.join("node_modules/dep/index.js").exists());
    assert_eq!(
        fs::metadata(second.path.join("src/lib.rs"))
            .unwrap()
            .mtime_nsec(),
        lib_mtime,
        "an unchanged file is not rewritten"
    );
    assert!(s.changed_files(&second).unwrap().is_empty());

    s.land(&second, "IMPL-002").unwrap();
    s.release_worktree(&second).unwrap();
    let third = s.open_worktree("IMPL-003", 1, &[]).unwrap();
    assert!(third.build_state[0].starts_with("warm:"));
    assert!(
        third.set_up_before,
        "the slot was set up at IMPL-001's base, and no dependency file changed since"
    );
    assert_eq!(third.path, first.path);
    assert!(third.path.join("target/debug/built").exists());
    // The run's end drains the pool; the folders go once empty.
    s.release_worktree(&third).unwrap();
    assert_eq!(s.drain_pool().unwrap(), 1);
    assert!(!s.worktrees_dir().exists());
    p.assert_sound();
}

/// The pool is the first `POOL_MAX` slots: with more attempts at once, a
/// released worktree in a slot above them is removed, the others kept.
#[test]
fn the_pool_keeps_the_first_slots_only() {
    let p = Project::new();
    let s = p.start("S-cap");
    let max = wavecrew_isolation::POOL_MAX;
    let open: Vec<_> = (1..=max + 1)
        .map(|n| s.open_worktree(&format!("IMPL-{n:03}"), 1, &[]).unwrap())
        .collect();
    let last = open.last().unwrap();
    assert_eq!(
        last.path.file_name().unwrap(),
        format!("{}", max + 1).as_str()
    );
    for wt in &open {
        s.release_worktree(wt).unwrap();
    }
    assert!(!last.path.exists(), "a slot above the pool goes");
    assert!(open[0].path.exists(), "a slot of the pool stays, detached");
    assert_eq!(s.drain_pool().unwrap(), max);
    p.assert_sound();
}

/// A pooled worktree whose lockfile moved with the switch loses its
/// `node_modules`, and says so.
#[test]
fn a_warm_node_modules_goes_when_the_lockfile_changes() {
    let p = Project::new();
    p.write(".gitignore", ".workflow/\nnode_modules/\n");
    p.write("package-lock.json", "{\"v\": 1}\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "project"]);
    let s = p.start("S-pool-lock");
    let first = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let second = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    s.record_set_up(&first).unwrap();
    write(&first.path, "node_modules/dep/index.js", "v1\n");
    // B changes the lockfile and lands; A (installed with v1) lands nothing.
    write(&second.path, "package-lock.json", "{\"v\": 2}\n");
    s.commit(&second, "IMPL-002", "new dependency")
        .unwrap()
        .unwrap();
    s.land(&second, "IMPL-002").unwrap();
    s.release_worktree(&first).unwrap();
    let third = s.open_worktree("IMPL-003", 1, &[]).unwrap();
    assert_eq!(
        third.build_state[1..],
        [
            "node_modules: removed from the warm worktree (package-lock.json changed since it was installed)"
        ]
    );
    assert!(!third.path.join("node_modules").exists());
    assert!(!third.set_up_before, "a lockfile changed: set up again");
    assert_eq!(
        fs::read_to_string(third.path.join("package-lock.json")).unwrap(),
        "{\"v\": 2}\n"
    );
    p.assert_sound();
}

/// A run killed while a pooled worktree was being reset for an attempt
/// (its HEAD already on the attempt's branch, the files still the earlier
/// task's) resets it again when the attempt is opened on resume; without
/// the marker, a worktree found on its branch keeps its files (the
/// agent's work).
#[test]
fn a_reset_cut_short_by_a_kill_is_done_again_on_resume() {
    let p = Project::new();
    p.write(".gitignore", ".workflow/\nnode_modules/\n");
    p.write("package-lock.json", "{\"v\": 1}\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "project"]);
    let s = p.start("S-pool-kill");
    let first = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&first.path, "README", "IMPL-001's edit\n");
    write(&first.path, "node_modules/dep/index.js", "v1\n");
    s.commit(&first, "IMPL-001", "edit").unwrap().unwrap();
    s.land(&first, "IMPL-001").unwrap();
    s.release_worktree(&first).unwrap();
    let second = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert_eq!(second.path, first.path);

    // The agent's work in progress survives a plain reopen.
    write(&second.path, "wip.txt", "the agent's\n");
    let again = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert!(again.build_state.is_empty());
    assert!(again.path.join("wip.txt").exists());

    // Killed mid-reset: the marker is there, the files are not the base.
    let marker = p
        .state_dir("S-pool-kill")
        .join("worktrees/IMPL-002/1.resetting");
    fs::write(&marker, "{}").unwrap();
    write(&second.path, "README", "stale\n");
    let resumed = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    assert_eq!(resumed.path, first.path);
    assert!(resumed.build_state[0].starts_with("warm:"));
    assert!(!resumed.set_up_before, "not known: set up again");
    assert_eq!(
        fs::read_to_string(resumed.path.join("README")).unwrap(),
        "IMPL-001's edit\n"
    );
    assert!(!resumed.path.join("wip.txt").exists());
    // What it was installed with is not known: its node_modules goes.
    assert!(!resumed.path.join("node_modules").exists());
    assert!(!marker.exists());
    p.assert_sound();
}

/// A new slot is registered without its files (`--no-checkout`) under the
/// worktree lock and checked out after it, the marker down meanwhile: a
/// run killed in between finds the empty worktree on the attempt's branch
/// on resume, and checks its files out.
#[test]
fn a_new_slot_killed_before_its_checkout_is_checked_out_on_resume() {
    let p = Project::new();
    p.write("src/lib.rs", "pub fn a() {}\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "project"]);
    let s = p.start("S-slot-kill");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert!(wt.path.join("src/lib.rs").exists());
    // As a kill would leave it: registered, no file, an empty index.
    let marker = p
        .state_dir("S-slot-kill")
        .join("worktrees/IMPL-001/1.resetting");
    fs::write(&marker, "{}").unwrap();
    fs::remove_dir_all(wt.path.join("src")).unwrap();
    p.git(&["-C", wt.path.to_str().unwrap(), "read-tree", "--empty"]);
    let resumed = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert_eq!(resumed.path, wt.path);
    assert_eq!(
        fs::read_to_string(resumed.path.join("src/lib.rs")).unwrap(),
        "pub fn a() {}\n"
    );
    assert!(s.changed_files(&resumed).unwrap().is_empty());
    assert!(!marker.exists());
    p.assert_sound();
}

/// An attempt whose record is lost while its branch and worktree stay is
/// found again by its branch, and the agent's work in it is kept: the
/// marker a new attempt puts down before its claim resets nothing here.
#[test]
fn a_lost_record_does_not_reset_the_attempts_worktree() {
    let p = Project::new();
    let s = p.start("S-lost-record");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "wip.txt", "the agent's\n");
    let state = p.state_dir("S-lost-record").join("worktrees/IMPL-001");
    fs::remove_file(state.join("1.json")).unwrap();
    let again = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert_eq!(again.path, wt.path);
    assert!(
        again.path.join("wip.txt").exists(),
        "the agent's work stays"
    );
    assert!(!state.join("1.resetting").exists());
    p.assert_sound();
}

/// A resumed attempt's worktree whose `.git` file, or whose git folder's
/// `commondir`, an agent rewrote to lead git to a copy of the repository
/// is refused, named, before any git runs in it; one that leads where git
/// wrote is opened again as before.
#[test]
fn a_worktree_whose_git_redirect_was_rewritten_is_refused() {
    let p = Project::new();
    let s = p.start("S-redirect");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    // Found again, untouched: opened.
    let again = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert_eq!(again.path, wt.path);
    let dot_git = wt.path.join(".git");
    let told = std::fs::read_to_string(&dot_git).unwrap();
    let copy = p.top.parent().unwrap().join("copy.git");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(p.top.join(".git"))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(&dot_git, format!("gitdir: {}\n", copy.display())).unwrap();
    let e = s.open_worktree("IMPL-001", 1, &[]).unwrap_err().to_string();
    assert!(e.contains("`.git` leads to"), "{e}");
    std::fs::write(&dot_git, &told).unwrap();
    let admin = std::path::PathBuf::from(told.trim_end().strip_prefix("gitdir: ").unwrap());
    let commondir = admin.join("commondir");
    let was = std::fs::read_to_string(&commondir).unwrap();
    std::fs::write(&commondir, format!("{}\n", copy.display())).unwrap();
    let e = s.open_worktree("IMPL-001", 1, &[]).unwrap_err().to_string();
    assert!(e.contains("`commondir` leads to"), "{e}");
    std::fs::write(&commondir, was).unwrap();
    assert_eq!(s.open_worktree("IMPL-001", 1, &[]).unwrap().path, wt.path);
}
