//! The render model: normalized events turned into blocks of lines of typed spans, for people.
//!
//! This module exists so that every human view (the terminal's `--format pretty`, an HTML page, a
//! UI) shows a session the same way and none re-derives it from raw events: which tool call a
//! result belongs to and how long it took, which part of a long output is shown, what a plan
//! looks like as a checklist, what a turn cost. The model says *what* each piece of text is
//! ([`SpanKind`]), never how it looks: no colours, no escape codes, no HTML. A medium maps kinds
//! to its own styling ([`terminal`] to ANSI SGR codes).
//!
//! Every string of the model (spans, tool calls, footers, blocks) is safe to show:
//! agent-controlled text went through
//! [`crate::sink::safe::printable`] (escape sequences, C1 and bidi controls written as visible
//! `\u{1b}` text), tabs are expanded, and no span holds a line break. A medium only escapes its
//! own syntax (`<`, `&` for HTML).
//!
//! [`Renderer`] is fed events in stream order and emits [`Block`]s. It holds back a tool call
//! until its result arrives (so the call and its outcome make one block), and assistant text
//! until its message ends (so Markdown is parsed whole); [`Renderer::flush`] lets a live view
//! show what is held (a call still running, the finished paragraphs of a message), and
//! [`Renderer::finish`] shows the rest.
//!
//! ```
//! use agentnorm::view::{BlockKind, Outcome, SpanKind};
//! use agentnorm::{Event, Normalizer, Options};
//!
//! let input = br#"{"type":"thread.started","thread_id":"t1"}
//! {"type":"turn.started"}
//! {"type":"item.completed","item":{"id":"i0","type":"command_execution","command":"cargo test","aggregated_output":"ok\n","exit_code":0,"status":"completed"}}
//! {"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"All **green**."}}
//! {"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":30}}
//! "#;
//! let mut events: Vec<Event> = Vec::new();
//! let mut n = Normalizer::new(Options::default().observed_at(false));
//! n.feed(input, &mut events);
//! n.finish(&mut events);
//!
//! let blocks = agentnorm::view::render_all(&events);
//! let tool = blocks.iter().find_map(|b| b.tool.as_ref()).unwrap();
//! assert_eq!((tool.outcome, tool.summary.as_deref()), (Outcome::Ok, Some("cargo test")));
//! let text = blocks.iter().find(|b| b.kind == BlockKind::Text).unwrap();
//! let bold = text.lines[0].spans.iter().find(|s| s.strong).unwrap();
//! assert_eq!((bold.kind, bold.text.as_str()), (SpanKind::Prose, "green"));
//! assert!(blocks.iter().any(|b| b.kind == BlockKind::Footer));
//! ```

pub mod html;
mod markdown;
pub mod terminal;

use std::collections::HashMap;

use crate::dialect::usage;
use crate::event::{Event, FailureKind, Level, PlanItem, PlanStatus, SubagentStatus, ToolKind, Usage, UsageScope};
use crate::sink::safe;

pub use markdown::markdown;
pub use terminal::{ColorMode, PrettySink, Terminal};

/// What a piece of text is. A medium picks the look; the model only names the role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpanKind {
    /// Ordinary text (assistant prose, table cells, descriptions).
    Prose,
    /// A Markdown heading of the given level (1–6).
    Heading(u8),
    /// Inline code.
    Code,
    /// A line of a code block (its [`Line::wrap`] is [`Wrap::Pre`]).
    CodeBlock,
    /// The text of a link or image; the target is [`Span::url`].
    Link,
    /// A block quote's bar, repeated on every row of the quoted text.
    QuoteBar,
    /// A list bullet or number (`•`, `3.`), or the indentation that stands for one.
    Bullet,
    /// A horizontal rule.
    Rule,
    /// The user's prompt.
    User,
    /// The marker in front of the user's prompt.
    UserMarker,
    /// Model reasoning.
    Reasoning,
    /// A tool call's outcome marker (`✓`, `✗`, `…`).
    Outcome(Outcome),
    /// The activity a tool call performs (`Run`, `Read`, `Edit`, …, or the tool's own name).
    Activity(ToolKind),
    /// What the call acts on: the command, path, pattern, URL or task.
    Target,
    /// A duration (`1.2s`).
    Duration,
    /// A line of tool output.
    Output,
    /// The fold marker `… N more lines`.
    More,
    /// The checkbox of a plan item.
    PlanMarker(PlanStatus),
    /// The text of a plan item.
    PlanItem(PlanStatus),
    /// Token figures.
    Usage,
    /// A cost in USD.
    Cost,
    /// A rate-limit reading; `warn` when the window is rejected, in warning, or 80% used.
    RateLimit {
        /// The reading deserves attention.
        warn: bool,
    },
    /// A diagnostic of the given level.
    Diagnostic(Level),
    /// A failure: a failed turn, a failed call's error, a lost stream.
    Error,
    /// A subagent's activity.
    Subagent,
    /// A question the agent asks the user.
    Question,
    /// Secondary information: ids, model names, line numbers, separators, counts.
    Meta,
}

/// How a tool call ended, as far as the stream has told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Started, no result seen (yet).
    Running,
    /// Succeeded.
    Ok,
    /// Failed (an error, a non-zero exit code, a refusal).
    Failed,
}

/// A run of text of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// What the text is.
    pub kind: SpanKind,
    /// The text: safe to show, never holding a line break.
    pub text: String,
    /// Markdown strong emphasis.
    pub strong: bool,
    /// Markdown emphasis.
    pub emphasis: bool,
    /// Markdown strikethrough.
    pub strike: bool,
    /// The target of a link or image (safe to show; a medium decides whether to make it live).
    pub url: Option<String>,
}

impl Span {
    /// A span of `kind` holding `text` as given (the caller makes it safe; see [`clean`]).
    pub fn new(kind: SpanKind, text: impl Into<String>) -> Span {
        Span { kind, text: text.into(), strong: false, emphasis: false, strike: false, url: None }
    }
}

/// How a medium may lay a line out when it is wider than the room it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wrap {
    /// Prose: break between words, continue under the text (after the prefix's width).
    #[default]
    Reflow,
    /// Preformatted (code, tool output): keep spaces; break anywhere if it must.
    Pre,
    /// A headline: one row, cut with `…` when too long.
    Clip,
    /// A row of items (a footer): break only between spans, never inside one.
    Spans,
}

/// One logical line: a paragraph, a list item, a code line, a tool call's headline.
///
/// The `prefix` (quote bars, bullets, checkboxes, indentation) comes before the first row; when
/// a medium wraps the line, continuation rows get the prefix's quote bars and otherwise blanks
/// of its width. An empty line (no prefix, no spans) separates paragraphs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line {
    /// What comes before the text (quote bars, bullets, indentation).
    pub prefix: Vec<Span>,
    /// The text.
    pub spans: Vec<Span>,
    /// How to wrap it.
    pub wrap: Wrap,
}

impl Line {
    /// A line of the given spans, reflowed when too wide.
    pub fn new(spans: Vec<Span>) -> Line {
        Line { prefix: Vec::new(), spans, wrap: Wrap::Reflow }
    }

    /// The line's text, prefix included, without any styling.
    pub fn plain(&self) -> String {
        self.prefix.iter().chain(&self.spans).map(|s| s.text.as_str()).collect()
    }

    /// True for a paragraph separator.
    pub fn is_blank(&self) -> bool {
        self.prefix.is_empty() && self.spans.iter().all(|s| s.text.is_empty())
    }
}

/// What a block stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockKind {
    /// The start of an input (its file name).
    Source,
    /// A session began (id, model, working directory, CLI version).
    Session,
    /// The user's prompt.
    User,
    /// Assistant text, Markdown rendered.
    Text,
    /// Model reasoning.
    Reasoning,
    /// A tool call: headline, then its plan, question, error and folded output ([`Block::tool`]).
    Tool,
    /// A plan update outside a plan tool call, as a checklist.
    Plan,
    /// Something happened to a subagent.
    Subagent,
    /// The agent waits for an answer.
    Question,
    /// The conversation was compacted.
    Compacted,
    /// The turn was interrupted.
    Interrupt,
    /// A turn failed.
    Failure,
    /// The end of a turn: duration, usage, cost, rate limits.
    Footer,
    /// A diagnostic the CLI reported.
    Diagnostic,
    /// An input line agentnorm did not understand.
    Unknown,
    /// The end of an input, when something about it needs saying (cut short, lines not
    /// understood).
    End,
}

/// One tool call with its result, as far as known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's id (links a call shown running to the block that completes it).
    pub id: String,
    /// The tool's name as the CLI gave it (safe to show).
    pub name: String,
    /// What it does, where known.
    pub kind: Option<ToolKind>,
    /// The one-line description: command, path, pattern, URL, task (safe to show).
    pub summary: Option<String>,
    /// The arguments as compact JSON (safe to show).
    pub input: Option<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took: as the CLI reported, else from the timestamps of call and result.
    pub duration_ms: Option<u64>,
    /// A command's exit code.
    pub exit_code: Option<i64>,
    /// The error of a failed call (safe to show).
    pub error: Option<String>,
    /// The whole output; the block's lines show only its first [`Output::shown`] and last
    /// [`Output::tail`] lines.
    pub output: Option<Output>,
    /// True when this block completes a call an earlier block showed as [`Outcome::Running`].
    pub resumed: bool,
    /// The source line of the call (of its result when the call was not seen).
    pub line: Option<u64>,
    /// The source line of its result.
    pub result_line: Option<u64>,
}

impl ToolCall {
    /// A call not ended yet, with only what every call has: its id, name, kind and line.
    fn running(id: String, name: String, kind: Option<ToolKind>, line: Option<u64>) -> ToolCall {
        ToolCall {
            id,
            name,
            kind,
            summary: None,
            input: None,
            outcome: Outcome::Running,
            duration_ms: None,
            exit_code: None,
            error: None,
            output: None,
            resumed: false,
            line,
            result_line: None,
        }
    }
}

/// A tool's output, whole, as safe lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Every line (trailing blank lines dropped).
    pub lines: Vec<String>,
    /// How many of the first lines the block shows.
    pub shown: usize,
    /// How many of the last lines the block shows (after the `… N more lines` marker that
    /// stands for the lines between).
    pub tail: usize,
}

/// A rendered piece of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// What it stands for.
    pub kind: BlockKind,
    /// Subagent nesting: 0 for the main thread, 1 inside a task, …
    pub depth: usize,
    /// The session it belongs to (safe to show).
    pub session_id: Option<String>,
    /// The source line that made it (the first, for text from several lines).
    pub line: Option<u64>,
    /// The frame's own timestamp, RFC 3339 (safe to show).
    pub at: Option<String>,
    /// The lines to show.
    pub lines: Vec<Line>,
    /// For [`BlockKind::Tool`]: the call.
    pub tool: Option<ToolCall>,
    /// For [`BlockKind::Footer`]: the turn's figures.
    pub footer: Option<Footer>,
}

impl Block {
    fn new(kind: BlockKind, depth: usize, ev: &Event, lines: Vec<Line>) -> Block {
        let env = ev.env();
        Block {
            kind,
            depth,
            session_id: env.session_id.as_deref().map(clean),
            line: env.line,
            at: env.at.as_deref().map(clean),
            lines,
            tool: None,
            footer: None,
        }
    }

    /// The block's text, one row per line, without styling (for tests and plain media).
    pub fn plain(&self) -> String {
        self.lines.iter().map(|l| l.plain() + "\n").collect()
    }
}

/// The figures a turn's footer shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Footer {
    /// Whether this footer ends a turn (else it shows figures left at the end of the input).
    pub turn_end: bool,
    /// Whether the turn failed.
    pub failed: bool,
    /// The turn's usage (the session's so far when `session_scope`).
    pub usage: Option<Usage>,
    /// True when `usage` is a running total for the session (Codex `exec --json`).
    pub session_scope: bool,
    /// The context of the turn's last model request.
    pub context: Option<u64>,
    /// The model requests seen in the turn.
    pub requests: u64,
    /// The turn's own cost, from what the CLI reported (Claude's running total for the process
    /// is turned into what the turn added).
    pub cost_usd: Option<f64>,
    /// The turn's duration the CLI reported.
    pub duration_ms: Option<u64>,
    /// The model turns the CLI reported.
    pub num_turns: Option<u64>,
    /// The rate-limit windows read during the turn, latest per window.
    pub rate_limits: Vec<RateLimit>,
}

/// A rate-limit window's latest reading.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimit {
    /// `five_hour`, `seven_day`, `primary`, … (safe to show).
    pub window: String,
    /// The window's length.
    pub window_minutes: Option<u64>,
    /// `allowed`, `allowed_warning`, `rejected`, … (safe to show).
    pub status: Option<String>,
    /// How much is used, 0–100.
    pub used_percent: Option<f64>,
    /// When it resets, RFC 3339.
    pub resets_at: Option<String>,
}

/// Choices of the model.
///
/// A medium that can show folded text on demand (an HTML page) may set `fold_text` to
/// `usize::MAX` to keep prompts and reasoning whole; tool output is always kept whole in
/// [`Output::lines`] whatever `fold_lines` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Output lines a tool block shows before `… N more lines` (default 4).
    pub fold_lines: usize,
    /// Lines of a long user prompt or reasoning shown before `… N more lines` (default 8);
    /// the lines past it are dropped from the block.
    pub fold_text: usize,
}

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions { fold_lines: 4, fold_text: 8 }
    }
}

/// `s` made safe to show on one line: tabs expanded to four spaces, every control, bidi and
/// invisible character written as a visible escape ([`safe::printable`]).
pub fn clean(s: &str) -> String {
    if s.contains('\t') {
        safe::printable(&s.replace('\t', "    ")).into_owned()
    } else {
        safe::printable(s).into_owned()
    }
}

/// `s` split into safe lines: `\n` and `\r\n` end lines (any other `\r` stays visible as an
/// escape), leading and trailing blank lines dropped.
pub fn clean_lines(s: &str) -> Vec<String> {
    let mut lines: Vec<String> = s.split('\n').map(|l| clean(l.strip_suffix('\r').unwrap_or(l))).collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let lead = lines.iter().take_while(|l| l.trim().is_empty()).count();
    lines.drain(..lead);
    lines
}

/// A duration as people read it: `85ms`, `1.2s`, `2m05s`, `1h02m`.
pub fn format_duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000),
    }
}

/// A token count as people read it: `402`, `23.8k`, `1.25M`.
pub fn format_tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..999_500 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// The label of an activity: the same word for every CLI's tool of that kind.
pub fn activity_label(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Shell => "Run",
        ToolKind::Read => "Read",
        ToolKind::Write => "Write",
        ToolKind::Edit => "Edit",
        ToolKind::Search => "Search",
        ToolKind::Fetch => "Fetch",
        ToolKind::WebSearch => "Web search",
        ToolKind::Mcp => "MCP",
        ToolKind::Task => "Task",
        ToolKind::Plan => "Plan",
        ToolKind::Ask => "Ask",
        ToolKind::Other => "Tool",
    }
}

/// Renders a whole stream at once: every event pushed, then [`Renderer::finish`].
pub fn render_all(events: &[Event]) -> Vec<Block> {
    let mut r = Renderer::new(RenderOptions::default());
    let mut out = Vec::new();
    for ev in events {
        r.push(ev, &mut out);
    }
    r.finish(&mut out);
    out
}

/// A tool call waiting for its result before it is shown.
#[derive(Debug)]
struct Held {
    block: Block,
    /// Plan or question lines from the call's own line, shown under its headline.
    extra: Vec<Line>,
    /// The plan the call set, for its headline.
    plan: Option<Vec<PlanItem>>,
    started_ms: Option<i64>,
    done: bool,
}

/// What is remembered of a call shown as running, to complete it later.
#[derive(Debug)]
struct Shown {
    call: ToolCall,
    depth: usize,
    started_ms: Option<i64>,
}

/// Text being gathered until its message ends.
#[derive(Debug, Default)]
struct Pending {
    text: String,
    message_id: Option<String>,
    /// The event that began it (envelope for the block).
    first: Option<Event>,
    depth: usize,
    /// The length at which it was last searched for a paragraph end in vain.
    scanned: usize,
}

/// The turn's figures gathered for its footer.
#[derive(Debug, Default)]
struct Turn {
    usage: Option<Usage>,
    context: Option<u64>,
    requests: u64,
    rate_limits: Vec<RateLimit>,
}

impl Turn {
    fn is_empty(&self) -> bool {
        self.usage.is_none() && self.rate_limits.is_empty()
    }
}

/// Turns events into [`Block`]s, in stream order (see the module docs).
#[derive(Debug)]
pub struct Renderer {
    opts: RenderOptions,
    text: Pending,
    reasoning: Pending,
    held: Vec<Held>,
    shown: HashMap<String, Shown>,
    /// Depth of the blocks inside each task call (its id → depth).
    task_depth: HashMap<String, usize>,
    turn: Turn,
    /// The latest plan, for the headline of a plan call completed after its own update.
    last_plan: Option<Vec<PlanItem>>,
    /// Claude's running cost total per session, read into each turn's own cost.
    costs: HashMap<Option<String>, usage::RunningCost>,
    /// A turn started and not yet ended, and whether the stream is a saved log (a transcript
    /// or rollout, where an open turn is no sign of a cut): which cause a cut stream had.
    turn_open: bool,
    saved_log: bool,
}

/// At most this many task calls are remembered for nesting and running calls for completion.
const REMEMBER: usize = 4096;
/// At most this many calls wait for their results before being shown running, and rate-limit
/// windows are kept for a footer.
const HOLD: usize = 64;
/// Bytes of text gathered before whole paragraphs are shown without waiting for the message's
/// end.
const TEXT_HOLD: usize = 1 << 20;

impl Renderer {
    /// A renderer with the given choices.
    pub fn new(opts: RenderOptions) -> Renderer {
        Renderer {
            opts,
            text: Pending::default(),
            reasoning: Pending::default(),
            held: Vec::new(),
            shown: HashMap::new(),
            task_depth: HashMap::new(),
            turn: Turn::default(),
            last_plan: None,
            costs: HashMap::new(),
            turn_open: false,
            saved_log: false,
        }
    }

    /// Takes one event; appends to `out` the blocks it completes.
    pub fn push(&mut self, ev: &Event, out: &mut Vec<Block>) {
        let depth = self.depth_of(ev);
        if let Some(d) = ev.env().dialect {
            self.saved_log = crate::dialect::registry::is_saved_log(d);
        }
        // The fold's rule for `run_ended.complete`, so that the view says why it is false.
        if matches!(ev, Event::RunStarted { .. }) || ev.ends_turn() {
            self.turn_open = false;
        } else if ev.opens_turn() {
            self.turn_open = true;
        }
        match ev {
            Event::RunStarted { env, .. } => {
                self.settle(out);
                if let Some(src) = &env.source {
                    // One span per path component (with its `/`): a long path is wrapped between
                    // components, never inside a name (unless the name alone is wider).
                    let mut spans = vec![Span::new(SpanKind::Meta, "── ")];
                    spans.extend(clean(src).split_inclusive('/').map(|part| Span::new(SpanKind::Meta, part)));
                    let line = Line { wrap: Wrap::Spans, ..Line::new(spans) };
                    out.push(Block::new(BlockKind::Source, 0, ev, vec![line]));
                }
            }
            Event::Heartbeat { .. } | Event::TurnStarted { .. } => {}
            Event::Usage { usage, .. } => {
                self.turn.requests += 1;
                self.turn.usage = Some(self.turn.usage.map_or(*usage, |u| crate::dialect::usage::add(u, *usage)));
                if usage.context.is_some() {
                    self.turn.context = usage.context;
                }
            }
            Event::RateLimit { window, window_minutes, status, used_percent, resets_at, .. } => {
                let rl = RateLimit {
                    window: clean(window),
                    window_minutes: *window_minutes,
                    status: status.as_deref().map(clean),
                    used_percent: *used_percent,
                    resets_at: resets_at.as_deref().map(clean),
                };
                let limits = &mut self.turn.rate_limits;
                match limits.iter().position(|r| r.window == rl.window) {
                    Some(i) => limits[i] = rl,
                    None if limits.len() < HOLD => limits.push(rl),
                    None => {}
                }
            }
            Event::OutputDelta { text, message_id, .. } => {
                self.flush_reasoning(out);
                self.flush_held(out);
                if self.text.first.is_some()
                    && (self.text.depth != depth
                        || (message_id.is_some()
                            && self.text.message_id.is_some()
                            && *message_id != self.text.message_id))
                {
                    self.flush_text(out);
                }
                if self.text.first.is_none() {
                    self.text = Pending {
                        text: String::new(),
                        message_id: message_id.clone(),
                        first: Some(ev.clone()),
                        depth,
                        scanned: 0,
                    };
                }
                self.text.text.push_str(&text.as_str());
                self.bound_text(false, out);
            }
            Event::Reasoning { text, .. } => {
                let Some(text) = text.as_ref().filter(|t| !t.is_empty()) else { return };
                self.flush_text(out);
                self.flush_held(out);
                if self.reasoning.first.is_some() && self.reasoning.depth != depth {
                    self.flush_reasoning(out);
                }
                if self.reasoning.first.is_none() {
                    self.reasoning =
                        Pending { text: String::new(), message_id: None, first: Some(ev.clone()), depth, scanned: 0 };
                }
                self.reasoning.text.push_str(&text.as_str());
                self.bound_text(true, out);
            }
            Event::ToolStarted { env, tool_id, name, kind, input, summary, synthetic } => {
                self.flush_text(out);
                self.flush_reasoning(out);
                // A subagent's call: its task is shown running before it.
                if self.held.iter().any(|h| h.block.depth != depth) {
                    self.flush_held(out);
                }
                if *kind == ToolKind::Task && self.task_depth.len() < REMEMBER {
                    self.task_depth.insert(tool_id.clone(), depth + 1);
                }
                let call = ToolCall {
                    summary: summary.as_deref().map(clean),
                    input: input.as_ref().map(|j| clean(j.get())),
                    ..ToolCall::running(tool_id.clone(), clean(name), Some(*kind), env.line)
                };
                let mut block = Block::new(BlockKind::Tool, depth, ev, Vec::new());
                block.tool = Some(call);
                // A call made up from a result has no start time of its own.
                let started_ms = env
                    .at
                    .as_deref()
                    .and_then(crate::read::time::parse_rfc3339_ms)
                    .filter(|_| *synthetic != Some(true));
                // Memory stays bounded whatever the stream: past a point, calls are shown running.
                if self.held.len() >= HOLD {
                    self.flush_held(out);
                }
                self.held.push(Held { block, extra: Vec::new(), plan: None, started_ms, done: false });
            }
            Event::ToolCompleted { env, tool_id, name, kind, ok, output, exit_code, error, duration_ms } => {
                let ended_ms = env.at.as_deref().and_then(crate::read::time::parse_rfc3339_ms);
                let fold = self.opts.fold_lines;
                let complete = |call: &mut ToolCall, started_ms: Option<i64>| {
                    call.outcome = if *ok { Outcome::Ok } else { Outcome::Failed };
                    call.exit_code = *exit_code;
                    call.error = error.as_deref().map(clean);
                    // Timestamps that are equal say nothing about a duration (rollouts stamp a
                    // call and its output alike).
                    call.duration_ms = duration_ms.or_else(|| {
                        let (s, e) = (started_ms?, ended_ms?);
                        u64::try_from(e - s).ok().filter(|d| *d > 0)
                    });
                    call.result_line = env.line;
                    call.output =
                        output.as_ref().map(|o| clean_lines(&o.as_str())).filter(|l| !l.is_empty()).map(|lines| {
                            let (shown, tail) = shown_lines(call.kind, call.outcome, &lines, fold);
                            Output { lines, shown, tail }
                        });
                };
                if let Some(h) =
                    self.held.iter_mut().find(|h| h.block.tool.as_ref().is_some_and(|t| t.id == *tool_id) && !h.done)
                {
                    if let Some(call) = h.block.tool.as_mut() {
                        complete(call, h.started_ms);
                    }
                    h.done = true;
                    self.emit_done_prefix(out);
                    return;
                }
                self.flush_text(out);
                self.flush_reasoning(out);
                self.flush_held(out);
                let (mut call, depth, started_ms) = match self.shown.remove(tool_id) {
                    Some(s) => (ToolCall { resumed: true, ..s.call }, s.depth, s.started_ms),
                    None => (
                        ToolCall::running(tool_id.clone(), clean(name.as_deref().unwrap_or("tool")), *kind, env.line),
                        depth,
                        None,
                    ),
                };
                complete(&mut call, started_ms);
                let mut block = Block::new(BlockKind::Tool, depth, ev, Vec::new());
                let plan = self.last_plan.as_deref().filter(|_| call.kind == Some(ToolKind::Plan));
                block.lines = tool_lines(&call, Vec::new(), plan);
                block.tool = Some(call);
                out.push(block);
            }
            Event::PlanUpdated { env, items } => {
                let lines = plan_lines(items);
                let made_by = |h: &Held| {
                    env.line.is_some()
                        && (h.block.line == env.line
                            || h.block.tool.as_ref().is_some_and(|t| t.result_line == env.line && h.plan.is_none()))
                };
                if let Some(h) = self.held.iter_mut().rev().find(|h| made_by(h)) {
                    h.extra.extend(lines);
                    h.plan = Some(items.clone());
                    self.last_plan = Some(items.clone());
                    return;
                }
                // The calls held until now end before this plan: a plan call among them is not
                // headed by a plan that came after it (a live flush would have shown it without).
                self.settle(out);
                self.last_plan = Some(items.clone());
                let mut all = vec![Line {
                    wrap: Wrap::Clip,
                    ..Line::new(vec![
                        Span::new(SpanKind::Meta, "☰ "),
                        Span::new(SpanKind::Activity(ToolKind::Plan), "Plan"),
                        Span::new(SpanKind::Meta, "  "),
                        Span::new(SpanKind::Target, plan_progress(items)),
                    ])
                }];
                all.extend(lines.into_iter().map(|mut l| {
                    l.prefix.insert(0, Span::new(SpanKind::Bullet, "    "));
                    l
                }));
                out.push(Block::new(BlockKind::Plan, depth, ev, all));
            }
            Event::NeedsInput { env, prompt, questions } => {
                let lines = question_lines(prompt.as_deref(), questions.as_ref().map(|q| q.value()));
                if let Some(h) = self.held.iter_mut().rev().find(|h| h.block.line == env.line && env.line.is_some()) {
                    h.extra.extend(lines);
                    return;
                }
                self.settle(out);
                out.push(Block::new(BlockKind::Question, depth, ev, lines));
            }
            Event::SessionStarted { env, model, cwd, cli_version, parent_session_id, .. } => {
                self.settle(out);
                let mut spans = vec![Span::new(SpanKind::Meta, "● session ")];
                spans.push(Span::new(SpanKind::Meta, clean(env.session_id.as_deref().unwrap_or("?"))));
                let cli = env.dialect.map(|d| d.as_str()).unwrap_or("cli");
                let version = cli_version.as_ref().map(|v| format!("{cli} {v}"));
                for (label, v) in [("", model), ("", &version), ("from ", parent_session_id), ("", cwd)] {
                    if let Some(v) = v {
                        spans.push(Span::new(SpanKind::Meta, format!(" · {label}{}", clean(v))));
                    }
                }
                let line = Line { wrap: Wrap::Clip, ..Line::new(spans) };
                out.push(Block::new(BlockKind::Session, depth, ev, vec![line]));
            }
            Event::UserMessage { text, .. } => {
                self.settle(out);
                let mut lines: Vec<Line> = clean_lines(&text.as_str())
                    .into_iter()
                    .map(|l| Line::new(vec![Span::new(SpanKind::User, l)]))
                    .collect();
                fold_text(&mut lines, self.opts.fold_text);
                for (i, l) in lines.iter_mut().enumerate() {
                    l.prefix = vec![Span::new(SpanKind::UserMarker, if i == 0 { "› " } else { "  " })];
                }
                if lines.is_empty() {
                    lines.push(Line { prefix: vec![Span::new(SpanKind::UserMarker, "› ")], ..Line::default() });
                }
                out.push(Block::new(BlockKind::User, depth, ev, lines));
            }
            Event::Subagent { env, child_id, operation, status, description, message, background, .. } => {
                let mut spans = vec![
                    Span::new(SpanKind::Subagent, format!("⇢ subagent {:?}", operation).to_lowercase()),
                    Span::new(SpanKind::Meta, format!(" {}", clean(child_id))),
                    Span::new(
                        if *status == SubagentStatus::Failed { SpanKind::Error } else { SpanKind::Meta },
                        format!(" · {status:?}").to_lowercase(),
                    ),
                ];
                if *background == Some(true) {
                    spans.push(Span::new(SpanKind::Meta, " · background"));
                }
                if let Some(d) = description.as_deref().or(message.as_deref()) {
                    spans.push(Span::new(
                        SpanKind::Prose,
                        format!("  {}", clean(crate::dialect::one_line(d).as_deref().unwrap_or(""))),
                    ));
                }
                let line = Line { wrap: Wrap::Clip, ..Line::new(spans) };
                if let Some(h) = self.held.iter_mut().rev().find(|h| h.block.line == env.line && env.line.is_some()) {
                    h.extra.push(line);
                    return;
                }
                self.settle(out);
                out.push(Block::new(BlockKind::Subagent, depth, ev, vec![line]));
            }
            Event::Compacted { trigger, pre_tokens, post_tokens, .. } => {
                self.settle(out);
                let mut text = String::from("⟳ conversation compacted");
                if let Some(t) = trigger {
                    text += &format!(" ({})", clean(t));
                }
                match (pre_tokens, post_tokens) {
                    (Some(a), Some(b)) => text += &format!(": {} → {} tokens", format_tokens(*a), format_tokens(*b)),
                    (Some(a), None) => text += &format!(": {} tokens before", format_tokens(*a)),
                    _ => {}
                }
                out.push(Block::new(
                    BlockKind::Compacted,
                    depth,
                    ev,
                    vec![Line::new(vec![Span::new(SpanKind::Meta, text)])],
                ));
            }
            Event::Interrupt { reason, .. } => {
                self.settle(out);
                let line = Line::new(vec![Span::new(SpanKind::Error, format!("⏸ interrupted: {}", clean(reason)))]);
                out.push(Block::new(BlockKind::Interrupt, depth, ev, vec![line]));
            }
            Event::Diagnostic { level, code, message, count, .. } => {
                self.settle(out);
                let mark = match level {
                    Level::Info => "ℹ",
                    Level::Warning => "⚠",
                    Level::Error => "✗",
                };
                let mut spans = vec![
                    Span::new(SpanKind::Diagnostic(*level), clean(code)),
                    Span::new(SpanKind::Prose, format!("  {}", clean_lines(message).join(" "))),
                ];
                if *count > 1 {
                    spans.push(Span::new(SpanKind::Meta, format!(" (×{count})")));
                }
                let prefix = vec![Span::new(SpanKind::Diagnostic(*level), format!("{mark} "))];
                out.push(Block::new(BlockKind::Diagnostic, depth, ev, vec![Line { prefix, ..Line::new(spans) }]));
            }
            Event::Unknown { env, reason, sample, .. } => {
                self.settle(out);
                let reason =
                    serde_json::to_value(reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
                let at = env.line.map(|l| format!(" line {l}")).unwrap_or_default();
                let spans = vec![
                    Span::new(SpanKind::Meta, format!("?{at} not understood ({reason}): ")),
                    Span::new(SpanKind::Meta, clean(sample)),
                ];
                out.push(Block::new(
                    BlockKind::Unknown,
                    depth,
                    ev,
                    vec![Line { wrap: Wrap::Clip, ..Line::new(spans) }],
                ));
            }
            Event::TurnCompleted { usage, usage_scope, cost_usd, model_usage, duration_ms, num_turns, .. } => {
                self.settle(out);
                let cost = self.turn_cost(ev, *cost_usd, model_usage.as_ref());
                self.footer(ev, false, *usage, *usage_scope, cost, *duration_ms, *num_turns, out);
            }
            Event::TurnFailed { error, kind, usage, usage_scope, cost_usd, model_usage, duration_ms, .. } => {
                self.settle(out);
                let cost = self.turn_cost(ev, *cost_usd, model_usage.as_ref());
                let why = match kind {
                    Some(FailureKind::Other) | None => String::new(),
                    Some(k) => format!(
                        " ({})",
                        serde_json::to_value(k).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
                    ),
                };
                let mut lines = vec![Line::new(vec![Span::new(SpanKind::Error, format!("✗ turn failed{why}"))])];
                for l in clean_lines(error) {
                    lines.push(Line {
                        prefix: vec![Span::new(SpanKind::Bullet, "  ")],
                        ..Line::new(vec![Span::new(SpanKind::Error, l)])
                    });
                }
                out.push(Block::new(BlockKind::Failure, depth, ev, lines));
                self.footer(ev, true, *usage, *usage_scope, cost, *duration_ms, None, out);
            }
            Event::RunEnded { unknown, complete, .. } => {
                self.finish(out);
                let mut spans = Vec::new();
                if !complete {
                    // `complete` is false for a turn left open or a last line without its
                    // newline: the view says which (an open turn when both).
                    let why = if self.turn_open && !self.saved_log {
                        "✗ the stream ended cut short: a turn was still open"
                    } else {
                        "✗ the stream ended cut short: its last line had no newline"
                    };
                    spans.push(Span::new(SpanKind::Error, why));
                }
                if *unknown > 0 {
                    let s = if *unknown == 1 { "" } else { "s" };
                    spans.push(Span::new(
                        SpanKind::Meta,
                        format!("{}{unknown} line{s} not understood", if spans.is_empty() { "" } else { " · " }),
                    ));
                }
                if !spans.is_empty() {
                    out.push(Block::new(BlockKind::End, 0, ev, vec![Line::new(spans)]));
                }
            }
        }
    }

    /// A live view has nothing more to read for now: appends tool calls still waiting for their
    /// result (as [`Outcome::Running`]; their results come later in a block with
    /// [`ToolCall::resumed`]) and the finished paragraphs of the text or reasoning being
    /// gathered (a paragraph still being written stays held: Markdown is parsed whole).
    pub fn flush(&mut self, out: &mut Vec<Block>) {
        for reasoning in [true, false] {
            self.release_paragraphs(reasoning, 1, out);
        }
        self.flush_held(out);
    }

    /// Emits the whole paragraphs of the text (or reasoning) being gathered; the one still being
    /// written stays (Markdown is parsed per block, and a code fence is never cut).
    /// It is searched again only once `growth` more bytes came since the last vain search.
    fn release_paragraphs(&mut self, reasoning: bool, growth: usize, out: &mut Vec<Block>) {
        {
            let pending = if reasoning { &mut self.reasoning } else { &mut self.text };
            if pending.text.len() < pending.scanned.saturating_add(growth) {
                return;
            }
            let Some(cut) = paragraph_cut(&pending.text) else {
                pending.scanned = pending.text.len();
                return;
            };
            let rest = Pending {
                text: pending.text.split_off(cut),
                message_id: pending.message_id.clone(),
                first: pending.first.clone(),
                depth: pending.depth,
                scanned: 0,
            };
            if reasoning {
                self.flush_reasoning(out);
            } else {
                self.flush_text(out);
            }
            let pending = if reasoning { &mut self.reasoning } else { &mut self.text };
            if !rest.text.trim().is_empty() {
                *pending = rest;
            }
        }
    }

    /// Keeps the text being gathered bounded: past [`TEXT_HOLD`] bytes its whole paragraphs are
    /// shown, and past four times that all of it.
    fn bound_text(&mut self, reasoning: bool, out: &mut Vec<Block>) {
        let len = |r: &Renderer| if reasoning { r.reasoning.text.len() } else { r.text.text.len() };
        if len(self) > TEXT_HOLD {
            self.release_paragraphs(reasoning, TEXT_HOLD / 8, out);
            if len(self) > 4 * TEXT_HOLD {
                if reasoning {
                    self.flush_reasoning(out);
                } else {
                    self.flush_text(out);
                }
            }
        }
    }

    /// The end of the input: appends everything still held, and a footer for usage or rate
    /// limits no turn end has shown.
    pub fn finish(&mut self, out: &mut Vec<Block>) {
        self.settle(out);
        if !self.turn.is_empty() {
            let turn = std::mem::take(&mut self.turn);
            let footer = Footer {
                usage: turn.usage,
                context: turn.context,
                requests: turn.requests,
                rate_limits: turn.rate_limits,
                ..Footer::default()
            };
            let block = Block {
                kind: BlockKind::Footer,
                depth: 0,
                session_id: None,
                line: None,
                at: None,
                lines: vec![footer_line(&footer)],
                tool: None,
                footer: Some(footer),
            };
            out.push(block);
        }
    }

    /// Emits everything held before a block of another kind.
    fn settle(&mut self, out: &mut Vec<Block>) {
        self.flush_text(out);
        self.flush_reasoning(out);
        self.flush_held(out);
    }

    fn depth_of(&self, ev: &Event) -> usize {
        let env = ev.env();
        match &env.parent_tool_id {
            Some(p) => self.task_depth.get(p).copied().unwrap_or(1),
            None => usize::from(env.sidechain == Some(true)),
        }
    }

    fn flush_text(&mut self, out: &mut Vec<Block>) {
        let p = std::mem::take(&mut self.text);
        let Some(first) = p.first else { return };
        let lines = markdown(&p.text);
        if !lines.is_empty() {
            out.push(Block::new(BlockKind::Text, p.depth, &first, lines));
        }
    }

    fn flush_reasoning(&mut self, out: &mut Vec<Block>) {
        let p = std::mem::take(&mut self.reasoning);
        let Some(first) = p.first else { return };
        let mut lines = markdown(&p.text);
        for l in &mut lines {
            for s in l.prefix.iter_mut().chain(l.spans.iter_mut()) {
                s.kind = SpanKind::Reasoning;
            }
        }
        fold_text(&mut lines, self.opts.fold_text);
        for (i, l) in lines.iter_mut().enumerate() {
            l.prefix.insert(0, Span::new(SpanKind::Reasoning, if i == 0 { "∴ " } else { "  " }));
        }
        if !lines.is_empty() {
            out.push(Block::new(BlockKind::Reasoning, p.depth, &first, lines));
        }
    }

    /// Emits the held calls that have their result, up to the first that has not.
    fn emit_done_prefix(&mut self, out: &mut Vec<Block>) {
        let mut n = self.held.iter().take_while(|h| h.done).count();
        // A plan call without its plan waits for the next event: some CLIs send the plan with
        // the result.
        if n == self.held.len()
            && let Some(last) = self.held.last()
            && last.plan.is_none()
            && last.block.tool.as_ref().is_some_and(|t| t.kind == Some(ToolKind::Plan))
        {
            n -= 1;
        }
        for h in self.held.drain(..n) {
            out.push(finish_held(h, self.last_plan.as_deref()));
        }
    }

    /// Emits every held call; those without a result as running.
    fn flush_held(&mut self, out: &mut Vec<Block>) {
        for h in std::mem::take(&mut self.held) {
            if !h.done
                && let Some(call) = &h.block.tool
                && self.shown.len() < REMEMBER
            {
                self.shown.insert(
                    call.id.clone(),
                    Shown { call: call.clone(), depth: h.block.depth, started_ms: h.started_ms },
                );
            }
            out.push(finish_held(h, self.last_plan.as_deref()));
        }
    }

    /// The turn's own cost: a cost that is a running total over the process (`cost_scope:
    /// session`, Claude's) is read as the usage report reads it ([`usage::RunningCost`]).
    fn turn_cost(
        &mut self,
        ev: &Event,
        reported: Option<f64>,
        models: Option<&std::collections::BTreeMap<String, crate::event::ModelUsage>>,
    ) -> Option<f64> {
        let env = ev.env();
        if ev.cost_scope() != Some(UsageScope::Session) {
            return reported;
        }
        if self.costs.len() >= REMEMBER && !self.costs.contains_key(&env.session_id) {
            self.costs.clear();
        }
        self.costs.entry(env.session_id.clone()).or_default().turn(reported, models)
    }

    #[allow(clippy::too_many_arguments)]
    fn footer(
        &mut self,
        ev: &Event,
        failed: bool,
        usage: Option<Usage>,
        scope: Option<UsageScope>,
        cost_usd: Option<f64>,
        duration_ms: Option<u64>,
        num_turns: Option<u64>,
        out: &mut Vec<Block>,
    ) {
        let turn = std::mem::take(&mut self.turn);
        let footer = Footer {
            turn_end: true,
            failed,
            usage: usage.or(turn.usage),
            session_scope: usage.is_some() && scope == Some(UsageScope::Session),
            context: turn.context,
            requests: turn.requests,
            cost_usd,
            duration_ms,
            num_turns,
            rate_limits: turn.rate_limits,
        };
        let empty = footer.usage.is_none()
            && footer.duration_ms.is_none()
            && footer.cost_usd.is_none()
            && footer.rate_limits.is_empty()
            && footer.requests == 0;
        if failed && empty {
            // The failure block says it all.
            return;
        }
        let mut block = Block::new(BlockKind::Footer, self.depth_of(ev), ev, vec![footer_line(&footer)]);
        block.footer = Some(footer);
        out.push(block);
    }
}

/// How many of its first and last output lines a finished call shows: reads, writes, edits,
/// searches and plans none when they succeed (their output is a file or a confirmation; the
/// headline counts the lines), everything else `fold` lines, half from the start and half from
/// the end, where a command says how it went (all when only one more would be hidden). The end
/// part starts at a line that is not blank.
fn shown_lines(kind: Option<ToolKind>, outcome: Outcome, lines: &[String], fold: usize) -> (usize, usize) {
    let total = lines.len();
    let quiet = matches!(
        kind,
        Some(ToolKind::Read | ToolKind::Write | ToolKind::Edit | ToolKind::Search | ToolKind::Plan | ToolKind::Ask)
    );
    if quiet && outcome == Outcome::Ok {
        return (0, 0);
    }
    if total <= fold.saturating_add(1) {
        (total, 0)
    } else {
        let head = fold.div_ceil(2);
        let mut want = fold - head;
        let mut start = total;
        while want > 0 && start > head {
            start -= 1;
            if !lines[start].trim().is_empty() {
                want -= 1;
            }
        }
        (head, total - start)
    }
}

/// A held call's block, its lines laid out; a plan call that set no plan of its own is headed
/// by the latest plan.
fn finish_held(mut h: Held, last_plan: Option<&[PlanItem]>) -> Block {
    if let Some(call) = &h.block.tool {
        let plan = h.plan.as_deref().or(last_plan.filter(|_| call.kind == Some(ToolKind::Plan)));
        h.block.lines = tool_lines(call, std::mem::take(&mut h.extra), plan);
    }
    h.block
}

/// The lines of a tool block: the headline, the plan or question made by the call, its error,
/// its output folded.
fn tool_lines(call: &ToolCall, extra: Vec<Line>, plan: Option<&[PlanItem]>) -> Vec<Line> {
    let indent = || vec![Span::new(SpanKind::Bullet, "    ")];
    let mark_text = match call.outcome {
        Outcome::Running => "…",
        Outcome::Ok => "✓",
        Outcome::Failed => "✗",
    };
    let kind = call.kind.unwrap_or(ToolKind::Other);
    let label = if kind == ToolKind::Other { call.name.clone() } else { activity_label(kind).to_owned() };
    let mut spans = vec![
        Span::new(SpanKind::Outcome(call.outcome), mark_text),
        Span::new(SpanKind::Meta, " "),
        Span::new(SpanKind::Activity(kind), label),
    ];
    let target =
        call.summary.clone().or_else(|| (kind != ToolKind::Other && !call.name.is_empty()).then(|| call.name.clone()));
    let target = match &plan {
        Some(items) if call.summary.is_none() => Some(plan_progress(items)),
        _ => target,
    };
    if let Some(t) = target {
        spans.push(Span::new(SpanKind::Meta, "  "));
        spans.push(Span::new(SpanKind::Target, t));
    }
    let mut meta = Vec::new();
    if let Some(code) = call.exit_code.filter(|c| *c != 0) {
        meta.push(Span::new(SpanKind::Error, format!("exit {code}")));
    }
    if let Some(out) = &call.output
        && out.shown == 0
        && matches!(kind, ToolKind::Read | ToolKind::Search)
    {
        let n = out.lines.len();
        meta.push(Span::new(SpanKind::Meta, format!("{n} line{}", if n == 1 { "" } else { "s" })));
    }
    if let Some(ms) = call.duration_ms {
        meta.push(Span::new(SpanKind::Duration, format_duration(ms)));
    }
    if call.outcome == Outcome::Running {
        meta.push(Span::new(SpanKind::Meta, "running"));
    }
    for m in meta {
        spans.push(Span::new(SpanKind::Meta, " · "));
        spans.push(m);
    }
    let mut lines = vec![Line { wrap: Wrap::Clip, ..Line::new(spans) }];
    for mut l in extra {
        l.prefix.splice(0..0, indent());
        lines.push(l);
    }
    // The error is left out where the headline or the shown output already says it (CLIs often
    // make it the output's first line, or its first characters).
    let says_exit = call.exit_code.is_some_and(|c| call.error.as_deref() == Some(&format!("exit code {c}")));
    let in_output = |err: &str| {
        call.output.as_ref().is_some_and(|o| {
            let shown = o.lines[..o.shown].join("\n");
            let err = err.trim();
            !err.is_empty() && shown.trim_start().starts_with(err)
        })
    };
    if let Some(err) = &call.error
        && !says_exit
        && !in_output(err)
    {
        lines.push(Line { prefix: indent(), ..Line::new(vec![Span::new(SpanKind::Error, err.clone())]) });
    }
    if let Some(out) = &call.output {
        let output_line = |l: &String| Line {
            prefix: indent(),
            wrap: Wrap::Pre,
            spans: vec![Span::new(SpanKind::Output, l.clone())],
        };
        let tail = out.tail.min(out.lines.len() - out.shown);
        lines.extend(out.lines[..out.shown].iter().map(output_line));
        let more = out.lines.len() - out.shown - tail;
        if more > 0 && out.shown + tail > 0 {
            let s = if more == 1 { "" } else { "s" };
            lines.push(Line {
                prefix: indent(),
                ..Line::new(vec![Span::new(SpanKind::More, format!("… {more} more line{s}"))])
            });
        }
        lines.extend(out.lines[out.lines.len() - tail..].iter().map(output_line));
    }
    lines
}

/// A plan as a checklist, one line per item.
fn plan_lines(items: &[PlanItem]) -> Vec<Line> {
    items
        .iter()
        .map(|item| {
            let mark = match item.status {
                PlanStatus::Completed => "[x] ",
                PlanStatus::InProgress => "[~] ",
                PlanStatus::Pending => "[ ] ",
                PlanStatus::Cancelled => "[-] ",
            };
            Line {
                prefix: vec![Span::new(SpanKind::PlanMarker(item.status), mark)],
                ..Line::new(vec![Span::new(SpanKind::PlanItem(item.status), clean_lines(&item.text).join(" "))])
            }
        })
        .collect()
}

/// `2/5 done`: the items completed of all.
fn plan_progress(items: &[PlanItem]) -> String {
    let done = items.iter().filter(|i| i.status == PlanStatus::Completed).count();
    format!("{done}/{} done", items.len())
}

/// The question(s) the agent asks: each question, then its options.
fn question_lines(prompt: Option<&str>, questions: Option<serde_json::Value>) -> Vec<Line> {
    let mut lines = Vec::new();
    let qs: Vec<&serde_json::Value> =
        questions.as_ref().and_then(|q| q.as_array()).map(|a| a.iter().collect()).unwrap_or_default();
    let mut asked = false;
    for q in &qs {
        let Some(text) = q.get("question").and_then(|t| t.as_str()) else { continue };
        asked = true;
        lines.push(Line::new(vec![Span::new(SpanKind::Question, format!("? {}", clean_lines(text).join(" ")))]));
        let options: Vec<String> = q
            .get("options")
            .and_then(|o| o.as_array())
            .map(|o| {
                o.iter().filter_map(|o| o.get("label").and_then(|l| l.as_str()).or(o.as_str())).map(clean).collect()
            })
            .unwrap_or_default();
        if !options.is_empty() {
            lines.push(Line {
                prefix: vec![Span::new(SpanKind::Bullet, "  ")],
                ..Line::new(vec![Span::new(SpanKind::Meta, options.join(" · "))])
            });
        }
    }
    if !asked && let Some(p) = prompt {
        lines.push(Line::new(vec![Span::new(SpanKind::Question, format!("? {}", clean_lines(p).join(" ")))]));
    }
    if lines.is_empty() {
        lines.push(Line::new(vec![Span::new(SpanKind::Question, "? (waiting for input)")]));
    }
    lines
}

/// Cuts `lines` to `keep` with a fold marker, unless only one more would be hidden.
fn fold_text(lines: &mut Vec<Line>, keep: usize) {
    if lines.len() > keep.saturating_add(1) {
        let more = lines.len() - keep;
        lines.truncate(keep);
        lines.push(Line::new(vec![Span::new(SpanKind::More, format!("… {more} more lines"))]));
    }
}

/// The end of the last whole paragraph of `text` outside a code fence, if any.
fn paragraph_cut(text: &str) -> Option<usize> {
    let mut fenced = false;
    let mut cut = None;
    let mut pos = 0;
    let mut prev_blank = false;
    for line in text.split_inclusive('\n') {
        let complete = line.ends_with('\n');
        let t = line.trim_start();
        if complete && (t.starts_with("```") || t.starts_with("~~~")) {
            fenced = !fenced;
        }
        pos += line.len();
        let blank = complete && t.trim().is_empty();
        if blank && !prev_blank && !fenced && pos < text.len() {
            cut = Some(pos);
        }
        prev_blank = blank;
    }
    cut
}

/// The footer line: `─ 11.4s · 4 requests · in 6 · cache 87.2k read 6.2k write · out 402 · $0.0512 · five_hour 45%`.
fn footer_line(f: &Footer) -> Line {
    let mut parts: Vec<Span> = Vec::new();
    let sep = |parts: &mut Vec<Span>| parts.push(Span::new(SpanKind::Meta, " · "));
    let label = match (f.failed, f.turn_end, f.usage.is_some()) {
        (true, _, _) => "turn failed",
        (false, true, _) => "turn done",
        (false, false, true) => "usage",
        (false, false, false) => "rate limits",
    };
    parts.push(Span::new(if f.failed { SpanKind::Error } else { SpanKind::Meta }, label));
    if let Some(ms) = f.duration_ms {
        sep(&mut parts);
        parts.push(Span::new(SpanKind::Duration, format_duration(ms)));
    }
    match (f.num_turns, f.requests) {
        (Some(n), _) => {
            sep(&mut parts);
            parts.push(Span::new(SpanKind::Meta, format!("{n} model turn{}", if n == 1 { "" } else { "s" })));
        }
        (None, n) if n > 0 => {
            sep(&mut parts);
            parts.push(Span::new(SpanKind::Meta, format!("{n} request{}", if n == 1 { "" } else { "s" })));
        }
        _ => {}
    }
    if let Some(u) = &f.usage {
        let mut t = Vec::new();
        if let Some(i) = u.input {
            t.push(format!("in {}", format_tokens(i)));
        }
        if let Some(r) = u.cache_read {
            t.push(format!("cached {}", format_tokens(r)));
        }
        if let Some(w) = u.cache_write {
            t.push(format!("cache write {}", format_tokens(w)));
        }
        if let Some(o) = u.output {
            t.push(format!("out {}", format_tokens(o)));
        }
        if let Some(r) = u.reasoning {
            t.push(format!("reasoning {}", format_tokens(r)));
        }
        if f.session_scope && !t.is_empty() {
            t[0] = format!("session total {}", t[0]);
        }
        for item in t {
            sep(&mut parts);
            parts.push(Span::new(SpanKind::Usage, item));
        }
    }
    if let Some(c) = f.context {
        sep(&mut parts);
        parts.push(Span::new(SpanKind::Usage, format!("context {}", format_tokens(c))));
    }
    if let Some(c) = f.cost_usd
        && c.is_finite()
    {
        sep(&mut parts);
        parts.push(Span::new(SpanKind::Cost, format!("${c:.4}")));
    }
    for rl in &f.rate_limits {
        sep(&mut parts);
        let warn = rl.used_percent.is_some_and(|p| p >= 80.0)
            || rl.status.as_deref().is_some_and(|s| s != "allowed" && !s.is_empty());
        let mut t = format!("limit {}", rl.window);
        if let Some(p) = rl.used_percent {
            t += &format!(" {p}% used");
        }
        if let Some(s) = rl.status.as_deref().filter(|s| *s != "allowed" || rl.used_percent.is_none()) {
            t += &format!(" {s}");
        }
        if warn && let Some(r) = &rl.resets_at {
            t += &format!(" (resets {r})");
        }
        parts.push(Span::new(SpanKind::RateLimit { warn }, t));
    }
    Line { prefix: vec![Span::new(SpanKind::Meta, "─ ")], spans: parts, wrap: Wrap::Spans }
}

#[cfg(test)]
mod tests;
