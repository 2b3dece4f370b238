//! The built-in flag-set files' rules, each run on the output it exists for: text
//! in the shapes those programs really print (after the tree root became `{tree}`,
//! which happens before any rule). A change to how rules match, or to a rule's
//! pattern, that stops one firing where it did shows here, and every built-in rule
//! needs a sample, so a new rule cannot go unchecked.

use super::{builtin, builtin_names};
use crate::normalize::Rule;
use crate::outcome::Stream;

/// One stream's text as a program prints it, and what one rule makes of it.
struct Sample {
    /// The built-in flag-set file and the rule in it.
    file: &'static str,
    rule: &'static str,
    /// A group whose sets print this text, on this stream.
    group: &'static str,
    stream: Stream,
    text: &'static str,
    normalized: &'static str,
    /// How many times the rule fires on the text.
    times: usize,
}

/// dust's stderr after a walk that met all three kinds of error: each list on a
/// line of its own, in that order, items in hash order.
const DUST_THREE_LISTS: &str = "\
No such file or directory: {tree}/z, {tree}/y
Did not have permissions for directories: {tree}/locked, {tree}/a/locked
Unknown Error: Too many levels of symbolic links (os error 40), Not a directory (os error 20)
";

const SAMPLES: &[Sample] = &[
    Sample {
        file: "dust",
        rule: "missing-list",
        group: "basic",
        stream: Stream::Stderr,
        text: "No such file or directory: {tree}/gone, {tree}/also gone\n",
        normalized: "No such file or directory: {tree}/also gone, {tree}/gone\n",
        times: 1,
    },
    Sample {
        file: "dust",
        rule: "missing-list",
        group: "errors",
        stream: Stream::Stderr,
        text: DUST_THREE_LISTS,
        normalized: "\
No such file or directory: {tree}/y, {tree}/z
Did not have permissions for directories: {tree}/locked, {tree}/a/locked
Unknown Error: Too many levels of symbolic links (os error 40), Not a directory (os error 20)
",
        times: 1,
    },
    Sample {
        file: "dust",
        rule: "permission-list",
        group: "errors",
        stream: Stream::Stderr,
        text: DUST_THREE_LISTS,
        normalized: "\
No such file or directory: {tree}/z, {tree}/y
Did not have permissions for directories: {tree}/a/locked, {tree}/locked
Unknown Error: Too many levels of symbolic links (os error 40), Not a directory (os error 20)
",
        times: 1,
    },
    Sample {
        file: "dust",
        rule: "permission-list",
        group: "every-line",
        stream: Stream::Stderr,
        text: "Did not have permissions for directories: {tree}/c, {tree}/a b, {tree}/b\n",
        normalized: "Did not have permissions for directories: {tree}/a b, {tree}/b, {tree}/c\n",
        times: 1,
    },
    Sample {
        file: "dust",
        rule: "unknown-error-list",
        group: "links",
        stream: Stream::Stderr,
        text: DUST_THREE_LISTS,
        normalized: "\
No such file or directory: {tree}/z, {tree}/y
Did not have permissions for directories: {tree}/locked, {tree}/a/locked
Unknown Error: Not a directory (os error 20), Too many levels of symbolic links (os error 40)
",
        times: 1,
    },
    Sample {
        file: "dust",
        rule: "panic-thread-id",
        group: "basic",
        stream: Stream::Stderr,
        text: "\
thread 'main' (48213) panicked at src/main.rs:245:47:
called `Option::unwrap()` on a `None` value
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
",
        normalized: "\
thread 'main' (<id>) panicked at src/main.rs:245:47:
called `Option::unwrap()` on a `None` value
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
",
        times: 1,
    },
    // Two of the walk's worker threads panicking, one after the other.
    Sample {
        file: "dust",
        rule: "panic-thread-id",
        group: "links",
        stream: Stream::Stderr,
        text: "\
thread '<unnamed>' (48215) panicked at src/dir_walker.rs:190:21:
Multiple Interrupted Errors occurred while scanning filesystem. Aborting
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
thread '<unnamed>' (48216) panicked at src/dir_walker.rs:190:21:
Multiple Interrupted Errors occurred while scanning filesystem. Aborting
",
        normalized: "\
thread '<unnamed>' (<id>) panicked at src/dir_walker.rs:190:21:
Multiple Interrupted Errors occurred while scanning filesystem. Aborting
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
thread '<unnamed>' (<id>) panicked at src/dir_walker.rs:190:21:
Multiple Interrupted Errors occurred while scanning filesystem. Aborting
",
        times: 2,
    },
    // `find {tree}` in the order it walked.
    Sample {
        file: "find",
        rule: "line-order",
        group: "types",
        stream: Stream::Stdout,
        text: "{tree}\n{tree}/src\n{tree}/src/main.rs\n{tree}/a\n{tree}/a/b.txt\n",
        normalized: "{tree}\n{tree}/a\n{tree}/a/b.txt\n{tree}/src\n{tree}/src/main.rs\n",
        times: 4,
    },
    Sample {
        file: "find",
        rule: "line-order",
        group: "printf",
        stream: Stream::Stdout,
        text: "\
4096 8 1311 3 d {tree}
4096 8 1320 2 d {tree}/src
12 8 1321 1 f {tree}/src/main.rs
4096 8 1312 2 d {tree}/a
",
        normalized: "\
12 8 1321 1 f {tree}/src/main.rs
4096 8 1311 3 d {tree}
4096 8 1312 2 d {tree}/a
4096 8 1320 2 d {tree}/src
",
        times: 4,
    },
];

fn builtin_rule(file: &str, name: &str) -> Rule {
    let parsed = builtin(file).unwrap_or_else(|| panic!("no built-in flag-set file `{file}`"));
    parsed
        .rules
        .into_iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{file}: no rule `{name}` for a sample to check"))
}

#[test]
fn every_builtin_rule_has_a_sample() {
    for file in builtin_names() {
        for rule in builtin(file).expect("a built-in file").rules {
            assert!(
                SAMPLES
                    .iter()
                    .any(|s| s.file == file && s.rule == rule.name),
                "{file}: rule `{}` has no sample text to fire on",
                rule.name
            );
        }
    }
}

#[test]
fn every_builtin_rule_fires_on_its_samples() {
    for (index, sample) in SAMPLES.iter().enumerate() {
        let context = format!("sample {index} ({} {})", sample.file, sample.rule);
        let rule = builtin_rule(sample.file, sample.rule);
        assert!(
            rule.applies(sample.group, sample.stream),
            "{context}: the rule is not in force for group `{}` on {:?}",
            sample.group,
            sample.stream
        );
        let (out, times) = rule.apply(sample.text.as_bytes());
        let out = String::from_utf8(out).expect("the samples are UTF-8");
        assert_eq!(out, sample.normalized, "{context}");
        assert_eq!(times, sample.times, "{context}");
        assert!(times > 0, "{context}: the rule never fired");
    }
}
