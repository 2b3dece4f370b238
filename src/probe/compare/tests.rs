//! Tests of the field-by-field comparison: what is counted, kept, explained and
//! left unexplained.

use super::*;
use crate::walk::stat::Timestamp;

/// The candidate's records held whole against the reference's, as a lister's
/// are.
fn compare(
    candidate: &[Record],
    reference: &[Record],
    root: &Path,
    times: ProbeTimes,
) -> Comparison {
    let mut tally = Tally::new(root, times);
    let mut awaiting = Awaiting::new(candidate.to_vec());
    for theirs in reference {
        match awaiting.claim(&theirs.path) {
            Some(ours) => tally.entry(ours, theirs),
            None => tally.missing(&theirs.path, Side::Candidate),
        }
    }
    for ours in awaiting.unclaimed() {
        tally.missing(&ours.path, Side::Reference);
    }
    tally.finish()
}

fn record(path: &str, kind: FileKind, atime: i64, source: Source) -> Record {
    known(
        path,
        &[
            (FieldName::Type, source, Value::Kind(kind)),
            (FieldName::Atime, source, Value::Time(at(atime))),
        ],
    )
}

#[test]
fn only_a_folders_atime_moved_forward_is_explained_by_the_listing() {
    // Path, type, and the atime the reference and the candidate saw.
    let seen = [
        (".", FileKind::Dir, 10, 10),
        ("d", FileKind::Dir, 20, 10),
        ("f", FileKind::File, 20, 10),
        ("e", FileKind::Dir, 5, 9),
        ("old", FileKind::Dir, 20, 0),
    ];
    let side = |source, ours: bool| -> Vec<Record> {
        (seen.iter())
            .map(|&(path, kind, theirs, mine)| {
                record(path, kind, if ours { mine } else { theirs }, source)
            })
            .collect()
    };
    let (reference, candidate) = (side(Source::PathStat, false), side(Source::Statx, true));
    let (root, times) = (Path::new(NOWHERE), since(8));
    let found = compare(&candidate, &reference, root, times);
    let atime = found
        .rows
        .iter()
        .find(|r| r.field == FieldName::Atime)
        .unwrap();
    // d moved forward during the probe: explained; a file's atime, a folder's
    // that moved back, and one that was older than the probe: not.
    assert_eq!(
        (
            atime.compared,
            atime.equal,
            atime.explained,
            atime.unexplained
        ),
        (5, 1, 1, 3)
    );
    let paths: Vec<&str> = found.mismatches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["f", "e", "old"]);
    let reasons: Vec<_> = (found.explained.iter())
        .map(|e| (e.reason.as_str(), e.field, e.count))
        .collect();
    assert_eq!(
        reasons,
        [(
            "the listing itself read the folder, moving its atime",
            FieldName::Atime,
            1
        )]
    );
}

#[test]
fn a_wrong_ctime_or_a_failed_stat_explains_nothing() {
    let with = |source, ctime: i64, size: u64, failed: Option<&str>| match failed {
        Some(error) => Record {
            path: PathBuf::from("f"),
            stat_failed: Some(error.to_string()),
            known: Vec::new(),
        },
        None => known(
            "f",
            &[
                (FieldName::Type, source, Value::Kind(FileKind::File)),
                (FieldName::Ctime, source, Value::Time(at(ctime))),
                (FieldName::Size, source, Value::Number(size)),
            ],
        ),
    };
    let (root, started) = (Path::new(NOWHERE), since(100));
    // The engine's ctime is wrong and so is its size; nothing moved during the
    // probe (the reference's ctime is older than it), and the path cannot be
    // re-stat'ed: neither difference has a reason.
    let found = compare(
        &[with(Source::Statx, 40, 2, None)],
        &[with(Source::PathStat, 50, 1, None)],
        root,
        started,
    );
    let unexplained: usize = found.rows.iter().map(|r| r.unexplained).sum();
    assert_eq!((unexplained, found.explained.len()), (2, 0));
    let found = compare(
        &[with(Source::Statx, 0, 0, Some("EIO"))],
        &[with(Source::PathStat, 50, 1, None)],
        root,
        started,
    );
    assert_eq!(found.stat_failed_in_candidate, 1);
}

#[test]
fn every_quirk_names_its_file_system_and_says_why() {
    for quirk in QUIRKS {
        assert!(!quirk.why.is_empty() && !quirk.file_system.is_empty());
        assert_eq!(file_system_name(quirk.magic), quirk.file_system);
    }
}

/// The file system is asked of the entry's folder: a folder's own, a file's
/// parent's; and only for the device its stat gave, not its listing. Asked under
/// `/`, which has no parent, only a folder asked of itself has a file system.
#[cfg(target_os = "linux")]
#[test]
fn an_entrys_file_system_is_asked_of_its_folder_for_the_device_its_stat_gave() {
    let magic_of = |kind, device_from| {
        let record = known(
            "",
            &[
                (FieldName::Type, Source::PathStat, Value::Kind(kind)),
                (FieldName::Device, device_from, Value::Number(1)),
            ],
        );
        Explainer::new(Path::new("/"), since(0)).magic_of(&record)
    };
    let root = file_system_magic(Path::new("/"));
    assert!(root.is_some_and(|m| ![0, 1, -1].contains(&m)), "{root:?}");
    assert_eq!(magic_of(FileKind::Dir, Source::PathStat), root);
    assert_eq!(magic_of(FileKind::File, Source::PathStat), None);
    assert_eq!(magic_of(FileKind::Dir, Source::Listing), None);
}

/// A record of `path` that knows `fields`, each from the source given with it.
fn known(path: &str, fields: &[(FieldName, Source, Value)]) -> Record {
    Record {
        path: PathBuf::from(path),
        stat_failed: None,
        known: (fields.iter())
            .map(|&(field, source, value)| Known {
                field,
                source,
                value,
            })
            .collect(),
    }
}

fn file(path: &str, source: Source, size: u64) -> Record {
    known(
        path,
        &[
            (FieldName::Type, source, Value::Kind(FileKind::File)),
            (FieldName::Size, source, Value::Number(size)),
        ],
    )
}

fn at(secs: i64) -> Timestamp {
    Timestamp { secs, nanos: 0 }
}

fn since(secs: i64) -> ProbeTimes {
    ProbeTimes {
        began: at(secs),
        candidate_began: at(secs),
    }
}

const NOWHERE: &str = "/nonexistent-probe-root";

#[test]
fn the_exfat_quirk_touches_empty_files_only() {
    let stat = Source::PathStat;
    assert!(empty_file(&file("e", stat, 0)));
    assert!(!empty_file(&file("f", stat, 1)));
    let folder = known(
        "d",
        &[
            (FieldName::Type, stat, Value::Kind(FileKind::Dir)),
            (FieldName::Size, stat, Value::Number(0)),
        ],
    );
    assert!(!empty_file(&folder));
    let sizeless = known("s", &[(FieldName::Type, stat, Value::Kind(FileKind::File))]);
    assert!(!empty_file(&sizeless));
}

#[test]
fn a_quirk_explains_only_its_field_on_its_file_system() {
    let exfat = QUIRKS[0].magic;
    let inode = |source, value| Known {
        field: FieldName::Inode,
        source,
        value: Value::Number(value),
    };
    let empty = file("e", Source::PathStat, 0);
    let found = quirk(QUIRKS, exfat, &inode(Source::Statx, 7), &empty);
    assert_eq!(found.map(|q| q.file_system), Some("exfat"));
    assert!(quirk(QUIRKS, exfat, &inode(Source::Listing, 7), &empty).is_some());
    // Another file system, another field, a file that is not empty: no quirk.
    assert!(quirk(QUIRKS, 0xEF53, &inode(Source::Statx, 7), &empty).is_none());
    let size = Known {
        field: FieldName::Size,
        ..inode(Source::Statx, 7)
    };
    assert!(quirk(QUIRKS, exfat, &size, &empty).is_none());
    let full = file("f", Source::PathStat, 3);
    assert!(quirk(QUIRKS, exfat, &inode(Source::Statx, 7), &full).is_none());
    // A quirk of one source explains that source's values only.
    let of_the_listing = [Quirk {
        source: Some(Source::Listing),
        ..QUIRKS[0]
    }];
    assert!(quirk(&of_the_listing, exfat, &inode(Source::Listing, 7), &empty).is_some());
    assert!(quirk(&of_the_listing, exfat, &inode(Source::Statx, 7), &empty).is_none());
}

#[test]
fn an_inode_that_differs_on_this_file_system_is_unexplained() {
    // The quirk of exFAT must not explain an empty file's inode here.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("e"), b"").unwrap();
    let side = |source, ino| {
        let mut record = file("e", source, 0);
        record.known.push(Known {
            field: FieldName::Inode,
            source,
            value: Value::Number(ino),
        });
        record.known.push(Known {
            field: FieldName::Device,
            source,
            value: Value::Number(1),
        });
        record
    };
    let found = compare(
        &[side(Source::Statx, 5)],
        &[side(Source::PathStat, 6)],
        dir.path(),
        since(0),
    );
    let inode = found.rows.iter().find(|r| r.field == FieldName::Inode);
    assert_eq!(inode.map(|r| (r.explained, r.unexplained)), Some((0, 1)));
}

#[test]
fn entries_one_side_lacks_are_counted_per_side_and_the_first_five_kept() {
    let stat = Source::PathStat;
    let mut candidate = vec![file("both", Source::Statx, 1)];
    candidate.extend((1..=6).map(|i| file(&format!("ours{i}"), Source::Statx, 1)));
    let mut reference = vec![file("both", stat, 1)];
    reference.extend((1..=3).map(|i| file(&format!("theirs{i}"), stat, 1)));
    let found = compare(&candidate, &reference, Path::new(NOWHERE), since(0));
    assert_eq!(
        (found.missing_in_candidate, found.missing_in_reference),
        (3, 6)
    );
    let kept: Vec<(&str, Side)> = (found.missing.iter())
        .map(|m| (m.path.as_str(), m.missing_from))
        .collect();
    let mut expected: Vec<(String, Side)> = (1..=3)
        .map(|i| (format!("theirs{i}"), Side::Candidate))
        .collect();
    expected.extend((1..=5).map(|i| (format!("ours{i}"), Side::Reference)));
    let expected: Vec<(&str, Side)> = expected.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    assert_eq!(kept, expected);
}

#[test]
fn failed_stats_are_counted_per_side_and_the_first_five_kept() {
    let failed = |path: &str| Record {
        path: PathBuf::from(path),
        stat_failed: Some(format!("EIO on {path}")),
        known: Vec::new(),
    };
    let names: Vec<String> = (1..=6).map(|i| format!("f{i}")).collect();
    let mut candidate: Vec<Record> = names.iter().map(|n| failed(n)).collect();
    let mut reference: Vec<Record> = (names.iter())
        .map(|n| file(n, Source::PathStat, 1))
        .collect();
    candidate.push(file("g", Source::Statx, 1));
    reference.push(failed("g"));
    // Both sides failing on one entry is no difference.
    candidate.push(failed("h"));
    reference.push(failed("h"));
    let found = compare(&candidate, &reference, Path::new(NOWHERE), since(0));
    assert_eq!(
        (
            found.stat_failed_in_candidate,
            found.stat_failed_in_reference
        ),
        (6, 1)
    );
    let kept: Vec<(&str, Side, &str)> = (found.stat_failures.iter())
        .map(|f| (f.path.as_str(), f.failed_on, f.error.as_str()))
        .collect();
    assert_eq!(kept.len(), 6);
    assert_eq!(kept[0], ("f1", Side::Candidate, "EIO on f1"));
    assert_eq!(kept[4].0, "f5");
    assert_eq!(kept[5], ("g", Side::Reference, "EIO on g"));
}

#[test]
fn a_field_a_side_lacks_is_unknown_for_that_side_and_dt_unknown_knows_nothing() {
    let listed_unknown = known(
        "x",
        &[
            (
                FieldName::Type,
                Source::Listing,
                Value::Kind(FileKind::Unknown),
            ),
            (FieldName::Size, Source::Statx, Value::Number(1)),
        ],
    );
    let sizeless = known(
        "x",
        &[(
            FieldName::Type,
            Source::PathStat,
            Value::Kind(FileKind::File),
        )],
    );
    let found = compare(&[listed_unknown], &[sizeless], Path::new(NOWHERE), since(0));
    let unknown = |field, side| {
        (found.unknown.iter())
            .find(|u| u.field == field && u.side == side)
            .map_or(0, |u| u.count)
    };
    assert_eq!(unknown(FieldName::Type, Side::Candidate), 1);
    assert_eq!(unknown(FieldName::Type, Side::Reference), 0);
    assert_eq!(unknown(FieldName::Size, Side::Candidate), 0);
    assert_eq!(unknown(FieldName::Size, Side::Reference), 1);
    assert_eq!(unknown(FieldName::Mode, Side::Reference), 1);
    // Nothing both sides know was compared.
    assert!(found.rows.is_empty(), "{:?}", found.rows);
}

#[test]
fn a_listed_type_is_held_to_the_reference_listing_and_a_stat_to_its_stat() {
    let kind = |source, kind| (FieldName::Type, source, Value::Kind(kind));
    // A name replaced between the listing and the stat: both listings say file,
    // both stats say link.
    let candidate = known(
        "x",
        &[
            kind(Source::Listing, FileKind::File),
            kind(Source::Statx, FileKind::Symlink),
        ],
    );
    let reference = known(
        "x",
        &[
            kind(Source::Listing, FileKind::File),
            kind(Source::PathStat, FileKind::Symlink),
        ],
    );
    let found = compare(&[candidate], &[reference], Path::new(NOWHERE), since(0));
    let rows: Vec<(Source, usize, usize)> = (found.rows.iter())
        .map(|r| (r.source, r.compared, r.equal))
        .collect();
    assert_eq!(rows, [(Source::Listing, 1, 1), (Source::Statx, 1, 1)]);
    // Where the reference's listing gave no type, a listed type meets the stat.
    let candidate = known("y", &[kind(Source::Listing, FileKind::File)]);
    let reference = known(
        "y",
        &[
            kind(Source::Listing, FileKind::Unknown),
            kind(Source::PathStat, FileKind::Symlink),
        ],
    );
    let found = compare(&[candidate], &[reference], Path::new(NOWHERE), since(0));
    assert_eq!(found.mismatches.len(), 1);
    assert_eq!(found.mismatches[0].reference, "symlink");
}

#[test]
fn unexplained_differences_keep_five_examples_per_field_and_source() {
    let names: Vec<String> = (1..=7).map(|i| format!("f{i}")).collect();
    let candidate: Vec<Record> = names.iter().map(|n| file(n, Source::Statx, 2)).collect();
    let reference: Vec<Record> = (names.iter())
        .map(|n| file(n, Source::PathStat, 1))
        .collect();
    let found = compare(&candidate, &reference, Path::new(NOWHERE), since(0));
    let size = found
        .rows
        .iter()
        .find(|r| r.field == FieldName::Size)
        .unwrap();
    assert_eq!((size.compared, size.unexplained), (7, 7));
    let kept: Vec<(&str, &str, &str)> = (found.mismatches.iter())
        .map(|m| (m.path.as_str(), m.reference.as_str(), m.candidate.as_str()))
        .collect();
    assert_eq!(kept.len(), 5);
    assert_eq!(kept[0], ("f1", "1", "2"));
}

// Windows gives no ctime to re-stat.
#[cfg(unix)]
#[test]
fn an_entry_changed_between_the_looks_is_explained_only_as_a_restat_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let meta = std::fs::symlink_metadata(dir.path().join("f")).unwrap();
    let now = crate::walk::StatFields::from_metadata(&meta)
        .ctime
        .unwrap()
        .value;
    let side = |source, ctime: Timestamp, size| {
        let mut record = file("f", source, size);
        record.known.push(Known {
            field: FieldName::Ctime,
            source,
            value: Value::Time(ctime),
        });
        record
    };
    let earlier = Timestamp {
        secs: now.secs - 10,
        ..now
    };
    let judged = |times: ProbeTimes, reference_ctime: Timestamp| {
        let found = compare(
            &[side(Source::Statx, earlier, 2)],
            &[side(Source::PathStat, reference_ctime, 1)],
            dir.path(),
            times,
        );
        let size = found
            .rows
            .iter()
            .find(|r| r.field == FieldName::Size)
            .unwrap();
        (size.explained, size.unexplained, found.explained)
    };
    let (explained, unexplained, reasons) = judged(since(now.secs - 20), now);
    assert_eq!((explained, unexplained), (1, 0));
    assert!(reasons[0].reason.contains("changed between the two looks"));
    // The candidate began after the change: nothing moved while it looked.
    assert_eq!(judged(since(now.secs + 5), now).1, 1);
    // Both looks saw the same ctime: nothing changed between them.
    let found = compare(
        &[side(Source::Statx, now, 2)],
        &[side(Source::PathStat, now, 1)],
        dir.path(),
        since(now.secs - 20),
    );
    assert!(found.explained.is_empty(), "{:?}", found.explained);
    // A ctime a re-stat does not find now is no proof.
    let elsewhen = Timestamp {
        secs: now.secs - 1,
        ..now
    };
    assert_eq!(judged(since(now.secs - 20), elsewhen).1, 1);
}
