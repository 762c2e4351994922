//! Helpers: the test tools installed by `scripts/test.sh`, fixture copies.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The cache `scripts/test.sh` installs the test tools into.
pub(crate) fn cache() -> PathBuf {
    std::env::var_os("WAVECREW_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/wavecrew"),
        PathBuf::from,
    )
}

fn require(path: &Path, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is not installed at `{}`: run scripts/test.sh (its wavecrew-validation section \
         installs the test tools into $WAVECREW_CACHE); these tests never skip",
        path.display()
    );
    path.to_owned()
}

/// The environment with the cached Python venv first on `PATH`.
pub(crate) fn python_env() -> BTreeMap<OsString, OsString> {
    let bin = require(&cache().join("py/bin/pytest"), "pytest")
        .parent()
        .unwrap()
        .to_owned();
    let mut path = OsString::from(bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    BTreeMap::from([(OsString::from("PATH"), path)])
}

/// The cached `node_modules` (jest, vitest).
pub(crate) fn node_modules() -> PathBuf {
    require(&cache().join("node/node_modules/.bin/jest"), "jest");
    require(&cache().join("node/node_modules/.bin/vitest"), "vitest");
    cache().join("node/node_modules")
}

/// A fixture folder of this crate.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fresh copy of a fixture project in a temp folder.
pub(crate) fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A recorded report.
pub(crate) fn recorded(name: &str) -> (PathBuf, String) {
    let path = fixture("reports").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}
