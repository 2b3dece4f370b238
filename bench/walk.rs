//! Walk benchmark (being written).
fn main() {}
