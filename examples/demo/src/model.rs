//! The to-do item.

/// One to-do item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    /// Its id.
    pub id: u32,
    /// What to do.
    pub title: String,
    /// Whether it is done.
    pub done: bool,
}

impl Todo {
    /// A new, open item.
    pub fn new(id: u32, title: &str) -> Self {
        // TODO(IMPL-001): keep the title, start open.
        let _ = title;
        Todo { id, title: String::new(), done: true }
    }
}
