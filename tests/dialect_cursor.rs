//! The `cursor` dialect (Cursor agent `--output-format stream-json`, with and without
//! `--stream-partial-output`) on its fixtures: each mapping of SPEC §2–§4 and each trap, checked
//! against the input it came from.

use serde_json::{Value, json};

mod common;
use common::{at_line, bin, of_type, output_text, root, run_stdin, types_at};

/// The fixture's path relative to the crate root, as the binary prints it.
fn fixture(name: &str) -> String {
    common::fixture("cursor", name).display().to_string()
}

/// Normalizes one fixture by name.
fn events(name: &str) -> Vec<Value> {
    common::events_of("cursor", name)
}

/// The fixture's input frames, 1-based line number first (non-JSON lines left out).
fn input(name: &str) -> Vec<(u64, Value)> {
    common::input_frames(&common::fixture("cursor", name))
}

/// The `result` text of the input's last successful `result` frame.
fn last_result_text(name: &str) -> String {
    input(name)
        .into_iter()
        .rev()
        .find(|(_, f)| f["type"] == "result")
        .and_then(|(_, f)| f["result"].as_str().map(str::to_owned))
        .expect("a result frame")
}

fn tool_pair<'a>(evs: &'a [Value], id: &str) -> (&'a Value, &'a Value) {
    let started = evs.iter().find(|e| e["type"] == "tool_started" && e["tool_id"] == id).expect("started");
    let done = evs.iter().find(|e| e["type"] == "tool_completed" && e["tool_id"] == id).expect("completed");
    (started, done)
}

const ALL: [&str; 8] = [
    "cut_with_unknowns",
    "init_only_mark",
    "partial_output",
    "partial_recap_longer",
    "plan_mode_failed_turn",
    "result_first_camelcase_usage",
    "todos",
    "tools_every_kind",
];

#[test]
fn every_fixture_is_cursor_and_detected_as_such() {
    for name in ALL {
        for e in events(name) {
            if e["type"] != "run_started" && e["type"] != "run_ended" {
                assert_eq!(e["dialect"], "cursor", "{name}: {e}");
            }
        }
        let out = bin().arg("detect").arg(fixture(name)).output().expect("detect");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("cursor\t{}\n", fixture(name)));
    }
}

#[test]
fn trap_text_exactly_once_without_partial_output() {
    // Without partial output the segment flush before the tool call (`model_call_id`) is the only
    // copy of its text, and the end-of-turn flush holds the last segment only.
    let name = "result_first_camelcase_usage";
    let evs = events(name);
    assert_eq!(output_text(&evs), last_result_text(name));
    assert_eq!(types_at(&evs, 4), ["output_delta"]);
    assert_eq!(types_at(&evs, 7), ["output_delta"]);
}

#[test]
fn trap_text_exactly_once_with_partial_output() {
    let name = "partial_output";
    let evs = events(name);
    let frames = input(name);
    assert_eq!(output_text(&evs), last_result_text(name));
    // Every streamed fragment is written as is, identical neighbours included ("Ha", "Ha").
    let fragments: Vec<(u64, &str)> = frames
        .iter()
        .filter(|(_, f)| {
            f["type"] == "assistant" && f.get("timestamp_ms").is_some() && f.get("model_call_id").is_none()
        })
        .map(|(n, f)| (*n, f["message"]["content"][0]["text"].as_str().unwrap()))
        .collect();
    assert!(fragments.windows(2).any(|w| w[0].1 == w[1].1), "the fixture has identical neighbours");
    for (n, text) in &fragments {
        let out = at_line(&evs, *n);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0]["type"].as_str(), out[0]["text"].as_str()), (Some("output_delta"), Some(*text)));
    }
    // The segment recaps and the end-of-turn repeat add nothing: named by a heartbeat.
    for (n, f) in &frames {
        let is_flush =
            f["type"] == "assistant" && (f.get("model_call_id").is_some() || f.get("timestamp_ms").is_none());
        if is_flush {
            assert_eq!(types_at(&evs, *n), ["heartbeat"], "line {n}");
            assert_eq!(at_line(&evs, *n)[0]["frame"], "assistant");
        }
    }
}

#[test]
fn trap_recap_longer_than_what_was_streamed_writes_the_rest() {
    let name = "partial_recap_longer";
    let evs = events(name);
    assert_eq!(output_text(&evs), "second turn and more");
    assert_eq!(output_text(&evs), last_result_text(name));
    let line4 = at_line(&evs, 4);
    assert_eq!((line4[0]["type"].as_str(), line4[0]["text"].as_str()), (Some("output_delta"), Some(" turn")));
}

#[test]
fn trap_a_stream_opening_with_a_camelcase_result_is_cursor() {
    let evs = events("result_first_camelcase_usage");
    let first = &evs[1];
    assert_eq!(first["type"], "turn_completed");
    assert_eq!(first["line"], 1);
    assert_eq!(first["dialect"], "cursor");
    assert_eq!(first["session_id"], "1b9c0de4-55aa-4f02-8c3e-9e7a6b5c4d20");
    assert_eq!(first["usage"], json!({"input": 6, "cache_read": 20411, "cache_write": 2380, "output": 98}));
    // The next run's init opens a new session.
    let started = of_type(&evs, "session_started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["line"], 2);
    assert_eq!(started[0]["session_id"], "7d2e51a0-3c4b-4e11-9a2f-0f6b8c1d2e31");
}

#[test]
fn trap_init_is_the_only_mark_and_the_stream_stays_cursor() {
    let evs = events("init_only_mark");
    assert_eq!(
        of_type(&evs, "session_started")[0].clone(),
        json!({"type": "session_started", "dialect": "cursor", "line": 1, "source": fixture("init_only_mark"),
               "session_id": "3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7", "model": "Claude 4.5 Sonnet",
               "cwd": "/srv/calc", "permission_mode": "default"})
    );
    for n in 2..=4 {
        assert!(at_line(&evs, n).iter().all(|e| e["dialect"] == "cursor"), "line {n}");
    }
    assert_eq!(types_at(&evs, 2), ["user_message"]);
    assert_eq!(output_text(&evs), "144");
    let done = of_type(&evs, "turn_completed")[0];
    assert_eq!((done["result"].as_str(), done["duration_ms"].as_u64()), (Some("144"), Some(3900)));
    assert!(done.get("usage").is_none(), "no usage reported, none written");

    // The same lines without their init carry no Cursor mark: they are `claude` (SPEC §2), unless
    // the dialect is forced.
    let text = std::fs::read_to_string(root().join(fixture("init_only_mark"))).unwrap();
    let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let claude = run_stdin(&[], &rest);
    assert!(claude.iter().filter(|e| e.get("line").is_some()).all(|e| e["dialect"] == "claude"));
    let forced = run_stdin(&["--dialect", "cursor"], &rest);
    assert!(forced.iter().filter(|e| e.get("line").is_some()).all(|e| e["dialect"] == "cursor"));
    assert_eq!(output_text(&forced), "144");
}

#[test]
fn trap_usage_is_the_turn_aggregate_folded_from_camelcase() {
    let evs = events("result_first_camelcase_usage");
    let last = of_type(&evs, "turn_completed")[1];
    assert_eq!(last["usage"], json!({"input": 5, "cache_read": 14002, "cache_write": 16110, "output": 131}));
    assert_eq!(last["duration_ms"], 6120);
    assert!(last.get("usage_scope").is_none() && last.get("cost_usd").is_none());
    // Cache figures the CLI did not report stay absent, never 0.
    let partial = events("partial_output");
    assert_eq!(of_type(&partial, "turn_completed")[0]["usage"], json!({"input": 2210, "output": 64}));
    // Cursor reports no per-request usage: no `usage` events, in any fixture.
    for name in ALL {
        assert!(of_type(&events(name), "usage").is_empty(), "{name}");
    }
}

#[test]
fn trap_timestamp_ms_is_at() {
    let evs = events("result_first_camelcase_usage");
    assert_eq!(at_line(&evs, 4)[0]["at"], "2026-05-28T20:26:40.100Z");
    assert_eq!(at_line(&evs, 6)[0]["at"], "2026-05-28T20:26:40.230Z");
    for n in [1, 2, 3, 7, 8] {
        assert!(at_line(&evs, n).iter().all(|e| e.get("at").is_none()), "line {n} has no time of its own");
    }
}

#[test]
fn trap_every_tool_key_pairs_with_name_kind_and_input() {
    let evs = events("tools_every_kind");
    let cases = [
        ("t_read", "read", "read", Some("/repo/src/main.rs")),
        ("t_read_missing", "read", "read", Some("/repo/nope.txt")),
        ("t_write", "write", "write", Some("/repo/NOTES.md")),
        ("t_edit", "edit", "edit", Some("/repo/src/main.rs")),
        ("t_shell_ok", "shell", "shell", Some("cargo build --quiet")),
        ("t_shell_fail", "shell", "shell", Some("cargo test")),
        ("t_shell_rejected", "shell", "shell", Some("rm -rf target")),
        ("t_grep", "grep", "search", Some("TODO")),
        ("t_glob", "glob", "search", Some("**/*.toml")),
        ("t_delete", "delete", "edit", Some("/repo/old.log")),
        ("t_mcp", "mcp", "mcp", Some("tracker/create_issue")),
        ("t_mcp_err", "mcp", "mcp", Some("tracker/close_issue")),
        ("t_fn_str", "lookup_symbol", "other", None),
        ("t_fn_obj", "run_terminal_cmd", "shell", Some("git status --short")),
        ("t_new", "semanticDiff", "other", None),
        ("t_orphan", "glob", "search", Some("*.lock")),
        ("t_noresult", "webFetch", "fetch", Some("https://example.org/changelog")),
        ("t_inner_id", "read", "read", Some("/repo/Cargo.toml")),
    ];
    for (id, name, kind, summary) in cases {
        let (s, c) = tool_pair(&evs, id);
        assert_eq!((s["name"].as_str(), s["kind"].as_str()), (Some(name), Some(kind)), "{id}");
        assert_eq!(s["summary"].as_str(), summary, "{id}");
        assert_eq!((c["name"].as_str(), c["kind"].as_str()), (Some(name), Some(kind)), "{id}");
        assert!(s["line"].as_u64() <= c["line"].as_u64(), "{id}");
        assert_eq!(s.get("synthetic").is_some(), id == "t_orphan", "{id}: only a start never seen is synthetic");
    }
    // `input` is `args` as given, from the start line.
    let frames = input("tools_every_kind");
    let (s, _) = tool_pair(&evs, "t_shell_ok");
    let start_frame = &frames.iter().find(|(n, _)| Some(*n) == s["line"].as_u64()).unwrap().1;
    assert_eq!(s["input"], start_frame["tool_call"]["shellToolCall"]["args"]);
    // The orphan's synthetic start comes from its completion line, with the arguments it carries.
    let (s, c) = tool_pair(&evs, "t_orphan");
    assert_eq!(s["line"], c["line"]);
    assert_eq!(s["input"], json!({"targetDirectory": "/repo", "globPattern": "*.lock"}));
    // A start and a completion that name their id only inside `tool_call` still pair.
    let (s, c) = tool_pair(&evs, "t_inner_id");
    assert_ne!(s["line"], c["line"]);
}

#[test]
fn trap_tool_results_ok_output_exit_code_error() {
    let evs = events("tools_every_kind");
    let done = |id: &str| tool_pair(&evs, id).1.clone();
    let c = done("t_read");
    assert_eq!(
        (c["ok"].as_bool(), c["output"].as_str()),
        (Some(true), Some("fn main() {\n    println!(\"hi\");\n}\n"))
    );
    let c = done("t_read_missing");
    assert_eq!((c["ok"].as_bool(), c["error"].as_str()), (Some(false), Some("File not found: /repo/nope.txt")));
    let c = done("t_edit");
    assert_eq!(c["output"], "-    println!(\"hi\");\n+    println!(\"hello\");");
    let c = done("t_shell_ok");
    assert_eq!((c["ok"].as_bool(), c["exit_code"].as_i64()), (Some(true), Some(0)));
    assert_eq!(c["output"], "warning: unused import\n");
    assert!(c.get("error").is_none());
    let c = done("t_shell_fail");
    assert_eq!((c["ok"].as_bool(), c["exit_code"].as_i64()), (Some(false), Some(101)));
    assert_eq!(c["error"], "exit code 101");
    assert_eq!(c["output"], "running 3 tests\ntest result: FAILED. 2 passed; 1 failed\n");
    // The rejected completion has no `args`; its start (seen earlier) keeps the input.
    let (s, c) = tool_pair(&evs, "t_shell_rejected");
    assert_eq!((c["ok"].as_bool(), c["error"].as_str()), (Some(false), Some("rejected")));
    assert!(c.get("exit_code").is_none() && c.get("output").is_none());
    assert_eq!(s["input"]["command"], "rm -rf target");
    let c = done("t_glob");
    assert_eq!(c["output"], "Cargo.toml\nrustfmt.toml");
    let c = done("t_mcp");
    assert_eq!((c["ok"].as_bool(), c["output"].as_str()), (Some(true), Some("Created issue #42")));
    let c = done("t_mcp_err");
    assert_eq!((c["ok"].as_bool(), c["error"].as_str()), (Some(false), Some("Issue 7 not found")));
    // A structured result without a text field is written as compact JSON.
    let c = done("t_write");
    assert_eq!(
        serde_json::from_str::<Value>(c["output"].as_str().unwrap()).unwrap(),
        json!({"path": "/repo/NOTES.md", "linesCreated": 1, "fileSize": 8})
    );
    let c = done("t_grep");
    let grep: Value = serde_json::from_str(c["output"].as_str().unwrap()).unwrap();
    assert_eq!(grep["workspaceResults"]["/repo"]["content"]["matches"][0]["file"], "src/lib.rs");
    // Nothing reported, nothing written.
    for id in ["t_new", "t_noresult", "t_orphan"] {
        let c = done(id);
        assert_eq!(c["ok"], true, "{id}");
        assert!(c.get("output").is_none() && c.get("error").is_none(), "{id}");
    }
    let c = done("t_fn_obj");
    assert_eq!(c["output"], " M src/main.rs\n");
}

#[test]
fn trap_function_arguments_string_is_decoded_in_order() {
    let evs = events("tools_every_kind");
    let (s, _) = tool_pair(&evs, "t_fn_str");
    assert_eq!(s["input"], json!({"symbol": "main", "exact": true}));
    let raw = bin().arg("--no-observed-at").arg(fixture("tools_every_kind")).output().unwrap();
    let line = String::from_utf8(raw.stdout).unwrap();
    assert!(line.contains(r#""input":{"symbol":"main","exact":true}"#), "key order kept");
    let (s, _) = tool_pair(&evs, "t_fn_obj");
    assert_eq!(s["input"], json!({"command": "git status --short", "is_background": false}));
}

#[test]
fn trap_update_todos_gives_plan_updated() {
    let evs = events("todos");
    let plans = of_type(&evs, "plan_updated");
    assert_eq!(plans.len(), 2, "the echo of an unchanged list is not a second plan");
    assert_eq!(plans[0]["line"], 3);
    assert_eq!(
        plans[0]["items"],
        json!([
            {"text": "Read the failing test", "status": "completed"},
            {"text": "Fix the parser", "status": "in_progress"},
            {"text": "Update docs", "status": "pending"},
            {"text": "Port to Windows", "status": "cancelled"},
        ])
    );
    // A merge update names one item: the plan is the full list the completion echoes.
    assert_eq!(plans[1]["line"], 6);
    assert_eq!(plans[1]["items"][1], json!({"text": "Fix the parser", "status": "completed"}));
    assert_eq!(plans[1]["items"].as_array().unwrap().len(), 4);
    assert!(!types_at(&evs, 5).contains(&"plan_updated".to_owned()));
    let (s, c) = tool_pair(&evs, "todo_1");
    assert_eq!(
        (s["name"].as_str(), s["kind"].as_str(), c["ok"].as_bool()),
        (Some("updateTodos"), Some("plan"), Some(true))
    );
}

#[test]
fn trap_error_result_is_turn_failed_with_its_usage() {
    let evs = events("plan_mode_failed_turn");
    assert!(of_type(&evs, "turn_completed").is_empty());
    let failed = of_type(&evs, "turn_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["error"], "You've hit your usage limit for this billing period.");
    assert_eq!(failed[0]["kind"], "usage_limit");
    assert_eq!(failed[0]["usage"], json!({"input": 800, "output": 20}));
    assert_eq!(failed[0]["duration_ms"], 1500);
    let out = bin().arg("--fail-on-error").arg(fixture("plan_mode_failed_turn")).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn trap_liveness_frames_are_heartbeats_and_thinking_is_reasoning() {
    let evs = events("plan_mode_failed_turn");
    assert_eq!(at_line(&evs, 3)[0]["frame"], "interaction_query/request");
    assert_eq!(at_line(&evs, 4)[0]["frame"], "interaction_query/response");
    assert_eq!(types_at(&evs, 5), ["reasoning"]);
    assert_eq!(at_line(&evs, 5)[0]["text"], "Listing the tables first.");
    assert_eq!(at_line(&evs, 6)[0]["frame"], "thinking/completed");
    assert_eq!(of_type(&evs, "unknown").len(), 0);
    // A thinking recap (with `model_call_id`) repeats the deltas: reasoning without text.
    let evs = events("partial_output");
    let texts: Vec<&str> = of_type(&evs, "reasoning").iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(texts, ["The user wants the port; ", "check config.yaml."]);
    assert_eq!(of_type(&evs, "reasoning").len(), 3);
}

#[test]
fn trap_a_cut_stream_is_incomplete_and_new_frames_are_unknown() {
    let evs = events("cut_with_unknowns");
    let end = evs.last().unwrap();
    assert_eq!(end["complete"], false);
    assert_eq!(end["unknown"], 3);
    assert_eq!(end["unknown_frames"], json!({"status_update": 1, "tool_call/progress": 1}));
    let stderr = at_line(&evs, 3)[0];
    assert_eq!((stderr["reason"].as_str(), stderr["dialect"].as_str()), (Some("not_json"), Some("cursor")));
    assert_eq!(at_line(&evs, 5)[0]["frame"], "tool_call/progress");
    assert_eq!(output_text(&evs), "Benchmarks are ");
    let out = bin().arg("--fail-on-error").arg(fixture("cut_with_unknowns")).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "the turn was left open");
}

#[test]
fn execution_time_becomes_duration_ms_and_none_is_derived() {
    let name = "execution_time";
    let evs = events(name);
    let mut checked = 0;
    for (n, v) in input(name) {
        if v["type"] != "tool_call" || v["subtype"] != "completed" {
            continue;
        }
        let call = v["tool_call"].as_object().unwrap().values().next().unwrap();
        let result = &call["result"];
        let want = result["success"]["executionTime"].as_u64().or_else(|| result["failure"]["executionTime"].as_u64());
        let done: Vec<&Value> = at_line(&evs, n).into_iter().filter(|e| e["type"] == "tool_completed").collect();
        assert_eq!(done.len(), 1, "line {n}");
        assert_eq!(done[0]["duration_ms"].as_u64(), want, "line {n}");
        checked += usize::from(want.is_some());
    }
    assert_eq!(checked, 2, "two shell calls report executionTime in the fixture");
}

#[test]
fn cancelled_todos_stay_cancelled() {
    let evs = events("todos");
    let plan = of_type(&evs, "plan_updated");
    let statuses: Vec<&str> =
        plan[0]["items"].as_array().unwrap().iter().map(|i| i["status"].as_str().unwrap()).collect();
    let raw: Vec<Value> = input("todos")
        .into_iter()
        .filter_map(|(_, v)| {
            v["tool_call"]["updateTodosToolCall"]["args"]["todos"]
                .as_array()
                .map(|t| t.iter().map(|i| i["status"].clone()).collect::<Vec<_>>())
        })
        .next()
        .unwrap();
    assert_eq!(statuses.len(), raw.len());
    for (got, raw) in statuses.iter().zip(&raw) {
        if raw == "TODO_STATUS_CANCELLED" {
            assert_eq!(*got, "cancelled");
        }
    }
    assert!(statuses.contains(&"cancelled"), "{statuses:?}");
}
