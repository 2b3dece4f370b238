//! Tests of merging the command line over eqcheck.toml, and of paths read from
//! where they were written.

use super::file::parse;
use super::*;

fn file(text: &str) -> Layer {
    parse(Path::new("eqcheck.toml"), text)
        .unwrap_or_else(|e| panic!("{e}"))
        .options
}

fn flag<T>(flag: &'static str, value: T) -> Option<Given<T>> {
    Some(Given::flag(flag, value))
}

fn value<T: Clone>(given: &Option<Given<T>>) -> Option<T> {
    given.as_ref().map(|g| g.value.clone())
}

const BOTH_ARMS: &str = r#"
reference = "old -x"
candidate = "new -x"
sets = "sizes"
trees = ["basic", "web"]
timeout = 5
runs = 2
guard = "off"
argv0 = "du"
env = { X = "1" }
"#;

const PLAIN: RunMode = RunMode {
    self_check: false,
    as_root: false,
};

#[test]
fn the_command_line_wins_key_by_key_and_replaces_the_tree_list() {
    let given = Layer {
        sets: flag("--sets", "depth".into()),
        trees: vec![Given::flag("--tree", "edge".into())],
        runs: flag("--runs", 3),
        ..Layer::default()
    };
    let merged = merge(given, file(BOTH_ARMS), PLAIN);
    assert_eq!(merged.sets, flag("--sets", "depth".into()));
    assert_eq!(merged.trees, vec![Given::flag("--tree", "edge".into())]);
    assert_eq!(merged.runs, flag("--runs", 3));
    assert_eq!(value(&merged.timeout), Some(5.0));
    assert_eq!(value(&merged.guard), Some(Guard::Off));
    assert_eq!(value(&merged.argv0).as_deref(), Some("du"));
    assert_eq!(merged.env.len(), 1);
    assert_eq!(value(&merged.reference).as_deref(), Some("old -x"));
    let from_file = merge(Layer::default(), file(BOTH_ARMS), PLAIN);
    let trees: Vec<&str> = from_file.trees.iter().map(|t| t.value.as_str()).collect();
    assert_eq!(trees, ["basic", "web"]);
    assert_eq!(
        merge(Layer::default(), Layer::default(), PLAIN),
        Layer::default()
    );
}

#[test]
fn one_arm_on_the_command_line_replaces_only_that_arm() {
    let given = Layer {
        candidate: flag("--cand", "newer -x".into()),
        ..Layer::default()
    };
    let merged = merge(given, file(BOTH_ARMS), PLAIN);
    assert_eq!(value(&merged.reference).as_deref(), Some("old -x"));
    assert_eq!(merged.candidate, flag("--cand", "newer -x".into()));
    // Under --self-check the reference runs against itself.
    let self_check = RunMode {
        self_check: true,
        ..PLAIN
    };
    let checked = merge(Layer::default(), file(BOTH_ARMS), self_check);
    assert_eq!(value(&checked.reference).as_deref(), Some("old -x"));
    assert_eq!(checked.candidate, None);
}

#[test]
fn a_flag_set_file_on_the_command_line_replaces_the_files_choice() {
    let ours = || file("flagsets = \"ci/du.sets\"\nsets = \"sizes\"");
    let groups = Layer {
        sets: flag("--sets", "depth".into()),
        ..Layer::default()
    };
    let merged = merge(groups, ours(), PLAIN);
    assert_eq!(value(&merged.flagsets).as_deref(), Some("ci/du.sets"));
    assert_eq!(merged.sets, flag("--sets", "depth".into()));
    let sets_file = Layer {
        sets: flag("--sets", "other.sets".into()),
        ..Layer::default()
    };
    let merged = merge(sets_file, ours(), PLAIN);
    assert_eq!(merged.flagsets, None);
    assert_eq!(merged.sets, flag("--sets", "other.sets".into()));
    let named = Layer {
        flagsets: flag("--flagsets", "walk".into()),
        ..Layer::default()
    };
    let merged = merge(named, ours(), PLAIN);
    assert_eq!(merged.flagsets, flag("--flagsets", "walk".into()));
    assert_eq!(merged.sets, None);
}

#[test]
fn the_files_user_is_left_out_under_as_root_and_when_not_root() {
    let ours = || file("as_user = \"nobody\"");
    let as_root = RunMode {
        as_root: true,
        ..PLAIN
    };
    assert_eq!(merge(Layer::default(), ours(), as_root).as_user, None);
    let expected = user::running_as_root().then(|| "nobody".to_string());
    assert_eq!(
        value(&merge(Layer::default(), ours(), PLAIN).as_user),
        expected
    );
}

#[test]
fn paths_start_where_they_were_written() {
    let in_proj = |written: &str| {
        let layer = parse(
            Path::new("proj/eqcheck.toml"),
            &format!("flagsets = {written:?}"),
        );
        let named = layer.unwrap().options.flagsets.unwrap();
        named.origin.path(&named.value)
    };
    assert_eq!(in_proj("web"), "proj/web");
    assert_eq!(in_proj("./edge"), "proj/edge");
    assert_eq!(in_proj("/srv/tree"), "/srv/tree");
    let here = file("flagsets = \"./edge\"").flagsets.unwrap();
    assert_eq!(here.origin.path(&here.value), "./edge");
    assert_eq!(Origin::Flag("--tree").path("web"), "web");
}

#[test]
fn an_origin_names_the_flag_or_the_files_place() {
    let reference = file("\nreference = \"old\"").reference.unwrap();
    assert_eq!(reference.origin.to_string(), "eqcheck.toml:2:13: reference");
    assert_eq!(Origin::Flag("--runs").to_string(), "--runs");
}

#[test]
fn ref_rev_gives_the_reference_and_keeps_the_files_candidate_and_build() {
    let with_build = format!("{BOTH_ARMS}[build]\nprogram = \"target/release/w\"\n");
    let given = Layer {
        ref_rev: flag("--ref-rev", "main".into()),
        ..Layer::default()
    };
    let merged = merge(given, file(&with_build), PLAIN);
    assert_eq!(merged.reference, None, "the file's reference is replaced");
    assert_eq!(value(&merged.candidate).as_deref(), Some("new -x"));
    assert_eq!(value(&merged.ref_rev).as_deref(), Some("main"));
    assert_eq!(
        value(&merged.build_program).as_deref(),
        Some("target/release/w")
    );
    let without = merge(Layer::default(), file(&with_build), PLAIN);
    assert_eq!(value(&without.reference).as_deref(), Some("old -x"));
}
