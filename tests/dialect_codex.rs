//! The `codex` dialect (`codex exec --json`) on frames of newer Codex versions (issue 12 drift):
//! `fixtures/codex/web_search_and_http_failures_0_160.jsonl`, written after the shapes of
//! `codex-rs/exec/src/exec_events.rs` and `codex-rs/core/src/error.rs` (see fixtures/README.md).

use serde_json::Value;

mod common;
use common::{at_line, fixture, input_frames, of_type, run_ended, run_stdin};

const NAME: &str = "web_search_and_http_failures_0_160";

#[test]
fn a_web_search_named_only_on_completion_starts_there_with_its_query() {
    let evs = common::events_of("codex", NAME);
    let frames = input_frames(&fixture("codex", NAME));
    let mut checked = 0;
    for (n, v) in &frames {
        if v["item"]["type"] != "web_search" {
            continue;
        }
        let here: Vec<&Value> = at_line(&evs, *n);
        if v["type"] == "item.started" {
            assert_eq!(v["item"]["query"], "", "the fixture's starts name no query");
            assert_eq!(here.len(), 1);
            assert_eq!(here[0]["type"], "heartbeat");
            continue;
        }
        // The completion line: its start first (the invariant), carrying the query, then the end.
        let kinds: Vec<&str> = here.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["tool_started", "tool_completed"], "line {n}");
        let (start, done) = (here[0], here[1]);
        assert_eq!(start["tool_id"], v["item"]["id"]);
        assert_eq!(start["input"]["query"], v["item"]["query"]);
        assert!(start.get("synthetic").is_none());
        let action = &v["item"]["action"];
        if action["type"] == "open_page" {
            assert_eq!((start["kind"].as_str(), &start["summary"]), (Some("fetch"), &action["url"]));
        } else {
            assert_eq!((start["kind"].as_str(), &start["summary"]), (Some("web_search"), &v["item"]["query"]));
        }
        assert_eq!(done["ok"], true);
        checked += 1;
    }
    assert_eq!(checked, 2);
    assert_eq!(run_ended(&evs)["unknown"], 0, "the plan item is a heartbeat");
}

#[test]
fn a_web_search_that_names_its_query_at_the_start_still_starts_there() {
    let input = [
        r#"{"type":"thread.started","thread_id":"t-1"}"#,
        r#"{"type":"item.started","item":{"id":"item_0","type":"web_search","query":"serde tag"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_0","type":"web_search","query":"serde tag"}}"#,
    ]
    .join("\n");
    let evs = run_stdin(&[], &input);
    let starts = of_type(&evs, "tool_started");
    assert_eq!(starts.len(), 1);
    assert_eq!((starts[0]["line"].as_u64(), starts[0]["summary"].as_str()), (Some(2), Some("serde tag")));
}

#[test]
fn turn_failed_kinds_come_from_the_http_status_or_error_type() {
    let evs = common::events_of("codex", NAME);
    let failed = of_type(&evs, "turn_failed");
    let got: Vec<(u64, &str, &str)> = failed
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["kind"].as_str().unwrap(), e["error"].as_str().unwrap()))
        .collect();
    let frames = input_frames(&fixture("codex", NAME));
    let message =
        |n: u64| frames.iter().find(|(l, _)| *l == n).unwrap().1["error"]["message"].as_str().unwrap().to_owned();
    let inner = |n: u64, ptr: &str| -> String {
        let doc: Value = serde_json::from_str(&message(n)).unwrap();
        doc.pointer(ptr).unwrap().as_str().unwrap().to_owned()
    };
    let want = vec![
        (12, "api_error", inner(12, "/error/message")),
        (14, "api_error", inner(14, "/detail")),
        (16, "auth", message(16)),
        (18, "usage_limit", inner(18, "/error/message")),
        (20, "api_error", message(20)),
        (22, "api_error", inner(22, "/detail")),
    ];
    let got: Vec<(u64, &str, String)> = got.into_iter().map(|(l, k, e)| (l, k, e.to_owned())).collect();
    assert_eq!(got, want);
}
