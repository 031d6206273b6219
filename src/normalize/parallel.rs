//! All cores on one stream: its bytes cut into chunks at newlines, each chunk decoded and then
//! folded by one worker thread, the folds taken in input order.
//!
//! It exists because [`decode`](crate::normalize::decode) (parsing a line and mapping it with the
//! adapters of the dialects it fits) is
//! about two thirds of the work of normalizing and holds no stream state, while the
//! [`Fold`](crate::Fold) that needs the stream's state, and the serializing inside it, are the
//! last third. So every worker takes the next chunk, decodes its lines on its own, then waits for
//! its turn (the chunks before it folded), folds the chunk and hands the output on. The output is
//! byte for byte what one thread writes:
//!
//! - [`predecode`] splits a chunk into lines exactly as the [`Normalizer`] will (a BOM on the
//!   stream's first line, CRLF, lines over `max_line_bytes` left alone, a line begun in the chunk
//!   before left alone, the tail without `\n` left to the next chunk) and decodes each;
//! - [`Normalizer::feed_predecoded`] then feeds the chunk through the normal splitter, taking
//!   each line's decode from the chunk where it was made from the same bytes. Lines the splitter
//!   treats otherwise (a line begun in an earlier chunk, a pretty-printed document, a line too
//!   long) are decoded there as always, so a chunk may be cut anywhere;
//! - [`fold_parallel`] runs the workers.
//!
//! The design keeps hand-offs few: a chunk is decoded, folded and serialized on the one thread
//! (so what decoding allocates is freed by the thread that allocated it), chunks are large, and
//! the only waits are for the fold's turn.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::dialect::detect::Possible;
use crate::event::Dialect;
use crate::event::sink::Sink;
use crate::normalize::{Decoded, Normalizer, decode_for};
use crate::read::frame::Parser;
use crate::read::lines;

/// One line of a chunk, decoded ahead of the fold.
#[derive(Debug)]
pub struct PreLine {
    /// The length of the line that was decoded (after the BOM and `\r` were taken off).
    pub(crate) len: usize,
    /// Its decode.
    pub(crate) decoded: Decoded,
}

/// The lines of one chunk, decoded by [`predecode`] for [`Normalizer::feed_predecoded`].
#[derive(Debug, Default)]
pub struct Predecoded {
    /// The chunk starts inside a line (the previous chunk did not end with `\n`).
    pub(crate) mid_line: bool,
    /// One entry per line that ends inside the chunk, after the one it starts inside of, if any;
    /// `None` for a line over the size limit (the splitter reads it without decoding).
    pub(crate) lines: Vec<Option<PreLine>>,
}

/// Decodes every line that ends in `chunk`, as the [`Normalizer`] will split it.
///
/// `at_start`: the chunk is the start of the stream (its first line may start with a BOM);
/// `mid_line`: the chunk continues a line of the previous chunk (whose end is not decoded here);
/// `forced` and `max_line_bytes` are the stream's [`Options`](crate::Options); `possible`: what
/// is known or guessed of the stream's detector where the chunk starts (lines are mapped only as
/// the dialects it may pick, [`decode_for`]).
pub fn predecode(
    parser: &mut Parser,
    chunk: &[u8],
    at_start: bool,
    mid_line: bool,
    forced: Option<Dialect>,
    max_line_bytes: usize,
    mut possible: Possible,
) -> Predecoded {
    let max_line = max_line_bytes.max(1);
    let mut rest = chunk;
    if mid_line {
        rest = match memchr::memchr(b'\n', rest) {
            Some(i) => &rest[i + 1..],
            None => &[],
        };
    }
    let mut lines = Vec::new();
    let mut first = at_start && !mid_line;
    // From the chunk's start, `possible` follows the frames as the fold's detector will: after a
    // frame that decides (SPEC §2) it is exact. A document's closing line may be where the fold
    // decides on the whole document instead of its lines: from there on nothing is known. (A
    // wrong guess costs only time: the fold maps a line again when its dialect's mapping is
    // missing.)
    // The tail after the last `\n` is a line the next chunk or the end of input completes.
    for (piece, _) in lines::pieces(rest).filter(|&(_, ended)| ended) {
        if piece.len() > lines::limit(piece, max_line) {
            lines.push(None);
        } else {
            let line = lines::content(piece, first, true);
            let decoded = decode_for(parser, line, forced, &mut possible, false, None);
            if line == b"}" {
                possible = Possible::ANY;
            }
            lines.push(Some(PreLine { len: line.len(), decoded }));
        }
        first = false;
    }
    Predecoded { mid_line, lines }
}

/// Where the next chunk ends when it starts at `pos` (in `pos + 1 ..= data.len()`): the end of
/// the first line that ends at or after `pos + size`, or the end of the data.
pub fn line_cut(data: &[u8], pos: usize, size: usize) -> usize {
    let at = pos.saturating_add(size.max(1));
    if at >= data.len() {
        return data.len();
    }
    memchr::memchr(b'\n', &data[at - 1..]).map_or(data.len(), |i| at + i)
}

/// A worker panicked (a bug): the stream was abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a worker thread panicked")]
pub struct Panicked;

/// What the fold's turn guards: the stream's state, its sink and where the output goes.
struct Turn<'a, S> {
    /// The chunk whose fold is next.
    next: usize,
    /// Stop: the output is gone, or a worker panicked.
    stop: bool,
    norm: &'a mut Normalizer,
    sink: &'a mut S,
    deliver: &'a mut (dyn FnMut(&mut S, usize) -> bool + Send),
}

/// Where the next chunk starts, and its number.
struct Claim<'a> {
    index: usize,
    pos: usize,
    cut: &'a mut (dyn FnMut(usize) -> usize + Send),
}

/// Normalizes `data` (all of one stream, or what follows what `norm` was already fed) on
/// `threads` threads, with the result one thread gives.
///
/// `cut(pos)` says where the chunk starting at `pos` ends (in `pos + 1 ..= data.len()`; see
/// [`line_cut`]). Each chunk's events go into `sink`, and after each chunk's fold `deliver(sink,
/// end)` is called, in input order, with the offset up to which `data` is done with (no thread
/// reads it again); it returns false to stop. Returns whether the whole of `data` was fed;
/// [`Normalizer::finish`] is then the caller's.
pub fn fold_parallel<S: Sink + Send>(
    norm: &mut Normalizer,
    sink: &mut S,
    data: &[u8],
    threads: usize,
    cut: &mut (dyn FnMut(usize) -> usize + Send),
    deliver: &mut (dyn FnMut(&mut S, usize) -> bool + Send),
) -> Result<bool, Panicked> {
    let (forced, max_line) = norm.decode_options();
    // The stream's dialect as of the last chunk folded (exact for the first chunk): where a
    // worker's chunk starts, the stream is all but always still in it, and a chunk decoded for
    // it maps a frame once, where one decoded knowing nothing maps a Claude frame as Claude's
    // and as Qwen's (`Possible::decide`).
    let folded = AtomicU8::new(dialect_code(norm.fold.dialect()));
    let turn = Mutex::new(Turn { next: 0, stop: false, norm, sink, deliver });
    let claim = Mutex::new(Claim { index: 0, pos: 0, cut });
    let ready = Condvar::new();
    let panicked = AtomicBool::new(false);
    let worker = || {
        let mut parser = Parser::default();
        loop {
            let (i, range) = {
                let mut c = lock(&claim);
                if c.pos >= data.len() {
                    break;
                }
                let pos = c.pos;
                let end = (c.cut)(pos).clamp(pos + 1, data.len());
                let got = (c.index, c.pos..end);
                c.index += 1;
                c.pos = end;
                got
            };
            let bytes = &data[range.clone()];
            let mid_line = range.start > 0 && data[range.start - 1] != b'\n';
            let guess = Possible::state(dialect_of(folded.load(Ordering::Relaxed)));
            let pre = predecode(&mut parser, bytes, range.start == 0, mid_line, forced, max_line, guess);
            let mut t = lock(&turn);
            while t.next != i && !t.stop {
                t = ready.wait(t).unwrap_or_else(PoisonError::into_inner);
            }
            if t.stop {
                break;
            }
            let t = &mut *t;
            t.norm.feed_predecoded(bytes, pre, &mut *t.sink);
            folded.store(dialect_code(t.norm.fold.dialect()), Ordering::Relaxed);
            t.stop = !(t.deliver)(&mut *t.sink, range.end);
            t.next += 1;
            ready.notify_all();
        }
    };
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(worker)).is_err() {
                    panicked.store(true, Ordering::Relaxed);
                    lock(&turn).stop = true;
                    ready.notify_all();
                }
            });
        }
    });
    if panicked.load(Ordering::Relaxed) {
        return Err(Panicked);
    }
    let t = turn.into_inner().unwrap_or_else(PoisonError::into_inner);
    Ok(!t.stop)
}

/// A stream's dialect so far as one byte: 0 for none yet, else one more than its index.
fn dialect_code(d: Option<Dialect>) -> u8 {
    d.map_or(0, |d| d.index() as u8 + 1)
}

/// The dialect of [`dialect_code`].
fn dialect_of(code: u8) -> Option<Dialect> {
    code.checked_sub(1).and_then(|i| Dialect::ALL.get(usize::from(i)).copied())
}

/// Locks a mutex, also one a panicking worker left poisoned (its state is then only read to stop).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NdjsonSink, Options};

    fn opts() -> Options {
        Options::default().observed_at(false)
    }

    /// The lengths of the lines `predecode` decoded (`None` for a line left to the splitter).
    fn lens(pre: &Predecoded) -> Vec<Option<usize>> {
        pre.lines.iter().map(|l| l.as_ref().map(|l| l.len)).collect()
    }

    #[test]
    fn lines_are_cut_as_the_splitter_cuts_them() {
        let chunk = b"\xEF\xBB\xBF{\"a\":1}\r\n\n\xEF\xBB\xBF{}\r\r\nxxxxxxxxxxxxxxxx\ntail";
        let mut p = Parser::default();
        // At the stream's start only the first line loses its BOM; every `\r` before `\n` goes;
        // a line over the limit is not decoded; the tail without `\n` is the next chunk's.
        let pre = predecode(&mut p, chunk, true, false, None, 12, Possible::ANY);
        assert_eq!(lens(&pre), [Some(7), Some(0), Some(6), None]);
        let pre = predecode(&mut p, chunk, false, false, None, 12, Possible::ANY);
        assert_eq!(lens(&pre), [Some(10), Some(0), Some(6), None]);
        // Continuing a line: its end is not decoded here.
        let pre = predecode(&mut p, chunk, false, true, None, 100, Possible::ANY);
        assert_eq!(lens(&pre), [Some(0), Some(6), Some(16)]);
        assert!(matches!(pre.lines[0], Some(PreLine { decoded: Decoded::Blank, .. })));
    }

    #[test]
    fn chunks_end_after_a_newline() {
        let data = b"aaaa\nbb\n\ncccccc\nd";
        assert_eq!(line_cut(data, 0, 1), 5);
        assert_eq!(line_cut(data, 0, 5), 5);
        assert_eq!(line_cut(data, 0, 6), 8);
        assert_eq!(line_cut(data, 5, 4), 9);
        assert_eq!(line_cut(data, 9, 3), 16);
        assert_eq!(line_cut(data, 16, 1), data.len());
        assert_eq!(line_cut(data, 0, 100), data.len());
    }

    /// Runs `chunks` through `feed_predecoded` with the given decodes and returns the output.
    fn fed(chunks: &[(&[u8], Predecoded)]) -> String {
        let mut n = Normalizer::new(opts());
        let mut sink = NdjsonSink::default();
        for (c, pre) in chunks {
            let pre = Predecoded { mid_line: pre.mid_line, lines: fed_copy(&pre.lines) };
            n.feed_predecoded(c, pre, &mut sink);
        }
        n.finish(&mut sink);
        String::from_utf8(sink.buf).unwrap()
    }

    #[test]
    fn the_fold_takes_each_line_from_its_predecoded_entry() {
        let line = b"{\"type\":\"turn.started\"}\n";
        let blank = |mid_line, n| Predecoded {
            mid_line,
            lines: (0..n).map(|_| Some(PreLine { len: line.len() - 1, decoded: Decoded::Blank })).collect(),
        };
        // A (deliberately wrong) entry is used: the line reads as blank.
        let out = fed(&[(line, blank(false, 1))]);
        assert!(!out.contains("turn_started"), "{out}");
        // An entry for another length, or for a chunk that does not start where the splitter is,
        // is not: the line is decoded again.
        let wrong_len = Predecoded { mid_line: false, lines: vec![Some(PreLine { len: 3, decoded: Decoded::Blank })] };
        assert!(fed(&[(line, wrong_len)]).contains("turn_started"));
        assert!(fed(&[(line, blank(true, 1))]).contains("turn_started"));
        // Across a cut mid-line: the first chunk's tail and the second's head are one line,
        // decoded by the splitter; the entries of the second chunk start after it.
        let (a, b) = line.split_at(5);
        let mut two = b.to_vec();
        two.extend_from_slice(line);
        let out = fed(&[(a, blank(false, 0)), (&two, blank(true, 1))]);
        assert_eq!(out.matches("turn_started").count(), 1, "{out}");
    }

    /// A chunk decoded for the dialect the stream was in (the guess), for another one (a wrong
    /// guess: its lines are mapped again in the fold) or for any: the same bytes out.
    #[test]
    fn a_chunk_decoded_for_any_guess_gives_the_same_output() {
        let qwen = include_bytes!("../../fixtures/qwen/whole_messages.jsonl");
        let cut = memchr::memchr(b'\n', qwen).unwrap() + 1;
        let (init, rest) = qwen.split_at(cut);
        let mut p = Parser::default();
        let first = predecode(&mut p, init, true, false, None, 1 << 20, Possible::state(None));
        let mut one = Normalizer::new(opts());
        let mut sink = NdjsonSink::default();
        one.feed(qwen, &mut sink);
        one.finish(&mut sink);
        let want = String::from_utf8(sink.buf).unwrap();
        assert!(want.contains(r#""dialect":"qwen""#), "{want}");
        for guess in [Some(Dialect::Qwen), Some(Dialect::Claude), None] {
            let possible = guess.map_or(Possible::ANY, |d| Possible::state(Some(d)));
            let pre = predecode(&mut p, rest, false, false, None, 1 << 20, possible);
            let qwen_mapped = pre
                .lines
                .iter()
                .flatten()
                .filter(|l| matches!(&l.decoded, Decoded::Frame { mapped, .. } if mapped.iter().any(|(d, _)| *d == Dialect::Qwen)))
                .count();
            assert_eq!(
                qwen_mapped == 0,
                guess == Some(Dialect::Claude),
                "{guess:?}: {qwen_mapped} lines mapped as Qwen's"
            );
            let first = Predecoded { mid_line: first.mid_line, lines: fed_copy(&first.lines) };
            assert_eq!(fed(&[(init, first), (rest, pre)]), want, "{guess:?}");
        }
    }

    fn fed_copy(lines: &[Option<PreLine>]) -> Vec<Option<PreLine>> {
        lines.iter().map(|l| l.as_ref().map(|l| PreLine { len: l.len, decoded: l.decoded.clone() })).collect()
    }

    #[test]
    fn deliver_can_stop_the_stream_and_sees_the_chunks_in_order() {
        let data = b"{\"type\":\"turn.started\"}\n".repeat(100);
        let mut n = Normalizer::new(opts());
        let mut sink = NdjsonSink::default();
        let mut ends = Vec::new();
        let mut cut = |pos| line_cut(&data, pos, 30);
        let mut deliver = |_: &mut NdjsonSink, end| {
            ends.push(end);
            ends.len() < 3
        };
        let r = fold_parallel(&mut n, &mut sink, &data, 2, &mut cut, &mut deliver);
        assert_eq!(r, Ok(false));
        assert_eq!(ends, [48, 96, 144]);
        assert_eq!(sink.buf.split(|&b| b == b'\n').filter(|l| l.windows(4).any(|w| w == b"turn")).count(), 6);
    }

    #[test]
    fn a_panicking_worker_stops_the_stream_without_hanging() {
        let data = b"{\"type\":\"turn.started\"}\n".repeat(100);
        let mut n = Normalizer::new(opts());
        let mut sink = NdjsonSink::default();
        let mut cut = |pos: usize| if pos > 200 { panic!("cut") } else { pos + 25 };
        let mut deliver = |_: &mut NdjsonSink, _| true;
        let r = fold_parallel(&mut n, &mut sink, &data, 3, &mut cut, &mut deliver);
        assert_eq!(r, Err(Panicked));
    }
}
