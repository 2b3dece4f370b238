//! Reporters: each reads a [`RunOutcome`](crate::outcome::RunOutcome) and writes one
//! format. They never look at the command line or the matrix.

pub mod json;
pub mod text;

use std::io::Write;
use std::path::Path;

/// Opens a report destination: `-` is stdout, anything else a file created anew.
pub fn destination(path: &Path) -> std::io::Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        Ok(Box::new(std::io::stdout()))
    } else {
        Ok(Box::new(std::io::BufWriter::new(std::fs::File::create(
            path,
        )?)))
    }
}
