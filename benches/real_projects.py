#!/usr/bin/env python3
"""Isolated against in place on real projects (by hand, not in CI).

For each project, a chain of one-line tasks (each depends on the one
before) runs twice with the release `wavecrew`: in the default mode
(worktrees, the merge queue) and with `[isolation] mode = "in-place"`,
each in a fresh copy of the project whose dependencies are already built
or installed, as a user's checkout is. Printed per task: wall time (from
the task's start to its end, from the session's bus) and the check time
(the syntax check plus the acceptance commands, from the task's evidence),
and where its build state came from.

  cargo   this repository at a pinned commit (a clone, `cargo check` run in
          it first); each task adds a line to a leaf crate (`crates/sys`)
  jest    a jest project, `node_modules` installed in the user's folder
          (from scripts/test.sh's cache); acceptance `jest`
  pytest  a pytest project in a `.venv` (made per worktree by
          `[isolation] setup`); acceptance `.venv/bin/python -m pytest`

Target (issue 27): from the second task of a session on, at most 1.2x the
time in place; the first task is reported as well.

Usage: benches/real_projects.py [cargo|jest|pytest ...] [--tasks N] [--keep] [--no-build]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("WAVECREW_BIN_DIR", os.path.join(ROOT, "target", "release"))
CACHE = os.environ.get("WAVECREW_CACHE", os.path.expanduser("~/.cache/wavecrew"))
# The commit of this repository the cargo case checks (issue 26 landed).
PINNED = "1a3fbfb"
SESSION = "TC-real"


def sh(argv, cwd, **kw):
    return subprocess.run(argv, cwd=cwd, check=True, **kw)


def build():
    sh(["cargo", "build", "--release", "--quiet", "-p", "wavecrew-cli"], ROOT)


def agent_script(path, edit):
    """A `command` agent: `edit` (Python, `n` is the task's number) then done."""
    with open(path, "w") as f:
        f.write(
            "import pathlib, sys\n"
            "n = int(sys.argv[1].split('-')[1])\n"
            f"{edit}\n"
            "print('done')\n"
        )


def write_tasks(root, n, files, acceptance, extra_toml):
    lines = [f'goal = "Bench"\nsession = "{SESSION}"\n']
    for i in range(1, n + 1):
        lines.append(
            f'[[tasks]]\nid = "IMPL-{i:03d}"\ntitle = "Step {i}"\nfiles = {json.dumps(files)}\n'
        )
        if i > 1:
            lines.append(f'depends_on = ["IMPL-{i - 1:03d}"]\n')
        if acceptance:
            lines.append(
                "acceptance = [{ criterion = \"tests pass\", verify = "
                + json.dumps(acceptance)
                + " }]\n"
            )
    with open(os.path.join(root, "wavecrew.tasks.toml"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(root, "wavecrew.toml"), "w") as f:
        f.write(
            "[aliases]\nagent = \"py\"\ncodex = \"py\"\n\n[backends.py]\nkind = \"command\"\n"
            f"argv = [\"python3\", {json.dumps(os.path.join(root, '.bench-agent.py'))}, \"{{task_id}}\"]\n"
            "prompt = \"stdin\"\nstream = \"none\"\n\n[routing]\nmax_retries = 0\nfallback = []\n"
            "\n[limits]\nsyntax_check_secs = 1800\n"
            f"{extra_toml}"
        )


def ignore(root, names):
    with open(os.path.join(root, ".git", "info", "exclude"), "a") as f:
        f.write("".join(f"{n}\n" for n in names))


def project_cargo(base):
    root = os.path.join(base, "wavecrew")
    sh(["git", "clone", "--quiet", "--no-local", ROOT, root], base)
    sh(["git", "checkout", "--quiet", "--detach", PINNED], root)
    print("  building the clone (cargo check --workspace) ...", file=sys.stderr, flush=True)
    sh(["cargo", "check", "--quiet", "--workspace", "--offline"], root)
    agent_script(
        os.path.join(root, ".bench-agent.py"),
        "p = pathlib.Path('crates/sys/src/lib.rs')\n"
        "p.write_text(p.read_text() + f'\\n/// Step {n}.\\npub const BENCH_STEP_{n}: u32 = {n};\\n')",
    )
    ignore(root, [".bench-agent.py", "wavecrew.toml", "wavecrew.tasks.toml", ".workflow/"])
    return root, ["crates/sys/src/lib.rs"], None, ""


def project_jest(base):
    root = os.path.join(base, "app")
    tools = os.path.join(ROOT, "crates/validation/tests/fixtures/node-tools")
    os.makedirs(root)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(tools, f), root)
    sh(["cp", "-a", os.path.join(CACHE, "node", "node_modules"), root], base)
    with open(os.path.join(root, "sum.js"), "w") as f:
        f.write("module.exports = (a, b) => a + b;\n")
    with open(os.path.join(root, "sum.test.js"), "w") as f:
        f.write("const sum = require('./sum');\ntest('adds', () => { expect(sum(1, 2)).toBe(3); });\n")
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("node_modules/\n.workflow/\n")
    init_git(root)
    agent_script(
        os.path.join(root, ".bench-agent.py"),
        "p = pathlib.Path('sum.js')\np.write_text(p.read_text() + f'// step {n}\\n')",
    )
    ignore(root, [".bench-agent.py", "wavecrew.toml", "wavecrew.tasks.toml"])
    return root, ["sum.js"], ["node_modules/.bin/jest", "--ci", "--watchman=false"], ""


def project_pytest(base):
    root = os.path.join(base, "calc")
    os.makedirs(root)
    py = os.path.join(CACHE, "py", "bin", "python")
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    files = {
        "pyproject.toml": "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
        "calc.py": "def add(a, b):\n    return a + b\n",
        "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        ".gitignore": ".venv/\n.workflow/\n__pycache__/\n.pytest_cache/\n",
        "make_venv.py": (
            "import pathlib, subprocess, sys\n"
            "subprocess.run([sys.executable, '-m', 'venv', '--without-pip', '.venv'], check=True)\n"
            "out = subprocess.run(['.venv/bin/python', '-c', 'import sysconfig; "
            "print(sysconfig.get_paths()[\"purelib\"])'], check=True, capture_output=True, "
            "text=True).stdout.strip()\n"
            f"pathlib.Path(out, 'tools.pth').write_text({site!r} + '\\n')\n"
        ),
    }
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    sh([py, "make_venv.py"], root)
    init_git(root)
    agent_script(
        os.path.join(root, ".bench-agent.py"),
        "p = pathlib.Path('calc.py')\np.write_text(p.read_text() + f'# step {n}\\n')",
    )
    ignore(root, [".bench-agent.py", "wavecrew.toml", "wavecrew.tasks.toml"])
    setup = f"\n[isolation]\nsetup = [[{json.dumps(py)}, \"make_venv.py\"]]\n"
    return root, ["calc.py"], [".venv/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], setup


def init_git(root):
    sh(["git", "init", "-q", "-b", "main"], root)
    sh(["git", "add", "-A"], root)
    sh(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "start"], root)


PROJECTS = {"cargo": project_cargo, "jest": project_jest, "pytest": project_pytest}


def per_task(root):
    """Per task, from the run's `reports/run-summary.json`: wall seconds,
    check seconds (syntax check plus acceptance commands, from the task's
    evidence) and where its build state came from."""
    session = os.path.join(root, ".workflow", ".team", SESSION)
    with open(os.path.join(session, "reports", "run-summary.json")) as f:
        summary = {t["id"]: t for t in json.load(f)["tasks"]}
    rows = []
    for name in sorted(n for n in os.listdir(os.path.join(session, "tasks")) if n.endswith(".json")):
        with open(os.path.join(session, "tasks", name)) as f:
            task = json.load(f)
        r = task.get("result") or {}
        ev = r.get("evidence") or {}
        check_ms = sum(c.get("duration_ms", 0) for c in (ev.get("syntax") or {}).get("checks", []))
        for c in (ev.get("acceptance") or {}).get("criteria", []):
            check_ms += c.get("duration_ms", 0)
        wall = (summary.get(task["id"], {}).get("duration_ms") or 0) / 1000
        rows.append((task["id"], task["status"], wall, check_ms / 1000, r.get("build_state") or []))
    return rows


def run_case(name, n, keep):
    results = {}
    base = tempfile.mkdtemp(prefix=f"wavecrew-real-{name}-")
    try:
        # The user's checkout, built once; each mode runs in a copy of it.
        built = os.path.join(base, "built")
        os.makedirs(built)
        root, files, acceptance, extra = PROJECTS[name](built)
        for mode in ("worktree", "in-place"):
            here = os.path.join(base, mode)
            os.makedirs(here)
            sh(["cp", "-a", root, here], base)
            work = os.path.join(here, os.path.basename(root))
            toml = extra
            if mode == "in-place":
                toml += "mode = \"in-place\"\n" if "[isolation]" in toml else "\n[isolation]\nmode = \"in-place\"\n"
            write_tasks(work, n, files, acceptance, toml)
            p = subprocess.run(
                [os.path.join(BIN, "wavecrew"), "run", "wavecrew.tasks.toml"],
                cwd=work, env=dict(os.environ, CI="1"),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            if p.returncode != 0:
                print(p.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"{name} ({mode}): wavecrew run exited {p.returncode}")
            results[mode] = per_task(work)
    finally:
        if keep:
            print(f"  kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\n## {name}: {n} chained one-line tasks\n")
    print("| task | isolated wall s | in place wall s | ratio | isolated check s | in place check s | build state (isolated) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for iso, inp in zip(results["worktree"], results["in-place"]):
        ratio = iso[2] / inp[2] if inp[2] else float("nan")
        state = "; ".join(s.split(" (")[0] for s in iso[4]) or "-"
        print(f"| {iso[0]} ({iso[1]}) | {iso[2]:.2f} | {inp[2]:.2f} | {ratio:.2f}x | {iso[3]:.2f} | {inp[3]:.2f} | {state} |")
    later_iso = [r[2] for r in results["worktree"][1:]]
    later_inp = [r[2] for r in results["in-place"][1:]]
    if later_iso and later_inp:
        print(
            f"\nfrom the second task on: isolated {statistics.mean(later_iso):.2f} s, in place "
            f"{statistics.mean(later_inp):.2f} s per task: "
            f"{statistics.mean(later_iso) / statistics.mean(later_inp):.2f}x (target: at most 1.2x)"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", default=["jest", "pytest", "cargo"], choices=list(PROJECTS))
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-build", action="store_true", help="use the binaries in WAVECREW_BIN_DIR")
    a = ap.parse_args()
    if not a.no_build:
        build()
    for case in a.cases:
        run_case(case, a.tasks, a.keep)


if __name__ == "__main__":
    main()
