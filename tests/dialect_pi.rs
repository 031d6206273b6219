//! The pi dialect (`pi --mode json`), pinned on its fixtures (`fixtures/pi/`): the 0.5x format
//! (whole-message snapshots on every `message_update`), the 1.x delta-only format, a retried
//! run, and a hand-assembled stream without a header. Each test names one mapping and checks
//! it against the input.

use serde_json::{Value, json};

mod common;
use common::{at_line, fixture, of_type, output_text, run_ended, run_stdin, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("pi", name)
}

fn input_frames(name: &str) -> Vec<(u64, Value)> {
    common::input_frames(&fixture("pi", name))
}

#[test]
fn every_line_is_pi_and_nothing_is_unknown() {
    for name in ["v058_turn_tools", "v1_delta_only", "v1_error_retry"] {
        let evs = run(name);
        assert_eq!(run_ended(&evs)["unknown"], 0, "{name}");
        assert_eq!(run_ended(&evs)["complete"], true, "{name}");
        for e in evs.iter().filter(|e| e.get("line").is_some()) {
            assert_eq!(e["dialect"], "pi", "{name}: {e}");
        }
    }
}

#[test]
fn header_is_the_session_and_a_repeated_header_a_heartbeat() {
    let evs = run("v1_delta_only");
    let s = &of_type(&evs, "session_started")[0];
    assert_eq!(s["line"], 1);
    assert_eq!(s["session_id"], "019a4c1e-7b22-7d90-b3f5-2e61c08d9a47");
    assert_eq!(s["cwd"], "/home/dev/site");
    assert_eq!(s["at"], "2026-10-21T14:03:09.551Z");
    let evs = run("v05_no_header_partial");
    assert_eq!(types_at(&evs, 14), ["session_started"]);
    assert_eq!(types_at(&evs, 15), ["heartbeat"]);
}

#[test]
fn agent_run_is_the_turn_and_pi_turns_are_heartbeats() {
    let evs = run("v058_turn_tools");
    assert_eq!(types_at(&evs, 2), ["turn_started"]);
    assert_eq!(of_type(&evs, "turn_started").len(), 1);
    for (n, f) in input_frames("v058_turn_tools") {
        if f["type"] == "turn_start" || f["type"] == "turn_end" {
            assert_eq!(types_at(&evs, n), ["heartbeat"], "line {n}");
        }
    }
    let done = of_type(&evs, "turn_completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["num_turns"], 3, "three turn_end frames in the run");
    assert_eq!(done[0]["stop_reason"], "stop");
}

#[test]
fn deltas_and_the_final_message_give_the_text_exactly_once() {
    // 0.5x: `message_update` repeats the whole message; only `delta`s are written, and the
    // `message_end` adds nothing that was streamed.
    let evs = run("v058_turn_tools");
    let deltas: String = input_frames("v058_turn_tools")
        .iter()
        .filter(|(_, f)| f["assistantMessageEvent"]["type"] == "text_delta")
        .map(|(_, f)| f["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(output_text(&evs), deltas);
    assert_eq!(output_text(&evs), "Running the tests first.Fixed: the loop stopped one early (`i < n - 1` → `i < n`).");
    assert_eq!(types_at(&evs, 18), ["usage"], "message_end: usage only, its text was streamed");
    let reasoning: Vec<&str> = of_type(&evs, "reasoning").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(reasoning, ["Count loop uses < len-1;", " run tests first."]);
    // A final message longer than its deltas: the rest of the block is written at the end.
    let evs = run("v05_no_header_partial");
    assert_eq!(output_text(&evs), "It runs the linter and the unit tests.Done.");
    assert_eq!(at_line(&evs, 6)[0]["text"], " the linter and the unit tests.");
    assert!(of_type(&evs, "reasoning").is_empty(), "a redacted thinking block is not written");
}

#[test]
fn v1_message_update_usage_is_no_usage_event() {
    let evs = run("v1_delta_only");
    for (n, f) in input_frames("v1_delta_only") {
        if f["type"] == "message_update" {
            assert!(f.get("usage").is_some() && f.get("message").is_none(), "the 1.x shape");
            assert!(!types_at(&evs, n).contains(&"usage".to_owned()), "line {n}");
        }
    }
    let usage = of_type(&evs, "usage");
    assert_eq!(usage.len(), 2);
    assert_eq!(
        usage[0]["usage"],
        json!({"input": 1841, "cache_read": 3328, "cache_write": 0, "output": 96, "context": 5169})
    );
    assert_eq!(usage[0]["model"], "gpt-5.2-codex");
    let done = &of_type(&evs, "turn_completed")[0];
    assert_eq!(done["usage"], json!({"input": 1968, "cache_read": 8448, "cache_write": 0, "output": 115}));
    assert_eq!(done["cost_usd"], 0.006072);
    assert_eq!(done["result"], "Added `public/robots.txt` disallowing `/drafts`.");
    assert_eq!(types_at(&evs, 28), ["heartbeat"], "agent_settled");
}

#[test]
fn run_usage_and_cost_are_the_sums_of_its_requests() {
    let evs = run("v058_turn_tools");
    let mut sum = [0u64; 4];
    let mut cost = 0.0;
    for (_, f) in input_frames("v058_turn_tools") {
        if f["type"] == "message_end" && f["message"]["role"] == "assistant" {
            let u = &f["message"]["usage"];
            for (i, k) in ["input", "cacheRead", "cacheWrite", "output"].iter().enumerate() {
                sum[i] += u[k].as_u64().unwrap();
            }
            cost += u["cost"]["total"].as_f64().unwrap();
        }
    }
    let done = &of_type(&evs, "turn_completed")[0];
    assert_eq!(done["usage"], json!({"input": sum[0], "cache_read": sum[1], "cache_write": sum[2], "output": sum[3]}));
    assert!((done["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9);
    for u in of_type(&evs, "usage") {
        let u = &u["usage"];
        let context =
            u["input"].as_u64().unwrap() + u["cache_read"].as_u64().unwrap() + u["cache_write"].as_u64().unwrap();
        assert_eq!(u["context"], context);
    }
}

#[test]
fn tools_pair_with_kinds_and_a_failed_bash_has_its_exit_code() {
    let evs = run("v058_turn_tools");
    let started = of_type(&evs, "tool_started");
    let kinds: Vec<(&str, &str)> =
        started.iter().map(|e| (e["name"].as_str().unwrap(), e["kind"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("bash", "shell"), ("read", "read"), ("edit", "edit")]);
    assert_eq!(started[0]["summary"], "npm test --silent");
    assert_eq!(started[0]["input"], json!({"command": "npm test --silent"}));
    let bash = &at_line(&evs, 21)[0];
    assert_eq!((bash["ok"].as_bool(), bash["exit_code"].as_i64()), (Some(false), Some(1)));
    assert!(bash["error"].as_str().unwrap().ends_with("Command exited with code 1"));
    assert!(bash.get("output").is_none() && bash.get("duration_ms").is_none());
    let read = &at_line(&evs, 35)[0];
    assert_eq!(read["ok"], true);
    assert!(read.get("exit_code").is_none());
    // The toolResult message copies of each result are heartbeats.
    assert_eq!(types_at(&evs, 22), ["heartbeat"]);
    assert_eq!(types_at(&evs, 23), ["heartbeat"]);
    // An extension's tool is `other`; its failure has no exit code.
    let evs = run("v05_no_header_partial");
    assert_eq!(at_line(&evs, 9)[0]["kind"], "other");
    assert_eq!(at_line(&evs, 10)[0]["error"], "lint_report: extension not loaded");
    assert!(at_line(&evs, 10)[0].get("exit_code").is_none());
}

#[test]
fn will_retry_keeps_the_turn_open_and_the_abort_fails_it() {
    let evs = run("v1_error_retry");
    assert_eq!(of_type(&evs, "turn_started").len(), 1, "the retry continues the turn");
    assert_eq!(types_at(&evs, 9), ["heartbeat"], "agent_end willRetry:true");
    assert_eq!(types_at(&evs, 11), ["heartbeat"], "the retry's agent_start");
    assert_eq!(types_at(&evs, 7), ["heartbeat"], "an all-zero usage is no request");
    let retry = &at_line(&evs, 10)[0];
    assert_eq!(
        (retry["type"].as_str(), retry["level"].as_str(), retry["code"].as_str()),
        (Some("diagnostic"), Some("warning"), Some("pi.auto-retry"))
    );
    let failed = &of_type(&evs, "turn_failed")[0];
    assert_eq!(failed["line"], 18);
    assert_eq!((failed["error"].as_str(), failed["kind"].as_str()), (Some("Request was aborted"), Some("aborted")));
    assert_eq!(at_line(&evs, 19)[0]["code"], "pi.auto-retry-failed");
    assert!(of_type(&evs, "turn_completed").is_empty());
}

#[test]
fn without_will_retry_an_error_run_fails_and_the_retry_is_a_new_turn() {
    let input = [
        r#"{"type":"agent_start"}"#,
        r#"{"type":"message_end","message":{"role":"assistant","content":[],"usage":{"input":3,"output":0,"cacheRead":0,"cacheWrite":0},"stopReason":"error","errorMessage":"502 Bad Gateway"}}"#,
        r#"{"type":"agent_end","messages":[]}"#,
        r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"502 Bad Gateway"}"#,
        r#"{"type":"agent_start"}"#,
        r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}"#,
        r#"{"type":"agent_end","messages":[]}"#,
        r#"{"type":"auto_retry_end","success":true,"attempt":1}"#,
    ]
    .join("\n");
    let evs = run_stdin(&[], &format!("{input}\n"));
    assert_eq!(types_at(&evs, 3), ["turn_failed"]);
    assert_eq!(at_line(&evs, 3)[0]["kind"], "api_error");
    assert_eq!(at_line(&evs, 3)[0]["error"], "502 Bad Gateway");
    assert_eq!(types_at(&evs, 5), ["turn_started"]);
    assert_eq!(types_at(&evs, 7), ["turn_completed"]);
    assert_eq!(at_line(&evs, 7)[0]["result"], "ok");
    assert_eq!(types_at(&evs, 8), ["heartbeat"]);
    assert!(evs.iter().filter(|e| e.get("line").is_some()).all(|e| e["dialect"] == "pi"));
}

#[test]
fn compaction_and_new_frames() {
    let evs = run("v05_no_header_partial");
    let c = &at_line(&evs, 17)[0];
    assert_eq!((c["type"].as_str(), c["trigger"].as_str()), (Some("compacted"), Some("manual")));
    assert_eq!((c["pre_tokens"].as_u64(), c["post_tokens"].as_u64()), (Some(50211), Some(7300)));
    assert_eq!(at_line(&evs, 18)[0]["code"], "pi.compaction-failed");
    assert_eq!(types_at(&evs, 16), ["heartbeat"]);
    let end = run_ended(&evs);
    assert_eq!(end["unknown_frames"], json!({"brand_new_pi_frame": 1, "message_end/narrator": 1}));
}

#[test]
fn a_pi_stream_after_a_claude_stream_switches_and_back() {
    let claude = r#"{"type":"system","subtype":"init","session_id":"c1","tools":["Bash"],"model":"m","cwd":"/"}"#;
    let pi = r#"{"type":"session","version":3,"id":"p1","timestamp":"2026-03-10T09:12:44.108Z","cwd":"/"}"#;
    let evs = run_stdin(&[], &format!("{claude}\n{pi}\n{{\"type\":\"agent_start\"}}\n{claude}\n"));
    let dialects: Vec<&str> = (1..=4).map(|n| at_line(&evs, n)[0]["dialect"].as_str().unwrap()).collect();
    assert_eq!(dialects, ["claude", "pi", "pi", "claude"]);
}
