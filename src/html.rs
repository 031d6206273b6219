//! `--format html`: sessions as self-contained, shareable HTML pages.
//!
//! People read and share agent sessions; a page that opens anywhere without a server is the
//! easiest way. [`HtmlSink`] is an ordinary [`Sink`]: it keeps what each session needs for its
//! page (the transcript items and a usage [`Collector`]) and, at the end of input,
//! [`HtmlSink::finish`] gives a [`Transcript`] that writes one page with a section per session, or
//! one page per session ([`Transcript::pages`]).
//!
//! The page carries its CSS inline and nothing else: no external asset, no script at all, and a
//! `Content-Security-Policy` that forbids scripts, so that even a bug in the escaping could not
//! run code. Every piece of agent- or tool-controlled text goes through [`escape`]: the HTML
//! metacharacters become entities, and the characters [`crate::safe::is_unsafe`] names (controls,
//! bidi overrides, invisible characters) become visible escapes, so a `<script>` in a tool's
//! output stays text and a bidi override cannot reorder what is shown. Anchors and file names
//! made from agent ids are reduced to a safe alphabet ([`anchor`], [`file_stem`]).
//!
//! A section starts at each input's `run_started` and at each `session_started` after the input's
//! first session id. A tool call is a collapsible `<details>` whose summary shows its outcome and duration;
//! its result sits inside it when it came right after the call, else where it came in the
//! transcript, the two linked both ways by anchors made from the tool id.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::event::{Dialect, Envelope, Event, Level, PlanItem, PlanStatus, ToolKind, UnknownReason, Usage};
use crate::report::{Collector, CostSource, GroupBy, Report, ReportOptions, Row};
use crate::safe;
use crate::sink::Sink;

/// Tool output longer than this many bytes is cut in the page (the rest is counted, not shown).
pub const MAX_OUTPUT_BYTES: usize = 64 << 10;

/// The page's `Content-Security-Policy`: nothing may load or run; only the inline style applies.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'; \
                       object-src 'none'; base-uri 'none'; form-action 'none'";

/// `s` as HTML text or attribute value: `& < > " '` as entities, every character that could
/// control or disguise the display ([`safe::is_unsafe`]) as a visible escape (`\u{1b}`), except
/// the line feed and the tab, which stay (a `\r` before a line feed is dropped).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    escape_into(&mut out, s);
    out
}

fn escape_into(out: &mut String, s: &str) {
    let s = if s.contains("\r\n") { std::borrow::Cow::Owned(s.replace("\r\n", "\n")) } else { s.into() };
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, part) in line.split('\t').enumerate() {
            if j > 0 {
                out.push('\t');
            }
            for c in safe::printable(part).chars() {
                match c {
                    '&' => out.push_str("&amp;"),
                    '<' => out.push_str("&lt;"),
                    '>' => out.push_str("&gt;"),
                    '"' => out.push_str("&quot;"),
                    '\'' => out.push_str("&#39;"),
                    c => out.push(c),
                }
            }
        }
    }
}

/// An HTML id fragment for an agent-controlled id: ASCII letters, digits and `-` kept, every
/// other byte written as `_xx` (hex), so that distinct ids stay distinct and nothing else can
/// reach the attribute.
pub fn anchor(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(b as char);
        } else {
            let _ = write!(out, "_{b:02x}");
        }
    }
    out
}

/// A file name stem for an agent-controlled session id: ASCII letters, digits, `.`, `_` and `-`
/// kept, anything else `_`, no leading dot, at most 100 bytes; `None` when nothing is left. It
/// never holds a path separator, so `--output-dir` cannot be escaped from.
pub fn file_stem(id: &str) -> Option<String> {
    let mut s: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    s = s.trim_start_matches('.').to_owned();
    s.truncate(100);
    (!s.is_empty() && s.chars().any(|c| c.is_ascii_alphanumeric())).then_some(s)
}

/// One thing shown in a section, in transcript order.
#[derive(Debug)]
enum Item {
    User(String),
    Text(String),
    Reasoning(String),
    Call(Call),
    Result(ToolResult),
    Plan(Vec<PlanItem>),
    Turn(TurnEnd),
    Note(Note),
}

#[derive(Debug)]
struct Call {
    anchor: String,
    tool_id: String,
    name: String,
    kind: ToolKind,
    summary: Option<String>,
    input: Option<String>,
    synthetic: bool,
    /// The index of its result among the section's items.
    result: Option<usize>,
    /// Its result is shown inside it.
    inline: bool,
}

#[derive(Debug)]
struct ToolResult {
    anchor: String,
    name: Option<String>,
    ok: bool,
    output: Option<String>,
    exit_code: Option<i64>,
    error: Option<String>,
    duration_ms: Option<u64>,
    /// The index of its call among the section's items.
    call: Option<usize>,
    /// Shown inside its call.
    inline: bool,
}

#[derive(Debug)]
struct TurnEnd {
    error: Option<String>,
    usage: Option<Usage>,
    cost_usd: Option<f64>,
    duration_ms: Option<u64>,
    num_turns: Option<u64>,
}

#[derive(Debug)]
struct Note {
    class: &'static str,
    title: String,
    text: Option<String>,
    /// Shown collapsed (long or raw text).
    fold: bool,
}

/// What a section knows of its session.
#[derive(Debug, Default)]
struct Section {
    source: Option<String>,
    session_id: Option<String>,
    dialect: Option<Dialect>,
    model: Option<String>,
    cwd: Option<String>,
    cli_version: Option<String>,
    parent_session_id: Option<String>,
    first_at: Option<String>,
    last_at: Option<String>,
    items: Vec<Item>,
    /// Per item: `Some` (the parent tool id, or empty for a transcript sidechain) when a
    /// subagent's.
    subs: Vec<Option<String>>,
    /// The subagent of the event being taken.
    sub: Option<String>,
    collector: Collector,
    /// Open calls by tool id: their item index.
    open_calls: HashMap<String, usize>,
    /// Anchors given out, to keep a repeated tool id's anchors apart.
    anchors: HashMap<String, u32>,
    run: Option<(u64, u64, bool)>,
}

impl Section {
    fn new(source: Option<String>) -> Section {
        Section { collector: Collector::new(source.clone()), source, ..Section::default() }
    }

    fn fresh_anchor(&mut self, tool_id: &str) -> String {
        let base = anchor(tool_id);
        let n = self.anchors.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 { base } else { format!("{base}-{n}") }
    }

    fn push(&mut self, item: Item) {
        self.items.push(item);
        self.subs.push(self.sub.clone());
    }

    fn push_text(&mut self, text: &str, reasoning: bool) {
        let same = self.subs.last() == Some(&self.sub);
        match self.items.last_mut() {
            Some(Item::Text(t)) if !reasoning && same => t.push_str(text),
            Some(Item::Reasoning(t)) if reasoning && same => t.push_str(text),
            _ if reasoning => self.push(Item::Reasoning(text.to_owned())),
            _ => self.push(Item::Text(text.to_owned())),
        }
    }

    fn note(&mut self, class: &'static str, title: String, text: Option<String>, fold: bool) {
        self.push(Item::Note(Note { class, title, text, fold }));
    }

    fn is_blank(&self) -> bool {
        self.items.is_empty() && self.session_id.is_none()
    }
}

/// A [`Sink`] that collects sessions for HTML pages; [`HtmlSink::finish`] it at the end of input.
#[derive(Debug, Default)]
pub struct HtmlSink {
    sections: Vec<Section>,
}

impl HtmlSink {
    /// An empty collector.
    pub fn new() -> HtmlSink {
        HtmlSink::default()
    }

    fn current(&mut self, env: &Envelope) -> &mut Section {
        if self.sections.is_empty() {
            self.sections.push(Section::new(env.source.clone()));
        }
        self.sections.last_mut().expect("a section")
    }

    /// The collected sessions, their usage folded.
    pub fn finish(self) -> Transcript {
        let sections = self
            .sections
            .into_iter()
            .filter(|s| !s.is_blank() || s.run.is_some_and(|(lines, _, _)| lines > 0))
            .map(|s| {
                let mut report = Report::default();
                report.add(s.collector.finish());
                let (rows, totals) = report.rows(&ReportOptions { by: GroupBy::Model, ..ReportOptions::default() });
                Finished {
                    source: s.source,
                    session_id: s.session_id,
                    dialect: s.dialect,
                    model: s.model,
                    cwd: s.cwd,
                    cli_version: s.cli_version,
                    parent_session_id: s.parent_session_id,
                    first_at: s.first_at,
                    last_at: s.last_at,
                    items: s.items,
                    subs: s.subs,
                    rows,
                    totals,
                    run: s.run,
                }
            })
            .collect();
        Transcript { sections }
    }
}

impl Sink for HtmlSink {
    fn event(&mut self, ev: &Event) {
        let env = ev.env();
        match ev {
            Event::RunStarted { .. } => {
                self.sections.push(Section::new(env.source.clone()));
                return;
            }
            Event::SessionStarted { .. } => {
                // Events before the first session of an input (CLI banners) belong to it.
                let cur = self.current(env);
                if cur.session_id.is_some() {
                    let source = cur.source.clone();
                    self.sections.push(Section::new(source));
                }
            }
            _ => {}
        }
        let s = self.current(env);
        s.collector.event(ev);
        s.sub = env.parent_tool_id.clone().or_else(|| (env.sidechain == Some(true)).then(String::new));
        if s.session_id.is_none() {
            s.session_id.clone_from(&env.session_id);
        }
        if s.dialect.is_none() {
            s.dialect = env.dialect;
        }
        if let Some(at) = &env.at {
            if s.first_at.is_none() {
                s.first_at = Some(at.clone());
            }
            s.last_at = Some(at.clone());
        }
        let line = env.line.map(|l| format!(" (line {l})")).unwrap_or_default();
        match ev {
            Event::RunStarted { .. } | Event::TurnStarted { .. } | Event::Heartbeat { .. } | Event::Usage { .. } => {}
            Event::SessionStarted { model, cwd, cli_version, parent_session_id, .. } => {
                s.model.clone_from(model);
                s.cwd.clone_from(cwd);
                s.cli_version.clone_from(cli_version);
                s.parent_session_id.clone_from(parent_session_id);
            }
            Event::UserMessage { text, .. } => s.push(Item::User(text.as_str().into_owned())),
            Event::OutputDelta { text, .. } => s.push_text(&text.as_str(), false),
            Event::Reasoning { text: Some(text), .. } => s.push_text(&text.as_str(), true),
            Event::Reasoning { text: None, .. } => {}
            Event::ToolStarted { tool_id, name, kind, input, summary, synthetic, .. } => {
                let anchor = s.fresh_anchor(tool_id);
                let input = input
                    .as_ref()
                    .map(|j| serde_json::to_string_pretty(&j.value()).unwrap_or_else(|_| j.get().to_owned()));
                s.open_calls.insert(tool_id.clone(), s.items.len());
                s.push(Item::Call(Call {
                    anchor,
                    tool_id: tool_id.clone(),
                    name: name.clone(),
                    kind: *kind,
                    summary: summary.clone(),
                    input,
                    synthetic: *synthetic == Some(true),
                    result: None,
                    inline: false,
                }));
            }
            Event::ToolCompleted { tool_id, name, ok, output, exit_code, error, duration_ms, .. } => {
                let call = s.open_calls.remove(tool_id);
                let anchor = match call.and_then(|i| s.items.get(i)) {
                    Some(Item::Call(c)) => c.anchor.clone(),
                    _ => s.fresh_anchor(tool_id),
                };
                let at = s.items.len();
                // Shown inside its call when only plans and notes came in between.
                let inline =
                    call.is_some_and(|c| s.items[c + 1..].iter().all(|i| matches!(i, Item::Plan(_) | Item::Note(_))));
                if let Some(Item::Call(c)) = call.and_then(|i| s.items.get_mut(i)) {
                    c.result = Some(at);
                    c.inline = inline;
                }
                s.push(Item::Result(ToolResult {
                    anchor,
                    name: name.clone(),
                    ok: *ok,
                    output: output.as_ref().map(|t| t.as_str().into_owned()),
                    exit_code: *exit_code,
                    error: error.clone(),
                    duration_ms: *duration_ms,
                    call,
                    inline,
                }));
            }
            Event::PlanUpdated { items, .. } => s.push(Item::Plan(items.clone())),
            Event::Subagent { child_id, operation, status, description, message, .. } => {
                let title = format!("Subagent {child_id}: {operation:?} · {status:?}").to_lowercase();
                let text = [description.as_deref(), message.as_deref()].into_iter().flatten().collect::<Vec<_>>();
                s.note("info", title, (!text.is_empty()).then(|| text.join("\n")), false);
            }
            Event::TurnCompleted { usage, cost_usd, duration_ms, num_turns, .. } => s.push(Item::Turn(TurnEnd {
                error: None,
                usage: *usage,
                cost_usd: *cost_usd,
                duration_ms: *duration_ms,
                num_turns: *num_turns,
            })),
            Event::TurnFailed { error, usage, cost_usd, duration_ms, .. } => s.push(Item::Turn(TurnEnd {
                error: Some(error.clone()),
                usage: *usage,
                cost_usd: *cost_usd,
                duration_ms: *duration_ms,
                num_turns: None,
            })),
            Event::RateLimit { window, status, used_percent, resets_at, .. } => {
                let mut t = format!("Rate limit {window}");
                if let Some(st) = status {
                    let _ = write!(t, ": {st}");
                }
                if let Some(p) = used_percent {
                    let _ = write!(t, ", {p}% used");
                }
                if let Some(r) = resets_at {
                    let _ = write!(t, ", resets {r}");
                }
                let class = if status.as_deref().is_some_and(|st| st != "allowed") { "warning" } else { "info" };
                s.note(class, t, None, false);
            }
            Event::Compacted { trigger, pre_tokens, post_tokens, .. } => {
                let mut t = "Conversation compacted".to_owned();
                if let Some(tr) = trigger {
                    let _ = write!(t, " ({tr})");
                }
                if let Some(p) = pre_tokens {
                    let _ = write!(t, ": {} tokens", crate::report::thousands(*p));
                    if let Some(q) = post_tokens {
                        let _ = write!(t, " → {}", crate::report::thousands(*q));
                    }
                }
                s.note("info", t, None, false);
            }
            Event::NeedsInput { prompt, questions, .. } => {
                let text = prompt.clone().or_else(|| {
                    questions.as_ref().map(|q| serde_json::to_string_pretty(&q.value()).unwrap_or_default())
                });
                s.note("warning", "Waiting for input".to_owned(), text, false);
            }
            Event::Interrupt { reason, .. } => s.note("warning", format!("Interrupted: {reason}"), None, false),
            Event::Diagnostic { level, code, message, count, .. } => {
                let class = match level {
                    Level::Info => "info",
                    Level::Warning => "warning",
                    Level::Error => "error",
                };
                let times = if *count > 1 { format!(" ×{count}") } else { String::new() };
                s.note(class, format!("{code}{times}{line}"), Some(message.clone()), false);
            }
            Event::Unknown { reason, sample, .. } => {
                let why = match reason {
                    UnknownReason::NotJson => "not JSON",
                    UnknownReason::InvalidJson => "invalid JSON",
                    UnknownReason::NotObject => "not an object",
                    UnknownReason::UnrecognizedFrame => "unrecognised frame",
                    UnknownReason::MalformedFrame => "malformed frame",
                    UnknownReason::LineTooLong => "line too long",
                };
                s.note("unknown", format!("Not understood{line}: {why}"), Some(sample.clone()), true);
            }
            Event::RunEnded { lines, unknown, complete, .. } => s.run = Some((*lines, *unknown, *complete)),
        }
    }
}

/// One finished section.
#[derive(Debug)]
struct Finished {
    source: Option<String>,
    session_id: Option<String>,
    dialect: Option<Dialect>,
    model: Option<String>,
    cwd: Option<String>,
    cli_version: Option<String>,
    parent_session_id: Option<String>,
    first_at: Option<String>,
    last_at: Option<String>,
    items: Vec<Item>,
    subs: Vec<Option<String>>,
    rows: Vec<Row>,
    totals: Row,
    run: Option<(u64, u64, bool)>,
}

/// The sessions read, ready to be written as HTML.
#[derive(Debug)]
pub struct Transcript {
    sections: Vec<Finished>,
}

/// One page of `--output-dir`: its file name and the sections it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// `<stem>.html`, the stem from [`file_stem`] of the session id (else of the input's file
    /// name, else `session-N`), made unique with `-2`, `-3`, …
    pub file_name: String,
    /// Indices of the sections on the page, in order.
    pub sections: Vec<usize>,
}

impl Transcript {
    /// How many sections (sessions) there are.
    pub fn len(&self) -> usize {
        self.sections.len()
    }

    /// True when nothing was read.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// One page per session: the sections of one session id together (a resumed session read
    /// from several inputs), each other section alone.
    pub fn pages(&self) -> Vec<Page> {
        let mut pages: Vec<Page> = Vec::new();
        let mut by_session: HashMap<&str, usize> = HashMap::new();
        let mut taken: HashMap<String, u32> = HashMap::new();
        for (i, s) in self.sections.iter().enumerate() {
            if let Some(id) = s.session_id.as_deref() {
                if let Some(&p) = by_session.get(id) {
                    pages[p].sections.push(i);
                    continue;
                }
                by_session.insert(id, pages.len());
            }
            let stem = s
                .session_id
                .as_deref()
                .and_then(file_stem)
                .or_else(|| {
                    s.source.as_deref().and_then(|src| {
                        let name = src.rsplit('/').next().unwrap_or(src);
                        file_stem(name.split('.').next().unwrap_or(name))
                    })
                })
                .unwrap_or_else(|| format!("session-{}", i + 1));
            let n = taken.entry(stem.to_ascii_lowercase()).or_insert(0);
            *n += 1;
            let file_name = if *n == 1 { format!("{stem}.html") } else { format!("{stem}-{n}.html") };
            pages.push(Page { file_name, sections: vec![i] });
        }
        pages
    }

    /// Writes one page holding every section.
    pub fn write_all(&self, w: &mut impl Write) -> io::Result<()> {
        let all: Vec<usize> = (0..self.sections.len()).collect();
        self.write_page(w, &all)
    }

    /// Writes one page holding the given sections (indices as in [`Page::sections`]).
    pub fn write_page(&self, w: &mut impl Write, sections: &[usize]) -> io::Result<()> {
        let chosen: Vec<(usize, &Finished)> =
            sections.iter().filter_map(|&i| self.sections.get(i).map(|s| (i, s))).collect();
        let title = match chosen.first() {
            None => "agentnorm: no session".to_owned(),
            Some((_, s)) if chosen.iter().all(|(_, o)| o.session_id == s.session_id) => {
                format!("agentnorm · {}", s.session_id.as_deref().or(s.source.as_deref()).unwrap_or("session"))
            }
            Some(_) => format!("agentnorm · {} sessions", chosen.len()),
        };
        let mut h = String::with_capacity(64 << 10);
        h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        let _ = writeln!(h, "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">");
        h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        h.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
        let _ = writeln!(h, "<title>{}</title>", escape(&title));
        let _ = writeln!(h, "<style>{CSS}</style>\n</head>\n<body>\n<main>");
        let _ = writeln!(
            h,
            "<header class=\"page\"><h1>{}</h1><p class=\"muted\">Rendered by agentnorm {}</p>",
            escape(&title),
            env!("CARGO_PKG_VERSION")
        );
        if chosen.len() > 1 {
            h.push_str("<nav class=\"toc\"><ol>");
            for (i, s) in &chosen {
                let _ = write!(
                    h,
                    "<li><a href=\"#s{i}\">{}</a> <span class=\"muted\">{}</span></li>",
                    escape(s.session_id.as_deref().unwrap_or("(no session id)")),
                    escape(s.source.as_deref().unwrap_or("stdin"))
                );
            }
            h.push_str("</ol></nav>\n");
        }
        h.push_str("</header>\n");
        for (i, s) in chosen {
            write_section(&mut h, i, s);
        }
        h.push_str("</main>\n</body>\n</html>\n");
        w.write_all(h.as_bytes())
    }
}

fn write_section(h: &mut String, idx: usize, s: &Finished) {
    let _ = writeln!(h, "<section class=\"session\" id=\"s{idx}\">");
    let _ = write!(h, "<h2>{}", escape(s.session_id.as_deref().unwrap_or("(no session id)")));
    if let Some(d) = s.dialect {
        let _ = write!(h, " <span class=\"dialect\">{}</span>", d.as_str());
    }
    h.push_str("</h2>\n<dl class=\"meta\">");
    let meta = [
        ("model", s.model.as_deref()),
        ("directory", s.cwd.as_deref()),
        ("CLI version", s.cli_version.as_deref()),
        ("parent session", s.parent_session_id.as_deref()),
        ("source", s.source.as_deref()),
        ("started", s.first_at.as_deref()),
        ("last event", s.last_at.as_deref()),
    ];
    for (k, v) in meta {
        if let Some(v) = v {
            let _ = write!(h, "<dt>{k}</dt><dd>{}</dd>", escape(v));
        }
    }
    h.push_str("</dl>\n");
    write_usage(h, s);
    h.push_str("<div class=\"transcript\">\n");
    let mut open: Option<&Option<String>> = None;
    for (item, sub) in s.items.iter().zip(&s.subs) {
        if open.is_some_and(|o| o != sub) {
            h.push_str("</div>\n");
            open = None;
        }
        if let (None, Some(parent)) = (open, sub) {
            h.push_str("<div class=\"subagent\"><div class=\"who\">Subagent");
            let call = s.items.iter().find_map(|i| match i {
                Item::Call(c) if &c.tool_id == parent => Some(c.anchor.as_str()),
                _ => None,
            });
            if let Some(a) = call {
                let _ = write!(h, " of <a href=\"#call-{idx}-{a}\">its task</a>");
            }
            h.push_str("</div>\n");
            open = Some(sub);
        }
        write_item(h, idx, s, item);
    }
    if open.is_some() {
        h.push_str("</div>\n");
    }
    h.push_str("</div>\n");
    if let Some((lines, unknown, complete)) = s.run {
        let _ = writeln!(
            h,
            "<footer class=\"run\">{} lines read, {} not understood{}</footer>",
            crate::report::thousands(lines),
            crate::report::thousands(unknown),
            if complete { "" } else { "; the input ended mid-line or with a turn open" }
        );
    }
    h.push_str("</section>\n");
}

fn num(n: Option<u64>) -> String {
    n.map_or_else(|| "–".to_owned(), crate::report::thousands)
}

fn cost(c: Option<f64>, source: Option<CostSource>) -> String {
    match (c, source) {
        (Some(c), Some(CostSource::Estimated)) => format!("≈ ${c:.4}"),
        (Some(c), _) => format!("${c:.4}"),
        _ => "–".to_owned(),
    }
}

fn write_usage(h: &mut String, s: &Finished) {
    if s.totals.total.is_none() && s.totals.cost_usd.is_none() {
        return;
    }
    h.push_str(
        "<table class=\"usage\"><caption>Token usage</caption><thead><tr><th>model</th><th>requests</th>\
         <th>input</th><th>cache read</th><th>cache write</th><th>output</th><th>total</th><th>cost</th></tr>\
         </thead><tbody>",
    );
    let row = |h: &mut String, label: &str, r: &Row, class: &str| {
        let _ = write!(
            h,
            "<tr class=\"{class}\"><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(label),
            num(r.requests),
            num(r.usage.input),
            num(r.usage.cache_read),
            num(r.usage.cache_write),
            num(r.usage.output),
            num(r.total),
            cost(r.cost_usd, r.cost_source),
        );
    };
    for r in &s.rows {
        row(h, r.model.as_deref().unwrap_or("(model not reported)"), r, "");
    }
    if s.rows.len() > 1 {
        row(h, "all", &s.totals, "totals");
    }
    h.push_str("</tbody></table>\n");
}

fn kind_label(k: ToolKind) -> &'static str {
    match k {
        ToolKind::Shell => "run",
        ToolKind::Read => "read",
        ToolKind::Write => "write",
        ToolKind::Edit => "edit",
        ToolKind::Search => "search",
        ToolKind::Fetch => "fetch",
        ToolKind::WebSearch => "web",
        ToolKind::Mcp => "mcp",
        ToolKind::Task => "task",
        ToolKind::Plan => "plan",
        ToolKind::Ask => "ask",
        ToolKind::Other => "tool",
    }
}

/// A duration as people read it: `850 ms`, `4.2 s`, `3 min 05 s`.
pub fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

fn pre(h: &mut String, class: &str, text: &str) {
    let (shown, rest) = if text.len() > MAX_OUTPUT_BYTES {
        let mut cut = MAX_OUTPUT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        (&text[..cut], text.len() - cut)
    } else {
        (text, 0)
    };
    let _ = write!(h, "<pre class=\"{class}\">{}</pre>", escape(shown));
    if rest > 0 {
        let _ = write!(h, "<p class=\"muted\">… {} more bytes not shown</p>", crate::report::thousands(rest as u64));
    }
}

fn outcome_mark(h: &mut String, r: &ToolResult) {
    let (class, mark) = if r.ok { ("ok", "✓") } else { ("fail", "✗") };
    let _ = write!(h, "<span class=\"mark {class}\">{mark}</span>");
    if let Some(ms) = r.duration_ms {
        let _ = write!(h, "<span class=\"dur\">{}</span>", duration(ms));
    }
}

fn result_body(h: &mut String, r: &ToolResult) {
    let mut facts = Vec::new();
    if let Some(c) = r.exit_code {
        facts.push(format!("exit code {c}"));
    }
    if let Some(ms) = r.duration_ms {
        facts.push(duration(ms));
    }
    if !facts.is_empty() {
        let _ = write!(h, "<p class=\"facts\">{}</p>", escape(&facts.join(" · ")));
    }
    if let Some(e) = &r.error {
        let _ = write!(h, "<p class=\"error\">{}</p>", escape(e));
    }
    match &r.output {
        Some(o) if !o.is_empty() => pre(h, "output", o),
        _ => h.push_str("<p class=\"muted\">(no output)</p>"),
    }
}

fn write_item(h: &mut String, sec: usize, s: &Finished, item: &Item) {
    match item {
        Item::User(t) => {
            let _ = writeln!(h, "<div class=\"msg user\"><div class=\"who\">User</div>{}</div>", prose(t));
        }
        Item::Text(t) => {
            let _ = writeln!(h, "<div class=\"msg assistant\">{}</div>", prose(t));
        }
        Item::Reasoning(t) => {
            let _ = writeln!(h, "<details class=\"reasoning\"><summary>Thinking</summary>{}</details>", prose(t));
        }
        Item::Call(c) => {
            let result = c.result.and_then(|r| match s.items.get(r) {
                Some(Item::Result(r)) => Some(r),
                _ => None,
            });
            let _ = write!(
                h,
                "<details class=\"call kind-{}\" id=\"call-{sec}-{}\"><summary><span class=\"badge\">{}</span> \
                 <span class=\"name\">{}</span>",
                kind_label(c.kind),
                c.anchor,
                kind_label(c.kind),
                escape(&c.name)
            );
            if let Some(sum) = c.summary.as_deref().filter(|x| *x != c.name) {
                let one_line = sum.lines().next().unwrap_or("");
                let _ = write!(h, " <span class=\"summary\">{}</span>", escape(one_line));
            }
            match result {
                Some(r) => outcome_mark(h, r),
                None => h.push_str("<span class=\"mark pending\">no result</span>"),
            }
            h.push_str("</summary><div class=\"body\">");
            if c.synthetic {
                h.push_str("<p class=\"muted\">The start of this call was not in the input.</p>");
            }
            let _ = write!(h, "<p class=\"facts\">tool id <code>{}</code></p>", escape(&c.tool_id));
            if let Some(input) = &c.input {
                pre(h, "input", input);
            }
            match result {
                Some(r) if c.inline => {
                    let _ = write!(h, "<div class=\"result\" id=\"result-{sec}-{}\">", c.anchor);
                    result_body(h, r);
                    h.push_str("</div>");
                }
                Some(_) => {
                    let _ = write!(h, "<p><a href=\"#result-{sec}-{}\">↓ result</a></p>", c.anchor);
                }
                None => {}
            }
            h.push_str("</div></details>\n");
        }
        Item::Result(r) => {
            if r.inline {
                return; // shown inside its call
            }
            let _ = write!(h, "<details class=\"call result-alone\" id=\"result-{sec}-{}\"><summary>", r.anchor);
            let _ = write!(
                h,
                "<span class=\"badge\">result</span> <span class=\"name\">{}</span>",
                escape(r.name.as_deref().unwrap_or("tool"))
            );
            outcome_mark(h, r);
            h.push_str("</summary><div class=\"body\">");
            if r.call.is_some() {
                let _ = write!(h, "<p><a href=\"#call-{sec}-{}\">↑ call</a></p>", r.anchor);
            }
            result_body(h, r);
            h.push_str("</div></details>\n");
        }
        Item::Plan(items) => {
            h.push_str("<div class=\"plan\"><div class=\"who\">Plan</div><ul>");
            for it in items {
                let class = match it.status {
                    PlanStatus::Pending => "pending",
                    PlanStatus::InProgress => "in-progress",
                    PlanStatus::Completed => "completed",
                };
                let _ = write!(h, "<li class=\"{class}\"><span class=\"box\"></span>{}</li>", escape(&it.text));
            }
            h.push_str("</ul></div>\n");
        }
        Item::Turn(t) => {
            let mut facts = Vec::new();
            if let Some(ms) = t.duration_ms {
                facts.push(duration(ms));
            }
            if let Some(n) = t.num_turns {
                facts.push(format!("{n} model turn{}", if n == 1 { "" } else { "s" }));
            }
            if let Some(u) = t.usage {
                let tokens = [u.input, u.cache_read, u.cache_write, u.output].iter().flatten().sum::<u64>();
                facts.push(format!("{} tokens", crate::report::thousands(tokens)));
            }
            if let Some(c) = t.cost_usd {
                facts.push(format!("${c:.4}"));
            }
            let (class, head) = match &t.error {
                None => ("turn ok", "Turn completed".to_owned()),
                Some(e) => ("turn fail", format!("Turn failed: {e}")),
            };
            let _ = writeln!(
                h,
                "<div class=\"{class}\"><span>{}</span> <span class=\"facts\">{}</span></div>",
                escape(&head),
                escape(&facts.join(" · "))
            );
        }
        Item::Note(n) => {
            if n.fold {
                let _ = write!(h, "<details class=\"note {}\"><summary>{}</summary>", n.class, escape(&n.title));
                if let Some(t) = &n.text {
                    pre(h, "raw", t);
                }
                h.push_str("</details>\n");
            } else {
                let _ = write!(h, "<div class=\"note {}\"><strong>{}</strong>", n.class, escape(&n.title));
                if let Some(t) = &n.text {
                    let _ = write!(h, "<div class=\"text\">{}</div>", escape(t));
                }
                h.push_str("</div>\n");
            }
        }
    }
}

/// Assistant or user text as HTML.
fn prose(t: &str) -> String {
    format!("<div class=\"prose plain\">{}</div>", escape(t.trim_matches('\n')))
}

const CSS: &str = r#"
:root{--bg:#f5f6f8;--fg:#1f2328;--muted:#656d76;--card:#fff;--line:#d8dee4;--accent:#0969da;--ok:#1a7f37;--fail:#cf222e;--warn:#9a6700;--user:#eef6ff;--code:#f6f8fa;--think:#8250df}
@media (prefers-color-scheme: dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#8d96a0;--card:#161b22;--line:#30363d;--accent:#4493f8;--ok:#3fb950;--fail:#f85149;--warn:#d29922;--user:#15233a;--code:#0d1117;--think:#a371f7}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Liberation Sans",Arial,sans-serif}
main{max-width:980px;margin:0 auto;padding:28px 20px 64px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code,pre,.summary,.name{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace}
.muted{color:var(--muted)}
header.page h1{font-size:20px;margin:0 0 2px;overflow-wrap:anywhere}
header.page p{margin:0 0 18px;font-size:13px}
nav.toc{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 16px;margin-bottom:20px;font-size:14px}
nav.toc ol{margin:0;padding-left:20px}
section.session{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:22px 26px;margin:0 0 28px;box-shadow:0 1px 3px rgba(0,0,0,.04)}
section.session>h2{font-size:17px;margin:0 0 10px;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-weight:600}
.dialect{font-family:system-ui,sans-serif;font-size:12px;font-weight:600;background:var(--accent);color:#fff;border-radius:10px;padding:1px 9px;vertical-align:2px;margin-left:6px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0 0 14px;font-size:13px}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;overflow-wrap:anywhere}
table.usage{border-collapse:collapse;font-size:13px;margin:0 0 18px;width:100%}
table.usage caption{text-align:left;font-weight:600;padding-bottom:4px}
table.usage th,table.usage td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:right;white-space:nowrap}
table.usage th:first-child{text-align:left;overflow-wrap:anywhere;white-space:normal}
table.usage thead th{color:var(--muted);font-weight:500}
table.usage tr.totals th,table.usage tr.totals td{font-weight:600}
.transcript{border-top:1px solid var(--line);padding-top:12px}
.msg{margin:12px 0;overflow-wrap:anywhere}
.msg.user{background:var(--user);border-left:3px solid var(--accent);border-radius:6px;padding:8px 14px}
.who{font-size:11px;font-weight:700;letter-spacing:.06em;text-transform:uppercase;color:var(--muted);margin-bottom:2px}
.prose.plain{white-space:pre-wrap}
.prose p{margin:.4em 0}
.prose pre{background:var(--code);border:1px solid var(--line);border-radius:6px;padding:8px 10px}
.prose code{background:var(--code);border-radius:4px;padding:0 3px;font-size:90%}
.prose pre code{background:none;padding:0}
details.reasoning{margin:8px 0;color:var(--muted);font-size:14px;border-left:3px solid var(--think);padding-left:10px}
details.reasoning>summary{cursor:pointer;color:var(--think);font-size:13px}
details.call{border:1px solid var(--line);border-radius:6px;margin:5px 0;background:var(--code)}
details.call>summary{cursor:pointer;padding:3px 10px;font-size:13px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;list-style-position:inside}
details.call[open]>summary{border-bottom:1px solid var(--line)}
details.call .body{padding:6px 12px 8px;background:var(--card);border-radius:0 0 6px 6px}
.badge{display:inline-block;min-width:60px;text-align:center;border-radius:4px;padding:0 6px;font:600 11px/18px system-ui,sans-serif;text-transform:uppercase;letter-spacing:.04em;background:#6e7781;color:#fff;vertical-align:1px}
.kind-run .badge{background:#1f6feb}.kind-read .badge{background:#2da44e}.kind-write .badge,.kind-edit .badge{background:#bf8700}
.kind-search .badge,.kind-web .badge,.kind-fetch .badge{background:#8250df}.kind-task .badge{background:#cf222e}.kind-plan .badge,.kind-ask .badge{background:#0a7ea4}
.result-alone .badge{background:#57606a}
.name{font-weight:600}.summary{color:var(--muted);margin-left:4px}
.mark{float:right;font-weight:700;margin-left:10px}.mark.ok{color:var(--ok)}.mark.fail{color:var(--fail)}.mark.pending{color:var(--muted);font-weight:400;font-size:12px}
.dur{float:right;color:var(--muted);font-size:12px}
pre{margin:6px 0;padding:8px 10px;background:var(--code);border:1px solid var(--line);border-radius:6px;font-size:12.5px;line-height:1.45;white-space:pre-wrap;overflow-wrap:anywhere;max-height:420px;overflow:auto}
.result{border-top:1px dashed var(--line);margin-top:6px;padding-top:4px}
.facts{color:var(--muted);font-size:12px;margin:2px 0}
p.error{color:var(--fail);margin:4px 0;font-size:13px}
.plan{margin:10px 0;padding:8px 14px;border:1px solid var(--line);border-radius:6px}
.plan ul{list-style:none;margin:0;padding:0}
.plan li{margin:2px 0;display:flex;gap:8px;align-items:baseline}
.plan .box{flex:none;width:12px;height:12px;border:1.5px solid var(--muted);border-radius:3px;position:relative;top:1px}
.plan li.in-progress .box{border-color:var(--accent);background:linear-gradient(90deg,var(--accent) 50%,transparent 50%)}
.plan li.completed{color:var(--muted);text-decoration:line-through}
.plan li.completed .box{border-color:var(--ok);background:var(--ok)}
.turn{margin:14px 0;padding-top:6px;border-top:1px dashed var(--line);font-size:12.5px}
.turn.ok>span:first-child{color:var(--ok);font-weight:600}.turn.fail>span:first-child{color:var(--fail);font-weight:600}
.note{margin:8px 0;padding:6px 12px;border-left:3px solid var(--muted);background:var(--code);border-radius:0 6px 6px 0;font-size:13px;overflow-wrap:anywhere}
.note .text{white-space:pre-wrap}
.note.warning{border-color:var(--warn)}.note.error{border-color:var(--fail)}
details.note>summary{cursor:pointer;color:var(--muted)}
.subagent{margin:8px 0 8px 14px;padding:2px 0 2px 12px;border-left:2px solid var(--line)}
footer.run{margin-top:14px;font-size:12px;color:var(--muted)}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup_and_controls() {
        assert_eq!(
            escape("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
        assert_eq!(escape("a\r\nb\tc\rd\x1b[31m\u{202E}"), "a\nb\tc\\u{d}d\\u{1b}[31m\\u{202e}");
    }

    #[test]
    fn anchors_are_injective_and_attribute_safe() {
        assert_eq!(anchor("toolu_01Ab-9"), "toolu_5f01Ab-9");
        assert_ne!(anchor("a b"), anchor("a_b"));
        assert_eq!(anchor("\"><x>"), "_22_3e_3cx_3e");
    }

    #[test]
    fn file_stems_cannot_leave_the_folder() {
        assert_eq!(file_stem("../../etc/passwd").as_deref(), Some("_.._etc_passwd"));
        assert_eq!(file_stem(".."), None);
        assert_eq!(file_stem("/"), None);
        assert_eq!(file_stem("9d2e4f60-1c2b").as_deref(), Some("9d2e4f60-1c2b"));
        assert_eq!(file_stem(&"a".repeat(300)).map(|s| s.len()), Some(100));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(4200), "4.2 s");
        assert_eq!(duration(185_000), "3 min 05 s");
    }
}
