//! The merge queue of an isolated session (`[isolation] mode =
//! "worktree"`): each task's branch, base, merge commit and conflicts (from
//! its result and its `task_merged` / `merge_conflict` bus records), and
//! the session's integration branch `wavecrew/<session-id>` with what
//! landed on it, what waits to land, what conflicted or is blocked, and how
//! to take the work.
//!
//! What landed is read from git when the repository is there (the
//! `Wavecrew-Task` trailers on the branch, in landing order, through
//! [`wavecrew_isolation::Inspection`], which changes nothing); otherwise
//! from the tasks' results. A session without `integration.json` ran in
//! place and has no merge queue. A malformed field is shown as missing.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use wavecrew_isolation::{Inspection, Repo};

use crate::task::{AWAITING_REVIEW, TaskReport};
pub use crate::task::{Conflict, MergeEvent, TaskMerge, UpstreamCommit};

mod text;

pub(crate) use text::{blocked_reason, take_sentence, with_text};
pub use text::{queue_markdown, queue_text};

/// A commit id shortened for people (12 hex digits, as git's messages in
/// wavecrew show them).
pub fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn conflict(v: &Value) -> Option<Conflict> {
    let o = v.as_object()?;
    let upstream: Vec<UpstreamCommit> = o
        .get("upstream")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|u| match u {
                    // The first shape: the commit alone.
                    Value::String(c) => Some(UpstreamCommit {
                        commit: Some(c.clone()),
                        subject: None,
                        task: None,
                    }),
                    Value::Object(u) => Some(UpstreamCommit {
                        commit: string(u.get("commit")),
                        subject: string(u.get("subject")),
                        task: string(u.get("task")),
                    }),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut with = strings(o.get("with"));
    if with.is_empty() {
        with = upstream.iter().filter_map(|u| u.task.clone()).collect();
        with.sort();
        with.dedup();
    }
    Some(Conflict {
        files: strings(o.get("files")),
        with,
        upstream,
        messages: string(o.get("messages")),
    })
}

fn event(m: &Value) -> Option<MergeEvent> {
    let kind = match m["type"].as_str()? {
        "task_merged" => "merged",
        "merge_conflict" => "conflict",
        "merge_rejected" => "rejected",
        _ => return None,
    };
    let data = m.get("data");
    Some(MergeEvent {
        ts: m["ts"].as_str()?.to_owned(),
        kind: kind.to_owned(),
        commit: string(data.and_then(|d| d.get("merge_commit"))),
        files: strings(data.and_then(|d| d.get("files"))),
        with: strings(data.and_then(|d| d.get("with"))),
        command: string(data.and_then(|d| d.get("command"))),
        revision: data
            .and_then(|d| d.get("revision"))
            .and_then(Value::as_bool),
    })
}

/// A task's merge facts from its result and its bus records; None when it
/// has none (it ran in place, or has not finished an isolated attempt).
pub fn task_merge(result: Option<&Value>, records: &[&Value]) -> Option<TaskMerge> {
    let field = |k: &str| result.and_then(|r| r.get(k));
    let merge = TaskMerge {
        branch: string(field("branch")),
        base: string(field("base")),
        merge_commit: string(field("merge_commit")),
        conflict: field("conflict").and_then(conflict),
        conflicts: field("conflicts")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(conflict).collect())
            .unwrap_or_default(),
        rejected_by: string(field("verify").and_then(|v| v.get("command"))),
        events: records.iter().filter_map(|m| event(m)).collect(),
    };
    (merge != TaskMerge::default()).then_some(merge)
}

/// A task on the integration branch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LandedEntry {
    /// The task.
    pub task: String,
    /// The commit that landed it.
    pub commit: String,
    /// When (its `task_merged` record), when known.
    pub at: Option<String>,
}

/// A task at work in its own worktree, not landed yet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitingEntry {
    /// The task.
    pub task: String,
    /// The branch of its latest attempt, when known.
    pub branch: Option<String>,
    /// How many conflicts it met so far (it is revising after the last).
    pub conflicts: usize,
}

/// One conflict of one task, with what came of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConflictEntry {
    /// The task.
    pub task: String,
    /// The conflicted files.
    pub files: Vec<String>,
    /// The tasks it conflicts with.
    pub with: Vec<String>,
    /// `revised` (a revision followed), `revising` (one is under way),
    /// `blocked` (the task needs a person) or `failed`.
    pub outcome: String,
}

/// A task stopped on the way in: blocked, or failed on a conflict or on
/// `[integration] verify`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockedEntry {
    /// The task.
    pub task: String,
    /// Its state (`blocked`, `failed`).
    pub state: String,
    /// The files of the conflict it ended on.
    pub files: Vec<String>,
    /// The tasks that conflict is with.
    pub with: Vec<String>,
    /// Its error, when recorded.
    pub error: Option<String>,
}

/// The session's integration branch and its merge queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeQueue {
    /// The integration branch, `wavecrew/<session-id>`.
    pub branch: String,
    /// The commit it started from.
    pub base: Option<String>,
    /// Whether that is a snapshot of the uncommitted changes at the start.
    pub snapshot: bool,
    /// Its current commit; None when git was not read or the branch is gone.
    pub tip: Option<String>,
    /// The session's shadow repository, where the branch lives when the
    /// project folder has no git (`<session>/shadow.git`); None otherwise.
    pub shadow_repository: Option<PathBuf>,
    /// Where `landed` comes from: `git` (the branch's trailers) or
    /// `results` (the tasks' `merge_commit`).
    pub landed_from: String,
    /// The tasks that landed, in landing order.
    pub landed: Vec<LandedEntry>,
    /// Tasks at work in their own worktrees, not landed yet.
    pub waiting: Vec<WaitingEntry>,
    /// Tasks whose validated work waits, committed on its branch, for a
    /// person's review (`wavecrew approve` or `wavecrew reject`).
    pub awaiting_review: Vec<WaitingEntry>,
    /// Every conflict met, per task in id order.
    pub conflicts: Vec<ConflictEntry>,
    /// Tasks blocked, or failed on a conflict or on `[integration] verify`.
    pub blocked: Vec<BlockedEntry>,
    /// The commands that take the work, either one does (`git merge
    /// wavecrew/<id>`, `wavecrew run <session> --apply`; only the second
    /// for a shadow repository); empty when the branch is gone.
    pub take: Vec<String>,
    /// Why git was not read, or what is odd about the branch.
    pub note: Option<String>,
}

/// What `integration.json` says (its fields as
/// `wavecrew_isolation::Integration` writes them), read leniently.
struct StateFile {
    branch: Option<String>,
    base: Option<String>,
    snapshot: bool,
}

fn read_state(path: &Path) -> Result<StateFile, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    Ok(StateFile {
        branch: string(v.get("branch")),
        base: string(v.get("base")),
        snapshot: v.get("snapshot").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// The branch of the newest attempt recorded in
/// `<session>/worktrees/<task>/<n>.json`, when one is readable.
fn worktree_branch(session_dir: &Path, task: &str) -> Option<String> {
    let dir = session_dir.join("worktrees").join(task);
    let (_, path) = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let n: u32 = name.strip_suffix(".json")?.parse().ok()?;
            Some((n, e.path()))
        })
        .max_by_key(|(n, _)| *n)?;
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    string(v.get("branch"))
}

/// How to name the session folder in a command: relative to the
/// repository's top when it is inside it, else as it is.
fn session_arg(session_dir: &Path, top: Option<&Path>) -> String {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
    let dir = canon(session_dir);
    if let Some(rel) = top.and_then(|t| dir.strip_prefix(canon(t)).ok()) {
        return rel.display().to_string();
    }
    let mut parts: Vec<String> = dir
        .components()
        .rev()
        .take(3)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.reverse();
    if parts.len() == 3 && parts[0] == ".workflow" && parts[1] == ".team" {
        return PathBuf::from_iter(parts).display().to_string();
    }
    dir.display().to_string()
}

fn parse_ts(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

/// The merge queue of the session in `session_dir`, or None when it ran in
/// place (no `integration.json`). Fills in each task's merge commit from
/// git when its result lacks one.
pub fn collect_queue(
    session_dir: &Path,
    session_id: &str,
    tasks: &mut [TaskReport],
) -> Option<MergeQueue> {
    let state_file = session_dir.join(wavecrew_isolation::STATE_FILE);
    if !state_file.exists() {
        return None;
    }
    let mut notes: Vec<String> = Vec::new();
    let state = read_state(&state_file).unwrap_or_else(|e| {
        notes.push(format!("{}: {e}", state_file.display()));
        StateFile {
            branch: None,
            base: None,
            snapshot: false,
        }
    });
    let mut branch = state
        .branch
        .unwrap_or_else(|| format!("{}{session_id}", wavecrew_isolation::BRANCH_PREFIX));
    let mut base = state.base;
    let mut snapshot = state.snapshot;
    let mut tip = None;
    let mut top = None;
    let mut shadow_repository = None;
    let mut from_git: Option<Vec<LandedEntry>> = None;
    let mut gone = false;
    // A folder without git: its session's shadow repository.
    let opened = match Repo::open(session_dir) {
        Ok(None) => Repo::open_shadow(session_dir),
        other => other,
    };
    match opened {
        Ok(Some(repo)) => {
            top = Some(repo.work_tree().to_owned());
            if repo.is_shadow() {
                shadow_repository = Some(repo.common_dir().to_owned());
            }
            match Inspection::read(&repo, session_dir) {
                Ok(Some(seen)) => {
                    branch = seen.branch;
                    base = Some(seen.base);
                    snapshot = seen.snapshot;
                    if seen.tip.is_none() {
                        gone = true;
                        notes.push(format!(
                            "branch {branch} no longer exists (deleted after its work was \
                             taken?); what landed is read from the task results"
                        ));
                    }
                    tip = seen.tip;
                    if tip.is_some() {
                        from_git = Some(
                            seen.landed
                                .into_iter()
                                .map(|l| LandedEntry {
                                    task: l.task,
                                    commit: l.commit,
                                    at: None,
                                })
                                .collect(),
                        );
                    }
                }
                Ok(None) => notes.push(format!("{} is gone", state_file.display())),
                Err(e) => notes.push(format!(
                    "cannot read the integration branch: {e}; what landed is read from the task results"
                )),
            }
        }
        Ok(None) => notes.push(
            "the session folder is not in a git work tree and has no shadow repository; what \
             landed is read from the task results"
                .into(),
        ),
        Err(e) => notes.push(format!(
            "cannot open the repository: {e}; what landed is read from the task results"
        )),
    }
    let by_id: HashMap<String, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.clone(), i))
        .collect();
    let landed_from = if from_git.is_some() { "git" } else { "results" };
    let mut landed = match from_git {
        Some(l) => l,
        None => landed_from_results(tasks),
    };
    for l in &mut landed {
        let Some(&i) = by_id.get(&l.task) else {
            continue;
        };
        let t = &mut tasks[i];
        let merge = t.merge.get_or_insert_with(TaskMerge::default);
        if merge.merge_commit.is_none() {
            merge.merge_commit = Some(l.commit.clone());
        }
        l.at = merge.landed_at().map(str::to_owned);
    }
    let landed_ids: HashSet<&str> = landed.iter().map(|l| l.task.as_str()).collect();
    let mut waiting = Vec::new();
    let mut awaiting_review = Vec::new();
    let mut conflicts = Vec::new();
    let mut blocked = Vec::new();
    for t in tasks.iter() {
        let all = t
            .merge
            .as_ref()
            .map(TaskMerge::all_conflicts)
            .unwrap_or_default();
        if t.state == AWAITING_REVIEW {
            awaiting_review.push(WaitingEntry {
                task: t.id.clone(),
                branch: worktree_branch(session_dir, &t.id)
                    .or_else(|| t.merge.as_ref().and_then(|m| m.branch.clone())),
                conflicts: all.len(),
            });
        }
        if t.state == "in_progress" && !landed_ids.contains(t.id.as_str()) {
            // Its own worktree (a record of one), or merge facts already.
            let isolated = session_dir.join("worktrees").join(&t.id).is_dir();
            if isolated || t.merge.is_some() {
                waiting.push(WaitingEntry {
                    task: t.id.clone(),
                    branch: worktree_branch(session_dir, &t.id)
                        .or_else(|| t.merge.as_ref().and_then(|m| m.branch.clone())),
                    conflicts: all.len(),
                });
            }
        }
        for (i, c) in all.iter().enumerate() {
            let outcome = if i + 1 < all.len() {
                "revised"
            } else {
                match t.state.as_str() {
                    "blocked" => "blocked",
                    "failed" => "failed",
                    "in_progress" | "pending" => "revising",
                    _ => "revised",
                }
            };
            conflicts.push(ConflictEntry {
                task: t.id.clone(),
                files: c.files.clone(),
                with: c.with.clone(),
                outcome: outcome.to_owned(),
            });
        }
        let ended_on = t
            .merge
            .as_ref()
            .and_then(|m| m.conflict.clone())
            .or_else(|| {
                (t.state == "blocked")
                    .then(|| all.last().cloned())
                    .flatten()
            });
        let rejected = t.merge.as_ref().is_some_and(|m| m.rejected_by.is_some());
        if t.state == "blocked" || (t.state == "failed" && (ended_on.is_some() || rejected)) {
            let (files, with) = ended_on.map(|c| (c.files, c.with)).unwrap_or_default();
            blocked.push(BlockedEntry {
                task: t.id.clone(),
                state: t.state.clone(),
                files,
                with,
                error: t.error.clone(),
            });
        }
    }
    let apply = format!(
        "wavecrew run {} --apply",
        session_arg(session_dir, top.as_deref())
    );
    let take = if gone {
        Vec::new()
    } else if shadow_repository.is_some() {
        vec![apply]
    } else {
        vec![format!("git merge {branch}"), apply]
    };
    Some(MergeQueue {
        branch,
        base,
        snapshot,
        tip,
        shadow_repository,
        landed_from: landed_from.to_owned(),
        landed,
        waiting,
        awaiting_review,
        conflicts,
        blocked,
        take,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}

/// The tasks whose results name a merge commit, in the order their
/// `task_merged` records came (then when they ended, then by id).
fn landed_from_results(tasks: &[TaskReport]) -> Vec<LandedEntry> {
    let mut out: Vec<(Option<jiff::Timestamp>, LandedEntry)> = tasks
        .iter()
        .filter_map(|t| {
            let m = t.merge.as_ref()?;
            let commit = m.merge_commit.clone()?;
            let at = m.landed_at().map(str::to_owned);
            let when = at.as_deref().or(t.ended_at.as_deref()).and_then(parse_ts);
            Some((
                when,
                LandedEntry {
                    task: t.id.clone(),
                    commit,
                    at,
                },
            ))
        })
        .collect();
    // Known times first, in time order; the rest by id (already so).
    out.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    out.into_iter().map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests;
