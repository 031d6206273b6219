//! `--format html`: sessions as self-contained, shareable HTML pages.
//!
//! People read and share agent sessions; a page that opens anywhere without a server is the
//! easiest way. [`HtmlSink`] is an ordinary [`Sink`]: it keeps what each session needs for its
//! page (its render-model blocks and a usage [`Collector`]) and, at the end of input,
//! [`HtmlSink::finish`] gives a [`Transcript`] that writes one page with a section per session, or
//! one page per session ([`Transcript::pages`]). The transcript is the render model's
//! ([`crate::view`]): the page maps its blocks, lines and typed spans to elements and CSS
//! classes, as the terminal view maps them to colours.
//!
//! The page carries its CSS inline and nothing else: no external asset, no script at all, and a
//! `Content-Security-Policy` that forbids scripts, so that even a bug in the escaping could not
//! run code. Every piece of agent- or tool-controlled text goes through [`escape`]: the HTML
//! metacharacters become entities, and the characters [`crate::sink::safe::is_unsafe`] names (controls,
//! bidi overrides, invisible characters) become visible escapes, so a `<script>` in a tool's
//! output stays text and a bidi override cannot reorder what is shown. Anchors and file names
//! made from agent ids are reduced to a safe alphabet ([`anchor`], [`file_stem`]).
//!
//! A section starts at each input's `run_started` and at each `session_started` after the input's
//! first session id. A tool call is a collapsible `<details>` whose summary shows its outcome and
//! duration, its result inside; when the render model showed the call running before its result
//! (other events came in between), the result is a block of its own where it came, the two
//! linked both ways by anchors made from the tool id.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::event::sink::Sink;
use crate::event::{Dialect, Envelope, Event, Level, PlanStatus, ToolKind};
use crate::sink::report::{Collector, CostSource, GroupBy, Report, ReportOptions, Row};
use crate::sink::safe;
use crate::view::{
    Block, BlockKind, Line, Outcome, RenderOptions, Renderer, Span, SpanKind, ToolCall, Wrap, activity_label,
    format_duration,
};

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

/// What a section knows of its session, shown above its transcript.
#[derive(Debug, Default)]
struct Meta {
    source: Option<String>,
    session_id: Option<String>,
    dialect: Option<Dialect>,
    model: Option<String>,
    cwd: Option<String>,
    cli_version: Option<String>,
    parent_session_id: Option<String>,
    first_at: Option<String>,
    last_at: Option<String>,
}

/// What a section knows of its session, and its transcript as render-model blocks.
#[derive(Debug)]
struct Section {
    meta: Meta,
    renderer: Renderer,
    blocks: Vec<Block>,
    collector: Collector,
    run: Option<(u64, u64, bool)>,
}

impl Section {
    fn new(source: Option<String>) -> Section {
        Section {
            collector: Collector::new(source.clone()),
            meta: Meta { source, ..Meta::default() },
            // A page can fold on demand (<details>): prompts and reasoning are kept whole.
            renderer: Renderer::new(RenderOptions { fold_text: usize::MAX, ..RenderOptions::default() }),
            blocks: Vec::new(),
            run: None,
        }
    }

    fn is_blank(&self) -> bool {
        self.meta.session_id.is_none() && self.blocks.iter().all(|b| matches!(b.kind, BlockKind::Source))
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

    /// Starts a new section, the current one's held blocks written out.
    fn start_section(&mut self, source: Option<String>) {
        if let Some(cur) = self.sections.last_mut() {
            cur.renderer.finish(&mut cur.blocks);
        }
        self.sections.push(Section::new(source));
    }

    /// The collected sessions, their usage folded.
    pub fn finish(mut self) -> Transcript {
        if let Some(cur) = self.sections.last_mut() {
            cur.renderer.finish(&mut cur.blocks);
        }
        let sections = self
            .sections
            .into_iter()
            .filter(|s| !s.is_blank() || s.run.is_some_and(|(lines, _, _)| lines > 0))
            .map(|s| {
                let mut report = Report::default();
                report.add(s.collector.finish());
                let (rows, totals) = report.rows(&ReportOptions { by: GroupBy::Model, ..ReportOptions::default() });
                Finished { meta: s.meta, blocks: s.blocks, rows, totals, run: s.run }
            })
            .collect();
        Transcript { sections }
    }
}

impl Sink for HtmlSink {
    fn event(&mut self, ev: &Event) {
        let env = ev.env();
        match ev {
            Event::RunStarted { .. } => self.start_section(env.source.clone()),
            // Events before the first session of an input (CLI banners) belong to it.
            Event::SessionStarted { .. } if self.current(env).meta.session_id.is_some() => {
                let source = self.current(env).meta.source.clone();
                self.start_section(source);
            }
            _ => {}
        }
        let s = self.current(env);
        s.collector.event(ev);
        s.renderer.push(ev, &mut s.blocks);
        if s.meta.session_id.is_none() {
            s.meta.session_id.clone_from(&env.session_id);
        }
        if s.meta.dialect.is_none() {
            s.meta.dialect = env.dialect;
        }
        if let Some(at) = &env.at {
            if s.meta.first_at.is_none() {
                s.meta.first_at = Some(at.clone());
            }
            s.meta.last_at = Some(at.clone());
        }
        match ev {
            Event::SessionStarted { model, cwd, cli_version, parent_session_id, .. } => {
                s.meta.model.clone_from(model);
                s.meta.cwd.clone_from(cwd);
                s.meta.cli_version.clone_from(cli_version);
                s.meta.parent_session_id.clone_from(parent_session_id);
            }
            Event::RunEnded { lines, unknown, complete, .. } => s.run = Some((*lines, *unknown, *complete)),
            _ => {}
        }
    }
}

/// One finished section.
#[derive(Debug)]
struct Finished {
    meta: Meta,
    blocks: Vec<Block>,
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
        let mut taken: HashSet<String> = HashSet::new();
        for (i, s) in self.sections.iter().enumerate() {
            if let Some(id) = s.meta.session_id.as_deref() {
                if let Some(&p) = by_session.get(id) {
                    pages[p].sections.push(i);
                    continue;
                }
                by_session.insert(id, pages.len());
            }
            let stem = s
                .meta
                .session_id
                .as_deref()
                .and_then(file_stem)
                .or_else(|| {
                    s.meta.source.as_deref().and_then(|src| {
                        let name = src.rsplit('/').next().unwrap_or(src);
                        file_stem(name.split('.').next().unwrap_or(name))
                    })
                })
                .unwrap_or_else(|| format!("session-{}", i + 1));
            // Unique whatever the case (file systems that fold it).
            let file_name = first_free(&mut taken, &stem, ".html", str::to_ascii_lowercase);
            pages.push(Page { file_name, sections: vec![i] });
        }
        pages
    }

    /// The session id of a page (that of its sections), when it has one.
    pub fn session_id(&self, page: &Page) -> Option<&str> {
        page.sections.first().and_then(|&i| self.sections.get(i)).and_then(|s| s.meta.session_id.as_deref())
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
            // One session: one section, or several of one session id (none is no shared id).
            Some((_, s))
                if chosen.len() == 1
                    || (s.meta.session_id.is_some()
                        && chosen.iter().all(|(_, o)| o.meta.session_id == s.meta.session_id)) =>
            {
                format!(
                    "agentnorm · {}",
                    s.meta.session_id.as_deref().or(s.meta.source.as_deref()).unwrap_or("session")
                )
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
                    escape(s.meta.session_id.as_deref().unwrap_or("(no session id)")),
                    escape(s.meta.source.as_deref().unwrap_or("stdin"))
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
    let _ = write!(h, "<h2>{}", escape(s.meta.session_id.as_deref().unwrap_or("(no session id)")));
    if let Some(d) = s.meta.dialect {
        let _ = write!(h, " <span class=\"dialect\">{}</span>", d.as_str());
    }
    h.push_str("</h2>\n<dl class=\"meta\">");
    let meta = [
        ("model", s.meta.model.as_deref()),
        ("directory", s.meta.cwd.as_deref()),
        ("CLI version", s.meta.cli_version.as_deref()),
        ("parent session", s.meta.parent_session_id.as_deref()),
        ("source", s.meta.source.as_deref()),
        ("started", s.meta.first_at.as_deref()),
        ("last event", s.meta.last_at.as_deref()),
    ];
    for (k, v) in meta {
        if let Some(v) = v {
            let _ = write!(h, "<dt>{k}</dt><dd>{}</dd>", escape(v));
        }
    }
    h.push_str("</dl>\n");
    write_usage(h, s);
    h.push_str("<div class=\"transcript\">\n");
    write_blocks(h, idx, &s.blocks);
    h.push_str("</div>\n");
    if let Some((lines, unknown, _)) = s.run {
        let _ = writeln!(
            h,
            "<footer class=\"run\">{} lines read, {} not understood</footer>",
            crate::sink::report::thousands(lines),
            crate::sink::report::thousands(unknown),
        );
    }
    h.push_str("</section>\n");
}

fn num(n: Option<u64>) -> String {
    n.map_or_else(|| "–".to_owned(), crate::sink::report::thousands)
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
        "<div class=\"wide\"><table class=\"tokens\"><caption>Token usage</caption><thead><tr><th>model</th><th>requests</th>\
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
    h.push_str("</tbody></table></div>\n");
}

/// The CSS class of a span kind.
fn span_class(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Prose => "",
        SpanKind::Heading(_) => "hd",
        SpanKind::Code => "ic",
        SpanKind::CodeBlock => "cb",
        SpanKind::Link => "link",
        SpanKind::QuoteBar => "qbar",
        SpanKind::Bullet => "bullet",
        SpanKind::Rule => "rule",
        SpanKind::User => "user",
        SpanKind::UserMarker => "umark",
        SpanKind::Reasoning => "reason",
        SpanKind::Outcome(Outcome::Ok) => "ok",
        SpanKind::Outcome(Outcome::Failed) => "fail",
        SpanKind::Outcome(Outcome::Running) => "running",
        SpanKind::Activity(_) => "act",
        SpanKind::Target => "target",
        SpanKind::Duration => "dur",
        SpanKind::Output => "out",
        SpanKind::More => "more",
        SpanKind::PlanMarker(_) => "pmark",
        SpanKind::PlanItem(PlanStatus::Completed) => "pi done",
        SpanKind::PlanItem(PlanStatus::InProgress) => "pi doing",
        SpanKind::PlanItem(PlanStatus::Pending) => "pi",
        SpanKind::PlanItem(PlanStatus::Cancelled) => "pi gone",
        SpanKind::Usage => "usage",
        SpanKind::Cost => "cost",
        SpanKind::RateLimit { warn: true } => "rl warn",
        SpanKind::RateLimit { warn: false } => "rl",
        SpanKind::Diagnostic(Level::Info) => "diag",
        SpanKind::Diagnostic(Level::Warning) => "diag warn",
        SpanKind::Diagnostic(Level::Error) => "diag error",
        SpanKind::Error => "error",
        SpanKind::Subagent => "sub",
        SpanKind::Question => "question",
        _ => "meta",
    }
}

/// Whether a link target may be live on the page (anything else is shown as text).
fn live_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")) && !url.contains('\\')
}

/// One span as HTML: its text escaped in an element classed by its kind, Markdown emphasis as
/// `<strong>` / `<em>` / `<del>`, an http(s) link as a link (other targets as a tooltip only).
fn write_span(h: &mut String, sp: &Span) {
    let mut close = Vec::new();
    for (on, open, end) in
        [(sp.strong, "<strong>", "</strong>"), (sp.emphasis, "<em>", "</em>"), (sp.strike, "<del>", "</del>")]
    {
        if on {
            h.push_str(open);
            close.push(end);
        }
    }
    let class = span_class(sp.kind);
    match sp.url.as_deref() {
        Some(url) if live_url(url) => {
            let _ = write!(h, "<a class=\"link\" href=\"{}\" rel=\"nofollow noopener noreferrer\">", escape(url));
            escape_into(h, &sp.text);
            h.push_str("</a>");
        }
        Some(url) => {
            let _ = write!(h, "<span class=\"link dead\" title=\"{}\">", escape(url));
            escape_into(h, &sp.text);
            h.push_str("</span>");
        }
        None if class.is_empty() => escape_into(h, &sp.text),
        None => {
            let _ = write!(h, "<span class=\"{class}\">");
            escape_into(h, &sp.text);
            h.push_str("</span>");
        }
    }
    for end in close.into_iter().rev() {
        h.push_str(end);
    }
}

/// Lines of the render model as HTML: a `<pre>` for each run of preformatted lines, a gap for a
/// blank line, a rule, headings, and otherwise one row per line with its prefix (bullets, quote
/// bars) kept in front of the text. `skip_prefix` drops that many leading prefix spans (a
/// medium's own markers the page shows otherwise).
fn write_lines(h: &mut String, lines: &[Line], skip_prefix: usize) {
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        if line.wrap == Wrap::Pre {
            let code = line.spans.iter().any(|s| s.kind == SpanKind::CodeBlock);
            h.push_str(if code { "<pre class=\"code\">" } else { "<pre class=\"out\">" });
            let mut first = true;
            while i < lines.len() && lines[i].wrap == Wrap::Pre {
                if !first {
                    h.push('\n');
                }
                first = false;
                for sp in &lines[i].spans {
                    escape_into(h, &sp.text);
                }
                i += 1;
            }
            h.push_str("</pre>\n");
            continue;
        }
        i += 1;
        if line.is_blank() {
            h.push_str("<div class=\"gap\"></div>\n");
            continue;
        }
        if line.spans.iter().all(|s| s.kind == SpanKind::Rule) {
            h.push_str("<hr>\n");
            continue;
        }
        let class = match line.spans.first().map(|s| s.kind) {
            Some(SpanKind::Heading(n)) => format!("ln h{}", n.clamp(1, 6)),
            _ => "ln".to_owned(),
        };
        let _ = write!(h, "<div class=\"{class}\">");
        let prefix: Vec<&Span> = line.prefix.iter().skip(skip_prefix).collect();
        if !prefix.is_empty() {
            h.push_str("<span class=\"pfx\">");
            for sp in prefix {
                write_span(h, sp);
            }
            h.push_str("</span>");
        }
        h.push_str("<span class=\"txt\">");
        for sp in &line.spans {
            write_span(h, sp);
        }
        h.push_str("</span></div>\n");
    }
}

/// `{base}{suffix}`, else `{base}-2{suffix}`, `{base}-3{suffix}`, …: the first whose `key` is not
/// in `taken` yet (also when another name's own base ends in `-2`); its key joins `taken`.
fn first_free(taken: &mut HashSet<String>, base: &str, suffix: &str, key: impl Fn(&str) -> String) -> String {
    let mut name = format!("{base}{suffix}");
    let mut n = 1;
    while !taken.insert(key(&name)) {
        n += 1;
        name = format!("{base}-{n}{suffix}");
    }
    name
}

/// An anchor per tool block, unique in the section: a call, and the block that completes it when
/// the call was shown running first.
fn tool_anchors(blocks: &[Block]) -> (Vec<Option<String>>, HashMap<usize, usize>) {
    let mut anchors = vec![None; blocks.len()];
    let mut used: HashSet<String> = HashSet::new();
    let mut running: HashMap<&str, usize> = HashMap::new();
    // Completing block → the running call it completes, and back.
    let mut pairs = HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        let Some(t) = &b.tool else { continue };
        if t.resumed
            && let Some(c) = running.remove(t.id.as_str())
        {
            anchors[i] = anchors[c].clone();
            pairs.insert(i, c);
            pairs.insert(c, i);
            continue;
        }
        anchors[i] = Some(first_free(&mut used, &anchor(&t.id), "", str::to_owned));
        if t.outcome == Outcome::Running {
            running.insert(t.id.as_str(), i);
        }
    }
    (anchors, pairs)
}

fn write_blocks(h: &mut String, sec: usize, blocks: &[Block]) {
    let (anchors, pairs) = tool_anchors(blocks);
    let mut depth = 0;
    for (i, b) in blocks.iter().enumerate() {
        while depth < b.depth {
            // The task that spawned it: the last task call before it, one level up.
            let task = blocks[..i].iter().enumerate().rev().find_map(|(j, t)| {
                t.tool.as_ref().filter(|c| c.kind == Some(ToolKind::Task) && t.depth == depth)?;
                anchors[j].as_ref()
            });
            h.push_str("<div class=\"subagent\"><div class=\"who\">Subagent");
            if let Some(a) = task {
                let _ = write!(h, " of <a href=\"#call-{sec}-{a}\">its task</a>");
            }
            h.push_str("</div>\n");
            depth += 1;
        }
        while depth > b.depth {
            h.push_str("</div>\n");
            depth -= 1;
        }
        match b.kind {
            BlockKind::Source | BlockKind::Session => {}
            BlockKind::User => {
                h.push_str("<div class=\"msg user\"><div class=\"who\">User</div>");
                write_lines(h, &b.lines, 1);
                h.push_str("</div>\n");
            }
            BlockKind::Text => {
                h.push_str("<div class=\"msg assistant\">");
                write_lines(h, &b.lines, 0);
                h.push_str("</div>\n");
            }
            BlockKind::Reasoning => {
                h.push_str("<details class=\"reasoning\"><summary>Thinking</summary>");
                write_lines(h, &b.lines, 1);
                h.push_str("</details>\n");
            }
            BlockKind::Tool => {
                if let (Some(t), Some(a)) = (&b.tool, &anchors[i]) {
                    write_tool(h, sec, b, t, a, pairs.get(&i).copied().map(|j| j > i));
                }
            }
            BlockKind::Footer => {
                let class = if b.footer.as_ref().is_some_and(|f| f.failed) { "turn fail" } else { "turn" };
                let _ = write!(h, "<div class=\"{class}\">");
                write_lines(h, &b.lines, 0);
                h.push_str("</div>\n");
            }
            _ => {
                let class = match b.kind {
                    BlockKind::Plan => "plan",
                    BlockKind::Failure | BlockKind::Interrupt => "note error",
                    BlockKind::Question => "note warning",
                    BlockKind::Unknown => "note unknown",
                    BlockKind::End => "note end",
                    _ => "note",
                };
                let _ = write!(h, "<div class=\"{class}\">");
                write_lines(h, &b.lines, 0);
                h.push_str("</div>\n");
            }
        }
    }
    while depth > 0 {
        h.push_str("</div>\n");
        depth -= 1;
    }
}

/// A tool block as a `<details>` (open when the call failed): the headline (activity, name, target, outcome, duration) as its
/// summary; inside, the id, the arguments and the whole output; under it, in sight, what the
/// model put under the call (plan, question, error). `paired`: `Some(true)` for a call shown running whose result
/// comes later, `Some(false)` for the block completing such a call; the two link to each other.
fn write_tool(h: &mut String, sec: usize, b: &Block, t: &ToolCall, a: &str, paired: Option<bool>) {
    let kind = t.kind.unwrap_or(ToolKind::Other);
    let label = activity_label(kind);
    let is_result = paired == Some(false);
    let id = if is_result { format!("result-{sec}-{a}") } else { format!("call-{sec}-{a}") };
    let _ = write!(
        h,
        "<details class=\"call kind-{}{}\" id=\"{id}\"{}><summary><span class=\"badge\">{}</span> <span class=\"name\">",
        label.to_ascii_lowercase().replace(' ', "-"),
        if is_result { " result-alone" } else { "" },
        // A failure is what a reader looks for: shown open.
        if t.outcome == Outcome::Failed { " open" } else { "" },
        if is_result { "result" } else { label },
    );
    escape_into(h, &t.name);
    h.push_str("</span>");
    if let Some(sum) = t.summary.as_deref().filter(|x| *x != t.name) {
        h.push_str(" <span class=\"summary\">");
        escape_into(h, sum);
        h.push_str("</span>");
    }
    let (class, mark) = match (t.outcome, paired) {
        (Outcome::Ok, _) => ("ok", "✓"),
        (Outcome::Failed, _) => ("fail", "✗"),
        (Outcome::Running, Some(true)) => ("pending", "result below"),
        (Outcome::Running, _) => ("pending", "no result"),
    };
    let _ = write!(h, "<span class=\"mark {class}\">{mark}</span>");
    if let Some(ms) = t.duration_ms {
        let _ = write!(h, "<span class=\"dur\">{}</span>", format_duration(ms));
    }
    h.push_str("</summary><div class=\"body\">");
    match paired {
        Some(true) => {
            let _ = write!(h, "<p><a href=\"#result-{sec}-{a}\">↓ result</a></p>");
        }
        Some(false) => {
            let _ = write!(h, "<p><a href=\"#call-{sec}-{a}\">↑ call</a></p>");
        }
        None => {}
    }
    let mut facts = vec![format!("tool id {}", t.id)];
    if let Some(c) = t.exit_code {
        facts.push(format!("exit code {c}"));
    }
    if let Some(l) = t.line {
        facts.push(format!("line {l}"));
    }
    h.push_str("<p class=\"facts\">");
    escape_into(h, &facts.join(" · "));
    h.push_str("</p>");
    if !is_result && let Some(input) = &t.input {
        // Pretty when it still reads as JSON (a bidi or control character made visible may
        // keep it from parsing: then as it is).
        let pretty = serde_json::from_str::<serde_json::Value>(input)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| input.clone());
        h.push_str("<div class=\"lbl\">arguments</div>");
        pre(h, "input", &pretty);
    }
    // What the model put under the headline, but the output (shown whole below).
    let extra: Vec<Line> = b
        .lines
        .iter()
        .skip(1)
        .filter(|l| !l.spans.iter().any(|s| matches!(s.kind, SpanKind::Output | SpanKind::More)))
        .cloned()
        .collect();
    if t.outcome != Outcome::Running {
        let _ = write!(
            h,
            "<div class=\"result\"{}>",
            if paired.is_none() { format!(" id=\"result-{sec}-{a}\"") } else { String::new() }
        );
        match &t.output {
            Some(o) => {
                h.push_str("<div class=\"lbl\">output</div>");
                pre(h, "output", &o.lines.join("\n"));
            }
            None => h.push_str("<div class=\"lbl\">no output</div>"),
        }
        h.push_str("</div>");
    }
    h.push_str("</div></details>\n");
    // Plans, questions and errors stay in sight under the call.
    if !extra.is_empty() {
        h.push_str("<div class=\"extra\">");
        write_lines(h, &extra, 1);
        h.push_str("</div>\n");
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
    let _ = write!(h, "<pre class=\"{class}\">");
    escape_into(h, shown);
    h.push_str("</pre>");
    if rest > 0 {
        let _ =
            write!(h, "<p class=\"muted\">… {} more bytes not shown</p>", crate::sink::report::thousands(rest as u64));
    }
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
table.tokens{border-collapse:collapse;font-size:13px;margin:0 0 18px;width:100%}
table.tokens caption{text-align:left;font-weight:600;padding-bottom:4px}
table.tokens th,table.tokens td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:right;white-space:nowrap}
table.tokens th:first-child{text-align:left}
div.wide{overflow-x:auto;margin:0 0 18px}div.wide>table.tokens{margin:0}
table.tokens thead th{color:var(--muted);font-weight:500}
table.tokens tr.totals th,table.tokens tr.totals td{font-weight:600}
.transcript{border-top:1px solid var(--line);padding-top:12px}
.msg{margin:12px 0;overflow-wrap:anywhere}
.msg.user{background:var(--user);border-left:3px solid var(--accent);border-radius:6px;padding:8px 14px}
.who{font-size:11px;font-weight:700;letter-spacing:.06em;text-transform:uppercase;color:var(--muted);margin-bottom:2px}
.ln{display:flex;align-items:baseline}
.pfx{flex:none;white-space:pre;color:var(--muted)}
.txt{min-width:0;overflow-wrap:anywhere}
.gap{height:.55em}
.ln.h1 .txt{font-size:1.35em;font-weight:700;margin:.3em 0 .1em}.ln.h2 .txt{font-size:1.2em;font-weight:700;margin:.3em 0 .1em}
.ln.h3 .txt,.ln.h4 .txt,.ln.h5 .txt,.ln.h6 .txt{font-weight:700}
.hd{font-weight:inherit}
.ic{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;background:var(--code);border:1px solid var(--line);border-radius:4px;padding:0 4px;font-size:88%}
pre.code{background:var(--code)}
hr{border:0;border-top:1px solid var(--line);margin:10px 0}
.link.dead{text-decoration:underline dotted}
.qbar{color:var(--accent);font-weight:700}
.meta,.more,.dur,.usage{color:var(--muted)}
.ok{color:var(--ok)}.fail,.error{color:var(--fail)}.running{color:var(--muted)}
.act{font-weight:600}.target{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
.pmark{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;color:var(--muted)}
.pi.done{color:var(--muted);text-decoration:line-through}.pi.doing{font-weight:600}.pi.gone{color:var(--muted);text-decoration:line-through;font-style:italic}
.cost{color:var(--fg)}.rl.warn,.diag.warn{color:var(--warn)}.diag.error{color:var(--fail)}.diag{font-weight:600}
.sub{color:var(--think)}.question{font-weight:600}
.reason{color:var(--muted)}
.lbl{font-size:11px;font-weight:600;letter-spacing:.05em;text-transform:uppercase;color:var(--muted);margin:6px 0 0}
.extra{margin:-2px 0 8px 22px;padding:4px 12px;border-left:2px solid var(--line);font-size:14px}
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
summary .dur{float:right;color:var(--muted);font-size:12px}
pre{margin:6px 0;padding:8px 10px;background:var(--code);border:1px solid var(--line);border-radius:6px;font-size:12.5px;line-height:1.45;white-space:pre-wrap;overflow-wrap:anywhere;max-height:420px;overflow:auto}
.result{border-top:1px dashed var(--line);margin-top:6px;padding-top:4px}
.facts{color:var(--muted);font-size:12px;margin:2px 0}
p.error{color:var(--fail);margin:4px 0;font-size:13px}
.plan{margin:10px 0;padding:8px 14px;border:1px solid var(--line);border-radius:6px}
.turn{margin:14px 0;padding-top:6px;border-top:1px dashed var(--line);font-size:12.5px}
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
    fn only_web_links_are_live() {
        assert!(live_url("https://example.org/a?b=c"));
        assert!(live_url("HTTP://example.org"));
        for dead in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "data:text/html,x",
            "file:///etc/passwd",
            "#x",
            "//evil",
            "https:\\\\evil",
        ] {
            assert!(!live_url(dead), "{dead}");
        }
    }

    #[test]
    fn file_stems_cannot_leave_the_folder() {
        assert_eq!(file_stem("../../etc/passwd").as_deref(), Some("_.._etc_passwd"));
        assert_eq!(file_stem(".."), None);
        assert_eq!(file_stem("/"), None);
        assert_eq!(file_stem("9d2e4f60-1c2b").as_deref(), Some("9d2e4f60-1c2b"));
        assert_eq!(file_stem(&"a".repeat(300)).map(|s| s.len()), Some(100));
    }
}
