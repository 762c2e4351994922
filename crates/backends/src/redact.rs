//! Secrets out of everything wavecrew writes.
//!
//! A variable is secret when its name ends in `_KEY`, `_TOKEN` or
//! `_SECRET`, contains `PASSWORD` (any case), or is listed in
//! `[redact] env`. Their values (from the process environment, a backend's
//! `env` table and its env file) are replaced by `[REDACTED:<NAME>]` in
//! prompts, captured output and outcome files. Values shorter than 4
//! characters are left alone: redacting `1` everywhere would make every
//! file unreadable and protect nothing.
//!
//! A file that cannot be redacted in place ([`Redactor::scrub_file`]) is
//! replaced by a notice, else removed, else emptied: it never stays on
//! disk with the secret, and the error says what became of it.

use std::io;
use std::path::{Path, PathBuf};

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
        // `vars_os`, read lossily: a value that is not UTF-8 is redacted as
        // the captured text (decoded the same way) shows it, never a panic.
        let mut all: Vec<(String, String)> = std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect();
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
    pub fn redact_file(&self, path: &Path) -> io::Result<()> {
        self.redact_file_with(path, &rewrite_atomic)
    }

    /// [`Redactor::redact_file`], rewriting through `rewrite`.
    fn redact_file_with(&self, path: &Path, rewrite: &Rewrite<'_>) -> io::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let text = String::from_utf8_lossy(&bytes);
        let redacted = self.redact(&text);
        if redacted != text {
            rewrite(path, redacted.as_bytes())?;
        }
        Ok(())
    }

    /// Redact a file in place; when that fails, make sure the secret does
    /// not stay on disk: replace the file by a notice, else remove it, else
    /// empty it. `Ok` when the file was redacted (or is missing, or holds
    /// no secret); otherwise the error says why and what became of it.
    pub fn scrub_file(&self, path: &Path) -> Result<(), ScrubError> {
        self.scrub_file_with(path, &rewrite_atomic)
    }

    /// [`Redactor::scrub_file`], rewriting through `rewrite` (tests make it
    /// fail).
    pub(crate) fn scrub_file_with(
        &self,
        path: &Path,
        rewrite: &Rewrite<'_>,
    ) -> Result<(), ScrubError> {
        let Err(e) = self.redact_file_with(path, rewrite) else {
            return Ok(());
        };
        let reason = e.to_string();
        let notice = format!(
            "wavecrew: this file could not be redacted ({reason}); its content was \
             discarded so that no secret stays on disk.\n"
        );
        // A folder or a link where the file was is removed, not followed.
        let is_file = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
        if is_file && rewrite(path, notice.as_bytes()).is_ok() {
            return Err(ScrubError::Replaced {
                path: path.to_owned(),
                reason,
            });
        }
        let removed = if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        };
        match removed {
            Ok(()) => Err(ScrubError::Removed {
                path: path.to_owned(),
                reason,
            }),
            Err(remove) => {
                // Emptying in place needs neither space nor the folder.
                let emptied = std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(path)
                    .and_then(|f| f.sync_all());
                match emptied {
                    Ok(()) => Err(ScrubError::Emptied {
                        path: path.to_owned(),
                        reason,
                    }),
                    Err(empty) => Err(ScrubError::Left {
                        path: path.to_owned(),
                        reason: format!("{reason}; removing it: {remove}; emptying it: {empty}"),
                    }),
                }
            }
        }
    }
}

/// How a file is rewritten: atomically, outside tests.
pub(crate) type Rewrite<'a> = dyn Fn(&Path, &[u8]) -> io::Result<()> + Sync + 'a;

/// [`wavecrew_core::fsutil::write_atomic`] with an `io::Error`.
pub(crate) fn rewrite_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    wavecrew_core::fsutil::write_atomic(path, bytes).map_err(|e| match e {
        // The caller names the file; the temp file's name says nothing.
        wavecrew_core::CoreError::Io(e) => e.source,
        other => io::Error::other(other.to_string()),
    })
}

/// A file that could not be redacted, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrubError {
    /// Replaced by a notice saying why.
    #[error("`{}` could not be redacted ({reason}); it was replaced by a notice", path.display())]
    Replaced {
        /// The file.
        path: PathBuf,
        /// Why it could not be redacted.
        reason: String,
    },
    /// Removed.
    #[error("`{}` could not be redacted ({reason}); it was removed", path.display())]
    Removed {
        /// The file.
        path: PathBuf,
        /// Why it could not be redacted.
        reason: String,
    },
    /// Emptied in place (it could be neither replaced nor removed).
    #[error("`{}` could not be redacted ({reason}); it was emptied", path.display())]
    Emptied {
        /// The file.
        path: PathBuf,
        /// Why it could not be redacted.
        reason: String,
    },
    /// Nothing worked: the secret may still be in the file.
    #[error(
        "`{}` could not be redacted, replaced, removed or emptied ({reason}): \
         it may still hold a secret",
        path.display()
    )]
    Left {
        /// The file.
        path: PathBuf,
        /// Every reason.
        reason: String,
    },
}

impl ScrubError {
    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            ScrubError::Replaced { path, .. }
            | ScrubError::Removed { path, .. }
            | ScrubError::Emptied { path, .. }
            | ScrubError::Left { path, .. } => path,
        }
    }

    /// Whether the secret may still be on disk.
    pub fn secret_may_remain(&self) -> bool {
        matches!(self, ScrubError::Left { .. })
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

    const SECRET: &str = "sk-live-0123456789";

    fn redactor() -> Redactor {
        Redactor::new([("MOCK_API_KEY", SECRET)], &[])
    }

    fn refuse(_: &Path, _: &[u8]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::StorageFull,
            "No space left on device",
        ))
    }

    fn refuse_secret_only(path: &Path, bytes: &[u8]) -> io::Result<()> {
        if String::from_utf8_lossy(bytes).contains("REDACTED") {
            return refuse(path, bytes);
        }
        rewrite_atomic(path, bytes)
    }

    #[test]
    fn a_file_is_redacted_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("stdout.log");
        std::fs::write(&file, format!("key {SECRET}\n")).unwrap();
        redactor().scrub_file(&file).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "key [REDACTED:MOCK_API_KEY]\n"
        );
        // Missing files and files without secrets are fine.
        redactor().scrub_file(&tmp.path().join("none")).unwrap();
    }

    #[test]
    fn a_file_that_cannot_be_rewritten_becomes_a_notice() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("stdout.log");
        std::fs::write(&file, format!("key {SECRET}\n")).unwrap();
        let e = redactor()
            .scrub_file_with(&file, &refuse_secret_only)
            .unwrap_err();
        assert!(matches!(e, ScrubError::Replaced { .. }), "{e}");
        assert!(!e.secret_may_remain());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(SECRET), "{text}");
        assert!(
            text.contains("could not be redacted (No space left"),
            "{text}"
        );
        assert!(e.to_string().contains("replaced by a notice"), "{e}");
    }

    #[test]
    fn a_file_that_cannot_be_rewritten_at_all_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("stderr.log");
        std::fs::write(&file, format!("key {SECRET}\n")).unwrap();
        let e = redactor().scrub_file_with(&file, &refuse).unwrap_err();
        assert!(matches!(e, ScrubError::Removed { .. }), "{e}");
        assert!(!file.exists());
        assert_eq!(e.path(), file);
    }

    #[test]
    fn a_folder_in_the_files_place_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("session.json");
        std::fs::create_dir(&file).unwrap();
        std::fs::write(file.join("inside"), SECRET).unwrap();
        let e = redactor().scrub_file(&file).unwrap_err();
        assert!(matches!(e, ScrubError::Removed { .. }), "{e}");
        assert!(!file.exists());
    }
}
