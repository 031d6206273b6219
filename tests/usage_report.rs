//! `agentnorm usage`: every folding rule of the report pinned (SPEC §5, issue 4 item 5).

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod common;
use common::{bin, parse};

fn run(args: &[&str]) -> Output {
    let out = bin().arg("usage").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The NDJSON rows, totals row last.
fn rows(args: &[&str]) -> Vec<Value> {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = run(&a);
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn n(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

fn cost(v: &Value) -> Option<f64> {
    v.get("cost_usd").and_then(Value::as_f64)
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn claude_result(sid: &str, cost: f64, input: u64, output: u64) -> String {
    format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"{sid}","total_cost_usd":{cost},"usage":{{"input_tokens":{input},"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":{output}}}}}"#
    )
}

fn claude_assistant(sid: &str, mid: &str, model: &str, parent: Option<&str>, input: u64) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"assistant","message":{{"id":"{mid}","model":"{model}","role":"assistant","content":[{{"type":"text","text":"x"}}],"usage":{{"input_tokens":{input},"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}}}},"session_id":"{sid}","parent_tool_use_id":{parent},"uuid":"{mid}-u"}}"#
    )
}

fn claude_init(sid: &str, model: &str) -> String {
    format!(
        r#"{{"type":"system","subtype":"init","session_id":"{sid}","model":"{model}","tools":["Bash"],"uuid":"i-{sid}"}}"#
    )
}

fn transcript_line(sid: &str, mid: &str, at: &str, sidechain: bool, model: &str, input: u64, output: u64) -> String {
    format!(
        r#"{{"type":"assistant","sessionId":"{sid}","uuid":"u-{mid}-{sidechain}","parentUuid":null,"isSidechain":{sidechain},"requestId":"req-{mid}-{sidechain}","timestamp":"{at}","message":{{"id":"{mid}","model":"{model}","role":"assistant","type":"message","content":[{{"type":"text","text":"t"}}],"usage":{{"input_tokens":{input},"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":{output}}}}}}}"#
    )
}

#[test]
fn trap_claude_total_cost_usd_is_a_running_total_per_process() {
    // As in corpus three-turns-one-process / manual-compaction: 0.0103, 0.0200, 0.0297.
    let d = tempfile::tempdir().unwrap();
    let mut s = vec![claude_init("c1", "claude-sonnet-5")];
    for (i, c) in [0.0103, 0.0200, 0.0297].iter().enumerate() {
        s.push(claude_assistant("c1", &format!("m{i}"), "claude-sonnet-5", None, 10));
        s.push(claude_result("c1", *c, 10, 4));
    }
    let f = write(d.path(), "run.jsonl", &(s.join("\n") + "\n"));
    let r = rows(&[&f]);
    assert_eq!(r.len(), 2);
    assert!(close(cost(&r[0]), 0.0297), "the last running total, not the sum: {}", r[0]);
    assert_eq!(r[0]["cost_source"], "reported");
    assert_eq!((n(&r[0], "input"), n(&r[0], "output"), n(&r[0], "requests")), (Some(30), Some(12), Some(3)));
    // A lower total is a new process's counter: its figures are added.
    let s2 = [
        claude_init("c2", "claude-sonnet-5"),
        claude_result("c2", 0.02, 1, 1),
        claude_result("c2", 0.005, 1, 1),
        claude_result("c2", 0.007, 1, 1),
    ];
    let f2 = write(d.path(), "restart.jsonl", &(s2.join("\n") + "\n"));
    let r = rows(&[&f2]);
    assert!(close(cost(&r[0]), 0.027), "{}", r[0]);
}

#[test]
fn trap_claude_result_usage_is_the_turn_figure_and_subagent_requests_are_added() {
    let d = tempfile::tempdir().unwrap();
    let s = [
        claude_init("c3", "claude-sonnet-4-5"),
        claude_assistant("c3", "m1", "claude-sonnet-4-5", None, 10),
        claude_assistant("c3", "m1", "claude-sonnet-4-5", None, 10),
        claude_assistant("c3", "sub1", "claude-haiku-4-5", Some("toolu_1"), 7),
        claude_assistant("c3", "m2", "claude-sonnet-4-5", None, 20),
        // result.usage covers the main thread only (claude-2.1.283-background-agent).
        claude_result("c3", 0.5, 30, 9),
    ];
    let f = write(d.path(), "sub.jsonl", &(s.join("\n") + "\n"));
    let r = rows(&[&f]);
    assert_eq!(n(&r[0], "input"), Some(37), "aggregate 30 + subagent 7: {}", r[0]);
    assert_eq!(n(&r[0], "output"), Some(9), "the aggregate's output (requests have none without partials)");
    assert_eq!(n(&r[0], "requests"), Some(3), "m1 once, sub1, m2");
    assert!(close(cost(&r[0]), 0.5), "the reported cost covers the subagent: {}", r[0]);
    let by_model = rows(&["--by", "model", &f]);
    let haiku = by_model.iter().find(|r| r["model"] == "claude-haiku-4-5").unwrap();
    assert_eq!(n(haiku, "input"), Some(7));
}

#[test]
fn trap_codex_exec_session_scope_takes_the_last_running_total() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "exec.jsonl",
        r#"{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}}
{"type":"turn.started"}
{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":200,"output_tokens":25}}
"#,
    );
    let r = rows(&[&f]);
    assert_eq!(r[0]["session_id"], "t1");
    assert_eq!(r[0]["dialect"], "codex");
    assert_eq!((n(&r[0], "input"), n(&r[0], "cache_read"), n(&r[0], "output")), (Some(100), Some(200), Some(25)));
    assert_eq!(r[0].get("cache_write"), None, "absent is not zero");
    assert_eq!(r[0].get("requests"), None, "codex exec reports no per-request usage");
    assert_eq!(n(&r[0], "total"), Some(325));
}

#[test]
fn trap_transcript_message_counted_once_across_files_keyed_by_session() {
    let d = tempfile::tempdir().unwrap();
    let full = [
        transcript_line("S1", "msg_1", "2026-03-01T10:00:01.000Z", false, "claude-sonnet-4-5-20250929", 10, 5),
        transcript_line("S1", "msg_2", "2026-03-01T10:05:00.000Z", false, "claude-sonnet-4-5-20250929", 3, 4),
    ];
    // An extract copying msg_1's line, and a session forked or resumed from S1 into a new file
    // (a new session id) repeating msg_1 (issue 13: counted once, for the first session).
    let extract =
        [transcript_line("S1", "msg_1", "2026-03-01T10:00:01.000Z", false, "claude-sonnet-4-5-20250929", 10, 5)];
    let other = [transcript_line("S2", "msg_1", "2026-03-02T10:00:00.000Z", false, "claude-sonnet-4-5-20250929", 1, 1)];
    let a = write(d.path(), "a.jsonl", &(full.join("\n") + "\n"));
    let b = write(d.path(), "b.jsonl", &(extract.join("\n") + "\n"));
    let c = write(d.path(), "c.jsonl", &(other.join("\n") + "\n"));
    for order in [[&a, &b, &c], [&b, &a, &c]] {
        let r = rows(&[order[0].as_str(), order[1].as_str(), order[2].as_str()]);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0]["session_id"], "S1");
        assert_eq!((n(&r[0], "input"), n(&r[0], "output"), n(&r[0], "requests")), (Some(13), Some(9), Some(2)));
        assert_eq!(r[0]["source"], order[0].as_str(), "source = the first file of the session");
        assert_eq!(n(&r[1], "input"), Some(13));
    }
}

#[test]
fn trap_sidechain_requests_count_toward_the_session() {
    let d = tempfile::tempdir().unwrap();
    let t = [
        transcript_line("S3", "msg_a", "2026-03-01T10:00:01.000Z", false, "claude-sonnet-4-5-20250929", 10, 5),
        transcript_line("S3", "msg_b", "2026-03-01T10:00:02.000Z", true, "claude-haiku-4-5-20251001", 2, 3),
    ];
    let f = write(d.path(), "side.jsonl", &(t.join("\n") + "\n"));
    let r = rows(&[&f]);
    assert_eq!((n(&r[0], "input"), n(&r[0], "output"), n(&r[0], "requests")), (Some(12), Some(8), Some(2)));
    // Estimated: sonnet 4.5 (10, 100, 20, 5) + haiku 4.5 (2, 100, 20, 3), list prices.
    let want =
        (10.0 * 3.0 + 100.0 * 0.3 + 20.0 * 3.75 + 5.0 * 15.0 + 2.0 * 1.0 + 100.0 * 0.1 + 20.0 * 1.25 + 3.0 * 5.0) / 1e6;
    assert!(close(cost(&r[0]), (want * 1e6_f64).round() / 1e6), "{} vs {want}", r[0]);
    assert_eq!(r[0]["cost_source"], "estimated");
}

#[test]
fn trap_rollout_unchanged_total_is_not_counted_again() {
    let d = tempfile::tempdir().unwrap();
    let tc = |at: &str, total: u64, last: u64| {
        format!(
            r#"{{"timestamp":"{at}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total},"cached_input_tokens":0,"output_tokens":{total},"reasoning_output_tokens":0,"total_tokens":{t2}}},"last_token_usage":{{"input_tokens":{last},"cached_input_tokens":0,"output_tokens":{last},"reasoning_output_tokens":0,"total_tokens":{l2}}},"model_context_window":272000}}}}}}"#,
            t2 = total * 2,
            l2 = last * 2
        )
    };
    let s = [
        r#"{"timestamp":"2026-04-01T09:00:00.000Z","type":"session_meta","payload":{"id":"r1","timestamp":"2026-04-01T09:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.60.0"}}"#.to_owned(),
        r#"{"timestamp":"2026-04-01T09:00:01.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5-codex"}}"#.to_owned(),
        tc("2026-04-01T09:00:02.000Z", 100, 100),
        tc("2026-04-01T09:00:03.000Z", 100, 100),
        tc("2026-04-01T09:00:04.000Z", 150, 50),
    ];
    let f = write(d.path(), "rollout-2026-04-01T09-00-00-r1.jsonl", &(s.join("\n") + "\n"));
    let r = rows(&[&f]);
    assert_eq!(r[0]["dialect"], "codex-rollout");
    assert_eq!((n(&r[0], "input"), n(&r[0], "output"), n(&r[0], "requests")), (Some(150), Some(150), Some(2)));
    assert_eq!(r[0]["cost_source"], "estimated");
    // 0.0016875, written to the micro-dollar.
    assert!(close(cost(&r[0]), 0.001688), "{}", r[0]);
}

#[test]
fn trap_opencode_steps_are_not_added_to_their_turn_sum() {
    // fixtures/opencode/multi_step_turn.jsonl: steps of 9120+310 input, cost 0.00412 + 0.00088.
    let r = rows(&["fixtures/opencode/multi_step_turn.jsonl"]);
    let out = bin()
        .args(["--no-observed-at", "--only", "usage", "fixtures/opencode/multi_step_turn.jsonl"])
        .output()
        .unwrap();
    let steps = parse(&out.stdout);
    let step_input: u64 = steps.iter().map(|e| e["usage"]["input"].as_u64().unwrap_or(0)).sum();
    let totals = r.last().unwrap();
    assert_eq!(n(totals, "input"), Some(step_input), "once, not steps + turn sum");
    assert_eq!(n(totals, "requests"), Some(steps.len() as u64));
    assert_eq!(totals["cost_source"], "reported");
    assert!(close(cost(totals), 0.005), "per-turn costs summed: {totals}");
}

#[test]
fn trap_opencode_costs_are_per_turn_and_summed() {
    let d = tempfile::tempdir().unwrap();
    let step = |ts: u64, reason: &str, cost: f64| {
        format!(
            r#"{{"type":"step_finish","timestamp":{ts},"sessionID":"ses_x","part":{{"id":"p{ts}","sessionID":"ses_x","messageID":"m{ts}","type":"step-finish","reason":"{reason}","cost":{cost},"tokens":{{"input":10,"output":2,"reasoning":1,"cache":{{"read":5,"write":0}}}}}}}}"#
        )
    };
    let start = |ts: u64| {
        format!(
            r#"{{"type":"step_start","timestamp":{ts},"sessionID":"ses_x","part":{{"id":"s{ts}","sessionID":"ses_x","messageID":"m{ts}","type":"step-start"}}}}"#
        )
    };
    let s = [
        start(1772620800000),
        step(1772620801000, "stop", 0.01),
        start(1772620802000),
        step(1772620803000, "stop", 0.02),
    ];
    let f = write(d.path(), "oc.jsonl", &(s.join("\n") + "\n"));
    let r = rows(&[&f]);
    assert!(close(cost(&r[0]), 0.03), "{}", r[0]);
    assert_eq!((n(&r[0], "input"), n(&r[0], "output"), n(&r[0], "reasoning")), (Some(20), Some(6), Some(2)));
}

fn two_day_transcript(d: &Path) -> String {
    let t = [
        transcript_line("S4", "d1", "2026-03-01T23:59:59.000Z", false, "claude-sonnet-4-5-20250929", 1, 1),
        transcript_line("S4", "d2", "2026-03-02T00:00:01.000Z", false, "claude-opus-4-5-20251101", 2, 2),
        transcript_line("S4", "d3", "2026-03-03T12:00:00.000+02:00", false, "claude-opus-4-5-20251101", 4, 4),
    ];
    write(d, "days.jsonl", &(t.join("\n") + "\n"))
}

#[test]
fn trap_grouping_by_model_and_utc_day() {
    let d = tempfile::tempdir().unwrap();
    let f = two_day_transcript(d.path());
    let m = rows(&["--by", "model", &f]);
    assert_eq!(m.len(), 3);
    assert_eq!((m[0]["model"].as_str(), n(&m[0], "input")), (Some("claude-opus-4-5-20251101"), Some(6)));
    assert_eq!((m[1]["model"].as_str(), n(&m[1], "input")), (Some("claude-sonnet-4-5-20250929"), Some(1)));
    assert_eq!(m[0].get("session_id"), None);
    assert_eq!(m[0].get("dialect"), None);
    let days = rows(&["--by", "day", &f]);
    let got: Vec<(&str, u64)> =
        days[..3].iter().map(|r| (r["day"].as_str().unwrap(), n(r, "input").unwrap())).collect();
    assert_eq!(got, [("2026-03-01", 1), ("2026-03-02", 2), ("2026-03-03", 4)]);
    assert_eq!(days[3]["totals"], true);
    assert_eq!(n(&days[3], "input"), Some(7));
}

#[test]
fn trap_since_and_until_bound_the_time() {
    let d = tempfile::tempdir().unwrap();
    let f = two_day_transcript(d.path());
    let total = |args: &[&str]| n(rows(args).last().unwrap(), "input");
    assert_eq!(total(&["--since", "2026-03-02", &f]), Some(6));
    assert_eq!(total(&["--until", "2026-03-02", &f]), Some(3), "a date is the whole day");
    assert_eq!(total(&["--since", "2026-03-02T00:00:01Z", "--until", "2026-03-02T00:00:01Z", &f]), Some(2));
    assert_eq!(total(&["--since", "2027-01-01", &f]), None, "nothing counted is absent, not 0");
    // Usage without a time is left out once a bound is given.
    let codex = write(
        d.path(),
        "exec.jsonl",
        "{\"type\":\"thread.started\",\"thread_id\":\"t9\"}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}\n",
    );
    assert_eq!(total(&[&codex]), Some(5));
    assert_eq!(total(&["--since", "2000-01-01", &codex]), None);
    assert_eq!(rows(&["--by", "day", &codex])[0]["day"], "unknown");
    let bad = bin().args(["usage", "--since", "yesterday", &codex]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn trap_unknown_model_gets_no_cost_never_a_guess() {
    let d = tempfile::tempdir().unwrap();
    let t = [
        transcript_line("S5", "k1", "2026-03-01T10:00:00.000Z", false, "claude-sonnet-4-5-20250929", 1, 1),
        transcript_line("S6", "k2", "2026-03-01T10:00:00.000Z", false, "claude-sonnet-9-9", 1, 1),
    ];
    let f = write(d.path(), "unk.jsonl", &(t.join("\n") + "\n"));
    let r = rows(&[&f]);
    assert!(cost(&r[0]).is_some());
    assert_eq!(r[1].get("cost_usd"), None, "{}", r[1]);
    assert_eq!(r[1].get("cost_source"), None);
    // Issue 13: an unpriced model never blanks a total: the priced part, marked partial.
    assert_eq!(cost(&r[2]), cost(&r[0]), "the total is the priced sum: {}", r[2]);
    assert_eq!(r[2]["cost_partial"], true);
    assert_eq!(r[2]["unpriced"][0]["model"], "claude-sonnet-9-9");
}

#[test]
fn trap_absent_figures_stay_absent() {
    // Gemini reports no cache writes; Cursor reports no reasoning.
    let r = rows(&["fixtures/gemini", "fixtures/cursor"]);
    for row in &r {
        for (k, v) in row.as_object().unwrap() {
            assert!(!v.is_null(), "{k} is null in {row}");
        }
        if row["dialect"] == "gemini" {
            assert_eq!(row.get("cache_write"), None, "{row}");
        }
        if row["dialect"] == "cursor" {
            assert_eq!(row.get("reasoning"), None, "{row}");
        }
    }
}

#[test]
fn csv_json_and_table_shapes() {
    let d = tempfile::tempdir().unwrap();
    let f = two_day_transcript(d.path());
    let r = rows(&[&f]);
    let first = String::from_utf8(run(&["--json", &f]).stdout).unwrap();
    let first = first.lines().next().unwrap().to_owned();
    let mut keys: Vec<(usize, &str)> =
        r[0].as_object().unwrap().keys().map(|k| (first.find(&format!("\"{k}\":")).unwrap(), k.as_str())).collect();
    keys.sort();
    let keys: Vec<&str> = keys.into_iter().map(|(_, k)| k).collect();
    assert_eq!(
        keys,
        [
            "session_id",
            "dialect",
            "input",
            "cache_read",
            "cache_write",
            "output",
            "total",
            "requests",
            "cost_usd",
            "cost_source",
            "source"
        ]
    );
    let t = r.last().unwrap();
    assert_eq!(t["totals"], true);
    assert_eq!(t.get("session_id"), None);
    assert_eq!(n(t, "total"), Some(7 + 300 + 60 + 7));

    let csv = String::from_utf8(run(&["--csv", &f]).stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "session_id,dialect,input,cache_read,cache_write,output,reasoning,total,requests,cost_usd,cost_source,source,cost_partial,unpriced,totals"
    );
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("S4,claude-transcript,7,300,60,7,,374,3,"), "{}", lines[1]);
    assert!(lines[2].starts_with(",,7,300,60,7,,374,3,") && lines[2].ends_with(",true"), "{}", lines[2]);

    // Not a terminal and no flag: the table, aligned, with thousands separators.
    let big = write(
        d.path(),
        "big.jsonl",
        &(transcript_line("S7", "b1", "2026-03-01T10:00:00.000Z", false, "claude-sonnet-4-5", 1_234_567, 1) + "\n"),
    );
    let table = String::from_utf8(run(&[&big]).stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("SESSION_ID") && lines[0].contains("CACHE_READ"), "{table}");
    assert!(lines[1].contains("1,234,567") && lines[1].contains("~$"), "{table}");
    assert!(lines[2].starts_with("TOTAL"), "{table}");
    let col = |l: &str| l.find("1,234,567").map(|i| i + "1,234,567".len());
    assert_eq!(col(lines[1]), col(lines[2]), "figures right-aligned:\n{table}");
}

#[test]
fn result_does_not_depend_on_the_thread_count() {
    let one = run(&["-j", "1", "fixtures"]).stdout;
    let many = run(&["-j", "8", "fixtures"]).stdout;
    assert_eq!(one, many);
}

#[test]
fn help_names_the_price_table_date() {
    let out = bin().args(["usage", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains(agentnorm::sink::prices::PRICES_DATE), "{help}");
    assert!(help.contains("list prices"));
}

/// `total_token_usage` of the last `token_count` of a rollout as the report's figures: (input
/// without cached, cache_read, output, reasoning).
fn last_rollout_total(path: &str) -> [u64; 4] {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let t = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["payload"]["info"]["total_token_usage"].as_object().cloned())
        .next_back()
        .expect("a token_count");
    let g = |k: &str| t[k].as_u64().unwrap();
    [
        g("input_tokens") - g("cached_input_tokens"),
        g("cached_input_tokens"),
        g("output_tokens"),
        g("reasoning_output_tokens"),
    ]
}

fn figures(row: &Value) -> [u64; 4] {
    ["input", "cache_read", "output", "reasoning"].map(|k| n(row, k).unwrap_or(0))
}

#[test]
fn trap_forked_rollout_and_its_parent_are_not_double_counted() {
    let parent = "fixtures/codex-rollout/forked_subagent_parent.jsonl";
    let fork = "fixtures/codex-rollout/forked_subagent_copy.jsonl";
    let (p, f) = (last_rollout_total(parent), last_rollout_total(fork));
    let r = rows(&[parent, fork]);
    assert_eq!(r.len(), 3, "{r:?}");
    // The parent's row is its own running total; the fork's running total includes what it
    // inherited from the parent, so the fork's row is the rest, and together they are the
    // fork's running total — nothing counted twice.
    assert_eq!(figures(&r[0]), p);
    let own: Vec<u64> = (0..4).map(|i| f[i] - p[i]).collect();
    assert_eq!(figures(&r[1]).to_vec(), own);
    assert_eq!(figures(&r[2]), f, "totals");
    // Either order of the inputs gives the same totals.
    let r2 = rows(&[fork, parent]);
    assert_eq!(figures(&r2[2]), f);
}

/// A Claude `result` with a `modelUsage` of `(model, inputTokens, outputTokens, costUSD)`.
fn claude_result_models(sid: &str, cost: f64, models: &[(&str, u64, u64, f64)]) -> String {
    let mu: Vec<String> = models
        .iter()
        .map(|(m, i, o, c)| {
            format!(
                r#""{m}":{{"inputTokens":{i},"outputTokens":{o},"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":{c},"contextWindow":200000}}"#
            )
        })
        .collect();
    let mut r = claude_result(sid, cost, 1, 1);
    r.pop();
    format!(r#"{r},"modelUsage":{{{}}}}}"#, mu.join(","))
}

/// The reported cost of a one-session Claude stream made of `results`.
fn claude_cost(results: &[String]) -> Option<f64> {
    let d = tempfile::tempdir().unwrap();
    let mut s = vec![claude_init("c1", "claude-sonnet-5")];
    s.extend_from_slice(results);
    let f = write(d.path(), "run.jsonl", &(s.join("\n") + "\n"));
    let r = rows(&[&f]);
    assert_eq!(r[0]["cost_source"], "reported", "{}", r[0]);
    cost(&r[0])
}

#[test]
fn trap_claude_cost_counter_restart_with_a_model_gone_counts_the_total_whole() {
    // As corpus three-turns-one-process: two turns of one process (haiku + sonnet, running
    // totals; the second interrupted, so unchanged), then a new process whose total (sonnet
    // only) is still above the last one.
    let (h, s1, s3) = (0.000592, 0.0097209, 0.0123081);
    let first = claude_result_models("c1", h + s1, &[("claude-haiku-4-5", 527, 13, h), ("claude-sonnet-5", 2, 4, s1)]);
    let results = [first.clone(), first, claude_result_models("c1", s3, &[("claude-sonnet-5", 2, 3, s3)])];
    assert!(s3 > h + s1, "the restarted total still went up");
    // First process: its last running total; second: its own total, whole.
    let want = (h + s1) + s3;
    let got = claude_cost(&results);
    assert!(close(got, want), "{got:?} != {want} (the difference would give {s3})");
}

#[test]
fn trap_claude_cost_counter_restart_with_a_counter_down_counts_the_total_whole() {
    // Same models, total up, but sonnet's output counter went down: a new process.
    let results = [
        claude_result_models("c1", 0.010, &[("claude-sonnet-5", 2, 40, 0.010)]),
        claude_result_models("c1", 0.012, &[("claude-sonnet-5", 3, 12, 0.012)]),
    ];
    assert!(close(claude_cost(&results), 0.022));
    // Counters all up (or equal): the same process, the difference.
    let results = [
        claude_result_models("c1", 0.010, &[("claude-sonnet-5", 2, 40, 0.010)]),
        claude_result_models("c1", 0.012, &[("claude-sonnet-5", 2, 41, 0.012)]),
    ];
    assert!(close(claude_cost(&results), 0.012));
}

#[test]
fn claude_model_usage_is_written_per_model_in_snake_case() {
    let line =
        claude_result_models("c1", 0.01, &[("claude-sonnet-5", 2, 4, 0.0097), ("claude-haiku-4-5", 527, 13, 0.0006)]);
    let old = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"c2","total_cost_usd":0.001,"usage":{"input_tokens":40,"output_tokens":12},"modelUsage":{"claude-sonnet-4-5":{"input_tokens":40,"output_tokens":12,"service_tier":"standard"}}}"#;
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "run.jsonl", &format!("{line}\n{old}\n"));
    let out = bin().args(["--no-observed-at", &f]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let ends: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "turn_completed")
        .collect();
    assert_eq!(ends.len(), 2);
    let mu = &ends[0]["model_usage"];
    assert_eq!(mu["claude-haiku-4-5"]["input"], 527);
    assert_eq!(mu["claude-haiku-4-5"]["output"], 13);
    assert_eq!(mu["claude-sonnet-5"]["cost_usd"], 0.0097);
    assert_eq!(mu["claude-sonnet-5"]["context_window"], 200000);
    assert_eq!(mu["claude-sonnet-5"]["cache_read"], 0, "reported zeros stay");
    assert!(mu["claude-sonnet-5"].get("max_output_tokens").is_none(), "absent stays absent");
    // The older snake_case shape.
    assert_eq!(ends[1]["model_usage"]["claude-sonnet-4-5"], serde_json::json!({"input": 40, "output": 12}));
}

/// A generated set of Claude transcripts with forks (a new session id repeating a prefix of an
/// earlier session's lines, as `--fork-session` and resumes write them), extracts and copies of
/// whole files: every message counts once, for the session of the file that started first
/// (then ended first; then came first), in the totals and in each session's row. The report
/// keeps hashes of the ids, not the ids: this pins that it still tells every message apart.
#[test]
fn generated_forks_and_copies_count_each_message_once_for_the_first_session() {
    let d = tempfile::tempdir().unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    // A line: (message id, minute, input, output); a file: (session id, lines).
    type Line = (String, u64, u64, u64);
    let mut files: Vec<(String, Vec<Line>)> = Vec::new();
    let mut mid = 0;
    for s in 0..40 {
        let sid = format!("S{s}");
        let mut lines = Vec::new();
        if s > 0 && next(3) == 0 {
            // A fork: a prefix of an earlier file, under this session's id.
            let parent = files[next(files.len() as u64) as usize].1.clone();
            let keep = 1 + next(parent.len() as u64) as usize;
            lines.extend(parent.into_iter().take(keep));
        }
        let start = lines.last().map_or(next(5000), |l| l.1 + 1);
        for k in 0..1 + next(6) {
            mid += 1;
            lines.push((format!("msg_{mid:05}"), start + k * 3, 1 + next(900), 1 + next(90)));
        }
        files.push((sid, lines));
        if next(4) == 0 {
            // A copy of a whole file (an archived or synced copy): same id, same lines.
            let copy = files.last().unwrap().clone();
            files.push(copy);
        }
    }
    let at =
        |minute: u64| format!("2026-03-{:02}T{:02}:{:02}:00.000Z", 1 + minute / 1440, minute / 60 % 24, minute % 60);
    let mut paths = Vec::new();
    for (i, (sid, lines)) in files.iter().enumerate() {
        let text: String = lines
            .iter()
            .map(|(m, minute, input, output)| {
                transcript_line(sid, m, &at(*minute), false, "claude-sonnet-4-5-20250929", *input, *output) + "\n"
            })
            .collect();
        paths.push(write(d.path(), &format!("f{i:03}.jsonl"), &text));
    }
    // The reference: files by (first time, last time), stable; a message counts where first seen.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| (files[i].1.first().unwrap().1, files[i].1.last().unwrap().1));
    let mut seen = std::collections::HashSet::new();
    let mut want: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for i in order {
        let (sid, lines) = &files[i];
        for (m, _, input, output) in lines {
            if seen.insert(m.clone()) {
                let e = want.entry(sid.clone()).or_default();
                *e = (e.0 + input, e.1 + output, e.2 + 1);
            }
        }
    }
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let r = rows(&args);
    let (totals, sessions) = r.split_last().unwrap();
    let mut got: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for row in sessions {
        let sid = row["session_id"].as_str().unwrap().to_owned();
        let v = (n(row, "input").unwrap(), n(row, "output").unwrap(), n(row, "requests").unwrap());
        assert!(got.insert(sid, v).is_none(), "one row per session");
    }
    want.retain(|_, v| v.2 > 0);
    assert_eq!(got, want);
    let sum = want.values().fold((0, 0, 0), |a, v| (a.0 + v.0, a.1 + v.1, a.2 + v.2));
    assert_eq!((n(totals, "input").unwrap(), n(totals, "output").unwrap(), n(totals, "requests").unwrap()), sum);
    assert_eq!(sum.2, mid, "every message counted once");
}
