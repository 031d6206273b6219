//! Lines in, events out: the line splitter, the stateless decode step and the ordered fold.
//!
//! The pipeline has two halves on purpose:
//! - [`decode`] turns one line into a [`Decoded`] (parsed, detected, mapped by the adapters of
//!   the dialects the frame fits). It holds no stream state, so it can run on any thread and in
//!   any chunk; what it is told of the stream's detector ([`Possible`]: exactly its state on one
//!   thread, what a chunk's own frames say on a worker) only spares it mappings the fold would
//!   throw away.
//! - [`Fold`] applies the stream's state in input order: dialect stickiness, session id, text
//!   already streamed, usage already counted, tools already started, last rate-limit readings,
//!   counters. It fills the envelope and hands events to a [`Sink`].
//!
//! [`Normalizer`] joins them for one stream fed in arbitrary byte chunks: it cuts lines by the
//! rules of `read::lines` (CRLF, a BOM, the size limit; the all-cores path cuts by the same),
//! handles blank lines, a last line without newline, lines over the size limit and documents,
//! and writes `run_started` / `run_ended`.

mod fold;
pub mod parallel;
pub mod redact;
pub mod survey;

pub use fold::Fold;
pub(crate) use fold::sample;

use crate::dialect::detect::{Fit, Possible, fit_in};
use crate::dialect::{self, Mapped};
use crate::event::sink::Sink;
use crate::event::{Dialect, Event, UnknownReason};
use crate::read::frame::{NotFrame, Parser};
use crate::read::lines;

/// Default `--max-line-bytes`: 64 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// How a stream is normalized.
///
/// Built from [`Options::default`] with one method per setting, so that settings can be added
/// without breaking callers:
///
/// ```
/// use agentnorm::{Dialect, Options};
/// let opts = Options::default().observed_at(false).dialect(Some(Dialect::Codex)).raw(true);
/// assert!(opts.raw && !opts.observed_at);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// text pieces (`--redact`, [`crate::redact_event`]).
    pub redact: bool,
    /// The input is a file holding one JSON document (a saved session kept as `.json`, see
    /// [`crate::files::is_document_name`]): a pretty-printed document is read as one frame
    /// however many lines it has (up to 64 MiB), where a stream's is read line by line past
    /// 10 000 lines (SPEC §1).
    pub document: bool,
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
            document: false,
        }
    }
}

/// One builder method per field of [`Options`], each returning the options changed.
macro_rules! option_setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty;)*) => {
        impl Options {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Options {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

option_setters! {
    /// Forces this dialect (`None`: detect it per frame).
    dialect: Option<Dialect>;
    /// The input's path, written as `source`.
    source: Option<String>;
    /// Whether `observed_at` is written on every event.
    observed_at: bool;
    /// Whether the source line is added as `raw` to every event.
    raw: bool;
    /// Which event types are written.
    filter: TypeFilter;
    /// Lines longer than this become `unknown` `line_too_long`.
    max_line_bytes: usize;
    /// Whether secrets are masked (`--redact`).
    redact: bool;
    /// Whether the input is a file of one JSON document (no line limit on a pretty-printed one).
    document: bool;
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
    /// A JSON object, with the mapping of every dialect it fits that the stream may read it as.
    Frame {
        /// The dialects it fits.
        fit: Fit,
        /// The frame's `type` when it is a string and no dialect fits the frame (the `frame` of
        /// its `unknown`); `None` when a dialect fits.
        frame_type: Option<String>,
        /// One mapping per fitting dialect the stream's detector may pick ([`decode`]: every
        /// one); the fold maps the line again for a dialect missing here.
        mapped: Vec<(Dialect, Mapped)>,
    },
}

/// The mapping of `frame` by the adapter of `d`.
fn map_as(d: Dialect, frame: crate::read::frame::Val<'_>, usage_only: bool) -> (Dialect, Mapped) {
    let mut m = Mapped::new();
    m.usage_only = usage_only;
    dialect::registry::map(d, frame, &mut m);
    (d, m)
}

/// `line` (as it was decoded) mapped again by the adapter of `d`, for a [`Decoded`] made
/// without it; `None` when it is not a frame (it was one when decoded: never).
pub(crate) fn remap(parser: &mut Parser, line: &[u8], d: Dialect) -> Option<Mapped> {
    parser.with_frame(line, |r| r.ok().map(|frame| map_as(d, frame, false).1))
}

thread_local! {
    /// The lists of a line's mappings (one per fitting dialect), given back by the fold.
    static SPARE_MAPPED: dialect::SpareLists<(Dialect, Mapped)> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Decodes one line (no line ending). Stateless: `forced` is the `--dialect` option, not the
/// stream's detected dialect, and the frame is mapped by every adapter it fits.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn decode(parser: &mut Parser, line: &[u8], forced: Option<Dialect>) -> Decoded {
    let mut any = Possible::ANY;
    decode_for(parser, line, forced, &mut any, false, None)
}

/// [`decode`], mapping the frame only for the dialects the stream's detector may pick from the
/// states `possible` holds (which it then advances past the line, [`Possible::decide`]), and
/// for usage only when `usage_only` ([`Mapped::usage_only`]). `exact` is the stream's dialect
/// when the caller is the fold itself (its detector's, not a guess): a frame its adapter claims
/// with its whole envelope is then not offered to the other adapters ([`detect::fit_in`]).
pub(crate) fn decode_for(
    parser: &mut Parser,
    line: &[u8],
    forced: Option<Dialect>,
    possible: &mut Possible,
    usage_only: bool,
    exact: Option<Dialect>,
) -> Decoded {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return Decoded::Blank;
    }
    parser.with_frame(line, |r| match r {
        Ok(frame) => {
            let fit = match forced {
                Some(d) => Fit::only(d),
                None => fit_in(frame, exact),
            };
            let mut mapped = dialect::take_spare(&SPARE_MAPPED);
            mapped.extend(possible.decide(fit).iter().map(|d| map_as(d, frame, usage_only)));
            let frame_type = if fit.is_empty() { frame.string_at("type") } else { None };
            Decoded::Frame { fit, frame_type, mapped }
        }
        Err(NotFrame::NotObject) => Decoded::NotFrame { reason: UnknownReason::NotObject, diagnostic: None },
        Err(NotFrame::Bad(reason)) => {
            // Only a UTF-8 line can be a diagnostic: its `raw` is text, while an `unknown` keeps
            // any other line losslessly (`raw_base64`).
            let diagnostic = if reason == UnknownReason::NotJson {
                std::str::from_utf8(line).ok().and_then(crate::dialect::stderr::recognize).map(Box::new)
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

/// Normalizes one stream fed in arbitrary byte chunks.
///
/// ```
/// use agentnorm::{Normalizer, Options, Event};
/// let mut events: Vec<Event> = Vec::new();
/// let mut n = Normalizer::new(Options::default().observed_at(false));
/// n.feed(b"{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.sta", &mut events);
/// n.feed(b"rted\"}\n", &mut events);
/// n.finish(&mut events);
/// let types: Vec<&str> = events.iter().map(|e| e.type_name()).collect();
/// assert_eq!(types, ["run_started", "session_started", "turn_started", "run_ended"]);
/// ```
pub struct Normalizer {
    fold: Fold,
    forced: Option<Dialect>,
    max_line: usize,
    /// [`Options::document`].
    document: bool,
    carry: Vec<u8>,
    /// Bytes of the line being skipped because it is over the limit (its head is in `carry`).
    overlong: Option<u64>,
    line_no: u64,
    started: bool,
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
    entries: std::vec::IntoIter<Option<crate::normalize::parallel::PreLine>>,
}

/// A pretty-printed JSON document spread over several lines (Gemini's `--output-format json`):
/// it starts with any line that is exactly `{` and ends at the first later line that is exactly
/// `}` (SPEC §1).
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
            document: opts.document,
            fold: Fold::new(opts),
            carry: Vec::new(),
            overlong: None,
            line_no: 0,
            started: false,
            at_eof: false,
            doc: None,
            pre: None,
        }
    }

    /// A normalizer for a saved log read on from a line at which an earlier reading was at
    /// rest ([`Normalizer::at_rest`]), given what that reading's [`seed`](Normalizer::seed)
    /// was there: it reads those lines first, writing nothing, so that it holds what the lines
    /// after them depend on (a Codex rollout's session, model, running total and rate-limit
    /// readings). With an empty seed it is [`Normalizer::new`].
    ///
    /// ```
    /// use agentnorm::{Event, Normalizer, Options};
    /// let line = |ty: &str, payload: &str| {
    ///     format!(r#"{{"timestamp":"2026-06-01T00:00:00Z","type":"{ty}","payload":{payload}}}"#)
    /// };
    /// let count = |n: u64| {
    ///     let total = format!(r#"{{"input_tokens":{},"output_tokens":{}}}"#, 100 * n, 10 * n);
    ///     line("event_msg", &format!(r#"{{"type":"token_count","info":{{"total_token_usage":{total}}}}}"#))
    /// };
    /// let opts = || Options::default().observed_at(false);
    /// let mut first = Normalizer::new(opts());
    /// let mut events: Vec<Event> = Vec::new();
    /// first.line(line("session_meta", r#"{"id":"c1"}"#).as_bytes(), &mut events);
    /// first.line(count(1).as_bytes(), &mut events);
    /// first.line(line("turn_context", r#"{"model":"gpt-5.1-codex"}"#).as_bytes(), &mut events);
    /// assert!(first.at_rest());
    /// // Read on from the next line: the session, the model and the running total are known.
    /// let mut next = Normalizer::seeded(opts(), &first.seed());
    /// let mut events: Vec<Event> = Vec::new();
    /// next.line(count(3).as_bytes(), &mut events);
    /// let usage = events.iter().find_map(|e| match e {
    ///     Event::Usage { env, usage, model, .. } => Some((env.session_id.clone(), model.clone(), usage.output)),
    ///     _ => None,
    /// });
    /// assert_eq!(usage, Some((Some("c1".into()), Some("gpt-5.1-codex".into()), Some(20))));
    /// ```
    pub fn seeded(opts: Options, seed: &[u8]) -> Normalizer {
        /// Takes the seed's events, which the earlier reading wrote already.
        struct Muted;
        impl Sink for Muted {
            fn event(&mut self, _: &Event) {}
            fn skims(&self) -> crate::Skim {
                crate::Skim::Usage
            }
        }
        let mut n = Normalizer::new(opts);
        if !seed.is_empty() {
            n.feed(seed, &mut Muted);
        }
        n
    }

    /// What a reading started at the next line reads first ([`Normalizer::seeded`]): the lines
    /// so far that the stream's dialect marked as holding what later lines depend on, the
    /// latest of each kind, in the stream's order, each ended by `\n` (empty for a dialect
    /// that marks none).
    pub fn seed(&self) -> Vec<u8> {
        self.fold.seed()
    }

    /// Feeds the next bytes of the stream like [`feed`](Normalizer::feed), with the lines that
    /// [`chunked::predecode`](crate::normalize::parallel::predecode) decoded from the same bytes (on any
    /// thread). The output is exactly `feed`'s: the splitter, the document and long-line rules
    /// and the fold run here as always; only the stateless decode of a line is taken from `pre`
    /// where it was made from the very bytes the splitter hands out.
    pub(crate) fn feed_predecoded(
        &mut self,
        chunk: &[u8],
        pre: crate::normalize::parallel::Predecoded,
        sink: &mut dyn Sink,
    ) {
        // A line already begun before this chunk completes first and was not decoded there.
        let pending = !self.carry.is_empty() || self.overlong.is_some();
        if pre.mid_line == pending {
            self.pre = Some(PreLines { next: self.line_no + 1 + u64::from(pending), entries: pre.lines.into_iter() });
        }
        self.feed(chunk, sink);
        self.pre = None;
    }

    /// Records how each frame type of the stream is read (`agentnorm survey`), from the next line
    /// on; [`Normalizer::take_survey`] gives the counts.
    pub fn record_survey(&mut self) {
        self.fold.survey();
    }

    /// The counts recorded since [`Normalizer::record_survey`] (after [`Normalizer::finish`]).
    pub fn take_survey(&mut self) -> Option<survey::Survey> {
        self.fold.take_survey()
    }

    /// Whether the stream has begun (`run_started` was written): bytes were fed, or it finished.
    pub fn started(&self) -> bool {
        self.started
    }

    /// What [`decode`] is called with for this stream: the forced dialect and the line limit.
    pub(crate) fn decode_options(&self) -> (Option<Dialect>, usize) {
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
    pub fn feed(&mut self, chunk: &[u8], sink: &mut dyn Sink) {
        self.ensure_started(sink);
        if self.fold.options().observed_at {
            self.fold.set_observed_at(crate::read::time::now());
        }
        for (part, complete) in lines::pieces(chunk) {
            let limit = lines::limit(part, self.max_line);
            if let Some(skipped) = &mut self.overlong {
                *skipped += part.len() as u64;
                // The sample is the line's first 1024 bytes however the line was split.
                let head = 1024usize.saturating_sub(self.carry.len()).min(part.len());
                self.carry.extend_from_slice(&part[..head]);
            } else if self.carry.is_empty() && complete && part.len() <= limit {
                // The common case: a whole line inside the chunk, no copy.
                self.whole_line(part, sink);
                continue;
            } else {
                let room = limit.saturating_sub(self.carry.len());
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
            self.line_no += 1;
            self.fold.too_long(self.line_no, &carry, sink);
        } else {
            self.whole_line(&carry, sink);
        }
        self.carry = carry;
        self.carry.clear();
    }

    /// Whether a saved log read so far (up to a line's end) may be read on by a new normalizer
    /// ([`Normalizer::seeded`] with this one's [`seed`](Normalizer::seed)) from the next line
    /// with the same usage: no part of a line or document is held, and the stream's dialect
    /// holds nothing later lines depend on for their usage but what the seed restores (a Claude
    /// Code transcript between a prompt and the next assistant line, a Codex rollout right
    /// after its own `turn_context`). A fresh reading writes a
    /// session's `session_started` again, and may write again a message it replays (a report
    /// counts each message id once). `agentnorm usage` cuts large logs into pieces there, so
    /// that a log that grew is read from its last piece.
    pub fn at_rest(&self) -> bool {
        self.carry.is_empty()
            && self.overlong.is_none()
            && self.doc.is_none()
            && self.pre.is_none()
            && self.fold.at_rest()
    }

    /// Normalizes one line (without its `\n`), exactly as feeding the line and a `\n` would: bytes
    /// fed before without a newline are the start of this line, and a `\n` inside it ends a line
    /// there, so mixing `line` and [`feed`](Normalizer::feed) never reorders events.
    pub fn line(&mut self, line: &[u8], sink: &mut dyn Sink) {
        if self.carry.is_empty()
            && self.overlong.is_none()
            && line.len() <= self.max_line
            && memchr::memchr(b'\n', line).is_none()
        {
            self.ensure_started(sink);
            self.whole_line(line, sink);
        } else {
            self.feed(line, sink);
            self.feed(b"\n", sink);
        }
    }

    /// Normalizes one whole line (without its `\n`) that the splitter cut.
    fn whole_line(&mut self, mut line: &[u8], sink: &mut dyn Sink) {
        self.line_no += 1;
        line = lines::content(line, self.line_no == 1, !self.at_eof);
        if let Some(doc) = &mut self.doc {
            doc.bytes.push(b'\n');
            doc.bytes.extend_from_slice(line);
            doc.ends.push(doc.bytes.len());
            if line == b"}" {
                self.end_document(sink);
            } else if (doc.ends.len() > DOC_MAX_LINES && !self.document) || doc.bytes.len() > DOC_MAX_BYTES {
                self.replay_document(sink);
            }
            return;
        }
        // A pretty-printed document starts at any line that is exactly `{` (SPEC §1: after a
        // CLI's stderr lines, or after another document).
        if line == b"{" {
            self.doc = Some(Document { first: self.line_no, bytes: line.to_vec(), ends: vec![1] });
            return;
        }
        let skim = sink.skims();
        if skim != crate::Skim::Every && self.fold.pass_over(self.line_no, line, skim) {
            return;
        }
        let decoded = match self.take_pre(line) {
            Some(d) => d,
            None => self.fold.decode_next(line, skim),
        };
        self.fold.apply(decoded, self.line_no, line, sink);
    }

    /// Decodes a line to be applied next: mapped only as the dialect the fold will pick for it.
    fn decode(&mut self, line: &[u8]) -> Decoded {
        self.fold.decode_next(line, crate::Skim::Every)
    }

    /// A document's closing `}` arrived: one frame if it parses, else line by line.
    fn end_document(&mut self, sink: &mut dyn Sink) {
        let Some(doc) = self.doc.take() else { return };
        let decoded = self.decode(&doc.bytes);
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
            let decoded = self.decode(line);
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

/// The first dialect detected in a stream (what `agentnorm detect` prints): the stream is
/// normalized (with its line limit and multi-line documents) only until an event names one.
pub fn first_dialect(mut input: impl std::io::Read) -> std::io::Result<Option<Dialect>> {
    struct First(Option<Dialect>);
    impl crate::Sink for First {
        fn event(&mut self, ev: &crate::Event) {
            if self.0.is_none() {
                self.0 = ev.env().dialect;
            }
        }
    }
    let mut norm = Normalizer::new(Options::default().observed_at(false));
    let mut first = First(None);
    let mut buf = vec![0u8; 64 << 10];
    while first.0.is_none() {
        let n = match input.read(&mut buf) {
            Ok(0) => {
                norm.finish(&mut first);
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        norm.feed(&buf[..n], &mut first);
    }
    Ok(first.0)
}

/// An iterator of the events of one stream read from `input` (the pull form of [`Normalizer`],
/// in the manner of serde_json's `StreamDeserializer`, but line-oriented: a bad line is an
/// `unknown` event, never the end of the stream).
///
/// Reading errors end the iteration with that error; the events of what was read before it
/// have been yielded. The `run_ended` of a stream comes last.
///
/// ```
/// let input = &b"{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\nnot json\n"[..];
/// let types: Vec<String> = agentnorm::events(input, agentnorm::Options::default())
///     .map(|e| e.unwrap().type_name().to_owned())
///     .collect();
/// assert_eq!(types, ["run_started", "session_started", "unknown", "run_ended"]);
/// ```
pub fn events<R: std::io::Read>(input: R, opts: Options) -> Events<R> {
    Events {
        input,
        norm: Some(Normalizer::new(opts)),
        queue: std::collections::VecDeque::new(),
        buf: vec![0; 64 << 10],
    }
}

/// The iterator [`events`] returns.
pub struct Events<R> {
    input: R,
    /// `None` once the stream has ended.
    norm: Option<Normalizer>,
    queue: std::collections::VecDeque<Event>,
    buf: Vec<u8>,
}

impl<R: std::io::Read> Iterator for Events<R> {
    type Item = std::io::Result<Event>;

    fn next(&mut self) -> Option<std::io::Result<Event>> {
        loop {
            if let Some(ev) = self.queue.pop_front() {
                return Some(Ok(ev));
            }
            let norm = self.norm.as_mut()?;
            let mut sink = |ev: &Event| self.queue.push_back(ev.clone());
            match self.input.read(&mut self.buf) {
                Ok(0) => {
                    norm.finish(&mut sink);
                    self.norm = None;
                }
                Ok(n) => norm.feed(&self.buf[..n], &mut sink),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.norm = None;
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::detect::Detector;

    struct Collect(Vec<Event>);
    impl Sink for Collect {
        fn event(&mut self, ev: &Event) {
            self.0.push(ev.clone());
        }
    }

    /// Folds the lines of `text`, each decoded by `decode` (given the fold's own guess).
    fn fold_with(text: &str, mut decode: impl FnMut(&mut Parser, &[u8], Possible) -> Decoded) -> Vec<Event> {
        let mut fold = Fold::new(Options::default().observed_at(false));
        let mut parser = Parser::default();
        let mut sink = Collect(Vec::new());
        fold.start(&mut sink);
        for (i, line) in text.lines().enumerate() {
            let decoded = decode(&mut parser, line.as_bytes(), fold.possible());
            fold.apply(decoded, i as u64 + 1, line.as_bytes(), &mut sink);
        }
        fold.finish(true, &mut sink);
        sink.0
    }

    /// A line decoded for other dialects than the one the fold picks (a chunk's wrong guess) is
    /// mapped again: the events are those of a line decoded for it, and those of the stateless
    /// decode that maps every dialect a frame fits.
    #[test]
    fn a_line_decoded_for_another_dialect_is_mapped_again() {
        let qwen = include_str!("../../fixtures/qwen/whole_messages.jsonl");
        let exact = fold_with(qwen, |p, line, mut possible| decode_for(p, line, None, &mut possible, false, None));
        // Decoded for a fold that saw none of the stream (so as Claude's): mapped again.
        let mut stale = Fold::new(Options::default());
        assert_eq!(fold_with(qwen, |_, line, _| stale.decode_next(line, crate::Skim::Every)), exact);
        assert!(exact.iter().any(|e| e.env().dialect == Some(Dialect::Qwen)));
        let every = fold_with(qwen, |p, line, _| decode(p, line, None));
        assert_eq!(every, exact);
        let mut remapped = 0;
        let wrong = fold_with(qwen, |p, line, _| {
            // As if the stream were Claude's: its Claude-shaped frames are mapped as Claude's only.
            let decoded =
                decode_for(p, line, None, &mut Possible::of(&Detector::new(Some(Dialect::Claude))), false, None);
            if let Decoded::Frame { fit, mapped, .. } = &decoded
                && fit.contains(Dialect::Qwen)
                && !mapped.iter().any(|(d, _)| *d == Dialect::Qwen)
            {
                remapped += 1;
            }
            decoded
        });
        assert!(remapped > 0, "the guess was never wrong: nothing was mapped again");
        assert_eq!(wrong, exact);
    }

    /// A sink that skims gets the lines it is given mapped for usage only: the same events, with
    /// their ids and times, without reasoning text, call inputs, summaries, plans or outputs.
    #[test]
    fn a_sink_that_skims_gets_the_conversation_events_without_their_content() {
        struct Skims(Vec<Event>, crate::Skim);
        impl Sink for Skims {
            fn event(&mut self, ev: &Event) {
                self.0.push(ev.clone());
            }
            fn skims(&self) -> crate::Skim {
                self.1
            }
        }
        let claude = concat!(
            r#"{"type":"assistant","sessionId":"s1","parentUuid":null,"isSidechain":false,"timestamp":"2026-01-02T03:04:05.000Z","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"a","status":"pending"}]}}],"usage":{"input_tokens":3,"output_tokens":4}}}"#,
            "\n",
            r#"{"type":"user","sessionId":"s1","parentUuid":"u1","isSidechain":false,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}}"#,
            "\n",
        );
        let codex = concat!(
            r#"{"timestamp":"2026-01-02T03:04:05.000Z","type":"session_meta","payload":{"id":"r1","cwd":"/w"}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:06.000Z","type":"event_msg","payload":{"type":"agent_reasoning","text":"look"}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:07.000Z","type":"response_item","payload":{"type":"function_call","name":"update_plan","arguments":"{\"plan\":[{\"step\":\"a\",\"status\":\"pending\"}]}","call_id":"c1"}}"#,
            "\n",
            r#"{"timestamp":"2026-01-02T03:04:08.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"ok"}}"#,
            "\n",
        );
        for text in [claude, codex] {
            let read = |skim| {
                let mut sink = Skims(Vec::new(), skim);
                let mut n = Normalizer::new(Options::default().observed_at(false));
                n.feed(text.as_bytes(), &mut sink);
                n.finish(&mut sink);
                sink.0
            };
            let (every, skimmed) = (read(crate::Skim::Every), read(crate::Skim::Usage));
            let content = |evs: &[Event]| {
                evs.iter()
                    .filter(|e| match e {
                        Event::Reasoning { text, .. } => text.is_some(),
                        Event::ToolStarted { input, summary, .. } => input.is_some() || summary.is_some(),
                        Event::ToolCompleted { output, .. } => output.is_some(),
                        Event::PlanUpdated { .. } => true,
                        _ => false,
                    })
                    .count()
            };
            assert!(content(&every) >= 4, "{every:?}");
            assert_eq!(content(&skimmed), 0, "{skimmed:?}");
            let kept = |evs: &[Event]| -> Vec<(&str, Option<String>)> {
                evs.iter()
                    .filter(|e| !matches!(e, Event::PlanUpdated { .. }))
                    .map(|e| (e.type_name(), e.env().at.clone()))
                    .collect()
            };
            assert_eq!(kept(&skimmed), kept(&every));
        }
    }

    #[test]
    fn decoded_lines_and_the_fold_can_move_to_other_threads() {
        fn send<T: Send>() {}
        send::<super::Decoded>();
        send::<super::Fold>();
    }

    /// The NDJSON of `input` normalized with `opts`, every content array of at least `lazy`
    /// blocks mapped block by block at fold time.
    fn ndjson(input: &[u8], opts: &Options, lazy: usize) -> Vec<u8> {
        crate::dialect::LAZY_BLOCKS_HERE.set(lazy);
        let mut sink = crate::NdjsonSink::default();
        let mut n = Normalizer::new(opts.clone());
        n.feed(input, &mut sink);
        n.finish(&mut sink);
        crate::dialect::LAZY_BLOCKS_HERE.set(crate::dialect::LAZY_BLOCKS);
        sink.buf
    }

    #[test]
    fn content_blocks_mapped_at_fold_time_write_what_the_whole_line_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut files: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        assert!(files.len() > 50, "{} fixtures", files.len());
        let base = Options::default().observed_at(false);
        let variants =
            [base.clone(), base.clone().raw(true), base.clone().redact(true), base.dialect(Some(Dialect::Qwen))];
        let mut lazy_lines = 0;
        for f in &files {
            let input = std::fs::read(f).unwrap();
            for opts in &variants {
                let whole = ndjson(&input, opts, usize::MAX);
                let lazy = ndjson(&input, opts, 1);
                assert!(whole == lazy, "{}: {opts:?}\n{}", f.display(), first_difference(&whole, &lazy));
            }
            lazy_lines += input.split(|&b| b == b'\n').filter(|l| l.windows(11).any(|w| w == b"\"content\":[")).count();
        }
        assert!(lazy_lines > 100, "content arrays read block by block: {lazy_lines}");
    }

    /// Streams of many blocks per line, of every kind the Claude-shaped adapters read one by
    /// one: text, thinking, tool calls (a plan among them) and their results, in stream-json
    /// (with and without partial messages), Qwen's and a transcript's lines.
    fn many_blocks(n: usize) -> Vec<(&'static str, String)> {
        let assistant: Vec<String> = (0..n)
            .map(|i| match i % 6 {
                0 => format!(r#"{{"type":"text","text":"word {i} \u00e9\n"}}"#),
                1 => format!(r#"{{"type":"thinking","thinking":"think {i}"}}"#),
                2 => format!(r#"{{"type":"tool_use","id":"toolu_{i}","name":"Bash","input":{{"command":"ls {i}"}}}}"#),
                3 => format!(
                    r#"{{"type":"tool_use","id":"toolu_{i}","name":"TodoWrite","input":{{"todos":[{{"content":"t{i}","status":"in_progress"}}]}}}}"#
                ),
                4 => r#"{"type":"redacted_thinking","data":"x"}"#.to_owned(),
                _ => r#"{"type":"text","text":""}"#.to_owned(),
            })
            .collect();
        let results: Vec<String> = (0..n)
            .map(|i| match i % 4 {
                0 | 1 => format!(
                    r#"{{"type":"tool_result","tool_use_id":"toolu_{}","content":"out {i}","is_error":{}}}"#,
                    i / 4 * 6 + 2 + (i % 2),
                    i % 8 == 1
                ),
                2 => format!(r#"{{"type":"text","text":"user {i}"}}"#),
                _ => r#"{"type":"image","source":{}}"#.to_owned(),
            })
            .collect();
        let (a, r) = (assistant.join(","), results.join(","));
        let stream = format!(
            r#"{{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":[]}}
{{"type":"assistant","message":{{"id":"msg_1","model":"m","content":[{a}],"usage":{{"input_tokens":3,"output_tokens":1}}}},"session_id":"s1"}}
{{"type":"user","message":{{"role":"user","content":[{r}]}},"session_id":"s1"}}
{{"type":"stream_event","event":{{"type":"message_start","message":{{"id":"msg_2","model":"m","usage":{{"input_tokens":1,"output_tokens":1}}}}}},"session_id":"s1"}}
{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"word 0 "}}}},"session_id":"s1"}}
{{"type":"assistant","message":{{"id":"msg_2","model":"m","content":[{a}],"usage":{{"input_tokens":3,"output_tokens":1}}}},"session_id":"s1"}}
{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"word 0 "}}}},"session_id":"s1"}}
{{"type":"assistant","message":{{"model":"m","content":[{a}]}},"session_id":"s1"}}
{{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1","usage":{{"input_tokens":3,"output_tokens":1}}}}
"#
        );
        let qwen = stream.replacen(r#""tools":[]"#, r#""tools":[],"qwen_code_version":"0.1""#, 1);
        let line = |ty: &str, n: usize, body: &str| {
            format!(
                r#"{{"type":"{ty}","uuid":"u{n}","parentUuid":null,"sessionId":"s1","timestamp":"2026-01-01T00:00:0{n}Z","message":{body}}}"#
            )
        };
        let transcript = [
            line("user", 1, r#"{"role":"user","content":"hi"}"#),
            line(
                "assistant",
                2,
                &format!(
                    r#"{{"id":"msg_1","model":"m","content":[{a}],"usage":{{"input_tokens":3,"output_tokens":1}}}}"#
                ),
            ),
            line(
                "assistant",
                3,
                &format!(
                    r#"{{"id":"msg_1","model":"m","content":[{a}],"usage":{{"input_tokens":3,"output_tokens":9}}}}"#
                ),
            ),
            line(
                "assistant",
                4,
                &format!(
                    r#"{{"id":"msg_2","model":"m","content":[{a}],"usage":{{"input_tokens":4,"output_tokens":2}}}}"#
                ),
            ),
            line("user", 5, &format!(r#"{{"role":"user","content":[{r}]}}"#)),
            line(
                "assistant",
                6,
                &format!(r#"{{"model":"m","content":[{a}],"usage":{{"input_tokens":5,"output_tokens":2}}}}"#),
            ),
            line("user", 7, &format!(r#"{{"role":"user","content":[{r}]}}"#)),
        ]
        .join("\n")
            + "\n";
        vec![("stream-json", stream), ("qwen", qwen), ("transcript", transcript)]
    }

    #[test]
    fn very_many_blocks_mapped_at_fold_time_write_what_the_whole_line_does() {
        let base = Options::default().observed_at(false);
        let only = base.clone().filter(TypeFilter::only(&["tool_completed".to_owned()]).unwrap());
        let small = [base.clone(), base.clone().raw(true), base.clone().redact(true), only.clone()];
        let cases = many_blocks(40).into_iter().map(|c| (c, &small[..]));
        let large = [base.clone(), only];
        for ((name, input), variants) in
            cases.chain(many_blocks(crate::dialect::LAZY_BLOCKS + 7).into_iter().map(|c| (c, &large[..])))
        {
            for opts in variants {
                let whole = ndjson(input.as_bytes(), opts, usize::MAX);
                let lazy = ndjson(input.as_bytes(), opts, 1);
                let default = ndjson(input.as_bytes(), opts, crate::dialect::LAZY_BLOCKS);
                assert!(whole == lazy, "{name}: {opts:?}\n{}", first_difference(&whole, &lazy));
                assert!(whole == default, "{name}: {opts:?}\n{}", first_difference(&whole, &default));
                assert!(whole.len() > 2000, "{name}: {} bytes", whole.len());
            }
        }
    }

    /// Where two outputs first differ, and their lines there.
    fn first_difference(a: &[u8], b: &[u8]) -> String {
        let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
        match a.lines().zip(b.lines()).enumerate().find(|(_, (x, y))| x != y) {
            Some((i, (x, y))) => format!("line {}:\n  whole: {x}\n  lazy:  {y}", i + 1),
            None => format!("{} lines against {}", a.lines().count(), b.lines().count()),
        }
    }
}
