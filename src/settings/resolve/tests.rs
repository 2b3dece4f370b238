//! Tests of resolving: every value checked once, each mistake at its place.

use std::path::{Path, PathBuf};

use super::flag_sets::named_after;
use super::*;
use crate::settings::file::parse;
use crate::settings::Place;

fn file(path: &str, text: &str) -> Layer {
    parse(Path::new(path), text)
        .unwrap_or_else(|e| panic!("{e}"))
        .options
}

fn error(options: &Layer) -> String {
    match resolve(options, &RunExtras::default()) {
        Ok(matrix) => panic!("resolved: {matrix:?}"),
        Err(err) => err.to_string(),
    }
}

/// A config with working arms (this test binary's own file, by absolute path) and
/// a built-in tree, and `line` first.
fn config_with(line: &str) -> Layer {
    let exe = std::env::current_exe().unwrap();
    let exe = shell_words::quote(&exe.to_string_lossy()).into_owned();
    let text = format!("{line}\nreference = {exe:?}\ncandidate = {exe:?}\ntrees = [\"basic\"]\n");
    file("eqcheck.toml", &text)
}

#[test]
fn flag_sets_are_found_by_the_programs_name() {
    assert_eq!(named_after("dust"), Some("dust"));
    assert_eq!(named_after("dust-1.2.7"), Some("dust"));
    assert_eq!(named_after("du_old"), Some("du"));
    assert_eq!(named_after("bfs"), Some("find"));
    assert_eq!(named_after("bfs-next"), Some("find"));
    assert_eq!(named_after("dusty"), None);
    assert_eq!(named_after("fd"), None);
    assert_eq!(named_after("eqcheck-double"), None);
    assert_eq!(named_after("new.dust"), Some("dust"));
    assert_eq!(named_after("du-dust"), None, "two names: neither is sure");
}

#[test]
fn a_files_values_are_checked_at_their_place() {
    let cases = [
        ("runs = 0", "eqcheck.toml:1:8: runs: must be from 1 to 1000, not 0"),
        ("runs = 1001", "eqcheck.toml:1:8: runs: must be from 1 to 1000, not 1001"),
        ("jobs = 0", "eqcheck.toml:1:8: jobs: must be from 1 to "),
        ("jobs = 100000", "eqcheck.toml:1:8: jobs: must be from 1 to "),
        (
            "timeout = 0",
            "eqcheck.toml:1:11: timeout: must be seconds more than 0 and at most 86400, not 0",
        ),
        (
            "timeout = nan",
            "eqcheck.toml:1:11: timeout: must be seconds more than 0 and at most 86400, not NaN",
        ),
        (
            "timeout = 1e19",
            "eqcheck.toml:1:11: timeout: must be seconds more than 0 and at most 86400, not 1e19",
        ),
        (
            "sets = \"depth,nosuch\"",
            "eqcheck.toml:1:8: sets: flagsets/walk.sets: no group `nosuch` (groups: ",
        ),
        (
            "flagsets = \"dusst\"",
            "eqcheck.toml:1:12: flagsets: `dusst`: no such file, and no built-in flag sets of that name (walk, dust, du, find)",
        ),
        ("argv0 = \"\"", "eqcheck.toml:1:9: argv0: `argv0` names the program: it is empty"),
        (
            "env = { \"é\" = \"x\", \"A=B\" = \"y\" }",
            "eqcheck.toml:1:20: env: `A=B`: a name must be non-empty, without `=` or NUL",
        ),
    ];
    for (line, expected) in cases {
        let message = error(&config_with(line));
        assert!(
            message.starts_with(expected),
            "{line}\n{message}\nexpected {expected}"
        );
    }
}

#[test]
fn an_arm_is_checked_where_it_was_written() {
    let cases = [
        (
            "reference = \"old 'du\"",
            "eqcheck.toml:1:13: reference: cannot split `old 'du`: missing closing quote",
        ),
        (
            "candidate = \"  \"",
            "eqcheck.toml:1:13: candidate: the command is empty",
        ),
        (
            "candidate = \"no-such-walker-here\"",
            "eqcheck.toml:1:13: candidate: program `no-such-walker-here` not found on PATH",
        ),
    ];
    for (line, expected) in cases {
        // The other arm works: `true` is on PATH.
        let other = match line.starts_with("reference") {
            true => "candidate = \"true\"",
            false => "reference = \"true\"",
        };
        let text = format!("{line}\n{other}\n");
        assert_eq!(error(&file("eqcheck.toml", &text)), expected);
    }
    // A config's relative program path starts at its folder, and is named so.
    let nested = file(
        "proj/eqcheck.toml",
        "reference = \"bin/nope\"\ncandidate = \"true\"",
    );
    let expected = "proj/eqcheck.toml:1:13: reference: program `proj/bin/nope` does not exist (or is not a file)";
    assert_eq!(error(&nested), expected);
    let given = Layer {
        reference: Some(Given::flag("--ref", "bin/nope".into())),
        candidate: Some(Given::flag("--cand", "true".into())),
        ..Layer::default()
    };
    let expected = "--ref: program `bin/nope` does not exist (or is not a file)";
    assert_eq!(error(&given), expected);
}

#[test]
fn one_arm_alone_is_said_where_it_came_from() {
    let half = file("eqcheck.toml", "reference = \"true\"");
    let expected =
        "eqcheck.toml: gives `reference` but no `candidate`: add `candidate`, or give --cand";
    assert_eq!(error(&half), expected);
    let given = Layer {
        candidate: Some(Given::flag("--cand", "true".into())),
        ..Layer::default()
    };
    let expected = "--cand gives the candidate arm, but nothing gives the reference: add --ref (or `reference` in eqcheck.toml)";
    assert!(error(&given).starts_with(expected), "{}", error(&given));
    let self_check = RunExtras {
        mode: RunMode {
            self_check: true,
            as_root: false,
        },
        ..RunExtras::default()
    };
    let both = config_with("");
    let err = resolve(&both, &self_check).unwrap_err().to_string();
    assert!(
        err.starts_with("--self-check runs the reference against itself"),
        "{err}"
    );
}

#[test]
fn arms_run_under_their_programs_file_name_unless_told() {
    let matrix = resolve(&config_with(""), &RunExtras::default()).unwrap();
    let name = crate::matrix::arm::file_name(&std::env::current_exe().unwrap().to_string_lossy());
    assert_eq!(matrix.reference.argv0, name);
    assert_eq!(matrix.candidate.argv0, name);
    assert!(Path::new(&matrix.reference.command[0]).is_absolute());
    let named = resolve(&config_with("argv0 = \"du\""), &RunExtras::default()).unwrap();
    assert_eq!(
        (
            named.reference.argv0.as_str(),
            named.candidate.argv0.as_str()
        ),
        ("du", "du")
    );
    let mut on_the_command_line = config_with("argv0 = \"du\"");
    on_the_command_line.argv0 = Some(Given::flag("--argv0", "dust".into()));
    let named = resolve(&on_the_command_line, &RunExtras::default()).unwrap();
    assert_eq!(named.candidate.argv0, "dust");
}

#[test]
fn a_tree_from_a_config_starts_at_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proj/web")).unwrap();
    let config = dir.path().join("proj/eqcheck.toml");
    let given = Given {
        value: "web".to_string(),
        origin: Origin::File(Place {
            file: PathBuf::from(&config),
            line: 1,
            column: 1,
            key: "trees",
        }),
    };
    let TreeSource::Existing { name, path } = tree(&given).unwrap() else {
        panic!("a folder");
    };
    assert_eq!(name, dir.path().join("proj/web").to_string_lossy());
    assert!(path.ends_with("proj/web"), "{}", path.display());
    let missing = Given::flag("--tree", "nosuchtree".to_string());
    let message = tree(&missing).err().unwrap().to_string();
    assert!(
        message.starts_with("--tree: unknown tree `nosuchtree` (known: "),
        "{message}"
    );
    // A path that names nothing is said to be one, not an unknown tree's name.
    let gone = dir.path().join("gone").to_string_lossy().into_owned();
    let message = tree(&Given::flag("--tree", gone.clone()))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        message,
        format!("--tree: `{gone}`: no such folder or file; a tree is a folder, a .tree file or one of basic, edge, nm, wide, deep, huge")
    );
}

#[test]
fn a_flag_set_files_argv0_names_both_arms_unless_the_options_do() {
    let dir = tempfile::tempdir().unwrap();
    let sets = dir.path().join("named.sets");
    std::fs::write(&sets, "argv0 = dust\n[only]\n-a\n").unwrap();
    let mut options = config_with("");
    options.flagsets = Some(Given::flag(
        "--flagsets",
        sets.to_string_lossy().into_owned(),
    ));
    let matrix = resolve(&options, &RunExtras::default()).unwrap();
    assert_eq!(
        (
            matrix.reference.argv0.as_str(),
            matrix.candidate.argv0.as_str()
        ),
        ("dust", "dust")
    );
    options.argv0 = Some(Given::flag("--argv0", "du".into()));
    let matrix = resolve(&options, &RunExtras::default()).unwrap();
    assert_eq!(matrix.reference.argv0, "du");
}

#[test]
fn two_flag_set_files_are_refused_and_a_configs_builtin_name_stays_a_name() {
    let mut options = config_with("");
    options.flagsets = Some(Given::flag("--flagsets", "walk".into()));
    options.sets = Some(Given::flag("--sets", "nosuch.sets".into()));
    let expected = "--sets: names a flag-set file, and so does --flagsets: keep one";
    assert!(error(&options).starts_with(expected), "{}", error(&options));
    // A file named `walk` beside the config does not hide the built-in sets.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("walk"), "[mine]\n-a\n").unwrap();
    let config = dir.path().join("eqcheck.toml");
    let exe = std::env::current_exe().unwrap();
    let exe = shell_words::quote(&exe.to_string_lossy()).into_owned();
    let text = format!("flagsets = \"walk\"\nreference = {exe:?}\ncandidate = {exe:?}\n");
    let options = file(&config.to_string_lossy(), &text);
    let matrix = resolve(&options, &RunExtras::default()).unwrap();
    assert_eq!(matrix.flag_sets.file, "flagsets/walk.sets");
}

#[test]
fn arms_of_different_program_names_are_warned_of_unless_one_name_is_set() {
    let mut options = Layer {
        reference: Some(Given::flag("--ref", "true".into())),
        candidate: Some(Given::flag("--cand", "false".into())),
        trees: vec![Given::flag("--tree", "basic".into())],
        ..Layer::default()
    };
    let matrix = resolve(&options, &RunExtras::default()).unwrap();
    let warned = matrix
        .warnings
        .iter()
        .any(|w| w.starts_with("the arms run as `true` and `false`"));
    assert!(warned, "{:?}", matrix.warnings);
    options.argv0 = Some(Given::flag("--argv0", "walker".into()));
    let matrix = resolve(&options, &RunExtras::default()).unwrap();
    assert!(
        !matrix
            .warnings
            .iter()
            .any(|w| w.contains("the arms run as")),
        "{:?}",
        matrix.warnings
    );
}

#[test]
fn a_build_from_a_revision_is_checked_where_it_was_written() {
    let with_rev = |text: &str| {
        let mut options = file("eqcheck.toml", text);
        options.ref_rev = Some(Given::flag("--ref-rev", "main".into()));
        options
    };
    let cases = [
        (
            "[build]\nprogram = \"/abs/w\"",
            "eqcheck.toml:2:11: build.program: `/abs/w`: give the built file's path from the repository's top",
        ),
        (
            "[build]\nprogram = \"out/../../w\"",
            "eqcheck.toml:2:11: build.program: `out/../../w`: give the built file's path",
        ),
        ("[build]\nprogram = \"  \"", "eqcheck.toml:2:11: build.program: the program is empty"),
        (
            "[build]\ncommand = \"\"\nprogram = \"w\"",
            "eqcheck.toml:2:11: build.command: the command is empty",
        ),
        ("", "--ref-rev: needs `program` in the `[build]` table"),
    ];
    for (text, expected) in cases {
        let message = error(&with_rev(text));
        assert!(
            message.starts_with(expected),
            "{text}\n{message}\nexpected {expected}"
        );
    }
    let mut dash = with_rev("[build]\nprogram = \"w\"");
    dash.ref_rev = Some(Given::flag("--ref-rev", "-x".into()));
    assert_eq!(
        error(&dash),
        "--ref-rev: `-x`: a revision does not start with `-`"
    );

    // Built from the working tree too, with the default command; `./` dropped.
    let matrix = resolve(
        &with_rev("[build]\nprogram = \"./out/w -x\""),
        &RunExtras::default(),
    )
    .unwrap();
    let plan = matrix.build.expect("a build");
    assert_eq!(plan.command, ["cargo", "build", "--release"]);
    assert_eq!(plan.program.as_deref(), Some("out/w"));
    assert_eq!(plan.candidate, crate::build::CandidateBuild::WorkingTree);
    assert_eq!(matrix.reference.command, ["out/w", "-x"]);
    assert_eq!(matrix.candidate.command, ["out/w", "-x"]);
    assert_eq!(matrix.reference.argv0, "w");
}
