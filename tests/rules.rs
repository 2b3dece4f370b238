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
