//! Claude Code saved sessions, `~/.claude/projects/<project>/<session>.jsonl`.
//!
//! A transcript is what the interactive CLI appends while it works, not a stream meant for
//! machines, so it needs its own adapter even though its `user` / `assistant` lines hold the same
//! `message` objects as `-p --output-format stream-json` (their content blocks are mapped by the
//! very same code, [`super::claude`]). What differs:
//!
//! - **Envelope.** Every conversation line carries `uuid`, `parentUuid`, `isSidechain`,
//!   `sessionId`, `version`, `cwd` and `timestamp` (→ `at`). A `session_started` (with `cwd`,
//!   `cli_version` = `version`, `permission_mode`) is made at the first line carrying a new
//!   `sessionId`; a file that goes A → B → A starts A once (the fold keeps one per id).
//! - **One line per content block, usage growing.** A message's lines share `message.id` and each
//!   repeats its usage; older CLIs (1.0.x) raise `output_tokens` on the last line, 2.0.x write the
//!   start-of-stream snapshot only (its `output` undercounts, and nothing in the file says more).
//!   Usage is a [`TranscriptPiece::GrowingUsage`]: one `usage` per `message.id` with the largest figures,
//!   written when the message has ended, with the `line` / `at` of its last line. A message ends at
//!   the next assistant line of another id, at a `summary` or `system` line, at a user prompt or
//!   interrupt (the user only speaks once the assistant is done), or at the end of input. Model
//!   `<synthetic>` lines are no model request and have no usage; a line without `message.id`
//!   counts on its own.
//! - **User lines are rarely the user's words.** `isMeta` lines (expanded slash-command prompts,
//!   the "Caveat: …" line), `<command-message>` stubs without a `<command-name>`,
//!   `<local-command-stdout>` / `<bash-input>` echoes and `isCompactSummary` summaries become
//!   heartbeats with the frames `user/meta`, `user/caveat`, `user/command`, `user/local_command`
//!   and `user/compact_summary`. A `<command-name>` stub is the slash command the user typed: a
//!   `user_message` whose text is `/name args` (the views open the turn on it).
//!   `[Request interrupted by user…]` is an `interrupt`; `tool_result` blocks are
//!   `tool_completed` (with `duration_ms` from `toolUseResult.durationMs` / `totalDurationMs`
//!   where the CLI measured it).
//! - **API errors** are assistant lines with `isApiErrorMessage: true`, model `<synthetic>`, an
//!   `error` code and the notice as text: a `turn_failed` whose `kind` is `usage_limit` (usage-
//!   or rate-limit texts, `rate_limit` / `billing_error`, status 429), `auth`
//!   (`authentication_failed`, 401/403, login texts) or else `api_error`.
//! - **Sidechains.** A subagent's lines are written inline (1.0.x) or in `agent-*.jsonl` files
//!   (2.x) with `isSidechain: true` and no link to the spawning tool call: every event of such a
//!   line carries the extension field `sidechain: true`; their usage is billed like any other.
//! - **Bookkeeping lines** (`summary`, `file-history-snapshot`, `queue-operation`,
//!   `last-prompt`, `attachment`, `progress`, `permission-mode`, `ai-title`, `custom-title`,
//!   `agent-name`, and the newer entry types of [`BOOKKEEPING`]) are heartbeats. A snapshot's
//!   `at` is `snapshot.timestamp`, except on a snapshot update, which repeats the time of the
//!   snapshot it updates.
//! - **`system` lines**: `compact_boundary` (`compactMetadata`) → `compacted`; `api_error` (a
//!   retry notice, not the end of a turn) → `diagnostic` `claude.api_retry`; `turn_duration`,
//!   `stop_hook_summary`, `local_command`, `informational`, `away_summary` and the untyped hook
//!   notices of older CLIs → heartbeats; other subtypes → `unknown` `system/<subtype>`.
//!
//! A transcript may stop anywhere without being damaged: `run_ended.complete` depends on the
//! final newline only (the fold knows this dialect is a saved log).

use super::claude::{self, NotContent};
use super::{Accepts, Adapter, Blocks, Claim, Cx, Mapped, Own, Piece, Recent, failure_kind};
use crate::dialect::usage;
use crate::event::{Dialect, Envelope, Event, FailureKind, Level, UnknownReason};
use crate::read::frame::Val;
use memchr::memmem::Finder;
use std::sync::LazyLock;

/// The `claude-transcript` dialect.
pub(crate) struct Transcript;

/// Transcript line types that carry no conversation (SPEC §3 liveness frames and newer
/// bookkeeping lines).
const BOOKKEEPING: &[&str] = &[
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "last-prompt",
    "permission-mode",
    "ai-title",
    "custom-title",
    "agent-name",
    // Claude Code 2.1.2xx bookkeeping lines: the UI mode, a PR linked to the session, the
    // remote-control bridge, a session-cumulative cost snapshot (it also counts side calls never
    // in the transcript, so it gives no `usage`), file-history backups, a session's tag and the
    // session it was teleported from.
    "mode",
    "pr-link",
    "atis-latch",
    "bridge-session",
    "cost-state",
    "file-history-delta",
    "teleported-from",
    "tag",
    // The rest of Claude Code 2.1.x's transcript entry types (its `Entry` union): agent
    // settings and colours, worktree state and the move of a session into or out of a worktree
    // (`relocated`), attribution snapshots of the files written, tool results replaced by a
    // stub, context-collapse commits and snapshots (`marble-origami-*`), accepted speculations
    // and the periodic summary of the task under way. None is a request or a message.
    "agent-color",
    "agent-setting",
    "attribution-snapshot",
    "content-replacement",
    "marble-origami-commit",
    "marble-origami-snapshot",
    "relocated",
    "speculation-accept",
    "task-summary",
    "worktree-state",
];

/// Bookkeeping types whose names are common words: a transcript's only with its `sessionId`.
const PLAIN_WORDS: &[&str] = &["mode", "tag", "relocated"];

impl Adapter for Transcript {
    type Piece = TranscriptPiece;
    type State = State;
    const SAVED_LOG: bool = true;

    const ACCEPTS: Accepts = Accepts::types(&[BOOKKEEPING], Claim::Envelope).with_keys(&["parentUuid", "isSidechain"]);

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        // The conversation-tree keys are on every message line.
        if f.get("parentUuid").is_some() || (f.get("isSidechain").is_some() && f.get("sessionId").is_some()) {
            return Claim::Envelope;
        }
        match ty {
            Some(t) if PLAIN_WORDS.contains(&t) && f.get("sessionId").is_none() => Claim::No,
            Some(t) if BOOKKEEPING.contains(&t) => Claim::Marked,
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    /// Every `usage` is on an assistant line, a session starts at the first line of its id, a
    /// request's first line is its first assistant line (which carries its usage), and a prompt,
    /// a `summary` or a `system` line ends the message whose usage is held (a later line of the
    /// same message id is a replay). So of a session already started, these lines are passed
    /// over: the bookkeeping lines that end nothing (snapshots, progress, attachments, queue
    /// operations, …); the lines that end the message held, if any (prompts, a `summary`, a
    /// `system` line other than a `thinking` one) when they hold no tool result (one whose call
    /// was not seen is a tool call of its own): the message is then marked as ended there, and
    /// its usage is written before the next line read ([`Adapter::prepare`]) or at the end, as
    /// the line would have written it (no line between writes an event); and, once the current
    /// request's first line was seen, a user line of tool results and no text block.
    fn passes_over(st: &mut State, line: &[u8], skim: crate::Skim) -> bool {
        static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""usage""#));
        static RESULT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""toolUseResult""#));
        static TOOL_RESULT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""type":"tool_result""#));
        static TEXT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""type":"text""#));
        static SESSION: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""sessionId":""#));
        static SUBTYPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""subtype":""#));
        if !line.starts_with(b"{") {
            return false;
        }
        let started = match super::raw_string(line, &SESSION) {
            Some(id) if st.started.iter().any(|s| **s == *id) => true,
            Some(id) => {
                // Read, this line starts its session (whatever else it holds).
                if st.started.len() < MAX_SKIM_SESSIONS {
                    st.started.push(id.into());
                }
                false
            }
            // Without a plain id it may start a session (or be of no transcript at all).
            None => SESSION.find(line).is_none(),
        };
        if !started {
            return false;
        }
        let seen = skim == crate::Skim::UsageStarted;
        // A line that ends the message held (if any) and writes nothing else a usage reading needs.
        let ends = || TOOL_RESULT.find(line).is_none();
        let (passed, ending) = match super::raw_top_type(line) {
            Some(b"user") => {
                if seen && RESULT.find(line).is_some() && TOOL_RESULT.find(line).is_some() && TEXT.find(line).is_none() {
                    (true, false)
                } else {
                    (ends(), true)
                }
            }
            Some(b"summary") => (ends(), true),
            Some(b"system") => (super::raw_string(line, &SUBTYPE).is_some_and(|s| s != b"thinking") && ends(), true),
            Some(ty) => (ends_nothing(ty), false),
            None => (false, false),
        };
        let passed = passed && USAGE.find(line).is_none();
        if passed && ending && st.growing.is_some() {
            st.ended = true;
        }
        passed
    }

    /// A message that ended at a line passed over ([`Adapter::passes_over`]) is ended before
    /// anything of this line is folded, as the line passed over would have ended it (a line
    /// that is `unknown` folds no piece: the next one ends it).
    fn prepare(st: &mut State, m: &mut Mapped, _at: Option<&str>) {
        if st.ended && m.unknown.is_none() {
            st.ended = false;
            m.pieces.insert(0, TranscriptPiece::EndMessage.into());
        }
    }

    fn fold(st: &mut State, piece: TranscriptPiece, cx: &mut dyn Cx) {
        match piece {
            TranscriptPiece::GrowingUsage { message_id, event } => {
                let Event::Usage { usage, .. } = &event else { return };
                match &mut st.growing {
                    Some(g) if g.message_id == message_id => {
                        if let Event::Usage { usage: held, .. } = &mut g.event {
                            *held = usage::with_context(usage::max_each(*held, *usage));
                        }
                        g.line = cx.line_no();
                        g.at = cx.at().map(str::to_owned);
                    }
                    _ => {
                        flush_growing(st, cx);
                        if st.usage_done.contains(&message_id) {
                            return;
                        }
                        st.growing = Some(Growing {
                            message_id,
                            event,
                            line: cx.line_no(),
                            at: cx.at().map(str::to_owned),
                            parent_tool_id: cx.parent_tool_id().map(str::to_owned),
                            sidechain: cx.sidechain(),
                            session_id: cx.session_id().map(str::to_owned),
                        });
                        cx.set_turn_open();
                    }
                }
            }
            TranscriptPiece::EndMessage => flush_growing(st, cx),
        }
    }

    fn finish(st: &mut State, cx: &mut dyn Cx) {
        flush_growing(st, cx);
    }

    /// At rest while no message's usage is held, or the one held has ended (after a prompt, a
    /// `summary` or a `system` line, until the next assistant line; a finished reading writes
    /// the ended one): every message before was written, and the lines
    /// after start from nothing but their own envelope, which every line repeats. What a fresh
    /// reading does not know, the messages written before (a later line of one is a replay), a
    /// report knows by their ids.
    fn at_rest(st: &State) -> bool {
        st.growing.is_none() || st.ended
    }

    const DEFERS: bool = true;

    fn map_block(b: Val<'_>, of: &Blocks, m: &mut Mapped) {
        claude::map_block(b, of, m, claude::tool_kind);
    }
}

/// A transcript's own pieces: a message's usage, held until the message has ended.
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TranscriptPiece {
    /// One line of a message whose usage grows as the message grows (a line per content
    /// block): one `usage` per message id, written once the message has ended, with the largest
    /// figures seen and the `line` / `at` of its last line.
    GrowingUsage {
        /// The message id.
        message_id: String,
        /// The `usage` event as this line reports it.
        event: Event,
    },
    /// A line that ends any message in progress (a `summary` or `system` line, a prompt).
    EndMessage,
}

impl From<TranscriptPiece> for Piece {
    fn from(p: TranscriptPiece) -> Piece {
        Piece::Own(Own::ClaudeTranscript(p))
    }
}

/// What a transcript remembers: the message whose usage is held, and the messages written.
#[derive(Debug)]
pub(crate) struct State {
    growing: Option<Growing>,
    /// The message held ended at a line passed over ([`Adapter::passes_over`]): it is ended
    /// before the next line's pieces ([`Adapter::prepare`]).
    ended: bool,
    usage_done: Recent<()>,
    /// The session ids a usage-only reading has seen a line of ([`Adapter::passes_over`]).
    started: Vec<Box<[u8]>>,
}

/// Whether a line of type `ty` is a heartbeat that ends no message, which a usage-only reading
/// passes over: progress, attachments, and every [`BOOKKEEPING`] type but `summary` (it ends the
/// message held) and the [`PLAIN_WORDS`] (a transcript's only with its `sessionId`).
fn ends_nothing(ty: &[u8]) -> bool {
    matches!(ty, b"progress" | b"attachment")
        || ty != b"summary"
            && BOOKKEEPING.iter().any(|b| b.as_bytes() == ty)
            && !PLAIN_WORDS.iter().any(|w| w.as_bytes() == ty)
}

/// A usage-only reading of a transcript holding more sessions than this reads every line after.
const MAX_SKIM_SESSIONS: usize = 64;

impl Default for State {
    fn default() -> State {
        State { growing: None, ended: false, usage_done: Recent::new(1 << 12), started: Vec::new() }
    }
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

/// Ends the message held: its usage is written before the current line's events, with its own
/// last line.
fn flush_growing(st: &mut State, cx: &mut dyn Cx) {
    st.ended = false;
    let Some(g) = st.growing.take() else { return };
    st.usage_done.insert(&g.message_id);
    let mut ev = g.event;
    let env = ev.env_mut();
    env.at = g.at;
    env.parent_tool_id = g.parent_tool_id;
    env.sidechain = g.sidechain;
    env.session_id = g.session_id;
    cx.defer(ev, g.line);
}

/// Maps one transcript line.
///
/// ```
/// use agentnorm::{Event, Normalizer, Options};
/// let line = br#"{"type":"user","sessionId":"s1","parentUuid":null,"isSidechain":false,"timestamp":"2026-01-02T03:04:05.000Z","message":{"role":"user","content":"hi"}}"#;
/// let mut events: Vec<Event> = Vec::new();
/// let mut n = Normalizer::new(Options::default().observed_at(false));
/// n.line(line, &mut events);
/// n.finish(&mut events);
/// let types: Vec<&str> = events.iter().map(|e| e.type_name()).collect();
/// assert_eq!(types, ["run_started", "session_started", "user_message", "run_ended"]);
/// ```
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.session_id = f.string_at("sessionId");
    m.at = f.string_at("timestamp");
    if f.bool_at("isSidechain") == Some(true) {
        m.sidechain = Some(true);
    }
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    if m.session_id.is_some() {
        // Written by the fold only for a session id not seen before in the stream (read for
        // usage only, with its folder alone: every line repeats these).
        let full = !m.usage_only;
        m.push(Event::SessionStarted {
            env: Envelope::default(),
            model: None,
            cwd: f.string_at("cwd"),
            cli_version: full.then(|| f.string_at("version")).flatten(),
            permission_mode: full.then(|| f.string_at("permissionMode")).flatten(),
            tools: None,
            parent_session_id: None,
        });
    }
    match ty {
        "user" => user(f, m),
        "assistant" => assistant(f, m),
        "system" => system(f, m),
        "summary" => {
            m.push_piece(TranscriptPiece::EndMessage);
            m.heartbeat();
        }
        "file-history-snapshot" => {
            if m.at.is_none() && f.bool_at("isSnapshotUpdate") != Some(true) {
                m.at = f.path(&["snapshot", "timestamp"]).and_then(|t| t.str()).map(str::to_owned);
            }
            m.heartbeat();
        }
        "attachment" | "progress" => m.heartbeat(),
        t if BOOKKEEPING.contains(&t) => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn assistant(f: Val<'_>, m: &mut Mapped) {
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    if f.bool_at("isApiErrorMessage") == Some(true) {
        return api_error(f, msg, m);
    }
    let message_id = msg.string_at("id");
    let model = msg.str_at("model");
    // `<synthetic>` messages (local command output, API error notices) are no model request.
    let usage = (model != Some("<synthetic>"))
        .then(|| msg.get("usage").filter(|u| u.is_object()).map(crate::dialect::claude::counters))
        .flatten()
        .and_then(usage::non_empty)
        .map(|figures| Event::Usage {
            env: Envelope::default(),
            usage: usage::with_context(figures),
            model: model.map(str::to_owned),
            message_id: message_id.clone(),
            context_window: None,
        });
    // The message's usage is held (and the one held before written, as of its own line) before
    // its content is folded: folding it writes no event of this line, and nothing of the line
    // is then held back for an earlier line's event to come first (its blocks are written as
    // they are folded, `Piece::Blocks`).
    let mut own = None;
    match (usage, &message_id) {
        (Some(event), Some(id)) => m.push_piece(TranscriptPiece::GrowingUsage { message_id: id.clone(), event }),
        // A line without a message id counts on its own, after its content.
        (Some(event), None) => own = Some(event),
        (None, _) => {}
    }
    claude::assistant_content(msg, &message_id, m, claude::tool_kind, Dialect::ClaudeTranscript);
    if let Some(event) = own {
        m.push(event);
    }
}

/// An `isApiErrorMessage` line: the request failed and the CLI wrote its notice as the reply.
fn api_error(f: Val<'_>, msg: Val<'_>, m: &mut Mapped) {
    m.push_piece(TranscriptPiece::EndMessage);
    let text = msg
        .get("content")
        .and_then(super::content_text)
        .map(|t| t.as_str().trim().to_owned())
        .filter(|t| !t.is_empty());
    let code = f.str_at("error");
    let status = f.u64_at("apiErrorStatus");
    let said = text.as_deref().unwrap_or_default();
    let kind = if matches!(code, Some("rate_limit" | "billing_error")) || status == Some(429) || limit_text(said) {
        FailureKind::UsageLimit
    } else if code == Some("authentication_failed")
        || matches!(status, Some(401 | 403))
        || failure_kind(said) == FailureKind::Auth
    {
        FailureKind::Auth
    } else {
        FailureKind::ApiError
    };
    let error = text.or_else(|| code.map(str::to_owned)).unwrap_or_else(|| "API error".to_owned());
    m.push(Event::TurnFailed {
        env: Envelope::default(),
        error,
        kind: Some(kind),
        usage: None,
        usage_scope: None,
        cost_scope: None,
        cost_usd: None,
        duration_ms: None,
        model_usage: None,
    });
}

/// A usage-limit notice: `Claude AI usage limit reached|<epoch>`, `You've hit your session limit
/// · resets 9:50pm`, `5-hour limit reached ∙ resets 3pm`, …
fn limit_text(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    failure_kind(s) == FailureKind::UsageLimit
        || l.contains("limit reached")
        || l.contains("hit your") && l.contains("limit")
}

fn user(f: Val<'_>, m: &mut Mapped) {
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let before = m.pieces.len();
    let text = match claude::user_content(msg, m, Dialect::ClaudeTranscript) {
        Ok(text) => text,
        Err(NotContent) => return m.unknown(UnknownReason::MalformedFrame, None),
    };
    let Some(text) = text else {
        if m.pieces.len() == before && has_untyped_block(msg) {
            // `"content": ["a bare string"]`: nothing in it is a content block.
            return m.unknown(UnknownReason::MalformedFrame, None);
        }
        tool_durations(f, &mut m.pieces[before..]);
        return;
    };
    tool_durations(f, &mut m.pieces[before..]);
    // The user only speaks once the assistant's message is over. Ended before the line's tool
    // results are folded (folding it writes nothing of this line): nothing of the line is then
    // held back for the earlier line's usage, and very many results are written as they come.
    m.pieces.insert(before, TranscriptPiece::EndMessage.into());
    let flag = |k: &str| f.bool_at(k) == Some(true);
    let frame = if flag("isCompactSummary") {
        Some("user/compact_summary")
    } else if flag("isMeta") {
        Some("user/meta")
    } else if flag("isSynthetic") {
        Some("user/synthetic")
    } else if f.path(&["origin", "kind"]).and_then(|k| k.str()) == Some("task-notification") {
        // The harness's notice of a background task, not the user's prompt (the official
        // session list skips these when it looks for the first prompt).
        Some("user/task-notification")
    } else if let Some(command) = slash_command(&text.as_str()) {
        // A slash command the user typed: their turn, as `/name args`.
        m.push(Event::UserMessage { env: Envelope::default(), text: command.into() });
        return;
    } else {
        stub_frame(text.as_str().trim_start())
    };
    match frame {
        Some(frame) => {
            m.frame = frame.to_owned();
            m.heartbeat();
        }
        // A prompt, an interrupt or an echoed local command, as in stream-json.
        None => claude::user_text(text, m),
    }
}

/// The slash command a `<command-name>` stub records, as the user typed it: `/name` and its
/// `<command-args>` (`/orchestrator create a TODO app`); `None` for any other text. The tags
/// come in either order, with `<command-message>` (the CLI's own "init is analyzing…") left out.
fn slash_command(s: &str) -> Option<String> {
    let t = s.trim_start();
    if !["<command-name>", "<command-message>", "<command-args>"].iter().any(|p| t.starts_with(p)) {
        return None;
    }
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = t.find(&open)? + open.len();
        let end = t[start..].find(&format!("</{name}>"))? + start;
        Some(t[start..end].trim())
    };
    let name = tag("command-name").filter(|n| !n.is_empty())?;
    let mut command = if name.starts_with('/') { name.to_owned() } else { format!("/{name}") };
    if let Some(args) = tag("command-args").filter(|a| !a.is_empty()) {
        command.push(' ');
        command.push_str(args);
    }
    Some(command)
}

/// The heartbeat frame of a user text the CLI wrote itself: the local-commands caveat, a slash
/// command stub, a `!` shell command echo.
fn stub_frame(s: &str) -> Option<&'static str> {
    if s.starts_with("Caveat: The messages below were generated by the user while running local commands") {
        Some("user/caveat")
    } else if ["<command-name>", "<command-message>", "<command-args>"].iter().any(|p| s.starts_with(p)) {
        Some("user/command")
    } else if ["<bash-input>", "<bash-stdout>", "<bash-stderr>"].iter().any(|p| s.starts_with(p)) {
        Some("user/local_command")
    } else {
        None
    }
}

/// Whether a content array holds an element that is no typed block (a bare string, a number).
fn has_untyped_block(msg: Val<'_>) -> bool {
    msg.array_at("content").is_some_and(|mut blocks| blocks.any(|b| b.str_at("type").is_none()))
}

/// `toolUseResult` is the CLI's own record of a tool call: where it timed the call
/// (`durationMs`: Glob, Grep, WebFetch; `totalDurationMs`: Task), that is the call's
/// `duration_ms`. Only for a line with a single result, so the figure cannot go to the wrong call.
fn tool_durations(f: Val<'_>, pieces: &mut [Piece]) {
    let Some(duration) = f
        .get("toolUseResult")
        .filter(|r| r.is_object())
        .and_then(|r| r.u64_at("durationMs").or_else(|| r.u64_at("totalDurationMs")))
    else {
        return;
    };
    if let [Piece::Event(Event::ToolCompleted { duration_ms, .. })] = pieces {
        *duration_ms = Some(duration);
    }
}

fn system(f: Val<'_>, m: &mut Mapped) {
    m.push_piece(TranscriptPiece::EndMessage);
    let Some(sub) = f.str_at("subtype") else {
        // Hook notices of older CLIs: `{"type":"system","content":…,"level":…}`.
        return m.heartbeat();
    };
    m.set_frame("system", sub);
    match sub {
        "compact_boundary" => {
            let meta = f.get("compactMetadata").or_else(|| f.get("compact_metadata"));
            let figure = |camel: &str, snake: &str| meta.and_then(|x| x.u64_at(camel).or_else(|| x.u64_at(snake)));
            m.push(Event::Compacted {
                env: Envelope::default(),
                trigger: meta.and_then(|x| x.string_at("trigger")),
                pre_tokens: figure("preTokens", "pre_tokens"),
                post_tokens: figure("postTokens", "post_tokens"),
            });
        }
        "microcompact_boundary" => {
            // Not derived from `tokensSaved`: absent means the source did not say.
            let meta = f.get("microcompactMetadata").or_else(|| f.get("microcompact_metadata"));
            let figure = |camel: &str, snake: &str| meta.and_then(|x| x.u64_at(camel).or_else(|| x.u64_at(snake)));
            m.push(Event::Compacted {
                env: Envelope::default(),
                trigger: meta.and_then(|x| x.string_at("trigger")),
                pre_tokens: figure("preTokens", "pre_tokens"),
                post_tokens: figure("postTokens", "post_tokens"),
            });
        }
        "api_error" => m.push(retry(f)),
        "model_fallback" => {
            let message = f.string_at("content").unwrap_or_else(|| "model fallback".to_owned());
            m.push(super::diagnostic(Level::Warning, "claude.model.fallback", message, Vec::new()));
        }
        "thinking" => m.push(Event::Reasoning { env: Envelope::default(), text: f.text_at("content") }),
        "turn_duration" | "stop_hook_summary" | "local_command" | "informational" | "away_summary"
        // Claude Code 2.1.2xx.
        | "memory_saved" | "agents_killed" | "api_metrics" | "bridge_status" | "permission_retry" | "file_snapshot"
        | "scheduled_task_fire" | "memory_recall" | "vcs_state_changed" => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// A `system/api_error` line: the CLI retries a failed request (`retryAttempt` of `maxRetries`).
/// The same trouble as stream-json's `system/api_retry`, so the same diagnostic code.
fn retry(f: Val<'_>) -> Event {
    let n = |k: &str| f.u64_at(k).map_or_else(|| "?".to_owned(), |n| n.to_string());
    let mut message = format!("API retry {}/{}", n("retryAttempt"), n("maxRetries"));
    let err = f.get("error");
    let why = err.and_then(|e| e.str()).map(str::to_owned).or_else(|| {
        let e = err?;
        [&["message"][..], &["error", "message"], &["error", "error", "message"], &["cause", "code"]]
            .iter()
            .find_map(|p| e.path(p).and_then(|v| v.str()).map(str::to_owned))
    });
    if let Some(why) = why.or_else(|| f.string_at("content")) {
        message.push_str(": ");
        message.push_str(&why);
    }
    if let Some(s) = err.and_then(|e| e.u64_at("status")) {
        message.push_str(&format!(" (status {s})"));
    }
    super::diagnostic(Level::Warning, "claude.api_retry", message, Vec::new())
}
