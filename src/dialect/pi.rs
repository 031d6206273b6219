//! `pi --mode json` (the pi coding agent, badlogic/pi-mono, later earendil-works/pi): one
//! `JSON.stringify(event)` per line, every frame with a string `type`.
//!
//! pi has its own vocabulary, so this module reads it rather than another dialect's. The stream:
//! a `session` header (`id`, `cwd`, `timestamp`; pi ≥ 0.45), then per prompt an *agent run*
//! (`agent_start` … `agent_end`: SPEC's turn) made of pi *turns* (`turn_start` … `turn_end`: one
//! model request and the tools it called), `message_start` / `message_update` / `message_end`
//! per message, `tool_execution_start` / `_update` / `_end` per tool call, and session events
//! (`auto_retry_*`, `auto_compaction_*` / `compaction_*`, `queue_update`, …). Its quirks:
//! - Two wire formats: up to 0.6x every `message_update` repeats the whole message (twice, as
//!   `message` and `assistantMessageEvent.partial`); 1.x writes only the event (and a top-level
//!   running `usage`, not a request's final figures: no `usage` event comes of it). Both carry
//!   the increments in `assistantMessageEvent.delta`, which is what is written.
//! - `message_end` repeats the message whole. Its text and thinking blocks are written only as
//!   far as the deltas of that block (`contentIndex`) have not already written them (hand-made
//!   streams, as in takopi's tests, have a `message_end` and no deltas at all): the exactly-once
//!   rule of SPEC §3.
//! - A request's usage is on the assistant `message_end` (`usage`: `input`, `output`,
//!   `cacheRead`, `cacheWrite`, `cost.total` in USD; pi has already folded each provider's
//!   counters so that `input` excludes the cache). An all-zero usage (the request never reached
//!   the model) is no `usage` event. `turn_completed` carries the run's sums.
//! - The run's outcome is the last assistant message's `stopReason`: `error` / `aborted` make a
//!   `turn_failed`. pi 1.x marks an `agent_end` after which it retries with `willRetry: true`:
//!   the turn then stays open and the retry's `agent_start` does not start a second one. (Up to
//!   0.6x there is no such mark: the failed run is a `turn_failed` and the retry a new turn.)
//! - Tool calls carry no timing; a failed `bash` ends its text with `Command exited with code N`,
//!   which gives `exit_code`.
//!
//! The same dialect reads pi's **saved sessions** (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`,
//! pi's `SessionManager`, version 3): the same `session` header (a stream and a saved session
//! cannot be told apart by it), then one *entry* per line, each with its own `id` (8 hex digits,
//! unique in its file), `parentId` and `timestamp`: `message` (an `AgentMessage`, the same shape
//! as a stream's `message_end.message`), `model_change`, `thinking_level_change`, `compaction`,
//! `branch_summary`, `custom`, `custom_message`, `label`, `session_info`. A saved session has no
//! run frames: a run ends with an assistant message whose `stopReason` is not `toolUse` (`stop`,
//! `length`: `turn_completed` with the run's sums and pi's own cost; `error`, `aborted`:
//! `turn_failed`; a retry after an error is a run of its own), and no `turn_started` is made (a
//! saved session does not say where a run began). A request's `usage` carries the entry's `id`
//! as its `message_id`: a forked session (`/fork`, `--fork`) copies its parent's entries with
//! their ids and times into a new file, and the usage report counts each request once.

use super::{Accepts, Adapter, Claim, Cx, Mapped, Outcome, Own, Piece, Verdict, content_text, diagnostic, failure_kind, summary, unlisted_kind};
use crate::dialect::usage;
use crate::event::{Envelope, Event, FailureKind, Level, Text, ToolKind, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `pi` dialect.
pub(crate) struct Pi;

/// Frame types only pi writes (beside `session`, `message_start` / `message_end`, which need a
/// look inside).
const PI_ONLY: &[&str] = &[
    "agent_start",
    "agent_end",
    "agent_settled",
    "turn_start",
    "turn_end",
    "message_update",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "auto_retry_start",
    "auto_retry_end",
    "auto_compaction_start",
    "auto_compaction_end",
    "compaction_start",
    "compaction_end",
    "queue_update",
    "entry_appended",
    "session_info_changed",
    "thinking_level_changed",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "bash_execution_update",
    "agent_handoff",
];

/// The entry types of a saved session besides `message` (pi's `SessionEntry` union): each
/// claimed by the key only it has.
const ENTRIES: &[(&str, &str)] = &[
    ("model_change", "modelId"),
    ("thinking_level_change", "thinkingLevel"),
    ("compaction", "summary"),
    ("branch_summary", "fromId"),
    ("custom", "customType"),
    ("custom_message", "customType"),
    ("label", "targetId"),
    ("session_info", "parentId"),
];

/// The saved-session entry types the accepts list names.
const ENTRY_TYPES: &[&str] = &[
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

/// Frames that carry nothing worth an event of their own.
const LIVENESS: &[&str] = &[
    "agent_settled",
    "tool_execution_update",
    "auto_compaction_start",
    "compaction_start",
    "queue_update",
    "entry_appended",
    "session_info_changed",
    "thinking_level_changed",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "bash_execution_update",
    "agent_handoff",
];

impl Adapter for Pi {
    type Piece = PiPiece;
    type State = Run;

    const ACCEPTS: Accepts =
        Accepts::types(&[&["session", "message_start", "message_end"], PI_ONLY, ENTRY_TYPES], Claim::Overrides);

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let Some(ty) = ty else { return Claim::No };
        let ours = match ty {
            // The header: `{"type":"session","version"?,"id","timestamp","cwd"}`.
            "session" => f.get("id").is_some_and(|v| v.is_str()) && (f.get("cwd").is_some() || f.get("version").is_some()),
            // Claude's `message_start` / `message_end` are inside a `stream_event`; pi's hold a
            // message with a `role` at the top level.
            "message_start" | "message_end" => f.get("message").and_then(|m| m.str_at("role")).is_some(),
            // A saved session's message entry: an `AgentMessage` under `message` beside the
            // entry's own `timestamp` (Gemini's stream `message` has its `role` at the root and
            // no `message`; a Claude transcript's lines are `user` / `assistant`). pi's alone.
            "message" => {
                return if f.get("message").and_then(|m| m.str_at("role")).is_some()
                    && f.get("timestamp").is_some_and(|t| t.is_str())
                {
                    Claim::Overrides
                } else {
                    Claim::No
                };
            }
            _ => match ENTRIES.iter().find(|(t, _)| *t == ty) {
                Some((_, key)) => f.get(key).is_some() && f.get("timestamp").is_some_and(|t| t.is_str()),
                None => PI_ONLY.contains(&ty),
            },
        };
        if ours { Claim::Marked } else { Claim::No }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(run: &mut Run, piece: PiPiece, cx: &mut dyn Cx) {
        run.fold(piece, cx)
    }

    fn turn_ended(run: &mut Run) {
        *run = Run::default();
    }
}

/// pi's own pieces: what the run's state decides.
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PiPiece {
    /// `agent_start`: a `turn_started` unless a retried run continues the open turn.
    AgentStart,
    /// An assistant message began: its blocks have streamed nothing yet.
    MessageStart,
    /// A streamed increment of block `index` (`text_delta` / `thinking_delta`).
    Delta {
        /// `contentIndex`.
        index: u64,
        /// A thinking block's (else a text block's).
        thinking: bool,
        /// The increment.
        text: Text,
    },
    /// The assistant message ended, whole.
    AssistantEnd(Message),
    /// A saved session's assistant message: its blocks were written from the line itself (a
    /// saved session has no deltas); `ends_run` when its `stopReason` ends the run.
    Saved {
        /// The message (its blocks give the run's `result`).
        msg: Message,
        /// The run ends with it.
        ends_run: bool,
    },
    /// `turn_end`: one model request of the run is over.
    TurnEnd,
    /// `agent_end`: the run is over (unless `will_retry`).
    AgentEnd {
        /// pi 1.x `willRetry`.
        will_retry: bool,
        /// The last assistant message of `agent_end.messages`, for a stream whose messages
        /// were not seen.
        last: Option<Message>,
    },
}

impl From<PiPiece> for Piece {
    fn from(p: PiPiece) -> Piece {
        Piece::Own(Own::Pi(p))
    }
}

/// What an assistant message says, as the fold needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Message {
    /// Text and thinking blocks: (`contentIndex`, thinking?, text).
    blocks: Vec<(u64, bool, Text)>,
    /// The request's usage, when it reported any figure.
    usage: Option<Usage>,
    /// `usage.cost.total`.
    cost: Option<f64>,
    /// `model`.
    model: Option<String>,
    /// `stopReason`.
    stop_reason: Option<String>,
    /// `errorMessage`.
    error: Option<String>,
    /// A saved session's entry id (unique in its file, kept by a fork's copy).
    id: Option<String>,
}

impl Message {
    fn text(&self) -> Option<Text> {
        let parts: Vec<String> =
            self.blocks.iter().filter(|(_, thinking, _)| !thinking).map(|(_, _, t)| t.as_str().into_owned()).collect();
        let joined = parts.join("\n");
        (!joined.is_empty()).then(|| Text::from(joined))
    }
}

/// The state of the current agent run.
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// What the current message's deltas wrote, per (`contentIndex`, thinking?).
    streamed: Vec<((u64, bool), String)>,
    /// The sum of the run's request usage.
    usage: Option<Usage>,
    /// The sum of the run's costs.
    cost: Option<f64>,
    /// `turn_end`s seen in the run.
    turns: u64,
    /// The run's last assistant message.
    last: Option<Message>,
    /// An `agent_end` with `willRetry: true` left the turn open for the retry.
    retrying: bool,
}

impl Run {
    fn streamed_mut(&mut self, key: (u64, bool)) -> &mut String {
        let at = match self.streamed.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                self.streamed.push((key, String::new()));
                self.streamed.len() - 1
            }
        };
        &mut self.streamed[at].1
    }

    fn fold(&mut self, piece: PiPiece, cx: &mut dyn Cx) {
        match piece {
            PiPiece::AgentStart => {
                // A retried run continues the turn its failed attempt left open.
                if !(self.retrying && cx.turn_started()) {
                    cx.event(Event::TurnStarted { env: Envelope::default() });
                }
                self.retrying = false;
            }
            PiPiece::MessageStart => self.streamed.clear(),
            PiPiece::Delta { index, thinking, text } => {
                if text.is_empty() {
                    return;
                }
                self.streamed_mut((index, thinking)).push_str(&text.as_str());
                cx.event(block_event(thinking, text));
            }
            PiPiece::AssistantEnd(msg) => {
                for (index, thinking, text) in &msg.blocks {
                    let done = self.streamed_mut((*index, *thinking));
                    let whole = text.as_str();
                    // The part the deltas have not written; a block that does not continue
                    // them is not written again (it would repeat what was streamed).
                    let fresh = if done.is_empty() {
                        Some(whole.as_ref())
                    } else {
                        whole.strip_prefix(done.as_str())
                    };
                    if let Some(fresh) = fresh.filter(|f| !f.is_empty()) {
                        let fresh = fresh.to_owned();
                        done.push_str(&fresh);
                        cx.event(block_event(*thinking, Text::from(fresh)));
                    }
                }
                self.streamed.clear();
                self.request(msg, cx);
            }
            PiPiece::Saved { msg, ends_run } => {
                self.request(msg, cx);
                self.turns += 1;
                if ends_run {
                    self.end_run(None, cx);
                }
            }
            PiPiece::TurnEnd => self.turns += 1,
            PiPiece::AgentEnd { will_retry, last } => {
                if will_retry {
                    self.retrying = true;
                    return;
                }
                self.end_run(last, cx);
            }
        }
    }

    /// An assistant message's request: its `usage`, added to the run's sums with its cost.
    fn request(&mut self, msg: Message, cx: &mut dyn Cx) {
        if let Some(u) = msg.usage {
            self.usage = Some(usage::add(self.usage.unwrap_or_default(), u));
            cx.event(Event::Usage {
                env: Envelope::default(),
                usage: usage::with_context(u),
                model: msg.model.clone(),
                message_id: msg.id.clone(),
                context_window: None,
            });
        }
        if let Some(c) = msg.cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
        self.last = Some(msg);
    }

    /// The run is over: its `turn_completed` (or `turn_failed`, by the last message's
    /// `stopReason`) with its sums. `last` stands for a last message that was not seen.
    fn end_run(&mut self, last: Option<Message>, cx: &mut dyn Cx) {
        let run = std::mem::take(self);
        let last = run.last.or(last).unwrap_or_default();
        // Rounded to 1e-9 USD: a float sum of decimal prices drifts in the last digits.
        let cost_usd = run.cost.filter(|c| *c > 0.0).map(|c| (c * 1e9).round() / 1e9);
        let ev = match last.stop_reason.as_deref() {
            Some(reason @ ("error" | "aborted")) => {
                let error = last.error.clone().unwrap_or_else(|| reason.to_owned());
                let kind = if reason == "aborted" {
                    FailureKind::Aborted
                } else {
                    match failure_kind(&error) {
                        FailureKind::Other => FailureKind::ApiError,
                        k => k,
                    }
                };
                Event::TurnFailed {
                    env: Envelope::default(),
                    error,
                    kind: Some(kind),
                    usage: run.usage,
                    usage_scope: None,
                    cost_scope: None,
                    cost_usd,
                    duration_ms: None,
                    model_usage: None,
                }
            }
            _ => Event::TurnCompleted {
                env: Envelope::default(),
                usage: run.usage,
                usage_scope: None,
                cost_scope: None,
                cost_usd,
                duration_ms: None,
                num_turns: (run.turns > 0).then_some(run.turns),
                result: last.text(),
                stop_reason: last.stop_reason.clone(),
                model_usage: None,
            },
        };
        cx.event(ev);
    }
}

/// The event of a text block's (`output_delta`) or a thinking block's (`reasoning`) text.
fn block_event(thinking: bool, text: Text) -> Event {
    if thinking {
        Event::Reasoning { env: Envelope::default(), text: Some(text) }
    } else {
        Event::OutputDelta { env: Envelope::default(), text, message_id: None }
    }
}

/// Maps one pi frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    match ty {
        "session" => session(f, m),
        "agent_start" => m.push_piece(PiPiece::AgentStart),
        "agent_end" => {
            let last = f
                .array_at("messages")
                .and_then(|ms| ms.filter(|msg| msg.str_at("role") == Some("assistant")).last())
                .map(message);
            m.push_piece(PiPiece::AgentEnd { will_retry: f.bool_at("willRetry") == Some(true), last });
        }
        "turn_start" => m.heartbeat(),
        "turn_end" => m.push_piece(PiPiece::TurnEnd),
        "message_start" | "message_end" => message_frame(f, ty, m),
        "message_update" => message_update(f, m),
        "tool_execution_start" => tool_start(f, m),
        "tool_execution_end" => tool_end(f, m),
        "auto_retry_start" => {
            let message = f.str_at("errorMessage").unwrap_or("retrying").to_owned();
            m.push(diagnostic(Level::Warning, "pi.auto-retry", message, Vec::new()));
        }
        "auto_retry_end" => {
            if f.bool_at("success") == Some(false) {
                let message = f.str_at("finalError").unwrap_or("retry failed").to_owned();
                m.push(diagnostic(Level::Error, "pi.auto-retry-failed", message, Vec::new()));
            } else {
                m.heartbeat();
            }
        }
        "auto_compaction_end" | "compaction_end" => compaction_end(f, ty, m),
        _ if LIVENESS.contains(&ty) => m.heartbeat(),
        "message" => saved_message(f, m),
        "compaction" => {
            m.at = f.string_at("timestamp");
            // The entry does not say what started it (`fromHook` is an extension's).
            m.push(Event::Compacted {
                env: Envelope::default(),
                trigger: None,
                pre_tokens: f.u64_at("tokensBefore"),
                post_tokens: None,
            });
        }
        _ if ENTRY_TYPES.contains(&ty) => {
            m.at = f.string_at("timestamp");
            m.heartbeat();
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn session(f: Val<'_>, m: &mut Mapped) {
    let Some(id) = f.string_at("id") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.session_id = Some(id);
    m.at = f.string_at("timestamp");
    // A resumed session re-emits its header: the fold writes one `session_started` per id.
    m.push(Event::SessionStarted {
        env: Envelope::default(),
        model: None,
        cwd: f.string_at("cwd"),
        cli_version: None,
        permission_mode: None,
        tools: None,
        parent_session_id: f.string_at("parentSession"),
    });
}

/// The text / thinking blocks, usage and outcome of an assistant message.
fn message(msg: Val<'_>) -> Message {
    let mut blocks = Vec::new();
    if let Some(content) = msg.array_at("content") {
        for (i, b) in content.enumerate() {
            let block = match b.str_at("type") {
                Some("text") => b.text_at("text").map(|t| (false, t)),
                Some("thinking") if b.bool_at("redacted") != Some(true) => b.text_at("thinking").map(|t| (true, t)),
                _ => None,
            };
            if let Some((thinking, text)) = block {
                blocks.push((i as u64, thinking, text));
            }
        }
    } else if let Some(t) = msg.text_at("content") {
        blocks.push((0, false, t));
    }
    let u = msg.get("usage").filter(|u| u.is_object());
    let figures = u.map(|u| Usage {
        input: u.u64_at("input"),
        cache_read: u.u64_at("cacheRead"),
        cache_write: u.u64_at("cacheWrite"),
        output: u.u64_at("output"),
        reasoning: None,
        context: None,
        ..Usage::default()
    });
    // No figure above zero: no request reached the model.
    let reported = |u: &Usage| [u.input, u.cache_read, u.cache_write, u.output].iter().any(|n| n.is_some_and(|n| n > 0));
    Message {
        blocks,
        usage: figures.filter(reported),
        cost: u.and_then(|u| u.path(&["cost", "total"])).and_then(|c| c.f64()),
        model: msg.string_at("model"),
        stop_reason: msg.string_at("stopReason"),
        error: msg.string_at("errorMessage"),
        id: None,
    }
}

/// A saved session's `message` entry: the message as a stream's `message_end` holds it, with
/// the entry's `timestamp` and `id`. An assistant message's blocks are written in their order
/// (text, thinking, tool calls: a saved session has no `tool_execution_start`), then its
/// request; a `toolResult` completes its call.
fn saved_message(f: Val<'_>, m: &mut Mapped) {
    m.at = f.string_at("timestamp");
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let Some(role) = msg.str_at("role") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("message", role);
    match role {
        "user" => match msg.get("content").and_then(content_text) {
            Some(text) => m.push(Event::UserMessage { env: Envelope::default(), text }),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "assistant" => {
            for b in msg.array_at("content").into_iter().flatten() {
                match b.str_at("type") {
                    Some("text") => {
                        if let Some(t) = b.text_at("text").filter(|t| !t.is_empty()) {
                            m.push(block_event(false, t));
                        }
                    }
                    Some("thinking") if b.bool_at("redacted") != Some(true) => {
                        if let Some(t) = b.text_at("thinking").filter(|t| !t.is_empty()) {
                            m.push(block_event(true, t));
                        }
                    }
                    Some("toolCall") => {
                        if let (Some(id), Some(name)) = (b.string_at("id"), b.str_at("name")) {
                            tool_call(id, name, b.get("arguments"), m);
                        }
                    }
                    _ => {}
                }
            }
            let mut saved = message(msg);
            saved.id = f.string_at("id");
            let ends_run = saved.stop_reason.as_deref().is_some_and(|r| r != "toolUse");
            m.push_piece(PiPiece::Saved { msg: saved, ends_run });
        }
        "toolResult" => match msg.string_at("toolCallId") {
            Some(id) => {
                let failed = msg.bool_at("isError") == Some(true);
                tool_result(id, msg.string_at("toolName"), msg.get("content"), failed, m);
            }
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        // A user's `!command`, extension messages and summaries.
        "bashExecution" | "custom" | "branchSummary" | "compactionSummary" => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn message_frame(f: Val<'_>, ty: &str, m: &mut Mapped) {
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let Some(role) = msg.str_at("role") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let end = ty == "message_end";
    match role {
        "user" if end => match msg.get("content").and_then(content_text) {
            Some(text) => m.push(Event::UserMessage { env: Envelope::default(), text }),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "assistant" if end => m.push_piece(PiPiece::AssistantEnd(message(msg))),
        "assistant" => m.push_piece(PiPiece::MessageStart),
        // The start of a user message, tool results (the copy of `tool_execution_end`), a
        // user's `!command`, extension messages and summaries.
        "user" | "toolResult" | "bashExecution" | "custom" | "branchSummary" | "compactionSummary" => m.heartbeat(),
        other => {
            let frame = format!("{ty}/{other}");
            m.unknown(UnknownReason::UnrecognizedFrame, Some(frame))
        }
    }
}

fn message_update(f: Val<'_>, m: &mut Mapped) {
    let Some(ev) = f.get("assistantMessageEvent").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let Some(ety) = ev.str_at("type") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("message_update", ety);
    let index = ev.u64_at("contentIndex").unwrap_or(0);
    match ety {
        "text_delta" | "thinking_delta" => match ev.text_at("delta") {
            Some(text) => m.push_piece(PiPiece::Delta { index, thinking: ety == "thinking_delta", text }),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "text_start" | "text_end" | "thinking_start" | "thinking_end" | "toolcall_start" | "toolcall_delta"
        | "toolcall_end" | "start" | "done" | "error" => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// pi's built-in tools (`read`, `bash`, `edit`, `write`, `grep`, `find`, `ls`) onto kinds (SPEC
/// §3); extensions' are `other` (a name is not guessed at), `mcp__<server>__<tool>` mcp.
fn tool_kind(name: &str) -> ToolKind {
    match name {
        "bash" => ToolKind::Shell,
        "read" | "ls" => ToolKind::Read,
        "write" => ToolKind::Write,
        "edit" => ToolKind::Edit,
        "grep" | "find" => ToolKind::Search,
        n => unlisted_kind(n),
    }
}

fn tool_start(f: Val<'_>, m: &mut Mapped) {
    let (Some(id), Some(name)) = (f.string_at("toolCallId"), f.str_at("toolName")) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.parent_tool_id = f.string_at("parentToolCallId");
    tool_call(id, name, f.get("args"), m);
}

/// A call's `tool_started` (and what its input implies), from a stream's
/// `tool_execution_start` or a saved message's `toolCall` block.
fn tool_call(id: String, name: &str, input: Option<Val<'_>>, m: &mut Mapped) {
    let kind = tool_kind(name);
    let input = input.filter(|a| !a.is_null());
    m.tool_started(id, name, kind, input.map(|v| v.to_json()), summary(kind, input));
    if let Some(extra) = super::call_extra(kind, input) {
        m.push(extra);
    }
}

fn tool_end(f: Val<'_>, m: &mut Mapped) {
    let Some(id) = f.string_at("toolCallId") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.parent_tool_id = f.string_at("parentToolCallId");
    let content = f.get("result").and_then(|r| r.get("content"));
    tool_result(id, f.string_at("toolName"), content, f.bool_at("isError") == Some(true), m);
}

/// A call's `tool_completed`, from a stream's `tool_execution_end` or a saved `toolResult`.
fn tool_result(id: String, name: Option<String>, content: Option<Val<'_>>, failed: bool, m: &mut Mapped) {
    let text = content.and_then(content_text);
    // A failed call's text is its message (and may end with the command's exit code).
    let exit_code = failed.then(|| text.as_ref().and_then(|t| exit_code(&t.as_str()))).flatten();
    let done = Outcome {
        kind: name.as_deref().map(tool_kind),
        name,
        verdict: Verdict::failed_if(failed),
        exit_code,
        output: text,
        output_is_error: true,
        ..Outcome::new(id)
    };
    m.push(done.event());
}

/// The exit code a failed `bash` call's text ends with (`…\n\nCommand exited with code N`).
fn exit_code(text: &str) -> Option<i64> {
    let last = text.trim_end().rsplit('\n').next()?;
    last.strip_prefix("Command exited with code ")?.trim().parse().ok()
}

fn compaction_end(f: Val<'_>, ty: &str, m: &mut Mapped) {
    let result = f.get("result").filter(|r| r.is_object());
    let failed = f.bool_at("aborted") == Some(true) || f.get("errorMessage").is_some_and(|e| e.is_str());
    match result {
        Some(r) if !failed => {
            let manual = ty == "compaction_end" && f.str_at("reason") == Some("manual");
            m.push(Event::Compacted {
                env: Envelope::default(),
                trigger: Some(if manual { "manual" } else { "auto" }.to_owned()),
                pre_tokens: r.u64_at("tokensBefore"),
                post_tokens: r.u64_at("tokensAfter").or_else(|| r.u64_at("estimatedTokensAfter")),
            });
        }
        _ if failed => {
            let message = f.str_at("errorMessage").unwrap_or("compaction aborted").to_owned();
            m.push(diagnostic(Level::Warning, "pi.compaction-failed", message, Vec::new()));
        }
        // Nothing to compact.
        _ => m.heartbeat(),
    }
}

#[cfg(test)]
mod tests {
    use super::{exit_code, tool_kind};
    use crate::dialect::assert_kinds;
    use crate::event::ToolKind::*;

    #[test]
    fn pi_tool_names() {
        assert_kinds(
            tool_kind,
            &[
                ("bash", Shell),
                ("read", Read),
                ("ls", Read),
                ("write", Write),
                ("edit", Edit),
                ("grep", Search),
                ("find", Search),
                ("mcp__docs__lookup", Mcp),
                // An extension's tool, and other CLIs' names: not guessed at.
                ("lint_report", Other),
                ("Bash", Other),
                ("glob", Other),
                ("todowrite", Other),
            ],
        );
    }

    #[test]
    fn exit_codes_from_bash_text() {
        assert_eq!(exit_code("FAIL\n\n\nCommand exited with code 1"), Some(1));
        assert_eq!(exit_code("Command exited with code 127\n"), Some(127));
        assert_eq!(exit_code("all good"), None);
    }
}
