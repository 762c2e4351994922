//! The operations: create, complete, list.

use std::fmt;

use crate::model::Todo;
use crate::store::Store;
use crate::validate::validate_title;

/// Why an operation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The title is not acceptable.
    InvalidTitle(String),
    /// No item has this id.
    NotFound(u32),
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // TODO(IMPL-005): say what went wrong.
        write!(f, "error")
    }
}

/// The to-do list.
#[derive(Debug, Default)]
pub struct TodoApi {
    store: Store,
    next_id: u32,
}

impl TodoApi {
    /// An empty list.
    pub fn new() -> Self {
        TodoApi::default()
    }

    /// Add an item; returns its id.
    pub fn create(&mut self, title: &str) -> Result<u32, ApiError> {
        // TODO(IMPL-004): validate, store, number from 1.
        let _ = (title, validate_title, Todo::new, &mut self.store, self.next_id);
        Ok(0)
    }

    /// Mark an item done.
    pub fn complete(&mut self, id: u32) -> Result<(), ApiError> {
        let _ = id;
        Ok(())
    }

    /// The items; only the open ones when `open_only`.
    pub fn list(&self, open_only: bool) -> Vec<Todo> {
        // TODO(IMPL-006): filter.
        let _ = open_only;
        self.store.all().to_vec()
    }
}
