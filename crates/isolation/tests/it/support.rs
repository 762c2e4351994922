//! Test helpers: a throwaway project (a real git repository in a temp dir,
//! deleted on drop) and the git plumbing the assertions read.

use std::path::{Path, PathBuf};
use std::process::Command;

use wavecrew_isolation::{Integration, Repo};

/// A git repository in its own temp dir, with one commit on `main`.
pub(crate) struct Project {
    _dir: tempfile::TempDir,
    pub(crate) top: PathBuf,
}

impl Project {
    /// `main` with `README` and a `.gitignore` that ignores `.env` and `.workflow/`.
    pub(crate) fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir(&top).unwrap();
        let p = Project { _dir: dir, top };
        p.git(&["init", "-q", "-b", "main"]);
        p.git(&["config", "user.name", "Test User"]);
        p.git(&["config", "user.email", "test@example.invalid"]);
        p.git(&["config", "commit.gpgsign", "false"]);
        p.write("README", "hello\n");
        p.write("shared.txt", "one\ntwo\nthree\n");
        p.write(".gitignore", ".env\n.workflow/\n");
        p.git(&["add", "-A"]);
        p.git(&["commit", "-q", "-m", "first"]);
        p
    }

    /// Run git in the project; panics with stderr on failure; stdout trimmed.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        git_in(&self.top, args)
    }

    /// Raw stdout bytes of a git command (for byte-exact comparisons).
    pub(crate) fn git_bytes(&self, args: &[&str]) -> Vec<u8> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.top)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Write a project file (folders made as needed).
    pub(crate) fn write(&self, rel: &str, text: &str) {
        write(&self.top, rel, text);
    }

    /// Read a project file.
    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.top.join(rel)).unwrap()
    }

    /// The session state folder used by the tests.
    pub(crate) fn state_dir(&self, session: &str) -> PathBuf {
        self.top
            .join(".workflow/.team")
            .join(session)
            .join("isolation")
    }

    /// Start (or resume) session `session`, excluding `.workflow`.
    pub(crate) fn start(&self, session: &str) -> Integration {
        let repo = Repo::open(&self.top).unwrap().unwrap();
        Integration::start(&repo, session, &[".workflow"], &self.state_dir(session)).unwrap()
    }

    /// `git fsck` finds nothing wrong, and no merge or rebase is in progress.
    pub(crate) fn assert_sound(&self) {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.top)
            .args(["fsck", "--strict", "--no-dangling", "--no-progress"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git fsck: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let git_dir = self.top.join(".git");
        for f in [
            "MERGE_HEAD",
            "REBASE_HEAD",
            "rebase-merge",
            "rebase-apply",
            "index.lock",
        ] {
            assert!(!git_dir.join(f).exists(), "{f} left behind");
        }
    }

    /// Values of the `Wavecrew-Task` trailer on the first-parent history
    /// `base..tip` of the integration branch, one per commit that has it.
    pub(crate) fn landing_trailers(&self, session: &Integration) -> Vec<String> {
        let range = format!("{}..{}", session.base(), session.tip().unwrap());
        let out = self.git(&[
            "log",
            "--first-parent",
            "--format=%(trailers:key=Wavecrew-Task,valueonly)",
            &range,
        ]);
        out.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Run git in `dir`; panics with stderr on failure; stdout trimmed.
pub(crate) fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Write `dir/rel` (folders made as needed).
pub(crate) fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
