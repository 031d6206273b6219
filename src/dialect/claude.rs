//! Claude Code `-p --output-format stream-json --verbose` (and Amp's Claude-compatible stream).
//!
//! The whole mapping of one Claude frame to event pieces. Claude writes one line per content
//! block, each repeating its message's `usage`; with `--include-partial-messages` it also streams
//! `stream_event` deltas and then repeats the text in the whole message. Both repeats are
//! expressed as [`Piece`]s the fold resolves (once per `message.id`; text exactly once).

use std::collections::BTreeMap;

use super::{Accepts, Adapter, Blocks, Claim, Content, Cx, Mapped, NO_ID, Outcome, Own, Piece, Recent, ToolKinds, Verdict, content_text, failure_kind, subagent_status, summary, unlisted_kind};
use crate::dialect::usage;
use crate::event::{Dialect, Envelope, Event, FailureKind, Level, ModelUsage, ServiceTier, SubagentOperation, SubagentStatus, Text, ToolKind, UnknownReason, Usage, UsageScope};
use crate::read::frame::Val;

/// The `claude` dialect.
pub(crate) struct Claude;

impl Adapter for Claude {
    type Piece = ClaudePiece;
    type State = State;

    const ACCEPTS: Accepts = Accepts::types(
        &[
            &["stream_event", "rate_limit_event", "control_response", "control_request", "keep_alive", "active_goal"],
            &["auth_status", "system", "assistant", "user", "result"],
            SDK_BOOKKEEPING,
        ],
        Claim::Overrides,
    );

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        match ty {
            Some("stream_event" | "rate_limit_event" | "control_response" | "control_request" | "keep_alive" | "active_goal") => {
                Claim::Marked
            }
            Some(t)
                if (t == "auth_status" || SDK_BOOKKEEPING.contains(&t))
                    && (f.get("uuid").is_some() || f.get("session_id").is_some()) =>
            {
                Claim::Marked
            }
            // Shared with Cursor; Claude-only marks win over Cursor's (SPEC §2).
            Some(ty @ ("system" | "assistant" | "user" | "result")) => {
                let subtype = f.str_at("subtype");
                let mark = f.get("uuid").is_some()
                    || f.get("parent_tool_use_id").is_some()
                    || (ty == "system" && subtype != Some("init"))
                    || (ty == "system" && f.get("tools").is_some());
                if mark { Claim::Overrides } else { Claim::Fits }
            }
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(st: &mut State, piece: ClaudePiece, cx: &mut dyn Cx) {
        match piece {
            ClaudePiece::WholeMessage { message_id, event } => {
                if message_id.as_ref().is_some_and(|id| st.streamed.contains(id)) {
                    return;
                }
                match event {
                    // Deltas streamed without a message_start naming their message (a stream
                    // joined midway): the whole message repeats them, write only the rest.
                    Event::OutputDelta { text, .. } if cx.has_segment() => cx.turn_text(text, false, message_id),
                    _ => cx.event(event),
                }
            }
            ClaudePiece::StreamStart { message_id, usage, model } => {
                flush_stream_usage(st, cx);
                st.streamed.insert(&message_id);
                st.stream_msg = Some((message_id, usage, model));
            }
            ClaudePiece::StreamText(mut ev) => {
                if let (Event::OutputDelta { text, .. }, None) = (&ev, &st.stream_msg) {
                    cx.note_fragment(&text.as_str());
                }
                if let (Event::OutputDelta { message_id, .. }, Some((id, _, _))) = (&mut ev, &st.stream_msg) {
                    *message_id = Some(id.clone());
                }
                cx.event(ev);
            }
            ClaudePiece::StreamUsage { usage: fin } => {
                let (message_id, figures, model) = match &st.stream_msg {
                    Some((id, start, model)) => {
                        if !st.usage_done.insert(id) {
                            return;
                        }
                        // Input and cache figures from the message, or from the `message_delta`
                        // where it carries them and the message's are zero (SPEC §3 `usage`); the
                        // final output count here.
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
                cx.event(Event::Usage { env: Envelope::default(), usage, model, message_id, context_window: None });
            }
            ClaudePiece::MessageUsage { message_id, event } => {
                if let Some(id) = message_id
                    && (st.streamed.contains(&id) || !st.usage_done.insert(&id))
                {
                    return;
                }
                cx.event(event);
            }
        }
    }

    fn turn_ending(st: &mut State, cx: &mut dyn Cx) {
        flush_stream_usage(st, cx);
    }

    fn finish(st: &mut State, cx: &mut dyn Cx) {
        flush_stream_usage(st, cx);
    }

    fn map_block(b: Val<'_>, of: &Blocks, m: &mut Mapped) {
        map_block(b, of, m, tool_kind);
    }
}

/// Claude's own pieces: a message's repeats, resolved once per `message.id`.
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClaudePiece {
    /// Assistant text or reasoning from a whole message; dropped when the same message was
    /// already streamed as partial deltas (the exactly-once invariant).
    WholeMessage {
        /// The message id, when the CLI gave one.
        message_id: Option<String>,
        /// The `output_delta` or `reasoning` event.
        event: Event,
    },
    /// A partial message started (`stream_event` `message_start`): its usage is emitted at its
    /// `message_delta`, and its whole-message copies are dropped.
    StreamStart {
        /// The message id.
        message_id: String,
        /// The start-of-message usage (input and cache figures).
        usage: Usage,
        /// The model.
        model: Option<String>,
    },
    /// A partial message's final usage (`message_delta`).
    StreamUsage {
        /// The final figures (only `output` and `reasoning` are taken from here when the
        /// start was seen).
        usage: Usage,
    },
    /// One message's usage as repeated on each of its lines: emitted once per message id.
    MessageUsage {
        /// The message id; `None` makes every line its own message.
        message_id: Option<String>,
        /// The `usage` event.
        event: Event,
    },
    /// Partial assistant text or reasoning (`stream_event` deltas) of the message the last
    /// `StreamStart` announced.
    StreamText(Event),
}

impl From<ClaudePiece> for Piece {
    fn from(p: ClaudePiece) -> Piece {
        Piece::Own(Own::Claude(p))
    }
}

/// What a Claude stream remembers: the messages streamed as partial deltas, the messages whose
/// usage was written, and the partial message in progress.
#[derive(Debug)]
pub(crate) struct State {
    streamed: Recent<()>,
    usage_done: Recent<()>,
    stream_msg: Option<(String, Usage, Option<String>)>,
}

impl Default for State {
    fn default() -> State {
        State { streamed: Recent::new(1 << 12), usage_done: Recent::new(1 << 12), stream_msg: None }
    }
}

/// A partial message whose `message_delta` never came (interrupted, cut) was still a billed
/// request: its usage is written with the input and cache figures, without `output`.
fn flush_stream_usage(st: &mut State, cx: &mut dyn Cx) {
    let Some((id, start, model)) = &st.stream_msg else { return };
    if !st.usage_done.insert(id) {
        return;
    }
    let usage = usage::with_context(Usage { output: None, reasoning: None, ..*start });
    cx.event(Event::Usage {
        env: Envelope::default(),
        usage,
        model: model.clone(),
        message_id: Some(id.clone()),
        context_window: None,
    });
}

/// Top-level frame types of Claude Code's SDK wire (2.1.2xx) that carry nothing worth an event:
/// tool liveness, summaries, suggestions, `/clear` (the session id does not change). Each is a
/// `heartbeat`; with a `uuid` or `session_id` they are Claude's.
const SDK_BOOKKEEPING: &[&str] = &[
    "tool_progress",
    "tool_use_summary",
    "prompt_suggestion",
    "conversation_reset",
    "os_notification",
    "apply_flag_settings",
    "command_lifecycle",
    "set_expanded_view",
    "set_in_progress_tool_use_ids",
    "hint_clears",
    "interruptible_tool_in_progress",
    "open_message_selector",
    "compact_progress",
    "stream_mode",
    "transcript_mirror",
];

/// Maps one Claude frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    map_with(f, m, tool_kind, Dialect::Claude);
}

/// Maps one Claude-shaped frame whose tool names are read with `kinds` (Qwen's stream is
/// Claude's, its tools are its own), for `dialect` (whose [`Adapter::map_block`] maps the blocks
/// of a very long content array).
pub(crate) fn map_with(f: Val<'_>, m: &mut Mapped, kinds: ToolKinds, dialect: Dialect) {
    m.session_id = f.string_at("session_id");
    m.parent_tool_id = f.string_at("parent_tool_use_id");
    m.at = f.string_at("timestamp");
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    match ty {
        "system" => system(f, m),
        "assistant" => assistant(f, m, kinds, dialect),
        "user" => user(f, m, dialect),
        "result" => result(f, m),
        "stream_event" => stream_event(f, m),
        "rate_limit_event" => rate_limit(f, m),
        "control_response" | "control_request" | "keep_alive" | "active_goal" => m.heartbeat(),
        "auth_status" => match f.string_at("error") {
            Some(e) => m.push(super::diagnostic(Level::Error, "claude.auth", e, Vec::new())),
            None => m.heartbeat(),
        },
        t if SDK_BOOKKEEPING.contains(&t) => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn system(f: Val<'_>, m: &mut Mapped) {
    let Some(sub) = f.str_at("subtype") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("system", sub);
    match sub {
        "init" => {
            if m.session_id.is_none() {
                return m.unknown(UnknownReason::MalformedFrame, None);
            }
            let tools = f
                .array_at("tools")
                .map(|a| a.filter_map(|t| t.str().or_else(|| t.str_at("name")).map(str::to_owned)).collect::<Vec<_>>());
            m.push(Event::SessionStarted {
                env: Envelope::default(),
                model: f.string_at("model"),
                cwd: f.string_at("cwd"),
                cli_version: f.string_at("claude_code_version"),
                permission_mode: f.string_at("permissionMode"),
                tools,
                parent_session_id: None,
            });
        }
        "api_retry" => {
            let mut message = format!(
                "API retry {}/{}",
                f.u64_at("attempt").map_or("?".into(), |n| n.to_string()),
                f.u64_at("max_retries").map_or("?".into(), |n| n.to_string())
            );
            if let Some(e) = f.str_at("error").or_else(|| f.path(&["error", "message"]).and_then(|v| v.str())) {
                message.push_str(": ");
                message.push_str(e);
            }
            if let Some(s) = f.u64_at("error_status") {
                message.push_str(&format!(" (status {s})"));
            }
            m.push(super::diagnostic(Level::Warning, "claude.api_retry", message, Vec::new()));
        }
        "compact_boundary" => {
            let meta = f.get("compact_metadata");
            m.push(Event::Compacted {
                env: Envelope::default(),
                trigger: meta.and_then(|x| x.string_at("trigger")),
                pre_tokens: meta.and_then(|x| x.u64_at("pre_tokens")),
                post_tokens: meta.and_then(|x| x.u64_at("post_tokens")),
            });
        }
        "thinking_tokens" => m.push(Event::Reasoning { env: Envelope::default(), text: None }),
        "task_started" => subagent(f, m, SubagentOperation::Spawn, None),
        "task_progress" => subagent(f, m, SubagentOperation::Update, None),
        "task_updated" => {
            let status = f.path(&["patch", "status"]).and_then(|s| s.str());
            subagent(f, m, SubagentOperation::Update, status)
        }
        "task_notification" => subagent(f, m, SubagentOperation::Update, f.str_at("status")),
        "status" if f.str_at("compact_result") == Some("failed") => {
            let why = f.str_at("compact_error").unwrap_or("compaction failed");
            m.push(super::diagnostic(
                Level::Warning,
                "claude.compact.failed",
                format!("compaction failed: {why}"),
                Vec::new(),
            ));
        }
        "status"
        | "background_tasks_changed"
        | "commands_changed"
        | "hook_started"
        | "hook_progress"
        | "hook_response"
        | "files_persisted"
        | "memory_recall"
        // Claude Code 2.1.2xx (the SDK wire schemas in its cli.js): a background classifier's
        // summary after the turn (`needs_action` is prose, not a question the CLI waits on),
        // the session's idle/running state, and bookkeeping with nothing else worth an event.
        | "post_turn_summary"
        | "session_state_changed"
        | "task_summary"
        | "notification"
        | "local_command_output"
        | "elicitation_complete"
        | "worker_shutting_down"
        | "control_request_progress"
        | "turn_duration"
        | "stop_hook_summary"
        | "memory_saved"
        | "agents_killed"
        | "away_summary"
        | "file_snapshot"
        | "scheduled_task_fire"
        | "permission_retry"
        | "vcs_state_changed"
        | "bridge_status"
        | "api_metrics" => m.heartbeat(),
        "informational" => {
            let warn = f.str_at("level") == Some("warning") || f.bool_at("prevent_continuation") == Some(true);
            match f.string_at("content") {
                Some(content) if warn => {
                    m.push(super::diagnostic(Level::Warning, "claude.informational", content, Vec::new()))
                }
                _ => m.heartbeat(),
            }
        }
        "permission_denied" => {
            let tool = f.str_at("tool_name").unwrap_or("tool");
            let why = f.str_at("message").or_else(|| f.str_at("decision_reason")).unwrap_or("denied");
            let mut d = super::diagnostic(
                Level::Warning,
                "claude.permission.denied",
                format!("{tool} denied: {why}"),
                Vec::new(),
            );
            if let Event::Diagnostic { dedupe_key, .. } = &mut d {
                *dedupe_key = format!("claude.permission.denied|{tool}");
            }
            m.push(d);
        }
        "model_fallback" | "model_refusal_fallback" | "model_refusal_no_fallback" | "model_consent_fallback" => {
            let (level, code) = match sub {
                "model_fallback" => (Level::Warning, "claude.model.fallback"),
                "model_refusal_fallback" => (Level::Warning, "claude.model.refusal-fallback"),
                "model_refusal_no_fallback" => (Level::Error, "claude.model.refusal"),
                _ => (Level::Info, "claude.model.consent-fallback"),
            };
            let message = f.string_at("content").unwrap_or_else(|| {
                let from = f.str_at("original_model").unwrap_or("?");
                match f.str_at("fallback_model") {
                    Some(to) => format!("{from} → {to}"),
                    None => format!("{from}: no fallback"),
                }
            });
            m.push(super::diagnostic(level, code, message, Vec::new()));
        }
        "plugin_install" if f.str_at("status") == Some("failed") => {
            let name = f.string_at("name");
            let message = match (name.as_deref(), f.str_at("error")) {
                (Some(n), Some(e)) => format!("plugin {n} failed to install: {e}"),
                (Some(n), None) => format!("plugin {n} failed to install"),
                (None, e) => format!("plugin install failed: {}", e.unwrap_or("unknown error")),
            };
            m.push(super::diagnostic(Level::Warning, "claude.plugin.install-failed", message, name.into_iter().collect()));
        }
        "plugin_install" => m.heartbeat(),
        "mirror_error" => {
            let why = f.str_at("error").unwrap_or("transcript mirror failed").to_owned();
            m.push(super::diagnostic(Level::Warning, "claude.mirror.error", why, Vec::new()));
        }
        "api_error" => {
            let why = f.path(&["error", "message"]).and_then(|v| v.str()).unwrap_or("API error");
            let message = format!(
                "API error (retry {}/{}): {why}",
                f.u64_at("retry_attempt").map_or("?".into(), |n| n.to_string()),
                f.u64_at("max_retries").map_or("?".into(), |n| n.to_string())
            );
            m.push(super::diagnostic(Level::Warning, "claude.api_retry", message, Vec::new()));
        }
        "thinking" => m.push(Event::Reasoning { env: Envelope::default(), text: f.text_at("content") }),
        "microcompact_boundary" => {
            let meta = f.get("microcompact_metadata").or_else(|| f.get("microcompactMetadata"));
            let num = |snake: &str, camel: &str| meta.and_then(|x| x.u64_at(snake).or_else(|| x.u64_at(camel)));
            m.push(Event::Compacted {
                env: Envelope::default(),
                trigger: meta.and_then(|x| x.string_at("trigger")),
                pre_tokens: num("pre_tokens", "preTokens"),
                post_tokens: num("post_tokens", "postTokens"),
            });
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn subagent(f: Val<'_>, m: &mut Mapped, operation: SubagentOperation, raw_status: Option<&str>) {
    let Some(child_id) = f.string_at("task_id") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let status = raw_status.map_or(SubagentStatus::Running, subagent_status);
    m.push(Event::Subagent {
        env: Envelope::default(),
        child_id,
        operation,
        status,
        raw_status: raw_status.map(str::to_owned),
        operation_id: f.string_at("tool_use_id"),
        description: f.string_at("description"),
        message: f.string_at("summary").or_else(|| f.string_at("prompt")),
        background: f.bool_at("is_backgrounded"),
    });
}

fn assistant(f: Val<'_>, m: &mut Mapped, kinds: ToolKinds, dialect: Dialect) {
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let message_id = msg.string_at("id");
    let model = msg.str_at("model");
    // A synthetic API-error message (`error` + `is_api_error_message`): the CLI's error sentence,
    // not model output (`result.result` repeats it): a diagnostic, no `output_delta`.
    if let Some(error) = f.str_at("error")
        && (f.bool_at("is_api_error_message") == Some(true) || model == Some("<synthetic>"))
    {
        m.set_frame("assistant", "error");
        let level = if error == "max_output_tokens" { Level::Warning } else { Level::Error };
        let text = msg
            .get("content")
            .and_then(super::content_text)
            .map(|t| t.as_str().into_owned())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| error.to_owned());
        return m.push(super::diagnostic(level, &format!("claude.api_error.{error}"), text, Vec::new()));
    }
    assistant_content(msg, &message_id, m, kinds, dialect);
    // `<synthetic>` messages (local command output, API error notices) are no model request.
    if model != Some("<synthetic>")
        && let Some(u) = msg.get("usage").filter(|u| u.is_object()).map(counters)
        && !u.is_empty()
    {
        // Stream-json lines carry a start-of-message snapshot whose output count is not final
        // (their `stop_reason` is null); a whole message with its `stop_reason` set (Amp, older
        // CLIs) reports its final count.
        let mut figures = usage::with_context(u);
        if msg.str_at("stop_reason").is_none() {
            figures.output = None;
        }
        let event = Event::Usage {
            env: Envelope::default(),
            usage: figures,
            model: model.map(str::to_owned),
            message_id: message_id.clone(),
            context_window: None,
        };
        m.push_piece(ClaudePiece::MessageUsage { message_id, event });
    }
}

/// The content of an assistant `message` (an array of blocks, or a plain string): text and
/// thinking as whole-message pieces, tool blocks as tool events. Shared with the transcript
/// adapter, whose lines hold the same `message` shapes; tool names are read with `kinds`. An
/// array of very many blocks is one [`Piece::Blocks`], mapped block by block (with [`block`],
/// by `dialect`'s [`Adapter::map_block`]) when the fold reaches it.
pub(crate) fn assistant_content(
    msg: Val<'_>,
    message_id: &Option<String>,
    m: &mut Mapped,
    kinds: ToolKinds,
    dialect: Dialect,
) {
    if let Some(content) = msg.get("content")
        && let Some(blocks) = content.array()
    {
        let count = content.array_len().unwrap_or_default();
        if let Some(lazy) = Blocks::of(dialect, Content::Assistant, content, count, message_id) {
            return m.pieces.push(lazy);
        }
        for b in blocks {
            block(b, message_id, m, kinds);
        }
    } else if let Some(text) = msg.text_at("content") {
        let event = Event::OutputDelta { env: Envelope::default(), text, message_id: message_id.clone() };
        m.push_piece(ClaudePiece::WholeMessage { message_id: message_id.clone(), event });
    }
}

/// Maps one block of a [`Blocks`] as the whole line's mapping maps it, tool names read with
/// `kinds` (Claude's and the adapters that read Claude's content).
pub(crate) fn map_block(b: Val<'_>, of: &Blocks, m: &mut Mapped, kinds: ToolKinds) {
    match of.content {
        Content::Assistant => block(b, &of.message_id, m, kinds),
        Content::UserResults => {
            if b.str_at("type") == Some("tool_result") {
                tool_result(b, m);
            }
        }
    }
}

/// Maps one block of an assistant message's content.
fn block(b: Val<'_>, message_id: &Option<String>, m: &mut Mapped, kinds: ToolKinds) {
    let whole = |event| Piece::from(ClaudePiece::WholeMessage { message_id: message_id.clone(), event });
    match b.str_at("type") {
        Some("text") => {
            if let Some(text) = b.text_at("text").filter(|t| !t.is_empty()) {
                m.pieces.push(whole(Event::OutputDelta {
                    env: Envelope::default(),
                    text,
                    message_id: message_id.clone(),
                }));
            }
        }
        Some("thinking") => {
            let text = if m.usage_only { None } else { b.text_at("thinking").filter(|t| !t.is_empty()) };
            m.pieces.push(whole(Event::Reasoning { env: Envelope::default(), text }));
        }
        Some("redacted_thinking") => m.pieces.push(whole(Event::Reasoning { env: Envelope::default(), text: None })),
        Some("tool_use" | "server_tool_use" | "mcp_tool_use") => tool_use(b, m, kinds),
        Some(
            "tool_result"
            | "web_search_tool_result"
            | "web_fetch_tool_result"
            | "mcp_tool_result"
            | "code_execution_tool_result",
        ) => tool_result(b, m),
        // Server tools' results of newer API versions (`advisor_tool_result`,
        // `bash_code_execution_tool_result`, `tool_search_tool_result`, …), named like the others.
        Some(t) if t.ends_with("_tool_result") && b.get("tool_use_id").is_some() => tool_result(b, m),
        _ => {}
    }
}

fn tool_use(b: Val<'_>, m: &mut Mapped, kinds: ToolKinds) {
    let name = b.str_at("name").unwrap_or("unknown");
    let kind = kinds(name);
    let id = b.string_at("id").unwrap_or_else(|| NO_ID.to_owned());
    if m.usage_only {
        return m.tool_started(id, name, kind, None, None);
    }
    let input = b.get("input").filter(|v| !v.is_null());
    m.tool_started(
        id,
        name,
        kind,
        input.map(|v| v.to_json()),
        summary(kind, input),
    );
    if let Some(extra) = super::call_extra(kind, input) {
        m.push(extra);
    }
}

/// Claude Code's tool names onto kinds (SPEC §3), with those of the Claude-compatible streams
/// read as Claude: Amp's `--stream-json` (`glob`, `finder`, `create_file`, `edit_file`,
/// `todo_write`, `web_search`) and the API's server tools (`server_tool_use` `web_search` /
/// `web_fetch`). The saved transcripts (`claude_transcript`) are read with it too.
pub(crate) fn tool_kind(name: &str) -> ToolKind {
    match name {
        "Bash" | "BashOutput" | "KillShell" | "KillBash" => ToolKind::Shell,
        "Read" | "NotebookRead" | "LS" => ToolKind::Read,
        "Write" | "create_file" => ToolKind::Write,
        "Edit" | "MultiEdit" | "NotebookEdit" | "edit_file" => ToolKind::Edit,
        "Grep" | "Glob" | "ToolSearch" | "glob" | "finder" => ToolKind::Search,
        "WebFetch" | "web_fetch" => ToolKind::Fetch,
        "WebSearch" | "web_search" => ToolKind::WebSearch,
        "Task" | "Agent" => ToolKind::Task,
        "TodoWrite" | "ExitPlanMode" | "todo_write" => ToolKind::Plan,
        "AskUserQuestion" => ToolKind::Ask,
        n => unlisted_kind(n),
    }
}

fn tool_result(b: Val<'_>, m: &mut Mapped) {
    // A failed result's text is its message: the error is its first line.
    m.push(
        Outcome {
            verdict: Verdict::failed_if(b.bool_at("is_error").unwrap_or(false)),
            output: if m.usage_only { None } else { b.get("content").and_then(content_text) },
            ..Outcome::new(b.string_at("tool_use_id").unwrap_or_else(|| NO_ID.to_owned()))
        }
        .event(),
    );
}

fn user(f: Val<'_>, m: &mut Mapped, dialect: Dialect) {
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    // Compaction summaries and nudges the CLI writes as the user are not the user's words.
    if f.bool_at("isSynthetic") == Some(true) {
        m.frame = "user/synthetic".into();
        return m.heartbeat();
    }
    // The harness's own messages (a background task's notification, an auto-continuation) are
    // not the user's prompt; `system/task_notification` carries the task's event.
    if let Some(kind @ ("task-notification" | "auto-continuation")) = f.path(&["origin", "kind"]).and_then(|k| k.str()) {
        m.set_frame("user", kind);
        return m.heartbeat();
    }
    match user_content(msg, m, dialect) {
        Err(NotContent) => m.unknown(UnknownReason::MalformedFrame, None),
        Ok(Some(text)) => user_text(text, m),
        Ok(None) => {}
    }
}

/// A user `message.content` that is neither a string nor an array of blocks.
#[derive(Debug)]
pub(crate) struct NotContent;

/// The content of a user `message`: its `tool_result` blocks become `tool_completed` pieces, and
/// its text is returned: a string as is, text blocks joined by `\n`, other blocks as `[<type>]`.
/// `Ok(None)` when there is no text (a tool-result line). Shared with the transcript adapter.
/// Very many tool results are one [`Piece::Blocks`] of `dialect`, mapped one by one when the
/// fold reaches them.
pub(crate) fn user_content(msg: Val<'_>, m: &mut Mapped, dialect: Dialect) -> Result<Option<Text>, NotContent> {
    let content = msg.get("content");
    if let Some(s) = content.and_then(|c| c.text()) {
        return Ok(Some(s));
    }
    let Some((content, blocks)) = content.and_then(|c| Some((c, c.array()?))) else {
        return Err(NotContent);
    };
    let is_result = |b: &Val<'_>| b.str_at("type") == Some("tool_result");
    // One result stays on its line: the transcript gives a line of one result its duration.
    let results = match content.array_len() {
        Some(n) if n >= super::lazy_blocks() => content.array().map_or(0, |a| a.filter(is_result).count()),
        _ => 0,
    };
    let lazy = match Blocks::of(dialect, Content::UserResults, content, results, &None) {
        Some(p) if results >= 2 => {
            m.pieces.push(p);
            true
        }
        _ => false,
    };
    // Joined as they come: a line of many text blocks holds the text once.
    let (mut first, mut joined): (Option<Text>, Option<String>) = (None, None);
    let mut add = |t: Text| match (&first, &mut joined) {
        (None, None) => first = Some(t),
        (Some(f), None) => joined = Some([f.as_str(), t.as_str()].join("\n")),
        (_, Some(j)) => {
            j.push('\n');
            j.push_str(&t.as_str());
        }
    };
    for b in blocks {
        match b.str_at("type") {
            Some("tool_result") if !lazy => tool_result(b, m),
            Some("tool_result") => {}
            Some("text") => b.text_at("text").into_iter().for_each(&mut add),
            Some(other) => add(Text::from(format!("[{other}]"))),
            None => {}
        }
    }
    Ok(joined.map(Text::from).or(first))
}

/// What the text of a user message is: a local command's echoed output (a `user/local_command`
/// heartbeat), an interrupt (`[Request interrupted by user…]`), or the user's prompt.
pub(crate) fn user_text(text: Text, m: &mut Mapped) {
    let s = text.as_str();
    if s.starts_with("<local-command-stdout>") || s.starts_with("<local-command-stderr>") {
        // Output of a local slash command echoed as a user line: not the user's words.
        m.frame = "user/local_command".into();
        m.heartbeat();
    } else if s.starts_with("[Request interrupted by user") {
        let reason = s.trim_matches(|c| c == '[' || c == ']').to_owned();
        m.push(Event::Interrupt { env: Envelope::default(), reason });
    } else {
        m.push(Event::UserMessage { env: Envelope::default(), text });
    }
}

fn result(f: Val<'_>, m: &mut Mapped) {
    let subtype = f.str_at("subtype");
    if let Some(s) = subtype {
        m.set_frame("result", s);
    }
    let failed = f.bool_at("is_error").unwrap_or_else(|| subtype.is_some_and(|s| s.starts_with("error")));
    let usage = f.get("usage").map(counters).and_then(usage::non_empty);
    let cost_usd = f.f64_at("total_cost_usd");
    let duration_ms = f.u64_at("duration_ms");
    let model_usage = f.get("modelUsage").and_then(model_usage);
    if !failed {
        m.push(Event::TurnCompleted {
            env: Envelope::default(),
            usage,
            usage_scope: None,
            // `total_cost_usd` is a running total over the turns of one process.
            cost_scope: cost_usd.map(|_| UsageScope::Session),
            cost_usd,
            duration_ms,
            num_turns: f.u64_at("num_turns"),
            result: f.text_at("result"),
            stop_reason: f.string_at("stop_reason"),
            model_usage,
        });
        return;
    }
    let errors: Vec<&str> = f.array_at("errors").map(|a| a.filter_map(|e| e.str()).collect()).unwrap_or_default();
    let error = f
        .str_at("result")
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .or_else(|| (!errors.is_empty()).then(|| errors.join("; ")))
        .or_else(|| subtype.map(str::to_owned))
        .unwrap_or_else(|| "error".to_owned());
    let kind = match (subtype, f.str_at("terminal_reason"), f.u64_at("api_error_status")) {
        (Some("error_max_turns"), _, _) => FailureKind::MaxTurns,
        (Some("error_max_budget_usd"), _, _) => FailureKind::UsageLimit,
        (_, Some(t), _) if t.starts_with("aborted") => FailureKind::Aborted,
        (_, _, Some(401 | 403)) => FailureKind::Auth,
        (_, _, Some(429)) => FailureKind::UsageLimit,
        _ => match failure_kind(&error) {
            FailureKind::Other if f.get("api_error_status").is_some_and(|s| !s.is_null()) => FailureKind::ApiError,
            k => k,
        },
    };
    m.push(Event::TurnFailed {
        env: Envelope::default(),
        error,
        kind: Some(kind),
        usage,
        usage_scope: None,
        // `total_cost_usd` is a running total over the turns of one process.
            cost_scope: cost_usd.map(|_| UsageScope::Session),
        cost_usd,
        duration_ms,
        model_usage,
    });
}

fn stream_event(f: Val<'_>, m: &mut Mapped) {
    let Some(ev) = f.get("event").filter(|e| e.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let Some(ety) = ev.str_at("type") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("stream_event", ety);
    match ety {
        "message_start" => {
            let msg = ev.get("message");
            match msg.and_then(|x| x.string_at("id")) {
                Some(message_id) => m.push_piece(ClaudePiece::StreamStart {
                    message_id,
                    usage: msg.and_then(|x| x.get("usage")).map(counters).unwrap_or_default(),
                    model: msg.and_then(|x| x.string_at("model")),
                }),
                None => m.heartbeat(),
            }
        }
        "content_block_delta" => {
            let delta = ev.get("delta");
            match delta.and_then(|d| d.str_at("type")) {
                Some("text_delta") => match delta.and_then(|d| d.text_at("text")) {
                    Some(text) if !text.is_empty() => m.push_piece(ClaudePiece::StreamText(Event::OutputDelta {
                        env: Envelope::default(),
                        text,
                        message_id: None,
                    })),
                    _ => m.heartbeat(),
                },
                Some("thinking_delta") => {
                    let text = delta.and_then(|d| d.text_at("thinking")).filter(|t| !t.is_empty());
                    m.push_piece(ClaudePiece::StreamText(Event::Reasoning { env: Envelope::default(), text }))
                }
                _ => m.heartbeat(),
            }
        }
        "message_delta" => match ev.get("usage").filter(|u| u.is_object()) {
            Some(u) => m.push_piece(ClaudePiece::StreamUsage { usage: counters(u) }),
            None => m.heartbeat(),
        },
        "content_block_start" | "content_block_stop" | "message_stop" | "ping" => m.heartbeat(),
        // A mid-stream API error (Messages streaming API `event: error`); the `result` with
        // `is_error` that follows makes the `turn_failed`.
        "error" => {
            let err = ev.get("error");
            let kind = err.and_then(|e| e.str_at("type")).unwrap_or("error");
            let message = match err.and_then(|e| e.str_at("message")) {
                Some(text) => format!("{kind}: {text}"),
                None => kind.to_owned(),
            };
            m.push(super::diagnostic(Level::Warning, "claude.stream.error", message, Vec::new()));
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// The first of `keys` present and not null (CLIs spell keys in camelCase or snake_case).
fn pick<'t>(v: Val<'t>, keys: &[&str]) -> Option<Val<'t>> {
    keys.iter().find_map(|k| v.get(k).filter(|x| !x.is_null()))
}

fn rate_limit(f: Val<'_>, m: &mut Mapped) {
    let Some(info) =
        ["rate_limit_info", "rateLimitInfo", "rate_limit"].iter().find_map(|k| f.get(k).filter(|v| v.is_object()))
    else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let window = pick(info, &["rateLimitType", "rate_limit_type"]).and_then(|v| v.str().map(str::to_owned));
    let windows = pick(info, &["unifiedWindows", "unified_windows"]);
    let own = window.as_deref().and_then(|w| windows.and_then(|ws| ws.get(w)));
    let used = pick(info, &["utilization"]).or_else(|| own.and_then(|o| o.get("utilization"))).and_then(|v| v.f64());
    let resets =
        pick(info, &["resetsAt", "resets_at"]).or_else(|| own.and_then(|o| pick(o, &["resetsAt", "resets_at"])));
    let main = window.clone().unwrap_or_else(|| "primary".to_owned());
    m.push(Event::RateLimit {
        env: Envelope::default(),
        window_minutes: super::window_minutes(&main),
        window: main.clone(),
        status: pick(info, &["status"]).and_then(|v| v.str().map(str::to_owned)),
        used_percent: used.and_then(super::percent),
        resets_at: resets.and_then(super::reset_time),
        overage_status: pick(info, &["overageStatus", "overage_status"]).and_then(|v| v.str().map(str::to_owned)),
        using_overage: pick(info, &["isUsingOverage", "is_using_overage"]).and_then(|v| v.bool()),
    });
    if let Some(entries) = windows.and_then(|w| w.entries()) {
        for (name, w) in entries {
            if name == main {
                continue;
            }
            m.push(Event::RateLimit {
                env: Envelope::default(),
                window_minutes: super::window_minutes(name),
                window: name.to_owned(),
                status: pick(w, &["status"]).and_then(|v| v.str().map(str::to_owned)),
                used_percent: w.f64_at("utilization").and_then(super::percent),
                resets_at: pick(w, &["resetsAt", "resets_at"]).and_then(super::reset_time),
                overage_status: None,
                using_overage: None,
            });
        }
    }
}

/// Claude's `usage` object (`input_tokens`, `cache_read_input_tokens`,
/// `cache_creation_input_tokens`, `output_tokens`).
pub(crate) fn counters(u: Val<'_>) -> Usage {
    Usage {
        input: u.u64_at("input_tokens"),
        cache_read: u.u64_at("cache_read_input_tokens"),
        cache_write: u.u64_at("cache_creation_input_tokens"),
        output: u.u64_at("output_tokens"),
        reasoning: None,
        context: None,
        cache_write_1h: u
            .path(&["cache_creation", "ephemeral_1h_input_tokens"])
            .and_then(|v| v.u64())
            .filter(|&n| n > 0),
        service_tier: u.str_at("service_tier").and_then(ServiceTier::from_name),
    }
}

/// Claude's `result.modelUsage` (`{model: {inputTokens, outputTokens, cacheReadInputTokens,
/// cacheCreationInputTokens, webSearchRequests, costUSD, contextWindow, maxOutputTokens}}`; older
/// CLIs wrote the snake_case `input_tokens`, …): `None` when no model has a figure.
pub(crate) fn model_usage(v: Val<'_>) -> Option<BTreeMap<String, ModelUsage>> {
    let u = |m: Val<'_>, camel: &str, snake: &str| m.u64_at(camel).or_else(|| m.u64_at(snake));
    let models: BTreeMap<String, ModelUsage> = v
        .entries()?
        .into_iter()
        .filter(|(_, m)| m.is_object())
        .map(|(name, m)| {
            let mu = ModelUsage {
                input: u(m, "inputTokens", "input_tokens"),
                cache_read: u(m, "cacheReadInputTokens", "cache_read_input_tokens"),
                cache_write: u(m, "cacheCreationInputTokens", "cache_creation_input_tokens"),
                output: u(m, "outputTokens", "output_tokens"),
                web_search_requests: u(m, "webSearchRequests", "web_search_requests"),
                cost_usd: m.f64_at("costUSD").or_else(|| m.f64_at("cost_usd")).filter(|c| c.is_finite() && *c >= 0.0),
                context_window: u(m, "contextWindow", "context_window"),
                max_output_tokens: u(m, "maxOutputTokens", "max_output_tokens"),
            };
            (name.to_owned(), mu)
        })
        .filter(|(_, mu)| *mu != ModelUsage::default())
        .collect();
    (!models.is_empty()).then_some(models)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(line: &str, f: fn(crate::read::frame::Val<'_>) -> crate::event::Usage) -> crate::event::Usage {
        crate::read::frame::Parser::default().with_frame(line.as_bytes(), |v| f(v.unwrap()))
    }

    #[test]
    fn claude_cache_figures_are_separate() {
        let u = counted(
            r#"{"input_tokens":2,"cache_read_input_tokens":18531,"cache_creation_input_tokens":20271,"output_tokens":789}"#,
            counters,
        );
        assert_eq!(crate::dialect::usage::with_context(u).context, Some(38804));
        assert_eq!(u.input, Some(2));
    }

    use crate::dialect::assert_kinds;

    #[test]
    fn claude_tool_names() {
        use ToolKind::*;
        assert_kinds(
            tool_kind,
            &[
                ("Bash", Shell),
                ("BashOutput", Shell),
                ("KillShell", Shell),
                ("Read", Read),
                ("LS", Read),
                ("Write", Write),
                ("MultiEdit", Edit),
                ("NotebookEdit", Edit),
                ("Glob", Search),
                ("ToolSearch", Search),
                ("WebFetch", Fetch),
                ("WebSearch", WebSearch),
                ("Agent", Task),
                ("Task", Task),
                ("TodoWrite", Plan),
                ("ExitPlanMode", Plan),
                ("AskUserQuestion", Ask),
                ("mcp__github__search", Mcp),
                // Amp's and the API's server tools.
                ("create_file", Write),
                ("edit_file", Edit),
                ("glob", Search),
                ("finder", Search),
                ("todo_write", Plan),
                ("web_search", WebSearch),
                ("web_fetch", Fetch),
                ("Frobnicate", Other),
            ],
        );
    }

    #[test]
    fn other_clis_names_are_not_claudes() {
        use ToolKind::Other;
        // Codex, Gemini, OpenCode, Cursor and Qwen names that the one shared table used to know.
        for name in ["shell", "exec_command", "apply_patch", "run_shell_command", "read_file", "bash", "read", "edit"] {
            assert_kinds(tool_kind, &[(name, Other)]);
        }
        for name in ["update_plan", "spawn_agent", "write_todos", "todowrite", "question", "request_user_input"] {
            assert_kinds(tool_kind, &[(name, Other)]);
        }
    }
}
