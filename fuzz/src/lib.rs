//! The checks every fuzz target runs: agentnorm on arbitrary bytes must not panic and must keep
//! its output contract whatever the input.
//!
//! One input is normalized twice, as one block and in chunks whose sizes derive from a hash of
//! the input (so every mutation also changes the split), and then:
//! - both outputs are identical (chunk-boundary invariance);
//! - every output line is a JSON object whose first key is `type`;
//! - it reads back into an `Event` that serializes to the same JSON value;
//! - no `null` appears anywhere except inside `tool_started.input` (and never as that input);
//! - the last line is `run_ended` and its `lines` equals the input's line count.

use agentnorm::{Dialect, Event, NdjsonSink, Normalizer, Options};
use serde_json::Value;

/// FNV-1a: a cheap, stable hash to derive the chunk sizes and options from the input itself.
fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The input's line count as `run_ended.lines` must say it: one per `\n`, plus a last line
/// without newline; a source that is only a byte-order mark is empty.
pub fn line_count(data: &[u8]) -> u64 {
    if data == b"\xEF\xBB\xBF" {
        return 0;
    }
    let nl = data.iter().filter(|&&b| b == b'\n').count() as u64;
    nl + u64::from(data.last().is_some_and(|&b| b != b'\n'))
}

/// Normalizes `data` fed in chunks of the given sizes (cycled); an empty list is one block.
pub fn normalize(data: &[u8], opts: &Options, sizes: &[usize]) -> Vec<u8> {
    let mut n = Normalizer::new(opts.clone());
    let mut sink = NdjsonSink::default();
    if sizes.is_empty() {
        n.feed(data, &mut sink);
    } else {
        let mut rest = data;
        for &s in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (a, b) = rest.split_at(s.min(rest.len()));
            n.feed(a, &mut sink);
            rest = b;
        }
    }
    n.finish(&mut sink);
    sink.buf
}

/// Runs every check on one input. `vary_max_line` lets the hash pick a small `max_line_bytes`.
pub fn check(data: &[u8], dialect: Option<Dialect>, vary_max_line: bool) {
    let h = fnv(data);
    let mut opts = Options::default().observed_at(false).dialect(dialect);
    if vary_max_line && h & 3 == 0 {
        opts.max_line_bytes = 1 + ((h >> 2) % 600) as usize;
    }
    // Every other input goes through --redact (with --raw): its output must keep the contract too.
    if (h >> 20) & 1 == 1 {
        opts.redact = true;
        opts.raw = true;
    }
    let one_block = normalize(data, &opts, &[]);

    // Chunk sizes from an xorshift seeded by the hash: all ones, tiny, small or page-sized
    // chunks (zero-length feeds included).
    let mut x = h | 1;
    let max = match (h >> 12) & 3 {
        0 if data.len() <= 4096 => 1,
        0 | 1 => 4,
        2 => 64,
        _ => 5000,
    };
    let sizes: Vec<usize> = (0..64)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if max == 1 { 1 } else { (x % (max + 1)) as usize }
        })
        .collect();
    let sizes = if sizes.iter().all(|&s| s == 0) { vec![1] } else { sizes };
    let chunked = normalize(data, &opts, &sizes);
    if one_block != chunked {
        let a = String::from_utf8_lossy(&one_block);
        let b = String::from_utf8_lossy(&chunked);
        panic!("chunked output differs from one block (sizes {sizes:?}):\n--- one block\n{a}--- chunked\n{b}");
    }

    check_output(&one_block, line_count(data));
}

/// The output contract on one finished output.
pub fn check_output(out: &[u8], lines: u64) {
    assert!(out.ends_with(b"\n"), "output does not end with a newline");
    let text = std::str::from_utf8(out).expect("output is not UTF-8");
    let mut last = None;
    for line in text[..text.len() - 1].split('\n') {
        assert!(line.starts_with("{\"type\":\""), "`type` is not the first key: {line}");
        let v = parse(line);
        let obj = v.as_object().unwrap_or_else(|| panic!("not an object: {line}"));
        let ty = obj["type"].as_str().unwrap_or_else(|| panic!("type is not a string: {line}"));
        assert!(Event::TYPE_NAMES.contains(&ty), "type `{ty}` is not in the contract: {line}");
        let mut v2 = v.clone();
        if ty == "tool_started" {
            let o = v2.as_object_mut().expect("object");
            assert!(!o.get("input").is_some_and(Value::is_null), "tool_started.input is null: {line}");
            o.remove("input");
        }
        if let Some(path) = find_null(&v2) {
            panic!("null at {path} in {line}");
        }
        // Read back into Event; written again, it is the same JSON value.
        let mut de = serde_json::Deserializer::from_str(line);
        de.disable_recursion_limit();
        let ev: Event =
            serde::Deserialize::deserialize(&mut de).unwrap_or_else(|e| panic!("not an Event ({e}): {line}"));
        let mut again = NdjsonSink::default();
        agentnorm::Sink::event(&mut again, &ev);
        let again = std::str::from_utf8(&again.buf).expect("UTF-8");
        assert_eq!(parse(again.trim_end_matches('\n')), v, "Event round trip changed the line:\n{line}\n{again}");
        last = Some(v);
    }
    let last = last.expect("no output at all");
    assert_eq!(last["type"], "run_ended", "the last event is not run_ended");
    assert_eq!(last["lines"].as_u64(), Some(lines), "run_ended.lines is not the input's line count");
}

fn parse(line: &str) -> Value {
    let mut de = serde_json::Deserializer::from_str(line);
    de.disable_recursion_limit();
    let v: Value = serde::Deserialize::deserialize(&mut de).unwrap_or_else(|e| panic!("invalid JSON ({e}): {line}"));
    de.end().unwrap_or_else(|e| panic!("trailing bytes ({e}): {line}"));
    v
}

fn find_null(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some(String::new()),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| find_null(x).map(|p| format!("[{i}]{p}"))),
        Value::Object(o) => o.iter().find_map(|(k, x)| find_null(x).map(|p| format!(".{k}{p}"))),
        _ => None,
    }
}
