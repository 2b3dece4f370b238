//! The parsers against buffers built here field by field, in the order and with the
//! padding the documented structs have, so a wrong offset in the parser shows as a
//! wrong value; then each malformed chain, and random bytes that must never panic.

use super::*;

/// `IO_REPARSE_TAG_SYMLINK`.
const TAG_SYMLINK: u32 = 0xA000_000C;
/// `IO_REPARSE_TAG_MOUNT_POINT`: a junction or a volume mount point.
const TAG_MOUNT_POINT: u32 = 0xA000_0003;

/// One entry to lay out.
#[derive(Clone)]
struct Spec {
    name: &'static str,
    attributes: u32,
    tag: u32,
    times: [i64; 4],
    end_of_file: i64,
    allocation: i64,
    file_id: u64,
}

fn spec(name: &'static str, n: i64) -> Spec {
    Spec {
        name,
        attributes: 0x20, // FILE_ATTRIBUTE_ARCHIVE
        tag: 0,
        times: [
            133_000_000_000_000_000 + n,
            133_000_000_000_000_100 + n,
            133_000_000_000_000_200 + n,
            133_000_000_000_000_300 + n,
        ],
        end_of_file: 1000 + n,
        allocation: 4096 * (n + 1),
        file_id: 0x1_0000_0000 + n as u64,
    }
}

/// Appends one record as `class` lays it out, its `NextEntryOffset` left 0; returns
/// where it starts. Records start on 8-byte boundaries, as Windows aligns them.
fn push(buffer: &mut Vec<u8>, class: Class, s: &Spec) -> usize {
    while buffer.len() % 8 != 0 {
        buffer.push(0);
    }
    let start = buffer.len();
    let name: Vec<u8> = s.name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let mut put = |bytes: &[u8]| buffer.extend_from_slice(bytes);
    put(&0u32.to_le_bytes()); // NextEntryOffset
    put(&7u32.to_le_bytes()); // FileIndex
    for time in s.times {
        put(&time.to_le_bytes()); // Creation, LastAccess, LastWrite, Change
    }
    put(&s.end_of_file.to_le_bytes());
    put(&s.allocation.to_le_bytes());
    put(&s.attributes.to_le_bytes());
    put(&(name.len() as u32).to_le_bytes());
    match class {
        Class::IdExtd => {
            put(&99u32.to_le_bytes()); // EaSize
            put(&s.tag.to_le_bytes()); // ReparsePointTag
            put(&s.file_id.to_le_bytes()); // FileId: low 64 bits ...
            put(&0x5555_u64.to_le_bytes()); // ... and high, ignored
        }
        Class::IdBoth => {
            // EaSize holds the tag of a reparse point, else the EA size.
            let ea = if s.tag != 0 { s.tag } else { 99 };
            put(&ea.to_le_bytes());
            put(&[8u8, 0xEE]); // ShortNameLength (CCHAR), padding to a u16
            put(&[b'S'; 24]); // ShortName [u16; 12]
            put(&[0xEE; 2]); // padding up to the i64
            put(&s.file_id.to_le_bytes()); // FileId
        }
    }
    put(&name);
    start
}

/// A buffer of these records, chained.
fn chain(class: Class, specs: &[Spec]) -> Vec<u8> {
    let mut buffer = Vec::new();
    let starts: Vec<usize> = specs.iter().map(|s| push(&mut buffer, class, s)).collect();
    for pair in starts.windows(2) {
        let next = (pair[1] - pair[0]) as u32;
        buffer[pair[0]..pair[0] + 4].copy_from_slice(&next.to_le_bytes());
    }
    buffer
}

fn name(record: &DirRecord) -> String {
    String::from_utf16_lossy(&record.name)
}

const CLASSES: [Class; 2] = [Class::IdExtd, Class::IdBoth];

#[test]
fn several_records_parse_with_every_field_and_dots_left_out() {
    let mut link = spec("link", 3);
    link.attributes = ATTRIBUTE_REPARSE_POINT;
    link.tag = TAG_SYMLINK;
    let mut folder = spec("sub", 2);
    folder.attributes = ATTRIBUTE_DIRECTORY;
    let specs = [
        spec(".", 0),
        spec("..", 0),
        spec("a", 1),
        folder,
        link,
        spec("été 日本", 4),
    ];
    for class in CLASSES {
        let records = parse(&chain(class, &specs), class).unwrap();
        let names: Vec<String> = records.iter().map(name).collect();
        assert_eq!(names, ["a", "sub", "link", "été 日本"], "{class:?}");
        for (record, s) in records.iter().zip(&specs[2..]) {
            assert_eq!(record.attributes, s.attributes, "{class:?}");
            assert_eq!(record.reparse_tag, s.tag, "{class:?}");
            let times = [
                record.creation,
                record.last_access,
                record.last_write,
                record.change.unwrap(),
            ];
            assert_eq!(times, s.times, "{class:?}");
            assert_eq!(record.end_of_file, s.end_of_file, "{class:?}");
            assert_eq!(record.allocation, Some(s.allocation), "{class:?}");
            assert_eq!(record.file_id, Some(s.file_id), "{class:?}");
        }
        let kinds: Vec<FileKind> = records.iter().map(|r| r.fields(1).kind).collect();
        use FileKind::*;
        assert_eq!(kinds, [File, Dir, Symlink, File], "{class:?}");
    }
}

#[test]
fn one_record_alone_and_a_zero_file_id_is_unknown() {
    let mut s = spec("only", 0);
    s.file_id = 0;
    for class in CLASSES {
        let records = parse(&chain(class, &[s.clone()]), class).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].file_id, None, "{class:?}");
        assert_eq!(records[0].fields(9).ino, None, "{class:?}");
    }
}

#[test]
fn a_record_shorter_than_its_fixed_part_is_an_error() {
    for class in CLASSES {
        let buffer = chain(class, &[spec("x", 0)]);
        let cut = &buffer[..class.fixed_len() - 1];
        assert!(
            matches!(
                parse(cut, class),
                Err(ParseError::ShortRecord { at: 0, .. })
            ),
            "{class:?}"
        );
        assert!(matches!(
            parse(&[], class),
            Err(ParseError::ShortRecord { at: 0, left: 0 })
        ));
    }
}

#[test]
fn a_name_running_past_the_buffer_is_an_error() {
    for class in CLASSES {
        let buffer = chain(class, &[spec("abcdef", 0)]);
        let cut = &buffer[..buffer.len() - 2];
        assert_eq!(
            parse(cut, class),
            Err(ParseError::NamePastBuffer {
                at: 0,
                name_len: 12
            }),
            "{class:?}"
        );
    }
}

#[test]
fn an_odd_name_length_is_an_error() {
    for class in CLASSES {
        let mut buffer = chain(class, &[spec("abc", 0)]);
        buffer[FILE_NAME_LENGTH..FILE_NAME_LENGTH + 4].copy_from_slice(&5u32.to_le_bytes());
        assert_eq!(
            parse(&buffer, class),
            Err(ParseError::OddNameLength { at: 0, name_len: 5 }),
            "{class:?}"
        );
    }
}

#[test]
fn a_chain_pointing_past_the_buffer_is_an_error() {
    for class in CLASSES {
        let mut buffer = chain(class, &[spec("a", 0), spec("b", 1)]);
        let second = u32::from_le_bytes(buffer[0..4].try_into().unwrap()) as usize;
        // The second record now points exactly at the end, then far past it.
        for next in [buffer.len() - second, u32::MAX as usize] {
            buffer[second..second + 4].copy_from_slice(&(next as u32).to_le_bytes());
            assert_eq!(
                parse(&buffer, class),
                Err(ParseError::ChainPastBuffer { at: second, next }),
                "{class:?}"
            );
        }
    }
}

#[test]
fn a_chain_that_does_not_advance_past_its_record_is_an_error() {
    for class in CLASSES {
        let mut buffer = chain(class, &[spec("a", 0), spec("b", 1)]);
        let second = u32::from_le_bytes(buffer[0..4].try_into().unwrap()) as usize;
        // Pointing back at itself is impossible (the offset is unsigned); pointing
        // into itself would read its own fields as the next record, over and over.
        for next in [1, 8, class.fixed_len()] {
            buffer[second..second + 4].copy_from_slice(&(next as u32).to_le_bytes());
            assert_eq!(
                parse(&buffer, class),
                Err(ParseError::DoesNotAdvance { at: second, next }),
                "{class:?}"
            );
        }
    }
}

#[test]
fn random_bytes_and_slices_give_a_result_and_never_panic() {
    let mut rng = fastrand::Rng::with_seed(12);
    let valid = chain(
        Class::IdExtd,
        &[spec("a", 0), spec("bb", 1), spec("ccc", 2)],
    );
    let mut parsed = 0;
    for round in 0..20_000 {
        let buffer: Vec<u8> = if round % 2 == 0 {
            let len = rng.usize(0..400);
            (0..len).map(|_| rng.u8(..)).collect()
        } else {
            // A valid chain with a few bytes changed and cut anywhere: reaches the
            // deeper checks that random bytes rarely pass.
            let mut b = valid.clone();
            for _ in 0..rng.usize(0..4) {
                let at = rng.usize(0..b.len());
                b[at] = rng.u8(..);
            }
            let start = rng.usize(0..b.len());
            let end = rng.usize(start..=b.len());
            b[start..end].to_vec()
        };
        for class in CLASSES {
            if let Ok(records) = parse(&buffer, class) {
                parsed += 1;
                for record in records {
                    let _ = record.fields(0);
                }
            }
        }
    }
    assert!(
        parsed > 0,
        "no random buffer parsed: the cases are too weak"
    );
}

#[test]
fn filetimes_become_unix_times_before_and_after_1970() {
    let epoch = 116_444_736_000_000_000;
    assert_eq!(timestamp(0), None);
    assert_eq!(timestamp(epoch), Some(Timestamp { secs: 0, nanos: 0 }));
    assert_eq!(
        timestamp(epoch + 15_000_001),
        Some(Timestamp {
            secs: 1,
            nanos: 500_000_100
        })
    );
    assert_eq!(
        timestamp(epoch - 1),
        Some(Timestamp {
            secs: -1,
            nanos: 999_999_900
        })
    );
}

#[test]
fn fields_come_from_the_listing_with_nlink_unknown() {
    let mut s = spec("f", 0);
    s.allocation = 4097;
    let record = &parse(&chain(Class::IdExtd, &[s]), Class::IdExtd).unwrap()[0];
    let fields = record.fields(0xABCD);
    assert_eq!(fields.size.unwrap(), Field::new(1000, Source::Listing));
    assert_eq!(fields.blocks.unwrap().value, 9, "4097 bytes take 9 blocks");
    assert_eq!(fields.ino.unwrap().value, 0x1_0000_0000);
    assert_eq!(fields.dev.unwrap().value, 0xABCD);
    assert_eq!(fields.nlink, None, "a listing gives no link count");
    assert_eq!(fields.mode, None);
    let secs = |t: Option<Field<Timestamp>>| t.unwrap().value;
    assert_eq!(secs(fields.btime), timestamp(record.creation).unwrap());
    assert_eq!(secs(fields.atime), timestamp(record.last_access).unwrap());
    assert_eq!(secs(fields.mtime), timestamp(record.last_write).unwrap());
    assert_eq!(
        secs(fields.ctime),
        timestamp(record.change.unwrap()).unwrap()
    );
    assert_eq!(blocks(0), Some(0));
    assert_eq!(blocks(512), Some(1));
    assert_eq!(blocks(-1), None);
}

#[test]
fn junctions_and_symlinks_are_links_other_reparse_points_are_not() {
    let r = ATTRIBUTE_REPARSE_POINT;
    let d = ATTRIBUTE_DIRECTORY;
    assert_eq!(kind(r | d, TAG_MOUNT_POINT), FileKind::Symlink);
    assert_eq!(kind(r, TAG_SYMLINK), FileKind::Symlink);
    assert_eq!(kind(r | d, TAG_SYMLINK), FileKind::Symlink);
    // A OneDrive placeholder (IO_REPARSE_TAG_CLOUD_6) is the folder it stands for.
    assert_eq!(kind(r | d, 0x9000_601A), FileKind::Dir);
    assert_eq!(kind(d, TAG_SYMLINK), FileKind::Dir, "no reparse attribute");
    assert_eq!(kind(0x20, 0), FileKind::File);
}

/// The offsets the parser reads at are those of windows-sys's structs, padding
/// included.
#[cfg(windows)]
#[test]
fn offsets_are_those_of_the_windows_structs() {
    use std::mem::offset_of;
    use windows_sys::Win32::Storage::FileSystem::{FILE_ID_BOTH_DIR_INFO, FILE_ID_EXTD_DIR_INFO};
    type E = FILE_ID_EXTD_DIR_INFO;
    type B = FILE_ID_BOTH_DIR_INFO;
    let shared = [
        (
            NEXT_ENTRY_OFFSET,
            offset_of!(E, NextEntryOffset),
            offset_of!(B, NextEntryOffset),
        ),
        (
            CREATION_TIME,
            offset_of!(E, CreationTime),
            offset_of!(B, CreationTime),
        ),
        (
            LAST_ACCESS_TIME,
            offset_of!(E, LastAccessTime),
            offset_of!(B, LastAccessTime),
        ),
        (
            LAST_WRITE_TIME,
            offset_of!(E, LastWriteTime),
            offset_of!(B, LastWriteTime),
        ),
        (
            CHANGE_TIME,
            offset_of!(E, ChangeTime),
            offset_of!(B, ChangeTime),
        ),
        (
            END_OF_FILE,
            offset_of!(E, EndOfFile),
            offset_of!(B, EndOfFile),
        ),
        (
            ALLOCATION_SIZE,
            offset_of!(E, AllocationSize),
            offset_of!(B, AllocationSize),
        ),
        (
            FILE_ATTRIBUTES,
            offset_of!(E, FileAttributes),
            offset_of!(B, FileAttributes),
        ),
        (
            FILE_NAME_LENGTH,
            offset_of!(E, FileNameLength),
            offset_of!(B, FileNameLength),
        ),
        (EA_SIZE, offset_of!(E, EaSize), offset_of!(B, EaSize)),
    ];
    for (ours, extd, both) in shared {
        assert_eq!((ours, ours), (extd, both));
    }
    assert_eq!(EXTD_REPARSE_TAG, offset_of!(E, ReparsePointTag));
    assert_eq!(EXTD_FILE_ID, offset_of!(E, FileId));
    assert_eq!(EXTD_FILE_NAME, offset_of!(E, FileName));
    assert_eq!(BOTH_FILE_ID, offset_of!(B, FileId));
    assert_eq!(BOTH_FILE_NAME, offset_of!(B, FileName));
}
