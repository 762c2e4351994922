//! One module per `wavecrew` subcommand.

pub mod msg;
pub mod plan;
