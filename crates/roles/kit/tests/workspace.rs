//! A task's workspace in worktree mode in a folder that is not a git work
//! tree: its own worktree of the shadow repository in the session folder,
//! where `workspace_dir` said it would be; its work lands, and the folder
//! gets no `.git`.

use wavecrew_core::{Task, TaskId};
use wavecrew_role_kit::workspace::{Landed, Workspace};
use wavecrew_role_kit::{OpenSpec, RoleSession};

#[tokio::test]
async fn a_folder_without_git_gets_a_worktree_of_its_shadow_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let session_dir = root.join(".workflow/.team/TC-shadow-2026-11-23");
    std::fs::create_dir_all(session_dir.join("tasks")).unwrap();
    std::fs::write(
        root.join("wavecrew.toml"),
        "[isolation]\nmode = \"worktree\"\n",
    )
    .unwrap();
    std::fs::write(root.join("README"), "hello\n").unwrap();
    let session = RoleSession::open(&OpenSpec::session(&session_dir)).unwrap();
    let ctx = &session.ctx;
    let task = Task::new(TaskId::new("IMPL-001").unwrap(), "IMPL-001", "write a file");

    let expected = ctx.workspace_dir(&task, 1).unwrap();
    assert!(
        expected.starts_with(session_dir.join("shadow.git")),
        "{}",
        expected.display()
    );
    assert!(!expected.exists(), "workspace_dir creates nothing");
    let ws = ctx.workspace(&task, 1).unwrap();
    assert!(matches!(ws, Workspace::Isolated { .. }), "{ws:?}");
    assert_eq!(ws.dir(), expected);
    assert_eq!(
        std::fs::read_to_string(ws.dir().join("README")).unwrap(),
        "hello\n"
    );
    std::fs::write(ws.dir().join("new.txt"), "new\n").unwrap();
    assert_eq!(
        ws.changed_files().unwrap(),
        Some(vec!["new.txt".to_owned()])
    );
    assert!(matches!(
        ws.land(&task, "write new.txt", None).await.unwrap(),
        Landed::Commit(_)
    ));
    // The folder itself is untouched and has no git.
    assert!(!root.join("new.txt").exists());
    assert!(!root.join(".git").exists());
    // A second claim works in its own worktree, from the landed work.
    let second = ctx.workspace(&task, 2).unwrap();
    assert_eq!(second.dir(), ctx.workspace_dir(&task, 2).unwrap());
    assert!(second.dir().join("new.txt").is_file());
}
