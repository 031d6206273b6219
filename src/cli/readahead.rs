//! Reading a file ahead on its own thread.
//!
//! It exists because reading is a quarter of the work of normalizing one large file: `read(2)`
//! copies the page cache into the buffer (0.13 s of system time for the 500 MB workload, where
//! normalizing takes 0.42 s of user time). A thread that only reads keeps one or two blocks
//! ready, so the normalizing thread does nothing but normalize; with the writer thread that was
//! already there, `-j1` is one normalizing thread with its I/O on either side. Blocks are
//! recycled, so memory stays at a few blocks whatever the file's size.
//!
//! For text ([`ReadAhead::lines`]) the blocks also end at a newline: the thread moves the start
//! of a line that a read cut into the next block, so the normalizer finds whole lines in every
//! block and never copies a line that straddles two blocks (the workload's lines reach 1 MB, and
//! that copy was 6% of the normalizing thread). A block grows to hold one long line, up to a cap;
//! a line longer than that is handed on in pieces, as any reader would, and the normalizer joins
//! (or skips) it as before.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Size of the blocks read ahead.
const BLOCK: usize = 1 << 20;
/// Blocks that may wait, read, for the consumer.
const AHEAD: usize = 2;
/// A block is grown before a read that would have less room than this.
const MIN_READ: usize = BLOCK / 4;
/// A block grows to hold a line of at most this many bytes (or `--max-line-bytes`, if smaller);
/// the blocks waiting stay a few of these at worst.
const LINE_CAP: usize = 8 << 20;
/// Blocks up to this size are recycled; a larger one (grown for a long line) is freed.
const KEEP: usize = 2 * BLOCK + MIN_READ;

/// A block read, and how many of its bytes are data.
type Block = io::Result<(Vec<u8>, usize)>;

/// A reader fed by a thread that reads blocks of its source ahead of time.
pub struct ReadAhead {
    blocks: Receiver<Block>,
    spare: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    len: usize,
    pos: usize,
}

impl ReadAhead {
    /// Starts reading `src` on a new thread, in blocks as `read` returns them. The thread ends
    /// at the source's end, at its first error (handed on after the data before it), or when
    /// this reader is dropped.
    pub fn new(src: impl Read + Send + 'static) -> io::Result<ReadAhead> {
        ReadAhead::spawn(src, None)
    }

    /// Like [`new`](ReadAhead::new), for lines: every block but the source's last ends with
    /// `\n`, unless it holds only part of a line longer than `max_line` bytes (or than a cap of
    /// a few MiB), which is handed on in pieces.
    pub fn lines(src: impl Read + Send + 'static, max_line: usize) -> io::Result<ReadAhead> {
        ReadAhead::spawn(src, Some(max_line.min(LINE_CAP)))
    }

    fn spawn(src: impl Read + Send + 'static, line_limit: Option<usize>) -> io::Result<ReadAhead> {
        let (tx, blocks) = sync_channel::<Block>(AHEAD);
        let (spare, spares) = sync_channel::<Vec<u8>>(AHEAD + 2);
        std::thread::Builder::new()
            .name("read-ahead".into())
            .spawn(move || read_blocks(src, line_limit, &tx, &spares))?;
        Ok(ReadAhead { blocks, spare, cur: Vec::new(), len: 0, pos: 0 })
    }
}

/// The read-ahead thread: reads `src` into blocks and sends them until the end, an error, or the
/// reader is gone. With a `line_limit`, a block is sent only once it holds a `\n`, cut after the
/// last one; the bytes after it start the next block.
fn read_blocks(mut src: impl Read, line_limit: Option<usize>, tx: &SyncSender<Block>, spares: &Receiver<Vec<u8>>) {
    let fresh = || spares.try_recv().unwrap_or_else(|_| vec![0; BLOCK]);
    let mut buf = fresh();
    // Bytes at the start of `buf` not sent yet: the beginning of a line (only with a limit).
    let mut filled = 0;
    loop {
        if buf.len() - filled < MIN_READ {
            // `filled` bytes without a newline: one line, grown into a larger block while it is
            // within the limit, handed on as it is beyond.
            if line_limit.is_none_or(|limit| filled > limit) {
                if tx.send(Ok((std::mem::replace(&mut buf, fresh()), filled))).is_err() {
                    return;
                }
                filled = 0;
                continue;
            }
            let limit = line_limit.unwrap_or(0);
            buf.resize((2 * buf.len()).max(filled + BLOCK).min(limit + BLOCK), 0);
        }
        let n = loop {
            match src.read(&mut buf[filled..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let n = match n {
            Ok(0) | Err(_) => {
                // The last line, without its newline, then the error if there was one.
                if filled > 0 && tx.send(Ok((buf, filled))).is_err() {
                    return;
                }
                if let Err(e) = n {
                    let _ = tx.send(Err(e));
                }
                return;
            }
            Ok(n) => n,
        };
        let start = filled;
        filled += n;
        let end = match line_limit {
            None => filled,
            Some(_) => match memchr::memrchr(b'\n', &buf[start..filled]) {
                Some(i) => start + i + 1,
                // The line goes on: read on into the same block.
                None => continue,
            },
        };
        // The unfinished line after the cut starts the next block.
        let tail = filled - end;
        let mut next = fresh();
        if next.len() < tail + MIN_READ {
            next.resize(tail + BLOCK, 0);
        }
        next[..tail].copy_from_slice(&buf[end..filled]);
        if tx.send(Ok((std::mem::replace(&mut buf, next), end))).is_err() {
            return;
        }
        filled = tail;
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let block = self.fill_buf()?;
        let n = out.len().min(block.len());
        out[..n].copy_from_slice(&block[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ReadAhead {
    /// The rest of the current block, or the next block once it is used up (empty at the end):
    /// the bytes the thread read, handed out without another copy.
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.len {
            let (buf, len) = match self.blocks.recv() {
                Ok(block) => block?,
                // The thread ended: the source's end.
                Err(_) => (Vec::new(), 0),
            };
            let used = std::mem::replace(&mut self.cur, buf);
            if used.capacity() > 0 && used.capacity() <= KEEP {
                let _ = self.spare.try_send(used);
            }
            (self.len, self.pos) = (len, 0);
        }
        Ok(&self.cur[self.pos..self.len])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that returns its bytes in uneven pieces, then fails once if asked to.
    struct Pieces {
        data: Vec<u8>,
        pos: usize,
        fail_at_end: bool,
    }

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.pos == self.data.len() && self.fail_at_end {
                self.fail_at_end = false;
                return Err(io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.data.len() - self.pos).min(1 + self.pos % 70_001);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    fn data() -> Vec<u8> {
        (0..3 * BLOCK + 12_345).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn gives_back_every_byte_in_order() {
        let mut r = ReadAhead::new(Pieces { data: data(), pos: 0, fail_at_end: false }).unwrap();
        let mut out = Vec::new();
        let mut buf = vec![0; 100_000];
        loop {
            let n = r.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, data());
    }

    #[test]
    fn an_error_comes_after_the_data_read_before_it() {
        let mut r = ReadAhead::new(Pieces { data: data(), pos: 0, fail_at_end: true }).unwrap();
        let mut out = Vec::new();
        let err = r.read_to_end(&mut out).unwrap_err();
        assert_eq!(err.to_string(), "disk on fire");
        assert_eq!(out, data());
    }

    /// Lines of pseudo-random lengths, most short, some of hundreds of KiB, one longer than two
    /// blocks; ending with `\n` or not.
    fn text(final_newline: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut x: u64 = 12_345;
        for i in 0..400 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let len = match i {
                200 => 2 * BLOCK + 777,
                _ if x.is_multiple_of(11) => (x >> 20) as usize % (BLOCK / 2),
                _ => (x >> 20) as usize % 5_000,
            };
            out.extend((0..len).map(|j| b'a' + ((i + j) % 26) as u8));
            out.push(b'\n');
        }
        if !final_newline {
            out.extend_from_slice(b"{\"unfinished\":");
        }
        out
    }

    /// The blocks a reader hands out, and the error that ended them if one did.
    fn blocks(mut r: ReadAhead) -> (Vec<Vec<u8>>, Option<io::Error>) {
        let mut out = Vec::new();
        loop {
            match r.fill_buf() {
                Ok([]) => return (out, None),
                Ok(block) => {
                    let block = block.to_vec();
                    r.consume(block.len());
                    out.push(block);
                }
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn line_blocks_end_at_newlines_and_hold_every_byte_in_order() {
        for final_newline in [true, false] {
            let text = text(final_newline);
            // Uneven short reads, and reads that fill the block as a file's do.
            let pieces = ReadAhead::lines(Pieces { data: text.clone(), pos: 0, fail_at_end: false }, usize::MAX);
            let whole = ReadAhead::lines(io::Cursor::new(text.clone()), usize::MAX);
            for r in [pieces.unwrap(), whole.unwrap()] {
                let (blocks, err) = blocks(r);
                assert!(err.is_none());
                assert_eq!(blocks.concat(), text);
                assert!(blocks.len() > 3, "{} blocks", blocks.len());
                let (last, rest) = blocks.split_last().unwrap();
                // Every block ends a line: the lines that straddled a read went on to the next.
                assert!(rest.iter().all(|b| b.ends_with(b"\n")));
                assert_eq!(last.ends_with(b"\n"), final_newline);
                // The line longer than two blocks came whole, in one block grown for it.
                assert!(blocks.iter().any(|b| b.len() > 2 * BLOCK));
            }
        }
    }

    #[test]
    fn a_line_over_the_limit_is_handed_on_in_pieces() {
        let limit = 100_000;
        let text = text(true);
        let r = ReadAhead::lines(Pieces { data: text.clone(), pos: 0, fail_at_end: false }, limit).unwrap();
        let (blocks, err) = blocks(r);
        assert!(err.is_none());
        assert_eq!(blocks.concat(), text);
        // The blocks never grew far past the limit: the long lines came in pieces.
        assert!(blocks.iter().all(|b| b.len() <= limit + BLOCK));
        let pieces = blocks.iter().filter(|b| !b.ends_with(b"\n")).count();
        assert!(pieces >= 2, "{pieces} pieces");
    }

    #[test]
    fn an_error_comes_after_the_lines_read_before_it() {
        let text = text(false);
        let r = ReadAhead::lines(Pieces { data: text.clone(), pos: 0, fail_at_end: true }, usize::MAX).unwrap();
        let (blocks, err) = blocks(r);
        assert_eq!(err.map(|e| e.to_string()).as_deref(), Some("disk on fire"));
        // The unfinished last line came before the error.
        assert_eq!(blocks.concat(), text);
    }

    #[test]
    fn dropping_the_reader_ends_its_thread() {
        let r = ReadAhead::new(std::io::repeat(7)).unwrap();
        drop(r);
        let r = ReadAhead::lines(std::io::repeat(b'\n'), usize::MAX).unwrap();
        drop(r);
        // The thread's next send fails and it returns; nothing to join, nothing left blocked.
    }
}
