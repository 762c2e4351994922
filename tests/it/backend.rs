//! `wavecrew backend probe|run`: the commands a user tries a backend with.

use std::path::Path;
use std::process::Command;

use wavecrew_testkit::{bin_path, insta_settings, run_bin};

fn project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let git = |args: &[&str]| {
        wavecrew_testkit::git::git(d, args);
    };
    git(&["init", "-q"]);
    std::fs::write(d.join("README.md"), "# p\n").unwrap();
    std::fs::write(
        d.join("script.json"),
        r#"{"scenarios":[{"steps":[{"write":{"path":"src/hello.txt","content":"hi\n"}},{"say":"Done: created src/hello.txt"}]}]}"#,
    )
    .unwrap();
    std::fs::write(d.join("prompt.md"), "Create src/hello.txt containing hi\n").unwrap();
    std::fs::write(
        d.join("wavecrew.toml"),
        format!(
            r#"[backends.demo]
kind = "scripted"
program = "{}"
script = "script.json"
format = "codex"

[backends.missing]
kind = "command"
argv = ["/nonexistent/agent", "{{task_id}}"]
"#,
            bin_path("wavecrew-scripted-agent").display()
        ),
    )
    .unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    tmp
}

fn in_root(text: &str, root: &Path) -> String {
    let agent = bin_path("wavecrew-scripted-agent").display().to_string();
    text.replace(&agent, "[SCRIPTED_AGENT]")
        .replace(&root.display().to_string(), "[ROOT]")
}

#[test]
fn run_one_attempt_as_json() {
    let p = project();
    let out = p.path().join("attempt");
    let o = run_bin(
        "wavecrew",
        &[
            "backend",
            "run",
            "demo",
            "--cwd",
            ".",
            "--prompt-file",
            "prompt.md",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
        p.path(),
    );
    assert_eq!(o.code, 0, "{}", o.render());
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    for key in [
        "backend",
        "outcome",
        "exit_code",
        "session_id",
        "files_changed",
        "duration_ms",
        "final_message",
        "usage",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["files_changed"], serde_json::json!(["src/hello.txt"]));
    assert_eq!(
        std::fs::read_to_string(p.path().join("src/hello.txt")).unwrap(),
        "hi\n"
    );
    insta_settings().bind(|| {
        insta::assert_snapshot!(in_root(&o.render_in(p.path()), p.path()));
    });
    for f in [
        "prompt.md",
        "argv.json",
        "stdout.log",
        "stderr.log",
        "outcome.json",
        "session.json",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
}

#[test]
fn run_human_output_and_an_unavailable_backend() {
    let p = project();
    let o = run_bin(
        "wavecrew",
        &[
            "backend",
            "run",
            "missing",
            "--cwd",
            ".",
            "--prompt-file",
            "prompt.md",
            "--out",
            "out",
        ],
        p.path(),
    );
    assert_eq!(o.code, 1);
    insta_settings().bind(|| {
        insta::assert_snapshot!(in_root(&o.render_in(p.path()), p.path()));
    });
}

#[test]
fn probe_lists_every_backend() {
    let p = project();
    let o = run_bin(
        "wavecrew",
        &["backend", "probe", "--cwd", ".", "--json"],
        p.path(),
    );
    assert_eq!(
        o.code,
        1,
        "some built-in CLIs are not on PATH: {}",
        o.render()
    );
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let demo = v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "demo")
        .unwrap();
    assert_eq!(demo["available"], true);
    assert!(
        demo["version"]
            .as_str()
            .unwrap()
            .starts_with("wavecrew-scripted-agent")
    );
    let missing = v["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "missing")
        .unwrap();
    assert_eq!(missing["available"], false);
    assert_eq!(missing["reason"], "`/nonexistent/agent` does not exist");
}

#[test]
fn a_bad_config_names_the_key() {
    let p = project();
    std::fs::write(
        p.path().join("bad.toml"),
        "[backends.mine]\nkind = \"command\"\nargv = []\n",
    )
    .unwrap();
    let o = run_bin(
        "wavecrew",
        &["--config", "bad.toml", "backend", "probe", "--cwd", "."],
        p.path(),
    );
    assert_eq!(o.code, 2);
    insta_settings().bind(|| {
        insta::assert_snapshot!(o.render_in(p.path()));
    });
}

#[test]
fn config_check_names_the_key_or_lists_what_is_configured() {
    let p = project();
    let ok = run_bin("wavecrew", &["config", "check"], p.path());
    assert_eq!(ok.code, 0, "{}", ok.render());
    assert!(
        ok.stdout.contains("demo (scripted)") && ok.stdout.contains("missing (command)"),
        "{}",
        ok.stdout
    );
    std::fs::write(
        p.path().join("bad.toml"),
        "[routing]\nfallback = [\"claude\", \"nobody\"]\n",
    )
    .unwrap();
    let bad = run_bin(
        "wavecrew",
        &["--config", "bad.toml", "config", "check"],
        p.path(),
    );
    assert_eq!(bad.code, 2);
    insta_settings().bind(|| insta::assert_snapshot!(bad.render_in(p.path())));
}

#[test]
fn run_notes_a_process_that_kept_the_pipes_after_the_agent_ended() {
    let p = project();
    // An agent that leaves a sleeper in a session of its own, holding its
    // stdout and stderr, once the sleeper has left its group.
    let script = "setsid sh -c 'echo $$ > \"$0\"; exec sleep 600' \"$1\" & \
                  while [ ! -s \"$1\" ]; do sleep 0.01; done; echo done";
    std::fs::write(
        p.path().join("wavecrew.toml"),
        format!(
            "[limits]\nleak_timeout_ms = 200\n\n[backends.esc]\nkind = \"command\"\n\
             argv = [\"sh\", \"-c\", {}, \"sh\", \"{{attempt_dir}}/escaped.pid\"]\n",
            serde_json::to_string(script).unwrap()
        ),
    )
    .unwrap();
    let out = p.path().join("attempt");
    let o = run_bin(
        "wavecrew",
        &[
            "backend",
            "run",
            "esc",
            "--cwd",
            ".",
            "--prompt-file",
            "prompt.md",
            "--out",
            out.to_str().unwrap(),
        ],
        p.path(),
    );
    if let Ok(pid) = std::fs::read_to_string(out.join("escaped.pid")) {
        let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
    }
    assert_eq!(o.code, 0, "{}", o.render());
    assert!(
        o.stdout.contains(
            "note: stdout and stderr still held open 200 ms after the agent ended, by a \
             process that left its process group (setsid)"
        ),
        "{}",
        o.render()
    );
    let recorded = std::fs::read_to_string(out.join("outcome.json")).unwrap();
    assert!(recorded.contains("\"notes\""), "{recorded}");
}
