#!/usr/bin/env python3
"""The floor under `benches/run_engine.py noop` on this machine (by hand).

What does the on-disk contract alone cost per task, with no orchestrator at
all? For 500 no-op tasks, 4 threads each run `true` and then do only the
file work every finished task must leave behind (ccw-compat §2 and the
attempt folder of docs/attempts.md): the attempt folder
`attempts/<ID>/1/` with `prompt.md`, `stdout.log`, `stderr.log` and
`outcome.json`, the task file rewritten atomically twice (claimed, finished:
temp file, fsync, rename), and three bus records appended under a lock.
Printed beside the same threads only spawning `true` (Python's own cost)
and `xargs -P 4`: if the file work alone is above 2x of xargs, no
orchestrator that keeps this contract can be under 2x on this file system.

Usage: benches/noop_floor.py [--tasks N] [--rounds R] [--no-fsync]
"""

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

FSYNC = True


def atomic(path, data):
    tmp = f"{path}.tmp-{threading.get_ident()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if FSYNC:
            os.fsync(f.fileno())
    os.rename(tmp, path)
    if FSYNC:
        dfd = os.open(os.path.dirname(path), os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)


def spawn_only(session, i, bus_lock_path):
    subprocess.run(["true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def one_task(session, i, bus_lock_path):
    tid = f"IMPL-{i:05d}"
    task = os.path.join(session, "tasks", f"{tid}.json")
    atomic(task, json.dumps({"id": tid, "status": "in_progress"}).encode())
    attempt = os.path.join(session, "attempts", tid, "1")
    os.makedirs(attempt)
    with open(os.path.join(attempt, "prompt.md"), "w") as f:
        f.write(f"Task {tid}\n")
    with open(os.path.join(attempt, "stdout.log"), "wb") as out, open(
        os.path.join(attempt, "stderr.log"), "wb"
    ) as err:
        subprocess.run(["true"], stdout=out, stderr=err, check=True)
    atomic(os.path.join(attempt, "outcome.json"), b'{"outcome":"success"}')
    for kind in ("task_claimed", "impl_complete", "task_unblocked"):
        with open(bus_lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with open(os.path.join(session, "messages.jsonl"), "a") as bus:
                bus.write(json.dumps({"type": kind, "task": tid}) + "\n")
                bus.flush()
                if FSYNC:
                    os.fdatasync(bus.fileno())
    atomic(task, json.dumps({"id": tid, "status": "completed"}).encode())


def floor(n, slots, task=one_task):
    root = tempfile.mkdtemp(prefix="wavecrew-floor-")
    session = os.path.join(root, "session")
    os.makedirs(os.path.join(session, "tasks"))
    os.makedirs(os.path.join(session, "attempts"))
    lock = os.path.join(session, "lock")
    for i in range(n):
        with open(os.path.join(session, "tasks", f"IMPL-{i:05d}.json"), "w") as f:
            f.write("{}")
    todo = list(range(n))
    guard = threading.Lock()

    def worker():
        while True:
            with guard:
                if not todo:
                    return
                i = todo.pop()
            task(session, i, lock)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    shutil.rmtree(root)
    return wall


def xargs(n, slots):
    t0 = time.perf_counter()
    subprocess.run(
        ["xargs", "-P", str(slots), "-n", "1", "true"],
        input=("\n".join(str(i) for i in range(n)) + "\n").encode(),
        check=True,
    )
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-fsync", action="store_true", help="the same files, never synced")
    args = ap.parse_args()
    global FSYNC
    FSYNC = not args.no_fsync
    # The same threads spawning `true` with no file work: what Python's own
    # spawning adds, so the file work's share is the difference.
    print("| round | contract floor s | spawning only s | file work s | xargs s | floor / xargs | file work / xargs |")
    print("|---|---|---|---|---|---|---|")
    for r in range(args.rounds):
        f = floor(args.tasks, 4)
        s = floor(args.tasks, 4, spawn_only)
        x = xargs(args.tasks, 4)
        print(f"| {r} | {f:.2f} | {s:.2f} | {f - s:.2f} | {x:.3f} | {f / x:.1f} | {(f - s) / x:.1f} |")


if __name__ == "__main__":
    main()
