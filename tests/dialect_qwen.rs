//! The qwen dialect (Qwen Code `-p --output-format stream-json`): Claude-shaped frames with
//! Qwen's own usage counting, pinned on `fixtures/qwen/`.

use serde_json::{Value, json};

mod common;
use common::{at_line, of_type, output_text, run_ended, run_stdin, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("qwen", name)
}

#[test]
fn init_with_qwen_code_version_fixes_qwen_and_a_claude_init_switches_back() {
    let evs = run("partial_turn_tools");
    for e in evs.iter().filter(|e| e.get("line").is_some()) {
        assert_eq!(e["dialect"], "qwen", "{e}");
    }
    let s = &at_line(&evs, 1)[0];
    assert_eq!((s["cli_version"].as_str(), s["permission_mode"].as_str()), (Some("0.25.2"), Some("yolo")));
    let qwen = std::fs::read_to_string(common::fixture("qwen", "whole_messages")).unwrap();
    let claude = [
        r#"{"type":"system","subtype":"init","uuid":"c0000000-0000-4000-8000-000000000009","session_id":"c0000000-0000-4000-8000-000000000009","cwd":"/home/li/notes","tools":["Bash","Read"],"model":"claude-sonnet-4-6","permissionMode":"default","claude_code_version":"2.1.3","apiKeySource":"none"}"#,
        r#"{"type":"assistant","uuid":"c0000000-0000-4000-8000-000000000010","session_id":"c0000000-0000-4000-8000-000000000009","parent_tool_use_id":null,"message":{"id":"msg_01C","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hi."}],"stop_reason":null,"usage":{"input_tokens":3,"cache_read_input_tokens":1000,"cache_creation_input_tokens":20,"output_tokens":1}}}"#,
    ];
    let evs = run_stdin(&[], &format!("{qwen}{}\n", claude.join("\n")));
    assert_eq!(at_line(&evs, 9)[0]["dialect"], "qwen");
    assert_eq!(at_line(&evs, 10)[0]["dialect"], "claude");
    assert_eq!(at_line(&evs, 11)[0]["dialect"], "claude");
    // Claude's own mapping is untouched: its stream-json usage waits for a message_delta.
    assert!(at_line(&evs, 11)[1]["usage"].get("output").is_none());
    assert_eq!(at_line(&evs, 11)[1]["usage"]["input"], 3);
}

#[test]
fn without_the_init_the_stream_is_claude() {
    let line = r#"{"type":"assistant","uuid":"u","session_id":"s","parent_tool_use_id":null,"message":{"id":"m","role":"assistant","model":"q","content":[{"type":"text","text":"x"}],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":4}}}"#;
    let evs = run_stdin(&[], &format!("{line}\n"));
    assert_eq!(at_line(&evs, 1)[0]["dialect"], "claude");
}

#[test]
fn usage_subtracts_the_cache_and_keeps_output_at_the_assistant_line() {
    let evs = run("partial_turn_tools");
    let usage = of_type(&evs, "usage");
    assert_eq!(usage.len(), 3, "the thinking-only message with zero usage makes none");
    assert_eq!(usage[0]["line"], 14);
    assert_eq!(
        usage[0]["usage"],
        json!({"input": 18204 - 11520, "cache_read": 11520, "output": 142, "context": 18204})
    );
    assert_eq!(usage[2]["usage"], json!({"input": 101, "cache_read": 18432, "output": 31, "context": 18533}));
    let done = &of_type(&evs, "turn_completed")[0];
    assert_eq!(done["usage"], json!({"input": 55127 - 48128, "cache_read": 48128, "output": 270}));
    assert!(done.get("cost_usd").is_none());
    assert_eq!((done["duration_ms"].as_u64(), done["num_turns"].as_u64()), (Some(21877), Some(3)));
}

#[test]
fn streamed_text_and_thinking_are_written_once() {
    let evs = run("partial_turn_tools");
    assert_eq!(
        output_text(&evs),
        "VAT is applied twice in `invoice.ts`; my edit used a misspelled path, so nothing changed."
    );
    assert_eq!(of_type(&evs, "reasoning").len(), 1);
    assert_eq!(types_at(&evs, 8), ["heartbeat"], "the whole thinking message repeats the stream");
    assert_eq!(types_at(&evs, 24), ["usage"], "the whole text message repeats the stream");
    assert_eq!(types_at(&evs, 2), ["heartbeat"], "goal_state");
    assert_eq!(at_line(&evs, 2)[0]["frame"], "stream_event/goal_state");
    // Without partial messages the whole messages are the text.
    let evs = run("whole_messages");
    assert_eq!(at_line(&evs, 2)[0]["text"], "Plan first, then search the wiki.");
    assert_eq!(at_line(&evs, 8)[0]["text"], "Logs are kept for 90 days.");
    assert_eq!(types_at(&evs, 6), ["heartbeat"], "tool_progress");
}

#[test]
fn tools_and_kinds() {
    let evs = run("partial_turn_tools");
    assert_eq!(at_line(&evs, 14)[0]["kind"], "shell");
    assert_eq!(at_line(&evs, 14)[0]["summary"], "npm test -- invoice");
    assert_eq!(at_line(&evs, 17)[0]["ok"], false);
    let evs = run("whole_messages");
    assert_eq!(at_line(&evs, 5)[0]["kind"], "task", "Qwen's `agent` tool spawns a subagent");
    assert_eq!(types_at(&evs, 3), ["tool_started", "plan_updated", "usage"]);
}

#[test]
fn api_error_text_is_a_diagnostic_and_max_turns_fails() {
    let evs = run("api_error_and_max_turns");
    assert_eq!(types_at(&evs, 3), ["diagnostic", "turn_completed"]);
    assert_eq!(at_line(&evs, 3)[0]["code"], "qwen.api-error");
    assert!(at_line(&evs, 3)[1].get("usage").is_none(), "all-zero usage is left out");
    assert!(of_type(&evs, "usage").is_empty());
    let failed = &at_line(&evs, 5)[0];
    assert_eq!(
        (failed["error"].as_str(), failed["kind"].as_str()),
        (Some("Reached max session turns (20)"), Some("max_turns"))
    );
    assert_eq!(failed["usage"], json!({"input": 30915, "cache_read": 371200, "output": 5120}));
    assert_eq!(run_ended(&evs)["complete"], true);
}
