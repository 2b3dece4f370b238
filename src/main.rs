//! The `eqcheck` binary: parse the command line, run, print the error chain, exit.

use std::process::ExitCode;

fn main() -> ExitCode {
    match eqcheck::cli::main() {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            // `{:#}` prints the whole chain of causes on one line.
            let chain = match &failure {
                eqcheck::exit::Failure::Usage(err) | eqcheck::exit::Failure::Harness(err) => err,
            };
            eprintln!("eqcheck: {chain:#}");
            ExitCode::from(failure.exit_code())
        }
    }
}
