//! The object store: a file round trip, bigger than one chunk, written
//! atomically; names validated; a missing object named.

use wavecrew_engine_nats::Objects;

use crate::support::{NatsServer, runtime};

#[test]
fn a_file_goes_in_and_comes_back_whole() {
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    // 300 KiB of varied bytes: several 128 KiB chunks.
    let bytes: Vec<u8> = (0..300 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    let src = dir.path().join("base.bundle");
    std::fs::write(&src, &bytes).unwrap();
    runtime().block_on(async {
        let put_side = server.engine("objs").await;
        let get_side = server.engine("objs").await;
        let objects = Objects::open(&put_side).await.unwrap();
        assert_eq!(objects.bucket(), "wavecrew_objs_objects");
        assert_eq!(
            objects.put_file("base.bundle", &src).await.unwrap(),
            bytes.len() as u64
        );
        // Another host (connection) reads it into a folder that does not exist yet.
        let dest = dir.path().join("other-host/repo/base.bundle");
        let other = Objects::open(&get_side).await.unwrap();
        assert_eq!(
            other.get_file("base.bundle", &dest).await.unwrap(),
            bytes.len() as u64
        );
        assert_eq!(std::fs::read(&dest).unwrap(), bytes);
        // A put replaces; the destination is replaced whole.
        std::fs::write(&src, b"v2").unwrap();
        objects.put_file("base.bundle", &src).await.unwrap();
        other.get_file("base.bundle", &dest).await.unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"v2");
        // No temp file is left beside it.
        let names: Vec<_> = std::fs::read_dir(dest.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["base.bundle"]);
        // A missing object is named with its bucket, and nothing is written.
        let err = other
            .get_file("nope.bundle", &dir.path().join("nope"))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("nope.bundle") && err.contains("wavecrew_objs_objects"),
            "{err}"
        );
        assert!(!dir.path().join("nope").exists());
        // Names are one safe segment.
        for bad in ["../x", "a/b", ""] {
            let err = objects.put_file(bad, &src).await.unwrap_err().to_string();
            assert!(err.contains("invalid object name"), "{err}");
        }
        // A missing source file is named.
        let err = objects
            .put_file("x", &dir.path().join("missing"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing"), "{err}");
    });
}
