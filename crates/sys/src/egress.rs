//! The egress proxy: the only way out of a network namespace that has
//! only its loopback ([`crate::netns`]). A confined tree's box
//! ([`crate::agent_box`]) hands the one listener of its loopback to an
//! [`EgressProxy`] that wavecrew runs, outside the namespace. An HTTPS
//! request comes as `CONNECT host:port`: the host is checked against the
//! [`AllowList`] before a byte is relayed, and the proxy (not the tree)
//! resolves the name. A plain `http://` request comes in absolute form and
//! is checked the same way, then sent on with `Connection: close` (one
//! host per connection). Anything else (SOCKS, a host not listed, an IP
//! literal not listed) is refused, and every host reached or refused is
//! recorded ([`NetworkLog`]) for the evidence. The agent and the checks
//! that run its work get the same proxy.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};

pub use crate::allow_hosts::AllowList;
use crate::allow_hosts::{bracket, split_host_port};

/// What a confined tree's network did: the hosts its proxy let it reach
/// and those it refused, with why. Part of the evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkLog {
    /// `allowlist` or `none`.
    pub mode: String,
    /// Hosts reached.
    pub reached: std::collections::BTreeSet<String>,
    /// Hosts refused, each followed by why (`not allowed`, `bad request`,
    /// `unreachable`).
    pub refused: std::collections::BTreeSet<String>,
}

/// The runtime of the proxies started outside one
/// ([`EgressProxy::start_detached`]): one thread of its own, for the life
/// of the process, so a caller that blocks (a check waited for
/// synchronously) never holds its proxy up.
fn detached_runtime() -> std::io::Result<tokio::runtime::Handle> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("wavecrew-egress")
                .enable_io()
                .enable_time()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map(|rt| rt.handle().clone())
        .map_err(|e| std::io::Error::other(e.clone()))
}

/// The egress proxy of one attempt: a unix socket the agent's box hands
/// its listener to, and the task that serves it.
#[derive(Debug)]
pub struct EgressProxy {
    dir: tempfile::TempDir,
    log: Arc<Mutex<NetworkLog>>,
    task: tokio::task::JoinHandle<()>,
    box_pid: tokio::sync::watch::Sender<Option<u32>>,
}

impl EgressProxy {
    /// Start a proxy for `allow`: it waits for one box on its socket
    /// ([`EgressProxy::socket`]), the one [`EgressProxy::expect_box`]
    /// names, and serves the listener the box hands it.
    pub fn start(allow: AllowList) -> std::io::Result<EgressProxy> {
        Self::start_on(&tokio::runtime::Handle::current(), allow)
    }

    /// [`EgressProxy::start`] on a runtime of its own (one thread for all
    /// such proxies): for a caller that may block while its tree runs.
    pub fn start_detached(allow: AllowList) -> std::io::Result<EgressProxy> {
        Self::start_on(&detached_runtime()?, allow)
    }

    /// [`EgressProxy::start`] on `handle`'s runtime.
    pub fn start_on(
        handle: &tokio::runtime::Handle,
        allow: AllowList,
    ) -> std::io::Result<EgressProxy> {
        let _entered = handle.enter();
        // A short path: a unix socket's name holds 108 bytes.
        let dir = tempfile::Builder::new().prefix("wavecrew-net-").tempdir()?;
        let socket = dir.path().join("proxy.sock");
        let unix = UnixListener::bind(&socket)?;
        let log = Arc::new(Mutex::new(NetworkLog {
            mode: "allowlist".to_owned(),
            ..NetworkLog::default()
        }));
        let allow = Arc::new(allow);
        let served = Arc::clone(&log);
        let (box_pid, mut expected) = tokio::sync::watch::channel(None::<u32>);
        let task = handle.spawn(async move {
            // One box, once, and only the box: any other process of the
            // user (another attempt's agent) that finds the socket first is
            // turned away by its process id, and after the box, nobody is
            // accepted.
            let stream = loop {
                let Ok((stream, _)) = unix.accept().await else {
                    return;
                };
                let peer = stream.peer_cred().ok().and_then(|c| c.pid());
                let Ok(pid) = expected.wait_for(Option::is_some).await.map(|p| *p) else {
                    return;
                };
                if peer.and_then(|p| u32::try_from(p).ok()) == pid {
                    break stream;
                }
                let mut log = served
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                log.refused.insert(format!(
                    "(a process other than the agent's box, pid {}, on its proxy's socket) \
                     turned away",
                    peer.unwrap_or_default()
                ));
            };
            drop(unix);
            let received = async {
                let stream = stream.into_std()?;
                stream.set_nonblocking(false)?;
                tokio::task::spawn_blocking(move || crate::netns::receive_listener(&stream))
                    .await
                    .map_err(std::io::Error::other)?
            };
            let listener = match received.await.and_then(|l| {
                l.set_nonblocking(true)?;
                TcpListener::from_std(l)
            }) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!("egress proxy: no listener from the box: {e}");
                    return;
                }
            };
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    return;
                };
                let (allow, log) = (Arc::clone(&allow), Arc::clone(&served));
                tokio::spawn(async move {
                    if let Err(e) = serve(conn, &allow, &log).await {
                        tracing::debug!("egress proxy: {e}");
                    }
                });
            }
        });
        Ok(EgressProxy {
            dir,
            log,
            task,
            box_pid,
        })
    }

    /// The process id of the box that hands its listener over: the only
    /// process the proxy takes it from. Call once the box is started.
    pub fn expect_box(&self, pid: u32) {
        let _ = self.box_pid.send(Some(pid));
    }

    /// The socket the box connects to.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("proxy.sock")
    }

    /// What the agent's network did so far.
    pub fn log(&self) -> NetworkLog {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The folder of the socket (removed with the proxy).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        // Its connections end with the runtime's tasks; no new one is taken.
        self.task.abort();
    }
}

/// The most a request's head may hold.
const MAX_HEAD: usize = 64 * 1024;

/// One connection from the agent: its request checked, then relayed.
async fn serve(
    mut conn: TcpStream,
    allow: &AllowList,
    log: &Mutex<NetworkLog>,
) -> std::io::Result<()> {
    let record = |reached: bool, what: String| {
        let mut log = log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if reached {
            log.reached.insert(what);
        } else {
            log.refused.insert(what);
        }
    };
    let mut head = Vec::with_capacity(1024);
    let end = loop {
        let mut buf = [0u8; 4096];
        let n = conn.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = find(&head, b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > MAX_HEAD {
            record(false, "(a request head over 64 KiB) bad request".to_owned());
            return refuse(&mut conn, "400 Bad Request").await;
        }
        if head.first().is_some_and(|b| *b < 0x20) {
            // SOCKS and other binary greetings.
            record(
                false,
                "(not HTTP: SOCKS or raw bytes) bad request".to_owned(),
            );
            return Ok(());
        }
    };
    let (request, rest) = head.split_at(end);
    let text = String::from_utf8_lossy(request).into_owned();
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (method, target, version) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_host_port(target, 443).filter(|(h, _)| !h.contains('*'))
        else {
            record(false, format!("{target} bad request"));
            return refuse(&mut conn, "400 Bad Request").await;
        };
        let name = format!("{}:{port}", bracket(&host));
        if !allow.allows(&host, port) {
            record(false, format!("{name} not allowed"));
            return refuse(&mut conn, "403 Forbidden").await;
        }
        let Ok(mut upstream) = TcpStream::connect((host.as_str(), port)).await else {
            record(false, format!("{name} unreachable"));
            return refuse(&mut conn, "502 Bad Gateway").await;
        };
        record(true, name);
        conn.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(rest).await?;
        tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
        return Ok(());
    }
    let Some(after) = target.strip_prefix("http://") else {
        record(false, format!("{method} {target} bad request"));
        return refuse(&mut conn, "400 Bad Request").await;
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    let Some((host, port)) = split_host_port(authority, 80).filter(|(h, _)| !h.contains('*'))
    else {
        record(false, format!("{target} bad request"));
        return refuse(&mut conn, "400 Bad Request").await;
    };
    let name = format!("{}:{port}", bracket(&host));
    if !allow.allows(&host, port) {
        record(false, format!("{name} not allowed"));
        return refuse(&mut conn, "403 Forbidden").await;
    }
    let Ok(mut upstream) = TcpStream::connect((host.as_str(), port)).await else {
        record(false, format!("{name} unreachable"));
        return refuse(&mut conn, "502 Bad Gateway").await;
    };
    record(true, name);
    let mut forwarded = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let key = line
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if key.starts_with("proxy-") || key == "connection" || key == "keep-alive" {
            continue;
        }
        forwarded.push_str(line);
        forwarded.push_str("\r\n");
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    upstream.write_all(forwarded.as_bytes()).await?;
    upstream.write_all(rest).await?;
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

/// Answer `status` and close.
async fn refuse(conn: &mut TcpStream, status: &str) -> std::io::Result<()> {
    let body = format!("wavecrew: {status}: this host is not on the agent's allowlist\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(reply.as_bytes()).await?;
    conn.shutdown().await
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another process of the user that reaches the proxy's socket first
    /// (an agent of another attempt) is turned away, and said so.
    #[tokio::test]
    async fn only_the_box_may_hand_over_its_listener() {
        use tokio::io::AsyncReadExt;
        let proxy = EgressProxy::start(AllowList::default()).unwrap();
        proxy.expect_box(1);
        let mut imposter = tokio::net::UnixStream::connect(proxy.socket())
            .await
            .unwrap();
        let mut byte = [0u8; 1];
        let read =
            tokio::time::timeout(std::time::Duration::from_secs(30), imposter.read(&mut byte))
                .await
                .expect("the proxy closes the imposter's connection");
        assert_eq!(read.unwrap_or(0), 0);
        let log = proxy.log();
        assert!(
            log.refused.iter().any(|r| r.contains("turned away")),
            "{log:?}"
        );
    }
}
