//! The grok dialect (xAI Grok Build `-p --output-format streaming-json` and `json`), pinned on
//! `fixtures/grok/`.

use serde_json::{Value, json};

mod common;
use common::{at_line, of_type, output_text, run_ended, run_stdin, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("grok", name)
}

#[test]
fn every_line_is_grok() {
    for name in ["streaming_tools", "streaming_error", "json_doc_and_error"] {
        let evs = run(name);
        for e in evs.iter().filter(|e| e.get("line").is_some()) {
            assert_eq!(e["dialect"], "grok", "{name}: {e}");
        }
        assert_eq!(run_ended(&evs)["unknown"], 0, "{name}");
    }
}

#[test]
fn chunks_tools_and_the_end() {
    let evs = run("streaming_tools");
    assert_eq!(
        output_text(&evs),
        "Checking the test suite.`is_leap` ignores the century rule; my edit hit a wrong path, nothing changed."
    );
    let reasoning: Vec<&str> = of_type(&evs, "reasoning").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(reasoning, ["Run the", " tests first."]);
    let kinds: Vec<&str> = of_type(&evs, "tool_started").iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["shell", "read", "edit"], "from the frames' ACP kind");
    assert_eq!(at_line(&evs, 5)[0]["input"], json!({"command": "pytest -q tests/test_dates.py"}));
    assert_eq!(at_line(&evs, 6)[0]["output"], "1 failed, 4 passed in 0.21s\n");
    let failed = &at_line(&evs, 10)[0];
    assert_eq!((failed["ok"].as_bool(), failed["error"].as_str()), (Some(false), Some("file not found: src/date.py")));
    // The session id first appears on `end`.
    assert_eq!(types_at(&evs, 12), ["session_started", "turn_completed"]);
    assert_eq!(at_line(&evs, 12)[0]["session_id"], "019f7a2c-4e81-7b3d-9c15-6a0de8b2f417");
    let done = &at_line(&evs, 12)[1];
    assert_eq!(
        done["usage"],
        json!({"input": 9120, "cache_read": 30720, "cache_write": 0, "output": 744, "reasoning": 388})
    );
    assert_eq!(done["cost_usd"], 0.0049416, "total_cost_usd_ticks / 1e10");
    assert_eq!((done["duration_ms"].as_u64(), done["num_turns"].as_u64()), (Some(18342), Some(4)));
    assert_eq!(done["stop_reason"], "end_turn");
}

#[test]
fn the_json_document_is_one_frame() {
    let evs = run("json_doc_and_error");
    let doc: Vec<&Value> = evs.iter().filter(|e| e["line"] == 1).collect();
    let types: Vec<&str> = doc.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["session_started", "reasoning", "output_delta", "turn_completed"]);
    assert!(doc.iter().all(|e| e["line_end"] == 28));
    assert_eq!(doc[3]["result"], "`is_leap` ignores the century rule.");
    assert_eq!(doc[3]["usage"]["reasoning"], 40);
}

#[test]
fn a_bare_error_is_grok_in_a_grok_stream_and_codex_alone() {
    let evs = run("streaming_error");
    let failed = &at_line(&evs, 3)[0];
    assert_eq!((failed["type"].as_str(), failed["kind"].as_str()), (Some("turn_failed"), Some("auth")));
    let evs = run("json_doc_and_error");
    assert_eq!(
        (at_line(&evs, 29)[0]["type"].as_str(), at_line(&evs, 29)[0]["dialect"].as_str()),
        (Some("turn_failed"), Some("grok"))
    );
    // The same line alone: structure cannot tell it from Codex's error.
    let evs = run_stdin(&[], "{\"type\":\"error\",\"message\":\"Couldn't set model 'x'\"}\n");
    assert_eq!(
        (at_line(&evs, 1)[0]["dialect"].as_str(), at_line(&evs, 1)[0]["type"].as_str()),
        (Some("codex"), Some("diagnostic"))
    );
}

#[test]
fn partial_cost_is_left_out_and_cancel_fails() {
    let input = [
        r#"{"type":"start"}"#,
        r#"{"type":"tool_call","toolCallId":"c1","toolName":"run_terminal_cmd","status":"pending"}"#,
        r#"{"type":"tool_call","toolCallId":"c1","toolName":"run_terminal_cmd","status":"in_progress"}"#,
        r#"{"type":"tool_call_update","toolCallId":"c1","status":null,"rawOutput":null,"content":[],"locations":[]}"#,
        r#"{"type":"end","stopReason":"cancelled","sessionId":"s9","usage":{"input_tokens":5,"output_tokens":1},"total_cost_usd":0.1,"cost_is_partial":true}"#,
    ]
    .join("\n");
    let evs = run_stdin(&[], &format!("{input}\n"));
    assert_eq!(types_at(&evs, 1), ["heartbeat"]);
    assert_eq!(types_at(&evs, 2), ["tool_started"]);
    assert_eq!(types_at(&evs, 3), ["heartbeat"], "a repeated call frame");
    assert_eq!(types_at(&evs, 4), ["heartbeat"], "an update without a status");
    let failed = &at_line(&evs, 5)[1];
    assert_eq!((failed["type"].as_str(), failed["kind"].as_str()), (Some("turn_failed"), Some("aborted")));
    assert!(failed.get("cost_usd").is_none(), "a partial cost is not the run's");
    assert!(evs.iter().filter(|e| e.get("line").is_some()).all(|e| e["dialect"] == "grok"));
}
