//! The `eqcheck` binary: parse the command line, run, print the error chain, exit.

use std::process::ExitCode;

fn main() -> ExitCode {
    match eqcheck::cli::main() {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("eqcheck: {err:#}");
            ExitCode::from(eqcheck::exit::USAGE)
        }
    }
}
