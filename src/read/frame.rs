//! The zero-copy view of one parsed line that every dialect reads through.
//!
//! It exists so that the adapters never touch a JSON reader directly: a [`Parser`] owns the
//! reused buffers (the scanner's index of the line, an arena for the strings an adapter decodes)
//! and hands a [`Val`] to a closure. The line is validated and indexed once
//! (`src/scan.rs`); a string is decoded only when an adapter reads it, and only when it holds
//! escapes (otherwise it is a slice of the line).
//!
//! Rules of SPEC §1 live here: a duplicate key's last value wins, a lone-surrogate escape reads
//! as U+FFFD, nesting deeper than 1024 levels is refused. Strings longer than
//! [`RAW_MIN`] bytes are handed out as [`Text`] that keeps the escaped bytes of the original
//! line, so large tool outputs are never unescaped and escaped again.

use bumpalo::Bump;

use crate::event::json::{unescape, unescaped_len};
use crate::event::{Json, Text, UnknownReason};
use crate::read::scan::{Kind, Node, ScanError, Scanner, parse_f64};

/// Strings at least this long are passed through as the escaped bytes of the input.
pub const RAW_MIN: usize = 256;

/// Reads lines into an index of their values, reusing every buffer from one line to the next.
#[derive(Default)]
pub struct Parser {
    scanner: Scanner,
    /// Decoded strings of the current line (only those an adapter read and that hold escapes).
    arena: Bump,
    /// The repaired or re-encoded copy of a line the slow path read.
    fixed: Vec<u8>,
    /// The root object's members as (key signature, key node), in input order: see [`key_sig`].
    root_keys: Vec<(u32, u32)>,
}

/// Why a line is not a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotFrame {
    /// Valid JSON, but not an object.
    NotObject,
    /// Not JSON; carries `not_json`, `invalid_json` or `malformed_frame` (too deep).
    Bad(UnknownReason),
}

/// One scanned line: what every [`Val`] of it points into.
struct Doc<'t> {
    text: &'t str,
    nodes: &'t [Node],
    arena: &'t Bump,
    /// Whether `line` is the input's own bytes (not repaired): long strings then pass through as
    /// their escaped form.
    own: bool,
    /// The root object's members, by key signature ([`Parser::root_keys`]).
    root_keys: &'t [(u32, u32)],
}

/// A key's length, first and last bytes, packed in a word: the root object's members are told
/// apart by it before any key is compared byte for byte.
///
/// The root is where the adapters and the detector look up most keys (a dozen a line, most of
/// them absent, and a duplicate key's last value wins, so each lookup used to walk every member
/// through the nodes); comparing words from the last member back stops at the first match.
fn key_sig(key: &[u8]) -> u32 {
    let (first, last) = (key.first().copied().unwrap_or(0), key.last().copied().unwrap_or(0));
    (key.len().min(0xffff) as u32) << 16 | u32::from(first) << 8 | u32::from(last)
}

/// Root keys looked for together ([`Val::root_has`]), with their signatures computed once.
#[derive(Debug, Clone, Default)]
pub struct KeyNames(Vec<(u32, &'static str)>);

impl KeyNames {
    /// The names to look for (at most 64; their bits in [`Val::root_has`] are in this order).
    pub fn new(names: &[&'static str]) -> KeyNames {
        assert!(names.len() <= 64, "KeyNames holds at most 64 names");
        KeyNames(names.iter().map(|n| (key_sig(n.as_bytes()), *n)).collect())
    }
}

impl Parser {
    /// Parses `line` (no line ending) and calls `f` with its root object, or with the reason it
    /// is not one.
    pub fn with_frame<R, F>(&mut self, line: &[u8], f: F) -> R
    where
        F: FnOnce(Result<Val<'_>, NotFrame>) -> R,
    {
        self.arena.reset();
        let (text, own) = match self.scanner.scan(line) {
            Ok(text) => (text, true),
            Err(ScanError::TooDeep) => return f(Err(NotFrame::Bad(UnknownReason::MalformedFrame))),
            Err(ScanError::Invalid) => match slow_path(line) {
                Ok(fixed) => {
                    self.fixed = fixed;
                    match self.scanner.scan(&self.fixed) {
                        Ok(text) => (text, false),
                        Err(_) => return f(Err(NotFrame::Bad(UnknownReason::InvalidJson))),
                    }
                }
                Err(reason) => return f(Err(NotFrame::Bad(reason))),
            },
        };
        let nodes = &self.scanner.nodes;
        self.root_keys.clear();
        let mut doc = Doc { text, nodes, arena: &self.arena, own, root_keys: &[] };
        if !(Val { doc: &doc, i: 0 }).is_object() {
            return f(Err(NotFrame::NotObject));
        }
        for (k, _) in (Val { doc: &doc, i: 0 }).members() {
            let key = Val { doc: &doc, i: k };
            let sig = if key.node().escaped {
                key_sig(key.str().unwrap_or_default().as_bytes())
            } else {
                key_sig(key.inner().as_bytes())
            };
            self.root_keys.push((sig, k));
        }
        doc.root_keys = &self.root_keys;
        f(Ok(Val { doc: &doc, i: 0 }))
    }

    /// Parses `bytes`, the text of a JSON array that [`Val::own_span`] gave for an earlier
    /// line, and hands the array to `f` (`None` when the bytes are not one), with the buffers
    /// of this parser: the fold reads the content blocks of a very long line again, one by
    /// one, instead of holding the events of all of them at once.
    pub fn with_array<R, F>(&mut self, bytes: &[u8], f: F) -> R
    where
        F: FnOnce(Option<Val<'_>>) -> R,
    {
        self.arena.reset();
        let Ok(text) = self.scanner.scan(bytes) else { return f(None) };
        let doc = Doc { text, nodes: &self.scanner.nodes, arena: &self.arena, own: true, root_keys: &[] };
        let root = Val { doc: &doc, i: 0 };
        f((root.node().kind == Kind::Array).then_some(root))
    }
}

/// A line the scanner refused: the bytes to read instead, as SPEC §1 says, if there are any.
#[cold]
fn slow_path(line: &[u8]) -> Result<Vec<u8>, UnknownReason> {
    let starts_structured = matches!(line.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'['));
    let bad = if starts_structured { UnknownReason::InvalidJson } else { UnknownReason::NotJson };
    let mut probe = Scanner::default();
    // Lone surrogates read as U+FFFD: `\ud800` and `\ufffd` have the same length, so the
    // repaired copy keeps every byte offset of the original.
    if memchr::memmem::find(line, b"\\u").is_some() {
        let mut fixed = line.to_vec();
        if repair_surrogates(&mut fixed) {
            match probe.scan(&fixed) {
                Ok(_) => return Ok(fixed),
                Err(ScanError::TooDeep) => return Err(UnknownReason::MalformedFrame),
                Err(ScanError::Invalid) => {}
            }
        }
    }
    // serde_json accepts a few documents the scanner refuses: re-encode what it reads.
    if starts_structured {
        // Numbers beyond f64 (`1e400`) are valid JSON both parsers refuse: read as
        // `JSON.stringify(JSON.parse(…))` does (Infinity has no JSON form: `null`, i.e. absent).
        let finite = null_infinite_numbers(line);
        let text = finite.as_deref().unwrap_or(line);
        if let Ok(bytes) = serde_json::from_slice::<serde_json::Value>(text).and_then(|v| serde_json::to_vec(&v)) {
            match probe.scan(&bytes) {
                Ok(_) => return Ok(bytes),
                Err(ScanError::TooDeep) => return Err(UnknownReason::MalformedFrame),
                Err(ScanError::Invalid) => {}
            }
        }
    }
    Err(bad)
}

thread_local! {
    /// A parser for JSON that CLIs encode inside strings (Codex `arguments`, Cursor function
    /// arguments, Codex 0.40 tool outputs).
    static EMBEDDED: std::cell::RefCell<Parser> = std::cell::RefCell::new(Parser::default());
}

/// Calls `f` with the object JSON-encoded in the string `s`, when it is one.
pub fn with_embedded_object<R>(s: &str, f: impl FnOnce(Val<'_>) -> R) -> Option<R> {
    let run = |p: &mut Parser| p.with_frame(s.as_bytes(), |r| r.ok().map(f));
    EMBEDDED.with(|cell| match cell.try_borrow_mut() {
        Ok(mut p) => run(&mut p),
        Err(_) => run(&mut Parser::default()),
    })
}

/// A value JSON-encoded in a string (`tool_started.input` from a rollout's `arguments`): the
/// decoded value (an object keeps its key order), `None` for `null`, and text that is not JSON
/// (redacted, truncated) as that string.
pub fn decode_embedded(s: &str) -> Option<Json> {
    if let Some(object) = with_embedded_object(s, |v| v.to_json()) {
        return Some(object);
    }
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(serde_json::Value::Null) => None,
        Ok(v) => Some(Json::from_trusted(v.to_string())),
        Err(_) => Some(Json::from_trusted(serde_json::Value::String(s.to_owned()).to_string())),
    }
}

/// A copy of `line` with every number literal outside strings that overflows f64 (`1e400`,
/// `-1e999`, 400 digits) replaced by `null`; `None` when there is none.
fn null_infinite_numbers(line: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let (mut i, mut copied, mut in_str) = (0, 0, false);
    while i < line.len() {
        let b = line[i];
        if in_str {
            match b {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
            i += 1;
        } else if b == b'"' {
            in_str = true;
            i += 1;
        } else if b == b'-' || b.is_ascii_digit() {
            let end = line[i..]
                .iter()
                .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .map_or(line.len(), |n| i + n);
            let infinite = std::str::from_utf8(&line[i..end])
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .is_some_and(|f| f.is_infinite());
            if infinite {
                let o = out.get_or_insert_with(Vec::new);
                o.extend_from_slice(&line[copied..i]);
                o.extend_from_slice(b"null");
                copied = end;
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out.map(|mut o| {
        o.extend_from_slice(&line[copied..]);
        o
    })
}

/// Replaces every `\uXXXX` escape of a surrogate that is not part of a valid pair by `\ufffd`.
/// Returns whether anything changed.
fn repair_surrogates(buf: &mut [u8]) -> bool {
    fn hex4(b: &[u8]) -> Option<u16> {
        let s = std::str::from_utf8(b.get(..4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let mut changed = false;
    let mut i = 0;
    // `i` may pass the end (a line ending in a backslash): `get`, never an index.
    while let Some(p) = buf.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + p;
        if buf.get(at + 1) != Some(&b'u') {
            i = at + 2;
            continue;
        }
        let Some(cp) = hex4(&buf[at + 2..]) else {
            i = at + 2;
            continue;
        };
        if (0xD800..0xDC00).contains(&cp) {
            let low = if buf.get(at + 6) == Some(&b'\\') && buf.get(at + 7) == Some(&b'u') {
                hex4(&buf[at + 8..])
            } else {
                None
            };
            if low.is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
                i = at + 12;
                continue;
            }
        }
        if (0xD800..0xE000).contains(&cp) {
            buf[at + 2..at + 6].copy_from_slice(b"fffd");
            changed = true;
        }
        i = at + 6;
    }
    changed
}

/// One JSON value of a parsed line.
#[derive(Clone, Copy)]
pub struct Val<'t> {
    doc: &'t Doc<'t>,
    /// Index of its node.
    i: u32,
}

/// A number literal read as simd-json and serde_json read it: an integer that fits u64 or i64
/// stays one, anything else (fractions, exponents, larger integers) is an f64.
#[derive(Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl<'t> Val<'t> {
    fn node(&self) -> &'t Node {
        &self.doc.nodes[self.i as usize]
    }

    fn at(&self, i: u32) -> Val<'t> {
        Val { doc: self.doc, i }
    }

    /// Where this value is in the bytes that were parsed, when they are the input's own (not
    /// a repaired copy of them): [`Parser::with_array`] can read it again from them.
    pub fn own_span(&self) -> Option<std::ops::Range<u32>> {
        let n = self.node();
        self.doc.own.then_some(n.start..n.end)
    }

    /// The number of elements, when this is an array (without decoding any of them).
    pub fn array_len(&self) -> Option<usize> {
        self.array().map(Iterator::count)
    }

    /// The text of this value in the line.
    fn span(&self) -> &'t str {
        let n = self.node();
        self.doc.text.get(n.start as usize..n.end as usize).unwrap_or_default()
    }

    /// The inside of a string literal (quotes excluded).
    fn inner(&self) -> &'t str {
        let n = self.node();
        self.doc.text.get(n.start as usize + 1..n.end as usize - 1).unwrap_or_default()
    }

    /// The members of an object as (key node, value node) indexes, in input order.
    fn members(&self) -> impl Iterator<Item = (u32, u32)> + use<'t> {
        let nodes = self.doc.nodes;
        let n = self.node();
        let end = if n.kind == Kind::Object { n.next } else { self.i + 1 };
        let mut k = self.i + 1;
        std::iter::from_fn(move || {
            (k < end).then(|| {
                let v = k + 1;
                let key = k;
                k = nodes[v as usize].next;
                (key, v)
            })
        })
    }

    /// The value under `key` when this is an object; a duplicate key's last value wins.
    pub fn get(&self, key: &str) -> Option<Val<'t>> {
        let n = self.node();
        if n.kind != Kind::Object {
            return None;
        }
        let (nodes, bytes, want) = (self.doc.nodes, self.doc.text.as_bytes(), key.as_bytes());
        if self.i == 0 {
            // The root: from its last member back, the first whose signature and key match.
            let sig = key_sig(want);
            return self
                .doc
                .root_keys
                .iter()
                .rev()
                .find(|&&(s, k)| s == sig && self.at(k).key_is(key))
                .map(|&(_, k)| self.at(k + 1));
        }
        let mut found = None;
        let mut k = self.i + 1;
        while k < n.next {
            let kn = &nodes[k as usize];
            let v = k + 1;
            let (start, end) = (kn.start as usize + 1, kn.end as usize - 1);
            let hit = if kn.escaped {
                self.at(k).str() == Some(key)
            } else {
                // Length and first byte first: most keys differ there, without a memcmp call.
                end - start == want.len()
                    && want.first().is_none_or(|f| bytes.get(start) == Some(f))
                    && bytes.get(start..end) == Some(want)
            };
            if hit {
                found = Some(v);
            }
            k = nodes[v as usize].next;
        }
        found.map(|v| self.at(v))
    }

    /// Which of `names` this object has as keys: bit `i` for the `i`th name. On the root, one
    /// pass over its members, however many names (where `get` is one pass per name).
    pub fn root_has(&self, names: &KeyNames) -> u64 {
        let has = |(i, &(_, name)): (usize, &(u32, &str))| if self.get(name).is_some() { 1 << i } else { 0 };
        if self.i != 0 {
            return names.0.iter().enumerate().map(has).fold(0, |m, b| m | b);
        }
        let mut found = 0;
        for &(sig, k) in self.doc.root_keys {
            for (i, &(want, name)) in names.0.iter().enumerate() {
                if want == sig && self.at(k).key_is(name) {
                    found |= 1 << i;
                }
            }
        }
        found
    }

    /// Whether this key node reads `key`.
    fn key_is(&self, key: &str) -> bool {
        if self.node().escaped { self.str() == Some(key) } else { self.inner() == key }
    }

    /// Follows a path of object keys.
    pub fn path(&self, keys: &[&str]) -> Option<Val<'t>> {
        let mut cur = *self;
        for k in keys {
            cur = cur.get(k)?;
        }
        Some(cur)
    }

    /// True for a string (without decoding it).
    pub fn is_str(&self) -> bool {
        self.node().kind == Kind::Str
    }

    /// The string, when this is one.
    pub fn str(&self) -> Option<&'t str> {
        if self.node().kind != Kind::Str {
            return None;
        }
        let inner = self.inner();
        if !self.node().escaped {
            return Some(inner);
        }
        let mut out = String::with_capacity(inner.len());
        unescape(inner, &mut out);
        let s: &'t str = self.doc.arena.alloc_str(&out);
        Some(s)
    }

    /// `get(key)` as a string.
    pub fn str_at(&self, key: &str) -> Option<&'t str> {
        self.get(key)?.str()
    }

    /// `get(key)` as an owned string.
    pub fn string_at(&self, key: &str) -> Option<String> {
        self.str_at(key).map(str::to_owned)
    }

    /// The literal (quotes included) to copy to the output as the input wrote it, when the line
    /// is the input's own: a string whose escapes are all ones serde_json writes the same way
    /// (what it would write, byte for byte: the scanner refused raw control characters, and a
    /// quote or backslash can only appear escaped), or one whose decoded text is at least
    /// [`RAW_MIN`] bytes long (passed through escaped as the CLI wrote it).
    fn output_literal(&self) -> Option<&'t str> {
        let n = self.node();
        if n.kind != Kind::Str || !self.doc.own {
            return None;
        }
        if n.canonical {
            return Some(self.span());
        }
        let inner = self.inner();
        // An escape decodes to at most a sixth of its length (`\u0041` is `A`): a literal six
        // times the threshold is long enough whatever it holds.
        let long = inner.len() >= RAW_MIN
            && (!n.escaped || inner.len() >= 6 * RAW_MIN || unescaped_len(inner.as_bytes()) >= RAW_MIN);
        long.then(|| self.span())
    }

    /// The string as [`Text`]; long strings keep the input's escaped bytes, and strings without
    /// escapes are copied once, as the literal they will be written as.
    pub fn text(&self) -> Option<Text> {
        if let Some(quoted) = self.output_literal() {
            return Some(Text::from_quoted(quoted));
        }
        self.str().map(Text::from)
    }

    /// `get(key)` as [`Text`].
    pub fn text_at(&self, key: &str) -> Option<Text> {
        self.get(key)?.text()
    }

    fn num(&self) -> Option<Num> {
        if self.node().kind != Kind::Num {
            return None;
        }
        let s = self.span();
        if !s.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            if let Ok(n) = s.parse::<u64>() {
                return Some(Num::U(n));
            }
            if let Ok(n) = s.parse::<i64>() {
                return Some(Num::I(n));
            }
        }
        parse_f64(s.as_bytes()).map(Num::F)
    }

    /// An unsigned integer (also from a non-negative float with no fraction).
    pub fn u64(&self) -> Option<u64> {
        match self.num()? {
            Num::U(n) => Some(n),
            Num::I(n) => u64::try_from(n).ok(),
            Num::F(f) => (f >= 0.0 && f.fract() == 0.0 && f < 1.8e19).then_some(f as u64),
        }
    }

    /// `get(key)` as u64.
    pub fn u64_at(&self, key: &str) -> Option<u64> {
        self.get(key)?.u64()
    }

    /// A signed integer.
    pub fn i64(&self) -> Option<i64> {
        match self.num()? {
            Num::U(n) => i64::try_from(n).ok(),
            Num::I(n) => Some(n),
            Num::F(f) => (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64),
        }
    }

    /// Any finite number as f64.
    pub fn f64(&self) -> Option<f64> {
        let f = match self.num()? {
            Num::U(n) => n as f64,
            Num::I(n) => n as f64,
            Num::F(f) => f,
        };
        f.is_finite().then_some(f)
    }

    /// `get(key)` as f64.
    pub fn f64_at(&self, key: &str) -> Option<f64> {
        self.get(key)?.f64()
    }

    /// A boolean.
    pub fn bool(&self) -> Option<bool> {
        match self.node().kind {
            Kind::True => Some(true),
            Kind::False => Some(false),
            _ => None,
        }
    }

    /// `get(key)` as bool.
    pub fn bool_at(&self, key: &str) -> Option<bool> {
        self.get(key)?.bool()
    }

    /// True for JSON `null`.
    pub fn is_null(&self) -> bool {
        self.node().kind == Kind::Null
    }

    /// True for an object.
    pub fn is_object(&self) -> bool {
        self.node().kind == Kind::Object
    }

    /// The elements, when this is an array.
    pub fn array(&self) -> Option<impl Iterator<Item = Val<'t>> + use<'t>> {
        let n = self.node();
        if n.kind != Kind::Array {
            return None;
        }
        let (doc, nodes, end) = (self.doc, self.doc.nodes, n.next);
        let mut k = self.i + 1;
        Some(std::iter::from_fn(move || {
            (k < end).then(|| {
                let v = Val { doc, i: k };
                k = nodes[k as usize].next;
                v
            })
        }))
    }

    /// `get(key)` as an array.
    pub fn array_at(&self, key: &str) -> Option<impl Iterator<Item = Val<'t>> + use<'t>> {
        self.get(key)?.array()
    }

    /// The keys of an object in input order, a duplicate key as often as it appears (nothing for
    /// any other value); unlike [`Val::entries`], nothing is allocated (but escaped keys, in the
    /// line's arena).
    pub fn keys(&self) -> impl Iterator<Item = &'t str> + use<'t> {
        let this = *self;
        self.members().map(move |(k, _)| this.at(k).str().unwrap_or_default())
    }

    /// The key/value pairs, when this is an object, in input order; a duplicate key appears
    /// once, at its last position, with its last value.
    pub fn entries(&self) -> Option<Vec<(&'t str, Val<'t>)>> {
        if !self.is_object() {
            return None;
        }
        let mut pairs: Vec<(&'t str, Val<'t>)> =
            self.members().map(|(k, v)| (self.at(k).str().unwrap_or_default(), self.at(v))).collect();
        // Last one wins: keep a pair only if its key does not come again (linear for small
        // objects, hashed for large ones so that hostile input stays linear).
        let dup = if pairs.len() <= 16 {
            (0..pairs.len()).any(|i| pairs[i + 1..].iter().any(|(k, _)| *k == pairs[i].0))
        } else {
            let mut seen = std::collections::HashSet::with_capacity(pairs.len());
            !pairs.iter().all(|(k, _)| seen.insert(*k))
        };
        if dup {
            let mut last = std::collections::HashMap::with_capacity(pairs.len());
            for (i, (k, _)) in pairs.iter().enumerate() {
                last.insert(*k, i);
            }
            let mut i = 0;
            pairs.retain(|(k, _)| {
                i += 1;
                last.get(k) == Some(&(i - 1))
            });
        }
        Some(pairs)
    }

    /// The value as compact JSON (duplicate keys collapsed, last wins).
    pub fn to_json(self) -> Json {
        // The compact form is about as long as the input's (whitespace and some escapes
        // dropped): one allocation instead of a growth by doubling.
        let mut out = Vec::with_capacity(self.span().len());
        self.write_json(&mut out, false);
        Json::from_trusted(String::from_utf8(out).unwrap_or_default())
    }

    /// The value as compact JSON with every `null` left out (object members and array elements):
    /// for fields other than `tool_started.input`, where the contract allows no null.
    pub fn to_json_without_nulls(self) -> Json {
        let mut out = Vec::with_capacity(self.span().len());
        self.write_json(&mut out, true);
        Json::from_trusted(String::from_utf8(out).unwrap_or_default())
    }

    /// A new object of this object's `keys` that are present, in the order given (`None` when
    /// none is): how Codex items, which have no argument object, get their `tool_started.input`.
    pub fn subset_json(&self, keys: &[&str]) -> Option<Json> {
        let mut out = vec![b'{'];
        for k in keys {
            if let Some(v) = self.get(k) {
                out.reserve(k.len() + 4 + v.span().len());
                if out.len() > 1 {
                    out.push(b',');
                }
                crate::event::json::push_str(&mut out, k);
                out.push(b':');
                v.write_json(&mut out, false);
            }
        }
        out.push(b'}');
        (out.len() > 2).then(|| Json::from_trusted(String::from_utf8(out).unwrap_or_default()))
    }

    fn write_json(&self, out: &mut Vec<u8>, skip_nulls: bool) {
        match self.node().kind {
            Kind::Str => match self.output_literal() {
                Some(q) => out.extend_from_slice(q.as_bytes()),
                None => crate::event::json::push_str(out, self.str().unwrap_or_default()),
            },
            Kind::Object => {
                out.push(b'{');
                let mut first = true;
                for (k, v) in self.entries().unwrap_or_default().iter().filter(|(_, v)| !(skip_nulls && v.is_null())) {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    crate::event::json::push_str(out, k);
                    out.push(b':');
                    v.write_json(out, skip_nulls);
                }
                out.push(b'}');
            }
            Kind::Array => {
                out.push(b'[');
                let mut first = true;
                for v in self.array().into_iter().flatten().filter(|v| !(skip_nulls && v.is_null())) {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    v.write_json(out, skip_nulls);
                }
                out.push(b']');
            }
            Kind::True => out.extend_from_slice(b"true"),
            Kind::False => out.extend_from_slice(b"false"),
            Kind::Null => out.extend_from_slice(b"null"),
            // Written as serde_json writes them (itoa, and zmij for floats; `null` for a float
            // that is not finite), straight into `out` rather than through `to_string`.
            Kind::Num => {
                let _ = match self.num() {
                    Some(Num::U(n)) => serde_json::to_writer(&mut *out, &n),
                    Some(Num::I(n)) => serde_json::to_writer(&mut *out, &n),
                    Some(Num::F(f)) => serde_json::to_writer(&mut *out, &f),
                    None => serde_json::to_writer(&mut *out, &()),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn root_has_is_get_for_many_keys() {
        let names = KeyNames::new(&["msg", "parentId", "type", "é", "none"]);
        let line = br#"{"type":"x","msg":1,"\u00e9":2,"msg":{"parentId":3},"parentIdx":4}"#;
        Parser::default().with_frame(line, |v| {
            let v = v.unwrap();
            assert_eq!(v.root_has(&names), 0b01101, "msg, type and the escaped key, once each");
            let inner = v.get("msg").unwrap();
            assert_eq!(inner.root_has(&names), 0b00010, "below the root: by get");
            assert_eq!(v.get("type").unwrap().root_has(&names), 0, "not an object");
        });
    }

    /// JSON-ish pieces: valid tokens, escapes of every kind, and the mistakes a scanner must
    /// refuse (lone surrogates, bad escapes, control characters, leading zeros, overflow).
    const PIECES: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\"",
        "\"k\"",
        "\"v\\n\"",
        "\"\\u00e9\"",
        "\"\\ud83d\\ude00\"",
        "\\",
        "\\u",
        "\\ud800",
        "\\udc00",
        "\\x",
        "\\/",
        "\u{1}",
        "\t",
        "é",
        "0",
        "-0",
        "01",
        "1.",
        "1.5e3",
        "-12",
        "1e400",
        "18446744073709551616",
        "true",
        "fals",
        "null",
        "\"a\":1",
        "\"a\":{\"b\":[1,2]}",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// The scanner reads exactly what serde_json reads (the reference reader of SPEC §1
        /// once its repairs are applied), with the same values: wrapped in an object with a
        /// long string, so that every path (short and long strings, across 64-byte blocks) runs.
        #[test]
        fn reads_what_serde_json_reads(picks in proptest::collection::vec(0..PIECES.len(), 0..24), pad in 0usize..80) {
            let body: String = picks.iter().map(|&i| PIECES[i]).collect();
            let line = format!("{{\"pad\":\"{}\",\"x\":{body}}}", "p".repeat(pad));
            let serde = serde_json::from_str::<serde_json::Value>(&line).ok();
            let mut scanner = Scanner::default();
            let scanned = scanner.scan(line.as_bytes()).is_ok();
            prop_assert_eq!(scanned, serde.is_some(), "{}", line);
            if let Some(want) = serde {
                let got = Parser::default().with_frame(line.as_bytes(), |r| r.ok().map(|v| v.to_json()));
                let got: serde_json::Value = serde_json::from_str(got.expect("an object").get()).unwrap();
                prop_assert_eq!(numbers_as_f64(got), numbers_as_f64(want), "{}", line);
            }
        }
    }

    /// `v` with every number as an f64 and `-0` as `0` (agentnorm writes `-0` as `0`, as
    /// `JSON.stringify(JSON.parse("-0"))` does; serde_json keeps it as `-0.0`).
    fn numbers_as_f64(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::Number(n) => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                Value::from(if f == 0.0 { 0.0 } else { f })
            }
            Value::Array(a) => Value::Array(a.into_iter().map(numbers_as_f64).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, numbers_as_f64(v))).collect()),
            other => other,
        }
    }

    fn with<R>(line: &str, f: impl FnOnce(Val<'_>) -> R) -> R {
        let mut p = Parser::default();
        p.with_frame(line.as_bytes(), |r| f(r.expect("object")))
    }

    #[test]
    fn the_parser_can_move_to_other_threads() {
        fn send<T: Send>() {}
        send::<Parser>();
    }

    #[test]
    fn duplicate_key_last_wins() {
        with(r#"{"a":1,"a":2}"#, |v| assert_eq!(v.u64_at("a"), Some(2)));
        // Escaped and plain spellings of one key, at the root and below it.
        let line = r#"{"ab":1,"a\u0062":2,"b":{"ab":3,"\u0061b":4,"abc":5},"\u0061bc":6,"ab\n":7}"#;
        with(line, |v| {
            assert_eq!(v.u64_at("ab"), Some(2));
            assert_eq!(v.u64_at("abc"), Some(6));
            assert_eq!(v.u64_at("ab\n"), Some(7));
            assert_eq!(v.path(&["b", "ab"]).and_then(|x| x.u64()), Some(4));
            assert_eq!(v.path(&["b", "abc"]).and_then(|x| x.u64()), Some(5));
            assert!(v.get("ac").is_none() && v.get("").is_none() && v.get("a").is_none());
        });
    }

    proptest! {
        /// Every key of an object, at the root (looked up through its signatures) and one level
        /// down (walked through the nodes), reads the value serde_json keeps: the last one.
        #[test]
        fn lookups_find_the_last_value_of_each_key(
            members in proptest::collection::vec(("(a|b|ab|ba|aab|\\\\u0061|a\\\\u0062|\\\\n|)", 0u64..100), 0..12),
        ) {
            let mut parts: Vec<String> = members.iter().map(|(k, n)| format!("\"{k}\":{n}")).collect();
            let body = parts.join(",");
            parts.insert(parts.len() / 2, format!("\"inner\":{{{body}}}"));
            let line = format!("{{{}}}", parts.join(","));
            let want: serde_json::Value = serde_json::from_str(&line).unwrap();
            let mut p = Parser::default();
            p.with_frame(line.as_bytes(), |r| -> Result<(), TestCaseError> {
                let v = r.unwrap();
                for key in ["a", "b", "ab", "ba", "aab", "\n", "", "abc", "inner"] {
                    let root = v.get(key).map(|x| x.to_json().value());
                    prop_assert_eq!(root, want.get(key).cloned(), "{} in {}", key, line);
                    let inner = v.path(&["inner", key]).map(|x| x.to_json().value());
                    prop_assert_eq!(inner, want["inner"].get(key).cloned(), "{} in {}", key, line);
                }
                Ok(())
            })?;
        }
    }

    #[test]
    fn lone_surrogate_reads_as_replacement_char() {
        with(r#"{"a":"x\ud800y"}"#, |v| assert_eq!(v.str_at("a"), Some("x\u{fffd}y")));
        with(r#"{"a":"\ud83d\ude00"}"#, |v| assert_eq!(v.str_at("a"), Some("😀")));
    }

    #[test]
    fn long_strings_keep_their_escaped_form() {
        let body = "line\\n\\\"quoted\\\" caf\\u00e9 ".repeat(20);
        let line = format!(r#"{{"a":"short\n", "b" : "{body}" , "c":["{body}" ] }}"#);
        with(&line, |v| {
            let t = v.text_at("b").unwrap();
            let mut out = Vec::new();
            crate::event::json::write_event(
                &mut out,
                &crate::Event::UserMessage { env: Default::default(), text: t.clone() },
            );
            let s = String::from_utf8(out).unwrap();
            assert!(s.contains(&body), "raw bytes passed through");
            assert_eq!(t.as_str(), v.str_at("b").unwrap());
            let in_array = v.get("c").unwrap().array().unwrap().next().unwrap().text().unwrap();
            assert_eq!(in_array.as_str(), v.str_at("b").unwrap());
        });
    }

    #[test]
    fn classification() {
        let mut p = Parser::default();
        assert_eq!(p.with_frame(b"[1,2]", |r| r.err()), Some(NotFrame::NotObject));
        assert_eq!(p.with_frame(b"hello world", |r| r.err()), Some(NotFrame::Bad(UnknownReason::NotJson)));
        assert_eq!(p.with_frame(b"{\"a\":", |r| r.err()), Some(NotFrame::Bad(UnknownReason::InvalidJson)));
        let deep = format!("{}{}", "[".repeat(2000), "]".repeat(2000));
        assert_eq!(p.with_frame(deep.as_bytes(), |r| r.err()), Some(NotFrame::Bad(UnknownReason::MalformedFrame)));
    }

    #[test]
    fn to_json_round_trips() {
        with(r#"{"x":{"b":[1,-2,3.5,true,null,"s"],"b":"last"},"y":"é\u0001"}"#, |v| {
            let j = v.to_json();
            assert_eq!(j.get(), r#"{"x":{"b":"last"},"y":"é\u0001"}"#);
        });
    }
}
