//! From a blank repository, without ccw: `wavecrew init` with fake agent
//! CLIs on `PATH`, a task file with a diamond and a chain run to the end
//! with the scripted agent (`--json`, the CI step summary, a second run
//! resuming), malformed task files (exit 2, file:line:column and field),
//! `wavecrew new` read back by `plan` and `msg`, `--help`, completions and
//! the man page, and no file of the repository pointing outside it.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use wavecrew_testkit::{CliOutput, bin_path, insta_settings, run_bin};

use crate::walkthrough::{git_repo, make_executable};

fn fake_cli(dir: &Path, name: &str, version: &str) {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo \"{version}\"; exit 0; fi\nexit 1\n"
        ),
    )
    .unwrap();
    make_executable(&p);
}

fn run_with_path(args: &[&str], cwd: &Path, path: &Path) -> CliOutput {
    Command::new(bin_path("wavecrew"))
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into()
}

#[test]
fn init_writes_a_config_for_the_clis_found_and_keeps_it() {
    let repo = git_repo();
    let bin = tempfile::tempdir().unwrap();
    fake_cli(bin.path(), "claude", "2.1.197 (Claude Code)");
    fake_cli(bin.path(), "codex", "codex-cli 0.169.0");
    let out = run_with_path(&["init"], repo.path(), bin.path());
    assert_eq!(out.code, 0, "{}", out.render());
    let written = std::fs::read_to_string(repo.path().join("wavecrew.toml")).unwrap();
    let check = run_with_path(&["config", "check"], repo.path(), bin.path());
    assert_eq!(check.code, 0, "{}", check.render());
    assert!(
        check
            .stdout
            .contains("aliases agent → claude, gemini → claude"),
        "{}",
        check.stdout
    );
    assert!(
        check.stdout.contains("fallback claude → codex"),
        "{}",
        check.stdout
    );
    // Kept unless --force.
    std::fs::write(repo.path().join("wavecrew.toml"), "# mine\n").unwrap();
    let again = run_with_path(&["init"], repo.path(), bin.path());
    assert_eq!(again.code, 0);
    assert!(
        again.stdout.contains("kept ./wavecrew.toml"),
        "{}",
        again.stdout
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("wavecrew.toml")).unwrap(),
        "# mine\n"
    );
    let forced = run_with_path(&["init", "--force"], repo.path(), bin.path());
    assert_eq!(forced.code, 0);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("wavecrew.toml")).unwrap(),
        written
    );
    insta_settings().bind(|| {
        insta::assert_snapshot!("init_stdout", out.render_in(repo.path()));
        insta::assert_snapshot!("init_wavecrew_toml", written);
    });
}

const DIAMOND_AND_CHAIN: &str = r#"# A diamond (A → B, C → D) and a chain after it (D → E → F), then a review.
goal = "Build the pipeline of the test"
session = "TC-diamond"
backend = "agent"

[[tasks]]
id = "IMPL-001"
title = "A"
acceptance = [{ criterion = "A is written", verify = ["test", "-f", "out/IMPL-001.txt"] }]

[[tasks]]
id = "IMPL-002"
title = "B"
depends_on = ["IMPL-001"]
files = ["out/IMPL-002.txt"]

[[tasks]]
id = "IMPL-003"
title = "C"
depends_on = ["IMPL-001"]
files = ["out/IMPL-003.txt"]

[[tasks]]
id = "IMPL-004"
title = "D"
depends_on = ["IMPL-002", "IMPL-003"]
acceptance = ["B and C are both there"]

[[tasks]]
id = "IMPL-005"
title = "E"
depends_on = ["IMPL-004"]

[[tasks]]
id = "IMPL-006"
title = "F"
description = "The end of the chain."
depends_on = ["IMPL-005"]
acceptance = [{ criterion = "F is written", verify = ["test", "-f", "out/IMPL-006.txt"] }]

[[tasks]]
title = "Review the outputs"
role = "reviewer"
depends_on = ["IMPL-006"]
"#;

fn scripted_project(task_file: &str) -> wavecrew_testkit::git::TempProject {
    let repo = git_repo();
    let scenarios: Vec<Value> = (1..=6)
        .map(|n| {
            let id = format!("IMPL-00{n}");
            json!({"match": {"task": id}, "steps": [
                {"write": {"path": format!("out/{id}.txt"), "content": format!("{id}\n")}},
                {"say": format!("{id} written")}]})
        })
        .chain([json!({"steps": [{"say": "reviewed: all six outputs are there"}]})])
        .collect();
    std::fs::write(
        repo.path().join("agent.json"),
        json!({ "scenarios": scenarios }).to_string(),
    )
    .unwrap();
    std::fs::write(
        repo.path().join("wavecrew.toml"),
        format!(
            "[aliases]\nagent = \"scripted\"\n\n[backends.scripted]\nkind = \"scripted\"\n\
             program = {:?}\nscript = \"agent.json\"\nformat = \"codex\"\n\n\
             [routing]\nmax_retries = 0\nfallback = []\n",
            bin_path("wavecrew-scripted-agent").display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(repo.path().join("wavecrew.tasks.toml"), task_file).unwrap();
    repo
}

#[test]
fn a_diamond_and_a_chain_run_to_the_end_from_a_task_file() {
    let repo = scripted_project(DIAMOND_AND_CHAIN);
    let step_summary = repo.path().join("step-summary.md");
    std::fs::write(&step_summary, "# earlier step\n\n").unwrap();
    let out: CliOutput = Command::new(bin_path("wavecrew"))
        .args(["run", "wavecrew.tasks.toml", "--json", "--apply"])
        .current_dir(repo.path())
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .env("CI", "1")
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 0, "{}", out.render());
    // stdout is exactly one JSON object.
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not one JSON object ({e}):\n{}", out.stdout);
    });
    assert_eq!(v["outcome"], "complete");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["counts"]["completed"], 7, "{v}");
    assert_eq!(v["failed"], json!([]));
    assert_eq!(v["session"]["id"], "TC-diamond");
    for key in ["summary_md", "junit", "run_summary", "html"] {
        let p = v["reports"][key]
            .as_str()
            .unwrap_or_else(|| panic!("reports.{key}: {v}"));
        assert!(repo.path().join(p).is_file(), "{p}");
    }
    assert!(
        out.stderr.contains("TASK COMPLETE"),
        "the report goes to stderr: {}",
        out.stderr
    );
    for n in 1..=6 {
        assert!(repo.path().join(format!("out/IMPL-00{n}.txt")).is_file());
    }
    // RUST_LOG reaches the workers too: their logs say how each attempt ended.
    let worker_log = std::fs::read_to_string(
        repo.path()
            .join(".workflow/.team/TC-diamond/workers/IMPL-001.log"),
    )
    .unwrap();
    assert!(worker_log.contains("attempt ended"), "{worker_log}");
    // The step summary got summary.md appended, after what was there.
    let summary = std::fs::read_to_string(&step_summary).unwrap();
    assert!(
        summary.starts_with("# earlier step\n\n# TC-diamond\n"),
        "{summary}"
    );
    assert!(summary.contains("**7/7 tasks completed**"), "{summary}");
    // The waves the scheduler made from the file, as ccw's files say them.
    let analysis: Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo.path()
                .join(".workflow/.team/TC-diamond/task-analysis.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        analysis["dependency_graph"]["IMPL-004"],
        json!({"depends_on": ["IMPL-002", "IMPL-003"], "role": "developer"})
    );
    assert_eq!(
        analysis["dependency_graph"]["REVIEW-001"]["role"],
        "reviewer"
    );
    // Run again: the same file finds its session and resumes it (nothing left to do).
    let again = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], repo.path());
    assert_eq!(again.code, 0, "{}", again.render());
    assert!(
        again
            .stderr
            .contains("resuming the session made from wavecrew.tasks.toml"),
        "{}",
        again.stderr
    );
    // A changed file does not take over the old session.
    std::fs::write(
        repo.path().join("wavecrew.tasks.toml"),
        DIAMOND_AND_CHAIN.replace("The end of the chain.", "Something else."),
    )
    .unwrap();
    let changed = run_bin("wavecrew", &["run", "wavecrew.tasks.toml"], repo.path());
    assert_eq!(changed.code, 2, "{}", changed.render());
    assert!(
        changed.stderr.contains("exists already"),
        "{}",
        changed.stderr
    );
}

#[test]
fn a_failed_task_is_in_the_json_object() {
    let file = DIAMOND_AND_CHAIN.replace(
        r#"verify = ["test", "-f", "out/IMPL-006.txt"]"#,
        r#"verify = ["test", "-f", "out/never.txt"]"#,
    );
    let repo = scripted_project(&file);
    let out = run_bin(
        "wavecrew",
        &["run", "wavecrew.tasks.toml", "--json"],
        repo.path(),
    );
    assert_eq!(out.code, 1, "{}", out.render());
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "failed");
    assert_eq!(v["failed"][0]["id"], "IMPL-006", "{v}");
    assert!(v["failed"][0]["error"].as_str().is_some(), "{v}");
    assert_eq!(v["counts"]["completed"], 5, "{v}");
    assert_eq!(v["counts"]["skipped"], 1, "{v}");
}

#[test]
fn malformed_task_files_name_the_file_line_and_field() {
    let cases: &[(&str, &str)] = &[
        (
            "a cycle",
            "goal = \"g\"\n\n[[tasks]]\nid = \"IMPL-1\"\ntitle = \"a\"\ndepends_on = [\"IMPL-2\"]\n\n[[tasks]]\nid = \"IMPL-2\"\ntitle = \"b\"\ndepends_on = [\"IMPL-1\"]\n",
        ),
        (
            "an unknown dependency",
            "goal = \"g\"\n\n[[tasks]]\nid = \"IMPL-1\"\ntitle = \"a\"\ndepends_on = [\"IMPL-7\"]\n",
        ),
        (
            "a missing field",
            "goal = \"g\"\n\n[[tasks]]\nid = \"IMPL-1\"\ndescription = \"no title\"\n",
        ),
        (
            "a bad id",
            "goal = \"g\"\n\n[[tasks]]\nid = \"../../etc\"\ntitle = \"a\"\n",
        ),
        (
            "a shell string in verify",
            "goal = \"g\"\n\n[[tasks]]\ntitle = \"a\"\nacceptance = [\n  { criterion = \"tests pass\", verify = \"cargo test && rm -rf /\" },\n]\n",
        ),
        (
            "an unknown key",
            "goal = \"g\"\n\n[[tasks]]\ntitle = \"a\"\ndepend_on = [\"IMPL-1\"]\n",
        ),
        ("not TOML", "goal = \"g\n"),
    ];
    let repo = git_repo();
    let mut all = String::new();
    for (what, text) in cases {
        std::fs::write(repo.path().join("wavecrew.tasks.toml"), text).unwrap();
        for cmd in [
            &["plan", "waves", "wavecrew.tasks.toml"][..],
            &["new", "wavecrew.tasks.toml"],
            &["run", "wavecrew.tasks.toml"],
        ] {
            let out = run_bin("wavecrew", cmd, repo.path());
            assert_eq!(out.code, 2, "{what}: {cmd:?}: {}", out.render());
            assert!(
                out.stderr.starts_with("error: wavecrew.tasks.toml:"),
                "{what}: {}",
                out.stderr
            );
            assert!(out.stderr.contains("field `"), "{what}: {}", out.stderr);
        }
        let json = run_bin(
            "wavecrew",
            &["run", "wavecrew.tasks.toml", "--json"],
            repo.path(),
        );
        assert_eq!(json.code, 2, "{what}: {}", json.render());
        let v: Value = serde_json::from_str(&json.stdout).unwrap();
        assert_eq!(v["outcome"], "bad_input", "{what}: {v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("wavecrew.tasks.toml:"),
            "{v}"
        );
        let out = run_bin("wavecrew", &["new", "wavecrew.tasks.toml"], repo.path());
        let _ = write!(all, "## {what}\n{}\n", out.stderr);
    }
    assert!(
        !repo.path().join(".workflow").exists()
            || std::fs::read_dir(repo.path().join(".workflow/.team"))
                .unwrap()
                .next()
                .is_none(),
        "nothing is written for a bad file"
    );
    insta_settings().bind(|| insta::assert_snapshot!(all));
}

#[test]
fn a_session_made_by_new_is_read_by_plan_and_msg() {
    let repo = scripted_project(DIAMOND_AND_CHAIN);
    let out = run_bin("wavecrew", &["new", "wavecrew.tasks.toml"], repo.path());
    assert_eq!(out.code, 0, "{}", out.render());
    assert_eq!(out.stdout, ".workflow/.team/TC-diamond\n");
    let waves = run_bin(
        "wavecrew",
        &["plan", "waves", ".workflow/.team/TC-diamond"],
        repo.path(),
    );
    assert_eq!(waves.code, 0, "{}", waves.render());
    let from_file = run_bin(
        "wavecrew",
        &["plan", "waves", "wavecrew.tasks.toml"],
        repo.path(),
    );
    assert_eq!(
        waves.stdout, from_file.stdout,
        "the session and its file agree"
    );
    let logged = run_bin(
        "wavecrew",
        &[
            "msg",
            "log",
            "--session-id",
            "TC-diamond",
            "--from",
            "coordinator",
            "--to",
            "developer",
            "--type",
            "note",
            "--summary",
            "made by wavecrew new",
        ],
        repo.path(),
    );
    assert_eq!(logged.code, 0, "{}", logged.render());
    let list = run_bin(
        "wavecrew",
        &["msg", "list", "--session-id", "TC-diamond", "--json"],
        repo.path(),
    );
    assert_eq!(list.code, 0, "{}", list.render());
    assert!(
        list.stdout.contains("made by wavecrew new"),
        "{}",
        list.stdout
    );
    // The orchestrator's own validation accepts it.
    let check = run_bin(
        "wavecrew-team",
        &["check", "--session", ".workflow/.team/TC-diamond"],
        repo.path(),
    );
    assert_eq!(check.code, 0, "{}", check.render());
    // Never overwritten.
    let again = run_bin("wavecrew", &["new", "wavecrew.tasks.toml"], repo.path());
    assert_eq!(again.code, 2);
    insta_settings().bind(|| {
        insta::assert_snapshot!("new_plan_waves", waves.render_in(repo.path()));
        insta::assert_snapshot!("new_exists", again.render_in(repo.path()));
    });
}

#[test]
fn top_level_help_is_written_for_users() {
    let out = run_bin("wavecrew", &["--help"], Path::new("."));
    assert_eq!(out.code, 0);
    assert!(!out.stdout.contains("thin mains"), "{}", out.stdout);
    insta_settings().bind(|| insta::assert_snapshot!(out.stdout));
}

#[test]
fn completions_man_page_and_logs() {
    let bash = run_bin("wavecrew", &["completions", "bash"], Path::new("."));
    assert_eq!(bash.code, 0);
    assert!(
        bash.stdout.contains("complete -F _wavecrew"),
        "{}",
        bash.stdout
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = run_bin("wavecrew", &["completions", shell], Path::new("."));
        assert_eq!(out.code, 0, "{shell}");
        assert!(out.stdout.contains("wavecrew"), "{shell}");
    }
    let schema = run_bin("wavecrew", &["schema"], Path::new("."));
    assert_eq!(schema.code, 0);
    assert_eq!(
        schema.stdout,
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/wavecrew.tasks.schema.json")
        )
        .unwrap()
    );
    let man = run_bin("wavecrew", &["man"], Path::new("."));
    assert_eq!(man.code, 0);
    assert!(
        man.stdout.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        &man.stdout[..80.min(man.stdout.len())]
    );
    assert!(man.stdout.contains(".TH wavecrew 1"), "roff with a title");
    assert!(man.stdout.contains("wavecrew\\-init"), "subcommands listed");
    // -vv turns on debug logs on stderr; stdout stays the command's own.
    let repo = scripted_project(DIAMOND_AND_CHAIN);
    let quiet = run_bin(
        "wavecrew",
        &["plan", "waves", "wavecrew.tasks.toml"],
        repo.path(),
    );
    let loud = run_bin(
        "wavecrew",
        &["-vv", "plan", "waves", "wavecrew.tasks.toml"],
        repo.path(),
    );
    assert_eq!(quiet.stdout, loud.stdout);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
    assert!(
        loud.stderr.contains("DEBUG") && loud.stderr.contains("task file checked"),
        "{}",
        loud.stderr
    );
}

#[test]
fn no_file_of_the_repository_points_outside_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let files = wavecrew_sys::git::git(&root)
        .args(["ls-files", "-z"])
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = String::from_utf8_lossy(&files)
        .split('\0')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(names.len() > 50, "git ls-files lists the repository");
    // Paths to the engineers' own notes, which are not in the repository,
    // and the names of those notes in the documents users read.
    let outside = ["../shared", "/work/shared", "/work/main"];
    let notes = regex::Regex::new(r"\b(?:DESIGN|STYLE|ccw-compat|agent-clis)\.md\b").unwrap();
    let md_link = regex::Regex::new(r"\]\(([^)#\s]+)").unwrap();
    let mut found = Vec::new();
    for name in &names {
        let path = root.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for needle in outside {
            if text.contains(needle) && !name.ends_with("tests/it/taskfile.rs") {
                found.push(format!("{name}: `{needle}`"));
            }
        }
        if Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"))
        {
            if let Some(m) = notes.find(&text) {
                found.push(format!(
                    "{name}: names `{}`, which is not in the repository",
                    m.as_str()
                ));
            }
            if text.contains('§') {
                found.push(format!(
                    "{name}: cites a section (§) of notes that are not in the repository"
                ));
            }
            for c in md_link.captures_iter(&text) {
                let target = &c[1];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let resolved = Path::new(name)
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join(target);
                let ok = root.join(&resolved).exists()
                    && root
                        .join(&resolved)
                        .canonicalize()
                        .is_ok_and(|p| p.starts_with(root.canonicalize().unwrap()));
                if !ok {
                    found.push(format!(
                        "{name}: links to `{target}`, outside the repository or missing"
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "links that leave the repository:\n{}",
        found.join("\n")
    );
}
