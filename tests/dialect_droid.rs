//! The droid dialect (Factory `droid exec --output-format stream-json`), pinned on its fixtures
//! (`fixtures/droid/`): each test names one mapping and checks it against the input.

use serde_json::{Value, json};

mod common;
use common::{at_line, of_type, output_text, run_ended, run_stdin, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("droid", name)
}

#[test]
fn every_json_line_is_droid() {
    for name in ["turn_tools", "payment_error", "final_text_only"] {
        let evs = run(name);
        for e in evs.iter().filter(|e| e.get("line").is_some()) {
            assert_eq!(e["dialect"], "droid", "{name}: {e}");
        }
        assert_eq!(run_ended(&evs)["complete"], true, "{name}");
    }
}

#[test]
fn init_with_reasoning_effort_is_droid_and_wins_over_claude_tools_mark() {
    let evs = run("turn_tools");
    let s = &at_line(&evs, 1)[0];
    assert_eq!(s["type"], "session_started");
    assert_eq!(s["model"], "claude-sonnet-4-6");
    assert_eq!(s["cwd"], "/home/ana/invoice");
    assert_eq!(s["tools"].as_array().unwrap().len(), 11);
    // Without `reasoning_effort` the init ties with Claude's: a fresh stream reads it as Claude.
    let bare = r#"{"type":"system","subtype":"init","cwd":"/x","session_id":"s","tools":["Read"],"model":"m"}"#;
    let evs = run_stdin(&[], &format!("{bare}\n"));
    assert_eq!(at_line(&evs, 1)[0]["dialect"], "claude");
    // … and a droid stream keeps it droid (the second init of a session is a heartbeat).
    let evs = run("final_text_only");
    assert_eq!(types_at(&evs, 2), ["session_started"]);
    assert_eq!(types_at(&evs, 9), ["heartbeat"]);
}

#[test]
fn repeated_reasoning_is_written_once() {
    let evs = run("turn_tools");
    assert_eq!(types_at(&evs, 3), ["reasoning"]);
    assert_eq!(at_line(&evs, 3)[0]["text"], "Run the tests to see the failure.");
    assert_eq!(types_at(&evs, 4), ["heartbeat"]);
}

#[test]
fn tools_kinds_plan_and_failure() {
    let evs = run("turn_tools");
    let kinds: Vec<(&str, &str)> = of_type(&evs, "tool_started")
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("TodoWrite", "plan"), ("Execute", "shell"), ("Read", "read"), ("Edit", "edit")]);
    assert_eq!(
        at_line(&evs, 5)[1]["items"],
        json!([{"text": "Reproduce the failure", "status": "in_progress"}, {"text": "Fix rounding", "status": "pending"}])
    );
    assert_eq!(at_line(&evs, 7)[0]["summary"], "cargo test -q 2>&1 | tail -4");
    assert_eq!(at_line(&evs, 8)[0]["ok"], true);
    assert!(at_line(&evs, 8)[0].get("exit_code").is_none(), "droid reports no exit code");
    let failed = &at_line(&evs, 12)[0];
    assert_eq!(
        (failed["ok"].as_bool(), failed["error"].as_str()),
        (Some(false), Some("Error: file not found: /home/ana/invoice/src/totals.rs"))
    );
    assert!(failed.get("output").is_none());
    let evs = run("final_text_only");
    assert_eq!(at_line(&evs, 3)[0]["kind"], "mcp");
    assert_eq!(at_line(&evs, 4)[0]["output"], r##"{"count":2,"items":["#12","#31"]}"##, "a non-string value as JSON");
    assert_eq!(
        at_line(&evs, 5)[1]["items"],
        json!([{"text": "Triage #12", "status": "pending"}, {"text": "Close #31", "status": "completed"}])
    );
}

#[test]
fn final_text_is_written_once() {
    // The assistant message is written; the completion's repeat of it is not.
    let evs = run("turn_tools");
    assert_eq!(of_type(&evs, "output_delta").len(), 1);
    assert_eq!(at_line(&evs, 13)[0]["message_id"], "m-a9");
    assert_eq!(types_at(&evs, 14), ["turn_completed"]);
    // No message in the turn: the completion's final text is the output.
    let evs = run("final_text_only");
    assert_eq!(types_at(&evs, 8), ["output_delta", "turn_completed"]);
    assert_eq!(output_text(&evs), "Two open issues: #12 and #31.");
}

#[test]
fn completion_usage_is_the_turns() {
    let evs = run("turn_tools");
    let done = &at_line(&evs, 14)[0];
    assert_eq!(done["usage"], json!({"input": 41, "cache_read": 48220, "cache_write": 9310, "output": 612}));
    assert_eq!((done["duration_ms"].as_u64(), done["num_turns"].as_u64()), (Some(16610), Some(5)));
    assert_eq!(done["at"], "2026-09-13T12:00:16.610Z");
    assert!(done["result"].as_str().unwrap().starts_with("`round` truncates"));
    assert!(of_type(&evs, "usage").is_empty(), "droid reports no per-request usage");
    let evs = run("final_text_only");
    assert_eq!(at_line(&evs, 8)[1]["usage"]["reasoning"], 24);
}

#[test]
fn agent_loop_error_fails_the_turn_other_errors_are_diagnostics() {
    let evs = run("payment_error");
    let failed = &at_line(&evs, 3)[0];
    assert_eq!(failed["type"], "turn_failed");
    assert_eq!(failed["kind"], "usage_limit");
    let stderr = &at_line(&evs, 4)[0];
    assert_eq!((stderr["reason"].as_str(), stderr["dialect"].as_str()), (Some("not_json"), Some("droid")));
    let evs = run("final_text_only");
    assert_eq!(
        (at_line(&evs, 7)[0]["type"].as_str(), at_line(&evs, 7)[0]["code"].as_str()),
        (Some("diagnostic"), Some("droid.error"))
    );
    assert_eq!(at_line(&evs, 10)[0]["code"], "droid.mcp");
}

#[test]
fn a_bare_error_in_a_codex_stream_stays_codex() {
    let input = format!(
        "{}\n{}\n",
        r#"{"type":"thread.started","thread_id":"t1"}"#, r#"{"type":"error","message":"Reconnecting... 1/5"}"#
    );
    let evs = run_stdin(&[], &input);
    assert_eq!(at_line(&evs, 2)[0]["dialect"], "codex");
}
