//! Durations measured in earlier runs of the session (the attempts'
//! `outcome.json`), the scheduler's weights when tasks carry no estimate.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use wavecrew_core::TaskId;

/// Durations measured in earlier runs of the session (from the attempts'
/// `outcome.json`), for the critical path of tasks without an estimate.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// Seconds of each task's attempts, summed.
    by_task: HashMap<String, f64>,
}

impl Measured {
    pub(crate) fn read(session_dir: &Path) -> Measured {
        let mut by_task = HashMap::new();
        let Ok(entries) =
            std::fs::read_dir(wavecrew_core::SessionLayout::new(session_dir).attempts_root())
        else {
            return Measured::default();
        };
        for entry in entries.flatten() {
            let Ok(attempts) = std::fs::read_dir(entry.path()) else {
                continue;
            };
            let mut seconds = 0.0;
            for attempt in attempts.flatten() {
                let Ok(text) = std::fs::read(attempt.path().join("outcome.json")) else {
                    continue;
                };
                let ms = serde_json::from_slice::<Value>(&text)
                    .ok()
                    .and_then(|v| v.get("duration_ms").and_then(Value::as_f64));
                seconds += ms.unwrap_or(0.0) / 1000.0;
            }
            if seconds > 0.0 {
                by_task.insert(entry.file_name().to_string_lossy().into_owned(), seconds);
            }
        }
        Measured { by_task }
    }

    /// The task's own measured time, else the mean of the tasks measured
    /// so far.
    pub(crate) fn of(&self, id: &TaskId) -> Option<f64> {
        if let Some(s) = self.by_task.get(id.as_str()) {
            return Some(*s);
        }
        if self.by_task.is_empty() {
            return None;
        }
        #[allow(clippy::cast_precision_loss)] // a count of tasks
        let n = self.by_task.len() as f64;
        Some(self.by_task.values().sum::<f64>() / n)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn id(s: &str) -> TaskId {
        TaskId::new(s).unwrap()
    }

    #[test]
    fn measured_durations_come_from_earlier_attempts() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |task: &str, n: u32, ms: u64| {
            let dir = tmp.path().join("attempts").join(task).join(n.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("outcome.json"),
                json!({"duration_ms": ms, "outcome": "success"}).to_string(),
            )
            .unwrap();
        };
        write("IMPL-001", 1, 1500);
        write("IMPL-001", 2, 500);
        write("IMPL-002", 1, 4000);
        // An attempt killed before its outcome counts nothing.
        std::fs::create_dir_all(tmp.path().join("attempts/IMPL-003/1")).unwrap();
        let m = Measured::read(tmp.path());
        assert_eq!(m.of(&id("IMPL-001")), Some(2.0), "its attempts, summed");
        assert_eq!(m.of(&id("IMPL-002")), Some(4.0));
        assert_eq!(m.of(&id("IMPL-009")), Some(3.0), "the mean of the others");
        assert!(
            Measured::read(&tmp.path().join("none"))
                .of(&id("IMPL-001"))
                .is_none()
        );
    }
}
