//! The `eqcheck` binary: parse the command line, run, print the error chain, exit.

use std::process::ExitCode;

fn main() -> ExitCode {
    match eqcheck::cli::main() {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("eqcheck: {err:#}");
            let harness = err.downcast_ref::<eqcheck::matrix::MatrixError>().is_some();
            ExitCode::from(if harness {
                eqcheck::exit::HARNESS_FAILURE
            } else {
                eqcheck::exit::USAGE
            })
        }
    }
}
