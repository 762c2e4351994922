//! Integration tests of the bus.
