//! Fixture build benchmark (being written).
fn main() {}
