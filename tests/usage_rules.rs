//! `agentnorm usage`, issue 13: the rules people bill on, each pinned by a case that fails when
//! the rule is broken (per-model Gemini figures, stream figures from `message_delta`, prices,
//! partial totals, requests counted once across logs).

use std::path::Path;

use serde_json::Value;

mod common;
use common::bin;

/// The NDJSON rows of `agentnorm usage --json ARGS`, totals row last.
fn rows(args: &[&str]) -> Vec<Value> {
    let out = bin().arg("usage").arg("--json").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn n(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

fn cost(v: &Value) -> Option<f64> {
    v.get("cost_usd").and_then(Value::as_f64)
}

fn near(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6)
}

fn by_model<'a>(rows: &'a [Value], model: &str) -> &'a Value {
    rows.iter().find(|r| r["model"] == model).unwrap_or_else(|| panic!("no row for {model}: {rows:?}"))
}

#[test]
fn gemini_stream_result_per_model_figures_leave_cached_out_of_input() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "g.jsonl",
        concat!(
            r#"{"type":"init","timestamp":"2026-05-01T10:00:00Z","session_id":"g1","model":"gemini-3-flash-preview"}"#,
            "\n",
            r#"{"type":"result","timestamp":"2026-05-01T10:00:05Z","status":"success","stats":{"total_tokens":1100,"input_tokens":1000,"output_tokens":100,"cached":600,"input":400,"duration_ms":5,"tool_calls":0,"models":{"gemini-3-flash-preview":{"total_tokens":800,"input_tokens":700,"output_tokens":100,"cached":600,"input":100},"gemini-2.5-flash-lite":{"total_tokens":300,"input_tokens":300,"output_tokens":0,"cached":0,"input":300}}}}"#,
            "\n"
        ),
    );
    let r = rows(&["--by", "model", &f]);
    let flash = by_model(&r, "gemini-3-flash-preview");
    assert_eq!((n(flash, "input"), n(flash, "cache_read")), (Some(100), Some(600)));
    let lite = by_model(&r, "gemini-2.5-flash-lite");
    assert_eq!((n(lite, "input"), n(lite, "output")), (Some(300), Some(0)));
    let t = r.last().unwrap();
    assert_eq!((n(t, "input"), n(t, "cache_read"), n(t, "total")), (Some(400), Some(600), Some(1100)));
}

#[test]
fn gemini_json_output_per_model_tokens_are_counted_once_each() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "j.jsonl",
        concat!(
            r#"{"session_id":"g2","response":"hi","stats":{"models":{"gemini-2.5-flash-lite":{"api":{"totalRequests":1},"tokens":{"input":839,"prompt":839,"candidates":49,"total":1028,"cached":0,"thoughts":140,"tool":0}},"gemini-3-flash-preview":{"api":{"totalRequests":2},"tokens":{"prompt":11554,"candidates":55,"total":11609,"cached":5944,"thoughts":0,"tool":0}}}}}"#,
            "\n"
        ),
    );
    let r = rows(&["--by", "model", &f]);
    // No `input`: prompt − cached.
    let flash = by_model(&r, "gemini-3-flash-preview");
    assert_eq!((n(flash, "input"), n(flash, "cache_read"), n(flash, "output")), (Some(5610), Some(5944), Some(55)));
    let t = r.last().unwrap();
    assert_eq!(n(t, "input"), Some(839 + 5610));
    assert_eq!(n(t, "cache_read"), Some(5944));
    assert_eq!(n(t, "total"), Some(839 + 189 + 5610 + 5944 + 55));
}

#[test]
fn claude_stream_input_and_cache_figures_come_from_message_delta_when_the_start_has_zeros() {
    let d = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","tools":[],"uuid":"i1"}"#,
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","model":"claude-sonnet-4-5","usage":{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}}},"session_id":"s1","parent_tool_use_id":null,"uuid":"e1"}"#,
        r#"{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}},"session_id":"s1","parent_tool_use_id":null,"uuid":"a1"}"#,
        r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"cache_read_input_tokens":3000,"cache_creation_input_tokens":500,"output_tokens":40}},"session_id":"s1","parent_tool_use_id":null,"uuid":"e2"}"#,
    ];
    let f = write(d.path(), "s.jsonl", &(lines.join("\n") + "\n"));
    let out = bin().arg(&f).output().unwrap();
    let usage: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "usage")
        .collect();
    assert_eq!(usage.len(), 1, "{usage:?}");
    let u = &usage[0]["usage"];
    assert_eq!(
        (n(u, "input"), n(u, "cache_read"), n(u, "cache_write"), n(u, "output")),
        (Some(12), Some(3000), Some(500), Some(40))
    );
    assert_eq!(n(u, "context"), Some(3512));
}

/// A transcript line of one Claude request (transcripts carry no cost: it is estimated).
fn transcript(sid: &str, mid: &str, at: &str, model: &str, u: &str) -> String {
    format!(
        r#"{{"type":"assistant","sessionId":"{sid}","uuid":"u-{mid}","parentUuid":null,"isSidechain":false,"timestamp":"{at}","requestId":"r-{mid}","message":{{"id":"{mid}","model":"{model}","role":"assistant","type":"message","content":[{{"type":"text","text":"x"}}],"usage":{u}}}}}"#
    )
}

#[test]
fn one_hour_cache_writes_are_priced_apart_from_five_minute_ones() {
    let d = tempfile::tempdir().unwrap();
    let u5 = r#"{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":1000000,"output_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000000,"ephemeral_1h_input_tokens":0}}"#;
    let u1 = r#"{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":1000000,"output_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":1000000}}"#;
    let f5 =
        write(d.path(), "a.jsonl", &(transcript("s5", "m5", "2026-05-01T10:00:00Z", "claude-sonnet-4-5", u5) + "\n"));
    let f1 =
        write(d.path(), "b.jsonl", &(transcript("s1", "m1", "2026-05-01T10:00:00Z", "claude-sonnet-4-5", u1) + "\n"));
    let r5 = rows(&[&f5]);
    let r1 = rows(&[&f1]);
    assert!(near(cost(&r5[0]), 3.75), "5-minute write at 1.25 × input: {:?}", r5[0]);
    assert!(near(cost(&r1[0]), 6.0), "1-hour write at 2 × input: {:?}", r1[0]);
    assert_eq!(n(&r1[0], "cache_write_1h"), Some(1_000_000));
    assert_eq!(n(&r5[0], "cache_write_1h"), None);
}

#[test]
fn long_context_bills_the_whole_request_at_the_higher_rate() {
    let d = tempfile::tempdir().unwrap();
    // claude-sonnet-4 (LiteLLM: above 200k tokens 6 / 22.5 / 0.6 / 7.5 per million).
    let short = r#"{"input_tokens":100000,"cache_read_input_tokens":100000,"cache_creation_input_tokens":0,"output_tokens":1000}"#;
    let long = r#"{"input_tokens":100000,"cache_read_input_tokens":100001,"cache_creation_input_tokens":0,"output_tokens":1000}"#;
    let text = [
        transcript("s", "m1", "2026-05-01T10:00:00Z", "claude-sonnet-4-20250514", short),
        transcript("s", "m2", "2026-05-01T10:01:00Z", "claude-sonnet-4-20250514", long),
    ]
    .join("\n")
        + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    let r = rows(&[&f]);
    let want_short = 100_000.0 * 3e-6 + 100_000.0 * 3e-7 + 1_000.0 * 1.5e-5;
    let want_long = 100_000.0 * 6e-6 + 100_001.0 * 6e-7 + 1_000.0 * 2.25e-5;
    assert!(near(cost(&r[0]), want_short + want_long), "{:?} vs {}", r[0], want_short + want_long);
}

#[test]
fn prices_file_adds_and_overrides_models() {
    let d = tempfile::tempdir().unwrap();
    let u = r#"{"input_tokens":1000000,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":0}"#;
    let f = write(d.path(), "t.jsonl", &(transcript("s", "m", "2026-05-01T10:00:00Z", "house-model-1", u) + "\n"));
    assert_eq!(cost(&rows(&[&f])[0]), None, "an unknown model has no cost");
    let p =
        write(d.path(), "p.json", r#"{"house-model-1":{"input_cost_per_token":7e-6,"output_cost_per_token":1e-5}}"#);
    assert!(near(cost(&rows(&["--prices", &p, &f])[0]), 7.0));
    let bad = write(d.path(), "bad.json", "[1,2]");
    let out = bin().args(["usage", "--prices", &bad, &f]).output().unwrap();
    assert_ne!(out.status.code(), Some(0), "a malformed --prices file is an error");
}

#[test]
fn help_dates_the_price_snapshot() {
    let out = bin().args(["usage", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains(agentnorm::sink::prices::PRICES_DATE), "{help}");
    assert!(help.contains("LiteLLM"), "{help}");
}

#[test]
fn an_unpriced_model_never_blanks_a_total() {
    let d = tempfile::tempdir().unwrap();
    let u = r#"{"input_tokens":1000000,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":0}"#;
    let text = [
        transcript("s", "m1", "2026-05-01T10:00:00Z", "claude-sonnet-4-5", u),
        transcript("s", "m2", "2026-05-01T10:01:00Z", "claude-unreleased-9", u),
    ]
    .join("\n")
        + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    for by in ["session", "day", "model"] {
        let r = rows(&["--by", by, &f]);
        let t = r.last().unwrap();
        assert!(near(cost(t), 3.0), "--by {by}: the priced sum: {t}");
        assert_eq!(t["cost_partial"], true, "--by {by}: {t}");
        assert_eq!(
            t["unpriced"],
            serde_json::json!([{"model": "claude-unreleased-9", "input": 1000000, "cache_read": 0, "cache_write": 0, "output": 0, "total": 1000000}])
        );
    }
    let r = rows(&["--by", "model", &f]);
    assert_eq!(by_model(&r, "claude-sonnet-4-5").get("cost_partial"), None, "a fully priced row is not partial");
    let table = String::from_utf8(bin().args(["usage", &f]).output().unwrap().stdout).unwrap();
    assert!(table.contains("~$3.0000*"), "{table}");
    assert!(table.contains("partial cost: no price for claude-unreleased-9 (1,000,000 tokens)"), "{table}");
    let csv = String::from_utf8(bin().args(["usage", "--csv", &f]).output().unwrap().stdout).unwrap();
    assert!(csv.lines().last().unwrap().ends_with(",true,\"claude-unreleased-9 (1,000,000 tokens)\",true"), "{csv}");
}

/// A Codex `token_count` line at `at`: running total `total` input tokens, `last` of them this
/// request's.
fn token_count(at: &str, total: u64, last: u64) -> String {
    format!(
        r#"{{"timestamp":"{at}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total},"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":{total}}},"last_token_usage":{{"input_tokens":{last},"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":{last}}},"model_context_window":272000}}}}}}"#
    )
}

#[test]
fn a_codex_token_count_before_any_model_takes_the_sessions_model() {
    let d = tempfile::tempdir().unwrap();
    let tc = token_count;
    let text = [
        r#"{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta","payload":{"id":"c1","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.58.0","source":"cli"}}"#.to_owned(),
        tc("2026-05-01T10:00:01.000Z", 1_000_000, 1_000_000),
        // The first turn ends before any model is named.
        r#"{"timestamp":"2026-05-01T10:00:01.500Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"ok"}}"#.to_owned(),
        r#"{"timestamp":"2026-05-01T10:00:02.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5","approval_policy":"never"}}"#.to_owned(),
        tc("2026-05-01T10:00:03.000Z", 2_000_000, 1_000_000),
    ]
    .join("\n")
        + "\n";
    let f = write(d.path(), "rollout-2026-05-01T10-00-00-c1.jsonl", &text);
    let r = rows(&["--by", "model", &f]);
    assert_eq!(r.len(), 2, "one model row and the totals: {r:?}");
    let g = by_model(&r, "gpt-5");
    assert_eq!(n(g, "input"), Some(2_000_000));
    assert!(near(cost(g), 2.5), "{g}");
    assert_eq!(r[1].get("cost_partial"), None);
}

#[test]
fn csv_cells_that_a_spreadsheet_would_run_are_kept_as_text() {
    let d = tempfile::tempdir().unwrap();
    let u = r#"{"input_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}"#;
    let text = ["=HYPERLINK(\"x\")", "+1", "-2", "@SUM(A1)", "\tx", "ok"]
        .iter()
        .enumerate()
        .map(|(i, sid)| {
            transcript(&sid.replace('"', "\\\""), &format!("m{i}"), "2026-05-01T10:00:00Z", "claude-sonnet-4-5", u)
                .replace("\t", "\\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    let csv = String::from_utf8(bin().args(["usage", "--csv", &f]).output().unwrap().stdout).unwrap();
    let firsts: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(firsts, ["\"'=HYPERLINK(\"\"x\"\")\"", "'+1", "'-2", "'@SUM(A1)", "'\tx", "ok", ""], "{csv}");
}

fn transcript_u(sid: &str, mid: &str, at: &str, input: u64) -> String {
    let u = format!(
        r#"{{"input_tokens":{input},"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}}"#
    );
    transcript(sid, mid, at, "claude-sonnet-4-5", &u)
}

#[test]
fn a_forked_or_resumed_claude_session_counts_its_parents_messages_once_for_the_parent() {
    let d = tempfile::tempdir().unwrap();
    let parent =
        [transcript_u("S1", "m1", "2026-05-01T10:00:00Z", 10), transcript_u("S1", "m2", "2026-05-01T10:05:00Z", 20)];
    // The fork: a new session id, the parent's first message copied, then its own.
    let fork =
        [transcript_u("S2", "m1", "2026-05-01T10:00:00Z", 10), transcript_u("S2", "m3", "2026-05-01T11:00:00Z", 300)];
    // Named so that the fork sorts first by path.
    let f = write(d.path(), "a-fork.jsonl", &(fork.join("\n") + "\n"));
    let p = write(d.path(), "z-parent.jsonl", &(parent.join("\n") + "\n"));
    for args in [[&f, &p], [&p, &f]] {
        let r = rows(&[args[0].as_str(), args[1].as_str()]);
        assert_eq!(r.len(), 3, "{r:?}");
        let s1 = r.iter().find(|x| x["session_id"] == "S1").unwrap();
        let s2 = r.iter().find(|x| x["session_id"] == "S2").unwrap();
        assert_eq!((n(s1, "input"), n(s1, "requests")), (Some(30), Some(2)), "{s1}");
        assert_eq!((n(s2, "input"), n(s2, "requests")), (Some(300), Some(1)), "{s2}");
        assert_eq!(n(r.last().unwrap(), "input"), Some(330));
    }
}

fn rollout(id: &str) -> String {
    let tc = token_count;
    [
        format!(r#"{{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta","payload":{{"id":"{id}","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.58.0","source":"cli"}}}}"#),
        r#"{"timestamp":"2026-05-01T10:00:00.500Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5"}}"#.to_owned(),
        tc("2026-05-01T10:00:01.000Z", 1000, 1000),
        tc("2026-05-01T10:00:02.000Z", 3000, 2000),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn default_paths_find_every_saved_session_folder_and_count_archived_copies_once() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let r = rollout("c-archived");
    write(h, ".codex/sessions/2026/05/01/rollout-2026-05-01T10-00-00-c-archived.jsonl", &r);
    write(h, ".codex/archived_sessions/rollout-2026-05-01T10-00-00-c-archived.jsonl", &r);
    write(h, ".config/claude/projects/-w/s-new.jsonl", &(transcript_u("Snew", "n1", "2026-05-01T10:00:00Z", 7) + "\n"));
    write(h, ".claude/projects/-w/s-old.jsonl", &(transcript_u("Sold", "o1", "2026-05-01T10:00:00Z", 5) + "\n"));
    let r = common::usage_in_home(h, &[]);
    let sid = |s: &str| r.iter().find(|x| x["session_id"] == s).unwrap_or_else(|| panic!("{s} missing: {r:?}"));
    assert_eq!(n(sid("c-archived"), "input"), Some(3000), "the archived copy is not counted again");
    assert_eq!(n(sid("Snew"), "input"), Some(7), "~/.config/claude/projects");
    assert_eq!(n(sid("Sold"), "input"), Some(5));
    assert_eq!(n(r.last().unwrap(), "input"), Some(3012));
}

#[test]
fn claude_config_dir_takes_a_comma_separated_list_and_codex_home_its_folder() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(p, "one/projects/-w/a.jsonl", &(transcript_u("A", "a1", "2026-05-01T10:00:00Z", 1) + "\n"));
    write(p, "two/projects/-w/b.jsonl", &(transcript_u("B", "b1", "2026-05-01T10:00:00Z", 2) + "\n"));
    write(p, "home/.claude/projects/-w/c.jsonl", &(transcript_u("C", "c1", "2026-05-01T10:00:00Z", 4) + "\n"));
    write(p, "cx/archived_sessions/rollout-x.jsonl", &rollout("cx1"));
    let dirs = format!("{},{}", p.join("one").display(), p.join("two").display());
    let out = bin()
        .args(["usage", "--json"])
        .env("HOME", p.join("home"))
        .env("CLAUDE_CONFIG_DIR", dirs)
        .env("CODEX_HOME", p.join("cx"))
        .output()
        .unwrap();
    let r: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ids: Vec<&str> = r.iter().filter_map(|x| x["session_id"].as_str()).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    for s in ["A", "B", "cx1"] {
        assert!(ids.contains(&s), "{s} in {ids:?}");
    }
    assert!(!ids.contains(&"C"), "CLAUDE_CONFIG_DIR replaces ~/.claude");
}

#[test]
fn a_request_is_dated_by_its_first_line() {
    let d = tempfile::tempdir().unwrap();
    // One message over two lines across midnight UTC: its first line is on May 1.
    let first = transcript_u("S", "m1", "2026-05-01T23:59:50Z", 10);
    let second = first
        .replace("2026-05-01T23:59:50Z", "2026-05-02T00:00:10Z")
        .replace(r#""uuid":"u-m1""#, r#""uuid":"u-m1b""#)
        .replace(r#""output_tokens":1"#, r#""output_tokens":9"#);
    let f = write(d.path(), "t.jsonl", &(first + "\n" + &second + "\n"));
    let r = rows(&["--by", "day", "--timezone", "UTC", &f]);
    assert_eq!(r[0]["day"], "2026-05-01", "{r:?}");
    assert_eq!(n(&r[0], "output"), Some(9), "the final output count");
}

#[test]
fn days_weeks_and_months_are_in_the_chosen_time_zone() {
    let d = tempfile::tempdir().unwrap();
    // 2026-05-31T23:30Z is June 1 in Paris (UTC+2) and still May 31 in New York.
    let f = write(d.path(), "t.jsonl", &(transcript_u("S", "m1", "2026-05-31T23:30:00Z", 10) + "\n"));
    let key =
        |by: &str, tz: &str, k: &str| rows(&["--by", by, "--timezone", tz, &f])[0][k].as_str().unwrap().to_owned();
    assert_eq!(key("day", "UTC", "day"), "2026-05-31");
    assert_eq!(key("day", "Europe/Paris", "day"), "2026-06-01");
    assert_eq!(key("day", "America/New_York", "day"), "2026-05-31");
    assert_eq!(key("month", "Europe/Paris", "month"), "2026-06");
    assert_eq!(key("month", "UTC", "month"), "2026-05");
    // 2026-05-31 is a Sunday: its week starts on Monday May 25; June 1 is a Monday.
    assert_eq!(key("week", "UTC", "week"), "2026-05-25");
    assert_eq!(key("week", "Europe/Paris", "week"), "2026-06-01");
    // --since YYYY-MM-DD is that day's start in the zone.
    assert_eq!(rows(&["--timezone", "Europe/Paris", "--since", "2026-06-01", &f]).len(), 2);
    assert_eq!(rows(&["--timezone", "UTC", "--since", "2026-06-01", &f]).len(), 1, "only the totals row");
    let out = bin().args(["usage", "--timezone", "Mars/Olympus", &f]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an unknown zone is bad usage");
}

#[test]
fn blocks_are_five_hours_from_the_first_requests_hour_with_gaps_shown() {
    let d = tempfile::tempdir().unwrap();
    let text = [
        transcript_u("S", "m1", "2026-05-01T10:20:00Z", 100),
        transcript_u("S", "m2", "2026-05-01T14:59:00Z", 200), // same block (10:00–15:00)
        transcript_u("S", "m3", "2026-05-01T15:10:00Z", 400), // a new block at 15:00
        transcript_u("S", "m4", "2026-05-02T01:30:00Z", 800), // after a gap: 20:00–01:00
    ]
    .join("\n")
        + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    let r = rows(&["--by", "block", "--timezone", "UTC", "--now", "2026-05-10T00:00:00Z", &f]);
    let starts: Vec<&str> = r.iter().filter_map(|x| x["block_start"].as_str()).collect();
    assert_eq!(
        starts,
        [
            "2026-05-01T10:00:00+00:00",
            "2026-05-01T15:00:00+00:00",
            "2026-05-01T20:00:00+00:00",
            "2026-05-02T01:00:00+00:00"
        ],
        "{r:?}"
    );
    assert_eq!(n(&r[0], "input"), Some(300));
    assert_eq!(n(&r[1], "input"), Some(400));
    assert_eq!(r[2]["gap"], true);
    assert_eq!(r[2]["block_end"], "2026-05-02T01:00:00+00:00");
    assert_eq!(n(&r[3], "input"), Some(800));
    assert!(r.iter().all(|x| x.get("active").is_none()), "nothing is active on May 10");
    assert_eq!(n(r.last().unwrap(), "input"), Some(1500));
    // A block holds requests until 5 hours pass without one, from its first request's hour.
    let r = rows(&["--by", "block", "--timezone", "Asia/Kolkata", "--now", "2026-05-10T00:00:00Z", &f]);
    assert_eq!(r[0]["block_start"], "2026-05-01T15:30:00+05:30", "floored to the UTC hour, shown in the zone");
}

#[test]
fn the_active_block_has_its_burn_rate_projection_and_the_latest_rate_limits() {
    let d = tempfile::tempdir().unwrap();
    let text =
        [transcript_u("S", "m1", "2026-05-01T10:00:00Z", 1000), transcript_u("S", "m2", "2026-05-01T10:10:00Z", 1000)]
            .join("\n")
            + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    let limits = [
        r#"{"type":"system","subtype":"init","session_id":"L","model":"claude-sonnet-4-5","tools":[],"uuid":"i"}"#,
        r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1777644000,"rateLimitType":"five_hour","utilization":0.25},"uuid":"r1","session_id":"L","timestamp":"2026-05-01T10:01:00Z"}"#,
        r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1777644000,"rateLimitType":"five_hour","utilization":0.8},"uuid":"r2","session_id":"L","timestamp":"2026-05-01T10:09:00Z"}"#,
    ];
    let l = write(d.path(), "l.jsonl", &(limits.join("\n") + "\n"));
    let r = rows(&["--by", "block", "--timezone", "UTC", "--now", "2026-05-01T11:00:00Z", &f, &l]);
    let b = &r[0];
    assert_eq!(b["active"], true, "{b}");
    let burn = &b["burn"];
    // 2002 tokens over 10 minutes; 4 hours left.
    assert_eq!(burn["tokens_per_minute"].as_f64(), Some(200.2), "{burn}");
    assert_eq!(burn["minutes_left"], 240);
    assert_eq!(burn["projected_total"], 2002 + 200 * 240 + 48);
    assert!(burn["projected_cost_usd"].as_f64().unwrap() > cost(b).unwrap());
    let rl = b["rate_limits"].as_array().expect("rate limits beside the block");
    assert_eq!(rl.len(), 1, "{rl:?}");
    assert_eq!(rl[0]["status"], "allowed_warning", "the latest reading: {rl:?}");
    let table = String::from_utf8(
        bin()
            .args(["usage", "--by", "block", "--timezone", "UTC", "--now", "2026-05-01T11:00:00Z", &f, &l])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(table.contains("active block: 4h00m left; burn 200 tokens/min"), "{table}");
    assert!(table.contains("rate limits: five_hour"), "{table}");
}

#[test]
fn breakdown_puts_per_model_rows_inside_each_row() {
    let d = tempfile::tempdir().unwrap();
    let u = r#"{"input_tokens":10,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}"#;
    let text = [
        transcript("S", "m1", "2026-05-01T10:00:00Z", "claude-sonnet-4-5", u),
        transcript("S", "m2", "2026-05-01T10:01:00Z", "claude-haiku-4-5", u),
        transcript("S", "m3", "2026-05-01T10:02:00Z", "claude-haiku-4-5", u),
    ]
    .join("\n")
        + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    let r = rows(&["--by", "day", "--breakdown", &f]);
    let models = r[0]["models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!((models[0]["model"].as_str(), n(&models[0], "input")), (Some("claude-haiku-4-5"), Some(20)));
    assert_eq!((models[1]["model"].as_str(), n(&models[1], "input")), (Some("claude-sonnet-4-5"), Some(10)));
    assert_eq!(r.last().unwrap()["models"].as_array().unwrap().len(), 2, "the totals too");
    let csv =
        String::from_utf8(bin().args(["usage", "--csv", "--by", "day", "--breakdown", &f]).output().unwrap().stdout)
            .unwrap();
    assert!(csv.lines().next().unwrap().starts_with("day,model,input"), "{csv}");
    assert_eq!(csv.lines().filter(|l| l.contains(",claude-haiku-4-5,20,")).count(), 2, "{csv}");
}

#[test]
fn the_table_fits_an_80_column_terminal() {
    let d = tempfile::tempdir().unwrap();
    let deep = "projects/-home-someone-with-a-long-name-src-github-com-org-repository-name";
    let mut text = String::new();
    for i in 0..3 {
        text.push_str(
            &(transcript_u(
                &format!("0f1e2d3c-4b5a-6978-8899-aabbccddee{i:02}"),
                &format!("m{i}"),
                "2026-05-01T10:00:00Z",
                123_456_789,
            ) + "\n"),
        );
    }
    // A session id in CJK: two display columns per character.
    text.push_str(
        &(transcript_u("会话会话会话会话会话会话会话会话会话会话会话会话", "mz", "2026-05-01T10:00:00Z", 5) + "\n"),
    );
    let f = write(&d.path().join(deep), "0f1e2d3c-4b5a-6978-8899-aabbccddee00.jsonl", &text);
    for by in ["session", "project", "day", "model", "block"] {
        for breakdown in [false, true] {
            let mut cmd = bin();
            cmd.args(["usage", "--by", by]).env("COLUMNS", "80");
            if breakdown {
                cmd.arg("--breakdown");
            }
            let table = String::from_utf8(cmd.arg(&f).output().unwrap().stdout).unwrap();
            for line in table.lines() {
                let w = unicode_width::UnicodeWidthStr::width(line);
                assert!(w <= 80, "--by {by} (breakdown {breakdown}): {w} columns:\n{table}");
            }
            assert!(table.contains("COST"), "--by {by}: the cost column is kept:\n{table}");
        }
    }
    // Wide enough: the full table with the full source.
    let wide = String::from_utf8(bin().args(["usage", &f]).env("COLUMNS", "400").output().unwrap().stdout).unwrap();
    assert!(wide.contains("CACHE_WRITE") && wide.contains(deep), "{wide}");
}

#[test]
fn schema_usage_describes_the_json_rows() {
    let out = bin().args(["schema", "usage"]).output().unwrap();
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    let props = schema["properties"].as_object().unwrap();
    for k in [
        "session_id",
        "project",
        "day",
        "week",
        "month",
        "block_start",
        "cost_usd",
        "cost_partial",
        "unpriced",
        "burn",
        "rate_limits",
        "models",
        "input",
        "cache_write_1h",
    ] {
        assert!(props.contains_key(k), "{k} missing from {props:?}");
    }
}

/// `agentnorm statusline --timezone UTC ARGS… LOGS` given `status` on stdin: its exit code and
/// what it printed.
fn statusline(args: &[&str], logs: &Path, status: &Value) -> (Option<i32>, String) {
    use std::io::Write as _;
    let mut child = bin()
        .args(["statusline", "--timezone", "UTC"])
        .args(args)
        .arg(logs)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(status.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn statusline_prints_one_line_from_claude_codes_status_json() {
    let d = tempfile::tempdir().unwrap();
    let text = [
        transcript_u("S1", "m1", "2026-05-01T09:00:00Z", 2_900_000),
        transcript_u("S1", "m2", "2026-05-01T11:30:00Z", 100_000),
    ]
    .join("\n")
        + "\n";
    let t = write(d.path(), "projects/-w/S1.jsonl", &text);
    let status = serde_json::json!({
        "session_id": "S1",
        "transcript_path": t,
        "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
        "cost": {"total_cost_usd": 1.5},
        "rate_limits": {"five_hour": {"used_percentage": 38.0}}
    });
    let (code, line) = statusline(&["--now", "2026-05-01T12:00:00Z"], &d.path().join("projects"), &status);
    assert_eq!(code, Some(0));
    assert_eq!(line.lines().count(), 1, "{line}");
    // Today: 3M input tokens of Sonnet 4.5 at $3 per million (+ 2 output tokens).
    assert!(line.starts_with("Sonnet 4.5 · session $1.50 · today ~$9.00 · "), "{line}");
    // The block 09:00–14:00 holds both; 2 hours left at noon.
    assert!(line.contains("block ~$9.00 (2h00m left)"), "{line}");
    // The last request's context: 100k of 200k.
    assert!(line.contains("ctx 50% (100.0k/200.0k)"), "{line}");
    assert!(line.ends_with("5h 38% used\n"), "{line}");
}

#[test]
fn statusline_without_claude_codes_cost_takes_the_sessions_cost_from_its_logs() {
    let d = tempfile::tempdir().unwrap();
    let text = [
        transcript_u("S1", "m1", "2026-05-01T09:00:00Z", 2_900_000),
        transcript_u("S1", "m2", "2026-05-01T11:30:00Z", 100_000),
        transcript_u("S2", "m3", "2026-05-01T11:40:00Z", 1_000_000),
    ]
    .join("\n")
        + "\n";
    write(d.path(), "projects/-w/S1.jsonl", &text);
    let status = |id: &str| serde_json::json!({"session_id": id, "model": {"display_name": "Sonnet 4.5"}});
    let (code, line) = statusline(&["--now", "2026-05-01T12:00:00Z"], &d.path().join("projects"), &status("S1"));
    assert_eq!(code, Some(0));
    // S1's 3M input tokens at $3 per million, estimated (`~`); today holds S2's too.
    assert!(line.starts_with("Sonnet 4.5 · session ~$9.00 · today ~$12.00 · "), "{line}");
    // A session the logs do not hold has no session cost.
    let (_, line) = statusline(&["--now", "2026-05-01T12:00:00Z"], &d.path().join("projects"), &status("S9"));
    assert!(line.starts_with("Sonnet 4.5 · today ~$12.00 · "), "{line}");
}

#[test]
fn statusline_reads_the_context_of_a_long_transcripts_last_main_thread_request_from_its_end() {
    let d = tempfile::tempdir().unwrap();
    let mut text = String::new();
    // About 800 kB of requests, the last main-thread one 150k tokens in…
    for i in 0..2000u64 {
        let input = if i == 1999 { 150_000 } else { 1_000 + i };
        text += &transcript_u("S1", &format!("m{i}"), "2026-05-01T09:00:00Z", input);
        text.push('\n');
    }
    // …then a subagent's request, and over 256 KiB of prompts that hold no usage.
    text += &transcript_u("S1", "side", "2026-05-01T09:30:00Z", 7)
        .replace(r#""isSidechain":false"#, r#""isSidechain":true"#);
    text.push('\n');
    for i in 0..400 {
        let prompt = "p".repeat(1000);
        text += &format!(
            r#"{{"type":"user","sessionId":"S1","uuid":"p{i}","parentUuid":null,"isSidechain":false,"timestamp":"2026-05-01T09:40:00Z","message":{{"role":"user","content":"{prompt}"}}}}"#
        );
        text.push('\n');
    }
    let t = write(d.path(), "projects/-w/S1.jsonl", &text);
    // Claude Code builds that pass no `context_window` leave it to the transcript.
    let status = serde_json::json!({"session_id": "S1", "transcript_path": t, "model": {"display_name": "Sonnet"}});
    let (_, line) = statusline(&["--no-cache", "--now", "2026-05-01T10:00:00Z"], &d.path().join("projects"), &status);
    assert!(line.contains("ctx 75% (150.0k/200.0k)"), "{line}");
}

#[test]
fn a_usage_object_written_with_spaces_still_counts() {
    let d = tempfile::tempdir().unwrap();
    let line = transcript_u("S", "m1", "2026-05-01T10:00:00Z", 42).replace(r#""usage":{"#, r#""usage" :  {"#);
    assert!(line.contains(r#""usage" :  {"#));
    let f = write(d.path(), "t.jsonl", &(line + "\n"));
    let r = rows(&[&f]);
    assert_eq!(n(&r[0], "input"), Some(42), "{r:?}");
}

#[test]
fn gemini_saved_sessions_count_each_message_once_and_a_migrated_copy_once() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/gemini-session");
    let live = std::fs::read_to_string(root.join("chat_tools_usage.jsonl")).unwrap();
    let legacy = std::fs::read_to_string(root.join("legacy_document.jsonl")).unwrap();
    write(h, ".gemini/tmp/9f2b7c4e/chats/session-2026-11-20T09-14-5c1e9f20.jsonl", &live);
    write(h, ".gemini/tmp/1c3e5a7b/chats/session-2026-03-02T16-40-3e8a1c5f.json", &legacy);
    // Resuming a legacy session rewrites it as JSONL beside the old file: the same messages.
    let migrated: String = {
        let doc: Value = serde_json::from_str(&legacy).unwrap();
        let mut meta = doc.clone();
        meta.as_object_mut().unwrap().remove("messages");
        let mut lines = vec![meta.to_string()];
        lines.extend(doc["messages"].as_array().unwrap().iter().map(Value::to_string));
        lines.join("\n") + "\n"
    };
    write(h, ".gemini/tmp/1c3e5a7b/chats/session-2026-03-02T16-40-3e8a1c5f.jsonl", &migrated);
    let r = common::usage_in_home(h, &[]);
    let sid = |s: &str| r.iter().find(|x| x["session_id"] == s).unwrap_or_else(|| panic!("{s} missing: {r:?}"));
    let live = sid("5c1e9f20-7a4b-4d2e-9b61-0f3c8a7d2e15");
    // Four messages with tokens, each written up to three times (and twice in a `$set`).
    assert_eq!(n(live, "requests"), Some(4));
    assert_eq!(n(live, "input"), Some(2292 + 598 + 548 + 307));
    assert_eq!(n(live, "cache_read"), Some(6120 + 8192 + 8704 + 8704));
    assert_eq!(n(live, "output"), Some(209 + 38 + 53 + 17));
    let old = sid("3e8a1c5f-9d2b-4f70-a6c4-1b7e0d9f2a38");
    assert_eq!(n(old, "requests"), Some(2), "the .json and its .jsonl copy count once");
    assert_eq!(n(old, "input"), Some(5210 + 1295));
    assert!(cost(old).is_some_and(|c| c > 0.0), "gemini-2.5-pro is priced: {old}");
}

#[test]
fn pi_saved_sessions_and_their_forks_count_each_request_once() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let parent =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi/session_v3.jsonl")).unwrap();
    let lines: Vec<&str> = parent.lines().collect();
    let dir = ".pi/agent/sessions/--home-dev-shop--";
    let parent_path =
        write(h, &format!("{dir}/2026-11-28T09-14-02-118Z_6f1c2a9e-3b47-4d1a-9c55-0e8b7d2f4a10.jsonl"), &parent);
    let header = |id: &str, at: &str| {
        format!(
            r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{at}","cwd":"/home/dev/shop","parentSession":"{parent_path}"}}"#
        )
    };
    let reply = |id: &str, parent: &str, at: &str, ms: u64, input: u64, stop: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"{at}","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":{input},"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":{},"cost":{{"input":0.001,"output":0.00015,"cacheRead":0,"cacheWrite":0,"total":0.00115}}}},"stopReason":"{stop}","timestamp":{ms}}}}}"#,
            input + 10
        )
    };
    // `/fork` at the second prompt: the first run copied (lines 2–12), then a run of its own.
    let mut fork = vec![header("fork-a", "2026-11-29T08:00:00.000Z")];
    fork.extend(lines[1..12].iter().map(|l| l.to_string()));
    fork.push(r#"{"type":"message","id":"aa000001","parentId":"1e2f3a4b","timestamp":"2026-11-29T08:00:05.000Z","message":{"role":"user","content":"Explain it instead.","timestamp":1795939205000}}"#.to_owned());
    fork.push(reply("aa000002", "aa000001", "2026-11-29T08:00:09.000Z", 1795939209000, 333, "stop"));
    write(h, &format!("{dir}/2026-11-29T08-00-00-000Z_fork-a.jsonl"), &(fork.join("\n") + "\n"));
    // A branch taken in the middle of the first run (after its first tool result): the copied
    // requests and the branch's own share a run.
    let mut mid = vec![header("fork-b", "2026-11-30T08:00:00.000Z")];
    mid.extend(lines[1..6].iter().map(|l| l.to_string()));
    mid.push(reply("bb000001", "9d2e4f61", "2026-11-30T08:00:04.000Z", 1796025604000, 777, "stop"));
    write(h, &format!("{dir}/2026-11-30T08-00-00-000Z_fork-b.jsonl"), &(mid.join("\n") + "\n"));

    let r = common::usage_in_home(h, &[]);
    let sid = |s: &str| r.iter().find(|x| x["session_id"] == s).unwrap_or_else(|| panic!("{s} missing: {r:?}"));
    let p = sid("6f1c2a9e-3b47-4d1a-9c55-0e8b7d2f4a10");
    assert_eq!(n(p, "requests"), Some(6), "{p}");
    assert_eq!(n(p, "input"), Some(3 + 5 + 5 + 5 + 5 + 3));
    assert_eq!(n(p, "cache_write"), Some(5120 + 212 + 97 + 64 + 120 + 1840));
    // pi's own cost, summed over the runs.
    assert!(near(cost(p), 0.038969), "{p}");
    assert_eq!(p["cost_source"], "reported");
    let a = sid("fork-a");
    assert_eq!((n(a, "requests"), n(a, "input"), n(a, "output")), (Some(1), Some(333), Some(10)), "{a}");
    assert!(near(cost(a), 0.00115), "{a}");
    // Only the branch's own request: the run's sums (and pi's cost of it) hold the copied one.
    let b = sid("fork-b");
    assert_eq!((n(b, "requests"), n(b, "input"), n(b, "output")), (Some(1), Some(777), Some(10)), "{b}");
    let totals = r.iter().find(|x| x["totals"] == true).unwrap();
    assert_eq!(n(totals, "requests"), Some(8), "{totals}");
    assert_eq!(n(totals, "input"), Some(26 + 333 + 777));

    // pi's own variable moves the whole agent folder.
    let moved = tempfile::tempdir().unwrap();
    write(moved.path(), "sessions/--w--/2026-11-28T09-14-02-118Z_x.jsonl", &parent);
    let out = bin()
        .args(["usage", "--json"])
        .env("HOME", tempfile::tempdir().unwrap().path())
        .env("PI_CODING_AGENT_DIR", moved.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = common::parse(&out.stdout);
    assert_eq!(n(r.iter().find(|x| x["totals"] == true).unwrap(), "requests"), Some(6), "{r:?}");
}

#[test]
fn requests_of_one_minute_count_as_they_would_one_by_one() {
    // The report keeps the requests of a session in the same minute as one part: its block must
    // still end at the last of them, and a bound inside the minute must still split them.
    let d = tempfile::tempdir().unwrap();
    let text = [
        transcript_u("S", "m1", "2026-05-01T10:00:00Z", 1000),
        transcript_u("S", "m2", "2026-05-01T10:09:10Z", 1000),
        transcript_u("S", "m3", "2026-05-01T10:09:55Z", 1000),
    ]
    .join("\n")
        + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    let r = rows(&["--by", "block", "--timezone", "UTC", "--now", "2026-05-01T11:00:00Z", &f]);
    let burn = &r[0]["burn"];
    // 3003 tokens from 10:00:00 to 10:09:55 (9.9167 minutes): 302.8 a minute.
    assert_eq!(burn["tokens_per_minute"].as_f64(), Some(302.8), "{burn}");

    let r = rows(&["--since", "2026-05-01T10:09:30Z", &f]);
    assert_eq!(n(r.last().unwrap(), "requests"), Some(1), "{r:?}");
    assert_eq!(n(r.last().unwrap(), "input"), Some(1000), "{r:?}");
    let r = rows(&["--until", "2026-05-01T10:09:30Z", &f]);
    assert_eq!(n(r.last().unwrap(), "requests"), Some(2), "{r:?}");
}

#[test]
fn costs_are_summed_exactly_and_rounded_half_up_to_the_micro_dollar() {
    // 25 cache-read tokens of claude-sonnet-4-5 cost $0.0000075 (0.3 µ$ each): three times that,
    // $0.0000225, is $0.000023 rounded. Summed as floating-point numbers, the three came to a
    // hair under 22.5 µ$ and rounded to $0.000022; summed in 10^-12 dollars they are exact.
    let d = tempfile::tempdir().unwrap();
    let u = r#"{"input_tokens":0,"cache_read_input_tokens":25,"cache_creation_input_tokens":0,"output_tokens":0}"#;
    let text = [
        transcript("S", "m1", "2026-05-01T10:00:01Z", "claude-sonnet-4-5", u),
        transcript("S", "m2", "2026-05-01T10:00:02Z", "claude-sonnet-4-5", u),
        transcript("S", "m3", "2026-05-01T12:00:03Z", "claude-sonnet-4-5", u),
    ]
    .join("\n")
        + "\n";
    let f = write(d.path(), "t.jsonl", &text);
    for by in ["session", "day", "block", "model"] {
        let r = rows(&["--by", by, "--timezone", "UTC", "--now", "2026-05-09T00:00:00Z", &f]);
        assert_eq!(cost(r.last().unwrap()), Some(0.000023), "--by {by}: {r:?}");
    }
    let r = rows(&["--by", "block", "--timezone", "UTC", "--now", "2026-05-09T00:00:00Z", &f]);
    assert_eq!(cost(&r[0]), Some(0.000023), "one block of all three: {r:?}");
}

/// The events a skimming sink gets from `text` (it answers `skims` to
/// [`agentnorm::Sink::skims`] on every line).
fn events_of(text: &str, skims: agentnorm::Skim) -> Vec<agentnorm::Event> {
    struct Skimming(Vec<agentnorm::Event>, agentnorm::Skim);
    impl agentnorm::Sink for Skimming {
        fn event(&mut self, ev: &agentnorm::Event) {
            self.0.push(ev.clone());
        }
        fn skims(&self) -> agentnorm::Skim {
            self.1
        }
    }
    let mut sink = Skimming(Vec::new(), skims);
    let mut n = agentnorm::Normalizer::new(agentnorm::Options::default().observed_at(false));
    n.feed(text.as_bytes(), &mut sink);
    n.finish(&mut sink);
    sink.0
}

#[test]
fn a_usage_reading_passes_over_lines_that_carry_only_conversation_and_reads_every_usage() {
    let prompt = r#"{"parentUuid":null,"isSidechain":false,"type":"user","sessionId":"S","cwd":"/w","timestamp":"2026-05-01T10:00:00Z","uuid":"u1","message":{"role":"user","content":"hi"}}"#;
    let answer =
        transcript("S", "m1", "2026-05-01T10:00:01Z", "claude-sonnet-4-5", r#"{"input_tokens":10,"output_tokens":1}"#);
    // A tool result cut short: read, it is an `unknown`; passed over, it is nothing.
    let broken = r#"{"parentUuid":"u2","isSidechain":false,"type":"user","sessionId":"S","timestamp":"2026-05-01T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"toolUseResult":{"stdout":"#;
    // Usage written with spaces, on a line of no type a transcript knows: still read.
    let spaced = r#"{"parentUuid":"u3","isSidechain":false,"type":"user","sessionId":"S","timestamp":"2026-05-01T10:00:03Z","message": {"usage": {"input_tokens": 5}}"#;
    // A session not seen before starts at its first line, whatever that line is.
    let other = r#"{"parentUuid":null,"isSidechain":false,"type":"user","sessionId":"T","cwd":"/t","timestamp":"2026-05-01T10:00:04Z","uuid":"t1","message":{"role":"user","content":"x"}}"#;
    let text = [prompt, &answer, broken, spaced, other].join("\n") + "\n";
    let unknown_lines = |evs: &[agentnorm::Event]| -> Vec<u64> {
        evs.iter().filter(|e| e.type_name() == "unknown").filter_map(|e| e.env().line).collect()
    };
    let read = events_of(&text, agentnorm::Skim::Every);
    let skimmed = events_of(&text, agentnorm::Skim::UsageStarted);
    assert_eq!(unknown_lines(&read), [3, 4], "{read:?}");
    assert_eq!(unknown_lines(&skimmed), [4], "the cut tool result is passed over, the spaced usage is read");
    let started = |evs: &[agentnorm::Event]| evs.iter().filter(|e| e.type_name() == "session_started").count();
    assert_eq!(started(&skimmed), 2);
    let usage = |evs: &[agentnorm::Event]| evs.iter().filter(|e| e.type_name() == "usage").count();
    assert_eq!((usage(&read), usage(&skimmed)), (1, 1));
}

#[test]
fn a_usage_reading_passes_over_a_transcripts_prompts_and_ends_the_message_held_there() {
    use agentnorm::Skim;
    let line = |ty: &str, n: u32, rest: &str| {
        format!(
            r#"{{"parentUuid":"p","isSidechain":false,"type":"{ty}","sessionId":"S","cwd":"/w","timestamp":"2026-05-01T10:00:{n:02}Z","uuid":"u{n}",{rest}}}"#
        )
    };
    let prompt = |n| line("user", n, r#""message":{"role":"user","content":"go on"}"#);
    let answer = |id: &str, n| {
        line(
            "assistant",
            n,
            &format!(
                r#""message":{{"id":"{id}","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":10,"output_tokens":{n}}}}}"#
            ),
        )
    };
    let orphan = |n| {
        line(
            "user",
            n,
            r#""message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"gone","content":"x"}]},"toolUseResult":{"stdout":"x"}"#,
        )
    };
    let thinking = |n| line("system", n, r#""subtype":"thinking","content":"hmm""#);
    let text = [
        prompt(0),
        answer("m1", 1),
        // Ends m1, held: passed over, m1 ended there, so the later line of m1 is a replay, not
        // more of m1.
        prompt(2),
        answer("m1", 9),
        // Nothing held now: passed over at either level.
        prompt(3),
        line("system", 4, r#""subtype":"turn_duration","durationMs":5"#),
        // A tool result whose call was not seen is a tool call of its own, and a `thinking`
        // system line is reasoning: either may be a request's first line.
        orphan(5),
        thinking(6),
        answer("m2", 7),
    ]
    .join("\n")
        + "\n";
    let lines_of = |evs: &[agentnorm::Event], ty: &str| -> Vec<u64> {
        evs.iter().filter(|e| e.type_name() == ty).filter_map(|e| e.env().line).collect()
    };
    let read = events_of(&text, Skim::Every);
    let waiting = events_of(&text, Skim::Usage);
    let seen = events_of(&text, Skim::UsageStarted);
    assert_eq!(lines_of(&read, "user_message"), [1, 3, 5], "{read:?}");
    assert!(lines_of(&read, "heartbeat").contains(&6), "{read:?}");
    for evs in [&waiting, &seen] {
        // Line 3 ended m1 and was passed over, as were lines 5 and 6.
        assert_eq!(lines_of(evs, "user_message"), [1], "{evs:?}");
        assert!(!lines_of(evs, "heartbeat").contains(&6), "{evs:?}");
    }
    let usage = |evs: &[agentnorm::Event]| -> Vec<(u64, u64)> {
        evs.iter()
            .filter_map(|e| match e {
                agentnorm::Event::Usage { env, usage, .. } => Some((env.line.unwrap(), usage.output.unwrap())),
                _ => None,
            })
            .collect()
    };
    assert_eq!(usage(&read), [(2, 1), (9, 7)], "{read:?}");
    assert_eq!(usage(&waiting), usage(&read));
    assert_eq!(usage(&seen), usage(&read));
    // Waiting for a request's first line, the orphan result and the thinking line are read.
    assert_eq!(lines_of(&waiting, "tool_started"), [7], "{waiting:?}");
    assert_eq!(lines_of(&waiting, "reasoning"), [8], "{waiting:?}");
    assert_eq!(lines_of(&seen, "tool_started"), Vec::<u64>::new(), "{seen:?}");
}

#[test]
fn a_usage_reading_passes_over_a_rollouts_prompts_at_any_time_and_its_text_once_a_request_started() {
    use agentnorm::Skim;
    let ev = |s: u32, body: &str| {
        format!(r#"{{"timestamp":"2026-05-01T10:00:{s:02}.000Z","type":"event_msg","payload":{body}}}"#)
    };
    let item = |s: u32, body: &str| {
        format!(r#"{{"timestamp":"2026-05-01T10:00:{s:02}.000Z","type":"response_item","payload":{body}}}"#)
    };
    let lines = [
        r#"{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta","payload":{"id":"r1","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.58.0","source":"cli"}}"#.to_owned(),
        ev(1, r#"{"type":"user_message","message":"go"}"#),
        item(2, r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}"#),
        ev(3, r#"{"type":"agent_message","message":"on it"}"#),
        item(4, r#"{"type":"function_call_output","call_id":"gone","output":"x"}"#),
    ];
    let text = lines.join("\n") + "\n";
    let lines_of = |evs: &[agentnorm::Event], ty: &str| -> Vec<u64> {
        evs.iter().filter(|e| e.type_name() == ty).filter_map(|e| e.env().line).collect()
    };
    let read = events_of(&text, Skim::Every);
    assert_eq!(lines_of(&read, "user_message"), [2], "{read:?}");
    for skim in [Skim::Usage, Skim::UsageStarted] {
        let evs = events_of(&text, skim);
        assert_eq!(lines_of(&evs, "user_message"), Vec::<u64>::new(), "{skim:?}: {evs:?}");
        assert!(!lines_of(&evs, "heartbeat").contains(&3), "{skim:?}: {evs:?}");
    }
    // Waiting for a request's first line, text and a tool output (of a call not seen: a call of
    // its own) are read.
    let waiting = events_of(&text, Skim::Usage);
    assert_eq!(lines_of(&waiting, "output_delta"), [4], "{waiting:?}");
    assert_eq!(lines_of(&waiting, "tool_started"), [5], "{waiting:?}");
    let seen = events_of(&text, Skim::UsageStarted);
    assert_eq!((lines_of(&seen, "output_delta"), lines_of(&seen, "tool_started")), (vec![], vec![]), "{seen:?}");
}

#[test]
fn a_usage_reading_still_dates_a_codex_request_by_its_first_line() {
    let d = tempfile::tempdir().unwrap();
    let tc = token_count;
    let ev = |at: &str, body: &str| format!(r#"{{"timestamp":"{at}","type":"event_msg","payload":{body}}}"#);
    let item = |at: &str, body: &str| format!(r#"{{"timestamp":"{at}","type":"response_item","payload":{body}}}"#);
    let lines = [
        r#"{"timestamp":"2026-05-01T23:00:00.000Z","type":"session_meta","payload":{"id":"r1","timestamp":"2026-05-01T23:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.58.0","source":"cli"}}"#.to_owned(),
        r#"{"timestamp":"2026-05-01T23:00:00.500Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5"}}"#.to_owned(),
        ev("2026-05-01T23:10:00.000Z", r#"{"type":"agent_reasoning","text":"look"}"#),
        item("2026-05-01T23:11:00.000Z", r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}"#),
        tc("2026-05-01T23:12:00.000Z", 1000, 1000),
        // The second request: the output of the first one's call, then its own first line
        // before midnight, then more of it after.
        item("2026-05-01T23:50:00.000Z", r#"{"type":"function_call_output","call_id":"c1","output":"a\nb"}"#),
        ev("2026-05-01T23:55:00.000Z", r#"{"type":"agent_message","message":"found two"}"#),
        ev("2026-05-02T00:05:00.000Z", r#"{"type":"agent_reasoning","text":"and then"}"#),
        tc("2026-05-02T00:10:00.000Z", 3000, 2000),
    ];
    let f = write(d.path(), "rollout-r1.jsonl", &(lines.join("\n") + "\n"));
    let args = ["--no-cache", "--by", "day", "--timezone", "UTC", &f];
    let r = rows(&args);
    assert_eq!((r.len(), &r[0]["day"], n(&r[0], "input")), (2, &Value::from("2026-05-01"), Some(3000)), "{r:?}");
    let mut every = args.to_vec();
    every.insert(0, "--every-line");
    assert_eq!(rows(&every), r);
}

/// Every NDJSON fixture of the project, sorted.
fn fixture_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl" || x == "ndjson") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 50, "the fixtures were found: {}", files.len());
    files.sort();
    files
}

/// The usage of the NDJSON `text`, read by `collector`.
fn usage_of(text: &[u8], mut collector: agentnorm::sink::report::Collector) -> agentnorm::sink::report::InputUsage {
    let mut n = agentnorm::Normalizer::new(agentnorm::Options::default().observed_at(false));
    n.feed(text, &mut collector);
    n.finish(&mut collector);
    collector.finish()
}

#[test]
fn every_fixture_gives_the_same_usage_read_in_full_and_skimmed() {
    use agentnorm::sink::report::Collector;
    for f in fixture_files() {
        let text = std::fs::read(&f).unwrap();
        let full = usage_of(&text, Collector::new(None).reading_every_line()).to_bytes();
        assert!(usage_of(&text, Collector::new(None)).to_bytes() == full, "{}", f.display());
    }
}

#[test]
fn a_report_that_keeps_only_what_one_grouping_needs_gives_that_groupings_rows() {
    use agentnorm::sink::report::{self, Collector, GroupBy, Report, ReportOptions};
    let mut inputs: Vec<_> = fixture_files()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut u = usage_of(&std::fs::read(f).unwrap(), Collector::new(Some(f.display().to_string())));
            u.set_order(i);
            u
        })
        .collect();
    // Two requests a minute apart on either side of midnight in Kathmandu (18:15 UTC), and one
    // of another session in the same minute as the first; then two requests two minutes apart
    // in two blocks (the block of 20:00 ends at 01:00).
    let edge = [
        transcript_u("edge-1", "e1", "2026-05-01T18:14:30Z", 10),
        transcript_u("edge-1", "e2", "2026-05-01T18:15:30Z", 20),
        transcript_u("edge-2", "e3", "2026-05-01T18:14:40Z", 40),
        transcript_u("edge-3", "e4", "2026-05-03T20:10:00Z", 80),
        transcript_u("edge-3", "e5", "2026-05-04T00:59:00Z", 160),
        transcript_u("edge-3", "e6", "2026-05-04T01:01:00Z", 320),
    ]
    .join("\n");
    let mut u = usage_of(edge.as_bytes(), Collector::new(Some("edge.jsonl".into())));
    u.set_order(inputs.len());
    inputs.push(u);
    report::by_first_time(&mut inputs);
    let fold = |rep: Report| {
        let mut rep = rep;
        for u in &inputs {
            rep.add(u.clone());
        }
        rep
    };
    let every = fold(Report::default());
    let bounds = (report::parse_bound("2025-01-01", false), report::parse_bound("2026-06-30", true));
    let every_between = fold(Report::default().between(bounds.0, bounds.1));
    let by_all = [
        GroupBy::Session,
        GroupBy::Project,
        GroupBy::Model,
        GroupBy::Day,
        GroupBy::Week,
        GroupBy::Month,
        GroupBy::Block,
    ];
    // A zone 45 minutes off the hour, so a day's edge is inside an hour.
    let tz = jiff::tz::TimeZone::get("Asia/Kathmandu").unwrap();
    for by in by_all {
        let opts = ReportOptions { by, tz: Some(tz.clone()), breakdown: true, ..ReportOptions::default() };
        let (rows, totals) = every.rows(&opts);
        assert!(rows.len() > 1, "{by:?}: rows to compare");
        assert_eq!(fold(Report::default().for_rows(&opts)).rows(&opts), (rows, totals), "{by:?}");
        let bounded = ReportOptions { since_ms: bounds.0, until_ms: bounds.1, ..opts };
        let kept = fold(Report::default().between(bounds.0, bounds.1).for_rows(&bounded));
        assert_eq!(kept.rows(&bounded), every_between.rows(&bounded), "{by:?} between bounds");
    }
}

/// A prompt or a `system` line ends the message held. Read for usage, such a line is passed
/// over and the message is ended before the next line read: a later line of the same message
/// (a replay with other figures) is still not counted, and the reading is the full one's.
#[test]
fn a_message_ended_by_a_line_passed_over_is_ended_there() {
    let line = |ty: &str, extra: &str, at: &str| {
        format!(
            r#"{{"type":"{ty}","sessionId":"s1","uuid":"u-{at}","parentUuid":"p","isSidechain":false,"timestamp":"{at}",{extra}}}"#
        )
    };
    let prompt = |at: &str| line("user", r#""message":{"role":"user","content":"go on"}"#, at);
    let lines = [
        transcript_u("s1", "m1", "2026-05-01T10:00:00.000Z", 10),
        prompt("2026-05-01T10:01:00.000Z"),
        // The same message again after the prompt, with other figures: a replay.
        transcript_u("s1", "m1", "2026-05-01T10:02:00.000Z", 500),
        transcript_u("s1", "m2", "2026-05-01T10:03:00.000Z", 20),
        line("system", r#""subtype":"turn_duration","durationMs":5"#, "2026-05-01T10:04:00.000Z"),
        transcript_u("s1", "m2", "2026-05-01T10:05:00.000Z", 700),
        transcript_u("s1", "m3", "2026-05-01T10:06:00.000Z", 40),
        prompt("2026-05-01T10:07:00.000Z"),
    ];
    let text = lines.join("\n") + "\n";
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "s1.jsonl", &text);
    for every in [false, true] {
        let mut args = vec!["--no-cache", "--by", "session", "--timezone", "UTC", &f];
        if every {
            args.insert(0, "--every-line");
        }
        let r = rows(&args);
        let requests = r.iter().map(|row| n(row, "requests")).collect::<Vec<_>>();
        assert_eq!((n(&r[0], "input"), requests), (Some(70), vec![Some(3), Some(3)]), "every line: {every}: {r:?}");
    }
    use agentnorm::sink::report::Collector;
    let full = usage_of(text.as_bytes(), Collector::new(None).reading_every_line()).to_bytes();
    assert!(usage_of(text.as_bytes(), Collector::new(None)).to_bytes() == full);
}
