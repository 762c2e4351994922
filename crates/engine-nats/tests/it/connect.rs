//! Connecting: errors name the URL, and nothing retries forever.

use std::time::{Duration, Instant};

use wavecrew_engine_nats::{Engine, EngineError};

use crate::support::{NatsServer, runtime};

#[test]
fn a_bad_url_is_refused_naming_it() {
    for url in [
        "localhost:4222",
        "http://127.0.0.1:4222",
        "nats://u:p@127.0.0.1:1",
    ] {
        let err = Engine::connect_blocking(url, None, "S").unwrap_err();
        assert!(matches!(err, EngineError::InvalidUrl { .. }), "{err:?}");
        assert!(err.to_string().contains(&format!("`{url}`")), "{err}");
    }
}

#[test]
fn nothing_listening_fails_fast_naming_the_url() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let started = Instant::now();
    let err = Engine::connect_blocking(&url, None, "S").unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(7),
        "{:?}",
        started.elapsed()
    );
    let text = err.to_string();
    assert!(text.contains(&format!("`{url}`")), "{text}");
    assert!(matches!(
        err,
        EngineError::Connect { .. } | EngineError::ConnectTimeout { .. }
    ));
    // The same from async code, inside a runtime (a failed connect drops
    // the engine's runtime there without panicking).
    let err = runtime()
        .block_on(Engine::connect(&url, None, "S"))
        .unwrap_err();
    assert!(err.to_string().contains(&format!("`{url}`")), "{err}");
}

#[test]
fn a_bad_session_id_is_refused_naming_it() {
    let server = NatsServer::start();
    let err = Engine::connect_blocking(&server.url(), None, "a.b").unwrap_err();
    assert!(
        err.to_string().contains("invalid session id \"a.b\""),
        "{err}"
    );
}

#[test]
fn connects_from_sync_and_async_code() {
    let server = NatsServer::start();
    let engine = server.engine_blocking("S-1");
    assert_eq!(engine.url(), server.url());
    assert_eq!(engine.session().as_str(), "S-1");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let messages = rt.block_on(async {
        let engine = server.engine("S-2").await;
        assert!(engine.client().server_info().version.starts_with("2."));
        // JetStream answers: a stream can be made and read back.
        let mut stream = engine
            .jetstream()
            .create_stream(async_nats::jetstream::stream::Config {
                name: "probe".into(),
                subjects: vec!["probe.>".into()],
                ..Default::default()
            })
            .await
            .unwrap();
        let messages = stream.info().await.unwrap().state.messages;
        // Dropped inside the async context: no panic.
        drop(engine);
        messages
    });
    assert_eq!(messages, 0);
}

#[test]
fn a_token_file_authenticates() {
    let server = NatsServer::start_with(&["--auth", "t0k3n"]);
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "t0k3n\n").unwrap();
    let engine = Engine::connect_blocking(&server.url(), Some(&token), "S").unwrap();
    assert_eq!(engine.session().as_str(), "S");
    // Without the token, or with a wrong one, the server refuses; the
    // error names the URL.
    let err = Engine::connect_blocking(&server.url(), None, "S").unwrap_err();
    assert!(err.to_string().contains(&server.url()), "{err}");
    std::fs::write(&token, "wrong").unwrap();
    let err = Engine::connect_blocking(&server.url(), Some(&token), "S").unwrap_err();
    assert!(matches!(err, EngineError::Connect { .. }), "{err:?}");
    let missing = dir.path().join("nope.creds");
    let err = Engine::connect_blocking(&server.url(), Some(&missing), "S").unwrap_err();
    assert!(err.to_string().contains("nope.creds"), "{err}");
}
