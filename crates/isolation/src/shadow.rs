//! The shadow repository: git for a project folder that has none.
//!
//! A session on a folder that is not a git work tree keeps a bare git
//! repository in its state folder, `<state_dir>/shadow.git`, whose work
//! tree is the project folder, named on every command (`--git-dir`,
//! `--work-tree`): the folder itself never gets a `.git`. Its first commit,
//! on `refs/heads/project`, is a snapshot of the folder's files (the
//! project's `.gitignore` honoured, the session folder left out); from
//! there the integration branch, the worktrees (inside the shadow's git
//! dir) and the merge queue work as on a real repository, and `--apply`
//! writes the result back into the folder as files.
//!
//! Making one is idempotent and survives a kill at any point: the
//! repository is built and its first commit made in a temporary folder
//! next to it (`.shadow.git.tmp-*`, removed by the next attempt), and only
//! then renamed into place, all under `state_dir/shadow.lock`. A shadow
//! whose ref is missing gets its snapshot again (compare-and-swap from
//! nothing); one that is not a shadow at all is made again, unless a
//! session already started on it.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use wavecrew_core::fsutil;
use wavecrew_sys::git::GitError;

use crate::error::{IsolationError, Result};
use crate::git::{self, git, quoted};
use crate::ids::check_rel_path;
use crate::integration::{
    Applied, AppliedFiles, Integration, STATE_FILE, add_all, snapshot_tree, worktree_path,
};
use crate::lock::lock;
use crate::repo::Repo;

/// The shadow repository's folder inside a session's state folder.
pub const SHADOW_DIR: &str = "shadow.git";
/// The shadow's branch holding the snapshot of the project folder it was
/// made from.
pub const SHADOW_BRANCH: &str = "refs/heads/project";
/// What a shadow records about itself, inside its git dir.
const RECORD_FILE: &str = "wavecrew-shadow.json";
/// The lock that serialises making a shadow repository.
const SHADOW_LOCK: &str = "shadow.lock";
/// The prefix of the temporary folders a shadow is built in.
const TMP_PREFIX: &str = ".shadow.git.tmp-";
/// The prefix of the temporary files `--apply` writes before renaming
/// them into place.
const APPLY_PREFIX: &str = ".wavecrew-apply-";

/// What `<shadow>/wavecrew-shadow.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    /// Format version, 1.
    version: u32,
    /// The project folder (canonical) the shadow tracks.
    project: PathBuf,
    /// Project-relative paths its snapshots leave out (`exclude`, and the
    /// state folder when it is inside the project).
    exclude: Vec<String>,
    /// Project-relative paths its `info/exclude` ignores.
    ignore: Vec<String>,
}

/// Where attempt `attempt` of `task` of session `session` works when the
/// session runs on the shadow repository of `state_dir`, whether or not
/// anything exists yet (the path [`Integration::open_worktree`] gives).
pub fn shadow_worktree_path(state_dir: &Path, session: &str, task: &str, attempt: u32) -> PathBuf {
    let repo = Repo::open_shadow(state_dir)
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            shadow_repo(
                PathBuf::new(),
                canonical(state_dir).join(SHADOW_DIR),
                Vec::new(),
            )
        });
    worktree_path(&repo, session, task, attempt)
}

/// `path` with symlinks resolved when it exists, as given otherwise.
fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The [`Repo`] of the shadow at `dir` for the project folder `project`.
fn shadow_repo(project: PathBuf, dir: PathBuf, exclude: Vec<String>) -> Repo {
    Repo {
        top: dir.clone(),
        work_tree: project,
        index: dir.join("index"),
        common_dir: dir,
        shadow: Some(exclude),
        identity: OnceLock::new(),
    }
}

impl Repo {
    /// Open, or make, the shadow repository of the project folder `project`
    /// (a folder that is not a git work tree) in `state_dir/shadow.git`.
    ///
    /// A new one is a bare repository whose first commit, on
    /// [`SHADOW_BRANCH`] (its HEAD), is a snapshot of the folder's files:
    /// the project's `.gitignore` files are honoured, and the paths in
    /// `exclude` (the session folder's top, e.g. `.workflow`) and
    /// `state_dir` itself (when it is inside the project) are left out.
    /// The paths in `ignore` (the `[isolation] copy` list, e.g. `.env`) are
    /// written to its `info/exclude`, so they are never snapshotted nor
    /// committed, and can be copied into worktrees. The project folder is
    /// never written to; a `state_dir` that holds it is refused.
    ///
    /// An existing shadow is opened as it is (its snapshot is not taken
    /// again); one for another folder is refused. See the module notes for
    /// what a kill while it is made leaves, and how that is mended.
    pub fn shadow(
        project: &Path,
        state_dir: &Path,
        exclude: &[&str],
        ignore: &[String],
    ) -> Result<Repo> {
        git::check_version()?;
        let mut exclude = exclude
            .iter()
            .map(|x| check_rel_path("exclude", x))
            .collect::<Result<Vec<_>>>()?;
        let ignore = ignore
            .iter()
            .map(|x| check_rel_path("copy", x))
            .collect::<Result<Vec<_>>>()?;
        let project = fs::canonicalize(project)
            .map_err(|e| IsolationError::io("opening the project folder", project, e))?;
        if !project.is_dir() {
            return Err(IsolationError::Shadow {
                path: project,
                message: "it is not a folder; expected the project folder".into(),
            });
        }
        if fs::symlink_metadata(project.join(".git")).is_ok() {
            return Err(IsolationError::Shadow {
                path: project.join(".git"),
                message: "the project folder has a `.git` but is not a git work tree; \
                          expected a working git repository, or a folder without `.git`"
                    .into(),
            });
        }
        fs::create_dir_all(state_dir).map_err(|e| IsolationError::io("creating", state_dir, e))?;
        let state_dir =
            fs::canonicalize(state_dir).map_err(|e| IsolationError::io("opening", state_dir, e))?;
        let dir = state_dir.join(SHADOW_DIR);
        // The state folder (the shadow, its worktrees, the session's state)
        // stays out of the snapshots.
        if project.starts_with(&state_dir) {
            return Err(IsolationError::Shadow {
                path: dir,
                message: format!(
                    "the state folder `{}` holds the project folder; expected a state folder \
                     inside the project (its session folder) or apart from it",
                    state_dir.display()
                ),
            });
        }
        if let Ok(rel) = state_dir.strip_prefix(&project) {
            let rel = rel.to_string_lossy().into_owned();
            let covered = exclude
                .iter()
                .any(|x| Path::new(&rel).starts_with(Path::new(x)));
            if !covered {
                exclude.push(rel);
            }
        }
        let _guard = lock(&state_dir.join(SHADOW_LOCK))?;
        remove_leftovers(&state_dir)?;

        if fs::symlink_metadata(&dir).is_ok() {
            match read_record(&dir)? {
                Some(record) => {
                    if record.project != project {
                        return Err(IsolationError::Shadow {
                            path: dir,
                            message: format!(
                                "it tracks `{}`; expected `{}` (the project folder moved? \
                                 start a new session)",
                                record.project.display(),
                                project.display()
                            ),
                        });
                    }
                    let repo = shadow_repo(project, dir, record.exclude);
                    if repo.resolve(SHADOW_BRANCH)?.is_none() {
                        // Its first commit never made it: finish it.
                        first_commit(&repo)?;
                    }
                    return Ok(repo);
                }
                None if state_dir.join(STATE_FILE).exists() => {
                    return Err(IsolationError::Shadow {
                        path: dir,
                        message: format!(
                            "it is not a complete shadow repository, but the session in `{}` \
                             already started on it; expected a shadow wavecrew made (remove the \
                             session's state to start again)",
                            state_dir.display()
                        ),
                    });
                }
                // Not a shadow (a leftover of something else): made again.
                None => remove_all(&dir)?,
            }
        }

        let tmp = tempfile::Builder::new()
            .prefix(TMP_PREFIX)
            .tempdir_in(&state_dir)
            .map_err(|e| IsolationError::io("creating a temp folder in", &state_dir, e))?;
        let initial = format!(
            "--initial-branch={}",
            SHADOW_BRANCH.trim_start_matches("refs/heads/")
        );
        git(&state_dir)
            .args(["init", "--bare", "--quiet", "--template=", &initial, "--"])
            .arg(tmp.path())
            .run()?;
        if !ignore.is_empty() {
            let info = tmp.path().join("info");
            fs::create_dir_all(&info).map_err(|e| IsolationError::io("creating", &info, e))?;
            let mut text = String::from("# [isolation] copy: never snapshotted nor committed\n");
            for rel in &ignore {
                text.push('/');
                text.push_str(&escape_pattern(rel));
                text.push('\n');
            }
            let file = info.join("exclude");
            fs::write(&file, text).map_err(|e| IsolationError::io("writing", &file, e))?;
        }
        let record = Record {
            version: 1,
            project: project.clone(),
            exclude: exclude.clone(),
            ignore,
        };
        fsutil::write_json_atomic(&tmp.path().join(RECORD_FILE), &record)?;
        let building = shadow_repo(project.clone(), tmp.path().to_owned(), exclude.clone());
        first_commit(&building)?;
        // Complete: only now does it take its place.
        let built = tmp.keep();
        fs::rename(&built, &dir).map_err(|e| IsolationError::io("renaming", &built, e))?;
        Ok(shadow_repo(project, dir, exclude))
    }

    /// The shadow repository in `state_dir`, when a session made one there
    /// ([`Repo::shadow`]); Ok(None) when there is none, or only a
    /// half-made one no session started on. Nothing is created.
    pub fn open_shadow(state_dir: &Path) -> Result<Option<Repo>> {
        let state_dir = canonical(state_dir);
        let dir = state_dir.join(SHADOW_DIR);
        if fs::symlink_metadata(&dir).is_err() {
            return Ok(None);
        }
        match read_record(&dir)? {
            Some(record) => Ok(Some(shadow_repo(record.project, dir, record.exclude))),
            None if state_dir.join(STATE_FILE).exists() => Err(IsolationError::Shadow {
                path: dir,
                message: "it is not a complete shadow repository, but the session started on \
                          it; expected a shadow wavecrew made"
                    .into(),
            }),
            None => Ok(None),
        }
    }
}

/// The shadow's record when `dir` is a complete shadow (a bare repository
/// with a readable record); None otherwise.
fn read_record(dir: &Path) -> Result<Option<Record>> {
    let file = dir.join(RECORD_FILE);
    if !file.is_file() {
        return Ok(None);
    }
    let Ok(record) = fsutil::read_json::<Record>(&file) else {
        return Ok(None);
    };
    if record.version != 1 {
        return Err(IsolationError::Inconsistent {
            path: file,
            message: format!("format version {}; expected 1", record.version),
        });
    }
    let (_, out) = git(dir)
        .args(["rev-parse", "--is-bare-repository"])
        .output()?;
    let bare = out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "true";
    Ok(bare.then_some(record))
}

/// The snapshot of the project folder as the shadow's first commit, on
/// [`SHADOW_BRANCH`] (compare-and-swap from nothing). Its index is kept in
/// the shadow (so later snapshots re-read only changed files).
fn first_commit(repo: &Repo) -> Result<String> {
    let index = repo.index_file().to_owned();
    let _ = fs::remove_file(&index);
    let tree = add_all(repo, &index, None, repo.shadow_exclude())?;
    let message = format!(
        "wavecrew: snapshot of {}\n\n\
         The project folder has no git repository; this shadow repository\n\
         (outside the folder's tracked files) starts from its files.\n",
        repo.work_tree().display()
    );
    let commit = repo.commit_tree(&tree, &[], &message)?;
    if !repo.update_ref(SHADOW_BRANCH, &commit, "", "wavecrew: shadow snapshot")? {
        // Someone made it first (not under our lock): theirs stands.
        return repo.must_resolve(SHADOW_BRANCH);
    }
    Ok(commit)
}

/// Remove the temporary folders a killed [`Repo::shadow`] left.
fn remove_leftovers(state_dir: &Path) -> Result<()> {
    let entries =
        fs::read_dir(state_dir).map_err(|e| IsolationError::io("reading", state_dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| IsolationError::io("reading", state_dir, e))?;
        if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
            remove_all(&entry.path())?;
        }
    }
    Ok(())
}

/// Remove a file, a symlink (not its target) or a folder tree.
fn remove_all(path: &Path) -> Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let removed = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    removed.map_err(|e| IsolationError::io("removing", path, e))
}

/// A path as a gitignore pattern that matches it literally.
fn escape_pattern(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for c in rel.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    if out.ends_with(' ') {
        out.insert(out.len() - 1, '\\');
    }
    out
}

/// One entry of `git diff-tree -r --raw`.
#[derive(Debug)]
struct Change {
    /// `A`, `M`, `D` or `T`.
    status: char,
    /// The new mode (`100644`, `100755`, `120000`, `160000`; `000000` when deleted).
    mode: String,
    /// The new blob.
    blob: String,
    /// The project-relative path.
    path: String,
}

impl Integration {
    /// `--apply` on a shadow repository: write base..tip into the project
    /// folder as files (see [`Integration::apply`]).
    pub(crate) fn apply_files(&self) -> Result<Applied> {
        let repo = &self.repo;
        let base = self.state.base.clone();
        let tip = self.tip()?;
        let command = format!(
            "git --git-dir={} diff --binary {base} {} | git apply",
            quoted(repo.common_dir().as_os_str()),
            self.state.branch
        );
        let refuse = |reason: String| {
            Err(IsolationError::Refused {
                reason,
                command: command.clone(),
            })
        };
        let base_tree = repo.tree_of(&base)?;
        let tip_tree = repo.tree_of(&tip)?;
        let work = diff_tree(repo, &base_tree, &tip_tree)?;
        remove_apply_leftovers(repo.work_tree(), &work)?;
        let now = snapshot_tree(repo, &base, &self.state.exclude)?;
        let moved = diff_tree(repo, &base_tree, &now)?;
        // Paths where the folder differs from the session's result.
        let pending: BTreeSet<String> = diff_tree(repo, &tip_tree, &now)?
            .into_iter()
            .map(|c| c.path)
            .collect();
        let work_paths: BTreeSet<&str> = work.iter().map(|c| c.path.as_str()).collect();
        // A file the folder changed is fine only when it already holds the
        // session's version (an apply cut short); anything else is the
        // user's, and is not overwritten.
        let foreign: Vec<String> = moved
            .iter()
            .filter(|c| !work_paths.contains(c.path.as_str()) || pending.contains(&c.path))
            .map(|c| format!("{} {}", c.status, c.path))
            .collect();
        if !foreign.is_empty() {
            return refuse(format!(
                "the project folder changed since the session started ({}); the session's \
                 work was made on the files as they were",
                listed(&foreign)
            ));
        }
        let todo: Vec<&Change> = work.iter().filter(|c| pending.contains(&c.path)).collect();
        let top = repo.work_tree();
        // A new file where the folder has one the snapshot never saw (an
        // ignored file): not overwritten.
        let hidden: Vec<String> = todo
            .iter()
            .filter(|c| c.status == 'A' && fs::symlink_metadata(top.join(&c.path)).is_ok())
            .filter(|c| !moved.iter().any(|m| m.path == c.path))
            .map(|c| c.path.clone())
            .collect();
        if !hidden.is_empty() {
            return refuse(format!(
                "the session adds files the project folder already has, outside its snapshot \
                 (ignored files): {}",
                listed(&hidden)
            ));
        }
        let mut files = AppliedFiles::default();
        for c in todo.iter().filter(|c| c.status == 'D') {
            let path = checked(top, &c.path)?;
            remove_all(&path)?;
            remove_empty_parents(top, &path);
            files.deleted.push(c.path.clone());
        }
        for c in todo.iter().filter(|c| c.status != 'D') {
            if c.mode == "160000" {
                // A submodule commit has no files to write.
                continue;
            }
            let bytes = repo.git().args(["cat-file", "blob", &c.blob]).run()?;
            write_entry(top, &c.path, &c.mode, &bytes)?;
            files.written.push(c.path.clone());
        }
        Ok(Applied {
            branch: String::new(),
            from: base,
            to: tip,
            uncommitted: false,
            files: Some(files),
        })
    }
}

/// The first ten of `items`, joined, with how many more there are.
fn listed(items: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut s = items
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        s = format!("{s}, … and {} more", items.len() - SHOWN);
    }
    s
}

/// `git diff-tree -r --raw --no-renames` between two trees, by path.
fn diff_tree(repo: &Repo, from: &str, to: &str) -> Result<Vec<Change>> {
    let cmd = repo.git().args([
        "diff-tree",
        "-r",
        "-z",
        "--raw",
        "--no-renames",
        "--no-abbrev",
        from,
        to,
        "--",
    ]);
    let line = cmd.line();
    let fields = git::split_nul(&cmd.run()?);
    let mut changes = BTreeMap::new();
    let mut it = fields.into_iter();
    while let Some(meta) = it.next() {
        let path = it.next();
        // `:<old mode> <new mode> <old blob> <new blob> <status>`
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let (Some(path), [_, mode, _, blob, status]) = (path, parts.as_slice()) else {
            return Err(IsolationError::Git(GitError::Unexpected {
                command: line,
                output: meta.clone(),
                expected: "`:<mode> <mode> <blob> <blob> <status>` then a path",
            }));
        };
        let status = status.chars().next().unwrap_or('M');
        changes.insert(
            path.clone(),
            Change {
                status,
                mode: (*mode).to_owned(),
                blob: (*blob).to_owned(),
                path,
            },
        );
    }
    Ok(changes.into_values().collect())
}

/// `top/rel`, after checking `rel` is a plain relative path.
fn checked(top: &Path, rel: &str) -> Result<PathBuf> {
    let ok = !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(s) if s != ".git"));
    if !ok {
        return Err(IsolationError::InvalidPath {
            what: "apply",
            given: rel.to_owned(),
            problem: "it is not a plain relative path",
        });
    }
    Ok(top.join(rel))
}

/// Remove the temporary files a killed apply left next to the files it
/// writes (`.wavecrew-apply-*`, in the folders of `work`).
fn remove_apply_leftovers(top: &Path, work: &[Change]) -> Result<()> {
    let folders: BTreeSet<PathBuf> = work
        .iter()
        .filter_map(|c| top.join(&c.path).parent().map(Path::to_owned))
        .collect();
    for folder in folders {
        let Ok(entries) = fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(APPLY_PREFIX)
            {
                remove_all(&entry.path())?;
            }
        }
    }
    Ok(())
}

/// Remove the folders above `path` that are now empty, up to `top`.
fn remove_empty_parents(top: &Path, path: &Path) {
    let mut parent = path.parent();
    while let Some(p) = parent {
        if p == top || !p.starts_with(top) || fs::remove_dir(p).is_err() {
            break;
        }
        parent = p.parent();
    }
}

/// Write one file of the session's result into the folder, atomically (a
/// temporary file next to it, renamed over it): a regular file with its
/// executable bit as `mode` says, or a symlink.
fn write_entry(top: &Path, rel: &str, mode: &str, bytes: &[u8]) -> Result<()> {
    let dst = checked(top, rel)?;
    let parent = dst.parent().unwrap_or(top).to_owned();
    fs::create_dir_all(&parent).map_err(|e| IsolationError::io("creating", &parent, e))?;
    // A symlinked folder on the way must not lead the write elsewhere.
    if !canonical(&parent).starts_with(canonical(top)) {
        return Err(IsolationError::InvalidPath {
            what: "apply",
            given: rel.to_owned(),
            problem: "it would be written outside the project folder (through a symlink)",
        });
    }
    if let Ok(meta) = fs::symlink_metadata(&dst)
        && meta.is_dir()
    {
        // A folder the session replaced with a file; what is left in it is
        // not the session's, so it must be empty.
        fs::remove_dir(&dst).map_err(|e| IsolationError::io("removing", &dst, e))?;
    }
    if mode == "120000" {
        let target = OsStr::from_bytes(bytes);
        let tmp = tempfile::Builder::new()
            .prefix(APPLY_PREFIX)
            .make_in(&parent, |p| std::os::unix::fs::symlink(target, p))
            .map_err(|e| IsolationError::io("creating a symlink in", &parent, e))?;
        tmp.persist(&dst)
            .map_err(|e| IsolationError::io("renaming onto", &dst, e.error))?;
        return Ok(());
    }
    let old = fs::symlink_metadata(&dst)
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|m| m.permissions().mode() & 0o777);
    let exec = mode == "100755";
    let perm = match old {
        Some(m) if exec => m | ((m & 0o444) >> 2),
        Some(m) => m & !0o111,
        None if exec => 0o755,
        None => 0o644,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(APPLY_PREFIX)
        .tempfile_in(&parent)
        .map_err(|e| IsolationError::io("creating a temp file in", &parent, e))?;
    tmp.write_all(bytes)
        .map_err(|e| IsolationError::io("writing", tmp.path(), e))?;
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(perm))
        .map_err(|e| IsolationError::io("setting the mode of", tmp.path(), e))?;
    tmp.persist(&dst)
        .map_err(|e| IsolationError::io("renaming onto", &dst, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_literally() {
        assert_eq!(escape_pattern(".env"), ".env");
        assert_eq!(escape_pattern("a*b?[c]"), "a\\*b\\?\\[c]");
        assert_eq!(escape_pattern("!x#"), "\\!x\\#");
        assert_eq!(escape_pattern("trailing "), "trailing\\ ");
    }

    #[test]
    fn only_plain_relative_paths_are_written() {
        let top = Path::new("/p");
        assert_eq!(checked(top, "a/b").unwrap(), Path::new("/p/a/b"));
        for bad in ["", "../x", "/etc/x", "a/../b", ".git/config", "a/./b/.git"] {
            assert!(checked(top, bad).is_err(), "{bad:?}");
        }
    }
}
