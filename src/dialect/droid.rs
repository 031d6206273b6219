//! Factory `droid exec --output-format stream-json`: one flat `{type, …, session_id, timestamp}`
//! object per line.
//!
//! droid's frames borrow other CLIs' type names with shapes of their own, so this module reads
//! them and claims them from those shapes: `system`/`init` (with `tools`, like Claude's, and
//! `reasoning_effort`), `message` (`role`, a string `text`), `reasoning` (top-level `id` and
//! `text`), `tool_call` (`toolName`, `parameters`, no `subtype`), `tool_result` (`isError`,
//! `value`), `completion` (`finalText`, `usage`) and `error` (`source`). Its quirks:
//! - Assistant text comes as whole `message` frames; `completion.finalText` repeats the last
//!   one. The final text is written only when no assistant message came in the turn.
//! - droid 0.232 writes each `reasoning` frame twice (same `id`, same text): the repeat is a
//!   heartbeat.
//! - `TodoWrite`'s `todos` is one string of `N. [status] text` lines (or a list).
//! - `completion.usage` is the run's aggregate with Anthropic-style names (`thinking_tokens` is
//!   taken as the reasoning part of `output`); there is no per-request usage.
//! - An `error` frame from `source: "agent_loop"` is the run's end: droid writes no
//!   `completion` after it and exits 1, so it is the `turn_failed`. Errors of other sources (or
//!   none) are `diagnostic`s (`droid.<source>`, `droid.error`).
//! - `timestamp` is epoch milliseconds.
//! - A `system`/`init` without `reasoning_effort` cannot be told from a Claude init without
//!   Claude's marks: it ties, and the stream's dialect (Claude on a fresh stream) keeps it.

use super::{Accepts, Adapter, Claim, Cx, Mapped, Outcome, Own, Piece, Verdict, content_text, diagnostic, failure_kind, plan_status, summary, unlisted_kind};
use crate::event::{Envelope, Event, FailureKind, Level, PlanItem, PlanStatus, Text, ToolKind, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `droid` dialect.
pub(crate) struct Droid;

impl Adapter for Droid {
    type Piece = DroidPiece;
    type State = Turn;

    const ACCEPTS: Accepts = Accepts::types(
        &[&["system", "message", "reasoning", "tool_call", "tool_result", "completion", "error"]],
        Claim::Envelope,
    );

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let has = |k: &str| f.get(k).is_some();
        let text_str = || f.get("text").is_some_and(|t| t.is_str());
        match ty {
            Some("system") if f.str_at("subtype") == Some("init") && !has("uuid") => {
                if has("reasoning_effort") {
                    // droid's alone: stronger than Claude's `tools` mark.
                    Claim::Envelope
                } else if has("tools") && !CLAUDE_INIT.iter().any(|k| has(k)) {
                    // Ties with Claude's `tools` mark: the stream's dialect decides.
                    Claim::Overrides
                } else {
                    Claim::No
                }
            }
            // Gemini's `message` has `content`; OpenCode's `reasoning` a `part`; Cursor's
            // `tool_call` a `subtype`; Gemini's `tool_result` a `tool_id` / `status`.
            Some("message") if text_str() && has("role") && !has("content") => Claim::Overrides,
            Some("reasoning") if text_str() && has("id") && !has("part") && !has("sessionID") => Claim::Overrides,
            // (Grok's has a `toolCallId`.)
            Some("tool_call") if has("toolName") && !has("subtype") && !has("toolCallId") => Claim::Overrides,
            Some("tool_result") if has("isError") && !has("tool_id") && !has("status") => Claim::Overrides,
            Some("completion") if has("finalText") || has("numTurns") => Claim::Marked,
            Some("error") if f.get("source").is_some_and(|s| s.is_str()) && !has("severity") => Claim::Marked,
            // A bare error fits Codex, Gemini and droid alike: the stream's dialect keeps it.
            Some("error") if !has("severity") && !has("sessionID") && !f.get("error").is_some_and(|e| e.is_object()) => {
                Claim::Fits
            }
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(turn: &mut Turn, piece: DroidPiece, cx: &mut dyn Cx) {
        match piece {
            DroidPiece::Reasoning { id, text } => {
                let key = (id, text.as_str().into_owned());
                if turn.reasoning.as_ref() == Some(&key) {
                    return;
                }
                turn.reasoning = Some(key);
                cx.event(Event::Reasoning { env: Envelope::default(), text: Some(text) });
            }
            DroidPiece::Assistant { text, message_id } => {
                turn.said = true;
                cx.event(Event::OutputDelta { env: Envelope::default(), text, message_id });
            }
            DroidPiece::Completion { final_text, done } => {
                if let Some(text) = final_text.filter(|t| !t.is_empty() && !turn.said) {
                    cx.event(Event::OutputDelta { env: Envelope::default(), text, message_id: None });
                }
                *turn = Turn::default();
                cx.event(done);
            }
        }
    }

    fn turn_ended(turn: &mut Turn) {
        *turn = Turn::default();
    }
}

/// Keys only Claude's `system`/`init` carries.
const CLAUDE_INIT: &[&str] = &[
    "permissionMode",
    "claude_code_version",
    "apiKeySource",
    "mcp_servers",
    "slash_commands",
    "output_style",
    "agents",
    "skills",
    "plugins",
];

/// droid's own pieces.
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DroidPiece {
    /// A `reasoning` frame (a repeat of the last one is nothing new).
    Reasoning {
        /// Its `id`.
        id: Option<String>,
        /// Its text.
        text: Text,
    },
    /// A whole assistant message.
    Assistant {
        /// The text.
        text: Text,
        /// `id`.
        message_id: Option<String>,
    },
    /// `completion`: the final text (written when no message came) and the `turn_completed`.
    Completion {
        /// `finalText`.
        final_text: Option<Text>,
        /// The `turn_completed`.
        done: Event,
    },
}

impl From<DroidPiece> for Piece {
    fn from(p: DroidPiece) -> Piece {
        Piece::Own(Own::Droid(p))
    }
}

/// What the current turn has said.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// An assistant message was written.
    said: bool,
    /// The last reasoning frame's id and text.
    reasoning: Option<(Option<String>, String)>,
}

/// Maps one droid frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.session_id = f.string_at("session_id");
    m.at = f.get("timestamp").and_then(|t| t.u64().map(|n| n.to_string()).or_else(|| t.str().map(str::to_owned)));
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    match ty {
        "system" => match f.str_at("subtype") {
            Some("init") => init(f, m),
            Some(sub) => {
                m.set_frame("system", sub);
                m.unknown(UnknownReason::UnrecognizedFrame, None)
            }
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "message" => match (f.str_at("role"), f.text_at("text")) {
            (Some("user"), Some(text)) => m.push(Event::UserMessage { env: Envelope::default(), text }),
            (Some("assistant"), Some(text)) if text.is_empty() => m.heartbeat(),
            (Some("assistant"), Some(text)) => {
                m.push_piece(DroidPiece::Assistant { text, message_id: f.string_at("id") })
            }
            (Some(role), Some(_)) => m.unknown(UnknownReason::UnrecognizedFrame, Some(format!("message/{role}"))),
            _ => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "reasoning" => match f.text_at("text") {
            Some(text) if !text.is_empty() => m.push_piece(DroidPiece::Reasoning { id: f.string_at("id"), text }),
            Some(_) => m.heartbeat(),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "tool_call" => tool_call(f, m),
        "tool_result" => tool_result(f, m),
        "completion" => completion(f, m),
        "error" => error(f, m),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn init(f: Val<'_>, m: &mut Mapped) {
    if m.session_id.is_none() {
        return m.unknown(UnknownReason::MalformedFrame, None);
    }
    m.set_frame("system", "init");
    let tools = f.array_at("tools").map(|ts| ts.filter_map(|t| t.str().map(str::to_owned)).collect());
    m.push(Event::SessionStarted {
        env: Envelope::default(),
        model: f.string_at("model"),
        cwd: f.string_at("cwd"),
        cli_version: None,
        permission_mode: None,
        tools,
        parent_session_id: None,
    });
}

/// droid's tool names onto kinds (SPEC §3); MCP tools are `<server>___<tool>` (or
/// `mcp__<server>__<tool>`).
fn tool_kind(name: &str) -> ToolKind {
    match name {
        "Execute" => ToolKind::Shell,
        "Read" | "LS" => ToolKind::Read,
        "Create" => ToolKind::Write,
        "Edit" | "MultiEdit" | "ApplyPatch" => ToolKind::Edit,
        "Grep" | "Glob" => ToolKind::Search,
        "FetchUrl" => ToolKind::Fetch,
        "WebSearch" => ToolKind::WebSearch,
        "Task" => ToolKind::Task,
        "TodoWrite" => ToolKind::Plan,
        "AskUser" => ToolKind::Ask,
        n if n.contains("___") => ToolKind::Mcp,
        "ExitSpecMode" | "Skill" | "GenerateDroid" | "ProposeMission" => ToolKind::Other,
        n => unlisted_kind(n),
    }
}

fn tool_call(f: Val<'_>, m: &mut Mapped) {
    let (Some(id), Some(name)) = (f.string_at("id"), f.str_at("toolName")) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let kind = tool_kind(name);
    let input = f.get("parameters").filter(|p| !p.is_null());
    m.tool_started(id, name, kind, input.map(|v| v.to_json()), summary(kind, input));
    let todos = input.and_then(|i| i.get("todos"));
    match (kind, todos.and_then(|t| t.str())) {
        (ToolKind::Plan, Some(list)) => {
            m.push(Event::PlanUpdated { env: Envelope::default(), items: plan_lines(list) });
        }
        _ => {
            if let Some(extra) = super::call_extra(kind, input) {
                m.push(extra);
            }
        }
    }
}

/// Plan items from droid's `N. [status] text` lines.
fn plan_lines(list: &str) -> Vec<PlanItem> {
    list.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.is_empty() {
                return None;
            }
            // `1. ` (the number is optional).
            let rest = match l.split_once(". ") {
                Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
                _ => l,
            };
            let (status, text) = match rest.strip_prefix('[').and_then(|r| r.split_once(']')) {
                Some((s, text)) => (Some(s.trim()), text.trim()),
                None => (None, rest),
            };
            Some(PlanItem { text: text.to_owned(), status: status.map_or(PlanStatus::Pending, plan_status) })
        })
        .collect()
}

fn tool_result(f: Val<'_>, m: &mut Mapped) {
    let Some(id) = f.string_at("id") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let value = f.get("value").filter(|v| !v.is_null());
    let text = value.and_then(|v| if v.is_str() { v.text() } else { content_text(v).or_else(|| Some(Text::from(v.to_json().get()))) });
    // A failed call's text is its message.
    let done = Outcome {
        name: f.string_at("toolName").or_else(|| f.string_at("toolId")),
        verdict: Verdict::failed_if(f.bool_at("isError") == Some(true)),
        output: text,
        output_is_error: true,
        ..Outcome::new(id)
    };
    m.push(done.event());
}

fn completion(f: Val<'_>, m: &mut Mapped) {
    let u = f.get("usage").filter(|u| u.is_object());
    let usage = u
        .map(|u| Usage {
            input: u.u64_at("input_tokens"),
            cache_read: u.u64_at("cache_read_input_tokens"),
            cache_write: u.u64_at("cache_creation_input_tokens"),
            output: u.u64_at("output_tokens"),
            reasoning: u.u64_at("thinking_tokens"),
            context: None,
            ..Usage::default()
        })
        .filter(|u| !u.is_empty());
    let final_text = f.text_at("finalText");
    let done = Event::TurnCompleted {
        env: Envelope::default(),
        usage,
        usage_scope: None,
        cost_scope: None,
        cost_usd: None,
        duration_ms: f.u64_at("durationMs"),
        num_turns: f.u64_at("numTurns"),
        result: final_text.clone().filter(|t| !t.is_empty()),
        stop_reason: None,
        model_usage: None,
    };
    m.push_piece(DroidPiece::Completion { final_text, done });
}

fn error(f: Val<'_>, m: &mut Mapped) {
    let Some(message) = f.string_at("message").filter(|s| !s.is_empty()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let lower = message.to_ascii_lowercase();
    let kind = if lower.contains("402") || lower.contains("payment") || lower.contains("token balance") {
        FailureKind::UsageLimit
    } else {
        match failure_kind(&message) {
            FailureKind::Other if lower.contains("503") || lower.contains("500") || lower.contains("502") => {
                FailureKind::ApiError
            }
            k => k,
        }
    };
    // The agent loop's error ends the run; what other sources (or none) report is a diagnostic.
    match f.str_at("source") {
        Some("agent_loop") => m.push(Event::TurnFailed {
            env: Envelope::default(),
            error: message,
            kind: Some(kind),
            usage: None,
            usage_scope: None,
            cost_scope: None,
            cost_usd: None,
            duration_ms: None,
            model_usage: None,
        }),
        source => {
            let code = format!("droid.{}", source.unwrap_or("error"));
            m.push(diagnostic(Level::Error, &code, message, Vec::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::assert_kinds;

    #[test]
    fn droid_tool_names() {
        use ToolKind::*;
        assert_kinds(
            tool_kind,
            &[
                ("Execute", Shell),
                ("Read", Read),
                ("LS", Read),
                ("Create", Write),
                ("Edit", Edit),
                ("MultiEdit", Edit),
                ("ApplyPatch", Edit),
                ("Grep", Search),
                ("Glob", Search),
                ("FetchUrl", Fetch),
                ("WebSearch", WebSearch),
                ("Task", Task),
                ("TodoWrite", Plan),
                ("AskUser", Ask),
                ("github___list_issues", Mcp),
                ("mcp__github__list_issues", Mcp),
                ("ExitSpecMode", Other),
                // Claude's names that droid spells its own way.
                ("Bash", Other),
                ("Write", Other),
                ("WebFetch", Other),
            ],
        );
    }

    #[test]
    fn todo_lines() {
        let items = plan_lines(
            "1. [in_progress] Reproduce\n2. [pending] Fix it\n3. [completed] Read\n4. [cancelled] Skip\n[x] Ticked\n\nplain",
        );
        let got: Vec<(&str, PlanStatus)> = items.iter().map(|i| (i.text.as_str(), i.status)).collect();
        assert_eq!(
            got,
            [
                ("Reproduce", PlanStatus::InProgress),
                ("Fix it", PlanStatus::Pending),
                ("Read", PlanStatus::Completed),
                // Cancelled stays cancelled (SPEC §3 `plan_updated`), as in every dialect.
                ("Skip", PlanStatus::Cancelled),
                ("Ticked", PlanStatus::Completed),
                ("plain", PlanStatus::Pending)
            ]
        );
    }
}
