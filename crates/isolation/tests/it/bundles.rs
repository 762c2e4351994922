//! Bundles: a repository sent to another with no shared filesystem, whole
//! and then commit by commit; refs move only by compare-and-swap.

use wavecrew_isolation::{Bundled, IsolationError, Repo};
use wavecrew_sys::git::GitError;

use crate::support::{Project, git_in};

/// An empty repository elsewhere: the receiving host's cache.
fn receiver() -> (tempfile::TempDir, Repo) {
    let dir = tempfile::tempdir().unwrap();
    git_in(dir.path(), &["init", "-q"]);
    let repo = Repo::open(dir.path()).unwrap().unwrap();
    (dir, repo)
}

#[test]
fn a_whole_bundle_then_an_increment_bring_the_branch_across() {
    let p = Project::new();
    let sender = Repo::open(&p.top).unwrap().unwrap();
    let (dir, cache) = receiver();
    let file = dir.path().join("0.bundle");
    let first = p.git(&["rev-parse", "HEAD"]);
    let Bundled::Written { commit } = sender
        .create_bundle(&file, "refs/heads/main", None)
        .unwrap()
    else {
        panic!("a first bundle is written");
    };
    assert_eq!(commit, first);
    let dest = "refs/heads/wavecrew/S-send";
    assert_eq!(
        cache
            .fetch_bundle(&file, "refs/heads/main", dest, "")
            .unwrap(),
        (first.clone(), true)
    );
    assert_eq!(cache.ref_commit(dest).unwrap(), Some(first.clone()));

    // Nothing new: nothing to send.
    let next = dir.path().join("1.bundle");
    assert_eq!(
        sender
            .create_bundle(&next, "refs/heads/main", Some(&first))
            .unwrap(),
        Bundled::UpToDate
    );
    assert!(!next.exists());

    // One more commit travels alone, on top of what the cache has.
    p.write("more.txt", "more\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "more"]);
    let second = p.git(&["rev-parse", "HEAD"]);
    sender
        .create_bundle(&next, "refs/heads/main", Some(&first))
        .unwrap();
    let listed = git_in(
        dir.path(),
        &["bundle", "list-heads", next.to_str().unwrap()],
    );
    assert_eq!(listed, format!("{second} refs/heads/main"));
    // A stale expectation moves nothing.
    assert_eq!(
        cache
            .fetch_bundle(&next, "refs/heads/main", dest, &second)
            .unwrap(),
        (second.clone(), false)
    );
    assert_eq!(cache.ref_commit(dest).unwrap(), Some(first.clone()));
    assert_eq!(
        cache
            .fetch_bundle(&next, "refs/heads/main", dest, &first)
            .unwrap(),
        (second.clone(), true)
    );
    assert_eq!(
        git_in(dir.path(), &["show", &format!("{dest}:more.txt")]),
        "more"
    );
}

#[test]
fn an_increment_without_its_base_and_bad_ref_names_are_refused() {
    let p = Project::new();
    let sender = Repo::open(&p.top).unwrap().unwrap();
    let first = p.git(&["rev-parse", "HEAD"]);
    p.write("more.txt", "more\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "more"]);
    let (dir, cache) = receiver();
    let file = dir.path().join("1.bundle");
    sender
        .create_bundle(&file, "refs/heads/main", Some(&first))
        .unwrap();
    let err = cache
        .fetch_bundle(&file, "refs/heads/main", "refs/heads/x", "")
        .unwrap_err();
    assert!(
        matches!(&err, IsolationError::Git(GitError::Failed { command, .. }) if command.contains("bundle verify")),
        "{err}"
    );
    assert_eq!(cache.ref_commit("refs/heads/x").unwrap(), None);
    for bad in [
        "main",
        "refs/heads/a..b",
        "refs/heads/x y",
        "refs/heads/x~1",
        "refs/heads/x.lock",
    ] {
        let err = sender.create_bundle(&file, bad, None).unwrap_err();
        assert!(
            matches!(err, IsolationError::InvalidRef { .. }),
            "{bad}: {err}"
        );
        assert!(
            err.to_string().contains("expected a full ref name"),
            "{err}"
        );
    }
}
