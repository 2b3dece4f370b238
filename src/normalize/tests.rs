//! Tests of the normalizer rules: what each does, what fires, and what is refused.

use super::*;

fn rule(keys: &[(&str, &str)]) -> Result<Rule, (usize, String)> {
    RuleDraft {
        name: "r".into(),
        line: 1,
        keys: keys
            .iter()
            .enumerate()
            .map(|(i, (k, v))| (k.to_string(), v.to_string(), i + 2))
            .collect(),
    }
    .build()
}

fn applied(rule: &Rule, text: &str) -> (String, usize) {
    let (out, count) = rule.apply(text.as_bytes());
    (String::from_utf8(out).unwrap(), count)
}

#[test]
fn sort_lines_counts_the_lines_that_moved() {
    let r = rule(&[("kind", "sort-lines"), ("stream", "stdout")]).unwrap();
    assert_eq!(applied(&r, "b\na\nc\n"), ("a\nb\nc\n".into(), 2));
    assert_eq!(applied(&r, "a\nb\n"), ("a\nb\n".into(), 0));
    assert_eq!(applied(&r, "b\na"), ("a\nb".into(), 2));
}

#[test]
fn sort_items_sorts_only_the_captured_list() {
    let r = rule(&[
        ("kind", "sort-items"),
        ("stream", "stderr"),
        (
            "pattern",
            "^Did not have permissions for directories: (?P<items>.+)$",
        ),
        ("separator", ", "),
    ])
    .unwrap();
    assert_eq!(
        applied(
            &r,
            "x: c, a\nDid not have permissions for directories: /t/b, /t/a\n"
        ),
        (
            "x: c, a\nDid not have permissions for directories: /t/a, /t/b\n".into(),
            1
        )
    );
}

#[test]
fn masks_count_their_matches() {
    let r = rule(&[
        ("kind", "mask"),
        ("stream", "stderr"),
        ("pattern", r"\(\d+\)"),
        ("placeholder", "(<id>)"),
    ])
    .unwrap();
    assert_eq!(
        applied(
            &r,
            "thread 'main' (123) panicked\nthread 'x' (9) panicked\n"
        ),
        (
            "thread 'main' (<id>) panicked\nthread 'x' (<id>) panicked\n".into(),
            2
        )
    );
}

#[test]
fn an_anchored_mask_fires_on_every_line() {
    let r = rule(&[
        ("kind", "mask"),
        ("stream", "stderr"),
        ("pattern", "^(old-du|new-du): "),
        ("placeholder", "du: "),
    ])
    .unwrap();
    let stderr =
        "old-du: cannot access 'a'\nold-du: cannot access 'b'\nold-du: cannot access 'c'\n";
    assert_eq!(
        applied(&r, stderr),
        (
            "du: cannot access 'a'\ndu: cannot access 'b'\ndu: cannot access 'c'\n".into(),
            3
        )
    );
    // Only at a line's start: the same words inside a line stay.
    let inside = "x old-du: y\n";
    assert_eq!(applied(&r, inside), (inside.into(), 0));
}

#[test]
fn a_mask_sees_one_line_and_never_its_line_break() {
    let trailing = rule(&[
        ("kind", "mask"),
        ("stream", "stdout"),
        ("pattern", r"\s+$"),
        ("placeholder", "_"),
    ])
    .unwrap();
    // `$` is each line's end, and `\s` cannot take in the `\n`.
    assert_eq!(
        applied(&trailing, "a \n\nb \t\nc  "),
        ("a_\n\nb_\nc_".into(), 3)
    );
    let across = rule(&[("kind", "mask"), ("stream", "stdout"), ("pattern", r"a\nb")]).unwrap();
    assert_eq!(applied(&across, "a\nb\n"), ("a\nb\n".into(), 0));
    let whole_text = rule(&[
        ("kind", "mask"),
        ("stream", "stdout"),
        ("pattern", r"\Aid \d+"),
    ])
    .unwrap();
    assert_eq!(
        applied(&whole_text, "id 1\nid 2\n"),
        ("<masked>\n<masked>\n".into(), 2)
    );
}

#[test]
fn sort_items_anchors_match_each_line() {
    let r = rule(&[
        ("kind", "sort-items"),
        ("stream", "stderr"),
        ("pattern", "^list: (?P<items>.+)$"),
        ("separator", ","),
    ])
    .unwrap();
    assert_eq!(
        applied(&r, "list: b,a\nlist: d,c\nno list: f,e"),
        ("list: a,b\nlist: c,d\nno list: f,e".into(), 2)
    );
}

#[test]
fn nested_arrays_sort_inside_out_whatever_order_the_pointers_come_in() {
    let r = rule(&[
        ("kind", "json"),
        ("stream", "stdout"),
        ("sort-arrays", "/children, /children/*/children"),
    ])
    .unwrap();
    let one = r#"{"children":[{"children":[2,1]},{"children":[1,3]}]}"#;
    let two = r#"{"children":[{"children":[3,1]},{"children":[1,2]}]}"#;
    assert_eq!(applied(&r, one).0, applied(&r, two).0);
}

/// The JSON value `json` normalizes to under `sort-arrays = pointers`.
fn sorted_json(pointers: &str, text: &str) -> serde_json::Value {
    let r = rule(&[
        ("kind", "json"),
        ("stream", "stdout"),
        ("sort-arrays", pointers),
    ])
    .unwrap();
    serde_json::from_str(&applied(&r, text).0).unwrap()
}

#[test]
fn a_wildcard_reaches_arrays_through_objects_and_arrays_two_deep() {
    let through_objects = sorted_json(
        "/*/*/list",
        r#"{"a":{"x":{"list":[2,1]}},"b":{"y":{"list":[3,1],"other":[2,1]}}}"#,
    );
    assert_eq!(
        through_objects,
        serde_json::json!({"a":{"x":{"list":[1,2]}},"b":{"y":{"list":[1,3],"other":[2,1]}}}),
        "a sibling the pointer does not name keeps its order"
    );
    let through_arrays = sorted_json(
        "/*/*/list",
        r#"[[{"list":[2,1]}],[{"list":[3,1]},{"list":[5,4]}]]"#,
    );
    assert_eq!(
        through_arrays,
        serde_json::json!([[{"list":[1,2]}],[{"list":[1,3]},{"list":[4,5]}]])
    );
    let mixed = sorted_json("/*/*/list", r#"{"a":[{"list":[2,1]}],"b":[[1,0]]}"#);
    assert_eq!(mixed, serde_json::json!({"a":[{"list":[1,2]}],"b":[[1,0]]}));
}

#[test]
fn arrays_at_paths_no_pointer_names_keep_their_order() {
    // Only the first row's list is named: the second row's is a real order.
    let by_index = sorted_json(
        "/rows/0/list",
        r#"{"rows":[{"list":[2,1]},{"list":[4,3]}]}"#,
    );
    assert_eq!(
        by_index,
        serde_json::json!({"rows":[{"list":[1,2]},{"list":[4,3]}]})
    );
    // A wildcard names one depth: shallower and deeper arrays are not named.
    let one_depth = sorted_json(
        "/*/list",
        r#"{"list":[2,1],"a":{"list":[[2,1],[0]]},"b":{"c":{"list":[2,1]}}}"#,
    );
    assert_eq!(
        one_depth,
        serde_json::json!({"list":[2,1],"a":{"list":[[0],[2,1]]},"b":{"c":{"list":[2,1]}}})
    );
}

#[test]
fn json_sorts_keys_and_the_arrays_named() {
    let r = rule(&[
        ("kind", "json"),
        ("stream", "stdout"),
        ("sort-arrays", "/children, /children/*/children"),
    ])
    .unwrap();
    let (out, count) = applied(
        &r,
        r#"{"size":1,"name":"t","children":[{"name":"b","children":[3,1]},{"name":"a"}]}"#,
    );
    let (swapped, _) = applied(
        &r,
        r#"{"children":[{"name":"a"},{"children":[1,3],"name":"b"}],"name":"t","size":1}"#,
    );
    assert_eq!(count, 1);
    assert_eq!(out, swapped, "the same document in any order is one text");
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["children"][0]["children"], serde_json::json!([1, 3]));
    assert!(out.find("\"children\"").unwrap() < out.find("\"name\"").unwrap());
    let unsorted = rule(&[("kind", "json"), ("stream", "stdout")]).unwrap();
    assert_ne!(
        applied(&unsorted, "[1,2]").0,
        applied(&unsorted, "[2,1]").0,
        "arrays keep their order unless named"
    );
    assert_eq!(applied(&r, "not json\n"), ("not json\n".into(), 0));
}

#[test]
fn json_prints_the_canonical_form() {
    let r = rule(&[
        ("kind", "json"),
        ("stream", "stdout"),
        ("sort-arrays", "/list"),
    ])
    .unwrap();
    let canonical = "{\n  \"a\": [\n    2,\n    1\n  ],\n  \"list\": [\n    \"x\",\n    \"y\"\n  ],\n  \"z\": 1.5\n}\n";
    assert_eq!(
        applied(&r, r#"{"z":1.5,"list":["y","x"],"a":[2,1]}"#),
        (canonical.into(), 1)
    );
    assert_eq!(applied(&r, canonical), (canonical.into(), 0));
}

#[test]
fn json_numbers_keep_every_digit() {
    let r = rule(&[("kind", "json"), ("stream", "stdout")]).unwrap();
    let (one, _) = applied(
        &r,
        r#"{"size": 18446744073709551616123, "t": 1.00000000000000001}"#,
    );
    let (other, _) = applied(
        &r,
        r#"{"size": 18446744073709551616999, "t": 1.00000000000000002}"#,
    );
    assert_ne!(one, other);
    assert!(one.contains("18446744073709551616123"), "{one}");
    assert!(one.contains("1.00000000000000001"), "{one}");
}

#[test]
fn json_with_a_key_twice_is_left_as_it_is() {
    let r = rule(&[("kind", "json"), ("stream", "stdout")]).unwrap();
    for text in [
        r#"{"a":1,"a":2}"#,
        r#"{"a":7,"a":2}"#,
        r#"[{"b":{"a":1,"c":0,"\u0061":2}}]"#,
    ] {
        assert_eq!(applied(&r, text), (text.into(), 0));
    }
    // The same key in different objects is no repeat.
    assert_eq!(applied(&r, r#"[{"a":1},{"a":2}]"#).1, 1);
}

#[test]
fn rules_that_would_hide_everything_are_refused() {
    // Each line is matched on its own, so a pattern that covers one whole line,
    // anchored or not, would cover every line.
    for pattern in [
        ".*", "(?s).+", "[^\\n]+", "^.*$", "^.+$", "(?m)^.+$", r"\A.+\z",
    ] {
        let err =
            rule(&[("kind", "mask"), ("stream", "stdout"), ("pattern", pattern)]).unwrap_err();
        assert!(
            err.1.contains("hide every difference") || err.1.contains("empty text"),
            "{pattern}: {err:?}"
        );
    }
    let err = rule(&[
        ("kind", "sort-items"),
        ("stream", "stdout"),
        ("pattern", "list: (.+)"),
        ("separator", ","),
    ])
    .unwrap_err();
    assert!(err.1.contains("named capture"), "{err:?}");
    assert_eq!(
        rule(&[("kind", "sorted"), ("stream", "stdout")])
            .unwrap_err()
            .0,
        2
    );
    assert!(rule(&[("kind", "sort-lines")])
        .unwrap_err()
        .1
        .contains("no `stream`"));
}

#[test]
fn scope_is_by_group_and_stream() {
    let r = rule(&[
        ("kind", "sort-lines"),
        ("stream", "stdout"),
        ("groups", "json, sizes"),
    ])
    .unwrap();
    assert!(r.applies("json", Stream::Stdout));
    assert!(!r.applies("json", Stream::Stderr));
    assert!(!r.applies("depth", Stream::Stdout));
}

#[test]
fn ordinary_lines_are_single_lines() {
    // A mask sees one line at a time; a sample spanning two would refuse a pattern
    // for a match it could never make.
    for line in draft::ORDINARY_LINES {
        assert!(!line.contains('\n'), "{line:?}");
    }
}

#[test]
fn a_rule_reports_the_kind_and_streams_it_was_declared_with() {
    for kind in ["sort-lines", "sort-items", "mask", "json"] {
        for (stream, said) in [
            ("stdout", "stdout"),
            ("stderr", "stderr"),
            ("both", "stdout and stderr"),
        ] {
            let mut keys = vec![("kind", kind), ("stream", stream)];
            if matches!(kind, "sort-items" | "mask") {
                keys.push(("pattern", "^list: (?P<items>.+)$"));
            }
            if kind == "sort-items" {
                keys.push(("separator", ","));
            }
            let r = rule(&keys).unwrap();
            assert_eq!(
                (r.kind.name(), r.streams.to_string()),
                (kind, said.to_string())
            );
        }
    }
}

#[test]
fn a_key_the_kind_does_not_take_is_refused_at_its_line() {
    let pattern = ("pattern", "^list: (?P<items>.+)$");
    for (kind, needs, refused) in [
        ("sort-lines", vec![], "pattern"),
        ("sort-lines", vec![], "sort-arrays"),
        (
            "sort-items",
            vec![pattern, ("separator", ",")],
            "placeholder",
        ),
        ("mask", vec![pattern], "separator"),
        ("mask", vec![pattern], "sort-arrays"),
        ("json", vec![], "pattern"),
        ("json", vec![], "placeholder"),
    ] {
        let mut keys = vec![("kind", kind), ("stream", "stdout")];
        keys.extend(needs);
        let value = if refused == "sort-arrays" { "/a" } else { "x" };
        keys.push((refused, value));
        // Keys are on lines 2, 3, …: the refused one is the last.
        let line = keys.len() + 1;
        assert_eq!(
            rule(&keys).unwrap_err(),
            (line, format!("a {kind} rule takes no `{refused}`"))
        );
    }
}
