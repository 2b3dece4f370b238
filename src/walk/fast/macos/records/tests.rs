//! Buffers laid out as getattrlist(2) documents, built here field by field, and
//! random bytes: the parser reads what was packed and refuses what is broken.

use super::*;

/// A value to pack for one attribute.
#[derive(Clone)]
enum Packed {
    U32(u32),
    U64(u64),
    Time(i64, i64),
}

/// One record: the name (if returned) and the other attributes returned, packed
/// in the documented order whatever order they are given in.
fn record(name: Option<&[u8]>, attrs: &[(Attr, Packed)]) -> Vec<u8> {
    let value = |attr: Attr| {
        attrs
            .iter()
            .find(|(a, _)| *a == attr)
            .map(|(_, v)| v.clone())
    };
    let returned = |group: &[(u32, Attr)]| {
        group
            .iter()
            .filter(|(_, a)| {
                if *a == Attr::Name {
                    name.is_some()
                } else {
                    value(*a).is_some()
                }
            })
            .fold(0u32, |mask, (bit, _)| mask | bit)
    };
    let mut fixed = Vec::new();
    let mut name_at = None;
    for (_, attr) in COMMON.iter().chain(FILE.iter()) {
        if *attr == Attr::Name {
            if name.is_some() {
                name_at = Some(24 + fixed.len());
                fixed.extend([0u8; 8]);
            }
            continue;
        }
        match value(*attr) {
            Some(Packed::U32(v)) => fixed.extend(v.to_ne_bytes()),
            Some(Packed::U64(v)) => fixed.extend(v.to_ne_bytes()),
            Some(Packed::Time(s, n)) => {
                fixed.extend(s.to_ne_bytes());
                fixed.extend(n.to_ne_bytes());
            }
            None => {}
        }
    }
    let mut out = Vec::new();
    out.extend(0u32.to_ne_bytes()); // the length, filled in below
    out.extend((returned(&COMMON) | RETURNED_ATTRS).to_ne_bytes());
    out.extend([0u8; 8]); // volume and folder groups
    out.extend(returned(&FILE).to_ne_bytes());
    out.extend(0u32.to_ne_bytes()); // fork group
    out.extend(fixed);
    if let (Some(name), Some(at)) = (name, name_at) {
        let data_at = out.len();
        out.extend(name);
        out.push(0);
        let offset = (data_at - at) as i32;
        out[at..at + 4].copy_from_slice(&offset.to_ne_bytes());
        out[at + 4..at + 8].copy_from_slice(&(name.len() as u32 + 1).to_ne_bytes());
    }
    while out.len() % 4 != 0 {
        out.push(0);
    }
    let length = out.len() as u32;
    out[..4].copy_from_slice(&length.to_ne_bytes());
    out
}

fn file_attrs(id: u64, size: u64) -> Vec<(Attr, Packed)> {
    vec![
        (Attr::Device, Packed::U32(0x0100_0004)),
        (Attr::ObjType, Packed::U32(1)),
        (Attr::Btime, Packed::Time(1_600_000_000, 5)),
        (Attr::Mtime, Packed::Time(1_700_000_000, 123_456_789)),
        (Attr::Ctime, Packed::Time(1_700_000_001, 1)),
        (Attr::Atime, Packed::Time(-2, 999_999_999)),
        (Attr::Uid, Packed::U32(501)),
        (Attr::Gid, Packed::U32(20)),
        (Attr::AccessMask, Packed::U32(0o644)),
        (Attr::FileId, Packed::U64(id)),
        (Attr::LinkCount, Packed::U32(2)),
        (Attr::AllocSize, Packed::U64(8192)),
        (Attr::IoBlockSize, Packed::U32(4096)),
        (Attr::DataLength, Packed::U64(size)),
    ]
}

#[test]
fn a_file_record_gives_every_field_even_where_8_byte_values_are_4_aligned() {
    let buffer = record(
        Some(b"caf\xc3\xa9.txt"),
        &file_attrs(0x1122_3344_5566_7788, 5000),
    );
    let parsed = parse(&buffer, 1).unwrap();
    let r = &parsed[0];
    assert_eq!(r.name, Some(&b"caf\xc3\xa9.txt"[..]));
    assert_eq!(
        (r.device, r.kind),
        (Some(0x0100_0004), Some(FileKind::File))
    );
    assert_eq!(
        r.mtime,
        Some(Timestamp {
            secs: 1_700_000_000,
            nanos: 123_456_789
        })
    );
    assert_eq!(
        r.btime,
        Some(Timestamp {
            secs: 1_600_000_000,
            nanos: 5
        })
    );
    assert_eq!(
        r.ctime,
        Some(Timestamp {
            secs: 1_700_000_001,
            nanos: 1
        })
    );
    assert_eq!(
        r.atime,
        Some(Timestamp {
            secs: -2,
            nanos: 999_999_999
        })
    );
    assert_eq!((r.uid, r.gid, r.access), (Some(501), Some(20), Some(0o644)));
    assert_eq!(r.file_id, Some(0x1122_3344_5566_7788));
    assert_eq!(
        (r.nlink, r.alloc_size, r.io_block_size),
        (Some(2), Some(8192), Some(4096))
    );
    assert_eq!((r.data_length, r.error), (Some(5000), None));
    // The file id sits after ten 4-byte-multiple attributes: at an offset that is
    // 4-aligned but not 8-aligned, read unaligned.
    let id_at = buffer
        .windows(8)
        .position(|w| w == 0x1122_3344_5566_7788u64.to_ne_bytes())
        .unwrap();
    assert_eq!(id_at % 8, 4, "the layout this test means to cover");
}

#[test]
fn a_folder_record_has_no_file_fields_and_an_error_is_read() {
    let attrs = [
        (Attr::ObjType, Packed::U32(2)),
        (Attr::FileId, Packed::U64(7)),
        (Attr::Error, Packed::U32(13)),
    ];
    let buffer = record(Some(b"d"), &attrs);
    let parsed = parse(&buffer, 1).unwrap();
    let r = &parsed[0];
    assert_eq!(
        (r.kind, r.file_id, r.error),
        (Some(FileKind::Dir), Some(7), Some(13))
    );
    assert_eq!((r.data_length, r.nlink, r.device), (None, None, None));
}

#[test]
fn several_records_in_one_buffer_are_read_in_turn() {
    let mut buffer = Vec::new();
    let names: [&[u8]; 4] = [b"a", b"bb", b"ccc", b"a-much-longer-name-than-the-others"];
    for (i, name) in names.iter().enumerate() {
        buffer.extend(record(Some(name), &file_attrs(i as u64, i as u64 * 10)));
    }
    let parsed = parse(&buffer, names.len()).unwrap();
    let got: Vec<(&[u8], Option<u64>, Option<u64>)> = parsed
        .iter()
        .map(|r| (r.name.unwrap(), r.file_id, r.data_length))
        .collect();
    let expected: Vec<(&[u8], Option<u64>, Option<u64>)> = (names.iter().enumerate())
        .map(|(i, n)| (*n, Some(i as u64), Some(i as u64 * 10)))
        .collect();
    assert_eq!(got, expected);
    // Fewer asked for than are there: only those.
    assert_eq!(parse(&buffer, 2).unwrap().len(), 2);
    // More asked for than are there: the buffer ends.
    assert!(matches!(
        parse(&buffer, 5),
        Err(BadRecord::PastBuffer { index: 4, .. })
    ));
}

#[test]
fn a_record_that_ends_early_is_refused() {
    let full = record(Some(b"f"), &file_attrs(1, 1));
    // Its length cut to before its last attributes, and the buffer with it.
    for cut in [24, 40, 80, full.len() - 12] {
        let mut short = full[..cut].to_vec();
        short[..4].copy_from_slice(&(cut as u32).to_ne_bytes());
        assert!(parse(&short, 1).is_err(), "cut at {cut}");
    }
    // A length under the header, and zero, which would never advance.
    for length in [0u32, 4, 20] {
        let mut bad = full.clone();
        bad[..4].copy_from_slice(&length.to_ne_bytes());
        assert!(
            matches!(parse(&bad, 1), Err(BadRecord::Short { .. })),
            "length {length}"
        );
    }
    // A length past the buffer.
    let mut long = full.clone();
    long[..4].copy_from_slice(&(full.len() as u32 + 4).to_ne_bytes());
    assert!(matches!(
        parse(&long, 1),
        Err(BadRecord::PastBuffer { index: 0, at: 0 })
    ));
}

#[test]
fn a_name_that_points_outside_its_record_or_is_empty_is_refused() {
    let good = record(Some(b"name"), &file_attrs(1, 1));
    let name_at = 24;
    for (offset, length) in [
        (10_000i32, 5u32),
        (-100, 5),
        (8, 10_000),
        (-24, 4),
        (i32::MAX, u32::MAX),
    ] {
        let mut bad = good.clone();
        bad[name_at..name_at + 4].copy_from_slice(&offset.to_ne_bytes());
        bad[name_at + 4..name_at + 8].copy_from_slice(&length.to_ne_bytes());
        let parsed = parse(&bad, 1);
        // Pointing back into the header lands on bytes that are no name either.
        assert!(
            parsed.is_err() || offset == -24,
            "offset {offset}, length {length}: {parsed:?}"
        );
    }
    // A name pointing into the next record is outside its own.
    let mut two = good.clone();
    two.extend(record(Some(b"next"), &file_attrs(2, 2)));
    two[name_at..name_at + 4].copy_from_slice(&(good.len() as i32).to_ne_bytes());
    assert!(matches!(
        parse(&two, 2),
        Err(BadRecord::NameOutside { index: 0 })
    ));
    let mut empty = good.clone();
    let length_at = name_at + 4;
    empty[length_at..length_at + 4].copy_from_slice(&1u32.to_ne_bytes());
    let data_at =
        name_at + u32::from_ne_bytes(good[name_at..name_at + 4].try_into().unwrap()) as usize;
    empty[data_at] = 0;
    assert!(matches!(
        parse(&empty, 1),
        Err(BadRecord::EmptyName { index: 0 })
    ));
}

#[test]
fn random_bytes_and_slices_give_an_error_or_records_never_a_panic() {
    let mut rng = fastrand::Rng::with_seed(3);
    let mut valid = Vec::new();
    for i in 0..5 {
        valid.extend(record(Some(format!("n{i}").as_bytes()), &file_attrs(i, i)));
    }
    for _ in 0..20_000 {
        let mut buffer = if rng.bool() {
            valid.clone()
        } else {
            (0..rng.usize(0..600)).map(|_| rng.u8(..)).collect()
        };
        // Damage a few bytes, then take a random slice.
        for _ in 0..rng.usize(0..6) {
            if !buffer.is_empty() {
                let at = rng.usize(0..buffer.len());
                buffer[at] = rng.u8(..);
            }
        }
        let start = rng.usize(0..=buffer.len());
        let end = rng.usize(start..=buffer.len());
        let _ = parse(&buffer[start..end], rng.usize(0..8));
    }
}

#[test]
fn an_error_record_is_read_as_the_kernel_packs_it_error_before_name() {
    // Laid out by hand as XNU's get_error_attributes packs a record it could not
    // fill, independently of COMMON's order: the returned set (RETURNED | ERROR |
    // NAME), the error, the name's reference, the name.
    let mut buffer = Vec::new();
    buffer.extend(0u32.to_ne_bytes());
    buffer.extend((0x8000_0000u32 | 0x2000_0000 | 0x1).to_ne_bytes());
    buffer.extend([0u8; 16]);
    buffer.extend(13u32.to_ne_bytes()); // EACCES
    let name = b"some-file-name\0";
    buffer.extend(8i32.to_ne_bytes()); // the name follows the reference
    buffer.extend((name.len() as u32).to_ne_bytes());
    buffer.extend(name);
    while buffer.len() % 8 != 0 {
        buffer.push(0);
    }
    let length = buffer.len() as u32;
    buffer[..4].copy_from_slice(&length.to_ne_bytes());
    let parsed = parse(&buffer, 1).unwrap();
    assert_eq!(parsed[0].error, Some(13));
    assert_eq!(parsed[0].name, Some(&b"some-file-name"[..]));
    assert_eq!((parsed[0].kind, parsed[0].file_id), (None, None));
}
