//! A validating JSON scanner that indexes a line without decoding it.
//!
//! It exists because most of a line is never read: an adapter looks at a handful of keys, and the
//! long strings (tool output, file contents) are passed through as the escaped bytes the CLI
//! wrote. A full parser (simd-json's tape) unescapes and copies every string of every line; this
//! scanner only checks that the line is valid JSON (RFC 8259, strict: no raw control characters
//! in strings, no lone-surrogate escapes, no number that overflows f64, nesting at most
//! [`MAX_DEPTH`]) and records where each value lies. Strings are decoded later, only when an
//! adapter reads them ([`crate::event::json::unescape`]); long strings are read 64 bytes at a time as bit masks of
//! `"`, `\` and control characters, with the widest SIMD the CPU has ([`Level`]: AVX-512BW, AVX2,
//! SSE2, or the portable level: eight bytes per 64-bit word, SWAR), chosen once per process
//! (`crate::simd`, where `AGENTNORM_SIMD` forces one).
//!
//! A line the scanner refuses goes through the frame reader's slow path (SPEC §1 repairs), whose
//! output is scanned again.

use crate::event::json::hex4;

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
#[derive(Debug)]
pub struct Scanner {
    /// The nodes of the last line scanned.
    pub nodes: Vec<Node>,
    stack: Vec<u32>,
    /// How strings are read: [`Level::chosen`], or another level at most [`Level::best`] in tests.
    level: Level,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner { nodes: Vec::new(), stack: Vec::new(), level: Level::chosen() }
    }
}

/// JSON whitespace.
#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Scanner {
    /// Indexes `line` (one JSON text, surrounding whitespace allowed) into [`Scanner::nodes`];
    /// returns it as text.
    ///
    /// The line is UTF-8 when it is accepted, without a pass of its own: outside strings the
    /// scanner accepts only ASCII, and a string with non-ASCII bytes has them checked as it is
    /// read ([`string`]). A line that is not UTF-8 is [`ScanError::Invalid`], even when too deep.
    pub fn scan<'a>(&mut self, line: &'a [u8]) -> Result<&'a str, ScanError> {
        self.nodes.clear();
        self.stack.clear();
        if u32::try_from(line.len()).is_err() {
            return Err(ScanError::Invalid);
        }
        match self.scan_values(line) {
            Ok(()) => {
                debug_assert!(std::str::from_utf8(line).is_ok(), "accepted a line that is not UTF-8: {line:?}");
                // SAFETY: every byte the scanner accepts outside a string is ASCII, and the
                // non-ASCII bytes of every string were checked to be UTF-8 (`string_with`).
                Ok(unsafe { std::str::from_utf8_unchecked(line) })
            }
            Err(e) => {
                self.nodes.clear();
                // The contract reads a line that is not UTF-8 as invalid before anything else.
                if e == ScanError::TooDeep && simdutf8::basic::from_utf8(line).is_err() {
                    return Err(ScanError::Invalid);
                }
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
        let (end, escaped, canonical) = string(line, i, self.level)?;
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

/// The instruction sets the string scanner can read blocks with, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// No `std::arch` intrinsics: eight bytes per 64-bit word (SWAR bit tricks). What aarch64
    /// runs, and any CPU that is not x86-64.
    Portable,
    /// 16 bytes per compare: the x86-64 baseline.
    #[cfg(target_arch = "x86_64")]
    Sse2,
    /// 32 bytes per compare, `vpshufb` for the escape classes.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// One 64-byte register per block, compares straight into mask registers.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Level {
    /// Every level, narrowest first (those above [`Level::best`] must not run).
    #[cfg(test)]
    const ALL: &'static [Level] = &[
        Level::Portable,
        #[cfg(target_arch = "x86_64")]
        Level::Sse2,
        #[cfg(target_arch = "x86_64")]
        Level::Avx2,
        #[cfg(target_arch = "x86_64")]
        Level::Avx512,
    ];

    /// The level in force in this process ([`crate::simd::level`]: the widest this CPU runs
    /// unless one was forced).
    pub(crate) fn chosen() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            use crate::simd::SimdLevel;
            match crate::simd::level() {
                SimdLevel::Avx512 => Level::Avx512,
                SimdLevel::Avx2 => Level::Avx2,
                SimdLevel::Sse2 => Level::Sse2,
                SimdLevel::Portable => Level::Portable,
            }
        }
        // The x86-64 levels are never in force elsewhere (`SimdLevel::supported`).
        #[cfg(not(target_arch = "x86_64"))]
        Level::Portable
    }

    /// The widest level this CPU runs (std caches the answer).
    #[cfg(test)]
    pub(crate) fn best() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512bw") {
                return Level::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Level::Avx2;
            }
            Level::Sse2
        }
        #[cfg(not(target_arch = "x86_64"))]
        Level::Portable
    }
}

/// Bit masks of one block of up to 64 bytes: bit `k` stands for `block[k]`. Bits past the end
/// of a short block are unspecified (the caller ignores them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
struct Masks {
    /// `"`.
    quote: u64,
    /// `\`.
    backslash: u64,
    /// Control characters (below 0x20).
    control: u64,
    /// Bytes of multi-byte UTF-8 characters (0x80 and above).
    high: u64,
}

/// Bit masks of the bytes of a block that matter after a backslash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
struct Classes {
    /// Bytes that may follow a backslash: `"` `/` `b` `f` `n` `r` `t` `u` (a backslash itself
    /// is part of a run).
    escapable: u64,
    /// `u`.
    u: u64,
    /// `/`.
    slash: u64,
}

/// The escape classes as one bit per escapable character, for `vpshufb`: a byte's class is
/// `CLASS_HI[high nibble] & CLASS_LO[low nibble]`, non-zero exactly for the eight escapable
/// characters (each is the only one with its pair of nibbles among the set bits).
///
/// Bits: `"` 0x01, `/` 0x02, `b` 0x04, `f` 0x08, `n` 0x10, `r` 0x20, `t` 0x40, `u` 0x80.
#[cfg(target_arch = "x86_64")]
#[rustfmt::skip]
const CLASS_HI: [i8; 16] = [0, 0, 0x03, 0, 0, 0, 0x1c, 0xe0_u8 as i8, 0, 0, 0, 0, 0, 0, 0, 0];
/// See [`CLASS_HI`]: low nibble 2 is `"` `b` `r`, 4 `t`, 5 `u`, 6 `f`, E `n`, F `/`.
#[cfg(target_arch = "x86_64")]
#[rustfmt::skip]
const CLASS_LO: [i8; 16] = [0, 0, 0x25, 0, 0x40, 0x80_u8 as i8, 0x08, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x02];
/// The class bit of `/` (that of `u` is the top bit, 0x80).
#[cfg(target_arch = "x86_64")]
const CLASS_SLASH: i8 = 0x02;

/// The classes of the bytes of `block` (64 bytes at most) whose bits are set in `wanted`, a
/// byte at a time (a block has a few escaped characters; the other bits are left clear).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
fn classes_scalar(block: &[u8], mut wanted: u64) -> Classes {
    let mut c = Classes { escapable: 0, u: 0, slash: 0 };
    while wanted != 0 {
        let k = wanted.trailing_zeros();
        wanted &= wanted - 1;
        let Some(&b) = block.get(k as usize) else { break };
        c.escapable |= u64::from(ESCAPABLE[b as usize]) << k;
        c.u |= u64::from(b == b'u') << k;
        c.slash |= u64::from(b == b'/') << k;
    }
    c
}

/// Each byte of a word set to 0x01.
const ONES: u64 = 0x0101_0101_0101_0101;
/// Each byte of a word set to 0x80.
const TOP: u64 = 0x8080_8080_8080_8080;

/// 0x80 in the first byte of `x` (little-endian: its lowest) that is `"`, `\` or a control
/// character, and maybe in bytes after it; 0 in every byte before it. So its lowest set bit is
/// exact: `(v - n * ONES) & !v` sets the top bit of a byte below `n` (`n` at most 0x80), and
/// the borrows that make false positives start at a byte that is a true one, running upwards.
///
/// A byte `b` is below 0x20 or is `"` (0x22) exactly when `b ^ 0x02` is below 0x21 (the xor
/// maps 0x00..0x20 onto itself and 0x22 onto 0x20); `\` is the byte `b ^ 0x5c` that is zero.
#[inline(always)]
fn swar_special(x: u64) -> u64 {
    let quote_or_control = x ^ (ONES * 0x02);
    let backslash = x ^ (ONES * u64::from(b'\\'));
    (quote_or_control.wrapping_sub(ONES * 0x21) & !quote_or_control | backslash.wrapping_sub(ONES) & !backslash) & TOP
}

/// The eight bytes of `line` at `j` as a little-endian word (byte `k` of the word is
/// `line[j + k]`), if there are eight.
#[inline(always)]
fn word_at(line: &[u8], j: usize) -> Option<u64> {
    Some(u64::from_le_bytes(line.get(j..j + 8)?.try_into().ok()?))
}

/// [`short_string`] without intrinsics: the 16 bytes as two words, where the first byte that
/// is special ([`swar_special`]) or non-ASCII must be the closing quote.
#[inline]
fn short_string_swar(head: &[u8]) -> Option<usize> {
    for k in 0..2 {
        let x = word_at(head, 8 * k)?;
        let stop = swar_special(x) | x & TOP;
        if stop != 0 {
            let at = 8 * k + (stop.trailing_zeros() / 8) as usize;
            return (head[at] == b'"').then_some(at);
        }
    }
    None
}

/// `block` (64 bytes at most) as a whole 64-byte block: the block itself, or a zero-padded copy
/// of the end of a line.
#[cfg(target_arch = "x86_64")]
#[inline]
fn whole(block: &[u8], padded: &mut [u8; 64]) -> *const u8 {
    if block.len() == 64 {
        return block.as_ptr();
    }
    padded[..block.len()].copy_from_slice(block);
    padded.as_ptr()
}

/// `block` (64 bytes at most) in four SSE2 registers, zeros past its end.
#[cfg(target_arch = "x86_64")]
#[inline]
fn load_sse2(block: &[u8]) -> [std::arch::x86_64::__m128i; 4] {
    use std::arch::x86_64::*;
    let mut padded = [0u8; 64];
    let p = whole(block, &mut padded);
    // SAFETY: SSE2 is part of the x86-64 baseline; `p` points at 64 readable bytes, read 16 at a
    // time (unaligned loads).
    std::array::from_fn(|k| unsafe { _mm_loadu_si128(p.add(16 * k) as *const __m128i) })
}

/// The masks of a block with SSE2, 16 bytes per compare.
#[cfg(target_arch = "x86_64")]
#[inline]
fn masks_sse2(v: [std::arch::x86_64::__m128i; 4]) -> Masks {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline.
    unsafe {
        let (q, bs, low) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8), _mm_set1_epi8(0x1f));
        let mut m = Masks { quote: 0, backslash: 0, control: 0, high: 0 };
        for (k, v) in v.into_iter().enumerate() {
            let bits = |x: __m128i| (_mm_movemask_epi8(x) as u32 as u64) << (16 * k);
            m.quote |= bits(_mm_cmpeq_epi8(v, q));
            m.backslash |= bits(_mm_cmpeq_epi8(v, bs));
            // b <= 0x1f exactly when max(b, 0x1f) == 0x1f (unsigned).
            m.control |= bits(_mm_cmpeq_epi8(_mm_max_epu8(v, low), low));
            m.high |= bits(v);
        }
        m
    }
}

/// `block` (64 bytes at most) in two AVX2 registers, zeros past its end.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn load_avx2(block: &[u8]) -> [std::arch::x86_64::__m256i; 2] {
    use std::arch::x86_64::*;
    let mut padded = [0u8; 64];
    let p = whole(block, &mut padded);
    // SAFETY: `p` points at 64 readable bytes: the loads read 0..32 and 32..64 (unaligned).
    unsafe { [_mm256_loadu_si256(p as *const __m256i), _mm256_loadu_si256(p.add(32) as *const __m256i)] }
}

/// The masks of a block with AVX2, 32 bytes per compare.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn masks_avx2(v: [std::arch::x86_64::__m256i; 2]) -> Masks {
    use std::arch::x86_64::*;
    let (q, bs, low) = (_mm256_set1_epi8(b'"' as i8), _mm256_set1_epi8(b'\\' as i8), _mm256_set1_epi8(0x1f));
    let mut m = Masks { quote: 0, backslash: 0, control: 0, high: 0 };
    for (k, v) in v.into_iter().enumerate() {
        let bits = |x: __m256i| (_mm256_movemask_epi8(x) as u32 as u64) << (32 * k);
        m.quote |= bits(_mm256_cmpeq_epi8(v, q));
        m.backslash |= bits(_mm256_cmpeq_epi8(v, bs));
        // b <= 0x1f exactly when max(b, 0x1f) == 0x1f (unsigned).
        m.control |= bits(_mm256_cmpeq_epi8(_mm256_max_epu8(v, low), low));
        m.high |= bits(v);
    }
    m
}

/// The classes of a block with AVX2: two `vpshufb` look-ups per 32 bytes ([`CLASS_HI`]); the
/// `u`s are the classes' top bits, the `/`s their second bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn classes_avx2(v: [std::arch::x86_64::__m256i; 2]) -> Classes {
    use std::arch::x86_64::*;
    // SAFETY: the tables are 16 bytes long (unaligned loads).
    let (hi_tbl, lo_tbl) = unsafe {
        (
            _mm256_broadcastsi128_si256(_mm_loadu_si128(CLASS_HI.as_ptr() as *const __m128i)),
            _mm256_broadcastsi128_si256(_mm_loadu_si128(CLASS_LO.as_ptr() as *const __m128i)),
        )
    };
    let mut c = Classes { escapable: 0, u: 0, slash: 0 };
    for (k, v) in v.into_iter().enumerate() {
        // A byte with its top bit set looks up 0 (`vpshufb`), and no escapable byte has it.
        let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
        let class = _mm256_and_si256(_mm256_shuffle_epi8(lo_tbl, v), _mm256_shuffle_epi8(hi_tbl, hi));
        let bits = |x: __m256i| (_mm256_movemask_epi8(x) as u32 as u64) << (32 * k);
        c.escapable |= !bits(_mm256_cmpeq_epi8(class, _mm256_setzero_si256())) & (0xffff_ffff << (32 * k));
        c.u |= bits(class);
        // Bit 1 of each byte moved to bit 7 (16-bit shift: the low byte's bits stay below bit 15).
        c.slash |= bits(_mm256_slli_epi16(class, 6));
    }
    c
}

/// `block` (64 bytes at most) in a 512-bit register, zeros past its end (a masked load: the
/// bytes past the end are not read).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn load_avx512(block: &[u8]) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    if block.len() >= 64 {
        // SAFETY: `block` has 64 readable bytes (unaligned load).
        unsafe { _mm512_loadu_si512(block.as_ptr() as *const _) }
    } else {
        // SAFETY: the mask selects the first `block.len()` bytes, the only ones read.
        unsafe { _mm512_maskz_loadu_epi8((1u64 << block.len()) - 1, block.as_ptr() as *const i8) }
    }
}

/// The masks of a block with AVX-512BW: three compares into mask registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn masks_avx512(v: std::arch::x86_64::__m512i) -> Masks {
    use std::arch::x86_64::*;
    Masks {
        quote: _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'"' as i8)),
        backslash: _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\\' as i8)),
        control: _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20)),
        high: _mm512_movepi8_mask(v),
    }
}

/// The classes of a block with AVX-512BW: the [`CLASS_HI`] look-ups on the whole block at once,
/// tested into mask registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn classes_avx512(v: std::arch::x86_64::__m512i) -> Classes {
    use std::arch::x86_64::*;
    // SAFETY: the tables are 16 bytes long (unaligned loads).
    let (hi_tbl, lo_tbl) = unsafe {
        (
            _mm512_broadcast_i32x4(_mm_loadu_si128(CLASS_HI.as_ptr() as *const __m128i)),
            _mm512_broadcast_i32x4(_mm_loadu_si128(CLASS_LO.as_ptr() as *const __m128i)),
        )
    };
    // A byte with its top bit set looks up 0 (`vpshufb`), and no escapable byte has it.
    let hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f));
    let class = _mm512_and_si512(_mm512_shuffle_epi8(lo_tbl, v), _mm512_shuffle_epi8(hi_tbl, hi));
    Classes {
        escapable: _mm512_test_epi8_mask(class, class),
        u: _mm512_movepi8_mask(class),
        slash: _mm512_test_epi8_mask(class, _mm512_set1_epi8(CLASS_SLASH)),
    }
}

/// The characters that follow an odd-length run of backslashes (the escaped characters that
/// are not themselves backslashes), given the backslash mask of a block and whether its first
/// byte is escaped by the previous block's last backslash (updated for the next block).
///
/// simdjson's escape scanner: every backslash that is not escaped escapes the next byte, and a
/// subtraction runs the carries through each run at once (with the odd bits set, a run's
/// escaping backslashes are those whose position has the run start's parity).
#[inline]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
fn odd_backslash_ends(backslash: u64, carry: &mut u64) -> u64 {
    const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
    let potential = backslash & !*carry;
    let code = ((potential << 1 | ODD).wrapping_sub(potential)) ^ ODD;
    // Every escaped byte, backslashes included; and the backslashes that escape.
    let escaped = code ^ (backslash | *carry);
    *carry = (code & backslash) >> 63;
    escaped & !backslash
}

/// The offset of the closing quote in `head` (16 bytes after an opening quote) when nothing
/// before it is a backslash, a control character or a non-ASCII byte; read with SSE2 on x86-64
/// unless the level is [`Level::Portable`].
#[inline]
fn short_string(head: &[u8], level: Level) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if level != Level::Portable {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; `head` is 16 bytes long (unaligned load).
        let (quote, other) = unsafe {
            let v = _mm_loadu_si128(head.as_ptr() as *const __m128i);
            let low = _mm_set1_epi8(0x1f);
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            (
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8))) as u32,
                // A non-ASCII byte has its top bit set, which is what `movemask` reads.
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(control, backslash), v)) as u32,
            )
        };
        let first = quote.trailing_zeros();
        return (quote != 0 && other & ((1 << first) - 1) == 0).then_some(first as usize);
    }
    let _ = level;
    short_string_swar(head)
}

/// Whether `b` may follow a backslash (`\\` is handled as a run of backslashes).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
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

/// Checks the `\u` escapes whose `u`s are the bits of `unicode` in the block at `block`, but for
/// those before `pair_end` (second halves of pairs already checked); returns the new `pair_end`.
/// Out of line: a `\u` is rare, and the call would cost the hot loop its registers.
#[cold]
#[inline(never)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
fn unicode_escapes(line: &[u8], block: usize, mut unicode: u64, mut pair_end: usize) -> Result<usize, ScanError> {
    while unicode != 0 {
        let j = block + unicode.trailing_zeros() as usize;
        unicode &= unicode - 1;
        if j >= pair_end && unicode_escape(line, j - 1)? {
            pair_end = j + 12;
        }
    }
    Ok(pair_end)
}

/// Scans the string literal whose opening quote is at `i` with the block readers of `level` (at
/// most [`Level::best`]); returns the offset after its closing quote, whether it holds escapes
/// and whether they are all canonical ([`Node::canonical`]).
///
/// The string is read 64 bytes at a time as bit masks (quotes, backslashes, control
/// characters); the escaped characters come from the backslash runs by carry arithmetic, so a
/// long string with an escape every few bytes (tool output) costs a few operations per block,
/// plus a closer look at each `\u`. Each run of blocks that hold non-ASCII bytes is checked to
/// be UTF-8 (the only UTF-8 check of a line, [`Scanner::scan`]).
#[inline]
fn string(line: &[u8], i: usize, level: Level) -> Result<(usize, bool, bool), ScanError> {
    // Short strings (keys, ids, types) end within 16 bytes with nothing to unescape.
    if let Some(head) = line.get(i + 1..i + 17)
        && let Some(end) = short_string(head, level)
    {
        return Ok((i + 2 + end, false, true));
    }
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a scanner's level is at most `Level::best()`: the CPU has AVX-512BW.
        Level::Avx512 => unsafe { string_avx512(line, i) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, the CPU has AVX2.
        Level::Avx2 => unsafe { string_avx2(line, i) },
        #[cfg(target_arch = "x86_64")]
        Level::Sse2 => string_sse2(line, i),
        Level::Portable => string_portable(line, i),
    }
}

/// [`string_with`] with SSE2 (kept out of line, as the wider readers are: the short strings
/// that [`string`] reads itself stay cheap).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn string_sse2(line: &[u8], i: usize) -> Result<(usize, bool, bool), ScanError> {
    string_with::<_, false>(line, i, load_sse2, masks_sse2, |_, b, e| classes_scalar(b, e))
}

/// [`string`] without intrinsics, a word of eight bytes at a time (SWAR): each word is tested
/// at once for `"`, `\` and control characters ([`swar_special`]), the first one found is
/// read as a byte (an escape is checked and stepped over, so a run of backslashes pairs up as
/// it goes), and the scan resumes after it. A string with non-ASCII bytes is checked to be
/// UTF-8 where it ends.
#[inline(never)]
fn string_portable(line: &[u8], i: usize) -> Result<(usize, bool, bool), ScanError> {
    let (mut j, mut escaped, mut canonical, mut high) = (i + 1, false, true, 0);
    loop {
        // To the next special byte. `high` gathers the top bits of whole words, some past the
        // string's end: at worst a string of ASCII is checked to be UTF-8.
        loop {
            let Some(x) = word_at(line, j) else {
                // The last bytes of the line, one at a time.
                let rest = line.get(j..).unwrap_or_default();
                let k = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).ok_or(ScanError::Invalid)?;
                high |= if rest[..k].iter().any(|&b| b >= 0x80) { TOP } else { 0 };
                j += k;
                break;
            };
            high |= x;
            let special = swar_special(x);
            if special != 0 {
                j += (special.trailing_zeros() / 8) as usize;
                break;
            }
            j += 8;
        }
        match line[j] {
            b'"' => {
                if high & TOP != 0 && simdutf8::basic::from_utf8(&line[i + 1..j]).is_err() {
                    return Err(ScanError::Invalid);
                }
                return Ok((j + 1, escaped, canonical));
            }
            b'\\' => {
                escaped = true;
                j += match line.get(j + 1) {
                    Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                    Some(b'/') => {
                        canonical = false;
                        2
                    }
                    Some(b'u') => {
                        canonical = false;
                        if unicode_escape(line, j)? { 12 } else { 6 }
                    }
                    _ => return Err(ScanError::Invalid),
                };
            }
            _ => return Err(ScanError::Invalid),
        }
    }
}

/// [`string_with`] compiled for AVX-512BW. The escape classes cost a few instructions per
/// block here, so they are read for every block rather than behind a branch.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
fn string_avx512(line: &[u8], i: usize) -> Result<(usize, bool, bool), ScanError> {
    string_with::<_, true>(line, i, |b| load_avx512(b), |v| masks_avx512(v), |v, _, _| classes_avx512(v))
}

/// [`string_with`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn string_avx2(line: &[u8], i: usize) -> Result<(usize, bool, bool), ScanError> {
    string_with::<_, false>(line, i, |b| load_avx2(b), |v| masks_avx2(v), |v, _, _| classes_avx2(v))
}

/// What [`string_with`] carries from one block to the next.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
struct StringState {
    /// Whether the previous block ended inside an odd run of backslashes.
    carry: u64,
    /// The backslashes inside the string so far (non-zero: it holds escapes).
    backslashes: u64,
    /// The non-canonical escapes (`\u`, `\/`) so far.
    uncanonical: u64,
    /// A `\u` before this offset is the second half of a surrogate pair already checked.
    pair_end: usize,
    /// The start of the current run of blocks holding non-ASCII bytes (`usize::MAX` outside
    /// one). A run is checked to be UTF-8 where it ends: at the next block of ASCII only, or at
    /// the closing quote, cuts which fall between characters of valid UTF-8.
    high_from: usize,
}

/// [`string`] past the short-string check, with the block readers `load` (a block of 64 bytes
/// at most into registers `V`, zeros past its end), `masks` and `classes` (given the block's
/// registers, its bytes and the bits that matter); with `EAGER` the classes of every block
/// with something to look at are read, else only those of a block with an escape.
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
fn string_with<'a, V: Copy, const EAGER: bool>(
    line: &'a [u8],
    i: usize,
    load: impl Fn(&'a [u8]) -> V,
    masks: impl Fn(V) -> Masks,
    classes: impl Fn(V, &'a [u8], u64) -> Classes,
) -> Result<(usize, bool, bool), ScanError> {
    let mut s = StringState { carry: 0, backslashes: 0, uncanonical: 0, pair_end: 0, high_from: usize::MAX };
    let mut block = i + 1;
    // Whole blocks.
    while let Some(bytes) = line.get(block..block + 64) {
        let v = load(bytes);
        let m = masks(v);
        if m.quote | m.backslash | m.control | s.carry == 0 {
            // Nothing but string content (tool output between escapes, long lines of code).
            s.utf8(line, block, m.high)?;
        } else if let Some(end) = s.block::<EAGER>(line, block, u64::MAX, m, |e| classes(v, bytes, e))? {
            return Ok(end);
        }
        block += 64;
    }
    // The end of the line.
    if let Some(bytes) = line.get(block..).filter(|b| !b.is_empty()) {
        let v = load(bytes);
        if let Some(end) = s.block::<EAGER>(line, block, (1 << bytes.len()) - 1, masks(v), |e| classes(v, bytes, e))? {
            return Ok(end);
        }
    }
    Err(ScanError::Invalid)
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "only the x86-64 levels read 64-byte blocks"))]
impl StringState {
    /// Reads the block at `block` of `line` (its bits set in `in_block`), whose masks are `m`;
    /// returns what [`string`] returns when the string ends in it.
    #[inline(always)]
    fn block<const EAGER: bool>(
        &mut self,
        line: &[u8],
        block: usize,
        in_block: u64,
        m: Masks,
        classes: impl Fn(u64) -> Classes,
    ) -> Result<Option<(usize, bool, bool)>, ScanError> {
        let escaped = odd_backslash_ends(m.backslash, &mut self.carry);
        let closing = m.quote & !escaped & in_block;
        let inside = if closing == 0 { in_block } else { (closing & closing.wrapping_neg()) - 1 };
        if m.control & inside != 0 {
            return Err(ScanError::Invalid);
        }
        self.utf8(line, block, m.high & inside)?;
        self.backslashes |= m.backslash & inside;
        let e = escaped & inside;
        if EAGER || e != 0 {
            let c = classes(e);
            if e & !c.escapable != 0 {
                return Err(ScanError::Invalid);
            }
            self.uncanonical |= e & (c.u | c.slash);
            if e & c.u != 0 {
                self.pair_end = unicode_escapes(line, block, e & c.u, self.pair_end)?;
            }
        }
        if closing == 0 {
            return Ok(None);
        }
        let end = block + closing.trailing_zeros() as usize;
        self.utf8(line, end, 0)?;
        Ok(Some((end + 1, self.backslashes != 0, self.uncanonical == 0)))
    }

    /// Notes the non-ASCII bytes `high` of the block at `at` (none: the string's content ends
    /// at `at`); checks the run of blocks holding them that ends there.
    #[inline(always)]
    fn utf8(&mut self, line: &[u8], at: usize, high: u64) -> Result<(), ScanError> {
        if high != 0 {
            self.high_from = self.high_from.min(at);
        } else if self.high_from != usize::MAX {
            let run = &line[std::mem::replace(&mut self.high_from, usize::MAX)..at];
            if simdutf8::basic::from_utf8(run).is_err() {
                return Err(ScanError::Invalid);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::json::{unescape, unescaped_len};

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
        // Not UTF-8: in a key, in a value, in a long string, a character cut by the closing
        // quote; and too deep but not UTF-8 first.
        let long = "a".repeat(100);
        for line in [
            b"{\"\xff\":1}".to_vec(),
            b"{\"a\":\"\xff\"}".to_vec(),
            [b"{\"a\":\"", long.as_bytes(), b"\xe9", long.as_bytes(), b"\"}"].concat(),
            [b"{\"a\":\"", long.as_bytes(), b"\xe2\x82\"}"].concat(),
            // A second run of non-ASCII blocks, after one of ASCII only.
            [b"{\"a\":\"", "é".as_bytes(), long.as_bytes(), b"\xff", long.as_bytes(), b"\"}"].concat(),
            [b"{\"a\":\"", "é".as_bytes(), long.as_bytes(), "é".as_bytes(), b"\xe9\"}"].concat(),
            b"{\"a\":1}\xff".to_vec(),
        ] {
            assert_eq!(Scanner::default().scan(&line), Err(ScanError::Invalid), "{line:?}");
        }
        let deep = [b"[\"\xff\"".as_slice(), &b"[".repeat(MAX_DEPTH)].concat();
        assert_eq!(Scanner::default().scan(&deep), Err(ScanError::Invalid));
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

    /// The levels this CPU runs (the SIMD ones above it would fault).
    fn levels() -> impl Iterator<Item = Level> {
        Level::ALL.iter().copied().filter(|&l| l <= Level::best())
    }

    /// The levels this CPU runs that read 64-byte blocks (all but the portable level, which
    /// reads words: [`string_portable`]).
    fn block_levels() -> impl Iterator<Item = Level> {
        levels().filter(|&l| l != Level::Portable)
    }

    /// The block readers of `level`, which must be at most [`Level::best`].
    fn read_block(level: Level, block: &[u8]) -> (Masks, Classes) {
        assert!(level <= Level::best());
        match level {
            Level::Portable => unreachable!("the portable level reads words, not blocks ({} bytes)", block.len()),
            #[cfg(target_arch = "x86_64")]
            Level::Sse2 => (masks_sse2(load_sse2(block)), classes_scalar(block, u64::MAX >> (64 - block.len()))),
            // SAFETY: the CPU has AVX2 (asserted above).
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => unsafe {
                let v = load_avx2(block);
                (masks_avx2(v), classes_avx2(v))
            },
            // SAFETY: the CPU has AVX-512BW (asserted above).
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => unsafe {
                let v = load_avx512(block);
                (masks_avx512(v), classes_avx512(v))
            },
        }
    }

    /// A scanner reading strings at `level`, which must be at most [`Level::best`].
    fn scanner_at(level: Level) -> Scanner {
        assert!(level <= Level::best());
        Scanner { level, ..Scanner::default() }
    }

    /// A small deterministic generator (xorshift64).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Checks every bit of `block`'s masks and classes, as read at every block level, against their
    /// definitions.
    fn check_block(block: &[u8]) {
        for level in block_levels() {
            let (m, c) = read_block(level, block);
            for (k, &b) in block.iter().enumerate() {
                let bit = |mask: u64| mask >> k & 1 == 1;
                let at = format!("{level:?}: byte {b:#x} at {k} of {block:?}");
                assert_eq!(bit(m.quote), b == b'"', "quote, {at}");
                assert_eq!(bit(m.backslash), b == b'\\', "backslash, {at}");
                assert_eq!(bit(m.control), b < 0x20, "control, {at}");
                assert_eq!(bit(m.high), b >= 0x80, "non-ASCII, {at}");
                assert_eq!(bit(c.escapable), b"\"/bfnrtu".contains(&b), "escapable, {at}");
                assert_eq!(bit(c.u), b == b'u', "u, {at}");
                assert_eq!(bit(c.slash), b == b'/', "slash, {at}");
            }
        }
    }

    #[test]
    fn every_block_reader_agrees_with_a_byte_at_a_time_reading() {
        // Every byte value at each end of every 16- and 32-byte lane, in whole and short blocks.
        for len in [64, 63, 33, 17, 1] {
            for at in [0, 15, 16, 31, 32, 47, 48, 62, 63].into_iter().filter(|&at| at < len) {
                for b in 0..=255u8 {
                    let mut block = vec![b'a'; len];
                    block[at] = b;
                    check_block(&block);
                }
            }
        }
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let alphabet = [b'"', b'\\', 0x00, 0x1f, 0x20, b'a', b'u', b'/', b'n', 0x7f, 0x80, 0xf5, 0xff];
        for round in 0..3000 {
            let block: Vec<u8> = (0..1 + round % 64).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            check_block(&block);
        }
    }

    #[test]
    fn escaped_characters_match_a_byte_at_a_time_reading_across_a_block_end() {
        // Every pattern of backslashes in the 8 bytes before and the 8 bytes after a block end,
        // read by every block reader.
        for pattern in 0..=u16::MAX {
            let mut s = vec![b'a'; 128];
            for k in 0..16 {
                if pattern >> k & 1 == 1 {
                    s[56 + k] = b'\\';
                }
            }
            let want = escaped_reference(&s);
            let want: [u64; 2] = std::array::from_fn(|n| (0..64).fold(0, |m, k| m | u64::from(want[n * 64 + k]) << k));
            for level in block_levels() {
                let mut carry = 0;
                for (n, block) in s.chunks(64).enumerate() {
                    let got = odd_backslash_ends(read_block(level, block).0.backslash, &mut carry);
                    assert_eq!(got, want[n], "{level:?}: pattern {pattern:#018b}, block {n}");
                }
            }
        }
    }

    #[test]
    fn every_level_reads_every_backslash_pattern_around_a_word_and_a_block_end() {
        // Every pattern of backslashes (the other bytes `n`, or `"`) in the 16 bytes around the
        // first block end (56..72 of the string's content: the portable level's words end at 64
        // too) and around two word ends inside the first block (20..36: words end at 24 and 32),
        // then `n"` and more: each level must find the same end and escapes as a byte at a time.
        let mut line = Vec::with_capacity(160);
        for from in [56, 20] {
            for other in [b'n', b'"'] {
                for pattern in 0..=u16::MAX {
                    line.clear();
                    line.push(b'"');
                    line.resize(1 + from, b'a');
                    for k in 0..16 {
                        line.push(if pattern >> k & 1 == 1 { b'\\' } else { other });
                    }
                    line.extend_from_slice(b"n\"aaaa\"");
                    let want = string_reference(&line, 0);
                    for level in levels() {
                        assert_eq!(
                            string(&line, 0, level),
                            want,
                            "{level:?}: {other} pattern {pattern:#018b} at {from}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn escaped_characters_match_a_byte_at_a_time_reading() {
        // Runs of backslashes of every length across block boundaries.
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let alphabet = [b'\\', b'\\', b'\\', b'"', b'a', b'n', 0x1f, 0xe9, b'u'];
        for round in 0..2000 {
            let s: Vec<u8> = (0..1 + round % 200).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            let want = escaped_reference(&s);
            for level in block_levels() {
                let mut carry = 0;
                for (n, block) in s.chunks(64).enumerate() {
                    let got = odd_backslash_ends(read_block(level, block).0.backslash, &mut carry);
                    for k in 0..block.len() {
                        assert_eq!(
                            got >> k & 1 == 1,
                            want[n * 64 + k],
                            "{level:?}: escaped at {} of {s:?}",
                            n * 64 + k
                        );
                    }
                }
            }
        }
    }

    /// [`string`] a byte at a time: the end of the string literal at `i`, whether it holds
    /// escapes and whether they are all canonical.
    fn string_reference(line: &[u8], i: usize) -> Result<(usize, bool, bool), ScanError> {
        let (mut j, mut escaped, mut canonical) = (i + 1, false, true);
        loop {
            match *line.get(j).ok_or(ScanError::Invalid)? {
                b'"' if std::str::from_utf8(&line[i + 1..j]).is_err() => return Err(ScanError::Invalid),
                b'"' => return Ok((j + 1, escaped, canonical)),
                0..0x20 => return Err(ScanError::Invalid),
                b'\\' => {
                    escaped = true;
                    match line.get(j + 1).copied().ok_or(ScanError::Invalid)? {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                        b'/' => (j, canonical) = (j + 2, false),
                        b'u' => {
                            canonical = false;
                            j += match hex4(line, j + 2).ok_or(ScanError::Invalid)? {
                                0xD800..0xDC00 if line.get(j + 6..j + 8) == Some(br"\u") => match hex4(line, j + 8) {
                                    Some(0xDC00..0xE000) => 12,
                                    _ => return Err(ScanError::Invalid),
                                },
                                0xD800..0xE000 => return Err(ScanError::Invalid),
                                _ => 6,
                            };
                        }
                        _ => return Err(ScanError::Invalid),
                    }
                }
                _ => j += 1,
            }
        }
    }

    /// Scans the string literal at `at` of `line` at every level: each must read it as the
    /// byte-at-a-time reference does (and a whole line that is one string, as serde_json does).
    fn check_string(line: &[u8], at: usize) {
        let want = string_reference(line, at);
        for level in levels() {
            assert_eq!(string(line, at, level), want, "{level:?}: {:?}", String::from_utf8_lossy(line));
        }
        if at != 0 {
            return;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            for level in levels() {
                assert!(scanner_at(level).scan(line).is_err(), "{level:?}: {line:?} is not UTF-8");
            }
            return;
        };
        let serde = serde_json::from_str::<String>(text).is_ok();
        assert_eq!(serde, want.is_ok_and(|(end, ..)| end == line.len()), "serde_json: {text:?}");
        for level in levels() {
            assert_eq!(scanner_at(level).scan(line).is_ok(), serde, "{level:?}: {text:?}");
        }
    }

    #[test]
    fn every_level_reads_strings_as_a_byte_at_a_time_reading() {
        // Random strings of escape-heavy pieces, quotes, control and non-ASCII bytes.
        let pieces: &[&[u8]] = &[
            b"\\",
            b"\\\\",
            b"\\\\\\",
            b"\"",
            b"a",
            b"abcdefghijklmnop",
            b"u",
            b"/",
            b"n",
            b"\\n",
            b"\\\"",
            b"\\/",
            b"\\u",
            b"\\u00e9",
            b"\\ud83d",
            b"\\ude00",
            b"\\ud83d\\ude00",
            b"\\uDBFF\\uDFFF",
            b"\\x",
            b"d83d",
            b"\x01",
            b"\x1f",
            b"\x7f",
            "é".as_bytes(),
            "€".as_bytes(),
            "😀".as_bytes(),
            b"\xff",
            b"\xe2\x82",
        ];
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        for _ in 0..20_000 {
            let mut line = b"\"".to_vec();
            for _ in 0..rng.below(60) {
                line.extend_from_slice(pieces[rng.below(pieces.len())]);
            }
            if rng.below(4) > 0 {
                line.push(b'"');
            }
            check_string(&line, 0);
        }
        // Each escape at every offset around the first two block ends (a block starts after the
        // opening quote), in a line that ends with the string or goes on past it.
        let escapes: &[&[u8]] = &[
            b"\\\\",
            b"\\\"",
            b"\\\\\\\"",
            b"\\\\\\\\\\",
            b"\\n",
            b"\\/",
            b"\\u00e9",
            b"\\ud83d\\ude00",
            b"\\ud800",
            b"\\udc00",
            b"\\u12",
            b"\\x",
            b"\x01",
            b"\x1f",
            b"\x7f",
            "é".as_bytes(),
            "😀".as_bytes(),
            b"\xf0\x9f\x98",
            b"\xc3",
            b"\x80",
            b"",
        ];
        for prefix in (0..20).chain(44..84).chain(108..148) {
            for esc in escapes {
                for tail in [&b""[..], b"\"", b"b\"", b"\",1]"] {
                    let mut line = b"\"".to_vec();
                    line.resize(1 + prefix, b'a');
                    line.extend_from_slice(esc);
                    line.extend_from_slice(tail);
                    check_string(&line, 0);
                    // The same string after a key, so that it starts mid-line.
                    let mut keyed = b"{\"k\":".to_vec();
                    keyed.extend_from_slice(&line);
                    check_string(&keyed, 5);
                }
            }
        }
        // Runs of 1 to 9 backslashes ending at every offset around the first block end, then a
        // quote (escaped or closing) or a letter, then the closing quote at once or after a
        // whole block with nothing to look at (`\uaaaa` is a valid escape).
        for end in 55..75 {
            for run in 1..10 {
                for after in [b'"', b'n', b'u', b'x'] {
                    for filler in [0, 70] {
                        let mut line = b"\"".to_vec();
                        line.resize(1 + end - run, b'a');
                        line.resize(1 + end, b'\\');
                        line.push(after);
                        line.resize(line.len() + filler, b'a');
                        line.push(b'"');
                        check_string(&line, 0);
                    }
                }
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
