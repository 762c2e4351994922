//! The cockpit in a real browser: Debian's `chromium`, headless, driven
//! over the DevTools protocol (a small client on a websocket) while
//! `wavecrew run --ui` runs gated scripted agents. The page sees a task go
//! from running to completed without a reload, shows agent text holding
//! markup as text, opens a task's diff, and cancels a running task; a
//! request without the token is refused. With `WAVECREW_UPDATE_DOCS=1`
//! the screenshots of `docs/ui.md` are written from this browser.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wavecrew_core::{TaskId, TaskStatus, TaskStore};
use wavecrew_testkit::bin_path;

use crate::cockpit::{BackgroundRun, Gates, state, until, until_state};
use crate::team::project;

const PATIENCE: Duration = Duration::from_secs(120);

/// Headless Chromium and one page of it, over the DevTools protocol.
pub(crate) struct Browser {
    child: Child,
    ws: tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Start Chromium and open an empty page.
    pub(crate) fn start() -> Browser {
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("chromium is not installed: scripts/test.sh installs Debian's chromium");
        let profile = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--remote-debugging-port=0",
            "--window-size=1400,900",
            &format!("--user-data-dir={}", profile.path().display()),
            "about:blank",
        ])
        // Chromium's own temporary files go with the profile.
        .env("HOME", profile.path())
        .env("TMPDIR", profile.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().unwrap();
        // "DevTools listening on ws://127.0.0.1:<port>/devtools/browser/<id>"
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && let Some(at) = line.find("ws://") {
                    let _ = tx.send(line[at..].trim().to_owned());
                    sent = true;
                }
            }
        });
        let Ok(url) = rx.recv_timeout(PATIENCE) else {
            wavecrew_sys::process::kill_group(Some(child.id()));
            let _ = child.wait();
            panic!("chromium did not say where its DevTools listen");
        };
        let (mut ws, _) = tungstenite::connect(url.as_str()).unwrap();
        if let tungstenite::stream::MaybeTlsStream::Plain(s) = ws.get_mut() {
            s.set_read_timeout(Some(PATIENCE)).unwrap();
        }
        let mut b = Browser {
            child,
            ws,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = b.call("Target.createTarget", &json!({"url": "about:blank"}));
        let attached = b.call(
            "Target.attachToTarget",
            &json!({"targetId": target["targetId"], "flatten": true}),
        );
        attached["sessionId"]
            .as_str()
            .unwrap()
            .clone_into(&mut b.session);
        b.call("Page.enable", &json!({}));
        b.call("Runtime.enable", &json!({}));
        b
    }

    /// Send a command (to the page once attached); its result.
    pub(crate) fn call(&mut self, method: &str, params: &Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws
            .send(tungstenite::Message::text(msg.to_string()))
            .unwrap();
        loop {
            let m = self.ws.read().unwrap();
            let tungstenite::Message::Text(text) = m else {
                continue;
            };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// Evaluate `js` in the page (promises awaited); its value.
    pub(crate) fn eval(&mut self, js: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            &json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{js}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Wait until `js` is true in the page; past PATIENCE, fail showing the
    /// page's text as it was then.
    pub(crate) fn until(&mut self, what: &str, js: &str) {
        let deadline = Instant::now() + PATIENCE;
        while self.eval(js) != json!(true) {
            if Instant::now() >= deadline {
                let page = self.eval("document.body ? document.body.innerText.slice(0, 4000) : ''");
                panic!(
                    "gave up after {PATIENCE:?} waiting in the page for {what} ({js}); it showed:\n{}",
                    page.as_str().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub(crate) fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", &json!({"url": url}));
        self.until("the page loaded", "document.readyState === 'complete'");
    }

    /// A PNG of the page.
    pub(crate) fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine as _;
        let r = self.call("Page.captureScreenshot", &json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ask it to close (it cleans up after itself), then make sure.
        self.session.clear();
        self.next_id += 1;
        let close = json!({"id": self.next_id, "method": "Browser.close"});
        let _ = self.ws.send(tungstenite::Message::text(close.to_string()));
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.ws.close(None);
        wavecrew_sys::process::kill_group(Some(self.child.id()));
        let _ = self.child.wait();
    }
}

/// One raw HTTP GET of `path` on `addr`: the status code.
fn get_status(addr: &str, path: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out[9..12].parse().unwrap()
}

/// Whether a PNG has something drawn (not one flat colour).
fn drawn(png: &[u8]) -> bool {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let pixels = &buf[..info.buffer_size()];
    let first = &pixels[..3];
    pixels
        .chunks(info.color_type.samples())
        .filter(|p| &p[..3] != first)
        .count()
        > 1000
}

fn docs_shot(name: &str, png: &[u8]) {
    assert!(drawn(png), "the screenshot {name} is blank");
    if std::env::var_os("WAVECREW_UPDATE_DOCS").is_some() {
        let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/images")
            .join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

/// Read the cockpit's URL from the run's stdout (the only line it prints
/// there before the end).
fn cockpit_url(run: &mut BackgroundRun<'_>) -> String {
    let stdout = run.child.as_mut().unwrap().stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(l)) = lines.next() {
            let _ = tx.send(l);
        }
        // Keep reading so the run never blocks on a full pipe.
        for _ in lines {}
    });
    rx.recv_timeout(PATIENCE)
        .expect("wavecrew run --ui printed no URL")
}

#[test]
fn the_cockpit_follows_a_run_live_shows_agent_text_as_text_opens_a_diff_and_cancels() {
    let gates = Gates::new();
    let markup = "<script>window.__pwned=1</script><b>IMPL-001</b> & <img src=x onerror=\"window.__pwned=2\">";
    let p = project(
        &[
            ("IMPL-001", &[], "developer"),
            ("IMPL-002", &[], "developer"),
            ("IMPL-003", &["IMPL-001"], "developer"),
        ],
        &json!([
            gates.scenario("IMPL-001", markup),
            gates.scenario("IMPL-002", "IMPL-002 starts"),
            gates.scenario("IMPL-003", "IMPL-003 starts"),
        ]),
        "",
    );
    let tasks = ["IMPL-001", "IMPL-002", "IMPL-003"];
    let mut run = BackgroundRun::start(&p, &gates, &tasks, &["--ui", "--max-parallel", "2"]);
    let url = cockpit_url(&mut run);
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.split('/').next())
        .unwrap()
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{url}");
    // Without the token, nothing is served.
    assert_eq!(get_status(&addr, "/"), 401);
    assert_eq!(get_status(&addr, "/api/session"), 401);
    assert_eq!(get_status(&addr, "/api/events?from=0"), 401);

    let mut b = Browser::start();
    b.navigate(&url);
    b.until(
        "IMPL-001 shown running",
        "document.querySelector('#task-IMPL-001')?.dataset.state === 'in_progress'",
    );
    // Any reload from here on would lose this.
    b.eval("window.__same_page = 1; true");
    b.eval("document.querySelector('#task-IMPL-001').click(); true");
    b.until(
        "IMPL-001's agent text in its events",
        "[...document.querySelectorAll('#attempts .event .text')].some(e => e.textContent.includes('window.__pwned=1'))",
    );
    // The markup is text: the characters are there, no element was made
    // from them, and no script of theirs ran.
    let text = b.eval(
        "[...document.querySelectorAll('#attempts .event .text')].map(e => e.textContent).join('\\n')",
    );
    assert!(text.as_str().unwrap().contains(markup), "{text}");
    assert_eq!(
        b.eval("document.querySelectorAll('#attempts b, #attempts img, #attempts script, #activity b, #activity img, #activity script').length"),
        json!(0)
    );
    assert_eq!(b.eval("typeof window.__pwned"), json!("undefined"));
    docs_shot("cockpit-running.png", &b.screenshot());

    // Running → completed, live.
    gates.open("IMPL-001");
    b.until(
        "IMPL-001 shown completed",
        "document.querySelector('#task-IMPL-001').dataset.state === 'completed'",
    );
    assert_eq!(
        b.eval("window.__same_page"),
        json!(1),
        "the page was reloaded"
    );
    assert_eq!(state(&p, "IMPL-001"), Some(TaskStatus::Completed));
    // It landed: the merge queue says so, live too.
    b.until(
        "IMPL-001 landed in the merge queue",
        "document.querySelector('#mq-landed').textContent.includes('IMPL-001')",
    );

    // Its diff.
    b.eval("document.querySelector('#task-IMPL-001').click(); true");
    b.until(
        "IMPL-001 open",
        "document.querySelector('#detail-state').textContent === 'completed'",
    );
    b.eval("document.querySelector('#show-diff').click(); true");
    b.until(
        "the diff of IMPL-001",
        "document.querySelector('#diff').textContent.includes('out/IMPL-001.txt')",
    );
    assert_eq!(
        b.eval("[...document.querySelectorAll('#diff .add')].some(e => e.textContent === '+IMPL-001\\n')"),
        json!(true)
    );
    docs_shot("cockpit-diff.png", &b.screenshot());

    // Cancel the running IMPL-002 from the page.
    until_state(&p, "IMPL-002", TaskStatus::InProgress);
    b.eval("document.querySelector('#task-IMPL-002').click(); true");
    b.until(
        "IMPL-002 open and cancellable",
        "document.querySelector('#detail-state').textContent === 'in_progress' && !document.querySelector('#cancel').disabled",
    );
    // Its work in progress, not committed yet, in its diff.
    b.eval("document.querySelector('#show-diff').click(); true");
    b.until(
        "IMPL-002's work in progress",
        "document.querySelector('#diff').textContent.includes('Work in progress') && [...document.querySelectorAll('#diff .add')].some(e => e.textContent === '+IMPL-002\\n')",
    );
    b.eval("document.querySelector('#cancel').click(); true");
    b.until(
        "IMPL-002 shown failed",
        "document.querySelector('#task-IMPL-002').dataset.state === 'failed'",
    );
    b.until(
        "the cancel in the activity",
        "document.querySelector('#activity').textContent.includes('IMPL-002 cancelled by a person')",
    );
    let task = p.store().get(&TaskId::new("IMPL-002").unwrap()).unwrap();
    assert_eq!(task.result.as_ref().unwrap()["cancelled"], true);
    assert_eq!(
        b.eval("window.__same_page"),
        json!(1),
        "the page was reloaded"
    );

    gates.open("IMPL-003");
    b.until(
        "IMPL-003 shown completed",
        "document.querySelector('#task-IMPL-003').dataset.state === 'completed'",
    );
    assert_eq!(run.wait(), 1, "IMPL-002 was cancelled: the run ends failed");
    drop(b);
    // The finished session is still served by `wavecrew ui`.
    let mut ui = Command::new(bin_path("wavecrew"))
        .args(["ui", p.session().to_str().unwrap()])
        .current_dir(p.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(ui.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut b = Browser::start();
    b.navigate(line.trim());
    b.until(
        "the finished session shown",
        "document.querySelector('#task-IMPL-003')?.dataset.state === 'completed' && document.querySelector('#task-IMPL-002').dataset.state === 'failed'",
    );
    let _ = ui.kill();
    let _ = ui.wait();
}

#[test]
fn a_person_reviews_in_the_page_comments_a_line_rejects_then_approves_and_sees_it_land() {
    use crate::cockpit_review::{Run, awaiting, review_project, show, task};
    let note = "Name it v2.";
    let p = review_project(note);
    let root = p.path();
    let mut run = Run::start(root, &["--ui", "--max-parallel", "1"]);
    let stdout = run.0.as_mut().unwrap().stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(l)) = lines.next() {
            let _ = tx.send(l);
        }
        for _ in lines {}
    });
    let url = rx.recv_timeout(PATIENCE).expect("no URL printed");
    let mut b = Browser::start();
    b.navigate(&url);
    b.until(
        "IMPL-001 shown awaiting review",
        "document.querySelector('#task-IMPL-001')?.dataset.review === 'awaiting'",
    );
    let first = awaiting(root, "IMPL-001").unwrap();
    assert_eq!(
        b.eval("document.querySelector('#mq-awaiting-review').textContent"),
        json!("IMPL-001")
    );
    b.eval("window.__same_page = 1; document.querySelector('#task-IMPL-001').click(); true");
    b.until(
        "the review panel",
        "!document.querySelector('#review').hidden",
    );
    b.eval("document.querySelector('#show-diff').click(); true");
    b.until(
        "the diff's commentable line",
        "!!document.querySelector('#diff .line[data-file=\"out/one.txt\"][data-line=\"1\"]')",
    );
    // A comment on line 1 of out/one.txt, and a note; markup stays text.
    b.eval(
        "document.querySelector('#diff .line[data-file=\"out/one.txt\"][data-line=\"1\"]').click(); \
         document.querySelector('#diff .comment-form input').value = 'say <i>v2</i> here'; \
         document.querySelector('#diff .comment-form button').click(); \
         document.querySelector('#review-note').value = 'Name it v2.'; true",
    );
    assert_eq!(
        b.eval("document.querySelector('#review-comments li').firstChild.textContent"),
        json!("out/one.txt line 1: say <i>v2</i> here")
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#review-comments i').length"),
        json!(0)
    );
    docs_shot("cockpit-review.png", &b.screenshot());
    b.eval("document.querySelector('#reject').click(); true");
    until(
        "the revision awaiting review",
        || awaiting(root, "IMPL-001"),
        |br| br.as_ref().is_some_and(|br| *br != first),
    );
    let prompts: Vec<String> =
        std::fs::read_dir(crate::cockpit_review::session_dir(root).join("attempts/IMPL-001"))
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("prompt.md")).ok())
            .collect();
    assert!(
        prompts
            .iter()
            .any(|p| p.contains(note) && p.contains("- `out/one.txt` line 1: say <i>v2</i> here")),
        "{prompts:#?}"
    );
    // The page follows: the revision waits for review; approve it.
    b.until(
        "the revision shown awaiting review",
        "document.querySelector('#task-IMPL-001').dataset.review === 'awaiting' && !document.querySelector('#review').hidden",
    );
    b.eval("document.querySelector('#approve').click(); true");
    b.until(
        "IMPL-001 shown completed",
        "document.querySelector('#task-IMPL-001').dataset.state === 'completed'",
    );
    b.until(
        "IMPL-001 landed in the merge queue",
        "document.querySelector('#mq-landed').textContent.includes('IMPL-001')",
    );
    // The run first (on a loaded machine the dependent task takes a while),
    // saying where it stands if it never gets there; then the page.
    let done = crate::cockpit::until(
        "IMPL-002 completed in the store",
        || task(root, "IMPL-002"),
        |t| {
            t.as_ref()
                .is_some_and(|t| t.status == TaskStatus::Completed || t.status.is_unsuccessful())
        },
    );
    let done = done.unwrap();
    assert_eq!(
        done.status,
        TaskStatus::Completed,
        "IMPL-002 ended {done:?}"
    );
    b.until(
        "IMPL-002 shown completed",
        "document.querySelector('#task-IMPL-002').dataset.state === 'completed'",
    );
    assert_eq!(
        b.eval("window.__same_page"),
        json!(1),
        "the page was reloaded"
    );
    assert_eq!(run.wait(), 0);
    assert_eq!(
        show(root, "wavecrew/TC-review-2026-11-25:out/one.txt").as_deref(),
        Some("one v2")
    );
    assert_eq!(
        task(root, "IMPL-001").unwrap().status,
        TaskStatus::Completed
    );
}
