//! The fast engine on Windows: each folder is opened once by handle and listed whole
//! with its stat fields by `GetFileInformationByHandleEx(FileIdExtdDirectoryInfo)`,
//! so no file is opened one by one. A folder whose file system refuses that class
//! falls back, on its own, to `FileIdBothDirectoryInfo` and then to
//! `FindFirstFileExW(FindExInfoBasic, FIND_FIRST_EX_LARGE_FETCH)`; the census says
//! which call served each folder. `EQCHECK_WINDOWS_LISTING=both|find` starts the
//! chain lower, read once per process, so each step can be tried where the best
//! one works.
//!
//! The listing gives no link count (unknown, never 0), and `FindFirstFileExW` gives
//! no file id or allocation size either: entries it lists are stat'ed by handle,
//! as operands and, with `-L`, links are. Windows has no `openat` short of
//! `NtCreateFile`, so a folder keeps its full `\\?\` path (no length limit) and
//! names are opened below it.

pub(super) mod dir_info;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::OnceLock;

use windows_sys::Win32::Foundation::{
    ERROR_CALL_NOT_IMPLEMENTED, ERROR_INVALID_FUNCTION, ERROR_INVALID_LEVEL,
    ERROR_INVALID_PARAMETER, ERROR_NOT_SUPPORTED, ERROR_NO_MORE_FILES, FILETIME, HANDLE,
    INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FileAttributeTagInfo, FileBasicInfo, FileIdBothDirectoryInfo,
    FileIdBothDirectoryRestartInfo, FileIdExtdDirectoryInfo, FileIdExtdDirectoryRestartInfo,
    FileStandardInfo, FindClose, FindExInfoBasic, FindExSearchNameMatch, FindFirstFileExW,
    FindNextFileW, GetFileInformationByHandle, GetFileInformationByHandleEx,
    BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_TAG_INFO, FILE_BASIC_INFO,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_INFO_BY_HANDLE_CLASS,
    FILE_LIST_DIRECTORY, FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE, FILE_SHARE_READ,
    FILE_SHARE_WRITE, FILE_STANDARD_INFO, FIND_FIRST_EX_LARGE_FETCH, OPEN_EXISTING,
    WIN32_FIND_DATAW,
};

use self::dir_info::{Class, DirRecord};
use super::bulk::{BulkEntry, FolderListing, Platform};
use crate::walk::census::{Counters, CountsStats, ListingCall, StatCall};
use crate::walk::stat::{Field, Source, StatFields};
use crate::walk::{FileKind, Listed, StatError};

/// The Windows calls, for [`super::bulk`]'s walk.
pub(super) struct Windows;

/// An open folder: its handle for listing, its full path to open names below it,
/// and its volume's serial number, the device of every entry listed in it.
pub(super) struct Folder {
    /// `\\?\`-prefixed, UTF-16, without a terminating NUL.
    path: Vec<u16>,
    handle: OwnedHandle,
    volume: u32,
}

/// A step of the listing chain, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Step {
    IdExtd,
    IdBoth,
    Find,
}

/// Starts the listing chain lower than its best step: `both` or `find`.
pub(super) const LISTING_VAR: &str = "EQCHECK_WINDOWS_LISTING";

/// The step each folder's listing starts from: [`LISTING_VAR`]'s, read once.
fn first_step() -> Step {
    static FIRST: OnceLock<Step> = OnceLock::new();
    *FIRST.get_or_init(|| match std::env::var_os(LISTING_VAR) {
        None => Step::IdExtd,
        Some(value) => match value.to_str() {
            Some("extd") | Some("") => Step::IdExtd,
            Some("both") => Step::IdBoth,
            Some("find") => Step::Find,
            // A misspelt request must not quietly test the default step.
            _ => panic!("{LISTING_VAR} is extd, both or find, not {value:?}"),
        },
    })
}

impl Platform for Windows {
    type Folder = Folder;

    fn open(parent: Option<&Folder>, name: &OsStr, follow: bool) -> io::Result<Folder> {
        let path = child_path(parent, name)?;
        let handle = open_handle(&path, FILE_LIST_DIRECTORY, follow)?;
        let volume = by_handle(&handle)?.dwVolumeSerialNumber;
        Ok(Folder {
            path,
            handle,
            volume,
        })
    }

    fn list(folder: &Folder, _census: &Counters) -> FolderListing {
        list_from(folder, first_step())
    }

    /// A stat by handle, counted as `fstatat`: the census has no column of its own
    /// for Windows, and this call plays that part (a name below an open folder).
    fn stat(
        parent: Option<&Folder>,
        name: &OsStr,
        follow: bool,
        census: &Counters,
    ) -> Result<StatFields, StatError> {
        census.stat(StatCall::Fstatat);
        let path = child_path(parent, name).map_err(StatError::Io)?;
        match stat_path(&path, follow) {
            Err(err) if follow && err.kind() == io::ErrorKind::NotFound => {
                let link = stat_path(&path, false).is_ok_and(|f| f.kind == FileKind::Symlink);
                Err(if link {
                    StatError::DanglingLink
                } else {
                    StatError::Io(err)
                })
            }
            stat => stat.map_err(StatError::Io),
        }
    }
}

/// Lists a folder from step `first` down: a step is left for the next when the
/// file system refuses its class, or its records do not parse (the next step starts
/// the listing over).
pub(super) fn list_from(folder: &Folder, first: Step) -> FolderListing {
    if first <= Step::IdExtd {
        if let Some(listing) = by_class(folder, Class::IdExtd) {
            return listing;
        }
    }
    if first <= Step::IdBoth {
        if let Some(listing) = by_class(folder, Class::IdBoth) {
            return listing;
        }
    }
    find(folder)
}

/// The buffer each call fills: 64 KiB, one per walker thread, 8-byte aligned as
/// the directory classes require.
const BUFFER_WORDS: usize = 64 * 1024 / 8;

thread_local! {
    static BUFFER: RefCell<Vec<u64>> = RefCell::new(vec![0; BUFFER_WORDS]);
}

/// Lists with one directory class; None when the file system refuses it (on the
/// first call, before anything was read) or a buffer does not parse.
fn by_class(folder: &Folder, class: Class) -> Option<FolderListing> {
    // The restart class starts at the folder's first entry wherever an earlier step
    // left the handle; the plain class goes on from there.
    let (first_class, next_class, call) = match class {
        Class::IdExtd => (
            FileIdExtdDirectoryRestartInfo,
            FileIdExtdDirectoryInfo,
            ListingCall::FileIdExtdDirectoryInfo,
        ),
        Class::IdBoth => (
            FileIdBothDirectoryRestartInfo,
            FileIdBothDirectoryInfo,
            ListingCall::FileIdBothDirectoryInfo,
        ),
    };
    BUFFER.with_borrow_mut(|buffer| {
        let mut entries = Vec::new();
        let mut info_class: FILE_INFO_BY_HANDLE_CLASS = first_class;
        loop {
            let filled = fill(&folder.handle, info_class, buffer);
            if let Err(err) = filled {
                let code = err.raw_os_error().map_or(0, |c| c as u32);
                if code == ERROR_NO_MORE_FILES {
                    break;
                }
                if info_class == first_class && refused(code) {
                    return None;
                }
                return Some(FolderListing {
                    entries,
                    error: Some(err),
                    call,
                });
            }
            info_class = next_class;
            // SAFETY: any u64 is 8 valid bytes; the slice borrows the buffer.
            let bytes = unsafe {
                std::slice::from_raw_parts(buffer.as_ptr().cast::<u8>(), buffer.len() * 8)
            };
            let records = dir_info::parse(bytes, class).ok()?;
            entries.extend(records.into_iter().map(|r| listed(r, folder.volume)));
        }
        Some(FolderListing {
            entries,
            error: None,
            call,
        })
    })
}

/// Whether an error says the class is not supported here (rather than a failure
/// while listing): the file system, the driver or Wine refuses it.
fn refused(code: u32) -> bool {
    [
        ERROR_INVALID_PARAMETER,
        ERROR_NOT_SUPPORTED,
        ERROR_INVALID_LEVEL,
        ERROR_INVALID_FUNCTION,
        ERROR_CALL_NOT_IMPLEMENTED,
    ]
    .contains(&code)
}

/// One `GetFileInformationByHandleEx` call into the buffer.
fn fill(
    handle: &OwnedHandle,
    class: FILE_INFO_BY_HANDLE_CLASS,
    buffer: &mut [u64],
) -> io::Result<()> {
    let size = (buffer.len() * 8) as u32;
    // SAFETY: the handle is open, and the buffer is writable for `size` bytes and
    // 8-byte aligned for the whole call.
    let ok = unsafe {
        GetFileInformationByHandleEx(raw(handle), class, buffer.as_mut_ptr().cast(), size)
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An entry with the fields its record gave.
fn listed(record: DirRecord, volume: u32) -> BulkEntry {
    let fields = record.fields(volume);
    BulkEntry {
        name: OsString::from_wide(&record.name),
        listed: Some(Listed {
            kind: fields.kind,
            ino: record.file_id.unwrap_or(0),
        }),
        fields: Some(fields),
    }
}

/// Lists with `FindFirstFileExW`, the last step, which every file system answers.
/// It gives no file id, link count or allocation size, without which hard links and
/// disk usage cannot be counted as the reference counts them: its entries carry
/// only names, and the walk stats each by handle. Nor does it give a type the
/// census could trust apart from the stat, so it records none.
fn find(folder: &Folder) -> FolderListing {
    let call = ListingCall::FindFirstFileEx;
    let mut pattern = folder.path.clone();
    if pattern.last() != Some(&u16::from(b'\\')) {
        pattern.push(u16::from(b'\\'));
    }
    pattern.extend([u16::from(b'*'), 0]);
    // SAFETY: zeroed is a valid WIN32_FIND_DATAW (integers and arrays of them).
    let mut data: WIN32_FIND_DATAW = unsafe { std::mem::zeroed() };
    // SAFETY: the pattern is NUL-terminated and outlives the call; `data` is the
    // WIN32_FIND_DATAW that FindExInfoBasic fills; no search filter is passed.
    let search = unsafe {
        FindFirstFileExW(
            pattern.as_ptr(),
            FindExInfoBasic,
            (&raw mut data).cast(),
            FindExSearchNameMatch,
            std::ptr::null(),
            FIND_FIRST_EX_LARGE_FETCH,
        )
    };
    if search == INVALID_HANDLE_VALUE {
        return FolderListing {
            entries: Vec::new(),
            error: Some(io::Error::last_os_error()),
            call,
        };
    }
    let mut entries = Vec::new();
    let mut error = None;
    loop {
        let len = (data.cFileName.iter())
            .position(|&c| c == 0)
            .unwrap_or(data.cFileName.len());
        let name = &data.cFileName[..len];
        if !dir_info::is_dot_or_dot_dot(name) {
            entries.push(BulkEntry {
                name: OsString::from_wide(name),
                listed: None,
                fields: None,
            });
        }
        // SAFETY: `search` is the open search handle; `data` is writable.
        if unsafe { FindNextFileW(search, &mut data) } == 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(ERROR_NO_MORE_FILES as i32) {
                error = Some(err);
            }
            break;
        }
    }
    // SAFETY: `search` is open and closed once, here.
    unsafe { FindClose(search) };
    FolderListing {
        entries,
        error,
        call,
    }
}

/// The full path of `name` below `parent`, or of the operand `name` made absolute,
/// as a `\\?\` path: no length limit, and no rewriting of names Win32 would trim
/// (trailing dots and spaces).
fn child_path(parent: Option<&Folder>, name: &OsStr) -> io::Result<Vec<u16>> {
    let Some(parent) = parent else {
        return Ok(verbatim(std::path::absolute(name)?.as_os_str()));
    };
    let mut path = parent.path.clone();
    if path.last() != Some(&u16::from(b'\\')) {
        path.push(u16::from(b'\\'));
    }
    path.extend(name.encode_wide());
    Ok(path)
}

/// An absolute path as a `\\?\` path; one already verbatim or a device path as is.
fn verbatim(absolute: &OsStr) -> Vec<u16> {
    let wide: Vec<u16> = absolute.encode_wide().collect();
    let text = String::from_utf16_lossy(&wide[..wide.len().min(8)]);
    let prefix: &str = if text.starts_with(r"\\?\") || text.starts_with(r"\\.\") {
        ""
    } else if text.starts_with(r"\\") {
        // \\server\share\... becomes \\?\UNC\server\share\...
        return (r"\\?\UNC".encode_utf16())
            .chain(wide[1..].iter().copied())
            .collect();
    } else {
        r"\\?\"
    };
    let mut path: Vec<u16> = prefix.encode_utf16().chain(wide).collect();
    // A trailing separator (but a root's) would double when names are joined.
    while path.len() > 7 && path.last() == Some(&u16::from(b'\\')) {
        path.pop();
    }
    path
}

/// Opens `path` with `access`, folders included, through a link only when `follow`.
fn open_handle(path: &[u16], access: u32, follow: bool) -> io::Result<OwnedHandle> {
    let mut nul_terminated = path.to_vec();
    nul_terminated.push(0);
    let flags = FILE_FLAG_BACKUP_SEMANTICS
        | if follow {
            0
        } else {
            FILE_FLAG_OPEN_REPARSE_POINT
        };
    let share = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
    // SAFETY: the path is NUL-terminated and outlives the call; no security
    // attributes and no template are allowed.
    let handle = unsafe {
        CreateFileW(
            nul_terminated.as_ptr(),
            access,
            share,
            std::ptr::null(),
            OPEN_EXISTING,
            flags,
            std::ptr::null_mut(),
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle CreateFileW just returned, owned by nothing else.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

fn raw(handle: &OwnedHandle) -> HANDLE {
    handle.as_raw_handle()
}

fn by_handle(handle: &OwnedHandle) -> io::Result<BY_HANDLE_FILE_INFORMATION> {
    // SAFETY: zeroed is a valid BY_HANDLE_FILE_INFORMATION (integers only).
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open and `info` writable.
    if unsafe { GetFileInformationByHandle(raw(handle), &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

/// One fixed-size information class of a handle; None where it is refused.
fn info_class<T: Copy + Default>(
    handle: &OwnedHandle,
    class: FILE_INFO_BY_HANDLE_CLASS,
) -> Option<T> {
    let mut info = T::default();
    let size = std::mem::size_of::<T>() as u32;
    // SAFETY: the handle is open; `info` is a T of `size` bytes, the struct the
    // caller names for `class`.
    let ok =
        unsafe { GetFileInformationByHandleEx(raw(handle), class, (&raw mut info).cast(), size) };
    (ok != 0).then_some(info)
}

/// The fields of the entry at `path`, by handle: its link count and file index,
/// which no listing gives, and its allocation size and four times.
fn stat_path(path: &[u16], follow: bool) -> io::Result<StatFields> {
    let handle = open_handle(path, FILE_READ_ATTRIBUTES, follow)?;
    let info = by_handle(&handle)?;
    let src = Source::PathStat;
    let reparse_tag = if info.dwFileAttributes & dir_info::ATTRIBUTE_REPARSE_POINT != 0 {
        info_class::<FILE_ATTRIBUTE_TAG_INFO>(&handle, FileAttributeTagInfo)
            .map_or(0, |t| t.ReparseTag)
    } else {
        0
    };
    let standard = info_class::<FILE_STANDARD_INFO>(&handle, FileStandardInfo);
    let basic = info_class::<FILE_BASIC_INFO>(&handle, FileBasicInfo);
    let filetime = |t: FILETIME| (i64::from(t.dwHighDateTime) << 32) | i64::from(t.dwLowDateTime);
    let time = |t: i64| dir_info::timestamp(t).map(|t| Field::new(t, src));
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok(StatFields {
        size: Some(Field::new(
            (u64::from(info.nFileSizeHigh) << 32) | u64::from(info.nFileSizeLow),
            src,
        )),
        blocks: (standard.and_then(|s| dir_info::blocks(s.AllocationSize)))
            .map(|b| Field::new(b, src)),
        ino: (index != 0).then(|| Field::new(index, src)),
        dev: Some(Field::new(u64::from(info.dwVolumeSerialNumber), src)),
        nlink: Some(Field::new(u64::from(info.nNumberOfLinks), src)),
        mtime: time(filetime(info.ftLastWriteTime)),
        atime: time(filetime(info.ftLastAccessTime)),
        ctime: basic.and_then(|b| time(b.ChangeTime)),
        btime: time(filetime(info.ftCreationTime)),
        ..StatFields::unknown(dir_info::kind(info.dwFileAttributes, reparse_tag))
    })
}

/// A folder as `walk::folder` holds it, one at a time, for the probe and the tree
/// guard: listed once by the same chain, each name's listed fields kept until that
/// name is stat'ed, so the probe compares what the listing gave.
pub(crate) struct Held {
    folder: Folder,
    fields: Mutex<HashMap<OsString, StatFields>>,
}

impl Held {
    /// Opens the tree's root (no `parent`) or the subfolder `name`, never through a
    /// link.
    pub(crate) fn open(parent: Option<&Held>, name: &OsStr) -> io::Result<Held> {
        Ok(Held {
            folder: Windows::open(parent.map(|p| &p.folder), name, false)?,
            fields: Mutex::new(HashMap::new()),
        })
    }

    /// The folder's names with what the listing said of each, and the error that cut
    /// it short; counts the call that served and the types listed in `census`.
    pub(crate) fn names(
        &self,
        census: &Counters,
    ) -> (Vec<(OsString, Option<Listed>)>, Option<io::Error>) {
        let listing = Windows::list(&self.folder, census);
        census.served(listing.call);
        let kinds = listing
            .entries
            .iter()
            .map(|e| e.listed.map_or(FileKind::Unknown, |l| l.kind));
        census.listed(kinds);
        let mut fields = self.fields.lock().expect("listed fields lock");
        let names = (listing.entries.into_iter())
            .map(|entry| {
                if let Some(given) = entry.fields {
                    fields.insert(entry.name.clone(), given);
                }
                (entry.name, entry.listed)
            })
            .collect();
        (names, listing.error)
    }

    /// The listing's fields of `name`, or a stat by handle where it gave none.
    pub(crate) fn stat(&self, name: &OsStr, census: &Counters) -> Result<StatFields, StatError> {
        let listed = self.fields.lock().expect("listed fields lock").remove(name);
        match listed {
            Some(fields) => Ok(fields),
            None => Windows::stat(Some(&self.folder), name, false, census),
        }
    }

    /// The full path of `name` in this folder.
    pub(crate) fn path_of(&self, name: &OsStr) -> io::Result<PathBuf> {
        Ok(OsString::from_wide(&child_path(Some(&self.folder), name)?).into())
    }
}

/// Stats a tree's root as the walk stats an operand, never through a link.
pub(crate) fn stat_root(path: &Path, census: &Counters) -> Result<StatFields, StatError> {
    Windows::stat(None, path.as_os_str(), false, census)
}

#[cfg(test)]
mod tests;
