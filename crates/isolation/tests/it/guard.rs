//! `RepoGuard`: what an agent changes in the repository's configuration,
//! hooks and attributes is found, put back and named.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use wavecrew_isolation::RepoGuard;

use crate::support::Project;

#[test]
fn planted_and_changed_git_files_are_put_back_and_named() {
    let p = Project::new();
    let git_dir = p.top.join(".git");
    fs::write(git_dir.join("hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(
        git_dir.join("hooks/pre-commit"),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let config = fs::read_to_string(git_dir.join("config")).unwrap();
    let s = p.start("S-guard");
    let wt = s.open_worktree("IMPL-001", 1, &[]).unwrap();

    let guard = RepoGuard::take(&wt.path).unwrap().expect("a git work tree");
    assert_eq!(
        guard.restore().unwrap(),
        Vec::<String>::new(),
        "nothing changed"
    );
    // What an agent in the worktree does to the shared git folder.
    p.git(&[
        "-C",
        wt.path.to_str().unwrap(),
        "config",
        "core.fsmonitor",
        "touch planted",
    ]);
    fs::write(
        git_dir.join("hooks/post-merge"),
        "#!/bin/sh\ntouch planted\n",
    )
    .unwrap();
    fs::remove_file(git_dir.join("hooks/pre-commit")).unwrap();
    fs::create_dir_all(git_dir.join("info")).unwrap();
    fs::write(git_dir.join("info/attributes"), "* filter=evil\n").unwrap();

    let found = guard.restore().unwrap();
    assert_eq!(
        found,
        [
            "`.git/config` was changed (put back; it had added `fsmonitor = touch planted`)",
            "`.git/info/attributes` was added (removed again)",
            "`.git/hooks/post-merge` was added (removed again)",
            "`.git/hooks/pre-commit` was removed (written again)",
        ]
    );
    assert_eq!(fs::read_to_string(git_dir.join("config")).unwrap(), config);
    assert!(!git_dir.join("hooks/post-merge").exists());
    assert!(!git_dir.join("info/attributes").exists());
    let hook = git_dir.join("hooks/pre-commit");
    assert_eq!(
        fs::metadata(&hook).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(guard.restore().unwrap().is_empty(), "all put back");
    // Outside git there is nothing to guard.
    let outside = tempfile::tempdir().unwrap();
    assert!(RepoGuard::take(outside.path()).unwrap().is_none());
}
