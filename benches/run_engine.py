#!/usr/bin/env python3
"""The real `wavecrew run` path, measured as a user runs it (by hand, not in CI).

Builds the release binaries once, then for each case writes a ccw session of
IMPL-* tasks in a fresh project whose agent is a `command` backend, and
times `wavecrew run` as a whole process:

  makespan  random 200-task DAGs, agents sleeping log-normal durations around
            0.5 s, 4 and 16 slots: wall time / max(critical path, work / slots),
            and where each run's critical chain spent its time (read from the
            bus: before each agent, after it, between tasks)
  noop      500 no-op tasks (`true` as the agent) vs the same agent run 500
            times by `xargs -P <slots>`
  cpu       the orchestrator's own CPU time per task (children excluded) for
            500, 1000, 2000 and 5000 no-op tasks
  chain     a chain of 30 tasks whose agent sleeps 0.2 s, in place, in a git
            repository and in a folder without git: what each link of a
            critical path costs beyond its agent (wall time minus the sleeps,
            per task), the figure a makespan's ratio is made of
  isolation 300 no-op tasks, 4 slots, in place, in the default mode in a git
            repository and in a folder without git (the shadow repository),
            beside git's own floor for the same steps by hand, 4 at a time
            (worktree add and remove; and issue 27's floor: add, an empty
            commit, remove, then every branch merged): the isolation cost
            per task against them (target: at most 1.5x)

makespan runs in the default mode in a git repository (`--mode git`), or
with `--mode shadow` / `--mode in-place`; noop and cpu measure the engine
alone (in place).

The floor under `noop` (the file work the on-disk contract needs, with no
orchestrator) is measured by `benches/noop_floor.py`.

Usage: benches/run_engine.py [makespan|noop|cpu|chain|isolation ...] [--seeds N] [--mode M] [--keep]
"""

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("WAVECREW_BIN_DIR", os.path.join(ROOT, "target", "release"))
SESSION = "TC-bench-2026-11-23"


def build():
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "wavecrew-cli"],
        cwd=ROOT,
        check=True,
    )


def random_dag(n, rng, max_deps=3, window=20):
    """Each task depends on up to `max_deps` of the `window` tasks before it."""
    deps = {}
    for i in range(n):
        lo = max(0, i - window)
        k = rng.randint(0, min(max_deps, i - lo))
        deps[i] = sorted(rng.sample(range(lo, i), k)) if k else []
    return deps


def tid(i):
    return f"IMPL-{i + 1:05d}"


# How a project is laid out and run: `in-place` (the engine's own cost, as
# issue 12 measured it: no worktrees, `--max-parallel` keeps the slots
# parallel), `git` (the default mode in a git repository: a worktree per
# task, the merge queue), `shadow` (the default mode in a folder without
# git: the session's shadow repository).
MODES = ("in-place", "git", "shadow")


def write_project(root, deps, agent_argv, mode="in-place"):
    s = write_session(root, deps)
    with open(os.path.join(root, "wavecrew.toml"), "w") as f:
        f.write(
            "[aliases]\nagent = \"bench\"\ncodex = \"bench\"\n\n"
            "[backends.bench]\nkind = \"command\"\n"
            f"argv = {json.dumps(agent_argv)}\nprompt = \"stdin\"\nstream = \"none\"\n\n"
            "[routing]\nmax_retries = 0\nfallback = []\n\n"
            + ("[isolation]\nmode = \"in-place\"\n" if mode == "in-place" else "")
        )
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write("bench\n")
    if mode == "git":
        git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
        with open(os.path.join(root, ".gitignore"), "w") as f:
            f.write(".workflow/\nwavecrew.toml\n")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(git + ["commit", "-qm", "start"], cwd=root, check=True)
    return s


def write_session(root, deps):
    """The ccw session of IMPL-* tasks (`deps`: index -> indices it waits for)."""
    s = os.path.join(root, ".workflow", ".team", SESSION)
    os.makedirs(os.path.join(s, "roles"))
    graph = {tid(i): {"depends_on": [tid(d) for d in ds], "role": "developer"} for i, ds in deps.items()}
    roles = [{"name": "developer", "prefix": "IMPL"}]
    with open(os.path.join(s, "task-analysis.json"), "w") as f:
        json.dump({"capabilities": [], "dependency_graph": graph, "roles": roles}, f)
    with open(os.path.join(s, "team-session.json"), "w") as f:
        json.dump(
            {
                "session_id": SESSION,
                "task_description": "bench",
                "status": "active",
                "team_name": SESSION,
                "roles": [{"name": "developer", "prefix": "IMPL", "role_file": "roles/developer.md"}],
                "active_workers": [],
                "completed_tasks": [],
            },
            f,
        )
    with open(os.path.join(s, "roles", "developer.md"), "w") as f:
        f.write(
            "# Role: developer\n\n## Identity\nThe developer.\n\n## Boundaries\n"
            "The project only.\n\n## Execution\nDo the task.\n"
        )
    return s


def run_wavecrew(root, session, slots, cpu=False):
    """Wall time of `wavecrew run`, and its own CPU seconds when `cpu`."""
    argv = [os.path.join(BIN, "wavecrew"), "run", session, "--max-parallel", str(slots)]
    env = dict(os.environ, CI="1")
    # Progress goes to a file, never a pipe nobody reads while we wait.
    errlog = open(os.path.join(root, "wavecrew-run.log"), "w+b")
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=errlog)
    own = None
    if cpu:
        # Wait without reaping, then read the zombie's own times (children
        # are counted separately by the kernel, in cutime/cstime).
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        with open(f"/proc/{p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        own = (int(fields[11]) + int(fields[12])) / tick
    p.wait()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        errlog.seek(0)
        sys.exit(f"wavecrew run failed ({p.returncode}):\n{errlog.read().decode()[-3000:]}")
    return wall, own


def wall_in_fresh_project(deps, agent_argv, mode, slots):
    """Wall time of `wavecrew run` on a new project of `deps` in `mode`
    (removed afterwards, worktrees beside it included)."""
    with tempfile.TemporaryDirectory(prefix="wavecrew-bench-") as tmp:
        root = os.path.join(tmp, "project")
        os.makedirs(root)
        session = write_project(root, deps, agent_argv, mode)
        wall, _ = run_wavecrew(root, session, slots)
    return wall


def critical_path(deps, dur):
    finish = {}
    for i in sorted(deps):
        finish[i] = dur[i] + max((finish[d] for d in deps[i]), default=0.0)
    return max(finish.values())


def chain_breakdown(session, deps, slept):
    """Where the time of the run's critical chain went, from the bus: the
    chain is followed back from the task that ended last through the
    dependency that ended last; per link, ms from its worker's start to its
    agent's (pre), from its agent's end to its completion (post), from its
    last dependency's completion to its worker's start (dispatch), and its
    agent's own time beyond the sleep (interpreter start-up)."""
    from datetime import datetime

    spawned, started, done = {}, {}, {}
    with open(os.path.join(session, ".msg", "messages.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            task = m.get("data", {}).get("task_id")
            at = datetime.fromisoformat(m["ts"]).timestamp()
            kind = {"task_unblocked": spawned, "progress_update": started, "task_complete": done}
            if m["type"] in kind:
                kind[m["type"]].setdefault(task, at)
    ran = {}
    for i in deps:
        with open(os.path.join(session, "attempts", tid(i), "1", "outcome.json")) as f:
            ran[i] = json.load(f)["duration_ms"] / 1000
    i = max(deps, key=lambda k: done[tid(k)])
    chain = [i]
    while deps[i]:
        i = max(deps[i], key=lambda k: done[tid(k)])
        chain.append(i)
    chain.reverse()
    per = lambda xs: sum(xs) / len(chain) * 1000
    pre = per([started[tid(i)] - spawned[tid(i)] for i in chain])
    post = per([done[tid(i)] - started[tid(i)] - ran[i] for i in chain])
    dispatch = per(
        [spawned[tid(i)] - max(done[tid(d)] for d in deps[i]) for i in chain if deps[i]]
    )
    beyond = per([ran[i] - slept[i] for i in chain])
    return (
        f"{len(chain)} links: pre {pre:.0f}, post {post:.0f}, dispatch {dispatch:.0f} (waiting "
        f"for a slot included), agent beyond its sleep {beyond:.0f} ms/link"
    )


def agent_start(agent, task):
    """The agent's own start-up time (median of 5 runs, its sleep taken off)."""
    with open(os.path.join(os.path.dirname(agent), "durations.json")) as f:
        slept = json.load(f)[task]
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-S", agent, task], check=True)
        times.append(time.perf_counter() - t0 - slept)
    return max(0.0, sorted(times)[2])


def case_makespan(seeds, keep, mode):
    print(f"## makespan: random 200-task DAGs, sleeping agents (log-normal, median 0.5 s), {mode}")
    print("| slots | seed | critical path s | work/slots s | bound s | wall s | ratio |")
    print("|---|---|---|---|---|---|---|")
    ratios, chains = {}, []
    for slots in (4, 16):
        for seed in range(seeds):
            rng = random.Random(seed)
            deps = random_dag(200, rng)
            dur = {i: min(3.0, rng.lognormvariate(math.log(0.5), 0.5)) for i in deps}
            with tempfile.TemporaryDirectory(prefix="wavecrew-bench-") as tmp:
                # The agent lives beside the project, not in it: a Python
                # file in the project would be syntax-checked as its work.
                with open(os.path.join(tmp, "durations.json"), "w") as f:
                    json.dump({tid(i): round(d, 3) for i, d in dur.items()}, f)
                agent = os.path.join(tmp, "agent.py")
                with open(agent, "w") as f:
                    f.write(
                        "import json, os, sys, time\n"
                        "here = os.path.dirname(os.path.abspath(__file__))\n"
                        "with open(os.path.join(here, 'durations.json')) as f:\n"
                        "    time.sleep(json.load(f)[sys.argv[1]])\n"
                    )
                root = os.path.join(tmp, "project")
                os.makedirs(root)
                # argv, no shell: the task id arrives as one argument.
                session = write_project(
                    root, deps, [sys.executable, "-S", agent, "{task_id}"], mode
                )
                # The interpreter's start is the agent's time, not ours:
                # count it in every task's duration for the bound.
                start = agent_start(agent, tid(0))
                wall, _ = run_wavecrew(root, session, slots)
                chains.append((slots, seed, chain_breakdown(session, deps, dur)))
                shutil.rmtree(root + ".wavecrew", ignore_errors=True)
                if keep:
                    shutil.copytree(tmp, f"/tmp/wavecrew-bench-makespan-{slots}-{seed}")
            dur = {i: d + start for i, d in dur.items()}
            cp = critical_path(deps, dur)
            work = sum(dur.values()) / slots
            bound = max(cp, work)
            ratios.setdefault(slots, []).append(wall / bound)
            print(f"| {slots} | {seed} | {cp:.2f} | {work:.2f} | {bound:.2f} | {wall:.2f} | {wall / bound:.3f} |")
    for slots, r in ratios.items():
        print(f"slots {slots}: median ratio {sorted(r)[len(r) // 2]:.3f}, max {max(r):.3f}")
    print("critical chains (see `chain_breakdown`):")
    for slots, seed, said in chains:
        print(f"- {slots} slots, seed {seed}: {said}")


def case_noop(seeds, keep, mode):
    print("## noop: 500 independent no-op tasks vs xargs")
    print("| slots | wavecrew s | xargs s | ratio | per task ms |")
    print("|---|---|---|---|---|")
    true = shutil.which("true")
    for slots in (4,):
        for _ in range(seeds):
            deps = {i: [] for i in range(500)}
            with tempfile.TemporaryDirectory(prefix="wavecrew-bench-") as root:
                session = write_project(root, deps, [true])
                wall, _ = run_wavecrew(root, session, slots)
            t0 = time.perf_counter()
            subprocess.run(
                ["xargs", "-P", str(slots), "-n", "1", true],
                input=("\n".join(tid(i) for i in range(500)) + "\n").encode(),
                check=True,
            )
            xargs = time.perf_counter() - t0
            print(f"| {slots} | {wall:.2f} | {xargs:.3f} | {wall / xargs:.1f} | {wall / 500 * 1000:.1f} |")


def case_cpu(seeds, keep, mode):
    print("## cpu: the orchestrator's own CPU per task (children excluded), 4 slots")
    print("| tasks | wall s | orchestrator CPU s | CPU per task ms | wall per task ms |")
    print("|---|---|---|---|---|")
    true = shutil.which("true")
    for n in (500, 1000, 2000, 5000):
        deps = {i: [] for i in range(n)}
        with tempfile.TemporaryDirectory(prefix="wavecrew-bench-") as root:
            session = write_project(root, deps, [true])
            wall, own = run_wavecrew(root, session, 4, cpu=True)
        print(f"| {n} | {wall:.2f} | {own:.2f} | {own / n * 1000:.2f} | {wall / n * 1000:.1f} |")


def case_chain(seeds, keep, mode):
    """Per link of a chain: the engine's own time beyond the agent's."""
    n, sleep = 30, 0.2
    print(f"## chain: {n} tasks one after another, the agent sleeps {sleep} s")
    print("| seed | in place ms/link | git repo ms/link | no git (shadow) ms/link |")
    print("|---|---|---|---|")
    chain = {i: [i - 1] if i else [] for i in range(n)}
    for seed in range(seeds):
        per_link = {}
        for m in MODES:
            wall = wall_in_fresh_project(chain, ["sleep", str(sleep)], m, 4)
            per_link[m] = (wall - n * sleep) / n * 1000
        print(
            f"| {seed} | {per_link['in-place']:.1f} | {per_link['git']:.1f} | {per_link['shadow']:.1f} |"
        )


def git_floor(n, slots, tmp, full):
    """The same git steps done by hand, `slots` at a time: for each task a
    worktree added on a branch of its own beside the repository, then
    removed (what a no-op task costs git), each under a lock as git needs.
    With `full`, the floor as issue 27 measured it: an (empty) commit in
    each worktree too, then every branch merged, one after the other."""
    repo = os.path.join(tmp, "floor-full" if full else "floor")
    os.makedirs(repo)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    with open(os.path.join(repo, "README.md"), "w") as f:
        f.write("bench\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "start"], cwd=repo, check=True)
    commit = (
        '&& git -C "$wt" -c user.name=b -c user.email=b@b commit -q --allow-empty -m "$2" '
        if full
        else ""
    )
    # git's worktree bookkeeping is not safe to change from two processes
    # at once (wavecrew holds a lock too): each add and remove under one.
    script = (
        'wt="$1.wt/$2"; flock "$1.lock" git -C "$1" worktree add -q -b "t/$2" "$wt" main '
        + commit
        + '&& flock "$1.lock" git -C "$1" worktree remove --force "$wt"'
    )
    t0 = time.perf_counter()
    subprocess.run(
        ["xargs", "-P", str(slots), "-I{}", "sh", "-c", script, "sh", repo, "{}"],
        input=("\n".join(tid(i) for i in range(n)) + "\n").encode(),
        check=True,
    )
    if full:
        for i in range(n):
            subprocess.run(
                git + ["merge", "-q", "--no-ff", "-m", tid(i), f"t/{tid(i)}"], cwd=repo, check=True
            )
    return time.perf_counter() - t0


def case_isolation(seeds, keep, mode):
    """The isolation cost per no-op task (default mode minus in place)
    beside git's own floor for the same steps, side by side in one run."""
    n, slots = 300, 4
    print(f"## isolation: {n} independent no-op tasks, {slots} slots")
    print(
        "floor: worktree add + remove by hand; full floor: add, commit, remove, then the merges "
        "(issue 27's)"
    )
    print("| seed | in place s | git repo s | no git (shadow) s | floor s | full floor s | cost/task git ms | cost/task shadow ms | git cost / floor | git cost / full floor | shadow cost / full floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    true = shutil.which("true")
    for seed in range(seeds):
        walls = {}
        for m in MODES:
            walls[m] = wall_in_fresh_project({i: [] for i in range(n)}, [true], m, slots)
        with tempfile.TemporaryDirectory(prefix="wavecrew-bench-") as tmp:
            floor = git_floor(n, slots, tmp, False)
            full = git_floor(n, slots, tmp, True)
        cost_git = (walls["git"] - walls["in-place"]) / n
        cost_shadow = (walls["shadow"] - walls["in-place"]) / n
        print(
            f"| {seed} | {walls['in-place']:.2f} | {walls['git']:.2f} | {walls['shadow']:.2f} "
            f"| {floor:.2f} | {full:.2f} | {cost_git * 1000:.1f} | {cost_shadow * 1000:.1f} "
            f"| {cost_git * n / floor:.2f}x | {cost_git * n / full:.2f}x | {cost_shadow * n / full:.2f}x |"
        )


def main():
    sys.stdout.reconfigure(line_buffering=True)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", default=["makespan", "isolation", "noop", "cpu"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="copy the makespan projects to /tmp")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument(
        "--mode", choices=MODES, default="git",
        help="how makespan runs: the default mode in a git repository (default), "
        "in a folder without git (shadow), or in place",
    )
    args = ap.parse_args()
    if not args.no_build:
        build()
    cases = {
        "makespan": case_makespan,
        "noop": case_noop,
        "cpu": case_cpu,
        "chain": case_chain,
        "isolation": case_isolation,
    }
    for case in args.cases:
        cases[case](args.seeds, args.keep, args.mode)


if __name__ == "__main__":
    main()
