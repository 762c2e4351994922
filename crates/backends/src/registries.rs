//! The package registries a project's manifests and lockfiles name: the
//! hosts the checks of an agent's work may reach through their egress
//! proxy, so `npm ci`, `cargo build` or `pip install` of the project's own
//! dependencies still work while nothing else leaves.
//!
//! Read from the user's checkout (the project's root), never from an
//! agent's worktree: what the agent writes never widens its checks'
//! network. Each ecosystem found adds its public registry (crates.io, the
//! npm registry, PyPI, the Go proxy); a lockfile adds the hosts it
//! resolves packages from (a private registry's). Only the folder itself
//! is read, and its top-level files.

use std::path::Path;

/// The hosts the registries of the project at `project` are reached at.
pub fn registry_hosts(project: &Path) -> Vec<String> {
    let has = |name: &str| project.join(name).is_file();
    let mut hosts: Vec<String> = Vec::new();
    let mut add = |list: &[&str]| hosts.extend(list.iter().map(|h| (*h).to_owned()));
    if has("Cargo.toml") || has("Cargo.lock") {
        add(&["index.crates.io", "static.crates.io", "crates.io"]);
    }
    if has("package.json") || has("package-lock.json") || has("npm-shrinkwrap.json") {
        add(&["registry.npmjs.org"]);
    }
    if has("yarn.lock") {
        add(&["registry.yarnpkg.com", "registry.npmjs.org"]);
    }
    if has("pnpm-lock.yaml") {
        add(&["registry.npmjs.org"]);
    }
    let python = [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
        "requirements-dev.txt",
        "uv.lock",
        "poetry.lock",
        "Pipfile",
        "Pipfile.lock",
    ];
    if python.iter().any(|f| has(f)) {
        add(&["pypi.org", "files.pythonhosted.org"]);
    }
    if has("go.mod") {
        add(&["proxy.golang.org", "sum.golang.org"]);
    }
    for (file, key) in [
        ("package-lock.json", "\"resolved\""),
        ("npm-shrinkwrap.json", "\"resolved\""),
        ("Cargo.lock", "source"),
        ("uv.lock", "url"),
        ("poetry.lock", "url"),
    ] {
        if let Ok(text) = std::fs::read_to_string(project.join(file)) {
            hosts.extend(lockfile_hosts(&text, key));
        }
    }
    hosts.sort();
    hosts.dedup();
    hosts
}

/// The hosts of the `https://` URLs on the lines of `text` that start with
/// `key` (after spaces): where a lockfile resolves its packages.
fn lockfile_hosts(text: &str, key: &str) -> Vec<String> {
    let mut hosts = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        if !line.starts_with(key) {
            continue;
        }
        let Some(at) = line.find("https://") else {
            continue;
        };
        // crates.io's own index, as Cargo.lock names it (Cargo reads it at
        // index.crates.io): not a door to the rest of github.com.
        if line[at..].starts_with("https://github.com/rust-lang/crates.io-index") {
            continue;
        }
        let rest = &line[at + "https://".len()..];
        let authority = rest
            .split(['/', '"', '\'', '?', '#', ' '])
            .next()
            .unwrap_or_default();
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let host = authority.split(':').next().unwrap_or_default();
        if !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        {
            hosts.push(host.to_ascii_lowercase());
        }
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ecosystem_names_its_registry_and_lockfiles_their_hosts() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            registry_hosts(dir.path()).is_empty(),
            "nothing found, nothing out"
        );
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
        std::fs::write(
            dir.path().join("package-lock.json"),
            "{\n  \"packages\": {\n    \"node_modules/a\": {\n      \"resolved\": \
             \"https://npm.corp.example/a/-/a-1.0.0.tgz\"\n    }\n  }\n}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("requirements.txt"), "six\n").unwrap();
        let hosts = registry_hosts(dir.path());
        for h in [
            "index.crates.io",
            "static.crates.io",
            "registry.npmjs.org",
            "npm.corp.example",
            "pypi.org",
            "files.pythonhosted.org",
        ] {
            assert!(hosts.contains(&h.to_owned()), "{h}: {hosts:?}");
        }
        assert!(!hosts.iter().any(|h| h.contains("golang")), "{hosts:?}");
    }

    #[test]
    fn only_https_urls_of_the_key_lines_count() {
        let text = "source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\
                    source = \"registry+https://index.crates.io/\"\n\
                    checksum = \"https://evil.example/\"\n\
                    source = \"git+ssh://git@host/x\"\n";
        assert_eq!(lockfile_hosts(text, "source"), ["index.crates.io"]);
    }
}
