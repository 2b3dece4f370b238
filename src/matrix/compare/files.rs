//! Captured output on disk: loading a stream when it is small enough to judge in
//! memory, and comparing, hashing and counting lines of one that is not, always
//! in blocks.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::NORMALIZE_CAP;

/// A captured stream, in memory when it is small enough.
pub(super) enum Loaded {
    Text(Vec<u8>),
    TooLarge,
}

/// Reads a stream whole when it holds at most [`NORMALIZE_CAP`] bytes. A file
/// already past the cap is too large without a read: the too-large paths stream
/// whatever it holds. For any other, what reading it gives decides, so the text
/// judged is always the whole file. The read goes into room for the size found,
/// since growing a buffer of megabytes step by step cost more than the read itself.
pub(super) fn load(path: &Path) -> io::Result<Loaded> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    if size > NORMALIZE_CAP {
        return Ok(Loaded::TooLarge);
    }
    // One byte more than the size, so the read that finds the end needs no growth.
    let mut text = Vec::with_capacity(size as usize + 1);
    file.take(NORMALIZE_CAP + 1).read_to_end(&mut text)?;
    if text.len() as u64 > NORMALIZE_CAP {
        return Ok(Loaded::TooLarge);
    }
    Ok(Loaded::Text(text))
}

/// A file's lines as a multiset, read in blocks: the wrapping sum of a 128-bit
/// digest of each, and whether the last one ends with a newline (which sorting
/// keeps). Two files with the same lines in any order give the same value.
pub(super) fn line_multiset(path: &Path) -> io::Result<(u128, bool)> {
    let mut file = File::open(path)?;
    let mut buffer = vec![0u8; 1 << 16];
    let mut sum = 0u128;
    let mut line = Sha256::new();
    let mut open_line = false;
    let mut add = |line: Sha256| {
        let digest = line.finalize();
        let mut low = [0u8; 16];
        low.copy_from_slice(&digest[..16]);
        sum = sum.wrapping_add(u128::from_le_bytes(low));
    };
    let mut last = None;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        last = Some(buffer[n - 1]);
        for piece in buffer[..n].split_inclusive(|&b| b == b'\n') {
            if let Some(body) = piece.strip_suffix(b"\n") {
                line.update(body);
                add(std::mem::take(&mut line));
                open_line = false;
            } else {
                line.update(piece);
                open_line = true;
            }
        }
    }
    if open_line {
        add(line);
    }
    Ok((sum, last == Some(b'\n')))
}

/// Whether two files hold the same bytes, read side by side in blocks.
pub fn same_contents(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut a, mut b) = (File::open(a)?, File::open(b)?);
    if a.metadata()?.len() != b.metadata()?.len() {
        return Ok(false);
    }
    Ok(first_differing_byte(&mut a, &mut b)?.is_none())
}

/// Where two byte streams first differ, read side by side in blocks (one ending
/// before the other differs there); none when they hold the same bytes.
pub(super) fn first_differing_byte(
    a: &mut impl Read,
    b: &mut impl Read,
) -> io::Result<Option<u64>> {
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let mut offset = 0u64;
    loop {
        let (n, m) = (read_full(a, &mut x)?, read_full(b, &mut y)?);
        let common = n.min(m);
        // Equal blocks, the usual case, are told by one memcmp; only a block known
        // to differ is searched byte by byte.
        if x[..common] != y[..common] {
            let at = (x[..common].iter().zip(&y[..common])).position(|(p, q)| p != q);
            return Ok(Some(offset + at.unwrap_or(common) as u64));
        }
        offset += common as u64;
        if n != m {
            return Ok(Some(offset));
        }
        if n == 0 {
            return Ok(None);
        }
    }
}

/// Reads until the buffer is full or the reader ends (an interrupted read is
/// tried again); the count read.
pub(super) fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

/// The sha256 of a file, read in blocks.
pub fn digest_file(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_compare_by_contents_across_block_edges() {
        let dir = tempfile::tempdir().unwrap();
        let path = |n: &str| dir.path().join(n);
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut other = big.clone();
        *other.last_mut().unwrap() ^= 1;
        std::fs::write(path("a"), &big).unwrap();
        std::fs::write(path("b"), &big).unwrap();
        std::fs::write(path("c"), &other).unwrap();
        std::fs::write(path("d"), &big[1..]).unwrap();
        assert!(same_contents(&path("a"), &path("b")).unwrap());
        assert!(!same_contents(&path("a"), &path("c")).unwrap());
        assert!(!same_contents(&path("a"), &path("d")).unwrap());
    }

    #[test]
    fn a_stream_is_loaded_whole_up_to_the_limit_and_not_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let cap = usize::try_from(NORMALIZE_CAP).unwrap();
        let at_the_limit = dir.path().join("at");
        std::fs::write(&at_the_limit, vec![b'a'; cap]).unwrap();
        assert!(matches!(load(&at_the_limit).unwrap(), Loaded::Text(t) if t.len() == cap));
        let past_it = dir.path().join("past");
        std::fs::write(&past_it, vec![b'a'; cap + 1]).unwrap();
        assert!(matches!(load(&past_it).unwrap(), Loaded::TooLarge));
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(load(&empty).unwrap(), Loaded::Text(t) if t.is_empty()));
    }

    #[test]
    fn lines_compare_as_a_multiset() {
        let dir = tempfile::tempdir().unwrap();
        let set = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            line_multiset(&path).unwrap()
        };
        assert_eq!(set("a", "x\ny\ny\n"), set("b", "y\nx\ny\n"));
        assert_ne!(set("c", "x\ny\n"), set("d", "x\ny\ny\n"));
        assert_ne!(set("e", "x\ny\n"), set("f", "x\ny"));
        assert_ne!(set("g", "xy\n"), set("h", "x\ny\n"));
        assert_eq!(
            (set("k", "x\n").1, set("l", "x").1, set("m", "").1),
            (true, false, false)
        );
        let long = "z".repeat(200_000);
        assert_eq!(
            set("i", &format!("{long}\na\n")),
            set("j", &format!("a\n{long}\n"))
        );
    }
}
