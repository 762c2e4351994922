//! Integration tests of wavecrew-validation: one test binary, one module per area.

// Pass rates and coverage figures here are exact ratios of small integers.
#![allow(clippy::float_cmp)]

mod acceptance;
mod fixloop;
mod parsers;
mod projects;
mod support;
mod syntax;
