//! The zero-copy view of one parsed line that every dialect reads through.
//!
//! It exists so that the adapters never touch a JSON library directly: a [`Parser`] owns the
//! reused buffers (simd-json's stage buffers, a padded scratch copy of the line, the tape) and
//! hands a [`Val`] to a closure. Nothing is allocated per line once the buffers have grown.
//!
//! Rules of SPEC §1 live here: a duplicate key's last value wins, a lone-surrogate escape reads
//! as U+FFFD, nesting deeper than 1024 levels is refused. Strings longer than
//! [`RAW_MIN`] bytes are handed out as [`Text`] that keeps the escaped bytes of the original
//! line, so large tool outputs are never unescaped and escaped again.

use simd_json::prelude::*;
use simd_json::{Buffers, INPUT_PADDING, Tape};

use crate::event::{Json, Text, UnknownReason};

/// Strings at least this long are passed through as the escaped bytes of the input.
pub const RAW_MIN: usize = 256;

/// simd-json's nesting limit, which is also the contract's (SPEC §1).
const MAX_DEPTH: usize = 1024;

/// Parses lines into tapes, reusing every buffer from one line to the next.
pub struct Parser {
    buffers: Buffers,
    scratch: Vec<u8>,
    tape: Tape<'static>,
}

impl Default for Parser {
    fn default() -> Self {
        Parser { buffers: Buffers::with_max_depth(4096, MAX_DEPTH), scratch: Vec::new(), tape: Tape::null().reset() }
    }
}

/// Why a line is not a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotFrame {
    /// Valid JSON, but not an object.
    NotObject,
    /// Not JSON; carries `not_json`, `invalid_json` or `malformed_frame` (too deep).
    Bad(UnknownReason),
}

impl Parser {
    /// Parses `line` (no line ending) and calls `f` with its root object, or with the reason it
    /// is not one.
    pub fn with_frame<R, F>(&mut self, line: &[u8], f: F) -> R
    where
        F: FnOnce(Result<Val<'_>, NotFrame>) -> R,
    {
        // Fast path: one copy into the padded scratch buffer, one parse into the reused tape.
        self.load(line);
        let (err, f) = match self.parse_then(line, f) {
            Ok(r) => return r,
            Err(e) => e,
        };
        match self.slow_path(line, err) {
            // Repaired or re-encoded bytes are not the line's: no raw spans then.
            Ok(()) => match self.parse_then(&[], f) {
                Ok(r) => r,
                Err((_, f)) => f(Err(NotFrame::Bad(UnknownReason::InvalidJson))),
            },
            Err(reason) => f(Err(NotFrame::Bad(reason))),
        }
    }

    /// Parses the scratch buffer into the tape and calls `f`; gives `f` back on a parse error.
    fn parse_then<R, F>(&mut self, orig: &[u8], f: F) -> Result<R, (bool, F)>
    where
        F: FnOnce(Result<Val<'_>, NotFrame>) -> R,
    {
        let base = self.scratch.as_ptr() as usize;
        let len = self.scratch.len() - INPUT_PADDING;
        let mut tape = std::mem::replace(&mut self.tape, Tape::null().reset()).reset();
        let r = match simd_json::fill_tape_padded(&mut self.scratch, len, &mut self.buffers, &mut tape) {
            Ok(()) => {
                let structurals = self.buffers.structural_indexes();
                let root = Val { v: tape.as_value(), base, orig, structurals };
                Ok(if root.v.is_object() { f(Ok(root)) } else { f(Err(NotFrame::NotObject)) })
            }
            Err(e) => Err((matches!(e.error(), simd_json::ErrorType::DepthLimitExceeded), f)),
        };
        self.tape = tape.reset();
        r
    }

    /// Parses the scratch buffer and throws the tape away, leaving the scratch reloaded with
    /// `line` when it succeeds. Used only to probe; the real parse follows.
    fn parse_scratch(&mut self) -> Result<(), ()> {
        let len = self.scratch.len() - INPUT_PADDING;
        let mut tape = std::mem::replace(&mut self.tape, Tape::null().reset()).reset();
        let r = simd_json::fill_tape_padded(&mut self.scratch, len, &mut self.buffers, &mut tape);
        self.tape = tape.reset();
        r.map(|_| ()).map_err(|_| ())
    }

    /// A line simd-json refused: read it as SPEC §1 says if possible, leaving the bytes to parse
    /// in the scratch buffer.
    #[cold]
    fn slow_path(&mut self, line: &[u8], too_deep: bool) -> Result<(), UnknownReason> {
        if too_deep {
            return Err(UnknownReason::MalformedFrame);
        }
        let starts_structured = matches!(line.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'['));
        let bad = if starts_structured { UnknownReason::InvalidJson } else { UnknownReason::NotJson };
        // Lone surrogates read as U+FFFD: `\ud800` and `\ufffd` have the same length, so the
        // repaired copy keeps every byte offset of the original.
        if memchr::memmem::find(line, b"\\u").is_some() {
            let mut fixed = line.to_vec();
            if repair_surrogates(&mut fixed) {
                self.load(&fixed);
                if self.parse_scratch().is_ok() {
                    self.load(&fixed);
                    return Ok(());
                }
            }
        }
        // serde_json accepts a few documents simd-json refuses: re-encode what it reads.
        if starts_structured {
            // Numbers beyond f64 (`1e400`) are valid JSON both parsers refuse: read as
            // `JSON.stringify(JSON.parse(…))` does (Infinity has no JSON form: `null`, i.e. absent).
            let finite = null_infinite_numbers(line);
            let text = finite.as_deref().unwrap_or(line);
            if let Ok(bytes) = serde_json::from_slice::<serde_json::Value>(text).and_then(|v| serde_json::to_vec(&v)) {
                self.load(&bytes);
                if self.parse_scratch().is_ok() {
                    self.load(&bytes);
                    return Ok(());
                }
            }
        }
        Err(bad)
    }

    fn load(&mut self, bytes: &[u8]) {
        self.scratch.clear();
        self.scratch.extend_from_slice(bytes);
        self.scratch.resize(bytes.len() + INPUT_PADDING, 0);
    }
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
    v: simd_json::tape::Value<'t, 't>,
    /// Address of the scratch copy the tape's strings point into.
    base: usize,
    /// The original line, to recover strings' escaped form (empty when the parsed bytes are
    /// not the line's own).
    orig: &'t [u8],
    /// simd-json's structural indexes of the line: where each string literal starts and what
    /// follows it.
    structurals: &'t [u32],
}

impl<'t> Val<'t> {
    /// The value under `key` when this is an object; a duplicate key's last value wins.
    pub fn get(&self, key: &str) -> Option<Val<'t>> {
        let obj = self.v.as_object()?;
        let mut found = None;
        for (k, v) in obj.iter() {
            if k == key {
                found = Some(v);
            }
        }
        found.map(|v| self.wrap(v))
    }

    /// Follows a path of object keys.
    pub fn path(&self, keys: &[&str]) -> Option<Val<'t>> {
        let mut cur = *self;
        for k in keys {
            cur = cur.get(k)?;
        }
        Some(cur)
    }

    fn wrap(&self, v: simd_json::tape::Value<'t, 't>) -> Val<'t> {
        Val { v, base: self.base, orig: self.orig, structurals: self.structurals }
    }

    /// The string, when this is one.
    pub fn str(&self) -> Option<&'t str> {
        self.v.into_string()
    }

    /// `get(key)` as a string.
    pub fn str_at(&self, key: &str) -> Option<&'t str> {
        self.get(key)?.str()
    }

    /// `get(key)` as an owned string.
    pub fn string_at(&self, key: &str) -> Option<String> {
        self.str_at(key).map(str::to_owned)
    }

    /// The string as [`Text`]; long strings keep the input's escaped bytes.
    pub fn text(&self) -> Option<Text> {
        let s = self.str()?;
        if s.len() >= RAW_MIN
            && let Some(quoted) = self.quoted_span(s)
        {
            return Some(Text::from_quoted(quoted));
        }
        Some(Text::from(s))
    }

    /// `get(key)` as [`Text`].
    pub fn text_at(&self, key: &str) -> Option<Text> {
        self.get(key)?.text()
    }

    /// The string literal of `s` in the original line, quotes included.
    fn quoted_span(&self, s: &str) -> Option<&'t [u8]> {
        // simd-json unescapes a string in place, starting right after its opening quote: the
        // unescaped text's offset in the scratch copy is the literal's offset in the line. The
        // opening quote is a structural index; the next index is the character after the
        // literal, so the closing quote is found without scanning the string again.
        let open = (s.as_ptr() as usize).checked_sub(self.base)?.checked_sub(1)?;
        if self.orig.get(open) != Some(&b'"') {
            return None;
        }
        let i = self.structurals.binary_search(&u32::try_from(open).ok()?).ok()?;
        let next = self.structurals.get(i + 1).map_or(self.orig.len(), |&n| n as usize);
        let mut close = next.checked_sub(1)?;
        while close > open && self.orig.get(close).is_some_and(|b| b.is_ascii_whitespace()) {
            close -= 1;
        }
        (close > open && self.orig.get(close) == Some(&b'"') && close - open > s.len())
            .then(|| &self.orig[open..=close])
    }

    /// An unsigned integer (also from a non-negative float with no fraction).
    pub fn u64(&self) -> Option<u64> {
        if let Some(n) = self.v.as_u64() {
            return Some(n);
        }
        if let Some(n) = self.v.as_i64() {
            return u64::try_from(n).ok();
        }
        let f = self.v.as_f64()?;
        (f >= 0.0 && f.fract() == 0.0 && f < 1.8e19).then_some(f as u64)
    }

    /// `get(key)` as u64.
    pub fn u64_at(&self, key: &str) -> Option<u64> {
        self.get(key)?.u64()
    }

    /// A signed integer.
    pub fn i64(&self) -> Option<i64> {
        if let Some(n) = self.v.as_i64() {
            return Some(n);
        }
        if let Some(n) = self.v.as_u64() {
            return i64::try_from(n).ok();
        }
        let f = self.v.as_f64()?;
        (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
    }

    /// Any finite number as f64.
    pub fn f64(&self) -> Option<f64> {
        self.v.cast_f64().filter(|f| f.is_finite())
    }

    /// `get(key)` as f64.
    pub fn f64_at(&self, key: &str) -> Option<f64> {
        self.get(key)?.f64()
    }

    /// A boolean.
    pub fn bool(&self) -> Option<bool> {
        self.v.as_bool()
    }

    /// `get(key)` as bool.
    pub fn bool_at(&self, key: &str) -> Option<bool> {
        self.get(key)?.bool()
    }

    /// True for JSON `null`.
    pub fn is_null(&self) -> bool {
        self.v.is_null()
    }

    /// True for an object.
    pub fn is_object(&self) -> bool {
        self.v.is_object()
    }

    /// The elements, when this is an array.
    pub fn array(&self) -> Option<impl Iterator<Item = Val<'t>> + use<'t>> {
        let arr = self.v.as_array()?;
        let (base, orig, structurals) = (self.base, self.orig, self.structurals);
        Some(arr.iter().map(move |v| Val { v, base, orig, structurals }))
    }

    /// `get(key)` as an array.
    pub fn array_at(&self, key: &str) -> Option<impl Iterator<Item = Val<'t>> + use<'t>> {
        self.get(key)?.array()
    }

    /// The key/value pairs, when this is an object, in input order; a duplicate key appears
    /// once, at its last position, with its last value.
    pub fn entries(&self) -> Option<Vec<(&'t str, Val<'t>)>> {
        let obj = self.v.as_object()?;
        let (base, orig, structurals) = (self.base, self.orig, self.structurals);
        let mut pairs: Vec<(&'t str, Val<'t>)> =
            obj.iter().map(move |(k, v)| (k, Val { v, base, orig, structurals })).collect();
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
    pub fn to_json(&self) -> Json {
        let mut out = Vec::with_capacity(64);
        self.write_json(&mut out, false);
        Json::from_trusted(String::from_utf8(out).unwrap_or_default())
    }

    /// The value as compact JSON with every `null` left out (object members and array elements):
    /// for fields other than `tool_started.input`, where the contract allows no null.
    pub fn to_json_without_nulls(&self) -> Json {
        let mut out = Vec::with_capacity(64);
        self.write_json(&mut out, true);
        Json::from_trusted(String::from_utf8(out).unwrap_or_default())
    }

    /// A new object of this object's `keys` that are present, in the order given (`None` when
    /// none is): how Codex items, which have no argument object, get their `tool_started.input`.
    pub fn subset_json(&self, keys: &[&str]) -> Option<Json> {
        let mut out = vec![b'{'];
        for k in keys {
            if let Some(v) = self.get(k) {
                if out.len() > 1 {
                    out.push(b',');
                }
                crate::json::push_str(&mut out, k);
                out.push(b':');
                v.write_json(&mut out, false);
            }
        }
        out.push(b'}');
        (out.len() > 2).then(|| Json::from_trusted(String::from_utf8(out).unwrap_or_default()))
    }

    fn write_json(&self, out: &mut Vec<u8>, skip_nulls: bool) {
        if let Some(s) = self.str() {
            match (s.len() >= RAW_MIN).then(|| self.quoted_span(s)).flatten() {
                Some(q) => out.extend_from_slice(q),
                None => crate::json::push_str(out, s),
            }
        } else if let Some(entries) = self.entries() {
            out.push(b'{');
            let mut first = true;
            for (k, v) in entries.iter().filter(|(_, v)| !(skip_nulls && v.is_null())) {
                if !first {
                    out.push(b',');
                }
                first = false;
                crate::json::push_str(out, k);
                out.push(b':');
                v.write_json(out, skip_nulls);
            }
            out.push(b'}');
        } else if let Some(items) = self.array() {
            out.push(b'[');
            let mut first = true;
            for v in items.filter(|v| !(skip_nulls && v.is_null())) {
                if !first {
                    out.push(b',');
                }
                first = false;
                v.write_json(out, skip_nulls);
            }
            out.push(b']');
        } else if let Some(b) = self.bool() {
            out.extend_from_slice(if b { b"true" } else { b"false" });
        } else if let Some(n) = self.v.as_u64() {
            out.extend_from_slice(n.to_string().as_bytes());
        } else if let Some(n) = self.v.as_i64() {
            out.extend_from_slice(n.to_string().as_bytes());
        } else if let Some(f) = self.v.as_f64() {
            match serde_json::Number::from_f64(f) {
                Some(n) => out.extend_from_slice(n.to_string().as_bytes()),
                None => out.extend_from_slice(b"null"),
            }
        } else {
            out.extend_from_slice(b"null");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<R>(line: &str, f: impl FnOnce(Val<'_>) -> R) -> R {
        let mut p = Parser::default();
        p.with_frame(line.as_bytes(), |r| f(r.expect("object")))
    }

    #[test]
    fn duplicate_key_last_wins() {
        with(r#"{"a":1,"a":2}"#, |v| assert_eq!(v.u64_at("a"), Some(2)));
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
            crate::json::write_event(&mut out, &crate::Event::UserMessage { env: Default::default(), text: t.clone() });
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
