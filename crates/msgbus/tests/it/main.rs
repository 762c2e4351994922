//! Integration tests of the bus: the three ccw eras, concurrent writers,
//! killed writers.

mod children;
mod eras;
mod writers;
