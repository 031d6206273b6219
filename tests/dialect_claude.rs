//! The `claude` dialect on frames of newer Claude Code versions (issue 12 drift):
//! `fixtures/claude/sdk_frames_2_1_290.jsonl`, written after the SDK wire schemas bundled in
//! Claude Code 2.1.2xx's cli.js (see fixtures/README.md). Each assertion reads the input line it
//! checks.

use serde_json::Value;

mod common;
use common::{at_line, bin, fixture, input_frames, run_ended, run_stdin};

const NAME: &str = "sdk_frames_2_1_290";

fn frames() -> Vec<(u64, Value)> {
    input_frames(&fixture("claude", NAME))
}

fn frame_name(v: &Value) -> String {
    match v["subtype"].as_str() {
        Some(s) => format!("{}/{s}", v["type"].as_str().unwrap()),
        None => v["type"].as_str().unwrap().to_owned(),
    }
}

#[test]
fn no_line_of_the_newer_frames_is_unknown_and_the_stream_stays_claude() {
    let evs = common::events_of("claude", NAME);
    assert_eq!(run_ended(&evs)["unknown"], 0, "{evs:?}");
    for e in &evs {
        if e["type"] != "run_started" && e["type"] != "run_ended" {
            assert_eq!(e["dialect"], "claude", "{e}");
        }
    }
    // post_turn_summary, prompt_suggestion, … after the result do not reopen the turn.
    assert_eq!(run_ended(&evs)["complete"], true);
}

#[test]
fn bookkeeping_frames_are_heartbeats_named_after_their_frame() {
    let evs = common::events_of("claude", NAME);
    let heartbeats = [
        "system/session_state_changed",
        "system/post_turn_summary",
        "system/task_summary",
        "system/notification",
        "system/local_command_output",
        "system/elicitation_complete",
        "system/worker_shutting_down",
        "tool_progress",
        "tool_use_summary",
        "prompt_suggestion",
        "conversation_reset",
    ];
    let mut seen = 0;
    for (n, v) in frames() {
        let name = frame_name(&v);
        if heartbeats.contains(&name.as_str()) {
            let ev = at_line(&evs, n);
            assert_eq!(ev.len(), 1, "line {n}: {ev:?}");
            assert_eq!(ev[0]["type"], "heartbeat", "line {n}");
            assert_eq!(ev[0]["frame"], name.as_str());
            seen += 1;
        }
    }
    assert!(seen >= 12, "fixture lines checked: {seen}");
}

#[test]
fn trouble_frames_are_diagnostics() {
    let evs = common::events_of("claude", NAME);
    let want = [
        ("system/permission_denied", "warning", "claude.permission.denied"),
        ("system/model_fallback", "warning", "claude.model.fallback"),
        ("system/informational", "warning", "claude.informational"),
        ("system/plugin_install", "warning", "claude.plugin.install-failed"),
        ("auth_status", "error", "claude.auth"),
        ("system/model_refusal_no_fallback", "error", "claude.model.refusal"),
        ("system/model_refusal_fallback", "warning", "claude.model.refusal-fallback"),
    ];
    for (n, v) in frames() {
        let name = frame_name(&v);
        let Some((_, level, code)) = want.iter().find(|(f, _, _)| *f == name) else { continue };
        let ev = at_line(&evs, n);
        assert_eq!(ev.len(), 1, "line {n}");
        assert_eq!((ev[0]["type"].as_str(), ev[0]["level"].as_str()), (Some("diagnostic"), Some(*level)), "line {n}");
        assert_eq!(ev[0]["code"], *code);
        match name.as_str() {
            "system/plugin_install" => assert_eq!(ev[0]["plugins"], serde_json::json!([v["name"]])),
            "system/permission_denied" => {
                assert_eq!(
                    ev[0]["dedupe_key"],
                    format!("claude.permission.denied|{}", v["tool_name"].as_str().unwrap())
                );
                assert!(ev[0]["message"].as_str().unwrap().contains(v["message"].as_str().unwrap()));
            }
            "auth_status" => assert_eq!(ev[0]["message"], v["error"]),
            _ => assert_eq!(ev[0]["message"], v["content"]),
        }
    }
}

#[test]
fn a_synthetic_api_error_message_is_a_diagnostic_not_assistant_text() {
    let evs = common::events_of("claude", NAME);
    let (n, v) = frames().into_iter().find(|(_, v)| v["is_api_error_message"] == true).expect("fixture line");
    let ev = at_line(&evs, n);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["type"], "diagnostic");
    assert_eq!(ev[0]["code"], format!("claude.api_error.{}", v["error"].as_str().unwrap()));
    assert_eq!(ev[0]["message"], v["message"]["content"][0]["text"]);
    // The only assistant text is the real message's.
    assert_eq!(common::output_text(&evs), "The cart total rounds before tax; fixing that now.");
}

#[test]
fn a_task_notification_user_line_is_a_heartbeat_and_microcompact_is_compacted() {
    let evs = common::events_of("claude", NAME);
    assert!(common::of_type(&evs, "user_message").is_empty());
    for (n, v) in frames() {
        if v["origin"]["kind"] == "task-notification" {
            assert_eq!(at_line(&evs, n)[0]["frame"], "user/task-notification");
        }
        if v["subtype"] == "microcompact_boundary" {
            let e = at_line(&evs, n)[0];
            assert_eq!(e["type"], "compacted");
            assert_eq!(e["pre_tokens"], v["microcompactMetadata"]["preTokens"]);
            assert_eq!(e["trigger"], v["microcompactMetadata"]["trigger"]);
            assert!(e.get("post_tokens").is_none());
        }
    }
}

#[test]
fn a_stream_opening_with_a_new_top_level_frame_is_detected_as_claude() {
    let line = r#"{"type":"tool_progress","tool_use_id":"toolu_1","tool_name":"Bash","parent_tool_use_id":null,"elapsed_time_seconds":2,"uuid":"u1","session_id":"s1"}"#;
    let mut child =
        bin().arg("detect").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(line.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("claude"), "{out:?}");
    let evs = run_stdin(&[], line);
    assert_eq!(at_line(&evs, 1)[0]["type"], "heartbeat");
}

#[test]
fn message_delta_input_and_cache_figures_fill_the_message_zeros() {
    let lines = [
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_z","model":"claude-sonnet-4-6","usage":{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":7,"output_tokens":1}}},"session_id":"s1","uuid":"u1"}"#,
        r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"cache_read_input_tokens":3400,"cache_creation_input_tokens":9,"output_tokens":55}},"session_id":"s1","uuid":"u2"}"#,
    ];
    let evs = run_stdin(&[], &lines.join("\n"));
    let u = common::of_type(&evs, "usage");
    assert_eq!(u.len(), 1, "{evs:?}");
    // The message's zeros give way to the delta's figures; its non-zero cache_write is kept.
    assert_eq!(
        u[0]["usage"],
        serde_json::json!({"input": 12, "cache_read": 3400, "cache_write": 7, "output": 55, "context": 3419})
    );
}

#[test]
fn a_stream_error_event_is_a_warning() {
    let line = r#"{"type":"stream_event","event":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}},"session_id":"s1","uuid":"u1"}"#;
    let evs = run_stdin(&[], line);
    let d = common::of_type(&evs, "diagnostic");
    assert_eq!(d.len(), 1, "{evs:?}");
    assert_eq!((d[0]["level"].as_str(), d[0]["code"].as_str()), (Some("warning"), Some("claude.stream.error")));
    assert_eq!(d[0]["message"], "overloaded_error: Overloaded");
}

#[test]
fn an_advisor_tool_result_completes_its_server_tool_use() {
    let line = r#"{"type":"assistant","message":{"id":"msg_adv","model":"claude-sonnet-4-6","role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"advisor","input":{}},{"type":"advisor_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"text","text":"Check the rounding first."}]}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}},"session_id":"s1","uuid":"u1"}"#;
    let evs = run_stdin(&[], line);
    let done = common::of_type(&evs, "tool_completed");
    assert_eq!(done.len(), 1, "{evs:?}");
    assert_eq!(done[0]["tool_id"], "srvtoolu_1");
    assert_eq!(done[0]["output"], "Check the rounding first.");
    assert!(common::of_type(&evs, "tool_started")[0].get("synthetic").is_none());
}
