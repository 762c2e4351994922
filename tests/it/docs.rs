//! `docs/cli.md` is generated from the binaries' clap definitions, so it
//! cannot drift: this test regenerates it and compares. After changing a
//! flag, run `WAVECREW_UPDATE_DOCS=1 cargo nextest run -p wavecrew-tests docs`.

use std::fmt::Write as _;
use std::path::Path;

use clap::CommandFactory;

const HEADER: &str = "# Command-line reference\n\n\
Generated from the binaries' own definitions by `tests/it/docs.rs`; do not edit by hand\n\
(`WAVECREW_UPDATE_DOCS=1 cargo nextest run -p wavecrew-tests docs` rewrites it).\n\n\
## Exit codes (every binary)\n\n\
| code | meaning |\n|---|---|\n\
| 0 | everything asked for succeeded |\n\
| 1 | a task failed or needs a person, a check found problems, or the pipeline stalled or paused |\n\
| 2 | bad input or usage; the message names the file and the field |\n\
| 3 | interrupted; the session can be resumed |\n\
| 4 | an internal error (I/O, a bug) |\n\n";

fn section<C: CommandFactory>(out: &mut String) {
    let md = clap_markdown::help_markdown::<C>();
    // Demote the generated headings one level under ours.
    for line in md.lines() {
        if line.starts_with("# ") || line.starts_with("## ") {
            let _ = writeln!(out, "#{line}");
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
    out.push('\n');
}

fn generate() -> String {
    let mut out = String::from(HEADER);
    section::<wavecrew_cli::Cli>(&mut out);
    section::<wavecrew_cli::team::TeamCli>(&mut out);
    section::<wavecrew_cli::executor::ExecutorArgs>(&mut out);
    section::<wavecrew_cli::testrun::TestRunArgs>(&mut out);
    section::<wavecrew_cli::planex::PlanexArgs>(&mut out);
    section::<wavecrew_cli::roadmap::RoadmapArgs>(&mut out);
    section::<wavecrew_cli::scripted_agent::ScriptedArgs>(&mut out);
    out.trim_end().to_owned() + "\n"
}

#[test]
fn docs_cli_md_matches_the_binaries() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
    let fresh = generate();
    if std::env::var_os("WAVECREW_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == fresh,
        "docs/cli.md is out of date with the binaries' flags: run \
         `WAVECREW_UPDATE_DOCS=1 cargo nextest run -p wavecrew-tests docs` and commit it"
    );
}

#[test]
fn the_binary_embeds_every_file_of_the_demo() {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "target" || name == "Cargo.lock" {
                continue;
            }
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo");
    let mut on_disk = Vec::new();
    walk(&base, &base, &mut on_disk);
    on_disk.sort();
    let mut embedded: Vec<String> = wavecrew_cli::commands::demo::FILES
        .iter()
        .map(|(p, _)| (*p).to_owned())
        .collect();
    embedded.sort();
    assert_eq!(
        embedded, on_disk,
        "crates/cli/src/commands/demo.rs FILES must list every file of examples/demo"
    );
}

/// `docs/prompts.md` holds the table of prompt fields the code renders by,
/// between its two markers.
#[test]
fn docs_prompts_md_shows_the_table_the_code_uses() {
    const BEGIN: &str = "<!-- fields: generated from crates/backends/src/prompts/fields.rs -->\n";
    const END: &str = "<!-- end of fields -->";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/prompts.md");
    let on_disk = std::fs::read_to_string(&path).unwrap();
    let (Some(b), Some(e)) = (on_disk.find(BEGIN), on_disk.find(END)) else {
        panic!("docs/prompts.md lacks its field-table markers");
    };
    let fresh = format!(
        "{}{BEGIN}{}{}",
        &on_disk[..b],
        wavecrew_backends::prompts::fields::markdown(),
        &on_disk[e..]
    );
    if std::env::var_os("WAVECREW_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    assert!(
        on_disk == fresh,
        "docs/prompts.md is out of date with the field table: run \
         `WAVECREW_UPDATE_DOCS=1 cargo nextest run -p wavecrew-tests docs` and commit it"
    );
}
