//! Integration tests of `wavecrew-core`: the store across processes.

mod store_processes;
