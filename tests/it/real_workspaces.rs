//! Isolated runs (the default mode) on projects with real toolchains and
//! dependencies, as users have them: a Cargo workspace with registry
//! dependencies built in the user's folder, a node project whose
//! `node_modules` exists only in the user's folder (vitest and jest), and
//! a pytest project whose `.venv` each worktree makes with `setup`. Each
//! task passes, and its result says where its build state came from.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use wavecrew_core::{TaskId, TaskStore};
use wavecrew_testkit::git::{TempProject, git};
use wavecrew_testkit::run_bin;

/// A project folder `app` in a temporary folder, with `files` written.
fn project(tmp: &TempProject, files: &[(&str, &str)]) -> PathBuf {
    let root = tmp.path().canonicalize().unwrap().join("app");
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

/// `wavecrew.toml` for a `command` agent running `agent.py <task id>`.
fn agent_config(root: &Path, extra: &str) -> String {
    format!(
        "[aliases]\nagent = \"py\"\ncodex = \"py\"\n\n[backends.py]\nkind = \"command\"\n\
         argv = [\"python3\", {:?}, \"{{task_id}}\"]\nprompt = \"stdin\"\nstream = \"none\"\n\n\
         [routing]\nmax_retries = 0\nfallback = []\n{extra}",
        root.join("agent.py").display().to_string()
    )
}

fn commit_all(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
}

/// Run a tool in `root`, asserting it succeeds.
fn run_ok(root: &Path, argv: &[&str]) {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{argv:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn result(root: &Path, session: &str, id: &str) -> Value {
    let store =
        wavecrew_core::FileTaskStore::for_session(&root.join(".workflow/.team").join(session));
    let t = store.get(&TaskId::new(id).unwrap()).unwrap();
    assert_eq!(
        t.status.as_str(),
        "completed",
        "{id}: {:#}",
        t.result.clone().unwrap_or_default()
    );
    t.result.unwrap()
}

fn build_state(r: &Value) -> Vec<String> {
    r["build_state"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// What the agent of `id` printed (its attempt's `stdout.log`).
fn agent_output(root: &Path, session: &str, id: &str) -> String {
    let dir = root
        .join(".workflow/.team")
        .join(session)
        .join("attempts")
        .join(id);
    let mut text = String::new();
    for entry in walk(&dir) {
        if entry.file_name().is_some_and(|n| n == "stdout.log") {
            text.push_str(&std::fs::read_to_string(&entry).unwrap_or_default());
        }
    }
    assert!(!text.is_empty(), "no stdout.log under {}", dir.display());
    text.replace('|', "\n")
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.extend(walk(&path));
        } else {
            all.push(path);
        }
    }
    all
}

/// A Cargo workspace with registry dependencies (offline: the registry
/// cache this repository's own build filled), checked in the user's folder
/// first. The first task's worktree is seeded with that `target/` (same
/// `Cargo.lock`), the second takes over the first's worktree from the
/// warm pool: neither check compiles a dependency again.
#[test]
fn a_cargo_workspace_checks_incrementally_in_its_worktrees() {
    let tmp = TempProject::new();
    let root = project(
        &tmp,
        &[
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"core\", \"app\"]\nresolver = \"2\"\n",
            ),
            (
                "core/Cargo.toml",
                "[package]\nname = \"core-lib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [dependencies]\nserde = \"1\"\nserde_json = \"1\"\nmemchr = \"2\"\n\
                 anyhow = \"1\"\n",
            ),
            (
                "core/src/lib.rs",
                "pub fn parse(s: &str) -> anyhow::Result<serde_json::Value> {\n    \
                 Ok(serde_json::from_str(s)?)\n}\n\npub fn count(s: &[u8]) -> usize {\n    \
                 memchr::memchr_iter(b'x', s).count()\n}\n",
            ),
            (
                "app/Cargo.toml",
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [dependencies]\ncore-lib = { path = \"../core\" }\n",
            ),
            (
                "app/src/main.rs",
                "fn main() {\n    println!(\"{}\", core_lib::count(b\"xx\"));\n}\n",
            ),
            (".gitignore", "target/\n.workflow/\n"),
            (
                "agent.py",
                "import pathlib, subprocess, sys\n\
                 task = sys.argv[1]\n\
                 lib = pathlib.Path('core/src/lib.rs')\n\
                 n = {'IMPL-001': 1, 'IMPL-002': 2}[task]\n\
                 lib.write_text(lib.read_text() + f'\\npub const STEP_{n}: u32 = {n};\\n')\n\
                 # As a real agent does: build before saying it is done.\n\
                 out = subprocess.run(['cargo', 'check', '--offline', '--workspace'], \
                 capture_output=True, text=True)\n\
                 print('CARGO:' + out.stderr.replace('\\n', '|'))\n\
                 print(task + ' done')\n",
            ),
            (
                "wavecrew.tasks.toml",
                "goal = \"Two steps\"\nsession = \"TC-cargo\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Step one\"\nfiles = [\"core/src/lib.rs\"]\n\n\
                 [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Step two\"\nfiles = [\"core/src/lib.rs\"]\n\
                 depends_on = [\"IMPL-001\"]\n",
            ),
        ],
    );
    std::fs::write(root.join("wavecrew.toml"), agent_config(&root, "")).unwrap();
    run_ok(&root, &["cargo", "generate-lockfile", "--offline"]);
    commit_all(&root);
    // The user has built their clone.
    run_ok(&root, &["cargo", "check", "--offline", "--workspace"]);

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    for (id, came_from) in [
        (
            "IMPL-001",
            "target: seeded from the project (Cargo.lock matches)",
        ),
        ("IMPL-002", "warm: an earlier task's worktree"),
    ] {
        let r = result(&root, "TC-cargo", id);
        let state = build_state(&r);
        assert!(
            state.iter().any(|l| l.starts_with(came_from)),
            "{id}: {state:?}"
        );
        let checks = r["evidence"]["syntax"]["checks"].as_array().unwrap();
        assert!(
            checks
                .iter()
                .any(|c| c["command"].as_str().unwrap_or("").starts_with("cargo")
                    && c["status"] == "pass"),
            "{id}: {checks:#?}"
        );
        // What the agent's own `cargo check` compiled in the worktree.
        let output = agent_output(&root, "TC-cargo", id);
        assert!(output.contains("Checking core-lib"), "{id}: {output}");
        for dependency in ["serde ", "serde_json", "memchr", "anyhow"] {
            assert!(
                !output.contains(&format!("Checking {dependency}"))
                    && !output.contains(&format!("Compiling {dependency}")),
                "{id} built {dependency} again:\n{output}"
            );
        }
    }
    assert_eq!(
        git(&root, &["show", "wavecrew/TC-cargo:core/src/lib.rs"])
            .matches("pub const STEP_")
            .count(),
        2
    );
    // The warm pool went at the run's end.
    assert!(!tmp.path().join("app.wavecrew").exists());
}

/// A node project whose `node_modules` exists only in the user's folder
/// (git ignores it): the first task's worktree is seeded with it (same
/// `package-lock.json`) and its acceptance runs vitest from it; the second
/// takes the first's worktree over warm and runs jest from it.
#[test]
fn vitest_and_jest_run_from_the_users_node_modules_in_each_worktree() {
    let cache = wavecrew_testkit::agent_cli_bins::cache_dir().join("node");
    assert!(
        cache.join("node_modules/.bin/vitest").exists(),
        "vitest is not installed in {}: run scripts/test.sh (never skipped)",
        cache.display()
    );
    let tools = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/validation/tests/fixtures/node-tools");
    let tmp = TempProject::new();
    let root = project(
        &tmp,
        &[
            (
                "package.json",
                &std::fs::read_to_string(tools.join("package.json")).unwrap(),
            ),
            (
                "package-lock.json",
                &std::fs::read_to_string(tools.join("package-lock.json")).unwrap(),
            ),
            (
                "sum.test.mjs",
                "import { test, expect } from 'vitest';\nimport { sum } from './sum.mjs';\n\
                 test('adds', () => { expect(sum(1, 2)).toBe(3); });\n",
            ),
            (
                "mul.test.js",
                "const mul = require('./mul');\n\
                 test('multiplies', () => { expect(mul(2, 3)).toBe(6); });\n",
            ),
            (".gitignore", "node_modules/\n.workflow/\n"),
            (
                "agent.py",
                "import pathlib, sys\n\
                 if sys.argv[1] == 'IMPL-001':\n\
                 \x20   pathlib.Path('sum.mjs').write_text('export const sum = (a, b) => a + b;\\n')\n\
                 else:\n\
                 \x20   pathlib.Path('mul.js').write_text('module.exports = (a, b) => a * b;\\n')\n\
                 print('done')\n",
            ),
            (
                "wavecrew.tasks.toml",
                "goal = \"Arithmetic\"\nsession = \"TC-node\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Write sum.mjs\"\nfiles = [\"sum.mjs\"]\n\
                 acceptance = [\n  { criterion = \"vitest passes\", verify = \
                 [\"node_modules/.bin/vitest\", \"run\", \"sum\"] },\n]\n\n\
                 [[tasks]]\nid = \"IMPL-002\"\ntitle = \"Write mul.js\"\nfiles = [\"mul.js\"]\n\
                 depends_on = [\"IMPL-001\"]\nacceptance = [\n  { criterion = \"jest passes\", \
                 verify = [\"node_modules/.bin/jest\", \"--ci\", \"--watchman=false\", \"mul\"] },\n]\n",
            ),
        ],
    );
    std::fs::write(root.join("wavecrew.toml"), agent_config(&root, "")).unwrap();
    run_ok(
        &root,
        &[
            "cp",
            "-a",
            cache.join("node_modules").to_str().unwrap(),
            root.to_str().unwrap(),
        ],
    );
    commit_all(&root);

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    for (id, came_from) in [
        (
            "IMPL-001",
            "node_modules: seeded from the project (package-lock.json matches)",
        ),
        ("IMPL-002", "warm: an earlier task's worktree"),
    ] {
        let r = result(&root, "TC-node", id);
        assert_eq!(r["validation_results"]["acceptance"], "pass", "{r:#}");
        let state = build_state(&r);
        assert!(
            state.iter().any(|l| l.starts_with(came_from)),
            "{id}: {state:?}"
        );
    }
    assert!(!tmp.path().join("app.wavecrew").exists());
}

/// A pytest project in a `.venv`: a virtualenv is never seeded (its
/// scripts name the user's interpreter), so `[isolation] setup` makes one
/// in each new worktree, and the acceptance runs the worktree's own
/// `.venv/bin/python -m pytest`.
#[test]
fn a_pytest_project_runs_in_the_worktrees_own_venv() {
    let py = wavecrew_testkit::agent_cli_bins::cache_dir().join("py/bin/python");
    assert!(
        py.exists(),
        "pytest is not installed at {}: run scripts/test.sh (never skipped)",
        py.display()
    );
    // The venv of the cache has pytest; a worktree's venv borrows it
    // through a `.pth` file (no network here to install it again).
    let site = Command::new(&py)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .unwrap();
    let site = String::from_utf8(site.stdout).unwrap().trim().to_owned();
    let make_venv = format!(
        "import pathlib, subprocess, sys, sysconfig\n\
         subprocess.run([sys.executable, '-m', 'venv', '--without-pip', '.venv'], check=True)\n\
         out = subprocess.run(['.venv/bin/python', '-c', 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])'], \
         check=True, capture_output=True, text=True).stdout.strip()\n\
         pathlib.Path(out, 'tools.pth').write_text({site:?} + '\\n')\n"
    );
    let tmp = TempProject::new();
    let root = project(
        &tmp,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
            ),
            ("calc.py", "def add(a, b):\n    return a - b\n"),
            (
                "test_calc.py",
                "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            ),
            ("make_venv.py", &make_venv),
            (
                ".gitignore",
                ".venv/\n.workflow/\n__pycache__/\n.pytest_cache/\n",
            ),
            (
                "agent.py",
                "import pathlib\n\
                 pathlib.Path('calc.py').write_text('def add(a, b):\\n    return a + b\\n')\n\
                 print('fixed')\n",
            ),
            (
                "wavecrew.tasks.toml",
                "goal = \"Fix add\"\nsession = \"TC-py\"\n\n[[tasks]]\nid = \"IMPL-001\"\n\
                 title = \"Fix add\"\nfiles = [\"calc.py\"]\nacceptance = [\n  \
                 { criterion = \"pytest passes\", verify = [\".venv/bin/python\", \"-m\", \
                 \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"] },\n]\n",
            ),
        ],
    );
    std::fs::write(
        root.join("wavecrew.toml"),
        agent_config(
            &root,
            &format!(
                "\n[isolation]\nsetup = [[{:?}, \"make_venv.py\"]]\n",
                py.display().to_string()
            ),
        ),
    )
    .unwrap();
    // The user's own venv, which is never copied into a worktree.
    run_ok(&root, &[py.to_str().unwrap(), "make_venv.py"]);
    commit_all(&root);

    let o = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], &root);
    assert_eq!(o.code, 0, "{}", o.render());
    let r = result(&root, "TC-py", "IMPL-001");
    assert_eq!(r["validation_results"]["acceptance"], "pass", "{r:#}");
    assert!(
        build_state(&r).is_empty(),
        "a venv is not among the seeded folders: {r:#}"
    );
    let log =
        std::fs::read_to_string(root.join(".workflow/.team/TC-py/attempts/IMPL-001/setup-1.log"))
            .unwrap();
    assert!(log.contains("make_venv.py"), "{log}");
    assert!(!tmp.path().join("app.wavecrew").exists());
}
