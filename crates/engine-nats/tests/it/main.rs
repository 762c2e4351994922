//! Integration tests of `wavecrew-engine-nats` against a real nats-server
//! (Debian's 2.9.10, installed by `scripts/test.sh`), one server per test,
//! each with its own port and store folder.

mod bus;
mod connect;
mod objects;
mod registry;
mod repo;
mod support;
mod tasks;
mod tickets;
