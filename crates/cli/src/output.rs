//! Writing to the terminal: results to stdout, diagnostics to stderr. All
//! printing of the binaries goes through here.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static LINES_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Write a line on stderr. A stderr that cannot be written (a full disk
/// under a redirected log, a closed pipe) loses the line; it never panics,
/// as `eprintln!` would.
fn to_stderr(line: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(line);
    let _ = err.write_all(b"\n");
}

/// From now on, [`line()`] writes to stderr: stdout is kept for the one JSON
/// object of a `--json` command.
pub fn lines_to_stderr() {
    LINES_TO_STDERR.store(true, Ordering::Relaxed);
}

/// Print a line of results on stdout (a broken pipe is ignored), or on
/// stderr after [`lines_to_stderr`].
pub fn line(s: &str) {
    if LINES_TO_STDERR.load(Ordering::Relaxed) {
        to_stderr(format_args!("{s}"));
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
}

/// Print `text` on stdout exactly as it is (no newline added; a broken
/// pipe is ignored).
pub fn text(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Print a value as pretty JSON on stdout.
pub fn json(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_default()
    );
}

/// Print any serializable value as pretty JSON on stdout, written as it is
/// serialized (no intermediate value; a broken pipe is ignored).
pub fn json_of<T: serde::Serialize>(v: &T) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if serde_json::to_writer_pretty(&mut out, v).is_ok() {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// Print `error: <message>` on stderr.
pub fn error(msg: &str) {
    to_stderr(format_args!("error: {msg}"));
}

/// Print `warning: <message>` on stderr.
pub fn warning(msg: &str) {
    to_stderr(format_args!("warning: {msg}"));
}

/// Print a progress line on stderr (plain, one per event).
pub fn progress(msg: &str) {
    to_stderr(format_args!("{msg}"));
}

/// A progress bar on stderr when it is a terminal and `CI` is not set;
/// `None` means plain, timestamped lines (CI logs, pipes).
pub fn live_progress(total: usize) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(u64::try_from(total).unwrap_or(0));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} tasks, {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(bar)
}
