//! Tests of du's accounting over trees made in memory, where devices and inode
//! numbers can be anything: a folder met twice (as a bind mount shows it), a
//! mount point inside an operand, and hard links.

use super::*;
use crate::walk::stat::{Field, Source};

/// An entry on device `dev` with inode `ino`, `nlink` names and `kib` KiB of
/// blocks; a folder when `contents` lists something.
fn entry(name: &str, kind: FileKind, (dev, ino, nlink): (u64, u64, u64), kib: u64) -> Entry {
    let field = |value| Some(Field::new(value, Source::PathStat));
    let stat = StatFields {
        dev: field(dev),
        ino: field(ino),
        nlink: field(nlink),
        blocks: field(kib * 2),
        size: field(kib * 1024),
        ..StatFields::unknown(kind)
    };
    Entry {
        name: name.into(),
        stat: Ok(stat),
        listed: None,
        contents: Contents::None,
    }
}

fn file(name: &str, id: (u64, u64, u64), kib: u64) -> Entry {
    entry(name, FileKind::File, id, kib)
}

fn folder(name: &str, (dev, ino): (u64, u64), entries: Vec<Entry>) -> Entry {
    Entry {
        contents: Contents::Listed {
            entries,
            error: None,
            summed: Summed::default(),
        },
        ..entry(name, FileKind::Dir, (dev, ino, 2), 4)
    }
}

/// What `du -a` (with `options` besides) prints for these operands.
fn du_a(operands: &[Entry], options: DuOptions) -> String {
    let options = DuOptions {
        all: true,
        ..options
    };
    let mut out = Vec::new();
    write_text(&account(operands, &options), &options, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Folder `shared` (inode 10) seen at two places, as a bind mount shows it.
fn shared(at: &str) -> Entry {
    folder(at, (1, 10), vec![file("f", (1, 11, 1), 8)])
}

#[test]
fn one_operand_counts_a_folder_met_twice_at_both_places() {
    let root = folder("r", (1, 1), vec![shared("a"), shared("b")]);
    assert_eq!(
        du_a(&[root], DuOptions::default()),
        "8\tr/a/f\n12\tr/a\n8\tr/b/f\n12\tr/b\n28\tr\n"
    );
}

#[test]
fn two_operands_or_links_followed_count_a_folder_once() {
    let operands = [
        folder("r", (1, 1), vec![shared("a")]),
        folder("s", (1, 2), vec![shared("b")]),
    ];
    assert_eq!(
        du_a(&operands, DuOptions::default()),
        "8\tr/a/f\n12\tr/a\n16\tr\n4\ts\n"
    );
    let root = folder("r", (1, 1), vec![shared("a"), shared("b")]);
    let follow = DuOptions {
        follow_symlinks: true,
        ..DuOptions::default()
    };
    assert_eq!(du_a(&[root], follow), "8\tr/a/f\n12\tr/a\n16\tr\n");
}

#[test]
fn a_file_with_other_links_is_counted_where_the_listing_meets_it_first() {
    let root = folder(
        "r",
        (1, 1),
        vec![
            file("y", (1, 20, 2), 8),
            file("x", (1, 20, 2), 8),
            file("one", (1, 21, 1), 4),
        ],
    );
    assert_eq!(
        du_a(&[root], DuOptions::default()),
        "4\tr/one\n8\tr/y\n16\tr\n"
    );
}

#[test]
fn one_file_system_leaves_out_what_is_on_another_device_and_only_then() {
    let tree = || {
        let mounted = folder("m", (2, 1), vec![file("g", (2, 5, 1), 8)]);
        folder("r", (1, 1), vec![mounted, file("f", (1, 5, 1), 8)])
    };
    assert_eq!(
        du_a(&[tree()], DuOptions::default()),
        "8\tr/f\n8\tr/m/g\n12\tr/m\n24\tr\n"
    );
    let one = DuOptions {
        one_file_system: true,
        ..DuOptions::default()
    };
    assert_eq!(du_a(&[tree()], one), "8\tr/f\n12\tr\n");
    // An operand on another device than the one before it is still counted.
    let other = folder("s", (3, 1), vec![file("h", (3, 5, 1), 8)]);
    assert_eq!(
        du_a(&[tree(), other], one),
        "8\tr/f\n12\tr\n8\ts/h\n12\ts\n"
    );
}

#[test]
fn an_operand_is_printed_with_its_trailing_slashes_folded_into_one() {
    for (operand, shown) in [
        ("r", "r"),
        ("r/", "r/"),
        ("r//", "r/"),
        ("r///", "r/"),
        ("/", "/"),
        ("//", "/"),
        ("a//b//", "a//b/"),
    ] {
        assert_eq!(display_root(OsStr::new(operand)), OsStr::new(shown));
    }
    let root = folder("r///", (1, 1), vec![file("f", (1, 2, 1), 8)]);
    assert_eq!(du_a(&[root], DuOptions::default()), "8\tr/f\n12\tr/\n");
}

#[test]
fn the_json_form_nests_printed_entries_with_full_names_and_sizes() {
    use std::os::unix::ffi::OsStrExt;
    let odd = Entry {
        name: OsStr::from_bytes(b"n\xff").into(),
        ..file("", (1, 4, 1), 4)
    };
    let sub = folder("s", (1, 2), vec![file("f", (1, 3, 1), 8)]);
    let root = folder("r", (1, 1), vec![sub, odd]);
    let options = DuOptions {
        all: true,
        total: true,
        max_depth: Some(1),
        ..DuOptions::default()
    };
    let json = to_json(&account(std::slice::from_ref(&root), &options), &options);
    let expected = serde_json::json!({
        "version": 1,
        "unit": "disk-1k-blocks",
        "total": 20,
        "roots": [{
            "name": "r",
            "size": 20,
            "children": [
                {"name": "r/n\u{fffd}", "name_bytes": [114, 47, 110, 255], "size": 4},
                {"name": "r/s", "size": 12, "children": []},
            ],
        }],
    });
    assert_eq!(json, expected);
    // Without -a only folders are there, and the unit is named.
    let options = DuOptions {
        unit: Unit::ApparentBytes,
        ..DuOptions::default()
    };
    let json = to_json(&account(std::slice::from_ref(&root), &options), &options);
    assert_eq!(json["unit"], "apparent-bytes");
    assert_eq!(json["roots"][0]["children"][0]["name"], "r/s");
    assert_eq!(
        json["roots"][0]["children"].as_array().map(Vec::len),
        Some(1)
    );
    assert!(json.get("total").is_none());
}
