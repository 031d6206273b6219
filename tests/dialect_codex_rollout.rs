//! The `codex-rollout` dialect (Codex session logs) on its fixtures, `fixtures/codex-rollout/`.
//!
//! Each `trap_*` test pins one mapping or trap of SPEC §3/§4 for rollouts, checked against the
//! input lines themselves where it can be: text taken once from the `event_msg` copies, one
//! `usage` per changed `total_token_usage` built from `last_token_usage`, rate limits on every
//! `token_count`, `arguments` decoded, the 0.40 JSON-string outputs, id-less web searches, one
//! `compacted` per compaction, turns, and saved-log completeness.

use serde_json::{Value, json};

mod common;
use common::{at_line, bin, fixture, fixtures, of_type, types_at};

const DIALECT: &str = "codex-rollout";

/// The events agentnorm writes for a fixture (run from the crate root, `--no-observed-at`).
fn events(name: &str) -> Vec<Value> {
    common::events_of(DIALECT, name)
}

/// The fixture's input lines that parse, with their 1-based numbers.
fn input(name: &str) -> Vec<(u64, Value)> {
    common::input_frames(&fixture(DIALECT, name))
}

/// Input lines of `type` whose payload is of `kind` (`None`: any payload).
fn payloads(name: &str, ty: &str, kind: Option<&str>) -> Vec<(u64, Value)> {
    input(name)
        .into_iter()
        .filter(|(_, v)| v["type"] == ty && kind.is_none_or(|k| v["payload"]["type"] == k))
        .map(|(n, v)| (n, v["payload"].clone()))
        .collect()
}

fn only<'a>(evs: &'a [Value], t: &str) -> &'a Value {
    let found = of_type(evs, t);
    assert_eq!(found.len(), 1, "expected one {t}, got {found:?}");
    found[0]
}

/// The fixture names, sorted.
fn names() -> Vec<String> {
    fixtures(DIALECT).iter().map(|p| p.file_stem().expect("stem").to_string_lossy().into_owned()).collect()
}

#[test]
fn every_fixture_is_detected_as_codex_rollout() {
    for name in names() {
        let out = bin().args(["detect"]).arg(fixture(DIALECT, &name)).output().expect("running agentnorm detect");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("codex-rollout\t"), "{name}: {stdout}");
        for e in events(&name) {
            if e["type"] != "run_started" && e["type"] != "run_ended" {
                assert_eq!(e["dialect"], "codex-rollout", "{name}: {e}");
            }
        }
    }
}

#[test]
fn trap_text_is_taken_once_from_the_event_msg_copies() {
    // A paginated rollout has no such copies: `paginated_rollouts_take_their_text_from_item_completed`.
    for name in names().into_iter().filter(|n| n != PAGINATED) {
        let evs = events(&name);
        // Assistant text: exactly the `agent_message`s, in order; the `response_item` message
        // copies and `task_complete.last_agent_message` add nothing.
        let expected: String = payloads(&name, "event_msg", Some("agent_message"))
            .iter()
            .map(|(_, p)| p["message"].as_str().unwrap().to_owned())
            .collect();
        let got: String = of_type(&evs, "output_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(got, expected, "{name}");
        // Prompts: the non-empty `user_message`s only, never user-role response items (injected
        // environment context).
        let prompts: Vec<Value> = payloads(&name, "event_msg", Some("user_message"))
            .into_iter()
            .map(|(_, p)| p["message"].clone())
            .filter(|m| m != "")
            .collect();
        let got: Vec<Value> = of_type(&evs, "user_message").iter().map(|e| e["text"].clone()).collect();
        assert_eq!(got, prompts, "{name}");
        // Reasoning: one per `agent_reasoning` (raw content included), none from `reasoning` items.
        let reasoning = payloads(&name, "event_msg", Some("agent_reasoning")).len()
            + payloads(&name, "event_msg", Some("agent_reasoning_raw_content")).len();
        assert_eq!(of_type(&evs, "reasoning").len(), reasoning, "{name}");
        for (n, _) in payloads(&name, "response_item", Some("message")).into_iter().chain(payloads(
            &name,
            "response_item",
            Some("reasoning"),
        )) {
            assert_eq!(types_at(&evs, n), ["heartbeat"], "{name}:{n}");
        }
    }
}

/// Codex's usage fold (SPEC §4): cached is a subset of input.
fn folded(u: &Value) -> Value {
    let input = u["input_tokens"].as_u64().unwrap();
    let cached = u["cached_input_tokens"].as_u64().unwrap();
    json!({
        "input": input - cached,
        "cache_read": cached,
        "output": u["output_tokens"],
        "reasoning": u["reasoning_output_tokens"],
        "context": input,
    })
}

#[test]
fn trap_one_usage_per_changed_total_from_last_token_usage() {
    // The paginated fixture names its model in `thread_settings_applied` and reports
    // `cache_write_input_tokens`: `thread_settings_applied_names_the_model_of_the_usage_after_it`.
    for name in names().into_iter().filter(|n| n != PAGINATED) {
        let evs = events(&name);
        let mut prev: Option<Value> = None;
        let mut expected_lines = Vec::new();
        // A fork's copy of its parent's history writes no usage (`trap_forked_*`).
        let copied: Vec<u64> = if name == FORK { copied_lines().iter().map(|(n, _)| *n).collect() } else { Vec::new() };
        for (n, p) in payloads(&name, "event_msg", Some("token_count")) {
            let info = &p["info"];
            if copied.contains(&n) {
                assert!(!types_at(&evs, n).contains(&"usage".to_owned()), "{name}:{n}: copied");
                prev = Some(info["total_token_usage"].clone());
                continue;
            }
            if info.is_null() {
                assert!(!types_at(&evs, n).contains(&"usage".to_owned()), "{name}:{n}: info null has no usage");
                continue;
            }
            let total = info["total_token_usage"].clone();
            let usages: Vec<&Value> = at_line(&evs, n).into_iter().filter(|e| e["type"] == "usage").collect();
            if prev.as_ref() == Some(&total) {
                assert!(usages.is_empty(), "{name}:{n}: a repeat with unchanged totals wrote {usages:?}");
            } else {
                assert_eq!(usages.len(), 1, "{name}:{n}");
                assert_eq!(usages[0]["usage"], folded(&info["last_token_usage"]), "{name}:{n}: from last, not total");
                assert_eq!(usages[0]["context_window"], info["model_context_window"], "{name}:{n}");
                // The model is the one the last turn_context named (one per request).
                let model = payloads(&name, "turn_context", None)
                    .into_iter()
                    .rfind(|(l, _)| *l < n)
                    .and_then(|(_, c)| c["model"].as_str().map(str::to_owned));
                assert_eq!(usages[0]["model"].as_str(), model.as_deref(), "{name}:{n}: model of the request");
                expected_lines.push(n);
            }
            prev = Some(total);
        }
        let got: Vec<u64> = of_type(&evs, "usage").iter().map(|e| e["line"].as_u64().unwrap()).collect();
        assert_eq!(got, expected_lines, "{name}");
    }
}

#[test]
fn trap_session_total_is_the_sum_of_requests_even_across_a_counter_reset() {
    let evs = events("v040_no_task_frames");
    let sum = |k: &str| of_type(&evs, "usage").iter().map(|e| e["usage"][k].as_u64().unwrap()).sum::<u64>();
    // Four requests: 210 + 90 + 150 + 40 output tokens. The last total (40) would undercount.
    assert_eq!(sum("output"), 490);
    assert_eq!(sum("context"), 3100 + 3600 + 4200 + 900);
    assert_eq!(sum("cache_read"), 2816 + 3072 + 3584);
    assert_eq!(of_type(&evs, "usage").len(), 4);
    // The repeat at line 20 (same totals, new rate-limit reading) is no request.
    assert_eq!(types_at(&evs, 20), ["rate_limit", "rate_limit"]);
}

#[test]
fn trap_rate_limits_come_from_every_token_count() {
    // 0.40 flat shape: 299 / 10079 minutes name the windows; no reset times given.
    let evs = events("v040_no_task_frames");
    let at7: Vec<&Value> = at_line(&evs, 7).into_iter().filter(|e| e["type"] == "rate_limit").collect();
    assert_eq!(at7.len(), 2);
    assert_eq!(at7[0]["window"], "five_hour");
    assert_eq!(at7[0]["window_minutes"], 299);
    assert_eq!(at7[1]["window"], "seven_day");
    assert_eq!(at7[1]["window_minutes"], 10079);
    assert!(at7[0].get("resets_at").is_none() && at7[0].get("status").is_none());
    // Only changed windows are written again: line 13 moves the primary only.
    let at13: Vec<&Value> = at_line(&evs, 13).into_iter().filter(|e| e["type"] == "rate_limit").collect();
    assert_eq!(at13.len(), 1);
    assert_eq!((at13[0]["window"].as_str(), at13[0]["used_percent"].as_f64()), (Some("five_hour"), Some(1.0)));
    // Line 23 repeats the reading of line 20: nothing.
    assert_eq!(types_at(&evs, 23), ["usage"]);

    // Nested shape: `info: null` still gives the windows, with unix-second resets as RFC 3339.
    let evs = events("v0104_tasks_unified_exec");
    let at2 = at_line(&evs, 2);
    assert_eq!(at2.len(), 2);
    assert_eq!(at2[0]["window"], "five_hour");
    assert_eq!(at2[0]["resets_at"], "2026-03-04T18:46:40.000Z");
    assert_eq!(at2[1]["window"], "seven_day");
    assert_eq!(at2[1]["used_percent"], 11.0);
    // The unchanged-total repeat at line 16 feeds the changed primary window, and no usage.
    assert_eq!(types_at(&evs, 16), ["rate_limit"]);
    assert_eq!(at_line(&evs, 16)[0]["used_percent"], 5.0);

    // Older nested shape: a relative reset resolved from the line's own timestamp.
    let evs = events("edge_cases_unknowns");
    let at4: Vec<&Value> = at_line(&evs, 4).into_iter().filter(|e| e["type"] == "rate_limit").collect();
    assert_eq!(at4[0]["resets_at"], "2026-01-20T23:10:02.074Z");
    assert_eq!(at4[1]["resets_at"], "2026-01-21T22:10:02.074Z");

    // `rate_limit_reached_type`: the window used to 100% is rejected, the other has no status.
    let evs = events("subagent_limits_compaction");
    let at7 = at_line(&evs, 7);
    assert_eq!(at7[0]["window"], "five_hour");
    assert_eq!(at7[0]["status"], "rejected");
    assert!(at7[1].get("status").is_none());
    assert!(at_line(&evs, 5).iter().all(|e| e.get("status").is_none()), "no status without a reached type");
}

#[test]
fn trap_function_call_arguments_are_decoded() {
    for name in names() {
        let evs = events(&name);
        for (n, p) in payloads(&name, "response_item", Some("function_call")) {
            let started = at_line(&evs, n).into_iter().find(|e| e["type"] == "tool_started").expect("tool_started");
            assert_eq!(started["tool_id"], p["call_id"], "{name}:{n}");
            assert_eq!(started["name"], p["name"], "{name}:{n}");
            let raw = p["arguments"].as_str().unwrap();
            match serde_json::from_str::<Value>(raw) {
                Ok(Value::Null) => assert!(started.get("input").is_none(), "{name}:{n}: null is no input"),
                Ok(v) => assert_eq!(started["input"], v, "{name}:{n}: decoded, not a string"),
                // Not JSON (a redacted log): the raw string.
                Err(_) => assert_eq!(started["input"], raw, "{name}:{n}"),
            }
        }
    }
    let evs = events("v040_no_task_frames");
    let s = at_line(&evs, 9)[0];
    assert_eq!(s["kind"], "shell");
    assert_eq!(s["summary"], "rg -n \"seed\" scripts | head", "the script of bash -lc");
    assert_eq!(at_line(&evs, 26)[0]["summary"], "scripts/seed.ts", "apply_patch through shell");
}

#[test]
fn trap_040_outputs_are_json_strings_with_exit_code_and_duration() {
    let evs = events("v040_no_task_frames");
    let done = |n: u64| at_line(&evs, n).into_iter().find(|e| e["type"] == "tool_completed").cloned().unwrap();
    let ok = done(10);
    assert_eq!(ok["ok"], true);
    assert_eq!(ok["exit_code"], 0);
    assert_eq!(ok["duration_ms"], 200);
    assert_eq!(ok["output"], "scripts/seed.ts:3:import { db } from '../src/db';\n", "the inner output");
    let failed = done(15);
    assert_eq!((failed["ok"].as_bool(), failed["exit_code"].as_i64()), (Some(false), Some(1)));
    assert_eq!(failed["error"], "exit code 1");
    // Plain strings: Codex's own failure messages fail, with the exit code they name.
    let sandbox = done(17);
    assert_eq!((sandbox["ok"].as_bool(), sandbox["exit_code"].as_i64()), (Some(false), Some(126)));
    assert!(sandbox["error"].as_str().unwrap().starts_with("failed in sandbox"));
    assert_eq!(done(27)["ok"], false, "patch rejected by user");
    let plan = done(19);
    assert_eq!((plan["ok"].as_bool(), plan["output"].as_str()), (Some(true), Some("Plan updated")));
    assert!(plan.get("exit_code").is_none());
    // A completion is named after its call.
    assert_eq!(plan["name"], "update_plan");
    assert_eq!(plan["kind"], "plan");
}

#[test]
fn trap_later_shell_outputs_give_exit_code_and_wall_time_from_their_header() {
    let evs = events("v0104_tasks_unified_exec");
    let done = |n: u64| at_line(&evs, n).into_iter().find(|e| e["type"] == "tool_completed").cloned().unwrap();
    let unified = done(13);
    assert_eq!(unified["tool_id"], "call_lan_02", "parallel calls pair by call_id");
    assert_eq!((unified["ok"].as_bool(), unified["exit_code"].as_i64()), (Some(false), Some(101)));
    assert_eq!(unified["duration_ms"], 2501);
    assert!(unified["output"].as_str().unwrap().starts_with("Chunk ID: 5b21c0\n"), "the text passed whole");
    let shell = done(14);
    assert_eq!(shell["tool_id"], "call_lan_01");
    assert_eq!(
        (shell["ok"].as_bool(), shell["exit_code"].as_i64(), shell["duration_ms"].as_u64()),
        (Some(true), Some(0), Some(41))
    );
    // Opaque strings (redacted) are successful outputs, as is.
    let redacted = done(27);
    assert_eq!(redacted["ok"], true);
    assert_eq!(redacted["output"], "[REDACTED_OUTPUT len=88 sha=4e5f6a7b]");
    // Content items: text joined, images named.
    assert_eq!(done(25)["output"], "Use ArgAction::SetTrue.\n[input_image]");
    assert_eq!(done(25)["kind"], "mcp");
}

#[test]
fn trap_web_search_call_without_id_starts_and_completes_on_its_line() {
    let evs = events("v0104_tasks_unified_exec");
    for n in [22, 23] {
        assert_eq!(types_at(&evs, n), ["tool_started", "tool_completed"]);
        for e in at_line(&evs, n) {
            assert_eq!(e["tool_id"], format!("line:{n}"));
            assert_eq!(e["kind"], "web_search");
        }
    }
    assert_eq!(at_line(&evs, 22)[0]["summary"], "clap ArgAction::SetTrue dry run");
    assert!(at_line(&evs, 23)[0].get("input").is_none(), "no action, no input");
}

#[test]
fn trap_custom_tool_call_input_is_free_text() {
    let evs = events("v0104_tasks_unified_exec");
    let (_, p) = payloads("v0104_tasks_unified_exec", "response_item", Some("custom_tool_call")).remove(0);
    let s = at_line(&evs, 20)[0];
    assert_eq!(s["type"], "tool_started");
    assert_eq!(s["input"], p["input"], "the patch text as a JSON string");
    assert_eq!(s["kind"], "edit");
    assert_eq!(s["summary"], "src/cli.rs, tests/dry_run.rs");
    let done = at_line(&evs, 21)[0];
    assert_eq!((done["tool_id"].as_str(), done["ok"].as_bool()), (Some("call_lan_03"), Some(true)));
}

#[test]
fn trap_plan_and_question_calls_give_their_own_events() {
    let evs = events("v040_no_task_frames");
    assert_eq!(types_at(&evs, 18), ["tool_started", "plan_updated"]);
    assert_eq!(
        only(&evs, "plan_updated")["items"],
        json!([
            {"text": "Find the seed script", "status": "completed"},
            {"text": "Reproduce the failure", "status": "in_progress"},
            {"text": "Fix the migration order", "status": "pending"}
        ])
    );
    let evs = events("edge_cases_unknowns");
    assert_eq!(types_at(&evs, 9), ["tool_started", "needs_input"]);
    assert_eq!(only(&evs, "needs_input")["prompt"], "Raise the temperature to 1250?");
    let declined = at_line(&evs, 10)[0];
    assert_eq!((declined["ok"].as_bool(), declined["error"].as_str()), (Some(false), Some("user declined to answer")));
}

#[test]
fn trap_one_compacted_event_per_compaction() {
    let evs = events("subagent_limits_compaction");
    let c = only(&evs, "compacted");
    assert_eq!(c["line"], 9);
    assert_eq!(types_at(&evs, 10), ["heartbeat"]);
    assert_eq!(at_line(&evs, 10)[0]["frame"], "event_msg/context_compacted");
    // `replacement_history` re-lists old text: never written again.
    assert_eq!(of_type(&evs, "output_delta").len(), 1);
    assert_eq!(of_type(&evs, "user_message").len(), 1);
}

#[test]
fn trap_turns_from_task_frames_and_aborts() {
    // 0.40: no task frames, so no turn events; `turn_aborted` is an interrupt, and the aborted
    // request's tool items written after it still pair.
    let evs = events("v040_no_task_frames");
    assert!(of_type(&evs, "turn_started").is_empty() && of_type(&evs, "turn_completed").is_empty());
    assert_eq!(only(&evs, "interrupt")["reason"], "interrupted");
    assert_eq!(types_at(&evs, 26), ["tool_started"]);
    assert_eq!(types_at(&evs, 27), ["tool_completed"]);

    let evs = events("v0104_tasks_unified_exec");
    assert_eq!(of_type(&evs, "turn_started").len(), 2);
    let done = only(&evs, "turn_completed");
    assert_eq!(done["duration_ms"], 15020);
    assert_eq!(done["result"], "Added `--dry-run`; the new test passes.");
    assert!(done.get("usage").is_none());

    // Newer names, and a completion that carries an error.
    let evs = events("subagent_limits_compaction");
    assert_eq!(of_type(&evs, "turn_started").len(), 2, "task_started and turn_started");
    let failed = only(&evs, "turn_failed");
    assert_eq!(failed["kind"], "usage_limit");
    assert_eq!(failed["error"], "You've hit your usage limit. Try again at 2:00 PM.");
    let evs = events("edge_cases_unknowns");
    assert_eq!(only(&evs, "turn_completed")["result"], "Kiln config read.", "turn_complete");
}

#[test]
fn trap_session_meta_gives_the_session_and_its_parent() {
    let evs = events("v0104_tasks_unified_exec");
    let s = only(&evs, "session_started");
    assert_eq!(s["session_id"], "019cb7e2-4a10-7c55-b3e9-6d7f80a1b2c3");
    assert_eq!(s["cwd"], "/Users/kim/src/lanterns");
    assert_eq!(s["cli_version"], "0.104.0");
    assert!(s.get("model").is_none() && s.get("parent_session_id").is_none());
    assert!(evs.iter().skip(1).all(|e| e["type"] == "run_ended" || e["session_id"] == s["session_id"]));
    assert_eq!(
        only(&events("subagent_limits_compaction"), "session_started")["parent_session_id"],
        "019eb19f-0000-7100-8200-001122334455",
        "a subagent's spawning thread"
    );
    assert_eq!(
        only(&events("edge_cases_unknowns"), "session_started")["parent_session_id"],
        "019bd9e0-aaaa-7bbb-8ccc-ddddeeeeffff",
        "a fork's origin"
    );
}

#[test]
fn trap_event_copies_of_tool_ends_and_snapshots_are_heartbeats() {
    let evs = events("edge_cases_unknowns");
    for (n, frame) in [
        (7, "event_msg/exec_command_end"),
        (15, "response_item/ghost_snapshot"),
        (20, "event_msg/collab_agent_spawn_end"),
        (3, "event_msg/user_message"),
    ] {
        assert_eq!(types_at(&evs, n), ["heartbeat"], "line {n}");
        assert_eq!(at_line(&evs, n)[0]["frame"], frame);
    }
    // The tool whose end the event copies is completed once, from its output item.
    assert_eq!(of_type(&evs, "tool_completed").iter().filter(|e| e["tool_id"] == "call_kiln_01").count(), 1);
    // A result whose call is not in the file gets a synthetic start.
    let synthetic: Vec<&Value> = of_type(&evs, "tool_started").into_iter().filter(|e| e["synthetic"] == true).collect();
    assert_eq!(synthetic.len(), 1);
    assert_eq!(synthetic[0]["tool_id"], "call_from_before");
}

#[test]
fn trap_errors_are_diagnostics_and_new_frames_are_named() {
    let evs = events("edge_cases_unknowns");
    let d = of_type(&evs, "diagnostic");
    let codes: Vec<(&str, &str)> =
        d.iter().map(|e| (e["level"].as_str().unwrap(), e["code"].as_str().unwrap())).collect();
    assert_eq!(codes, [("warning", "codex.reconnecting"), ("warning", "codex.warning"), ("error", "codex.error")]);
    let ended = evs.last().unwrap();
    assert_eq!(ended["unknown"], 4);
    assert_eq!(
        ended["unknown_frames"],
        json!({"event_msg": 1, "event_msg/brand_new_kind": 1, "response_item/future_item": 1})
    );
    let malformed = at_line(&evs, 23)[0];
    assert_eq!(
        (malformed["reason"].as_str(), malformed["frame"].as_str()),
        (Some("malformed_frame"), Some("event_msg"))
    );
}

#[test]
fn trap_saved_logs_are_complete_when_they_end_with_a_newline() {
    // Ends mid-turn (a call without output): normal for a saved log.
    let evs = events("v0104_tasks_unified_exec");
    assert_eq!(evs.last().unwrap()["complete"], true);
    // Ends without a newline: damaged.
    let evs = events("edge_cases_unknowns");
    assert_eq!(evs.last().unwrap()["complete"], false);
}

#[test]
fn every_line_carries_its_own_timestamp() {
    for name in names() {
        let evs = events(&name);
        for (n, v) in input(&name) {
            for e in at_line(&evs, n) {
                if e["type"] != "unknown" {
                    assert_eq!(e["at"], v["timestamp"], "{name}:{n}");
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Forked and subagent rollouts: the copied history of the parent
// ------------------------------------------------------------------------------------------------

const FORK: &str = "forked_subagent_copy";
const FORK_PARENT: &str = "forked_subagent_parent";

/// The fork's lines that are its parent's lines copied in (same `type` and `payload`; Codex
/// re-stamps their `timestamp`), with their numbers in the fork.
fn copied_lines() -> Vec<(u64, Value)> {
    let parent: Vec<Value> = input(FORK_PARENT).into_iter().map(|(_, v)| json!([v["type"], v["payload"]])).collect();
    input(FORK).into_iter().filter(|(_, v)| parent.contains(&json!([v["type"], v["payload"]]))).collect()
}

/// `total_token_usage` of a `token_count` payload as (input incl. cached, cached, output, reasoning).
fn total_of(p: &Value) -> [u64; 4] {
    let t = &p["info"]["total_token_usage"];
    ["input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens"]
        .map(|k| t[k].as_u64().unwrap_or_else(|| panic!("{k} in {p}")))
}

#[test]
fn trap_forked_copied_token_counts_write_no_usage_and_no_rate_limit() {
    let copied = copied_lines();
    let copied_counts: Vec<u64> =
        copied.iter().filter(|(_, v)| v["payload"]["type"] == "token_count").map(|(n, _)| *n).collect();
    assert!(copied_counts.len() >= 2, "the fixture copies its parent's token_counts: {copied_counts:?}");
    let evs = events(FORK);
    for n in &copied_counts {
        assert_eq!(types_at(&evs, *n), ["heartbeat"], "copied token_count at line {n}");
    }
    // The parent's own file does count them: the same lines there give usage and rate limits.
    let parent = events(FORK_PARENT);
    assert_eq!(of_type(&parent, "usage").len(), copied_counts.len());
    assert!(!of_type(&parent, "rate_limit").is_empty());
}

#[test]
fn trap_forked_copied_session_meta_does_not_switch_the_session() {
    let lines = input(FORK);
    let own = &lines[0].1["payload"];
    let parent_id = own["forked_from_id"].as_str().expect("forked_from_id");
    let copied_metas: Vec<u64> =
        copied_lines().iter().filter(|(_, v)| v["type"] == "session_meta").map(|(n, _)| *n).collect();
    assert_eq!(copied_metas.len(), 1, "the parent's session_meta is copied in");
    let evs = events(FORK);
    for n in &copied_metas {
        assert_eq!(types_at(&evs, *n), ["heartbeat"], "copied session_meta at line {n}");
    }
    let started = only(&evs, "session_started");
    assert_eq!(started["session_id"], own["id"]);
    assert_eq!(started["parent_session_id"], parent_id);
    // Every event after it, the fork's own turn included, is the fork's.
    for e in evs.iter().filter(|e| e["type"] != "run_started" && e["type"] != "run_ended") {
        assert_eq!(e["session_id"], own["id"], "{e}");
    }
}

#[test]
fn trap_forked_usage_is_the_last_running_total_minus_the_inherited_one() {
    let copied = copied_lines();
    let inherited = copied
        .iter()
        .rev()
        .find(|(_, v)| v["payload"]["type"] == "token_count" && v["payload"]["info"].is_object())
        .map(|(_, v)| total_of(&v["payload"]))
        .expect("a copied token_count");
    let last = payloads(FORK, "event_msg", Some("token_count"))
        .iter()
        .rev()
        .find(|(_, p)| p["info"].is_object())
        .map(|(_, p)| total_of(p))
        .expect("a token_count");
    let own: Vec<u64> = (0..4).map(|i| last[i] - inherited[i]).collect();
    assert!(own.iter().all(|&x| x > 0) || own[3] == 0, "the fork did work of its own: {own:?}");
    let evs = events(FORK);
    let sum = |k: &str| of_type(&evs, "usage").iter().map(|u| u["usage"][k].as_u64().unwrap_or(0)).sum::<u64>();
    // Codex's input includes the cached tokens; the contract's does not.
    assert_eq!(sum("input") + sum("cache_read"), own[0]);
    assert_eq!(sum("cache_read"), own[1]);
    assert_eq!(sum("output"), own[2]);
    assert_eq!(sum("reasoning"), own[3]);
    // The fork's first token_count after the copy repeats the inherited total: no usage.
    let first_own = payloads(FORK, "event_msg", Some("token_count"))
        .into_iter()
        .find(|(n, _)| !copied.iter().any(|(c, _)| c == n))
        .expect("an own token_count");
    assert_eq!(total_of(&first_own.1), inherited, "the fixture re-reports the inherited total first");
    assert!(!types_at(&evs, first_own.0).contains(&"usage".to_owned()));
    // …but its rate limits are the fork's own reading, though it came right after the fork's
    // own prompt (typed long after the burst): only the burst's lines extend the copy.
    let prompt = payloads(FORK, "event_msg", Some("user_message")).last().map(|(n, _)| *n).expect("a prompt");
    assert_eq!(prompt + 1, first_own.0, "the fixture's own token_count follows its prompt");
    assert!(types_at(&evs, first_own.0).contains(&"rate_limit".to_owned()));
}

#[test]
fn trap_running_total_without_last_token_usage_gives_what_it_grew_by() {
    let tc = |at: &str, i: u64, c: u64, o: u64| {
        format!(
            r#"{{"timestamp":"{at}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{i},"cached_input_tokens":{c},"output_tokens":{o},"reasoning_output_tokens":0}}}}}}}}"#
        )
    };
    let meta = r#"{"timestamp":"2026-07-02T10:00:00.000Z","type":"session_meta","payload":{"id":"s1"}}"#;
    let input = [meta.to_owned(), tc("2026-07-02T10:00:02Z", 100, 40, 7), tc("2026-07-02T10:00:04Z", 250, 140, 9)];
    let evs = common::run_stdin(&[], &(input.join("\n") + "\n"));
    let u: Vec<&Value> = of_type(&evs, "usage");
    assert_eq!(u.len(), 2, "{evs:?}");
    assert_eq!(u[0]["usage"]["input"], 60);
    assert_eq!(u[0]["usage"]["output"], 7);
    // 250 − 100 prompt tokens, of which 140 − 40 cached.
    assert_eq!((u[1]["usage"]["input"].as_u64(), u[1]["usage"]["cache_read"].as_u64()), (Some(50), Some(100)));
    assert_eq!(u[1]["usage"]["output"], 2);
}

// ------------------------------------------------------------------------------------------------
// Codex 0.160 (issue 12 drift): `paginated_0_160.jsonl`, written after the shapes in
// openai/codex's protocol.rs / rollout policy (see fixtures/README.md).
// ------------------------------------------------------------------------------------------------

const PAGINATED: &str = "paginated_0_160";

#[test]
fn paginated_rollouts_take_their_text_from_item_completed() {
    let evs = events(PAGINATED);
    // The fixture's session_meta says `history_mode: paginated`; no user/agent_message event_msg.
    assert!(payloads(PAGINATED, "event_msg", Some("user_message")).is_empty());
    let items = payloads(PAGINATED, "event_msg", Some("item_completed"));
    let text_of = |ty: &str| -> Vec<(u64, String)> {
        items
            .iter()
            .filter(|(_, p)| p["item"]["type"] == ty)
            .map(|(n, p)| {
                let key = if ty == "Reasoning" { "summary_text" } else { "content" };
                let parts: Vec<String> = p["item"][key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_str().map_or_else(|| b["text"].as_str().unwrap().to_owned(), str::to_owned))
                    .collect();
                (*n, parts.join("\n"))
            })
            .collect()
    };
    for (ty, event) in [("UserMessage", "user_message"), ("AgentMessage", "output_delta"), ("Reasoning", "reasoning")] {
        let want = text_of(ty);
        assert!(!want.is_empty(), "{ty} in the fixture");
        let got: Vec<(u64, String)> = of_type(&evs, event)
            .iter()
            .map(|e| (e["line"].as_u64().unwrap(), e["text"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(got, want, "{event}");
    }
    assert_eq!(only(&evs, "output_delta")["message_id"], "msg_4d3c2b1a");
}

#[test]
fn a_legacy_rollout_keeps_item_completed_a_heartbeat_so_text_comes_once() {
    // Legacy mode (no history_mode): an AgentMessage item beside its agent_message event_msg.
    let input = [
        r#"{"timestamp":"2026-11-30T10:00:00.000Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-000000000001","cli_version":"0.150.0"}}"#,
        r#"{"timestamp":"2026-11-30T10:00:01.000Z","type":"event_msg","payload":{"type":"agent_message","message":"Done."}}"#,
        r#"{"timestamp":"2026-11-30T10:00:01.001Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"msg_1","content":[{"type":"Text","text":"Done."}]}}}"#,
    ]
    .join("\n");
    let evs = common::run_stdin(&[], &input);
    assert_eq!(of_type(&evs, "output_delta").len(), 1, "{evs:?}");
    assert_eq!(types_at(&evs, 3), ["heartbeat"]);
    // The same lines with history_mode paginated, without the event_msg copy: the item speaks.
    let paginated =
        input.replace(r#""cli_version":"0.150.0""#, r#""cli_version":"0.160.0","history_mode":"paginated""#);
    let paginated: Vec<&str> = paginated.lines().enumerate().filter(|(i, _)| *i != 1).map(|(_, l)| l).collect();
    let evs = common::run_stdin(&[], &paginated.join("\n"));
    let out = of_type(&evs, "output_delta");
    assert_eq!(out.len(), 1, "{evs:?}");
    assert_eq!(out[0]["text"], "Done.");
}

#[test]
fn thread_settings_applied_names_the_model_of_the_usage_after_it() {
    let evs = events(PAGINATED);
    assert_eq!(types_at(&evs, 2), ["heartbeat"]);
    assert_eq!(at_line(&evs, 2)[0]["frame"], "event_msg/thread_settings_applied");
    let input = [
        r#"{"timestamp":"2026-11-30T10:00:00.000Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-000000000002"}}"#,
        r#"{"timestamp":"2026-11-30T10:00:01.000Z","type":"event_msg","payload":{"type":"thread_settings_applied","thread_settings":{"model":"gpt-6-mini"}}}"#,
        r#"{"timestamp":"2026-11-30T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"output_tokens":2},"last_token_usage":{"input_tokens":10,"output_tokens":2}}}}"#,
    ]
    .join("\n");
    let evs = common::run_stdin(&[], &input);
    assert_eq!(only(&evs, "usage")["model"], "gpt-6-mini");
}

#[test]
fn sub_agent_activity_is_a_subagent_event() {
    let evs = events(PAGINATED);
    for (n, p) in payloads(PAGINATED, "event_msg", Some("sub_agent_activity")) {
        let ev = at_line(&evs, n);
        assert_eq!(ev.len(), 1);
        let e = ev[0];
        assert_eq!(e["type"], "subagent");
        assert_eq!(e["child_id"], p["agent_thread_id"]);
        assert_eq!(e["operation_id"], p["event_id"]);
        assert_eq!(e["description"], p["agent_path"]);
        assert_eq!(e["raw_status"], p["kind"]);
        let (op, status) = match p["kind"].as_str().unwrap() {
            "started" => ("spawn", "running"),
            "interrupted" => ("close", "stopped"),
            k => panic!("fixture kind {k}"),
        };
        assert_eq!((e["operation"].as_str().unwrap(), e["status"].as_str().unwrap()), (op, status));
    }
}

#[test]
fn thread_goal_and_new_line_types_are_heartbeats_of_a_rollout() {
    let evs = events(PAGINATED);
    for (n, v) in input(PAGINATED) {
        let frame = match v["type"].as_str().unwrap() {
            "token_usage_record" | "world_state" => v["type"].as_str().unwrap().to_owned(),
            "event_msg" if v["payload"]["type"] == "thread_goal_updated" => "event_msg/thread_goal_updated".into(),
            "response_item"
                if ["configuration_update", "additional_tools", "compaction_trigger"]
                    .contains(&v["payload"]["type"].as_str().unwrap()) =>
            {
                format!("response_item/{}", v["payload"]["type"].as_str().unwrap())
            }
            _ => continue,
        };
        let ev = at_line(&evs, n);
        assert_eq!(types_at(&evs, n), ["heartbeat"], "line {n}");
        assert_eq!(ev[0]["frame"], frame.as_str());
        assert_eq!(ev[0]["dialect"], DIALECT);
    }
    // token_usage_record repeats the token_count beside it: one usage, not two.
    assert_eq!(of_type(&evs, "usage").len(), 1);
}

#[test]
fn a_security_risk_score_line_is_a_heartbeat_of_a_rollout() {
    // Codex 0.149+ (`RolloutItem::SecurityRiskScore`: `scores`, `sampled_at`, `call_id`, `action`).
    let input = [
        r#"{"timestamp":"2026-11-30T10:00:00.000Z","type":"security_risk_score","payload":{"scores":{"action_risk":0.04},"call_id":"call_7Qe","sampled_at":"2026-11-30T10:00:00.000Z"}}"#,
        r#"{"timestamp":"2026-11-30T10:00:01.000Z","type":"session_meta","payload":{"id":"019ad1c0-0000-7000-8000-00000000beef","timestamp":"2026-11-30T10:00:01.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.160.0"}}"#,
        r#"{"timestamp":"2026-11-30T10:00:02.000Z","ordinal":4,"type":"security_risk_score","payload":{"scores":{"prompt_injection":0.02,"data_exfiltration":0.11}}}"#,
        r#"{"timestamp":"2026-11-30T10:00:03.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"output_tokens":2},"last_token_usage":{"input_tokens":10,"output_tokens":2}}}}"#,
    ]
    .join("\n");
    let evs = common::run_stdin(&[], &input);
    for n in [1, 3] {
        let ev = at_line(&evs, n);
        assert_eq!(types_at(&evs, n), ["heartbeat"], "line {n}: {ev:?}");
        assert_eq!(ev[0]["frame"], "security_risk_score");
        assert_eq!(ev[0]["dialect"], DIALECT, "a rollout may open with one");
    }
    assert_eq!(common::run_ended(&evs)["unknown"], 0);
    assert_eq!(only(&evs, "usage")["usage"]["input"], 10);
}

#[test]
fn tool_search_calls_pair_by_call_id_and_id_less_ones_in_order() {
    let evs = events(PAGINATED);
    let calls = payloads(PAGINATED, "response_item", Some("tool_search_call"));
    let outputs = payloads(PAGINATED, "response_item", Some("tool_search_output"));
    assert_eq!((calls.len(), outputs.len()), (2, 2));
    // With a call_id.
    let start = only(&at_line(&evs, calls[0].0).into_iter().cloned().collect::<Vec<_>>(), "tool_started").clone();
    assert_eq!(start["tool_id"], calls[0].1["call_id"]);
    assert_eq!((start["name"].as_str(), start["kind"].as_str()), (Some("tool_search"), Some("search")));
    assert_eq!(start["input"], calls[0].1["arguments"]);
    assert_eq!(start["summary"], calls[0].1["arguments"]["query"]);
    let done = at_line(&evs, outputs[0].0)[0].clone();
    assert_eq!(
        (done["type"].as_str(), done["tool_id"].clone()),
        (Some("tool_completed"), calls[0].1["call_id"].clone())
    );
    assert_eq!(done["ok"], true);
    let names: Vec<&str> =
        outputs[0].1["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(done["output"], names.join("\n"));
    // Server-side, call_id null: `line:<n>` of the call, and the output completes it.
    assert!(calls[1].1["call_id"].is_null() && outputs[1].1["call_id"].is_null());
    let id = format!("line:{}", calls[1].0);
    assert_eq!(at_line(&evs, calls[1].0)[0]["tool_id"], id.as_str());
    let done = at_line(&evs, outputs[1].0);
    assert_eq!(done.len(), 1, "no synthetic start: {done:?}");
    assert_eq!(done[0]["tool_id"], id.as_str());
    assert!(done[0].get("output").is_none(), "an empty tool list is no output");
}
