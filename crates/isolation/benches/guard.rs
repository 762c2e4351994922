//! What the checks against an agent's git redirects cost per attempt, in
//! a linked worktree of a small repository:
//!
//! * `guard_repository`: the repository guard as it was (configuration,
//!   hooks, attributes: recorded before the agent, compared after);
//! * `guard_with_redirects`: the same with the worktree's `.git`, `gitdir`
//!   and `commondir` recorded and compared too (what every attempt runs
//!   now);
//! * `status` and `status_pinned`: the snapshot's `git status` in the
//!   worktree, found through its `.git` file, and pinned to its recorded
//!   git folders (`--git-dir`, `--work-tree`, `GIT_COMMON_DIR`).

use criterion::Criterion;
use wavecrew_isolation::RepoGuard;
use wavecrew_sys::git::{TreeStatus, WorkTreeGit, git};

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for (rel, text) in [("README.md", "app\n"), ("src/lib.rs", "pub fn f() {}\n")] {
        let path = repo.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let run = |dir: &std::path::Path, args: &[&str]| {
        git(dir)
            .identity("bench", "bench@example.invalid")
            .args(args)
            .run()
            .unwrap();
    };
    run(&repo, &["init", "-q", "-b", "main"]);
    run(&repo, &["add", "."]);
    run(&repo, &["commit", "-qm", "start"]);
    let wt = tmp.path().join("wt");
    run(
        &repo,
        &["worktree", "add", "-q", "-b", "task", wt.to_str().unwrap()],
    );
    let located = WorkTreeGit::locate(&wt).unwrap();

    let mut g = c.benchmark_group("guard");
    g.sample_size(50);
    g.bench_function("guard_repository", |b| {
        b.iter(|| {
            let guard = RepoGuard::of_common_dir(&located.common_dir).unwrap();
            assert!(guard.restore().unwrap().is_empty());
        });
    });
    g.bench_function("guard_with_redirects", |b| {
        b.iter(|| {
            let guard = RepoGuard::of_work_tree(&located).unwrap();
            assert!(guard.restore().unwrap().is_empty());
        });
    });
    g.bench_function("status", |b| {
        b.iter(|| TreeStatus::read(&located.top).unwrap());
    });
    g.bench_function("status_pinned", |b| {
        b.iter(|| TreeStatus::read_pinned(&located).unwrap());
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
