//! Property tests: chunk-boundary invariance, no panic on arbitrary bytes, valid output.

use agentnorm::{Event, NdjsonSink, Normalizer, Options};
use proptest::prelude::*;

mod common;
use common::{spec_lines, strip_sgr};

/// A mixed stream: Claude with partial messages, Codex, CRLF, blank, non-JSON, long text, no
/// final newline.
fn sample_stream() -> Vec<u8> {
    let long = "line with \\\"quotes\\\" and caf\\u00e9 \\n".repeat(40);
    let mut s = String::new();
    s.push_str(r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-5","tools":["Bash","TodoWrite"],"uuid":"u0"}"#);
    s.push('\n');
    s.push_str(r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","model":"claude-sonnet-5","usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}},"session_id":"s1","parent_tool_use_id":null}"#);
    s.push_str("\r\n");
    s.push_str(r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}},"session_id":"s1","parent_tool_use_id":null}"#);
    s.push('\n');
    s.push_str(r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}},"session_id":"s1","parent_tool_use_id":null}"#);
    s.push('\n');
    s.push_str(r#"{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","content":[{"type":"text","text":"Hello"}],"usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}},"session_id":"s1","parent_tool_use_id":null}"#);
    s.push_str("\n\n");
    s.push_str(&format!(
        r#"{{"type":"assistant","message":{{"id":"m1","model":"claude-sonnet-5","content":[{{"type":"tool_use","id":"t1","name":"Bash","input":{{"command":"{long}"}}}}],"usage":{{"input_tokens":5,"output_tokens":1}}}},"session_id":"s1","parent_tool_use_id":null}}"#
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"{long}"}}]}},"session_id":"s1","parent_tool_use_id":null}}"#
    ));
    s.push('\n');
    s.push_str(r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}},"session_id":"s1","parent_tool_use_id":null}"#);
    s.push('\n');
    s.push_str("some stderr text\n   \n");
    s.push_str(r#"{"type":"result","subtype":"success","is_error":false,"result":"Hello","session_id":"s1","usage":{"input_tokens":5,"output_tokens":42},"total_cost_usd":0.01}"#);
    s.push('\n');
    s.push_str(r#"{"type":"thread.started","thread_id":"c1"}"#);
    s.push('\n');
    s.push_str(r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"ls","aggregated_output":"a\nb","exit_code":0,"status":"completed"}}"#);
    s.push('\n');
    s.push_str(r#"{"type":"turn.started""#);
    s.into_bytes()
}

fn normalize_in_chunks(input: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut sink = NdjsonSink::default();
    let mut n = Normalizer::new(Options::default().observed_at(false));
    let mut start = 0;
    for &c in cuts {
        let end = c.min(input.len()).max(start);
        n.feed(&input[start..end], &mut sink);
        start = end;
    }
    n.feed(&input[start..], &mut sink);
    n.finish(&mut sink);
    sink.buf
}

#[test]
fn one_byte_at_a_time_equals_one_block() {
    let input = sample_stream();
    let whole = normalize_in_chunks(&input, &[]);
    let cuts: Vec<usize> = (1..input.len()).collect();
    assert_eq!(String::from_utf8(normalize_in_chunks(&input, &cuts)).unwrap(), String::from_utf8(whole).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_read_sizes_give_identical_output(mut cuts in proptest::collection::vec(0usize..4000, 0..40)) {
        let input = sample_stream();
        cuts.sort_unstable();
        prop_assert_eq!(normalize_in_chunks(&input, &cuts), normalize_in_chunks(&input, &[]));
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_give_valid_events(input in proptest::collection::vec(any::<u8>(), 0..600)) {
        let out = normalize_in_chunks(&input, &[]);
        let text = String::from_utf8(out).expect("output is UTF-8");
        let mut lines = 0;
        for l in text.lines() {
            let ev: Event = serde_json::from_str(l).expect("every output line reads back into Event");
            if let Event::RunEnded { lines: n, .. } = ev {
                let expected = input.split(|&b| b == b'\n').count() - usize::from(input.last() == Some(&b'\n') || input.is_empty());
                prop_assert_eq!(n as usize, expected);
            }
            lines += 1;
        }
        prop_assert!(lines >= 2);
    }

    #[test]
    fn arbitrary_json_ish_lines_never_panic(frames in proptest::collection::vec(
        prop_oneof![
            Just(r#"{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}"#.to_owned()),
            Just(r#"{"type":"item.completed","item":{"type":"command_execution","exit_code":"x"}}"#.to_owned()),
            Just(r#"{"type":"result","is_error":"yes","usage":[1]}"#.to_owned()),
            Just(r#"{"type":"rate_limit_event","rate_limit_info":{"utilization":"high","resetsAt":-5}}"#.to_owned()),
            Just(r#"{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":1e400}}}"#.to_owned()),
            Just(r#"{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"image"}]}]}}"#.to_owned()),
            "[a-z{}\\[\\]\":,0-9 ]{0,40}",
        ], 0..20)) {
        let input = frames.join("\n");
        let out = normalize_in_chunks(input.as_bytes(), &[]);
        for l in String::from_utf8(out).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            prop_assert!(v.is_object());
            prop_assert!(l.starts_with("{\"type\":"), "type first: {}", l);
            let _: Event = serde_json::from_str(l).unwrap();
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Properties over streams that mix real frames of every dialect with garbage
// ------------------------------------------------------------------------------------------------

/// Every line of every fixture input (`fixtures/*/*.jsonl`): real-looking frames of all dialects.
fn fixture_lines() -> &'static [Vec<u8>] {
    static LINES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    LINES.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut files: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|d| d.unwrap().path())
            // `fixtures/README.md` (provenance) sits beside the dialect folders.
            .filter(|d| d.is_dir())
            .flat_map(|d| std::fs::read_dir(d).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        let mut lines = Vec::new();
        for f in files {
            let bytes = std::fs::read(f).unwrap();
            lines.extend(
                bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec()),
            );
        }
        assert!(lines.len() > 100, "fixtures found");
        lines
    })
}

/// One input line (without its ending): a fixture frame, a damaged one, garbage, blank, stderr
/// text, or one of the lines that open and close a pretty-printed document.
fn any_line() -> impl Strategy<Value = Vec<u8>> {
    let n = fixture_lines().len();
    prop_oneof![
        6 => (0..n).prop_map(|i| fixture_lines()[i].clone()),
        2 => ((0..n), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, at, b)| {
            // One byte replaced (a newline would split the line: the next line's business).
            let mut l = fixture_lines()[i].clone();
            if !l.is_empty() {
                let at = at.index(l.len());
                l[at] = if b == b'\n' { 0xFF } else { b };
            }
            l
        }),
        1 => ((0..n), any::<prop::sample::Index>()).prop_map(|(i, at)| {
            // Cut mid-frame, possibly mid-character.
            let l = &fixture_lines()[i];
            l[..at.index(l.len() + 1)].to_vec()
        }),
        1 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..80),
        1 => prop_oneof![Just(b"".to_vec()), Just(b"  \t".to_vec()), Just(b"{".to_vec()), Just(b"}".to_vec())],
        1 => Just(b"2026-04-09T14:20:45.537513Z  WARN codex_core::plugins::manager: failed to load plugin: plugin is not installed plugin=\"gh@x\" path=/tmp/p".to_vec()),
    ]
}

/// A stream: an optional BOM, lines each ended by `\n` or `\r\n`, the last maybe without ending.
fn any_stream() -> impl Strategy<Value = Vec<u8>> {
    (any::<bool>(), proptest::collection::vec((any_line(), any::<bool>()), 0..24), any::<bool>()).prop_map(
        |(bom, lines, final_nl)| {
            let mut s = Vec::new();
            if bom {
                s.extend_from_slice(b"\xEF\xBB\xBF");
            }
            let last = lines.len();
            for (i, (l, crlf)) in lines.into_iter().enumerate() {
                s.extend_from_slice(&l);
                if i + 1 < last || final_nl {
                    s.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                }
            }
            s
        },
    )
}

fn is_blank(l: &[u8]) -> bool {
    l.iter().all(u8::is_ascii_whitespace)
}

/// Runs the library on `input` with `--raw`: the NDJSON bytes and the events as the library made
/// them.
fn normalize_raw(input: &[u8]) -> (Vec<u8>, Vec<Event>) {
    let opts = Options::default().observed_at(false).raw(true);
    let mut sink = NdjsonSink::default();
    let mut n = Normalizer::new(opts.clone());
    n.feed(input, &mut sink);
    n.finish(&mut sink);
    let mut events: Vec<Event> = Vec::new();
    let mut n = Normalizer::new(opts);
    n.feed(input, &mut events);
    n.finish(&mut events);
    (sink.buf, events)
}

/// The path of the first `null` in `v` outside `tool_started.input`, if any.
fn find_null(v: &serde_json::Value, path: &str) -> Option<String> {
    match v {
        serde_json::Value::Null => Some(path.to_owned()),
        serde_json::Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| find_null(x, &format!("{path}[{i}]"))),
        serde_json::Value::Object(o) => o
            .iter()
            .filter(|(k, _)| !(path.is_empty() && k.as_str() == "input" && v["type"] == "tool_started"))
            .find_map(|(k, x)| find_null(x, &format!("{path}.{k}"))),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Valid JSON whatever the input, `type` first, no `null` outside `tool_started.input`, and
    /// every event reads back into an equal `Event` (Event → JSON → Event is the identity).
    #[test]
    fn output_is_valid_json_without_null_and_reads_back_identically(input in any_stream()) {
        let (ndjson, events) = normalize_raw(&input);
        let text = std::str::from_utf8(&ndjson).expect("output is UTF-8");
        prop_assert!(text.ends_with('\n'));
        prop_assert!(!text.bytes().any(|b| b < 0x20 && b != b'\n'), "control characters are escaped");
        let lines: Vec<&str> = text.lines().collect();
        prop_assert_eq!(lines.len(), events.len());
        for (l, ev) in lines.iter().zip(&events) {
            let v: serde_json::Value = serde_json::from_str(l).expect("valid JSON");
            prop_assert!(l.starts_with("{\"type\":"), "type first: {}", l);
            prop_assert_eq!(find_null(&v, ""), None, "null in {}", l);
            let back: Event = serde_json::from_str(l).expect("reads back into Event");
            prop_assert_eq!(&back, ev, "Event -> JSON -> Event");
        }
    }

    /// Every non-blank line is named by an event (`line`, or a `line`..`line_end` range);
    /// `run_ended.lines` counts every line, blank ones included.
    #[test]
    fn every_line_is_accounted_for(input in any_stream()) {
        let (ndjson, _) = normalize_raw(&input);
        let evs: Vec<serde_json::Value> =
            std::str::from_utf8(&ndjson).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let lines = spec_lines(&input);
        let end = evs.last().unwrap();
        prop_assert_eq!(&end["type"], "run_ended");
        prop_assert_eq!(end["lines"].as_u64(), Some(lines.len() as u64));
        // Lines covered by a document's `line`..`line_end` range, and lines named on their own.
        let (mut in_range, mut alone) = (vec![false; lines.len() + 1], vec![false; lines.len() + 1]);
        for e in &evs {
            if let Some(first) = e["line"].as_u64() {
                let last = e["line_end"].as_u64().unwrap_or(first);
                prop_assert!(first >= 1 && last >= first && last as usize <= lines.len(), "range {}..{} in {}", first, last, e);
                if last == first {
                    alone[first as usize] = true;
                }
                for n in first..=last {
                    in_range[n as usize] = true;
                }
            }
        }
        for (i, l) in lines.iter().enumerate() {
            let what = String::from_utf8_lossy(l);
            if is_blank(l) {
                prop_assert!(!alone[i + 1], "blank line {} yields nothing", i + 1);
            } else {
                prop_assert!(in_range[i + 1], "line {} ({:?}) named", i + 1, what);
            }
        }
    }

    /// LOSSLESS: with `raw`, the first event naming a line carries it byte for byte: `raw` for
    /// UTF-8 input, `raw_base64` for the rest. A document's events carry its lines joined by `\n`.
    #[test]
    fn raw_reproduces_every_line(input in any_stream()) {
        use base64::Engine as _;
        let (ndjson, _) = normalize_raw(&input);
        let evs: Vec<serde_json::Value> =
            std::str::from_utf8(&ndjson).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let lines = spec_lines(&input);
        let mut seen = vec![false; lines.len() + 1];
        for e in &evs {
            let Some(first) = e["line"].as_u64() else { continue };
            if std::mem::replace(&mut seen[first as usize], true) {
                continue;
            }
            let last = e["line_end"].as_u64().unwrap_or(first);
            let want: Vec<u8> = lines[first as usize - 1..last as usize].join(&b'\n');
            if let Some(b64) = e.get("raw_base64") {
                let bytes = base64::engine::general_purpose::STANDARD.decode(b64.as_str().unwrap()).unwrap();
                prop_assert_eq!(&bytes, &want, "raw_base64 of line {}", first);
            } else {
                prop_assert!(std::str::from_utf8(&want).is_ok(), "line {} is not UTF-8 and has no raw_base64: {}", first, e);
                prop_assert_eq!(e["raw"].as_str().map(str::as_bytes), Some(&want[..]), "raw of line {}: {}", first, e);
            }
        }
    }

    /// The same mixed stream in arbitrary read sizes gives the same output.
    #[test]
    fn mixed_streams_are_chunk_invariant(input in any_stream(), mut cuts in proptest::collection::vec(0usize..20_000, 0..30)) {
        cuts.sort_unstable();
        prop_assert_eq!(normalize_in_chunks(&input, &cuts), normalize_in_chunks(&input, &[]));
    }
}

// ------------------------------------------------------------------------------------------------
// The pretty view over the same streams
// ------------------------------------------------------------------------------------------------

/// The pretty view of `input`, fed in pieces cut at `cuts`, with a live flush after each piece
/// when `live`.
fn pretty_in_chunks(input: &[u8], cuts: &[usize], width: usize, live: bool) -> String {
    use agentnorm::view::{PrettySink, Terminal};
    let mut sink = PrettySink::new(Terminal { width, color: true });
    let mut n = Normalizer::new(Options::default().observed_at(false));
    let mut start = 0;
    for &c in cuts {
        let end = c.min(input.len()).max(start);
        n.feed(&input[start..end], &mut sink);
        if live {
            sink.flush();
        }
        start = end;
    }
    n.feed(&input[start..], &mut sink);
    n.finish(&mut sink);
    String::from_utf8(sink.buf).expect("pretty output is UTF-8")
}

/// The finished calls' headlines (`✓ …` / `✗ …` after any subagent guides), in order.
fn outcomes(view: &str) -> Vec<String> {
    view.lines()
        .map(|r| r.trim_start_matches("│ "))
        .filter(|r| (r.starts_with("✓ ") || r.starts_with("✗ ")) && !r.starts_with("✗ turn failed"))
        .map(str::to_owned)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the stream: no panic, no row wider than the terminal, no escape but SGR colour
    /// codes, no unsafe character; flushing live at any point loses no call's outcome.
    #[test]
    fn the_pretty_view_of_any_stream_is_safe_fits_and_does_not_depend_on_flushes(
        input in any_stream(),
        width in 40usize..140,
        mut cuts in proptest::collection::vec(0usize..20_000, 0..12),
    ) {
        use unicode_width::UnicodeWidthStr;
        cuts.sort_unstable();
        let batch = pretty_in_chunks(&input, &[], width, false);
        let plain = strip_sgr(&batch);
        for row in plain.lines() {
            prop_assert!(row.width() <= width, "row wider than {}: {:?}", width, row);
            prop_assert!(!row.chars().any(agentnorm::sink::safe::is_unsafe), "unsafe character in {:?}", row);
        }
        let live = strip_sgr(&pretty_in_chunks(&input, &cuts, width, true));
        prop_assert_eq!(outcomes(&live), outcomes(&plain));
    }
}

/// Found by the property above: a plan call that set no plan of its own was headed, in one
/// batch, by a plan that came on a later line ("1/3 done"), while a live flush between the two
/// showed it without ("updateTodos"). A later plan no longer heads an earlier call.
#[test]
fn a_later_plan_does_not_head_an_earlier_plan_call() {
    let input = [
        r##"{"type":"tool_call","subtype":"completed","call_id":"todo_1","tool_call":{"updateTodosToolCall":{"args":{"todos":[{"id":"1","content":"Read the failing test","status":"TODO_STATUS_COMPLETED"},{"id":"2","content":"Fix the parser","status":"TODO_STATUS_IN_PROGRESS"},{"id":"3","content":"Update docs","status":"TODO_STATUS_PENDING"},{"id":"4","content":"Port to Windows","status":"TODO_STATUS_CANCELLED"}],"merge":false},"result":{"success":{"todos":[{"id":"1","content":"Read the failing test","status":"TODO_STATUS_COMPLETED"},{"id":"2","content":"Fix the parser","status":"TODO_STATUS_IN_PROGRESS"},{"id":"3","content":"Update docs","status":"TODO_STATUS_PENDING"},{"id":"4","content":"Port to Windows","status":"TODO_STATUS_CANCELLED"}],"totalCount":4}}}},"session_id":"6f6f6f6f-7a7a-4b8b-9c9c-adadadadadad","timestamp_ms":1780004000002}"##,
        r##"{"timestamp":"2026-07-02T10:05:00.002Z","type":"turn_context","payload":{"turn_id":"t-p1","cwd":"/srv/app","approval_policy":"on-request","sandbox_policy":{"type":"workspace-write"},"model":"gpt-5.5","summary":"auto"}}"##,
        r##"{"type":"item.updated","item":{"id":"item_0","type":"todo_list","items":[{"text":"Reproduce the panic","completed":true},{"text":"#rite a regression test","completed":false},{"text":"Fix the off-by-one in the tokenizer","completed":false}]}}"##,
    ]
    .join("\n");
    let cut = input.find('\n').unwrap() + 1;
    let batch = strip_sgr(&pretty_in_chunks(input.as_bytes(), &[], 40, false));
    let live = strip_sgr(&pretty_in_chunks(input.as_bytes(), &[cut], 40, true));
    assert_eq!(outcomes(&live), outcomes(&batch));
    assert!(outcomes(&batch).iter().any(|o| o.contains("updateTodos")), "{batch}");
}

// ------------------------------------------------------------------------------------------------
// The all-cores path: chunks decoded and folded on worker threads in turn, gives one thread's bytes
// ------------------------------------------------------------------------------------------------

/// Chunk cuts: offsets, each either where it falls (mid-line, mid-character) or moved to just
/// after the next `\n` (as the reader cuts files).
fn any_cuts(max: usize) -> impl Strategy<Value = Vec<(usize, bool)>> {
    proptest::collection::vec((0..max, any::<bool>()), 0..40)
}

/// A stream that starts with a pretty-printed document (the Gemini fixture, padded with lines
/// so that it can span chunks; sometimes left unclosed or made unparseable), then any lines.
fn document_stream() -> impl Strategy<Value = Vec<u8>> {
    (0..3000usize, 0..3u8, any::<bool>(), any_stream()).prop_map(|(pad, damage, crlf, rest)| {
        let doc = std::fs::read(common::root().join("fixtures/gemini/json_output_pretty.jsonl")).unwrap();
        let doc = String::from_utf8(doc).unwrap();
        let body = doc.trim_end().strip_suffix('}').unwrap();
        let mut s = String::from(body.trim_end());
        for i in 0..pad {
            s.push_str(&format!(",\n  \"pad{i}\": \"{}\"", "x".repeat(i % 50)));
        }
        match damage {
            0 => s.push_str("\n}\n"),
            1 => s.push_str("\n,}\n"),
            _ => s.push('\n'),
        }
        if crlf {
            s = s.replace('\n', "\r\n");
        }
        let mut out = s.into_bytes();
        out.extend(rest);
        out
    })
}

/// A stream with the splitter's edge cases anywhere, so that they fall on chunk boundaries: a
/// BOM at the start and BOMs starting later lines (kept: only the first line's is dropped), CRLF
/// and a lone `\r` before the end, blank lines, a last line without newline.
fn edge_stream() -> impl Strategy<Value = Vec<u8>> {
    let line = (any_line(), 0..4u8, 0..6u8);
    (any::<bool>(), proptest::collection::vec(line, 0..30), 0..3u8).prop_map(|(bom, lines, end)| {
        let mut s = Vec::new();
        if bom {
            s.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for (l, prefix, ending) in lines {
            match prefix {
                0 => s.extend_from_slice(b"\xEF\xBB\xBF"),
                1 => s.extend_from_slice(b"\r"),
                _ => {}
            }
            s.extend_from_slice(&l);
            s.extend_from_slice(match ending {
                0 => b"\r\n",
                1 => b"\n\n",
                2 => b"\r\r\n",
                _ => b"\n",
            });
        }
        match end {
            0 => s.extend_from_slice(b"{\"type\":\"turn.started\"}"),
            1 => s.extend_from_slice(b"{\"type\":\"turn.started\"}\r"),
            _ => {}
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The splitter's edge cases on chunk boundaries, with any line limit: one thread's bytes.
    #[test]
    fn parallel_equals_one_thread_on_edge_cases(
        input in edge_stream(),
        cuts in any_cuts(8000),
        threads in 1..=4usize,
        max_line in prop_oneof![Just(agentnorm::DEFAULT_MAX_LINE_BYTES), 1..300usize],
    ) {
        let opts = Options::default().observed_at(false).max_line_bytes(max_line);
        let cuts = common::cuts_at_lines(&input, &cuts);
        let one = common::normalize_in_sizes(&input, opts.clone(), &[]);
        let par = common::normalize_parallel(&input, opts, &cuts, threads);
        prop_assert_eq!(String::from_utf8_lossy(&par), String::from_utf8_lossy(&one));
    }

    /// Mixed streams (BOM, CRLF, blank lines, garbage, invalid UTF-8, `{` / `}` lines, a last
    /// line without newline), any line limit, any chunk cuts, 1–4 threads: one thread's bytes.
    #[test]
    fn parallel_equals_one_thread_on_mixed_streams(
        input in any_stream(),
        cuts in any_cuts(6000),
        threads in 1..=4usize,
        max_line in prop_oneof![Just(agentnorm::DEFAULT_MAX_LINE_BYTES), 1..400usize],
        raw in any::<bool>(),
        redact in any::<bool>(),
    ) {
        let opts = Options::default().observed_at(false).raw(raw).redact(redact).max_line_bytes(max_line);
        let cuts = common::cuts_at_lines(&input, &cuts);
        let one = common::normalize_in_sizes(&input, opts.clone(), &[]);
        let par = common::normalize_parallel(&input, opts, &cuts, threads);
        prop_assert_eq!(String::from_utf8_lossy(&par), String::from_utf8_lossy(&one));
    }

    /// A pretty-printed document at the start, cut anywhere (also across its lines), read as one
    /// frame or line by line exactly as one thread reads it.
    #[test]
    fn parallel_equals_one_thread_with_a_document(
        input in document_stream(),
        cuts in any_cuts(200_000),
        threads in 1..=4usize,
    ) {
        let opts = Options::default().observed_at(false);
        let cuts = common::cuts_at_lines(&input, &cuts);
        let one = common::normalize_in_sizes(&input, opts.clone(), &[]);
        let par = common::normalize_parallel(&input, opts, &cuts, threads);
        prop_assert_eq!(String::from_utf8_lossy(&par), String::from_utf8_lossy(&one));
    }

    /// Every fixture, with and without a forced dialect, cut anywhere: one thread's bytes.
    #[test]
    fn parallel_equals_one_thread_on_every_fixture(
        cuts in any_cuts(40_000),
        threads in 1..=4usize,
        forced in any::<bool>(),
    ) {
        for dir in ["claude", "claude-transcript", "codex", "codex-legacy", "codex-rollout", "cursor", "gemini", "opencode"] {
            for f in common::fixtures(dir) {
                let input = std::fs::read(common::root().join(&f)).unwrap();
                let dialect = forced.then(|| agentnorm::Dialect::from_name(dir)).flatten();
                let opts = Options::default().observed_at(false).dialect(dialect).source(Some(f.display().to_string()));
                let cuts = common::cuts_at_lines(&input, &cuts);
                let one = common::normalize_in_sizes(&input, opts.clone(), &[]);
                let par = common::normalize_parallel(&input, opts, &cuts, threads);
                prop_assert_eq!(String::from_utf8_lossy(&par), String::from_utf8_lossy(&one), "{}", f.display());
            }
        }
    }
}
