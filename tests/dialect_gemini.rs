//! The Gemini dialect (Gemini CLI / Antigravity `--output-format stream-json`, and the object of
//! `--output-format json`), pinned on its fixtures (`fixtures/gemini/`): each `trap_*` test names
//! one mapping of SPEC §3 / §4 or one trap of the CLI, and checks it against the input.

use std::path::PathBuf;

use serde_json::{Value, json};

mod common;
use common::{at_line, fixture, of_type, output_text, position, root, run_ended, run_path, run_stdin, ty, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("gemini", name)
}

fn input_frames(name: &str) -> Vec<Value> {
    common::input_frames(&fixture("gemini", name)).into_iter().map(|(_, v)| v).collect()
}

/// The shared corpus next to the crate. Tests that read it are `#[ignore]`d (a user's machine
/// has no corpus, and a skip must not show as a pass); `.ci/run` runs them with `--ignored`
/// when the corpus is there.
fn corpus() -> PathBuf {
    let dir = root().join("../shared/corpus");
    assert!(dir.is_dir(), "../shared/corpus is not present");
    dir
}

#[test]
fn trap_delta_text_exactly_once_in_order() {
    let evs = run("stream_deltas_tools");
    let expected: String = input_frames("stream_deltas_tools")
        .iter()
        .filter(|f| f["type"] == "message" && f["role"] == "assistant")
        .map(|f| f["content"].as_str().expect("content"))
        .collect();
    assert_eq!(output_text(&evs), expected);
    assert_eq!(of_type(&evs, "output_delta").len(), 4, "one output_delta per delta line");
    assert_eq!(types_at(&evs, 3), ["output_delta"]);
}

#[test]
fn trap_whole_message_repeating_deltas_writes_only_what_is_new() {
    let evs = run("quiet_whole_message_repeat");
    // Turn 1: "Hello" + ", hello." streamed, then the whole "Hello, hello." repeats them.
    // Turn 2: "HELLO" streamed, then the whole "HELLO, HELLO!" adds ", HELLO!".
    assert_eq!(output_text(&evs), "Hello, hello.HELLO, HELLO!");
    assert_eq!(types_at(&evs, 5), ["heartbeat"], "the repeat writes nothing");
    let line9 = at_line(&evs, 9);
    assert_eq!(line9.len(), 1);
    assert_eq!(line9[0]["text"], ", HELLO!");
    assert_eq!(of_type(&evs, "turn_completed").len(), 2);
}

#[test]
fn trap_whole_messages_without_deltas_are_each_written_once() {
    let evs = run("whole_messages_no_init");
    let texts: Vec<&str> = of_type(&evs, "output_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    let input: Vec<String> = input_frames("whole_messages_no_init")
        .iter()
        .filter(|f| f["type"] == "message")
        .map(|f| f["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, input);
    assert!(texts[0].contains('\u{1b}') && texts[0].contains("café ✓ \"quoted\" \\path\\to"));
    // No init, no timestamp: no session, no `at`.
    assert!(of_type(&evs, "session_started").is_empty());
    assert!(evs.iter().all(|e| e.get("at").is_none() && e.get("session_id").is_none()));
    let done = of_type(&evs, "turn_completed");
    assert_eq!(done[0]["usage"], json!({"input": 3, "output": 2}));
    assert!(done[0].get("duration_ms").is_none());
}

#[test]
#[ignore = "reads ../shared/corpus; .ci/run runs it with --ignored"]
fn corpus_seed_runner_payloads_equal_the_expected_ones_exactly() {
    let corpus = corpus();
    let expected: Vec<String> = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("i_seed_runner/2417-expected-payloads.json")).expect("payloads"),
    )
    .expect("a list of strings");
    assert_eq!(expected.len(), 8);
    for cli in ["gemini", "antigravity"] {
        let evs = run_path(&corpus.join("i_seed_runner").join(cli).join("2417-content-stream.jsonl"));
        let texts: Vec<String> =
            of_type(&evs, "output_delta").iter().map(|e| e["text"].as_str().unwrap().to_owned()).collect();
        assert_eq!(texts, expected, "{cli}");
        assert!(evs.iter().all(|e| matches!(ty(e), "run_started" | "run_ended") || e["dialect"] == "gemini"));
        assert_eq!(run_ended(&evs)["complete"], true);
    }
}

#[test]
fn trap_result_usage_is_the_turn_and_each_model_gets_a_usage_event() {
    let evs = run("stream_deltas_tools");
    let done = of_type(&evs, "turn_completed");
    assert_eq!(done.len(), 1);
    // SPEC §4 Gemini stream row: `input` as given (not input_tokens 20344), `cached` read.
    assert_eq!(done[0]["usage"], json!({"input": 8056, "cache_read": 12288, "output": 301}));
    assert_eq!(done[0]["duration_ms"], 3708);
    let usage = of_type(&evs, "usage");
    let models: Vec<&str> = usage.iter().map(|u| u["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["gemini-2.5-flash-lite", "gemini-2.5-pro"]);
    assert_eq!(usage[1]["usage"], json!({"input": 7176, "cache_read": 12288, "output": 270}));
    // Per-model figures are totals over the model's requests: no context.
    assert!(usage.iter().all(|u| u["usage"].get("context").is_none() && u["line"] == 15));
    let sum: u64 = usage.iter().map(|u| u["usage"]["input"].as_u64().unwrap()).sum();
    assert_eq!(sum, 8056);
    // Usage before the turn ends, so the turn is not left open.
    assert!(position(&evs, |e| ty(e) == "usage") < position(&evs, |e| ty(e) == "turn_completed"));
    assert_eq!(run_ended(&evs)["complete"], true);
}

#[test]
fn trap_tool_use_and_tool_result_pair_by_tool_id() {
    let evs = run("stream_deltas_tools");
    let started: Vec<&str> = of_type(&evs, "tool_started").iter().map(|e| e["tool_id"].as_str().unwrap()).collect();
    let completed: Vec<&str> = of_type(&evs, "tool_completed").iter().map(|e| e["tool_id"].as_str().unwrap()).collect();
    assert_eq!(started, completed);
    assert_eq!(started[0], "run_shell_command_1772615702600_0");
    let shell = at_line(&evs, 5)[0];
    assert_eq!(
        (shell["kind"].as_str(), shell["summary"].as_str()),
        (Some("shell"), Some("grep -rc TODO src/ | awk -F: '{s+=$2} END {print s}'"))
    );
    assert_eq!(shell["input"]["description"], "Count TODO markers");
    let ok = at_line(&evs, 6)[0];
    assert_eq!(
        (ok["ok"].as_bool(), ok["output"].as_str(), ok["name"].as_str()),
        (Some(true), Some("17\n"), Some("run_shell_command"))
    );
    let failed = at_line(&evs, 8)[0];
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["error"], "File not found: /home/dev/proj/notes.md");
    let no_output = at_line(&evs, 10)[0];
    assert_eq!(no_output["ok"], true);
    assert!(no_output.get("output").is_none(), "absent output stays absent");
    assert_eq!(at_line(&evs, 11)[0]["summary"], "src", "list_directory summarised by its dir_path");
    assert_eq!(at_line(&evs, 11)[0]["kind"], "read");
}

#[test]
fn trap_error_frames_are_diagnostics_and_only_result_error_fails_the_turn() {
    let evs = run("errors_and_failed_result");
    for (line, level, code) in [
        (3, "warning", "gemini.loop_detected"),
        (4, "error", "gemini.max_session_turns"),
        (5, "warning", "gemini.warning"),
    ] {
        let at = at_line(&evs, line);
        assert_eq!(at.len(), 1, "line {line}");
        assert_eq!(
            (ty(at[0]), at[0]["level"].as_str(), at[0]["code"].as_str()),
            ("diagnostic", Some(level), Some(code))
        );
        assert_eq!(at[0]["dedupe_key"], code);
        assert_eq!(at[0]["count"], 1);
        assert_eq!(at[0]["plugins"], json!([]));
        assert!(at[0]["raw"].as_str().unwrap().starts_with("{\"type\":\"error\""));
    }
    let failed = of_type(&evs, "turn_failed");
    let lines: Vec<u64> = failed.iter().map(|e| e["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [6, 10]);
    assert_eq!(failed[0]["error"], "Reached max session turns for this session.");
    assert_eq!(failed[0]["kind"], "max_turns");
    assert_eq!(failed[0]["usage"], json!({"input": 904, "cache_read": 4096, "output": 120}));
    assert_eq!(failed[0]["duration_ms"], 5700);
    assert_eq!(failed[1]["kind"], "auth");
    assert!(failed[1].get("duration_ms").is_none(), "the error handler's duration 0 is no reading");
    assert!(of_type(&evs, "turn_completed").is_empty());
}

#[test]
fn trap_every_init_is_a_new_run_and_an_unseen_result_gets_a_synthetic_start() {
    let evs = run("errors_and_failed_result");
    let sessions = of_type(&evs, "session_started");
    assert_eq!(sessions.len(), 2, "a second init of the same session id is a new run");
    assert!(sessions.iter().all(|s| s["session_id"] == "e4f0c3b1-2a7d-4c9e-9f61-0d8b5a3c7e22"));
    assert_eq!(sessions[0]["model"], "gemini-2.5-pro");
    assert_eq!(types_at(&evs, 9), ["tool_started", "tool_completed"]);
    let start = at_line(&evs, 9)[0];
    assert_eq!((start["synthetic"].as_bool(), start["name"].as_str()), (Some(true), Some("unknown")));
    assert_eq!(at_line(&evs, 9)[1]["error"], "Failed to edit, 0 occurrences found for old_string");
}

#[test]
fn trap_write_todos_makes_plan_updated_and_placeholders_give_no_at() {
    let evs = run("snapshot_placeholders_open_turn");
    assert_eq!(types_at(&evs, 3), ["tool_started", "plan_updated"]);
    let plan = at_line(&evs, 3)[1];
    assert_eq!(
        plan["items"],
        json!([
            {"text": "Back up the database", "status": "completed"},
            {"text": "Run the schema migration", "status": "in_progress"},
            {"text": "Verify row counts", "status": "pending"}
        ])
    );
    assert_eq!(at_line(&evs, 3)[0]["kind"], "plan");
    assert_eq!(at_line(&evs, 4)[0]["kind"], "plan");
    assert!(evs.iter().all(|e| e.get("at").is_none()), "`<TIMESTAMP>` is not a time");
    // Unknown frame type, unknown role, a tool_use without its name.
    let unknown: Vec<(u64, &str, &str)> = of_type(&evs, "unknown")
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["reason"].as_str().unwrap(), e["frame"].as_str().unwrap()))
        .collect();
    assert_eq!(
        unknown,
        [
            (5, "unrecognized_frame", "thought"),
            (6, "unrecognized_frame", "message/system"),
            (7, "malformed_frame", "tool_use")
        ]
    );
    // The stream ends mid-turn (no result).
    let end = run_ended(&evs);
    assert_eq!((end["complete"].as_bool(), end["unknown"].as_u64()), (Some(false), Some(3)));
}

#[test]
fn trap_json_output_pretty_printed_is_one_frame_with_line_end() {
    let evs = run("json_output_pretty");
    let lines =
        std::fs::read_to_string(root().join("fixtures/gemini/json_output_pretty.jsonl")).unwrap().lines().count()
            as u64;
    for e in &evs[1..evs.len() - 1] {
        assert_eq!((e["line"].as_u64(), e["line_end"].as_u64()), (Some(1), Some(lines)), "{e}");
    }
    assert_eq!(run_ended(&evs)["lines"], lines);
    let types: Vec<&str> = evs.iter().map(ty).collect();
    assert_eq!(
        types,
        ["run_started", "session_started", "output_delta", "usage", "usage", "turn_completed", "run_ended"]
    );
    let response = "Renamed `parse_args` to `parse_cli` in 3 files.";
    assert_eq!(output_text(&evs), response);
    let usage = of_type(&evs, "usage");
    // SPEC §4 Gemini json row: output = candidates + thoughts, reasoning = thoughts; `input` when
    // present, else prompt − cached; context only for a model with one request.
    assert_eq!(usage[0]["model"], "gemini-2.5-flash-lite");
    assert_eq!(
        usage[0]["usage"],
        json!({"input": 702, "cache_read": 0, "output": 88, "reasoning": 76, "context": 702})
    );
    assert_eq!(usage[1]["model"], "gemini-2.5-pro");
    assert_eq!(usage[1]["usage"], json!({"input": 5544, "cache_read": 24576, "output": 892, "reasoning": 482}));
    let done = of_type(&evs, "turn_completed")[0];
    assert_eq!(done["usage"], json!({"input": 6246, "cache_read": 24576, "output": 980, "reasoning": 558}));
    assert_eq!(done["result"], response);
    assert_eq!(evs[1]["session_id"], "9a3f6d10-4e2b-47c8-b5d9-1f0e8c7a2b64");
    assert_eq!(run_ended(&evs)["complete"], true);
}

#[test]
fn trap_json_output_on_one_line_with_warnings_and_finish_reason() {
    let evs = run("json_output_one_line");
    let types: Vec<&str> = evs.iter().map(ty).collect();
    assert_eq!(
        types,
        ["run_started", "session_started", "output_delta", "diagnostic", "usage", "turn_completed", "run_ended"]
    );
    let diag = of_type(&evs, "diagnostic")[0];
    assert_eq!(
        (diag["level"].as_str(), diag["message"].as_str()),
        (Some("warning"), Some("Loop detected, stopping execution"))
    );
    let usage = of_type(&evs, "usage")[0];
    assert_eq!(usage["usage"], json!({"input": 120, "cache_read": 1280, "output": 9, "reasoning": 0, "context": 1400}));
    let done = of_type(&evs, "turn_completed")[0];
    assert_eq!(done["stop_reason"], "refusal");
    assert!(evs.iter().all(|e| e.get("line_end").is_none()));
}

#[test]
fn trap_json_error_object_is_a_turn_failed() {
    let one_line = r#"{"session_id":"c1d2e3f4","error":{"type":"FatalAuthenticationError","message":"Please set an Auth method","code":41}}"#;
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(one_line).unwrap()).unwrap() + "\n";
    for input in [format!("{one_line}\n"), pretty] {
        let evs = run_stdin(&["--dialect", "gemini"], &input);
        let types: Vec<&str> = evs.iter().map(ty).collect();
        assert_eq!(types, ["run_started", "session_started", "turn_failed", "run_ended"], "{input}");
        let failed = of_type(&evs, "turn_failed")[0];
        assert_eq!(
            (failed["error"].as_str(), failed["kind"].as_str()),
            (Some("Please set an Auth method"), Some("auth"))
        );
        assert!(failed.get("usage").is_none());
    }
}

#[test]
fn trap_odd_frames_never_crash_and_every_line_is_accounted_for() {
    let input = [
        r#"{"type":"init","timestamp":"2026-03-04T09:00:00.000Z"}"#,
        r#"{"type":"message","role":"assistant","content":42}"#,
        r#"{"type":"message","content":"no role"}"#,
        r#"{"type":"message","role":"assistant","content":"","delta":true}"#,
        r#"{"type":"tool_result","tool_id":"t9","output":"no status"}"#,
        r#"{"type":"tool_use","tool_name":"mystery","tool_id":null,"parameters":null}"#,
        r#"{"type":"error"}"#,
        r#"{"type":"result","status":"cancelled"}"#,
        r#"{"type":"result","timestamp":1772615700,"status":"success","stats":"n/a"}"#,
        r#"{"type":7,"session_id":"x","response":"y"}"#,
    ]
    .join("\n");
    let evs = run_stdin(&["--dialect", "gemini"], &(input + "\n"));
    for n in 1..=10 {
        assert!(!at_line(&evs, n).is_empty(), "line {n} has no event");
    }
    let reasons: Vec<(u64, &str)> =
        of_type(&evs, "unknown").iter().map(|e| (e["line"].as_u64().unwrap(), e["reason"].as_str().unwrap())).collect();
    assert_eq!(
        reasons,
        [
            (1, "malformed_frame"),
            (2, "malformed_frame"),
            (3, "malformed_frame"),
            (8, "unrecognized_frame"),
            (10, "unrecognized_frame")
        ]
    );
    // A result without status still fits no shape, but one without usable stats completes its turn.
    let done = at_line(&evs, 9)[0];
    assert_eq!(ty(done), "turn_completed");
    assert!(done.get("usage").is_none());
    assert_eq!(done["at"], "2026-03-04T09:15:00.000Z", "epoch seconds are converted");
    let tool = of_type(&evs, "tool_completed")[0];
    assert_eq!((tool["ok"].as_bool(), tool["output"].as_str()), (Some(true), Some("no status")));
    let started = at_line(&evs, 6)[0];
    assert_eq!((started["tool_id"].as_str(), started.get("input")), (Some("line:6"), None));
    assert_eq!(at_line(&evs, 7)[0]["code"], "gemini.error");
}

// ------------------------------------------------------------------------------------------------
// Gemini CLI 0.5x (issue 12 drift): `mcp_agents_and_bare_error.jsonl`.
// ------------------------------------------------------------------------------------------------

const DRIFT: &str = "mcp_agents_and_bare_error";

#[test]
fn an_error_without_severity_keeps_a_full_gemini_stream_gemini() {
    let evs = run(DRIFT);
    let frames = common::input_frames(&fixture("gemini", DRIFT));
    let (n, bare) =
        frames.iter().find(|(_, v)| v["type"] == "error" && v.get("severity").is_none()).expect("fixture line");
    let d = at_line(&evs, *n);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0]["type"].as_str(), d[0]["level"].as_str()), (Some("diagnostic"), Some("error")));
    assert_eq!(d[0]["message"], bare["message"]);
    // Every event of the stream, the lines after the bare error included, stays gemini.
    for e in &evs {
        if !matches!(ty(e), "run_started" | "run_ended") {
            assert_eq!(e["dialect"], "gemini", "{e}");
        }
    }
    let out = common::bin().arg("detect").arg(fixture("gemini", DRIFT)).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("gemini\t"));
}

#[test]
fn mcp_tools_are_kind_mcp_and_invoke_agent_is_a_task() {
    let evs = run(DRIFT);
    let starts = of_type(&evs, "tool_started");
    let by_name = |n: &str| *starts.iter().find(|e| e["name"] == n).unwrap_or_else(|| panic!("{n}"));
    let mcp = by_name("mcp_github_search_issues");
    assert_eq!((mcp["kind"].as_str(), mcp["summary"].as_str()), (Some("mcp"), Some("github/search_issues")));
    assert_eq!(by_name("read_mcp_resource")["kind"], "mcp");
    let agent = by_name("invoke_agent");
    assert_eq!((agent["kind"].as_str(), agent["summary"].as_str()), (Some("task"), Some("codebase_investigator")));
    // The completions carry the same kinds, and the failed resource read keeps its error.
    let failed: Vec<&Value> = of_type(&evs, "tool_completed").into_iter().filter(|e| e["ok"] == false).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["kind"], "mcp");
    assert!(failed[0]["error"].as_str().unwrap().starts_with("resource not found"));
}

#[test]
fn a_result_error_without_an_error_object_takes_the_turns_last_error_frame() {
    let evs = run(DRIFT);
    let frames = common::input_frames(&fixture("gemini", DRIFT));
    let (n, _) = frames.iter().find(|(_, v)| v["type"] == "result" && v["status"] == "error").expect("fixture line");
    assert!(frames.iter().any(|(l, v)| l == n && v.get("error").is_none()));
    // The last `error` frame of level error before it, after the turn before ended.
    let (_, last) = frames.iter().rfind(|(l, v)| l < n && v["type"] == "error" && v["severity"] == "error").unwrap();
    let tf = at_line(&evs, *n).into_iter().find(|e| e["type"] == "turn_failed").unwrap();
    assert_eq!(tf["error"], last["message"]);
    assert_eq!(tf["kind"], "usage_limit");
    // An error frame of an earlier, completed turn is not taken.
    let lines = [
        r#"{"type":"init","timestamp":"2026-11-29T08:30:00.000Z","session_id":"s-1","model":"gemini-3-pro-preview"}"#,
        r#"{"type":"error","timestamp":"2026-11-29T08:30:01.000Z","severity":"error","message":"first turn trouble"}"#,
        r#"{"type":"result","timestamp":"2026-11-29T08:30:02.000Z","status":"success","stats":{}}"#,
        r#"{"type":"result","timestamp":"2026-11-29T08:30:03.000Z","status":"error","stats":{}}"#,
    ];
    let evs = run_stdin(&[], &lines.join("\n"));
    assert_eq!(of_type(&evs, "turn_failed")[0]["error"], "turn failed");
}
