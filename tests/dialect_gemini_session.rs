//! The gemini-session dialect (Gemini CLI's saved `chats/session-*.jsonl`, and the older `.json`
//! document), pinned on `fixtures/gemini-session/`.

use serde_json::{Value, json};

mod common;
use common::{at_line, of_type, output_text, run_ended, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("gemini-session", name)
}

#[test]
fn every_record_is_gemini_session_and_none_is_unknown() {
    for name in ["chat_tools_usage", "legacy_document"] {
        let evs = run(name);
        for e in evs.iter().filter(|e| e.get("line").is_some()) {
            assert_eq!(e["dialect"], "gemini-session", "{name}: {e}");
        }
        assert_eq!(run_ended(&evs)["unknown"], 0, "{name}");
    }
}

#[test]
fn a_message_written_again_writes_only_what_is_new() {
    let evs = run("chat_tools_usage");
    // Line 4 is the message with its call running, 5 the same with its tokens, 6 the same with
    // the call's result: the start once, the usage once, the end once.
    assert_eq!(types_at(&evs, 4), ["reasoning", "tool_started"]);
    assert_eq!(types_at(&evs, 5), ["usage"]);
    assert_eq!(types_at(&evs, 6), ["tool_completed"]);
    assert_eq!(of_type(&evs, "tool_started").len(), 2);
    let done = &at_line(&evs, 6)[0];
    assert_eq!(done["ok"], true);
    assert_eq!(done["output"], "def parse(s):\n    return datetime.strptime(s, '%Y-%d-%m')\n");
    // A `$set` of the metadata, a rewind, and a `$set.messages` rewrite of messages already
    // written say nothing new.
    for n in [3, 7, 12, 13] {
        assert_eq!(types_at(&evs, n), ["heartbeat"], "line {n}");
    }
    assert_eq!(
        output_text(&evs),
        "The format string swaps day and month: `%Y-%d-%m` should be `%Y-%m-%d`.Fixed `%Y-%m-%d` in src/parse.py."
    );
    let users: Vec<&str> = of_type(&evs, "user_message").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(users, ["Why does test_parse_dates fail?", "Fix it and run the tests."]);
}

#[test]
fn tokens_leave_the_cache_out_of_input_and_add_thoughts_and_the_tool_prompt() {
    let evs = run("chat_tools_usage");
    let usage: Vec<&Value> = of_type(&evs, "usage");
    assert_eq!(usage.len(), 4, "one per message with tokens, whatever times it was written");
    // {"input":8412,"output":61,"cached":6120,"thoughts":148,"tool":0}
    assert_eq!(
        usage[0]["usage"],
        json!({"input": 2292, "cache_read": 6120, "output": 209, "reasoning": 148, "context": 8412})
    );
    assert_eq!(usage[0]["model"], "gemini-3-pro-preview");
    assert_eq!(usage[0]["message_id"], "b8e4d3c2-1a0f-4d9e-9f8a-7b6c5d4e3f20");
    // {"input":9240,"output":22,"cached":8704,"thoughts":31,"tool":12}: the tool-use prompt is input.
    assert_eq!(usage[2]["usage"]["input"], 9240 + 12 - 8704);
    assert_eq!(usage[2]["model"], "gemini-3-flash-preview");
    // The rewound request was made: it still counts.
    assert_eq!(usage[2]["line"], 11);
}

#[test]
fn denied_calls_fail_and_notes_are_diagnostics() {
    let evs = run("chat_tools_usage");
    let failed = at_line(&evs, 11).into_iter().find(|e| e["type"] == "tool_completed").unwrap();
    assert_eq!((failed["ok"].as_bool(), failed["kind"].as_str()), (Some(false), Some("shell")));
    assert_eq!(failed["error"], "Tool execution denied by policy.");
    let note = &at_line(&evs, 9)[0];
    assert_eq!((note["code"].as_str(), note["level"].as_str()), (Some("gemini.session.info"), Some("info")));
}

#[test]
fn the_older_document_is_one_frame_of_the_whole_session() {
    let evs = run("legacy_document");
    assert!(evs.iter().filter(|e| e.get("line").is_some()).all(|e| e["line"] == 1 && e["line_end"] == 78));
    assert_eq!(
        types_at(&evs, 1),
        [
            "session_started",
            "user_message",
            "tool_started",
            "tool_completed",
            "usage",
            "reasoning",
            "output_delta",
            "usage"
        ]
    );
    assert_eq!(of_type(&evs, "tool_started")[0]["kind"], "search");
    let usage = of_type(&evs, "usage");
    assert_eq!(
        usage[1]["usage"],
        json!({"input": 1295, "cache_read": 4096, "output": 61, "reasoning": 40, "context": 5391})
    );
    // The document has one time, its last.
    assert!(usage.iter().all(|u| u["at"] == "2026-03-02T16:41:37.214Z"));
}

#[test]
fn a_json_file_is_one_document_however_long_where_a_stream_stops_at_10000_lines() {
    // A long older session: 2,000 messages pretty-printed, past SPEC §1's 10 000 lines.
    let mut messages = Vec::new();
    for i in 0..2000 {
        messages.push(json!({
            "id": format!("m{i}"), "timestamp": "2026-03-02T16:40:11.905Z", "type": "gemini",
            "content": format!("answer {i}"), "model": "gemini-2.5-pro",
            "tokens": {"input": 100, "output": 1, "cached": 40, "thoughts": 0, "tool": 0, "total": 101}
        }));
    }
    let doc = json!({"sessionId": "s-long", "projectHash": "h", "startTime": "2026-03-02T16:40:11.905Z",
        "lastUpdated": "2026-03-02T17:40:11.905Z", "messages": messages});
    let text = serde_json::to_string_pretty(&doc).unwrap() + "\n";
    assert!(text.lines().count() > 10_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session-2026-03-02T16-40-slong000.json");
    std::fs::write(&file, &text).unwrap();
    let evs = common::run_path(&file);
    assert_eq!(of_type(&evs, "usage").len(), 2000);
    assert_eq!(run_ended(&evs)["unknown"], 0);
    // The same bytes as a stream are read line by line past the limit (SPEC §1).
    let piped = common::run_stdin(&[], &text);
    assert!(of_type(&piped, "usage").is_empty());
    assert!(run_ended(&piped)["unknown"].as_u64().unwrap() > 10_000);
}

#[test]
fn an_entry_of_messages_that_is_no_record_is_said_not_dropped_with_the_rest() {
    let line = r#"{"$set":{"messages":[{"id":"u9","timestamp":"2026-11-20T09:14:05.402Z","type":"user","content":"hello"},{"content":"no id"},{"id":"x","type":"tool_group","timestamp":"t","content":""}]}}"#;
    let evs = common::run_stdin(&["--dialect", "gemini-session"], &format!("{line}\n"));
    assert_eq!(types_at(&evs, 1), ["user_message", "diagnostic"]);
    let warning = &at_line(&evs, 1)[1];
    assert_eq!(warning["code"], "gemini.session.unread_messages");
    assert!(warning["message"].as_str().unwrap().starts_with("2 entries"), "{warning}");
}
