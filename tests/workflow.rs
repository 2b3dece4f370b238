//! The GitHub Actions workflow cannot run here, so it is read back and checked: it
//! parses, its checks run on Linux, both macOS architectures and Windows, its
//! self-run is sharded and merged on each OS, the x86_64 build runs under Rosetta
//! as a candidate on Apple silicon, and it calls the README's test command as
//! `.ci/run` does.

use yaml_rust2::{Yaml, YamlLoader};

fn workflow() -> Yaml {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/.github/workflows/ci.yml");
    let text = std::fs::read_to_string(path).expect("the workflow file");
    let mut docs = YamlLoader::load_from_str(&text).expect("the workflow is YAML");
    assert_eq!(docs.len(), 1);
    docs.remove(0)
}

/// A job's matrix values for `key`.
fn matrix<'a>(job: &'a Yaml, key: &str) -> Vec<&'a str> {
    job["strategy"]["matrix"][key]
        .as_vec()
        .unwrap_or_else(|| panic!("a matrix of {key}"))
        .iter()
        .map(|v| v.as_str().unwrap_or_else(|| panic!("{v:?}")))
        .collect()
}

/// Every `run` command of a job's steps.
fn runs(job: &Yaml) -> Vec<&str> {
    (job["steps"].as_vec().expect("steps").iter())
        .filter_map(|step| step["run"].as_str())
        .collect()
}

/// The README's test command: the line of its first shell block that runs the tests.
fn readme_test_command() -> String {
    let readme = include_str!("../README.md");
    let line = (readme.lines())
        .find(|l| l.starts_with("cargo test"))
        .expect("the README gives a test command");
    line.split('#').next().unwrap().trim().to_string()
}

#[test]
fn checks_run_on_linux_both_macos_architectures_and_windows_with_the_readmes_commands() {
    let workflow = workflow();
    let checks = &workflow["jobs"]["checks"];
    let oses = matrix(checks, "os");
    for os in [
        "ubuntu-latest",
        "macos-latest",
        "macos-13",
        "windows-latest",
    ] {
        assert!(oses.contains(&os), "{os} missing from {oses:?}");
    }
    let test = readme_test_command();
    let commands = runs(checks);
    assert!(
        commands.contains(&test.as_str()),
        "{test} not run: {commands:?}"
    );
    assert!(commands.contains(&"cargo fmt --check"), "{commands:?}");
    assert!(
        commands
            .iter()
            .any(|c| c.contains("cargo clippy --all-targets --locked -- -D warnings")),
        "{commands:?}"
    );
    // .ci/run, the gate here, calls the same test command.
    let ci = include_str!("../.ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == test),
        "{test} not in .ci/run"
    );
}

#[test]
fn the_self_run_is_sharded_on_every_os_and_merged() {
    let workflow = workflow();
    let jobs = &workflow["jobs"];
    let self_run = &jobs["self-run"];
    let oses = matrix(self_run, "os");
    assert_eq!(oses, ["ubuntu-latest", "macos-latest", "windows-latest"]);
    let shards: Vec<i64> = (self_run["strategy"]["matrix"]["shard"]
        .as_vec()
        .unwrap()
        .iter())
    .map(|s| s.as_i64().unwrap())
    .collect();
    assert_eq!(shards, [1, 2]);
    let run = runs(self_run).join("\n");
    assert!(
        run.contains("--sets all --partition hash:${{ matrix.shard }}/2"),
        "{run}"
    );
    let merge = &jobs["merge"];
    assert_eq!(merge["needs"].as_str(), Some("self-run"));
    assert_eq!(matrix(merge, "os"), oses);
    let run = runs(merge).join("\n");
    assert!(
        run.contains("eqcheck merge shard-1.json shard-2.json --markdown"),
        "{run}"
    );
}

#[test]
fn the_x86_64_build_runs_under_rosetta_as_the_candidate_on_apple_silicon() {
    let workflow = workflow();
    let rosetta = &workflow["jobs"]["rosetta"];
    assert_eq!(rosetta["runs-on"].as_str(), Some("macos-latest"));
    let run = runs(rosetta).join("\n");
    assert!(run.contains("--target x86_64-apple-darwin"), "{run}");
    assert!(run.contains("--cand-runner 'arch -x86_64'"), "{run}");
    assert!(
        run.contains("--cand 'target/x86_64-apple-darwin/release/eqcheck walk --engine fast'"),
        "{run}"
    );
}

#[test]
fn the_file_system_tests_run_as_root_on_linux() {
    let workflow = workflow();
    let job = &workflow["jobs"]["filesystems"];
    assert_eq!(job["runs-on"].as_str(), Some("ubuntu-latest"));
    let run = runs(job).join("\n");
    assert!(
        run.contains("sudo -E") && run.contains("EQCHECK_REQUIRE_ALL=1"),
        "{run}"
    );
    assert!(run.contains("--test tests filesystems"), "{run}");
}

#[test]
fn mutation_testing_runs_weekly_in_shards_and_not_in_the_ci_gate() {
    let workflow = workflow();
    let on = &workflow["on"];
    assert!(
        on["schedule"].as_vec().is_some_and(|s| !s.is_empty()),
        "{on:?}"
    );
    let job = &workflow["jobs"]["mutants"];
    let when = job["if"]
        .as_str()
        .expect("the job runs only when scheduled");
    assert!(when.contains("github.event_name == 'schedule'"), "{when}");
    let shards = job["strategy"]["matrix"]["shard"].as_vec().expect("shards");
    let run = runs(job).join("\n");
    assert!(
        run.contains("cargo install cargo-mutants --locked"),
        "{run}"
    );
    assert!(
        run.contains(&format!(
            "cargo mutants --shard ${{{{ matrix.shard }}}}/{}",
            shards.len()
        )),
        "{run}"
    );
    // The README's contributing section gives the same command, and the files it
    // covers are named in one place, the config the command reads.
    let readme = include_str!("../README.md");
    assert!(
        readme.contains("cargo mutants --shard 1/8"),
        "the README's command"
    );
    let config = include_str!("../.cargo/mutants.toml");
    for file in [
        "src/normalize.rs",
        "src/matrix/compare/*.rs",
        "src/merge.rs",
    ] {
        assert!(
            config.contains(&format!("\"{file}\"")),
            "{file} not examined"
        );
    }
    let ci = include_str!("../.ci/run");
    assert!(!ci.contains("cargo mutants"), "too slow for every commit");
}
