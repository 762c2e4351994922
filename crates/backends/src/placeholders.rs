//! The placeholders of a `command` argv template ([`PLACEHOLDERS`]) and
//! the check of an element's names ([`check_placeholders`]), shared by the
//! config's validation and the adapter's substitution. Re-exported from
//! [`crate::adapter`].

/// The placeholders a `command` argv template may use.
pub const PLACEHOLDERS: [&str; 8] = [
    "task_id",
    "prompt",
    "prompt_file",
    "cwd",
    "mode",
    "model",
    "attempt_dir",
    "session_id",
];

/// Check an argv element's placeholders; `Err(name)` for an unknown one.
pub fn check_placeholders(element: &str) -> Result<(), String> {
    let mut rest = element;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Ok(());
        };
        let name = &after[..close];
        if !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !PLACEHOLDERS.contains(&name)
        {
            return Err(name.to_owned());
        }
        rest = &after[close + 1..];
    }
    Ok(())
}
