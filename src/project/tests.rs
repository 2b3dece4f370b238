//! Tests of eqcheck.toml: reading, errors at their place, paths, and merging.

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

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn every_key_is_read() {
    let text = r#"
reference = "old-du -x"
candidate = "new-du -x"
flagsets = "walk"
sets = "sizes,depth"
trees = ["basic", "edge"]
timeout = 30
runs = 2
jobs = 4
guard = "content"
as_user = 1000
[env]
RUST_BACKTRACE = "0"
BLOCK_SIZE = "1K"
"#;
    let expected = Layer {
        reference: Some("old-du -x".into()),
        candidate: Some("new-du -x".into()),
        flagsets: Some("walk".into()),
        sets: Some("sizes,depth".into()),
        trees: strings(&["basic", "edge"]),
        timeout: Some(Duration::from_secs(30)),
        runs: Some(2),
        jobs: Some(4),
        guard: Some("content".into()),
        as_user: Some("1000".into()),
        env: vec![
            ("BLOCK_SIZE".into(), "1K".into()),
            ("RUST_BACKTRACE".into(), "0".into()),
        ],
    };
    assert_eq!(parsed("eqcheck.toml", text), expected);
    assert_eq!(parsed("eqcheck.toml", ""), Layer::default());
    let fraction = parsed("eqcheck.toml", "timeout = 0.25\nas_user = \"nobody\"");
    assert_eq!(fraction.timeout, Some(Duration::from_millis(250)));
    assert_eq!(fraction.as_user.as_deref(), Some("nobody"));
}

#[test]
fn mistakes_are_reported_at_their_line_and_column() {
    let cases = [
        (
            "sets = \"all\"\n\nruns = \"two\"\n",
            "eqcheck.toml:3:8: invalid type: string \"two\", expected a whole number",
        ),
        ("runs = 0", "eqcheck.toml:1:8: `runs` must be at least 1"),
        ("\njobs = 0", "eqcheck.toml:2:8: `jobs` must be at least 1"),
        (
            "timeout = 0",
            "eqcheck.toml:1:11: `timeout` must be seconds more than 0, not 0",
        ),
        (
            "timeout = nan",
            "eqcheck.toml:1:11: `timeout` must be seconds more than 0, not NaN",
        ),
        (
            "timeout = \"1m\"",
            "eqcheck.toml:1:11: invalid type: string \"1m\", expected a number",
        ),
        (
            "trees = \"basic\"",
            "eqcheck.toml:1:9: invalid type: string \"basic\", expected a sequence",
        ),
        (
            "guard = \"full\"",
            "eqcheck.toml:1:9: guard `full`: expected metadata, content or off",
        ),
        #[cfg(unix)]
        (
            "\nas_user = \"no-such-user-here\"",
            "eqcheck.toml:2:11: as_user `no-such-user-here`: no such user",
        ),
        (
            "as_user = -1",
            "eqcheck.toml:1:11: `as_user` must be a user name or a uid",
        ),
        (
            "reference = \"old 'du\"",
            "eqcheck.toml:1:13: cannot split `old 'du`: missing closing quote",
        ),
        (
            "candidate = \"  \"",
            "eqcheck.toml:1:13: the command is empty",
        ),
        (
            "[env]\nX = 1",
            "eqcheck.toml:2:5: invalid type: integer `1`, expected a string",
        ),
        // Columns count characters: `é` is two bytes.
        (
            "env = { \"é\" = \"x\", \"A=B\" = \"y\" }",
            "eqcheck.toml:1:20: env `A=B`: a name must be non-empty, without `=` or NUL",
        ),
        ("runs = [", "eqcheck.toml:1:9: unclosed array, expected `]`"),
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
    for key in ["as_user", "env", "flagsets", "guard", "timeout", "trees"] {
        assert!(message.contains(&format!("`{key}`")), "{message}");
    }
}

#[test]
fn paths_start_at_the_config_folder() {
    let text = r#"
reference = "bin/old -x {tree}"
candidate = "new-du -x"
flagsets = "ci/du.sets"
trees = ["basic", "web", "./edge", "/srv/tree"]
"#;
    let layer = parsed("proj/eqcheck.toml", text);
    let reference = shell_words::split(layer.reference.as_deref().unwrap()).unwrap();
    assert_eq!(reference, strings(&["proj/bin/old", "-x", "{tree}"]));
    // A bare program name is looked up on PATH, not in the folder.
    assert_eq!(layer.candidate.as_deref(), Some("new-du -x"));
    assert_eq!(layer.flagsets.as_deref(), Some("proj/ci/du.sets"));
    // A built-in name stays a name; `./edge` is the folder, not the built-in tree.
    let trees = strings(&["basic", "proj/web", "proj/edge", "/srv/tree"]);
    assert_eq!(layer.trees, trees);
    let builtin = parsed("proj/eqcheck.toml", "flagsets = \"walk\"");
    assert_eq!(builtin.flagsets.as_deref(), Some("walk"));
}

#[test]
fn a_config_in_the_working_folder_keeps_paths_as_written() {
    let text = "reference = \"./bin/old -x\"\ntrees = [\"./edge\", \"web\"]\n";
    let layer = parsed("eqcheck.toml", text);
    assert_eq!(layer.reference.as_deref(), Some("./bin/old -x"));
    assert_eq!(layer.trees, strings(&["./edge", "web"]));
}

#[test]
fn a_flag_set_file_given_as_sets_is_the_flag_set_file() {
    let layer = parsed("proj/eqcheck.toml", "sets = \"mine.sets\"");
    assert_eq!(layer.flagsets.as_deref(), Some("proj/mine.sets"));
    assert_eq!(layer.sets, None);
    let message = error("eqcheck.toml", "flagsets = \"walk\"\nsets = \"mine.sets\"");
    let start = "eqcheck.toml:2:8: `sets` names a flag-set file and so does `flagsets`";
    assert!(message.starts_with(start), "{message}");
}

fn file(text: &str) -> ProjectFile {
    parse(Path::new("eqcheck.toml"), text).unwrap_or_else(|e| panic!("{e}"))
}

const BOTH_ARMS: &str = r#"
reference = "old -x"
candidate = "new -x"
sets = "sizes"
trees = ["basic", "web"]
timeout = 5
runs = 2
guard = "off"
env = { X = "1" }
"#;

#[test]
fn the_command_line_wins_key_by_key_and_replaces_the_tree_list() {
    let given = Layer {
        sets: Some("depth".into()),
        trees: strings(&["edge"]),
        runs: Some(3),
        ..Layer::default()
    };
    let merged = merge_unchecked(given, &file(BOTH_ARMS), false, false).unwrap();
    assert_eq!(merged.sets.as_deref(), Some("depth"));
    assert_eq!(merged.trees, strings(&["edge"]));
    assert_eq!(merged.runs, Some(3));
    assert_eq!(merged.timeout, Some(Duration::from_secs(5)));
    assert_eq!(merged.guard.as_deref(), Some("off"));
    assert_eq!(merged.env, vec![("X".into(), "1".into())]);
    assert_eq!(merged.reference.as_deref(), Some("old -x"));
    let from_file = merge_unchecked(Layer::default(), &file(BOTH_ARMS), false, false).unwrap();
    assert_eq!(from_file.trees, strings(&["basic", "web"]));
    let alone = merge(Layer::default(), None, false, false).unwrap();
    assert_eq!(alone, Layer::default());
}

#[test]
fn one_arm_on_the_command_line_replaces_only_that_arm() {
    let given = Layer {
        candidate: Some("newer -x".into()),
        ..Layer::default()
    };
    let merged = merge_unchecked(given, &file(BOTH_ARMS), false, false).unwrap();
    assert_eq!(merged.reference.as_deref(), Some("old -x"));
    assert_eq!(merged.candidate.as_deref(), Some("newer -x"));
    // Under --self-check the reference runs against itself.
    let checked = merge_unchecked(Layer::default(), &file(BOTH_ARMS), true, false).unwrap();
    assert_eq!(checked.reference.as_deref(), Some("old -x"));
    assert_eq!(checked.candidate, None);
}

#[test]
fn a_file_with_one_arm_needs_the_other() {
    let half = file("reference = \"old\"");
    let message = merge_unchecked(Layer::default(), &half, false, false)
        .unwrap_err()
        .to_string();
    let expected =
        "eqcheck.toml: gives `reference` but no `candidate`: add `candidate`, or give --cand";
    assert_eq!(message, expected);
    let given = Layer {
        candidate: Some("new".into()),
        ..Layer::default()
    };
    let merged = merge_unchecked(given, &half, false, false).unwrap();
    assert_eq!(merged.reference.as_deref(), Some("old"));
}

#[test]
fn a_flag_set_file_on_the_command_line_replaces_the_files_choice() {
    let ours = file("flagsets = \"ci/du.sets\"\nsets = \"sizes\"");
    let groups = Layer {
        sets: Some("depth".into()),
        ..Layer::default()
    };
    let merged = merge_unchecked(groups, &ours, false, false).unwrap();
    assert_eq!(merged.flagsets.as_deref(), Some("ci/du.sets"));
    assert_eq!(merged.sets.as_deref(), Some("depth"));
    let sets_file = Layer {
        sets: Some("other.sets".into()),
        ..Layer::default()
    };
    let merged = merge_unchecked(sets_file, &ours, false, false).unwrap();
    assert_eq!(merged.flagsets, None);
    assert_eq!(merged.sets.as_deref(), Some("other.sets"));
    let named = Layer {
        flagsets: Some("walk".into()),
        ..Layer::default()
    };
    let merged = merge_unchecked(named, &ours, false, false).unwrap();
    assert_eq!(merged.flagsets.as_deref(), Some("walk"));
    assert_eq!(merged.sets, None);
}

#[test]
fn the_files_user_is_left_out_under_as_root_and_when_not_root() {
    let ours = file("as_user = \"nobody\"");
    let merged = merge_unchecked(Layer::default(), &ours, false, true).unwrap();
    assert_eq!(merged.as_user, None);
    let expected = running_as_root().then(|| "nobody".to_string());
    let merged = merge_unchecked(Layer::default(), &ours, false, false).unwrap();
    assert_eq!(merged.as_user, expected);
}

#[test]
fn defaults_fill_only_what_no_layer_gave() {
    let request = Layer::default().into_request();
    assert_eq!(request.sets, DEFAULT_SETS);
    assert_eq!(request.timeout, DEFAULT_TIMEOUT);
    assert_eq!(request.guard, DEFAULT_GUARD);
    let request = file(BOTH_ARMS).options.into_request();
    assert_eq!(request.sets, "sizes");
    assert_eq!(request.timeout, Duration::from_secs(5));
    assert_eq!(request.guard, "off");
    assert_eq!(request.env, vec![("X".to_string(), "1".to_string())]);
}

#[test]
fn a_missing_file_is_an_error_only_when_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join(FILE_NAME);
    let message = find(Some(&missing), false).unwrap_err().to_string();
    assert!(message.starts_with("cannot read "), "{message}");
    assert!(find(Some(&missing), true).unwrap().is_none());
}
