//! `--format html` and `--output-dir` without a browser: every dialect's fixtures render to an
//! inert page (only the writer's own elements and attributes, no script, links to anchors only)
//! holding every tool call; the escape battery and Markdown payloads stay text; arbitrary text
//! cannot break out (property test); `--output-dir` cannot be left through a session id, and a
//! re-run over it renders again only the pages of what changed (and everything for other options,
//! another build, `--rerender` or a record it cannot trust).
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

// ------------------------------------------------------------------------------------------------
// Re-runs over the same --output-dir: only what changed is rendered again
// ------------------------------------------------------------------------------------------------

/// A Codex session of one message.
fn codex_session(id: &str, text: &str) -> String {
    format!(
        "{}\n{{\"type\":\"turn.started\"}}\n{}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}\n",
        serde_json::json!({"type":"thread.started","thread_id":id}),
        serde_json::json!({"type":"item.completed","item":{"id":"m1","type":"agent_message","text":text}})
    )
}

/// Writes `text` to `path` and dates it `ago` seconds back (an input modified in the last two
/// seconds before it is read is read again by the next run, whatever its stamp says: the tests
/// date their inputs back so that no assertion depends on how fast they run).
fn write_dated(path: &Path, text: &str, ago: u64) {
    std::fs::write(path, text).unwrap();
    date(path, ago);
}

fn date(path: &Path, ago: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(ago);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
}

/// One run over `inputs` into `pages` with `extra` options: exit status and the listed paths.
fn pages_run(pages: &Path, extra: &[&str], inputs: &[&Path]) -> (Option<i32>, Vec<String>) {
    let out = bin()
        .args(["--format", "html", "--no-observed-at", "--output-dir"])
        .arg(pages)
        .args(extra)
        .args(inputs)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect())
}

/// Each page in `pages` (the record excluded) → its inode and modification time: what writing
/// it again (a new file renamed over the name) changes.
fn page_stamps(pages: &Path) -> std::collections::BTreeMap<String, (u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::read_dir(pages)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != ".agentnorm-pages.json")
        .map(|e| {
            let m = e.metadata().unwrap();
            (e.file_name().into_string().unwrap(), (m.ino(), m.modified().unwrap()))
        })
        .collect()
}

/// The pages of `before` that `after` has written again (or dropped).
fn rewritten(
    before: &std::collections::BTreeMap<String, (u64, std::time::SystemTime)>,
    after: &std::collections::BTreeMap<String, (u64, std::time::SystemTime)>,
) -> BTreeSet<String> {
    before.iter().filter(|(name, stamp)| after.get(*name) != Some(stamp)).map(|(name, _)| name.clone()).collect()
}

/// Three files, the first session resumed in the third.
fn three_inputs(dir: &Path) -> [std::path::PathBuf; 3] {
    let [a, b, c] = ["1.jsonl", "2.jsonl", "3.jsonl"].map(|n| dir.join(n));
    write_dated(&a, &codex_session("s-resumed", "before the resume"), 3600);
    write_dated(&b, &codex_session("s-other", "another session"), 3600);
    write_dated(&c, &codex_session("s-resumed", "after the resume"), 3600);
    [a, b, c]
}

#[test]
fn output_dir_rerun_over_unchanged_inputs_writes_no_page() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c] = three_inputs(dir.path());
    let pages = dir.path().join("pages");
    let first = pages_run(&pages, &[], &[&a, &b, &c]);
    assert_eq!(first.0, Some(0));
    assert_eq!(first.1.len(), 2, "{:?}", first.1);
    assert!(pages.join(".agentnorm-pages.json").is_file(), "the record is left in DIR");
    let before = page_stamps(&pages);
    assert_eq!(before.len(), 2);
    let again = pages_run(&pages, &[], &[&a, &b, &c]);
    assert_eq!(again, first, "the same status and the same paths, in the same order");
    assert_eq!(page_stamps(&pages), before, "no page written again");
    // The folder walked gives the same.
    let walked = pages_run(&pages, &[], &[dir.path()]);
    assert_eq!(walked.0, Some(0));
    assert_eq!(page_stamps(&pages).len(), 2);
    let walked_again = pages_run(&pages, &[], &[dir.path()]);
    assert_eq!(walked_again, walked);
    let kept = page_stamps(&pages);
    assert_eq!(pages_run(&pages, &[], &[dir.path()]), walked);
    assert_eq!(page_stamps(&pages), kept, "no page written again");
}

#[test]
fn output_dir_rerun_renders_again_only_the_pages_of_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c] = three_inputs(dir.path());
    let d = dir.path().join("4.jsonl");
    write_dated(&d, &codex_session("s-fourth", "a fourth session"), 3600);
    let pages = dir.path().join("pages");
    let first = pages_run(&pages, &[], &[&a, &b, &c, &d]);
    assert_eq!(first.0, Some(0));
    let before = page_stamps(&pages);
    // Appended to.
    let mut text = std::fs::read_to_string(&b).unwrap();
    text.push_str(&codex_session("s-other", "appended later").lines().skip(1).collect::<Vec<_>>().join("\n"));
    text.push('\n');
    write_dated(&b, &text, 1800);
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c, &d]), first);
    let after = page_stamps(&pages);
    assert_eq!(rewritten(&before, &after), BTreeSet::from(["s-other.html".to_owned()]));
    assert!(std::fs::read_to_string(pages.join("s-other.html")).unwrap().contains("appended later"));
    // Touched (the same bytes, another time): rendered again all the same.
    date(&d, 900);
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c, &d]), first);
    let touched = page_stamps(&pages);
    assert_eq!(rewritten(&after, &touched), BTreeSet::from(["s-fourth.html".to_owned()]));
    // The later part of a resumed session changed: its one page, from both files.
    write_dated(&c, &codex_session("s-resumed", "after the resume, edited"), 600);
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c, &d]), first);
    let resumed = page_stamps(&pages);
    assert_eq!(rewritten(&touched, &resumed), BTreeSet::from(["s-resumed.html".to_owned()]));
    let page = std::fs::read_to_string(pages.join("s-resumed.html")).unwrap();
    assert!(page.contains("before the resume") && page.contains("after the resume, edited"), "both parts");
    // Replaced by another file of the same size and time: another inode.
    let e = dir.path().join("4.jsonl.new");
    std::fs::copy(&d, &e).unwrap();
    let t = std::fs::metadata(&d).unwrap().modified().unwrap();
    std::fs::File::options().write(true).open(&e).unwrap().set_modified(t).unwrap();
    std::fs::rename(&e, &d).unwrap();
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c, &d]), first);
    assert_eq!(rewritten(&resumed, &page_stamps(&pages)), BTreeSet::from(["s-fourth.html".to_owned()]));
}

#[test]
fn output_dir_rerun_renders_again_a_page_gone_replaced_or_left_by_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c] = three_inputs(dir.path());
    let pages = dir.path().join("pages");
    let first = pages_run(&pages, &[], &[&a, &b, &c]);
    // A page deleted: written again, listed.
    std::fs::remove_file(pages.join("s-other.html")).unwrap();
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c]), first);
    assert!(std::fs::read_to_string(pages.join("s-other.html")).unwrap().contains("another session"));
    // A page replaced by a link to a file outside: the link replaced by the page, the file
    // untouched.
    let outside = dir.path().join("outside.html");
    std::fs::write(&outside, "precious").unwrap();
    std::fs::remove_file(pages.join("s-other.html")).unwrap();
    std::os::unix::fs::symlink(&outside, pages.join("s-other.html")).unwrap();
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c]), first);
    assert!(std::fs::symlink_metadata(pages.join("s-other.html")).unwrap().is_file());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    // A page edited by hand (another size): written again.
    std::fs::write(pages.join("s-other.html"), "edited").unwrap();
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c]), first);
    assert!(std::fs::read_to_string(pages.join("s-other.html")).unwrap().contains("another session"));
    // The file that resumed a session is no longer an input: its part leaves the page.
    let without = pages_run(&pages, &[], &[&a, &b]);
    assert_eq!(without.1, first.1);
    let page = std::fs::read_to_string(pages.join("s-resumed.html")).unwrap();
    assert!(page.contains("before the resume") && !page.contains("after the resume"), "only the first part");
    // And back: both parts again.
    assert_eq!(pages_run(&pages, &[], &[&a, &b, &c]), first);
    let page = std::fs::read_to_string(pages.join("s-resumed.html")).unwrap();
    assert!(page.contains("before the resume") && page.contains("after the resume"));
    // In another order, the pages are those of a first run in that order.
    let fresh = dir.path().join("fresh");
    let names = |(code, listed): (Option<i32>, Vec<String>)| {
        (code, listed.iter().map(|l| Path::new(l).file_name().unwrap().to_owned()).collect::<Vec<_>>())
    };
    let reordered = names(pages_run(&pages, &[], &[&c, &b, &a]));
    assert_eq!(reordered, names(pages_run(&fresh, &[], &[&c, &b, &a])));
    for name in ["s-resumed.html", "s-other.html"] {
        assert_eq!(std::fs::read(pages.join(name)).unwrap(), std::fs::read(fresh.join(name)).unwrap(), "{name}");
    }
}

#[test]
fn output_dir_rerun_renders_everything_again_for_other_options_another_build_or_rerender() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c] = three_inputs(dir.path());
    let pages = dir.path().join("pages");
    let inputs = [a.as_path(), b.as_path(), c.as_path()];
    let first = pages_run(&pages, &[], &inputs);
    let all: BTreeSet<String> = page_stamps(&pages).into_keys().collect();
    let mut last = page_stamps(&pages);
    let mut expect = |extra: &[&str], again: bool, why: &str| {
        assert_eq!(pages_run(&pages, extra, &inputs), first, "{why}");
        let now = page_stamps(&pages);
        let changed = rewritten(&last, &now);
        assert_eq!(changed, if again { all.clone() } else { BTreeSet::new() }, "{why}");
        last = now;
    };
    expect(&["--redact"], true, "--redact");
    expect(&["--redact"], false, "--redact again");
    expect(&["--exclude", "output_delta"], true, "a filter");
    expect(&["--exclude", "output_delta"], false, "the filter again");
    expect(&["--rerender"], true, "--rerender");
    expect(&[], false, "after --rerender");
    // Another build (the record's version changed): everything again.
    let record = pages.join(".agentnorm-pages.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    m["agentnorm"] = serde_json::json!("0.0.0 another build");
    std::fs::write(&record, serde_json::to_vec(&m).unwrap()).unwrap();
    expect(&[], true, "another build");
    expect(&[], false, "this build again");
    let out = bin().args(["--rerender"]).arg(&a).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--rerender without --output-dir is bad usage");
}

#[test]
fn output_dir_rerun_survives_a_corrupt_foreign_or_planted_record() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c] = three_inputs(dir.path());
    let pages = dir.path().join("pages");
    let inputs = [a.as_path(), b.as_path(), c.as_path()];
    let first = pages_run(&pages, &[], &inputs);
    let record = pages.join(".agentnorm-pages.json");
    let good = std::fs::read(&record).unwrap();
    let rendered_again = |what: &str| {
        let before = page_stamps(&pages);
        assert_eq!(pages_run(&pages, &[], &inputs), first, "{what}");
        assert_eq!(rewritten(&before, &page_stamps(&pages)).len(), 2, "{what}: every page rendered again");
        let left: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
        assert_eq!(left["inputs"].as_array().map(Vec::len), Some(3), "{what}: a record of its own left");
    };
    for (what, bytes) in [
        ("cut short", &good[..good.len() / 2]),
        ("not JSON", &b"\x00\xffnot json at all"[..]),
        ("another shape", &br#"{"agentnorm":1,"inputs":"x"}"#[..]),
        ("empty", &b""[..]),
    ] {
        std::fs::write(&record, bytes).unwrap();
        rendered_again(what);
    }
    // A record of this build whose pages are named outside DIR: never used.
    let mut m: serde_json::Value = serde_json::from_slice(&good).unwrap();
    for input in m["inputs"].as_array_mut().unwrap() {
        for p in input["pages"].as_array_mut().unwrap() {
            p["file"] = serde_json::json!("../escaped.html");
            p["name"] = serde_json::json!("../escaped.html");
        }
    }
    for p in m["pages"].as_array_mut().unwrap() {
        p["file"] = serde_json::json!("../escaped.html");
    }
    std::fs::write(dir.path().join("escaped.html"), "outside").unwrap();
    std::fs::write(&record, serde_json::to_vec(&m).unwrap()).unwrap();
    rendered_again("pages named outside DIR");
    assert_eq!(std::fs::read_to_string(dir.path().join("escaped.html")).unwrap(), "outside");
    // A link planted at the record's name: not read through, replaced, its target untouched.
    let target = dir.path().join("target.json");
    std::fs::write(&target, &good).unwrap();
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(&target, &record).unwrap();
    rendered_again("a link");
    assert!(std::fs::symlink_metadata(&record).unwrap().is_file());
    assert_eq!(std::fs::read(&target).unwrap(), good);
    // A folder at the record's name: the pages are written all the same, the record not.
    std::fs::remove_file(&record).unwrap();
    std::fs::create_dir(&record).unwrap();
    let out =
        bin().args(["--format", "html", "--no-observed-at", "--output-dir"]).arg(&pages).args(inputs).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().collect::<Vec<_>>(), first.1);
}

#[test]
fn output_dir_rerun_gives_the_exit_status_of_the_inputs_it_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    write_dated(&a, &(codex_session("s-a", "hi") + "{\"not a frame\": true}\n"), 3600);
    let pages = dir.path().join("pages");
    let first = pages_run(&pages, &["--strict"], &[&a]);
    assert_eq!(first.0, Some(1), "an unknown line");
    let before = page_stamps(&pages);
    assert_eq!(pages_run(&pages, &["--strict"], &[&a]), first, "kept, and still exit 1");
    assert_eq!(page_stamps(&pages), before);
    // A file whose modification time is not safely past when it is read (here: in the future)
    // is read again by the next run.
    std::fs::write(&a, codex_session("s-a", "hi")).unwrap();
    let t = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&a).unwrap().set_modified(t).unwrap();
    assert_eq!(pages_run(&pages, &["--strict"], &[&a]).0, Some(0));
    let fresh = page_stamps(&pages);
    assert_eq!(pages_run(&pages, &["--strict"], &[&a]).0, Some(0));
    assert_eq!(rewritten(&fresh, &page_stamps(&pages)).len(), 1, "read again: too fresh to trust");
}
