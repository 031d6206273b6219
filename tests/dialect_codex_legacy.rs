//! The `codex-legacy` dialect (Codex `exec --json` before the thread/item format) on its
//! fixtures, `fixtures/codex-legacy/`.
//!
//! Each `trap_*` test pins one mapping or trap: the untyped config and prompt lines, the
//! submission id that is not a session id, tools paired by `call_id` from begin/end events, the
//! two `token_count` shapes, `error` as the only failure frame, and text exactly once.

use serde_json::{Value, json};

mod common;
use common::{at_line, bin, fixture, of_type, types_at};

const DIALECT: &str = "codex-legacy";

fn events(name: &str) -> Vec<Value> {
    common::events_of(DIALECT, name)
}

/// The `msg`s of a fixture with their line numbers.
fn msgs(name: &str, ty: &str) -> Vec<(u64, Value)> {
    common::input_frames(&fixture(DIALECT, name))
        .into_iter()
        .filter(|(_, v)| v["msg"]["type"] == ty)
        .map(|(n, v)| (n, v["msg"].clone()))
        .collect()
}

const NAMES: [&str; 2] = ["errors_and_oddities", "exec_session_tools"];

#[test]
fn every_fixture_is_detected_as_codex_legacy_from_its_config_line() {
    for name in NAMES {
        let out = bin().arg("detect").arg(fixture(DIALECT, name)).output().expect("running agentnorm detect");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("codex-legacy\t"), "{name}");
        let evs = events(name);
        for e in &evs[1..evs.len() - 1] {
            assert_eq!(e["dialect"], "codex-legacy", "{name}: {e}");
            assert!(e.get("at").is_none(), "legacy frames carry no time");
        }
    }
}

#[test]
fn trap_config_and_prompt_lines() {
    for name in NAMES {
        let evs = events(name);
        assert_eq!(types_at(&evs, 1), ["heartbeat"], "{name}");
        assert_eq!(at_line(&evs, 1)[0]["frame"], "config");
        assert_eq!(types_at(&evs, 2), ["user_message"], "{name}");
    }
    let evs = events("exec_session_tools");
    assert_eq!(at_line(&evs, 2)[0]["text"], "Rename the `fmt_date` helper to `format_date`\nand fix its callers.");
}

#[test]
fn trap_the_submission_id_is_no_session_id() {
    // Without `session_configured` nothing names a session.
    let evs = events("errors_and_oddities");
    assert!(evs.iter().all(|e| e.get("session_id").is_none()));
    assert!(of_type(&evs, "session_started").is_empty());
    // With it, the session starts there; the lines before it have none.
    let evs = events("exec_session_tools");
    let s = of_type(&evs, "session_started");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["line"], 3);
    assert_eq!(s[0]["model"], "o4-mini");
    let id = "6f0c2a1e-93b4-4d55-8e21-0a9b8c7d6e5f";
    for e in &evs[1..evs.len() - 1] {
        let line = e["line"].as_u64().unwrap();
        assert_eq!(e.get("session_id").and_then(Value::as_str), (line >= 3).then_some(id), "line {line}");
    }
}

#[test]
fn trap_text_exactly_once_and_turns() {
    for name in NAMES {
        let evs = events(name);
        let expected: String =
            msgs(name, "agent_message").iter().map(|(_, m)| m["message"].as_str().unwrap().to_owned()).collect();
        let got: String = of_type(&evs, "output_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(got, expected, "{name}");
        assert_eq!(of_type(&evs, "turn_started").len(), msgs(name, "task_started").len(), "{name}");
        // Deltas are liveness only.
        for (n, _) in msgs(name, "agent_message_delta").into_iter().chain(msgs(name, "agent_reasoning_delta")) {
            assert_eq!(types_at(&evs, n), ["heartbeat"], "{name}:{n}");
        }
    }
    let evs = events("exec_session_tools");
    let done = of_type(&evs, "turn_completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["result"], "Renamed `fmt_date` to `format_date`; one unrelated test still fails.");
    assert_eq!(evs.last().unwrap()["complete"], true);
}

#[test]
fn trap_flat_token_count_is_one_request() {
    let evs = events("exec_session_tools");
    let u = at_line(&evs, 8)[0];
    assert_eq!(u["type"], "usage");
    // 2210 input of which 1920 cached; reasoning is inside output, never added.
    assert_eq!(u["usage"], json!({"input": 290, "cache_read": 1920, "output": 140, "reasoning": 64, "context": 2210}));
    assert!(u.get("context_window").is_none());
}

#[test]
fn trap_info_token_count_is_folded_like_a_rollout() {
    let evs = events("exec_session_tools");
    assert_eq!(types_at(&evs, 21), ["usage", "rate_limit", "rate_limit"]);
    let u = at_line(&evs, 21)[0];
    assert_eq!(u["usage"], json!({"input": 630, "cache_read": 2560, "output": 120, "reasoning": 32, "context": 3190}));
    assert_eq!(u["context_window"], 200000);
    let windows: Vec<&str> = at_line(&evs, 21)[1..].iter().map(|e| e["window"].as_str().unwrap()).collect();
    assert_eq!(windows, ["five_hour", "seven_day"]);
    assert_eq!(at_line(&evs, 21)[1]["resets_at"], "2025-10-09T08:53:20.000Z");
    // The same totals and readings again: nothing new.
    assert_eq!(types_at(&evs, 22), ["heartbeat"]);
    assert_eq!(of_type(&evs, "usage").len(), 2);
}

#[test]
fn trap_tools_pair_by_call_id() {
    let evs = events("exec_session_tools");
    let started = of_type(&evs, "tool_started");
    let completed = of_type(&evs, "tool_completed");
    assert_eq!(started.len(), 6);
    assert_eq!(completed.len(), 6);
    for (s, c) in started.iter().zip(&completed) {
        assert_eq!(s["tool_id"], c["tool_id"]);
        assert_eq!(s["name"], c["name"]);
        assert!(s["line"].as_u64() < c["line"].as_u64());
    }
    let by_id = |id: &str| completed.iter().find(|c| c["tool_id"] == id).copied().unwrap();
    // exec: exit code, output, duration from a Rust Duration.
    let grep = by_id("call_q_01");
    assert_eq!(
        (grep["ok"].as_bool(), grep["exit_code"].as_i64(), grep["duration_ms"].as_u64()),
        (Some(true), Some(0), Some(31))
    );
    let test = by_id("call_q_03");
    assert_eq!((test["ok"].as_bool(), test["exit_code"].as_i64()), (Some(false), Some(101)));
    assert_eq!(test["output"], "running 3 tests\ntest dates::leap ... FAILED\n", "stdout then stderr");
    assert_eq!(test["duration_ms"], 4250);
    assert_eq!(
        started[0]["input"],
        json!({"command": ["bash", "-lc", "grep -rn fmt_date src"], "cwd": "/home/ana/code/quill"})
    );
    assert_eq!(started[0]["summary"], "grep -rn fmt_date src");
    // patch: the changes as input (nulls inside kept), the paths as summary.
    let patch = started.iter().find(|s| s["tool_id"] == "call_q_02").unwrap();
    assert_eq!(patch["kind"], "edit");
    assert_eq!(patch["summary"], "/home/ana/code/quill/src/util.rs, /home/ana/code/quill/src/main.rs");
    assert!(patch["input"]["changes"]["/home/ana/code/quill/src/util.rs"]["update"]["move_path"].is_null());
    assert_eq!(by_id("call_q_02")["ok"], true);
    // MCP: `Ok` with `isError` fails, `Err` fails with its message.
    let locked = by_id("call_q_04");
    assert_eq!((locked["ok"].as_bool(), locked["error"].as_str()), (Some(false), Some("issue 42 is locked")));
    assert_eq!(locked["kind"], "mcp");
    let timeout = by_id("call_q_05");
    assert_eq!(
        (timeout["ok"].as_bool(), timeout["error"].as_str()),
        (Some(false), Some("tool call timed out after 60s"))
    );
    let mcp = started.iter().find(|s| s["tool_id"] == "call_q_04").unwrap();
    assert_eq!(mcp["name"], "add_comment");
    assert_eq!(mcp["summary"], "tracker/add_comment");
    assert_eq!(by_id("ws_q_06")["kind"], "web_search");
}

#[test]
fn trap_repeated_begin_and_end_without_begin() {
    let evs = events("errors_and_oddities");
    assert_eq!(types_at(&evs, 8), ["tool_started"]);
    assert_eq!(types_at(&evs, 9), ["heartbeat"], "a second begin of a started call");
    assert_eq!(types_at(&evs, 10), ["tool_started", "tool_completed"]);
    assert_eq!(at_line(&evs, 10)[0]["synthetic"], true);
    assert_eq!(at_line(&evs, 10)[0]["name"], "exec_command");
    // The earliest MCP shape (server/tool on the event), completed under the begin's name.
    assert_eq!(at_line(&evs, 11)[0]["summary"], "notes/append");
    assert_eq!(at_line(&evs, 12)[0]["name"], "append");
    assert_eq!(at_line(&evs, 12)[0]["output"], "ok");
}

#[test]
fn trap_error_is_the_only_failure_frame() {
    let evs = events("errors_and_oddities");
    let failed = of_type(&evs, "turn_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["line"], 17);
    assert_eq!(failed[0]["kind"], "usage_limit");
    // Without `message` it is malformed, never an empty error.
    let bad = at_line(&evs, 16)[0];
    assert_eq!((bad["reason"].as_str(), bad["frame"].as_str()), (Some("malformed_frame"), Some("msg/error")));
    // A retried stream error is a warning, not the end of the turn.
    let d = at_line(&evs, 6)[0];
    assert_eq!((d["type"].as_str(), d["level"].as_str()), (Some("diagnostic"), Some("warning")));
    assert_eq!(of_type(&evs, "interrupt")[0]["reason"], "interrupted");
    assert_eq!(of_type(&evs, "needs_input")[0]["prompt"], "rm -rf build");
    let ended = evs.last().unwrap();
    assert_eq!(ended["unknown"], 2);
    assert_eq!(ended["unknown_frames"], json!({"msg/quantum_event": 1}));
}

#[test]
fn trap_plan_update_gives_plan_updated() {
    let evs = events("exec_session_tools");
    assert_eq!(types_at(&evs, 9), ["plan_updated"]);
    assert_eq!(
        at_line(&evs, 9)[0]["items"],
        json!([{"text": "Rename the definition", "status": "in_progress"}, {"text": "Update callers", "status": "pending"}])
    );
}
