//! Affected-test discovery: for each changed file, the test files that
//! exist by the conventions of its language. The seed's JS/TS variants
//! (`<base>.test.ts`, `.test.js`, `.spec.ts`, `.spec.js`, `tests/`,
//! `__tests__/`) are kept, without its `tests/auth.ts.test.ts` bug (the
//! source extension is dropped before the test suffix is added); Python
//! (`test_<name>.py`, `<name>_test.py`, in place or under `tests/`), Rust
//! (an in-file `#[cfg(test)]` module, `tests/<name>.rs` of the crate) and
//! Go (`<name>_test.go`) are added. Existence is checked with the file
//! system, never with a shell.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// A test file found for a changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AffectedTest {
    /// The changed file (as given).
    pub source: String,
    /// The test file, relative to the project root.
    pub test: String,
    /// The convention that matched.
    pub convention: &'static str,
}

const JS_EXTS: &[&str] = &["ts", "tsx", "js", "jsx", "mjs", "cjs"];

/// Whether `path` is itself a test file by any convention we know.
#[allow(clippy::case_sensitive_file_extension_comparisons)] // naming conventions are case-sensitive
pub fn is_test_file(path: &str) -> bool {
    let p = Path::new(path);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_tests_dir = p
        .components()
        .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "__tests__" | "test")));
    name.contains(".test.")
        || name.contains(".spec.")
        || name.ends_with("_test.go")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || (in_tests_dir && (name.ends_with(".rs") || name.ends_with(".py")))
}

/// The test files affected by `changed` (paths relative to `root`), in
/// order, without repeats.
pub fn affected_tests(root: &Path, changed: &[String]) -> Vec<AffectedTest> {
    let mut out: Vec<AffectedTest> = Vec::new();
    for source in changed {
        for (test, convention) in candidates(root, source) {
            let rel = normalise(&test);
            if root.join(&rel).is_file() && !out.iter().any(|a| a.test == rel) {
                out.push(AffectedTest {
                    source: source.clone(),
                    test: rel,
                    convention,
                });
            }
        }
    }
    out
}

fn normalise(p: &Path) -> String {
    let s = p.display().to_string();
    s.strip_prefix("./")
        .map_or_else(|| s.clone(), str::to_owned)
}

/// Candidate test paths for one changed file, with their convention.
fn candidates(root: &Path, source: &str) -> Vec<(PathBuf, &'static str)> {
    let path = Path::new(source);
    let dir = path.parent().unwrap_or(Path::new(""));
    let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    if is_test_file(source) {
        out.push((path.to_owned(), "changed test file"));
    }
    match ext.as_str() {
        e if JS_EXTS.contains(&e) => {
            // The seed's variants first, then the same with the source's
            // own extension (`.tsx`, `.mjs`, …).
            let mut exts: Vec<&str> = vec!["ts", "js"];
            if !exts.contains(&e) {
                exts.push(e);
            }
            for x in &exts {
                out.push((dir.join(format!("{stem}.test.{x}")), "<name>.test.<ext>"));
                out.push((dir.join(format!("{stem}.spec.{x}")), "<name>.spec.<ext>"));
            }
            for x in &exts {
                out.push((
                    Path::new("tests").join(format!("{stem}.test.{x}")),
                    "tests/<name>.test.<ext>",
                ));
                out.push((
                    dir.join("__tests__").join(format!("{stem}.test.{x}")),
                    "__tests__/<name>.test.<ext>",
                ));
                out.push((
                    dir.join("__tests__").join(format!("{stem}.{x}")),
                    "__tests__/<name>.<ext>",
                ));
            }
        }
        "py" => {
            for d in [
                dir.to_owned(),
                PathBuf::from("tests"),
                dir.join("tests"),
                PathBuf::from("test"),
            ] {
                out.push((d.join(format!("test_{stem}.py")), "test_<name>.py"));
                out.push((d.join(format!("{stem}_test.py")), "<name>_test.py"));
            }
        }
        "go" if !stem.ends_with("_test") => {
            out.push((dir.join(format!("{stem}_test.go")), "<name>_test.go"));
        }
        "rs" => {
            let text = std::fs::read_to_string(root.join(path)).unwrap_or_default();
            if text.contains("#[cfg(test)]") {
                out.push((path.to_owned(), "in-file #[cfg(test)] module"));
            }
            // The crate root: the nearest ancestor with a Cargo.toml.
            let crate_dir = path
                .ancestors()
                .skip(1)
                .find(|a| root.join(a).join("Cargo.toml").is_file())
                .unwrap_or(Path::new(""));
            let tests = crate_dir.join("tests");
            for name in [
                format!("{stem}.rs"),
                format!("{stem}_test.rs"),
                format!("test_{stem}.rs"),
            ] {
                out.push((tests.join(&name), "tests/<name>.rs"));
                out.push((tests.join("it").join(&name), "tests/<name>.rs"));
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn conventions_of_each_language() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        for f in [
            "src/auth.test.ts",
            "src/auth.spec.js",
            "tests/auth.test.ts",
            "src/__tests__/auth.test.ts",
            "tests/auth.ts.test.ts", // the seed's bug: never found
            "pkg/test_calc.py",
            "tests/calc_test.py",
            "svc/handler_test.go",
            "Cargo.toml",
            "tests/parse.rs",
        ] {
            touch(r, f, "");
        }
        touch(r, "src/parse.rs", "fn f() {}\n#[cfg(test)]\nmod tests {}\n");
        let changed: Vec<String> = [
            "src/auth.ts",
            "pkg/calc.py",
            "svc/handler.go",
            "src/parse.rs",
            "calc.py",
        ]
        .map(String::from)
        .to_vec();
        let found: Vec<String> = affected_tests(r, &changed)
            .into_iter()
            .map(|a| a.test)
            .collect();
        assert_eq!(
            found,
            [
                "src/auth.test.ts",
                "src/auth.spec.js",
                "tests/auth.test.ts",
                "src/__tests__/auth.test.ts",
                "pkg/test_calc.py",
                "tests/calc_test.py",
                "svc/handler_test.go",
                "src/parse.rs",
                "tests/parse.rs",
            ]
        );
    }

    #[test]
    fn a_changed_test_is_its_own_test() {
        let d = tempfile::tempdir().unwrap();
        touch(d.path(), "tests/test_x.py", "");
        let found = affected_tests(d.path(), &["tests/test_x.py".into()]);
        assert_eq!(found[0].convention, "changed test file");
    }
}
