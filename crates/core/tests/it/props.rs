//! Property tests: ids never escape their folder; tasks round-trip.

use proptest::prelude::*;
use wavecrew_core::{SessionId, Task, TaskId};

proptest! {
    /// Any string either fails validation or is one harmless path segment.
    #[test]
    fn a_valid_id_is_one_plain_segment(s in "\\PC{0,40}|[./\\\\a-zA-Z0-9_-]{0,20}") {
        if let Ok(id) = TaskId::new(s.clone()) {
            let path = std::path::Path::new(id.as_str());
            let mut parts = path.components();
            prop_assert!(matches!(parts.next(), Some(std::path::Component::Normal(_))));
            prop_assert!(parts.next().is_none());
            prop_assert!(s.len() <= 128 && !s.is_empty());
        }
    }

    /// A session argument never yields an id that climbs out of `.workflow/.team/`.
    #[test]
    fn session_args_never_traverse(s in "[./a-zA-Z0-9_-]{0,30}") {
        if let Ok((id, _)) = SessionId::from_arg(&s) {
            prop_assert!(id.as_str() != ".." && id.as_str() != "." && !id.as_str().contains('/'));
        }
    }

    /// Tasks with arbitrary extra fields survive a write and a read unchanged.
    #[test]
    fn tasks_round_trip(
        id in "[A-Z]{1,6}-[0-9]{1,4}",
        subject in "\\PC{0,30}",
        extra_key in "[a-z_]{1,10}",
        extra_val in any::<i64>(),
        deps in proptest::collection::vec("[A-Z]{1,3}-[0-9]{1,3}", 0..4),
    ) {
        let mut task = Task::new(TaskId::new(id).unwrap(), subject, "d");
        task.blocked_by = deps.into_iter().map(|d| TaskId::new(d).unwrap()).collect();
        task.blocked_by.dedup();
        let reserved = ["id","subject","description","status","owner","blockedBy","blocks","activeForm",
            "metadata","created_at","updated_at","attempts","lease","result","task_id","title","assigned_to","depends_on"];
        if !reserved.contains(&extra_key.as_str()) {
            task.extra.insert(extra_key, serde_json::json!(extra_val));
        }
        let text = serde_json::to_string(&task).unwrap();
        let back: Task = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&back, &task);
        prop_assert_eq!(serde_json::to_string(&back).unwrap(), text);
    }
}
