//! Inputs the fuzz targets (`fuzz/`, `scripts/fuzz.sh`) found crashing, kept as regression
//! tests with the input inline. Each runs the same checks as the fuzz target did: the output is
//! the same however the input is split, and `run_ended.lines` counts every line in order.

use agentnorm::{Dialect, Options};

mod common;
use serde_json::Value;

/// Normalizes `data` in chunks of the given sizes (cycled; empty: one block).
fn run(data: &[u8], max_line_bytes: usize, sizes: &[usize]) -> Vec<Value> {
    run_with(data, Options::default().observed_at(false).max_line_bytes(max_line_bytes), sizes)
}

/// Normalizes `data` with `opts` in chunks of the given sizes (cycled; empty: one block).
fn run_with(data: &[u8], opts: Options, sizes: &[usize]) -> Vec<Value> {
    let text = String::from_utf8(common::normalize_in_sizes(data, opts, sizes)).expect("UTF-8 output");
    text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect()
}

/// The same output for one block, one byte at a time and a few uneven splits.
fn same_for_every_split(data: &[u8], max_line_bytes: usize) -> Vec<Value> {
    let one = run(data, max_line_bytes, &[]);
    for sizes in [&[1][..], &[2, 3, 0, 2, 1, 0, 3, 3], &[7], &[50, 1]] {
        assert_eq!(run(data, max_line_bytes, sizes), one, "split {sizes:?} changes the output");
    }
    one
}

/// Crash 1 (`normalize`, max_line_bytes 93): a line over the limit that arrives in several
/// reads got a `sample` cut where the line crossed the limit instead of its first 1024 bytes.
#[test]
fn fuzz_overlong_line_sample_does_not_depend_on_read_sizes() {
    let line =
        b"2026-04-09T14:20:58.020310Z ERROR codex_core::session: failed to record rollout items: channel closed\n";
    let out = same_for_every_split(line, 93);
    let unknown = &out[1];
    assert_eq!(unknown["reason"], "line_too_long");
    assert_eq!(unknown["sample"], std::str::from_utf8(&line[..line.len() - 1]).unwrap());
    assert_eq!(out.last().unwrap()["lines"], 1);
}

/// Crash 2 (`normalize`, max_line_bytes 3): a line over the limit after a lone `{` (the start of
/// a pretty-printed document) was written before the document's lines were replayed, so lines
/// came out of order and `run_ended.lines` went back to 1.
#[test]
fn fuzz_overlong_line_inside_a_document_keeps_line_order() {
    for (input, lines) in [(&b"{\ncmpl"[..], 2), (b"{\ncmpl\n", 2), (b"{\ncmpl\n}\n", 3), (b"{\ncmpl\n{\n}\n", 4)] {
        let out = same_for_every_split(input, 3);
        let numbers: Vec<u64> = out.iter().filter_map(|e| e["line"].as_u64()).collect();
        assert!(numbers.windows(2).all(|w| w[0] <= w[1]), "{input:?}: lines out of order: {numbers:?}");
        assert_eq!(out.iter().filter(|e| e["reason"] == "line_too_long").count(), 1, "{input:?}");
        assert_eq!(out.last().unwrap()["lines"], lines, "{input:?}");
    }
}

/// Crash 3 (`codex` and `normalize`): a line that simd-json refuses, with a `\u` escape, ending
/// in a lone backslash made the surrogate repair index one past the end and panic
/// (`range start index 175 out of range for slice of length 174`). The minimal form first, then
/// the two inputs the fuzzers found.
#[test]
fn fuzz_line_ending_in_backslash_after_unicode_escape_does_not_panic() {
    let found_by_codex: &[u8] = b"\x13\x03\x88type\":\"itflaky test found (net.rs::retries); the\xd8\x9denchma{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"turn_duration\"\"text\":\"SOURCE\\n\
      ```rust\\n\
      let marker = \\\"[[DONE]]\\\";\\n\
      println!(\\\"Gr\xc3\xbc\xc3\x9fe aus Z\xc3\xbcrich \xf0\x9f\x8c\x8d\\\");\\n\
      ```\"\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88reasoning\",\"text\":\"**Checking escapes**\"}}\n\
      {\"type\":\"item.completed\",\"\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\xf1\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88\x88item\":{\"type\":\"agent_message\",\"text\":\"\\u001b[32mPASS\\u001b[0m C:\\\\\\";
    let found_by_normalize: &[u8] = b"{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"SOURCE\\n\
      ```rust\\n\
      let marker = \\\"[[DONE]]\\\";\\n\
      println!(\\\"Gr\xc3\xbc\xc3\x9fe aus Z\xc3\xbcrich \xf0\x9f\x8c\x8d\\\");\\n\
      ```\"}}\n\
      {\"type\":\"item.completed\",\"item\":{\"t\x8cpe\":\"reasoning\",\"text\":\"**Checking escapes**\"}}\n\
      {\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"\\u001b[32mPASS\\u001b[0m C:\\\\\\\\work\\\\\\\\out.txt {\\\"ok\\\":true}\"}}\n\
      {\"type\":\"item.completed\",\"item\":{\"type\":\"command_execution\",\"cotype\":\"agent_message\",\"text\":\"\\u001b[32mPASS\\u001b[0m C:\\\\\\\\work\\\n\
      {\"type\":\"item.completed\",\"itetype\":\"itum.completed\",\"item\":{\"input_tokens\":0,\"outpu|_tokens\":1}}\n\
      ";
    for (input, lines) in
        [(&b"{\"\\u0041\":1}\\\n"[..], 1), (b"\\u\\", 1), (found_by_codex, 2), (found_by_normalize, 5)]
    {
        for dialect in [None, Some(Dialect::Codex)] {
            let out = run_with(input, Options::default().observed_at(false).dialect(dialect), &[1]);
            assert_eq!(out, run_with(input, Options::default().observed_at(false).dialect(dialect), &[]));
            assert_eq!(out.last().unwrap()["lines"], lines, "{input:?}");
        }
    }
}

/// Crash 2026-12-02 (`normalize`, `qwen`): a source of only a byte-order mark, no newline. The
/// normalizer reads it as empty (`lines: 0`, complete), however it is split; the harness had
/// counted it as one line. The mark followed by a newline is one (blank) line.
#[test]
fn fuzz_a_source_of_only_a_byte_order_mark_is_empty() {
    let out = same_for_every_split(b"\xEF\xBB\xBF", 1 << 20);
    let last = out.last().expect("run_ended");
    assert_eq!((last["type"].as_str(), last["lines"].as_u64()), (Some("run_ended"), Some(0)));
    assert_eq!(last["complete"], true);
    let out = same_for_every_split(b"\xEF\xBB\xBF\n", 1 << 20);
    assert_eq!(out.last().expect("run_ended")["lines"].as_u64(), Some(1));
}
