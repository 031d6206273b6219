//! Unit tests of the render model and its terminal layout, on events built by hand.

use super::*;
use crate::event::sink::Sink;
use crate::event::{Envelope, Text};

fn env(line: u64, at: Option<&str>) -> Envelope {
    Envelope { line: Some(line), at: at.map(str::to_owned), ..Envelope::default() }
}

fn started(line: u64, id: &str, kind: ToolKind, summary: &str, at: Option<&str>) -> Event {
    Event::ToolStarted {
        env: env(line, at),
        tool_id: id.into(),
        name: "Bash".into(),
        kind,
        input: None,
        summary: Some(summary.into()),
        synthetic: None,
    }
}

fn completed(line: u64, id: &str, ok: bool, output: &str, at: Option<&str>) -> Event {
    Event::ToolCompleted {
        env: env(line, at),
        tool_id: id.into(),
        name: None,
        kind: None,
        ok,
        output: Some(output.into()),
        exit_code: None,
        error: None,
        duration_ms: None,
    }
}

fn delta(line: u64, text: &str) -> Event {
    Event::OutputDelta { env: env(line, None), text: text.into(), message_id: None }
}

fn plain(blocks: &[Block]) -> String {
    blocks.iter().map(Block::plain).collect()
}

fn layout(blocks: &[Block], width: usize, color: bool) -> String {
    let term = Terminal { width, color };
    let mut out = Vec::new();
    for b in blocks {
        term.write_block(b, &mut out);
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn a_call_and_its_result_make_one_block_with_the_duration_from_timestamps() {
    let evs = [
        started(1, "t1", ToolKind::Shell, "cargo test", Some("2026-08-01T10:00:00.000Z")),
        completed(2, "t1", true, "ok", Some("2026-08-01T10:00:02.500Z")),
    ];
    let blocks = render_all(&evs);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    let call = blocks[0].tool.as_ref().unwrap();
    assert_eq!((call.outcome, call.duration_ms, call.resumed), (Outcome::Ok, Some(2500), false));
    assert_eq!((call.line, call.result_line), (Some(1), Some(2)));
    assert_eq!(blocks[0].lines[0].plain(), "✓ Run  cargo test · 2.5s");
    assert_eq!(blocks[0].lines[1].plain(), "    ok");
}

#[test]
fn the_reported_duration_wins_and_a_failure_shows_its_exit_code_and_error() {
    let evs = [
        started(1, "t1", ToolKind::Shell, "make", Some("2026-08-01T10:00:00Z")),
        Event::ToolCompleted {
            env: env(2, Some("2026-08-01T10:00:09Z")),
            tool_id: "t1".into(),
            name: None,
            kind: None,
            ok: false,
            output: None,
            exit_code: Some(2),
            error: Some("make: *** no rule".into()),
            duration_ms: Some(120),
        },
    ];
    let blocks = render_all(&evs);
    assert_eq!(plain(&blocks), "✗ Run  make · exit 2 · 120ms\n    make: *** no rule\n");
}

#[test]
fn long_output_is_folded_but_kept_whole() {
    let output: String = (1..=10).map(|i| format!("line {i}\n")).collect::<String>() + "\nresult\n";
    let evs = [started(1, "t1", ToolKind::Shell, "seq", None), completed(2, "t1", true, &output, None)];
    let blocks = render_all(&evs);
    let out = blocks[0].tool.as_ref().unwrap().output.as_ref().unwrap();
    // Half the fold from the start, half from the end, the end starting at a line with text.
    assert_eq!((out.lines.len(), out.shown, out.tail), (12, 2, 3));
    assert_eq!(out.lines[11], "result");
    assert_eq!(
        blocks[0].plain(),
        "✓ Run  seq\n    line 1\n    line 2\n    … 7 more lines\n    line 10\n    \n    result\n"
    );
    // One line more than the fold is shown rather than folded.
    let five: String = (1..=5).map(|i| format!("l{i}\n")).collect();
    let blocks = render_all(&[started(1, "t", ToolKind::Shell, "x", None), completed(2, "t", true, &five, None)]);
    assert!(blocks[0].plain().contains("    l5\n") && !blocks[0].plain().contains("more line"));
    // A fold of usize::MAX shows everything.
    let mut r = Renderer::new(RenderOptions { fold_lines: usize::MAX, ..RenderOptions::default() });
    let mut all = Vec::new();
    r.push(&evs[0], &mut all);
    r.push(&evs[1], &mut all);
    assert_eq!(all[0].lines.len(), 13);
}

#[test]
fn quiet_kinds_show_a_line_count_instead_of_their_output() {
    let evs = [started(1, "t1", ToolKind::Read, "src/lib.rs", None), completed(2, "t1", true, "a\nb\nc\n", None)];
    let blocks = render_all(&evs);
    assert_eq!(plain(&blocks), "✓ Read  src/lib.rs · 3 lines\n");
    assert_eq!(blocks[0].tool.as_ref().unwrap().output.as_ref().unwrap().lines.len(), 3);
}

#[test]
fn a_call_interrupted_by_other_blocks_is_shown_running_then_resumed() {
    let evs = [
        started(1, "task", ToolKind::Task, "explore", None),
        Event::ToolStarted {
            env: Envelope { line: Some(2), parent_tool_id: Some("task".into()), ..Envelope::default() },
            tool_id: "inner".into(),
            name: "Grep".into(),
            kind: ToolKind::Search,
            input: None,
            summary: Some("TODO".into()),
            synthetic: None,
        },
        Event::ToolCompleted {
            env: Envelope { line: Some(3), parent_tool_id: Some("task".into()), ..Envelope::default() },
            tool_id: "inner".into(),
            name: None,
            kind: None,
            ok: true,
            output: None,
            exit_code: None,
            error: None,
            duration_ms: None,
        },
        completed(4, "task", true, "found 3", None),
    ];
    let blocks = render_all(&evs);
    let calls: Vec<(&str, Outcome, bool, usize)> =
        blocks.iter().filter_map(|b| b.tool.as_ref().map(|t| (t.id.as_str(), t.outcome, t.resumed, b.depth))).collect();
    assert_eq!(
        calls,
        [("task", Outcome::Running, false, 0), ("inner", Outcome::Ok, false, 1), ("task", Outcome::Ok, true, 0)]
    );
    assert!(blocks[0].plain().starts_with("… Task  explore · running"), "{}", blocks[0].plain());
}

#[test]
fn calls_started_together_are_shown_in_start_order_once_each_has_its_result() {
    let evs = [
        started(1, "a", ToolKind::Shell, "first", None),
        started(1, "b", ToolKind::Shell, "second", None),
        completed(2, "b", true, "B", None),
        completed(3, "a", true, "A", None),
    ];
    let blocks = render_all(&evs);
    let order: Vec<(&str, Outcome)> =
        blocks.iter().filter_map(|b| b.tool.as_ref()).map(|t| (t.id.as_str(), t.outcome)).collect();
    assert_eq!(order, [("a", Outcome::Ok), ("b", Outcome::Ok)]);
}

#[test]
fn flush_shows_a_running_call_and_whole_paragraphs_only() {
    let mut r = Renderer::new(RenderOptions::default());
    let mut out = Vec::new();
    r.push(&delta(1, "First paragraph.\n\nSecond, still "), &mut out);
    assert!(out.is_empty());
    r.flush(&mut out);
    assert_eq!(plain(&out), "First paragraph.\n");
    out.clear();
    r.push(&delta(2, "going.\n\n```\ncode\n\nmore code"), &mut out);
    r.flush(&mut out);
    // The open fence is not cut.
    assert_eq!(plain(&out), "Second, still going.\n");
    out.clear();
    r.push(&started(3, "t", ToolKind::Shell, "sleep 9", None), &mut out);
    assert_eq!(plain(&out), "code\n\nmore code\n", "text ends where a call starts");
    out.clear();
    r.flush(&mut out);
    assert_eq!(out[0].tool.as_ref().unwrap().outcome, Outcome::Running);
    out.clear();
    r.push(&completed(4, "t", true, "", None), &mut out);
    assert!(out[0].tool.as_ref().unwrap().resumed);
    assert_eq!(plain(&out), "✓ Run  sleep 9\n");
}

#[test]
fn a_plan_set_by_a_call_is_its_checklist() {
    let items = vec![
        PlanItem { text: "Read".into(), status: PlanStatus::Completed },
        PlanItem { text: "Port".into(), status: PlanStatus::InProgress },
        PlanItem { text: "Test".into(), status: PlanStatus::Pending },
    ];
    let mut start = started(3, "p", ToolKind::Plan, "", None);
    if let Event::ToolStarted { summary, name, .. } = &mut start {
        *summary = None;
        *name = "TodoWrite".into();
    }
    let evs = [
        start,
        Event::PlanUpdated { env: env(3, None), items: items.clone() },
        completed(4, "p", true, "Todos have been modified", None),
        Event::PlanUpdated { env: env(5, None), items },
    ];
    let blocks = render_all(&evs);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].plain(), "✓ Plan  1/3 done\n    [x] Read\n    [~] Port\n    [ ] Test\n");
    assert_eq!(blocks[1].kind, BlockKind::Plan);
    assert_eq!(blocks[1].plain(), "☰ Plan  1/3 done\n    [x] Read\n    [~] Port\n    [ ] Test\n");
    let marker = &blocks[1].lines[2].prefix[1];
    assert_eq!(marker.kind, SpanKind::PlanMarker(PlanStatus::InProgress));
}

#[test]
fn the_footer_sums_the_turns_requests_and_keeps_the_latest_rate_limit_per_window() {
    let usage = |input, output, context| Event::Usage {
        env: Envelope::default(),
        usage: Usage { input: Some(input), output: Some(output), context: Some(context), ..Usage::default() },
        model: None,
        message_id: None,
        context_window: None,
    };
    let limit = |pct: f64| Event::RateLimit {
        env: Envelope::default(),
        window: "five_hour".into(),
        window_minutes: Some(300),
        status: Some("allowed".into()),
        used_percent: Some(pct),
        resets_at: None,
        overage_status: None,
        using_overage: None,
    };
    let end = Event::TurnCompleted {
        env: Envelope::default(),
        usage: None,
        usage_scope: None,
        cost_scope: None,
        cost_usd: Some(0.25),
        model_usage: None,
        duration_ms: Some(61_000),
        num_turns: None,
        result: None,
        stop_reason: None,
    };
    let blocks = render_all(&[usage(100, 10, 1500), limit(40.0), usage(2000, 20, 2500), limit(41.0), end]);
    let footer = blocks[0].footer.as_ref().unwrap();
    assert_eq!(footer.usage.and_then(|u| u.input), Some(2100));
    assert_eq!((footer.requests, footer.context), (2, Some(2500)));
    assert_eq!(footer.rate_limits.len(), 1);
    assert_eq!(
        blocks[0].plain(),
        "─ turn done · 1m01s · 2 requests · in 2.1k · out 30 · context 2.5k · $0.2500 · limit five_hour 41% used\n"
    );
    // Figures left at the end of the input get a footer of their own; nothing else none.
    assert_eq!(render_all(&[limit(90.0)])[0].plain(), "─ rate limits · limit five_hour 90% used\n");
    assert_eq!(render_all(&[limit(90.0)])[0].lines[0].spans[2].kind, SpanKind::RateLimit { warn: true });
    assert!(render_all(&[Event::heartbeat("x")]).is_empty());
}

#[test]
fn markdown_becomes_typed_spans() {
    let lines = markdown(
        "## Plan\n\nUse **bold**, *it*, ~~no~~ and `x()`; see [docs](https://ex.example/d).\n\n> quoted\n\n1. one\n2. two\n   - nested\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n---\n",
    );
    let all: Vec<&Span> = lines.iter().flat_map(|l| l.prefix.iter().chain(&l.spans)).collect();
    let find = |t: &str| all.iter().find(|s| s.text == t).unwrap_or_else(|| panic!("{t:?} in {lines:#?}"));
    assert_eq!(find("Plan").kind, SpanKind::Heading(2));
    assert!(find("bold").strong && find("it").emphasis && find("no").strike);
    assert_eq!(find("x()").kind, SpanKind::Code);
    assert_eq!((find("docs").kind, find("docs").url.as_deref()), (SpanKind::Link, Some("https://ex.example/d")));
    assert_eq!(find("│ ").kind, SpanKind::QuoteBar);
    assert_eq!(find("───").kind, SpanKind::Rule);
    let texts: Vec<String> = lines.iter().map(Line::plain).collect();
    for row in ["1. one", "2. two", "   • nested", "a │ b", "1 │ 2", "│ quoted"] {
        assert!(texts.iter().any(|t| t == row), "{row:?} in {texts:#?}");
    }
    assert!(find("a").strong, "table head is strong");
}

#[test]
fn every_span_is_safe_whatever_the_agent_wrote() {
    let hostile = "\x1b[31mred\x1b]0;title\x07 \u{9b}2J \u{202E}evil\u{2066} a\rb\x08 \x7f\u{200B}\u{2028}";
    let evs = [
        Event::SessionStarted {
            env: Envelope { session_id: Some(hostile.into()), ..Envelope::default() },
            model: Some(hostile.into()),
            cwd: Some(hostile.into()),
            cli_version: None,
            permission_mode: None,
            tools: None,
            parent_session_id: None,
        },
        Event::UserMessage { env: Envelope::default(), text: Text::from(hostile) },
        delta(1, &format!("# {hostile}\n\n*{hostile}* [{hostile}]({hostile})\n\n```\n{hostile}\n```\n")),
        Event::Reasoning { env: Envelope::default(), text: Some(hostile.into()) },
        started(2, hostile, ToolKind::Shell, hostile, None),
        completed(3, hostile, false, &format!("{hostile}\n{hostile}"), None),
        Event::Diagnostic {
            env: Envelope::default(),
            level: Level::Warning,
            code: hostile.into(),
            message: hostile.into(),
            dedupe_key: String::new(),
            count: 2,
            plugins: Vec::new(),
            raw: hostile.into(),
            subsystem: None,
            first_line: None,
            last_line: None,
        },
        Event::TurnFailed {
            env: Envelope::default(),
            error: hostile.into(),
            kind: None,
            usage: None,
            usage_scope: None,
            cost_scope: None,
            cost_usd: None,
            model_usage: None,
            duration_ms: None,
        },
    ];
    let blocks = render_all(&evs);
    assert!(blocks.len() >= 7);
    for b in &blocks {
        for s in b.lines.iter().flat_map(|l| l.prefix.iter().chain(&l.spans)) {
            assert!(!s.text.chars().any(crate::sink::safe::is_unsafe), "{s:?}");
            assert!(!s.url.as_deref().unwrap_or("").chars().any(crate::sink::safe::is_unsafe), "{s:?}");
        }
        if let Some(out) = b.tool.as_ref().and_then(|t| t.output.as_ref()) {
            assert!(out.lines.iter().all(|l| !l.chars().any(crate::sink::safe::is_unsafe)));
        }
    }
    // The colour layout writes no escape but its own SGR codes.
    let text = layout(&blocks, 60, true);
    let without_sgr = strip_sgr(&text);
    assert!(!without_sgr.chars().any(|c| c != '\n' && crate::sink::safe::is_unsafe(c)), "{without_sgr:?}");
    assert!(text.contains("\\u{1b}[31mred"), "the payload is visible as text");
}

/// `s` without the SGR sequences `ESC [ digits;… m`.
fn strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        let end = tail.find(|c: char| !(c.is_ascii_digit() || c == ';')).unwrap_or(tail.len());
        assert_eq!(tail.as_bytes().get(end), Some(&b'm'), "only SGR sequences: {:?}", &rest[i..]);
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn prose_wraps_between_words_under_its_prefix_and_headlines_are_clipped() {
    let blocks = render_all(&[delta(1, "- alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu\n")]);
    let text = layout(&blocks, 30, false);
    assert_eq!(text, "• alpha beta gamma delta\n  epsilon zeta eta theta iota\n  kappa lambda mu\n");
    let long = "x".repeat(80);
    let blocks = render_all(&[started(1, "t", ToolKind::Shell, &long, None), completed(2, "t", true, "", None)]);
    let text = layout(&blocks, 30, false);
    assert_eq!(text.lines().count(), 1);
    assert!(text.trim_end().ends_with('…'));
    assert_eq!(text.trim_end().chars().count(), 30);
    // Wide characters count double.
    let blocks = render_all(&[delta(1, "漢字漢字漢字 漢字漢字漢字 漢字漢字漢字\n")]);
    assert_eq!(layout(&blocks, 26, false), "漢字漢字漢字 漢字漢字漢字\n漢字漢字漢字\n");
}

#[test]
fn colour_is_sgr_around_spans_and_off_without_colour() {
    let blocks = render_all(&[started(1, "t", ToolKind::Shell, "ls", None), completed(2, "t", false, "boom", None)]);
    let colour = layout(&blocks, 80, true);
    assert!(colour.starts_with("\x1b[31m✗\x1b[0m"), "{colour:?}");
    assert_eq!(strip_sgr(&colour), layout(&blocks, 80, false));
    assert!(!layout(&blocks, 80, false).contains('\x1b'));
}

#[test]
fn color_mode_follows_the_terminal_and_no_color() {
    assert!(ColorMode::Auto.resolve(true, None));
    assert!(ColorMode::Auto.resolve(true, Some("")));
    assert!(!ColorMode::Auto.resolve(true, Some("1")));
    assert!(!ColorMode::Auto.resolve(false, None));
    assert!(ColorMode::Always.resolve(false, Some("1")));
    assert!(!ColorMode::Never.resolve(true, None));
}

#[test]
fn figures_read_as_people_write_them() {
    assert_eq!(format_duration(85), "85ms");
    assert_eq!(format_duration(1_250), "1.2s");
    assert_eq!(format_duration(125_000), "2m05s");
    assert_eq!(format_duration(3_720_000), "1h02m");
    assert_eq!(format_tokens(402), "402");
    assert_eq!(format_tokens(23_833), "23.8k");
    assert_eq!(format_tokens(999_999), "1.00M");
    assert_eq!(clean_lines("\n\nA\tb\r\nc\rd\n\n"), ["A    b", "c\\u{d}d"]);
}

#[test]
fn memory_stays_bounded_when_calls_never_end() {
    let mut r = Renderer::new(RenderOptions::default());
    let mut out = Vec::new();
    for i in 0..1000 {
        r.push(&started(i, &format!("t{i}"), ToolKind::Shell, "x", None), &mut out);
    }
    assert!(out.len() >= 1000 - HOLD, "calls are shown running once too many wait: {}", out.len());
    assert!(r.held.len() <= HOLD);
    r.finish(&mut out);
    assert_eq!(out.len(), 1000);
    assert!(out.iter().all(|b| b.tool.as_ref().is_some_and(|t| t.outcome == Outcome::Running)));
}

#[test]
fn a_message_that_never_ends_is_shown_paragraph_by_paragraph() {
    let mut r = Renderer::new(RenderOptions::default());
    let mut out = Vec::new();
    let paragraph = format!("{}\n\n", "word ".repeat(2000));
    for _ in 0..300 {
        r.push(&delta(1, &paragraph), &mut out);
    }
    assert!(!out.is_empty(), "paragraphs are shown once the text is large");
    assert!(r.text.text.len() <= TEXT_HOLD + paragraph.len());
    // Without any paragraph break, all of it.
    let mut r = Renderer::new(RenderOptions::default());
    let mut out = Vec::new();
    for _ in 0..500 {
        r.push(&delta(1, &"x".repeat(10_000)), &mut out);
    }
    assert!(r.text.text.len() <= 4 * TEXT_HOLD + 10_000);
    assert!(!out.is_empty());
}

#[test]
fn on_a_live_terminal_a_running_row_is_replaced_by_its_result() {
    let run = |rewrite: bool, between: bool| {
        let mut sink = PrettySink::new(Terminal { width: 80, color: false }).rewrite_running(rewrite);
        sink.event(&started(1, "t", ToolKind::Shell, "sleep 1", None));
        sink.flush();
        if between {
            sink.event(&Event::Interrupt { env: Envelope::default(), reason: "x".into() });
        }
        sink.event(&completed(2, "t", true, "", None));
        String::from_utf8(sink.buf).unwrap()
    };
    assert_eq!(run(true, false), "… Run  sleep 1 · running\n\x1b[1A\r\x1b[2K✓ Run  sleep 1\n");
    assert_eq!(run(false, false), "… Run  sleep 1 · running\n✓ Run  sleep 1\n");
    // A row written in between is never erased.
    assert!(!run(true, true).contains('\x1b'));
}
