//! Python values straight from the JSON text the library writes, without `json.loads`.
//!
//! Two reasons: CPython's `json` stops at its recursion limit (~1000 levels), while the contract
//! passes tool input nested up to 1024 levels through (SPEC §1), so `json.loads` raised
//! `RecursionError` on input the CLI handles; and it is faster: keys are made once per batch,
//! strings without escapes are made straight from their UTF-8 bytes. The text is the library's
//! own NDJSON output (compact, valid UTF-8), so the parser is small; anything it does not
//! expect (a lone surrogate escape, an integer beyond 64 bits) returns `None` and the caller
//! falls back to `json.loads` for that batch.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};

struct Parser<'a, 'py> {
    b: &'a [u8],
    i: usize,
    py: Python<'py>,
    keys: HashMap<&'a [u8], Bound<'py, PyString>>,
    scratch: Vec<u8>,
}

/// Gives up on this text (the caller uses `json.loads`).
struct GiveUp;

type R<T> = Result<T, GiveUp>;

/// The events of one JSON array text as a list, or `None` when the text has something this
/// parser leaves to `json.loads`. Python errors (out of memory) come back as `Some(Err)`.
pub fn list<'py>(py: Python<'py>, text: &str) -> Option<PyResult<Bound<'py, PyList>>> {
    let mut p = Parser { b: text.as_bytes(), i: 0, py, keys: HashMap::new(), scratch: Vec::new() };
    match p.value() {
        Ok(Ok(v)) if p.i == p.b.len() => Some(v.cast_into::<PyList>().map_err(PyErr::from)),
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(Err(e)),
        Err(GiveUp) => None,
    }
}

impl<'a, 'py> Parser<'a, 'py> {
    fn peek(&self) -> R<u8> {
        self.b.get(self.i).copied().ok_or(GiveUp)
    }

    fn expect(&mut self, c: u8) -> R<()> {
        if self.peek()? == c {
            self.i += 1;
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    fn value(&mut self) -> R<PyResult<Bound<'py, PyAny>>> {
        let py = self.py;
        match self.peek()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => {
                let s = self.string()?;
                Ok(Ok(PyString::new(py, s).into_any()))
            }
            b't' => self.word(b"true", PyBool::new(py, true).to_owned().into_any()),
            b'f' => self.word(b"false", PyBool::new(py, false).to_owned().into_any()),
            b'n' => self.word(b"null", py.None().into_bound(py)),
            _ => self.number(),
        }
    }

    fn word(&mut self, w: &[u8], v: Bound<'py, PyAny>) -> R<PyResult<Bound<'py, PyAny>>> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(Ok(v))
        } else {
            Err(GiveUp)
        }
    }

    fn number(&mut self) -> R<PyResult<Bound<'py, PyAny>>> {
        let start = self.i;
        let mut float = false;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => float = true,
                _ => break,
            }
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).map_err(|_| GiveUp)?;
        let py = self.py;
        if float {
            let f: f64 = text.parse().map_err(|_| GiveUp)?;
            return Ok(Ok(PyFloat::new(py, f).into_any()));
        }
        if let Ok(n) = text.parse::<i64>() {
            return Ok(n.into_pyobject(py).map(|v| v.into_any()).map_err(PyErr::from));
        }
        let n: u64 = text.parse().map_err(|_| GiveUp)?;
        Ok(n.into_pyobject(py).map(|v| v.into_any()).map_err(PyErr::from))
    }

    fn object(&mut self) -> R<PyResult<Bound<'py, PyAny>>> {
        self.expect(b'{')?;
        let d = PyDict::new(self.py);
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(Ok(d.into_any()));
        }
        loop {
            let key = self.key()?;
            self.expect(b':')?;
            let v = match self.value()? {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
            if let Err(e) = d.set_item(key, v) {
                return Ok(Err(e));
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(Ok(d.into_any()));
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// A key, made once per batch (the same few dozen names recur in every event).
    fn key(&mut self) -> R<Bound<'py, PyString>> {
        let b: &'a [u8] = self.b;
        let start = self.i;
        if b.get(start) == Some(&b'"')
            && let Some(end) = memchr::memchr2(b'"', b'\\', &b[start + 1..])
            && b[start + 1 + end] == b'"'
        {
            let raw: &'a [u8] = &b[start + 1..start + 1 + end];
            self.i = start + end + 2;
            if let Some(k) = self.keys.get(raw) {
                return Ok(k.clone());
            }
            let k = PyString::intern(self.py, std::str::from_utf8(raw).map_err(|_| GiveUp)?);
            self.keys.insert(raw, k.clone());
            return Ok(k);
        }
        let py = self.py;
        let s = self.string()?;
        Ok(PyString::new(py, s))
    }

    fn array(&mut self) -> R<PyResult<Bound<'py, PyAny>>> {
        self.expect(b'[')?;
        let l = PyList::empty(self.py);
        if self.peek()? == b']' {
            self.i += 1;
            return Ok(Ok(l.into_any()));
        }
        loop {
            match self.value()? {
                Ok(v) => {
                    if let Err(e) = l.append(v) {
                        return Ok(Err(e));
                    }
                }
                Err(e) => return Ok(Err(e)),
            }
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Ok(Ok(l.into_any()));
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// A string's text: borrowed when it has no escape, else decoded into the scratch buffer.
    fn string(&mut self) -> R<&str> {
        self.expect(b'"')?;
        let start = self.i;
        let rest = &self.b[start..];
        let end = memchr::memchr2(b'"', b'\\', rest).ok_or(GiveUp)?;
        if rest[end] == b'"' {
            self.i = start + end + 1;
            // The text is a &str already: every slice between quotes is whole characters.
            return std::str::from_utf8(&rest[..end]).map_err(|_| GiveUp);
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&rest[..end]);
        self.i = start + end;
        loop {
            let c = self.peek()?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'"' => self.scratch.push(b'"'),
                        b'\\' => self.scratch.push(b'\\'),
                        b'/' => self.scratch.push(b'/'),
                        b'b' => self.scratch.push(8),
                        b'f' => self.scratch.push(12),
                        b'n' => self.scratch.push(b'\n'),
                        b'r' => self.scratch.push(b'\r'),
                        b't' => self.scratch.push(b'\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let ch = if (0xD800..0xDC00).contains(&hi) {
                                // A surrogate pair, else a lone surrogate: json.loads's to make.
                                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                                    return Err(GiveUp);
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(GiveUp);
                                }
                                char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).ok_or(GiveUp)?
                            } else {
                                char::from_u32(hi).ok_or(GiveUp)?
                            };
                            let mut buf = [0u8; 4];
                            self.scratch.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(GiveUp),
                    }
                }
                _ => {
                    // Copy the run up to the next quote or backslash at once.
                    let from = self.i - 1;
                    let run = memchr::memchr2(b'"', b'\\', &self.b[from..]).ok_or(GiveUp)?;
                    self.scratch.extend_from_slice(&self.b[from..from + run]);
                    self.i = from + run;
                }
            }
        }
        std::str::from_utf8(&self.scratch).map_err(|_| GiveUp)
    }

    fn hex4(&mut self) -> R<u32> {
        let h = self.b.get(self.i..self.i + 4).ok_or(GiveUp)?;
        let h = std::str::from_utf8(h).map_err(|_| GiveUp)?;
        self.i += 4;
        u32::from_str_radix(h, 16).map_err(|_| GiveUp)
    }
}
