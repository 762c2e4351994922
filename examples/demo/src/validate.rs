//! Title validation.

/// The longest title accepted.
pub const MAX_TITLE: usize = 200;

/// Check a title: not blank, at most [`MAX_TITLE`] characters.
pub fn validate_title(title: &str) -> Result<(), String> {
    // TODO(IMPL-002): reject blank and over-long titles.
    let _ = title;
    Ok(())
}
