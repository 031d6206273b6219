//! Cutting bytes into lines: the one set of rules for what a line is.
//!
//! Both ways into the normalizer cut lines, the streaming [`Normalizer::feed`](crate::Normalizer)
//! and the all-cores path that decodes a chunk's lines ahead on other threads; their cuts must
//! agree byte for byte (a predecoded line is only used when it was made from the very bytes the
//! streaming splitter hands out). So the cutting, the size limit and what a line's content is
//! live here once: a line ends at `\n`; a CRLF's `\r` is not content and does not count against
//! the limit; the stream's first line may start with a UTF-8 byte-order mark, which is dropped.

/// The UTF-8 byte-order mark some editors put before a stream's first line.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The pieces of `chunk`, each without its `\n`, with whether a `\n` ended it: every line the
/// chunk completes, then the unfinished tail (if the chunk does not end with `\n`).
pub(crate) fn pieces(chunk: &[u8]) -> impl Iterator<Item = (&[u8], bool)> {
    let mut rest = chunk;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        Some(match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let piece = &rest[..i];
                rest = &rest[i + 1..];
                (piece, true)
            }
            None => (std::mem::take(&mut rest), false),
        })
    })
}

/// How many bytes of `piece` may belong to a line of at most `max` bytes: a piece ending in
/// `\r` may be cut before its `\n`, and a CRLF's `\r` is not counted (a content `\r` is followed
/// by more bytes, which then go over).
pub(crate) fn limit(piece: &[u8], max: usize) -> usize {
    max.saturating_add(usize::from(piece.ends_with(b"\r")))
}

/// A whole line's content: without the byte-order mark on the stream's `first` line, and without
/// the `\r` of a CRLF ending when the line `ended` with `\n` (a last line without `\n` keeps a
/// final `\r`: a lone `\r` at the end of input is content).
pub(crate) fn content(line: &[u8], first: bool, ended: bool) -> &[u8] {
    let line = if first { line.strip_prefix(BOM).unwrap_or(line) } else { line };
    if ended { line.strip_suffix(b"\r").unwrap_or(line) } else { line }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_the_lines_then_the_tail() {
        let got: Vec<_> = pieces(b"a\r\n\nbc\nd").collect();
        assert_eq!(got, [(&b"a\r"[..], true), (&b""[..], true), (&b"bc"[..], true), (&b"d"[..], false)]);
        assert_eq!(pieces(b"").count(), 0);
        assert_eq!(pieces(b"x\n").collect::<Vec<_>>(), [(&b"x"[..], true)]);
    }

    #[test]
    fn a_crlf_does_not_count_against_the_limit() {
        assert_eq!(limit(b"abc\r", 3), 4);
        assert_eq!(limit(b"abc", 3), 3);
        assert_eq!(limit(b"ab\rc", 3), 3);
    }

    #[test]
    fn content_drops_the_bom_only_first_and_the_cr_only_before_a_newline() {
        assert_eq!(content(b"\xEF\xBB\xBF{}\r", true, true), b"{}");
        assert_eq!(content(b"\xEF\xBB\xBF{}", false, true), b"\xEF\xBB\xBF{}");
        assert_eq!(content(b"{}\r", false, false), b"{}\r");
    }
}
