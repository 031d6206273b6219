//! Golden tests over the project's own fixture streams (`fixtures/<dialect>/*.jsonl`).
//!
//! Each fixture is normalized by the built binary with `--no-observed-at`, its path given relative
//! to the crate root (so `source` is stable), and the output is compared byte for byte with
//! `fixtures/<dialect>/<name>.expected`. `UPDATE_GOLDEN=1 cargo test --test golden`
//! rewrites the expected files instead (`UPDATE_GOLDEN=<dialect>` only that folder's).
//!
//! Besides the byte comparison, every fixture's output is checked against the contract's
//! invariants (SPEC §1, §3): it reads back into `agentnorm::Event`, every non-blank input line is
//! accounted for, every `tool_completed` follows its `tool_started`, `run_ended.lines` counts the
//! input lines, `null` appears only inside `tool_started.input`, and the assistant text comes out
//! exactly once. The tests named `trap_*` pin the usage traps of SPEC §4 and the mappings SPEC §3
//! names for Claude and Codex, each on the fixture written for it.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{
    all_dialects, all_fixtures, at_line, events_of, first_difference, fixtures, input_frames, input_lines, line,
    of_type, output_text, root, run_path, run_path_text, ty, types_at,
};

/// The dialects whose assistant text this file checks from the input (the others check theirs
/// in `tests/dialect_<name>.rs`).
const DIALECTS: [&str; 2] = ["claude", "codex"];

fn expected_path(fixture: &Path) -> PathBuf {
    let stem = fixture.file_stem().expect("file name").to_string_lossy().into_owned();
    fixture.with_file_name(format!("{stem}.expected"))
}

fn golden(dialect: &str) {
    // UPDATE_GOLDEN=1 rewrites every expected file; UPDATE_GOLDEN=<dialect> only that folder's.
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1" || v == dialect);
    let mut failures = Vec::new();
    for fixture in fixtures(dialect) {
        let actual = run_path_text(&fixture);
        let expected_file = root().join(expected_path(&fixture));
        if update {
            std::fs::write(&expected_file, &actual).expect("writing expected output");
            continue;
        }
        match std::fs::read_to_string(&expected_file) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!("{}: {}", fixture.display(), first_difference(&expected, &actual))),
            Err(e) => failures.push(format!(
                "{}: cannot read {} ({e}); run UPDATE_GOLDEN=1 cargo test --test golden",
                fixture.display(),
                expected_file.display()
            )),
        }
    }
    assert!(failures.is_empty(), "golden output differs:\n\n{}", failures.join("\n\n"));
}

#[test]
fn golden_every_dialect() {
    let dialects = all_dialects();
    assert!(dialects.iter().any(|d| d == "claude") && dialects.iter().any(|d| d == "codex"));
    for d in dialects {
        golden(&d);
    }
}

// ------------------------------------------------------------------------------------------------
// Invariants, on every fixture
// ------------------------------------------------------------------------------------------------

#[test]
fn output_reads_back_into_event_and_reserializes_equal() {
    let mut failures = Vec::new();
    for fixture in all_fixtures() {
        for (i, l) in run_path_text(&fixture).lines().enumerate() {
            let original: Value = serde_json::from_str(l).expect("JSON");
            match serde_json::from_str::<agentnorm::Event>(l) {
                Ok(ev) => {
                    let again = serde_json::to_value(&ev).expect("serialize");
                    if again != original {
                        failures.push(format!(
                            "{}:{} re-serializes differently:\n  read:  {l}\n  wrote: {again}",
                            fixture.display(),
                            i + 1
                        ));
                    }
                }
                Err(e) => failures.push(format!("{}:{} does not read back ({e}): {l}", fixture.display(), i + 1)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An event read back into `Event` and written again is the same bytes (keys of
/// `tool_started.input` in the CLI's order, numbers and escapes as written).
#[test]
fn output_read_back_and_written_again_is_byte_identical() {
    let mut failures = Vec::new();
    for fixture in all_fixtures() {
        for (i, l) in run_path_text(&fixture).lines().enumerate() {
            let Ok(ev) = serde_json::from_str::<agentnorm::Event>(l) else { continue };
            let mut sink = agentnorm::NdjsonSink::default();
            agentnorm::Sink::event(&mut sink, &ev);
            let again = String::from_utf8(sink.buf).expect("UTF-8");
            if again.trim_end_matches('\n') != l {
                failures.push(format!("{}:{}\n  read:  {l}\n  wrote: {again}", fixture.display(), i + 1));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_non_blank_input_line_is_accounted_for() {
    let mut failures = Vec::new();
    for fixture in all_fixtures() {
        let evs = run_path(&fixture);
        let mut named = HashSet::new();
        for e in &evs {
            if let Some(first) = line(e) {
                let last = e.get("line_end").and_then(Value::as_u64).unwrap_or(first);
                named.extend(first..=last);
            }
        }
        for (i, l) in input_lines(&fixture).iter().enumerate() {
            let n = i as u64 + 1;
            if !l.trim().is_empty() && !named.contains(&n) {
                failures.push(format!(
                    "{}:{n} has no event: {}",
                    fixture.display(),
                    l.chars().take(120).collect::<String>()
                ));
            }
            if l.trim().is_empty() && named.contains(&n) {
                failures.push(format!("{}:{n} is blank but has an event", fixture.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_tool_completed_follows_its_tool_started() {
    let mut failures = Vec::new();
    for fixture in all_fixtures() {
        let evs = run_path(&fixture);
        let mut started = HashSet::new();
        for e in &evs {
            match ty(e) {
                // Per-process ids (Codex `item_0`, …) start over with a new session.
                "session_started" => started.clear(),
                "tool_started" => {
                    let id = e["tool_id"].as_str().expect("tool_started.tool_id").to_owned();
                    if !started.insert(id.clone()) {
                        failures.push(format!("{}: tool {id} started twice", fixture.display()));
                    }
                }
                "tool_completed" => {
                    let id = e["tool_id"].as_str().expect("tool_completed.tool_id");
                    if !started.contains(id) {
                        failures.push(format!(
                            "{}: tool_completed {id} (line {:?}) before any tool_started",
                            fixture.display(),
                            line(e)
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn run_ended_counts_input_lines_and_events() {
    let mut failures = Vec::new();
    for fixture in all_fixtures() {
        let evs = run_path(&fixture);
        let lines = input_lines(&fixture).len() as u64;
        let first = evs.first().expect("some output");
        let last = evs.last().expect("some output");
        if ty(first) != "run_started" || of_type(&evs, "run_started").len() != 1 {
            failures.push(format!("{}: run_started is not first and only", fixture.display()));
        }
        if ty(last) != "run_ended" || of_type(&evs, "run_ended").len() != 1 {
            failures.push(format!("{}: run_ended is not last and only", fixture.display()));
        }
        if last["lines"].as_u64() != Some(lines) {
            failures.push(format!(
                "{}: run_ended.lines {} but the input has {lines} lines",
                fixture.display(),
                last["lines"]
            ));
        }
        if last["events"].as_u64() != Some(evs.len() as u64 - 1) {
            failures.push(format!(
                "{}: run_ended.events {} but {} events were written",
                fixture.display(),
                last["events"],
                evs.len() - 1
            ));
        }
        let unknown = of_type(&evs, "unknown").len() as u64;
        if last["unknown"].as_u64() != Some(unknown) {
            failures.push(format!(
                "{}: run_ended.unknown {} but {unknown} unknown events",
                fixture.display(),
                last["unknown"]
            ));
        }
        let source = fixture.to_string_lossy();
        for e in &evs {
            if e["source"].as_str() != Some(source.as_ref()) {
                failures.push(format!("{}: event without source {source}: {e}", fixture.display()));
                break;
            }
            if e.get("observed_at").is_some() {
                failures.push(format!("{}: observed_at written despite --no-observed-at", fixture.display()));
                break;
            }
        }
        if ty(&evs[0]).is_empty() {
            failures.push(format!("{}: event without type", fixture.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn find_null(v: &Value, path: &mut Vec<String>, out: &mut Vec<String>) {
    match v {
        Value::Null => out.push(path.join(".")),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                find_null(x, path, out);
                path.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                path.push(k.clone());
                find_null(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[test]
fn no_null_except_inside_tool_started_input() {
    let mut failures = Vec::new();
    for fixture in all_fixtures() {
        for e in run_path(&fixture) {
            let mut e = e;
            if ty(&e) == "tool_started" {
                if e.get("input").is_some_and(Value::is_null) {
                    failures.push(format!("{}: tool_started.input is null itself: {e}", fixture.display()));
                }
                e.as_object_mut().expect("object").remove("input");
            }
            let mut nulls = Vec::new();
            find_null(&e, &mut Vec::new(), &mut nulls);
            if !nulls.is_empty() {
                failures.push(format!("{}: null at {nulls:?} in {e}", fixture.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_event_type_is_in_the_contract_and_carries_the_dialect() {
    let mut failures = Vec::new();
    for fixture in all_fixtures() {
        let dialect = fixture.parent().and_then(Path::file_name).unwrap().to_string_lossy().into_owned();
        for e in run_path(&fixture) {
            if !agentnorm::Event::TYPE_NAMES.contains(&ty(&e)) {
                failures.push(format!("{}: type outside the contract: {e}", fixture.display()));
            }
            if matches!(ty(&e), "run_started" | "run_ended") {
                if line(&e).is_some() {
                    failures.push(format!("{}: {} carries a line", fixture.display(), ty(&e)));
                }
                continue;
            }
            // Lines before the dialect is fixed (stderr text first) may carry none.
            if let Some(d) = e.get("dialect") {
                if d.as_str() != Some(dialect.as_str()) {
                    failures.push(format!("{}: dialect {d} (expected {dialect}): {e}", fixture.display()));
                }
            } else if ty(&e) != "unknown" && ty(&e) != "diagnostic" {
                failures.push(format!("{}: event without dialect: {e}", fixture.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The assistant text of a fixture's input, whole messages only, in order.
fn assistant_text_of_input(dialect: &str, fixture: &Path) -> String {
    let mut s = String::new();
    for (_, f) in input_frames(fixture) {
        match dialect {
            // A synthetic API-error message is the CLI's error sentence, a diagnostic.
            "claude" if f["type"] == "assistant" && f["is_api_error_message"] != true => {
                for b in f["message"]["content"].as_array().into_iter().flatten() {
                    if b["type"] == "text" {
                        s += b["text"].as_str().unwrap_or("");
                    }
                }
            }
            "codex" if f["type"] == "item.completed" => {
                let it = &f["item"];
                let t = it.get("type").or_else(|| it.get("item_type")).and_then(Value::as_str);
                if matches!(t, Some("agent_message" | "assistant_message")) {
                    s += it["text"].as_str().unwrap_or("");
                }
            }
            _ => {}
        }
    }
    s
}

#[test]
fn assistant_text_comes_out_exactly_once() {
    let mut failures = Vec::new();
    for d in DIALECTS {
        for fixture in fixtures(d) {
            let evs = run_path(&fixture);
            let want = assistant_text_of_input(d, &fixture);
            let got = output_text(&evs);
            if got != want {
                failures.push(format!("{}:\n  input text:  {want:?}\n  output text: {got:?}", fixture.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn claude_one_usage_event_per_message() {
    let mut failures = Vec::new();
    for fixture in fixtures("claude") {
        let evs = run_path(&fixture);
        // Expected: one per distinct non-synthetic message.id; lines without an id each count.
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        let mut anonymous = 0;
        for (n, f) in input_frames(&fixture) {
            if f["type"] != "assistant" || f["message"]["usage"].is_null() || f["message"]["model"] == "<synthetic>" {
                continue;
            }
            match f["message"]["id"].as_str() {
                Some(id) => {
                    want.entry(id.to_owned()).or_insert(n);
                }
                None => anonymous += 1,
            }
        }
        let mut got: BTreeMap<String, u64> = BTreeMap::new();
        let mut got_anonymous = 0;
        for e in of_type(&evs, "usage") {
            match e["message_id"].as_str() {
                Some(id) => *got.entry(id.to_owned()).or_insert(0) += 1,
                None => got_anonymous += 1,
            }
        }
        for (id, first_line) in &want {
            match got.get(id) {
                Some(1) => {}
                Some(k) => failures.push(format!("{}: {k} usage events for {id}", fixture.display())),
                None => {
                    failures.push(format!("{}: no usage event for {id} (first line {first_line})", fixture.display()))
                }
            }
        }
        for id in got.keys().filter(|id| !want.contains_key(*id)) {
            failures.push(format!("{}: usage event for {id}, which is no model request", fixture.display()));
        }
        if got_anonymous != anonymous {
            failures.push(format!(
                "{}: {got_anonymous} usage events without message_id, {anonymous} assistant lines without id",
                fixture.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn result_usage_is_only_on_turn_events() {
    let mut failures = Vec::new();
    for fixture in fixtures("claude") {
        let evs = run_path(&fixture);
        for (n, f) in input_frames(&fixture) {
            if f["type"] != "result" {
                continue;
            }
            let here = at_line(&evs, n);
            if here.iter().any(|e| ty(e) == "usage") {
                failures.push(format!("{}:{n}: a result line made a usage event", fixture.display()));
            }
            let turn: Vec<_> = here.iter().filter(|e| matches!(ty(e), "turn_completed" | "turn_failed")).collect();
            if turn.len() != 1 {
                failures.push(format!("{}:{n}: {} turn events for one result", fixture.display(), turn.len()));
                continue;
            }
            let u = &f["usage"];
            if u.is_object() {
                let tu = &turn[0]["usage"];
                let want = [
                    ("input", "input_tokens"),
                    ("cache_read", "cache_read_input_tokens"),
                    ("cache_write", "cache_creation_input_tokens"),
                    ("output", "output_tokens"),
                ];
                for (k, src) in want {
                    if tu.get(k) != u.get(src) {
                        failures.push(format!(
                            "{}:{n}: turn usage.{k} = {:?}, result has {src} = {:?}",
                            fixture.display(),
                            tu.get(k),
                            u.get(src)
                        ));
                    }
                }
                if tu.get("context").is_some() {
                    failures.push(format!("{}:{n}: context on a turn's usage (usage events only)", fixture.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ------------------------------------------------------------------------------------------------
// Claude traps and mappings, one fixture each
// ------------------------------------------------------------------------------------------------

/// An RFC 3339 UTC time equal to `want` (`…:00Z` and `…:00.000Z` are the same instant).
fn assert_instant(got: &Value, want: &str) {
    let g = got.as_str().unwrap_or_else(|| panic!("not a time string: {got}"));
    assert_eq!(g.replace(".000Z", "Z"), want, "resets_at {g}");
}

fn usage_for<'a>(evs: &'a [Value], message_id: &str) -> &'a Value {
    let found: Vec<_> = of_type(evs, "usage").into_iter().filter(|e| e["message_id"] == message_id).collect();
    assert_eq!(found.len(), 1, "usage events for {message_id}: {found:?}");
    found[0]
}

#[test]
fn trap_partial_messages_text_exactly_once() {
    let evs = events_of("claude", "partial_messages");
    assert_eq!(output_text(&evs), "It prints **6** (1+2+3).");
    // The deltas are what is emitted (lines 24-26), the whole assistant line (27) is not.
    let lines: Vec<u64> = of_type(&evs, "output_delta").iter().filter_map(|e| line(e)).collect();
    assert_eq!(lines, [24, 25, 26]);
    for e in of_type(&evs, "output_delta") {
        assert_eq!(e["message_id"], "msg_01PqC5yWpv7AkBh4Qc8Md0Jj");
    }
}

#[test]
fn trap_partial_messages_usage_at_message_delta_with_final_output() {
    let evs = events_of("claude", "partial_messages");
    let u1 = usage_for(&evs, "msg_01PqC4xVou6ZjAg3Pb7Lc9Ih");
    assert_eq!(line(u1), Some(18), "emitted at the message_delta line: {u1}");
    assert_eq!(u1["usage"]["output"], 121, "the final output count: {u1}");
    assert_eq!(u1["usage"]["input"], 2);
    assert_eq!(u1["usage"]["cache_write"], 2950);
    assert_eq!(u1["usage"]["cache_read"], 30110);
    assert_eq!(u1["usage"]["context"], 2 + 2950 + 30110);
    assert_eq!(u1["model"], "claude-sonnet-5");
    let u2 = usage_for(&evs, "msg_01PqC5yWpv7AkBh4Qc8Md0Jj");
    assert_eq!(line(u2), Some(29));
    assert_eq!(u2["usage"]["output"], 17);
    assert_eq!(of_type(&evs, "usage").len(), 2);
}

#[test]
fn trap_partial_messages_liveness_and_tools() {
    let evs = events_of("claude", "partial_messages");
    // The stream_event tool_use block start (empty input) does not start the tool; the whole
    // assistant line does, once, with the complete input.
    let starts = of_type(&evs, "tool_started");
    assert_eq!(starts.len(), 1);
    assert_eq!(line(starts[0]), Some(16));
    assert_eq!(starts[0]["input"]["command"], "seq 1 3 | paste -sd+ | bc");
    assert_eq!(starts[0]["kind"], "shell");
    let done = of_type(&evs, "tool_completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["ok"], true);
    assert_eq!(done[0]["output"], "6");
    // Reasoning from thinking_tokens / thinking deltas, never with empty text.
    for e in of_type(&evs, "reasoning") {
        assert!(e.get("text").is_none(), "empty thinking gives reasoning without text: {e}");
    }
    assert!(types_at(&evs, 6).contains(&"reasoning".to_owned()), "thinking_tokens → reasoning");
    // Frames without text, thinking or final usage are heartbeats named after the frame.
    let hb = |n: u64| {
        at_line(&evs, n).iter().find(|e| ty(e) == "heartbeat").map(|e| e["frame"].as_str().unwrap_or("").to_owned())
    };
    assert_eq!(hb(2).as_deref(), Some("system/status"));
    assert_eq!(hb(4).as_deref(), Some("stream_event/message_start"));
    assert_eq!(hb(10).as_deref(), Some("stream_event/content_block_stop"));
    assert_eq!(hb(19).as_deref(), Some("stream_event/message_stop"));
    let tc = of_type(&evs, "turn_completed");
    assert_eq!(tc.len(), 1);
    assert_eq!(tc[0]["result"], "It prints **6** (1+2+3).");
    assert!(evs.last().unwrap()["complete"].as_bool().unwrap());
}

#[test]
fn trap_partial_message_cut_before_message_delta_still_has_usage() {
    // An interrupted partial message has a message_start but no message_delta: the request was
    // made and billed, so its usage (input and cache figures, no final output) must not be lost.
    let evs = events_of("claude", "partial_messages_interrupted");
    assert_eq!(output_text(&evs), "Pipes were added to Unix in 19", "text once, from the deltas");
    assert_eq!(types_at(&evs, 9), ["heartbeat"], "the aborted whole message repeats the deltas");
    let u = usage_for(&evs, "msg_01SdE1yXpw3KbBh0Qc4Md6Jl");
    assert_eq!(u["usage"]["input"], 3);
    assert_eq!(u["usage"]["cache_write"], 1204);
    assert_eq!(u["usage"]["cache_read"], 20990);
    assert_eq!(of_type(&evs, "interrupt").len(), 1);
    assert_eq!(of_type(&evs, "turn_failed")[0]["kind"], "aborted");
}

#[test]
fn trap_no_partial_messages_usage_once_at_first_line_without_output() {
    let evs = events_of("claude", "no_partial_messages");
    for (id, first) in [
        ("msg_01NpA7tRkq2VfWc9Lx3Hy5Ed", 6),
        ("msg_01NpA8uSlr3WgXd0My4Iz6Fe", 9),
        ("msg_01NpA9vTms4XhYe1Nz5Ja7Gf", 12),
        ("msg_01NpB0wUnt5YiZf2Oa6Kb8Hg", 18),
    ] {
        let u = usage_for(&evs, id);
        assert_eq!(line(u), Some(first), "{id} at its first assistant line: {u}");
        assert!(u["usage"].get("output").is_none(), "the snapshot output count is not final: {u}");
    }
    let u = usage_for(&evs, "msg_01NpA7tRkq2VfWc9Lx3Hy5Ed");
    // cache_write_1h: the fixture writes the whole 4120 to the 1-hour cache (an extension).
    assert_eq!(
        u["usage"],
        serde_json::json!({"input": 3, "cache_read": 18800, "cache_write": 4120, "context": 22923, "cache_write_1h": 4120})
    );
}

#[test]
fn trap_no_partial_messages_sessions_prompts_tools_rate_limits() {
    let evs = events_of("claude", "no_partial_messages");
    // Repeated init with the same session id: one session_started.
    let ss = of_type(&evs, "session_started");
    assert_eq!(ss.len(), 1);
    assert_eq!(ss[0]["model"], "claude-sonnet-5");
    assert_eq!(ss[0]["cli_version"], "2.1.220");
    assert_eq!(ss[0]["permission_mode"], "bypassPermissions");
    assert_eq!(ss[0]["cwd"], "/home/dev/projects/cfgkit");
    assert!(ss[0]["tools"].as_array().unwrap().iter().any(|t| t == "Bash"));
    assert!(types_at(&evs, 15).iter().all(|t| t == "heartbeat"), "second init: {:?}", types_at(&evs, 15));
    // isReplay prompts are the user's messages.
    let um: Vec<&str> = of_type(&evs, "user_message").iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(um, ["Count the TODO markers under src/ and report the number.", "Now list them by file."]);
    // is_error true → ok false with the error text; is_error absent → ok true; array content joined.
    let done = of_type(&evs, "tool_completed");
    assert_eq!(done.len(), 2);
    assert_eq!(done[0]["ok"], false);
    assert!(done[0]["error"].as_str().unwrap().contains("Blocked"));
    assert_eq!(done[0]["name"], "Bash");
    assert_eq!(done[0]["kind"], "shell");
    assert_eq!(done[1]["ok"], true);
    assert_eq!(done[1]["output"], "7");
    assert!(done[1].get("error").is_none());
    let starts = of_type(&evs, "tool_started");
    assert_eq!(starts[1]["summary"], "grep -rn TODO src/ | wc -l");
    // Old-shape rate_limit_event repeated unchanged: one rate_limit.
    let rl = of_type(&evs, "rate_limit");
    assert_eq!(rl.len(), 1, "{rl:?}");
    assert_eq!(line(rl[0]), Some(3));
    assert_eq!(rl[0]["window"], "five_hour");
    assert_eq!(rl[0]["window_minutes"], 300);
    assert_eq!(rl[0]["status"], "allowed");
    assert_eq!(rl[0]["overage_status"], "rejected");
    assert_eq!(rl[0]["using_overage"], false);
    assert_instant(&rl[0]["resets_at"], "2026-08-06T10:00:00Z");
    assert!(rl[0].get("used_percent").is_none());
    assert_eq!(types_at(&evs, 13), ["heartbeat"]);
    // Two turns completed, with the turn aggregates.
    let tc = of_type(&evs, "turn_completed");
    assert_eq!(tc.len(), 2);
    assert_eq!(tc[0]["num_turns"], 3);
    assert_eq!(tc[0]["cost_usd"], 0.0291337);
    assert_eq!(tc[0]["duration_ms"], 7431);
    assert_eq!(tc[0]["stop_reason"], "end_turn");
    assert!(tc.iter().all(|e| e.get("usage_scope").is_none_or(|s| s == "turn")));
}

#[test]
fn trap_subagent_usage_and_text_carry_parent_tool_id() {
    let evs = events_of("claude", "subagent_background_agent");
    const AG: &str = "toolu_01XhJ0dBua2FpGm9Vh3Ri5Op";
    for id in ["msg_01BlN4hFye6JtKq3Zl7Vm9St", "msg_01CmO5iGzf7KuLr4Am8Wn0Tu"] {
        let u = usage_for(&evs, id);
        assert_eq!(u["parent_tool_id"], AG, "subagent usage: {u}");
        assert!(u["usage"].get("output").is_none(), "subagent messages have no message_delta: {u}");
    }
    for id in ["msg_01ZjL2fDwc4HrIo1Xj5Tk7Qr", "msg_01AkM3gExd5IsJp2Yk6Ul8Rs", "msg_01DnP6jHag8LvMs5Bn9Xo1Uv"] {
        let u = usage_for(&evs, id);
        assert!(u.get("parent_tool_id").is_none(), "main-thread usage: {u}");
    }
    // The main message whose tool result came before its message_delta: final output at line 11.
    let u = usage_for(&evs, "msg_01ZjL2fDwc4HrIo1Xj5Tk7Qr");
    assert_eq!(line(u), Some(11));
    assert_eq!(u["usage"]["output"], 288);
    let sub_text: Vec<_> = of_type(&evs, "output_delta").into_iter().filter(|e| e["text"] == "done").collect();
    assert_eq!(sub_text.len(), 1);
    assert_eq!(sub_text[0]["parent_tool_id"], AG);
    let sub_tool: Vec<_> = of_type(&evs, "tool_started")
        .into_iter()
        .filter(|e| e["tool_id"] == "toolu_01YiK1eCvb3GqHn0Wi4Sj6Pq")
        .collect();
    assert_eq!(sub_tool.len(), 1);
    assert_eq!(sub_tool[0]["parent_tool_id"], AG);
    assert_eq!(output_text(&evs), "starteddoneThe background agent finished: ready.flag now exists.");
}

#[test]
fn trap_subagent_task_frames() {
    let evs = events_of("claude", "subagent_background_agent");
    let agent = of_type(&evs, "tool_started").into_iter().find(|e| e["name"] == "Agent").expect("Agent tool");
    assert_eq!(agent["kind"], "task");
    assert_eq!(agent["summary"], "Create the ready flag");
    let sub = of_type(&evs, "subagent");
    let spawn: Vec<_> = sub.iter().filter(|e| e["operation"] == "spawn").collect();
    assert!(
        spawn.iter().any(|e| e["child_id"] == "b81c3e2f9a0d4e7c1"
            && e["operation_id"] == "toolu_01XhJ0dBua2FpGm9Vh3Ri5Op"
            && e["background"] == true
            && e["description"] == "Create the ready flag"),
        "{spawn:?}"
    );
    let upd = |n: u64| sub.iter().find(|e| line(e) == Some(n)).copied();
    let progress = upd(22).expect("task_progress → subagent");
    assert_eq!(progress["operation"], "update");
    let updated = upd(28).expect("task_updated → subagent");
    assert_eq!(updated["operation"], "update");
    assert_eq!(updated["status"], "completed");
    let notif = upd(29).expect("task_notification → subagent");
    assert_eq!(notif["operation"], "update");
    assert_eq!(notif["status"], "completed");
    assert_eq!(notif["child_id"], "b81c3e2f9a0d4e7c1");
    // Second init, same session: no new session_started; two results: two turn_completed.
    assert_eq!(of_type(&evs, "session_started").len(), 1);
    assert_eq!(of_type(&evs, "turn_completed").len(), 2);
}

#[test]
fn trap_todo_write_and_ask_user_question() {
    let evs = events_of("claude", "todo_and_question");
    let plans = of_type(&evs, "plan_updated");
    assert_eq!(plans.len(), 2);
    assert_eq!(line(plans[0]), Some(3));
    let st = |p: &Value| {
        p["items"].as_array().unwrap().iter().map(|i| i["status"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(st(plans[0]), ["in_progress", "pending", "pending"]);
    assert_eq!(st(plans[1]), ["completed", "in_progress", "pending"]);
    assert_eq!(plans[0]["items"][0]["text"], "Read the current config loader");
    let todo: Vec<_> = of_type(&evs, "tool_started").into_iter().filter(|e| e["name"] == "TodoWrite").collect();
    assert_eq!(todo.len(), 2);
    assert!(todo.iter().all(|e| e["kind"] == "plan"));
    let ask = of_type(&evs, "needs_input");
    assert_eq!(ask.len(), 1);
    assert_eq!(line(ask[0]), Some(6));
    assert_eq!(ask[0]["prompt"], "Which format should the new config use?");
    assert_eq!(ask[0]["questions"].as_array().unwrap().len(), 2);
    let ask_tool = of_type(&evs, "tool_started").into_iter().find(|e| e["name"] == "AskUserQuestion").unwrap();
    assert_eq!(ask_tool["kind"], "ask");
    let ask_done =
        of_type(&evs, "tool_completed").into_iter().find(|e| e["tool_id"] == "toolu_01VfG8bZsy0DnEk7Tf1Pg3Mn").unwrap();
    assert_eq!(ask_done["ok"], false);
    assert_eq!(of_type(&evs, "tool_completed").len(), 3);
}

#[test]
fn trap_rate_limit_windows_and_dedupe() {
    let evs = events_of("claude", "rate_limits");
    let rl = of_type(&evs, "rate_limit");
    let brief: Vec<(u64, String, Option<String>, Option<f64>)> = rl
        .iter()
        .map(|e| {
            (
                line(e).unwrap(),
                e["window"].as_str().unwrap().to_owned(),
                e["status"].as_str().map(str::to_owned),
                e["used_percent"].as_f64(),
            )
        })
        .collect();
    let s = |x: &str| Some(x.to_owned());
    // Line 2: the old shape; 4: the same again (nothing); 6: its status changed; 7: the new shape,
    // one event per unifiedWindows entry (frame status on its own rateLimitType's window); 8: the
    // same again (nothing); 10: only the five_hour reading changed.
    let seven: Vec<_> = brief.iter().filter(|b| b.1 == "seven_day").collect();
    let five: Vec<_> = brief.iter().filter(|b| b.1 == "five_hour").collect();
    assert_eq!(seven, [&(7, "seven_day".to_owned(), s("allowed_warning"), Some(57.0))], "{brief:?}");
    assert_eq!(five.iter().map(|b| b.0).collect::<Vec<_>>(), [2, 6, 7, 10], "{brief:?}");
    assert_eq!(five[0].2, s("allowed"));
    assert_eq!(five[1].2, s("allowed_warning"));
    assert_eq!(five[2].3, Some(29.0), "0.29 × 100 rounded, not 28.999999999999996");
    assert_eq!(five[3].3, Some(31.0));
    assert_eq!(types_at(&evs, 4), ["heartbeat"]);
    assert_eq!(types_at(&evs, 8), ["heartbeat"]);
    let seven_ev = rl.iter().find(|e| e["window"] == "seven_day").unwrap();
    assert_eq!(seven_ev["window_minutes"], 10080);
    assert_instant(&seven_ev["resets_at"], "2026-08-12T16:00:00Z");
    assert_eq!(seven_ev["using_overage"], false);
    let five_new = rl.iter().find(|e| line(e) == Some(7) && e["window"] == "five_hour").unwrap();
    assert_instant(&five_new["resets_at"], "2026-08-06T11:00:00Z");
}

#[test]
fn trap_result_success_with_is_error_is_a_failure() {
    let evs = events_of("claude", "api_retry_auth_failure");
    assert!(of_type(&evs, "turn_completed").is_empty());
    let tf = of_type(&evs, "turn_failed");
    assert_eq!(tf.len(), 1);
    assert_eq!(line(tf[0]), Some(7));
    assert_eq!(tf[0]["kind"], "auth");
    assert_eq!(tf[0]["error"], "Failed to authenticate. API Error: 401 Invalid bearer token.");
    // The <synthetic> message is no model request: no usage event at all in this stream.
    assert!(of_type(&evs, "usage").is_empty());
    // The synthetic API-error message (line 6) is an error diagnostic, not assistant text.
    let mut d = of_type(&evs, "diagnostic");
    let api_error = d.pop().unwrap();
    assert_eq!((line(api_error), api_error["level"].as_str()), (Some(6), Some("error")));
    assert_eq!(api_error["code"], "claude.api_error.authentication_failed");
    assert_eq!(api_error["message"], tf[0]["error"]);
    assert!(of_type(&evs, "output_delta").is_empty());
    // api_retry → one warning diagnostic per line.
    assert_eq!(d.iter().map(|e| line(e).unwrap()).collect::<Vec<_>>(), [2, 3, 4]);
    for e in &d {
        assert_eq!(e["level"], "warning");
        assert_eq!(e["count"], 1);
        assert!(e["raw"].as_str().unwrap().contains("\"api_retry\""));
        assert_eq!(e["dedupe_key"], e["code"]);
    }
    assert_eq!(of_type(&evs, "session_started")[0]["model"], "claude-opus-5[1m]");
}

#[test]
fn trap_interrupt_and_error_during_execution() {
    let evs = events_of("claude", "interrupted_and_errors");
    let intr = of_type(&evs, "interrupt");
    assert_eq!(intr.len(), 1);
    assert_eq!(line(intr[0]), Some(6));
    assert!(of_type(&evs, "user_message").iter().all(|e| e["text"] != "[Request interrupted by user]"));
    // The aborted partial text is still the assistant's text.
    assert_eq!(output_text(&evs), "# Pipes\n\nIn 1973, Doug McIlroy finally persuaded Ken Thompson to add pi");
    let tf = of_type(&evs, "turn_failed");
    assert_eq!(tf.len(), 2);
    assert_eq!(line(tf[0]), Some(7));
    assert_eq!(tf[0]["kind"], "aborted");
    assert!(tf[0]["error"].as_str().unwrap().contains("[ede_diagnostic]"));
    assert_eq!(line(tf[1]), Some(12));
    assert_eq!(tf[1]["error"], "Permission denied: cannot write to /root/notes.txt");
    assert!(of_type(&evs, "turn_completed").is_empty());
    assert_eq!(types_at(&evs, 4), ["heartbeat"], "control_response");
    let w = of_type(&evs, "tool_completed");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0]["ok"], false);
    assert_eq!(w[0]["kind"], "write");
    assert!(evs.last().unwrap()["complete"].as_bool().unwrap());
}

#[test]
fn trap_compaction() {
    let evs = events_of("claude", "compaction");
    let c = of_type(&evs, "compacted");
    assert_eq!(c.len(), 2);
    assert_eq!(
        (line(c[0]), &c[0]["trigger"], &c[0]["pre_tokens"], &c[0]["post_tokens"]),
        (Some(9), &"manual".into(), &24210.into(), &1180.into())
    );
    assert_eq!(
        (line(c[1]), &c[1]["trigger"], &c[1]["pre_tokens"], &c[1]["post_tokens"]),
        (Some(19), &"auto".into(), &61870.into(), &1402.into())
    );
    // isSynthetic summaries are not the user's words.
    for n in [10, 20] {
        assert!(!types_at(&evs, n).contains(&"user_message".to_owned()), "line {n}: {:?}", types_at(&evs, n));
    }
    for n in [6, 7, 17, 18] {
        assert_eq!(types_at(&evs, n), ["heartbeat"], "status line {n}");
    }
    // A failed compaction is a warning, not just liveness.
    let failed: Vec<_> = of_type(&evs, "diagnostic").into_iter().filter(|e| line(e) == Some(16)).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["code"], "claude.compact.failed");
    assert_eq!(failed[0]["level"], "warning");
    assert_eq!(of_type(&evs, "session_started").len(), 1);
    // The local /compact result (num_turns 0, result "") is still a completed turn.
    let tc = of_type(&evs, "turn_completed");
    assert_eq!(tc.iter().map(|e| line(e).unwrap()).collect::<Vec<_>>(), [5, 12, 23]);
}

#[test]
fn trap_damaged_stream() {
    let evs = events_of("claude", "damaged_crlf_open_turn");
    let end = evs.last().unwrap();
    assert_eq!(end["lines"], 10);
    assert_eq!(end["complete"], false, "a turn left open and no final newline");
    assert_eq!(end["unknown"], 2);
    assert_eq!(end["unknown_frames"], serde_json::json!({"system/session_metrics_v9": 1}));
    let u = of_type(&evs, "unknown");
    assert_eq!(line(u[0]), Some(2));
    assert_eq!(u[0]["reason"], "not_json");
    assert_eq!(u[0]["dialect"], "claude", "a non-JSON line carries the fixed dialect");
    assert!(!u[0]["raw"].as_str().unwrap().ends_with('\r'), "the CR of CRLF is dropped");
    assert_eq!(line(u[1]), Some(4));
    assert_eq!(u[1]["reason"], "unrecognized_frame");
    assert_eq!(u[1]["frame"], "system/session_metrics_v9");
    assert!(at_line(&evs, 3).is_empty(), "a blank line yields nothing");
    // The last line, without newline, is read.
    assert_eq!(types_at(&evs, 10), ["tool_started", "usage"]);
    assert_eq!(output_text(&evs), "Looking at the failing test first.");
    let r = of_type(&evs, "tool_started").into_iter().find(|e| e["name"] == "Read").unwrap();
    assert_eq!(r["kind"], "read");
    assert_eq!(r["summary"], "/home/dev/projects/cfgkit/tests/parse.rs");
    assert!(evs.iter().all(|e| !e.to_string().contains("\\r")), "no CR anywhere in the output");
}

#[test]
fn trap_amp_messages_without_id() {
    let evs = events_of("claude", "amp_no_message_id");
    let u = of_type(&evs, "usage");
    assert_eq!(u.iter().map(|e| line(e).unwrap()).collect::<Vec<_>>(), [3, 5], "each id-less line is its own request");
    assert!(u.iter().all(|e| e.get("message_id").is_none()));
    let ss = of_type(&evs, "session_started");
    assert_eq!(ss.len(), 1);
    assert_eq!(ss[0]["session_id"], "T-019f2a7b-3c4d-7e5f-8a9b-0c1d2e3f4a5b");
    assert!(ss[0].get("model").is_none());
    assert_eq!(of_type(&evs, "user_message").len(), 1, "Amp echoes the prompt without isReplay");
    let tc = of_type(&evs, "turn_completed");
    assert_eq!(tc.len(), 1);
    assert!(tc[0].get("usage").is_none());
    assert!(tc[0].get("cost_usd").is_none());
    assert_eq!(of_type(&evs, "tool_started")[0]["summary"], "ls src/*.rs | wc -l");
}

#[test]
fn trap_multi_block_and_second_session() {
    let evs = events_of("claude", "multi_block_two_sessions");
    let ss = of_type(&evs, "session_started");
    assert_eq!(
        ss.iter().map(|e| e["session_id"].as_str().unwrap()).collect::<Vec<_>>(),
        ["2d3e4f5a-6b7c-4d8e-9fa0-b1c2d3e4f5a6", "4f5a6b7c-8d9e-4fa0-81b2-c3d4e5f6a7b8"]
    );
    assert_eq!(types_at(&evs, 3), ["output_delta", "tool_started", "tool_started", "usage"]);
    let task = of_type(&evs, "tool_started").into_iter().find(|e| e["name"] == "Task").unwrap();
    assert_eq!(task["kind"], "task");
    assert_eq!(task["summary"], "Find config files");
    let sub = usage_for(&evs, "msg_01QaC9wUnt1IzZf8Oa2Kb4Hj");
    assert_eq!(sub["parent_tool_id"], "toolu_01PzB8vTms0HyYe7Nz1Ja3Gi");
    let done =
        of_type(&evs, "tool_completed").into_iter().find(|e| e["tool_id"] == "toolu_01PzB8vTms0HyYe7Nz1Ja3Gi").unwrap();
    assert_eq!(
        done["output"],
        "Found config/app.toml and config/logging.yaml.\nagentId: 4c1e9a (use SendMessage to continue)"
    );
    assert_eq!(done["ok"], true);
    let tf = of_type(&evs, "turn_failed");
    assert_eq!(tf.len(), 1);
    assert_eq!(tf[0]["kind"], "max_turns");
    assert_eq!(tf[0]["session_id"], "4f5a6b7c-8d9e-4fa0-81b2-c3d4e5f6a7b8");
}

// ------------------------------------------------------------------------------------------------
// Codex traps and mappings
// ------------------------------------------------------------------------------------------------

#[test]
fn trap_codex_turn_usage_is_a_session_running_total() {
    for fixture in fixtures("codex") {
        let evs = run_path(&fixture);
        assert!(of_type(&evs, "usage").is_empty(), "{}: codex exec has no per-request usage", fixture.display());
        for e in of_type(&evs, "turn_completed") {
            assert_eq!(e["usage_scope"], "session", "{}: {e}", fixture.display());
            assert!(e["usage"].get("context").is_none(), "{}: {e}", fixture.display());
        }
    }
    let evs = events_of("codex", "resume_second_thread");
    let tc = of_type(&evs, "turn_completed");
    assert_eq!(tc[0]["usage"], serde_json::json!({"input": 1200, "cache_read": 0, "output": 80}));
    assert_eq!(tc[1]["usage"], serde_json::json!({"input": 1376, "cache_read": 1024, "output": 150}));
    // input_tokens 38122 holds the 30720 cached and the 4096 written: 3306 are neither.
    let evs = events_of("codex", "file_changes");
    assert_eq!(
        of_type(&evs, "turn_completed")[0]["usage"],
        serde_json::json!({"input": 3306, "cache_read": 30720, "cache_write": 4096, "output": 2034, "reasoning": 1280})
    );
    let evs = events_of("codex", "items_without_id");
    assert_eq!(
        of_type(&evs, "turn_completed")[0]["usage"],
        serde_json::json!({"input": 1, "output": 1}),
        "absent is not zero"
    );
}

#[test]
fn trap_codex_commands() {
    let evs = events_of("codex", "exec_commands");
    let done = of_type(&evs, "tool_completed");
    let brief: Vec<(u64, bool, Option<i64>)> =
        done.iter().map(|e| (line(e).unwrap(), e["ok"].as_bool().unwrap(), e["exit_code"].as_i64())).collect();
    assert_eq!(brief, [(7, true, Some(0)), (9, false, Some(1)), (11, false, None)]);
    assert!(done[2]["error"].as_str().unwrap().contains("declined"));
    assert_eq!(done[0]["output"], "\nrunning 12 tests\n............\ntest result: ok. 12 passed; 0 failed\n");
    let starts = of_type(&evs, "tool_started");
    assert_eq!(starts.iter().map(|e| line(e).unwrap()).collect::<Vec<_>>(), [6, 8, 10]);
    assert!(starts.iter().all(|e| e["kind"] == "shell"));
    assert_eq!(starts[0]["input"], serde_json::json!({"command": "/bin/bash -lc 'cargo test --quiet'"}));
    assert_eq!(of_type(&evs, "session_started")[0]["session_id"], "019b3c41-6e2a-7d10-b5c8-2f9a1e7d4c60");
    assert_eq!(of_type(&evs, "turn_started").len(), 1);
    assert_eq!(of_type(&evs, "reasoning")[0]["text"], "**Checking the test runner**");
    // "Reading prompt from stdin..." before the dialect is known: an info diagnostic, so that
    // `--strict` does not fail every `codex exec … 2>&1` run.
    let u = &at_line(&evs, 1);
    assert_eq!(u.len(), 1);
    assert_eq!((u[0]["type"].as_str(), u[0]["level"].as_str()), (Some("diagnostic"), Some("info")));
    assert_eq!(u[0]["code"], "codex.stdin");
    assert!(u[0].get("dialect").is_none(), "no dialect is fixed yet");
    assert!(evs.last().unwrap()["complete"].as_bool().unwrap());
}

#[test]
fn trap_codex_file_changes() {
    let evs = events_of("codex", "file_changes");
    // Completed-only items: start and completion from the one line.
    assert_eq!(types_at(&evs, 3), ["tool_started", "tool_completed"]);
    assert_eq!(types_at(&evs, 4), ["tool_started", "tool_completed"]);
    assert_eq!(at_line(&evs, 4)[1]["ok"], false);
    assert_eq!(at_line(&evs, 3)[0]["kind"], "edit");
    assert_eq!(
        at_line(&evs, 3)[0]["input"],
        serde_json::json!({"changes": [{"path": "docs/usage.md", "kind": "add"}, {"path": "src/lib.rs", "kind": "update"}]})
    );
    // Started + updated + completed: one start, one completion.
    assert_eq!(types_at(&evs, 5), ["tool_started"]);
    assert_eq!(types_at(&evs, 6), ["heartbeat"]);
    assert_eq!(types_at(&evs, 7), ["tool_completed"]);
    assert_eq!(at_line(&evs, 7)[0]["ok"], true);
}

#[test]
fn trap_codex_mcp_and_web_search() {
    let evs = events_of("codex", "mcp_and_web_search");
    let s = at_line(&evs, 3)[0];
    assert_eq!(
        (s["type"].as_str(), s["kind"].as_str(), s["name"].as_str()),
        (Some("tool_started"), Some("mcp"), Some("lookup_symbol"))
    );
    assert_eq!(
        s["input"],
        serde_json::json!({"server": "docs", "tool": "lookup_symbol", "arguments": {"crate": "cfgkit", "name": "parse_config"}})
    );
    let ok = at_line(&evs, 4)[0];
    assert_eq!(ok["ok"], true);
    assert_eq!(ok["output"], "pub fn parse_config(path: &Path) -> Result<Config>\n[image]");
    let s = at_line(&evs, 5)[0];
    assert_eq!(
        s["input"],
        serde_json::json!({"server": "tracker", "tool": "list_open_bugs", "arguments": null}),
        "null kept inside input"
    );
    let failed = at_line(&evs, 6)[0];
    assert_eq!((failed["ok"].as_bool(), failed["error"].as_str()), (Some(false), Some("request timed out after 30s")));
    assert_eq!(types_at(&evs, 7), ["tool_started", "tool_completed"]);
    assert_eq!(at_line(&evs, 7)[0]["kind"], "web_search");
    assert_eq!(at_line(&evs, 7)[0]["input"], serde_json::json!({"query": "cfgkit parse_config toml example"}));
    // A start with `query: ""` (Codex ≥ 0.153) is a heartbeat: the search starts at its
    // completion, with the query. Duplicate "id" key: the last one wins, in both.
    assert_eq!(types_at(&evs, 8), ["heartbeat"]);
    assert_eq!(types_at(&evs, 9), ["tool_started", "tool_completed"]);
    assert_eq!(at_line(&evs, 9)[0]["tool_id"], "ws_0b7e41c2");
    assert_eq!(at_line(&evs, 9)[0]["summary"], "cfgkit 2.0 release notes");
    assert_eq!(at_line(&evs, 9)[1]["tool_id"], "ws_0b7e41c2");
}

#[test]
fn trap_codex_todo_list() {
    let evs = events_of("codex", "todo_list");
    let plans = of_type(&evs, "plan_updated");
    assert_eq!(plans.iter().map(|e| line(e).unwrap()).collect::<Vec<_>>(), [3, 6, 7, 9]);
    let st = |p: &Value| {
        p["items"].as_array().unwrap().iter().map(|i| i["status"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(st(plans[0]), ["pending", "pending", "pending"]);
    assert_eq!(st(plans[2]), ["completed", "completed", "pending"]);
    assert_eq!(st(plans[3]), ["completed", "completed", "completed"]);
    let cmd = of_type(&evs, "tool_completed").into_iter().find(|e| e["kind"] == "shell").unwrap();
    assert_eq!((cmd["ok"].as_bool(), cmd["exit_code"].as_i64()), (Some(false), Some(101)));
}

#[test]
fn trap_codex_collab_subagents() {
    let evs = events_of("codex", "collab_subagents");
    const A: &str = "019b3c85-9a01-7b02-8c03-d4e5f6a7b8c9";
    const B: &str = "019b3c85-9b11-7c12-9d13-e4f5a6b7c8d9";
    let sub: Vec<(u64, String, String, String, Option<String>)> = of_type(&evs, "subagent")
        .iter()
        .map(|e| {
            (
                line(e).unwrap(),
                e["child_id"].as_str().unwrap().to_owned(),
                e["operation"].as_str().unwrap().to_owned(),
                e["status"].as_str().unwrap().to_owned(),
                e["raw_status"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let o = |n: u64, c: &str, op: &str, st: &str, raw: &str| {
        (n, c.to_owned(), op.to_owned(), st.to_owned(), Some(raw.to_owned()))
    };
    assert_eq!(
        sub,
        [
            o(4, A, "spawn", "pending", "pending_init"),
            o(6, B, "spawn", "running", "running"),
            o(8, A, "wait", "completed", "completed"),
            o(8, B, "wait", "failed", "errored"),
            o(10, B, "close", "stopped", "shutdown"),
        ]
    );
    let starts = of_type(&evs, "tool_started");
    assert_eq!(starts.len(), 4);
    assert!(starts.iter().all(|e| e["kind"] == "task"));
    assert_eq!(of_type(&evs, "tool_completed").len(), 4);
    let spawn_a = of_type(&evs, "subagent")[0];
    assert_eq!(spawn_a["operation_id"], "item_0");
}

#[test]
fn trap_codex_errors_are_diagnostics_until_turn_failed() {
    let evs = events_of("codex", "turn_failed_reconnecting");
    let d = of_type(&evs, "diagnostic");
    assert_eq!(d.iter().map(|e| line(e).unwrap()).collect::<Vec<_>>(), [2, 4, 5, 6]);
    assert_eq!(d[1]["level"], "warning", "Reconnecting… is a retry notice");
    let tf = of_type(&evs, "turn_failed");
    assert_eq!(tf.len(), 1);
    assert_eq!(line(tf[0]), Some(7));
    assert!(tf[0]["error"].as_str().unwrap().starts_with("stream disconnected before completion"));
    assert!(of_type(&evs, "turn_completed").is_empty());
    // The item error came before turn.started: it does not open or fail a turn.
    assert_eq!(types_at(&evs, 2), ["diagnostic"]);
    assert!(evs.last().unwrap()["complete"].as_bool().unwrap());
}

#[test]
fn trap_codex_second_thread_reuses_item_ids() {
    let evs = events_of("codex", "resume_second_thread");
    assert_eq!(types_at(&evs, 9), ["tool_started"], "item_0 of the resumed run is a new call");
    assert_eq!(at_line(&evs, 9)[0]["input"]["command"], "bash -lc 'git diff --stat'");
    assert_eq!(types_at(&evs, 10), ["tool_completed"]);
    assert_eq!(of_type(&evs, "turn_completed").len(), 2);
}

#[test]
fn trap_codex_items_without_id() {
    let evs = events_of("codex", "items_without_id");
    assert_eq!(
        output_text(&evs),
        "SOURCE\n```rust\nlet marker = \"[[DONE]]\";\nprintln!(\"Grüße aus Zürich 🌍\");\n```\u{1b}[32mPASS\u{1b}[0m C:\\\\work\\\\out.txt {\"ok\":true}"
    );
    assert_eq!(types_at(&evs, 4), ["tool_started", "tool_completed"]);
    assert_eq!(at_line(&evs, 4)[0]["tool_id"], "line:4");
    assert_eq!(at_line(&evs, 4)[1]["tool_id"], "line:4");
    assert!(of_type(&evs, "unknown").is_empty());
    assert_eq!(of_type(&evs, "turn_completed").len(), 1);
    assert!(evs.last().unwrap()["complete"].as_bool().unwrap());
}

#[test]
fn trap_codex_legacy_042_shape() {
    let evs = events_of("codex", "legacy_042_shape");
    let ss = of_type(&evs, "session_started");
    assert_eq!(ss.len(), 1);
    assert_eq!(ss[0]["session_id"], "019e1f3a-6b7c-7d8e-9f0a-1b2c3d4e5f60");
    assert_eq!(types_at(&evs, 2), ["diagnostic"]);
    assert_eq!(at_line(&evs, 2)[0]["level"], "warning", "a retrying error is a retry notice");
    assert_eq!(output_text(&evs), "Created `flag.txt` containing READY.");
    assert_eq!(types_at(&evs, 3), ["tool_started"]);
    assert_eq!(at_line(&evs, 4)[0]["ok"], true);
    assert_eq!(types_at(&evs, 6), ["tool_started", "tool_completed"]);
    assert_eq!(at_line(&evs, 7)[0]["kind"], "mcp");
    assert!(of_type(&evs, "unknown").is_empty());
}

#[test]
fn trap_codex_stderr_and_unknown_frames() {
    let evs = events_of("codex", "stderr_merged_unknown");
    let d1 = at_line(&evs, 2)[0];
    assert_eq!(d1["type"], "diagnostic");
    assert_eq!(d1["level"], "warning");
    assert_eq!(d1["code"], "codex.plugin.not-installed");
    assert_eq!(d1["dedupe_key"], "codex.plugin.not-installed|github@openai-curated");
    assert_eq!(d1["plugins"], serde_json::json!(["github@openai-curated"]));
    assert_eq!(
        d1["raw"],
        r#"2026-04-09T14:20:45.537513Z  WARN codex_core::plugins::manager: failed to load plugin: plugin is not installed plugin="github@openai-curated" path=/tmp/plugin"#
    );
    let d2 = at_line(&evs, 3)[0];
    assert_eq!(
        (d2["code"].as_str(), d2["dedupe_key"].as_str(), d2["level"].as_str()),
        (Some("codex.path.helper-binary"), Some("codex.path.helper-binary"), Some("warning"))
    );
    assert_eq!(d2["plugins"], serde_json::json!([]));
    let d3 = at_line(&evs, 5)[0];
    assert_eq!(d3["dedupe_key"], "codex.plugin.not-installed|linear-sync");
    assert_eq!(d3["dialect"], "codex", "a stderr line after detection carries the dialect");
    assert_eq!(at_line(&evs, 1)[0]["code"], "codex.stdin");
    // Other lines of Codex's tracing log: diagnostics keyed by their target.
    let last = at_line(&evs, 12)[0];
    assert_eq!(
        (last["type"].as_str(), last["level"].as_str(), last["dedupe_key"].as_str(), last["dialect"].as_str()),
        (Some("diagnostic"), Some("error"), Some("codex.log|codex_core::session"), Some("codex"))
    );
    assert_eq!(types_at(&evs, 7), ["diagnostic"], "an item error");
    let u8 = at_line(&evs, 8)[0];
    assert_eq!(
        (u8["type"].as_str(), u8["reason"].as_str(), u8["frame"].as_str()),
        (Some("unknown"), Some("unrecognized_frame"), Some("item.completed/screen_capture"))
    );
    let u9 = at_line(&evs, 9)[0];
    assert_eq!((u9["reason"].as_str(), u9["frame"].as_str()), (Some("unrecognized_frame"), Some("turn.progress")));
    let end = evs.last().unwrap();
    assert_eq!(end["unknown_frames"], serde_json::json!({"item.completed/screen_capture": 1, "turn.progress": 1}));
    assert_eq!(end["unknown"], 2);
    assert_eq!(end["complete"], true);
}

#[test]
fn fixtures_cover_the_frames_they_claim() {
    // Guard the fixtures themselves: each Claude and Codex frame kind the contract names appears.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for d in DIALECTS {
        for fixture in fixtures(d) {
            for (_, f) in input_frames(&fixture) {
                let t = f["type"].as_str().unwrap_or("").to_owned();
                let sub = f.get("subtype").and_then(Value::as_str).map(|s| format!("{t}/{s}"));
                let inner = f.get("event").and_then(|e| e["type"].as_str()).map(|s| format!("{t}/{s}"));
                let delta = f.get("event").and_then(|e| e["delta"]["type"].as_str()).map(|s| format!("{t}/{s}"));
                let it = f
                    .get("item")
                    .and_then(|i| i.get("type").or_else(|| i.get("item_type")))
                    .and_then(Value::as_str)
                    .map(|s| format!("{t}/{s}"));
                seen.insert(t);
                seen.extend(sub);
                seen.extend(inner);
                seen.extend(delta);
                seen.extend(it);
            }
        }
    }
    let want = [
        "system/init",
        "system/status",
        "system/api_retry",
        "system/compact_boundary",
        "system/thinking_tokens",
        "system/task_started",
        "system/task_progress",
        "system/task_updated",
        "system/task_notification",
        "rate_limit_event",
        "control_response",
        "result/success",
        "result/error_during_execution",
        "stream_event/message_start",
        "stream_event/content_block_start",
        "stream_event/text_delta",
        "stream_event/thinking_delta",
        "stream_event/input_json_delta",
        "stream_event/content_block_stop",
        "stream_event/message_delta",
        "stream_event/message_stop",
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "error",
        "session.created",
        "item.started/command_execution",
        "item.completed/command_execution",
        "item.completed/file_change",
        "item.updated/file_change",
        "item.started/mcp_tool_call",
        "item.completed/mcp_tool_call",
        "item.started/web_search",
        "item.completed/web_search",
        "item.started/todo_list",
        "item.updated/todo_list",
        "item.completed/todo_list",
        "item.started/collab_tool_call",
        "item.completed/collab_tool_call",
        "item.completed/error",
        "item.completed/reasoning",
        "item.completed/agent_message",
        "item.completed/assistant_message",
    ];
    let missing: Vec<_> = want.iter().filter(|w| !seen.contains(**w)).collect();
    assert!(missing.is_empty(), "no fixture has {missing:?}");
}
