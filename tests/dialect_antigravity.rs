//! The Antigravity dialect (`agy --output-format stream-json`, the `{"event":…}` envelope),
//! pinned on its fixtures (`fixtures/antigravity/`, each with a `.notes` file naming the events
//! expected per line): each test checks one mapping against the input it comes from.

use serde_json::Value;

mod common;
use common::{at_line, bin, fixture, input_frames, of_type, output_text, run_ended, run_stdin, types_at};

const DIALECT: &str = "antigravity";
const NAMES: [&str; 5] = ["turn_tools", "resumed_turn", "denied_and_timeout", "quota_failed", "command_and_auth_error"];

fn events(name: &str) -> Vec<Value> {
    common::events_of(DIALECT, name)
}

fn frames(name: &str) -> Vec<(u64, Value)> {
    input_frames(&fixture(DIALECT, name))
}

#[test]
fn every_fixture_is_detected_as_antigravity_from_its_envelope() {
    for name in NAMES {
        let out = bin().arg("detect").arg(fixture(DIALECT, name)).output().expect("running agentnorm detect");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("antigravity\t"), "{name}");
        let evs = events(name);
        for e in &evs[1..evs.len() - 1] {
            assert_eq!(e["dialect"], DIALECT, "{name}: {e}");
        }
        let end = run_ended(&evs);
        assert_eq!(end["complete"], true, "{name}");
    }
}

#[test]
fn text_deltas_come_out_once_and_the_result_repeats_nothing() {
    for name in ["turn_tools", "resumed_turn"] {
        let evs = events(name);
        let (_, result) = frames(name).into_iter().find(|(_, f)| f["event"] == "result").expect("a result line");
        let response = result["result"]["response"].as_str().unwrap();
        assert_eq!(output_text(&evs), response, "{name}: the deltas are the response, once");
        let done = of_type(&evs, "turn_completed");
        assert_eq!(done.len(), 1);
        assert_eq!(done[0]["result"], response);
    }
    let evs = events("turn_tools");
    let conv = "5f1c2a90-7e3b-4c61-9d0a-2b8e44c1f7a3";
    for line in [13, 14, 15] {
        assert_eq!(at_line(&evs, line)[0]["message_id"], format!("{conv}:8"));
    }
}

#[test]
fn a_result_whose_turn_streamed_nothing_gives_its_text() {
    // A build (or resumed turn) that streams no text_delta: the response is the only copy.
    let input = concat!(
        r#"{"event":"init","conversation_id":"c1","init":{"cwd":"/w"}}"#,
        "\n",
        r#"{"event":"result","result":{"conversation_id":"c1","status":"SUCCESS","response":"All done.","duration_seconds":2.5,"num_turns":1,"usage":{"input_tokens":10,"output_tokens":3,"thinking_tokens":0,"cache_read_tokens":0,"total_tokens":13}}}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    assert_eq!(output_text(&evs), "All done.");
    assert_eq!(types_at(&evs, 2), ["output_delta", "turn_completed"]);
    assert_eq!(at_line(&evs, 2)[1]["duration_ms"], 2500);
}

#[test]
fn tool_steps_pair_by_conversation_and_index_with_outcomes_and_durations() {
    let evs = events("turn_tools");
    let conv = "5f1c2a90-7e3b-4c61-9d0a-2b8e44c1f7a3";
    let started = of_type(&evs, "tool_started");
    let ids: Vec<&str> = started.iter().map(|e| e["tool_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [format!("{conv}:3"), format!("{conv}:5"), format!("{conv}:7")]);
    assert_eq!(started[0]["kind"], "shell");
    assert_eq!(started[0]["summary"], "cargo test --quiet 2>&1 | tail -n 3", "\\u003e\\u0026 decoded");
    assert_eq!(started[1]["kind"], "read");
    assert_eq!(started[2]["kind"], "edit");
    assert!(started.iter().all(|e| e.get("synthetic").is_none()));
    let done = of_type(&evs, "tool_completed");
    assert_eq!(done.len(), 3);
    assert_eq!(done[0]["ok"], true);
    assert_eq!(done[0]["output"], "test result: FAILED. 11 passed; 1 failed\r\n");
    assert_eq!(done[0]["duration_ms"], 2481, "2.481107552 s");
    assert!(done[0].get("exit_code").is_none(), "agy reports no exit code");
    assert_eq!(done[2]["ok"], false);
    assert_eq!(done[2]["error"], "file /srv/demo/ledger/src/balanse.rs does not exist");
    assert_eq!(done[2]["duration_ms"], 2);
    // A tool left ACTIVE by a quota stop never completes, and no completion is invented.
    let evs = events("quota_failed");
    assert_eq!(of_type(&evs, "tool_started").len(), 2);
    assert_eq!(of_type(&evs, "tool_completed").len(), 1);
}

#[test]
fn a_done_line_without_its_active_line_gets_a_start_with_its_input() {
    let input = concat!(
        r#"{"event":"step_update","step_update":{"conversation_id":"c","step_index":4,"state":"DONE","step_type":"tool","tool_name":"view_file","duration_seconds":0.5,"tool_info":{"name":"view_file","parameters":{"AbsolutePath":"/a.rs"},"output":"3 lines"}}}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    assert_eq!(types_at(&evs, 1), ["tool_started", "tool_completed"]);
    assert_eq!(at_line(&evs, 1)[0]["tool_id"], "c:4");
    assert_eq!(at_line(&evs, 1)[0]["summary"], "/a.rs");
    assert_eq!(at_line(&evs, 1)[1]["duration_ms"], 500);
}

#[test]
fn per_step_usage_is_one_usage_event_per_model_call_and_the_result_is_a_session_total() {
    let evs = events("turn_tools");
    let usage = of_type(&evs, "usage");
    let steps: Vec<Value> =
        frames("turn_tools").into_iter().filter_map(|(_, f)| f["step_update"].get("usage").cloned()).collect();
    assert_eq!(usage.len(), steps.len());
    for (u, s) in usage.iter().zip(&steps) {
        assert_eq!(u["usage"]["input"], s["input_tokens"]);
        assert_eq!(u["usage"]["cache_read"], s["cache_read_tokens"]);
        assert_eq!(u["usage"]["output"], s["output_tokens"]);
        assert_eq!(u["usage"]["reasoning"], s["thinking_tokens"]);
        let context = s["input_tokens"].as_u64().unwrap() + s["cache_read_tokens"].as_u64().unwrap();
        assert_eq!(u["usage"]["context"], context);
        assert!(u["usage"].get("cache_write").is_none(), "agy reports no cache writes");
    }
    let done = &of_type(&evs, "turn_completed")[0];
    assert_eq!(done["usage_scope"], "session");
    let sum: u64 = steps.iter().map(|s| s["input_tokens"].as_u64().unwrap()).sum();
    assert_eq!(done["usage"]["input"], sum, "a fresh conversation's total is its steps' sum");
    assert_eq!(done["duration_ms"], 16842);
    assert_eq!(done["num_turns"], 1);
    // A checkpoint that was a model call has its own usage.
    let evs = events("resumed_turn");
    assert_eq!(types_at(&evs, 6), ["usage"]);
    assert_eq!(at_line(&evs, 6)[0]["usage"]["input"], 180);
}

#[test]
fn a_resumed_turn_keeps_its_cumulative_usage_but_not_the_conversation_age_as_duration() {
    let evs = events("resumed_turn");
    let done = &of_type(&evs, "turn_completed")[0];
    assert_eq!(done["num_turns"], 2);
    assert_eq!(done["usage"]["input"], 55324);
    assert!(done.get("duration_ms").is_none(), "402 s is the conversation's age: {done}");
}

#[test]
fn denied_actions_are_warning_diagnostics_keyed_by_action() {
    let evs = events("denied_and_timeout");
    let line8 = at_line(&evs, 8);
    let types: Vec<&str> = line8.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["diagnostic", "diagnostic", "turn_completed"]);
    assert_eq!(line8[0]["level"], "warning");
    assert_eq!(line8[0]["code"], "antigravity.action-denied");
    assert_eq!(line8[0]["dedupe_key"], "antigravity.action-denied|command");
    assert!(line8[0]["message"].as_str().unwrap().starts_with("RunCommand was auto-denied"));
    assert_eq!(line8[1]["dedupe_key"], "antigravity.action-denied|write_file");
    assert!(line8[2].get("result").is_none(), "an empty response is no result");
    // The denied command's step went DONE without output; the denied write ERROR with its message.
    assert_eq!(at_line(&evs, 5)[0]["ok"], true);
    assert!(at_line(&evs, 5)[0].get("output").is_none());
    assert_eq!(at_line(&evs, 7)[0]["ok"], false);
}

#[test]
fn all_zero_usage_and_zero_durations_are_no_reading() {
    let evs = events("denied_and_timeout");
    // The print-timeout run: a second conversation, a SUCCESS with nothing in it.
    assert_eq!(of_type(&evs, "session_started").len(), 2);
    let done = &at_line(&evs, 11)[0];
    assert_eq!(done["type"], "turn_completed");
    assert!(done.get("usage").is_none() && done.get("usage_scope").is_none(), "{done}");
    assert!(done.get("duration_ms").is_none(), "{done}");
    let evs = events("command_and_auth_error");
    let failed = &of_type(&evs, "turn_failed")[0];
    assert!(failed.get("usage").is_none());
}

#[test]
fn failures_are_classified() {
    let evs = events("quota_failed");
    let failed = &at_line(&evs, 11)[0];
    assert_eq!(failed["type"], "turn_failed");
    assert_eq!(failed["kind"], "usage_limit");
    assert_eq!(failed["usage"]["cache_read"], 184320, "spent usage is kept");
    assert_eq!(failed["duration_ms"], 48221);
    let evs = events("command_and_auth_error");
    assert_eq!(of_type(&evs, "turn_failed")[0]["kind"], "auth");
    let input = concat!(
        r#"{"event":"result","result":{"conversation_id":"c","status":"CANCELED","response":"","duration_seconds":1,"num_turns":1,"usage":{}}}"#,
        "\n",
        r#"{"event":"result","result":{"conversation_id":"c","status":"ERROR","response":"","error":"timeout waiting for response","num_turns":1}}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    let failed = of_type(&evs, "turn_failed");
    assert_eq!(failed[0]["error"], "agy status CANCELED");
    assert_eq!(failed[0]["kind"], "aborted");
    assert_eq!(failed[1]["kind"], "aborted");
}

#[test]
fn a_slash_command_answer_is_a_completed_turn_without_model_text() {
    let evs = events("command_and_auth_error");
    assert_eq!(types_at(&evs, 1), ["heartbeat"]);
    assert_eq!(at_line(&evs, 1)[0]["frame"], "command_result");
    assert_eq!(types_at(&evs, 2), ["turn_completed"], "the answer is no output_delta");
    assert_eq!(at_line(&evs, 2)[0]["result"], "gemini-3.8-flash-low\tGemini 3.8 Flash (Low)\n");
    assert_eq!(at_line(&evs, 2)[0]["num_turns"], 0);
    assert!(evs.iter().all(|e| e.get("session_id").is_none()), "conversation_id \"\" names no session");
    assert_eq!(at_line(&evs, 3)[0]["reason"], "not_json");
    assert_eq!(at_line(&evs, 3)[0]["dialect"], DIALECT, "stderr merged into the stream carries its dialect");
}

#[test]
fn an_unknown_event_is_unknown_with_the_event_as_its_frame() {
    let input = concat!(
        r#"{"event":"init","conversation_id":"c","init":{"cwd":"/w"}}"#,
        "\n",
        r#"{"event":"plan_update","plan_update":{"items":[]}}"#,
        "\n",
        r#"{"event":"step_update","step_update":{"conversation_id":"c","step_index":3,"state":"DONE","step_type":"brand_new"}}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    let unknown = of_type(&evs, "unknown");
    assert_eq!(unknown.len(), 2);
    assert_eq!(unknown[0]["frame"], "plan_update");
    assert_eq!(unknown[0]["reason"], "unrecognized_frame");
    assert_eq!(unknown[0]["dialect"], DIALECT);
    assert_eq!(unknown[1]["frame"], "step_update/brand_new");
    let end = run_ended(&evs);
    assert_eq!(end["unknown_frames"]["plan_update"], 1);
    assert_eq!(end["unknown_frames"]["step_update/brand_new"], 1);
}

#[test]
fn a_repeated_init_of_the_same_conversation_is_a_heartbeat() {
    let input = concat!(
        r#"{"event":"init","conversation_id":"c","init":{"cwd":"/w"}}"#,
        "\n",
        r#"{"event":"init","conversation_id":"c","init":{"cwd":"/w"}}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    assert_eq!(types_at(&evs, 1), ["session_started"]);
    assert_eq!(types_at(&evs, 2), ["heartbeat"]);
}

#[test]
fn gemini_shaped_antigravity_streams_stay_gemini() {
    // Older Antigravity builds write Gemini CLI's stream (`type` init/message/tool_use/result).
    let input = concat!(
        r#"{"type":"init","timestamp":"2026-09-01T10:00:00.000Z","session_id":"s1","model":"gemini-3-pro"}"#,
        "\n",
        r#"{"type":"message","timestamp":"2026-09-01T10:00:01.000Z","role":"assistant","content":"Hi","delta":true}"#,
        "\n",
        r#"{"type":"tool_use","timestamp":"2026-09-01T10:00:02.000Z","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"ls"}}"#,
        "\n",
        r#"{"type":"tool_result","timestamp":"2026-09-01T10:00:03.000Z","tool_id":"t1","status":"success","output":"a"}"#,
        "\n",
        r#"{"type":"result","timestamp":"2026-09-01T10:00:04.000Z","status":"success","stats":{"input_tokens":5,"output_tokens":2}}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    for e in &evs[1..evs.len() - 1] {
        assert_eq!(e["dialect"], "gemini", "{e}");
    }
    assert!(of_type(&evs, "unknown").is_empty());
}
