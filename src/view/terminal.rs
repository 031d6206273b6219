//! The render model on a terminal: `--format pretty`.
//!
//! This module exists to lay [`Block`]s out as rows of a given width, wrapped or clipped as
//! each [`Line`] asks, coloured with ANSI SGR codes or not at all. The only escape sequences it
//! writes are its own `ESC [ … m` colour codes; the text between them is the model's, already
//! safe. [`PrettySink`] puts [`Renderer`] and [`Terminal`] together as an ordinary [`Sink`].

use std::io::IsTerminal;

use unicode_width::UnicodeWidthChar;

use super::{Block, BlockKind, Line, Outcome, RenderOptions, Renderer, Span, SpanKind, Wrap};
use crate::event::sink::Sink;
use crate::event::{Event, Level, PlanStatus};

/// When to colour (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorMode {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorMode {
    /// Whether to colour, given whether stdout is a terminal and the value of `NO_COLOR`
    /// (<https://no-color.org>: set and not empty turns `auto` colour off).
    pub fn resolve(self, stdout_is_terminal: bool, no_color: Option<&str>) -> bool {
        match self {
            ColorMode::Always => true,
            ColorMode::Never => false,
            ColorMode::Auto => stdout_is_terminal && no_color.is_none_or(str::is_empty),
        }
    }
}

/// The width used when stdout is no terminal and `COLUMNS` is unset.
pub const DEFAULT_WIDTH: usize = 100;
/// Narrower than this, rows are laid out as if this wide.
const MIN_WIDTH: usize = 20;

/// How rows are laid out: the width and whether to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal {
    /// Columns per row.
    pub width: usize,
    /// Write ANSI colour codes.
    pub color: bool,
}

impl Terminal {
    /// The terminal stdout is: `COLUMNS` when set to a number, else the terminal's width when
    /// stdout is one, else the width of the controlling terminal (`/dev/tty`: piped into `less`
    /// or `tee` from a shell, which does not export `COLUMNS`), else [`DEFAULT_WIDTH`]; colour as
    /// `mode` and `NO_COLOR` say.
    pub fn detect(mode: ColorMode) -> Terminal {
        let tty = std::io::stdout().is_terminal();
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|c| *c > 0);
        let width = columns
            .or_else(|| if tty { terminal_width() } else { None })
            .or_else(controlling_terminal_width)
            .unwrap_or(DEFAULT_WIDTH);
        let no_color = std::env::var("NO_COLOR").ok();
        Terminal { width, color: mode.resolve(tty, no_color.as_deref()) }
    }

    /// Writes one block's rows, each ending with `\n`.
    pub fn write_block(&self, block: &Block, out: &mut Vec<u8>) {
        for line in &block.lines {
            self.write_line(block.depth, line, out);
        }
    }

    /// Writes one line as one or more rows, indented for subagent `depth`.
    pub fn write_line(&self, depth: usize, line: &Line, out: &mut Vec<u8>) {
        let guide: Vec<Span> = (0..depth.min(8)).map(|_| Span::new(SpanKind::Meta, "│ ")).collect();
        let prefix: Vec<Span> = guide.iter().cloned().chain(line.prefix.iter().cloned()).collect();
        let cont: Vec<Span> = prefix
            .iter()
            .map(|s| match s.kind {
                SpanKind::QuoteBar | SpanKind::Meta if s.text.trim() == "│" => s.clone(),
                _ => Span::new(s.kind, " ".repeat(width(&s.text))),
            })
            .collect();
        let room = self.width.max(MIN_WIDTH).saturating_sub(width_of(&prefix)).max(MIN_WIDTH / 2);
        let mut spans = with_urls(&line.spans);
        // A heading keeps its Markdown marks: without colour it would look like any paragraph,
        // and the plain view is the coloured one without its codes.
        if let Some(&Span { kind: SpanKind::Heading(level), .. }) = spans.first() {
            let marks = "#".repeat(usize::from(level.clamp(1, 6)));
            spans.insert(0, Span::new(SpanKind::Heading(level), format!("{marks} ")));
        }
        let rows = match line.wrap {
            Wrap::Clip => vec![clip(&spans, room)],
            Wrap::Pre => hard_wrap(&spans, room),
            Wrap::Reflow => reflow(&spans, room),
            Wrap::Spans => by_spans(&spans, room),
        };
        for (i, row) in rows.iter().enumerate() {
            let p = if i == 0 { &prefix } else { &cont };
            let mut all: Vec<Span> = p.clone();
            all.extend(row.iter().cloned());
            // No trailing blanks: the rows of a prefix-only line are empty.
            while all.last().is_some_and(|s| s.text.trim_end().is_empty()) {
                all.pop();
            }
            if let Some(last) = all.last_mut() {
                let trimmed = last.text.trim_end().len();
                last.text.truncate(trimmed);
            }
            for s in &all {
                self.write_span(s, out);
            }
            out.push(b'\n');
        }
    }

    fn write_span(&self, s: &Span, out: &mut Vec<u8>) {
        if s.text.is_empty() {
            return;
        }
        let sgr = if self.color { sgr(s) } else { String::new() };
        if sgr.is_empty() {
            out.extend_from_slice(s.text.as_bytes());
        } else {
            out.extend_from_slice(format!("\x1b[{sgr}m").as_bytes());
            out.extend_from_slice(s.text.as_bytes());
            out.extend_from_slice(b"\x1b[0m");
        }
    }
}

/// The SGR parameters of a span (`1;36`), empty for none.
pub fn sgr(s: &Span) -> String {
    let base = match s.kind {
        SpanKind::Prose | SpanKind::Target | SpanKind::Bullet => "",
        SpanKind::Heading(1 | 2) => "1;35",
        SpanKind::Heading(_) => "1",
        SpanKind::Code | SpanKind::CodeBlock => "36",
        SpanKind::Link => "4;34",
        SpanKind::QuoteBar | SpanKind::Rule | SpanKind::Meta | SpanKind::Duration | SpanKind::Output => "2",
        SpanKind::Usage | SpanKind::Cost => "2",
        SpanKind::User => "1",
        SpanKind::UserMarker => "1;34",
        SpanKind::Reasoning | SpanKind::More => "2;3",
        SpanKind::Outcome(Outcome::Ok) => "32",
        SpanKind::Outcome(Outcome::Failed) | SpanKind::Error => "31",
        SpanKind::Outcome(Outcome::Running) => "33",
        SpanKind::Activity(_) => "1",
        SpanKind::PlanMarker(PlanStatus::Completed) => "32",
        SpanKind::PlanMarker(PlanStatus::InProgress) => "33",
        SpanKind::PlanMarker(PlanStatus::Pending | PlanStatus::Cancelled) => "2",
        SpanKind::PlanItem(PlanStatus::Completed) => "2",
        SpanKind::PlanItem(PlanStatus::InProgress) => "1",
        SpanKind::PlanItem(PlanStatus::Pending) => "",
        SpanKind::PlanItem(PlanStatus::Cancelled) => "2;9",
        SpanKind::RateLimit { warn: true } | SpanKind::Diagnostic(Level::Warning) => "33",
        SpanKind::RateLimit { warn: false } | SpanKind::Diagnostic(Level::Info) => "2",
        SpanKind::Diagnostic(Level::Error) => "31",
        SpanKind::Subagent => "35",
        SpanKind::Question => "1;33",
    };
    let mut codes: Vec<&str> = base.split(';').filter(|c| !c.is_empty()).collect();
    for (on, code) in [(s.strong, "1"), (s.emphasis, "3"), (s.strike, "9")] {
        if on && !codes.contains(&code) {
            codes.push(code);
        }
    }
    codes.join(";")
}

/// Link texts followed by their target in angle brackets, unless the text is the target.
fn with_urls(spans: &[Span]) -> Vec<Span> {
    let mut out = Vec::with_capacity(spans.len());
    for (i, s) in spans.iter().enumerate() {
        out.push(s.clone());
        let Some(url) = &s.url else { continue };
        let last_of_link = spans.get(i + 1).is_none_or(|n| n.url.as_ref() != Some(url));
        if last_of_link {
            let text: String = spans[..=i]
                .iter()
                .rev()
                .take_while(|p| p.url.as_ref() == Some(url))
                .map(|p| p.text.as_str())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if text != *url && !url.is_empty() {
                out.push(Span::new(SpanKind::Meta, format!(" <{url}>")));
            }
        }
    }
    out
}

fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

fn width_of(spans: &[Span]) -> usize {
    spans.iter().map(|s| width(&s.text)).sum()
}

/// Characters with the index of the span they came from.
fn chars(spans: &[Span]) -> Vec<(usize, char)> {
    spans.iter().enumerate().flat_map(|(i, s)| s.text.chars().map(move |c| (i, c))).collect()
}

/// Characters back into spans of their span's style.
fn to_spans(spans: &[Span], cs: &[(usize, char)]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut last = usize::MAX;
    for &(i, c) in cs {
        if i != last {
            out.push(Span { text: String::new(), ..spans[i].clone() });
            last = i;
        }
        if let Some(s) = out.last_mut() {
            s.text.push(c);
        }
    }
    out
}

/// One row, cut with `…` when wider than `room`.
fn clip(spans: &[Span], room: usize) -> Vec<Span> {
    if width_of(spans) <= room {
        return spans.to_vec();
    }
    // What follows a call's target (` · exit 2 · 1.2s`) says how it went: the target is cut
    // instead, so that a long command keeps its outcome and duration.
    if let Some(t) = spans.iter().rposition(|s| s.kind == SpanKind::Target) {
        let tail = &spans[t + 1..];
        let tw = width_of(tail);
        if tw > 0 && tw * 2 <= room {
            let mut out = clip_end(&spans[..=t], room - tw);
            out.extend_from_slice(tail);
            return out;
        }
    }
    clip_end(spans, room)
}

/// `spans` cut to `room` columns, an ellipsis at the cut.
fn clip_end(spans: &[Span], room: usize) -> Vec<Span> {
    if width_of(spans) <= room {
        return spans.to_vec();
    }
    let cs = chars(spans);
    let mut w = 0;
    let mut n = 0;
    for &(_, c) in &cs {
        let cw = c.width().unwrap_or(0);
        if w + cw > room.saturating_sub(1) {
            break;
        }
        w += cw;
        n += 1;
    }
    let mut out = to_spans(spans, &cs[..n]);
    out.push(Span::new(SpanKind::Meta, "…"));
    out
}

/// Rows of at most `room` columns, spaces kept; broken after the row's last space when it is in
/// the row's second half, else anywhere.
fn hard_wrap(spans: &[Span], room: usize) -> Vec<Vec<Span>> {
    let cs = chars(spans);
    let mut rows = Vec::new();
    let mut start = 0;
    let mut w = 0;
    let mut k = 0;
    while k < cs.len() {
        let cw = cs[k].1.width().unwrap_or(0);
        if w + cw > room && k > start {
            let space = cs[start..k].iter().rposition(|&(_, c)| c == ' ').map(|p| start + p + 1);
            let cut = space.filter(|&p| (p - start) * 2 > k - start && p < k).unwrap_or(k);
            rows.push(to_spans(spans, &cs[start..cut]));
            start = cut;
            w = cs[start..k].iter().map(|&(_, c)| c.width().unwrap_or(0)).sum();
        }
        w += cw;
        k += 1;
    }
    rows.push(to_spans(spans, &cs[start..]));
    rows
}

/// Rows of at most `room` columns, broken between words; a word wider than a row is broken.
fn reflow(spans: &[Span], room: usize) -> Vec<Vec<Span>> {
    let cs = chars(spans);
    let mut rows: Vec<Vec<(usize, char)>> = vec![Vec::new()];
    let mut w = 0;
    let mut k = 0;
    let mut space: Vec<(usize, char)> = Vec::new();
    while k < cs.len() {
        if cs[k].1 == ' ' {
            space.push(cs[k]);
            k += 1;
            continue;
        }
        let end = cs[k..].iter().position(|&(_, c)| c == ' ').map_or(cs.len(), |p| k + p);
        let word = &cs[k..end];
        let ww: usize = word.iter().map(|&(_, c)| c.width().unwrap_or(0)).sum();
        let sw = space.len();
        let row_empty = rows.last().is_none_or(Vec::is_empty);
        if w + sw + ww <= room {
            if let Some(r) = rows.last_mut() {
                r.append(&mut space);
                r.extend_from_slice(word);
            }
            w += sw + ww;
        } else if ww <= room {
            space.clear();
            rows.push(word.to_vec());
            w = ww;
        } else {
            // Longer than a row: fill the rest of this row, then whole rows.
            if w + sw < room && !row_empty {
                if let Some(r) = rows.last_mut() {
                    r.append(&mut space);
                }
                w += sw;
            } else {
                space.clear();
                if !row_empty {
                    rows.push(Vec::new());
                    w = 0;
                }
            }
            for &(i, c) in word {
                let cw = c.width().unwrap_or(0);
                if w + cw > room && w > 0 {
                    rows.push(Vec::new());
                    w = 0;
                }
                if let Some(r) = rows.last_mut() {
                    r.push((i, c));
                }
                w += cw;
            }
        }
        k = end;
    }
    rows.iter().map(|r| to_spans(spans, r)).collect()
}

/// Rows of whole spans; a span wider than a row is broken (leading blanks of a row dropped).
fn by_spans(spans: &[Span], room: usize) -> Vec<Vec<Span>> {
    let mut rows: Vec<Vec<Span>> = vec![Vec::new()];
    let mut w = 0;
    for (i, s) in spans.iter().enumerate() {
        let sw = width(&s.text);
        // A separator goes with what follows it: a row never ends with one.
        let next = spans.get(i + 1).map_or(0, |n| width(&n.text));
        if s.text.trim() == "·" && w + sw + next > room && w > 0 {
            rows.push(Vec::new());
            w = 0;
            continue;
        }
        if w + sw > room && w > 0 {
            rows.push(Vec::new());
            w = 0;
        }
        let s = if w == 0 { Span { text: s.text.trim_start().to_owned(), ..s.clone() } } else { s.clone() };
        let sw = width(&s.text);
        if sw > room {
            for part in hard_wrap(std::slice::from_ref(&s), room) {
                if w > 0 {
                    rows.push(Vec::new());
                }
                w = width_of(&part);
                if let Some(r) = rows.last_mut() {
                    r.extend(part);
                }
            }
            continue;
        }
        w += sw;
        if let Some(r) = rows.last_mut() {
            r.push(s);
        }
    }
    rows
}

/// The width of the terminal on stdout, if it is one.
fn terminal_width() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut ws = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCGWINSZ writes a `winsize` into the valid, exclusively borrowed `ws`.
        let r = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) };
        (r == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The width of the process's controlling terminal, when it has one.
fn controlling_terminal_width() -> Option<usize> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd as _;
        let tty = std::fs::File::open("/dev/tty").ok()?;
        let mut ws = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCGWINSZ writes a `winsize` into the valid, exclusively borrowed `ws`; the
        // descriptor is open for the call.
        let r = unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) };
        (r == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Whether a blank row goes between blocks of these kinds: around prose and prompts, before a
/// new input, after a turn's footer.
fn spaced(prev: BlockKind, next: BlockKind) -> bool {
    let roomy = |k| matches!(k, BlockKind::Text | BlockKind::User);
    roomy(prev) || roomy(next) || next == BlockKind::Source || prev == BlockKind::Footer
}

/// `--format pretty` as a [`Sink`]: events in, terminal rows out in [`PrettySink::buf`].
///
/// ```
/// use agentnorm::view::{PrettySink, Terminal};
/// use agentnorm::{Normalizer, Options};
/// let mut sink = PrettySink::new(Terminal { width: 60, color: false });
/// let mut n = Normalizer::new(Options::default().observed_at(false));
/// n.feed(br#"{"type":"item.completed","item":{"id":"i0","type":"command_execution","command":"ls","aggregated_output":"a\nb\n","exit_code":0,"status":"completed"}}
/// "#, &mut sink);
/// n.finish(&mut sink);
/// let text = String::from_utf8(sink.buf).unwrap();
/// assert!(text.contains("✓ Run  ls"), "{text}");
/// assert!(text.contains("    a\n    b\n"), "{text}");
/// ```
#[derive(Debug)]
pub struct PrettySink {
    renderer: Renderer,
    term: Terminal,
    blocks: Vec<Block>,
    last: Option<BlockKind>,
    /// Replace a running call's row by its result when nothing came between.
    rewrite: bool,
    /// The call whose one-row `running` headline is the last row written.
    running_row: Option<String>,
    /// The rows written so far and not yet taken by the caller.
    pub buf: Vec<u8>,
}

impl PrettySink {
    /// A sink laying blocks out on `term`, with the model's default choices.
    pub fn new(term: Terminal) -> PrettySink {
        PrettySink::with_options(term, RenderOptions::default())
    }

    /// A sink with the model's choices given.
    pub fn with_options(term: Terminal, opts: RenderOptions) -> PrettySink {
        PrettySink {
            renderer: Renderer::new(opts),
            term,
            blocks: Vec::new(),
            last: None,
            rewrite: false,
            running_row: None,
            buf: Vec::new(),
        }
    }

    /// For a live terminal: when a call's result comes right after its `running` row, that row
    /// is replaced (cursor up, erase line: the only escapes besides colour this sink writes),
    /// so the call keeps one row. Off by default; never for a pipe or a file.
    pub fn rewrite_running(mut self, yes: bool) -> PrettySink {
        self.rewrite = yes;
        self
    }

    /// The input has nothing more ready: show what the renderer holds (calls still running,
    /// finished paragraphs), so a live view is never behind.
    pub fn flush(&mut self) {
        self.renderer.flush(&mut self.blocks);
        self.write_blocks();
    }

    fn write_blocks(&mut self) {
        for b in std::mem::take(&mut self.blocks) {
            let call = b.tool.as_ref();
            if self.rewrite
                && let Some(call) = call.filter(|c| c.resumed)
                && self.running_row.as_deref() == Some(call.id.as_str())
            {
                self.buf.extend_from_slice(b"\x1b[1A\r\x1b[2K");
            } else if let Some(prev) = self.last
                && spaced(prev, b.kind)
            {
                self.buf.push(b'\n');
            }
            self.last = Some(b.kind);
            self.running_row =
                call.filter(|c| c.outcome == Outcome::Running && b.lines.len() == 1).map(|c| c.id.clone());
            self.term.write_block(&b, &mut self.buf);
        }
    }
}

impl Sink for PrettySink {
    fn event(&mut self, ev: &Event) {
        self.renderer.push(ev, &mut self.blocks);
        if !self.blocks.is_empty() {
            self.write_blocks();
        }
    }

    fn idle(&mut self) {
        self.flush();
    }
}
