//! Which file system a path is on, as reports name it: on Linux from the
//! `statfs` magic number (which the probe's quirk table also keys on), on macOS
//! from `statfs`'s type name.

use std::path::Path;

/// The file system a path is on (`ext2/3/4`, `btrfs`, `apfs`, …), where it can be
/// told.
pub fn name(path: &Path) -> Option<String> {
    #[cfg(target_os = "macos")]
    {
        let fs = rustix::fs::statfs(path).ok()?;
        let name: Vec<u8> = (fs.f_fstypename.iter())
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Some(String::from_utf8_lossy(&name).into_owned())
    }
    #[cfg(not(target_os = "macos"))]
    {
        magic(path).map(name_of_magic)
    }
}

/// The `statfs` magic of the file system a path is on.
#[cfg(target_os = "linux")]
// `f_type` is as wide as a C long: i64 on 64-bit targets, i32 on 32-bit ones.
#[allow(clippy::useless_conversion)]
pub fn magic(path: &Path) -> Option<i64> {
    rustix::fs::statfs(path).ok().map(|s| i64::from(s.f_type))
}

/// Elsewhere file systems are not told apart by magic.
#[cfg(not(target_os = "linux"))]
pub fn magic(_path: &Path) -> Option<i64> {
    None
}

/// A file system's name from its magic, for the report.
pub fn name_of_magic(magic: i64) -> String {
    let known = [
        (0xef53, "ext2/3/4"),
        (0x5846_5342, "xfs"),
        (0x9123_683e, "btrfs"),
        (0x0102_1994, "tmpfs"),
        (0x794c_7630, "overlay"),
        (0x2011_bab0, "exfat"),
        (0x4d44, "vfat"),
        (0x7371_7368, "squashfs"),
        (0x6573_5546, "fuse"),
        (0x6969, "nfs"),
        (0x5346_544e, "ntfs"),
        (0x0102_1997, "9p"),
    ];
    match known.iter().find(|(m, _)| *m == magic) {
        Some((_, name)) => name.to_string(),
        None => format!("magic {magic:#x}"),
    }
}
