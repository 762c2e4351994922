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

use std::net::SocketAddr;
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
        Self::start_resolving(handle, allow, Resolver::System)
    }

    /// [`EgressProxy::start_on`], names looked up by `resolver`.
    pub(crate) fn start_resolving(
        handle: &tokio::runtime::Handle,
        allow: AllowList,
        resolver: Resolver,
    ) -> std::io::Result<EgressProxy> {
        let resolver = Arc::new(resolver);
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
                let (allow, log, resolver) = (
                    Arc::clone(&allow),
                    Arc::clone(&served),
                    Arc::clone(&resolver),
                );
                tokio::spawn(async move {
                    if let Err(e) = serve(conn, &allow, &log, &resolver).await {
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

/// How long a client may take to send a request's head (and, in a
/// tunnel, its first bytes): a connection that says nothing is closed.
const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The most of a tunnel's first bytes read to find the TLS server name.
const MAX_HELLO: usize = 16 * 1024;

/// How the proxy finds the addresses of a name.
#[derive(Debug, Clone, Default)]
pub(crate) enum Resolver {
    /// The system's resolver.
    #[default]
    System,
    /// Fixed answers (tests).
    #[cfg(test)]
    Fixed(std::collections::HashMap<String, Vec<std::net::IpAddr>>),
}

impl Resolver {
    async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        match self {
            Resolver::System => Ok(tokio::net::lookup_host((host, port)).await?.collect()),
            #[cfg(test)]
            Resolver::Fixed(map) => Ok(map
                .get(host)
                .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
                .unwrap_or_default()),
        }
    }
}

/// The addresses of `host:port` the tree may reach: every address the name
/// resolves to, none of them internal ([`crate::allow_hosts::is_internal`])
/// unless the list names it. The connection goes to these very addresses,
/// never to a second lookup (a name that answers differently the second
/// time gains nothing). `Err`: why not, for the log.
async fn vetted(
    host: &str,
    port: u16,
    allow: &AllowList,
    resolver: &Resolver,
) -> Result<Vec<SocketAddr>, String> {
    let addrs = resolver
        .lookup(host, port)
        .await
        .map_err(|_| "unreachable (no address)".to_owned())?;
    if addrs.is_empty() {
        return Err("unreachable (no address)".to_owned());
    }
    if host.parse::<std::net::IpAddr>().is_ok() {
        // An IP literal is on the list itself.
        return Ok(addrs);
    }
    if let Some(inside) = addrs.iter().find(|a| {
        crate::allow_hosts::is_internal(a.ip()) && !allow.allows_internal(host, a.ip(), port)
    }) {
        return Err(format!(
            "resolves to {} (an address inside this machine or its network): list it in \
             allow_hosts to allow it",
            inside.ip()
        ));
    }
    Ok(addrs)
}

/// A connection to `host:port` for the tree: allowed by the list, to
/// addresses [`vetted`]; else why not, for the log, and the status to
/// answer.
async fn upstream(
    host: &str,
    port: u16,
    allow: &AllowList,
    resolver: &Resolver,
) -> Result<TcpStream, (String, &'static str)> {
    if !allow.allows(host, port) {
        return Err(("not allowed".to_owned(), "403 Forbidden"));
    }
    let addrs = vetted(host, port, allow, resolver)
        .await
        .map_err(|why| (why, "403 Forbidden"))?;
    TcpStream::connect(&addrs[..])
        .await
        .map_err(|_| ("unreachable".to_owned(), "502 Bad Gateway"))
}

/// The host named by a request head's `Host` header, when it has one.
fn host_header(lines: &[&str]) -> Option<String> {
    lines.iter().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("host")
            .then(|| split_host_port(v.trim(), 0).map(|(h, _)| h))
            .flatten()
    })
}

/// Whether `said` (a `Host` header's or a TLS server name's host) names
/// `target`.
fn same_host(said: &str, target: &str) -> bool {
    said.trim_end_matches('.')
        .eq_ignore_ascii_case(target.trim_end_matches('.'))
}

/// The server name (SNI) of a TLS ClientHello at the start of `bytes`:
/// `Ok(None)` when the bytes are no ClientHello, or one without a name;
/// `Err(())` when more bytes are needed.
fn client_hello_sni(bytes: &[u8]) -> Result<Option<String>, ()> {
    // A handshake record (22), TLS 1.x, then a ClientHello (1).
    if bytes.len() < 5 {
        return if bytes.first().is_some_and(|b| *b != 22) {
            Ok(None)
        } else {
            Err(())
        };
    }
    if bytes[0] != 22 || bytes[1] != 3 {
        return Ok(None);
    }
    let record = 5 + usize::from(u16::from_be_bytes([bytes[3], bytes[4]]));
    if bytes.len() < record {
        return Err(());
    }
    let mut p = Reader(&bytes[5..record]);
    let parsed = (|| {
        if p.u8()? != 1 {
            return None;
        }
        p.skip(3)?; // length
        p.skip(2 + 32)?; // version, random
        let n = usize::from(p.u8()?);
        p.skip(n)?; // session id
        let n = usize::from(p.u16()?);
        p.skip(n)?; // cipher suites
        let n = usize::from(p.u8()?);
        p.skip(n)?; // compression
        let n = usize::from(p.u16()?);
        let mut ext = Reader(p.take(n)?);
        while let (Some(kind), Some(len)) = (ext.u16(), ext.u16()) {
            let body = ext.take(usize::from(len))?;
            if kind != 0 {
                continue;
            }
            let mut names = Reader(body);
            let n = usize::from(names.u16()?);
            let mut list = Reader(names.take(n)?);
            while let Some(name_type) = list.u8() {
                let n = usize::from(list.u16()?);
                let name = list.take(n)?;
                if name_type == 0 {
                    return Some(Some(String::from_utf8_lossy(name).into_owned()));
                }
            }
        }
        Some(None)
    })();
    // A ClientHello that does not parse names nothing the proxy can check:
    // it is refused as one that names another host would be.
    Ok(parsed.unwrap_or(Some(String::new())))
}

/// A cursor over bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
}

/// One connection from the tree: its request checked, then relayed.
async fn serve(
    mut conn: TcpStream,
    allow: &AllowList,
    log: &Mutex<NetworkLog>,
    resolver: &Resolver,
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
    let read_head = async {
        loop {
            let mut buf = [0u8; 4096];
            let n = conn.read(&mut buf).await?;
            if n == 0 {
                return Ok(None);
            }
            head.extend_from_slice(&buf[..n]);
            if let Some(i) = find(&head, b"\r\n\r\n") {
                return Ok(Some(Ok(i + 4)));
            }
            if head.len() > MAX_HEAD {
                return Ok(Some(Err("(a request head over 64 KiB) bad request")));
            }
            if head.first().is_some_and(|b| *b < 0x20) {
                // SOCKS and other binary greetings.
                return Ok(Some(Err("(not HTTP: SOCKS or raw bytes) bad request")));
            }
        }
    };
    let end = match tokio::time::timeout(HEAD_TIMEOUT, read_head).await {
        Err(_) => {
            record(
                false,
                format!(
                    "(no request head within {} s) timed out",
                    HEAD_TIMEOUT.as_secs()
                ),
            );
            return refuse(&mut conn, "408 Request Timeout").await;
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(None)) => return Ok(()),
        Ok(Ok(Some(Err(why)))) => {
            record(false, why.to_owned());
            if why.starts_with("(not HTTP") {
                return Ok(());
            }
            return refuse(&mut conn, "400 Bad Request").await;
        }
        Ok(Ok(Some(Ok(end)))) => end,
    };
    let (request, rest) = head.split_at(end);
    let text = String::from_utf8_lossy(request).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    let first = lines.first().copied().unwrap_or_default();
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
        let mut upstream = match upstream(&host, port, allow, resolver).await {
            Ok(upstream) => upstream,
            Err((why, status)) => {
                record(false, format!("{name} {why}"));
                return refuse(&mut conn, status).await;
            }
        };
        conn.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        // The tunnel's first bytes name the host they are for (a TLS
        // server name, an HTTP `Host`): another host than the CONNECT's is
        // refused before a byte goes out.
        let mut first_bytes = rest.to_vec();
        let named = tokio::time::timeout(HEAD_TIMEOUT, async {
            loop {
                match client_hello_sni(&first_bytes) {
                    Ok(name) => return Ok(name),
                    Err(()) if first_bytes.len() > MAX_HELLO => return Ok(None),
                    Err(()) => {}
                }
                let mut buf = [0u8; 4096];
                let n = conn.read(&mut buf).await?;
                if n == 0 {
                    return Ok(None);
                }
                first_bytes.extend_from_slice(&buf[..n]);
            }
        })
        .await;
        let named: Option<String> = match named {
            Ok(Ok(named)) => named,
            Ok(Err(e)) => return Err(e),
            Err(_) => None,
        };
        let http_host = find(&first_bytes, b"\r\n\r\n").and_then(|i| {
            let head = String::from_utf8_lossy(&first_bytes[..i]).into_owned();
            host_header(&head.split("\r\n").collect::<Vec<_>>())
        });
        if let Some(said) = named.or(http_host)
            && !same_host(&said, &host)
        {
            record(
                false,
                format!(
                    "{name} tunnel for another host ({}) refused",
                    if said.is_empty() {
                        "a name that does not parse"
                    } else {
                        &said
                    }
                ),
            );
            return Ok(());
        }
        record(true, name);
        upstream.write_all(&first_bytes).await?;
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
    if let Some(said) = host_header(&lines[1..])
        && !same_host(&said, &host)
    {
        record(
            false,
            format!("{name} request for another host ({said}) refused"),
        );
        return refuse(&mut conn, "400 Bad Request").await;
    }
    let mut upstream = match upstream(&host, port, allow, resolver).await {
        Ok(upstream) => upstream,
        Err((why, status)) => {
            record(false, format!("{name} {why}"));
            return refuse(&mut conn, status).await;
        }
    };
    record(true, name);
    let mut forwarded = format!("{method} {path} {version}\r\n");
    for line in lines[1..].iter().filter(|l| !l.is_empty()) {
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

    /// A proxy for `allow`, names answered by `names`, with its listener
    /// handed over by this test process (as a box would): its port.
    async fn proxy_for(allow: &[&str], names: &[(&str, &str)]) -> (EgressProxy, u16) {
        let resolver = Resolver::Fixed(
            names
                .iter()
                .map(|(n, ip)| ((*n).to_owned(), vec![ip.parse().unwrap()]))
                .collect(),
        );
        let proxy = EgressProxy::start_resolving(
            &tokio::runtime::Handle::current(),
            AllowList::parse(allow).unwrap(),
            resolver,
        )
        .unwrap();
        proxy.expect_box(std::process::id());
        let socket = proxy.socket();
        let port = tokio::task::spawn_blocking(move || crate::netns::hand_over_listener(&socket))
            .await
            .unwrap()
            .unwrap();
        (proxy, port)
    }

    /// Send `bytes` to the proxy and read what it answers until it closes
    /// (or 5 s pass).
    async fn ask(port: u16, bytes: &[u8]) -> String {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        conn.write_all(bytes).await.unwrap();
        let mut got = Vec::new();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            conn.read_to_end(&mut got),
        )
        .await;
        String::from_utf8_lossy(&got).into_owned()
    }

    /// A listener on this machine that answers `ok` to anything.
    async fn upstream() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let _ = c.read(&mut buf).await;
                    let _ = c
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                        .await;
                });
            }
        });
        port
    }

    /// An allowed name that resolves inside the machine (loopback, cloud
    /// metadata) is refused before any byte goes out, unless the address
    /// itself is listed (here 127.0.0.1, not 127.0.0.2); the log says what
    /// it resolved to.
    #[tokio::test]
    async fn an_allowed_name_that_resolves_inside_is_refused_unless_its_address_is_listed() {
        let up = upstream().await;
        let (proxy, port) = proxy_for(
            &["*.example.com", "listed.example.org", "127.0.0.1"],
            &[
                ("evil.example.com", "127.0.0.2"),
                ("meta.example.com", "169.254.169.254"),
                ("listed.example.org", "127.0.0.1"),
            ],
        )
        .await;
        let said = ask(
            port,
            format!("CONNECT evil.example.com:{up} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert!(said.starts_with("HTTP/1.1 403"), "{said}");
        let said = ask(
            port,
            b"GET http://meta.example.com/latest HTTP/1.1\r\nHost: meta.example.com\r\n\r\n",
        )
        .await;
        assert!(said.starts_with("HTTP/1.1 403"), "{said}");
        let said = ask(
            port,
            format!(
                "GET http://listed.example.org:{up}/ HTTP/1.1\r\nHost: listed.example.org:{up}\r\n\r\n"
            )
            .as_bytes(),
        )
        .await;
        assert!(
            said.ends_with("ok"),
            "the listed address is reached: {said}"
        );
        let log = proxy.log();
        let refused = log.refused.iter().cloned().collect::<Vec<_>>().join("\n");
        assert!(
            refused.contains(&format!("evil.example.com:{up} resolves to 127.0.0.2")),
            "{refused}"
        );
        assert!(
            refused.contains("meta.example.com:80 resolves to 169.254.169.254"),
            "{refused}"
        );
    }

    /// A request whose `Host` names another host than its target, and a
    /// tunnel whose TLS server name or first request names another host
    /// than its CONNECT, are refused; a tunnel that names its own host
    /// goes through.
    #[tokio::test]
    async fn a_host_header_or_server_name_for_another_host_is_refused() {
        let up = upstream().await;
        let (proxy, port) = proxy_for(&["127.0.0.1"], &[]).await;
        let said = ask(
            port,
            format!("GET http://127.0.0.1:{up}/ HTTP/1.1\r\nHost: api.evil.example\r\n\r\n")
                .as_bytes(),
        )
        .await;
        assert!(said.starts_with("HTTP/1.1 400"), "{said}");
        let mut tunnel = format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n").into_bytes();
        tunnel.extend_from_slice(&client_hello("api.evil.example"));
        let said = ask(port, &tunnel).await;
        assert!(!said.contains("ok"), "{said}");
        let mut tunnel = format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n").into_bytes();
        tunnel.extend_from_slice(b"GET / HTTP/1.1\r\nHost: other.example\r\n\r\n");
        let said = ask(port, &tunnel).await;
        assert!(!said.ends_with("ok"), "{said}");
        let mut tunnel = format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n").into_bytes();
        tunnel.extend_from_slice(
            format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\n\r\n").as_bytes(),
        );
        let said = ask(port, &tunnel).await;
        assert!(said.ends_with("ok"), "its own host goes through: {said}");
        let refused = proxy
            .log()
            .refused
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            refused.contains("request for another host (api.evil.example)"),
            "{refused}"
        );
        assert!(
            refused.contains("tunnel for another host (api.evil.example)"),
            "{refused}"
        );
        assert!(
            refused.contains("tunnel for another host (other.example)"),
            "{refused}"
        );
    }

    /// A ClientHello (TLS 1.2 record) naming `name`.
    fn client_hello(name: &str) -> Vec<u8> {
        let name = name.as_bytes();
        let mut sni = Vec::new();
        let list_len = u16::try_from(3 + name.len()).unwrap();
        sni.extend_from_slice(&list_len.to_be_bytes());
        sni.push(0);
        sni.extend_from_slice(&u16::try_from(name.len()).unwrap().to_be_bytes());
        sni.extend_from_slice(name);
        let mut ext = vec![0, 0];
        ext.extend_from_slice(&u16::try_from(sni.len()).unwrap().to_be_bytes());
        ext.extend_from_slice(&sni);
        let mut body = vec![3, 3];
        body.extend_from_slice(&[0u8; 32]);
        body.push(0); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]); // one cipher suite
        body.extend_from_slice(&[1, 0]); // no compression
        body.extend_from_slice(&u16::try_from(ext.len()).unwrap().to_be_bytes());
        body.extend_from_slice(&ext);
        let mut hs = vec![1];
        let len = u32::try_from(body.len()).unwrap().to_be_bytes();
        hs.extend_from_slice(&len[1..]);
        hs.extend_from_slice(&body);
        let mut record = vec![22, 3, 1];
        record.extend_from_slice(&u16::try_from(hs.len()).unwrap().to_be_bytes());
        record.extend_from_slice(&hs);
        record
    }

    #[test]
    fn the_server_name_is_read_from_a_client_hello() {
        let hello = client_hello("registry.npmjs.org");
        assert_eq!(
            client_hello_sni(&hello),
            Ok(Some("registry.npmjs.org".to_owned()))
        );
        assert_eq!(client_hello_sni(&hello[..20]), Err(()), "more is needed");
        assert_eq!(client_hello_sni(b"GET / HTTP/1.1\r\n"), Ok(None));
    }

    /// A client that sends no request head is answered `408` and closed
    /// once the bound passes (the runtime's clock is paused: it advances
    /// when nothing else is left to do), and the log says so.
    #[tokio::test(start_paused = true)]
    async fn a_silent_client_is_timed_out() {
        let (proxy, port) = proxy_for(&["127.0.0.1"], &[]).await;
        let mut conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut got = Vec::new();
        conn.read_to_end(&mut got).await.unwrap();
        let said = String::from_utf8_lossy(&got);
        assert!(said.starts_with("HTTP/1.1 408"), "{said}");
        let refused = proxy.log().refused;
        assert!(
            refused
                .iter()
                .any(|r| r.contains("no request head within 10 s")),
            "{refused:?}"
        );
    }

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
