//! The test harness: a real `nats-server -js` on a free port, killed and
//! reaped on drop.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wavecrew_engine_nats::Engine;

/// A running nats-server with JetStream, its store in a temp folder.
pub(crate) struct NatsServer {
    child: Child,
    port: u16,
    _store: tempfile::TempDir,
}

impl NatsServer {
    /// Start `nats-server -js -a 127.0.0.1 -p <free port> -sd <tempdir>` and
    /// wait until it accepts connections. Panics (the test fails) when the
    /// binary is missing: `scripts/test.sh` installs it.
    pub(crate) fn start() -> NatsServer {
        NatsServer::start_with(&[])
    }

    /// [`NatsServer::start`] with extra arguments (`--auth <token>`, …).
    pub(crate) fn start_with(extra: &[&str]) -> NatsServer {
        let Ok(path) = which_nats_server() else {
            panic!(
                "nats-server is not on PATH; `scripts/test.sh` installs it \
                 (Debian's nats-server: apt-get install -y nats-server)"
            );
        };
        let store = tempfile::tempdir().expect("a temp folder for the JetStream store");
        // Bind port 0 to find a free port, then let the server take it.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(path)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(store.path())
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        let mut server = NatsServer {
            child,
            port,
            _store: store,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("nats-server exited before accepting connections: {status}");
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not accept connections on port {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `nats://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// An engine for `session` on this server (from async code).
    pub(crate) async fn engine(&self, session: &str) -> Engine {
        Engine::connect(&self.url(), None, session)
            .await
            .expect("connect to the test server")
    }

    /// An engine for `session` on this server (from a plain thread).
    pub(crate) fn engine_blocking(&self, session: &str) -> Engine {
        Engine::connect_blocking(&self.url(), None, session).expect("connect to the test server")
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn which_nats_server() -> Result<std::path::PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("nats-server"))
        .find(|p| p.is_file())
        .ok_or(())
}

/// A multi-thread runtime for tests that mix sync and async calls.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
