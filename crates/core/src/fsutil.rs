//! Atomic file writes and JSON reads whose errors name the file and field.
//!
//! Every state change on disk goes through [`write_atomic`]: a temp file in the
//! same folder, fsync, rename over the target, fsync of the folder. A process
//! killed at any instant leaves either the old file or the new one, never half.
//!
//! The new file keeps the replaced file's mode (and owner, where allowed):
//! a `team-session.json` that ccw or a person wrote 0644 stays 0644. A file
//! that did not exist gets the mode of an ordinary new file (0666 less the
//! umask), not the temp file's private 0600.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{CoreError, Result};

/// Write `bytes` to `path` atomically (temp file, fsync, rename, fsync dir).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| CoreError::io("creating", dir, e))?;
    // The replaced file's own mode and owner, never a link's target's: the
    // rename replaces a link itself, and a link an agent planted where
    // wavecrew writes must not hand the new file the mode or owner of a
    // file of the user's.
    let replaced = fs::symlink_metadata(path)
        .ok()
        .filter(fs::Metadata::is_file);
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        // Subject to the umask, like any new file.
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| CoreError::io("creating a temp file in", dir, e))?;
    if let Some(old) = &replaced {
        keep_mode_and_owner(tmp.as_file(), old)
            .map_err(|e| CoreError::io("setting the mode of", tmp.path().to_owned(), e))?;
    }
    // Errors name the file being replaced (the temp file is removed on
    // drop); the OS error is kept as is, so its kind (a full disk) shows.
    tmp.as_file_mut()
        .write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| CoreError::io("writing", path, e))?;
    tmp.persist(path)
        .map_err(|e| CoreError::io("replacing", path, e.error))?;
    // The rename is durable once the folder entry is: fsync the folder.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Give the temp file the replaced file's permission bits and, when this
/// process may (root, or the same owner), its owner and group.
fn keep_mode_and_owner(file: &fs::File, old: &fs::Metadata) -> std::io::Result<()> {
    let meta = file.metadata()?;
    if meta.uid() != old.uid() || meta.gid() != old.gid() {
        // Only root may give a file away; anyone else keeps their own.
        let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
    }
    file.set_permissions(fs::Permissions::from_mode(old.mode() & 0o7777))
}

/// Serialise `value` as pretty JSON (2-space indent, trailing newline) and
/// write it atomically.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| CoreError::invalid(path, "", format!("cannot serialise: {e}")))?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Read and parse a JSON file; a parse error names the file and the field path.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = fs::read(path).map_err(|e| CoreError::io("reading", path, e))?;
    parse_json(path, &bytes)
}

/// Parse JSON bytes that came from `path`; errors name the file and field.
///
/// The bytes are parsed once without tracking the field path (tracking
/// allocates for every key, a third of the time on a large file); only when
/// that fails are they parsed again to name the field at fault.
pub fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T> {
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        CoreError::Json {
            path: path.to_owned(),
            field,
            message: e.into_inner().to_string(),
        }
    })
}

/// Files under `dir`, relative to it, sorted.
pub fn list_files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            // A link to a folder is listed, never walked into: a folder an
            // agent wrote (`artifacts/`) may hold `x -> .` twice over.
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(base, &p, out);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Links planted where wavecrew lists and writes: a folder that links
    /// back to itself is listed, not walked (no endless or exponential
    /// walk), and a file written over a link to a file of the user's
    /// replaces the link without taking that file's mode, nor writing it.
    #[test]
    fn links_are_listed_not_walked_and_replaced_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let artifacts = tmp.path().join("artifacts");
        fs::create_dir_all(artifacts.join("sub")).unwrap();
        fs::write(artifacts.join("sub/report.md"), "r").unwrap();
        std::os::unix::fs::symlink(".", artifacts.join("x")).unwrap();
        std::os::unix::fs::symlink(".", artifacts.join("sub/y")).unwrap();
        assert_eq!(list_files(&artifacts), ["sub/report.md", "sub/y", "x"]);

        let users = tmp.path().join("bashrc");
        fs::write(&users, "# the user's\n").unwrap();
        fs::set_permissions(&users, fs::Permissions::from_mode(0o755)).unwrap();
        let planted = tmp.path().join("meta.json");
        std::os::unix::fs::symlink(&users, &planted).unwrap();
        write_atomic(&planted, b"{}").unwrap();
        assert_eq!(fs::read_to_string(&users).unwrap(), "# the user's\n");
        assert!(
            !fs::symlink_metadata(&planted)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::metadata(&planted).unwrap().permissions().mode() & 0o111,
            0,
            "not the link target's mode"
        );
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Doc {
        tasks: Vec<Item>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Item {
        id: crate::TaskId,
    }

    #[test]
    fn parse_error_names_file_and_field() {
        let err = parse_json::<Doc>(
            Path::new("x/a.json"),
            br#"{"tasks":[{"id":"ok"},{"id":"../x"}]}"#,
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("`x/a.json`: field `tasks[1].id`: invalid task id"),
            "{msg}"
        );
    }

    #[test]
    fn atomic_write_keeps_the_replaced_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("team-session.json");
        fs::write(&p, "{}").unwrap();
        for mode in [0o644, 0o640, 0o600, 0o664] {
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
            write_atomic(&p, b"{\"x\":1}").unwrap();
            let got = fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
            assert_eq!(got, mode, "{mode:o} became {got:o}");
        }
        // A new file: an ordinary file's mode (never more than 0666), not 0600.
        let q = dir.path().join("new.json");
        write_atomic(&q, b"{}").unwrap();
        let got = fs::metadata(&q).unwrap().permissions().mode() & 0o7777;
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        assert_eq!(got, 0o666 & !umask, "{got:o} with umask {umask:o}");
    }

    #[test]
    fn atomic_write_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/f.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let leftovers: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp files left behind");
    }
}
