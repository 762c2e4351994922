#!/usr/bin/env python3
"""The cockpit in a real browser (by hand): how long the page of a big
session takes to load, and how long a bus record takes to reach an open page.

A session of N tasks (default 5,000: a chain of waves, 50 tasks each, a
third of them completed, one bus record per completed task) is written in a
temporary project; `wavecrew ui` serves it; Debian's `chromium`, headless,
is driven over the DevTools protocol (a minimal websocket client below, the
standard library only).

* load: from `Page.navigate` until every task's box is in the page
  (`performance.now()` in the page when a MutationObserver sees the last
  one), over R fresh loads; the target is under 1 s;
* latency: a record appended to `.msg/messages.jsonl` (as the bus writes
  them: one line, one write) until the page's activity list shows it (the
  page's `Date.now()` from a MutationObserver minus the time just before the
  write, one clock), over K records; the target is a median under 200 ms.

Usage: benches/cockpit.py [--tasks N] [--loads R] [--records K] [--bin PATH]
(PATH: the `wavecrew` binary, default target/release/wavecrew, else
target/debug/wavecrew).
"""

import argparse
import base64
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse

SESSION = "TC-bench-cockpit-2026-11-25"


def write_session(root, n):
    s = os.path.join(root, ".workflow", ".team", SESSION)
    os.makedirs(os.path.join(s, "tasks"))
    os.makedirs(os.path.join(s, ".msg"))
    os.makedirs(os.path.join(s, "roles"))
    ids = [f"IMPL-{i:05d}" for i in range(1, n + 1)]
    graph = {}
    with open(os.path.join(s, ".msg", "messages.jsonl"), "w") as bus:
        for i, tid in enumerate(ids):
            wave = i // 50
            deps = [ids[(wave - 1) * 50 + (i % 50)]] if wave > 0 else []
            graph[tid] = {"depends_on": deps, "role": "developer"}
            done = i < n // 3
            task = {
                "id": tid, "subject": f"{tid}: task {i}", "description": f"task {i}",
                "status": "completed" if done else "pending", "owner": "developer",
                "blockedBy": deps, "blocks": [], "metadata": {},
                "created_at": "2026-11-25T12:00:00Z", "updated_at": "2026-11-25T12:00:00Z",
                "attempts": 1 if done else 0,
            }
            with open(os.path.join(s, "tasks", f"{tid}.json"), "w") as f:
                json.dump(task, f)
            if done:
                bus.write(json.dumps({
                    "id": f"MSG-{i + 1:03d}", "ts": "2026-11-25T12:00:00.000+00:00",
                    "from": "executor", "to": "coordinator", "type": "task_complete",
                    "summary": f"[executor] {tid} complete", "data": {"task_id": tid},
                }) + "\n")
    with open(os.path.join(s, "task-analysis.json"), "w") as f:
        json.dump({"capabilities": [], "dependency_graph": graph,
                   "roles": [{"name": "developer", "prefix": "IMPL"}]}, f)
    with open(os.path.join(s, "team-session.json"), "w") as f:
        json.dump({"session_id": SESSION, "task_description": "bench", "status": "active",
                   "team_name": SESSION, "roles": [{"name": "developer", "prefix": "IMPL",
                   "role_file": "roles/developer.md"}], "active_workers": [],
                   "completed_tasks": []}, f)
    with open(os.path.join(s, "roles", "developer.md"), "w") as f:
        f.write("# Role: developer\n")
    return s


class Ws:
    """The smallest websocket client CDP needs: text frames, masked."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                           f"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.buf = b""

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            hdr = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        self.sock.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            msg += self._read(n)
            if b0 & 0x80:
                return msg.decode()


class Browser:
    def __init__(self, profile):
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "--window-size=1400,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, "HOME": profile, "TMPDIR": profile}, start_new_session=True)
        for line in self.proc.stderr:
            line = line.decode(errors="replace")
            if "ws://" in line:
                self.ws = Ws(line[line.index("ws://"):].strip())
                break
        self.next = 0
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"})
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True})["sessionId"]
        self.call("Page.enable", {})

    def call(self, method, params):
        self.next += 1
        msg = {"id": self.next, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            r = json.loads(self.ws.recv())
            if r.get("id") == self.next:
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error']}")
                return r["result"]

    def eval(self, js):
        r = self.call("Runtime.evaluate", {"expression": js, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{js}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def until(self, js, timeout=120):
        deadline = time.time() + timeout
        while not self.eval(js):
            if time.time() > deadline:
                raise TimeoutError(js)
            time.sleep(0.01)

    def close(self):
        os.killpg(self.proc.pid, 9)
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=5000)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--records", type=int, default=30)
    ap.add_argument("--bin")
    a = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(here, "target"))
    binary = a.bin or next((p for p in (os.path.join(target, "release", "wavecrew"),
                                        os.path.join(target, "debug", "wavecrew"))
                            if os.path.exists(p)), None)
    if not binary:
        sys.exit("no wavecrew binary: cargo build --release --bin wavecrew, or --bin PATH")
    tmp = tempfile.mkdtemp(prefix="wavecrew-bench-cockpit-")
    ui = browser = None
    try:
        session = write_session(tmp, a.tasks)
        ui = subprocess.Popen([binary, "ui", session], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, start_new_session=True)
        url = ui.stdout.readline().decode().strip()
        profile = os.path.join(tmp, "profile")
        os.makedirs(profile)
        browser = Browser(profile)
        # Every box in the page: the time a MutationObserver, installed
        # before the page's script runs, sees the last one.
        browser.call("Page.addScriptToEvaluateOnNewDocument", {"source": f"""
            new MutationObserver((_, o) => {{
              if (!window.__loaded && document.querySelectorAll('.task').length >= {a.tasks}) {{
                window.__loaded = performance.now();
              }}
            }}).observe(document, {{subtree: true, childList: true}});"""})
        loads = []
        for _ in range(a.loads):
            browser.call("Page.navigate", {"url": url})
            browser.until("!!window.__loaded")
            loads.append(browser.eval("window.__loaded"))
        browser.until("document.querySelector('#live').textContent === 'live'")
        latencies = []
        log = os.path.join(session, ".msg", "messages.jsonl")
        for k in range(a.records):
            mark = f"bench-record-{k}"
            browser.eval(f"""window.__seen = null; new MutationObserver((_, o) => {{
                if ([...document.querySelectorAll('#activity li')].some(l => l.textContent.includes('{mark}'))) {{
                  window.__seen = Date.now(); o.disconnect(); }}
              }}).observe(document.querySelector('#activity'), {{childList: true}}); true""")
            line = json.dumps({"id": f"MSG-{900000 + k}", "ts": "2026-11-25T13:00:00.000+00:00",
                               "from": "bench", "to": "coordinator", "type": "bench",
                               "summary": f"[bench] {mark}", "data": {}}) + "\n"
            t0 = time.time() * 1000
            with open(log, "a") as f:
                f.write(line)
            browser.until("window.__seen !== null")
            latencies.append(browser.eval("window.__seen") - t0)
            time.sleep(0.05)
        print(f"tasks {a.tasks}: page load ms (every box drawn), {a.loads} loads: "
              f"median {statistics.median(loads):.0f}, max {max(loads):.0f}  (target < 1000)")
        print(f"bus record → open page ms, {a.records} records: "
              f"median {statistics.median(latencies):.0f}, max {max(latencies):.0f}  (target median < 200)")
    finally:
        if browser:
            browser.close()
        if ui:
            os.killpg(ui.pid, 15)
            ui.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
