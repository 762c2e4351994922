//! The cockpit's HTTP server (axum, on the tokio runtime of the caller):
//! the page and its script and style, served from the binary; the
//! session's snapshot, a task in depth and its diff as JSON; the live feed
//! as server-sent events; the actions as POSTs.
//!
//! Safe by default: it binds where it is told (the CLI says loopback
//! unless `--listen`), every request carries the secret token (in the
//! query for what a browser loads, in the `x-wavecrew-token` header for an
//! action), an action refuses a cross-site request (`Sec-Fetch-Site` other
//! than `same-origin`/`none`, or an `Origin` other than the page's own),
//! and every response forbids framing and any asset from elsewhere
//! (`Content-Security-Policy: default-src 'self'`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use wavecrew_core::TaskId;

use crate::actions::{Action, ActionError, apply};
use crate::live::Feed;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// The header an action carries the token in.
pub const TOKEN_HEADER: &str = "x-wavecrew-token";

/// What the server serves.
#[derive(Debug, Clone)]
pub struct Cockpit {
    /// The session folder.
    pub session_dir: PathBuf,
    /// The secret every request must carry.
    pub token: String,
    /// The live feeds of the open pages (shared with [`Serving`]).
    feeds: Arc<Feeds>,
}

/// The live feeds open pages follow, and whether they are asked to end.
#[derive(Debug, Default)]
struct Feeds {
    /// Set when the cockpit closes: each feed sends what changed last,
    /// then ends.
    closing: std::sync::atomic::AtomicBool,
    /// The feeds still running.
    open: std::sync::atomic::AtomicUsize,
}

/// A cockpit listening: where, and the URL to open (with the token).
#[derive(Debug)]
pub struct Serving {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The URL of the page, token included.
    pub url: String,
    feeds: Arc<Feeds>,
}

impl Serving {
    /// Before the process that serves it ends (a run that finished): each
    /// open page's feed reads the session once more, whatever its poll
    /// interval, sends what changed (the last task's end, written
    /// milliseconds before) and ends; waits for them up to `limit`. A page
    /// open then shows the run as it ended, not as it was a poll before.
    pub async fn close(&self, limit: Duration) {
        use std::sync::atomic::Ordering;
        self.feeds.closing.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + limit;
        while self.feeds.open.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // What was sent leaves with the responses' last frames.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
#[error("listening on {addr}: {source}")]
pub struct ServeError {
    /// The address asked for.
    pub addr: SocketAddr,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// A new secret token: 128 random bits, as hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; 16];
    // The OS's random source failing is not something a cockpit can run without.
    getrandom::fill(&mut bytes).expect("the OS random source (getrandom) is readable");
    bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    })
}

impl Cockpit {
    /// A cockpit of `session_dir` with a fresh token.
    pub fn new(session_dir: PathBuf) -> Cockpit {
        Cockpit {
            session_dir,
            token: new_token(),
            feeds: Arc::default(),
        }
    }

    /// The routes.
    pub fn router(self) -> Router {
        let state = Arc::new(self);
        Router::new()
            .route("/", get(index))
            .route(
                "/app.js",
                get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
            )
            .route(
                "/app.css",
                get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }),
            )
            .route("/api/session", get(session))
            .route("/api/task/{id}", get(task))
            .route("/api/task/{id}/diff", get(diff))
            .route("/api/events", get(events))
            .route("/api/action/{name}", post(action))
            .layer(middleware::from_fn_with_state(Arc::clone(&state), guard))
            .with_state(state)
    }

    /// Bind `addr` (port 0: a free one) and serve until the runtime
    /// stops; returns once listening, with the URL to open.
    pub async fn serve(self, addr: SocketAddr) -> Result<Serving, ServeError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError { addr, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| ServeError { addr, source })?;
        let host = if bound.ip().is_unspecified() {
            "127.0.0.1".to_owned()
        } else if bound.is_ipv6() {
            format!("[{}]", bound.ip())
        } else {
            bound.ip().to_string()
        };
        let url = format!("http://{host}:{}/?token={}", bound.port(), self.token);
        let feeds = Arc::clone(&self.feeds);
        let app = self.router();
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!("cockpit server: {e}");
            }
        });
        Ok(Serving {
            addr: bound,
            url,
            feeds,
        })
    }
}

fn query_param<'a>(query: Option<&'a str>, key: &str) -> Option<&'a str> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// Constant-time comparison of the token (no early exit on the first
/// wrong byte).
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn refuse(status: StatusCode, why: &str) -> Response {
    let mut r = (status, axum::Json(json!({"error": why}))).into_response();
    secure_headers(r.headers_mut());
    r
}

fn secure_headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// Every request: the token, and for a POST the same-origin checks.
async fn guard(State(c): State<Arc<Cockpit>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let is_post = req.method() == axum::http::Method::POST;
    let given = if is_post {
        headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok())
    } else {
        query_param(req.uri().query(), "token")
    };
    if !given.is_some_and(|t| same_secret(t, &c.token)) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            if is_post {
                "this action needs the cockpit's token in the x-wavecrew-token header"
            } else {
                "this page needs the cockpit's token: open the URL `wavecrew ui` printed"
            },
        );
    }
    if is_post {
        if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
            && !matches!(site, "same-origin" | "none")
        {
            return refuse(StatusCode::FORBIDDEN, "a cross-site request is refused");
        }
        if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if origin != format!("http://{host}") {
                return refuse(StatusCode::FORBIDDEN, "a cross-origin request is refused");
            }
        }
    }
    let mut response = next.run(req).await;
    secure_headers(response.headers_mut());
    response
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn index(State(c): State<Arc<Cockpit>>) -> Response {
    // The token is hex (checked by the guard): safe in an attribute.
    let page = INDEX_HTML.replace("{{TOKEN}}", &c.token);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    wavecrew_sys::process::blocking(f).await
}

async fn session(State(c): State<Arc<Cockpit>>) -> Response {
    let dir = c.session_dir.clone();
    match off_thread(move || crate::view::session_view(&dir)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

fn task_id(raw: &str) -> Result<TaskId, Box<Response>> {
    TaskId::new(raw)
        .map_err(|e| Box::new(refuse(StatusCode::BAD_REQUEST, &format!("task id: {e}"))))
}

async fn task(State(c): State<Arc<Cockpit>>, UrlPath(id): UrlPath<String>) -> Response {
    let id = match task_id(&id) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let dir = c.session_dir.clone();
    match off_thread(move || crate::view::task_view(&dir, &id)).await {
        Some(v) => axum::Json(v).into_response(),
        None => refuse(StatusCode::NOT_FOUND, "no such task"),
    }
}

async fn diff(State(c): State<Arc<Cockpit>>, UrlPath(id): UrlPath<String>) -> Response {
    let id = match task_id(&id) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let dir = c.session_dir.clone();
    match off_thread(move || crate::view::task_diff(&dir, &id)).await {
        Ok(diff) => axum::Json(json!({
            "diff": diff.as_ref().map(|d| &d.text),
            "live": diff.as_ref().is_some_and(|d| d.live),
        }))
        .into_response(),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

async fn events(State(c): State<Arc<Cockpit>>, req: Request<Body>) -> Response {
    let from = query_param(req.uri().query(), "from")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let since = query_param(req.uri().query(), "since")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(std::time::UNIX_EPOCH, |ms| {
            std::time::UNIX_EPOCH + Duration::from_millis(ms)
        });
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(1024);
    let dir = c.session_dir.clone();
    let feeds = Arc::clone(&c.feeds);
    feeds.open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    // One thread per open page: it reads files, never the async threads.
    std::thread::spawn(move || {
        use std::sync::atomic::Ordering;
        let mut feed = Feed::new(&dir, from, since);
        while !tx.is_closed() {
            // Closing: one last read of everything, then the end.
            let last = feeds.closing.load(Ordering::SeqCst);
            let changes = if last { feed.poll_all() } else { feed.poll() };
            let sent = changes.into_iter().all(|change| {
                let event = Event::default()
                    .event(change.event)
                    .data(change.data.to_string());
                tx.blocking_send(event).is_ok()
            });
            if last || !sent {
                break;
            }
            std::thread::sleep(crate::live::BUS_POLL);
        }
        feeds.open.fetch_sub(1, Ordering::SeqCst);
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
        .into_response()
}

async fn action(
    State(c): State<Arc<Cockpit>>,
    UrlPath(name): UrlPath<String>,
    body: axum::body::Bytes,
) -> Response {
    let body: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => return refuse(StatusCode::BAD_REQUEST, &format!("body: {e}")),
        }
    };
    let task = body.get("task").and_then(Value::as_str).map(str::to_owned);
    let mut action = match Action::parse(&name, task.as_deref()) {
        Ok(a) => a,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    if let Action::Reject { note, comments, .. } = &mut action {
        body.get("note")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .clone_into(note);
        if let Some(c) = body.get("comments") {
            match serde_json::from_value(c.clone()) {
                Ok(c) => *comments = c,
                Err(e) => return refuse(StatusCode::BAD_REQUEST, &format!("comments: {e}")),
            }
        }
    }
    let dir = c.session_dir.clone();
    match off_thread(move || apply(&dir, &action)).await {
        Ok(done) => axum::Json(done).into_response(),
        Err(e @ (ActionError::UnknownTask { .. } | ActionError::Usage(_))) => {
            refuse(StatusCode::BAD_REQUEST, &e.to_string())
        }
        Err(e @ (ActionError::WrongState { .. } | ActionError::Remote { .. })) => {
            refuse(StatusCode::CONFLICT, &e.to_string())
        }
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One raw HTTP/1.1 request; the status code and the whole response.
    async fn request(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let text = format!(
            "{head}\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(text.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        let code = out[9..12].parse().unwrap();
        (code, out)
    }

    fn session() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".workflow/.team/TC-serve-2026-11-25");
        std::fs::create_dir_all(dir.join("tasks")).unwrap();
        (tmp, dir)
    }

    #[tokio::test]
    async fn every_request_needs_the_token_and_actions_refuse_other_sites() {
        let (_tmp, dir) = session();
        let cockpit = Cockpit::new(dir.clone());
        let token = cockpit.token.clone();
        let serving = cockpit.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
        assert!(
            serving.url.ends_with(&format!("/?token={token}")),
            "{}",
            serving.url
        );
        let addr = serving.addr;
        let (code, _) = request(addr, "GET / HTTP/1.1", "").await;
        assert_eq!(code, 401);
        let (code, _) = request(addr, "GET /api/session?token=wrong HTTP/1.1", "").await;
        assert_eq!(code, 401);
        let (code, page) = request(addr, &format!("GET /?token={token} HTTP/1.1"), "").await;
        assert_eq!(code, 200);
        assert!(
            page.contains("content-security-policy: default-src 'none'"),
            "{page}"
        );
        assert!(page.contains(&format!("app.js?token={token}")));
        let (code, _) = request(addr, &format!("GET /app.js?token={token} HTTP/1.1"), "").await;
        assert_eq!(code, 200);
        // An action with the token in the query only (what a form or a
        // link from another site could send) is refused.
        let (code, _) = request(
            addr,
            &format!("POST /api/action/pause?token={token} HTTP/1.1"),
            "{}",
        )
        .await;
        assert_eq!(code, 401);
        let (code, _) = request(
            addr,
            &format!(
                "POST /api/action/pause HTTP/1.1\r\nx-wavecrew-token: {token}\r\nSec-Fetch-Site: cross-site"
            ),
            "{}",
        )
        .await;
        assert_eq!(code, 403);
        let (code, _) = request(
            addr,
            &format!(
                "POST /api/action/pause HTTP/1.1\r\nx-wavecrew-token: {token}\r\nOrigin: http://evil.example"
            ),
            "{}",
        )
        .await;
        assert_eq!(code, 403);
        assert!(!wavecrew_core::Control::new(&dir).is_paused());
        let (code, out) = request(
            addr,
            &format!(
                "POST /api/action/pause HTTP/1.1\r\nx-wavecrew-token: {token}\r\nOrigin: http://{addr}\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/json"
            ),
            "{}",
        )
        .await;
        assert_eq!(code, 200, "{out}");
        assert!(wavecrew_core::Control::new(&dir).is_paused());
        let (code, out) = request(
            addr,
            &format!("POST /api/action/cancel HTTP/1.1\r\nx-wavecrew-token: {token}"),
            r#"{"task": "../../etc"}"#,
        )
        .await;
        assert_eq!(code, 400, "{out}");
    }
}
