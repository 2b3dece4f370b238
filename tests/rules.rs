//! How a flag-set file's normalizer rules meet real output end to end: the
//! line-oriented rules see one line at a time, so an anchored pattern fires on every
//! line of a stream, not only on its first.

use crate::util::{assert_exit, double, json_report, temp_dir};
use crate::verdicts::{one_set_file, only_case, run_sets};

/// An arm that prints three error lines on stderr, each starting `NAME: `, as two
/// builds of du that differ only in their program name do.
///
/// The double prints chosen text on stderr only through `items`, so the lines are
/// its prefix and the one item ends the last of them.
fn three_error_lines(name: &str) -> String {
    let prefix = format!(
        "{name}: cannot access 'a': Permission denied\n\
         {name}: cannot access 'b': Permission denied\n\
         {name}: cannot access "
    );
    double(&format!(
        "items 1 , {} --stderr",
        shell_words::quote(&prefix)
    ))
}

#[test]
fn an_anchored_mask_fires_on_every_line_of_a_stream() {
    let dir = temp_dir();
    let rule = "[rule program-name]\nkind = mask\nstream = stderr\n\
                pattern = \"^(old-du|new-du): \"\nplaceholder = \"du: \"\n";
    let sets = one_set_file(dir.path(), rule);
    let out = run_sets(
        &three_error_lines("old-du"),
        &three_error_lines("new-du"),
        &sets,
        &[],
    );
    assert_exit(&out, 0);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(
        case["verdict"]["kind"], "equal-after-normalization",
        "{out}"
    );
    // Three lines in each arm.
    assert_eq!(
        case["fired"],
        serde_json::json!([{"rule": "program-name", "times": 6}]),
        "{out}"
    );
}

/// A folder holding a file and two dangling symlinks, named so that the folder
/// lists them in name order: du reports them in listing order, eqcheck's walker in
/// name order, and this test is about the mask, not about error order.
fn tree_with_two_dangling_symlinks() -> tempfile::TempDir {
    let dir = temp_dir();
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    std::fs::write(dir.path().join("file"), "some text\n").unwrap();
    for attempt in 0..200 {
        let names = [format!("a{attempt}"), format!("b{attempt}")];
        for name in &names {
            std::os::unix::fs::symlink("nowhere", links.join(name)).unwrap();
        }
        let listed: Vec<String> = std::fs::read_dir(&links)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        if listed == names {
            return dir;
        }
        for name in &names {
            std::fs::remove_file(links.join(name)).unwrap();
        }
    }
    panic!(
        "no pair of names listed in name order in {}",
        links.display()
    );
}

#[cfg(unix)]
#[test]
fn du_and_the_walker_are_equal_with_one_sort_rule_and_one_line_anchored_mask() {
    if crate::util::skip_unless(crate::util::Capability::GnuDu) {
        return;
    }
    let dir = temp_dir();
    let sets = dir.path().join("du-walk.sets");
    let text = "common = -L\n[only]\n(none)\n-a\n-s\n\
                [rule order]\nkind = sort-lines\nstream = stdout\n\
                [rule program]\nkind = mask\nstream = stderr\n\
                pattern = \"^(du|eqcheck walk): \"\nplaceholder = \"PROGRAM: \"\n";
    std::fs::write(&sets, text).unwrap();
    let tree = tree_with_two_dangling_symlinks();
    let walker = format!("{} walk --engine fast", crate::util::eqcheck().display());
    let out = crate::util::run([
        "--ref",
        "du",
        "--cand",
        &walker,
        "--tree",
        &tree.path().to_string_lossy(),
        "--flagsets",
        &sets.to_string_lossy(),
        "--json",
        "-",
    ]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    for case in crate::util::report_cases(&report, &out) {
        let stderr = &case["streams"][1];
        assert_eq!(stderr["stream"], "stderr", "{out}");
        assert_eq!(stderr["verdict"], "equal-after-normalization", "{out}");
        // Both error lines of both arms: the mask fired on each line.
        let fired = case["fired"].as_array().unwrap();
        let program = fired.iter().find(|f| f["rule"] == "program");
        assert_eq!(program.map(|f| &f["times"]), Some(&4.into()), "{out}");
    }
}
