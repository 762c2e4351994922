//! Where an agent may write when it is confined (`[isolation] sandbox`):
//! the policy; `wavecrew_sys::sandbox` enforces it.
//!
//! An agent may write its working folder (its worktree), its temporary
//! folder, the session's `artifacts/` (its deliverables) and its bus
//! `.msg/` (ccw's protocol: agents post `capability_gap`,
//! `consensus_blocked` and the like with `wavecrew msg log`), the git
//! metadata its own commits need, its CLI's private copy of its
//! configuration (`crate::private_config`), `/dev` and the caches of
//! `[isolation] sandbox_writable`. Not the session's task files, attempts
//! or worker state, not the user's checkout, and not the repository's
//! configuration, hooks or other branches.
//!
//! In a linked worktree, the git metadata it may write is the worktree's
//! own git folder (its `HEAD`, index and logs), the object store (objects
//! are named by their content: writing one changes nothing else), and the
//! folder of its own branch's ref and reflog. In the project folder itself
//! (`[isolation] mode = "in-place"`) the folder is writable as a whole, the
//! session's files in it included: only worktrees keep those out of reach.

use std::path::{Path, PathBuf};

use wavecrew_sys::allow_hosts::AllowList;
use wavecrew_sys::confined::{CommandBox, Network};
use wavecrew_sys::git::WorkTreeGit;

use crate::config::{Config, NetworkMode, SandboxMode};

/// Cargo's lock and cache-tracking files: made (empty) before an agent
/// runs when they are missing, since a rule names only what exists and
/// Cargo would otherwise have to create them in `~/.cargo` itself.
const MADE_FIRST: [&str; 3] = [
    "~/.cargo/.package-cache",
    "~/.cargo/.package-cache-mutate",
    "~/.cargo/.global-cache",
];

/// What an agent working in `cwd` for the session in `session_dir` may
/// write, or `None` when agents are not confined (`sandbox = "off"`). The
/// CLI's private configuration and the temporary folder are added per
/// attempt (`crate::runner`).
pub fn writable(
    config: &Config,
    cwd: &Path,
    git: Option<&WorkTreeGit>,
    session_dir: &Path,
) -> Option<Vec<PathBuf>> {
    if config.isolation.sandbox == SandboxMode::Off {
        return None;
    }
    let layout = wavecrew_core::SessionLayout::new(session_dir);
    let shared = [layout.artifacts(), layout.msg()];
    for dir in &shared {
        // A rule needs its folder: the shared folders are made first.
        let _ = std::fs::create_dir_all(dir);
    }
    let mut paths = vec![cwd.to_owned()];
    paths.extend(shared);
    match git {
        Some(git) => paths.extend(git_metadata(git)),
        None => paths.extend(WorkTreeGit::locate(cwd).iter().flat_map(git_metadata)),
    }
    paths.extend(caches(config));
    Some(paths)
}

/// The box of the commands wavecrew runs on an agent's work in the
/// project at `project` (its syntax checks, acceptance commands and tests,
/// a worktree's setup, `[integration] verify`), which run the agent's code:
/// the agent's rules. They may write what the agent may of the caches, may
/// not read the credential files, do not get the credential variables
/// (but `[isolation] pass_env`), and have a network of their own
/// (`[isolation] check_network`: by default out only to the package
/// registries `project`'s manifests and lockfiles name, read from the
/// user's checkout, never the agent's worktree, and `allow_hosts`). `None`
/// when agents are not confined (`sandbox = "off"`): anywhere, as the user.
pub fn command_box(config: &Config, project: &Path) -> Option<CommandBox> {
    if config.isolation.sandbox == SandboxMode::Off {
        return None;
    }
    let network = match config.isolation.check_network {
        NetworkMode::Open => Network::Open,
        NetworkMode::None => Network::None,
        NetworkMode::Allowlist => {
            let mut hosts = crate::registries::registry_hosts(project);
            hosts.extend(config.isolation.allow_hosts.iter().cloned());
            // The entries were checked when the configuration was read; the
            // registries' are well-formed names.
            Network::Allowlist(AllowList::parse(&hosts).unwrap_or_default())
        }
    };
    Some(CommandBox {
        writable: caches(config),
        hidden: hidden(&config.isolation.deny_read, home_dir(None).as_deref(), &[]),
        required: config.isolation.sandbox == SandboxMode::Required,
        withheld_env: withheld_env(&config.isolation.pass_env, &[], &|_| false),
        network,
    })
}

/// `[isolation] sandbox_writable`, expanded under wavecrew's home; Cargo's
/// lock files there are made first (a rule names only what exists).
fn caches(config: &Config) -> Vec<PathBuf> {
    let home = home_dir(None);
    for file in MADE_FIRST {
        if config.isolation.sandbox_writable.iter().any(|p| p == file)
            && let Some(path) = expand(file, home.as_deref())
            && path.parent().is_some_and(Path::is_dir)
            && !path.exists()
        {
            let _ = std::fs::OpenOptions::new()
                .create_new(true)
                .write(true)
                .open(&path);
        }
    }
    config
        .isolation
        .sandbox_writable
        .iter()
        .filter_map(|p| expand(p, home.as_deref()))
        .collect()
}

/// What a confined agent (and the checks on its work) may not read: the
/// usual credential files and folders (`~` is its home), besides
/// `[isolation] deny_read`. Its own backend's login stays readable
/// ([`crate::private_config::own_login_files`]).
pub const SECRET_FILES: [&str; 26] = [
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.config/gcloud",
    "~/.azure",
    "~/.docker/config.json",
    "~/.kube",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.config/git/credentials",
    "~/.password-store",
    "~/.claude/.credentials.json",
    "~/.codex/auth.json",
    "~/.gemini/oauth_creds.json",
    "~/.gemini/google_accounts.json",
    "~/.qwen/oauth_creds.json",
    "~/.local/share/opencode/auth.json",
    "~/.local/share/keyrings",
    "~/.vault-token",
    "~/.npmrc",
    "~/.m2/settings.xml",
    "~/.config/containers/auth.json",
];

/// Variables that give access to a credential without looking secret by
/// name: the SSH and GPG agents' sockets, a credentials file's path.
const CREDENTIAL_VARS: [&str; 4] = [
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_SHARED_CREDENTIALS_FILE",
];

/// The paths hidden from confined agents and checks (the credential files
/// and `deny_read`, `[isolation] deny_read`), under `home`, but `readable`
/// (the agent's own login files).
pub fn hidden(deny_read: &[String], home: Option<&Path>, readable: &[PathBuf]) -> Vec<PathBuf> {
    SECRET_FILES
        .iter()
        .map(|p| (*p).to_owned())
        .chain(deny_read.iter().cloned())
        .filter_map(|p| expand(&p, home))
        .filter(|p| !readable.contains(p))
        .collect()
}

/// The variables of wavecrew's environment a confined agent does not get:
/// those that look like another service's credential (`*_KEY`, `*_TOKEN`,
/// `*_SECRET`, passwords, the SSH agent's socket…), but its backend's own
/// login (`own`), what its configuration sets (`set`) and `[isolation]
/// pass_env`.
pub fn withheld_env(
    config_pass: &[String],
    own: &[&str],
    set: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| {
            (crate::redact::is_secret_name(k, &[]) || CREDENTIAL_VARS.contains(&k.as_str()))
                && !own.contains(&k.as_str())
                && !set(k)
                && !config_pass.iter().any(|p| p == k)
        })
        .collect()
}

/// The agent's home: `HOME` of its environment, or wavecrew's own.
pub fn home_dir(env_home: Option<&str>) -> Option<PathBuf> {
    env_home
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
}

/// `~/x` under `home`; an absolute path as it is; anything else left out.
fn expand(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    match path.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None if path == "~" => home.map(Path::to_owned),
        None => Some(PathBuf::from(path)).filter(|p| p.is_absolute()),
    }
}

/// The git metadata an agent in the linked worktree `git` needs to commit
/// on its own branch (see the module's notes); none outside a linked
/// worktree.
fn git_metadata(git: &WorkTreeGit) -> Vec<PathBuf> {
    if !git.is_linked() {
        return Vec::new();
    }
    let common = &git.common_dir;
    let mut paths = vec![git.git_dir.clone(), common.join("objects")];
    if let Some(folder) = git
        .head
        .as_deref()
        .filter(|h| h.starts_with("refs/heads/"))
        .and_then(|h| Path::new(h).parent())
    {
        for dir in [common.join(folder), common.join("logs").join(folder)] {
            // The reflog's folder may not be there yet: a rule needs it.
            let _ = std::fs::create_dir_all(&dir);
            paths.push(dir);
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_paths_expand_and_relative_ones_are_left_out() {
        let home = Path::new("/home/u");
        assert_eq!(expand("~/.cache", Some(home)), Some(home.join(".cache")));
        assert_eq!(expand("/opt/cache", Some(home)), Some("/opt/cache".into()));
        assert_eq!(expand("relative", Some(home)), None);
        assert_eq!(expand("~/.npm", None), None);
    }

    #[test]
    fn off_confines_nothing() {
        let session = tempfile::tempdir().unwrap();
        let s = session.path();
        let mut config = Config::default();
        config.isolation.sandbox = SandboxMode::Off;
        assert_eq!(writable(&config, Path::new("/w"), None, s), None);
        config.isolation.sandbox = SandboxMode::Auto;
        let paths = writable(&config, Path::new("/w"), None, s).unwrap();
        assert_eq!(
            paths[..3],
            [PathBuf::from("/w"), s.join("artifacts"), s.join(".msg")]
        );
        assert!(s.join("artifacts").is_dir() && s.join(".msg").is_dir());
    }
}
