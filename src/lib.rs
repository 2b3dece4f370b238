//! eqcheck proves that a fast filesystem walker prints exactly what a slow, obviously
//! correct one prints: it runs a reference and a candidate arm over fixture trees
//! with a matrix of flag sets and says precisely how their outputs differ.
//!
//! Dependencies point one way: `cli → settings → {matrix, walk, fixtures} → flagset
//! → normalize → outcome`, `{cli, settings, matrix} → build → outcome` (a program
//! built from a git revision), `{cli, settings, matrix} → fsimage → fixtures` (trees on
//! file-system images), `cli → report → outcome`, `cli → merge → outcome` and `cli → bench → matrix`; `exit` and `userfile` sit at the
//! bottom for all, and `cleanup`, which any layer may call, uses only `walk` and `sweep` (ending what
//! the arms' runs leave running). `walk`, `fixtures` and `flagset` never see the command line.
//! `docs/architecture.md` draws the layers and says which module owns what.

pub mod bench;
pub mod build;
#[cfg(target_os = "linux")]
pub mod cgroups;
pub mod cleanup;
pub mod cli;
pub mod counted;
pub mod exit;
pub mod fixtures;
pub mod flagset;
pub mod fsimage;
pub mod matrix;
pub mod merge;
pub mod normalize;
pub mod outcome;
pub mod probe;
pub mod report;
pub mod settings;
pub mod shrink;
pub mod sweep;
pub mod userfile;
pub mod walk;
