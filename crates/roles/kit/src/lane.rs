//! A task's lane: what the files it changed say against the `files` it
//! declared, and links that lead out of the repository. The executor
//! fails a task that declares files and changes none of them (unless it
//! says it may change nothing), lists the files it changed outside its
//! declared ones (`[isolation] undeclared = "warn" | "fail"`), fails one
//! that changes a protected path (`[isolation] protected`), and never
//! lands a symbolic link to an absolute path or out of the repository.

use std::path::{Component, Path};

use wavecrew_core::Task;

/// What a task's changed files say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lane {
    /// The task declares `files`, changed none of them, and does not say
    /// it may change nothing.
    pub declared_untouched: Vec<String>,
    /// Changed files outside the declared ones (empty when none are
    /// declared).
    pub undeclared: Vec<String>,
    /// Changed files that are links out of the repository, with where
    /// they point.
    pub links_out: Vec<(String, String)>,
    /// Changed files under `[isolation] protected`.
    pub protected: Vec<String>,
}

/// `[isolation] protected` compiled; globs that do not compile were
/// refused when the configuration was read.
pub fn protected_paths(globs: &[String]) -> globset::GlobSet {
    let mut set = globset::GlobSetBuilder::new();
    for glob in globs {
        if let Ok(g) = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
        {
            set.add(g);
        }
    }
    set.build().unwrap_or_else(|_| globset::GlobSet::empty())
}

impl Lane {
    /// Check the files `changed` (project-relative, in `dir`) by `task`.
    pub fn check(
        task: &Task,
        dir: &Path,
        changed: &[String],
        protected: &globset::GlobSet,
    ) -> Lane {
        let declared = task.files();
        let may_change_nothing = task
            .metadata
            .get("may_change_nothing")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let covered = |file: &str| declared.iter().any(|d| covers(d, file));
        let mut lane = Lane::default();
        if !declared.is_empty() {
            lane.undeclared = changed.iter().filter(|f| !covered(f)).cloned().collect();
            if !may_change_nothing && !changed.iter().any(|f| covered(f)) {
                lane.declared_untouched.clone_from(&declared);
            }
        }
        lane.protected = changed
            .iter()
            .filter(|f| protected.is_match(f.as_str()))
            .cloned()
            .collect();
        for file in changed {
            if let Ok(target) = std::fs::read_link(dir.join(file))
                && leaves(Path::new(file), &target)
            {
                lane.links_out
                    .push((file.clone(), target.display().to_string()));
            }
        }
        lane
    }

    /// Why the task fails, when its lane says it must.
    pub fn failure(&self, undeclared_fails: bool) -> Option<String> {
        self.failure_with(undeclared_fails, true)
    }

    /// [`Lane::failure`], with changes to protected paths failing the task
    /// only when `protected_fails` (a task held for a person's review
    /// waits for it instead, the paths named).
    pub fn failure_with(&self, undeclared_fails: bool, protected_fails: bool) -> Option<String> {
        if !self.links_out.is_empty() {
            let links: Vec<String> = self
                .links_out
                .iter()
                .map(|(f, t)| format!("{f} -> {t}"))
                .collect();
            return Some(format!(
                "links out of the repository are refused: {}",
                links.join(", ")
            ));
        }
        if protected_fails && !self.protected.is_empty() {
            return Some(format!(
                "changes to protected paths ([isolation] protected): {}",
                self.protected.join(", ")
            ));
        }
        if !self.declared_untouched.is_empty() {
            return Some(format!(
                "no change to the declared files ({}); a task that may change nothing says \
                 `may_change_nothing = true`",
                self.declared_untouched.join(", ")
            ));
        }
        if undeclared_fails && !self.undeclared.is_empty() {
            return Some(format!(
                "changes outside the declared files ([isolation] undeclared = \"fail\"): {}",
                self.undeclared.join(", ")
            ));
        }
        None
    }
}

/// Whether the declared path `declared` (a file, or a folder) covers the
/// changed file `file`.
fn covers(declared: &str, file: &str) -> bool {
    let declared = declared.trim_start_matches("./").trim_end_matches('/');
    file == declared
        || file
            .strip_prefix(declared)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Whether a link at the project-relative `at` to `target` leads out of
/// the repository: an absolute target, or one whose `..` climb above the
/// project's root.
fn leaves(at: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    // How deep below the root the link's folder is, then each step.
    let mut depth = at.components().count().saturating_sub(1);
    for c in target.components() {
        match c {
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return true,
            },
            Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use wavecrew_core::TaskId;

    fn none() -> globset::GlobSet {
        protected_paths(&[])
    }

    #[test]
    fn protected_paths_fail_the_task() {
        let dir = tempfile::tempdir().unwrap();
        let protected = protected_paths(&[
            "wavecrew.toml".to_owned(),
            "*.tasks.toml".to_owned(),
            ".github/**".to_owned(),
        ]);
        let changed: Vec<String> = [
            "wavecrew.toml",
            "plan.tasks.toml",
            ".github/workflows/ci.yml",
            "src/wavecrew.toml",
            "src/lib.rs",
        ]
        .map(String::from)
        .to_vec();
        let lane = Lane::check(&task(&[], false), dir.path(), &changed, &protected);
        assert_eq!(
            lane.protected,
            [
                "wavecrew.toml",
                "plan.tasks.toml",
                ".github/workflows/ci.yml"
            ]
        );
        assert_eq!(
            lane.failure(false).unwrap(),
            "changes to protected paths ([isolation] protected): wavecrew.toml, \
             plan.tasks.toml, .github/workflows/ci.yml"
        );
    }

    fn task(files: &[&str], may_change_nothing: bool) -> Task {
        let mut t = Task::new(TaskId::new("IMPL-001").unwrap(), "t", "d");
        t.metadata
            .insert("target_files".into(), serde_json::json!(files));
        if may_change_nothing {
            t.metadata
                .insert("may_change_nothing".into(), serde_json::json!(true));
        }
        t
    }

    #[test]
    fn declared_files_untouched_fail_unless_the_task_says_it_may() {
        let dir = tempfile::tempdir().unwrap();
        let t = task(&["src/a.rs", "docs/"], false);
        let lane = Lane::check(&t, dir.path(), &["README.md".into()], &none());
        assert_eq!(lane.declared_untouched, ["docs/", "src/a.rs"]);
        assert_eq!(lane.undeclared, ["README.md"]);
        assert!(
            lane.failure(false)
                .unwrap()
                .starts_with("no change to the declared files")
        );
        let lane = Lane::check(
            &t,
            dir.path(),
            &["docs/x.md".into(), "src/a.rs".into()],
            &none(),
        );
        assert_eq!(lane, Lane::default());
        let lane = Lane::check(&task(&["src/a.rs"], true), dir.path(), &[], &none());
        assert_eq!(lane.failure(true), None);
        // Nothing declared: nothing to say.
        assert_eq!(
            Lane::check(&task(&[], false), dir.path(), &["x".into()], &none()),
            Lane::default()
        );
    }

    #[test]
    fn undeclared_changes_fail_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let lane = Lane::check(
            &task(&["a"], false),
            dir.path(),
            &["a".into(), "b".into()],
            &none(),
        );
        assert_eq!(lane.undeclared, ["b"]);
        assert_eq!(lane.failure(false), None);
        assert!(
            lane.failure(true)
                .unwrap()
                .contains("outside the declared files")
        );
    }

    #[test]
    fn links_out_of_the_repository_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        for (at, to) in [
            ("abs", "/etc/passwd"),
            ("sub/up", "../../outside"),
            ("sub/ok", "../abs"),
        ] {
            std::os::unix::fs::symlink(to, dir.path().join(at)).unwrap();
        }
        let changed: Vec<String> = ["abs", "sub/up", "sub/ok"].map(String::from).to_vec();
        let lane = Lane::check(&task(&[], false), dir.path(), &changed, &none());
        assert_eq!(
            lane.links_out,
            [
                ("abs".to_owned(), "/etc/passwd".to_owned()),
                ("sub/up".to_owned(), "../../outside".to_owned())
            ]
        );
        assert!(lane.failure(false).unwrap().contains("abs -> /etc/passwd"));
    }
}
