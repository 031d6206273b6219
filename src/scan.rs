//! A validating JSON scanner that indexes a line without decoding it.
//!
//! It exists because most of a line is never read: an adapter looks at a handful of keys, and the
//! long strings (tool output, file contents) are passed through as the escaped bytes the CLI
//! wrote. A full parser (simd-json's tape) unescapes and copies every string of every line; this
//! scanner only checks that the line is valid JSON (RFC 8259, strict: no raw control characters
//! in strings, no lone-surrogate escapes, no number that overflows f64, nesting at most
//! [`MAX_DEPTH`]) and records where each value lies. Strings are decoded later, only when an
//! adapter reads them ([`unescape`]); long strings are skipped 16 bytes at a time (SSE2 on
//! x86-64) looking only for `"`, `\` and control characters.
//!
//! A line the scanner refuses goes through the frame reader's slow path (SPEC §1 repairs), whose
//! output is scanned again.

/// The contract's nesting limit (SPEC §1): at most this many containers open at once.
pub const MAX_DEPTH: usize = 1024;

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{…}`: its members follow it as key (a `Str` node), value, key, value, ….
    Object,
    /// `[…]`: its elements follow it.
    Array,
    /// A string literal.
    Str,
    /// A number literal.
    Num,
    /// `true`.
    True,
    /// `false`.
    False,
    /// `null`.
    Null,
}

/// One value of the line, in document order.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    /// What it is.
    pub kind: Kind,
    /// A string holding at least one escape.
    pub escaped: bool,
    /// A string whose escapes are all ones serde_json writes the same way (`\"` `\\` `\b` `\f`
    /// `\n` `\r` `\t`; not `\/` nor `\u`): its literal is what agentnorm would write for it.
    pub canonical: bool,
    /// Byte offset of its first byte (a string's opening quote).
    pub start: u32,
    /// Byte offset just past its last byte (a string's closing quote).
    pub end: u32,
    /// Index of the node after this one and everything inside it.
    pub next: u32,
}

/// Why a line is not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanError {
    /// Not valid JSON as this scanner reads it (the slow path may still repair it).
    Invalid,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Reused buffers of the scanner.
#[derive(Debug, Default)]
pub struct Scanner {
    /// The nodes of the last line scanned.
    pub nodes: Vec<Node>,
    stack: Vec<u32>,
}

/// JSON whitespace.
#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Scanner {
    /// Indexes `line` (one JSON text, surrounding whitespace allowed) into [`Scanner::nodes`];
    /// returns it as text (it is UTF-8, checked once here for the whole line).
    pub fn scan<'a>(&mut self, line: &'a [u8]) -> Result<&'a str, ScanError> {
        self.nodes.clear();
        self.stack.clear();
        let text = simdutf8::basic::from_utf8(line).map_err(|_| ScanError::Invalid)?;
        if u32::try_from(line.len()).is_err() {
            return Err(ScanError::Invalid);
        }
        match self.scan_values(line) {
            Ok(()) => Ok(text),
            Err(e) => {
                self.nodes.clear();
                Err(e)
            }
        }
    }

    fn push(&mut self, kind: Kind, start: usize, end: usize) {
        let next = self.nodes.len() as u32 + 1;
        self.nodes.push(Node { kind, escaped: false, canonical: true, start: start as u32, end: end as u32, next });
    }

    /// Scans the string literal at `i` (its opening quote) into a node; returns its end.
    #[inline]
    fn push_string(&mut self, line: &[u8], i: usize) -> Result<usize, ScanError> {
        let (end, escaped, canonical) = string(line, i)?;
        let next = self.nodes.len() as u32 + 1;
        self.nodes.push(Node { kind: Kind::Str, escaped, canonical, start: i as u32, end: end as u32, next });
        Ok(end)
    }

    /// Parses an object key at `i` (after whitespace) and the colon after it; returns the offset
    /// of the value.
    #[inline]
    fn key(&mut self, line: &[u8], i: usize) -> Result<usize, ScanError> {
        let i = skip_ws(line, i);
        if line.get(i) != Some(&b'"') {
            return Err(ScanError::Invalid);
        }
        let end = self.push_string(line, i)?;
        let j = skip_ws(line, end);
        if line.get(j) != Some(&b':') {
            return Err(ScanError::Invalid);
        }
        Ok(j + 1)
    }

    fn scan_values(&mut self, line: &[u8]) -> Result<(), ScanError> {
        let mut i = 0;
        'value: loop {
            i = skip_ws(line, i);
            let b = *line.get(i).ok_or(ScanError::Invalid)?;
            match b {
                b'{' | b'[' => {
                    if self.stack.len() >= MAX_DEPTH {
                        return Err(ScanError::TooDeep);
                    }
                    let object = b == b'{';
                    self.stack.push(self.nodes.len() as u32);
                    self.push(if object { Kind::Object } else { Kind::Array }, i, i + 1);
                    let j = skip_ws(line, i + 1);
                    let close = if object { b'}' } else { b']' };
                    if line.get(j) == Some(&close) {
                        i = j;
                        // Falls through to the close below.
                    } else {
                        i = if object { self.key(line, j)? } else { j };
                        continue 'value;
                    }
                }
                b'"' => {
                    i = self.push_string(line, i)?;
                }
                b'-' | b'0'..=b'9' => {
                    let end = number(line, i)?;
                    self.push(Kind::Num, i, end);
                    i = end;
                }
                b't' | b'f' | b'n' => {
                    let (word, kind): (&[u8], Kind) = match b {
                        b't' => (b"true", Kind::True),
                        b'f' => (b"false", Kind::False),
                        _ => (b"null", Kind::Null),
                    };
                    if !line[i..].starts_with(word) {
                        return Err(ScanError::Invalid);
                    }
                    self.push(kind, i, i + word.len());
                    i += word.len();
                }
                _ => return Err(ScanError::Invalid),
            }
            // After a value (or at an empty container's closing bracket when `i` points at it).
            loop {
                i = skip_ws(line, i);
                let Some(&top) = self.stack.last() else {
                    return if i == line.len() { Ok(()) } else { Err(ScanError::Invalid) };
                };
                let object = self.nodes[top as usize].kind == Kind::Object;
                match line.get(i) {
                    Some(b',') => {
                        i = if object { self.key(line, i + 1)? } else { i + 1 };
                        continue 'value;
                    }
                    Some(b'}') if object => {}
                    Some(b']') if !object => {}
                    _ => return Err(ScanError::Invalid),
                }
                let next = self.nodes.len() as u32;
                let node = &mut self.nodes[top as usize];
                node.end = i as u32 + 1;
                node.next = next;
                self.stack.pop();
                i += 1;
            }
        }
    }
}

#[inline]
fn skip_ws(line: &[u8], mut i: usize) -> usize {
    while line.get(i).is_some_and(|&b| is_ws(b)) {
        i += 1;
    }
    i
}

/// Scans the number literal at `i`; returns its end. Refuses one that overflows f64 (`1e400`,
/// 400 digits), as the contract reads those through the slow path.
fn number(line: &[u8], i: usize) -> Result<usize, ScanError> {
    let digit = |j: usize| line.get(j).is_some_and(u8::is_ascii_digit);
    let mut j = i;
    if line[j] == b'-' {
        j += 1;
    }
    match line.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => {
            while digit(j) {
                j += 1;
            }
        }
        _ => return Err(ScanError::Invalid),
    }
    let mut exp = false;
    if line.get(j) == Some(&b'.') {
        j += 1;
        if !digit(j) {
            return Err(ScanError::Invalid);
        }
        while digit(j) {
            j += 1;
        }
    }
    if matches!(line.get(j), Some(b'e' | b'E')) {
        exp = true;
        j += 1;
        if matches!(line.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if !digit(j) {
            return Err(ScanError::Invalid);
        }
        while digit(j) {
            j += 1;
        }
    }
    if (exp || j - i > 300) && parse_f64(&line[i..j]).is_none_or(f64::is_infinite) {
        return Err(ScanError::Invalid);
    }
    Ok(j)
}

/// A number literal's value.
pub fn parse_f64(lit: &[u8]) -> Option<f64> {
    std::str::from_utf8(lit).ok()?.parse().ok()
}

/// Bit masks of one block of up to 64 bytes: bit `k` stands for `block[k]`.
#[derive(Clone, Copy)]
struct Masks {
    /// `"`.
    quote: u64,
    /// `\`.
    backslash: u64,
    /// Control characters (below 0x20).
    control: u64,
}

/// The masks of `block` (64 bytes at most).
#[inline]
fn masks(block: &[u8]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    if block.len() == 64 {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; each load reads 16 bytes of `block`,
        // whose length is 64, at offsets 0, 16, 32 and 48 (unaligned loads allowed).
        unsafe {
            let q = _mm_set1_epi8(b'"' as i8);
            let bs = _mm_set1_epi8(b'\\' as i8);
            let low = _mm_set1_epi8(0x1f);
            let mut m = Masks { quote: 0, backslash: 0, control: 0 };
            for k in 0..4 {
                let v = _mm_loadu_si128(block.as_ptr().add(16 * k) as *const __m128i);
                let bits = |x: __m128i| (_mm_movemask_epi8(x) as u32 as u64) << (16 * k);
                m.quote |= bits(_mm_cmpeq_epi8(v, q));
                m.backslash |= bits(_mm_cmpeq_epi8(v, bs));
                // b <= 0x1f exactly when max(b, 0x1f) == 0x1f (unsigned).
                m.control |= bits(_mm_cmpeq_epi8(_mm_max_epu8(v, low), low));
            }
            return m;
        }
    }
    #[cfg(target_arch = "x86_64")]
    if block.len() < 64 {
        // The end of the line: the same SIMD reading of a padded copy (the padding's bits are
        // past the block and ignored by the caller).
        let mut padded = [0u8; 64];
        padded[..block.len()].copy_from_slice(block);
        return masks(&padded);
    }
    let mut m = Masks { quote: 0, backslash: 0, control: 0 };
    for (k, &b) in block.iter().enumerate() {
        m.quote |= u64::from(b == b'"') << k;
        m.backslash |= u64::from(b == b'\\') << k;
        m.control |= u64::from(b < 0x20) << k;
    }
    m
}

/// The characters that follow an odd-length run of backslashes (the escaped characters that
/// are not themselves backslashes), given the backslash mask of a block and whether the previous
/// block ended inside such a run (updated for the next block). simdjson's stage-1 algorithm.
#[inline]
fn odd_backslash_ends(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    const ODD: u64 = !EVEN;
    let start_edges = backslash & !(backslash << 1);
    let even_start_mask = EVEN ^ *carry;
    let even_starts = start_edges & even_start_mask;
    let odd_starts = start_edges & !even_start_mask;
    let even_carries = backslash.wrapping_add(even_starts);
    let (mut odd_carries, overflow) = backslash.overflowing_add(odd_starts);
    odd_carries |= *carry;
    *carry = u64::from(overflow);
    let even_carry_ends = even_carries & !backslash;
    let odd_carry_ends = odd_carries & !backslash;
    (even_carry_ends & ODD) | (odd_carry_ends & EVEN)
}

/// The offset of the closing quote in `head` (16 bytes after an opening quote) when nothing
/// before it is a backslash or a control character.
#[inline]
fn short_string(head: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; `head` is 16 bytes long (unaligned load).
        let (quote, other) = unsafe {
            let v = _mm_loadu_si128(head.as_ptr() as *const __m128i);
            let low = _mm_set1_epi8(0x1f);
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            (
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8))) as u32,
                _mm_movemask_epi8(_mm_or_si128(control, backslash)) as u32,
            )
        };
        let first = quote.trailing_zeros();
        (quote != 0 && other & ((1 << first) - 1) == 0).then_some(first as usize)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let end = head.iter().position(|&b| b == b'"')?;
        head[..end].iter().all(|&b| b != b'\\' && b >= 0x20).then_some(end)
    }
}

/// Whether `b` may follow a backslash (`\\` is handled as a run of backslashes).
const ESCAPABLE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let ok = b"\"/bfnrtu";
    while i < ok.len() {
        t[ok[i] as usize] = true;
        i += 1;
    }
    t
};

/// Four hex digits at `i`.
fn hex4(line: &[u8], i: usize) -> Option<u16> {
    let h = line.get(i..i + 4)?;
    let mut v = 0u16;
    for &c in h {
        v = v << 4 | (c as char).to_digit(16)? as u16;
    }
    Some(v)
}

/// Checks the `\u` escape whose backslash is at `j`; returns whether it is the first half of a
/// surrogate pair (whose second half it also checked).
#[inline]
fn unicode_escape(line: &[u8], j: usize) -> Result<bool, ScanError> {
    match hex4(line, j + 2).ok_or(ScanError::Invalid)? {
        0xD800..=0xDBFF => {
            let low = (line.get(j + 6) == Some(&b'\\') && line.get(j + 7) == Some(&b'u'))
                .then(|| hex4(line, j + 8))
                .flatten();
            if low.is_some_and(|l| (0xDC00..0xE000).contains(&l)) { Ok(true) } else { Err(ScanError::Invalid) }
        }
        0xDC00..=0xDFFF => Err(ScanError::Invalid),
        _ => Ok(false),
    }
}

/// Scans the string literal whose opening quote is at `i`; returns the offset after its closing
/// quote and whether it holds escapes.
///
/// The string is read 64 bytes at a time as bit masks (quotes, backslashes, control
/// characters); the escaped characters come from the backslash runs by carry arithmetic, so a
/// long string with an escape every few bytes (tool output) costs a few operations per block,
/// plus a table look-up per escaped character and a closer look at each `\u`.
fn string(line: &[u8], i: usize) -> Result<(usize, bool, bool), ScanError> {
    // Short strings (keys, ids, types) end within 16 bytes with nothing to unescape.
    if let Some(head) = line.get(i + 1..i + 17)
        && let Some(end) = short_string(head)
    {
        return Ok((i + 2 + end, false, true));
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { string_avx2(line, i) };
    }
    string_with(line, i, masks, escape_classes)
}

/// [`string`] compiled for AVX2 (32 bytes per compare instead of 16).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn string_avx2(line: &[u8], i: usize) -> Result<(usize, bool, bool), ScanError> {
    string_with(
        line,
        i,
        |block| {
            if block.len() == 64 {
                // SAFETY: AVX2 is enabled for this function (its caller checked the CPU).
                unsafe { masks_avx2(block) }
            } else {
                masks(block)
            }
        },
        |block| {
            if block.len() == 64 {
                // SAFETY: as above.
                unsafe { escape_classes_avx2(block) }
            } else {
                escape_classes(block)
            }
        },
    )
}

/// [`escape_classes`] of a 64-byte block with AVX2: a byte is escapable when the classes of
/// its high and low nibble (two 16-entry look-ups, `vpshufb`) share a bit.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn escape_classes_avx2(block: &[u8]) -> (u64, u64, u64) {
    use std::arch::x86_64::*;
    debug_assert_eq!(block.len(), 64);
    // Groups: high nibble 2 (`"` `/`) = 1, 6 (`b` `f` `n`) = 2, 7 (`r` `t` `u`) = 4.
    #[rustfmt::skip]
    let hi_tbl = _mm256_setr_epi8(
        0, 0, 1, 0, 0, 0, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 1, 0, 0, 0, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0,
    );
    // Low nibble 2: `"` `b` `r`; 4: `t`; 5: `u`; 6: `f`; E: `n`; F: `/`.
    #[rustfmt::skip]
    let lo_tbl = _mm256_setr_epi8(
        0, 0, 7, 0, 4, 4, 2, 0, 0, 0, 0, 0, 0, 0, 2, 1,
        0, 0, 7, 0, 4, 4, 2, 0, 0, 0, 0, 0, 0, 0, 2, 1,
    );
    let nibble = _mm256_set1_epi8(0x0f);
    let (mut escapable, mut u, mut slash) = (0u64, 0u64, 0u64);
    for k in 0..2 {
        // SAFETY: `block` is 64 bytes long: the loads read bytes 0..32 and 32..64 (unaligned).
        let v = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * k) as *const __m256i) };
        let lo = _mm256_and_si256(v, nibble);
        let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
        let class = _mm256_and_si256(_mm256_shuffle_epi8(lo_tbl, lo), _mm256_shuffle_epi8(hi_tbl, hi));
        let none = _mm256_movemask_epi8(_mm256_cmpeq_epi8(class, _mm256_setzero_si256())) as u32 as u64;
        escapable |= (!none & 0xffff_ffff) << (32 * k);
        u |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'u' as i8))) as u32 as u64) << (32 * k);
        slash |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'/' as i8))) as u32 as u64) << (32 * k);
    }
    (escapable, u, slash)
}

/// Bit masks of the bytes of `block` (64 bytes at most) that may follow a backslash (`"` `/`
/// `b` `f` `n` `r` `t` `u`; a backslash itself is part of a run), of the `u`s and of the `/`s.
fn escape_classes(block: &[u8]) -> (u64, u64, u64) {
    let (mut escapable, mut u, mut slash) = (0u64, 0u64, 0u64);
    for (k, &b) in block.iter().enumerate() {
        escapable |= u64::from(ESCAPABLE[b as usize]) << k;
        u |= u64::from(b == b'u') << k;
        slash |= u64::from(b == b'/') << k;
    }
    (escapable, u, slash)
}

/// The masks of a 64-byte block with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn masks_avx2(block: &[u8]) -> Masks {
    use std::arch::x86_64::*;
    debug_assert_eq!(block.len(), 64);
    let (q, bs, low) = (_mm256_set1_epi8(b'"' as i8), _mm256_set1_epi8(b'\\' as i8), _mm256_set1_epi8(0x1f));
    let mut m = Masks { quote: 0, backslash: 0, control: 0 };
    for k in 0..2 {
        // SAFETY: `block` is 64 bytes long: the loads read bytes 0..32 and 32..64 (unaligned).
        let v = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * k) as *const __m256i) };
        let bits = |x: __m256i| (_mm256_movemask_epi8(x) as u32 as u64) << (32 * k);
        m.quote |= bits(_mm256_cmpeq_epi8(v, q));
        m.backslash |= bits(_mm256_cmpeq_epi8(v, bs));
        // b <= 0x1f exactly when max(b, 0x1f) == 0x1f (unsigned).
        m.control |= bits(_mm256_cmpeq_epi8(_mm256_max_epu8(v, low), low));
    }
    m
}

/// [`string`] past the short-string check, with the block reader `masks`.
#[inline(always)]
fn string_with(
    line: &[u8],
    i: usize,
    masks: impl Fn(&[u8]) -> Masks,
    classes: impl Fn(&[u8]) -> (u64, u64, u64),
) -> Result<(usize, bool, bool), ScanError> {
    let mut block = i + 1;
    let mut carry = 0u64;
    let (mut escaped_any, mut canonical) = (false, true);
    // A `\u` before this offset is the second half of a surrogate pair already checked.
    let mut pair_end = 0usize;
    while block < line.len() {
        let len = (line.len() - block).min(64);
        let bytes = &line[block..block + len];
        let m = masks(bytes);
        let escaped = odd_backslash_ends(m.backslash, &mut carry);
        let closing = m.quote & !escaped;
        let in_block = if len == 64 { u64::MAX } else { (1 << len) - 1 };
        let inside = if closing == 0 { in_block } else { (closing & closing.wrapping_neg()) - 1 };
        if m.control & inside != 0 {
            return Err(ScanError::Invalid);
        }
        escaped_any |= m.backslash & inside != 0;
        let e = escaped & inside;
        let mut unicode = 0;
        if e != 0 {
            let (escapable, u, slash) = classes(bytes);
            if e & !escapable != 0 {
                return Err(ScanError::Invalid);
            }
            unicode = e & u;
            canonical &= e & (u | slash) == 0;
        }
        while unicode != 0 {
            let j = block + unicode.trailing_zeros() as usize;
            unicode &= unicode - 1;
            if j >= pair_end && unicode_escape(line, j - 1)? {
                pair_end = j + 12;
            }
        }
        if closing != 0 {
            return Ok((block + closing.trailing_zeros() as usize + 1, escaped_any, canonical));
        }
        block += len;
    }
    Err(ScanError::Invalid)
}

/// Decodes the inside of a string literal the scanner accepted (quotes excluded) into `out`.
///
/// Runs between escapes are copied as they are (a backslash is ASCII, so every cut is at a
/// character boundary); each escape adds one character.
pub fn unescape(inner: &str, out: &mut String) {
    let bytes = inner.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\\', &bytes[i..]) {
        let at = i + p;
        out.push_str(inner.get(i..at).unwrap_or_default());
        let c = bytes.get(at + 1).copied().unwrap_or(b'\\');
        i = at + 2;
        let ch = match c {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = u32::from(hex4(bytes, at + 2).unwrap_or(0xfffd));
                i = at + 6;
                let cp = if (0xD800..0xDC00).contains(&hi) {
                    let lo = u32::from(hex4(bytes, at + 8).unwrap_or(0xDC00));
                    i = at + 12;
                    0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3ff)
                } else {
                    hi
                };
                char::from_u32(cp).unwrap_or('\u{fffd}')
            }
            other => char::from(other),
        };
        out.push(ch);
    }
    out.push_str(inner.get(i..).unwrap_or_default());
}

/// The length of `inner` (a string literal the scanner accepted, quotes excluded) once decoded,
/// without decoding it.
pub fn unescaped_len(inner: &[u8]) -> usize {
    let mut len = inner.len();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\\', &inner[i..]) {
        let at = i + p;
        if inner.get(at + 1) != Some(&b'u') {
            len -= 1;
            i = at + 2;
            continue;
        }
        let hi = hex4(inner, at + 2).unwrap_or(0xfffd);
        if (0xD800..0xDC00).contains(&hi) {
            len -= 12 - 4;
            i = at + 12;
        } else {
            len -= 6 - char::from_u32(u32::from(hi)).map_or(3, char::len_utf8);
            i = at + 6;
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> bool {
        Scanner::default().scan(s.as_bytes()).is_ok()
    }

    #[test]
    fn accepts_valid_json() {
        for s in [
            r#"{}"#,
            r#" {"a" : [1, -2.5e+3, true, false, null, "x\n\u00e9\ud83d\ude00"], "b":{}} "#,
            "[]",
            "0",
            r#""s""#,
            "\t{\"a\":[[],{}]}\r",
        ] {
            assert!(ok(s), "{s}");
        }
    }

    #[test]
    fn refuses_invalid_json() {
        for s in [
            "",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "{\"a\":01}",
            "{\"a\":1.}",
            "{\"a\":-}",
            "{\"a\":tru}",
            "{\"a\":\"x\ty\"}",
            "{\"a\":\"\\x\"}",
            "{\"a\":\"\\u12\"}",
            "{\"a\":\"\\ud800\"}",
            "{\"a\":\"\\udc00x\"}",
            "{\"a\":1}x",
            "{\"a\":1e400}",
            "{a:1}",
            "{\"a\" 1}",
            "[1 2]",
            "{\"a\":\"unterminated}",
            "\u{c}{}",
        ] {
            assert!(!ok(s), "{s:?}");
        }
        assert!(Scanner::default().scan(b"{\"a\":\"\xff\"}").is_err());
    }

    #[test]
    fn depth_limit_is_the_contracts() {
        let at = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(ok(&at(MAX_DEPTH)));
        assert_eq!(Scanner::default().scan(at(MAX_DEPTH + 1).as_bytes()), Err(ScanError::TooDeep));
    }

    #[test]
    fn nodes_link_past_their_contents() {
        let mut s = Scanner::default();
        s.scan(br#"{"a":[1,{"b":2}],"c":"d"}"#).unwrap();
        let kinds: Vec<Kind> = s.nodes.iter().map(|n| n.kind).collect();
        use Kind::*;
        assert_eq!(kinds, [Object, Str, Array, Num, Object, Str, Num, Str, Str]);
        assert_eq!(s.nodes[0].next, 9);
        assert_eq!(s.nodes[2].next, 7);
        assert_eq!(s.nodes[4].next, 7);
    }

    /// The escaped characters of `s`, one byte at a time.
    fn escaped_reference(s: &[u8]) -> Vec<bool> {
        let mut out = vec![false; s.len()];
        let mut run = 0;
        for (k, &b) in s.iter().enumerate() {
            if b == b'\\' {
                run += 1;
            } else {
                out[k] = run % 2 == 1;
                run = 0;
            }
        }
        out
    }

    #[test]
    fn masks_and_escapes_match_a_byte_at_a_time_reading() {
        // A small deterministic generator: runs of backslashes of every length across block
        // boundaries, quotes, control and non-ASCII bytes.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let alphabet = [b'\\', b'\\', b'\\', b'"', b'a', b'n', 0x1f, 0xe9, b'u'];
        for round in 0..2000 {
            let len = 1 + round % 200;
            let s: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            let want = escaped_reference(&s);
            let mut carry = 0;
            for (n, block) in s.chunks(64).enumerate() {
                let m = masks(block);
                let got = odd_backslash_ends(m.backslash, &mut carry);
                for (k, &b) in block.iter().enumerate() {
                    let at = n * 64 + k;
                    assert_eq!(got >> k & 1 == 1, want[at], "escaped at {at} of {s:?}");
                    assert_eq!(m.quote >> k & 1 == 1, b == b'"');
                    assert_eq!(m.backslash >> k & 1 == 1, b == b'\\');
                    assert_eq!(m.control >> k & 1 == 1, b < 0x20);
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_masks_equal_the_sse2_ones() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..500 {
            let block: Vec<u8> = (0..64)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    [b'"', b'\\', 0x00, 0x1f, 0x20, b'a', 0x7f, 0x80, 0xff][(seed % 9) as usize]
                })
                .collect();
            // SAFETY: AVX2 was detected above.
            let (a, b) = (masks(&block), unsafe { masks_avx2(&block) });
            assert_eq!((a.quote, a.backslash, a.control), (b.quote, b.backslash, b.control), "{block:?}");
        }
        // Every byte value at every position of the two halves.
        for b in 0..=255u8 {
            for at in [0, 17, 31, 32, 63] {
                let mut block = [b'a'; 64];
                block[at] = b;
                // SAFETY: AVX2 was detected above.
                assert_eq!(unsafe { escape_classes_avx2(&block) }, escape_classes(&block), "byte {b:#x} at {at}");
            }
        }
    }

    #[test]
    fn strings_across_blocks_agree_with_serde() {
        for prefix in [0, 1, 30, 62, 63, 64, 65, 127, 128] {
            for esc in [r#"\\"#, r#"\""#, r#"\n"#, r#"\u00e9"#, r#"\ud83d\ude00"#, r#"\\\""#, "é"] {
                let inner = format!("{}{esc}{}", "a".repeat(prefix), "b".repeat(prefix % 7));
                let quoted = format!("\"{inner}\"");
                let want: String = serde_json::from_str(&quoted).unwrap();
                let mut s = Scanner::default();
                s.scan(quoted.as_bytes()).unwrap();
                assert_eq!(s.nodes[0].end as usize, quoted.len(), "{quoted}");
                assert_eq!(unescaped_len(&quoted.as_bytes()[1..quoted.len() - 1]), want.len(), "{quoted}");
                assert_eq!(s.nodes[0].escaped, inner.contains('\\'), "{quoted}");
                let canonical = serde_json::to_string(&want).unwrap() == quoted;
                assert_eq!(s.nodes[0].canonical, canonical, "{quoted}");
                let bad = format!("\"{}\\x\"", "a".repeat(prefix));
                assert!(s.scan(bad.as_bytes()).is_err(), "{bad}");
                let lone = format!("\"{}\\udc00\"", "a".repeat(prefix));
                assert!(s.scan(lone.as_bytes()).is_err(), "{lone}");
            }
        }
    }

    #[test]
    fn unescape_and_its_length_agree_with_serde() {
        for inner in [r#"plain"#, r#"a\n\"b\\ \/ \u0041\u00e9\u20ac\ud83d\ude00\b\f\r\t"#] {
            let mut out = String::new();
            unescape(inner, &mut out);
            let want: String = serde_json::from_str(&format!("\"{inner}\"")).unwrap();
            assert_eq!(out, want);
            assert_eq!(unescaped_len(inner.as_bytes()), want.len());
        }
    }
}
