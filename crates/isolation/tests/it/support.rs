//! Test helpers: a throwaway project (a real git repository in a temp dir,
//! deleted on drop) and the git plumbing the assertions read.

use std::path::{Path, PathBuf};

use wavecrew_isolation::{Integration, Repo};
use wavecrew_testkit::git::{TEST_EMAIL, TEST_NAME, git};

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
        wavecrew_sys::git::git(&self.top)
            .identity(TEST_NAME, TEST_EMAIL)
            .args(args)
            .run()
            .unwrap_or_else(|e| panic!("{e}"))
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
        let (_, out) = wavecrew_sys::git::git(&self.top)
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
    git(dir, args)
}

/// Write `dir/rel` (folders made as needed).
pub(crate) fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project folder without git in its own temp dir (deleted on drop),
/// for the shadow repository.
pub(crate) struct Folder {
    _dir: tempfile::TempDir,
    pub(crate) top: PathBuf,
}

impl Folder {
    /// `README`, `shared.txt`, an executable `run.sh` and a `.workflow`
    /// session folder; no `.git` anywhere, and not inside a git work tree.
    pub(crate) fn new() -> Folder {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir(&top).unwrap();
        let f = Folder { _dir: dir, top };
        f.write("README", "hello\n");
        f.write("shared.txt", "one\ntwo\nthree\n");
        f.write("run.sh", "#!/bin/sh\necho run\n");
        set_mode(&f.top.join("run.sh"), 0o755);
        f.write(".workflow/.team/notes.md", "the session's own\n");
        assert!(
            Repo::open(&f.top).unwrap().is_none(),
            "the temp dir is inside a git work tree"
        );
        f
    }

    /// Write a file (folders made as needed).
    pub(crate) fn write(&self, rel: &str, text: &str) {
        write(&self.top, rel, text);
    }

    /// Read a file.
    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.top.join(rel)).unwrap()
    }

    /// The session state folder used by the tests (inside `.workflow`).
    pub(crate) fn state_dir(&self, session: &str) -> PathBuf {
        self.top.join(".workflow/.team").join(session)
    }

    /// The shadow repository of session `session`, with `ignore`.
    pub(crate) fn shadow(&self, session: &str, ignore: &[&str]) -> Repo {
        let ignore: Vec<String> = ignore.iter().map(|s| (*s).to_owned()).collect();
        Repo::shadow(&self.top, &self.state_dir(session), &[".workflow"], &ignore).unwrap()
    }

    /// Start (or resume) session `session` on its shadow repository.
    pub(crate) fn start(&self, session: &str) -> Integration {
        let repo = self.shadow(session, &[]);
        Integration::start(&repo, session, &[".workflow"], &self.state_dir(session)).unwrap()
    }

    /// Run git on the shadow of session `session` (its git dir named).
    pub(crate) fn git(&self, session: &str, args: &[&str]) -> String {
        let git_dir = self.state_dir(session).join("shadow.git");
        let git_dir = git_dir.to_str().unwrap();
        git(&self.top, &[&["--git-dir", git_dir][..], args].concat())
    }

    /// Every path under the folder (`.workflow` left out), with its kind,
    /// mode and contents: what the user sees.
    pub(crate) fn listing(&self) -> Vec<(String, String)> {
        let mut all = Vec::new();
        list(&self.top, &self.top, &mut all);
        all.sort();
        all
    }

    /// No `.git` anywhere in the folder outside its session folder, and
    /// `git fsck` finds nothing wrong in the shadow of `session`.
    pub(crate) fn assert_sound(&self, session: &str) {
        for (path, _) in self.listing() {
            assert!(
                !path.split('/').any(|seg| seg == ".git"),
                "`{path}` in the project folder"
            );
        }
        assert!(std::fs::symlink_metadata(self.top.join(".git")).is_err());
        assert!(Repo::open(&self.top).unwrap().is_none());
        self.git(
            session,
            &["fsck", "--strict", "--no-dangling", "--no-progress"],
        );
    }
}

fn list(top: &Path, dir: &Path, all: &mut Vec<(String, String)>) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path
            .strip_prefix(top)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == ".workflow" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let what = if meta.file_type().is_symlink() {
            format!("-> {}", std::fs::read_link(&path).unwrap().display())
        } else if meta.is_dir() {
            list(top, &path, all);
            "dir".to_owned()
        } else {
            format!(
                "{:o} {}",
                meta.permissions().mode() & 0o111,
                String::from_utf8_lossy(&std::fs::read(&path).unwrap())
            )
        };
        all.push((rel, what));
    }
}

/// Set a file's permission bits.
pub(crate) fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
