//! Ids that would become refs or paths, and paths in `exclude` and `copy`,
//! are refused with a clear error before anything is created.

use wavecrew_isolation::{Integration, IsolationError, Repo};

use crate::support::Project;

#[test]
fn bad_session_ids_are_refused() {
    let p = Project::new();
    let repo = Repo::open(&p.top).unwrap().unwrap();
    for bad in [
        "", "a..b", "-x", ".x", "a b", "x.lock", "a/b", "a~1", "a^", "a:b", "a*", "a[", "a\\b",
        "x.",
    ] {
        let err = Integration::start(&repo, bad, &[], &p.state_dir("bad")).unwrap_err();
        assert!(
            matches!(
                err,
                IsolationError::InvalidId {
                    kind: "session id",
                    ..
                }
            ),
            "{bad:?}: {err}"
        );
    }
    let err = Integration::start(&repo, "a..b", &[], &p.state_dir("bad")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid session id \"a..b\": it contains `..`; expected 1-128 ASCII letters, digits, `-`, `_` or `.`, not starting with `-` or `.`, without `..`, not ending with `.` or `.lock`"
    );
    assert!(!p.state_dir("bad").exists(), "nothing was created");
    assert_eq!(p.git(&["branch", "--list", "wavecrew/*"]), "");
}

#[test]
fn bad_task_ids_names_and_paths_are_refused() {
    let p = Project::new();
    let s = p.start("S-valid");
    for bad in ["..", "a..b", "-rf", "a b", "x.lock", "a/b", "HEAD@{1}"] {
        let err = s.open_worktree(bad, 1, &[]).unwrap_err();
        assert!(
            matches!(
                err,
                IsolationError::InvalidId {
                    kind: "task id",
                    ..
                }
            ),
            "{bad:?}: {err}"
        );
        let err = s.detached_worktree(bad).unwrap_err();
        assert!(
            matches!(err, IsolationError::InvalidId { .. }),
            "{bad:?}: {err}"
        );
    }
    for bad in ["../outside", "/etc/passwd", "", ".git/config"] {
        let err = s
            .open_worktree("IMPL-001", 1, &[bad.to_owned()])
            .unwrap_err();
        assert!(
            matches!(err, IsolationError::InvalidPath { what: "copy", .. }),
            "{bad:?}: {err}"
        );
    }
    let repo = Repo::open(&p.top).unwrap().unwrap();
    let err = Integration::start(&repo, "S-x", &["../up"], &p.state_dir("S-x")).unwrap_err();
    assert!(
        matches!(
            err,
            IsolationError::InvalidPath {
                what: "exclude",
                ..
            }
        ),
        "{err}"
    );
    assert!(!s.worktrees_dir().exists(), "no worktree was made");
    p.assert_sound();
}
