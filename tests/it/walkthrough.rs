//! The README's five-minute walkthrough, run as it is written: the blocks
//! between `<!-- walkthrough` and `<!-- /walkthrough -->` are read from
//! README.md; a `toml` block whose first line is `# <file name>` is written
//! to that file, and each line of a `sh` block is run (split as shell words,
//! never through a shell) in a new git repository without any ccw file. The
//! only agent CLI on `PATH` is a fake `claude` that replays a script in
//! claude's stream format, so the walkthrough cannot drift from what
//! wavecrew does.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use wavecrew_testkit::{CliOutput, bin_path, insta_settings};

/// The walkthrough's blocks: `(info string, text)`.
fn walkthrough_blocks() -> Vec<(String, String)> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let start = readme
        .find("<!-- walkthrough")
        .expect("README.md marks its walkthrough with <!-- walkthrough");
    let end = readme
        .find("<!-- /walkthrough -->")
        .expect("README.md ends its walkthrough with <!-- /walkthrough -->");
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in readme[start..end].lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) => current = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => blocks.push(current.take().unwrap()),
            (Some((_, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// A folder for `PATH`: a fake `claude` and links to the few tools the
/// walkthrough's `verify` commands and the backends use.
fn tools(dir: &Path, script: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["grep", "git"] {
        let real = which(tool);
        std::os::unix::fs::symlink(real, bin.join(tool)).unwrap();
    }
    let claude = bin.join("claude");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\n# A stand-in for Claude Code: replays a script in its stream format.\n\
             if [ \"$1\" = \"--version\" ]; then echo \"2.1.197 (Claude Code)\"; exit 0; fi\n\
             exec '{}' --script '{}' --format claude\n",
            bin_path("wavecrew-scripted-agent").display(),
            script.display()
        ),
    )
    .unwrap();
    make_executable(&claude);
    bin
}

pub(crate) fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub(crate) fn which(tool: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("`{tool}` is not on PATH"))
}

/// A new git repository with one commit and no ccw file.
pub(crate) fn git_repo() -> wavecrew_testkit::git::TempProject {
    let tmp = wavecrew_testkit::git::TempProject::new();
    let git = |args: &[&str]| {
        wavecrew_testkit::git::git(tmp.path(), args);
    };
    git(&["init", "-q"]);
    std::fs::write(tmp.path().join("README.md"), "# my project\n").unwrap();
    git(&["add", "README.md"]);
    git(&["commit", "-q", "-m", "start"]);
    tmp
}

/// Output lines that depend on timing: the running totals.
fn steady(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains("] progress "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let blocks = walkthrough_blocks();
    assert!(
        blocks.iter().any(|(info, _)| info == "toml") && blocks.iter().any(|(i, _)| i == "sh"),
        "the walkthrough has a task file and commands: {blocks:?}"
    );
    let repo = git_repo();
    let side = tempfile::tempdir().unwrap();
    let script = side.path().join("claude-script.json");
    std::fs::write(
        &script,
        json!({"scenarios": [
            {"match": {"prompt_contains": "Review both files"}, "steps": [
                {"say": "Both files say what the goal asks: hello, and bonjour in French."}]},
            {"match": {"prompt_contains": "greeting.fr.txt"}, "steps": [
                {"write": {"path": "greeting.fr.txt", "content": "Bonjour\n"}},
                {"say": "greeting.fr.txt says Bonjour"}]},
            {"match": {"prompt_contains": "greeting.txt"}, "steps": [
                {"write": {"path": "greeting.txt", "content": "Hello, world\n"}},
                {"say": "greeting.txt says Hello, world"}]}
        ]})
        .to_string(),
    )
    .unwrap();
    let path = tools(side.path(), &script);
    let wavecrew = bin_path("wavecrew");
    let mut transcript = String::new();
    for (info, text) in &blocks {
        match info.as_str() {
            "toml" => {
                let name = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("# "))
                    .expect("a toml block of the walkthrough starts with `# <file name>`");
                std::fs::write(repo.path().join(name.trim()), text).unwrap();
                let _ = write!(transcript, "## wrote {name}\n\n");
            }
            "sh" => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let argv = shell_words(line);
                    assert_eq!(
                        argv[0], "wavecrew",
                        "walkthrough commands are wavecrew's: {line}"
                    );
                    let out: CliOutput = Command::new(&wavecrew)
                        .args(&argv[1..])
                        .current_dir(repo.path())
                        .env("PATH", &path)
                        .env("CI", "1")
                        .env("NO_COLOR", "1")
                        .env_remove("GITHUB_STEP_SUMMARY")
                        .env_remove("RUST_LOG")
                        .env_remove("CCW_PROJECT_ROOT")
                        .stdin(std::process::Stdio::null())
                        .output()
                        .unwrap()
                        .into();
                    assert_eq!(out.code, 0, "`{line}` failed:\n{}", out.render());
                    let _ = write!(
                        transcript,
                        "## $ {line}\n{}\n\n",
                        steady(&out.render_in(repo.path()))
                    );
                }
            }
            other => panic!("the walkthrough has a block of unknown kind `{other}`"),
        }
    }
    // What the walkthrough promises is there.
    let session = repo.path().join(".workflow/.team/TC-greeting");
    for f in [
        "team-session.json",
        "task-analysis.json",
        "roles/developer.md",
        "roles/reviewer.md",
        "tasks/IMPL-001.json",
        "tasks/REVIEW-001.json",
        "reports/summary.md",
        "reports/index.html",
        "reports/junit.xml",
    ] {
        assert!(session.join(f).is_file(), "{f} is missing");
    }
    assert_eq!(
        std::fs::read_to_string(repo.path().join("greeting.fr.txt")).unwrap(),
        "Bonjour\n"
    );
    insta_settings().bind(|| insta::assert_snapshot!(transcript));
}

fn shell_words(line: &str) -> Vec<String> {
    // The walkthrough's commands are plain words: no quotes to undo.
    assert!(
        !line.contains(['"', '\'', '$', '|', '>', '<', '&', ';', '`', '*']),
        "keep the walkthrough's commands plain words: {line}"
    );
    line.split_whitespace().map(str::to_owned).collect()
}
