//! Secrets out of everything wavecrew writes.
//!
//! A variable is secret when its name ends in `_KEY`, `_TOKEN` or
//! `_SECRET`, contains `PASSWORD` (any case), or is listed in
//! `[redact] env`. Their values (from the process environment, a backend's
//! `env` table and its env file) are replaced by `[REDACTED:<NAME>]` in
//! prompts, captured output and outcome files. Values shorter than 4
//! characters are left alone: redacting `1` everywhere would make every
//! file unreadable and protect nothing.

use aho_corasick::{AhoCorasick, MatchKind};

/// The shortest value that is redacted.
pub const MIN_SECRET_LEN: usize = 4;

/// Whether a variable name looks secret.
pub fn is_secret_name(name: &str, extra: &[String]) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_KEY")
        || upper.ends_with("_TOKEN")
        || upper.ends_with("_SECRET")
        || upper.contains("PASSWORD")
        || extra.iter().any(|e| e.eq_ignore_ascii_case(name))
}

/// Replaces secret values in text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    names: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl Redactor {
    /// From `(name, value)` pairs: the secret ones are kept.
    pub fn new<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>, extra: &[String]) -> Self {
        let mut pairs: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(n, v)| v.len() >= MIN_SECRET_LEN && is_secret_name(n, extra))
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        // Longest first, so a secret that contains another is replaced whole.
        pairs.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        pairs.dedup_by(|a, b| a.1 == b.1);
        if pairs.is_empty() {
            return Redactor::default();
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(pairs.iter().map(|p| p.1.as_str()))
            .ok();
        Redactor {
            names: pairs.into_iter().map(|p| p.0).collect(),
            matcher,
        }
    }

    /// From this process's environment plus `more` (a backend's `env`).
    pub fn from_env<'a>(
        more: impl IntoIterator<Item = (&'a str, &'a str)>,
        extra: &[String],
    ) -> Self {
        let mut all: Vec<(String, String)> = std::env::vars().collect();
        all.extend(more.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())));
        Redactor::new(all.iter().map(|(k, v)| (k.as_str(), v.as_str())), extra)
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The text with every secret value replaced.
    pub fn redact(&self, text: &str) -> String {
        let Some(m) = &self.matcher else {
            return text.to_owned();
        };
        let replacements: Vec<String> = self
            .names
            .iter()
            .map(|n| format!("[REDACTED:{n}]"))
            .collect();
        m.replace_all(text, &replacements)
    }

    /// Redact a file in place (atomically); a missing file is fine.
    pub fn redact_file(&self, path: &std::path::Path) -> std::io::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let text = String::from_utf8_lossy(&bytes);
        let redacted = self.redact(&text);
        if redacted != text {
            wavecrew_core::fsutil::write_atomic(path, redacted.as_bytes())
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_look_secret() {
        for n in [
            "OPENAI_API_KEY",
            "GH_TOKEN",
            "AWS_SECRET",
            "db_password",
            "MyPassword1",
        ] {
            assert!(is_secret_name(n, &[]), "{n}");
        }
        for n in ["HOME", "KEYBOARD", "TOKENS", "PATH"] {
            assert!(!is_secret_name(n, &[]), "{n}");
        }
        assert!(is_secret_name("PRIVATE", &["private".into()]));
    }

    #[test]
    fn values_are_replaced_longest_first() {
        let r = Redactor::new(
            [
                ("A_KEY", "sk-abc"),
                ("B_TOKEN", "sk-abcdef"),
                ("HOME", "/root"),
                ("X_KEY", "1"),
            ],
            &[],
        );
        assert_eq!(
            r.redact("sk-abcdef and sk-abc in /root, 1"),
            "[REDACTED:B_TOKEN] and [REDACTED:A_KEY] in /root, 1"
        );
        assert!(Redactor::new([("HOME", "/root")], &[]).is_empty());
    }
}
