//! What travels besides the repository: the [`SessionKit`] (the session's
//! inputs, out to every host) and the [`AttemptPack`] (an attempt's files
//! and bus records, back to the coordinator). Both are JSON objects in the
//! session's object store.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use wavecrew_core::{NewMessage, RoleEntry, TaskStatus};
use wavecrew_engine_nats::Objects;

use crate::error::{FleetError, Result};

/// The kit's object name.
const KIT_OBJECT: &str = "session-kit.json";

/// Files larger than this stay home (logs, binaries): the kit carries inputs.
const MAX_KIT_FILE: u64 = 1 << 20;

/// Top-level entries of a session folder that are state, not inputs.
const NOT_INPUTS: [&str; 9] = [
    "tasks",
    "attempts",
    "workers",
    "reports",
    ".msg",
    "shadow.git",
    "worktrees",
    "fleet",
    "integration.json",
];

/// What a host needs of the session to run its role binaries: the session
/// folder's inputs (team-session.json, roles, plan files, artifacts as they
/// were when the coordinator started), its place in the project, and the
/// configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionKit {
    /// The session id.
    pub session_id: String,
    /// The session folder, relative to the project root
    /// (`.workflow/.team/<id>`), `/`-separated.
    pub session_rel: String,
    /// The session's roles (which binary takes a task).
    pub roles: Vec<RoleEntry>,
    /// The text of the coordinator's `wavecrew.toml`, if it has one.
    pub config: Option<String>,
    /// The session folder's input files, by `/`-separated relative path.
    pub files: BTreeMap<String, String>,
}

impl SessionKit {
    /// Collect the kit of `session_dir` (inside `project_root`).
    pub fn collect(
        project_root: &Path,
        session_dir: &Path,
        session_id: &str,
        roles: Vec<RoleEntry>,
        config_file: Option<&Path>,
    ) -> Result<SessionKit> {
        let rel = session_dir
            .strip_prefix(project_root)
            .map_err(|_| FleetError::Invalid {
                what: session_dir.display().to_string(),
                message: format!(
                    "the session folder is not inside the project {}",
                    project_root.display()
                ),
            })?;
        let session_rel = slash_path(rel)?;
        let config = match config_file {
            Some(file) => Some(
                std::fs::read_to_string(file).map_err(|e| FleetError::io("reading", file, e))?,
            ),
            None => None,
        };
        let mut files = BTreeMap::new();
        collect_files(session_dir, session_dir, &mut files)?;
        Ok(SessionKit {
            session_id: session_id.to_owned(),
            session_rel,
            roles,
            config,
            files,
        })
    }

    /// Store the kit in the session's object store.
    pub async fn upload(&self, objects: &Objects, scratch: &Path) -> Result<()> {
        put_json(objects, KIT_OBJECT, self, scratch).await
    }

    /// Read the kit from the session's object store.
    pub async fn download(objects: &Objects, scratch: &Path) -> Result<SessionKit> {
        get_json(objects, KIT_OBJECT, scratch).await
    }

    /// Write the session folder's inputs under `project` (a worktree);
    /// returns the session folder there.
    pub fn write_into(&self, project: &Path) -> Result<PathBuf> {
        let dir = project.join(checked_rel(&self.session_rel)?);
        for (rel, text) in &self.files {
            let path = dir.join(checked_rel(rel)?);
            write_file(&path, text.as_bytes())?;
        }
        std::fs::create_dir_all(wavecrew_core::SessionLayout::new(&dir).tasks())
            .map_err(|e| FleetError::io("creating", &dir, e))?;
        Ok(dir)
    }
}

/// An attempt as it comes back from a host: what it wrote in its session
/// folder (attempt records, worker log, artifacts) and its bus records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptPack {
    /// The task.
    pub task: String,
    /// The attempt (the task's `attempts` after the host's claim).
    pub attempt: u32,
    /// The host that ran it.
    pub host: String,
    /// How the role binary ended the task.
    pub status: TaskStatus,
    /// The attempt's last commit, when it changed the project.
    pub commit: Option<String>,
    /// The files, by `/`-separated path relative to the session folder.
    pub files: BTreeMap<String, String>,
    /// The bus records the host could not stream while the attempt ran
    /// (a host publishes each as it is written), in the order they
    /// were written.
    pub records: Vec<Value>,
    /// The index of the first of `records` among all the attempt's records
    /// (those before it were streamed): the coordinator publishes record
    /// `n` as `<task>:<attempt>:<n>`, the id the host streamed it under, so
    /// none lands twice.
    #[serde(default)]
    pub records_from: usize,
}

impl AttemptPack {
    /// The object name of attempt `attempt` of `task`.
    pub fn object(task: &str, attempt: u32) -> String {
        format!("pack-{task}-{attempt}.json")
    }

    /// Store the pack.
    pub async fn upload(&self, objects: &Objects, scratch: &Path) -> Result<String> {
        let name = AttemptPack::object(&self.task, self.attempt);
        put_json(objects, &name, self, scratch).await?;
        Ok(name)
    }

    /// Read a pack.
    pub async fn download(objects: &Objects, name: &str, scratch: &Path) -> Result<AttemptPack> {
        get_json(objects, name, scratch).await
    }

    /// Collect what attempt `attempt` of `task` left in `session_dir`:
    /// `attempts/<task>/`, `workers/<task>.log`, files under `artifacts/`
    /// changed since `since`, and every bus record.
    pub fn collect(
        session_dir: &Path,
        task: &str,
        since: std::time::SystemTime,
        streamed: usize,
    ) -> Result<(BTreeMap<String, String>, Vec<Value>)> {
        let mut files = BTreeMap::new();
        let layout = wavecrew_core::SessionLayout::new(session_dir);
        let attempts = layout.attempts(task);
        if attempts.is_dir() {
            collect_files(session_dir, &attempts, &mut files)?;
        }
        let log = layout.worker_log(task);
        if let Ok(bytes) = std::fs::read(&log) {
            files.insert(
                format!("workers/{task}.log"),
                String::from_utf8_lossy(&bytes).into_owned(),
            );
        }
        let artifacts = layout.artifacts();
        if artifacts.is_dir() {
            let mut all = BTreeMap::new();
            collect_files(session_dir, &artifacts, &mut all)?;
            for (rel, text) in all {
                let changed = std::fs::metadata(session_dir.join(&rel))
                    .and_then(|m| m.modified())
                    .is_ok_and(|m| m >= since);
                if changed {
                    files.insert(rel, text);
                }
            }
        }
        let log = wavecrew_msgbus::BusPaths::log_in(session_dir);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let records = text.lines().filter_map(record_of).skip(streamed).collect();
        Ok((files, records))
    }

    /// Write the files into `session_dir`, each atomically; `outcome.json`
    /// files gain the host. The host numbered its attempt folders from 1
    /// (`attempts/<task>/<k>/`): here they follow the `after` folders the
    /// session already holds for the task.
    pub fn write_files(&self, session_dir: &Path, after: u32) -> Result<()> {
        let prefix = format!("attempts/{}/", self.task);
        for (rel, text) in &self.files {
            let rel = match rel.strip_prefix(&prefix).and_then(|r| r.split_once('/')) {
                Some((k, rest)) => match k.parse::<u32>() {
                    Ok(k) => format!("{prefix}{}/{rest}", k + after),
                    Err(_) => rel.clone(),
                },
                None => rel.clone(),
            };
            let path = session_dir.join(checked_rel(&rel)?);
            let bytes = if rel.ends_with("/outcome.json") {
                with_host(text, &self.host)
            } else {
                text.clone().into_bytes()
            };
            write_file(&path, &bytes)?;
        }
        Ok(())
    }

    /// The records as the bus takes them (ids and times are given again
    /// where they land), each tagged with the host, with its index among
    /// all the attempt's records (the `n` of its id `<task>:<attempt>:<n>`).
    pub fn messages(&self) -> Vec<(usize, NewMessage)> {
        self.records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((self.records_from + i, host_message(r, &self.host)?)))
            .collect()
    }
}

/// One line of a bus log as a record (a JSON object), or `None`.
pub(crate) fn record_of(line: &str) -> Option<Value> {
    serde_json::from_str::<Value>(line)
        .ok()
        .filter(Value::is_object)
}

/// A record a host's role wrote, as the session's bus takes it (its id and
/// time are given again where it lands), tagged with the host; `None` for
/// a record without a sender.
pub(crate) fn host_message(record: &Value, host: &str) -> Option<NewMessage> {
    let text = |k: &str| record.get(k).and_then(Value::as_str).map(str::to_owned);
    let from = text("from")?;
    let mut data = record
        .get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(Map::new);
    data.insert("host".into(), Value::String(host.to_owned()));
    // When the host wrote it: the record lands stamped with the time it
    // lands, and the two tell how late it came.
    if let Some(ts) = record.get("ts").filter(|t| t.is_string()) {
        data.insert("host_ts".into(), ts.clone());
    }
    Some(NewMessage {
        from,
        to: text("to"),
        kind: text("type"),
        summary: text("summary"),
        data: Some(data),
        reference: None,
    })
}

/// `outcome.json` with `"host"` added (unchanged when it is not an object).
fn with_host(text: &str, host: &str) -> Vec<u8> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut map)) => {
            map.insert("host".into(), Value::String(host.to_owned()));
            serde_json::to_vec_pretty(&Value::Object(map)).unwrap_or_else(|_| text.into())
        }
        _ => text.as_bytes().to_vec(),
    }
}

async fn put_json<T: Serialize>(
    objects: &Objects,
    name: &str,
    value: &T,
    scratch: &Path,
) -> Result<()> {
    let file = tempfile::NamedTempFile::new_in(scratch)
        .map_err(|e| FleetError::io("creating a file in", scratch, e))?;
    let bytes = serde_json::to_vec(value).map_err(|e| FleetError::Invalid {
        what: name.to_owned(),
        message: e.to_string(),
    })?;
    std::fs::write(file.path(), bytes).map_err(|e| FleetError::io("writing", file.path(), e))?;
    objects.put_file(name, file.path()).await?;
    Ok(())
}

async fn get_json<T: serde::de::DeserializeOwned>(
    objects: &Objects,
    name: &str,
    scratch: &Path,
) -> Result<T> {
    let dir = tempfile::tempdir_in(scratch)
        .map_err(|e| FleetError::io("creating a folder in", scratch, e))?;
    let path = dir.path().join("object.json");
    objects.get_file(name, &path).await?;
    let bytes = std::fs::read(&path).map_err(|e| FleetError::io("reading", &path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| FleetError::Invalid {
        what: format!("object {name} in {}", objects.bucket()),
        message: format!("{e}; expected JSON written by wavecrew"),
    })
}

/// Every regular UTF-8 file under `dir` (recursively), keyed by its path
/// relative to `base`; state folders at the top of `base` are skipped.
fn collect_files(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| FleetError::io("listing", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| FleetError::io("listing", dir, e))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| FleetError::io("reading", &path, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if dir == base && NOT_INPUTS.contains(&name.as_str()) {
            continue;
        }
        if kind.is_dir() {
            collect_files(base, &path, out)?;
        } else if kind.is_file() {
            let size = entry.metadata().map_or(u64::MAX, |m| m.len());
            let lock = path.extension().is_some_and(|e| e == "lock") || name == ".lock";
            if size > MAX_KIT_FILE || lock {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let rel = path.strip_prefix(base).unwrap_or(&path);
            out.insert(slash_path(rel)?, text);
        }
    }
    Ok(())
}

/// A relative path as `a/b/c`.
fn slash_path(rel: &Path) -> Result<String> {
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => {
                return Err(FleetError::Invalid {
                    what: rel.display().to_string(),
                    message: "expected a plain relative path".into(),
                });
            }
        }
    }
    Ok(parts.join("/"))
}

/// A `/`-separated relative path from a message, refused when it could
/// leave its folder (absolute, `..`, empty).
fn checked_rel(rel: &str) -> Result<PathBuf> {
    let path = Path::new(rel);
    let plain = !rel.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(path.to_owned())
    } else {
        Err(FleetError::Invalid {
            what: format!("the path {rel:?}"),
            message: "expected a relative path inside the session folder (no `..`, not absolute)"
                .into(),
        })
    }
}

/// Write `bytes` to `path` atomically, creating its folder.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| FleetError::io("creating", parent, e))?;
    }
    wavecrew_core::fsutil::write_atomic(path, bytes).map_err(FleetError::Core)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_from_messages_stay_inside() {
        assert!(checked_rel("attempts/IMPL-001/1/prompt.md").is_ok());
        for bad in ["", "../x", "/etc/passwd", "a/../../b"] {
            assert!(checked_rel(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_kit_carries_inputs_not_state() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let session = root.join(".workflow/.team/TC-x");
        for (rel, text) in [
            ("team-session.json", "{}"),
            ("roles/reviewer.md", "# reviewer"),
            ("tasks/IMPL-001.json", "{}"),
            (".msg/messages.jsonl", ""),
            ("attempts/IMPL-001/1/prompt.md", "p"),
        ] {
            write_file(&session.join(rel), text.as_bytes()).unwrap();
        }
        let kit = SessionKit::collect(root, &session, "TC-x", Vec::new(), None).unwrap();
        assert_eq!(kit.session_rel, ".workflow/.team/TC-x");
        let names: Vec<&str> = kit.files.keys().map(String::as_str).collect();
        assert_eq!(names, ["roles/reviewer.md", "team-session.json"]);
        let other = tempfile::tempdir().unwrap();
        let dir = kit.write_into(other.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("roles/reviewer.md")).unwrap(),
            "# reviewer"
        );
    }

    #[test]
    fn outcome_files_gain_the_host() {
        let tmp = tempfile::tempdir().unwrap();
        let pack = AttemptPack {
            task: "IMPL-001".into(),
            attempt: 2,
            host: "host-b".into(),
            status: TaskStatus::Completed,
            commit: None,
            files: [
                ("attempts/IMPL-001/1/outcome.json", "{}"),
                ("attempts/IMPL-001/2/prompt.md", "p"),
                ("workers/IMPL-001.log", "log"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            records: Vec::new(),
            records_from: 0,
        };
        pack.write_files(tmp.path(), 3).unwrap();
        let dir = tmp.path().join("attempts/IMPL-001");
        let outcome: Value =
            serde_json::from_slice(&std::fs::read(dir.join("4/outcome.json")).unwrap()).unwrap();
        assert_eq!(outcome["host"], "host-b");
        assert!(dir.join("5/prompt.md").is_file());
        assert!(tmp.path().join("workers/IMPL-001.log").is_file());
        let out = with_host(r#"{"outcome":"success"}"#, "host-b");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["host"], "host-b");
        assert_eq!(with_host("not json", "h"), b"not json");
    }
}
