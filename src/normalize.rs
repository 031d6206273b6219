//! Lines in, events out: the line splitter, the stateless decode step and the ordered fold.
//!
//! The pipeline has two halves on purpose:
//! - [`decode`] turns one line into a [`Decoded`] (parsed, detected, mapped by every adapter the
//!   frame fits). It holds no stream state, so it can run on any thread and in any chunk.
//! - [`Fold`] applies the stream's state in input order: dialect stickiness, session id, text
//!   already streamed, usage already counted, tools already started, last rate-limit readings,
//!   counters. It fills the envelope and hands events to a [`Sink`].
//!
//! [`Normalizer`] joins them for one stream fed in arbitrary byte chunks: it splits lines with
//! memchr, handles CRLF, a BOM, blank lines, a last line without newline and lines over the
//! size limit, and writes `run_started` / `run_ended`.

use std::collections::HashMap;

use base64::Engine as _;

use crate::detect::{Detector, Fit, fit};
use crate::dialect::{self, HistoryMark, Mapped, Piece};
use crate::event::{CONTRACT_VERSION, Dialect, Envelope, Event, Text, ToolKind, UnknownReason, Usage};
use crate::frame::{NotFrame, Parser};
use crate::sink::Sink;
use crate::usage;

/// Default `--max-line-bytes`: 64 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// How a stream is normalized.
#[derive(Debug, Clone)]
pub struct Options {
    /// Force this dialect instead of detecting it.
    pub dialect: Option<Dialect>,
    /// The input's path, written as `source`.
    pub source: Option<String>,
    /// Write `observed_at` on every event.
    pub observed_at: bool,
    /// Add the source line as `raw` to every event.
    pub raw: bool,
    /// Which event types are written.
    pub filter: TypeFilter,
    /// Lines longer than this become `unknown` `line_too_long`.
    pub max_line_bytes: usize,
    /// Mask secrets in every event before it reaches the sink, also secrets split over streamed
    /// text pieces (`--redact`, [`crate::redact`]).
    pub redact: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            dialect: None,
            source: None,
            observed_at: true,
            raw: false,
            filter: TypeFilter::all(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            redact: false,
        }
    }
}

/// Which event types to write (`--only` / `--exclude`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeFilter(u32);

impl TypeFilter {
    /// Every type.
    pub fn all() -> TypeFilter {
        TypeFilter((1 << Event::TYPE_NAMES.len()) - 1)
    }

    /// Keeps only the named types; errors on a name outside the contract.
    pub fn only(names: &[String]) -> Result<TypeFilter, FilterError> {
        let mut bits = 0;
        for n in names {
            bits |= TypeFilter::bit(n)?;
        }
        Ok(TypeFilter(bits))
    }

    /// Drops the named types.
    pub fn exclude(self, names: &[String]) -> Result<TypeFilter, FilterError> {
        let mut bits = self.0;
        for n in names {
            bits &= !TypeFilter::bit(n)?;
        }
        Ok(TypeFilter(bits))
    }

    fn bit(name: &str) -> Result<u32, FilterError> {
        Event::TYPE_NAMES
            .iter()
            .position(|t| *t == name)
            .map(|i| 1 << i)
            .ok_or_else(|| FilterError::UnknownType(name.to_owned()))
    }

    /// Whether events of type `name` are written.
    pub fn allows(&self, name: &str) -> bool {
        TypeFilter::bit(name).is_ok_and(|b| self.0 & b != 0)
    }
}

/// A bad `--only` / `--exclude` list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// The name is not an event type of the contract.
    #[error("unknown event type `{0}` (one of: {types})", types = Event::TYPE_NAMES.join(", "))]
    UnknownType(String),
}

/// One line, decoded without any stream state.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// Empty or whitespace only.
    Blank,
    /// Not a JSON object: stderr text, banners, broken or non-object JSON.
    NotFrame {
        /// Why it is not a frame.
        reason: UnknownReason,
        /// The diagnostic a recognised non-JSON line stands for.
        diagnostic: Option<Box<Event>>,
    },
    /// A JSON object, with the mapping of every implemented dialect it fits.
    Frame {
        /// The dialects it fits.
        fit: Fit,
        /// The frame's `type` when it is a string.
        frame_type: Option<String>,
        /// One mapping per fitting dialect that has an adapter.
        mapped: Vec<(Dialect, Mapped)>,
    },
}

thread_local! {
    /// The lists of a line's mappings (one per fitting dialect), given back by the fold.
    static SPARE_MAPPED: dialect::SpareLists<(Dialect, Mapped)> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Maps one frame with the adapter of dialect `d`.
fn map_with(d: Dialect, frame: crate::frame::Val<'_>, m: &mut Mapped) {
    match d {
        Dialect::Claude => dialect::claude::map(frame, m),
        Dialect::ClaudeTranscript => dialect::claude_transcript::map(frame, m),
        Dialect::Codex => dialect::codex::map(frame, m),
        Dialect::CodexLegacy => dialect::codex_legacy::map(frame, m),
        Dialect::CodexRollout => dialect::codex_rollout::map(frame, m),
        Dialect::Gemini => dialect::gemini::map(frame, m),
        Dialect::Opencode => dialect::opencode::map(frame, m),
        Dialect::Cursor => dialect::cursor::map(frame, m),
    }
}

/// Decodes one line (no line ending). Stateless: `forced` is the `--dialect` option, not the
/// stream's detected dialect.
pub fn decode(parser: &mut Parser, line: &[u8], forced: Option<Dialect>) -> Decoded {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return Decoded::Blank;
    }
    parser.with_frame(line, |r| match r {
        Ok(frame) => {
            let fit = match forced {
                Some(d) => Fit::only(d),
                None => fit(frame),
            };
            let mut mapped = dialect::take_spare(&SPARE_MAPPED);
            mapped.extend(fit.iter().map(|d| {
                let mut m = Mapped::new();
                map_with(d, frame, &mut m);
                (d, m)
            }));
            Decoded::Frame { fit, frame_type: frame.string_at("type"), mapped }
        }
        Err(NotFrame::NotObject) => Decoded::NotFrame { reason: UnknownReason::NotObject, diagnostic: None },
        Err(NotFrame::Bad(reason)) => {
            // Only a UTF-8 line can be a diagnostic: its `raw` is text, while an `unknown` keeps
            // any other line losslessly (`raw_base64`).
            let diagnostic = if reason == UnknownReason::NotJson {
                std::str::from_utf8(line).ok().and_then(crate::stderr::recognize).map(Box::new)
            } else {
                None
            };
            Decoded::NotFrame { reason, diagnostic }
        }
    })
}

/// What a finished stream tells the caller, for the exit status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Lines read.
    pub lines: u64,
    /// Lines that ended as `unknown`.
    pub unknown: u64,
    /// A turn failed.
    pub turn_failed: bool,
    /// The stream ended with a turn open (never for saved logs).
    pub turn_open: bool,
    /// `run_ended.complete`: a final newline and no turn left open.
    pub complete: bool,
}

/// The ordered fold: the stream's state, applied to decoded lines in input order.
pub struct Fold {
    opts: Options,
    detector: Detector,
    session_id: Option<String>,
    sessions: Recent<()>,
    tools: Recent<(String, ToolKind)>,
    completed: Recent<()>,
    streamed: Recent<()>,
    usage_done: Recent<()>,
    stream_msg: Option<(String, Usage, Option<String>)>,
    rate: HashMap<String, (Option<String>, Option<f64>)>,
    turn_open: bool,
    turn_failed: bool,
    lines: u64,
    /// The last line that was not blank (held events flushed at the end carry it).
    last_content: u64,
    events: u64,
    unknown: u64,
    unknown_frames: std::collections::BTreeMap<String, u64>,
    observed_at: Option<String>,
    /// A reused buffer for the events of the line being applied.
    out_buf: Vec<Event>,
    /// `line_end` of the frame being applied, when it spans several lines.
    line_end: Option<u64>,
    /// Text written in the current turn, for CLIs that repeat it.
    turn_text: TurnText,
    /// The last cumulative token total (Codex `token_count`).
    last_total: Option<Usage>,
    /// A `turn_started` was written and its turn has not ended.
    turn_started: bool,
    /// Usage and cost of the current turn's steps (OpenCode).
    steps: Steps,
    /// A saved message whose usage is written once it has ended (Claude transcripts).
    growing: Option<Growing>,
    /// Events of earlier lines to write before the current line's.
    deferred: Vec<(Event, u64)>,
    /// Envelope facts of the frame being applied.
    cur: Current,
    /// The model the stream last named for its requests.
    model: Option<String>,
    /// The history a forked or subagent rollout copied from its parent, while it is being read.
    copy: Option<HistoryCopy>,
    /// `--redact`'s memory of text arriving in pieces.
    redaction: crate::redact::Redaction,
}

/// A forked or subagent rollout's copy of its ancestors' history, being read.
///
/// Codex writes the copy in one burst right after the fork's own `session_meta` (each line less
/// than a second after the one before); the fork's first own `token_count` comes only after a
/// real model request. So the copy ends at the first `token_count` or `session_meta` written one
/// second or more after the burst's last line (the rule ccusage and t3code use). Lines written
/// a second or more after the burst do not extend it. Inside it a `token_count` writes no `usage` and no `rate_limit`
/// (its running total is kept: it is what the fork inherited, so the fork's first own
/// `token_count` yields only its own increment), and a `session_meta` switches no session (a
/// `heartbeat`).
#[derive(Debug)]
struct HistoryCopy {
    /// The time of the last copied line, ms since the epoch.
    last_ms: i64,
}

/// How far apart in time the copied burst and the fork's own lines are at least.
const COPY_GAP_MS: i64 = 1000;

/// The frame being applied: what its events carry besides `line`.
#[derive(Debug, Default)]
struct Current {
    at: Option<String>,
    parent_tool_id: Option<String>,
    sidechain: Option<bool>,
}

/// A message's usage held until the message ends.
#[derive(Debug)]
struct Growing {
    message_id: String,
    event: Event,
    line: u64,
    at: Option<String>,
    parent_tool_id: Option<String>,
    sidechain: Option<bool>,
    /// The session the message belongs to (a later line may be of another session).
    session_id: Option<String>,
}

/// Distinct frame types counted in `run_ended.unknown_frames`; the rest count as `(other)`.
const MAX_UNKNOWN_FRAMES: usize = 1024;

/// Ids remembered for dedupe and pairing, the oldest forgotten past a bound so that memory does
/// not grow with the length of a stream (a message's repeats and a tool's result come soon after
/// it; 4 096 messages or 65 536 tool calls later they are long done).
///
/// The map and the order share each id (`Arc<str>`): one copy of it, made when it is inserted.
#[derive(Debug)]
struct Recent<V> {
    map: HashMap<std::sync::Arc<str>, V>,
    order: std::collections::VecDeque<std::sync::Arc<str>>,
    cap: usize,
}

impl<V> Recent<V> {
    fn new(cap: usize) -> Recent<V> {
        Recent { map: HashMap::new(), order: std::collections::VecDeque::new(), cap }
    }

    fn contains(&self, k: &str) -> bool {
        self.map.contains_key(k)
    }

    fn get(&self, k: &str) -> Option<&V> {
        self.map.get(k)
    }

    /// Inserts; returns false (and changes nothing) when `k` is already there.
    fn insert_with(&mut self, k: &str, v: V) -> bool {
        if self.map.contains_key(k) {
            return false;
        }
        if self.order.len() >= self.cap
            && let Some(old) = self.order.pop_front()
        {
            self.map.remove(&old);
        }
        let k: std::sync::Arc<str> = k.into();
        self.order.push_back(k.clone());
        self.map.insert(k, v);
        true
    }

    fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
    }
}

impl Recent<()> {
    fn insert(&mut self, k: &str) -> bool {
        self.insert_with(k, ())
    }
}

/// Text written in the current turn, so that repeats are written once.
#[derive(Debug, Default)]
struct TurnText {
    /// Everything written this turn.
    turn: String,
    /// Fragments since the last whole message.
    segment: String,
    /// The turn has streamed fragments.
    streamed: bool,
}

impl TurnText {
    /// Where the part of `text` not yet written starts (`&text[at..]`, not empty), if there is
    /// one; records it as written.
    ///
    /// Repeats are only looked for once the turn has streamed fragments: without them every
    /// whole message is new text (a CLI that only writes whole messages may well say the same
    /// thing twice).
    fn fresh(&mut self, text: &str, fragment: bool) -> Option<usize> {
        if fragment {
            self.streamed = true;
            self.segment.push_str(text);
            self.turn.push_str(text);
            return (!text.is_empty()).then_some(0);
        }
        if !self.streamed {
            return (!text.is_empty()).then_some(0);
        }
        let trimmed = text.trim_end();
        let at = if !self.segment.is_empty() && text.starts_with(self.segment.as_str()) {
            // A flush of the streamed segment, maybe with more: the rest is new.
            self.segment.len()
        } else if (!self.segment.is_empty() && self.segment.trim_end().starts_with(trimmed))
            || self.turn.trim_end().ends_with(trimmed)
        {
            // Covered by what was streamed (up to trailing white space), or a repeat of the
            // turn's text so far.
            text.len()
        } else {
            0
        };
        self.segment.clear();
        if at == text.len() {
            return None;
        }
        self.turn.push_str(&text[at..]);
        Some(at)
    }

    fn reset(&mut self) {
        self.turn.clear();
        self.segment.clear();
        self.streamed = false;
    }

    fn has_segment(&self) -> bool {
        !self.segment.is_empty()
    }
}

/// The sums over a turn's steps.
#[derive(Debug, Default)]
struct Steps {
    usage: Option<Usage>,
    cost: Option<f64>,
}

impl Steps {
    fn add(&mut self, u: &Usage, cost: Option<f64>) {
        self.usage = Some(usage::add(self.usage.unwrap_or_default(), *u));
        if let Some(c) = cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
    }

    /// The turn's `turn_completed`, with the sums; starts a new turn.
    fn turn_completed(&mut self, stop_reason: Option<String>) -> Event {
        let Steps { usage, cost } = std::mem::take(self);
        Event::TurnCompleted {
            env: Envelope::default(),
            usage,
            usage_scope: None,
            cost_usd: cost,
            duration_ms: None,
            num_turns: None,
            result: None,
            stop_reason,
            model_usage: None,
        }
    }
}

impl Fold {
    /// A fold for one stream.
    pub fn new(opts: Options) -> Fold {
        Fold {
            detector: Detector::new(opts.dialect),
            opts,
            session_id: None,
            sessions: Recent::new(1 << 10),
            tools: Recent::new(1 << 16),
            completed: Recent::new(1 << 16),
            streamed: Recent::new(1 << 12),
            usage_done: Recent::new(1 << 12),
            stream_msg: None,
            rate: HashMap::new(),
            turn_open: false,
            turn_failed: false,
            lines: 0,
            last_content: 0,
            events: 0,
            unknown: 0,
            unknown_frames: Default::default(),
            observed_at: None,
            out_buf: Vec::new(),
            line_end: None,
            turn_text: TurnText::default(),
            last_total: None,
            turn_started: false,
            steps: Steps::default(),
            growing: None,
            deferred: Vec::new(),
            cur: Current::default(),
            model: None,
            copy: None,
            redaction: Default::default(),
        }
    }

    /// Sets the `observed_at` time for the lines that follow (one reading per input read).
    pub fn set_observed_at(&mut self, now: String) {
        self.observed_at = Some(now);
    }

    /// Writes `run_started`.
    pub fn start(&mut self, sink: &mut dyn Sink) {
        let ev = Event::RunStarted {
            env: Envelope::default(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            contract: CONTRACT_VERSION,
        };
        self.emit(ev, None, sink);
    }

    /// Applies one decoded line (1-based `line_no`) and writes its events.
    pub fn apply(&mut self, decoded: Decoded, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        self.apply_lines(decoded, line_no, line_no, line, sink);
    }

    /// Applies one frame spread over the lines `first..=last` (a pretty-printed document): its
    /// events carry `line` = `first` and `line_end` = `last`.
    pub fn apply_lines(&mut self, decoded: Decoded, first: u64, last: u64, bytes: &[u8], sink: &mut dyn Sink) {
        self.line_end = (last != first).then_some(last);
        if !matches!(decoded, Decoded::Blank) {
            self.last_content = last;
        }
        self.apply_one(decoded, first, bytes, sink);
        self.line_end = None;
        self.lines = last;
    }

    fn apply_one(&mut self, decoded: Decoded, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        self.lines = line_no;
        self.cur = Current::default();
        match decoded {
            Decoded::Blank => {}
            Decoded::NotFrame { reason, diagnostic } => {
                let dialect = self.detector.current();
                match diagnostic {
                    Some(mut d) => self.emit_line(&mut d, dialect, line_no, line, sink),
                    None => self.unknown_line(reason, None, dialect, line_no, line, sink),
                }
            }
            Decoded::Frame { fit, frame_type, mapped } => {
                if fit.is_empty() {
                    // An object no dialect knows: carries the stream's dialect, like a non-JSON line.
                    let dialect = self.detector.current();
                    return self.unknown_line(
                        UnknownReason::UnrecognizedFrame,
                        frame_type,
                        dialect,
                        line_no,
                        line,
                        sink,
                    );
                }
                let Some(d) = self.detector.decide(fit) else {
                    return self.unknown_line(UnknownReason::UnrecognizedFrame, frame_type, None, line_no, line, sink);
                };
                let mut mapped = mapped;
                let m = mapped.iter().position(|(md, _)| *md == d).map(|i| mapped.swap_remove(i).1);
                dialect::give_spare(&SPARE_MAPPED, mapped);
                let Some(m) = m else {
                    // A dialect detected but not built yet.
                    return self.unknown_line(
                        UnknownReason::UnrecognizedFrame,
                        frame_type,
                        Some(d),
                        line_no,
                        line,
                        sink,
                    );
                };
                self.frame(d, m, line_no, line, sink);
            }
        }
    }

    fn frame(&mut self, d: Dialect, m: Mapped, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        let at = m.at.as_deref().and_then(normalize_at);
        let copied = self.copied(&m, at.as_deref());
        if let Some(id) = m.session_id.as_ref().filter(|id| !id.is_empty() && !copied)
            && self.session_id.as_deref() != Some(id.as_str())
        {
            self.session_id = Some(id.clone());
        }
        if let Some(reason) = m.unknown {
            let frame = (!m.frame.is_empty()).then_some(m.frame);
            return self.unknown_line(reason, frame, Some(d), line_no, line, sink);
        }
        let mut new_session = false;
        self.cur = Current { at, parent_tool_id: m.parent_tool_id, sidechain: m.sidechain };
        let mut out = std::mem::take(&mut self.out_buf);
        let mut pieces = m.pieces;
        for piece in pieces.drain(..) {
            let piece = if copied { self.copied_piece(piece) } else { Some(piece) };
            if let Some(piece) = piece {
                self.resolve(piece, line_no, &mut out, &mut new_session);
            }
        }
        Mapped::recycle(pieces);
        self.emit_deferred(Some(d), sink);
        // A line whose pieces all resolved to nothing (repeats, held usage) is still named.
        if out.is_empty() {
            out.push(Event::heartbeat(m.frame));
        }
        // Written in place: an event is a few hundred bytes, each move a copy.
        for ev in &mut out {
            self.emit_line(ev, Some(d), line_no, line, sink);
        }
        out.clear();
        self.out_buf = out;
    }

    /// Whether a rollout line is part of the history a fork copied from its parent (see
    /// [`HistoryCopy`]); starts and ends the copy. `at` is the line's normalized time.
    fn copied(&mut self, m: &Mapped, at: Option<&str>) -> bool {
        let Some(mark) = m.history else { return false };
        let starts = matches!(mark, HistoryMark::SessionMeta { forked: true });
        // The common case, a rollout that is no fork: no copy to track, no time to parse again.
        if self.copy.is_none() && !starts {
            return false;
        }
        let at_ms = at.and_then(crate::time::parse_rfc3339_ms);
        if let Some(copy) = &mut self.copy {
            // A line without a time cannot be shown to be later: it stays in the copy.
            let later = at_ms.is_some_and(|t| t.saturating_sub(copy.last_ms) >= COPY_GAP_MS);
            if !(later && matches!(mark, HistoryMark::SessionMeta { .. } | HistoryMark::TokenCount)) {
                // Only the burst moves its end: a later line of the fork's own (a prompt typed a
                // minute on) must not make the `token_count` right after it look copied.
                if let Some(t) = at_ms.filter(|_| !later) {
                    copy.last_ms = copy.last_ms.max(t);
                }
                return true;
            }
            self.copy = None;
        }
        // Without a time on the fork's own `session_meta` the copy cannot be told apart.
        if let (true, Some(t)) = (starts, at_ms)
            && m.unknown.is_none()
        {
            self.copy = Some(HistoryCopy { last_ms: t });
        }
        false
    }

    /// What remains of a piece of a copied line: no usage, rate limit or session start; a copied
    /// running total becomes the total the fork inherited.
    fn copied_piece(&mut self, piece: Piece) -> Option<Piece> {
        match piece {
            Piece::TokenCount { total, .. } => {
                self.last_total = Some(total);
                None
            }
            Piece::Event(Event::Usage { .. } | Event::RateLimit { .. } | Event::SessionStarted { .. }) => None,
            p => Some(p),
        }
    }

    /// Resolves one piece against the stream state into zero or more events.
    fn resolve(&mut self, piece: Piece, line_no: u64, out: &mut Vec<Event>, new_session: &mut bool) {
        match piece {
            Piece::Event(ev) => self.event(ev, line_no, out, new_session),
            Piece::WholeMessage { message_id, event } => {
                if message_id.as_ref().is_some_and(|id| self.streamed.contains(id)) {
                    return;
                }
                match event {
                    // Deltas streamed without a message_start naming their message (a stream
                    // joined midway): the whole message repeats them, write only the rest.
                    Event::OutputDelta { text, .. } if self.turn_text.has_segment() => {
                        let piece = Piece::TurnText { text, fragment: false, message_id };
                        self.resolve(piece, line_no, out, new_session);
                    }
                    _ => self.event(event, line_no, out, new_session),
                }
            }
            Piece::StreamStart { message_id, usage, model } => {
                self.flush_stream_usage(line_no, out, new_session);
                self.streamed.insert(&message_id);
                self.stream_msg = Some((message_id, usage, model));
            }
            Piece::StreamText(mut ev) => {
                if let (Event::OutputDelta { text, .. }, None) = (&ev, &self.stream_msg) {
                    self.turn_text.fresh(&text.as_str(), true);
                }
                if let (Event::OutputDelta { message_id, .. }, Some((id, _, _))) = (&mut ev, &self.stream_msg) {
                    *message_id = Some(id.clone());
                }
                self.event(ev, line_no, out, new_session);
            }
            Piece::StreamUsage { usage: fin } => {
                let (message_id, figures, model) = match &self.stream_msg {
                    Some((id, start, model)) => {
                        if !self.usage_done.insert(id) {
                            return;
                        }
                        // Input and cache figures from the message, the final output count here.
                        let u = Usage {
                            input: usage::start_or_delta(start.input, fin.input),
                            cache_read: usage::start_or_delta(start.cache_read, fin.cache_read),
                            cache_write: usage::start_or_delta(start.cache_write, fin.cache_write),
                            cache_write_1h: usage::start_or_delta(start.cache_write_1h, fin.cache_write_1h),
                            service_tier: start.service_tier.or(fin.service_tier),
                            output: fin.output,
                            ..Usage::default()
                        };
                        (Some(id.clone()), u, model.clone())
                    }
                    None => (None, fin, None),
                };
                let usage = usage::with_context(figures);
                self.event(
                    Event::Usage { env: Envelope::default(), usage, model, message_id, context_window: None },
                    line_no,
                    out,
                    new_session,
                );
            }
            Piece::MessageUsage { message_id, event } => {
                if let Some(id) = message_id
                    && (self.streamed.contains(&id) || !self.usage_done.insert(&id))
                {
                    return;
                }
                self.event(event, line_no, out, new_session);
            }
            Piece::ResetTools => {
                self.tools.clear();
                self.completed.clear();
                *new_session = true;
            }
            Piece::TurnText { text, fragment, message_id } => {
                let decoded = text.as_str();
                let Some(at) = self.turn_text.fresh(&decoded, fragment) else { return };
                // The whole text keeps its form (escaped as the input wrote it); only a tail is a
                // new string.
                let tail = (at > 0).then(|| Text::from(&decoded[at..]));
                drop(decoded);
                let text = tail.unwrap_or(text);
                self.event(
                    Event::OutputDelta { env: Envelope::default(), text, message_id },
                    line_no,
                    out,
                    new_session,
                );
            }
            Piece::TokenCount { total, event } => {
                if self.last_total == Some(total) {
                    return;
                }
                let before = self.last_total.replace(total);
                // Without the request's own figures: what the running total grew by (never what
                // a fork inherited).
                let ev = event.or_else(|| {
                    // A total below the last one is a new counter: counted whole.
                    let grown = match before {
                        Some(prev) if usage::covers(&total, &prev) => usage::minus(total, prev),
                        _ => total,
                    };
                    usage::non_empty(grown).map(|usage| Event::Usage {
                        env: Envelope::default(),
                        usage,
                        model: None,
                        message_id: None,
                        context_window: None,
                    })
                });
                if let Some(ev) = ev {
                    self.event(ev, line_no, out, new_session);
                }
            }
            Piece::StepStart => {
                if !self.turn_started {
                    self.event(Event::TurnStarted { env: Envelope::default() }, line_no, out, new_session);
                }
            }
            Piece::StepFinish { event, cost_usd, ends_turn, stop_reason } => {
                if let Event::Usage { usage, .. } = &event {
                    self.steps.add(usage, cost_usd);
                }
                self.event(event, line_no, out, new_session);
                if ends_turn {
                    let ev = self.steps.turn_completed(stop_reason);
                    self.event(ev, line_no, out, new_session);
                }
            }
            Piece::GrowingUsage { message_id, event } => {
                let Event::Usage { usage, .. } = &event else { return };
                match &mut self.growing {
                    Some(g) if g.message_id == message_id => {
                        if let Event::Usage { usage: held, .. } = &mut g.event {
                            *held = usage::with_context(usage::max_each(*held, *usage));
                        }
                        g.line = line_no;
                        g.at = self.cur.at.clone();
                    }
                    _ => {
                        self.flush_growing();
                        if self.usage_done.contains(&message_id) {
                            return;
                        }
                        self.growing = Some(Growing {
                            message_id,
                            event,
                            line: line_no,
                            at: self.cur.at.clone(),
                            parent_tool_id: self.cur.parent_tool_id.clone(),
                            sidechain: self.cur.sidechain,
                            session_id: self.session_id.clone(),
                        });
                        self.turn_open = true;
                    }
                }
            }
            Piece::EndMessage => self.flush_growing(),
            Piece::Model(model) => self.model = Some(model),
            Piece::Done => {
                if self.turn_open || self.turn_started {
                    let ev = self.steps.turn_completed(None);
                    self.event(ev, line_no, out, new_session);
                }
            }
        }
    }

    /// Ends the message held by a `GrowingUsage`: its usage is written before the current line's
    /// events, with its own last line.
    fn flush_growing(&mut self) {
        let Some(g) = self.growing.take() else { return };
        self.usage_done.insert(&g.message_id);
        let mut ev = g.event;
        let env = ev.env_mut();
        env.at = g.at;
        env.parent_tool_id = g.parent_tool_id;
        env.sidechain = g.sidechain;
        env.session_id = g.session_id;
        self.deferred.push((ev, g.line));
    }

    fn emit_deferred(&mut self, dialect: Option<Dialect>, sink: &mut dyn Sink) {
        for (ev, line) in std::mem::take(&mut self.deferred) {
            self.emit(ev, Some((line, dialect)), sink);
        }
    }

    /// A partial message whose `message_delta` never came (interrupted, cut) was still a billed
    /// request: its usage is written with the input and cache figures, without `output`.
    fn flush_stream_usage(&mut self, line_no: u64, out: &mut Vec<Event>, new_session: &mut bool) {
        let Some((id, start, model)) = &self.stream_msg else { return };
        if !self.usage_done.insert(id) {
            return;
        }
        let usage = usage::with_context(Usage { output: None, reasoning: None, ..*start });
        let ev = Event::Usage {
            env: Envelope::default(),
            usage,
            model: model.clone(),
            message_id: Some(id.clone()),
            context_window: None,
        };
        self.event(ev, line_no, out, new_session);
    }

    fn event(&mut self, mut ev: Event, line_no: u64, out: &mut Vec<Event>, new_session: &mut bool) {
        if matches!(ev, Event::TurnCompleted { .. } | Event::TurnFailed { .. } | Event::Interrupt { .. }) {
            self.flush_stream_usage(line_no, out, new_session);
        }
        match &mut ev {
            Event::SessionStarted { .. } => {
                let Some(id) = self.session_id.as_deref() else { return };
                // Claude repeats `system/init` every turn: one session_started per session.
                if !self.sessions.insert(id) && !*new_session {
                    return;
                }
            }
            Event::ToolStarted { tool_id, name, kind, .. } => {
                id_from_line(tool_id, line_no);
                if self.tools.contains(tool_id) {
                    // A second start of a started call (or the start a completion line carries for
                    // CLIs without start frames): nothing new. The line's heartbeat covers it.
                    return;
                }
                self.tools.insert_with(tool_id, (name.clone(), *kind));
            }
            Event::ToolCompleted { tool_id, name, kind, .. } => {
                id_from_line(tool_id, line_no);
                // A call completes once: a repeated completion line is nothing new.
                if !self.completed.insert(tool_id) {
                    return;
                }
                match self.tools.get(tool_id.as_str()) {
                    Some((n, k)) => {
                        name.get_or_insert_with(|| n.clone());
                        kind.get_or_insert(*k);
                    }
                    None => {
                        let n = name.clone().unwrap_or_else(|| "unknown".to_owned());
                        let k = kind.unwrap_or(ToolKind::Other);
                        self.tools.insert_with(tool_id, (n.clone(), k));
                        out.push(Event::ToolStarted {
                            env: Envelope::default(),
                            tool_id: tool_id.clone(),
                            name: n,
                            kind: k,
                            input: None,
                            summary: None,
                            synthetic: Some(true),
                        });
                    }
                }
            }
            Event::Usage { model, .. } if model.is_none() => model.clone_from(&self.model),
            Event::RateLimit { window, status, used_percent, .. } => {
                let reading = (status.clone(), *used_percent);
                if self.rate.get(window.as_str()) == Some(&reading) {
                    return;
                }
                self.rate.insert(window.clone(), reading);
            }
            _ => {}
        }
        match &ev {
            Event::TurnStarted { .. }
            | Event::OutputDelta { .. }
            | Event::Reasoning { .. }
            | Event::ToolStarted { .. }
            | Event::ToolCompleted { .. }
            | Event::Usage { .. } => self.turn_open = true,
            _ => {}
        }
        match &ev {
            Event::TurnStarted { .. } => self.turn_started = true,
            Event::TurnCompleted { .. } | Event::Interrupt { .. } | Event::TurnFailed { .. } => {
                self.turn_open = false;
                self.turn_started = false;
                self.turn_text.reset();
                self.steps = Steps::default();
                self.turn_failed |= matches!(ev, Event::TurnFailed { .. });
            }
            _ => {}
        }
        out.push(ev);
    }

    fn unknown_line(
        &mut self,
        reason: UnknownReason,
        frame: Option<String>,
        dialect: Option<Dialect>,
        line_no: u64,
        line: &[u8],
        sink: &mut dyn Sink,
    ) {
        if reason == UnknownReason::UnrecognizedFrame {
            let mut key = frame.clone().unwrap_or_else(|| "(no type)".to_owned());
            // Bounded: a stream of ever-new frame types must not grow the state without end.
            if self.unknown_frames.len() >= MAX_UNKNOWN_FRAMES && !self.unknown_frames.contains_key(&key) {
                key = "(other)".to_owned();
            }
            *self.unknown_frames.entry(key).or_insert(0) += 1;
        }
        let mut ev = unknown_event(reason, frame, line);
        self.emit_line(&mut ev, dialect, line_no, line, sink);
    }

    /// Writes the `unknown` for a line over the size limit, from its first bytes.
    pub fn too_long(&mut self, line_no: u64, head: &[u8], sink: &mut dyn Sink) {
        self.lines = line_no;
        self.last_content = line_no;
        let ev = Event::Unknown {
            env: Envelope::default(),
            reason: UnknownReason::LineTooLong,
            frame: None,
            sample: sample(head),
            raw: None,
            raw_base64: None,
        };
        let dialect = self.detector.current();
        self.unknown += 1;
        self.emit(ev, Some((line_no, dialect)), sink);
    }

    /// Writes an event of the line being applied: its envelope gets the frame's facts
    /// ([`Current`], lent to the event while the sink sees it, not cloned).
    fn emit_line(&mut self, ev: &mut Event, dialect: Option<Dialect>, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        let line_text = || Text::from(String::from_utf8_lossy(line).into_owned());
        // `unknown` and `diagnostic` carry the line in their own `raw`.
        let mut env_raw = self.opts.raw.then(line_text);
        match ev {
            Event::Diagnostic { raw, .. } => {
                *raw = line_text();
                env_raw = None;
            }
            Event::Unknown { .. } => {
                self.unknown += 1;
                env_raw = None;
            }
            _ => {}
        }
        if !self.opts.filter.allows(ev.type_name()) {
            return;
        }
        let env = ev.env_mut();
        env.parent_tool_id = self.cur.parent_tool_id.take();
        env.at = self.cur.at.take();
        env.sidechain = self.cur.sidechain;
        env.raw = env_raw;
        self.emit_ref(ev, Some((line_no, dialect)), sink);
        let env = ev.env_mut();
        self.cur.parent_tool_id = env.parent_tool_id.take();
        self.cur.at = env.at.take();
    }

    fn emit(&mut self, mut ev: Event, line: Option<(u64, Option<Dialect>)>, sink: &mut dyn Sink) {
        if self.opts.filter.allows(ev.type_name()) {
            self.emit_ref(&mut ev, line, sink);
        }
    }

    /// Fills the envelope of an event the filter allows and hands it to the sink.
    ///
    /// The stream's `source`, `session_id` and `observed_at` are lent to the event for the time
    /// the sink sees it and taken back afterwards (a sink that keeps events clones them), so a
    /// written event costs no copy of them. Nothing between lending and taking back writes them
    /// (`--redact` masks only text and `raw`).
    fn emit_ref(&mut self, ev: &mut Event, line: Option<(u64, Option<Dialect>)>, sink: &mut dyn Sink) {
        let stream_session = !matches!(ev, Event::RunStarted { .. } | Event::RunEnded { .. });
        if self.opts.observed_at && self.observed_at.is_none() {
            self.observed_at = Some(crate::time::now());
        }
        let env = ev.env_mut();
        if let Some((n, d)) = line {
            env.line = Some(n);
            env.line_end = self.line_end;
            env.dialect = d;
        }
        env.source = self.opts.source.take();
        // A held event (a transcript message's usage) keeps the session it was made in.
        let lend_session = stream_session && env.session_id.is_none();
        if lend_session {
            env.session_id = self.session_id.take();
        }
        if self.opts.observed_at {
            env.observed_at = self.observed_at.take();
        }
        if !matches!(ev, Event::RunEnded { .. }) {
            self.events += 1;
        }
        if self.opts.redact {
            self.redaction.event(ev);
        }
        sink.event(ev);
        let env = ev.env_mut();
        self.opts.source = env.source.take();
        if lend_session {
            self.session_id = env.session_id.take();
        }
        if self.opts.observed_at {
            self.observed_at = env.observed_at.take();
        }
    }

    /// Writes `run_ended` and says how the stream went. `ended_with_newline` is false when the
    /// input stopped mid-line.
    pub fn finish(&mut self, ended_with_newline: bool, sink: &mut dyn Sink) -> Summary {
        let mut out = std::mem::take(&mut self.out_buf);
        // Held events belong to a line that had content, never to trailing blank lines.
        let last = self.last_content;
        self.flush_stream_usage(last, &mut out, &mut false);
        self.flush_growing();
        let dialect = self.detector.current();
        self.emit_deferred(dialect, sink);
        for ev in out.drain(..) {
            self.emit(ev, Some((last, dialect)), sink);
        }
        self.out_buf = out;
        let saved_log = self.detector.current().is_some_and(Dialect::is_saved_log);
        let open = self.turn_open && !saved_log;
        let complete = ended_with_newline && !open;
        let ev = Event::RunEnded {
            env: Envelope::default(),
            lines: self.lines,
            events: self.events,
            unknown: self.unknown,
            unknown_frames: (!self.unknown_frames.is_empty()).then(|| self.unknown_frames.clone()),
            complete,
        };
        self.emit(ev, None, sink);
        Summary { lines: self.lines, unknown: self.unknown, turn_failed: self.turn_failed, turn_open: open, complete }
    }
}

/// A tool call with no id gets `line:<n>` (SPEC §5).
fn id_from_line(tool_id: &mut String, line_no: u64) {
    if tool_id.is_empty() {
        *tool_id = format!("line:{line_no}");
    }
}

/// A frame timestamp as RFC 3339 UTC with milliseconds: epoch numbers converted, RFC 3339 strings
/// in any offset brought to UTC, anything else (a placeholder such as `<TIMESTAMP>`) left out.
fn normalize_at(at: &str) -> Option<String> {
    if let Ok(n) = at.parse::<f64>() {
        return crate::time::from_epoch(n);
    }
    crate::time::parse_rfc3339_ms(at).map(crate::time::rfc3339_millis)
}

/// The first 200 characters of a line (`unknown.sample`).
pub(crate) fn sample(line: &[u8]) -> String {
    sample_str(&String::from_utf8_lossy(line))
}

/// The first 200 characters of `text`: cut where the 201st starts (one copy, not 200 pushes).
fn sample_str(text: &str) -> String {
    // 200 bytes or fewer are 200 characters or fewer.
    let end = if text.len() <= 200 { text.len() } else { text.char_indices().nth(200).map_or(text.len(), |(i, _)| i) };
    text[..end].to_owned()
}

fn unknown_event(reason: UnknownReason, frame: Option<String>, line: &[u8]) -> Event {
    let (raw, raw_base64, sample) = match std::str::from_utf8(line) {
        Ok(s) => (Text::from(s), None, sample_str(s)),
        Err(_) => {
            let text = String::from_utf8_lossy(line).into_owned();
            let sample = sample_str(&text);
            (Text::from(text), Some(base64::engine::general_purpose::STANDARD.encode(line)), sample)
        }
    };
    Event::Unknown { env: Envelope::default(), reason, frame, sample, raw: Some(raw), raw_base64 }
}

/// Normalizes one stream fed in arbitrary byte chunks.
///
/// ```
/// use agentnorm::{Normalizer, Options, Event};
/// let mut events: Vec<Event> = Vec::new();
/// let mut n = Normalizer::new(Options { observed_at: false, ..Options::default() });
/// n.feed(b"{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.sta", &mut events);
/// n.feed(b"rted\"}\n", &mut events);
/// n.finish(&mut events);
/// let types: Vec<&str> = events.iter().map(|e| e.type_name()).collect();
/// assert_eq!(types, ["run_started", "session_started", "turn_started", "run_ended"]);
/// ```
pub struct Normalizer {
    fold: Fold,
    parser: Parser,
    forced: Option<Dialect>,
    max_line: usize,
    carry: Vec<u8>,
    /// Bytes of the line being skipped because it is over the limit (its head is in `carry`).
    overlong: Option<u64>,
    line_no: u64,
    started: bool,
    /// A non-blank line has been seen (a document can only start the source).
    seen_content: bool,
    /// The input has ended: a last line without `\n` keeps a final `\r` (a lone `\r` is content).
    at_eof: bool,
    /// A pretty-printed JSON document being collected.
    doc: Option<Document>,
    /// Lines of the chunk being fed that were already decoded (on any thread).
    pre: Option<PreLines>,
}

/// The decoded lines of a chunk handed to [`Normalizer::feed_predecoded`], consumed as the
/// splitter reaches them.
struct PreLines {
    /// The line number of the next entry.
    next: u64,
    entries: std::vec::IntoIter<Option<crate::chunked::PreLine>>,
}

/// A pretty-printed JSON document spread over several lines (Gemini's `--output-format json`):
/// it starts with a line that is exactly `{` as the source's first non-blank line and ends at the
/// first later line that is exactly `}` (SPEC §1).
struct Document {
    first: u64,
    bytes: Vec<u8>,
    /// End offset in `bytes` of each line collected.
    ends: Vec<usize>,
}

/// A document longer than this many lines or bytes is read line by line instead.
const DOC_MAX_LINES: usize = 10_000;
const DOC_MAX_BYTES: usize = 64 << 20;

impl Normalizer {
    /// A normalizer for one stream.
    pub fn new(opts: Options) -> Normalizer {
        Normalizer {
            forced: opts.dialect,
            max_line: opts.max_line_bytes.max(1),
            fold: Fold::new(opts),
            parser: Parser::default(),
            carry: Vec::new(),
            overlong: None,
            line_no: 0,
            started: false,
            seen_content: false,
            at_eof: false,
            doc: None,
            pre: None,
        }
    }

    /// Feeds the next bytes of the stream like [`feed`](Normalizer::feed), with the lines that
    /// [`chunked::predecode`](crate::chunked::predecode) decoded from the same bytes (on any
    /// thread). The output is exactly `feed`'s: the splitter, the document and long-line rules
    /// and the fold run here as always; only the stateless decode of a line is taken from `pre`
    /// where it was made from the very bytes the splitter hands out.
    pub fn feed_predecoded(&mut self, chunk: &[u8], pre: crate::chunked::Predecoded, sink: &mut dyn Sink) {
        // A line already begun before this chunk completes first and was not decoded there.
        let pending = !self.carry.is_empty() || self.overlong.is_some();
        if pre.mid_line == pending {
            self.pre = Some(PreLines { next: self.line_no + 1 + u64::from(pending), entries: pre.lines.into_iter() });
        }
        self.feed(chunk, sink);
        self.pre = None;
    }

    /// Whether the stream has begun (`run_started` was written): bytes were fed, or it finished.
    pub fn started(&self) -> bool {
        self.started
    }

    /// What [`decode`] is called with for this stream: the forced dialect and the line limit.
    pub fn decode_options(&self) -> (Option<Dialect>, usize) {
        (self.forced, self.max_line)
    }

    /// The predecoded form of line `self.line_no`, when there is one made from `line`.
    fn take_pre(&mut self, line: &[u8]) -> Option<Decoded> {
        let pre = self.pre.as_mut()?;
        // Lines the splitter took elsewhere (document lines, long lines) are passed over.
        while pre.next < self.line_no {
            pre.entries.next()?;
            pre.next += 1;
        }
        if pre.next != self.line_no {
            return None;
        }
        pre.next += 1;
        let entry = pre.entries.next()??;
        (entry.len == line.len()).then_some(entry.decoded)
    }

    fn ensure_started(&mut self, sink: &mut dyn Sink) {
        if !self.started {
            self.started = true;
            self.fold.start(sink);
        }
    }

    /// Feeds the next bytes of the stream; writes the events of every line they complete.
    pub fn feed(&mut self, mut chunk: &[u8], sink: &mut dyn Sink) {
        self.ensure_started(sink);
        if self.fold.opts.observed_at {
            self.fold.set_observed_at(crate::time::now());
        }
        while !chunk.is_empty() {
            let nl = memchr::memchr(b'\n', chunk);
            let (part, rest, complete) = match nl {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &chunk[chunk.len()..], false),
            };
            chunk = rest;
            if let Some(skipped) = &mut self.overlong {
                *skipped += part.len() as u64;
                // The sample is the line's first 1024 bytes however the line was split.
                let head = 1024usize.saturating_sub(self.carry.len()).min(part.len());
                self.carry.extend_from_slice(&part[..head]);
            } else if self.carry.is_empty() && complete && part.len() <= self.max_line {
                // The common case: a whole line inside the chunk, no copy.
                self.line(part, sink);
                continue;
            } else {
                let room = self.max_line.saturating_sub(self.carry.len());
                if part.len() > room {
                    let head = 1024usize.saturating_sub(self.carry.len()).min(part.len());
                    self.carry.extend_from_slice(&part[..head]);
                    self.carry.truncate(1024);
                    self.overlong = Some(part.len() as u64);
                } else {
                    self.carry.extend_from_slice(part);
                }
            }
            if complete {
                self.end_carried_line(sink);
            }
        }
    }

    fn end_carried_line(&mut self, sink: &mut dyn Sink) {
        let carry = std::mem::take(&mut self.carry);
        if self.overlong.take().is_some() {
            // A line over the limit is never part of a document, and it is content: the lines
            // of a document being collected come first, and none can start after it.
            self.replay_document(sink);
            self.seen_content = true;
            self.line_no += 1;
            self.fold.too_long(self.line_no, &carry, sink);
        } else {
            self.line(&carry, sink);
        }
        self.carry = carry;
        self.carry.clear();
    }

    /// Normalizes one whole line (without its `\n`).
    pub fn line(&mut self, mut line: &[u8], sink: &mut dyn Sink) {
        self.ensure_started(sink);
        self.line_no += 1;
        if self.line_no == 1 {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if !self.at_eof {
            line = line.strip_suffix(b"\r").unwrap_or(line);
        }
        if let Some(doc) = &mut self.doc {
            doc.bytes.push(b'\n');
            doc.bytes.extend_from_slice(line);
            doc.ends.push(doc.bytes.len());
            if line == b"}" {
                self.end_document(sink);
            } else if doc.ends.len() > DOC_MAX_LINES || doc.bytes.len() > DOC_MAX_BYTES {
                self.replay_document(sink);
            }
            return;
        }
        if !self.seen_content && !line.iter().all(|b| b.is_ascii_whitespace()) {
            self.seen_content = true;
            if line == b"{" {
                self.doc = Some(Document { first: self.line_no, bytes: line.to_vec(), ends: vec![1] });
                return;
            }
        }
        let decoded = match self.take_pre(line) {
            Some(d) => d,
            None => decode(&mut self.parser, line, self.forced),
        };
        self.fold.apply(decoded, self.line_no, line, sink);
    }

    /// A document's closing `}` arrived: one frame if it parses, else line by line.
    fn end_document(&mut self, sink: &mut dyn Sink) {
        let Some(doc) = self.doc.take() else { return };
        let decoded = decode(&mut self.parser, &doc.bytes, self.forced);
        if matches!(decoded, Decoded::Frame { .. }) {
            self.fold.apply_lines(decoded, doc.first, self.line_no, &doc.bytes, sink);
        } else {
            self.doc = Some(doc);
            self.replay_document(sink);
        }
    }

    /// Reads the lines of an unfinished or unreadable document each on its own.
    fn replay_document(&mut self, sink: &mut dyn Sink) {
        let Some(doc) = self.doc.take() else { return };
        let mut start = 0;
        for (i, &end) in doc.ends.iter().enumerate() {
            let line = &doc.bytes[start..end];
            start = end + 1;
            let decoded = decode(&mut self.parser, line, self.forced);
            self.fold.apply(decoded, doc.first + i as u64, line, sink);
        }
    }

    /// Ends the stream: a last line without newline is read, then `run_ended` is written.
    pub fn finish(&mut self, sink: &mut dyn Sink) -> Summary {
        self.ensure_started(sink);
        // A source that is only a byte-order mark is empty.
        let only_bom = self.line_no == 0 && self.carry == b"\xEF\xBB\xBF";
        let mid_line = (!self.carry.is_empty() && !only_bom) || self.overlong.is_some();
        if mid_line {
            self.at_eof = true;
            self.end_carried_line(sink);
        }
        self.replay_document(sink);
        self.fold.finish(!mid_line, sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample is the first 200 characters, whatever their width, and the whole of a shorter line.
    #[test]
    fn samples_cut_at_200_characters() {
        for (line, want) in [
            ("é".repeat(150), 150),
            ("é".repeat(250), 200),
            ("a".repeat(200), 200),
            (format!("{}😀😀", "a".repeat(199)), 200),
        ] {
            let got = sample(line.as_bytes());
            assert_eq!(got.chars().count(), want);
            assert!(line.starts_with(&got));
            assert_eq!(sample_str(&line), got);
        }
        let mut bad = vec![0xff; 300];
        bad[0] = b'{';
        assert_eq!(sample(&bad).chars().count(), 200);
    }
}
