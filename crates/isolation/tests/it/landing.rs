//! The merge queue: fast-forward, clean three-way merge, conflict,
//! concurrent landings, and landing again after a crash.

use std::sync::Arc;

use wavecrew_isolation::{Integration, Landing, Repo};

use crate::support::{Project, write};

#[test]
fn fast_forward_landing() {
    let p = Project::new();
    let user_head = p.git(&["rev-parse", "HEAD"]);
    let s = p.start("S-ff");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "hello.txt", "hi\n");
    let commit = s
        .commit(&wt, "IMPL-001", "Write hello.txt")
        .unwrap()
        .unwrap();
    // Nothing more to commit.
    assert_eq!(s.commit(&wt, "IMPL-001", "again").unwrap(), None);

    let landing = s.land(&wt, "IMPL-001").unwrap();
    assert_eq!(
        landing,
        Landing::FastForward {
            commit: commit.clone()
        }
    );
    assert_eq!(s.tip().unwrap(), commit);
    assert_eq!(s.merged_tasks().unwrap().get("IMPL-001"), Some(&commit));
    let message = p.git(&["log", "-1", "--format=%B", &commit]);
    assert!(
        message.starts_with("Write hello.txt\n\nWavecrew-Task: S-ff/IMPL-001"),
        "{message}"
    );
    // The user's branch and files are untouched.
    assert_eq!(p.git(&["rev-parse", "HEAD"]), user_head);
    assert!(!p.top.join("hello.txt").exists());
    p.assert_sound();
}

#[test]
fn two_tasks_on_different_files_merge_cleanly() {
    let p = Project::new();
    let s = p.start("S-merge");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let b = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    write(&a.path, "a.txt", "a\n");
    write(&b.path, "b.txt", "b\n");
    // Task B also edits a tracked file, far from anything A touches.
    write(&b.path, "shared.txt", "one\ntwo\nthree\nfour\n");
    s.commit(&a, "IMPL-001", "a").unwrap().unwrap();
    let b_commit = s.commit(&b, "IMPL-002", "b").unwrap().unwrap();

    assert!(matches!(
        s.land(&a, "IMPL-001").unwrap(),
        Landing::FastForward { .. }
    ));
    let a_tip = s.tip().unwrap();
    let Landing::Merged { commit } = s.land(&b, "IMPL-002").unwrap() else {
        panic!("expected a merge");
    };
    assert_eq!(s.tip().unwrap(), commit);
    let parents = p.git(&["log", "-1", "--format=%P", &commit]);
    assert_eq!(parents, format!("{a_tip} {b_commit}"));
    let files = p.git(&["ls-tree", "-r", "--name-only", &commit]);
    assert!(
        files.lines().any(|f| f == "a.txt") && files.lines().any(|f| f == "b.txt"),
        "{files}"
    );
    assert_eq!(
        p.git(&["show", &format!("{commit}:shared.txt")]),
        "one\ntwo\nthree\nfour"
    );
    let merged = s.merged_tasks().unwrap();
    assert_eq!(merged.len(), 2);
    assert_eq!(merged["IMPL-002"], commit);
    assert_eq!(
        p.landing_trailers(&s),
        ["S-merge/IMPL-002", "S-merge/IMPL-001"]
    );
    p.assert_sound();
}

#[test]
fn conflict_names_files_and_upstream_and_changes_nothing() {
    let p = Project::new();
    let status_before = p.git_bytes(&["status", "--porcelain=v1", "-z", "--untracked-files=all"]);
    let head_before = p.git(&["rev-parse", "HEAD"]);
    let s = p.start("S-conflict");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let b = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    write(&a.path, "shared.txt", "one\nTWO by a\nthree\n");
    write(&b.path, "shared.txt", "one\nTWO by b\nthree\n");
    let a_commit = s.commit(&a, "IMPL-001", "a").unwrap().unwrap();
    s.commit(&b, "IMPL-002", "b").unwrap().unwrap();
    assert!(matches!(
        s.land(&a, "IMPL-001").unwrap(),
        Landing::FastForward { .. }
    ));
    let tip = s.tip().unwrap();

    let Landing::Conflict {
        files,
        messages,
        upstream,
    } = s.land(&b, "IMPL-002").unwrap()
    else {
        panic!("expected a conflict");
    };
    assert_eq!(files, ["shared.txt"]);
    assert!(
        messages.contains("CONFLICT (content): Merge conflict in shared.txt"),
        "{messages}"
    );
    let commits: Vec<&str> = upstream.iter().map(|u| u.commit.as_str()).collect();
    assert_eq!(commits, [a_commit.as_str()]);
    assert_eq!(upstream[0].task.as_deref(), Some("IMPL-001"));
    assert_eq!(upstream[0].subject, "a");
    // The integration branch did not move, B is not merged.
    assert_eq!(s.tip().unwrap(), tip);
    assert!(!s.merged_tasks().unwrap().contains_key("IMPL-002"));
    // The user's branch, index and files are untouched; B's worktree too.
    assert_eq!(p.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(p.read("shared.txt"), "one\ntwo\nthree\n");
    assert_eq!(
        p.git_bytes(&["status", "--porcelain=v1", "-z", "--untracked-files=all"]),
        status_before
    );
    assert_eq!(
        std::fs::read_to_string(b.path.join("shared.txt")).unwrap(),
        "one\nTWO by b\nthree\n"
    );
    assert_eq!(
        crate::support::git_in(&b.path, &["status", "--porcelain"]),
        ""
    );
    p.assert_sound();
}

#[test]
fn concurrent_landings_each_land_exactly_once() {
    const TASKS: usize = 6;
    let p = Project::new();
    let s = Arc::new(p.start("S-par"));
    let handles: Vec<_> = (0..TASKS)
        .map(|i| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let task = format!("IMPL-{i:03}");
                let wt = s.open_worktree(&task, 1, &[]).unwrap();
                write(&wt.path, &format!("out/{task}.txt"), &format!("{task}\n"));
                s.commit(&wt, &task, "work").unwrap().unwrap();
                let first = s.land(&wt, &task).unwrap();
                assert!(
                    matches!(first, Landing::FastForward { .. } | Landing::Merged { .. }),
                    "{task}: {first:?}"
                );
                // Landing again (a retry from a confused worker) does nothing.
                let again = s.land(&wt, &task).unwrap();
                assert!(
                    matches!(again, Landing::AlreadyMerged { .. }),
                    "{task}: {again:?}"
                );
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut trailers = p.landing_trailers(&s);
    trailers.sort();
    let expected: Vec<String> = (0..TASKS).map(|i| format!("S-par/IMPL-{i:03}")).collect();
    assert_eq!(trailers, expected, "each task lands once");
    let files = p.git(&["ls-tree", "-r", "--name-only", &s.tip().unwrap(), "out"]);
    assert_eq!(files.lines().count(), TASKS, "{files}");
    assert_eq!(s.merged_tasks().unwrap().len(), TASKS);
    p.assert_sound();
}

#[test]
fn landing_again_after_a_crash_is_already_merged() {
    let p = Project::new();
    let s = p.start("S-crash");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let b = s.open_worktree("IMPL-002", 1, &[]).unwrap();
    write(&a.path, "a.txt", "a\n");
    write(&b.path, "b.txt", "b\n");
    s.commit(&a, "IMPL-001", "a").unwrap();
    s.commit(&b, "IMPL-002", "b").unwrap();
    let Landing::FastForward { commit: a_landed } = s.land(&a, "IMPL-001").unwrap() else {
        panic!()
    };
    let Landing::Merged { commit: b_landed } = s.land(&b, "IMPL-002").unwrap() else {
        panic!()
    };
    let tip = s.tip().unwrap();

    // A new process after a crash right after the update-ref: the state is
    // found again from disk, and what landed is read from git.
    let repo = Repo::open(&p.top).unwrap().unwrap();
    let again = Integration::resume(&repo, &p.state_dir("S-crash"))
        .unwrap()
        .unwrap();
    assert_eq!(
        again.land(&a, "IMPL-001").unwrap(),
        Landing::AlreadyMerged { commit: a_landed }
    );
    assert_eq!(
        again.land(&b, "IMPL-002").unwrap(),
        Landing::AlreadyMerged { commit: b_landed }
    );
    assert_eq!(again.tip().unwrap(), tip);
    assert_eq!(p.landing_trailers(&s).len(), 2);
    p.assert_sound();
}

#[test]
fn an_agents_own_commit_still_lands_with_the_trailer() {
    let p = Project::new();
    let s = p.start("S-own");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "x.txt", "x\n");
    crate::support::git_in(&wt.path, &["add", "x.txt"]);
    crate::support::git_in(&wt.path, &["commit", "-q", "-m", "agent's commit"]);
    assert_eq!(s.commit(&wt, "IMPL-001", "nothing left").unwrap(), None);
    let Landing::Merged { commit } = s.land(&wt, "IMPL-001").unwrap() else {
        panic!("a commit without the trailer gets a merge commit that has it")
    };
    assert_eq!(s.merged_tasks().unwrap()["IMPL-001"], commit);
    assert!(matches!(
        s.land(&wt, "IMPL-001").unwrap(),
        Landing::AlreadyMerged { .. }
    ));
    p.assert_sound();
}

#[test]
fn nothing_to_land() {
    let p = Project::new();
    let s = p.start("S-empty");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    assert_eq!(s.land(&wt, "IMPL-001").unwrap(), Landing::NothingToLand);
    assert_eq!(s.tip().unwrap(), s.base());
    p.assert_sound();
}

#[test]
fn the_worktree_must_match_the_task() {
    let p = Project::new();
    let s = p.start("S-match");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    let err = s.land(&wt, "IMPL-002").unwrap_err().to_string();
    assert!(
        err.contains("belongs to task `IMPL-001`; expected `IMPL-002`"),
        "{err}"
    );
    let ro = s.detached_worktree("review").unwrap();
    let err = s.commit(&ro, "review", "x").unwrap_err().to_string();
    assert!(err.contains("read-only worktree"), "{err}");
    // An agent that switched to a branch of history of its own is not
    // committed for (one that descends is taken: see
    // `an_agents_own_branch_lands_when_it_descends_from_the_task_branch`).
    crate::support::git_in(&wt.path, &["checkout", "-q", "--orphan", "elsewhere"]);
    crate::support::write(&wt.path, "x.txt", "x\n");
    crate::support::git_in(&wt.path, &["add", "x.txt"]);
    crate::support::git_in(&wt.path, &["commit", "-qm", "unrelated"]);
    let err = s.commit(&wt, "IMPL-001", "x").unwrap_err().to_string();
    assert!(err.contains("`elsewhere`"), "{err}");
}

/// Commits need an identity even where git has none configured: the test
/// runs itself again in a child process whose git sees no global or system
/// config (the environment cannot be changed safely inside this process).
#[test]
fn commits_without_an_identity_use_wavecrew() {
    const CHILD: &str = "WAVECREW_ISOLATION_IDENTITY_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let home = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "landing::commits_without_an_identity_use_wavecrew",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("EMAIL")
            .env_remove("GIT_AUTHOR_NAME")
            .env_remove("GIT_AUTHOR_EMAIL")
            .env_remove("GIT_COMMITTER_NAME")
            .env_remove("GIT_COMMITTER_EMAIL")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("1 passed"), "the child ran the test: {text}");
        return;
    }
    let p = Project::new();
    p.git(&["config", "--unset", "user.name"]);
    p.git(&["config", "--unset", "user.email"]);
    let s = p.start("S-who");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "a.txt", "a\n");
    let commit = s.commit(&wt, "IMPL-001", "a").unwrap().unwrap();
    assert_eq!(
        p.git(&["log", "-1", "--format=%an <%ae> / %cn <%ce>", &commit]),
        "wavecrew <wavecrew@localhost> / wavecrew <wavecrew@localhost>"
    );
    p.assert_sound();
}

#[test]
fn a_ref_lock_left_by_a_killed_landing_does_not_stop_the_queue() {
    let p = Project::new();
    let s = p.start("S-lock");
    let a = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&a.path, "a.txt", "a\n");
    s.commit(&a, "IMPL-001", "a").unwrap().unwrap();
    // What `git update-ref` leaves when it is SIGKILLed mid-write.
    let lock = p.top.join(".git").join(format!("{}.lock", s.reference()));
    std::fs::write(&lock, "").unwrap();
    assert!(matches!(
        s.land(&a, "IMPL-001").unwrap(),
        Landing::FastForward { .. }
    ));
    assert!(!lock.exists());
}

/// An agent that commits on a branch of its own: its commits land when
/// they descend from the task branch (the worktree is put back on it);
/// on history of its own, the error names the branch and how to take
/// the work.
#[test]
fn an_agents_own_branch_lands_when_it_descends_from_the_task_branch() {
    let p = Project::new();
    let session = p.start("S-own");
    let wt = session.open_worktree("IMPL-001", 1, &[]).unwrap();
    let in_wt = |args: &[&str]| {
        let mut all = vec!["-C", wt.path.to_str().unwrap()];
        all.extend_from_slice(args);
        p.git(&all)
    };
    in_wt(&["switch", "-q", "-c", "agent-work"]);
    write(&wt.path, "mine.txt", "the agent's\n");
    in_wt(&["add", "mine.txt"]);
    in_wt(&["commit", "-qm", "the agent's own commit"]);
    write(&wt.path, "later.txt", "uncommitted\n");
    let commit = session
        .commit(&wt, "IMPL-001", "IMPL-001: mine")
        .unwrap()
        .unwrap();
    assert_eq!(
        in_wt(&["symbolic-ref", "HEAD"]).trim(),
        format!("refs/heads/{}", wt.branch)
    );
    let files = p.git(&["show", "--name-only", "--format=", &format!("{commit}~1")]);
    assert_eq!(
        files.trim(),
        "mine.txt",
        "the agent's commit is in the history"
    );
    assert!(matches!(
        session.land(&wt, "IMPL-001").unwrap(),
        Landing::FastForward { .. }
    ));

    // History of its own (an orphan branch): refused, naming it.
    let other = session.open_worktree("IMPL-002", 1, &[]).unwrap();
    let in_other = |args: &[&str]| {
        let mut all = vec!["-C", other.path.to_str().unwrap()];
        all.extend_from_slice(args);
        p.git(&all)
    };
    in_other(&["switch", "-q", "--orphan", "elsewhere"]);
    write(&other.path, "x.txt", "x\n");
    in_other(&["add", "x.txt"]);
    in_other(&["commit", "-qm", "unrelated"]);
    let e = session
        .commit(&other, "IMPL-002", "IMPL-002")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the agent committed on `elsewhere`") && e.contains("git cherry-pick"),
        "{e}"
    );
    p.assert_sound();
}

/// The one landing entry point: a worktree's uncommitted work is committed
/// and landed once its merge candidate passes `[integration] verify`; a
/// candidate that fails it (or whose command is missing) lands nothing,
/// and the refusal names the command and the end of its output.
#[test]
fn land_work_checks_each_candidate_with_verify() {
    use wavecrew_isolation::{Verify, Work};
    let p = Project::new();
    let s = p.start("S-verify");
    let verify = |argv: &[&str]| Verify {
        argv: argv.iter().map(|a| (*a).to_owned()).collect(),
        timeout: std::time::Duration::from_secs(30),
        copy: Vec::new(),
        confined: None,
    };
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();
    write(&wt.path, "bad.txt", "bad\n");
    let refuse = verify(&[
        "sh",
        "-c",
        "echo checking; test ! -f bad.txt || { echo 'bad.txt is there' >&2; exit 3; }",
    ]);
    let work = Work::Worktree {
        worktree: &wt,
        message: "write bad.txt",
    };
    let tip = s.tip().unwrap();
    let landing = s.land_work(work, "IMPL-001", Some(&refuse)).unwrap();
    let Landing::Rejected {
        command, output, ..
    } = &landing
    else {
        panic!("{landing:?}");
    };
    assert_eq!(command, &refuse.display());
    assert!(output.contains("exited with 3"), "{output}");
    assert!(output.ends_with("bad.txt is there"), "{output}");
    let (kind, why) = landing.refusal().unwrap();
    assert_eq!(kind, "merge_rejected");
    assert!(why.ends_with("bad.txt is there"), "{why}");
    assert_eq!(s.tip().unwrap(), tip, "nothing landed");

    let missing = verify(&["no-such-verify-command-anywhere"]);
    let landing = s.land_work(work, "IMPL-001", Some(&missing)).unwrap();
    let Landing::Rejected { output, .. } = &landing else {
        panic!("{landing:?}");
    };
    assert!(output.contains("was not found"), "{output}");

    let pass = verify(&["test", "-f", "bad.txt"]);
    let landing = s.land_work(work, "IMPL-001", Some(&pass)).unwrap();
    let commit = landing.commit().unwrap().to_owned();
    assert!(landing.refusal().is_none());
    assert_eq!(s.tip().unwrap(), commit);
    p.assert_sound();
}

/// The merge candidate's worktree, reused from one landing to the next,
/// holds nothing an earlier candidate's `[integration] verify` left there:
/// no ignored file (`build/leftover`, `build/` being ignored), no untracked
/// one, no edit to a tracked one. The check below fails when it finds any,
/// then leaves all three: the second candidate must pass it all the same.
#[test]
fn each_candidate_starts_clean_of_what_an_earlier_verify_left() {
    use wavecrew_isolation::{Verify, Work};
    let p = Project::new();
    p.write(".gitignore", ".env\n.workflow/\nbuild/\n");
    // The check, a program of the project's (argv, no shell).
    p.write(
        "check.py",
        "import os, pathlib, sys\n\
         if os.path.exists('build/leftover') or os.path.exists('stray.txt') \
         or 'dirty' in pathlib.Path('README').read_text():\n\
         \x20   sys.exit('an earlier check left files behind')\n\
         pathlib.Path('build').mkdir(exist_ok=True)\n\
         pathlib.Path('build/leftover').write_text('x')\n\
         pathlib.Path('stray.txt').write_text('x')\n\
         with open('README', 'a') as f:\n\
         \x20   f.write('dirty\\n')\n",
    );
    p.git(&["add", "check.py"]);
    p.git(&["commit", "-qam", "ignore build/, the check"]);
    let s = p.start("S-clean-candidate");
    let verify = Verify {
        argv: ["python3", "check.py"].map(str::to_owned).to_vec(),
        timeout: std::time::Duration::from_secs(30),
        copy: Vec::new(),
        confined: None,
    };
    for (n, task) in ["IMPL-001", "IMPL-002"].into_iter().enumerate() {
        let wt = s.open_worktree(task, 1, &[]).unwrap();
        write(&wt.path, &format!("out-{n}.txt"), "work\n");
        let work = Work::Worktree {
            worktree: &wt,
            message: task,
        };
        let landing = s.land_work(work, task, Some(&verify)).unwrap();
        assert!(landing.commit().is_some(), "{task}: {landing:?}");
    }
    p.assert_sound();
}
