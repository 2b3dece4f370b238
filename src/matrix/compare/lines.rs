//! Lines of a text of any size, read in blocks: each line's digest, or its first
//! bytes for showing, and never the whole line, so a line of a gigabyte costs no
//! more memory than a short one. The streaming comparisons (in order and as a
//! multiset) read their texts through this, whether the text is a captured file
//! or a normalized text in memory.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::files::first_differing_byte;
use super::show::LONG_LINE;

/// Bytes of a line kept for showing: the longest line a diff shows whole.
pub(super) const KEPT: usize = LONG_LINE;

/// Bytes read from a file at a time.
const BLOCK: usize = 1 << 16;

/// A text to compare: in memory, or a file read in blocks. It can be opened more
/// than once: a comparison reads each text once for digests and again, a little
/// behind, for the few lines it shows.
#[derive(Clone, Copy)]
pub(super) enum Text<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

impl<'a> Text<'a> {
    pub(super) fn lines(self) -> io::Result<Lines<'a>> {
        Ok(Lines {
            reader: self.from(0)?,
            read: 0,
        })
    }

    /// The text from byte `offset` on.
    fn from(self, offset: u64) -> io::Result<Box<dyn BufRead + 'a>> {
        Ok(match self {
            Text::Bytes(bytes) => {
                let start = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
                Box::new(&bytes[start..])
            }
            Text::File(path) => {
                let mut file = File::open(path)?;
                file.seek(SeekFrom::Start(offset))?;
                Box::new(BufReader::with_capacity(BLOCK, file))
            }
        })
    }
}

/// A line as a report shows it: [`KEPT`] bytes of it, newline left out, from its
/// start or (see [`refocus`]) from a little before where it differs.
#[derive(Debug, Clone)]
pub(super) struct Kept {
    pub text: Vec<u8>,
    /// Where in the line `text` starts.
    pub from: u64,
    /// The whole line's length, newline left out.
    pub len: u64,
    /// Whether a newline ended it; only a text's last line may lack one.
    pub ended: bool,
    /// Where in its text the line starts.
    pub at: u64,
}

/// A text's lines, one at a time. A line is what ends with a newline, and the
/// bytes after the last newline when there are any: `a\nb` has two lines, `a\n`
/// one, and the empty text none.
pub(super) struct Lines<'a> {
    reader: Box<dyn BufRead + 'a>,
    /// Bytes consumed so far: where the next line starts.
    read: u64,
}

impl Lines<'_> {
    /// Hands the next line to `piece`, in one piece or several, newline left out;
    /// then says whether a newline ended it, or `None` when no line was left.
    fn next_with(&mut self, mut piece: impl FnMut(&[u8])) -> io::Result<Option<bool>> {
        let mut started = false;
        loop {
            let buffer = match self.reader.fill_buf() {
                Ok(buffer) => buffer,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if buffer.is_empty() {
                return Ok(started.then_some(false));
            }
            started = true;
            if let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                piece(&buffer[..end]);
                self.reader.consume(end + 1);
                self.read += end as u64 + 1;
                return Ok(Some(true));
            }
            let whole = buffer.len();
            piece(buffer);
            self.reader.consume(whole);
            self.read += whole as u64;
        }
    }

    /// The next line's digest: 128 bits of the sha256 of its bytes followed by one
    /// byte saying whether a newline ended it, so `a` at the end of a text and
    /// `a\n` differ. A digest is of the line's bytes however the reads split them.
    pub(super) fn next_digest(&mut self) -> io::Result<Option<u128>> {
        let mut hasher = Sha256::new();
        let Some(ended) = self.next_with(|piece| hasher.update(piece))? else {
            return Ok(None);
        };
        hasher.update([u8::from(ended)]);
        let digest = hasher.finalize();
        let mut low = [0u8; 16];
        low.copy_from_slice(&digest[..16]);
        Ok(Some(u128::from_le_bytes(low)))
    }

    /// The next line as shown.
    pub(super) fn next_kept(&mut self) -> io::Result<Option<Kept>> {
        let mut text = Vec::new();
        let mut len = 0u64;
        let at = self.read;
        let ended = self.next_with(|piece| {
            let room = KEPT.saturating_sub(text.len());
            text.extend_from_slice(&piece[..room.min(piece.len())]);
            len += piece.len() as u64;
        })?;
        Ok(ended.map(|ended| Kept {
            text,
            from: 0,
            len,
            ended,
            at,
        }))
    }

    /// Passes over the next line; whether there was one.
    pub(super) fn skip(&mut self) -> io::Result<bool> {
        Ok(self.next_with(|_| {})?.is_some())
    }
}

/// Two lines longer than what is kept of them, whose kept bytes are the same:
/// each is read again from its text, side by side up to where they first differ,
/// and keeps [`KEPT`] bytes from a little before there, so the diff shows the
/// difference and not two equal starts. Lines that differ within their kept
/// bytes, or are short, are left as they are.
pub(super) fn refocus(texts: (Text, Text), x: &mut Kept, y: &mut Kept) -> io::Result<()> {
    let long = |k: &Kept| k.len > KEPT as u64 && k.from == 0;
    if !(long(x) && long(y)) || x.text != y.text {
        return Ok(());
    }
    let Some(differs_at) = first_difference(texts, x, y)? else {
        return Ok(());
    };
    let from = differs_at.saturating_sub(BEFORE_THE_DIFFERENCE);
    for (text, kept) in [(texts.0, x), (texts.1, y)] {
        let mut window = Vec::new();
        let rest = kept.len.saturating_sub(from).min(KEPT as u64);
        text.from(kept.at + from)?
            .take(rest)
            .read_to_end(&mut window)?;
        kept.text = window;
        kept.from = from;
    }
    Ok(())
}

/// Bytes of a line kept before its first difference by [`refocus`].
const BEFORE_THE_DIFFERENCE: u64 = 64;

/// Where in two lines they first differ, reading both from their texts; none
/// when they hold the same bytes.
fn first_difference(texts: (Text, Text), x: &Kept, y: &Kept) -> io::Result<Option<u64>> {
    let mut a = texts.0.from(x.at)?.take(x.len);
    let mut b = texts.1.from(y.at)?.take(y.len);
    first_differing_byte(&mut a, &mut b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digests(text: &[u8]) -> Vec<u128> {
        let mut lines = Text::Bytes(text).lines().unwrap();
        std::iter::from_fn(|| lines.next_digest().unwrap()).collect()
    }

    #[test]
    fn lines_end_at_newlines_and_at_the_end() {
        assert_eq!(digests(b"").len(), 0);
        assert_eq!(digests(b"\n").len(), 1);
        assert_eq!(digests(b"a\nb").len(), 2);
        assert_eq!(digests(b"a\nb\n").len(), 2);
        let (ended, open) = (digests(b"a\n"), digests(b"a"));
        assert_ne!(ended, open, "a missing last newline is a difference");
        assert_eq!(digests(b"x\na\n")[1], ended[0]);
    }

    /// A reader that fails with each error of `errors` in turn before each of its
    /// two pieces of text: `a\nb` and `c\n`.
    struct Failing {
        errors: Vec<io::ErrorKind>,
        pieces: Vec<&'static [u8]>,
        fail_next: bool,
    }

    impl io::Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.fail_next = !self.fail_next;
            if self.fail_next {
                if let Some(kind) = self.errors.pop() {
                    return Err(io::Error::new(kind, "made up"));
                }
            }
            let Some(piece) = self.pieces.pop() else {
                return Ok(0);
            };
            buf[..piece.len()].copy_from_slice(piece);
            Ok(piece.len())
        }
    }

    fn lines_of(errors: Vec<io::ErrorKind>) -> Lines<'static> {
        let pieces = vec![&b"c\n"[..], b"a\nb"];
        let reader = Failing {
            errors,
            pieces,
            fail_next: false,
        };
        Lines {
            reader: Box::new(io::BufReader::new(reader)),
            read: 0,
        }
    }

    #[test]
    fn an_interrupted_read_is_retried_and_any_other_error_ends_the_text() {
        let interrupted = vec![io::ErrorKind::Interrupted; 2];
        let mut lines = lines_of(interrupted);
        let read: Vec<u128> = std::iter::from_fn(|| lines.next_digest().unwrap()).collect();
        assert_eq!(read, digests(b"a\nbc\n"));
        let mut lines = lines_of(vec![io::ErrorKind::PermissionDenied]);
        let error = lines.next_digest().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn a_line_read_in_many_blocks_has_the_digest_it_has_in_one() {
        let dir = tempfile::tempdir().unwrap();
        let long = "z".repeat(3 * BLOCK + 17);
        let text = format!("{long}\nshort\n{long}");
        let path = dir.path().join("text");
        std::fs::write(&path, &text).unwrap();
        let mut file = Text::File(&path).lines().unwrap();
        let from_file: Vec<u128> = std::iter::from_fn(|| file.next_digest().unwrap()).collect();
        assert_eq!(from_file, digests(text.as_bytes()));
        assert_eq!(from_file[0], digests(format!("{long}\n").as_bytes())[0]);
        let mut kept = Text::File(&path).lines().unwrap();
        let first = kept.next_kept().unwrap().unwrap();
        assert_eq!((first.text.len(), first.len), (KEPT, long.len() as u64));
        assert!(kept.skip().unwrap());
        let last = kept.next_kept().unwrap().unwrap();
        assert!(!last.ended);
        assert!(kept.next_kept().unwrap().is_none());
    }
}
