//! The ordered fold: the stream's state, applied to decoded lines in input order.
//!
//! It keeps what every dialect shares — dialect stickiness, the session id, the sessions and
//! tools already started, the text already written in a turn, the last rate-limit readings, the
//! turn's state and the counters of `run_ended` — fills each event's envelope and hands it to a
//! [`Sink`]. What only one dialect needs lives in that dialect's adapter ([`crate::dialect`]),
//! which the fold calls with its own state and a [`Cx`] onto this one. A line's events are
//! written once its pieces are folded, except the blocks of a [`Piece::Blocks`], which are read
//! again from the line, folded and written one by one (memory stays a small multiple of the line
//! whatever number of blocks it holds).

use base64::Engine as _;

use super::survey::{ReadAs, Survey, SurveyKey};
use super::{Decoded, Options, SPARE_MAPPED, Summary};
use crate::dialect::detect::{Detector, Possible};
use crate::dialect::{self, Cx, Mapped, Piece, Recent, SeedLine, States};
use crate::event::sink::Sink;
use crate::event::{CONTRACT_VERSION, Dialect, Envelope, Event, Text, ToolKind, UnknownReason};
use crate::read::frame::Parser;

/// The ordered fold: the stream's state, applied to decoded lines in input order.
pub struct Fold {
    core: Core,
    /// Each dialect's own state.
    states: States,
    /// A reused buffer for the events of the line being applied.
    out_buf: Vec<Event>,
    /// Parses a line again when its decode lacks the mapping of the dialect picked for it.
    reparser: Option<Box<Parser>>,
    /// The parser of the stream's lines (the normalizer decodes with it too), which reads the
    /// content blocks of a [`Piece::Blocks`] again when the fold reaches them.
    parser: Parser,
}

/// What the fold keeps for every dialect.
struct Core {
    opts: Options,
    detector: Detector,
    session_id: Option<String>,
    sessions: Recent<()>,
    tools: Recent<(String, ToolKind)>,
    completed: Recent<()>,
    rate: foldhash::HashMap<String, (Option<String>, Option<f64>)>,
    turn_open: bool,
    turn_failed: bool,
    lines: u64,
    /// The last line that was not blank (held events flushed at the end carry it).
    last_content: u64,
    events: u64,
    unknown: u64,
    unknown_frames: std::collections::BTreeMap<String, u64>,
    observed_at: Option<String>,
    /// `line_end` of the frame being applied, when it spans several lines.
    line_end: Option<u64>,
    /// Text written in the current turn, for CLIs that repeat it.
    turn_text: TurnText,
    /// A `turn_started` was written and its turn has not ended.
    turn_started: bool,
    /// Events of earlier lines to write before the current line's.
    deferred: Vec<(Event, u64)>,
    /// Envelope facts of the frame being applied.
    cur: Current,
    /// `--raw`: the line's text, lent to each event of the line in turn and taken back (so that
    /// a line of thousands of events is one copy, not one per event), keyed by its line number
    /// and length.
    raw_lent: Option<(u64, usize, Text)>,
    /// The model the stream last named for its requests.
    model: Option<String>,
    /// `--redact`'s memory of text arriving in pieces.
    redaction: crate::normalize::redact::Redaction,
    /// How each frame type was read, when surveying.
    survey: Option<Box<Survey>>,
    /// The CLI version the stream named last (`session_started.cli_version`), for the survey.
    cli_version: Option<String>,
    /// The latest line of each kind of seed the stream's dialect marked ([`Mapped::seed`]):
    /// the kind, the line's number and its bytes.
    seeds: Vec<(SeedLine, u64, Vec<u8>)>,
}

/// The frame being applied: what its events carry besides `line`.
#[derive(Debug, Default)]
struct Current {
    at: Option<String>,
    parent_tool_id: Option<String>,
    sidechain: Option<bool>,
}

/// Distinct frame types counted in `run_ended.unknown_frames`; the rest count as `(other)`.
const MAX_UNKNOWN_FRAMES: usize = 1024;

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

/// One line being folded: the generic state, the line's events so far, and what an adapter's
/// own fold may ask of them ([`Cx`]).
struct Step<'a> {
    core: &'a mut Core,
    out: &'a mut Vec<Event>,
    line_no: u64,
    /// The line started a new session or process (`Piece::ResetTools`).
    new_session: bool,
}

impl Cx for Step<'_> {
    fn event(&mut self, ev: Event) {
        self.core.event(ev, self.line_no, self.out, self.new_session);
    }

    fn turn_text(&mut self, text: Text, fragment: bool, message_id: Option<String>) {
        let decoded = text.as_str();
        let Some(at) = self.core.turn_text.fresh(&decoded, fragment) else { return };
        // The whole text keeps its form (escaped as the input wrote it); only a tail is a new
        // string.
        let tail = (at > 0).then(|| Text::from(&decoded[at..]));
        drop(decoded);
        let text = tail.unwrap_or(text);
        self.event(Event::OutputDelta { env: Envelope::default(), text, message_id });
    }

    fn note_fragment(&mut self, text: &str) {
        self.core.turn_text.fresh(text, true);
    }

    fn has_segment(&self) -> bool {
        self.core.turn_text.has_segment()
    }

    fn turn_open(&self) -> bool {
        self.core.turn_open
    }

    fn set_turn_open(&mut self) {
        self.core.turn_open = true;
    }

    fn turn_started(&self) -> bool {
        self.core.turn_started
    }

    fn line_no(&self) -> u64 {
        self.line_no
    }

    fn at(&self) -> Option<&str> {
        self.core.cur.at.as_deref()
    }

    fn parent_tool_id(&self) -> Option<&str> {
        self.core.cur.parent_tool_id.as_deref()
    }

    fn sidechain(&self) -> Option<bool> {
        self.core.cur.sidechain
    }

    fn session_id(&self) -> Option<&str> {
        self.core.session_id.as_deref()
    }

    fn defer(&mut self, ev: Event, line: u64) {
        self.core.deferred.push((ev, line));
    }
}

/// An event that ends a turn.
fn ends_turn(ev: &Event) -> bool {
    matches!(ev, Event::TurnCompleted { .. } | Event::TurnFailed { .. } | Event::Interrupt { .. })
}

/// Whether folding `piece` may write an event of an earlier line ([`Cx::defer`]).
fn may_defer(piece: &Piece) -> bool {
    match piece {
        Piece::Own(own) => own.defers(),
        // A turn's end lets every dialect write what it held for the turn.
        Piece::Event(ev) => ends_turn(ev) && dialect::registry::ANY_DEFERS,
        _ => false,
    }
}

/// Folds one piece of the line being applied (a [`Piece::Blocks`] is expanded by the caller).
// Inlined: a piece is several hundred bytes, and each call would copy it.
#[inline(always)]
fn fold_piece(states: &mut States, step: &mut Step<'_>, piece: Piece) {
    match piece {
        Piece::Event(ev) if ends_turn(&ev) => {
            states.turn_ending(step);
            step.event(ev);
            states.turn_ended();
        }
        Piece::Event(ev) => step.event(ev),
        Piece::ResetTools => {
            step.core.tools.clear();
            step.core.completed.clear();
            step.new_session = true;
        }
        Piece::TurnText { text, fragment, message_id } => step.turn_text(text, fragment, message_id),
        Piece::Model(model) => step.core.model = Some(model),
        Piece::Own(own) => states.fold(own, step),
        // Never inside a block's pieces.
        Piece::Blocks(_) => {}
    }
}

/// What a line has written before its end (its blocks, written as they were folded).
#[derive(Default)]
struct Written {
    events: usize,
    /// Only when surveying.
    heartbeats: usize,
}

impl Written {
    /// Counts the events of `out` (and its heartbeats, when `surveying`).
    fn count(&mut self, out: &[Event], surveying: bool) {
        self.events += out.len();
        if surveying {
            self.heartbeats += out.iter().filter(|e| matches!(e, Event::Heartbeat { .. })).count();
        }
    }

    /// Writes the line's events folded so far.
    fn flush(&mut self, step: &mut Step<'_>, d: Dialect, line: &[u8], sink: &mut dyn Sink) {
        self.count(step.out, step.core.survey.is_some());
        for ev in step.out.iter_mut() {
            step.core.emit_line(ev, Some(d), step.line_no, line, sink);
        }
        step.out.clear();
    }
}

impl Fold {
    /// A fold for one stream.
    pub fn new(opts: Options) -> Fold {
        Fold {
            core: Core {
                detector: Detector::new(opts.dialect),
                opts,
                session_id: None,
                sessions: Recent::new(1 << 10),
                tools: Recent::new(1 << 16),
                completed: Recent::new(1 << 16),
                rate: foldhash::HashMap::default(),
                turn_open: false,
                turn_failed: false,
                lines: 0,
                last_content: 0,
                events: 0,
                unknown: 0,
                unknown_frames: Default::default(),
                observed_at: None,
                line_end: None,
                turn_text: TurnText::default(),
                turn_started: false,
                deferred: Vec::new(),
                cur: Current::default(),
                raw_lent: None,
                model: None,
                redaction: Default::default(),
                survey: None,
                cli_version: None,
                seeds: Vec::new(),
            },
            states: States::default(),
            out_buf: Vec::new(),
            reparser: None,
            parser: Parser::default(),
        }
    }

    /// Starts recording how each frame type is read ([`Fold::take_survey`]).
    pub(crate) fn survey(&mut self) {
        self.core.survey = Some(Box::default());
    }

    /// What was recorded since [`Fold::survey`].
    pub(crate) fn take_survey(&mut self) -> Option<Survey> {
        self.core.survey.take().map(|s| *s)
    }

    /// The options the fold writes with.
    pub(crate) fn options(&self) -> &Options {
        &self.core.opts
    }

    /// Sets the `observed_at` time for the lines that follow (one reading per input read).
    pub fn set_observed_at(&mut self, now: String) {
        self.core.observed_at = Some(now);
    }

    /// What is known of the stream's detector before the next line: exactly its state (a line
    /// decoded [`for`](super::decode_for) it is mapped only as the dialect the fold will pick).
    pub(crate) fn possible(&self) -> Possible {
        Possible::of(&self.core.detector)
    }

    /// The stream's dialect so far (detected or forced).
    pub(crate) fn dialect(&self) -> Option<Dialect> {
        self.core.detector.current()
    }

    /// Decodes the line to be applied next ([`Fold::apply`]): like [`decode`](super::decode),
    /// but mapped only as the dialect this fold will pick for it (one thread's way), with the
    /// fold's own parser (the one it reads a line's blocks again with, so that a long line is
    /// indexed once); for usage only ([`crate::dialect::Mapped::usage_only`]) when the sink
    /// `skim`s it and no survey is recorded (it counts what the content holds).
    pub fn decode_next(&mut self, line: &[u8], skim: crate::Skim) -> Decoded {
        let mut possible = self.possible();
        let usage_only = skim != crate::Skim::Every && self.core.survey.is_none();
        let exact = self.core.detector.current();
        super::decode_for(&mut self.parser, line, self.core.opts.dialect, &mut possible, usage_only, exact)
    }

    /// Passes over line `line_no` (a usage-only reading, [`crate::Sink::skims`]) when the
    /// stream's dialect says it may ([`dialect::Adapter::passes_over`]): the line is counted and
    /// writes nothing. Never while a survey is recorded (it counts every frame).
    pub(crate) fn pass_over(&mut self, line_no: u64, line: &[u8], skim: crate::Skim) -> bool {
        let passed = self.core.survey.is_none()
            && self.core.detector.current().is_some_and(|d| self.states.passes_over(d, line, skim));
        if passed {
            self.core.last_content = line_no;
            self.core.lines = line_no;
        }
        passed
    }

    /// Whether nothing is held between two lines that the rest of a saved log depends on for
    /// its usage ([`dialect::Adapter::at_rest`] of the stream's dialect, no event of an earlier
    /// line waiting).
    pub(crate) fn at_rest(&self) -> bool {
        self.core.deferred.is_empty()
            && self.core.survey.is_none()
            && self.core.detector.current().is_some_and(|d| self.states.at_rest(d))
    }

    /// The lines a reading started after the last line applied reads first
    /// ([`crate::Normalizer::seeded`]): the latest of each kind the stream's dialect marked
    /// ([`Mapped::seed`]), in the stream's order, each ended by `\n`.
    pub(crate) fn seed(&self) -> Vec<u8> {
        let mut seeds: Vec<&(SeedLine, u64, Vec<u8>)> = self.core.seeds.iter().collect();
        seeds.sort_by_key(|(_, line, _)| *line);
        let mut out = Vec::new();
        for (_, _, bytes) in seeds {
            out.extend_from_slice(bytes);
            out.push(b'\n');
        }
        out
    }

    /// Writes `run_started`.
    pub fn start(&mut self, sink: &mut dyn Sink) {
        let ev = Event::RunStarted {
            env: Envelope::default(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            contract: CONTRACT_VERSION,
        };
        self.core.emit(ev, None, sink);
    }

    /// Applies one decoded line (1-based `line_no`) and writes its events.
    pub fn apply(&mut self, decoded: Decoded, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        self.apply_lines(decoded, line_no, line_no, line, sink);
    }

    /// Applies one frame spread over the lines `first..=last` (a pretty-printed document): its
    /// events carry `line` = `first` and `line_end` = `last`.
    pub fn apply_lines(&mut self, decoded: Decoded, first: u64, last: u64, bytes: &[u8], sink: &mut dyn Sink) {
        self.core.line_end = (last != first).then_some(last);
        if !matches!(decoded, Decoded::Blank) {
            self.core.last_content = last;
        }
        self.apply_one(decoded, first, bytes, sink);
        self.core.line_end = None;
        self.core.lines = last;
    }

    fn apply_one(&mut self, decoded: Decoded, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        let core = &mut self.core;
        core.lines = line_no;
        core.cur = Current::default();
        match decoded {
            Decoded::Blank => {}
            Decoded::NotFrame { reason, diagnostic } => {
                let dialect = core.detector.current();
                if core.survey.is_some() {
                    let (frame, read_as) = match &diagnostic {
                        Some(_) => ("(stderr line)".to_owned(), ReadAs::Mapped),
                        None => (format!("({})", reason.as_str()), ReadAs::Unknown),
                    };
                    core.record(dialect, frame, read_as, line_no);
                }
                match diagnostic {
                    Some(mut d) => core.emit_line(&mut d, dialect, line_no, line, sink),
                    None => core.unknown_line(reason, None, dialect, line_no, line, sink),
                }
            }
            Decoded::Frame { fit, frame_type, mapped } => {
                if fit.is_empty() {
                    // An object no dialect knows: carries the stream's dialect, like a non-JSON line.
                    let dialect = core.detector.current();
                    return core.unknown_line(
                        UnknownReason::UnrecognizedFrame,
                        frame_type,
                        dialect,
                        line_no,
                        line,
                        sink,
                    );
                }
                let Some(d) = core.detector.decide(fit) else {
                    return core.unknown_line(UnknownReason::UnrecognizedFrame, frame_type, None, line_no, line, sink);
                };
                let mut mapped = mapped;
                let m = mapped.iter().position(|(md, _)| *md == d).map(|i| mapped.swap_remove(i).1);
                dialect::give_spare(&SPARE_MAPPED, mapped);
                // Decoded ahead for other dialects (a chunk whose guess was wrong): the same bytes
                // mapped again as the one picked.
                let m = m.or_else(|| super::remap(self.reparser.get_or_insert_default(), line, d));
                let Some(m) = m else {
                    return core.unknown_line(
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

    fn frame(&mut self, d: Dialect, mut m: Mapped, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        let at = m.at.as_deref().and_then(normalize_at);
        self.states.prepare(d, &mut m, at.as_deref());
        let core = &mut self.core;
        // A line not understood restores nothing: it never replaces a seed that does.
        if let Some(kind) = m.seed.filter(|_| m.unknown.is_none()) {
            core.keep_seed(kind, line_no, line);
        }
        if let Some(id) = m.session_id.as_ref().filter(|id| !id.is_empty())
            && core.session_id.as_deref() != Some(id.as_str())
        {
            core.session_id = Some(id.clone());
        }
        if let Some(reason) = m.unknown {
            let frame = (!m.frame.is_empty()).then_some(m.frame);
            return core.unknown_line(reason, frame, Some(d), line_no, line, sink);
        }
        core.cur = Current { at, parent_tool_id: m.parent_tool_id, sidechain: m.sidechain };
        let mut out = std::mem::take(&mut self.out_buf);
        let mut pieces = m.pieces;
        // The line's events are written at its end, but for the blocks of a `Piece::Blocks`:
        // those are written as they are folded, when no later piece of the line may write an
        // event of an earlier line (which comes before the line's).
        let mut written = Written::default();
        let mut step = Step { core: &mut self.core, out: &mut out, line_no, new_session: false };
        let mut drain = pieces.drain(..);
        while let Some(piece) = drain.next() {
            match piece {
                Piece::Blocks(blocks) => {
                    let stream = !drain.as_slice().iter().any(may_defer);
                    if stream {
                        step.core.emit_deferred(Some(d), sink);
                        written.flush(&mut step, d, line, sink);
                    }
                    self.parser.with_array(
                        line.get(blocks.span.start as usize..blocks.span.end as usize).unwrap_or_default(),
                        |array| {
                            let mut one = Mapped::new();
                            for b in array.into_iter().flat_map(|a| a.array().into_iter().flatten()) {
                                dialect::registry::map_block(b, &blocks, &mut one);
                                for piece in one.pieces.drain(..) {
                                    fold_piece(&mut self.states, &mut step, piece);
                                }
                                if stream {
                                    written.flush(&mut step, d, line, sink);
                                }
                            }
                            Mapped::recycle(one.pieces);
                        },
                    );
                }
                piece => fold_piece(&mut self.states, &mut step, piece),
            }
        }
        drop(drain);
        Mapped::recycle(pieces);
        let core = &mut self.core;
        core.emit_deferred(Some(d), sink);
        written.count(&out, core.survey.is_some());
        if core.survey.is_some() {
            let read_as = if written.heartbeats == written.events { ReadAs::Heartbeat } else { ReadAs::Mapped };
            core.record(Some(d), m.frame.clone(), read_as, line_no);
        }
        // A line whose pieces all resolved to nothing (repeats, held usage) is still named.
        if written.events == 0 {
            out.push(Event::heartbeat(m.frame));
        }
        // Written in place: an event is a few hundred bytes, each move a copy.
        for ev in &mut out {
            core.emit_line(ev, Some(d), line_no, line, sink);
        }
        out.clear();
        self.out_buf = out;
    }

    /// Writes the `unknown` for a line over the size limit, from its first bytes.
    pub fn too_long(&mut self, line_no: u64, head: &[u8], sink: &mut dyn Sink) {
        let core = &mut self.core;
        core.lines = line_no;
        core.last_content = line_no;
        let ev = Event::Unknown {
            env: Envelope::default(),
            reason: UnknownReason::LineTooLong,
            frame: None,
            sample: sample(head),
            raw: None,
            raw_base64: None,
        };
        let dialect = core.detector.current();
        if core.survey.is_some() {
            core.record(dialect, "(line_too_long)".to_owned(), ReadAs::Unknown, line_no);
        }
        core.unknown += 1;
        core.emit(ev, Some((line_no, dialect)), sink);
    }

    /// Writes `run_ended` and says how the stream went. `ended_with_newline` is false when the
    /// input stopped mid-line.
    pub fn finish(&mut self, ended_with_newline: bool, sink: &mut dyn Sink) -> Summary {
        let mut out = std::mem::take(&mut self.out_buf);
        // Held events belong to a line that had content, never to trailing blank lines.
        let last = self.core.last_content;
        self.states.finish(&mut Step { core: &mut self.core, out: &mut out, line_no: last, new_session: false });
        let core = &mut self.core;
        let dialect = core.detector.current();
        core.emit_deferred(dialect, sink);
        for ev in out.drain(..) {
            core.emit(ev, Some((last, dialect)), sink);
        }
        self.out_buf = out;
        let saved_log = dialect.is_some_and(dialect::registry::is_saved_log);
        let open = core.turn_open && !saved_log;
        let complete = ended_with_newline && !open;
        let ev = Event::RunEnded {
            env: Envelope::default(),
            lines: core.lines,
            events: core.events,
            unknown: core.unknown,
            unknown_frames: (!core.unknown_frames.is_empty()).then(|| core.unknown_frames.clone()),
            complete,
        };
        core.emit(ev, None, sink);
        Summary { lines: core.lines, unknown: core.unknown, turn_failed: core.turn_failed, turn_open: open, complete }
    }
}

impl Core {
    /// Keeps line `line_no` (`line`, its bytes) as the latest seed of its `kind`.
    fn keep_seed(&mut self, kind: SeedLine, line_no: u64, line: &[u8]) {
        match self.seeds.iter_mut().find(|(k, _, _)| *k == kind) {
            Some((_, at, bytes)) => {
                *at = line_no;
                bytes.clear();
                bytes.extend_from_slice(line);
            }
            None => self.seeds.push((kind, line_no, line.to_vec())),
        }
    }

    /// Counts one line in the survey.
    fn record(&mut self, dialect: Option<Dialect>, frame: String, read_as: ReadAs, line_no: u64) {
        let key = SurveyKey { dialect, cli_version: self.cli_version.clone(), frame };
        if let Some(s) = &mut self.survey {
            s.record(key, read_as, self.opts.source.as_deref(), line_no);
        }
    }

    fn emit_deferred(&mut self, dialect: Option<Dialect>, sink: &mut dyn Sink) {
        for (ev, line) in std::mem::take(&mut self.deferred) {
            self.emit(ev, Some((line, dialect)), sink);
        }
    }

    fn event(&mut self, mut ev: Event, line_no: u64, out: &mut Vec<Event>, new_session: bool) {
        match &mut ev {
            Event::SessionStarted { cli_version, .. } => {
                if cli_version.is_some() {
                    self.cli_version.clone_from(cli_version);
                }
                let Some(id) = self.session_id.as_deref() else { return };
                // Claude repeats `system/init` every turn: one session_started per session.
                if !self.sessions.insert(id) && !new_session {
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
        if ev.opens_turn() {
            self.turn_open = true;
        }
        if matches!(ev, Event::TurnStarted { .. }) {
            self.turn_started = true;
        } else if ev.ends_turn() {
            self.turn_open = false;
            self.turn_started = false;
            self.turn_text.reset();
            self.turn_failed |= matches!(ev, Event::TurnFailed { .. });
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
        if self.survey.is_some() && matches!(reason, UnknownReason::UnrecognizedFrame | UnknownReason::MalformedFrame) {
            let name = frame.clone().unwrap_or_else(|| "(no type)".to_owned());
            self.record(dialect, name, ReadAs::Unknown, line_no);
        }
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

    /// Writes an event of the line being applied: its envelope gets the frame's facts
    /// ([`Current`], lent to the event while the sink sees it, not cloned).
    fn emit_line(&mut self, ev: &mut Event, dialect: Option<Dialect>, line_no: u64, line: &[u8], sink: &mut dyn Sink) {
        let line_text = || Text::from(String::from_utf8_lossy(line).into_owned());
        // `unknown` and `diagnostic` carry the line in their own `raw`.
        let mut env_raw = None;
        match ev {
            Event::Diagnostic { raw, .. } => *raw = line_text(),
            Event::Unknown { .. } => self.unknown += 1,
            _ if self.opts.raw => {
                env_raw = Some(match self.raw_lent.take() {
                    Some((n, len, t)) if n == line_no && len == line.len() => t,
                    _ => line_text(),
                });
            }
            _ => {}
        }
        if !self.opts.filter.allows(ev.type_name()) {
            self.raw_lent = env_raw.map(|t| (line_no, line.len(), t));
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
        // Taken back for the line's next event (with what `--redact` masked in it so far).
        self.raw_lent = env.raw.take().map(|t| (line_no, line.len(), t));
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
            self.observed_at = Some(crate::read::time::now());
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
    if crate::read::time::is_contract_form(at) {
        return Some(at.to_owned());
    }
    if let Ok(n) = at.parse::<f64>() {
        return crate::read::time::from_epoch(n);
    }
    crate::read::time::parse_rfc3339_ms(at).map(crate::read::time::rfc3339_millis)
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
