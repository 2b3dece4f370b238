//! The command line: clap's derive structs, and the one place that turns them into
//! the plain option structs the rest of the crate takes. No module outside
//! `cli` imports clap (`cli::probe` holds the probe's options).
//! The shell completions and the man page are generated here from the same
//! definition, so they cannot fall behind the flags.

mod arguments;
mod bench;
mod built;
mod merge;
mod probe;
mod shrink;
mod walk;

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::exit::Failure;
use crate::settings::{self, file, resolve, Given, Guard, Layer, RunMode};

#[derive(Parser, Debug)]
#[command(
    name = "eqcheck",
    version,
    about = "Prove that a fast filesystem walker prints exactly what a slow, obviously correct one prints.",
    args_conflicts_with_subcommands = true,
    after_help = EXAMPLES
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the matrix: arms × trees × flag sets (the default subcommand).
    // Boxed: the run's options dwarf the other subcommands'.
    Run(Box<RunArgs>),
    // Parsed by `walk::parse_and_walk`; here for `--help`, completions and the man page.
    #[command(about = walk::ABOUT)]
    Walk(walk::WalkArgs),
    /// List, show or build the fixture trees.
    #[command(subcommand)]
    Trees(TreesCommand),
    /// Print a shell completion script to stdout.
    Completions {
        #[arg(value_enum)]
        shell: ShellArg,
    },
    /// Print eqcheck's man page (roff) to stdout.
    Man,
    /// Compare, entry by entry and field by field, the stat fields a fast listing
    /// gives with read_dir + lstat, and count what the listing typed.
    Probe(probe::ProbeArgs),
    /// Join the JSON reports of a partitioned run's shards into the whole run's
    /// reports; exits as the whole run would.
    Merge(merge::MergeArgs),
    /// Time A (the reference) against B (the candidate) in alternating rounds over
    /// the same trees and sets as run, checking every run's output against A's
    /// first; without --sets, only the first set of the flag-set file is timed.
    Bench(Box<bench::BenchArgs>),
    /// Reduce a differing case to a smallest tree and flag set on which the arms
    /// still differ the same way; writes the tree as a spec, the set in a flag-set
    /// file, and a repro line, checked on a fresh build of the spec.
    Shrink(Box<shrink::ShrinkArgs>),
}

/// Three commands that work as printed wherever eqcheck and GNU du are on PATH.
/// tests/guide.rs runs the last two as they appear in `--help`.
const EXAMPLES: &str = "\
Examples:
  # The self-demo: eqcheck's reference walk engine against its fast one, with every
  # set of the built-in walk flag-set file, over the standard trees
  eqcheck

  # The same spelled out, on one tree: your own two builds go in --ref and --cand
  eqcheck --ref 'eqcheck walk --engine reference' --cand 'eqcheck walk' --tree basic --flagsets walk

  # Is GNU du's output deterministic? Run it against itself and keep a JSON report
  eqcheck --ref du --self-check --tree basic --json report.json";

/// `eqcheck run`'s arguments: the shared ones, and the matrix's own.
#[derive(Args, Debug, Default)]
struct RunArgs {
    #[command(flatten)]
    subject: SubjectArgs,
    /// Run each arm K times per case; an arm that disagrees with itself is flaky.
    #[arg(long, value_name = "K")]
    runs: Option<usize>,
    /// Run the reference against itself (3 runs unless --runs), to show the matrix
    /// is deterministic before trusting a verdict.
    #[arg(long)]
    self_check: bool,
    /// Cases run at once (default: the number of cores).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    jobs: Option<usize>,
    #[command(flatten)]
    reports: ReportArgs,
    /// Run only the M-th of N shards of the cases, for a CI job matrix: by a hash
    /// of each case id, or in turn; `eqcheck merge` joins the shards' JSON reports.
    #[arg(long, value_name = "hash:M/N|count:M/N")]
    partition: Option<String>,
    /// Leave the built trees in place and print where they are.
    #[arg(long)]
    keep: bool,
}

/// What is run, on what, and how: the options `run` and `bench` share.
#[derive(Args, Debug, Default)]
struct SubjectArgs {
    /// A tree from trees/ by name, or an existing folder (never written to). Repeatable.
    #[arg(long = "tree", value_name = "NAME|PATH")]
    trees: Vec<String>,
    /// The file systems each tree named by spec is built on, comma-separated:
    /// native (the temp folder's; the default), ext4, ext2-nodtype, xfs, btrfs,
    /// tmpfs, overlay, squashfs, exfat, vfat, or all. Images need Linux and root.
    #[arg(long = "fs", value_name = "LIST")]
    fs: Option<String>,
    /// Which flag sets: `all`, a group name, a comma list of groups, or a flag-set file
    /// (a path with a folder part, or ending in `.sets`). [default: all]
    // Defaults are applied after merging eqcheck.toml, so clap must see "not given".
    #[arg(long, value_name = "all|GROUP|FILE")]
    sets: Option<String>,
    /// The flag-set file: a built-in name (walk, dust, du, find) or a path (`./du`
    /// for a file called du). Default: the built-in file named after the reference
    /// program, else walk.
    #[arg(long, value_name = "NAME|FILE")]
    flagsets: Option<String>,
    /// The reference arm, split shell-word style; `{tree}` is replaced by the tree's path.
    #[arg(long = "ref", value_name = "CMD ARGS")]
    reference: Option<String>,
    /// The candidate arm, split the same way.
    #[arg(long = "cand", value_name = "CMD ARGS")]
    candidate: Option<String>,
    /// Build the reference from this git revision of the repository the working
    /// folder is in, with eqcheck.toml's `[build]` (cached by commit). Without
    /// --cand, the candidate is the same program built from the working tree.
    #[arg(long, value_name = "REV", conflicts_with = "reference")]
    ref_rev: Option<String>,
    /// Seconds an arm may run before its process group is killed. [default: 60]
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// The most an arm may write to stdout, and to stderr: bytes, or a number with
    /// K, M or G (1024-based), at most 1024G. Past it the arm is killed and its
    /// case is an error. [default: 4G]
    #[arg(long, value_name = "SIZE")]
    max_output: Option<String>,
    /// When eqcheck runs as root, run the arms as this user (default: uid/gid 65534).
    #[arg(long, value_name = "NAME|UID", conflicts_with = "as_root")]
    as_user: Option<String>,
    /// When eqcheck runs as root, run the arms as root too (permission fixtures then test nothing).
    #[arg(long)]
    as_root: bool,
    /// How closely each tree is fingerprinted around every arm. [default: metadata]
    #[arg(long, value_enum, value_name = "HOW")]
    guard: Option<GuardArg>,
    /// Run the reference's program under this command, split shell-word style: an
    /// emulator or translator such as `qemu-aarch64`, `arch -x86_64` or `wine`.
    #[arg(long, value_name = "CMD ARGS")]
    ref_runner: Option<String>,
    /// Run the candidate's program under this command, split the same way.
    #[arg(long, value_name = "CMD ARGS")]
    cand_runner: Option<String>,
    /// Run the reference under the candidate's runner too, so the runner's own
    /// bugs fall on both arms alike.
    #[arg(long, conflicts_with = "ref_runner")]
    same_runner: bool,
    /// The name both arms see as their program's (argv[0]). Default: each arm's
    /// program file name, such as `du` for `old/du` and `new/du`.
    #[arg(long, value_name = "NAME")]
    argv0: Option<String>,
    /// The project config to use instead of an eqcheck.toml in the working folder
    /// (only that folder is searched, never its parents).
    #[arg(long, value_name = "PATH", conflicts_with = "no_config")]
    config: Option<PathBuf>,
    /// Ignore any eqcheck.toml in the working folder.
    #[arg(long)]
    no_config: bool,
}

/// Where a run's reports go, and how the terminal one looks.
#[derive(Args, Debug, Default)]
struct ReportArgs {
    /// Write the JSON report here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write a Markdown report to paste into a pull request here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    markdown: Option<PathBuf>,
    /// Write a JUnit XML report here (`-` for stdout): one suite per flag-set group.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Colour the terminal report: auto means only on a terminal and without NO_COLOR.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    color: ColorArg,
}

impl ReportArgs {
    /// Opens every destination first: a bad path is a usage error before any work.
    /// `trees_read`: the user's own trees, which no report may go into.
    fn open(self, trees_read: Vec<PathBuf>) -> Result<crate::report::Reports, Failure> {
        crate::report::open(&crate::report::ReportRequest {
            trees_read,
            json: self.json,
            markdown: self.markdown,
            junit: self.junit,
            color: match self.color {
                ColorArg::Auto => crate::report::ColorChoice::Auto,
                ColorArg::Always => crate::report::ColorChoice::Always,
                ColorArg::Never => crate::report::ColorChoice::Never,
            },
            environment: crate::report::Environment::current(),
        })
        .map_err(Failure::usage)
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, Default)]
enum ColorArg {
    #[default]
    Auto,
    Always,
    Never,
}

/// The shells `eqcheck completions` writes scripts for.
#[derive(ValueEnum, Clone, Copy, Debug)]
enum ShellArg {
    Bash,
    Zsh,
    Fish,
    #[value(name = "powershell")]
    PowerShell,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum GuardArg {
    /// Type, mode, size, link count, inode, modification time and link target of
    /// every entry.
    Metadata,
    /// The metadata and a digest of every file's contents.
    Content,
    /// No fingerprint at all.
    Off,
}

impl From<GuardArg> for Guard {
    fn from(guard: GuardArg) -> Guard {
        match guard {
            GuardArg::Metadata => Guard::Metadata,
            GuardArg::Content => Guard::Content,
            GuardArg::Off => Guard::Off,
        }
    }
}

#[derive(Subcommand, Debug)]
enum TreesCommand {
    /// The standard trees and what each is for.
    List,
    /// A tree's spec, entry counts and where it comes from.
    Show { name: String },
    /// Build a tree into a new folder, in one that exists.
    Build {
        name: String,
        #[arg(long, value_name = "DIR")]
        into: PathBuf,
        /// Build it onto a fresh image of this file system, mounted inside DIR
        /// (Linux, as root); prints the tree's root. `trees unmount DIR` undoes it.
        #[arg(long, value_name = "FS", value_parser = parse_one_fs)]
        fs: Option<crate::fsimage::FileSystem>,
    },
    /// Unmount and remove what `trees build --fs` made in DIR.
    Unmount { dir: PathBuf },
}

/// One file system by name (`all` is for runs, not for one build).
fn parse_one_fs(word: &str) -> Result<crate::fsimage::FileSystem, String> {
    crate::fsimage::FileSystem::named(word).ok_or_else(|| {
        format!(
            "unknown file system `{word}` (known: {})",
            crate::fsimage::FileSystem::names().trim_end_matches(", all")
        )
    })
}

/// Parses the process's arguments and runs the chosen command; returns the exit code.
pub fn main() -> Result<u8, Failure> {
    let first = std::env::args_os().nth(1);
    #[cfg(unix)]
    if first
        .as_ref()
        .is_some_and(|a| a == crate::matrix::keeper::KEEPER_ARGUMENT)
    {
        return Ok(crate::matrix::keeper::serve());
    }
    if first.is_some_and(|a| a == "walk") {
        return Ok(walk::parse_and_walk());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if err.kind() == clap::error::ErrorKind::InvalidUtf8 => {
            return Err(Failure::usage(anyhow::anyhow!(arguments::not_utf8())));
        }
        Err(err) => {
            let _ = err.print();
            return Ok(if err.use_stderr() {
                crate::exit::USAGE
            } else {
                0
            });
        }
    };
    match cli.command {
        Some(Command::Walk(args)) => Ok(walk::walk(args)),
        Some(Command::Trees(command)) => trees(command),
        Some(Command::Completions { shell }) => completions(shell).map_err(Failure::harness),
        Some(Command::Man) => man().map_err(Failure::harness),
        Some(Command::Probe(args)) => probe::probe(args),
        Some(Command::Merge(args)) => merge::merge(args),
        Some(Command::Bench(args)) => bench::bench(*args),
        Some(Command::Shrink(args)) => shrink::shrink(*args),
        Some(Command::Run(args)) => run(*args),
        None => run(cli.run),
    }
}

fn run(args: RunArgs) -> Result<u8, Failure> {
    let mode = RunMode {
        self_check: args.self_check,
        as_root: args.subject.as_root,
    };
    let mut layer = given(&args.subject);
    layer.runs = args.runs.map(|n| Given::flag("--runs", n));
    layer.jobs = args.jobs.map(|n| Given::flag("--jobs", n));
    let partition = (args.partition.clone()).map(|p| Given::flag("--partition", p));
    let resolved = resolve_subject(&args.subject, layer, mode, args.keep, partition)?;
    // A bad report path is a usage error before any arm runs (or any build), not
    // after the whole matrix.
    let reports = args.reports.open(trees_read(&resolved.matrix.trees))?;
    let matrix = resolved.build_arms()?;
    let outcome = crate::matrix::run(&matrix, reports.progress());
    reports.end_progress();
    crate::cleanup::exit_if_interrupted();
    let outcome = outcome.map_err(Failure::harness)?;
    reports.write(&outcome).map_err(Failure::harness)?;
    Ok(outcome.exit_code())
}

/// The existing folders among the trees, which the arms read and eqcheck never
/// writes into (the built ones are eqcheck's own, in fresh temp folders).
fn trees_read(trees: &[crate::matrix::TreeSource]) -> Vec<PathBuf> {
    (trees.iter())
        .filter_map(|tree| match tree {
            crate::matrix::TreeSource::Existing { path, .. } => Some(path.clone()),
            crate::matrix::TreeSource::Spec(_) | crate::matrix::TreeSource::Image { .. } => None,
        })
        .collect()
}

/// Enters the private mount namespace when any tree goes on an image; before
/// anything starts a thread, as the namespace is the whole process's.
fn enter_namespace_for(trees: &[crate::matrix::TreeSource]) -> Result<(), Failure> {
    let images =
        (trees.iter()).any(|tree| tree.file_system() != crate::fsimage::FileSystem::Native);
    if images {
        crate::fsimage::enter_private_namespace().map_err(Failure::harness)?;
    }
    Ok(())
}

/// A matrix resolved from the command line over the project config, with what
/// `--ref-rev` still has to build.
struct Resolved {
    matrix: crate::matrix::Matrix,
    to_build: Option<built::ToBuild>,
    /// The merged options, for what a subcommand decides from them.
    options: Layer,
}

/// Merges the command line's layer over the project config's and resolves it; a
/// revision that names no commit is a usage error before anything is made.
fn resolve_subject(
    subject: &SubjectArgs,
    layer: Layer,
    mode: RunMode,
    keep: bool,
    partition: Option<Given<String>>,
) -> Result<Resolved, Failure> {
    let project_file =
        file::find(subject.config.as_deref(), subject.no_config).map_err(Failure::usage)?;
    let from_file = project_file.as_ref().map(|f| f.options.clone());
    let options = settings::merge(layer, from_file.unwrap_or_default(), mode);
    let extras = resolve::RunExtras {
        mode,
        keep,
        config: project_file.as_ref().map(|f| f.path.display().to_string()),
        partition,
    };
    let matrix = resolve::resolve(&options, &extras).map_err(|err| match err {
        // Not a mistake of the user's: this process cannot find its own file.
        resolve::SettingsError::OwnExe(_) => Failure::harness(err),
        _ => Failure::usage(err),
    })?;
    enter_namespace_for(&matrix.trees)?;
    let to_build = built::locate(&matrix)?;
    Ok(Resolved {
        matrix,
        to_build,
        options,
    })
}

impl Resolved {
    /// Builds the arms `--ref-rev` asked for, if any: the matrix, ready to run.
    fn build_arms(self) -> Result<crate::matrix::Matrix, Failure> {
        let mut matrix = self.matrix;
        if let Some(to_build) = self.to_build {
            built::build_arms(&mut matrix, &to_build)?;
        }
        Ok(matrix)
    }
}

/// The run options the command line gives, each tagged with its flag (`--runs`
/// and `--jobs` are `run`'s own, and set there).
fn given(args: &SubjectArgs) -> Layer {
    let text = |flag, value: &Option<String>| value.clone().map(|v| Given::flag(flag, v));
    Layer {
        reference: text("--ref", &args.reference),
        candidate: text("--cand", &args.candidate),
        flagsets: text("--flagsets", &args.flagsets),
        sets: text("--sets", &args.sets),
        trees: (args.trees.iter())
            .map(|t| Given::flag("--tree", t.clone()))
            .collect(),
        fs: text("--fs", &args.fs).into_iter().collect(),
        timeout: args.timeout.map(|t| Given::flag("--timeout", t)),
        max_output: text("--max-output", &args.max_output),
        runs: None,
        jobs: None,
        guard: args
            .guard
            .map(|guard| Given::flag("--guard", Guard::from(guard))),
        as_user: text("--as-user", &args.as_user),
        argv0: text("--argv0", &args.argv0),
        ref_runner: text("--ref-runner", &args.ref_runner),
        cand_runner: text("--cand-runner", &args.cand_runner),
        same_runner: (args.same_runner).then(|| Given::flag("--same-runner", true)),
        env: Vec::new(),
        ref_rev: text("--ref-rev", &args.ref_rev),
        // Only eqcheck.toml says how to build.
        build_command: None,
        build_program: None,
    }
}

fn trees(command: TreesCommand) -> Result<u8, Failure> {
    let mut text = Vec::new();
    match command {
        TreesCommand::List => crate::fixtures::write_list(&mut text).map_err(Failure::harness)?,
        TreesCommand::Show { name } => {
            let spec = crate::fixtures::spec_named(&name).map_err(Failure::usage)?;
            crate::fixtures::write_show(&spec, &mut text).map_err(Failure::harness)?
        }
        TreesCommand::Build {
            name,
            into,
            fs: Some(fs),
        } if fs.is_image() => {
            let root = build_on_image(&name, &into, fs)?;
            writeln!(text, "{}", root.display()).map_err(Failure::harness)?;
        }
        TreesCommand::Build { name, into, .. } => {
            // An interrupt mid-build removes the half-built tree; the build's own
            // error from under the removal is no error of the spec's.
            crate::cleanup::on_interrupt_clean_up();
            let built = crate::fixtures::build_named(&name, &into);
            crate::cleanup::exit_if_interrupted();
            built.map_err(|err| match err.is_usage() {
                true => Failure::usage(err),
                false => Failure::harness(err),
            })?;
            writeln!(text, "{}", into.display()).map_err(Failure::harness)?;
        }
        TreesCommand::Unmount { dir } => {
            crate::fsimage::unmount_kept(&dir).map_err(fs_failure)?;
        }
    }
    print(&text).map_err(Failure::harness)
}

/// `trees build NAME --fs FS --into DIR`: the tree on a fresh image mounted in
/// the host's mount namespace, left mounted; its root is returned.
fn build_on_image(
    name: &str,
    into: &std::path::Path,
    fs: crate::fsimage::FileSystem,
) -> Result<PathBuf, Failure> {
    let spec = crate::fixtures::spec_named(name).map_err(Failure::usage)?;
    // An interrupt mid-build unmounts and removes what was made so far.
    crate::cleanup::on_interrupt_clean_up();
    let mut built = crate::fsimage::OnImage::build(fs, &spec, into).map_err(fs_failure)?;
    let skipped: Vec<String> = built.skipped().iter().map(|s| s.entry()).collect();
    if !skipped.is_empty() {
        // Beside the image, so `trees unmount` removes it with the rest.
        let list = into.join("skipped");
        let all_at = match std::fs::write(&list, skipped.join("\n") + "\n") {
            Ok(()) => format!("{} lists each", list.display()),
            Err(err) => format!("cannot list each in {}: {err}", list.display()),
        };
        let mut err = std::io::stderr().lock();
        let tree = format!("{name}@{fs}");
        for line in crate::report::summary::skipped_lines(&tree, &skipped, &all_at) {
            let _ = writeln!(err, "eqcheck: {line}");
        }
    }
    built.keep();
    Ok(built.root().to_path_buf())
}

fn fs_failure(err: crate::fsimage::FsError) -> Failure {
    match err.is_usage() {
        true => Failure::usage(err),
        false => Failure::harness(err),
    }
}

/// The completion script for `shell`, generated from the same definition that parses
/// the command line, so it never lags behind a flag.
fn completions(shell: ShellArg) -> anyhow::Result<u8> {
    use clap_complete::Shell;
    let shell = match shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
        ShellArg::PowerShell => Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "eqcheck", &mut script);
    print(&script)
}

/// The man page in roff, from the same definition as `--help`.
fn man() -> anyhow::Result<u8> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    print(&page)
}

/// Writes generated text to stdout. A reader that stops early (`eqcheck man | head`)
/// has what it wanted, so a closed pipe is not an error.
fn print(bytes: &[u8]) -> anyhow::Result<u8> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(crate::exit::ALL_EQUAL),
    }
}
