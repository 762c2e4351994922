//! The session registry: coordinators announce, host agents find the
//! running sessions; many hosts opening it at once is no error.

use wavecrew_engine_nats::{Registry, SessionCard, SessionState};

use crate::support::{NatsServer, runtime};

fn card(session: &str, state: SessionState) -> SessionCard {
    SessionCard {
        session: session.into(),
        roles: vec!["developer".into()],
        coordinator: "h1".into(),
        ack_wait_secs: 30,
        state,
        version: "0.1.0".into(),
    }
}

#[test]
fn hosts_find_the_running_sessions() {
    let server = NatsServer::start();
    runtime().block_on(async {
        // Ten hosts open the registry at the same moment (its bucket is
        // created by whichever comes first).
        let mut opening = Vec::new();
        for _ in 0..10 {
            let engine = server.engine("wavecrew").await;
            opening.push(tokio::spawn(async move {
                Registry::open(&engine).await.map(|_| ())
            }));
        }
        for o in opening {
            o.await.unwrap().expect("every host opens the registry");
        }
        let engine = server.engine("wavecrew").await;
        let registry = Registry::open(&engine).await.unwrap();
        assert!(registry.running().await.unwrap().is_empty());
        registry
            .announce(&card("TC-b", SessionState::Running))
            .await
            .unwrap();
        registry
            .announce(&card("TC-a", SessionState::Running))
            .await
            .unwrap();
        let names: Vec<String> = registry
            .running()
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.session)
            .collect();
        assert_eq!(names, ["TC-a", "TC-b"]);
        // A finished session is not offered; its card is still there.
        registry
            .announce(&card("TC-a", SessionState::Finished))
            .await
            .unwrap();
        let running = registry.running().await.unwrap();
        assert_eq!(running, [card("TC-b", SessionState::Running)]);
        assert_eq!(
            registry.card("TC-a").await.unwrap().unwrap().state,
            SessionState::Finished
        );
        assert!(registry.card("TC-none").await.unwrap().is_none());
        // A session name that could not be a bucket's is refused by name.
        let err = registry
            .announce(&card("TC.a", SessionState::Running))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("TC.a"), "{err}");
    });
}
