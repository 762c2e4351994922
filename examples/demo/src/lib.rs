//! A to-do list: the demo project that wavecrew's agents complete.
//! Every function below starts as a stub; the demo pipeline's tasks fill
//! them in until `cargo test` passes.

pub mod api;
pub mod model;
pub mod store;
pub mod validate;
