//! Tickets on the work queue: de-duplicated, redelivered after ack_wait,
//! kept leased by progress acks, removed by ack and term.

use std::time::{Duration, Instant};

use wavecrew_core::TaskId;
use wavecrew_engine_nats::{Engine, TicketPolicy, Tickets};

use crate::support::{NatsServer, runtime};

const ACK_WAIT: Duration = Duration::from_secs(1);

fn id(s: &str) -> TaskId {
    TaskId::new(s).unwrap()
}

async fn tickets(engine: &Engine, max_deliver: i64) -> Tickets {
    Tickets::open(
        engine,
        TicketPolicy {
            ack_wait: ACK_WAIT,
            max_deliver,
            ..TicketPolicy::default()
        },
    )
    .await
    .unwrap()
}

#[test]
fn the_same_attempt_published_twice_is_one_ticket() {
    let server = NatsServer::start();
    runtime().block_on(async {
        let engine = server.engine("dedupe").await;
        let q = tickets(&engine, 5).await;
        let first = q.publish("executor", &id("T-1"), 1).await.unwrap();
        let again = q.publish("executor", &id("T-1"), 1).await.unwrap();
        assert!(!first.duplicate);
        assert!(again.duplicate);
        assert_eq!(again.sequence, first.sequence);
        assert_eq!(q.pending().await.unwrap(), 1);
        // The next attempt is a new ticket.
        assert!(
            !q.publish("executor", &id("T-1"), 2)
                .await
                .unwrap()
                .duplicate
        );
        let t = q.next("executor", ACK_WAIT).await.unwrap().unwrap();
        assert_eq!(
            (t.task_id().as_str(), t.attempt(), t.delivered()),
            ("T-1", 1, 1)
        );
        t.ack().await.unwrap();
        let t = q.next("executor", ACK_WAIT).await.unwrap().unwrap();
        assert_eq!(t.attempt(), 2);
        t.ack().await.unwrap();
        assert!(
            q.next("executor", Duration::from_millis(200))
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(q.pending().await.unwrap(), 0);
        // Roles are separate queues, and a bad role is refused naming it.
        q.publish("tester", &id("T-2"), 1).await.unwrap();
        assert!(
            q.next("executor", Duration::from_millis(200))
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(
            q.next("tester", ACK_WAIT)
                .await
                .unwrap()
                .unwrap()
                .task_id()
                .as_str(),
            "T-2"
        );
        let err = q.publish("a.b", &id("T-3"), 1).await.unwrap_err();
        assert!(err.to_string().contains("invalid role \"a.b\""), "{err}");
    });
}

#[test]
fn an_unacked_ticket_goes_to_another_worker_after_ack_wait() {
    let server = NatsServer::start();
    runtime().block_on(async {
        // Two workers, each with its own connection, sharing the role's consumer.
        let (e1, e2) = (
            server.engine("redeliver").await,
            server.engine("redeliver").await,
        );
        let (w1, w2) = (tickets(&e1, 5).await, tickets(&e2, 5).await);
        w1.publish("executor", &id("T-1"), 1).await.unwrap();
        let first = w1.next("executor", ACK_WAIT).await.unwrap().unwrap();
        assert_eq!(first.delivered(), 1);
        // While w1 holds it, w2 gets nothing.
        assert!(
            w2.next("executor", Duration::from_millis(300))
                .await
                .unwrap()
                .is_none()
        );
        // w1 goes silent: after ack_wait the ticket is w2's.
        let started = Instant::now();
        let second = w2.next("executor", ACK_WAIT * 3).await.unwrap().unwrap();
        assert_eq!(second.task_id().as_str(), "T-1");
        assert_eq!(second.delivered(), 2);
        assert!(
            started.elapsed() >= Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        second.ack().await.unwrap();
        assert_eq!(w2.pending().await.unwrap(), 0);
        drop(first);
    });
}

#[test]
fn progress_acks_keep_a_ticket_leased_past_ack_wait() {
    let server = NatsServer::start();
    runtime().block_on(async {
        let (e1, e2) = (
            server.engine("progress").await,
            server.engine("progress").await,
        );
        let (w1, w2) = (tickets(&e1, 5).await, tickets(&e2, 5).await);
        w1.publish("executor", &id("T-1"), 1).await.unwrap();
        let t = w1.next("executor", ACK_WAIT).await.unwrap().unwrap();
        let started = Instant::now();
        // 3 × ack_wait with a progress ack every ~0.4 × ack_wait.
        while started.elapsed() < ACK_WAIT * 3 {
            t.progress().await.unwrap();
            assert!(
                w2.next("executor", ACK_WAIT * 2 / 5)
                    .await
                    .unwrap()
                    .is_none(),
                "redelivered at {:?} despite progress acks",
                started.elapsed()
            );
        }
        t.ack().await.unwrap();
        assert!(w2.next("executor", ACK_WAIT * 2).await.unwrap().is_none());
        assert_eq!(w1.pending().await.unwrap(), 0);
    });
}

#[test]
fn term_removes_and_nak_after_redelivers_soon() {
    let server = NatsServer::start();
    runtime().block_on(async {
        let engine = server.engine("term").await;
        let q = tickets(&engine, 5).await;
        q.publish("executor", &id("T-1"), 1).await.unwrap();
        let t = q.next("executor", ACK_WAIT).await.unwrap().unwrap();
        let started = Instant::now();
        t.nak_after(Duration::from_millis(200)).await.unwrap();
        let t = q.next("executor", ACK_WAIT * 3).await.unwrap().unwrap();
        assert_eq!(t.delivered(), 2);
        assert!(started.elapsed() < ACK_WAIT, "{:?}", started.elapsed());
        t.term().await.unwrap();
        assert_eq!(q.pending().await.unwrap(), 0);
        assert!(q.next("executor", ACK_WAIT * 2).await.unwrap().is_none());
    });
}

#[test]
fn max_deliver_stops_redelivery_and_the_final_delivery_is_marked() {
    let server = NatsServer::start();
    runtime().block_on(async {
        let engine = server.engine("maxdeliver").await;
        let q = tickets(&engine, 2).await;
        q.publish("executor", &id("T-1"), 1).await.unwrap();
        let t = q.next("executor", ACK_WAIT).await.unwrap().unwrap();
        assert!(!t.is_final_delivery());
        let t = q.next("executor", ACK_WAIT * 3).await.unwrap().unwrap();
        assert_eq!(t.delivered(), 2);
        assert!(t.is_final_delivery());
        // Not sent a third time, but still in the stream (nats-server 2.9).
        assert!(q.next("executor", ACK_WAIT * 2).await.unwrap().is_none());
        assert_eq!(q.pending().await.unwrap(), 1);
        // The worker holding the final delivery ends it.
        t.term().await.unwrap();
        assert_eq!(q.pending().await.unwrap(), 0);
    });
}
