//! A role's file (`roles/<name>.md`): the sections ccw requires of it, and
//! the file wavecrew writes around plain instructions (a role defined in a
//! task file with `instructions = "…"`), so that such a role runs the way
//! the README shows while a ccw session's own role files are still checked
//! as ccw checks them.
//!
//! ```
//! use wavecrew_core::role_file::{missing_section, written_around};
//!
//! let plain = "Write clear documentation for the people who use this project.";
//! assert_eq!(missing_section(plain), Some("# Role:"));
//! let file = written_around("docs", "code-gen (docs)", plain);
//! assert_eq!(missing_section(&file), None);
//! assert!(file.contains(plain));
//! // A whole role file is kept as it is.
//! assert_eq!(written_around("docs", "code-gen (docs)", &file), file);
//! ```

/// The sections a role file must have (seed 001, ccw-compat §4.2).
pub const ROLE_SECTIONS: [&str; 4] = ["# Role:", "## Identity", "## Boundaries", "## Execution"];

/// The first section of [`ROLE_SECTIONS`] that `text` lacks (a line that
/// starts with it), or `None` when it has them all.
pub fn missing_section(text: &str) -> Option<&'static str> {
    ROLE_SECTIONS
        .into_iter()
        .find(|section| !text.lines().any(|l| l.trim_start().starts_with(section)))
}

/// The role file of role `name` whose instructions are `instructions`:
/// the instructions as they are when they are a whole role file already,
/// else a role file with ccw's sections whose `## Execution` holds them.
pub fn written_around(name: &str, responsibility: &str, instructions: &str) -> String {
    if missing_section(instructions).is_none() {
        return instructions.to_owned();
    }
    format!(
        "# Role: {name}\n\n\
         ## Identity\n\
         The `{name}` role ({responsibility}), defined in the project's task file.\n\n\
         ## Boundaries\n\
         Changes only what its task asks for, in the files it names when it names them. Does \
         not commit, does not touch `.workflow/`.\n\n\
         ## Execution\n\
         {}\n",
        instructions.trim()
    )
}
