//! In-memory storage keyed by id.

use crate::model::Todo;

/// The items, in insertion order.
#[derive(Debug, Default)]
pub struct Store {
    items: Vec<Todo>,
}

impl Store {
    /// An empty store.
    pub fn new() -> Self {
        Store::default()
    }

    /// Add an item.
    pub fn insert(&mut self, todo: Todo) {
        // TODO(IMPL-003): keep it.
        let _ = todo;
    }

    /// The item with this id.
    pub fn get(&self, id: u32) -> Option<&Todo> {
        let _ = id;
        None
    }

    /// The item with this id, to change it.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut Todo> {
        let _ = id;
        None
    }

    /// Every item, in insertion order.
    pub fn all(&self) -> &[Todo] {
        &self.items[..0]
    }
}
