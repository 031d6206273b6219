//! GitHub Copilot CLI: `copilot -p … --output-format json` on stdout, and the saved session log
//! `~/.copilot/session-state/<sessionId>/events.jsonl`. One dialect: both write the CLI's
//! *session events* `{"type":"<ns>.<name>","data":{…},"id","timestamp","parentId"}`.
//!
//! The two forms differ only in which events they hold, and this adapter reads either:
//! - stdout has the ephemeral events too (`"ephemeral":true`: message and reasoning deltas,
//!   `assistant.usage`, `session.idle`, …), no `session.start`, and ends with a `result` line
//!   (`sessionId`, `exitCode`, `usage.sessionDurationMs`) that is the only place naming the
//!   session: it gives the `session_started` and ends the turn.
//! - the saved log has no ephemeral events and no `result`: it starts with `session.start` and
//!   usually ends with `session.shutdown` (per-model session totals). Its turn ends with the last
//!   main-thread `assistant.message` that asked for no tools (the final answer): the
//!   `turn_completed` is written when the next `user.message`, the `session.shutdown` or the end
//!   of input comes. `SAVED_LOG` is false, as the dialect is mostly read live: a saved log that
//!   stops mid-turn (a session still running) reads `complete: false`.
//!
//! Its quirks:
//! - Text: `assistant.message_delta` fragments, then the whole `assistant.message` repeating them
//!   (the only copy in a saved log): both go through [`Piece::TurnText`].
//! - The whole `assistant.message` (with its `toolRequests`) comes before the
//!   `tool.execution_start`s it asked for: the calls are written from the starts.
//! - `assistant.usage` (one per model call, stdout only): `inputTokens` includes
//!   `cacheReadTokens` (SPEC §4 row in the README). `outputTokens` on `assistant.message` is not
//!   used: the `assistant.usage` of the same call carries it.
//! - A shell's result ends with `<exited with exit code N>` (or `… completed with exit code N>`
//!   for detached shells) and `success: true` whatever N: a non-zero N makes `ok` false.
//! - A call's `duration_ms` is the time between its start and completion frames (the CLI's own
//!   clock on both).
//! - Events of a `task` sub-agent carry `data.parentToolCallId` (`parent_tool_id`).

use super::{Accepts, Adapter, Claim, Cx, Mapped, NO_ID, Outcome, Own, Piece, Verdict, diagnostic, failure_kind, one_line, plan_items, plan_status};
use crate::event::{
    Envelope, Event, FailureKind, Level, PlanItem, SubagentOperation, SubagentStatus, Text, ToolKind,
    UnknownReason, Usage,
};
use crate::read::frame::Val;
use std::collections::HashMap;

/// The `copilot` dialect.
pub(crate) struct Copilot;

/// The namespaces of Copilot's session events.
const PREFIXES: [&str; 10] = [
    "session.",
    "assistant.",
    "tool.",
    "user.",
    "user_input.",
    "subagent.",
    "permission.",
    "system.",
    "hook.",
    "model.",
];

impl Adapter for Copilot {
    type Piece = CopilotPiece;
    type State = Session;

    // A session event of a type not listed is known by its envelope (`id`, `parentId`, `data`).
    const ACCEPTS: Accepts = Accepts::types(&[&["result", "abort", "pending_messages.modified"]], Claim::Marked)
        .prefixes(&PREFIXES)
        .with_keys(&["parentId"]);

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let Some(ty) = ty else { return Claim::No };
        if ty == "result" {
            // Claude's and Cursor's results have `subtype` / `is_error`, Gemini's `status`.
            let ours = f.get("exitCode").is_some_and(|c| c.i64().is_some())
                && f.get("sessionId").is_some()
                && !["subtype", "is_error", "status", "stats"].iter().any(|k| f.get(k).is_some());
            return if ours { Claim::Marked } else { Claim::No };
        }
        // Codex's dotted types never carry a `data` object.
        if !f.get("data").is_some_and(|d| d.is_object()) {
            return Claim::No;
        }
        let envelope = || f.get("id").is_some() && f.get("parentId").is_some();
        if PREFIXES.iter().any(|p| ty.starts_with(p)) || ty == "abort" || ty == "pending_messages.modified" {
            Claim::Marked
        } else if envelope() {
            // A session event of a newer build: Copilot's envelope, an unknown type.
            Claim::Marked
        } else {
            Claim::No
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(s: &mut Session, piece: CopilotPiece, cx: &mut dyn Cx) {
        match piece {
            CopilotPiece::TurnStart => s.reasoning_seen = false,
            CopilotPiece::Reasoning { text, delta } => {
                if delta || !s.reasoning_seen {
                    s.reasoning_seen = true;
                    cx.event(Event::Reasoning { env: Envelope::default(), text: Some(text) });
                }
            }
            CopilotPiece::Message { text, message_id, reasoning, main, final_answer } => {
                if let Some(r) = reasoning
                    && !s.reasoning_seen
                {
                    s.reasoning_seen = true;
                    cx.event(Event::Reasoning { env: Envelope::default(), text: Some(r) });
                }
                if let Some(t) = text.clone() {
                    cx.turn_text(t, false, message_id);
                }
                if main {
                    s.pending = final_answer.then(|| text.unwrap_or_else(|| Text::from("")));
                }
            }
            CopilotPiece::UserMessage(ev) => {
                s.close(cx);
                cx.event(ev);
            }
            CopilotPiece::ToolStart(ev) => {
                if let Event::ToolStarted { tool_id, .. } = &ev
                    && let Some(ms) = now_ms(cx)
                {
                    s.started.insert(tool_id.clone(), ms);
                }
                cx.event(ev);
            }
            CopilotPiece::ToolDone(mut ev) => {
                if let Event::ToolCompleted { tool_id, duration_ms, .. } = &mut ev
                    && let (Some(start), Some(end)) = (s.started.remove(tool_id.as_str()), now_ms(cx))
                {
                    *duration_ms = u64::try_from(end - start).ok();
                }
                cx.event(ev);
            }
            CopilotPiece::SessionError { message, kind } => s.error = Some((message, kind)),
            CopilotPiece::Abort => s.aborted = true,
            CopilotPiece::Shutdown(events) => {
                for ev in events {
                    cx.event(ev);
                }
                s.close(cx);
            }
            CopilotPiece::Result { exit_code, duration_ms } => {
                let pending = s.pending.take();
                let ev = if exit_code == 0 {
                    Event::TurnCompleted {
                        env: Envelope::default(),
                        usage: None,
                        usage_scope: None,
                        cost_scope: None,
                        cost_usd: None,
                        duration_ms,
                        num_turns: None,
                        result: pending.filter(|t| !t.is_empty()),
                        stop_reason: None,
                        model_usage: None,
                    }
                } else {
                    let (error, kind) = match s.error.take() {
                        Some((message, kind)) => (message, if s.aborted { FailureKind::Aborted } else { kind }),
                        None => (
                            format!("copilot exited with code {exit_code}"),
                            if s.aborted || exit_code == 130 { FailureKind::Aborted } else { FailureKind::Other },
                        ),
                    };
                    Event::TurnFailed {
                        env: Envelope::default(),
                        error,
                        kind: Some(kind),
                        usage: None,
                        usage_scope: None,
                        cost_scope: None,
                        cost_usd: None,
                        duration_ms,
                        model_usage: None,
                    }
                };
                s.error = None;
                s.aborted = false;
                cx.event(ev);
            }
        }
    }

    fn turn_ended(s: &mut Session) {
        // An interrupt (or any other end) leaves no final answer to close.
        s.pending = None;
    }

    fn finish(s: &mut Session, cx: &mut dyn Cx) {
        s.close(cx);
    }
}

/// The current line's time in epoch milliseconds.
fn now_ms(cx: &dyn Cx) -> Option<i64> {
    cx.at().and_then(crate::read::time::parse_rfc3339_ms)
}

/// Copilot's own pieces, resolved against [`Session`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CopilotPiece {
    /// `assistant.turn_start`: one model call begins.
    TurnStart,
    /// Reasoning text: a delta (always written) or a whole `assistant.reasoning` (written when
    /// the model call streamed none).
    Reasoning {
        /// The text.
        text: Text,
        /// A streamed delta.
        delta: bool,
    },
    /// A whole `assistant.message`.
    Message {
        /// Its content, when not empty.
        text: Option<Text>,
        /// Its id.
        message_id: Option<String>,
        /// Its `reasoningText`, when not empty.
        reasoning: Option<Text>,
        /// Of the main thread (not a sub-agent's).
        main: bool,
        /// It asked for no tools: the turn's answer so far.
        final_answer: bool,
    },
    /// A `user.message`: closes the turn a final answer left pending.
    UserMessage(Event),
    /// A `tool.execution_start`'s `tool_started` (its time is kept for the duration).
    ToolStart(Event),
    /// A `tool.execution_complete`'s `tool_completed` (its duration is filled in).
    ToolDone(Event),
    /// A `session.error`: the turn's error, should the run fail.
    SessionError {
        /// The message.
        message: String,
        /// Its class.
        kind: FailureKind,
    },
    /// An `abort`: the run's failure is `aborted`.
    Abort,
    /// `session.shutdown`: its usage events, then the pending turn is closed.
    Shutdown(Vec<Event>),
    /// The stdout `result` line.
    Result {
        /// The process's exit code.
        exit_code: i64,
        /// `usage.sessionDurationMs`.
        duration_ms: Option<u64>,
    },
}

impl From<CopilotPiece> for Piece {
    fn from(p: CopilotPiece) -> Piece {
        Piece::Own(Own::Copilot(p))
    }
}

/// What Copilot's fold remembers across a stream.
#[derive(Debug, Default)]
pub(crate) struct Session {
    /// The last main-thread message asked for no tools: the turn's final answer, not yet closed.
    pending: Option<Text>,
    /// Reasoning was written for the current model call.
    reasoning_seen: bool,
    /// Start times of open calls (epoch ms).
    started: HashMap<String, i64>,
    /// The last `session.error`.
    error: Option<(String, FailureKind)>,
    /// An `abort` came.
    aborted: bool,
}

impl Session {
    /// Writes the `turn_completed` of a pending final answer.
    fn close(&mut self, cx: &mut dyn Cx) {
        let Some(text) = self.pending.take() else { return };
        cx.event(Event::TurnCompleted {
            env: Envelope::default(),
            usage: None,
            usage_scope: None,
            cost_scope: None,
            cost_usd: None,
            duration_ms: None,
            num_turns: None,
            result: (!text.is_empty()).then_some(text),
            stop_reason: None,
            model_usage: None,
        });
    }
}

/// Copilot session events that carry no text, call or usage ([`map`]): heartbeats. After the
/// older ones, the bookkeeping of the 1.0.8x–1.0.9x schema (the SDK's generated
/// `session-events.ts`): schedules, autopilot objectives, limits, workspace files, a hand-off to
/// a remote session, a cleared context, the agent picked or dropped, the model the auto router
/// chose, canvases, binary assets, MCP and extension housekeeping, and the streaming previews of
/// tool calls whose `tool.execution_*` events follow.
const HEARTBEATS: &[&str] = &[
    "session.resume",
    "system.message",
    "system.notification",
    "session.mcp_server_status_changed",
    "session.mcp_servers_loaded",
    "session.skills_loaded",
    "session.info",
    "session.usage_info",
    "session.usage_checkpoint",
    "session.context_changed",
    "session.title_changed",
    "session.mode_changed",
    "session.permissions_changed",
    "session.idle",
    "session.todos_changed",
    "session.plan_changed",
    "session.task_complete",
    "session.compaction_start",
    "pending_messages.modified",
    "skill.invoked",
    "hook.start",
    "assistant.intent",
    "assistant.streaming_delta",
    "assistant.message_start",
    "assistant.turn_end",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "permission.requested",
    "session.remote_steerable_changed",
    "session.schedule_created",
    "session.schedule_cancelled",
    "session.schedule_rearmed",
    "session.autopilot_objective_changed",
    "session.session_limits_changed",
    "session.workspace_file_changed",
    "session.handoff",
    "session.context_cleared",
    "session.snapshot_rewind",
    "session.auto_mode_resolved",
    "session.binary_asset",
    "session.canvas.opened",
    "session.canvas.closed",
    "session.canvas.recorded",
    "session.canvas.removed",
    "session.canvas.registry_changed",
    "session.canvas.unavailable",
    "session.custom_agents_updated",
    "session.extensions_loaded",
    "session.extensions.attachments_pushed",
    "session.managed_settings_enforced",
    "session.managed_settings_resolved",
    "session.background_tasks_changed",
    "subagent.selected",
    "subagent.deselected",
    "tool_search.activated",
    "assistant.idle",
    "assistant.tool_call_delta",
    "assistant.server_tool_progress",
    "hook.progress",
    "capabilities.changed",
    "commands.changed",
    "mcp.tools.list_changed",
    "mcp.prompts.list_changed",
    "mcp.resources.list_changed",
    "mcp.oauth_required",
    "mcp.oauth_completed",
    "mcp.headers_refresh_required",
    "mcp.headers_refresh_completed",
];

/// Maps one Copilot frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.at = f.string_at("timestamp");
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    if ty == "result" {
        return result(f, m);
    }
    let Some(d) = f.get("data").filter(|d| d.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.parent_tool_id = d.string_at("parentToolCallId");
    match ty {
        "session.start" => {
            let Some(id) = d.string_at("sessionId") else {
                return m.unknown(UnknownReason::MalformedFrame, None);
            };
            m.session_id = Some(id);
            m.push(Event::SessionStarted {
                env: Envelope::default(),
                model: d.string_at("selectedModel"),
                cwd: d.path(&["context", "cwd"]).and_then(|c| c.str()).map(str::to_owned),
                cli_version: d.string_at("copilotVersion"),
                permission_mode: None,
                tools: None,
                parent_session_id: None,
            });
        }
        "session.model_change" => model(d.str_at("newModel"), m),
        "session.tools_updated" => model(d.str_at("model"), m),
        "user.message" => match d.text_at("content") {
            Some(text) => m.push_piece(CopilotPiece::UserMessage(Event::UserMessage { env: Envelope::default(), text })),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "assistant.turn_start" => {
            m.push_piece(CopilotPiece::TurnStart);
            m.heartbeat();
        }
        "assistant.message_delta" => match d.text_at("deltaContent") {
            Some(text) if !text.is_empty() => {
                m.push_piece(Piece::TurnText { text, fragment: true, message_id: d.string_at("messageId") })
            }
            Some(_) => m.heartbeat(),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "assistant.reasoning_delta" => match d.text_at("deltaContent").filter(|t| !t.is_empty()) {
            Some(text) => m.push_piece(CopilotPiece::Reasoning { text, delta: true }),
            None => m.heartbeat(),
        },
        "assistant.reasoning" => {
            if let Some(text) = d.text_at("content").filter(|t| !t.is_empty()) {
                m.push_piece(CopilotPiece::Reasoning { text, delta: false });
            }
        }
        "assistant.message" => {
            let asks_tools = d.array_at("toolRequests").is_some_and(|mut a| a.next().is_some());
            let main = m.parent_tool_id.is_none() && f.get("agentId").is_none();
            m.push_piece(CopilotPiece::Message {
                text: d.text_at("content").filter(|t| !t.is_empty()),
                message_id: d.string_at("messageId"),
                reasoning: d.text_at("reasoningText").filter(|t| !t.is_empty()),
                main,
                final_answer: !asks_tools,
            });
        }
        "assistant.usage" => usage_event(d, m),
        "tool.execution_start" => tool_start(d, m),
        "tool.execution_complete" => tool_complete(d, m),
        "subagent.started" | "subagent.completed" | "subagent.failed" => subagent(ty, f, d, m),
        "user_input.requested" => m.push(Event::NeedsInput {
            env: Envelope::default(),
            prompt: d.string_at("question"),
            // Copilot's `choices` are plain strings: written as given.
            questions: d.get("choices").filter(|c| c.array().is_some()).map(|c| c.to_json_without_nulls()),
        }),
        "permission.completed" => {
            let kind = d.path(&["result", "kind"]).and_then(|k| k.str()).unwrap_or("");
            if kind.starts_with("denied") {
                let mut ev = diagnostic(Level::Warning, "copilot.permission-denied", kind.to_owned(), Vec::new());
                if let (Event::Diagnostic { dedupe_key, .. }, Some(t)) = (&mut ev, d.str_at("toolCallId")) {
                    *dedupe_key = format!("copilot.permission-denied|{t}");
                }
                m.push(ev);
            } else {
                m.heartbeat();
            }
        }
        "session.warning" => {
            let code = format!("copilot.{}", d.str_at("warningType").unwrap_or("warning"));
            m.push(diagnostic(Level::Warning, &code, d.string_at("message").unwrap_or_default(), Vec::new()));
        }
        "session.error" => {
            let error_type = d.str_at("errorType").unwrap_or("error");
            let message = d.string_at("message").filter(|s| !s.is_empty()).unwrap_or_else(|| error_type.to_owned());
            let kind = error_kind(error_type, d.str_at("errorCode"), d.u64_at("statusCode"), &message);
            m.push(diagnostic(Level::Error, &format!("copilot.{error_type}"), message.clone(), Vec::new()));
            m.push_piece(CopilotPiece::SessionError { message, kind });
        }
        "model.call_failure" => {
            let message = d
                .string_at("errorMessage")
                .or_else(|| d.u64_at("statusCode").map(|c| format!("model call failed with status {c}")))
                .unwrap_or_else(|| "model call failed".to_owned());
            m.push(diagnostic(Level::Warning, "copilot.model-call-failure", message, Vec::new()));
        }
        "hook.end" => {
            if d.bool_at("success") == Some(false) {
                let message = d
                    .path(&["error", "message"])
                    .and_then(|e| e.str())
                    .or_else(|| d.str_at("hookType"))
                    .unwrap_or("hook failed")
                    .to_owned();
                m.push(diagnostic(Level::Warning, "copilot.hook-failed", message, Vec::new()));
            } else {
                m.heartbeat();
            }
        }
        "session.compaction_complete" => {
            if d.bool_at("success") == Some(false) {
                let message = d.string_at("error").unwrap_or_else(|| "compaction failed".to_owned());
                m.push(diagnostic(Level::Warning, "copilot.compaction-failed", message, Vec::new()));
            } else {
                let trigger = if d.str_at("trigger") == Some("manual") { "manual" } else { "auto" };
                m.push(Event::Compacted {
                    env: Envelope::default(),
                    trigger: Some(trigger.to_owned()),
                    pre_tokens: d.u64_at("preCompactionTokens"),
                    post_tokens: d.u64_at("postCompactionTokens"),
                });
            }
        }
        "session.truncation" => m.push(Event::Compacted {
            env: Envelope::default(),
            trigger: Some("auto".to_owned()),
            pre_tokens: d.u64_at("preTruncationTokensInMessages"),
            post_tokens: d.u64_at("postTruncationTokensInMessages"),
        }),
        "abort" => {
            m.push_piece(CopilotPiece::Abort);
            let reason = d.string_at("reason").unwrap_or_else(|| "aborted".to_owned());
            m.push(Event::Interrupt { env: Envelope::default(), reason });
        }
        "session.shutdown" => shutdown(d, m),
        t if HEARTBEATS.contains(&t) => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// The model of the requests that follow (for `usage` events that name none).
fn model(name: Option<&str>, m: &mut Mapped) {
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        m.pieces.push(Piece::Model(n.to_owned()));
    }
    m.heartbeat();
}

fn result(f: Val<'_>, m: &mut Mapped) {
    let Some(exit_code) = f.get("exitCode").and_then(|c| c.i64()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    // stdout never has `session.start`: the result is the first line to name the session.
    if let Some(id) = f.string_at("sessionId").filter(|s| !s.is_empty()) {
        m.session_id = Some(id);
        m.push(super::session_started());
    }
    let duration_ms = f.path(&["usage", "sessionDurationMs"]).and_then(|d| d.u64());
    m.push_piece(CopilotPiece::Result { exit_code, duration_ms });
}

/// Copilot's counters (SPEC §4, README row): `inputTokens` includes `cacheReadTokens`.
pub fn counters(u: Val<'_>) -> Usage {
    let input = u.u64_at("inputTokens");
    let cache_read = u.u64_at("cacheReadTokens");
    Usage {
        input: match (input, cache_read) {
            (Some(i), Some(c)) => Some(i.saturating_sub(c)),
            (i, _) => i,
        },
        cache_read,
        cache_write: u.u64_at("cacheWriteTokens"),
        output: u.u64_at("outputTokens"),
        reasoning: u.u64_at("reasoningTokens"),
        context: None,
        ..Usage::default()
    }
}

fn usage_event(d: Val<'_>, m: &mut Mapped) {
    match super::usage::non_empty(counters(d)) {
        Some(u) => m.push(Event::Usage {
            env: Envelope::default(),
            usage: super::usage::with_context(u),
            model: d.string_at("model"),
            message_id: None,
            context_window: None,
        }),
        None => m.heartbeat(),
    }
}

/// `session.shutdown`: one `usage` per model of `modelMetrics` (session totals: a saved log's
/// only token figures), with a `context` only where the model made one request; an error
/// shutdown is a diagnostic.
fn shutdown(d: Val<'_>, m: &mut Mapped) {
    let mut events = Vec::new();
    for (model, metrics) in d.get("modelMetrics").and_then(|mm| mm.entries()).unwrap_or_default() {
        let Some(u) = metrics.get("usage").filter(|u| u.is_object()).map(counters).and_then(super::usage::non_empty)
        else {
            continue;
        };
        let one = metrics.path(&["requests", "count"]).and_then(|c| c.u64()) == Some(1);
        events.push(Event::Usage {
            env: Envelope::default(),
            usage: if one { super::usage::with_context(u) } else { u },
            model: Some(model.to_owned()),
            message_id: None,
            context_window: None,
        });
    }
    if d.str_at("shutdownType") == Some("error") {
        let message = d.string_at("errorReason").unwrap_or_else(|| "session shut down on an error".to_owned());
        events.push(diagnostic(Level::Error, "copilot.shutdown-error", message, Vec::new()));
    }
    if events.is_empty() {
        m.heartbeat();
    }
    m.push_piece(CopilotPiece::Shutdown(events));
}

fn tool_start(d: Val<'_>, m: &mut Mapped) {
    let Some(name) = d.str_at("toolName") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let kind = if d.get("mcpServerName").is_some_and(|s| s.is_str()) { ToolKind::Mcp } else { tool_kind(name) };
    let input = d.get("arguments").filter(|a| !a.is_null());
    let summary = match kind {
        ToolKind::Mcp => d.str_at("mcpToolName").map(|t| super::mcp_summary(d.str_at("mcpServerName"), t)),
        _ => summary(name, input),
    };
    let tool_id = d.string_at("toolCallId").unwrap_or_else(|| NO_ID.to_owned());
    m.push_piece(CopilotPiece::ToolStart(Event::ToolStarted {
        env: Envelope::default(),
        tool_id,
        name: name.to_owned(),
        kind,
        input: input.map(|v| v.to_json()),
        summary,
        synthetic: None,
    }));
    if kind == ToolKind::Plan
        && let Some(items) = input.and_then(|i| i.get("todos")).and_then(todos)
    {
        m.push(Event::PlanUpdated { env: Envelope::default(), items });
    }
}

/// `update_todo`'s `todos`: a markdown checklist (`- [x]` done, `- [ ]` open, `- [~]` / `- [-]`
/// in progress) or a list of items.
fn todos(v: Val<'_>) -> Option<Vec<PlanItem>> {
    let Some(s) = v.str() else { return plan_items(v) };
    let items: Vec<PlanItem> = s
        .lines()
        .filter_map(|l| {
            let l = l.trim_start().strip_prefix("- [").or_else(|| l.trim_start().strip_prefix("* ["))?;
            let (mark, text) = (l.get(..1)?, l.get(1..)?.strip_prefix(']')?.trim());
            (!text.is_empty()).then(|| PlanItem { text: text.to_owned(), status: plan_status(mark) })
        })
        .collect();
    (!items.is_empty()).then_some(items)
}

/// The exit code a shell's output ends with (`<exited with exit code N>`, `… completed with
/// exit code N>`).
fn exit_code(output: &str) -> Option<i64> {
    let tail = output.trim_end().strip_suffix('>')?;
    let at = tail.rfind("exit code ")?;
    tail[at + "exit code ".len()..].trim().parse().ok()
}

fn tool_complete(d: Val<'_>, m: &mut Mapped) {
    let tool_id = d.string_at("toolCallId").unwrap_or_else(|| NO_ID.to_owned());
    let result = d.get("result").filter(|r| r.is_object());
    let output = result.and_then(|r| {
        r.text_at("content").or_else(|| r.get("contents").and_then(super::content_text))
    });
    // `success` is the CLI's word (absent: not a success); a failed call's message is
    // `error.message`, else its whole output.
    let done = Outcome {
        verdict: Some(Verdict::ok_if(d.bool_at("success").unwrap_or(false))),
        exit_code: output.as_ref().and_then(|o| exit_code(&o.as_str())),
        error: d.path(&["error", "message"]).and_then(|e| e.str()).map(str::to_owned),
        output,
        output_is_error: true,
        ..Outcome::new(tool_id)
    };
    m.push_piece(CopilotPiece::ToolDone(done.event()));
}

fn subagent(ty: &str, f: Val<'_>, d: Val<'_>, m: &mut Mapped) {
    let Some(call) = d.string_at("toolCallId") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let (operation, status) = match ty {
        "subagent.started" => (SubagentOperation::Spawn, SubagentStatus::Running),
        "subagent.completed" => (SubagentOperation::Update, SubagentStatus::Completed),
        _ if d.bool_at("cancelled") == Some(true) => (SubagentOperation::Update, SubagentStatus::Stopped),
        _ => (SubagentOperation::Update, SubagentStatus::Failed),
    };
    m.push(Event::Subagent {
        env: Envelope::default(),
        child_id: f.string_at("agentId").unwrap_or_else(|| call.clone()),
        operation,
        status,
        raw_status: None,
        operation_id: Some(call),
        description: d.string_at("agentDescription"),
        message: d.string_at("error"),
        background: None,
    });
}

/// The class of a `session.error`.
fn error_kind(error_type: &str, code: Option<&str>, status: Option<u64>, message: &str) -> FailureKind {
    match (error_type, code, status) {
        ("authorization" | "authentication", _, _) | (_, _, Some(401 | 403)) => FailureKind::Auth,
        ("quota", _, _) | (_, Some("quota_exceeded"), _) | (_, _, Some(402)) => FailureKind::UsageLimit,
        (_, _, Some(400..=599)) => FailureKind::ApiError,
        _ => match failure_kind(message) {
            FailureKind::Other if message.contains("not signed in") => FailureKind::Auth,
            k => k,
        },
    }
}

/// Copilot CLI's tool names onto the contract's kinds (an MCP call is known by `mcpServerName`).
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "bash" | "powershell" | "read_bash" | "write_bash" | "stop_bash" | "list_bash" | "read_powershell"
        | "write_powershell" | "stop_powershell" => ToolKind::Shell,
        "view" => ToolKind::Read,
        "create" => ToolKind::Write,
        "edit" | "str_replace" | "str_replace_editor" | "apply_patch" => ToolKind::Edit,
        "glob" | "rg" | "grep" => ToolKind::Search,
        "web_fetch" | "fetch_copilot_cli_documentation" => ToolKind::Fetch,
        "web_search" => ToolKind::WebSearch,
        "task" | "read_agent" | "write_agent" | "list_agents" => ToolKind::Task,
        "update_todo" => ToolKind::Plan,
        "ask_user" => ToolKind::Ask,
        n if n.starts_with("github-mcp-server-") => ToolKind::Mcp,
        _ => ToolKind::Other,
    }
}

/// The one-line summary of a call; `apply_patch`'s input is the patch text itself.
fn summary(name: &str, input: Option<Val<'_>>) -> Option<String> {
    let input = input?;
    if let Some(patch) = input.str() {
        return patch
            .lines()
            .find_map(|l| ["*** Update File:", "*** Add File:", "*** Delete File:"].iter().find_map(|p| l.strip_prefix(p)))
            .and_then(one_line);
    }
    let keys: &[&str] = match name {
        "bash" | "powershell" => &["command"],
        "glob" | "rg" | "grep" => &["pattern"],
        "web_fetch" => &["url"],
        "task" => &["description"],
        "report_intent" => &["intent"],
        _ => &["path", "command", "pattern", "url", "description", "query"],
    };
    keys.iter().find_map(|k| input.str_at(k)).and_then(one_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::PlanStatus;

    #[test]
    fn exit_codes_from_shell_output() {
        assert_eq!(exit_code("built\n<exited with exit code 0>"), Some(0));
        assert_eq!(exit_code("x\n<exited with exit code 2>\n"), Some(2));
        assert_eq!(exit_code("<shellId: 0 completed with exit code 7>"), Some(7));
        assert_eq!(exit_code("no code here"), None);
    }

    #[test]
    fn checklists_are_plans() {
        let items = crate::read::frame::Parser::default()
            .with_frame(br#"{"t":"- [x] a\n- [ ] b\n- [~] c\nnot an item"}"#, |v| todos(v.unwrap().get("t").unwrap()))
            .unwrap();
        let st: Vec<PlanStatus> = items.iter().map(|i| i.status).collect();
        assert_eq!(st, [PlanStatus::Completed, PlanStatus::Pending, PlanStatus::InProgress]);
        assert_eq!(items[1].text, "b");
    }
}
