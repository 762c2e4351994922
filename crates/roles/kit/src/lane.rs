//! A task's lane: what the files it changed say against the `files` it
//! declared, and links that lead out of the repository. The executor
//! fails a task that declares files and changes none of them (unless it
//! says it may change nothing), lists the files it changed outside its
//! declared ones (`[isolation] undeclared = "warn" | "fail"`), fails one
//! that changes a protected path (`[isolation] protected`), holds for a
//! person's review one that changes, undeclared, a file the user's tools
//! run by themselves later (`[isolation] runs_later`), fails one whose
//! work holds a file over `[isolation] max_file_mb`, and never lands a
//! symbolic link to an absolute path or out of the repository.

use std::path::{Component, Path};

use wavecrew_backends::config::IsolationConfig;
use wavecrew_core::Task;

/// One MiB, the unit of `[isolation] max_file_mb`.
const MIB: u64 = 1024 * 1024;

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
    /// Changed files under `[isolation] runs_later` that the task does not
    /// declare (and that are not protected: those are in
    /// [`Lane::protected`]): they wait for a person's review.
    pub runs_later: Vec<String>,
    /// Changed files larger than [`Lane::max_file_mb`], with their size in
    /// bytes.
    pub too_large: Vec<(String, u64)>,
    /// The cap the files were checked against (`[isolation] max_file_mb`;
    /// 0: none).
    pub max_file_mb: u64,
}

/// What a lane is checked against: `[isolation] protected`, `runs_later`
/// and `max_file_mb`.
#[derive(Debug, Clone)]
pub struct LaneRules {
    /// `[isolation] protected`, compiled ([`protected_paths`]).
    pub protected: globset::GlobSet,
    /// `[isolation] runs_later`, compiled ([`runs_later_paths`]).
    pub runs_later: globset::GlobSet,
    /// `[isolation] max_file_mb` (0: no cap).
    pub max_file_mb: u64,
}

impl Default for LaneRules {
    /// No protected path, no file that runs later, no cap.
    fn default() -> Self {
        LaneRules {
            protected: globset::GlobSet::empty(),
            runs_later: globset::GlobSet::empty(),
            max_file_mb: 0,
        }
    }
}

impl LaneRules {
    /// The rules `[isolation]` sets.
    pub fn from_config(isolation: &IsolationConfig) -> Self {
        LaneRules {
            protected: protected_paths(&isolation.protected),
            runs_later: runs_later_paths(&isolation.runs_later),
            max_file_mb: isolation.max_file_mb,
        }
    }
}

/// What a person's review takes instead of a failure: where the task has a
/// branch to hold, the changes a review can decide on wait for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Changes to protected paths (a task that asks for a person's review).
    pub protected: bool,
    /// Undeclared changes to files that run later (any task in a worktree).
    pub runs_later: bool,
}

/// `[isolation] protected` compiled; globs that do not compile were
/// refused when the configuration was read.
pub fn protected_paths(globs: &[String]) -> globset::GlobSet {
    compile(globs, false)
}

/// `[isolation] runs_later` compiled, matching whatever the case (a
/// `.VSCode/tasks.json` is the same folder on a case-insensitive file
/// system); globs that do not compile were refused when the
/// configuration was read.
pub fn runs_later_paths(globs: &[String]) -> globset::GlobSet {
    compile(globs, true)
}

/// `globs` as one set, `*` within a folder and `**` across folders.
fn compile(globs: &[String], ignore_case: bool) -> globset::GlobSet {
    let mut set = globset::GlobSetBuilder::new();
    for glob in globs {
        if let Ok(g) = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .case_insensitive(ignore_case)
            .build()
        {
            set.add(g);
        }
    }
    set.build().unwrap_or_else(|_| globset::GlobSet::empty())
}

impl Lane {
    /// Check the files `changed` (project-relative, in `dir`) by `task`
    /// against `rules`.
    pub fn check(task: &Task, dir: &Path, changed: &[String], rules: &LaneRules) -> Lane {
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
            .filter(|f| rules.protected.is_match(f.as_str()))
            .cloned()
            .collect();
        lane.runs_later = changed
            .iter()
            .filter(|f| {
                rules.runs_later.is_match(f.as_str())
                    && !covered(f)
                    && !rules.protected.is_match(f.as_str())
            })
            .cloned()
            .collect();
        lane.max_file_mb = rules.max_file_mb;
        let cap = (rules.max_file_mb > 0).then(|| rules.max_file_mb.saturating_mul(MIB));
        for file in changed {
            // Never through a link: its own size, not its target's.
            if let Some(cap) = cap
                && let Ok(m) = std::fs::symlink_metadata(dir.join(file))
                && m.is_file()
                && m.len() > cap
            {
                lane.too_large.push((file.clone(), m.len()));
            }
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
        self.failure_with(undeclared_fails, Held::default())
    }

    /// [`Lane::failure`], with the changes `held` names waiting for a
    /// person's review instead of failing the task (the paths named then).
    pub fn failure_with(&self, undeclared_fails: bool, held: Held) -> Option<String> {
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
        if !self.too_large.is_empty() {
            let files: Vec<String> = self
                .too_large
                .iter()
                .map(|(f, bytes)| format!("{f} is {}", mib(*bytes)))
                .collect();
            return Some(format!(
                "{}, over `[isolation] max_file_mb` ({})",
                files.join(", "),
                self.max_file_mb
            ));
        }
        if !held.protected && !self.protected.is_empty() {
            return Some(format!(
                "changes to protected paths ([isolation] protected): {}",
                self.protected.join(", ")
            ));
        }
        if !held.runs_later && !self.runs_later.is_empty() {
            return Some(format!(
                "changes to files your tools run by themselves ([isolation] runs_later) need a \
                 person's review, and work done in place cannot wait for one: {}; a task that \
                 may change them declares them in its `files`",
                self.runs_later.join(", ")
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

/// `bytes` in MiB, for a person: whole when it is, else to a tenth.
fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        // A file's size as a float: exact far beyond any file's.
        #[allow(clippy::cast_precision_loss)]
        let size = bytes as f64 / MIB as f64;
        format!("{size:.1} MiB")
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

    fn none() -> LaneRules {
        LaneRules::default()
    }

    #[test]
    fn protected_paths_fail_the_task() {
        let dir = tempfile::tempdir().unwrap();
        let protected = LaneRules {
            protected: protected_paths(&[
                "wavecrew.toml".to_owned(),
                "*.tasks.toml".to_owned(),
                ".github/**".to_owned(),
            ]),
            ..LaneRules::default()
        };
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

    fn runs_later() -> LaneRules {
        LaneRules::from_config(&IsolationConfig::default())
    }

    #[test]
    fn files_that_run_later_are_found_at_any_depth_whatever_their_case() {
        let dir = tempfile::tempdir().unwrap();
        let changed: Vec<String> = [
            ".github/workflows/ci.yml",
            ".envrc",
            "sub/.envrc",
            ".VSCode/tasks.json",
            "sub/.vscode/tasks.json",
            ".husky/pre-commit",
            ".devcontainer/devcontainer.json",
            "a/b/.gitlab-ci.yml",
            "Jenkinsfile",
            "docs/claude.md",
            ".cursor/rules/x.mdc",
            ".gitmodules",
            // Not theirs: a name that only looks alike, a folder's name
            // as a file's, ordinary work.
            "src/envrc",
            "src/.github",
            "src/lib.rs",
            "my.envrc",
        ]
        .map(String::from)
        .to_vec();
        let lane = Lane::check(&task(&[], false), dir.path(), &changed, &runs_later());
        assert_eq!(lane.runs_later, changed[..12]);
        assert_eq!(
            lane.failure(false).unwrap(),
            format!(
                "changes to files your tools run by themselves ([isolation] runs_later) need a \
                 person's review, and work done in place cannot wait for one: {}; a task that \
                 may change them declares them in its `files`",
                changed[..12].join(", ")
            )
        );
        // Where a branch can wait for a person, they do not fail the task.
        let held = Held {
            protected: false,
            runs_later: true,
        };
        assert_eq!(lane.failure_with(false, held), None);
    }

    #[test]
    fn declared_files_that_run_later_are_the_tasks_own() {
        let dir = tempfile::tempdir().unwrap();
        let changed: Vec<String> = [".envrc", ".github/workflows/ci.yml", ".vscode/tasks.json"]
            .map(String::from)
            .to_vec();
        // A file, and a folder that covers what is below it.
        let t = task(&[".envrc", ".github/"], false);
        let lane = Lane::check(&t, dir.path(), &changed, &runs_later());
        assert_eq!(lane.runs_later, [".vscode/tasks.json"]);
        // `runs_later = []` turns the check off.
        let off = LaneRules {
            runs_later: runs_later_paths(&[]),
            ..runs_later()
        };
        let lane = Lane::check(&task(&[], false), dir.path(), &changed, &off);
        assert!(lane.runs_later.is_empty());
        // A protected path is named as protected only.
        let protected = LaneRules {
            protected: protected_paths(&[".envrc".to_owned()]),
            ..runs_later()
        };
        let lane = Lane::check(&task(&[], false), dir.path(), &changed, &protected);
        assert_eq!(lane.protected, [".envrc"]);
        assert_eq!(
            lane.runs_later,
            [".github/workflows/ci.yml", ".vscode/tasks.json"]
        );
    }

    #[test]
    fn files_over_the_cap_fail_the_task_naming_their_size() {
        let dir = tempfile::tempdir().unwrap();
        // Sparse: their size costs no disk.
        for (name, size) in [("big.bin", 60 * MIB), ("odd.bin", 50 * MIB + MIB / 2)] {
            std::fs::File::create(dir.path().join(name))
                .unwrap()
                .set_len(size)
                .unwrap();
        }
        std::fs::File::create(dir.path().join("fine.bin"))
            .unwrap()
            .set_len(MIB)
            .unwrap();
        // A link is its own size, never its target's.
        std::os::unix::fs::symlink("big.bin", dir.path().join("link")).unwrap();
        let changed: Vec<String> = ["big.bin", "odd.bin", "fine.bin", "link", "deleted.bin"]
            .map(String::from)
            .to_vec();
        let rules = LaneRules {
            max_file_mb: 50,
            ..LaneRules::default()
        };
        let lane = Lane::check(&task(&[], false), dir.path(), &changed, &rules);
        assert_eq!(
            lane.too_large,
            [
                ("big.bin".to_owned(), 60 * MIB),
                ("odd.bin".to_owned(), 50 * MIB + MIB / 2)
            ]
        );
        assert_eq!(
            lane.failure(false).unwrap(),
            "big.bin is 60 MiB, odd.bin is 50.5 MiB, over `[isolation] max_file_mb` (50)"
        );
        // 0: no cap.
        let lane = Lane::check(&task(&[], false), dir.path(), &changed, &none());
        assert!(lane.too_large.is_empty());
    }
}
