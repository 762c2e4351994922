//! `meta.json`: the team's metadata and `role_state`, and the effective meta
//! that `get_state` and `state_update` see (ccw-compat §2.2, §3.5, §3.6).
//!
//! The meta is kept as a JSON object so keys wavecrew does not know survive a
//! rewrite. Two differences from ccw, both safe for ccw readers: meta.json is
//! replaced atomically under the bus lock (ccw rewrote it in place, with no
//! lock), and a `shutdown` record makes the status `completed` even when
//! meta.json exists (ccw's status stayed `active` forever, §7 item 5).

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{BusError, Result};
use crate::paths::BusPaths;
use crate::time;

/// The root fields a `state_update` copies from `data` to the meta root.
pub const ROOT_FIELDS: [&str; 5] = [
    "pipeline_mode",
    "pipeline_stages",
    "team_name",
    "task_description",
    "roles",
];

/// What the effective meta needs to know about the log.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogFacts {
    /// The `type` of the last record.
    pub last_type: Option<String>,
    /// The `ts` of the last record.
    pub last_ts: Option<String>,
}

/// Read meta.json as an object, or `None` when missing or unparsable.
pub(crate) fn read_meta(paths: &BusPaths) -> Option<Map<String, Value>> {
    let bytes = fs::read(paths.meta()).ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The effective meta: meta.json enriched from legacy files, or a synthesised
/// one when meta.json is missing (ccw's `getEffectiveTeamMeta`).
pub(crate) fn effective_meta(paths: &BusPaths, facts: &LogFacts) -> Map<String, Value> {
    let session = paths.session_dir();
    let mut meta = if let Some(mut meta) = read_meta(paths) {
        let wanted = ["role_state", "pipeline_mode", "roles", "pipeline_stages"];
        if wanted.iter().any(|k| !meta.contains_key(*k)) {
            enrich_from_legacy(&mut meta, &session);
        }
        meta
    } else {
        let status = if facts.last_type.as_deref() == Some("shutdown") {
            "completed"
        } else {
            "active"
        };
        let created = fs::metadata(paths.msg_dir())
            .and_then(|m| m.created())
            .ok()
            .and_then(|t| jiff::Timestamp::try_from(t).ok())
            .unwrap_or_else(jiff::Timestamp::now);
        let created = time::iso_z(created);
        let mut meta = Map::new();
        meta.insert("status".into(), Value::String(status.into()));
        meta.insert("created_at".into(), Value::String(created.clone()));
        meta.insert(
            "updated_at".into(),
            Value::String(facts.last_ts.clone().unwrap_or(created)),
        );
        enrich_from_legacy(&mut meta, &session);
        meta
    };
    if facts.last_type.as_deref() == Some("shutdown")
        && meta.get("status").and_then(Value::as_str) == Some("active")
    {
        meta.insert("status".into(), Value::String("completed".into()));
    }
    meta
}

/// Fill missing fields from `shared-memory.json` and `team-session.json`.
fn enrich_from_legacy(meta: &mut Map<String, Value>, session: &Path) {
    let read = |name: &str| -> Option<Map<String, Value>> {
        let bytes = fs::read(session.join(name)).ok()?;
        match serde_json::from_slice(&bytes).ok()? {
            Value::Object(m) => Some(m),
            _ => None,
        }
    };
    if let Some(shared) = read("shared-memory.json") {
        for (k, v) in shared {
            if k == "pipeline_mode" || k == "pipeline_stages" {
                meta.entry(k).or_insert(v);
            } else if v.is_object() {
                let role_state = meta
                    .entry("role_state")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(rs) = role_state {
                    rs.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(team) = read("team-session.json") {
        for k in [
            "pipeline_mode",
            "pipeline_stages",
            "team_name",
            "task_description",
        ] {
            if let Some(v) = team.get(k) {
                meta.entry(k).or_insert_with(|| v.clone());
            }
        }
        if let Some(Value::Array(roles)) = team.get("roles") {
            let names: Vec<Value> = roles
                .iter()
                .filter_map(|r| match r {
                    Value::String(s) => Some(Value::String(s.clone())),
                    Value::Object(o) => o.get("name").cloned(),
                    _ => None,
                })
                .collect();
            meta.entry("roles").or_insert(Value::Array(names));
        }
    }
}

/// Apply a `state_update` from `from` with `data` to `meta` (shallow merge
/// into `role_state[from]`, `_updated_at`, the five root fields copied).
pub(crate) fn apply_state_update(
    meta: &mut Map<String, Value>,
    from: &str,
    data: &Map<String, Value>,
) {
    let now = time::now_iso();
    let role_state = meta
        .entry("role_state")
        .or_insert_with(|| Value::Object(Map::new()));
    if !role_state.is_object() {
        *role_state = Value::Object(Map::new());
    }
    if let Value::Object(rs) = role_state {
        let entry = rs
            .entry(from.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(state) = entry {
            for (k, v) in data {
                state.insert(k.clone(), v.clone());
            }
            state.insert("_updated_at".into(), Value::String(now.clone()));
        }
    }
    for k in ROOT_FIELDS {
        if let Some(v) = data.get(k) {
            meta.insert(k.to_owned(), v.clone());
        }
    }
    meta.insert("updated_at".into(), Value::String(now));
}

/// Write meta.json atomically, pretty-printed with 2 spaces like ccw.
pub(crate) fn write_meta(paths: &BusPaths, meta: &Map<String, Value>) -> Result<()> {
    let path = paths.meta();
    let text = serde_json::to_string_pretty(meta).map_err(|e| BusError::Meta {
        path: path.clone(),
        message: e.to_string(),
    })?;
    wavecrew_core::fsutil::write_atomic(&path, text.as_bytes()).map_err(|e| BusError::Meta {
        path,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shallow_merge_and_root_fields() {
        let mut meta = Map::new();
        let data =
            json!({"execution_results": [1], "pipeline_mode": "standard", "nested": {"a": 1}});
        apply_state_update(&mut meta, "executor", data.as_object().unwrap());
        let data = json!({"execution_results": [1, 2], "nested": {"b": 2}});
        apply_state_update(&mut meta, "executor", data.as_object().unwrap());
        let state = &meta["role_state"]["executor"];
        assert_eq!(state["execution_results"], json!([1, 2]));
        assert_eq!(state["nested"], json!({"b": 2}));
        assert_eq!(state["pipeline_mode"], "standard");
        assert!(state["_updated_at"].as_str().unwrap().ends_with("+00:00"));
        assert_eq!(meta["pipeline_mode"], "standard");
    }
}
