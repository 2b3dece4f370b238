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

/// The whole file at `path` as text, when it is a regular file of UTF-8.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
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
