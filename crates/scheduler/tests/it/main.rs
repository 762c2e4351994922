//! Integration tests of `wavecrew-scheduler`, one binary.
//!
//! - `validation`: every problem kind, snapshotted message by message.
//! - `waves`: layering examples and the wave properties on random DAGs.
//! - `dispatch`: failure policies, barrier, cancellation, weights, classes,
//!   files, priorities, forced cycles (virtual time).
//! - `dispatch_props`: the dispatcher's invariants on random DAGs.
//! - `render`: DOT, Mermaid and JSON snapshots of a fixture graph.

mod dispatch;
mod dispatch_props;
mod render;
mod support;
mod validation;
mod waves;
