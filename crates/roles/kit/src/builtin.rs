//! The table of built-in roles: which binary takes which tasks. The
//! launcher (`wavecrew run`) and `wavecrew prompt` both read it; a new
//! built-in role is its crate, its binary and a row here.
//!
//! ```
//! use wavecrew_role_kit::builtin::builtin_role;
//!
//! assert_eq!(builtin_role(Some("IMPL"), "TC-x").unwrap().binary, "wavecrew-executor");
//! // `EXEC` is planex's in a `PEX-` session and roadmap's in an `RD-` one.
//! assert_eq!(builtin_role(Some("EXEC"), "RD-auth").unwrap().name, "roadmap");
//! assert!(builtin_role(Some("EXEC"), "TC-x").is_none());
//! assert!(builtin_role(Some("DOCS"), "TC-x").is_none());
//! ```

/// A role built into wavecrew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinRole {
    /// Its name (`executor`), as `wavecrew prompt` knows it.
    pub name: &'static str,
    /// The task-id prefix it takes (`IMPL`).
    pub prefix: &'static str,
    /// The session ids it takes them in (`PEX-`), when the prefix alone
    /// does not say.
    pub session_prefix: Option<&'static str>,
    /// Its binary, beside `wavecrew`.
    pub binary: &'static str,
}

/// Every built-in role. A role known only by its `roles/<name>.md` runs
/// as `wavecrew-team worker --role <name>`.
pub const BUILTIN_ROLES: [BuiltinRole; 4] = [
    BuiltinRole {
        name: "executor",
        prefix: "IMPL",
        session_prefix: None,
        binary: "wavecrew-executor",
    },
    BuiltinRole {
        name: "testrun",
        prefix: "TESTRUN",
        session_prefix: None,
        binary: "wavecrew-testrun",
    },
    BuiltinRole {
        name: "planex",
        prefix: "EXEC",
        session_prefix: Some("PEX-"),
        binary: "wavecrew-planex",
    },
    BuiltinRole {
        name: "roadmap",
        prefix: "EXEC",
        session_prefix: Some("RD-"),
        binary: "wavecrew-roadmap",
    },
];

/// The built-in role that takes tasks of `prefix` in the session
/// `session_id`, if one does.
pub fn builtin_role(prefix: Option<&str>, session_id: &str) -> Option<&'static BuiltinRole> {
    let prefix = prefix?;
    BUILTIN_ROLES
        .iter()
        .find(|r| r.prefix == prefix && r.session_prefix.is_none_or(|s| session_id.starts_with(s)))
}
