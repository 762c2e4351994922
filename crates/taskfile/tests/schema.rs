//! `docs/wavecrew.tasks.schema.json` is generated from the Rust types, so
//! editors validate what wavecrew reads: this test regenerates it and
//! compares. After changing the model, run
//! `WAVECREW_UPDATE_DOCS=1 cargo nextest run -p wavecrew-taskfile schema`.

use std::path::Path;

#[test]
fn the_committed_schema_matches_the_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/wavecrew.tasks.schema.json");
    let fresh = wavecrew_taskfile::schema_text();
    if std::env::var_os("WAVECREW_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == fresh,
        "docs/wavecrew.tasks.schema.json is out of date with crates/taskfile/src/model.rs: run \
         `WAVECREW_UPDATE_DOCS=1 cargo nextest run -p wavecrew-taskfile schema` and commit it"
    );
}

#[test]
fn the_schema_describes_the_keys_people_write() {
    let schema = wavecrew_taskfile::schema();
    let task = &schema["$defs"]["TaskDef"];
    assert_eq!(task["additionalProperties"], false);
    assert_eq!(task["required"], serde_json::json!(["title"]));
    for key in [
        "id",
        "title",
        "description",
        "depends_on",
        "role",
        "backend",
        "files",
        "acceptance",
    ] {
        assert!(
            task["properties"].get(key).is_some(),
            "TaskDef.{key}: {task}"
        );
    }
    assert_eq!(schema["required"], serde_json::json!(["goal", "tasks"]));
    assert_eq!(schema["$defs"]["Argv"]["type"], "array");
}
