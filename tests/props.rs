//! Property tests: chunk-boundary invariance, no panic on arbitrary bytes, valid output.

use agentnorm::{Event, NdjsonSink, Normalizer, Options};
use proptest::prelude::*;

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
    let mut n = Normalizer::new(Options { observed_at: false, ..Options::default() });
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
