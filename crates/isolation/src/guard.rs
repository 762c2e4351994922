//! What an agent must not change in the repository's git folder: its
//! configuration (`config`; from the main work tree, each worktree's
//! `config.worktree`), its hooks and `info/attributes`; and, for the linked
//! work tree it works in, its own `config.worktree` and what leads git to a
//! git folder (the work tree's `.git` file, its git folder's `gitdir` and
//! `commondir`), which a redirect to a copy of the repository with drivers
//! of the agent's own would turn into commands. Git takes commands from
//! these (hooks, the fsmonitor, filter, diff and merge drivers, pagers,
//! editors), which would run in the user's own git after the session;
//! wavecrew's own git runs with hooks and the fsmonitor off
//! (`wavecrew_sys::git`) and pinned to the recorded folders.
//!
//! [`RepoGuard::take`] records them before an agent runs;
//! [`RepoGuard::restore`] after it finds what changed, puts the recorded
//! state back (a changed file rewritten atomically, a planted one removed,
//! a removed one written again) and says what it found, one line each.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use wavecrew_core::fsutil;

use crate::error::{IsolationError, Result};

/// A recorded file: its bytes and its permission bits.
type Recorded = (Vec<u8>, u32);

/// The guarded files of one repository, as they were.
#[derive(Debug, Clone)]
pub struct RepoGuard {
    common_dir: PathBuf,
    /// The files that lead git to the work tree's git folder.
    redirects: Vec<PathBuf>,
    files: BTreeMap<PathBuf, Recorded>,
}

impl RepoGuard {
    /// Record the guarded files of the repository `dir` belongs to; `None`
    /// when `dir` is not in a git work tree.
    pub fn take(dir: &Path) -> Result<Option<RepoGuard>> {
        let out = wavecrew_sys::git::git(dir)
            .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .output();
        match out {
            Ok((_, o)) if o.status.success() => {
                let common_dir = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
                RepoGuard::of_common_dir(&common_dir).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Record the guarded files of the repository whose git folder (the
    /// common one, shared by its worktrees) is `common_dir`, as located
    /// already ([`wavecrew_sys::git::WorkTreeGit`]).
    pub fn of_common_dir(common_dir: &Path) -> Result<RepoGuard> {
        RepoGuard::record(common_dir, Vec::new())
    }

    /// [`RepoGuard::of_common_dir`] of the work tree `wt`'s repository,
    /// and what leads git from `wt` to its git folder: a linked worktree's
    /// `.git` file and its git folder's `gitdir` and `commondir`.
    pub fn of_work_tree(wt: &wavecrew_sys::git::WorkTreeGit) -> Result<RepoGuard> {
        let redirects = if wt.git_dir == wt.common_dir {
            Vec::new()
        } else {
            // Its own configuration, not its neighbours': an agent working
            // beside it at the same time is guarded by its own attempt.
            vec![
                wt.top.join(".git"),
                wt.git_dir.join("gitdir"),
                wt.git_dir.join("commondir"),
                wt.git_dir.join("config.worktree"),
            ]
        };
        RepoGuard::record(&wt.common_dir, redirects)
    }

    fn record(common_dir: &Path, redirects: Vec<PathBuf>) -> Result<RepoGuard> {
        let mut guard = RepoGuard {
            common_dir: common_dir.to_owned(),
            redirects,
            files: BTreeMap::new(),
        };
        for path in guard.guarded() {
            if let Some(recorded) = read(&path)? {
                guard.files.insert(path, recorded);
            }
        }
        Ok(guard)
    }

    /// The repository's git folder (shared by its worktrees).
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// Every guarded file there is now.
    fn guarded(&self) -> Vec<PathBuf> {
        let c = &self.common_dir;
        let mut all = vec![
            c.join("config"),
            c.join("config.worktree"),
            c.join("info/attributes"),
        ];
        if self.redirects.is_empty()
            && let Ok(entries) = fs::read_dir(c.join("worktrees"))
        {
            // From the main work tree (in place), every worktree's.
            for e in entries.flatten() {
                all.push(e.path().join("config.worktree"));
            }
        }
        files_below(&c.join("hooks"), &mut all);
        all.extend(self.redirects.iter().cloned());
        all.retain(|p| fs::symlink_metadata(p).is_ok());
        all
    }

    /// Put back what changed since [`RepoGuard::take`] and say what it
    /// was, one line each (empty: nothing changed).
    pub fn restore(&self) -> Result<Vec<String>> {
        let mut found = Vec::new();
        let now: Vec<PathBuf> = self.guarded();
        for path in &now {
            let shown = self.shown(path);
            let current = read(path)?;
            match (self.files.get(path), current) {
                (Some(was), Some(is)) if *was == is => {}
                (Some(was), is) => {
                    let added = is
                        .map(|is| config_lines(path, was, &is))
                        .unwrap_or_default();
                    put_back(path, was)?;
                    found.push(format!("{shown} was changed{added}"));
                }
                (None, _) => {
                    remove(path)?;
                    found.push(format!("{shown} was added (removed again)"));
                }
            }
        }
        for (path, was) in &self.files {
            if !now.contains(path) {
                put_back(path, was)?;
                found.push(format!("{} was removed (written again)", self.shown(path)));
            }
        }
        Ok(found)
    }

    fn shown(&self, path: &Path) -> String {
        let name = self
            .common_dir
            .file_name()
            .map_or_else(|| ".git".to_owned(), |n| n.to_string_lossy().into_owned());
        match path.strip_prefix(&self.common_dir) {
            Ok(rel) => format!("`{name}/{}`", rel.display()),
            Err(_) => format!("`{}`", path.display()),
        }
    }
}

/// For a configuration file: the lines that are new, quoted (what git
/// would have run).
fn config_lines(path: &Path, was: &Recorded, is: &Recorded) -> String {
    let name = path.file_name().unwrap_or_default();
    if name == ".git" || name == "gitdir" || name == "commondir" {
        // A redirect: where it led git instead.
        let to = String::from_utf8_lossy(&is.0);
        let to = to.lines().next().unwrap_or_default().trim();
        return format!(
            " (put back; it led git to `{}`)",
            to.chars().take(200).collect::<String>()
        );
    }
    let is_config = name == "config" || name == "config.worktree";
    if !is_config {
        return " (put back)".to_owned();
    }
    let old = String::from_utf8_lossy(&was.0);
    let new = String::from_utf8_lossy(&is.0);
    let added: Vec<String> = new
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !old.lines().any(|o| o.trim() == *l))
        .map(|l| format!("`{}`", l.chars().take(120).collect::<String>()))
        .collect();
    if added.is_empty() {
        " (put back)".to_owned()
    } else {
        format!(" (put back; it had added {})", added.join(", "))
    }
}

fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => files_below(&path, out),
            Ok(_) => out.push(path),
            Err(_) => {}
        }
    }
}

fn read(path: &Path) -> Result<Option<Recorded>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(IsolationError::io("reading", path, e)),
    };
    if meta.file_type().is_symlink() {
        let target = fs::read_link(path).map_err(|e| IsolationError::io("reading", path, e))?;
        return Ok(Some((
            target.into_os_string().into_encoded_bytes(),
            u32::MAX,
        )));
    }
    let bytes = fs::read(path).map_err(|e| IsolationError::io("reading", path, e))?;
    Ok(Some((bytes, meta.permissions().mode() & 0o7777)))
}

fn remove(path: &Path) -> Result<()> {
    fs::remove_file(path).map_err(|e| IsolationError::io("removing", path, e))
}

fn put_back(path: &Path, was: &Recorded) -> Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(path).map_err(|e| IsolationError::io("removing", path, e))?;
    } else if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        remove(path)?;
    }
    if was.1 == u32::MAX {
        // A recorded symlink (a hook linked to a script of the project).
        let target = std::ffi::OsString::from_vec(was.0.clone());
        let _ = fs::remove_file(path);
        return std::os::unix::fs::symlink(target, path)
            .map_err(|e| IsolationError::io("writing", path, e));
    }
    fsutil::write_atomic(path, &was.0).map_err(|e| IsolationError::Inconsistent {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    fs::set_permissions(path, fs::Permissions::from_mode(was.1))
        .map_err(|e| IsolationError::io("writing", path, e))
}
