//! Hostile input to the parsers a user's files reach: tree specs, flag-set files,
//! `eqcheck.toml`, and the NDJSON dump a lister gives `eqcheck probe`. Each gets
//! random bytes, random noise made of the characters their syntax cares about, and
//! near-valid documents: real lines from `trees/`, `flagsets/`, the config's
//! documented example and the dump format's, each kept, cut short,
//! doubled, spliced with another, given huge or odd numbers, odd Unicode, a NUL or
//! a CR. Every parser must return (an error or a value), never panic, and answer each
//! input well within [`HANG_GUARD`]: a guard against hangs, not a speed target. The
//! seed is fixed, so a run is the same on every machine and a failure repeats.
//! The files they read must be regular files: a FIFO or a device given as the
//! config, a flag-set file or a shard's report is refused with exit 2, not read
//! forever.

use std::path::Path;
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngSeed};

/// Longer than any parser takes on any input here, by orders of magnitude.
const HANG_GUARD: Duration = Duration::from_secs(2);

/// Inputs per parser and kind of input.
const CASES: u32 = 256;

/// The fixed seed all runs draw from.
const SEED: u64 = 0x00e9_c0de_15f0_0d15;

fn config() -> Config {
    Config {
        cases: CASES,
        rng_seed: RngSeed::Fixed(SEED),
        // Nothing is written beside the tests: a failure prints its input.
        failure_persistence: None,
        ..Config::default()
    }
}

/// The lines the near-valid documents are made from: every line of the shipped tree
/// specs but blanks and comments.
fn spec_lines() -> Vec<&'static str> {
    lines_of(&[
        include_str!("../trees/basic.tree"),
        include_str!("../trees/edge.tree"),
        include_str!("../trees/nm.tree"),
        include_str!("../trees/wide.tree"),
        include_str!("../trees/deep.tree"),
        include_str!("../trees/huge.tree"),
    ])
}

/// Every line of the shipped flag-set files but blanks and comments.
fn flag_set_lines() -> Vec<&'static str> {
    lines_of(&[
        include_str!("../flagsets/walk.sets"),
        include_str!("../flagsets/du.sets"),
        include_str!("../flagsets/dust.sets"),
        include_str!("../flagsets/find.sets"),
    ])
}

/// The lines of the config example documented at the top of the module that reads
/// `eqcheck.toml`, so the corpus follows the keys as they change.
fn toml_lines() -> Vec<&'static str> {
    let source = include_str!("../src/settings/file.rs");
    let example: Vec<&'static str> = source
        .lines()
        .filter_map(|line| line.strip_prefix("//! "))
        .skip_while(|line| !line.starts_with("```toml"))
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .collect();
    assert!(example.len() > 10, "the config example was not found");
    example
}

/// The example records of the lister dump format, from its documentation.
fn dump_lines() -> Vec<&'static str> {
    let lines: Vec<&'static str> = include_str!("../docs/probe.md")
        .lines()
        .filter(|line| line.starts_with("{\""))
        .collect();
    assert!(lines.len() >= 3, "the dump examples were not found");
    lines
}

fn lines_of(texts: &[&'static str]) -> Vec<&'static str> {
    let lines: Vec<&'static str> = (texts.iter())
        .flat_map(|text| text.lines())
        // Comments say nothing to a parser, however they are mutated.
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .collect();
    assert!(!lines.is_empty());
    lines
}

/// What is done to one line of a near-valid document.
#[derive(Debug, Clone, Copy)]
enum Mutation {
    Keep,
    Truncate,
    Duplicate,
    /// The start of this line, then the end of another.
    Splice,
    /// Every number replaced by one past a bound or of the wrong form.
    HugeNumber,
    OddUnicode,
    Nul,
    /// A CR before the line's end, as a file saved on Windows has.
    Crlf,
}

const MUTATIONS: [Mutation; 8] = [
    Mutation::Keep,
    Mutation::Truncate,
    Mutation::Duplicate,
    Mutation::Splice,
    Mutation::HugeNumber,
    Mutation::OddUnicode,
    Mutation::Nul,
    Mutation::Crlf,
];

const NUMBERS: [&str; 12] = [
    "18446744073709551616",
    "18446744073709551615",
    "99999999999999999999999999999999999999",
    "1e300",
    "1e19",
    "-1",
    "0",
    "4294967296",
    "1000000G",
    "1.5",
    "NaN",
    "0x10",
];

const ODD: [&str; 16] = [
    "\u{202e}",
    "\u{feff}",
    "e\u{301}",
    "\u{10ffff}",
    "🦀",
    "\u{1f}",
    "\\x",
    "\\xff",
    "\"",
    "'",
    "[",
    "{",
    "\\",
    "->",
    "=",
    "#",
];

/// The char boundary at or before `at`.
fn boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl Mutation {
    fn apply(self, line: &str, other: &str, pick: usize) -> String {
        let at = boundary(line, pick % (line.len() + 1));
        match self {
            Mutation::Keep => line.to_string(),
            Mutation::Truncate => line[..at].to_string(),
            Mutation::Duplicate => format!("{line}\n{line}"),
            Mutation::Splice => {
                let from = boundary(other, (pick / 7) % (other.len() + 1));
                format!("{}{}", &line[..at], &other[from..])
            }
            Mutation::HugeNumber => huge_numbers(line, NUMBERS[pick % NUMBERS.len()]),
            Mutation::OddUnicode => {
                format!("{}{}{}", &line[..at], ODD[pick % ODD.len()], &line[at..])
            }
            Mutation::Nul => format!("{}\0{}", &line[..at], &line[at..]),
            Mutation::Crlf => format!("{line}\r"),
        }
    }
}

/// `line` with each run of digits replaced by `number`, or `number` added as a
/// value where the line has none.
fn huge_numbers(line: &str, number: &str) -> String {
    if !line.bytes().any(|b| b.is_ascii_digit()) {
        return format!("{line} count={number} size={number}");
    }
    let mut out = String::new();
    let mut in_digits = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str(number);
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Documents of 1 to 24 corpus lines, each mutated.
fn near_valid(corpus: Vec<&'static str>) -> impl Strategy<Value = String> {
    let count = corpus.len();
    vec((0..count, select(&MUTATIONS[..]), any::<usize>()), 1..24).prop_map(move |picks| {
        let lines: Vec<String> = (picks.into_iter())
            .map(|(i, mutation, pick)| mutation.apply(corpus[i], corpus[pick % count], pick))
            .collect();
        lines.join("\n")
    })
}

/// Any bytes, read as the parsers' callers read files (invalid UTF-8 replaced).
fn random_bytes() -> impl Strategy<Value = String> {
    vec(any::<u8>(), 0..4096).prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Noise made of the characters the three syntaxes give meaning to.
fn syntax_noise() -> impl Strategy<Value = String> {
    let alphabet: Vec<char> = " \t\r\n=[]{}()\"'#\\-.,:;|*+?^$/0123456789abxyzGKM_\u{0}é"
        .chars()
        .collect();
    vec(select(alphabet), 0..600).prop_map(|chars| chars.into_iter().collect())
}

/// Runs one parser on one input: it returned, and in time.
fn survives(input: &str, parse: impl Fn(&str) -> bool) -> Result<(), TestCaseError> {
    let started = Instant::now();
    let _accepted = parse(input);
    let took = started.elapsed();
    prop_assert!(took < HANG_GUARD, "took {took:?} on {input:?}");
    Ok(())
}

fn spec(text: &str) -> bool {
    eqcheck::fixtures::spec::parse("hostile.tree", "hostile", text).is_ok()
}

fn flag_sets(text: &str) -> bool {
    eqcheck::flagset::parse("hostile.sets", text).is_ok()
}

fn dump(text: &str) -> bool {
    let root = Path::new("/hostile/root");
    eqcheck::probe::lister::read(text.as_bytes(), root).is_ok()
}

fn project(text: &str) -> bool {
    eqcheck::settings::file::parse(Path::new("eqcheck.toml"), text).is_ok()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn tree_specs_survive_random_bytes(text in random_bytes()) {
        survives(&text, spec)?;
    }

    #[test]
    fn tree_specs_survive_syntax_noise(text in syntax_noise()) {
        survives(&text, spec)?;
    }

    #[test]
    fn tree_specs_survive_near_valid_lines(text in near_valid(spec_lines())) {
        survives(&text, spec)?;
    }

    #[test]
    fn flag_set_files_survive_random_bytes(text in random_bytes()) {
        survives(&text, flag_sets)?;
    }

    #[test]
    fn flag_set_files_survive_syntax_noise(text in syntax_noise()) {
        survives(&text, flag_sets)?;
    }

    #[test]
    fn flag_set_files_survive_near_valid_lines(text in near_valid(flag_set_lines())) {
        survives(&text, flag_sets)?;
    }

    #[test]
    fn configs_survive_random_bytes(text in random_bytes()) {
        survives(&text, project)?;
    }

    #[test]
    fn configs_survive_syntax_noise(text in syntax_noise()) {
        survives(&text, project)?;
    }

    #[test]
    fn configs_survive_near_valid_lines(text in near_valid(toml_lines())) {
        survives(&text, project)?;
    }

    #[test]
    fn lister_dumps_survive_random_bytes(text in random_bytes()) {
        survives(&text, dump)?;
    }

    #[test]
    fn lister_dumps_survive_syntax_noise(text in syntax_noise()) {
        survives(&text, dump)?;
    }

    #[test]
    fn lister_dumps_survive_near_valid_lines(text in near_valid(dump_lines())) {
        survives(&text, dump)?;
    }
}

#[test]
fn near_valid_documents_keep_most_of_their_lines_parsable() {
    // The corpus and mutations are worth something only if the parsers accept
    // the untouched lines: a document of kept lines alone parses.
    assert!(
        spec(&spec_lines()[..12].join("\n")),
        "{:?}",
        &spec_lines()[..12]
    );
    assert!(project(&toml_lines().join("\n")));
    assert!(flag_sets(include_str!("../flagsets/walk.sets")));
    assert!(dump(&dump_lines().join("\n")));
    assert_eq!(
        huge_numbers("size=12 count=3", "1e300"),
        "size=1e300 count=1e300"
    );
    assert_eq!(Mutation::Truncate.apply("abc", "", 2), "ab");
}

/// Runs eqcheck in `cwd`, failing the test when it is still running after
/// [`FILE_GUARD`] (a read of a FIFO waits for a writer that never comes).
#[cfg(unix)]
fn run_guarded(cwd: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(crate::util::eqcheck())
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > FILE_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} was still reading after {FILE_GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How long eqcheck may take to refuse a file that is not a regular one.
#[cfg(unix)]
const FILE_GUARD: Duration = Duration::from_secs(10);

#[cfg(unix)]
#[test]
fn a_config_flag_set_file_or_report_that_is_not_a_regular_file_is_refused() {
    let dir = crate::util::temp_dir();
    let fifo = |name: &str| {
        let made = crate::util::Cmd::new("mkfifo")
            .arg(dir.path().join(name))
            .output();
        crate::util::assert_exit(&made, 0);
    };
    fifo("eqcheck.toml");
    fifo("pipe.sets");
    // The null device reads as empty: read, it would pass for an empty file,
    // where `/dev/zero` would fill memory until the guard ends the test.
    let cases: [(&[&str], &str); 5] = [
        (
            &[],
            "cannot read eqcheck.toml: not a regular file, but a FIFO",
        ),
        (
            &["--config", "/dev/null", "--sets", "nosuchgroup"],
            "not a regular file, but a device",
        ),
        (
            &["--no-config", "--sets", "./pipe.sets"],
            "not a regular file, but a FIFO",
        ),
        (
            &["--no-config", "--flagsets", "/dev/null"],
            "not a regular file, but a device",
        ),
        (&["merge", "/dev/null"], "not a regular file, but a device"),
    ];
    for (args, expected) in cases {
        let (code, said) = run_guarded(dir.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {said}");
        assert!(
            said.contains(expected),
            "{args:?}: expected {expected:?}: {said}"
        );
    }
}
