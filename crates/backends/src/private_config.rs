//! A confined agent's own copy of its CLI's configuration.
//!
//! An agent CLI keeps its settings beside its sessions and transcripts
//! (`~/.claude/settings.json` and `~/.claude.json` with their hooks and
//! MCP servers, `~/.codex/config.toml` with its `notify` program and MCP
//! servers, `~/.gemini/settings.json`), and it writes that folder as it
//! runs. Were the user's folder writable, an agent could add a hook or a
//! server there that the user's next session of that CLI runs, unconfined.
//! So a confined agent of Claude Code, Codex CLI or Gemini CLI works with a
//! private copy, made once per task beside its attempts (its sessions
//! persist from one attempt to the next, so native resume works) and named
//! to the CLI by its own variable (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
//! `GEMINI_CLI_HOME`). The user's settings, instructions and custom
//! commands are copied in; the login is linked, not copied, so a token the
//! CLI refreshes stays the user's. Nothing the agent writes in the copy
//! leaves it.
//!
//! Qwen Code and opencode have no such variable: a confined one may write
//! only the data folders listed in [`data_folders`], never its settings.

use std::io;
use std::path::{Path, PathBuf};

use crate::config::Kind;

/// What a private copy gives an attempt: variables for the CLI's
/// environment and the paths it may write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrivateConfig {
    /// Variables that point the CLI at its copy (`CLAUDE_CONFIG_DIR=…`).
    pub env: Vec<(String, String)>,
    /// The copy itself, and the user's login files the copy links to.
    pub writable: Vec<PathBuf>,
}

/// What one CLI's copy is made of.
struct Recipe {
    /// The variable that names the copy to the CLI.
    var: &'static str,
    /// Below the copy, the folder the CLI uses (`.gemini` under
    /// `GEMINI_CLI_HOME`; the copy itself otherwise).
    inner: &'static str,
    /// Files and folders copied from the user's configuration folder.
    copied: &'static [&'static str],
    /// Login files linked to the user's (kept up to date by the CLI).
    linked: &'static [&'static str],
}

const CLAUDE: Recipe = Recipe {
    var: "CLAUDE_CONFIG_DIR",
    inner: "",
    copied: &["settings.json", "CLAUDE.md", "commands", "agents"],
    linked: &[".credentials.json"],
};

const CODEX: Recipe = Recipe {
    var: "CODEX_HOME",
    inner: "",
    copied: &["config.toml", "AGENTS.md", "AGENTS.override.md"],
    linked: &["auth.json"],
};

const GEMINI: Recipe = Recipe {
    var: "GEMINI_CLI_HOME",
    inner: ".gemini",
    copied: &["settings.json", "GEMINI.md", ".env", "trustedFolders.json"],
    linked: &["oauth_creds.json", "google_accounts.json"],
};

/// The user's configuration folder of the CLI `kind`, read from the
/// agent's environment (`env`) and `home`, and the global file Claude Code
/// keeps beside it (`~/.claude.json`, or `.claude.json` in
/// `CLAUDE_CONFIG_DIR`).
fn user_folder(
    kind: Kind,
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Option<(PathBuf, Option<PathBuf>)> {
    match kind {
        Kind::Claude => match env("CLAUDE_CONFIG_DIR") {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                let global = dir.join(".claude.json");
                Some((dir, Some(global)))
            }
            None => home.map(|h| (h.join(".claude"), Some(h.join(".claude.json")))),
        },
        Kind::Codex => env("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".codex")))
            .map(|d| (d, None)),
        Kind::Gemini => env("GEMINI_CLI_HOME")
            .map(PathBuf::from)
            .or_else(|| home.map(Path::to_owned))
            .map(|d| (d.join(".gemini"), None)),
        _ => None,
    }
}

fn recipe(kind: Kind) -> Option<&'static Recipe> {
    match kind {
        Kind::Claude => Some(&CLAUDE),
        Kind::Codex => Some(&CODEX),
        Kind::Gemini => Some(&GEMINI),
        _ => None,
    }
}

/// The variables that hold the CLI `kind`'s own login (its model API's
/// key or token): passed on to its agent, while the credentials of other
/// services are not ([`crate::confine::withheld_env`]).
pub fn own_login_vars(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Claude => &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ],
        Kind::Codex => &["OPENAI_API_KEY", "CODEX_API_KEY"],
        Kind::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        Kind::Qwen => &["DASHSCOPE_API_KEY", "OPENAI_API_KEY", "QWEN_API_KEY"],
        Kind::Opencode => &[
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
        ],
        Kind::Command | Kind::Scripted => &[],
    }
}

/// The login files of the CLI `kind` under `home` (the user's, as the
/// private copy links them): readable by its own agent, hidden from every
/// other ([`crate::confine::SECRET_FILES`]).
pub fn own_login_files(
    kind: Kind,
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    match (recipe(kind), user_folder(kind, env, home)) {
        (Some(recipe), Some((user, _))) => recipe.linked.iter().map(|n| user.join(n)).collect(),
        _ => match kind {
            Kind::Qwen => home
                .map(|h| vec![h.join(".qwen/oauth_creds.json")])
                .unwrap_or_default(),
            Kind::Opencode => home
                .map(|h| vec![h.join(".local/share/opencode/auth.json")])
                .unwrap_or_default(),
            _ => Vec::new(),
        },
    }
}

/// The data folders a confined Qwen Code or opencode may write under
/// `home`: their sessions, logs and caches, not their settings.
pub fn data_folders(kind: Kind, home: Option<&Path>) -> Vec<PathBuf> {
    let under = |rels: &[&str]| -> Vec<PathBuf> {
        home.map(|h| rels.iter().map(|r| h.join(r)).collect())
            .unwrap_or_default()
    };
    match kind {
        Kind::Qwen => under(&[".qwen/tmp"]),
        Kind::Opencode => under(&[
            ".local/share/opencode/storage",
            ".local/share/opencode/log",
            ".local/share/opencode/snapshot",
        ]),
        _ => Vec::new(),
    }
}

/// The private copy of `kind`'s configuration at `copy` (made from the
/// user's on first use, kept afterwards), or `None` for a CLI that has
/// none. `env` reads the agent's environment; `home` is its `HOME`.
pub fn prepare(
    kind: Kind,
    copy: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> io::Result<Option<PrivateConfig>> {
    let (Some(recipe), Some((user, global))) = (recipe(kind), user_folder(kind, env, home)) else {
        return Ok(None);
    };
    if !copy.is_dir() {
        make_copy(recipe, &user, global.as_deref(), copy)?;
    }
    let mut writable = vec![copy.to_owned()];
    writable.extend(
        recipe
            .linked
            .iter()
            .map(|name| user.join(name))
            .filter(|p| p.is_file()),
    );
    Ok(Some(PrivateConfig {
        env: vec![(recipe.var.to_owned(), copy.to_string_lossy().into_owned())],
        writable,
    }))
}

/// Make the copy in a folder of its own beside `copy`, then rename it into
/// place: a copy half made by a killed process is never used.
fn make_copy(recipe: &Recipe, user: &Path, global: Option<&Path>, copy: &Path) -> io::Result<()> {
    let parent = copy
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no parent", copy.display())))?;
    std::fs::create_dir_all(parent)?;
    let making = tempfile::Builder::new()
        .prefix(".making-")
        .tempdir_in(parent)?;
    let inner = making.path().join(recipe.inner);
    std::fs::create_dir_all(&inner)?;
    for name in recipe.copied {
        copy_tree(&user.join(name), &inner.join(name))?;
    }
    if let Some(global) = global.filter(|g| g.is_file()) {
        std::fs::copy(global, inner.join(".claude.json"))?;
    }
    for name in recipe.linked {
        let theirs = user.join(name);
        if theirs.is_file() {
            std::os::unix::fs::symlink(&theirs, inner.join(name))?;
        }
    }
    let made = making.keep();
    match std::fs::rename(&made, copy) {
        Ok(()) => Ok(()),
        // Another attempt of the task made it first: theirs is as good.
        Err(_) if copy.is_dir() => std::fs::remove_dir_all(&made),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&made);
            Err(e)
        }
    }
}

/// Copy a file, or a folder with the files below it; a missing source is
/// nothing to copy, and symbolic links are left out (one could lead the
/// copy to a file the user never meant to share).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(from) else {
        return Ok(());
    };
    if meta.is_file() {
        std::fs::copy(from, to).map(|_| ())
    } else if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn claude_gets_a_copy_of_its_settings_and_a_link_to_its_login() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".claude/commands")).unwrap();
        std::fs::write(home.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(home.join(".claude/commands/x.md"), "do x").unwrap();
        std::fs::write(home.join(".claude/.credentials.json"), "{\"t\":1}").unwrap();
        std::fs::write(home.join(".claude.json"), "{\"g\":1}").unwrap();
        std::fs::create_dir_all(home.join(".claude/projects/big")).unwrap();
        let copy = tmp.path().join("copies/claude");
        let got = prepare(Kind::Claude, &copy, &no_env, Some(&home))
            .unwrap()
            .unwrap();
        assert_eq!(
            got.env,
            [(
                "CLAUDE_CONFIG_DIR".to_owned(),
                copy.to_string_lossy().into_owned()
            )]
        );
        assert_eq!(
            got.writable,
            [copy.clone(), home.join(".claude/.credentials.json")]
        );
        assert_eq!(
            std::fs::read_to_string(copy.join(".claude.json")).unwrap(),
            "{\"g\":1}"
        );
        assert_eq!(
            std::fs::read_to_string(copy.join("commands/x.md")).unwrap(),
            "do x"
        );
        assert!(
            std::fs::symlink_metadata(copy.join(".credentials.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            !copy.join("projects").exists(),
            "transcripts stay the user's"
        );
        // The copy is the agent's: a second attempt keeps what it holds.
        std::fs::write(copy.join("settings.json"), "{\"hooks\":{}}").unwrap();
        prepare(Kind::Claude, &copy, &no_env, Some(&home)).unwrap();
        assert_eq!(
            std::fs::read_to_string(copy.join("settings.json")).unwrap(),
            "{\"hooks\":{}}"
        );
        assert_eq!(
            std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
            "{}"
        );
    }

    #[test]
    fn codex_and_gemini_follow_their_own_variables() {
        let tmp = tempfile::tempdir().unwrap();
        let user_codex = tmp.path().join("codex-home");
        std::fs::create_dir_all(&user_codex).unwrap();
        std::fs::write(user_codex.join("config.toml"), "model = \"m\"\n").unwrap();
        let env = |k: &str| (k == "CODEX_HOME").then(|| user_codex.display().to_string());
        let copy = tmp.path().join("codex");
        let got = prepare(Kind::Codex, &copy, &env, None).unwrap().unwrap();
        assert_eq!(got.env[0].0, "CODEX_HOME");
        assert_eq!(
            std::fs::read_to_string(copy.join("config.toml")).unwrap(),
            "model = \"m\"\n"
        );

        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(home.join(".gemini/settings.json"), "{}").unwrap();
        let copy = tmp.path().join("gemini");
        let got = prepare(Kind::Gemini, &copy, &no_env, Some(&home))
            .unwrap()
            .unwrap();
        assert_eq!(got.env[0].0, "GEMINI_CLI_HOME");
        assert!(copy.join(".gemini/settings.json").is_file());

        assert_eq!(
            prepare(Kind::Command, &tmp.path().join("c"), &no_env, Some(&home)).unwrap(),
            None
        );
    }
}
