//! What std's `Metadata` does not give on Windows on stable Rust, taken by handle
//! for the reference: the file index (the inode), the volume serial number (the
//! device), the link count and the allocation size (`st_blocks`). Without them the
//! reference could count neither hard links nor disk usage as the fast engine does.
//! The entry is opened through std, for its attributes only, and asked with
//! `GetFileInformationByHandle` and `GetFileInformationByHandleEx(FileStandardInfo)`;
//! what cannot be asked stays unknown.

use std::fs::OpenOptions;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Storage::FileSystem::{
    FileStandardInfo, GetFileInformationByHandle, GetFileInformationByHandleEx,
    BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_STANDARD_INFO,
};

use crate::walk::stat::{Field, Source, StatFields};

/// `fields` with the file index, volume serial, link count and allocation size of
/// the entry at `path` (the link itself unless `follow`) added where they can be
/// asked.
pub(super) fn add(mut fields: StatFields, path: &Path, follow: bool) -> StatFields {
    // Backup semantics open folders too; the reparse flag opens a link itself.
    let flags = FILE_FLAG_BACKUP_SEMANTICS
        | if follow {
            0
        } else {
            FILE_FLAG_OPEN_REPARSE_POINT
        };
    let opened = OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(flags)
        .open(path);
    let Ok(file) = opened else {
        return fields;
    };
    let handle = file.as_raw_handle();
    let src = Source::PathStat;
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: the handle is open for as long as `file` lives; `info` is writable.
    if unsafe { GetFileInformationByHandle(handle, &mut info) } != 0 {
        let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
        // An index of 0 is a file system without ids: no identity to count by.
        fields.ino = (index != 0).then(|| Field::new(index, src));
        fields.dev = Some(Field::new(u64::from(info.dwVolumeSerialNumber), src));
        fields.nlink = Some(Field::new(u64::from(info.nNumberOfLinks), src));
    }
    let mut standard = FILE_STANDARD_INFO::default();
    let size = std::mem::size_of::<FILE_STANDARD_INFO>() as u32;
    // SAFETY: as above; `standard` is the struct FileStandardInfo fills, of `size`.
    let ok = unsafe {
        GetFileInformationByHandleEx(handle, FileStandardInfo, (&raw mut standard).cast(), size)
    };
    if ok != 0 && standard.AllocationSize >= 0 {
        // 512-byte units, a partly used one counted whole.
        let blocks = (standard.AllocationSize as u64).div_ceil(512);
        fields.blocks = Some(Field::new(blocks, src));
    }
    fields
}
