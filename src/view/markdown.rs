//! Markdown in assistant text turned into lines of typed spans, with pulldown-cmark.
//!
//! Agents write Markdown; a person should see headings, emphasis, code and lists, not asterisks
//! and backticks, whatever the medium. Every text the parser yields is made safe with
//! [`super::clean`] (raw HTML too: it is shown as text, never interpreted).

use pulldown_cmark::{Event as Md, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::UnicodeWidthStr;

use super::{Line, Span, SpanKind, Wrap, clean, clean_lines};

/// One open container: what its rows start with.
#[derive(Debug, Clone)]
enum Container {
    Quote,
    /// A list: the next item's number (`None` for bullets).
    List(Option<u64>),
    /// A list item: the marker's width, and whether its first row is still to come.
    Item {
        marker: String,
        first: bool,
    },
}

/// Lines of typed spans for Markdown `text` (CommonMark with tables, strikethrough and task
/// lists). Paragraphs and other blocks are separated by blank lines.
///
/// ```
/// use agentnorm::view::{markdown, SpanKind, Wrap};
/// let lines = markdown("# Title\n\nSome *emphasis* and `code`.\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n");
/// assert_eq!(lines[0].spans[0].kind, SpanKind::Heading(1));
/// let code = lines.iter().find(|l| l.wrap == Wrap::Pre).unwrap();
/// assert_eq!(code.plain().trim(), "fn main() {}");
/// assert_eq!(lines.iter().filter(|l| l.plain().starts_with("• ")).count(), 2);
/// ```
pub fn markdown(text: &str) -> Vec<Line> {
    let mut b = Builder::default();
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(text, opts) {
        b.event(ev);
    }
    b.end_line();
    while b.lines.last().is_some_and(Line::is_blank) {
        b.lines.pop();
    }
    b.lines
}

#[derive(Debug, Default)]
struct Builder {
    lines: Vec<Line>,
    containers: Vec<Container>,
    /// The line being built.
    spans: Vec<Span>,
    wrap: Wrap,
    strong: u32,
    emphasis: u32,
    strike: u32,
    heading: Option<u8>,
    links: Vec<String>,
    code_block: bool,
    /// The code block's text so far (it may come in several pieces).
    code: String,
    /// Cells of the table row being built.
    cells: Vec<Vec<Span>>,
    /// The rows of the table being built, laid out when it ends (columns padded to one width).
    table: Vec<Vec<Vec<Span>>>,
    in_table_head: bool,
    in_cell: bool,
}

impl Builder {
    fn event(&mut self, ev: Md<'_>) {
        match ev {
            Md::Start(tag) => self.start(tag),
            Md::End(tag) => self.end(tag),
            Md::Text(t) => {
                if self.code_block {
                    self.code.push_str(&t);
                } else {
                    self.text(SpanKind::Prose, &t);
                }
            }
            Md::Code(t) => self.text(SpanKind::Code, &t),
            Md::Html(t) | Md::InlineHtml(t) => {
                let lines = clean_lines(&t);
                let n = lines.len();
                for (i, l) in lines.into_iter().enumerate() {
                    self.push(Span::new(SpanKind::Prose, l));
                    if i + 1 < n {
                        self.end_line();
                    }
                }
            }
            Md::InlineMath(t) | Md::DisplayMath(t) => self.text(SpanKind::Code, &t),
            Md::FootnoteReference(t) => self.text(SpanKind::Meta, &format!("[^{t}]")),
            // Agents mean their line breaks (as GitHub comments read them).
            Md::SoftBreak => self.end_line(),
            Md::HardBreak => self.end_line(),
            Md::Rule => {
                self.end_line();
                self.spans.push(Span::new(SpanKind::Rule, "───"));
                self.end_line();
                self.blank();
            }
            Md::TaskListMarker(done) => self.push(Span::new(SpanKind::Bullet, if done { "[x] " } else { "[ ] " })),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.end_line();
                self.heading = Some(match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                });
            }
            Tag::BlockQuote(_) => {
                self.end_line();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(_) => {
                self.end_line();
                self.code_block = true;
            }
            Tag::List(start) => {
                self.end_line();
                self.containers.push(Container::List(start));
            }
            Tag::Item => {
                self.end_line();
                let marker = match self.containers.iter_mut().rev().find(|c| matches!(c, Container::List(_))) {
                    Some(Container::List(Some(n))) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_owned(),
                };
                self.containers.push(Container::Item { marker, first: true });
            }
            Tag::Emphasis => self.emphasis += 1,
            Tag::Strong => self.strong += 1,
            Tag::Strikethrough => self.strike += 1,
            Tag::Link { dest_url, .. } => self.links.push(clean(&dest_url)),
            Tag::Image { dest_url, .. } => {
                self.links.push(clean(&dest_url));
                self.push(Span::new(SpanKind::Meta, "[image: "));
            }
            Tag::Table(_) => self.end_line(),
            Tag::TableHead => self.in_table_head = true,
            Tag::TableRow => self.cells.clear(),
            Tag::TableCell => {
                self.in_cell = true;
                self.cells.push(Vec::new());
            }
            Tag::FootnoteDefinition(label) => {
                self.end_line();
                self.push(Span::new(SpanKind::Meta, format!("[^{}]: ", clean(&label))));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.end_line();
                self.blank();
            }
            TagEnd::Heading(_) => {
                self.end_line();
                self.heading = None;
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.end_line();
                // The separator the quote's last paragraph left keeps no bar after the quote.
                if self.lines.last().is_some_and(|l| l.spans.is_empty()) {
                    self.lines.pop();
                }
                self.containers.pop();
                self.blank();
            }
            TagEnd::CodeBlock => {
                self.code_block = false;
                let code = std::mem::take(&mut self.code);
                let mut rows: Vec<&str> = code.split('\n').collect();
                if rows.last() == Some(&"") {
                    rows.pop();
                }
                self.wrap = Wrap::Pre;
                for row in rows {
                    self.spans.push(Span::new(SpanKind::CodeBlock, clean(row.strip_suffix('\r').unwrap_or(row))));
                    self.end_line();
                }
                self.wrap = Wrap::Reflow;
                self.blank();
            }
            TagEnd::List(_) => {
                self.end_line();
                self.containers.pop();
                self.blank();
            }
            TagEnd::Item => {
                self.end_line();
                // A tight item's text is no paragraph: drop the blank a loose one leaves.
                while self.lines.last().is_some_and(Line::is_blank) {
                    self.lines.pop();
                }
                self.containers.pop();
            }
            TagEnd::Emphasis => self.emphasis = self.emphasis.saturating_sub(1),
            TagEnd::Strong => self.strong = self.strong.saturating_sub(1),
            TagEnd::Strikethrough => self.strike = self.strike.saturating_sub(1),
            TagEnd::Link => {
                self.links.pop();
            }
            TagEnd::Image => {
                self.push(Span::new(SpanKind::Meta, "]"));
                self.links.pop();
            }
            TagEnd::TableHead => {
                self.row();
                self.in_table_head = false;
            }
            TagEnd::TableRow => self.row(),
            TagEnd::TableCell => self.in_cell = false,
            TagEnd::Table => {
                self.table_rows();
                self.blank();
            }
            _ => {}
        }
    }

    /// Text in the current style; a span per call, so styles stay apart.
    fn text(&mut self, kind: SpanKind, t: &str) {
        let kind = match (kind, self.heading) {
            (SpanKind::Prose, Some(level)) => SpanKind::Heading(level),
            (SpanKind::Prose, None) if !self.links.is_empty() => SpanKind::Link,
            (k, _) => k,
        };
        let mut span = Span::new(kind, clean(t));
        span.strong = self.strong > 0 || self.in_table_head;
        span.emphasis = self.emphasis > 0;
        span.strike = self.strike > 0;
        span.url = self.links.last().cloned();
        self.push(span);
    }

    fn push(&mut self, span: Span) {
        if self.in_cell
            && let Some(cell) = self.cells.last_mut()
        {
            cell.push(span);
            return;
        }
        self.spans.push(span);
    }

    /// A table row, kept until the table ends.
    fn row(&mut self) {
        let cells = std::mem::take(&mut self.cells);
        self.table.push(cells);
    }

    /// The table's rows: cells padded to their column's width and joined by bars.
    fn table_rows(&mut self) {
        let width = |cell: &[Span]| cell.iter().map(|s| s.text.width()).sum::<usize>();
        let rows = std::mem::take(&mut self.table);
        let mut widths: Vec<usize> = Vec::new();
        for row in &rows {
            for (i, cell) in row.iter().enumerate() {
                if widths.len() <= i {
                    widths.push(0);
                }
                widths[i] = widths[i].max(width(cell));
            }
        }
        for row in rows {
            let n = row.len();
            for (i, mut cell) in row.into_iter().enumerate() {
                if i > 0 {
                    self.spans.push(Span::new(SpanKind::Meta, " │ "));
                }
                let pad = widths[i] - width(&cell);
                if pad > 0 && i + 1 < n {
                    cell.push(Span::new(SpanKind::Prose, " ".repeat(pad)));
                }
                self.spans.extend(cell);
            }
            // A table row is laid out as it is, not reflowed.
            self.wrap = Wrap::Pre;
            self.end_line();
            self.wrap = Wrap::Reflow;
        }
    }

    /// The prefix of the next row: quote bars, and a list item's marker on its first row (its
    /// width of blanks on later rows).
    fn prefix(&mut self) -> Vec<Span> {
        let mut prefix = Vec::new();
        for c in &mut self.containers {
            match c {
                Container::Quote => prefix.push(Span::new(SpanKind::QuoteBar, "│ ")),
                Container::List(_) => {}
                Container::Item { marker, first } => {
                    let text = if *first { marker.clone() } else { " ".repeat(marker.chars().count()) };
                    *first = false;
                    prefix.push(Span::new(SpanKind::Bullet, text));
                }
            }
        }
        // Adjacent bullet indentation reads as one span.
        prefix
    }

    fn end_line(&mut self) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let prefix = self.prefix();
        self.lines.push(Line { prefix, spans, wrap: self.wrap });
    }

    /// A paragraph separator, once, and not at the start.
    fn blank(&mut self) {
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            // Inside a quote the separator keeps its bar.
            if self.containers.iter().any(|c| matches!(c, Container::Quote)) {
                let prefix: Vec<Span> = self
                    .containers
                    .iter()
                    .filter(|c| matches!(c, Container::Quote))
                    .map(|_| Span::new(SpanKind::QuoteBar, "│"))
                    .collect();
                self.lines.push(Line { prefix, spans: Vec::new(), wrap: Wrap::Reflow });
            } else {
                self.lines.push(Line::default());
            }
        }
    }
}
