//! The repository carried over NATS: the coordinator publishes its
//! integration branch (whole, then by increments), a host with its own
//! cache follows it, and an attempt's commits come back to the coordinator.

use std::path::Path;

use wavecrew_engine_nats::RepoChannel;
use wavecrew_isolation::Repo;
use wavecrew_testkit::git::git;

use crate::support::{NatsServer, runtime};

const BRANCH: &str = "refs/heads/wavecrew/S-carry";

fn commit(dir: &Path, file: &str, text: &str) -> String {
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", file]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A repository with one commit on `wavecrew/S-carry` checked out.
fn repository(dir: &Path) -> Repo {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "wavecrew/S-carry"]);
    Repo::open(dir).unwrap().unwrap()
}

#[test]
fn a_host_follows_the_integration_branch_and_sends_its_attempt_back() {
    let server = NatsServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let (main_dir, cache_dir) = (tmp.path().join("coordinator"), tmp.path().join("host"));
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let coordinator = repository(&main_dir);
    let first = commit(&main_dir, "README", "hello\n");
    std::fs::create_dir_all(&cache_dir).unwrap();
    git(&cache_dir, &["init", "-q", "-b", "elsewhere"]);
    let cache = Repo::open(&cache_dir).unwrap().unwrap();

    runtime().block_on(async {
        let here = RepoChannel::open(&server.engine("S-carry").await)
            .await
            .unwrap();
        let there = RepoChannel::open(&server.engine("S-carry").await)
            .await
            .unwrap();
        // A host started before anything is published waits.
        assert_eq!(there.sync(&cache, &scratch).await.unwrap(), None);

        let record = here.publish(&coordinator, BRANCH, &scratch).await.unwrap();
        assert_eq!(record.tip, first);
        assert_eq!(record.bundles.len(), 1);
        assert_eq!(
            there.sync(&cache, &scratch).await.unwrap(),
            Some(first.clone())
        );
        // Publishing an unmoved branch adds nothing.
        let again = here.publish(&coordinator, BRANCH, &scratch).await.unwrap();
        assert_eq!(again, record);

        // A merge moves the tip: one more bundle, with only the new commit.
        let second = commit(&main_dir, "landed.txt", "IMPL-000\n");
        let record = here.publish(&coordinator, BRANCH, &scratch).await.unwrap();
        assert_eq!(record.bundles.len(), 2);
        assert_eq!(record.tip, second);
        assert_eq!(
            there.sync(&cache, &scratch).await.unwrap(),
            Some(second.clone())
        );
        assert_eq!(
            git(&cache_dir, &["show", &format!("{BRANCH}:landed.txt")]),
            "IMPL-000"
        );

        // The host works on a branch of the tip and sends it back.
        git(
            &cache_dir,
            &["checkout", "-q", "-b", "task", "wavecrew/S-carry"],
        );
        let work = commit(&cache_dir, "a.txt", "from the host\n");
        let sent = there
            .send_attempt(&cache, "IMPL-001", 1, "refs/heads/task", &second, &scratch)
            .await
            .unwrap();
        assert_eq!(sent, Some(work.clone()));
        let dest = "refs/wavecrew-remote/IMPL-001/1";
        let taken = here
            .take_attempt(
                &coordinator,
                "IMPL-001",
                1,
                "refs/heads/task",
                dest,
                &scratch,
            )
            .await
            .unwrap();
        assert_eq!(taken, work);
        assert_eq!(git(&main_dir, &["rev-parse", &format!("{dest}^")]), second);
        // Taken again (a resumed coordinator): the same commit, no change.
        let again = here
            .take_attempt(
                &coordinator,
                "IMPL-001",
                1,
                "refs/heads/task",
                dest,
                &scratch,
            )
            .await
            .unwrap();
        assert_eq!(again, work);
        // An attempt with no commits sends nothing.
        assert_eq!(
            there
                .send_attempt(&cache, "IMPL-002", 1, "refs/heads/task", &work, &scratch)
                .await
                .unwrap(),
            None
        );
    });
    assert_eq!(git(&main_dir, &["fsck", "--no-progress"]), "");
}

#[test]
fn a_cache_that_went_its_own_way_is_refused_by_name() {
    let server = NatsServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let (main_dir, cache_dir) = (tmp.path().join("coordinator"), tmp.path().join("host"));
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let coordinator = repository(&main_dir);
    commit(&main_dir, "README", "hello\n");
    // The host's branch of that name holds commits the session never sent.
    let cache = repository(&cache_dir);
    commit(&cache_dir, "other.txt", "not the session's\n");
    runtime().block_on(async {
        let channel = RepoChannel::open(&server.engine("S-carry").await)
            .await
            .unwrap();
        channel
            .publish(&coordinator, BRANCH, &scratch)
            .await
            .unwrap();
        let err = channel
            .sync(&cache, &scratch)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("which the session never published"), "{err}");
        // An attempt id that cannot be an object name is refused.
        let err = channel
            .send_attempt(&cache, "IMPL 1/x", 1, BRANCH, "HEAD", &scratch)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("object name"), "{err}");
    });
}
