//! The merge queue's check on the merged result: `[integration] verify`
//! ([`Verify`]), run in a worktree of a merge candidate (the integration
//! tip with a task's work merged, not yet landed) before the branch moves.

use crate::error::Result;
use crate::ids::check_rel_path;
use crate::integration::Integration;
use crate::layout::{WORKTREE_LOCK, Worktree, canon, list_worktrees};
use crate::lock::lock;
use crate::worktree::DETACHED_DIR;

/// The folder name of the candidates' worktree under `.detached/`.
const CANDIDATE: &str = "merge-candidate";

/// What a candidate's check said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Land it.
    Pass,
    /// Do not land it; why (the command's output).
    Fail(String),
}

/// `[integration] verify`: the command every merge candidate must pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verify {
    /// The command (argv; never through a shell).
    pub argv: Vec<String>,
    /// Its time limit; its whole process group is killed at the end of it.
    pub timeout: std::time::Duration,
    /// `[isolation] copy`: files the candidate's worktree needs too.
    pub copy: Vec<String>,
    /// The box it runs in: it builds and tests the agents' work, so it may
    /// write no more than they may (`None`: unconfined).
    pub confined: Option<wavecrew_sys::confined::CommandBox>,
}

/// The most of a failed verify's output a verdict carries (its end).
const OUTPUT_TAIL: usize = 64 * 1024;

impl Verify {
    /// The command line, for messages (quoted where a word needs it).
    pub fn display(&self) -> String {
        self.argv
            .iter()
            .map(|w| {
                if !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
                {
                    w.clone()
                } else {
                    format!("'{}'", w.replace('\'', "'\\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Run it in `dir` to its end or its limit (blocking), its output in
    /// `log` (replaced): pass when it exits 0; otherwise fail with how it
    /// ended and the end of its output.
    pub fn run(&self, dir: &std::path::Path, log: &std::path::Path) -> Verdict {
        let Some((program, args)) = self.argv.split_first() else {
            return Verdict::Pass;
        };
        let _ = std::fs::remove_file(log);
        let ended = wavecrew_sys::process::run_to_log(
            std::path::Path::new(program),
            args,
            dir,
            log,
            self.timeout,
            self.confined.as_ref(),
        );
        let how = match ended {
            Ok(wavecrew_sys::process::LoggedEnd::Exited(Some(0))) => return Verdict::Pass,
            Ok(wavecrew_sys::process::LoggedEnd::Exited(Some(code))) => {
                format!("exited with {code}")
            }
            Ok(wavecrew_sys::process::LoggedEnd::Exited(None)) => "was killed by a signal".into(),
            Ok(wavecrew_sys::process::LoggedEnd::TimedOut) => {
                format!("timed out after {} s", self.timeout.as_secs())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                format!("`{program}` was not found")
            }
            Err(e) => format!("could not start: {e}"),
        };
        let output = std::fs::read(log).unwrap_or_default();
        let tail = &output[output.len().saturating_sub(OUTPUT_TAIL)..];
        Verdict::Fail(format!(
            "`{}` {how}\n{}",
            self.display(),
            String::from_utf8_lossy(tail).trim_end()
        ))
    }
}

impl Integration {
    /// A detached worktree at `commit` (a merge candidate), reused from one
    /// candidate to the next: checked out again, its tracked files reset
    /// and every other file removed, ignored ones (build output such as
    /// `target/`) included, so nothing an earlier candidate's check left
    /// there (a cache, a generated file) can sway this one's. `copy` as in
    /// [`Integration::open_worktree`].
    pub fn candidate_worktree(&self, commit: &str, copy: &[String]) -> Result<Worktree> {
        let copy = copy
            .iter()
            .map(|c| check_rel_path("copy", c))
            .collect::<Result<Vec<_>>>()?;
        let path = self.worktrees_dir().join(DETACHED_DIR).join(CANDIDATE);
        let _guard = lock(&self.state_dir.join(WORKTREE_LOCK))?;
        let listed = list_worktrees(&self.repo)?;
        let target = canon(&path);
        // The last check ran the agents' code in it: git there is pinned to
        // the folders git wrote, and a worktree whose `.git` was rewritten
        // is made anew.
        let reusable = listed
            .iter()
            .find(|l| canon(&l.path) == target)
            .filter(|l| !l.prunable && l.branch.is_none())
            .and_then(|_| self.pinned_work_tree(&path).ok());
        match (reusable, listed.iter().find(|l| canon(&l.path) == target)) {
            (Some(pinned), _) => {
                wavecrew_sys::git::git_pinned(&pinned)
                    .args(["checkout", "--quiet", "--detach", "--force", commit])
                    .run()?;
                wavecrew_sys::git::git_pinned(&pinned)
                    .args(["reset", "--quiet", "--hard"])
                    .run()?;
                // `-x`: what git ignores goes too; the second `--force`:
                // so do nested repositories a check made.
                wavecrew_sys::git::git_pinned(&pinned)
                    .args(["clean", "--quiet", "-d", "-x", "--force", "--force"])
                    .run()?;
            }
            (None, Some(_)) => {
                self.remove_path(&path, &listed)?;
                self.add_worktree(&path, &["--detach", commit])?;
            }
            (None, None) => self.add_worktree(&path, &["--detach", commit])?,
        }
        for rel in &copy {
            self.copy_in(&path, rel)?;
        }
        Ok(Worktree {
            build_state: Vec::new(),
            set_up_before: false,
            fresh: false,
            path,
            branch: String::new(),
            base: commit.to_owned(),
            task: CANDIDATE.to_owned(),
        })
    }
}
