//! The OpenCode dialect (`opencode run --format json`), pinned on its fixtures
//! (`fixtures/opencode/`): each `trap_*` test names one mapping of SPEC §3 / §4 or one trap of
//! the CLI, and checks it against the input.

use serde_json::{Value, json};

mod common;
use common::{at_line, fixture, of_type, output_text, root, run_ended, run_path, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("opencode", name)
}

fn input_frames(name: &str) -> Vec<Value> {
    common::input_frames(&fixture("opencode", name)).into_iter().map(|(_, v)| v).collect()
}

/// Sums one figure over events' `usage`.
fn sum(evs: &[&Value], key: &str) -> u64 {
    evs.iter().map(|e| e["usage"][key].as_u64().unwrap_or(0)).sum()
}

#[test]
fn trap_every_step_is_a_usage_and_the_turn_sums_its_steps() {
    let evs = run("multi_step_turn");
    let usage = of_type(&evs, "usage");
    assert_eq!(usage.len(), 2, "one usage per step_finish, the tool-calls step included");
    // SPEC §4 OpenCode row: output = output + reasoning; context = input + cache.read + cache.write.
    assert_eq!(
        usage[0]["usage"],
        json!({"input": 9120, "cache_read": 0, "cache_write": 2048, "output": 96, "reasoning": 32, "context": 11168})
    );
    assert_eq!(usage[0]["message_id"], "msg_c41f0a9e1001AbCdEfGhIjKl");
    assert_eq!(usage[1]["usage"]["context"], 310 + 11168);
    let done = of_type(&evs, "turn_completed");
    assert_eq!(done.len(), 1, "only the step that does not call tools ends the turn");
    assert_eq!(done[0]["line"], 7);
    for key in ["input", "cache_read", "cache_write", "output", "reasoning"] {
        assert_eq!(done[0]["usage"][key].as_u64(), Some(sum(&usage, key)), "{key}");
    }
    assert!(done[0]["usage"].get("context").is_none(), "a turn sum is no context size");
    let cost = done[0]["cost_usd"].as_f64().unwrap();
    assert!((cost - (0.00412 + 0.00088)).abs() < 1e-12, "cost summed over the steps: {cost}");
    assert_eq!(done[0]["stop_reason"], "stop");
    assert_eq!(types_at(&evs, 3), ["usage"], "a tool-calls step ends no turn");
    assert_eq!(types_at(&evs, 7), ["usage", "turn_completed"]);
    assert_eq!(run_ended(&evs)["complete"], true);
}

#[test]
fn trap_turn_started_at_the_first_step_only_and_done_after_completion_is_a_heartbeat() {
    let evs = run("multi_step_turn");
    assert_eq!(types_at(&evs, 1), ["session_started", "turn_started"]);
    assert_eq!(types_at(&evs, 4), ["heartbeat"]);
    assert_eq!(at_line(&evs, 4)[0]["frame"], "step_start");
    assert_eq!(types_at(&evs, 8), ["heartbeat"]);
    assert_eq!(at_line(&evs, 8)[0]["frame"], "done");
    assert_eq!(of_type(&evs, "turn_started").len(), 1);
}

#[test]
fn trap_text_and_reasoning_exactly_once_with_message_ids() {
    let evs = run("multi_step_turn");
    let expected: String = input_frames("multi_step_turn")
        .iter()
        .filter(|f| f["type"] == "text")
        .map(|f| f["part"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(output_text(&evs), expected);
    let delta = of_type(&evs, "output_delta")[0];
    assert_eq!(delta["message_id"], "msg_c41f0b3d2001MnOpQrStUvWx");
    let reasoning = of_type(&evs, "reasoning");
    assert_eq!(reasoning.len(), 1);
    assert_eq!(reasoning[0]["text"], "All 42 tests pass; summarise.");
}

#[test]
fn trap_tool_use_line_makes_start_and_completion_paired_by_call_id() {
    let evs = run("multi_step_turn");
    assert_eq!(types_at(&evs, 2), ["tool_started", "tool_completed"]);
    let (start, end) = (at_line(&evs, 2)[0], at_line(&evs, 2)[1]);
    assert_eq!(start["tool_id"], "call_Qm2Xs8PzR1", "callID, not the part id");
    assert_eq!(end["tool_id"], start["tool_id"]);
    assert_eq!((start["name"].as_str(), start["kind"].as_str()), (Some("bash"), Some("shell")));
    assert_eq!(start["input"], json!({"command": "cargo test --quiet", "description": "Run the test suite"}));
    assert_eq!(start["summary"], "cargo test --quiet");
    assert!(start.get("synthetic").is_none());
    assert_eq!(
        (end["ok"].as_bool(), end["exit_code"].as_i64(), end["duration_ms"].as_u64()),
        (Some(true), Some(0), Some(1450))
    );
    assert_eq!(end["output"], "test result: ok. 42 passed\n");
}

#[test]
fn trap_tool_errors_exit_codes_todos_and_a_turn_ended_without_reason() {
    let evs = run("tool_errors_and_todos");
    assert_eq!(types_at(&evs, 2), ["tool_started", "plan_updated", "tool_completed"]);
    assert_eq!(
        at_line(&evs, 2)[1]["items"],
        json!([
            {"text": "Reproduce the crash", "status": "completed"},
            {"text": "Write a failing test", "status": "in_progress"},
            {"text": "Fix the parser", "status": "pending"}
        ])
    );
    assert_eq!(at_line(&evs, 2)[0]["kind"], "plan");
    assert_eq!(at_line(&evs, 3)[0]["summary"], "/work/app/src/parser.rs", "filePath summarises a read");
    let edit = at_line(&evs, 4)[1];
    assert_eq!((edit["ok"].as_bool(), edit["error"].as_str()), (Some(false), Some("oldString not found in content")));
    assert!(edit.get("output").is_none());
    let build = at_line(&evs, 5)[1];
    assert_eq!(
        (build["ok"].as_bool(), build["exit_code"].as_i64(), build["error"].as_str()),
        (Some(false), Some(101), Some("exit code 101")),
        "`exitCode` read, and a non-zero exit fails the call"
    );
    assert_eq!(at_line(&evs, 6)[0]["kind"], "fetch");
    assert_eq!(at_line(&evs, 6)[0]["summary"], "https://doc.rust-lang.org/error_codes/E0425.html");
    // No `reason` on the step_finish: it ends the turn.
    assert_eq!(types_at(&evs, 7), ["usage", "turn_completed"]);
    let done = at_line(&evs, 7)[1];
    assert!(done.get("stop_reason").is_none());
    assert_eq!(done["cost_usd"], 0.0031);
    let started: Vec<&str> = of_type(&evs, "tool_started").iter().map(|e| e["tool_id"].as_str().unwrap()).collect();
    let completed: Vec<&str> = of_type(&evs, "tool_completed").iter().map(|e| e["tool_id"].as_str().unwrap()).collect();
    assert_eq!(started, completed);
}

#[test]
fn trap_session_started_once_per_new_session_id_and_errors_fail_the_turn() {
    let evs = run("error_then_done_without_finish");
    let sessions: Vec<(u64, &str)> = of_type(&evs, "session_started")
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["session_id"].as_str().unwrap()))
        .collect();
    assert_eq!(sessions, [(1, "ses_authfail01"), (3, "ses_doneonly02")]);
    for e in &evs[1..evs.len() - 1] {
        let n = e["line"].as_u64().unwrap();
        let want = if n < 3 { "ses_authfail01" } else { "ses_doneonly02" };
        assert_eq!(e["session_id"], want, "{e}");
    }
    let failed = of_type(&evs, "turn_failed");
    assert_eq!(failed[0]["error"], "Invalid API key for provider anthropic");
    assert_eq!(failed[0]["kind"], "auth");
    assert_eq!(failed[1]["kind"], "aborted");
    // `done` completes a turn that never had its step_finish.
    assert_eq!(types_at(&evs, 5), ["turn_completed"]);
    assert!(at_line(&evs, 5)[0].get("usage").is_none());
    assert!(of_type(&evs, "usage").is_empty());
}

#[test]
fn trap_millisecond_timestamps_become_rfc3339() {
    let evs = run("multi_step_turn");
    let input = input_frames("multi_step_turn");
    assert_eq!(input[0]["timestamp"], 1772620800000u64);
    assert_eq!(at_line(&evs, 1)[0]["at"], "2026-03-04T10:40:00.000Z");
    assert_eq!(at_line(&evs, 2)[0]["at"], "2026-03-04T10:40:01.900Z");
}

#[test]
fn trap_oddities_and_a_cut_stream() {
    let evs = run("oddities_cut_stream");
    // Python-style separators parse like any JSON.
    assert_eq!(types_at(&evs, 1), ["session_started", "turn_started"]);
    let unknown: Vec<(u64, &str)> =
        of_type(&evs, "unknown").iter().map(|e| (e["line"].as_u64().unwrap(), e["reason"].as_str().unwrap())).collect();
    assert_eq!(unknown, [(2, "unrecognized_frame"), (3, "malformed_frame")]);
    assert_eq!(types_at(&evs, 4), ["heartbeat"], "an empty text part writes no output_delta");
    // No callID: the part id pairs the call; an empty title leaves the per-kind summary.
    let glob = at_line(&evs, 5);
    assert_eq!((glob[0]["tool_id"].as_str(), glob[1]["tool_id"].as_str()), (Some("prt_c4"), Some("prt_c4")));
    assert_eq!(glob[0]["summary"], "**/*.toml");
    assert!(glob[1].get("exit_code").is_none());
    // A tool-calls step without tokens: no usage, no turn end.
    assert_eq!(types_at(&evs, 6), ["heartbeat"]);
    assert!(of_type(&evs, "turn_completed").is_empty());
    let end = run_ended(&evs);
    assert_eq!((end["complete"].as_bool(), end["lines"].as_u64()), (Some(false), Some(8)));
    assert_eq!(end["unknown_frames"], json!({"permission_asked": 1}));
}

#[test]
#[ignore = "reads ../shared/corpus; .ci/run runs it with --ignored"]
fn corpus_turn_sums() {
    let dir = root().join("../shared/corpus/f_opencode");
    assert!(dir.is_dir(), "../shared/corpus is not present");
    let evs = run_path(&dir.join("Saadkhalid913__repo-explainer__src-v3_output.txt.jsonl"));
    assert_eq!(of_type(&evs, "usage").len(), 8);
    let done = of_type(&evs, "turn_completed");
    assert_eq!(done.len(), 1);
    assert_eq!(
        done[0]["usage"],
        json!({"input": 82010, "cache_read": 6090, "cache_write": 0, "output": 4834, "reasoning": 1716})
    );
    assert!((done[0]["cost_usd"].as_f64().unwrap() - 0.0558115).abs() < 1e-9);
    let evs = run_path(&dir.join("banteg__takopi__tests_fixtures_opencode_stream_success.jsonl"));
    let done = of_type(&evs, "turn_completed")[0];
    assert_eq!(
        done["usage"],
        json!({"input": 22443, "cache_read": 21415, "cache_write": 0, "output": 118, "reasoning": 0})
    );
    assert_eq!(evs[1]["at"], "2025-12-29T19:20:59.338Z");
}

// ------------------------------------------------------------------------------------------------
// A provider's call ids reused within a stream (issue 12 drift): `reused_call_id.jsonl`.
// ------------------------------------------------------------------------------------------------

#[test]
fn a_call_failing_under_a_reused_call_id_keeps_its_error() {
    let name = "reused_call_id";
    let evs = run(name);
    let frames = common::input_frames(&fixture("opencode", name));
    let calls: Vec<&(u64, Value)> = frames.iter().filter(|(_, v)| v["type"] == "tool_use").collect();
    assert_eq!(calls.len(), 2);
    let (first, second) = (&calls[0].1["part"], &calls[1].1["part"]);
    assert_eq!(first["callID"], second["callID"], "the fixture reuses the callID");
    assert_ne!(first["id"], second["id"]);
    // The first use keeps the callID, the second is keyed by its own part id and keeps its error.
    let done = of_type(&evs, "tool_completed");
    assert_eq!(done.len(), 2, "{done:?}");
    assert_eq!(done[0]["tool_id"], first["callID"]);
    assert_eq!(done[1]["tool_id"], second["id"]);
    assert_eq!(done[1]["ok"], false);
    assert_eq!(done[1]["error"], second["state"]["error"]);
    let starts = of_type(&evs, "tool_started");
    assert_eq!(starts.len(), 2);
    assert_eq!((starts[1]["tool_id"].clone(), starts[1]["line"].as_u64()), (second["id"].clone(), Some(calls[1].0)));
    assert!(starts[1].get("synthetic").is_none());
}

#[test]
fn the_same_part_printed_twice_is_still_one_call() {
    let line = r#"{"type":"tool_use","timestamp":1796000000000,"sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"call_0","tool":"bash","state":{"status":"completed","input":{"command":"ls"},"output":"a","metadata":{"exit":0},"time":{"start":1,"end":2}}}}"#;
    let evs = common::run_stdin(&[], &format!("{line}\n{line}\n"));
    assert_eq!(of_type(&evs, "tool_completed").len(), 1, "{evs:?}");
    assert_eq!(of_type(&evs, "tool_started").len(), 1);
}

#[test]
fn auto_rejected_permissions_are_one_warning() {
    let evs = run("reused_call_id");
    let frames = input_frames("reused_call_id");
    let done = frames.iter().find(|v| v["type"] == "done").unwrap();
    let mut names: Vec<String> =
        done["rejected"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect();
    names.sort();
    let d = of_type(&evs, "diagnostic");
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0]["level"].as_str(), d[0]["code"].as_str()),
        (Some("warning"), Some("opencode.permission.rejected"))
    );
    assert_eq!(d[0]["plugins"], json!(names));
    assert_eq!(d[0]["dedupe_key"], format!("opencode.permission.rejected|{}", names.join("|")));
}
