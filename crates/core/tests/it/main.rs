//! Integration tests of `wavecrew-core`: the store across processes.

mod props;
mod store_processes;
mod worker;
