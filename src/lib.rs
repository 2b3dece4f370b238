//! eqcheck proves that a fast filesystem walker prints exactly what a slow, obviously
//! correct one prints: it runs a reference and a candidate arm over fixture trees
//! with a matrix of flag sets and says precisely how their outputs differ.
//!
//! Dependencies point one way: `cli → project → config → {matrix, walk, fixtures} →
//! outcome → report`. `walk`, `fixtures` and `flagset` never see the command line.

pub mod cli;
pub mod config;
pub mod exit;
pub mod fixtures;
pub mod flagset;
pub mod matrix;
pub mod normalize;
pub mod outcome;
pub mod project;
pub mod report;
pub mod walk;
