//! The `claude-transcript` dialect (Claude Code saved sessions) on its own fixtures.
//!
//! Each `trap_*` test pins one mapping or one trap of SPEC §2–§4 for transcripts: one `usage` per
//! `message.id` with the largest figures, written when the message has ended; `session_started`
//! once per session id; sidechain marks; user lines that are not prompts; API-error lines; system
//! lines; malformed lines; saved-log completeness. The fixtures are hand-built after the shapes of
//! the corpus (and, for lines the corpus lacks, after shapes other projects document).

use std::path::PathBuf;

use serde_json::Value;

mod common;
use common::{at_line, bin, fixture, fixtures, of_type, position, run_ended, run_stdin, ty, types_at};

const DIALECT: &str = "claude-transcript";

fn all_fixtures() -> Vec<PathBuf> {
    let out = fixtures(DIALECT);
    assert!(out.len() >= 8, "fixtures missing");
    out
}

fn events(name: &str) -> Vec<Value> {
    common::events_of(DIALECT, name)
}

/// The input frames of a fixture with their 1-based line numbers (lines that are not objects left out).
fn frames(name: &str) -> Vec<(u64, Value)> {
    common::input_frames(&fixture(DIALECT, name)).into_iter().filter(|(_, v)| v.is_object()).collect()
}

fn heartbeat_at(evs: &[Value], n: u64) -> Vec<&str> {
    at_line(evs, n).into_iter().filter(|e| ty(e) == "heartbeat").map(|e| e["frame"].as_str().unwrap()).collect()
}

fn usage_of<'a>(evs: &'a [Value], message_id: &str) -> Vec<&'a Value> {
    of_type(evs, "usage").into_iter().filter(|e| e["message_id"] == message_id).collect()
}

// ------------------------------------------------------------------------------------------------
// Every fixture
// ------------------------------------------------------------------------------------------------

#[test]
fn every_fixture_is_detected_as_claude_transcript() {
    for f in all_fixtures() {
        let out = bin().arg("detect").arg(&f).output().expect("detect");
        let s = String::from_utf8(out.stdout).expect("UTF-8");
        assert!(s.starts_with("claude-transcript\t"), "{}: {s}", f.display());
    }
}

#[test]
fn trap_assistant_text_comes_out_exactly_once() {
    for f in all_fixtures() {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let mut want = String::new();
        for (_, fr) in frames(&name) {
            if fr["type"] != "assistant" || fr["isApiErrorMessage"] == true {
                continue;
            }
            match &fr["message"]["content"] {
                Value::String(s) => want += s,
                Value::Array(blocks) => {
                    for b in blocks.iter().filter(|b| b["type"] == "text") {
                        want += b["text"].as_str().unwrap_or("");
                    }
                }
                _ => {}
            }
        }
        let evs = events(&name);
        let got: String = of_type(&evs, "output_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn trap_one_usage_per_message_id_and_none_for_synthetic() {
    for f in all_fixtures() {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let evs = events(&name);
        let mut ids = std::collections::BTreeSet::new();
        let mut anonymous = 0;
        for (_, fr) in frames(&name) {
            let msg = &fr["message"];
            if fr["type"] != "assistant" || !msg["usage"].is_object() || msg["model"] == "<synthetic>" {
                continue;
            }
            match msg["id"].as_str() {
                Some(id) => {
                    ids.insert(id.to_owned());
                }
                None => anonymous += 1,
            }
        }
        for id in &ids {
            assert_eq!(usage_of(&evs, id).len(), 1, "{name}: usage events for {id}");
        }
        let usages = of_type(&evs, "usage");
        assert_eq!(usages.len(), ids.len() + anonymous, "{name}: usage events");
        assert!(usages.iter().all(|u| !u["message_id"].as_str().is_some_and(|m| m.starts_with("msg_synth"))));
    }
}

// ------------------------------------------------------------------------------------------------
// Usage
// ------------------------------------------------------------------------------------------------

#[test]
fn trap_growing_usage_takes_the_largest_figures_and_the_last_line() {
    let evs = events("growing_usage");
    let a = usage_of(&evs, "msg_01GrowA");
    assert_eq!(a.len(), 1);
    let u = &a[0]["usage"];
    // Lines 3-5 say output 28, 28, 233: the last line's count is the message's.
    assert_eq!(
        (u["input"].as_u64(), u["cache_read"].as_u64(), u["cache_write"].as_u64(), u["output"].as_u64()),
        (Some(4), Some(15320), Some(2100), Some(233))
    );
    assert_eq!(u["context"], 4 + 15320 + 2100);
    assert_eq!(a[0]["line"], 5, "the line of the message's last line");
    let line5 = frames("growing_usage").into_iter().find(|(n, _)| *n == 5).unwrap().1;
    assert_eq!(a[0]["at"], line5["timestamp"]);
    assert_eq!(a[0]["model"], "claude-sonnet-4-20250514");
    let c = usage_of(&evs, "msg_01GrowC");
    assert_eq!((c[0]["usage"]["output"].as_u64(), c[0]["line"].as_u64()), (Some(64), Some(13)));
    // Summing per line would count msg A three times and B, C twice.
    let input: u64 = of_type(&evs, "usage").iter().map(|e| e["usage"]["input"].as_u64().unwrap()).sum();
    assert_eq!(input, 4 + 6 + 3);
}

#[test]
fn trap_usage_is_written_when_the_message_ends() {
    let evs = events("growing_usage");
    // Message A (lines 3-5) ends at the next assistant line of another id (line 8): its usage comes
    // after the tool results of lines 6-7 and before line 8's events.
    let ua = position(&evs, |e| e["message_id"] == "msg_01GrowA" && ty(e) == "usage");
    let r7 = position(&evs, |e| e["line"] == 7);
    let s8 = position(&evs, |e| e["line"] == 8);
    assert!(r7 < ua && ua < s8, "{r7} < {ua} < {s8}");
    // Message B ends at the summary of line 11.
    let ub = position(&evs, |e| e["message_id"] == "msg_01GrowB" && ty(e) == "usage");
    let sum = position(&evs, |e| e["line"] == 11);
    assert!(ub < sum);
    // Message C ends with the input: its usage is the last event.
    assert_eq!(evs[evs.len() - 2]["message_id"], "msg_01GrowC");
    assert_eq!(ty(&evs[evs.len() - 2]), "usage");
    // A user prompt ends the message too (user_line_kinds: msg_03Edit before the interrupt).
    let evs = events("user_line_kinds");
    let u = position(&evs, |e| e["message_id"] == "msg_03Edit" && ty(e) == "usage");
    let i = position(&evs, |e| ty(e) == "interrupt" && e["line"] == 11);
    assert_eq!(u + 1, i);
}

#[test]
fn trap_start_of_stream_output_is_kept_as_reported() {
    // 2.0.x never writes the final output count: the largest seen (3) is reported as is.
    let evs = events("snapshots_stubs_v2");
    let u = usage_of(&evs, "msg_02Snap");
    assert_eq!(u[0]["usage"]["output"], 3);
    assert_eq!(u[0]["line"], 10);
}

#[test]
fn trap_lines_without_message_id_count_each() {
    let evs = events("sessions_and_malformed");
    let anon: Vec<_> = of_type(&evs, "usage").into_iter().filter(|e| e.get("message_id").is_none()).collect();
    assert_eq!(anon.len(), 2);
    assert_eq!((anon[0]["line"].as_u64(), anon[1]["line"].as_u64()), (Some(2), Some(3)));
    assert_eq!(anon[1]["usage"]["output"], 9);
}

// ------------------------------------------------------------------------------------------------
// Sessions and sidechains
// ------------------------------------------------------------------------------------------------

#[test]
fn trap_session_started_once_per_session_id() {
    let evs = events("sessions_and_malformed");
    let a = "aaaa1111-2222-4333-8444-555566667777";
    let b = "bbbb1111-2222-4333-8444-555566667777";
    let starts = of_type(&evs, "session_started");
    let ids: Vec<&str> = starts.iter().map(|e| e["session_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [a, b], "A -> B -> A starts A once");
    assert_eq!((starts[0]["line"].as_u64(), starts[1]["line"].as_u64()), (Some(1), Some(4)));
    assert_eq!(starts[0]["cwd"], "/tmp/play");
    assert_eq!(starts[0]["cli_version"], "1.0.24");
    // Back in A from line 5 on; the usage of B's message (held until line 15) stays B's.
    assert!(at_line(&evs, 5).iter().all(|e| e["session_id"] == a));
    assert!(at_line(&evs, 15).iter().all(|e| e["session_id"] == a));
    assert_eq!(usage_of(&evs, "msg_07B")[0]["session_id"], b);
}

#[test]
fn trap_session_started_fields() {
    let evs = events("system_compaction_thinking");
    let s = of_type(&evs, "session_started");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["cwd"], "/opt/tool");
    assert_eq!(s[0]["cli_version"], "2.1.12");
    assert_eq!(s[0]["permission_mode"], "acceptEdits");
    assert!(s[0].get("model").is_none());
    // Bookkeeping lines before the first session id have none.
    let evs = events("growing_usage");
    assert!(at_line(&evs, 1)[0].get("session_id").is_none());
    assert_eq!(types_at(&evs, 2), ["session_started", "user_message"]);
}

#[test]
fn trap_sidechain_marked_on_every_event_and_usage_billed() {
    let evs = events("sidechain_task");
    let side_lines: Vec<u64> =
        frames("sidechain_task").into_iter().filter(|(_, f)| f["isSidechain"] == true).map(|(n, _)| n).collect();
    assert_eq!(side_lines, [4, 5, 6, 7]);
    for e in evs.iter().filter(|e| e.get("line").is_some()) {
        let n = e["line"].as_u64().unwrap();
        if side_lines.contains(&n) {
            assert_eq!(e["sidechain"], true, "{e}");
        } else {
            assert!(e.get("sidechain").is_none(), "{e}");
        }
    }
    for id in ["msg_04Sub1", "msg_04Sub2"] {
        let u = usage_of(&evs, id);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0]["sidechain"], true);
    }
    assert!(usage_of(&evs, "msg_04Main")[0].get("sidechain").is_none());
    // The Task's result carries the subagent's usage again (toolUseResult.usage): not counted.
    assert_eq!(of_type(&evs, "usage").len(), 4);
    // The subagent's prompt is its user_message, marked.
    let prompts = of_type(&evs, "user_message");
    assert_eq!(prompts.len(), 2);
    assert_eq!(prompts[1]["sidechain"], true);
}

#[test]
fn trap_sidechain_replay_of_a_parent_message_is_counted_once_for_the_parent() {
    let evs = events("sidechain_replay");
    let p = usage_of(&evs, "msg_08Parent");
    assert_eq!(p.len(), 1);
    assert!(p[0].get("sidechain").is_none(), "the parent's request");
    assert_eq!(p[0]["usage"]["output"], 90);
    let s = usage_of(&evs, "msg_08Second");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["line"], 5, "the later replay (line 7) adds nothing");
    assert!(s[0].get("sidechain").is_none());
    assert_eq!(usage_of(&evs, "msg_08Sub")[0]["sidechain"], true);
}

// ------------------------------------------------------------------------------------------------
// User lines
// ------------------------------------------------------------------------------------------------

#[test]
fn trap_user_lines_that_are_not_prompts() {
    let evs = events("user_line_kinds");
    let prompts: Vec<&str> = of_type(&evs, "user_message").iter().map(|e| e["text"].as_str().unwrap()).collect();
    // A slash command is the user's turn, as typed (issue 14).
    assert_eq!(
        prompts,
        ["/init", "[image]\nWhat is wrong in this screenshot?", "Just change the heading colour to navy."]
    );
    assert!(heartbeat_at(&evs, 1).is_empty());
    assert_eq!(heartbeat_at(&evs, 2), ["user/meta"]);
    assert_eq!(heartbeat_at(&evs, 7), ["user/local_command"]);
    assert_eq!(heartbeat_at(&evs, 8), ["user/local_command"]);
    let evs = events("snapshots_stubs_v2");
    let prompts: Vec<&str> = of_type(&evs, "user_message").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["/clear", "list the failing tests"]);
    assert_eq!(heartbeat_at(&evs, 2), ["user/meta"], "the Caveat line is isMeta");
    assert!(heartbeat_at(&evs, 3).is_empty());
    assert_eq!(heartbeat_at(&evs, 4), ["user/local_command"]);
    // Without isMeta, the Caveat text is still recognised.
    let line = r#"{"type":"user","sessionId":"s","parentUuid":null,"isSidechain":false,"message":{"role":"user","content":"Caveat: The messages below were generated by the user while running local commands. DO NOT respond."}}"#;
    let evs = run_stdin(&[], &format!("{line}\n"));
    assert_eq!(heartbeat_at(&evs, 1), ["user/caveat"]);
    assert!(of_type(&evs, "user_message").is_empty());
}

#[test]
fn trap_interrupts() {
    let evs = events("user_line_kinds");
    let i = of_type(&evs, "interrupt");
    let got: Vec<(u64, &str)> =
        i.iter().map(|e| (e["line"].as_u64().unwrap(), e["reason"].as_str().unwrap())).collect();
    assert_eq!(got, [(6, "Request interrupted by user for tool use"), (11, "Request interrupted by user")]);
}

#[test]
fn trap_tool_pairing_results_and_durations() {
    let evs = events("growing_usage");
    let done = of_type(&evs, "tool_completed");
    let ids: Vec<&str> = done.iter().map(|e| e["tool_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["toolu_01ReadA", "toolu_01GrepA", "toolu_01EditB"]);
    assert_eq!(done[1]["duration_ms"], 41, "toolUseResult.durationMs");
    assert!(done[0].get("duration_ms").is_none());
    assert_eq!(done[1]["kind"], "search");
    let evs = events("sidechain_task");
    let task = of_type(&evs, "tool_completed").into_iter().find(|e| e["tool_id"] == "toolu_04Task").unwrap();
    assert_eq!(task["duration_ms"], 8123, "toolUseResult.totalDurationMs");
    assert_eq!(task["output"], "Scripts: build (vite build), dev (vite).");
    let evs = events("snapshots_stubs_v2");
    let bash = of_type(&evs, "tool_completed")[0];
    assert_eq!((bash["ok"].as_bool(), bash["error"].as_str()), (Some(false), Some("Error: 2 failed, 40 passed")));
    assert!(bash.get("exit_code").is_none(), "transcripts record no exit code");
    // A result whose call is not in the file gets a synthetic start.
    let evs = events("user_line_kinds");
    assert_eq!(types_at(&evs, 12), ["tool_started", "tool_completed"]);
    let start = at_line(&evs, 12)[0];
    assert_eq!((start["synthetic"].as_bool(), start["name"].as_str()), (Some(true), Some("unknown")));
    assert_eq!(at_line(&evs, 12)[1]["output"], "line one\n[image]");
}

#[test]
fn trap_todowrite_gives_a_plan() {
    let evs = events("sessions_and_malformed");
    let plan = of_type(&evs, "plan_updated");
    assert_eq!(plan.len(), 1);
    let items = plan[0]["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "the bare string item is skipped");
    assert_eq!(items[0]["status"], "in_progress");
}

// ------------------------------------------------------------------------------------------------
// API errors, system lines, thinking
// ------------------------------------------------------------------------------------------------

#[test]
fn trap_api_error_lines_are_turn_failed_with_kind() {
    let evs = events("api_errors");
    let failed: Vec<(u64, &str)> = of_type(&evs, "turn_failed")
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(failed, [(4, "api_error"), (6, "usage_limit"), (8, "usage_limit"), (10, "auth")]);
    let texts: Vec<&str> = of_type(&evs, "turn_failed").iter().map(|e| e["error"].as_str().unwrap()).collect();
    assert_eq!(texts[1], "Claude AI usage limit reached|1772755200");
    assert_eq!(texts[3], "Invalid API key · Please run /login");
    // `<synthetic>` lines are no model request; the error notice is no assistant text.
    assert!(of_type(&evs, "usage").is_empty());
    assert!(!of_type(&evs, "output_delta").iter().any(|e| e["text"].as_str().unwrap().contains("API Error")));
    // The retries before the failure are diagnostics, not failures.
    let d = of_type(&evs, "diagnostic");
    assert_eq!(d.len(), 2);
    assert_eq!(d[0]["code"], "claude.api_retry");
    assert_eq!(d[0]["message"], "API retry 1/10: Overloaded (status 529)");
    assert_eq!(d[1]["message"], "API retry 2/10: ConnectionRefused");
    assert_eq!(d[0]["level"], "warning");
}

#[test]
fn trap_compaction_and_system_lines() {
    let evs = events("system_compaction_thinking");
    let c = of_type(&evs, "compacted");
    assert_eq!(c.len(), 2);
    assert_eq!(
        (c[0]["trigger"].as_str(), c[0]["pre_tokens"].as_u64(), c[0]["post_tokens"].as_u64()),
        (Some("auto"), Some(171_705), Some(8473))
    );
    assert_eq!(c[1]["trigger"], "manual");
    assert!(c[1].get("post_tokens").is_none(), "absent is not 0");
    assert_eq!(heartbeat_at(&evs, 11), ["user/compact_summary"], "the summary is no prompt");
    assert_eq!(of_type(&evs, "user_message").len(), 1);
    assert_eq!(heartbeat_at(&evs, 2), ["attachment"]);
    assert_eq!(heartbeat_at(&evs, 6), ["system/turn_duration"]);
    assert_eq!(heartbeat_at(&evs, 7), ["system/stop_hook_summary"]);
    assert_eq!(heartbeat_at(&evs, 8), ["progress"]);
    assert_eq!(heartbeat_at(&evs, 9), ["system"]);
    assert_eq!(heartbeat_at(&evs, 13), ["system/local_command"]);
    assert_eq!(heartbeat_at(&evs, 14), ["system/informational"]);
    let unknown: Vec<(&str, &str)> = of_type(&evs, "unknown")
        .iter()
        .map(|e| (e["reason"].as_str().unwrap(), e["frame"].as_str().unwrap()))
        .collect();
    assert_eq!(unknown, [("unrecognized_frame", "system/brand_new_notice"), ("unrecognized_frame", "brand-new-line")]);
    let end = run_ended(&evs);
    assert_eq!(end["unknown_frames"]["system/brand_new_notice"], 1);
    assert_eq!(end["unknown_frames"]["brand-new-line"], 1);
}

#[test]
fn trap_thinking_blocks_are_reasoning() {
    let evs = events("system_compaction_thinking");
    let r = of_type(&evs, "reasoning");
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["text"], "The parser keeps two cursors; merge them.");
    assert!(r[1].get("text").is_none(), "redacted thinking has no text");
    let u = usage_of(&evs, "msg_06Think");
    assert_eq!((u[0]["line"].as_u64(), u[0]["usage"]["output"].as_u64()), (Some(5), Some(388)));
}

// ------------------------------------------------------------------------------------------------
// Bookkeeping, malformed lines, completeness
// ------------------------------------------------------------------------------------------------

#[test]
fn trap_bookkeeping_lines_are_heartbeats_with_their_time() {
    let evs = events("snapshots_stubs_v2");
    let snap = at_line(&evs, 1);
    assert_eq!(heartbeat_at(&evs, 1), ["file-history-snapshot"]);
    assert_eq!(snap[0]["at"], "2026-03-02T08:00:00.500Z", "snapshot.timestamp");
    assert!(at_line(&evs, 8)[0].get("at").is_none(), "an update repeats an older snapshot's time");
    assert_eq!(heartbeat_at(&evs, 5), ["queue-operation"]);
    assert!(at_line(&evs, 5)[0].get("at").is_some());
    assert_eq!(heartbeat_at(&evs, 13), ["last-prompt"]);
    assert_eq!(heartbeat_at(&events("growing_usage"), 1), ["summary"]);
    // Lines detection does not route yet can still be mapped with --dialect.
    let lines = [
        r#"{"type":"permission-mode","permissionMode":"plan","sessionId":"s9"}"#,
        r#"{"type":"ai-title","aiTitle":"Fix the loader","sessionId":"s9"}"#,
        r#"{"type":"custom-title","customTitle":"loader","sessionId":"s9"}"#,
        r#"{"type":"agent-name","agentName":"main","sessionId":"s9"}"#,
    ];
    let evs = run_stdin(&["--dialect", "claude-transcript"], &(lines.join("\n") + "\n"));
    assert!(of_type(&evs, "unknown").is_empty());
    assert_eq!(heartbeat_at(&evs, 4), ["agent-name"]);
}

#[test]
fn trap_malformed_lines_are_unknown_and_never_fatal() {
    let evs = events("sessions_and_malformed");
    let want = [
        (6, "malformed_frame"),     // message is a string
        (7, "malformed_frame"),     // message without content
        (8, "malformed_frame"),     // content holds a bare string
        (9, "not_object"),          // "plain string line"
        (10, "not_object"),         // 42
        (11, "not_object"),         // [1]
        (12, "unrecognized_frame"), // object without type
        (13, "invalid_json"),       // cut line
    ];
    for (n, reason) in want {
        let here = at_line(&evs, n);
        assert_eq!(here.len(), 1, "line {n}");
        assert_eq!((ty(here[0]), here[0]["reason"].as_str()), ("unknown", Some(reason)), "line {n}");
        assert_eq!(here[0]["dialect"], "claude-transcript", "line {n} carries the stream's dialect");
    }
    assert!(at_line(&evs, 14).is_empty(), "a blank line yields nothing");
    let end = run_ended(&evs);
    assert_eq!((end["lines"].as_u64(), end["unknown"].as_u64()), (Some(16), Some(8)));
    assert_eq!(end["complete"], false, "the file lacks its final newline");
}

#[test]
fn trap_saved_log_is_complete_with_an_open_turn() {
    // No turn ever completes in a transcript; only the final newline decides.
    for name in ["growing_usage", "sidechain_task", "user_line_kinds", "api_errors"] {
        assert_eq!(run_ended(&events(name))["complete"], true, "{name}");
    }
    let out = bin()
        .args(["--no-observed-at", "--fail-on-error"])
        .arg(fixture(DIALECT, "growing_usage"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "a saved log ending mid-turn is no failure");
}

// ------------------------------------------------------------------------------------------------
// Claude Code 2.1.290 bookkeeping lines (issue 12 drift): `bookkeeping_2_1_290.jsonl`.
// ------------------------------------------------------------------------------------------------

#[test]
fn new_bookkeeping_lines_are_heartbeats_and_microcompact_is_compacted() {
    let name = "bookkeeping_2_1_290";
    let evs = common::events_of("claude-transcript", name);
    let frames = common::input_frames(&common::fixture("claude-transcript", name));
    for (n, v) in &frames {
        let ty = v["type"].as_str().unwrap();
        let sub = v["subtype"].as_str();
        let ours: Vec<&Value> =
            common::at_line(&evs, *n).into_iter().filter(|e| e["type"] != "session_started").collect();
        assert!(ours.iter().all(|e| e["dialect"] == "claude-transcript"), "line {n}: {ours:?}");
        match (ty, sub) {
            ("user", _) => assert_eq!(ours[0]["type"], "user_message"),
            ("system", Some("microcompact_boundary")) => {
                assert_eq!(ours.len(), 1);
                let meta = &v["microcompactMetadata"];
                assert_eq!(ours[0]["type"], "compacted");
                assert_eq!(ours[0]["trigger"], meta["trigger"]);
                assert_eq!(ours[0]["pre_tokens"], meta["preTokens"]);
                assert!(ours[0].get("post_tokens").is_none(), "not derived from tokensSaved");
            }
            (_, sub) => {
                let frame = sub.map_or_else(|| ty.to_owned(), |s| format!("{ty}/{s}"));
                assert_eq!(ours.len(), 1, "line {n}: {ours:?}");
                assert_eq!(ours[0]["type"], "heartbeat", "line {n}");
                assert_eq!(ours[0]["frame"], frame.as_str());
            }
        }
    }
    // cost-state is session-cumulative: no usage from it.
    assert!(common::of_type(&evs, "usage").is_empty());
    assert_eq!(common::run_ended(&evs)["unknown"], 0);
    // A file that opens with a `mode` line is detected as a transcript.
    let out = common::bin().arg("detect").arg(common::fixture("claude-transcript", name)).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("claude-transcript\t"));
}

// ------------------------------------------------------------------------------------------------
// Claude Code 2.1.3xx transcript entry types (its `Entry` union): `entries_2_1_3xx.jsonl`.
// ------------------------------------------------------------------------------------------------

#[test]
fn every_entry_type_of_a_transcript_is_a_heartbeat_and_ends_no_message() {
    let name = "entries_2_1_3xx";
    let evs = common::events_of("claude-transcript", name);
    let frames = common::input_frames(&common::fixture("claude-transcript", name));
    let mut entries = 0;
    for (n, v) in &frames {
        let ty = v["type"].as_str().unwrap();
        if ty == "user" || ty == "assistant" {
            continue;
        }
        entries += 1;
        let ours: Vec<&Value> =
            common::at_line(&evs, *n).into_iter().filter(|e| e["type"] != "session_started").collect();
        assert_eq!(ours.len(), 1, "line {n}: {ours:?}");
        assert_eq!(ours[0]["type"], "heartbeat", "line {n}");
        assert_eq!(ours[0]["frame"], ty, "line {n}");
        assert_eq!(ours[0]["dialect"], "claude-transcript", "line {n}");
    }
    assert_eq!(entries, 11);
    assert_eq!(common::run_ended(&evs)["unknown"], 0);
    // The message's two lines, with entries between them, are one request: its usage once, with
    // the larger output, as of its last line.
    let usage = common::of_type(&evs, "usage");
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0]["usage"]["output"], 148);
    assert_eq!(usage[0]["line"], 7);
    // The usage report passes these lines over and counts the same, with or without skimming.
    let report = |extra: &[&str]| {
        let out = common::bin()
            .args(["usage", "--json", "--no-cache"])
            .args(extra)
            .arg(common::fixture("claude-transcript", name))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let skimmed = report(&[]);
    assert_eq!(skimmed, report(&["--every-line"]));
    let totals: Value = serde_json::from_str(skimmed.lines().last().unwrap()).unwrap();
    assert_eq!((totals["output"].as_u64(), totals["requests"].as_u64()), (Some(148), Some(1)), "{totals}");
}

#[test]
fn a_task_notification_user_line_is_no_prompt() {
    let line = r#"{"parentUuid":"a","isSidechain":false,"type":"user","message":{"role":"user","content":"<task-notification><task-id>b1</task-id></task-notification>"},"origin":{"kind":"task-notification"},"uuid":"b","timestamp":"2026-11-28T09:14:02.118Z","sessionId":"s-1"}"#;
    let evs = common::run_stdin(&[], line);
    assert!(common::of_type(&evs, "user_message").is_empty(), "{evs:?}");
    assert_eq!(common::of_type(&evs, "heartbeat")[0]["frame"], "user/task-notification");
}
