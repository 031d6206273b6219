//! `--format html` and `--output-dir` without a browser: every dialect's fixtures render to an
//! inert page (only the writer's own elements and attributes, no script, links to anchors only)
//! holding every tool call; the escape battery and Markdown payloads stay text; arbitrary text
//! cannot break out (property test); `--output-dir` cannot be left through a session id.
//! `tests/html_chromium.rs` loads the same pages in a real browser.

use std::collections::BTreeSet;
use std::path::Path;

use agentnorm::view::html::{HtmlSink, anchor, escape};
use agentnorm::{Envelope, Event, Sink};
use proptest::prelude::*;

mod common;
use common::{
    ESCAPE_PAYLOADS, MARKDOWN_PAYLOADS, assert_inert_page, assert_success, bin, fixtures, hostile_session, html_tags,
    of_type, page_title, run_path, run_raw,
};

const DIALECTS: [&str; 8] =
    ["claude", "claude-transcript", "codex", "codex-legacy", "codex-rollout", "gemini", "opencode", "cursor"];

/// The page agentnorm writes for these inputs.
fn page_of(paths: &[&Path]) -> String {
    let out = bin().args(["--format", "html", "--no-observed-at"]).args(paths).output().expect("running agentnorm");
    assert_success(&out);
    String::from_utf8(out.stdout).expect("the page is UTF-8")
}

/// The `id`s of the page's elements that start with `prefix`.
fn ids_with(html: &str, prefix: &str) -> Vec<String> {
    html_tags(html)
        .into_iter()
        .flat_map(|t| t.attrs)
        .filter(|(a, v)| a == "id" && v.starts_with(prefix))
        .map(|(_, v)| v)
        .collect()
}

/// Asserts that every tool call of `events` has its element on the page.
fn assert_every_call(html: &str, events: &[serde_json::Value], what: &str) {
    let started = of_type(events, "tool_started");
    let calls = ids_with(html, "call-");
    assert_eq!(calls.len(), started.len(), "{what}: one call element per tool_started");
    for ev in started {
        let a = anchor(ev["tool_id"].as_str().expect("tool_id"));
        assert!(calls.iter().any(|id| id.ends_with(&format!("-{a}"))), "{what}: call {a} missing");
    }
    // Every link points at an element of the page.
    let ids: BTreeSet<String> =
        html_tags(html).into_iter().flat_map(|t| t.attrs).filter(|(a, _)| a == "id").map(|(_, v)| v).collect();
    for t in html_tags(html) {
        for (a, v) in t.attrs {
            if a == "href" && v.starts_with('#') {
                assert!(ids.contains(&v[1..]), "{what}: dangling link {v}");
            }
        }
    }
}

#[test]
fn every_fixture_of_every_dialect_renders_an_inert_page_with_every_tool_call() {
    for dialect in DIALECTS {
        for f in fixtures(dialect) {
            let html = page_of(&[&f]);
            let what = f.display().to_string();
            assert_inert_page(&html);
            assert_every_call(&html, &run_path(&f), &what);
            let sessions = html.matches("<section class=\"session\"").count();
            assert!(sessions >= 1, "{what}: no section");
        }
    }
}

#[test]
fn several_inputs_make_one_page_with_a_section_each() {
    let a = common::fixture("codex", "exec_commands");
    let b = common::fixture("gemini", "stream_deltas_tools");
    let html = page_of(&[&a, &b]);
    assert_inert_page(&html);
    assert_eq!(html.matches("<section class=\"session\"").count(), 2);
    assert_eq!(ids_with(&html, "s").iter().filter(|id| id.len() == 2).count(), 2, "two section anchors");
    assert!(page_title(&html).contains("2 sessions"), "{}", page_title(&html));
    // The contents list links to both.
    assert!(html.contains("href=\"#s0\"") && html.contains("href=\"#s1\""));
    // The codex section comes first, with its tool calls.
    let codex = html.find("exec_commands.jsonl").expect("codex section");
    let gemini = html.find("stream_deltas_tools.jsonl").expect("gemini section");
    assert!(codex < gemini);
}

#[test]
fn the_escape_battery_and_markdown_payloads_stay_text() {
    let input = hostile_session();
    let out = run_raw(&["--format", "html", "--no-observed-at"], input.as_bytes());
    assert_success(&out);
    let html = String::from_utf8(out.stdout).expect("UTF-8");
    assert_inert_page(&html);
    // Each line of each payload is on the page, made safe and escaped (the tool output shows them
    // as lines).
    let payloads =
        ESCAPE_PAYLOADS.iter().map(|(name, p)| (*name, *p)).chain(MARKDOWN_PAYLOADS.iter().map(|p| (*p, *p)));
    for (name, payload) in payloads {
        for line in agentnorm::view::clean_lines(payload) {
            assert!(html.contains(&escape(&line)), "{name}: {line:?} is not shown escaped");
        }
    }
    // Spelled out once, independently of `escape`.
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--"));
    assert!(html.contains("\\u{1b}[31mred\\u{1b}[0m"));
    assert!(html.contains("\\u{202e}"));
    assert!(!html.contains("<script") && !html.contains("<img"));
    let title = page_title(&html);
    assert!(title.starts_with("agentnorm · s-&lt;/title&gt;&lt;script&gt;"), "{title}");
    // Every tool call is there, its hostile id reduced to the anchor alphabet.
    let evs = common::run_stdin(&[], &input);
    assert_every_call(&html, &evs, "hostile");
}

#[test]
fn output_dir_writes_one_page_per_session_inside_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("pages");
    let sid = |s: &str| {
        format!(
            "{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":{},\"model\":\"m\",\"tools\":[]}}\n\
             {{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"hi\"}}]}},\"session_id\":{}}}\n",
            serde_json::json!(s),
            serde_json::json!(s)
        )
    };
    // A resumed Codex thread: two `session_started` of one id.
    let resumed = "{\"type\":\"thread.started\",\"thread_id\":\"plain-id\"}\n";
    let input = [sid("../../escape"), sid("/etc/passwd"), sid(".."), resumed.to_owned(), resumed.to_owned()].concat();
    let out =
        run_raw(&["--format", "html", "--no-observed-at", "--output-dir", out_dir.to_str().unwrap()], input.as_bytes());
    assert_success(&out);
    let listed: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    let mut written: Vec<String> =
        std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    written.sort();
    // "plain-id" twice is one session (one page, two sections); ".." has no usable name.
    assert_eq!(written.len(), 4, "{written:?}");
    assert_eq!(listed.len(), 4, "{listed:?}");
    for l in &listed {
        let p = Path::new(l);
        assert_eq!(p.parent(), Some(out_dir.as_path()), "{l} is not directly inside the folder");
        assert!(p.is_file());
        let html = std::fs::read_to_string(p).unwrap();
        assert_inert_page(&html);
    }
    assert!(written.contains(&"plain-id.html".to_owned()));
    let plain = std::fs::read_to_string(out_dir.join("plain-id.html")).unwrap();
    assert_eq!(plain.matches("<section class=\"session\"").count(), 2);
    // Nothing was written next to the folder.
    let beside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(beside.len(), 1);
}

#[test]
fn output_dir_gives_every_session_its_own_file_even_when_an_id_looks_like_a_numbered_name() {
    let dir = tempfile::tempdir().unwrap();
    // "a/b" and "a_b" share the stem "a_b"; the second becomes "a_b-2", which the third session
    // names as its own id.
    let input: String = ["a/b", "a_b", "a_b-2"]
        .iter()
        .map(|id| {
            format!(
                "{{\"type\":\"thread.started\",\"thread_id\":\"{id}\"}}\n\
                 {{\"type\":\"item.completed\",\"item\":{{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"hello from {id}.\"}}}}\n"
            )
        })
        .collect();
    let out = run_raw(
        &["--format", "html", "--no-observed-at", "--output-dir", dir.path().to_str().unwrap()],
        input.as_bytes(),
    );
    assert_success(&out);
    let listed: BTreeSet<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(listed.len(), 3, "{listed:?}");
    for id in ["a/b", "a_b", "a_b-2"] {
        let pages: Vec<&String> = listed
            .iter()
            .filter(|p| std::fs::read_to_string(p).unwrap().contains(&format!("hello from {}.", escape(id))))
            .collect();
        assert_eq!(pages.len(), 1, "{id} is on {pages:?}");
    }
}

#[test]
fn a_page_of_several_inputs_without_session_ids_is_titled_by_their_count() {
    let dir = tempfile::tempdir().unwrap();
    let no_id = "{\"type\":\"turn.started\"}\n\
                 {\"type\":\"item.completed\",\"item\":{\"id\":\"m\",\"type\":\"agent_message\",\"text\":\"hi\"}}\n";
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    std::fs::write(&a, no_id).unwrap();
    std::fs::write(&b, no_id).unwrap();
    let html = page_of(&[&a, &b]);
    assert_eq!(html.matches("<section class=\"session\"").count(), 2);
    assert_eq!(page_title(&html), "agentnorm · 2 sessions");
    let one = page_of(&[&a]);
    assert_eq!(page_title(&one), format!("agentnorm · {}", escape(&a.display().to_string())));
}

#[test]
fn output_dir_needs_the_html_format() {
    let out = run_raw(&["--output-dir", "/tmp/never-written-by-agentnorm"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format html"));
    assert!(!Path::new("/tmp/never-written-by-agentnorm").exists());
}

/// A page made straight from events through the library.
fn page_from(events: &[Event]) -> String {
    let mut sink = HtmlSink::new();
    for e in events {
        sink.event(e);
    }
    let mut out = Vec::new();
    sink.finish().write_all(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn env(session: &str) -> Envelope {
    Envelope { session_id: Some(session.to_owned()), source: Some(session.to_owned()), ..Envelope::default() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the agent writes (any characters, markup, controls) in whatever field, the page
    /// holds only the writer's own markup, and the text is there, escaped.
    #[test]
    fn arbitrary_agent_text_cannot_break_out(text in any::<String>(), markup in "[<>&\"'/a-z =!-]{0,40}") {
        let t = format!("{markup}{text}{markup}");
        let e = env(&t);
        let events = vec![
            Event::SessionStarted { env: e.clone(), model: Some(t.clone()), cwd: Some(t.clone()), cli_version: None,
                permission_mode: None, tools: None, parent_session_id: None },
            Event::UserMessage { env: e.clone(), text: t.as_str().into() },
            Event::OutputDelta { env: e.clone(), text: t.as_str().into(), message_id: None },
            Event::ToolStarted { env: e.clone(), tool_id: t.clone(), name: t.clone(), kind: agentnorm::event::ToolKind::Shell,
                input: None, summary: Some(t.clone()), synthetic: None },
            Event::ToolCompleted { env: e.clone(), tool_id: t.clone(), name: Some(t.clone()), kind: None, ok: false,
                output: Some(t.as_str().into()), exit_code: Some(1), error: Some(t.clone()), duration_ms: Some(5) },
            Event::Interrupt { env: e, reason: t.clone() },
        ];
        let html = page_from(&events);
        assert_inert_page(&html);
        // The interrupt's reason is one span: the whole text, made safe, escaped.
        prop_assert!(html.contains(&escape(&agentnorm::view::clean(&t))));
    }
}

#[test]
fn a_result_sits_in_its_call_when_it_follows_it_and_is_linked_both_ways_when_not() {
    let e = env("s");
    let call = |id: &str| Event::ToolStarted {
        env: e.clone(),
        tool_id: id.to_owned(),
        name: "Bash".to_owned(),
        kind: agentnorm::event::ToolKind::Shell,
        input: None,
        summary: Some(format!("echo {id}")),
        synthetic: None,
    };
    let done = |id: &str, ok: bool| Event::ToolCompleted {
        env: e.clone(),
        tool_id: id.to_owned(),
        name: Some("Bash".to_owned()),
        kind: None,
        ok,
        output: Some(format!("out {id}").into()),
        exit_code: None,
        error: None,
        duration_ms: Some(1500),
    };
    let text = |t: &str| Event::OutputDelta { env: e.clone(), text: t.into(), message_id: None };
    // a: its result right after it. b and c run in parallel: the render model shows them with
    // their results, in call order. d: text comes before its result, so the call is shown
    // running and its result where it came.
    let html = page_from(&[
        call("a"),
        done("a", true),
        call("b"),
        call("c"),
        done("c", false),
        done("b", true),
        call("d"),
        text("while d runs"),
        done("d", true),
    ]);
    assert_inert_page(&html);
    assert_eq!(ids_with(&html, "call-"), ["call-0-a", "call-0-b", "call-0-c", "call-0-d"]);
    assert_eq!(ids_with(&html, "result-"), ["result-0-a", "result-0-b", "result-0-c", "result-0-d"]);
    assert_eq!(html.matches("class=\"call kind-run result-alone\"").count(), 1, "d's result alone");
    assert!(html.contains("href=\"#result-0-d\""), "call d links to its result");
    assert!(html.contains("href=\"#call-0-d\""), "result d links to its call");
    for id in ["a", "b", "c"] {
        assert!(!html.contains(&format!("href=\"#result-0-{id}\"")), "{id}'s result is inside its call");
    }
    let pos = |id: &str| html.find(&format!("id=\"{id}\"")).unwrap();
    assert!(pos("call-0-a") < pos("result-0-a") && pos("result-0-a") < pos("call-0-b"));
    assert!(
        pos("call-0-d") < html.find("while d runs").unwrap() && html.find("while d runs").unwrap() < pos("result-0-d")
    );
    assert!(html.contains("1.5s"), "durations are shown");
    assert_eq!(html.matches("class=\"mark fail\"").count(), 1, "c failed");
    assert_eq!(html.matches("class=\"mark ok\"").count(), 3, "a, b and d's result");
}

#[test]
fn every_call_has_its_own_anchor_even_when_an_id_looks_like_a_numbered_one() {
    let e = env("s");
    // "t" twice (ids reused in one session) makes "t" and "t-2"; the third call's own id is "t-2".
    let events: Vec<Event> = ["t", "t", "t-2"]
        .iter()
        .flat_map(|id| {
            [
                Event::ToolStarted {
                    env: e.clone(),
                    tool_id: (*id).to_owned(),
                    name: "Bash".to_owned(),
                    kind: agentnorm::event::ToolKind::Shell,
                    input: None,
                    summary: None,
                    synthetic: None,
                },
                Event::ToolCompleted {
                    env: e.clone(),
                    tool_id: (*id).to_owned(),
                    name: None,
                    kind: None,
                    ok: true,
                    output: None,
                    exit_code: None,
                    error: None,
                    duration_ms: None,
                },
            ]
        })
        .collect();
    let html = page_from(&events);
    let ids = ids_with(&html, "call-");
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 3, "an anchor used twice: {ids:?}");
}

#[test]
fn a_subagents_work_is_grouped_under_its_task() {
    let f = common::fixture("claude", "subagent_background_agent");
    let evs = run_path(&f);
    let html = page_of(&[&f]);
    let child: Vec<&serde_json::Value> = evs.iter().filter(|e| e.get("parent_tool_id").is_some()).collect();
    assert!(!child.is_empty(), "the fixture has subagent events");
    let parent = anchor(child[0]["parent_tool_id"].as_str().unwrap());
    let group = html.find("<div class=\"subagent\">").expect("a subagent group");
    assert!(
        html[group..].starts_with(&format!(
            "<div class=\"subagent\"><div class=\"who\">Subagent of <a href=\"#call-0-{parent}\">"
        ))
    );
    assert!(html.find(&format!("id=\"call-0-{parent}\"")).unwrap() < group, "the task comes first");
    // A subagent's tool calls come after the group opened.
    for ev in of_type(&evs, "tool_started").into_iter().filter(|e| e.get("parent_tool_id").is_some()) {
        let at = html.find(&format!("id=\"call-0-{}\"", anchor(ev["tool_id"].as_str().unwrap()))).unwrap();
        assert!(at > group);
    }
}
