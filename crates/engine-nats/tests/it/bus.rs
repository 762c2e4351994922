//! The bus mirror: records from several publishers land in messages.jsonl
//! once each, in stream order, also across a kill between append and cursor.

use std::path::Path;

use serde_json::{Map, Value, json};
use wavecrew_core::{BusMessage, NewMessage, SessionId};
use wavecrew_engine_nats::bus::CURSOR_FILE;
use wavecrew_engine_nats::{Engine, Mirror, NatsBus};
use wavecrew_msgbus::{Bus, BusPaths, Durability};

use crate::support::{NatsServer, runtime};

fn file_bus(root: &Path, session: &str) -> Bus {
    Bus::new(
        BusPaths::new(root, SessionId::new(session).unwrap()),
        Durability::None,
    )
}

fn record(from: &str, n: usize) -> NewMessage {
    NewMessage {
        from: from.into(),
        kind: Some("progress".into()),
        data: Some(Map::from_iter([("n".to_owned(), json!(n))])),
        ..NewMessage::default()
    }
}

/// Every record of the log, in file order.
fn log_records(root: &Path, session: &str) -> Vec<BusMessage> {
    let path = file_bus(root, session).paths().log();
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn seqs(records: &[BusMessage]) -> Vec<u64> {
    records
        .iter()
        .map(|r| r.data.as_ref().unwrap()["nats_seq"].as_u64().unwrap())
        .collect()
}

async fn publish(engine: &Engine, from: &str, range: std::ops::Range<usize>) {
    let bus = NatsBus::open(engine).await.unwrap();
    for n in range {
        bus.publish(record(from, n)).await.unwrap();
    }
}

#[test]
fn records_of_three_concurrent_publishers_land_once_each_in_stream_order() {
    let server = NatsServer::start();
    let root = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let publishers = ["host-a", "host-b", "host-c"];
        let mut engines = Vec::new();
        for _ in publishers {
            engines.push(server.engine("mirror").await);
        }
        let coordinator = server.engine("mirror").await;
        let mut mirror = Mirror::open(&coordinator, file_bus(root.path(), "mirror"))
            .await
            .unwrap();
        // 34 + 33 + 33 records, published at once, mirrored while they come.
        let jobs: Vec<_> = publishers
            .iter()
            .zip(&engines)
            .enumerate()
            .map(|(i, (from, engine))| {
                let (engine, from) = (engine.clone(), (*from).to_owned());
                let range = if i == 0 { 0..34 } else { 0..33 };
                tokio::spawn(async move { publish(&engine, &from, range).await })
            })
            .collect();
        let mut mirrored = 0;
        while mirrored < 100 {
            mirrored += mirror
                .poll(std::time::Duration::from_millis(200))
                .await
                .unwrap();
        }
        for j in jobs {
            j.await.unwrap();
        }
        assert_eq!(mirror.catch_up().await.unwrap(), 0);
        assert_eq!(mirror.last_mirrored(), 100);
    });
    let records = log_records(root.path(), "mirror");
    assert_eq!(records.len(), 100);
    // In stream order, each sequence once.
    assert_eq!(seqs(&records), (1..=100).collect::<Vec<_>>());
    // Ids assigned by the file bus, as for any local record.
    let ids: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
    assert_eq!(
        ids,
        (1..=100).map(|n| format!("MSG-{n:03}")).collect::<Vec<_>>()
    );
    // Each publisher's records once each, in its own order.
    for (from, count) in [("host-a", 34), ("host-b", 33), ("host-c", 33)] {
        let ns: Vec<u64> = records
            .iter()
            .filter(|r| r.from == from)
            .map(|r| r.data.as_ref().unwrap()["n"].as_u64().unwrap())
            .collect();
        assert_eq!(ns, (0..count).collect::<Vec<_>>(), "{from}");
        assert!(
            records
                .iter()
                .all(|r| r.to == "coordinator" && r.kind == "progress")
        );
    }
}

#[test]
fn a_kill_between_append_and_cursor_write_never_duplicates() {
    let server = NatsServer::start();
    let root = tempfile::tempdir().unwrap();
    let cursor = file_bus(root.path(), "kill")
        .paths()
        .msg_dir()
        .join(CURSOR_FILE);
    runtime().block_on(async {
        let engine = server.engine("kill").await;
        publish(&engine, "w", 0..10).await;
        let mut mirror = Mirror::open(&engine, file_bus(root.path(), "kill"))
            .await
            .unwrap();
        assert_eq!(mirror.catch_up().await.unwrap(), 10);
        let before: Value = serde_json::from_slice(&std::fs::read(&cursor).unwrap()).unwrap();
        assert_eq!(before["seq"], json!(10));
        // Five more are appended and the cursor moves; then the cursor file
        // is put back as it was: exactly the disk a kill after the appends
        // and before the cursor's rename leaves (the log and the cursor
        // are the mirror's only state).
        publish(&engine, "w", 10..15).await;
        let saved = std::fs::read(&cursor).unwrap();
        assert_eq!(mirror.catch_up().await.unwrap(), 5);
        drop(mirror);
        std::fs::write(&cursor, &saved).unwrap();

        // The restarted coordinator resumes after 15, not 10.
        let mut mirror = Mirror::open(&engine, file_bus(root.path(), "kill"))
            .await
            .unwrap();
        assert_eq!(mirror.last_mirrored(), 15);
        assert_eq!(mirror.catch_up().await.unwrap(), 0);
        publish(&engine, "w", 15..18).await;
        assert_eq!(mirror.catch_up().await.unwrap(), 3);
        drop(mirror);

        // No cursor at all (killed before the first one was written, or
        // lost): the whole log is read.
        std::fs::remove_file(&cursor).unwrap();
        let mut mirror = Mirror::open(&engine, file_bus(root.path(), "kill"))
            .await
            .unwrap();
        assert_eq!(mirror.last_mirrored(), 18);
        assert_eq!(mirror.catch_up().await.unwrap(), 0);
        // A cursor that is not JSON is not trusted either.
        std::fs::write(&cursor, "{").unwrap();
        let mirror = Mirror::open(&engine, file_bus(root.path(), "kill"))
            .await
            .unwrap();
        assert_eq!(mirror.last_mirrored(), 18);
    });
    let records = log_records(root.path(), "kill");
    assert_eq!(seqs(&records), (1..=18).collect::<Vec<_>>());
    let ns: Vec<u64> = records
        .iter()
        .map(|r| r.data.as_ref().unwrap()["n"].as_u64().unwrap())
        .collect();
    assert_eq!(ns, (0..18).collect::<Vec<_>>());
}

#[test]
fn local_records_interleave_and_a_bad_record_does_not_stop_the_mirror() {
    let server = NatsServer::start();
    let root = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let engine = server.engine("mixed").await;
        let local = file_bus(root.path(), "mixed");
        local.log(record("coordinator", 0)).unwrap();
        publish(&engine, "w", 0..2).await;
        // Not a bus record: the mirror puts a mirror_error in its place.
        engine
            .jetstream()
            .publish("wavecrew.mixed.bus", "{oops".into())
            .await
            .unwrap()
            .await
            .unwrap();
        let mut mirror = Mirror::open(&engine, file_bus(root.path(), "mixed"))
            .await
            .unwrap();
        assert_eq!(mirror.catch_up().await.unwrap(), 3);
        local.log(record("coordinator", 1)).unwrap();
        publish(&engine, "w", 2..3).await;
        assert_eq!(mirror.catch_up().await.unwrap(), 1);
        // An empty sender is refused at the source, naming the field.
        let bus = NatsBus::open(&engine).await.unwrap();
        let err = bus.publish(record(" ", 9)).await.unwrap_err();
        assert!(err.to_string().contains("`from`"), "{err}");
    });
    let records = log_records(root.path(), "mixed");
    let kinds: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| (r.id.as_str(), r.from.as_str(), r.kind.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("MSG-001", "coordinator", "progress"),
            ("MSG-002", "w", "progress"),
            ("MSG-003", "w", "progress"),
            ("MSG-004", "nats-mirror", "mirror_error"),
            ("MSG-005", "coordinator", "progress"),
            ("MSG-006", "w", "progress"),
        ]
    );
}
