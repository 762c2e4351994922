#!/usr/bin/env python3
"""One session over several hosts against one host, on the real binaries (by hand, not in CI).

Writes N independent no-op tasks (the agent is `true`: it changes nothing, so
nothing lands) in a fresh git project, then runs them twice, as a user would:

  file   `wavecrew run --max-parallel <slots>`: the file engine, one host
  nats   a nats-server (JetStream, a temporary store), <hosts> `wavecrew worker
         --slots <slots>` processes (each its own --host-id and --data-dir), and
         `wavecrew run --engine … --max-parallel <hosts * slots>`

and prints the wall time and each task's latency, from its dispatch (the
`task_unblocked` record) to its end coming home (its `task_complete` record in
`messages.jsonl`), p50 and p99.

The "hosts" here are processes on this machine: the figures are the engine's
own cost per ticket (claim, cache sync, worktree, kit, bundle and pack, the
compare-and-set, the mirror), not the speed-up of real extra machines.

Usage: benches/scale_out.py [--tasks 1000] [--hosts 3] [--slots 4] [--keep]
Needs `nats-server` on PATH (scripts/test.sh installs it).
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime

from run_engine import BIN, ROOT, write_session


def build():
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "wavecrew-cli"], cwd=ROOT, check=True
    )


def git(root, *args):
    subprocess.run(
        ["git", *args],
        cwd=root,
        check=True,
        stdout=subprocess.DEVNULL,
        env=dict(
            os.environ,
            GIT_AUTHOR_NAME="bench",
            GIT_AUTHOR_EMAIL="bench@localhost",
            GIT_COMMITTER_NAME="bench",
            GIT_COMMITTER_EMAIL="bench@localhost",
        ),
    )


def write_project(root, n):
    s = write_session(root, {i: [] for i in range(n)})
    with open(os.path.join(root, "wavecrew.toml"), "w") as f:
        f.write(
            "[aliases]\nagent = \"bench\"\ncodex = \"bench\"\n\n"
            "[backends.bench]\nkind = \"command\"\n"
            "argv = [\"true\"]\nprompt = \"stdin\"\nstream = \"none\"\n\n"
            "[routing]\nmax_retries = 0\nfallback = []\n"
        )
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write(".workflow/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "bench")
    return s


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ts(text):
    return datetime.fromisoformat(text).timestamp()


def latencies(session):
    """Seconds from each task's dispatch to its end being recorded."""
    start, end = {}, {}
    with open(os.path.join(session, ".msg", "messages.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            task = (r.get("data") or {}).get("task_id")
            if not task:
                continue
            if r["type"] == "task_unblocked":
                start[task] = ts(r["ts"])
            elif r["type"] == "task_complete":
                end[task] = ts(r["ts"])
    return sorted(end[t] - start[t] for t in end if t in start)


def pct(values, p):
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run(argv, cwd, log):
    t0 = time.perf_counter()
    with open(log, "wb") as err:
        p = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ, CI="1"))
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        with open(log) as f:
            sys.exit(f"{argv[:3]} failed ({p.returncode}):\n{f.read()[-3000:]}")
    return wall


def file_engine(tmp, n, slots):
    root = os.path.join(tmp, "file")
    os.makedirs(root)
    session = write_project(root, n)
    wall = run(
        [os.path.join(BIN, "wavecrew"), "run", session, "--max-parallel", str(slots)],
        root,
        os.path.join(tmp, "file.log"),
    )
    return wall, latencies(session)


def nats_engine(tmp, n, hosts, slots):
    root = os.path.join(tmp, "nats")
    os.makedirs(root)
    session = write_project(root, n)
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    server = subprocess.Popen(
        ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", os.path.join(tmp, "js")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers = []
    try:
        time.sleep(0.5)
        for h in range(hosts):
            workers.append(
                subprocess.Popen(
                    [
                        os.path.join(BIN, "wavecrew"), "worker", "--engine", url,
                        "--slots", str(slots), "--host-id", f"h{h + 1}",
                        "--data-dir", os.path.join(tmp, f"h{h + 1}"), "--exit-when-done",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=open(os.path.join(tmp, f"h{h + 1}.log"), "wb"),
                )
            )
        wall = run(
            [
                os.path.join(BIN, "wavecrew"), "run", session, "--engine", url,
                "--max-parallel", str(hosts * slots),
            ],
            root,
            os.path.join(tmp, "coordinator.log"),
        )
        for w in workers:
            w.wait(timeout=60)
    finally:
        for w in workers:
            w.kill()
        server.kill()
    return wall, latencies(session)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if shutil.which("nats-server") is None:
        sys.exit("nats-server is not on PATH (scripts/test.sh installs it)")
    if not a.no_build:
        build()
    tmp = tempfile.mkdtemp(prefix="wavecrew-scale-")
    try:
        rows = [
            (f"file engine, 1 host x {a.slots}", *file_engine(tmp, a.tasks, a.slots)),
            (
                f"NATS, {a.hosts} hosts x {a.slots}",
                *nats_engine(tmp, a.tasks, a.hosts, a.slots),
            ),
        ]
        print(f"{a.tasks} no-op tasks")
        print(f"{'engine':<26} {'wall s':>8} {'tasks/s':>8} {'p50 s':>7} {'p99 s':>7}")
        for name, wall, lat in rows:
            assert len(lat) == a.tasks, f"{name}: {len(lat)} of {a.tasks} tasks measured"
            print(
                f"{name:<26} {wall:8.1f} {a.tasks / wall:8.1f} {pct(lat, 50):7.2f} {pct(lat, 99):7.2f}"
            )
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
