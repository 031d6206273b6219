//! Codex session logs, `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`: every line is
//! `{"timestamp","type","payload"}` with `type` one of `session_meta`, `turn_context`,
//! `response_item`, `event_msg`, `compacted`.
//!
//! A rollout is what Codex saves to resume a session, so it holds most content twice: the model's
//! own items (`response_item`: `message`, `reasoning`, tool calls and their outputs) and the UI
//! events (`event_msg`: `user_message`, `agent_message`, `agent_reasoning`, …). SPEC §3 picks one
//! copy of each: text and reasoning come from the `event_msg`s (the complete copy: an aborted
//! request's reasoning is only there), tool calls and outputs from the `response_item`s (the only
//! copy); the `response_item` `message` / `reasoning` copies and the `event_msg` copies of tool
//! ends (`exec_command_end`, `patch_apply_end`, …) are heartbeats.
//!
//! Quirks handled here:
//! - `function_call.arguments` is a JSON *string*: it is decoded for `tool_started.input`; when it
//!   does not decode (redacted or truncated logs) the raw string is the input. `custom_tool_call`
//!   (`apply_patch`) takes free text, passed as a JSON string. `update_plan` also gives a
//!   `plan_updated`, `request_user_input` a `needs_input`.
//! - `function_call_output.output` is a string. Codex 0.40 shell calls encode
//!   `{"output", "metadata": {"exit_code", "duration_seconds"}}` in it: the inner output, the exit
//!   code (`ok` when 0) and the duration are read from it. Later shell outputs start with a header
//!   (`Exit code: N` / `Chunk ID: …` … `Process exited with code N`, `Wall time: S seconds`) whose
//!   exit code and wall time are read, the text passed whole. Other strings are passed as is,
//!   `ok` unless they are one of Codex's own failure messages (`failed in sandbox …`,
//!   `execution error: …`, `patch rejected by user`, …), whose `exit code: N` is read too.
//! - `web_search_call` has no id (`tool_id` becomes `line:<n>`) and no output item: its start and
//!   completion come from the one line.
//! - `token_count` is cumulative and repeated with unchanged totals: see
//!   `codex::token_count`. `info: null` (before the first request) carries no usage but
//!   its rate limits still count. `turn_context` (one per model request: model, cwd, policies)
//!   names the model of the `usage` that follows (`Piece::Model`).
//! - `session_meta` has no model; `parent_session_id` is the spawning thread of a subagent
//!   (`source.subagent.thread_spawn.parent_thread_id`), else the session a fork came from
//!   (`forked_from_id`). Such a rollout opens with a copy of its ancestors' history (their
//!   `session_meta`s and `token_count`s included, re-stamped in one burst): each line says what it
//!   is to that copy ([`HistoryMark`]) and the fold keeps the copy's usage, rate limits and
//!   session switches out (`normalize::HistoryCopy`).
//! - A `token_count` with a running total but no `last_token_usage` gives what the total grew
//!   by since the last one.
//! - Codex 0.40 writes no `task_started` / `task_complete` (turns are implied; `turn_aborted` is
//!   the only end marker); later versions do. A compaction writes a `compacted` line and a
//!   `context_compacted` event: the first is the `compacted` event, the second a heartbeat.

use super::codex::{error_diagnostic, shell_summary, token_count};
use super::codex::CodexPiece;
use super::{Accepts, Adapter, Claim, Cx, Mapped, NO_ID, Outcome, Own, Piece, SeedLine, Verdict, diagnostic, failure_kind, one_line, summary, unlisted_kind};
use crate::event::{
    Envelope, Event, FailureKind, Json, Level, SubagentOperation, SubagentStatus, Text, ToolKind, UnknownReason,
};
use crate::read::frame::{Val, decode_embedded, with_embedded_object};
use memchr::memmem::Finder;
use std::sync::LazyLock;

/// The `codex-rollout` dialect.
pub(crate) struct Rollout;

impl Adapter for Rollout {
    type Piece = RolloutPiece;
    type State = State;
    const SAVED_LOG: bool = true;

    const ACCEPTS: Accepts = Accepts::types(&[LINE_TYPES], Claim::Envelope);

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        // {"timestamp","type","payload"}.
        if f.get("payload").is_some_and(|p| p.is_object()) && ty.is_some_and(|t| LINE_TYPES.contains(&t)) {
            Claim::Envelope
        } else {
            Claim::No
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(st: &mut State, piece: RolloutPiece, cx: &mut dyn Cx) {
        match piece {
            // Taken off by `prepare`.
            RolloutPiece::History(_) => {}
            RolloutPiece::HistoryMode { paginated } => st.paginated = paginated,
            // Only a paginated rollout's items are the one copy of the text; in a legacy one they
            // sit beside the `event_msg` copies (the line is then a heartbeat).
            RolloutPiece::TurnItem(ev) => {
                if st.paginated {
                    cx.event(ev)
                }
            }
            RolloutPiece::SearchStarted(mut ev) => {
                if let Event::ToolStarted { tool_id, .. } = &mut ev
                    && tool_id.is_empty()
                {
                    *tool_id = format!("line:{}", cx.line_no());
                    st.open_searches.push_back(tool_id.clone());
                }
                cx.event(ev);
            }
            RolloutPiece::SearchOutput(mut ev) => {
                if let Event::ToolCompleted { tool_id, .. } = &mut ev {
                    if tool_id.is_empty() {
                        // Server-side searches have no ids: they pair in order, as Codex pairs them.
                        if let Some(open) = st.open_searches.pop_front() {
                            *tool_id = open;
                        }
                    } else {
                        st.open_searches.retain(|o| o != tool_id);
                    }
                }
                cx.event(ev);
            }
        }
    }

    /// A line of the history a fork copied from its parent writes no usage, rate limit or
    /// session switch; its running total becomes the total the fork inherited.
    /// The copies of text and tool activity (`response_item` messages, reasoning and tool
    /// outputs, `event_msg` text and tool ends, `compacted` histories) are most of a rollout's
    /// bytes and carry no usage. Every line of a forked rollout's copied history is read (its
    /// times decide where the copy ends), and so is every tool call (a call passed over would
    /// make its output's completion look like a call of its own).
    /// Text, reasoning and tool outputs may be a request's first line (an output whose call
    /// was not seen is a call of its own): they are passed over only once it was seen; the
    /// heartbeats and the user's messages at any time.
    fn passes_over(st: &mut State, line: &[u8], skim: crate::Skim) -> bool {
        static PAYLOAD_TYPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(br#""payload":{"type":""#));
        if st.copy.is_some() || !line.starts_with(b"{") {
            return false;
        }
        let seen = skim == crate::Skim::UsageStarted;
        let kind = || super::raw_string(line, &PAYLOAD_TYPE);
        let passed = |k: &[u8], always: &[&[u8]], once_seen: &[&[u8]]| {
            always.contains(&k) || seen && once_seen.contains(&k)
        };
        let passed = match super::raw_type(line) {
            Some(b"compacted") => true,
            Some(b"response_item") => kind().is_some_and(|k| passed(k, PASSED_ITEMS, FIRST_ITEMS)),
            Some(b"event_msg") => kind().is_some_and(|k| passed(k, PASSED_EVENTS, FIRST_EVENTS)),
            _ => false,
        };
        st.context_last &= !passed;
        passed
    }

    /// Also marks what a reading started after the line needs of it ([`Mapped::seed`]): the
    /// rollout's own `session_meta` and `turn_context` (never a copied one).
    fn prepare(st: &mut State, m: &mut Mapped, at: Option<&str>) {
        st.context_last = false;
        let mark = match m.pieces.first() {
            Some(Piece::Own(Own::CodexRollout(RolloutPiece::History(mark)))) => *mark,
            _ => return,
        };
        m.pieces.remove(0);
        if !st.copied(mark, at, m.unknown.is_none()) {
            st.context_last = m.seed == Some(SeedLine::Model);
            return;
        }
        // What a copied line sets is set again by the rollout's own lines before it rests.
        m.seed = None;
        m.session_id = None;
        m.pieces.retain_mut(|p| match p {
            Piece::Own(Own::Codex(CodexPiece::TokenCount { total, .. })) => {
                *p = CodexPiece::Inherit(*total).into();
                true
            }
            Piece::Event(Event::Usage { .. } | Event::RateLimit { .. } | Event::SessionStarted { .. }) => false,
            _ => true,
        });
    }

    /// Right after the rollout's own `turn_context`: Codex writes one before each model
    /// request, after the outputs of the tool calls that request reads, so no call waits for
    /// its output and no request has begun. What the lines after it depend on is what the
    /// seeds restore: the session (and its history mode), the model, the running total and the
    /// rate-limit readings. Never inside a copied history.
    fn at_rest(st: &State) -> bool {
        st.context_last && st.copy.is_none() && st.open_searches.is_empty()
    }
}

/// The top-level `type`s of a rollout line (`{"timestamp","type","payload"}`) this adapter claims.
const LINE_TYPES: &[&str] = &[
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "compacted",
    "token_usage_record",
    "world_state",
    "security_risk_score",
    "inter_agent_communication_metadata",
];

/// The `response_item` types a usage-only reading passes over at any time
/// ([`Adapter::passes_over`]): heartbeats (the copies of text and reasoning among them).
const PASSED_ITEMS: &[&[u8]] = &[
    b"message",
    b"reasoning",
    b"ghost_snapshot",
    b"compaction",
    b"compaction_summary",
    b"context_compaction",
];

/// The `response_item` types a usage-only reading passes over once the current request's first
/// line was seen: tool outputs.
const FIRST_ITEMS: &[&[u8]] = &[b"function_call_output", b"custom_tool_call_output"];

/// The `event_msg` types a usage-only reading passes over once the current request's first line
/// was seen: text, reasoning and turn items.
const FIRST_EVENTS: &[&[u8]] = &[b"agent_message", b"agent_reasoning", b"agent_reasoning_raw_content", b"item_completed"];

/// The `event_msg` types a usage-only reading passes over at any time: the user's messages and
/// the copies of tool activity, each written as a user message or a heartbeat.
const PASSED_EVENTS: &[&[u8]] = &[
    b"user_message",
    b"item_started",
    b"context_compacted",
    b"exec_command_begin",
    b"exec_command_end",
    b"exec_command_output_delta",
    b"terminal_interaction",
    b"patch_apply_begin",
    b"patch_apply_end",
    b"mcp_tool_call_begin",
    b"mcp_tool_call_end",
    b"web_search_begin",
    b"web_search_end",
    b"view_image_tool_call",
    b"plan_update",
    b"turn_diff",
    b"agent_message_delta",
    b"agent_reasoning_delta",
    b"agent_reasoning_raw_content_delta",
    b"agent_reasoning_section_break",
];

/// A rollout's own piece: what the line is to the recognition of copied history (always the
/// first piece of a line, taken off by [`Rollout::prepare`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RolloutPiece {
    /// The line's part in the history a forked or subagent rollout copies from its parent.
    History(HistoryMark),
    /// `session_meta.history_mode`: a paginated rollout (Codex ≥ 0.15x's default) writes its
    /// user, assistant and reasoning text only as `event_msg/item_completed` turn items.
    HistoryMode {
        /// `paginated` (or a later `paginated_*` mode).
        paginated: bool,
    },
    /// The text of an `item_completed` turn item (`user_message`, `output_delta`, `reasoning`):
    /// written only in a paginated rollout.
    TurnItem(Event),
    /// A `tool_search_call`'s start; one without an id gets `line:<n>` and waits for its output.
    SearchStarted(Event),
    /// A `tool_search_output`; one without an id completes the oldest open search without one.
    SearchOutput(Event),
}

impl From<RolloutPiece> for Piece {
    fn from(p: RolloutPiece) -> Piece {
        Piece::Own(Own::CodexRollout(p))
    }
}

/// Sets the line's history mark (the first piece).
fn set_mark(m: &mut Mapped, mark: HistoryMark) {
    if let Some(Piece::Own(Own::CodexRollout(RolloutPiece::History(h)))) = m.pieces.first_mut() {
        *h = mark;
    }
}

/// What a rollout line is to the recognition of copied history.
///
/// A forked or subagent rollout opens with its own `session_meta` (naming `forked_from_id` or
/// the spawning thread), then Codex copies its ancestors' history into the file in one burst —
/// their `session_meta`s and `token_count`s included — and seeds the fork's running total from
/// it. The fold writes no usage, rate limit or session switch for the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HistoryMark {
    /// A `session_meta`; `forked` when it names a parent (a fork or a subagent).
    SessionMeta {
        /// The session names a parent it was forked or spawned from.
        forked: bool,
    },
    /// A `token_count`.
    TokenCount,
    /// Any other rollout line.
    Other,
}

/// What a rollout remembers: the copied history being read, if any.
#[derive(Debug, Default)]
pub(crate) struct State {
    copy: Option<HistoryCopy>,
    /// The rollout is in paginated history mode.
    paginated: bool,
    /// Searches started without an id, oldest first.
    open_searches: std::collections::VecDeque<String>,
    /// The last line was the rollout's own `turn_context` ([`Adapter::at_rest`]).
    context_last: bool,
}

/// A forked or subagent rollout's copy of its ancestors' history, being read.
///
/// Codex writes the copy in one burst right after the fork's own `session_meta` (each line less
/// than a second after the one before); the fork's first own `token_count` comes only after a
/// real model request. So the copy ends at the first `token_count` or `session_meta` written one
/// second or more after the burst's last line (the rule ccusage and t3code use). Lines written
/// a second or more after the burst do not extend it. Inside it a `token_count` writes no
/// `usage` and no `rate_limit` (its running total is kept: it is what the fork inherited, so the
/// fork's first own `token_count` yields only its own increment), and a `session_meta` switches
/// no session (a `heartbeat`).
#[derive(Debug)]
struct HistoryCopy {
    /// The time of the last copied line, ms since the epoch.
    last_ms: i64,
}

/// How far apart in time the copied burst and the fork's own lines are at least.
const COPY_GAP_MS: i64 = 1000;

impl State {
    /// Whether a line is part of the history a fork copied from its parent; starts and ends
    /// the copy. `at` is the line's normalized time; `known` is false for a line not understood.
    fn copied(&mut self, mark: HistoryMark, at: Option<&str>, known: bool) -> bool {
        let starts = matches!(mark, HistoryMark::SessionMeta { forked: true });
        // The common case, a rollout that is no fork: no copy to track, no time to parse again.
        if self.copy.is_none() && !starts {
            return false;
        }
        let at_ms = at.and_then(crate::read::time::parse_rfc3339_ms);
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
            && known
        {
            self.copy = Some(HistoryCopy { last_ms: t });
        }
        false
    }
}

/// Maps one rollout line.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.at = f.get("timestamp").and_then(|t| match t.str() {
        Some(s) => Some(s.to_owned()),
        None => t.u64().map(|n| n.to_string()).or_else(|| t.f64().map(|n| n.to_string())),
    });
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    m.push_piece(RolloutPiece::History(HistoryMark::Other));
    let Some(p) = f.get("payload").filter(|p| p.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    match ty {
        "session_meta" => {
            m.seed = Some(SeedLine::Session);
            session_meta(p, m)
        }
        // One per model request: its model names the usage that follows.
        "turn_context" => match p.string_at("model") {
            Some(model) => {
                m.seed = Some(SeedLine::Model);
                m.pieces.push(Piece::Model(model))
            }
            None => m.heartbeat(),
        },
        // `replacement_history` re-lists old conversation: never re-emitted.
        "compacted" => {
            m.push(Event::Compacted { env: Envelope::default(), trigger: None, pre_tokens: None, post_tokens: None })
        }
        "event_msg" => event_msg(p, m),
        "response_item" => response_item(p, m),
        // `token_usage_record` repeats the figures of the `token_count` written beside it (using
        // both would count twice); `world_state` is the environment's snapshot;
        // `security_risk_score` a classifier's scores of an action, which Codex keeps out of the
        // conversation and of what it shows (0.149+).
        "token_usage_record" | "world_state" | "security_risk_score" | "inter_agent_communication_metadata" => {
            m.heartbeat()
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn session_meta(p: Val<'_>, m: &mut Mapped) {
    let Some(id) = p.string_at("id").or_else(|| p.string_at("session_id")) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.session_id = Some(id);
    let parent = p
        .path(&["source", "subagent", "thread_spawn", "parent_thread_id"])
        .and_then(|v| v.str())
        .or_else(|| p.str_at("parent_thread_id"))
        .or_else(|| p.str_at("forked_from_id"))
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    set_mark(m, HistoryMark::SessionMeta { forked: parent.is_some() });
    if let Some(mode) = p.str_at("history_mode") {
        m.push_piece(RolloutPiece::HistoryMode { paginated: mode.starts_with("paginated") });
    }
    m.push(Event::SessionStarted {
        env: Envelope::default(),
        model: p.string_at("model"),
        cwd: p.string_at("cwd"),
        cli_version: p.string_at("cli_version"),
        permission_mode: None,
        tools: None,
        parent_session_id: parent,
    });
}

// ------------------------------------------------------------------------------------------------
// event_msg: text, turns, usage
// ------------------------------------------------------------------------------------------------

fn event_msg(p: Val<'_>, m: &mut Mapped) {
    let Some(kind) = p.str_at("type") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("event_msg", kind);
    match kind {
        "user_message" => match p.text_at("message") {
            Some(text) if !text.is_empty() => m.push(Event::UserMessage { env: Envelope::default(), text }),
            Some(_) => m.heartbeat(),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "agent_message" => match p.text_at("message") {
            Some(text) if !text.is_empty() => {
                m.push(Event::OutputDelta { env: Envelope::default(), text, message_id: None })
            }
            Some(_) => m.heartbeat(),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "agent_reasoning" | "agent_reasoning_raw_content" => {
            let text = if m.usage_only { None } else { p.text_at("text").filter(|t| !t.is_empty()) };
            m.push(Event::Reasoning { env: Envelope::default(), text });
        }
        "task_started" | "turn_started" => m.push(Event::TurnStarted { env: Envelope::default() }),
        "task_complete" | "turn_complete" => task_complete(p, m),
        "turn_aborted" => {
            let reason = p.string_at("reason").unwrap_or_else(|| "aborted".to_owned());
            m.push(Event::Interrupt { env: Envelope::default(), reason });
        }
        "token_count" => {
            set_mark(m, HistoryMark::TokenCount);
            let at = m.at.clone();
            token_count(p, at.as_deref(), m);
        }
        "error" => m.push(error_diagnostic(p.str_at("message").unwrap_or("error").to_owned())),
        "warning" => {
            let message = p.str_at("message").unwrap_or("warning").to_owned();
            m.push(diagnostic(Level::Warning, "codex.warning", message, Vec::new()));
        }
        "stream_error" => {
            let message = p.str_at("message").unwrap_or("stream error").to_owned();
            m.push(diagnostic(Level::Warning, "codex.reconnecting", message, Vec::new()));
        }
        // The `compacted` line before it is the `compacted` event.
        "context_compacted"
        // Copies of tool activity whose calls and outputs come from the `response_item`s, and
        // deltas / bookkeeping that carry nothing new.
        | "exec_command_begin" | "exec_command_end" | "exec_command_output_delta" | "terminal_interaction"
        | "patch_apply_begin" | "patch_apply_end" | "mcp_tool_call_begin" | "mcp_tool_call_end"
        | "web_search_begin" | "web_search_end" | "view_image_tool_call" | "image_generation_begin"
        | "image_generation_end" | "plan_update" | "turn_diff" | "agent_message_delta" | "agent_reasoning_delta"
        | "agent_reasoning_raw_content_delta" | "agent_reasoning_section_break" | "item_started"
        | "entered_review_mode" | "exited_review_mode" | "thread_rolled_back"
        | "undo_started" | "undo_completed" | "background_event" | "thread_name_updated"
        | "session_configured" | "shutdown_complete" => m.heartbeat(),
        "item_completed" => turn_item(p, m),
        // A `/model` switch writes this and no `turn_context`: its model names the usage after it.
        "thread_settings_applied" => {
            if let Some(model) = p.path(&["thread_settings", "model"]).and_then(|v| v.str()) {
                m.pieces.push(Piece::Model(model.to_owned()));
            }
            m.heartbeat();
        }
        "sub_agent_activity" => sub_agent_activity(p, m),
        // No goal event in the closed set (Claude's `active_goal` is a heartbeat too).
        "thread_goal_updated"
        // Transient events older builds persisted, each carrying nothing the other lines lack.
        | "dynamic_tool_call_request" | "dynamic_tool_call_response" | "hook_started" | "hook_completed"
        | "raw_response_item" | "agent_message_content_delta" | "plan_delta" | "reasoning_content_delta"
        | "reasoning_raw_content_delta" | "patch_apply_updated" | "guardian_assessment" | "thread_skills_updated"
        | "skills_update_available" | "mcp_startup_update" | "mcp_list_tools_response"
        | "get_history_entry_response" => m.heartbeat(),
        k if k.starts_with("realtime_conversation_") || (k.starts_with("list_") && k.ends_with("_response")) => {
            m.heartbeat()
        }
        "model_reroute" => {
            let from = p.str_at("from_model").unwrap_or("?");
            let to = p.str_at("to_model").unwrap_or("?");
            let mut message = format!("model rerouted: {from} → {to}");
            if let Some(why) = p.str_at("reason") {
                message.push_str(&format!(" ({why})"));
            }
            m.push(diagnostic(Level::Info, "codex.model.reroute", message, Vec::new()));
        }
        "guardian_warning" | "deprecation_notice" => {
            let code = if kind == "guardian_warning" { "codex.guardian.warning" } else { "codex.deprecation" };
            let message = p.str_at("message").or_else(|| p.str_at("summary")).unwrap_or(kind).to_owned();
            m.push(diagnostic(Level::Warning, code, message, Vec::new()));
        }
        "mcp_startup_complete" => {
            let failed: Vec<String> = p
                .array_at("failed")
                .map(|a| a.filter_map(|f| f.string_at("server")).collect())
                .unwrap_or_default();
            if failed.is_empty() {
                m.heartbeat();
            } else {
                let message = format!("MCP servers failed to start: {}", failed.join(", "));
                m.push(diagnostic(Level::Warning, "codex.mcp.startup-failed", message, failed));
            }
        }
        // Subagent bookkeeping (`collab_agent_spawn_end`, `collab_waiting_begin`, …): the
        // spawn / wait calls themselves are `function_call`s.
        k if k.starts_with("collab_") => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// A paginated rollout's turn item (`item_completed`): its user, assistant and reasoning text
/// (written only when the rollout's `session_meta` said `history_mode: paginated`); the other
/// items are heartbeats (tools come from the `response_item`s, compaction from `compacted`).
fn turn_item(p: Val<'_>, m: &mut Mapped) {
    let Some(item) = p.get("item").filter(|i| i.is_object()) else { return m.heartbeat() };
    let texts = |key: &str, block_types: &[&str]| -> Option<Text> {
        let parts: Vec<&str> = item
            .array_at(key)?
            .filter_map(|b| match b.str() {
                Some(s) => Some(s),
                None => b.str_at("type").filter(|t| block_types.contains(t)).and_then(|_| b.str_at("text")),
            })
            .filter(|t| !t.is_empty())
            .collect();
        (!parts.is_empty()).then(|| Text::from(parts.join("\n")))
    };
    let event = match item.str_at("type") {
        Some("UserMessage") => {
            texts("content", &["text"]).map(|text| Event::UserMessage { env: Envelope::default(), text })
        }
        Some("AgentMessage") => texts("content", &["Text", "text"]).map(|text| Event::OutputDelta {
            env: Envelope::default(),
            text,
            message_id: item.string_at("id"),
        }),
        Some("Reasoning") => Some(Event::Reasoning {
            env: Envelope::default(),
            text: texts("summary_text", &[]).or_else(|| texts("raw_content", &["text", "reasoning_text"])),
        }),
        _ => None,
    };
    match event {
        Some(ev) => m.push_piece(RolloutPiece::TurnItem(ev)),
        None => m.heartbeat(),
    }
}

/// `sub_agent_activity`: what happened to a subagent thread (`kind` `started`, `interacted`,
/// `interrupted`, `completed`); `event_id` is the spawning or messaging call's id.
fn sub_agent_activity(p: Val<'_>, m: &mut Mapped) {
    let (Some(child_id), Some(kind)) = (p.string_at("agent_thread_id"), p.str_at("kind")) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let (operation, status) = match kind {
        "started" => (SubagentOperation::Spawn, SubagentStatus::Running),
        "interacted" => (SubagentOperation::Message, SubagentStatus::Running),
        "interrupted" => (SubagentOperation::Close, SubagentStatus::Stopped),
        "completed" => (SubagentOperation::Update, SubagentStatus::Completed),
        other => (SubagentOperation::Update, super::subagent_status(other)),
    };
    m.push(Event::Subagent {
        env: Envelope::default(),
        child_id,
        operation,
        status,
        raw_status: Some(kind.to_owned()),
        operation_id: p.string_at("event_id"),
        description: p.string_at("agent_path"),
        message: None,
        background: None,
    });
}

/// `task_complete` ends the turn: `result` is the last agent message (a third copy of text
/// already written, so not an `output_delta`). One that carries an `error` failed.
fn task_complete(p: Val<'_>, m: &mut Mapped) {
    let duration_ms = p.u64_at("duration_ms");
    if let Some(err) = p.get("error").filter(|e| !e.is_null()) {
        let error = err.str().or_else(|| err.str_at("message")).unwrap_or("turn failed").to_owned();
        let info = err.get("codex_error_info").or_else(|| p.get("codex_error_info"));
        m.push(Event::TurnFailed {
            env: Envelope::default(),
            kind: Some(info.and_then(error_info_kind).unwrap_or_else(|| failure_kind(&error))),
            error,
            usage: None,
            usage_scope: None,
            cost_scope: None,
            cost_usd: None,
            duration_ms,
            model_usage: None,
        });
        return;
    }
    m.push(Event::TurnCompleted {
        env: Envelope::default(),
        usage: None,
        usage_scope: None,
        cost_scope: None,
        cost_usd: None,
        duration_ms,
        num_turns: None,
        result: p.text_at("last_agent_message").filter(|t| !t.is_empty()),
        stop_reason: None,
        model_usage: None,
    });
}

/// Codex's own error class (`codex_error_info`, a string or a one-key object) as a failure kind.
fn error_info_kind(info: Val<'_>) -> Option<FailureKind> {
    let name = match info.str() {
        Some(s) => s.to_owned(),
        None => info.entries()?.first()?.0.to_owned(),
    };
    Some(match name.as_str() {
        "usage_limit_exceeded" => FailureKind::UsageLimit,
        "unauthorized" => FailureKind::Auth,
        "internal_server_error"
        | "http_connection_failed"
        | "response_stream_connection_failed"
        | "response_stream_disconnected"
        | "response_too_many_failed_attempts"
        | "bad_request" => FailureKind::ApiError,
        _ => return None,
    })
}

// ------------------------------------------------------------------------------------------------
// response_item: tool calls and outputs
// ------------------------------------------------------------------------------------------------

fn response_item(p: Val<'_>, m: &mut Mapped) {
    let Some(kind) = p.str_at("type") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("response_item", kind);
    match kind {
        // Copies of the `event_msg` text and reasoning; snapshots and compaction bookkeeping.
        "message" | "reasoning" | "ghost_snapshot" | "compaction" | "compaction_summary" | "context_compaction"
        // An inter-agent message (its `sub_agent_activity` is the event), a reasoning-effort
        // change, tools added to the session, a compaction request.
        | "agent_message" | "configuration_update" | "additional_tools" | "compaction_trigger" => m.heartbeat(),
        "tool_search_call" => tool_search_call(p, m),
        "tool_search_output" => tool_search_output(p, m),
        "function_call" => function_call(p, m),
        "custom_tool_call" => custom_tool_call(p, m),
        "local_shell_call" => local_shell_call(p, m),
        "function_call_output" | "custom_tool_call_output" => {
            let read = if m.usage_only { Outcome::default() } else { outcome(p.get("output")) };
            m.push(Outcome { tool_id: call_id(p), ..read }.event());
        }
        "web_search_call" => web_search_call(p, m),
        "image_generation_call" => {
            let input = p.subset_json(&["revised_prompt"]);
            let summary = p.str_at("revised_prompt").and_then(one_line);
            let ok = !matches!(p.str_at("status"), Some("failed" | "incomplete"));
            let id = p.string_at("id").unwrap_or_else(|| NO_ID.to_owned());
            one_line_tool(m, id, "image_generation", ToolKind::Other, input, summary, ok, p.string_at("status"));
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// `tool_search_call`: the model searching the session's deferred tools (`arguments` is an
/// object: `{query, limit}`, `{queries: [{query}]}` or `{paths: […]}`).
fn tool_search_call(p: Val<'_>, m: &mut Mapped) {
    let args = p.get("arguments").filter(|a| !a.is_null());
    let summary = args.and_then(|a| {
        let first = a.str_at("query").map(str::to_owned).or_else(|| {
            a.array_at("queries")?.next().and_then(|q| q.str().or_else(|| q.str_at("query"))).map(str::to_owned)
        });
        first
            .or_else(|| {
                let paths: Vec<&str> = a.array_at("paths")?.filter_map(|x| x.str()).collect();
                (!paths.is_empty()).then(|| paths.join(", "))
            })
            .and_then(|s| one_line(&s))
    });
    let input = args.map(|a| match a.str() {
        Some(s) => decode_embedded(s).unwrap_or_else(|| a.to_json()),
        None => a.to_json(),
    });
    let ev = Event::ToolStarted {
        env: Envelope::default(),
        // Server-side searches have `call_id: null` (their item `id`s differ between the call and
        // its output): they pair in order in the fold.
        tool_id: p.string_at("call_id").unwrap_or_default(),
        name: "tool_search".to_owned(),
        kind: ToolKind::Search,
        input,
        summary,
        synthetic: None,
    };
    m.push_piece(RolloutPiece::SearchStarted(ev));
}

/// `tool_search_output`: the tools found, by name, one per line.
fn tool_search_output(p: Val<'_>, m: &mut Mapped) {
    let ok = !matches!(p.str_at("status"), Some("failed" | "incomplete"));
    let names: Vec<&str> = p.array_at("tools").map(|a| a.filter_map(|t| t.str_at("name")).collect()).unwrap_or_default();
    let ev = Outcome {
        tool_id: p.string_at("call_id").unwrap_or_default(),
        name: Some("tool_search".to_owned()),
        kind: Some(ToolKind::Search),
        verdict: Some(Verdict::ok_if(ok)),
        output: (!names.is_empty()).then(|| Text::from(names.join("\n"))),
        // A failure is named by its status word.
        error: p.string_at("status"),
        ..Outcome::default()
    }
    .event();
    m.push_piece(RolloutPiece::SearchOutput(ev));
}

/// The id that pairs a call with its output: `call_id`, else the item's `id`, else none.
fn call_id(p: Val<'_>) -> String {
    p.string_at("call_id").or_else(|| p.string_at("id")).unwrap_or_else(|| NO_ID.to_owned())
}

/// A call that has no output item: its start and its completion from the one line.
#[allow(clippy::too_many_arguments)]
fn one_line_tool(
    m: &mut Mapped,
    id: String,
    name: &str,
    kind: ToolKind,
    input: Option<Json>,
    summary: Option<String>,
    ok: bool,
    status: Option<String>,
) {
    m.tool_started(id.clone(), name, kind, input, summary);
    // Still running: only the start.
    if matches!(status.as_deref(), Some("in_progress" | "searching" | "generating")) {
        return;
    }
    m.push(
        Outcome {
            tool_id: id,
            name: Some(name.to_owned()),
            kind: Some(kind),
            verdict: Some(Verdict::ok_if(ok)),
            // A failure is named by its status word.
            error: status,
            ..Outcome::default()
        }
        .event(),
    );
}

/// What a call's decoded arguments give: its input, summary, and the events it implies.
#[derive(Default)]
struct Call {
    input: Option<Json>,
    summary: Option<String>,
    extra: Vec<Event>,
}

impl Call {
    fn from_args(kind: ToolKind, args: Val<'_>) -> Call {
        let command = args.get("command");
        let summary = match kind {
            // Codex 0.40 applies patches through `shell` with the argv `["apply_patch", patch]`.
            ToolKind::Shell => match command.and_then(|c| c.array()).map(|a| a.collect::<Vec<_>>()).as_deref() {
                Some([tool, patch]) if tool.str() == Some("apply_patch") => patch.str().and_then(patch_paths),
                _ => None,
            }
            .or_else(|| command.and_then(shell_summary))
            .or_else(|| summary(kind, Some(args))),
            _ => summary(kind, Some(args)),
        };
        let extra = super::call_extra(kind, Some(args)).into_iter().collect();
        Call { input: Some(args.to_json()), summary, extra }
    }
}

fn function_call(p: Val<'_>, m: &mut Mapped) {
    let Some(name) = p.str_at("name") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let kind = tool_kind(name);
    let call = match p.get("arguments") {
        _ if m.usage_only => Call::default(),
        None => Call::default(),
        Some(a) if a.is_null() => Call::default(),
        Some(a) if a.is_object() => Call::from_args(kind, a),
        Some(a) => match a.str() {
            Some(s) if s.trim().is_empty() => Call::default(),
            Some(s) => with_embedded_object(s, |args| Call::from_args(kind, args))
                .unwrap_or_else(|| Call { input: decode_embedded(s), ..Call::default() }),
            // An array or a number, as given.
            None => Call { input: Some(a.to_json()), ..Call::default() },
        },
    };
    m.tool_started(call_id(p), name, kind, call.input, call.summary);
    for e in call.extra {
        m.push(e);
    }
}

fn custom_tool_call(p: Val<'_>, m: &mut Mapped) {
    let Some(name) = p.str_at("name") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    if m.usage_only {
        return m.tool_started(call_id(p), name, tool_kind(name), None, None);
    }
    let text = p.str_at("input");
    let summary = match (name, text) {
        ("apply_patch", Some(t)) => patch_paths(t).or_else(|| one_line(t)),
        (_, Some(t)) => one_line(t),
        _ => None,
    };
    let input = p.get("input").filter(|v| !v.is_null()).map(|v| v.to_json());
    m.tool_started(call_id(p), name, tool_kind(name), input, summary);
}

/// The names of Codex's function and custom tools (`function_call` / `custom_tool_call`
/// `name`) onto kinds (SPEC §3): `shell` (argv) and the unified `exec_command` / `write_stdin`,
/// `apply_patch`, `view_image`, `update_plan`, `request_user_input`, the collaboration tools
/// (`spawn_agent`, `send_input`, `wait`, `close_agent`), `web_search`, `tool_search`;
/// `mcp__<server>__<tool>` is mcp. Response items that are calls of their own
/// (`local_shell_call`, `web_search_call`, `tool_search_call`) have their kinds where they are mapped.
fn tool_kind(name: &str) -> ToolKind {
    match name {
        "shell" | "exec_command" | "write_stdin" => ToolKind::Shell,
        "view_image" => ToolKind::Read,
        "apply_patch" => ToolKind::Edit,
        "tool_search" => ToolKind::Search,
        "web_search" => ToolKind::WebSearch,
        "spawn_agent" | "send_input" | "wait" | "close_agent" => ToolKind::Task,
        "update_plan" => ToolKind::Plan,
        "request_user_input" => ToolKind::Ask,
        n => unlisted_kind(n),
    }
}

fn local_shell_call(p: Val<'_>, m: &mut Mapped) {
    let action = p.get("action").filter(|a| a.is_object());
    let summary = action.and_then(|a| a.get("command")).and_then(shell_summary);
    m.tool_started(call_id(p), "local_shell", ToolKind::Shell, action.map(|a| a.to_json()), summary);
}

fn web_search_call(p: Val<'_>, m: &mut Mapped) {
    let action = p.get("action").filter(|a| a.is_object());
    let summary = action.and_then(|a| {
        a.str_at("query")
            .or_else(|| a.array_at("queries").and_then(|mut q| q.next()).and_then(|q| q.str()))
            .or_else(|| a.str_at("url"))
            .and_then(one_line)
    });
    let ok = !matches!(p.str_at("status"), Some("failed" | "incomplete"));
    let id = p.string_at("id").or_else(|| p.string_at("call_id")).unwrap_or_else(|| NO_ID.to_owned());
    one_line_tool(
        m,
        id,
        "web_search",
        ToolKind::WebSearch,
        action.map(|a| a.to_json()),
        summary,
        ok,
        p.string_at("status"),
    );
}

/// The files an `apply_patch` text names (`*** Update File: path`, …), joined by `, `.
fn patch_paths(patch: &str) -> Option<String> {
    let paths: Vec<&str> = patch
        .lines()
        .filter_map(|l| {
            ["*** Add File: ", "*** Update File: ", "*** Delete File: "].iter().find_map(|p| l.strip_prefix(p))
        })
        .map(str::trim)
        .collect();
    (!paths.is_empty()).then(|| paths.join(", ")).and_then(|s| one_line(&s))
}

// ------------------------------------------------------------------------------------------------
// Tool outputs
// ------------------------------------------------------------------------------------------------

/// An output that says nothing of failure.
fn plain(output: Option<Text>) -> Outcome {
    Outcome { output, ..Outcome::default() }
}

/// A shell's output: a success unless a non-zero exit code says otherwise ([`Outcome`]'s rule).
fn exited(output: Option<Text>, exit_code: Option<i64>, duration_ms: Option<u64>) -> Outcome {
    Outcome { output, exit_code, duration_ms, ..Outcome::default() }
}

/// Codex's own messages for a call that failed before or instead of running.
const FAILURE_PREFIXES: [&str; 8] = [
    "failed in sandbox",
    "execution error",
    "patch rejected",
    "exec command rejected",
    "apply_patch verification failed",
    "unsupported call",
    "failed to parse function arguments",
    "sandbox error",
];

fn outcome(out: Option<Val<'_>>) -> Outcome {
    let Some(out) = out.filter(|o| !o.is_null()) else {
        return plain(None);
    };
    if let Some(s) = out.str() {
        if s.trim_start().starts_with('{')
            && let Some(Some(o)) = with_embedded_object(s, structured)
        {
            return o;
        }
        if let Some(o) = headed(s) {
            return Outcome { output: out.text(), ..o };
        }
        let lower = s.trim_start().to_ascii_lowercase();
        if FAILURE_PREFIXES.iter().any(|p| lower.starts_with(p)) {
            let exit_code = lower
                .find("exit code: ")
                .and_then(|i| lower[i + 11..].split(|c: char| !c.is_ascii_digit() && c != '-').next())
                .and_then(|n| n.parse().ok());
            return Outcome {
                verdict: Some(Verdict::Failed),
                output: out.text(),
                exit_code,
                error: one_line(s),
                ..Outcome::default()
            };
        }
        return plain(out.text().filter(|t| !t.is_empty()));
    }
    if out.is_object() {
        let text =
            out.get("content").or_else(|| out.get("output")).and_then(super::content_text).filter(|t| !t.is_empty());
        // A failure's message is the output's first line.
        return Outcome {
            verdict: Verdict::failed_if(out.bool_at("success") == Some(false)),
            output: text,
            ..Outcome::default()
        };
    }
    plain(super::content_text(out).filter(|t| !t.is_empty()))
}

/// The Codex 0.40 shell output, a JSON object `{"output", "metadata": {"exit_code",
/// "duration_seconds"}}` encoded in the string; `None` for any other object.
fn structured(o: Val<'_>) -> Option<Outcome> {
    let meta = o.get("metadata").filter(|v| v.is_object());
    if meta.is_none() && o.get("output").and_then(|v| v.str()).is_none() {
        return None;
    }
    let exit_code = meta.and_then(|v| v.get("exit_code")).and_then(|c| c.i64());
    let duration_ms = meta.and_then(|v| v.f64_at("duration_seconds")).and_then(seconds_ms);
    let output = o.text_at("output").filter(|t| !t.is_empty());
    Some(exited(output, exit_code, duration_ms))
}

/// A shell output with Codex's header (`Exit code: N` / `Chunk ID: …`, `Wall time: S seconds`,
/// `Process exited with code N`, …, `Output:`): the exit code and wall time. `None` for text
/// without that header.
fn headed(s: &str) -> Option<Outcome> {
    if !(s.starts_with("Exit code: ") || s.starts_with("Chunk ID: ")) {
        return None;
    }
    let mut exit_code = None;
    let mut duration_ms = None;
    for line in s.lines() {
        if line == "Output:" {
            break;
        }
        if let Some(n) = line.strip_prefix("Exit code: ").or_else(|| line.strip_prefix("Process exited with code ")) {
            exit_code = n.trim().parse().ok();
        } else if let Some(t) = line.strip_prefix("Wall time: ") {
            duration_ms = t.trim_end_matches("seconds").trim().parse().ok().and_then(seconds_ms);
        }
    }
    Some(exited(None, exit_code, duration_ms))
}

fn seconds_ms(s: f64) -> Option<u64> {
    (0.0..1e15).contains(&s).then(|| (s * 1000.0).round() as u64)
}

// ------------------------------------------------------------------------------------------------
// JSON inside strings
// ------------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::assert_kinds;

    #[test]
    fn codex_tool_names() {
        use ToolKind::*;
        assert_kinds(
            tool_kind,
            &[
                ("shell", Shell),
                ("exec_command", Shell),
                ("write_stdin", Shell),
                ("view_image", Read),
                ("apply_patch", Edit),
                ("tool_search", Search),
                ("web_search", WebSearch),
                ("spawn_agent", Task),
                ("send_input", Task),
                ("wait", Task),
                ("close_agent", Task),
                ("update_plan", Plan),
                ("request_user_input", Ask),
                ("mcp__docs__lookup", Mcp),
                // Codex's MCP resource tools are its own functions, not MCP calls (Gemini's are).
                ("list_mcp_resources", Other),
                // Claude's and Gemini's names.
                ("Bash", Other),
                ("Read", Other),
                ("run_shell_command", Other),
                ("TodoWrite", Other),
            ],
        );
    }
}
