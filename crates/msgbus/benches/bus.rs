//! Bus benchmarks (filled in below).

fn main() {}
