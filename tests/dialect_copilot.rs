//! The Copilot dialect (GitHub Copilot CLI `-p … --output-format json` on stdout, and the saved
//! `~/.copilot/session-state/<id>/events.jsonl`), pinned on its fixtures (`fixtures/copilot/`,
//! each with a `.notes` file naming the events expected per line).

use serde_json::Value;

mod common;
use common::{at_line, bin, fixture, input_frames, of_type, output_text, run_ended, run_stdin, types_at};

const DIALECT: &str = "copilot";
const NAMES: [&str; 4] = ["stdout_turn_tools", "stdout_rate_limited", "stdout_subagent_abort", "events_log"];

fn events(name: &str) -> Vec<Value> {
    common::events_of(DIALECT, name)
}

#[test]
fn both_forms_are_detected_as_copilot() {
    for name in NAMES {
        let out = bin().arg("detect").arg(fixture(DIALECT, name)).output().expect("running agentnorm detect");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("copilot\t"), "{name}");
        let evs = events(name);
        for e in evs.iter().filter(|e| e["type"] != "run_started" && e["type"] != "run_ended") {
            if e["reason"] != "not_json" {
                assert_eq!(e["dialect"], DIALECT, "{name}: {e}");
            }
        }
        assert_eq!(run_ended(&evs)["complete"], true, "{name}");
    }
}

#[test]
fn streamed_text_and_the_whole_message_come_out_once() {
    let evs = events("stdout_turn_tools");
    let deltas: String = input_frames(&fixture(DIALECT, "stdout_turn_tools"))
        .iter()
        .filter(|(_, f)| f["type"] == "assistant.message_delta")
        .map(|(_, f)| f["data"]["deltaContent"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(output_text(&evs), deltas, "the assistant.message lines repeat their deltas");
    assert_eq!(types_at(&evs, 29), ["heartbeat"]);
    // reasoningText of a model call that streamed no reasoning.
    assert_eq!(types_at(&evs, 11), ["reasoning"]);
    assert_eq!(at_line(&evs, 11)[0]["text"], "Need the failing target first.");
    // The saved log has no deltas: the whole message is the only copy.
    let evs = events("events_log");
    assert_eq!(output_text(&evs), "Footer now reads © 2026 and the build passes.");
}

#[test]
fn usage_per_model_call_folds_cached_tokens_out_of_the_input() {
    let evs = events("stdout_turn_tools");
    let usage = of_type(&evs, "usage");
    assert_eq!(usage.len(), 3, "one per assistant.usage; none from assistant.message outputTokens");
    let u = &usage[1]["usage"];
    // inputTokens 16290 includes cacheReadTokens 15721.
    assert_eq!(u["input"], 569);
    assert_eq!(u["cache_read"], 15721);
    assert_eq!(u["cache_write"], 560);
    assert_eq!(u["output"], 96);
    assert_eq!(u["context"], 16290 + 560);
    assert_eq!(usage[1]["model"], "claude-sonnet-4.6");
    let done = &of_type(&evs, "turn_completed")[0];
    assert!(done.get("usage").is_none() && done.get("cost_usd").is_none(), "premiumRequests is not money");
}

#[test]
fn tools_pair_by_call_id_with_exit_codes_and_durations() {
    let evs = events("stdout_turn_tools");
    let bash = &at_line(&evs, 16)[0];
    assert_eq!(bash["type"], "tool_completed");
    assert_eq!(bash["ok"], false, "success:true but exit code 2");
    assert_eq!(bash["exit_code"], 2);
    assert_eq!(bash["duration_ms"], 2324, "completion time minus start time");
    let view = &at_line(&evs, 15)[0];
    assert_eq!(view["ok"], true);
    assert_eq!(view["duration_ms"], 14);
    let edit = &at_line(&evs, 22)[0];
    assert_eq!(edit["ok"], false);
    assert_eq!(edit["error"], "No match found for old_str in /home/lee/ledgerd/internal/store/tx.go");
    assert!(of_type(&evs, "tool_started").iter().all(|e| e.get("synthetic").is_none()));
    let evs = events("events_log");
    assert_eq!(at_line(&evs, 17)[0]["exit_code"], 0);
    assert_eq!(at_line(&evs, 17)[0]["ok"], true);
    assert_eq!(at_line(&evs, 14)[0]["summary"], "/home/lee/site/src/Footer.tsx", "apply_patch's file");
}

#[test]
fn update_todo_checklists_are_plans() {
    let evs = events("events_log");
    assert_eq!(types_at(&evs, 7), ["tool_started", "plan_updated"]);
    let items = &at_line(&evs, 7)[1]["items"];
    assert_eq!(items[0]["text"], "Update footer year");
    assert_eq!(items[1]["status"], "pending");
}

#[test]
fn the_stdout_result_names_the_session_and_ends_the_turn() {
    let evs = events("stdout_turn_tools");
    assert_eq!(types_at(&evs, 33), ["session_started", "turn_completed"]);
    let done = &at_line(&evs, 33)[1];
    assert_eq!(done["session_id"], "6f0c2d7e-4b19-4a8e-9d35-1e7ab2c04f68");
    assert_eq!(done["duration_ms"], 12871);
    assert_eq!(done["result"], output_text(&evs[evs.len() - 10..]), "the final answer");
    assert!(evs.iter().take_while(|e| e["line"] != 33).all(|e| e.get("session_id").is_none()));
}

#[test]
fn a_failed_run_takes_the_session_error_and_its_kind() {
    let evs = events("stdout_rate_limited");
    assert_eq!(at_line(&evs, 1)[0]["reason"], "not_json");
    assert_eq!(at_line(&evs, 2)[0]["code"], "copilot.policy");
    assert_eq!(at_line(&evs, 6)[0]["code"], "copilot.model-call-failure");
    assert_eq!(at_line(&evs, 7)[0]["level"], "error");
    let failed = &of_type(&evs, "turn_failed")[0];
    assert_eq!(failed["error"], "Sorry, you have been rate-limited. Please wait a moment before trying again.");
    assert_eq!(failed["kind"], "api_error", "statusCode 429");
    assert_eq!(failed["duration_ms"], 1204);
}

#[test]
fn subagents_and_aborts() {
    let evs = events("stdout_subagent_abort");
    let sub = of_type(&evs, "subagent");
    assert_eq!(sub.len(), 2);
    assert_eq!(sub[0]["operation"], "spawn");
    assert_eq!(sub[0]["status"], "running");
    assert_eq!(sub[0]["description"], "Fast codebase analysis");
    assert_eq!(sub[1]["status"], "completed");
    let parent = "toolu_bdrk_01Ts5bXq8WnE2rYc4mKd7PaZ";
    for line in [7, 8, 9] {
        assert_eq!(at_line(&evs, line)[0]["parent_tool_id"], parent, "line {line}");
    }
    // The sub-agent's answer asks for no tools, but is no final answer of the main thread.
    assert!(of_type(&evs, "turn_completed").is_empty());
    assert_eq!(at_line(&evs, 14)[0]["type"], "interrupt");
    assert_eq!(at_line(&evs, 14)[0]["reason"], "user_initiated");
    let failed = &of_type(&evs, "turn_failed")[0];
    assert_eq!(failed["kind"], "aborted");
    assert_eq!(failed["error"], "copilot exited with code 130");
}

#[test]
fn a_saved_log_closes_its_turn_at_shutdown_with_the_session_totals_first() {
    let evs = events("events_log");
    assert_eq!(at_line(&evs, 1)[0]["type"], "session_started");
    assert_eq!(at_line(&evs, 1)[0]["cli_version"], "1.0.71");
    assert_eq!(at_line(&evs, 1)[0]["cwd"], "/home/lee/site");
    assert_eq!(types_at(&evs, 22), ["usage", "turn_completed"]);
    let u = &at_line(&evs, 22)[0];
    assert_eq!(u["usage"]["input"], 38410 - 29184);
    assert!(u["usage"].get("context").is_none(), "3 requests: no one request's context");
    assert_eq!(at_line(&evs, 22)[1]["result"], "Footer now reads © 2026 and the build passes.");
    // Without a shutdown the end of input closes it; a new prompt closes it before itself.
    let lines: Vec<String> = common::input_lines(&fixture(DIALECT, "events_log"));
    let cut = lines[..21].join("\n") + "\n";
    let evs = run_stdin(&[], &cut);
    assert_eq!(of_type(&evs, "turn_completed").len(), 1);
    assert_eq!(run_ended(&evs)["complete"], true);
    let again = cut.clone() + &lines[3] + "\n";
    let evs = run_stdin(&[], &again);
    assert_eq!(types_at(&evs, 22), ["turn_completed", "user_message"]);
}

#[test]
fn an_unknown_session_event_is_unknown_with_its_type() {
    let input = concat!(
        r#"{"type":"session.brand_new","data":{"x":1},"id":"a","timestamp":"2026-09-14T08:02:11.310Z","parentId":null}"#,
        "\n",
        r#"{"type":"future_thing","data":{},"id":"b","timestamp":"2026-09-14T08:02:11.310Z","parentId":"a"}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    let unknown = of_type(&evs, "unknown");
    assert_eq!(unknown.len(), 2);
    assert_eq!(unknown[0]["frame"], "session.brand_new");
    assert_eq!(unknown[0]["dialect"], DIALECT);
    assert_eq!(unknown[1]["frame"], "future_thing");
}

#[test]
fn codex_dotted_types_stay_codex() {
    let input = concat!(
        r#"{"type":"thread.started","thread_id":"t1"}"#,
        "\n",
        r#"{"type":"turn.started"}"#,
        "\n",
        r#"{"type":"turn.completed","usage":{"input_tokens":3,"cached_input_tokens":0,"output_tokens":1}}"#,
        "\n"
    );
    let evs = run_stdin(&[], input);
    for e in &evs[1..evs.len() - 1] {
        assert_eq!(e["dialect"], "codex", "{e}");
    }
}

#[test]
fn session_bookkeeping_of_newer_builds_is_heartbeats() {
    // Shapes from the SDK's generated `session-events.ts` (1.0.8x–1.0.9x): `data` as the schema
    // gives it, Copilot's envelope.
    let data = [
        (
            "session.start",
            r#"{"sessionId":"s-9","version":1,"producer":"copilot-agent","copilotVersion":"1.0.91","startTime":"2026-11-30T09:00:00.000Z","context":{"cwd":"/w"}}"#,
        ),
        ("subagent.selected", r#"{"agentName":"ops","agentDisplayName":"Ops","tools":null}"#),
        ("subagent.deselected", r#"{}"#),
        (
            "session.schedule_created",
            r#"{"id":"sch_1","prompt":"check the deploy","displayPrompt":"check the deploy","recurring":false,"at":"2026-11-30T10:00:00.000Z"}"#,
        ),
        ("session.schedule_cancelled", r#"{"id":"sch_1"}"#),
        ("session.workspace_file_changed", r#"{"operation":"update","path":"plan.md"}"#),
        ("session.context_cleared", r#"{"messagesCleared":14}"#),
        (
            "session.handoff",
            r#"{"handoffTime":"2026-11-30T09:05:00.000Z","sourceType":"remote","remoteSessionId":"r-1","summary":"moved to the cloud agent"}"#,
        ),
        ("session.auto_mode_resolved", r#"{"chosenModel":"gpt-5.4","routingMethod":"router","confidence":0.82}"#),
        ("session.remote_steerable_changed", r#"{"remoteSteerable":true}"#),
        ("tool_search.activated", r#"{"strategy":"bm25","toolNames":["gh_search"]}"#),
        ("assistant.tool_call_delta", r#"{"toolCallId":"call_1","toolName":"bash","inputDelta":"{\"comm"}"#),
        ("assistant.idle", r#"{"aborted":false}"#),
        ("mcp.tools.list_changed", r#"{}"#),
    ];
    let input: String = data
        .iter()
        .enumerate()
        .map(|(i, (ty, d))| {
            format!(
                r#"{{"type":"{ty}","data":{d},"id":"e{}","timestamp":"2026-11-30T09:00:0{}.000Z","parentId":"e{i}"}}"#,
                i + 1,
                i % 10
            ) + "\n"
        })
        .collect();
    let evs = common::run_stdin(&[], &input);
    for (i, (ty, _)) in data.iter().enumerate().skip(1) {
        let n = i as u64 + 1;
        let ours: Vec<&Value> = common::at_line(&evs, n);
        assert_eq!(ours.len(), 1, "line {n}: {ours:?}");
        assert_eq!(ours[0]["type"], "heartbeat", "{ty}");
        assert_eq!(ours[0]["frame"], *ty);
        assert_eq!(ours[0]["dialect"], "copilot", "{ty}");
    }
    assert_eq!(common::run_ended(&evs)["unknown"], 0);
}
