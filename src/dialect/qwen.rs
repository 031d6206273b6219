//! Qwen Code `qwen -p … --output-format stream-json [--include-partial-messages]`.
//!
//! Qwen Code forked Gemini CLI, but its stream-json was rewritten to be Claude-compatible
//! (`system`/`init`, `assistant`, `user`, `result`, `stream_event`, Anthropic content blocks):
//! it is not Gemini-shaped, so it is not read as `gemini`. It is not read as `claude` either,
//! because it counts differently, and reading it with Claude's rules gets its usage wrong:
//! - `usage.input_tokens` is the whole prompt, **cached tokens included** (Gemini's
//!   `promptTokenCount`); `cache_read_input_tokens` is the cached part. SPEC §4's `input` is the
//!   difference, and `context` is `input_tokens`. There is no cache-write figure.
//! - There is no `message_delta`: an `assistant` line (one per message, each message holding
//!   blocks of one type) carries its request's final usage, and all zeros on messages that made
//!   no request of their own. Claude's rule (wait for `message_delta`, else drop `output`) would
//!   lose every output count, so the usage is written at the assistant line, with `output`.
//! - `stream_event` has `goal_state` and `tool_progress` events (heartbeats).
//! - No cost is reported; a failed `result` has an `error` object with its message.
//! - Qwen 0.14 reports an API failure as assistant text `[API Error: …]` and a successful
//!   `result`: that text also gives an error `diagnostic` `qwen.api-error`.
//!
//! Everything else is Claude's mapping ([`super::claude::map_with`], with Qwen's own tool names),
//! whose pieces are taken over here and resolved against this dialect's own state. The stream is
//! recognised by its `system`/`init`, which has `qwen_code_version` (Claude's has
//! `claude_code_version`); later Claude-shaped frames claim exactly what Claude's do, so they tie
//! with Claude and the stream's dialect keeps them (a stream without its init line reads as
//! `claude`, tool names and all).

use super::claude::{Claude, ClaudePiece};
use super::{Accepts, Adapter, Blocks, Claim, Cx, Mapped, Own, Piece, Recent, diagnostic, unlisted_kind};
use crate::dialect::usage;
use crate::event::{Dialect, Envelope, Event, Level, ToolKind, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `qwen` dialect.
pub(crate) struct Qwen;

impl Adapter for Qwen {
    type Piece = QwenPiece;
    type State = State;

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        Self::own_claim(f, ty).unwrap_or_else(|| Claude::claim(f, ty))
    }

    const CLAIMS_LIKE: Option<crate::event::Dialect> = Some(crate::event::Dialect::Claude);

    // Claude's frames, and its own init (a `system`, which Claude's cover) is an envelope.
    const ACCEPTS: Accepts = Accepts { strongest: Claim::Envelope, ..Claude::ACCEPTS };

    fn own_claim(f: Val<'_>, ty: Option<&str>) -> Option<Claim> {
        if ty == Some("system") && f.str_at("subtype") == Some("init") {
            // Qwen's init is its own; a Claude init (no `qwen_code_version`) is not.
            return Some(if f.get("qwen_code_version").is_some() { Claim::Envelope } else { Claim::No });
        }
        None
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(st: &mut State, piece: QwenPiece, cx: &mut dyn Cx) {
        match piece {
            QwenPiece::StreamStart { message_id } => {
                st.streamed.insert(&message_id);
                st.stream_msg = Some(message_id);
            }
            QwenPiece::StreamText(mut ev) => {
                match (&mut ev, &st.stream_msg) {
                    (Event::OutputDelta { message_id, .. }, Some(id)) => *message_id = Some(id.clone()),
                    (Event::OutputDelta { text, .. }, None) => cx.note_fragment(&text.as_str()),
                    _ => {}
                }
                cx.event(ev);
            }
            QwenPiece::Whole { message_id, event } => {
                if message_id.as_ref().is_some_and(|id| st.streamed.contains(id)) {
                    return;
                }
                match event {
                    Event::OutputDelta { text, .. } if cx.has_segment() => cx.turn_text(text, false, message_id),
                    _ => cx.event(event),
                }
            }
        }
    }

    fn turn_ended(st: &mut State) {
        st.stream_msg = None;
    }

    fn map_block(b: Val<'_>, of: &Blocks, m: &mut Mapped) {
        super::claude::map_block(b, of, m, tool_kind);
        for piece in &mut m.pieces {
            *piece = block_piece(std::mem::replace(piece, Piece::ResetTools));
        }
    }
}

/// Qwen's own pieces (Claude's, without the usage ones: Qwen's usage is final on its line).
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum QwenPiece {
    /// A partial message started: its whole-message copy is not written again.
    StreamStart {
        /// The message id.
        message_id: String,
    },
    /// Streamed text or reasoning of the current partial message.
    StreamText(Event),
    /// Text or reasoning of a whole message; dropped when the message was streamed.
    Whole {
        /// The message id.
        message_id: Option<String>,
        /// The `output_delta` or `reasoning`.
        event: Event,
    },
}

impl From<QwenPiece> for Piece {
    fn from(p: QwenPiece) -> Piece {
        Piece::Own(Own::Qwen(p))
    }
}

/// The messages streamed as partial deltas, and the one in progress.
#[derive(Debug)]
pub(crate) struct State {
    streamed: Recent<()>,
    stream_msg: Option<String>,
}

impl Default for State {
    fn default() -> State {
        State { streamed: Recent::new(1 << 12), stream_msg: None }
    }
}

/// Qwen's usage (SPEC §4 row `qwen`): `input_tokens` includes the cached part.
fn qwen_usage(u: Val<'_>) -> Option<Usage> {
    let prompt = u.u64_at("input_tokens");
    let cached = u.u64_at("cache_read_input_tokens");
    let figures = Usage {
        input: match (prompt, cached) {
            (Some(p), Some(c)) => Some(p.saturating_sub(c)),
            (p, _) => p,
        },
        cache_read: cached,
        cache_write: u.u64_at("cache_creation_input_tokens"),
        output: u.u64_at("output_tokens"),
        reasoning: None,
        context: None,
        ..Usage::default()
    };
    let reported = [figures.input, figures.cache_read, figures.cache_write, figures.output]
        .iter()
        .any(|n| n.is_some_and(|n| n > 0));
    reported.then_some(figures)
}

/// Qwen Code's tool names onto kinds (SPEC §3), as Claude's mapping reads its `tool_use` blocks:
/// the Gemini-core tools it kept (`run_shell_command`, `read_file`, `list_directory`, …) and
/// those it renamed or added (`edit`, `todo_write`, `web_search`, `task`, `tool_search`);
/// `mcp__<server>__<tool>` is mcp. The names of [`late_kind`] come on top.
fn tool_kind(name: &str) -> ToolKind {
    match name {
        "run_shell_command" => ToolKind::Shell,
        "read_file" | "read_many_files" | "list_directory" => ToolKind::Read,
        "write_file" => ToolKind::Write,
        "edit" => ToolKind::Edit,
        "glob" | "grep_search" | "tool_search" => ToolKind::Search,
        "web_fetch" => ToolKind::Fetch,
        "web_search" => ToolKind::WebSearch,
        "task" => ToolKind::Task,
        "todo_write" => ToolKind::Plan,
        n => unlisted_kind(n),
    }
}

/// Qwen's newer tools (`agent`, `task_stop`, `ask_user_question`, `exit_plan_mode`), given their
/// kind on the mapped `tool_started` only: their summary and implied events are those of an
/// `other` call (no `needs_input` from `ask_user_question`).
fn late_kind(name: &str, kind: ToolKind) -> ToolKind {
    match (kind, name) {
        (ToolKind::Other, "agent" | "task_stop") => ToolKind::Task,
        (ToolKind::Other, "ask_user_question") => ToolKind::Ask,
        (ToolKind::Other, "exit_plan_mode") => ToolKind::Plan,
        (k, _) => k,
    }
}

/// A piece Claude's mapping of a content block made, as Qwen's: a whole message's text is
/// resolved against Qwen's state, a tool's kind is read with Qwen's late names.
// Inlined: a piece is several hundred bytes, and each call would copy it.
#[inline(always)]
fn block_piece(piece: Piece) -> Piece {
    match piece {
        Piece::Own(Own::Claude(ClaudePiece::WholeMessage { message_id, event })) => {
            QwenPiece::Whole { message_id, event }.into()
        }
        Piece::Event(mut ev) => {
            if let Event::ToolStarted { name, kind, .. } = &mut ev {
                *kind = late_kind(name, *kind);
            }
            Piece::Event(ev)
        }
        other => other,
    }
}

/// Maps one Qwen frame: Claude's mapping, with Qwen's usage, init keys and stream events.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    super::claude::map_with(f, m, tool_kind, Dialect::Qwen);
    let ty = f.str_at("type");
    // `goal_state` / `tool_progress` stream events: liveness.
    if m.unknown == Some(UnknownReason::UnrecognizedFrame)
        && matches!(m.frame.as_str(), "stream_event/goal_state" | "stream_event/tool_progress")
    {
        m.unknown = None;
        m.heartbeat();
        return;
    }
    let msg_usage = match ty {
        Some("assistant") => f.get("message").and_then(|msg| msg.get("usage")),
        Some("result") => f.get("usage"),
        _ => None,
    }
    .filter(|u| u.is_object())
    .and_then(qwen_usage);
    let mut pieces = std::mem::take(&mut m.pieces);
    let mut out = Vec::with_capacity(pieces.len() + 1);
    for piece in pieces.drain(..) {
        let piece = match piece {
            Piece::Own(Own::Claude(c)) => match c {
                ClaudePiece::StreamStart { message_id, .. } => QwenPiece::StreamStart { message_id }.into(),
                ClaudePiece::StreamText(ev) => QwenPiece::StreamText(ev).into(),
                c @ ClaudePiece::WholeMessage { .. } => block_piece(c.into()),
                // Replaced below by the line's own final figures.
                ClaudePiece::MessageUsage { .. } | ClaudePiece::StreamUsage { .. } => continue,
            },
            Piece::Event(ev @ Event::ToolStarted { .. }) => block_piece(Piece::Event(ev)),
            Piece::Event(mut ev) => {
                match &mut ev {
                    Event::SessionStarted { cli_version, permission_mode, .. } => {
                        if cli_version.is_none() {
                            *cli_version = f.string_at("qwen_code_version");
                        }
                        if permission_mode.is_none() {
                            *permission_mode = f.string_at("permission_mode");
                        }
                    }
                    Event::TurnCompleted { usage, .. } => *usage = msg_usage,
                    Event::TurnFailed { usage, error, .. } => {
                        *usage = msg_usage;
                        if let Some(e) = f.get("error").and_then(|e| e.string_at("message")).filter(|e| !e.is_empty()) {
                            *error = e;
                        }
                    }
                    _ => {}
                }
                Piece::Event(ev)
            }
            other => other,
        };
        out.push(piece);
    }
    Mapped::recycle(pieces);
    m.pieces = out;
    match ty {
        Some("assistant") => {
            let msg = f.get("message");
            if let Some(u) = msg_usage {
                m.push(Event::Usage {
                    env: Envelope::default(),
                    usage: usage::with_context(u),
                    model: msg.and_then(|x| x.string_at("model")),
                    message_id: msg.and_then(|x| x.string_at("id")),
                    context_window: None,
                });
            }
        }
        Some("result") => {
            if let Some(text) = f.str_at("result").filter(|r| r.starts_with("[API Error:")) {
                let at = m.pieces.len().saturating_sub(1);
                let d = diagnostic(Level::Error, "qwen.api-error", text.to_owned(), Vec::new());
                m.pieces.insert(at, Piece::Event(d));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::assert_kinds;
    use crate::read::frame::Parser;

    #[test]
    fn qwen_tool_names() {
        use ToolKind::*;
        assert_kinds(
            tool_kind,
            &[
                ("run_shell_command", Shell),
                ("read_file", Read),
                ("read_many_files", Read),
                ("list_directory", Read),
                ("write_file", Write),
                ("edit", Edit),
                ("glob", Search),
                ("grep_search", Search),
                ("tool_search", Search),
                ("web_fetch", Fetch),
                ("web_search", WebSearch),
                ("task", Task),
                ("todo_write", Plan),
                ("mcp__docs__lookup", Mcp),
                ("skill", Other),
                // Claude's names (Qwen's stream is Claude's, its tools are not) and Gemini's.
                ("Bash", Other),
                ("Read", Other),
                ("TodoWrite", Other),
                ("replace", Other),
                ("google_web_search", Other),
                // Kinds given after the mapping.
                ("agent", Other),
                ("ask_user_question", Other),
            ],
        );
        assert_eq!(late_kind("agent", tool_kind("agent")), Task);
        assert_eq!(late_kind("task_stop", Other), Task);
        assert_eq!(late_kind("ask_user_question", Other), Ask);
        assert_eq!(late_kind("exit_plan_mode", Other), Plan);
        assert_eq!(late_kind("edit", tool_kind("edit")), Edit);
    }

    #[test]
    fn cached_tokens_are_inside_input() {
        let mut p = Parser::default();
        p.with_frame(br#"{"input_tokens":19813,"output_tokens":79,"cache_read_input_tokens":12766}"#, |v| {
            let u = qwen_usage(v.unwrap()).unwrap();
            assert_eq!((u.input, u.cache_read, u.output), (Some(7047), Some(12766), Some(79)));
        });
        p.with_frame(br#"{"input_tokens":0,"output_tokens":0}"#, |v| assert_eq!(qwen_usage(v.unwrap()), None));
    }
}
