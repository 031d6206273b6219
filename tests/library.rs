//! The library's public surface: the options builder, the pull iterator, closures as sinks,
//! `line` mixed with partial `feed`s, pretty-printed documents after stderr lines, and the
//! survey of how frames are read.

mod common;

use agentnorm::{Dialect, Event, Normalizer, Options, ReadAs};
use common::*;

fn types(evs: &[Event]) -> Vec<&'static str> {
    evs.iter().map(|e| e.type_name()).collect()
}

#[test]
fn pull_iterator_equals_push_over_every_fixture() {
    for fixture in all_fixtures() {
        let data = std::fs::read(&fixture).unwrap();
        let opts = || Options::default().observed_at(false).source(Some(fixture.display().to_string()));
        let pulled: Vec<Event> = agentnorm::events(&data[..], opts()).map(|e| e.unwrap()).collect();
        let mut pushed: Vec<Event> = Vec::new();
        let mut n = Normalizer::new(opts());
        n.feed(&data, &mut pushed);
        n.finish(&mut pushed);
        assert_eq!(pulled, pushed, "{}", fixture.display());
    }
}

#[test]
fn pull_iterator_ends_with_the_read_error() {
    struct Failing(u8);
    impl std::io::Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0 += 1;
            if self.0 == 1 {
                let line = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n";
                buf[..line.len()].copy_from_slice(line);
                return Ok(line.len());
            }
            Err(std::io::Error::other("disk gone"))
        }
    }
    let got: Vec<_> = agentnorm::events(Failing(0), Options::default()).collect();
    assert_eq!(got.len(), 3, "run_started, session_started, then the error");
    assert!(got[2].as_ref().is_err_and(|e| e.to_string() == "disk gone"));
}

#[test]
fn a_closure_is_a_sink() {
    let mut seen = Vec::new();
    let mut sink = |ev: &Event| seen.push(ev.type_name());
    let mut n = Normalizer::new(Options::default().observed_at(false));
    n.feed(b"{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n", &mut sink);
    n.finish(&mut sink);
    assert_eq!(seen, ["run_started", "session_started", "run_ended"]);
}

/// `line` after a partial `feed` completes the fed bytes: nothing is reordered.
#[test]
fn line_after_a_partial_feed_completes_that_line() {
    let whole = b"{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.started\"}\n";
    let mut a: Vec<Event> = Vec::new();
    let mut n = Normalizer::new(Options::default().observed_at(false));
    n.feed(whole, &mut a);
    n.finish(&mut a);
    let mut b: Vec<Event> = Vec::new();
    let mut n = Normalizer::new(Options::default().observed_at(false));
    n.feed(b"{\"type\":\"thread.started\",", &mut b);
    n.line(b"\"thread_id\":\"t1\"}", &mut b);
    n.line(b"{\"type\":\"turn.started\"}", &mut b);
    n.finish(&mut b);
    assert_eq!(a, b);
    assert_eq!(types(&b), ["run_started", "session_started", "turn_started", "run_ended"]);
}

/// SPEC §1: a document starts at any line that is exactly `{`, e.g. after the stderr line Gemini
/// prints first when `2>&1` merges it.
#[test]
fn a_pretty_printed_document_after_stderr_lines_is_one_frame() {
    let input = "Loaded cached credentials.\n{\n  \"session_id\": \"g1\",\n  \"response\": \"Done.\",\n  \"stats\": {}\n}\n{\n  \"session_id\": \"g2\",\n  \"response\": \"Again.\",\n  \"stats\": {}\n}\n";
    let evs = run_stdin(&[], input);
    let text = output_text(&evs);
    assert_eq!(text, "Done.Again.");
    let sessions: Vec<_> =
        of_type(&evs, "session_started").iter().map(|e| (e["line"].clone(), e["line_end"].clone())).collect();
    assert_eq!(sessions, [(2.into(), 6.into()), (7.into(), 11.into())]);
    assert_eq!(run_ended(&evs)["unknown"], 1, "only the stderr line is unknown");
}

#[test]
fn options_builder_sets_every_field() {
    let o = Options::default()
        .dialect(Some(Dialect::Gemini))
        .source(Some("x".into()))
        .observed_at(false)
        .raw(true)
        .max_line_bytes(10)
        .redact(true);
    assert_eq!(o.dialect, Some(Dialect::Gemini));
    assert_eq!(o.source.as_deref(), Some("x"));
    assert!(!o.observed_at && o.raw && o.redact);
    assert_eq!(o.max_line_bytes, 10);
}

#[test]
fn every_registry_dialect_is_a_dialect_value_and_in_the_schema() {
    let schema = String::from_utf8(run_raw(&["schema"], b"").stdout).unwrap();
    let help = String::from_utf8(run_raw(&["--help"], b"").stdout).unwrap();
    for d in Dialect::ALL {
        assert_eq!(Dialect::from_name(d.as_str()), Some(*d));
        assert!(schema.contains(&format!("\"{}\"", d.as_str())), "{d} not in the schema");
        assert!(help.contains(d.as_str()), "{d} not in --help");
        let out = run_raw(&["--dialect", d.as_str(), "--no-observed-at"], b"{}\n");
        assert_success(&out);
    }
    assert_eq!(run_raw(&["--dialect", "nonesuch"], b"").status.code(), Some(2));
}

#[test]
fn survey_counts_each_frame_type_and_how_it_is_read() {
    let input = concat!(
        "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n",
        "{\"type\":\"turn.started\"}\n",
        "{\"type\":\"turn.started\"}\n",
        "{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"brand_new_item\"}}\n",
        "not json at all\n",
    );
    let out = run_raw(&["survey", "--json"], input.as_bytes());
    assert_success(&out);
    let rows = parse(&out.stdout);
    let row = |frame: &str| rows.iter().find(|r| r["frame"] == frame).unwrap_or_else(|| panic!("{frame}: {rows:?}"));
    assert_eq!(row("turn.started")["count"], 2);
    assert_eq!(row("turn.started")["read_as"], "mapped");
    assert_eq!(row("turn.started")["dialect"], "codex");
    assert_eq!(row("turn.started")["line"], 2);
    let unknown = row("item.completed/brand_new_item");
    assert_eq!((unknown["read_as"].as_str(), unknown["line"].as_u64()), (Some("unknown"), Some(4)));
    assert_eq!(row("(not_json)")["unknown"], 1);
    // The table says the same for people.
    let table = String::from_utf8(run_raw(&["survey"], input.as_bytes()).stdout).unwrap();
    assert!(table.lines().any(|l| l.contains("item.completed/brand_new_item") && l.contains("unknown")), "{table}");
    assert!(table.contains("5 lines, 2 unknown"), "{table}");
}

#[test]
fn survey_walks_folders_and_names_versions() {
    let out = run_raw(&["survey", "--json", "fixtures/claude"], b"");
    assert_success(&out);
    let rows = parse(&out.stdout);
    assert!(rows.iter().all(|r| r["dialect"] == "claude"), "{rows:?}");
    assert!(rows.iter().any(|r| r["cli_version"] == "2.1.220" && r["frame"] == "system/init"));
    assert!(rows.iter().any(|r| r["read_as"] == "heartbeat"));
    let total: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    let lines: usize =
        fixtures("claude").iter().map(|f| input_lines(f).iter().filter(|l| !l.trim().is_empty()).count()).sum();
    assert_eq!(total as usize, lines, "every non-blank line counted once");
    let _ = ReadAs::Mapped;
}
