//! `cargo install --locked --path bins` puts `wavecrew` and the role
//! binaries in a root of their own, and they work from there, outside the
//! source tree: the demo (embedded in the binary) and `init` in a new
//! repository. The install reuses the workspace's build (`--debug` and the
//! same target folder), so it costs a copy and a link, not a rebuild.

use std::path::{Path, PathBuf};
use std::process::Command;

use wavecrew_testkit::{CliOutput, bin_path};

use crate::walkthrough::git_repo;

#[test]
fn cargo_install_puts_working_binaries_on_path() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // target/<profile>/wavecrew → target
    let built = bin_path("wavecrew");
    let target = built.parent().and_then(Path::parent).unwrap().to_owned();
    let root = tempfile::tempdir().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let stamp = |p: &Path| {
        std::fs::metadata(p).map(|m| (std::os::unix::fs::MetadataExt::ino(&m), m.modified().ok()))
    };
    let before = stamp(&built).unwrap();
    let mut install = Command::new(&cargo);
    // Cargo as a user runs it: without the variables the test harness sets
    // for this test (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...). A build script
    // that tracks one (ring's tracks CARGO_MANIFEST_DIR) would see it change
    // and rebuild ring, rustls, async-nats and every crate above them.
    for (key, _) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| k.starts_with("CARGO_") && k != "CARGO_HOME")
        {
            install.env_remove(key);
        }
    }
    let out = install
        // The features the tests build with (the engine too, as a fleet
        // installs it), so the install reuses the build instead of
        // replacing the binaries other tests are running.
        .args([
            "install",
            "--quiet",
            "--locked",
            "--debug",
            "--features",
            "nats",
            "--path",
        ])
        .arg(workspace.join("crates/cli"))
        .arg("--root")
        .arg(root.path())
        .env("CARGO_TARGET_DIR", &target)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo install failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stamp(&built).unwrap(),
        before,
        "cargo install rebuilt the binaries the other tests are running: its \
         features or environment differ from the tests' build"
    );
    let bin = root.path().join("bin");
    for name in [
        "wavecrew",
        "wavecrew-executor",
        "wavecrew-team",
        "wavecrew-testrun",
        "wavecrew-planex",
        "wavecrew-roadmap",
        "wavecrew-scripted-agent",
        "wavecrew-box",
    ] {
        assert!(bin.join(name).is_file(), "{name} is installed");
    }
    // PATH: the installed binaries first, then what the demo's own checks
    // run (cargo, git, the shell tools); never the workspace's target.
    let cargo_dir = Path::new(&cargo)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_owned)
        .or_else(|| which_dir("cargo"));
    let mut dirs: Vec<PathBuf> = vec![bin.clone()];
    dirs.extend(cargo_dir);
    dirs.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
    let path = std::env::join_paths(&dirs).unwrap();
    let run = |args: &[&str], cwd: &Path| -> CliOutput {
        Command::new("wavecrew")
            .args(args)
            .current_dir(cwd)
            .env("PATH", &path)
            .env("CI", "1")
            .env_remove("CCW_PROJECT_ROOT")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
            .into()
    };
    let outside = tempfile::tempdir().unwrap();
    let demo = run(&["demo", "--dir", "demo"], outside.path());
    assert_eq!(demo.code, 0, "{}", demo.render());
    assert!(demo.stdout.contains("TASK COMPLETE"), "{}", demo.stdout);
    let repo = git_repo();
    let init = run(&["init"], repo.path());
    assert_eq!(init.code, 0, "{}", init.render());
    assert!(repo.path().join("wavecrew.toml").is_file());
    let check = run(&["config", "check"], repo.path());
    assert_eq!(check.code, 0, "{}", check.render());
}

fn which_dir(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|d| d.join(tool).is_file())
}

/// The packages `cargo tree` lists for the CLI's normal dependencies.
fn cli_tree(features: &[&str]) -> Vec<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args([
            "tree",
            "--quiet",
            "--locked",
            "--offline",
            "-p",
            "wavecrew-cli",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(features)
        .current_dir(&workspace)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_default_build_leaves_the_nats_engine_out_and_the_feature_brings_it() {
    let lean = cli_tree(&[]);
    for engine_only in [
        "async-nats",
        "ring",
        "rustls",
        "wavecrew-fleet",
        "wavecrew-engine-nats",
    ] {
        assert!(
            !lean.iter().any(|n| n == engine_only),
            "{engine_only} is in the default build: {lean:?}"
        );
    }
    let full = cli_tree(&["--features", "nats"]);
    for engine_only in ["async-nats", "ring", "wavecrew-fleet"] {
        assert!(
            full.iter().any(|n| n == engine_only),
            "{engine_only} is missing with --features nats"
        );
    }
    assert!(
        full.len() > lean.len() + 50,
        "{} vs {}",
        full.len(),
        lean.len()
    );
}
