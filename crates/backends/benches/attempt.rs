//! Per-attempt overhead of the adapter with a no-op agent (`true`), against
//! the machine's floor of one spawn (ccw-compat §6.1 measured about
//! 0.75 ms per spawn here).
//!
//! * `spawn_floor`: `std::process::Command::new("true").status()`;
//! * `supervise`: the same process under supervision (own group, limits,
//!   output capture, group cleanup);
//! * `attempt_plain_dir`: a whole [`CliBackend`] attempt outside git
//!   (prompt, argv and outcome files, redaction);
//! * `attempt_git_repo`: the same in a git work tree (two `git status`);
//! * `attempt_boxed`: `attempt_plain_dir` with the whole box of the
//!   default mode (the write rules, the credential files of a home with
//!   90 entries hidden, the scopes, the withheld variables, and the
//!   network of its own: `wavecrew-box`, its namespace and the egress
//!   proxy), against `sandbox = "off"`; `attempt_boxed_open_network`: the
//!   same box with `network = "open"` (no `wavecrew-box`);
//! * `cargo_task_off` and `cargo_task_boxed`: one real-project task both
//!   ways, an agent that rebuilds a crate with a dependency
//!   (`touch src/lib.rs && cargo build --offline`);
//! * `governor_admit_release`: what the governor adds to every attempt —
//!   one admission and one release through `governor.json` (two locked,
//!   fsynced rewrites);
//! * `governor_usage_event`: one usage event counted against the budgets;
//! * `private_config_first` and `private_config_again`: a confined Claude
//!   Code agent's private copy of its configuration, made (a task's first
//!   attempt) and found again (its later attempts);
//! * `check_plain`, `check_boxed` and `check_boxed_network`: one command
//!   wavecrew runs on an agent's work (`true`), unconfined, with the write
//!   rules alone (its temporary folder, the Landlock rules, the confined
//!   thread), and in the whole box of the checks of the default mode (the
//!   withheld variables and a network of its own: `wavecrew-box`, its
//!   namespace and an egress proxy; the box is found beside the bench or
//!   by `WAVECREW_BOX`). Target (issue 45): the box adds at most 10 ms.

use std::path::Path;
use std::process::Command;

use criterion::Criterion;
use wavecrew_backends::CliBackend;
use wavecrew_backends::config::Config;
use wavecrew_backends::supervise::{Spawn, supervise};
use wavecrew_core::{AttemptRequest, Backend, Limits, Mode};

fn request(cwd: &Path, out: &Path) -> AttemptRequest {
    AttemptRequest {
        task_id: "IMPL-001".into(),
        prompt: "noop".into(),
        cwd: cwd.to_owned(),
        git: None,
        clean_before: false,
        mode: Mode::Write,
        attempt_dir: out.to_owned(),
        limits: Limits::default(),
        resume_session: None,
        env: std::collections::BTreeMap::new(),
        sandbox: None,
        allow_hosts: Vec::new(),
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("attempt");
    g.sample_size(50);
    g.bench_function("spawn_floor", |b| {
        b.iter(|| Command::new("true").status().unwrap());
    });
    let plain = tempfile::tempdir().unwrap();
    g.bench_function("supervise", |b| {
        let spawn = Spawn::new("true", &[], plain.path());
        b.iter(|| rt.block_on(supervise(&spawn, &Limits::default(), None, None, |_| {})));
    });
    let config = Config::parse(
        "[backends.noop]\nkind = \"command\"\nargv = [\"true\"]\n",
        Path::new("wavecrew.toml"),
    )
    .unwrap();
    let backend = CliBackend::new(config.backend("noop").unwrap());
    let out = tempfile::tempdir().unwrap();
    g.bench_function("attempt_plain_dir", |b| {
        let req = request(plain.path(), &out.path().join("a"));
        b.iter(|| rt.block_on(backend.run(&req)));
    });
    let boxed_session = tempfile::tempdir().unwrap();
    let boxed_backend = CliBackend::configured(config.backend("noop").unwrap(), &config);
    g.bench_function("attempt_boxed", |b| {
        // A home as people have one: credential folders to hide among
        // the rest (every other entry is a read rule).
        let home = boxed_session.path().join("home");
        for rel in [".ssh", ".aws", ".gnupg", ".config/gh", ".kube", ".docker"] {
            std::fs::create_dir_all(home.join(rel)).unwrap();
        }
        for i in 0..40 {
            std::fs::create_dir_all(home.join(format!("project-{i}"))).unwrap();
            std::fs::create_dir_all(home.join(format!(".config/tool-{i}"))).unwrap();
        }
        let mut req = request(plain.path(), &out.path().join("boxed"));
        req.env.insert("HOME".into(), home.display().to_string());
        req.sandbox =
            wavecrew_backends::confine::writable(&config, plain.path(), None, boxed_session.path());
        assert!(req.sandbox.is_some(), "the default mode confines");
        let o = rt.block_on(boxed_backend.run(&req));
        assert_eq!(
            o.network.map(|n| n.mode).as_deref(),
            Some("allowlist"),
            "the default mode gives the agent a network of its own"
        );
        b.iter(|| rt.block_on(boxed_backend.run(&req)));
    });
    let open_config = Config::parse(
        "[backends.noop]\nkind = \"command\"\nargv = [\"true\"]\n\n\
         [isolation]\nnetwork = \"open\"\n",
        Path::new("wavecrew.toml"),
    )
    .unwrap();
    let open_backend = CliBackend::configured(open_config.backend("noop").unwrap(), &open_config);
    g.bench_function("attempt_boxed_open_network", |b| {
        let home = boxed_session.path().join("home");
        let mut req = request(plain.path(), &out.path().join("boxed-open"));
        req.env.insert("HOME".into(), home.display().to_string());
        req.sandbox = wavecrew_backends::confine::writable(
            &open_config,
            plain.path(),
            None,
            boxed_session.path(),
        );
        b.iter(|| rt.block_on(open_backend.run(&req)));
    });
    let repo = tempfile::tempdir().unwrap();
    wavecrew_testkit::git::git_ok(repo.path(), &["init", "-q"]);
    g.bench_function("attempt_git_repo", |b| {
        let req = request(repo.path(), &out.path().join("b"));
        b.iter(|| rt.block_on(backend.run(&req)));
    });
    let session = tempfile::tempdir().unwrap();
    let governor = wavecrew_backends::governor::Governor::for_session(&config, session.path());
    g.bench_function("governor_admit_release", |b| {
        b.iter(|| {
            let wavecrew_backends::governor::Admission::Granted(p) =
                governor.try_admit("noop", "IMPL-001", 1).unwrap()
            else {
                panic!("no limits: always granted")
            };
            governor.release(&p, true);
        });
    });
    let usage = wavecrew_core::Usage {
        input_tokens: 100,
        output_tokens: 10,
        ..wavecrew_core::Usage::default()
    };
    g.bench_function("governor_usage_event", |b| {
        b.iter(|| governor.record_usage("noop", "IMPL-001", &usage).unwrap());
    });
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude/commands")).unwrap();
    for (rel, text) in [
        (".claude/settings.json", "{\"env\": {}}\n"),
        (".claude/CLAUDE.md", "be brief\n"),
        (".claude/commands/review.md", "review it\n"),
        (".claude/.credentials.json", "{}\n"),
        (".claude.json", "{\"projects\": {}}\n"),
    ] {
        std::fs::write(home.path().join(rel), text).unwrap();
    }
    let copies = tempfile::tempdir().unwrap();
    let no_env = |_: &str| None;
    let kind = wavecrew_backends::config::Kind::Claude;
    let mut n = 0u64;
    g.bench_function("private_config_first", |b| {
        b.iter(|| {
            n += 1;
            let copy = copies.path().join(n.to_string());
            wavecrew_backends::private_config::prepare(kind, &copy, &no_env, Some(home.path()))
                .unwrap()
                .unwrap()
        });
    });
    let again = copies.path().join("again");
    g.bench_function("private_config_again", |b| {
        b.iter(|| {
            wavecrew_backends::private_config::prepare(kind, &again, &no_env, Some(home.path()))
                .unwrap()
                .unwrap()
        });
    });
    let checks = wavecrew_sys::confined::CommandBox {
        writable: vec![home.path().to_owned()],
        ..wavecrew_sys::confined::CommandBox::default()
    };
    // The default box of the checks: the agent's environment rule and a
    // network of its own through `wavecrew-box` and an egress proxy (the
    // box is found beside the bench's binary, or by `WAVECREW_BOX`).
    let networked = wavecrew_sys::confined::CommandBox {
        writable: vec![home.path().to_owned()],
        withheld_env: vec!["DEPLOY_TOKEN".to_owned()],
        network: wavecrew_sys::confined::Network::Allowlist(
            wavecrew_sys::allow_hosts::AllowList::parse(&["registry.npmjs.org"]).unwrap(),
        ),
        ..wavecrew_sys::confined::CommandBox::default()
    };
    g.bench_function("check_plain", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut cmd = tokio::process::Command::new("true");
                cmd.current_dir(plain.path());
                cmd.spawn().unwrap().wait().await.unwrap()
            })
        });
    });
    g.bench_function("check_boxed", |b| {
        b.iter(|| {
            rt.block_on(async {
                let boxed = checks.around(plain.path(), &[]).unwrap();
                let mut cmd = tokio::process::Command::new("true");
                cmd.current_dir(plain.path());
                boxed.spawn(&mut cmd).unwrap().wait().await.unwrap()
            })
        });
    });
    g.bench_function("check_boxed_network", |b| {
        b.iter(|| {
            rt.block_on(async {
                let boxed = networked.around(plain.path(), &[]).unwrap();
                let mut cmd = boxed.command("true", [] as [&str; 0]);
                cmd.current_dir(plain.path());
                boxed.spawn(&mut cmd).unwrap().wait().await.unwrap()
            })
        });
    });
    g.finish();
    cargo_task(c, &rt);
}

/// One real-project task, in the box of the default mode and without:
/// the agent rebuilds a crate that depends on `itoa` (from the registry
/// cache, offline), as an agent's `cargo build` after an edit does.
fn cargo_task(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"task\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nitoa = \"1\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n",
    )
    .unwrap();
    // The lockfile and the first build, outside the measure.
    let first = Command::new("cargo")
        .args(["build", "--offline", "-q"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(first.success(), "the task's crate builds offline");
    let text = "[backends.cargo]\nkind = \"command\"\n\
                argv = [\"sh\", \"-c\", \"touch src/lib.rs && cargo build --offline -q\"]\n";
    let config = Config::parse(text, Path::new("wavecrew.toml")).unwrap();
    let backend = CliBackend::configured(config.backend("cargo").unwrap(), &config);
    let session = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("real_task");
    g.sample_size(10);
    g.bench_function("cargo_task_off", |b| {
        let req = request(dir, &out.path().join("off"));
        b.iter(|| {
            let o = rt.block_on(backend.run(&req));
            assert_eq!(o.exit_code, Some(0), "{o:?}");
        });
    });
    g.bench_function("cargo_task_boxed", |b| {
        let mut req = request(dir, &out.path().join("boxed"));
        req.sandbox = wavecrew_backends::confine::writable(&config, dir, None, session.path());
        b.iter(|| {
            let o = rt.block_on(backend.run(&req));
            assert_eq!(o.exit_code, Some(0), "{o:?}");
        });
    });
    g.finish();
}

/// `wavecrew-box` beside this bench (in `target/<profile>/`), built there
/// when it is not: the box of the default mode needs it.
fn build_the_box() {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    if profile_dir.join("wavecrew-box").is_file() {
        return;
    }
    let profile = if profile_dir.ends_with("release") {
        "release"
    } else {
        "dev"
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args([
            "build",
            "-q",
            "--profile",
            profile,
            "-p",
            "wavecrew-cli",
            "--bin",
            "wavecrew-box",
        ])
        .status()
        .unwrap();
    assert!(built.success(), "cannot build wavecrew-box");
}

fn main() {
    build_the_box();
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
