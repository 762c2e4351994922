//! Running the workspace's binaries and rendering what they did.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// What a binary did: exit code, stdout and stderr.
#[derive(Debug, Clone)]
pub struct CliOutput {
    /// The exit code (`-1` when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl CliOutput {
    /// The whole contract as one redacted text, in the uv snapshot layout.
    pub fn render(&self) -> String {
        crate::redact(&format!(
            "exit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
            self.code, self.stdout, self.stderr
        ))
    }

    /// The same, with `path` (a temp root) replaced by `[ROOT]` first.
    pub fn render_in(&self, path: &Path) -> String {
        let root = path.display().to_string();
        crate::redact(
            &format!(
                "exit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
                self.code, self.stdout, self.stderr
            )
            .replace(&root, "[ROOT]"),
        )
    }
}

impl From<Output> for CliOutput {
    fn from(o: Output) -> Self {
        CliOutput {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// The path of a workspace binary (`target/<profile>/<name>`).
///
/// A dev-dependency does not build another package's binaries, so the first
/// call in each test process runs `cargo build -p wavecrew-cli --bins` for the
/// test's own profile (a no-op when nothing changed); without it a test could
/// run a stale binary. Set `WAVECREW_E2E_NO_BUILD=1` to skip the build.
pub fn bin_path(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/<test> → target/<profile>/<name>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps");
    BUILT.get_or_init(|| {
        if std::env::var_os("WAVECREW_E2E_NO_BUILD").is_some() {
            return;
        }
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "-p",
                "wavecrew-cli",
                "--bins",
                // The scale-out engine too: tests/it/scale_out.rs runs it
                // (and the e2e crate builds the CLI with it anyway).
                "--features",
                "nats",
                "--profile",
                profile,
            ])
            .stdin(std::process::Stdio::null())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building wavecrew-cli failed");
    });
    profile_dir.join(name)
}

/// Run a workspace binary with `args` in `cwd` (stdin closed) and capture it.
pub fn run_bin(name: &str, args: &[&str], cwd: &Path) -> CliOutput {
    Command::new(bin_path(name))
        .args(args)
        .current_dir(cwd)
        .env_remove("CCW_PROJECT_ROOT")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run binary")
        .into()
}
