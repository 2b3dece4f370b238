//! Tests of reading eqcheck.toml: every key with its place, and what TOML and the
//! keys' types refuse, at its line and column.

use super::*;

fn parsed(path: &str, text: &str) -> Layer {
    parse(Path::new(path), text)
        .unwrap_or_else(|e| panic!("{e}"))
        .options
}

fn error(path: &str, text: &str) -> String {
    match parse(Path::new(path), text) {
        Ok(file) => panic!("parsed: {file:?}"),
        Err(e) => e.to_string(),
    }
}

/// `value` as written at `line:column` of `eqcheck.toml` under `key`.
fn at<T>(line: usize, column: usize, key: &'static str, value: T) -> Given<T> {
    Given {
        value,
        origin: Origin::File(Place {
            file: PathBuf::from("eqcheck.toml"),
            line,
            column,
            key,
        }),
    }
}

#[test]
fn every_key_is_read_with_its_place() {
    let text = r#"reference = "old-du -x"
candidate = "new-du -x"
flagsets = "walk"
sets = "sizes,depth"
trees = ["basic", "edge"]
timeout = 30
runs = 2
jobs = 4
guard = "content"
as_user = 1000
argv0 = "du"
ref_runner = "qemu-x86_64"
cand_runner = "qemu-aarch64 -L /sysroot"
same_runner = false
max_output = "4G"
fs = ["native", "ext4"]
[env]
RUST_BACKTRACE = "0"
BLOCK_SIZE = "1K"
[build]
command = "sh build.sh"
program = "out/walker -x"
"#;
    let expected = Layer {
        reference: Some(at(1, 13, "reference", "old-du -x".into())),
        candidate: Some(at(2, 13, "candidate", "new-du -x".into())),
        flagsets: Some(at(3, 12, "flagsets", "walk".into())),
        sets: Some(at(4, 8, "sets", "sizes,depth".into())),
        trees: vec![
            at(5, 10, "trees", "basic".into()),
            at(5, 19, "trees", "edge".into()),
        ],
        timeout: Some(at(6, 11, "timeout", 30.0)),
        runs: Some(at(7, 8, "runs", 2)),
        jobs: Some(at(8, 8, "jobs", 4)),
        guard: Some(at(9, 9, "guard", Guard::Content)),
        as_user: Some(at(10, 11, "as_user", "1000".into())),
        argv0: Some(at(11, 9, "argv0", "du".into())),
        ref_runner: Some(at(12, 14, "ref_runner", "qemu-x86_64".into())),
        cand_runner: Some(at(13, 15, "cand_runner", "qemu-aarch64 -L /sysroot".into())),
        same_runner: Some(at(14, 15, "same_runner", false)),
        max_output: Some(at(15, 14, "max_output", "4G".into())),
        fs: vec![
            at(16, 7, "fs", "native".into()),
            at(16, 17, "fs", "ext4".into()),
        ],
        env: vec![
            (at(19, 1, "env", "BLOCK_SIZE".into()), "1K".into()),
            (at(18, 1, "env", "RUST_BACKTRACE".into()), "0".into()),
        ],
        ref_rev: None,
        build_command: Some(at(21, 11, "build.command", "sh build.sh".into())),
        build_program: Some(at(22, 11, "build.program", "out/walker -x".into())),
    };
    assert_eq!(parsed("eqcheck.toml", text), expected);
    assert_eq!(parsed("eqcheck.toml", ""), Layer::default());
    let fraction = parsed("eqcheck.toml", "timeout = 0.25\nas_user = \"nobody\"");
    assert_eq!(fraction.timeout.map(|t| t.value), Some(0.25));
    assert_eq!(fraction.as_user.map(|u| u.value).as_deref(), Some("nobody"));
}

#[test]
fn what_toml_and_the_types_refuse_is_reported_at_its_line_and_column() {
    let cases = [
        (
            "sets = \"all\"\n\nruns = \"two\"\n",
            "eqcheck.toml:3:8: runs: invalid type: string \"two\", expected a whole number",
        ),
        (
            "timeout = \"1m\"",
            "eqcheck.toml:1:11: timeout: invalid type: string \"1m\", expected a number",
        ),
        (
            "trees = \"basic\"",
            "eqcheck.toml:1:9: trees: invalid type: string \"basic\", expected a sequence",
        ),
        (
            "guard = \"full\"",
            "eqcheck.toml:1:9: guard: unknown value `full`, expected one of `metadata`, `content`, `off`",
        ),
        (
            "as_user = -1",
            "eqcheck.toml:1:11: as_user: expected a user name or a uid (a whole number)",
        ),
        (
            "[env]\nX = 1",
            "eqcheck.toml:2:5: X: invalid type: integer `1`, expected a string",
        ),
        ("runs = [", "eqcheck.toml:1:9: runs: unclosed array, expected `]`"),
        (
            "runs = 2\n[env]\nA = \"1\"\n A = \"2\"",
            "eqcheck.toml:4:2: `A` is given twice; give it once",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error("eqcheck.toml", text), expected, "{text}");
    }
}

#[test]
fn an_unknown_key_is_named_with_the_known_keys() {
    let message = error("ci/eqcheck.toml", "runs = 1\ncolour = \"red\"\n");
    let start = "ci/eqcheck.toml:2:1: unknown key `colour`; known keys: `reference`,";
    assert!(message.starts_with(start), "{message}");
    for key in [
        "argv0", "as_user", "env", "flagsets", "guard", "timeout", "trees",
    ] {
        assert!(message.contains(&format!("`{key}`")), "{message}");
    }
}

#[test]
fn a_flag_set_file_given_as_sets_is_the_flag_set_file() {
    let layer = parsed("proj/eqcheck.toml", "sets = \"mine.sets\"");
    let flagsets = layer.flagsets.expect("sets named the flag-set file");
    assert_eq!(flagsets.value, "mine.sets");
    assert_eq!(flagsets.origin.path(&flagsets.value), "proj/mine.sets");
    assert!(matches!(&flagsets.origin, Origin::File(place) if place.key == "sets"));
    assert_eq!(layer.sets, None);
    let message = error("eqcheck.toml", "flagsets = \"walk\"\nsets = \"mine.sets\"");
    let start = "eqcheck.toml:2:8: sets: names a flag-set file, and so does `flagsets`";
    assert!(message.starts_with(start), "{message}");
}

#[test]
fn a_missing_file_is_an_error_only_when_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join(FILE_NAME);
    let message = find(Some(&missing), false).unwrap_err().to_string();
    assert!(message.starts_with("cannot read "), "{message}");
    assert!(find(Some(&missing), true).unwrap().is_none());
    let cwd_missing = find(None, false);
    assert!(cwd_missing.is_ok(), "{cwd_missing:?}");
}
