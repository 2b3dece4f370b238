//! `eqcheck walk`'s command line: its du-compatible flags, checked and warned of
//! word for word as du does, parsed without the rest of eqcheck's command line, and
//! the walk run on the walk pool.

use std::ffi::OsString;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::walk::du::{DuOptions, Unit};
use crate::walk::{Engine, ListOptions, Printed};

#[derive(Args, Debug)]
#[command(args_override_self = true)]
pub(super) struct WalkArgs {
    /// Which listing engine.
    #[arg(long, value_enum, default_value = "fast")]
    engine: EngineArg,
    /// Print files as well as folders.
    #[arg(short = 'a', long = "all")]
    all: bool,
    /// Apparent size in bytes (`--apparent-size --block-size=1`).
    #[arg(short = 'b', long = "bytes")]
    bytes: bool,
    /// Apparent sizes rather than disk usage.
    #[arg(long = "apparent-size")]
    apparent_size: bool,
    /// Only a total for each operand (`-d 0`).
    #[arg(short = 's', long = "summarize")]
    summarize: bool,
    /// Print nothing deeper than N levels below an operand.
    #[arg(short = 'd', long = "max-depth", value_name = "N")]
    max_depth: Option<usize>,
    /// Follow every symbolic link.
    #[arg(short = 'L', long = "dereference")]
    dereference: bool,
    /// Skip folders on other file systems.
    #[arg(short = 'x', long = "one-file-system")]
    one_file_system: bool,
    /// Count entries instead of sizes.
    #[arg(long)]
    inodes: bool,
    /// A grand total line.
    #[arg(short = 'c', long = "total")]
    total: bool,
    /// End each line with NUL instead of newline.
    #[arg(short = '0', long = "null")]
    null: bool,
    /// The nested JSON form instead of lines.
    #[arg(long)]
    json: bool,
    /// After the walk, print on stderr, as its last line, what the engine's
    /// listing typed and how many stat calls of each kind it made, as one JSON
    /// line: {"census": {...}}, or {"census": null} where the engine counts
    /// nothing (the reference engine; the fast engine off Linux).
    #[arg(long)]
    census: bool,
    /// Folders or files to measure.
    #[arg(value_name = "PATH", default_value = ".")]
    paths: Vec<OsString>,
}

/// What `eqcheck walk` is, in its `--help` and in eqcheck's list of subcommands.
pub(super) const ABOUT: &str = "The built-in subject: a du-compatible walker with two engines";

/// `eqcheck walk …` as eqcheck's whole command line parses it, without building the
/// parsers of every other subcommand. A matrix over the built-in subject starts
/// `eqcheck walk` twice a case, and building the whole command line took about a
/// tenth of its start on an empty folder (0.3 ms, 40 page faults).
#[derive(Parser, Debug)]
#[command(name = "eqcheck")]
struct WalkCommandLine {
    #[command(subcommand)]
    command: WalkOnly,
}

#[derive(Subcommand, Debug)]
enum WalkOnly {
    #[command(about = ABOUT)]
    Walk(WalkArgs),
}

/// Parses `eqcheck walk …` and runs it. A usage error exits 1, as du's does; help
/// exits 0.
pub(super) fn parse_and_walk() -> u8 {
    match WalkCommandLine::try_parse() {
        Ok(WalkCommandLine {
            command: WalkOnly::Walk(args),
        }) => walk(args),
        Err(err) => {
            let _ = err.print();
            u8::from(err.use_stderr())
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub(super) enum EngineArg {
    Reference,
    Fast,
}

pub(super) fn walk(args: WalkArgs) -> u8 {
    let engine = match args.engine {
        EngineArg::Reference => Engine::Reference,
        EngineArg::Fast => Engine::Fast,
    };
    let du = match du_options(&args) {
        Ok(du) => du,
        Err(code) => return code,
    };
    let list = ListOptions {
        follow_symlinks: args.dereference,
        one_file_system: args.one_file_system,
    };
    // The walk, the count and the printing each recurse once per folder level; the
    // walk pool's large stacks let trees far deeper than PATH_MAX through, as du does.
    let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::walk::on_walk_pool(move || {
            let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
            // Rust's stdout flushes at every newline; du's is block-buffered when
            // piped, and a write per line would cost more than listing the folder.
            let mut stdout = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            crate::walk::command(
                engine,
                &args.paths,
                list,
                &du,
                Printed {
                    json: args.json,
                    census: args.census,
                },
                &mut stdout,
                &mut stderr.lock(),
            )
        })
    }));
    match walked {
        Ok(Ok(code)) => code,
        Ok(Err(err)) => {
            eprintln!("eqcheck walk: cannot start the walk: {err}");
            1
        }
        // The panic's message is already on stderr.
        Err(_) => 1,
    }
}

/// The du options `eqcheck walk` was given, after du's own checks and warnings,
/// word for word; `Err` holds the exit code of a usage error (1, as du).
fn du_options(args: &WalkArgs) -> Result<DuOptions, u8> {
    const TRY: &str = "Try 'eqcheck walk --help' for more information.";
    if args.summarize && args.all {
        eprintln!("eqcheck walk: cannot both summarize and show all entries\n{TRY}");
        return Err(1);
    }
    match (args.summarize, args.max_depth) {
        (true, Some(0)) => {
            eprintln!("eqcheck walk: warning: summarizing is the same as using --max-depth=0")
        }
        (true, Some(depth)) => {
            eprintln!(
                "eqcheck walk: warning: summarizing conflicts with --max-depth={depth}\n{TRY}"
            );
            return Err(1);
        }
        _ => {}
    }
    if args.inodes && (args.bytes || args.apparent_size) {
        eprintln!(
            "eqcheck walk: warning: options --apparent-size and -b are ineffective with --inodes"
        );
    }
    let unit = if args.inodes {
        Unit::Inodes
    } else if args.bytes {
        Unit::ApparentBytes
    } else if args.apparent_size {
        Unit::ApparentBlocks
    } else {
        Unit::DiskBlocks
    };
    Ok(DuOptions {
        unit,
        all: args.all,
        max_depth: if args.summarize {
            Some(0)
        } else {
            args.max_depth
        },
        total: args.total,
        null: args.null,
        follow_symlinks: args.dereference,
        one_file_system: args.one_file_system,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::{Cli, Command};
    use super::{WalkCommandLine, WalkOnly};

    /// What a parser made of a command line: the walk's arguments, or the error as
    /// printed, its kind, and whether it goes to stderr (help and version do not).
    fn outcome<T>(parsed: Result<T, clap::Error>, walk_args: impl Fn(T) -> String) -> String {
        match parsed {
            Ok(parsed) => walk_args(parsed),
            Err(err) => format!(
                "{:?}, stderr: {}\n{}",
                err.kind(),
                err.use_stderr(),
                err.render()
            ),
        }
    }

    /// Every walk command line, parsed alone, comes out as eqcheck's whole command
    /// line parses it: the same arguments, the same help, the same errors.
    #[test]
    fn walk_alone_parses_as_the_whole_command_line_does() {
        let lines: &[&[&str]] = &[
            &[],
            &["-s", "tree"],
            &["--engine", "reference", "-a", "-b", "-d", "2", "a", "b"],
            &[
                "-0",
                "-c",
                "-L",
                "-x",
                "--inodes",
                "--json",
                "--census",
                "--apparent-size",
            ],
            &["--", "-a"],
            &["-s", "-s"],
            &["--help"],
            &["-h"],
            &["--version"],
            &["--bogus"],
            &["--engine", "nope"],
            &["-d"],
            &["-d", "deep"],
        ];
        for line in lines {
            let argv = [&["eqcheck", "walk"], *line].concat();
            let whole = outcome(Cli::try_parse_from(&argv), |cli| match cli.command {
                Some(Command::Walk(args)) => format!("{args:?}"),
                other => format!("not walk: {other:?}"),
            });
            let alone = outcome(WalkCommandLine::try_parse_from(&argv), |line| {
                let WalkCommandLine {
                    command: WalkOnly::Walk(args),
                } = line;
                format!("{args:?}")
            });
            assert_eq!(alone, whole, "eqcheck walk {}", line.join(" "));
        }
    }
}
