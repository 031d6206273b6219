//! The dialect adapters: one module per CLI, each owning everything about its CLI.
//!
//! An [`Adapter`] says which frames are its CLI's ([`Adapter::claim`], from structure only), maps
//! one parsed frame to event [`Piece`]s ([`Adapter::map`], stateless, so it runs on any thread
//! and in any chunk), and folds its own pieces against its own per-stream state in input order
//! ([`Adapter::fold`]: Claude's partial-message assembly, a transcript's growing usage, Codex's
//! running token totals, a rollout's copied history, OpenCode's steps). The generic fold (the
//! normalizer's, a layer up) keeps only what every dialect shares and offers it to adapters through
//! [`Cx`]. The registry (`src/dialects.rs`, expanded in [`registry`]) lists the adapters. A
//! message's content array of very many blocks is the exception to mapping a frame whole: it is
//! one [`Piece::Blocks`], whose blocks the fold reads again and maps one by one
//! ([`Adapter::map_block`]), writing each block's events before the next is mapped.
//!
//! Each adapter owns its CLI's tool-name → [`ToolKind`] table (a `tool_kind` function next to
//! its mapping) and reads its own CLI's fields. What several adapters need lives here once, so
//! that the same thing reads the same in every dialect: the rule for names no table lists
//! ([`unlisted_kind`]: `mcp__*` is mcp), summaries, joining content blocks, failure kinds, the
//! tool-call constructor ([`Mapped::tool_started`]), the plan-status words ([`plan_status`], behind
//! [`plan_items`] and every adapter's own plan syntax) and the tool outcome ([`Outcome`]): an
//! adapter says what its CLI reported of a finished call (a failure or success status, an exit
//! code, a message, the output) and [`Outcome::event`] makes the `tool_completed`, with one
//! precedence for `ok` and one fallback for a failure's `error`.

use crate::event::{
    Dialect, Envelope, Event, FailureKind, Json, Level, PlanItem, PlanStatus, SubagentStatus, Text, ToolKind,
    UnknownReason,
};
use crate::read::frame::Val;

/// Declares the registry's dialect modules.
macro_rules! declare_modules {
    ($($variant:ident $module:ident::$adapter:ident $name:literal $doc:literal;)*) => {
        $(pub mod $module;)*
    };
}
dialects!(declare_modules);

pub mod detect;
mod recent;
pub(crate) mod registry;
pub mod stderr;
pub mod usage;

pub(crate) use recent::Recent;
pub(crate) use registry::{Own, States};

/// How strongly a frame's structure says it belongs to a dialect ([`Adapter::claim`]).
///
/// The dialects claiming a frame most strongly are the ones it fits; when that is one dialect
/// the frame decides the stream's dialect, when several, the stream's dialect so far is kept
/// (SPEC §2). A claim never looks at a model name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Claim {
    /// Not this dialect's frame.
    No,
    /// A frame this dialect writes, of a shape other dialects write too.
    Fits,
    /// A frame with a mark of this dialect.
    Marked,
    /// A mark that wins over other dialects' marks (Claude's over Cursor's, SPEC §2).
    Overrides,
    /// The line's whole envelope is this dialect's (a rollout's `payload`, legacy Codex's `msg`,
    /// a transcript's conversation-tree keys).
    Envelope,
}

/// The frames an adapter's [`Adapter::claim`] can ever claim, told apart by their root: the
/// detection asks an adapter only about the frames its declaration covers (the registry builds
/// one table of every adapter's, `registry::fit`), so that a frame costs the claims that could
/// take it, not every dialect's.
///
/// A declaration may cover more than its claim takes, never less: a test runs every claim over
/// the fixtures' frames, each also with every declared `type`, and fails on a claim its
/// declaration does not cover.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    /// The `type` values it may claim (lists of them).
    pub(crate) types: &'static [&'static [&'static str]],
    /// Beginnings of the `type` values it may claim.
    pub(crate) type_prefixes: &'static [&'static str],
    /// It may claim a frame whose `type` is absent or not a string.
    pub(crate) untyped: bool,
    /// Root keys with any of which it may claim a frame whatever its `type` (or none).
    pub(crate) with_keys: &'static [&'static str],
    /// The strongest claim it makes: where another dialect claimed a frame more strongly, this
    /// one is not asked.
    pub(crate) strongest: Claim,
}

impl Accepts {
    /// Frames whose `type` is one of `types`, claimed at most `strongest`.
    pub(crate) const fn types(types: &'static [&'static [&'static str]], strongest: Claim) -> Accepts {
        Accepts { types, type_prefixes: &[], untyped: false, with_keys: &[], strongest }
    }

    /// Also frames without a string `type`.
    pub(crate) const fn untyped(self) -> Accepts {
        Accepts { untyped: true, ..self }
    }

    /// Also frames whose `type` begins with one of `prefixes`.
    pub(crate) const fn prefixes(self, prefixes: &'static [&'static str]) -> Accepts {
        Accepts { type_prefixes: prefixes, ..self }
    }

    /// Also any frame with one of the root `keys`.
    pub(crate) const fn with_keys(self, keys: &'static [&'static str]) -> Accepts {
        Accepts { with_keys: keys, ..self }
    }
}

/// One CLI's whole reading: detection, mapping, its own fold state and counters.
///
/// Implemented by a unit type per module in `src/dialect/` and listed in the registry.
pub(crate) trait Adapter {
    /// The pieces only this dialect's fold resolves (`Infallible` when it has none).
    type Piece: std::fmt::Debug + Clone + PartialEq + Send;
    /// What this dialect remembers across the lines of one stream.
    type State: Default + std::fmt::Debug + Send;
    /// Saved logs may stop anywhere without being damaged: only the final newline decides
    /// `run_ended.complete` (SPEC §3).
    const SAVED_LOG: bool = false;

    /// How strongly `frame` (whose `type` is `ty`, when a string) is this dialect's. Asked only
    /// about the frames [`Adapter::ACCEPTS`] covers.
    fn claim(frame: Val<'_>, ty: Option<&str>) -> Claim;

    /// The frames [`Adapter::claim`] can claim (see [`Accepts`]).
    const ACCEPTS: Accepts;

    /// A dialect earlier in the registry whose claims this one shares (a CLI writing another's
    /// frames, as Qwen Code writes Claude's): where [`Adapter::own_claim`] has no opinion, the
    /// detection takes that dialect's claim, already computed, instead of calling
    /// [`Adapter::claim`] (which would compute it a second time on every frame).
    const CLAIMS_LIKE: Option<Dialect> = None;

    /// With [`Adapter::CLAIMS_LIKE`]: this dialect's own claim on frames it tells apart, `None`
    /// where it claims what the other dialect claims.
    fn own_claim(frame: Val<'_>, ty: Option<&str>) -> Option<Claim> {
        Some(Self::claim(frame, ty))
    }

    /// Maps one frame to pieces. Stateless.
    fn map(frame: Val<'_>, m: &mut Mapped);

    /// Resolves one of this dialect's own pieces against its state.
    fn fold(state: &mut Self::State, piece: Self::Piece, cx: &mut dyn Cx) {
        let _ = (state, piece, cx);
    }

    /// Called before a line of this dialect is folded: what the dialect knows of the stream may
    /// change the line's mapping (a rollout's copied history writes no usage).
    fn prepare(state: &mut Self::State, m: &mut Mapped, at: Option<&str>) {
        let _ = (state, m, at);
    }

    /// A turn is about to end (`turn_completed`, `turn_failed`, `interrupt`): events held for
    /// the turn are written first.
    fn turn_ending(state: &mut Self::State, cx: &mut dyn Cx) {
        let _ = (state, cx);
    }

    /// A turn ended: what was kept for it is dropped.
    fn turn_ended(state: &mut Self::State) {
        let _ = state;
    }

    /// The stream ended: events still held are written.
    fn finish(state: &mut Self::State, cx: &mut dyn Cx) {
        let _ = (state, cx);
    }

    /// Whether this dialect's fold may write an event of an earlier line ([`Cx::defer`]), which
    /// comes before the current line's: the fold then holds a line's events until its last
    /// piece that may, instead of writing them as they come ([`Piece::Blocks`]).
    const DEFERS: bool = false;

    /// Maps one content block of a [`Piece::Blocks`] this dialect made (`of`), as mapping the
    /// whole line would have mapped it.
    fn map_block(block: Val<'_>, of: &Blocks, m: &mut Mapped) {
        let _ = (block, of, m);
    }

    /// Reading for usage only (a sink that [`skims`](crate::Sink::skims), `agentnorm usage`):
    /// whether `line`, the next line of a stream of this dialect, can be passed over without
    /// being decoded. Only a line of this dialect's own shape, known from its bytes to write no
    /// `usage`, `session_started`, model, `rate_limit`, turn start or end, `diagnostic` or
    /// `unknown` (only text, reasoning, tool, compaction and heartbeat events) may be, and only
    /// where passing it over changes nothing this state decides for later lines; and only
    /// what `skim` allows (at [`Skim::Usage`](crate::Skim::Usage), no line that may be a
    /// request's first). The default decodes every line.
    fn passes_over(state: &mut Self::State, line: &[u8], skim: crate::Skim) -> bool {
        let _ = (state, line, skim);
        false
    }

    /// Whether this state, between two lines, holds nothing the rest of a saved log depends on
    /// for its usage but what the lines it marked as seeds restore ([`Mapped::seed`]): a
    /// reading started at the next line (a new normalizer that read those lines first,
    /// [`crate::Normalizer::seeded`]) gives the same `usage` events, the same `session_started`
    /// of each session aside (a fresh reading may write it again) and the same message ids,
    /// which a report counts once wherever they come from. `agentnorm usage` reads a large log
    /// in pieces cut at such lines, so that a log that grew is read again from its last piece
    /// only. The default: never.
    fn at_rest(state: &Self::State) -> bool {
        let _ = state;
        false
    }
}

/// The first string value written exactly as `key` (`"name":"`, as a CLI writing compact JSON
/// writes it) in `line`, when it holds no escape: what [`Adapter::passes_over`] reads of a line
/// without decoding it. `None` when there is none, or it is not plain.
pub(crate) fn raw_string<'a>(line: &'a [u8], key: &memchr::memmem::Finder<'_>) -> Option<&'a [u8]> {
    let start = key.find(line)? + key.needle().len();
    let rest = &line[start..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"').then_some(&rest[..end])
}

/// The first `"type":"…"` value of `line` ([`raw_string`]): a compact line's own `type` where
/// its CLI writes that key before any nested object.
pub(crate) fn raw_type(line: &[u8]) -> Option<&[u8]> {
    raw_string(line, &RAW_TYPE)
}

/// `"type":"`, what [`raw_type`] and [`raw_top_type`] look for.
static RAW_TYPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br#""type":""#));

/// [`raw_type`] where it is the line's own: no object opens before it (its CLI writes `type`
/// before any nested object, and this line shows it). `None` otherwise.
pub(crate) fn raw_top_type(line: &[u8]) -> Option<&[u8]> {
    let at = RAW_TYPE.find(line)?;
    if memchr::memchr(b'{', line.get(1..at)?).is_some() {
        return None;
    }
    raw_string(&line[at..], &RAW_TYPE)
}

/// A message's content array of at least this many blocks is mapped block by block when the
/// fold reaches it ([`Piece::Blocks`]) instead of with the rest of its line.
pub(crate) const LAZY_BLOCKS: usize = 1024;

#[cfg(test)]
thread_local! {
    /// [`LAZY_BLOCKS`] on this thread, lowered by tests so that every content array is mapped
    /// block by block, and its output compared with the whole line's mapping.
    pub(crate) static LAZY_BLOCKS_HERE: std::cell::Cell<usize> = const { std::cell::Cell::new(LAZY_BLOCKS) };
}

/// [`LAZY_BLOCKS`], or a test's own.
pub(crate) fn lazy_blocks() -> usize {
    #[cfg(test)]
    return LAZY_BLOCKS_HERE.get();
    #[cfg(not(test))]
    LAZY_BLOCKS
}

/// The content blocks of one message, mapped one by one when the fold reaches them rather than
/// all at once when the line is read: a line of hundreds of thousands of blocks would otherwise
/// hold a piece, then an event, of several hundred bytes per block before the first is written.
/// The fold reads the array again from the line's bytes ([`Val::own_span`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Blocks {
    /// The dialect whose [`Adapter::map_block`] maps each block.
    pub dialect: Dialect,
    /// Whose content it is.
    pub content: Content,
    /// Where the array is in the bytes the line was read from.
    pub span: std::ops::Range<u32>,
    /// The message the blocks are of.
    pub message_id: Option<String>,
}

/// Whose content a [`Blocks`] is: an adapter maps the two apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// An assistant message's (text, thinking, tool calls).
    Assistant,
    /// A user message's: only its tool results (its text is taken when the line is read).
    UserResults,
}

impl Blocks {
    /// A [`Piece::Blocks`] for the array `content` when `count` of its blocks make pieces, at
    /// least [`LAZY_BLOCKS`], and it can be read again from the line's own bytes.
    pub(crate) fn of(
        dialect: Dialect,
        of: Content,
        content: Val<'_>,
        count: usize,
        message_id: &Option<String>,
    ) -> Option<Piece> {
        let span = content.own_span()?;
        (count >= lazy_blocks())
            .then(|| Piece::Blocks(Blocks { dialect, content: of, span, message_id: message_id.clone() }))
    }
}

/// What the generic fold offers an adapter's own fold.
pub(crate) trait Cx {
    /// Writes an event of the current line through the generic rules (one `session_started` per
    /// session, tool pairing, rate-limit repeats, turn state).
    fn event(&mut self, ev: Event);
    /// Writes assistant text that the CLI may repeat within a turn: only the part not yet
    /// written ([`Piece::TurnText`]).
    fn turn_text(&mut self, text: Text, fragment: bool, message_id: Option<String>);
    /// Records streamed text as written in the turn, without writing it.
    fn note_fragment(&mut self, text: &str);
    /// Fragments were streamed since the last whole message.
    fn has_segment(&self) -> bool;
    /// A turn is open (something of it was written since the last end).
    fn turn_open(&self) -> bool;
    /// Marks the turn open (held usage counts).
    fn set_turn_open(&mut self);
    /// A `turn_started` was written and its turn has not ended.
    fn turn_started(&self) -> bool;
    /// The current line's number.
    fn line_no(&self) -> u64;
    /// The current line's normalized time.
    fn at(&self) -> Option<&str>;
    /// The current line's subagent tool id.
    fn parent_tool_id(&self) -> Option<&str>;
    /// The current line's sidechain mark.
    fn sidechain(&self) -> Option<bool>;
    /// The stream's session id.
    fn session_id(&self) -> Option<&str>;
    /// Writes `ev` (its envelope as given) as an event of the earlier line `line`, before the
    /// current line's events.
    fn defer(&mut self, ev: Event, line: u64);
}

/// One result of mapping a frame, before the stream's state is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// An event to write as is (the fold fills the envelope).
    Event(Event),
    /// A new session or process began: per-process ids (Codex `item_0`, …) start over.
    ResetTools,
    /// Assistant text of CLIs that repeat what they streamed (Gemini `delta`s then a whole
    /// message, Cursor partial flushes then a final repeat): only text not yet emitted in the
    /// current turn is written.
    TurnText {
        /// The text.
        text: Text,
        /// A streamed fragment (always new), as opposed to a whole message or segment that may
        /// repeat fragments.
        fragment: bool,
        /// The message id, where known.
        message_id: Option<String>,
    },
    /// The model of the requests that follow (Codex rollout `turn_context`): `usage` events that
    /// name none get it.
    Model(String),
    /// A piece only one dialect's fold resolves, against that dialect's state.
    #[allow(private_interfaces)]
    Own(Own),
    /// Content blocks to map one by one when the fold reaches them.
    Blocks(Blocks),
}

/// What an adapter makes of one frame.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mapped {
    /// The pieces, in output order.
    pub pieces: Vec<Piece>,
    /// The session id the frame names.
    pub session_id: Option<String>,
    /// The subagent's spawning tool call the frame names.
    pub parent_tool_id: Option<String>,
    /// The frame belongs to a transcript sidechain.
    pub sidechain: Option<bool>,
    /// The frame's own timestamp, as the CLI wrote it.
    pub at: Option<String>,
    /// The frame's name for `heartbeat` / `unknown` (`type`, or `type/subtype`).
    pub frame: String,
    /// Set when the frame is not understood.
    pub unknown: Option<UnknownReason>,
    /// Set before mapping when the line is read for usage only (a sink that
    /// [`skims`](crate::Sink::skims)): an adapter may then leave out the content of text,
    /// reasoning and tool events (their text, a call's input and summary, a result's output, and
    /// what is read from them: a plan, a question), whose reading is most of a conversation
    /// line's cost and none of its usage, and a `session_started`'s CLI version and permission
    /// mode. The events themselves stay, with their ids and times.
    pub(crate) usage_only: bool,
    /// What the line is to a reading started after it ([`Adapter::at_rest`]): a line of this
    /// kind holds state that the lines after it depend on for their usage (the session, the
    /// model, a running total, rate-limit readings), and the latest line of each kind is read
    /// again before a reading that starts later ([`crate::Normalizer::seeded`]).
    pub(crate) seed: Option<SeedLine>,
}

/// The kinds of line whose latest one a reading started later in a saved log reads first
/// ([`Mapped::seed`]): each kind's latest line restores what the lines of that kind set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SeedLine {
    /// The line that started the session (its id, what it says of the log's form).
    Session,
    /// The line that named the model of the requests that follow.
    Model,
    /// The line that carried the last running token total.
    Total,
    /// The line that carried the last rate-limit readings.
    Limits,
}

/// Per-thread spare lists of one element type: emptied lists given back after use, taken
/// again for the next lines decoded on the thread, instead of a malloc and a free per line.
pub(crate) type SpareLists<T> = std::cell::RefCell<Vec<Vec<T>>>;

/// Spare lists kept per thread: one serves a thread that folds each line as it decodes it; an
/// all-cores worker decodes a whole chunk (a few hundred lines) before folding it, and gets this
/// many back for its next chunk.
const SPARE_LISTS: usize = 128;
/// A list that grew past this many elements is not kept (at most 128 × 16 pieces' room, 1 MiB,
/// per thread).
const SPARE_CAPACITY: usize = 16;

/// A list from this thread's spares (empty, with room), or a new one.
pub(crate) fn take_spare<T: 'static>(spares: &'static std::thread::LocalKey<SpareLists<T>>) -> Vec<T> {
    spares.with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop())).unwrap_or_default()
}

/// Empties `list` and keeps it among this thread's spares (unless they are full or it is large).
pub(crate) fn give_spare<T: 'static>(spares: &'static std::thread::LocalKey<SpareLists<T>>, mut list: Vec<T>) {
    list.clear();
    if list.capacity() == 0 || list.capacity() > SPARE_CAPACITY {
        return;
    }
    spares.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut()
            && s.len() < SPARE_LISTS
        {
            s.push(list);
        }
    });
}

thread_local! {
    /// Piece lists the fold gave back ([`Mapped::recycle`]): a line's list (a few pieces of ~500
    /// bytes) is otherwise a malloc and a free of a couple of KiB per line, often one more to
    /// grow it.
    static SPARE_PIECES: SpareLists<Piece> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Mapped {
    /// An empty mapping whose piece list, when this thread has one spare, is a recycled one.
    pub fn new() -> Mapped {
        Mapped { pieces: take_spare(&SPARE_PIECES), ..Mapped::default() }
    }

    /// Gives an emptied piece list back for [`Mapped::new`] to reuse on this thread.
    pub fn recycle(pieces: Vec<Piece>) {
        give_spare(&SPARE_PIECES, pieces);
    }

    /// Adds a piece (an adapter's own pieces convert into [`Piece`]).
    pub(crate) fn push_piece(&mut self, p: impl Into<Piece>) {
        self.pieces.push(p.into());
    }

    /// Adds an event.
    pub fn push(&mut self, e: Event) {
        self.pieces.push(Piece::Event(e));
    }

    /// Adds a `tool_started` (every adapter's calls start here).
    pub fn tool_started(
        &mut self,
        tool_id: String,
        name: &str,
        kind: ToolKind,
        input: Option<Json>,
        summary: Option<String>,
    ) {
        self.push(Event::ToolStarted {
            env: Envelope::default(),
            tool_id,
            name: name.to_owned(),
            kind,
            input,
            summary,
            synthetic: None,
        });
    }

    /// Names the frame `kind/sub` (`system/init`) without `format!`.
    pub fn set_frame(&mut self, kind: &str, sub: &str) {
        // A new string of the exact length: growing the old one would copy it first.
        let mut frame = String::with_capacity(kind.len() + 1 + sub.len());
        frame.push_str(kind);
        frame.push('/');
        frame.push_str(sub);
        self.frame = frame;
    }

    /// Adds a heartbeat named after the frame.
    pub fn heartbeat(&mut self) {
        let frame = self.frame.clone();
        self.push(Event::heartbeat(frame));
    }

    /// Marks the frame as not understood; `frame` overrides the frame name.
    pub fn unknown(&mut self, reason: UnknownReason, frame: Option<String>) {
        if let Some(f) = frame {
            self.frame = f;
        }
        self.unknown = Some(reason);
    }
}

/// The event a call implies besides its own, from its arguments: the plan of a plan tool
/// (`todos` or `plan`), the question of an ask tool (`questions` / `question`).
pub fn call_extra(kind: ToolKind, input: Option<Val<'_>>) -> Option<Event> {
    let input = input?;
    match kind {
        ToolKind::Plan => ["todos", "plan"]
            .iter()
            .find_map(|k| input.get(k))
            .and_then(plan_items)
            .map(|items| Event::PlanUpdated { env: Envelope::default(), items }),
        ToolKind::Ask => Some(needs_input(input.get("questions"), input.string_at("question"))),
        _ => None,
    }
}

/// A `session_started` that knows nothing but the session id (which the fold puts in the
/// envelope).
pub fn session_started() -> Event {
    Event::SessionStarted {
        env: Envelope::default(),
        model: None,
        cwd: None,
        cli_version: None,
        permission_mode: None,
        tools: None,
        parent_session_id: None,
    }
}

/// A `needs_input` from a list of structured questions (`[{question, …}]`) and/or a prompt.
pub fn needs_input(questions: Option<Val<'_>>, prompt: Option<String>) -> Event {
    let first = questions.and_then(|q| q.array()).and_then(|mut a| a.next()).and_then(|q| q.string_at("question"));
    // Only tool_started.input may hold nulls (SPEC §1): they are left out of the questions.
    Event::NeedsInput {
        env: Envelope::default(),
        prompt: first.or(prompt),
        questions: questions.map(|q| q.to_json_without_nulls()),
    }
}

/// A diagnostic event; the fold fills `raw` with the source line.
pub fn diagnostic(level: Level, code: &str, message: String, plugins: Vec<String>) -> Event {
    let mut sorted = plugins.clone();
    sorted.sort();
    sorted.dedup();
    let dedupe_key = if sorted.is_empty() { code.to_owned() } else { format!("{code}|{}", sorted.join("|")) };
    Event::Diagnostic {
        env: Envelope::default(),
        level,
        code: code.to_owned(),
        message,
        dedupe_key,
        count: 1,
        plugins: sorted,
        raw: Text::from(""),
        subsystem: None,
        first_line: None,
        last_line: None,
    }
}

/// Maps a CLI's subagent / task status word onto the contract's.
pub fn subagent_status(raw: &str) -> SubagentStatus {
    match raw {
        "pending" | "pending_init" | "queued" => SubagentStatus::Pending,
        "completed" | "done" | "success" => SubagentStatus::Completed,
        "failed" | "errored" | "error" | "not_found" => SubagentStatus::Failed,
        "stopped" | "shutdown" | "killed" | "cancelled" | "canceled" | "interrupted" => SubagentStatus::Stopped,
        _ => SubagentStatus::Running,
    }
}

/// The length of a named rate-limit window.
pub fn window_minutes(window: &str) -> Option<u64> {
    match window {
        "five_hour" => Some(300),
        "seven_day" | "seven_day_opus" | "seven_day_sonnet" => Some(10_080),
        _ => None,
    }
}

/// A 0–1 fraction as a percentage, rounded to 1/100 so that `0.57` reads `57`, not `56.99999999999999`.
/// `None` for a negative or non-finite reading.
pub fn percent(fraction: f64) -> Option<f64> {
    let p = (fraction * 10_000.0).round() / 100.0;
    (p.is_finite() && p >= 0.0).then_some(p)
}

/// A reset time given as epoch seconds / milliseconds or as an RFC 3339 string, as RFC 3339 UTC;
/// anything else is left out.
pub fn reset_time(v: Val<'_>) -> Option<String> {
    match v.str() {
        Some(s) => crate::read::time::parse_rfc3339_ms(s).map(crate::read::time::rfc3339_millis),
        None => crate::read::time::from_epoch(v.f64()?),
    }
}

impl From<Event> for Piece {
    fn from(e: Event) -> Piece {
        Piece::Event(e)
    }
}

/// The tool id placeholder for a call that has none; the fold replaces it with `line:<n>`.
pub const NO_ID: &str = "";

/// What a CLI itself says of how a call ended, as opposed to what its exit code or error
/// message imply ([`Outcome::verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A failure status or error flag (`is_error: true`, `status: "failed"`, an `ERROR` state).
    Failed,
    /// A success status (`status: "success"`, a `DONE` state): a stray error message does not
    /// fail the call, a non-zero exit code still does.
    Succeeded,
}

impl Verdict {
    /// `Failed` when the CLI's flag says so, else nothing said.
    pub(crate) fn failed_if(failed: bool) -> Option<Verdict> {
        failed.then_some(Verdict::Failed)
    }

    /// The CLI's word either way.
    pub(crate) fn ok_if(ok: bool) -> Verdict {
        if ok { Verdict::Succeeded } else { Verdict::Failed }
    }
}

/// A finished call as its CLI reports it; [`Outcome::event`] makes its `tool_completed` with
/// the one rule every dialect shares for `ok` and for the failure's `error` text.
///
/// `ok` ([`Outcome::ok`]), first rule that applies: a [`Verdict::Failed`] fails the call; a
/// non-zero `exit_code` fails it; a [`Verdict::Succeeded`] passes it; an error message fails it;
/// else it passed.
///
/// `error` (a failed call's only; a passed call has none): the CLI's message; else, for a CLI
/// whose failed call's result is its message ([`Outcome::output_is_error`]), that whole output;
/// else `exit code N` for a non-zero exit code; else the output's first line; else `failed`.
/// An empty message or output counts as none.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// The call's id ([`NO_ID`] when the CLI names none).
    pub tool_id: String,
    /// The tool's name, where the completion names it.
    pub name: Option<String>,
    /// What the tool does, where the completion says.
    pub kind: Option<ToolKind>,
    /// What the CLI says of the call's end, where it says.
    pub verdict: Option<Verdict>,
    /// A command's exit code.
    pub exit_code: Option<i64>,
    /// The CLI's error message (or status word, where that is all it says of a failure).
    pub error: Option<String>,
    /// The call's output.
    pub output: Option<Text>,
    /// How long the call took.
    pub duration_ms: Option<u64>,
    /// The CLI gives a failed call's message as its result (pi's, droid's and Grok's
    /// `isError` / `failed` results, Copilot's failed `result.content`): when the call failed,
    /// the output is written whole as the `error`, not as the `output`.
    pub output_is_error: bool,
}

impl Outcome {
    /// A completion of the call `tool_id` that says nothing else yet.
    pub(crate) fn new(tool_id: String) -> Outcome {
        Outcome { tool_id, ..Outcome::default() }
    }

    /// Whether the call succeeded (the rule in [`Outcome`]'s description).
    pub(crate) fn ok(&self) -> bool {
        match self.verdict {
            Some(Verdict::Failed) => false,
            _ if self.exit_code.is_some_and(|c| c != 0) => false,
            Some(Verdict::Succeeded) => true,
            None => self.error.as_deref().is_none_or(str::is_empty),
        }
    }

    /// The `tool_completed` event.
    pub(crate) fn event(self) -> Event {
        let ok = self.ok();
        let Outcome { tool_id, name, kind, exit_code, error, output, duration_ms, output_is_error, .. } = self;
        let (output, error) = if ok {
            (output, None)
        } else {
            let message = error.filter(|e| !e.is_empty());
            let (output, message) = match (output_is_error, message) {
                (true, None) => (None, output.map(|t| t.as_str().into_owned()).filter(|t| !t.is_empty())),
                (true, message) => (None, message),
                (false, message) => (output, message),
            };
            let error = message
                .or_else(|| exit_code.filter(|&c| c != 0).map(|c| format!("exit code {c}")))
                .or_else(|| output.as_ref().and_then(text_line))
                .unwrap_or_else(|| "failed".to_owned());
            (output, Some(error))
        };
        Event::ToolCompleted {
            env: Envelope::default(),
            tool_id,
            name,
            kind,
            ok,
            output,
            exit_code,
            error,
            duration_ms,
        }
    }
}

/// The kind of a tool name that a dialect's own table does not list (SPEC §3): `mcp` for
/// `mcp__<server>__<tool>`, the MCP naming of Claude Code and Codex that other CLIs copy, else
/// `other`. Each dialect's `tool_kind` ends with it; a name is never looked up in another CLI's
/// table unless the dialect says so.
pub fn unlisted_kind(name: &str) -> ToolKind {
    if name.starts_with("mcp__") { ToolKind::Mcp } else { ToolKind::Other }
}

/// A dialect's tool-name table, for mappings that one dialect lends another (Claude's content
/// blocks read with Qwen's names).
pub(crate) type ToolKinds = fn(&str) -> ToolKind;

/// Asserts that `table` maps each name to its kind (the dialects' table tests).
#[cfg(test)]
pub(crate) fn assert_kinds(table: ToolKinds, cases: &[(&str, ToolKind)]) {
    for &(name, kind) in cases {
        assert_eq!(table(name), kind, "{name}");
    }
}

/// A one-line human description of a call: the command, path, pattern, URL, query or task.
pub fn summary(kind: ToolKind, input: Option<Val<'_>>) -> Option<String> {
    let input = input?;
    let keys: &[&str] = match kind {
        ToolKind::Shell => &["command", "cmd"],
        ToolKind::Read | ToolKind::Write | ToolKind::Edit => &["file_path", "path", "notebook_path", "absolute_path"],
        ToolKind::Search => &["pattern", "query", "path"],
        ToolKind::Fetch => &["url"],
        ToolKind::WebSearch => &["query"],
        ToolKind::Task => &["description", "subagent_type", "prompt"],
        ToolKind::Ask => &["question"],
        _ => &["description", "command", "path", "query", "url"],
    };
    let found = keys.iter().find_map(|k| {
        let v = input.get(k)?;
        if let Some(s) = v.str() {
            return Some(std::borrow::Cow::Borrowed(s));
        }
        // `command` may be an argv array.
        let parts: Vec<&str> = v.array()?.filter_map(|p| p.str()).collect();
        (!parts.is_empty()).then(|| std::borrow::Cow::Owned(parts.join(" ")))
    })?;
    one_line(&found)
}

/// The summary of an MCP call: `server/tool`, or the tool alone when no server is named.
pub fn mcp_summary(server: Option<&str>, tool: &str) -> String {
    match server.filter(|s| !s.is_empty()) {
        Some(s) => format!("{s}/{tool}"),
        None => tool.to_owned(),
    }
}

/// The first line of `s`, trimmed and cut to 200 characters; `None` when empty.
pub fn one_line(s: &str) -> Option<String> {
    let first = s.lines().map(str::trim).find(|l| !l.is_empty())?;
    let end = first.char_indices().nth(200).map_or(first.len(), |(i, _)| i);
    Some(first[..end].to_owned())
}

/// [`one_line`] of a text, decoding only as much of a text still in its escaped form as its
/// first line needs (a failed call's `error` is the first line of an output that may be a
/// megabyte long).
pub fn text_line(t: &Text) -> Option<String> {
    let Some(quoted) = t.escaped() else { return one_line(&t.as_str()) };
    let inner = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default();
    let mut want = 1024;
    let mut decoded = String::new();
    while want < inner.len() {
        decoded.clear();
        crate::event::json::unescape(&inner[..escape_boundary(inner, want)], &mut decoded);
        if let Some(line) = settled_line(&decoded) {
            return line;
        }
        want *= 4;
    }
    one_line(&t.as_str())
}

/// [`one_line`] of every text that starts with `prefix`, when `prefix` already decides it.
fn settled_line(prefix: &str) -> Option<Option<String>> {
    let mut rest = prefix;
    while let Some(nl) = rest.find('\n') {
        let line = rest[..nl].trim();
        if !line.is_empty() {
            return Some(one_line(line));
        }
        rest = &rest[nl + 1..];
    }
    // The unterminated last line: decided once a non-blank character follows its first 200.
    let start = rest.trim_start();
    let (at, _) = start.char_indices().nth(200)?;
    start[at..].chars().any(|c| !c.is_whitespace()).then(|| Some(start[..at].to_owned()))
}

/// The largest cut of the escaped string `inner` at or before `want` (`want < inner.len()`)
/// that splits no escape (a surrogate pair is one) and no character.
fn escape_boundary(inner: &str, want: usize) -> usize {
    let b = inner.as_bytes();
    let mut i = 0;
    while let Some(p) = b.get(i..want).and_then(|r| memchr::memchr(b'\\', r)) {
        let at = i + p;
        let high = b.get(at + 1) == Some(&b'u')
            && b.get(at + 2).is_some_and(|c| c.eq_ignore_ascii_case(&b'd'))
            && b.get(at + 3).is_some_and(|c| matches!(c.to_ascii_lowercase(), b'8'..=b'b'));
        let len = match b.get(at + 1) {
            Some(b'u') if high && b.get(at + 6) == Some(&b'\\') => 12,
            Some(b'u') => 6,
            _ => 2,
        };
        if at + len > want {
            return at;
        }
        i = at + len;
    }
    let mut cut = want;
    while !inner.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// A content value as text: a string as is; an array of blocks with text blocks (`text`, and
/// Codex's `input_text` / `output_text`) joined by `\n` and other blocks written as
/// `[<block type>]` (SPEC §3 `tool_completed.output`).
pub fn content_text(content: Val<'_>) -> Option<Text> {
    if content.is_str() {
        return content.text();
    }
    let blocks: Vec<Val<'_>> = content.array()?.collect();
    let is_text = |ty: Option<&str>| ty.is_none_or(|t| t == "text" || t.ends_with("_text"));
    if let [only] = blocks.as_slice()
        && is_text(only.str_at("type"))
        && only.get("text").is_some_and(|t| t.is_str())
    {
        return only.text_at("text");
    }
    let mut out = String::new();
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match (b.str_at("type"), b.str_at("text")) {
            (ty, Some(t)) if is_text(ty) => out.push_str(t),
            (Some(t), _) => {
                out.push('[');
                out.push_str(t);
                out.push(']');
            }
            (None, _) => out.push_str(b.str().unwrap_or("[block]")),
        }
    }
    Some(Text::from(out))
}

/// Plan items from a list of `{content|text|step|description, status}` or `{text, completed}`
/// entries (Gemini's `write_todos` names its items' text `description`); each `status` read by
/// [`plan_status`], a `completed: true` without one is completed.
pub fn plan_items(list: Val<'_>) -> Option<Vec<PlanItem>> {
    let items = list
        .array()?
        .filter_map(|it| {
            let text = ["content", "text", "step", "description"].iter().find_map(|k| it.str_at(k))?;
            let status = match (it.str_at("status"), it.bool_at("completed")) {
                (Some(raw), _) => plan_status(raw),
                (None, Some(true)) => PlanStatus::Completed,
                (None, _) => PlanStatus::Pending,
            };
            Some(PlanItem { text: text.to_owned(), status })
        })
        .collect();
    Some(items)
}

/// Every CLI's word (or checklist mark) for a plan item's status, onto the contract's (SPEC §3
/// `plan_updated`), the same in every dialect: `completed` / `done` / `x`, `in_progress` /
/// `active` / `~` / `-`, `cancelled` / `canceled`, any case, with or without Cursor's
/// `TODO_STATUS_` prefix; anything else (`pending`, `todo`, a blank mark) is pending.
pub fn plan_status(raw: &str) -> PlanStatus {
    let word = raw.strip_prefix("TODO_STATUS_").unwrap_or(raw);
    let is = |w: &str| word.eq_ignore_ascii_case(w);
    if is("completed") || is("done") || is("x") {
        PlanStatus::Completed
    } else if is("in_progress") || is("active") || is("~") || is("-") {
        PlanStatus::InProgress
    } else if is("cancelled") || is("canceled") {
        PlanStatus::Cancelled
    } else {
        PlanStatus::Pending
    }
}

/// Classifies a failure message.
pub fn failure_kind(message: &str) -> FailureKind {
    let m = message.to_ascii_lowercase();
    if m.contains("usage limit") || m.contains("rate limit") || m.contains("out of credits") || m.contains("quota") {
        FailureKind::UsageLimit
    } else if m.contains("authenticat")
        || m.contains("401")
        || m.contains("unauthorized")
        || m.contains("api key")
        || m.contains("log in")
        || m.contains("login")
    {
        FailureKind::Auth
    } else if m.contains("max turns") || m.contains("max_turns") || m.contains("maximum number of turns") {
        FailureKind::MaxTurns
    } else if m.contains("interrupt") || m.contains("abort") || m.contains("cancel") {
        FailureKind::Aborted
    } else if m.contains("api error")
        || m.contains("api_error")
        || m.contains("status 5")
        || m.contains("overloaded")
        || m.contains("stream disconnected")
        || m.contains("high demand")
        || m.contains("unexpected status")
    {
        FailureKind::ApiError
    } else {
        FailureKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::frame::Parser;
    use proptest::prelude::Just;

    #[test]
    fn unlisted_names_are_mcp_only_by_prefix() {
        assert_eq!(unlisted_kind("mcp__github__search"), ToolKind::Mcp);
        assert_eq!(unlisted_kind("mcp__"), ToolKind::Mcp);
        // No CLI's names are known here: a name some CLI uses is `other` to the rule.
        for name in ["Bash", "shell", "run_shell_command", "mcp_github_search", "Frobnicate", ""] {
            assert_eq!(unlisted_kind(name), ToolKind::Other, "{name}");
        }
    }

    #[test]
    fn content_blocks_join() {
        let mut p = Parser::default();
        p.with_frame(
            br#"{"c":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]}"#,
            |v| {
                assert_eq!(content_text(v.unwrap().get("c").unwrap()).unwrap().as_str(), "a\n[image]\nb");
            },
        );
    }

    #[test]
    fn summaries_are_one_line() {
        let mut p = Parser::default();
        p.with_frame(br#"{"command":"\n  ls -la\necho hi"}"#, |v| {
            assert_eq!(summary(ToolKind::Shell, v.ok()), Some("ls -la".into()));
        });
    }

    proptest::proptest! {
        /// The first line of an escaped text, decoded in part, is the first line of all of it:
        /// long and short lines, blank lines, CRLF, white space, escapes (`\u` forms and
        /// surrogate pairs among them) on both sides of every cut.
        #[test]
        fn text_line_decodes_no_more_than_it_needs_and_agrees(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    Just("\n".to_owned()), Just("\r\n".to_owned()), Just("  ".to_owned()), Just("\t".to_owned()),
                    Just("é".to_owned()), Just("😀".to_owned()), Just("\"\\".to_owned()), Just("\u{2028}".to_owned()),
                    "[a-z ]{1,300}",
                ],
                0..40,
            ),
            u_escapes in proptest::bool::ANY,
        ) {
            let text: String = pieces.concat();
            let mut quoted = serde_json::to_string(&text).unwrap();
            if u_escapes {
                // The same text with its non-ASCII and some ASCII characters as `\u` escapes.
                quoted = text.chars().map(|c| match c {
                    'é' | 'a' | ' ' => format!("\\u{:04x}", c as u32),
                    '😀' => "\\ud83d\\ude00".to_owned(),
                    c => {
                        let q = serde_json::to_string(&c.to_string()).unwrap();
                        q[1..q.len() - 1].to_owned()
                    }
                }).collect::<String>();
                quoted = format!("\"{quoted}\"");
            }
            let t = Text::from_quoted(&quoted);
            proptest::prop_assert_eq!(t.as_str(), text.as_str());
            proptest::prop_assert_eq!(text_line(&t), one_line(&text));
        }
    }

    #[test]
    fn cancelled_plan_items_stay_cancelled() {
        let mut p = Parser::default();
        p.with_frame(
            br#"{"todos":[{"content":"a","status":"cancelled"},{"content":"b","status":"canceled"},{"content":"c","status":"TODO_STATUS_CANCELLED"},{"content":"d","status":"completed"}]}"#,
            |v| {
                let items = plan_items(v.unwrap().get("todos").unwrap()).unwrap();
                let st: Vec<PlanStatus> = items.iter().map(|i| i.status).collect();
                assert_eq!(
                    st,
                    [PlanStatus::Cancelled, PlanStatus::Cancelled, PlanStatus::Cancelled, PlanStatus::Completed]
                );
            },
        );
    }

    #[test]
    fn plan_status_words_and_marks() {
        use PlanStatus::*;
        for (raw, want) in [
            ("completed", Completed),
            ("done", Completed),
            ("Done", Completed),
            ("TODO_STATUS_COMPLETED", Completed),
            ("x", Completed),
            ("X", Completed),
            ("in_progress", InProgress),
            ("active", InProgress),
            ("TODO_STATUS_IN_PROGRESS", InProgress),
            ("~", InProgress),
            ("-", InProgress),
            ("cancelled", Cancelled),
            ("canceled", Cancelled),
            ("TODO_STATUS_CANCELLED", Cancelled),
            ("pending", Pending),
            ("TODO_STATUS_PENDING", Pending),
            (" ", Pending),
            ("", Pending),
            ("complete-ish", Pending),
            // The prefix is Cursor's enum spelling only.
            ("STATUS_DONE", Pending),
        ] {
            assert_eq!(plan_status(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn plan_items_read_status_then_completed_flag() {
        let mut p = Parser::default();
        p.with_frame(
            br#"{"l":[{"text":"a","completed":true},{"text":"b","status":"pending","completed":true},{"step":"c","status":"Active"},{"description":"d"}]}"#,
            |v| {
                let st: Vec<PlanStatus> = plan_items(v.unwrap().get("l").unwrap()).unwrap().iter().map(|i| i.status).collect();
                assert_eq!(st, [PlanStatus::Completed, PlanStatus::Pending, PlanStatus::InProgress, PlanStatus::Pending]);
            },
        );
    }

    /// `(ok, output, exit_code, error)` of an outcome's event.
    fn completed(o: Outcome) -> (bool, Option<String>, Option<i64>, Option<String>) {
        match o.event() {
            Event::ToolCompleted { ok, output, exit_code, error, .. } => {
                (ok, output.map(|t| t.as_str().into_owned()), exit_code, error)
            }
            other => panic!("{other:?}"),
        }
    }

    fn out(s: &str) -> Option<Text> {
        Some(Text::from(s))
    }

    #[test]
    fn outcome_ok_precedence() {
        let msg = || Some("boom".to_owned());
        let ok = |o: Outcome| completed(o).0;
        // Nothing said: a success.
        assert!(ok(Outcome::default()));
        // A failure status fails whatever the exit code says.
        assert!(!ok(Outcome { verdict: Some(Verdict::Failed), exit_code: Some(0), ..Outcome::default() }));
        // A non-zero exit code fails even a call the CLI says succeeded.
        assert!(!ok(Outcome { verdict: Some(Verdict::Succeeded), exit_code: Some(2), ..Outcome::default() }));
        assert!(!ok(Outcome { exit_code: Some(-1), ..Outcome::default() }));
        assert!(ok(Outcome { exit_code: Some(0), ..Outcome::default() }));
        // A success status passes a call with a stray message …
        assert!(ok(Outcome { verdict: Some(Verdict::Succeeded), error: msg(), ..Outcome::default() }));
        // … and without a status the message fails it; an empty message is none.
        assert!(!ok(Outcome { error: msg(), ..Outcome::default() }));
        assert!(ok(Outcome { error: Some(String::new()), ..Outcome::default() }));
        assert_eq!(Verdict::failed_if(false), None);
        assert_eq!(Verdict::ok_if(false), Verdict::Failed);
    }

    #[test]
    fn outcome_error_fallbacks() {
        let failed = || Outcome { verdict: Some(Verdict::Failed), ..Outcome::default() };
        let error = |o: Outcome| completed(o).3;
        // A passed call has no error, even when the CLI named one.
        assert_eq!(error(Outcome { verdict: Some(Verdict::Succeeded), error: Some("x".into()), ..failed() }), None);
        // The message, else `exit code N`, else the output's first line, else `failed`.
        let all =
            Outcome { error: Some("boom".into()), exit_code: Some(3), output: out("\n first\nsecond"), ..failed() };
        assert_eq!(error(all.clone()), Some("boom".into()));
        assert_eq!(error(Outcome { error: Some(String::new()), ..all.clone() }), Some("exit code 3".into()));
        assert_eq!(error(Outcome { error: None, exit_code: Some(0), ..all.clone() }), Some("first".into()));
        assert_eq!(error(Outcome { output: out("  \n"), ..failed() }), Some("failed".into()));
        assert_eq!(error(failed()), Some("failed".into()));
        // The output stays the output.
        assert_eq!(completed(all).1.as_deref(), Some("\n first\nsecond"));
    }

    #[test]
    fn outcome_output_as_error() {
        let text = Outcome { output: out("line 1\nline 2"), output_is_error: true, ..Outcome::default() };
        // Passed: the output is the output.
        assert_eq!(completed(text.clone()), (true, Some("line 1\nline 2".into()), None, None));
        // Failed: the whole output is the error, ahead of the exit code; a message goes first.
        let failed = Outcome { verdict: Some(Verdict::Failed), exit_code: Some(1), ..text };
        assert_eq!(completed(failed.clone()), (false, None, Some(1), Some("line 1\nline 2".into())));
        assert_eq!(completed(Outcome { error: Some("why".into()), ..failed.clone() }).3, Some("why".into()));
        assert_eq!(completed(Outcome { output: out(""), ..failed.clone() }).3, Some("exit code 1".into()));
        assert_eq!(
            completed(Outcome { output: None, exit_code: None, ..failed }),
            (false, None, None, Some("failed".into()))
        );
    }

    #[test]
    fn failure_kinds() {
        assert_eq!(failure_kind("You've hit your usage limit."), FailureKind::UsageLimit);
        assert_eq!(failure_kind("Failed to authenticate. API Error: 401"), FailureKind::Auth);
        assert_eq!(failure_kind("something odd"), FailureKind::Other);
    }
}
