//! `--apply`: fast-forward the user's branch when nothing moved, refuse
//! (naming the command to run) when something did.

use wavecrew_isolation::{Integration, IsolationError};

use crate::support::{Project, write};

fn land_one(s: &Integration, task: &str, file: &str) {
    let wt = s.open_worktree(task, 1, &[]).unwrap();
    write(&wt.path, file, "work\n");
    s.commit(&wt, task, "work").unwrap().unwrap();
    s.land(&wt, task).unwrap();
}

#[test]
fn apply_fast_forwards_when_untouched() {
    let p = Project::new();
    let before = p.git(&["rev-parse", "HEAD"]);
    let s = p.start("S-apply");
    land_one(&s, "IMPL-001", "done.txt");
    // The session folder's own files do not count as local changes.
    p.write(".workflow/.team/S-apply/notes.md", "x\n");
    let applied = s.apply().unwrap();
    assert_eq!(applied.branch, "refs/heads/main");
    assert_eq!(applied.from, before);
    assert_eq!(applied.to, s.tip().unwrap());
    assert_eq!(p.git(&["rev-parse", "HEAD"]), s.tip().unwrap());
    assert_eq!(p.read("done.txt"), "work\n");
    assert_eq!(p.git(&["status", "--porcelain"]), "");
    p.assert_sound();
}

#[test]
fn apply_refuses_when_the_user_committed_meanwhile() {
    let p = Project::new();
    let s = p.start("S-moved");
    land_one(&s, "IMPL-001", "done.txt");
    p.write("README", "the user's own work\n");
    p.git(&["commit", "-q", "-am", "user"]);
    let head = p.git(&["rev-parse", "HEAD"]);
    let err = s.apply().unwrap_err();
    let IsolationError::Refused { command, reason } = &err else {
        panic!("{err}");
    };
    assert_eq!(command, "git merge wavecrew/S-moved");
    assert!(
        reason.contains("moved since the session started"),
        "{reason}"
    );
    assert!(
        err.to_string().contains("run `git merge wavecrew/S-moved`"),
        "{err}"
    );
    assert_eq!(p.git(&["rev-parse", "HEAD"]), head);
    assert!(!p.top.join("done.txt").exists());
    p.assert_sound();
}

#[test]
fn apply_refuses_a_dirty_tree_or_another_branch() {
    let p = Project::new();
    let s = p.start("S-dirty-apply");
    land_one(&s, "IMPL-001", "done.txt");
    p.write("scratch.txt", "untracked\n");
    let err = s.apply().unwrap_err().to_string();
    assert!(err.contains("local changes (?? scratch.txt)"), "{err}");
    std::fs::remove_file(p.top.join("scratch.txt")).unwrap();
    p.git(&["checkout", "-q", "-b", "other"]);
    let err = s.apply().unwrap_err().to_string();
    assert!(err.contains("`refs/heads/other` is checked out"), "{err}");
    p.git(&["checkout", "-q", "main"]);
    s.apply().unwrap();
    p.assert_sound();
}

#[test]
fn apply_after_a_snapshot_start_writes_the_work_onto_the_unchanged_tree() {
    let p = Project::new();
    p.write("README", "uncommitted edit\n");
    let s = p.start("S-snap-apply");
    assert!(s.snapshot());
    land_one(&s, "IMPL-001", "done.txt");
    let head = p.git(&["rev-parse", "HEAD"]);
    let applied = s.apply().unwrap();
    assert!(applied.uncommitted);
    assert_eq!(applied.from, applied.to);
    // The branch did not move; the work is in the tree, uncommitted, on top
    // of the user's own uncommitted edit.
    assert_eq!(p.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(p.read("README"), "uncommitted edit\n");
    assert!(p.top.join("done.txt").is_file());
    p.assert_sound();
}

#[test]
fn apply_after_a_snapshot_start_refuses_when_the_uncommitted_changes_moved() {
    let p = Project::new();
    p.write("README", "uncommitted edit\n");
    let s = p.start("S-snap-moved");
    land_one(&s, "IMPL-001", "done.txt");
    p.write("README", "edited again meanwhile\n");
    let err = s.apply().unwrap_err();
    let IsolationError::Refused { reason, command } = &err else {
        panic!("{err}");
    };
    assert!(reason.contains("M README"), "{reason}");
    assert_eq!(command, "git merge wavecrew/S-snap-moved");
    assert_eq!(p.read("README"), "edited again meanwhile\n");
    assert!(!p.top.join("done.txt").exists());
    p.assert_sound();
}
