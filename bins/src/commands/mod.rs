//! One module per `wavecrew` subcommand.

pub mod plan;
