//! Reading a file the user names by path: a tree spec, a flag-set file, the
//! project config, a shard's report. Only a regular file is read (symlinks
//! followed). A FIFO would wait for a writer that never comes, and a device such as
//! `/dev/zero` would fill memory; either is refused with what the path is instead.
//! The file is opened without blocking and checked through the open handle, so what
//! is read is what was checked.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// The whole file at `path`, when it is a regular file.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        let message = format!("not a regular file, but {}", kind(&meta));
        return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The whole file at `path` as text, when it is a regular file of UTF-8; a
/// byte-order mark that some editors put first is not part of the text. A byte
/// that is not UTF-8 is named with its line and column.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    let text = String::from_utf8(read(path)?).map_err(|err| {
        let message = not_utf8(err.as_bytes(), err.utf8_error().valid_up_to());
        io::Error::new(io::ErrorKind::InvalidData, message)
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Where the first byte that is not UTF-8 is, for the message: line and column
/// count from 1, the column in bytes.
fn not_utf8(bytes: &[u8], at: usize) -> String {
    let before = &bytes[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    format!(
        "not UTF-8 text: line {line}, column {} holds the byte 0x{:02x}",
        at - line_start + 1,
        bytes[at]
    )
}

/// Opens for reading; on Unix without blocking, which opening a FIFO with no
/// writer would do (reads from a regular file are not affected).
#[cfg(unix)]
fn open(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let nonblock = rustix::fs::OFlags::NONBLOCK.bits() as i32;
    File::options().read(true).custom_flags(nonblock).open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// What a path that is not a regular file is, for the message.
fn kind(meta: &Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    match meta.is_dir() {
        true => "a folder",
        false => "neither a file nor a folder",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_dropped_and_a_byte_that_is_not_utf8_is_placed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "\u{feff}file a\n").unwrap();
        assert_eq!(read_to_string(&file).unwrap(), "file a\n");
        std::fs::write(&file, b"file a\nfile b\xff size=1\n").unwrap();
        let err = read_to_string(&file).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not UTF-8 text: line 2, column 7 holds the byte 0xff"
        );
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "text\n").unwrap();
        assert_eq!(read_to_string(&file).unwrap(), "text\n");
        #[cfg(unix)]
        {
            let err = read(dir.path()).unwrap_err();
            assert_eq!(err.to_string(), "not a regular file, but a folder");
            let err = read(Path::new("/dev/zero")).unwrap_err();
            assert_eq!(err.to_string(), "not a regular file, but a device");
        }
    }
}
