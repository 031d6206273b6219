//! xAI's Grok Build CLI: `grok -p … --output-format streaming-json` (one `{type, …}` per line)
//! and the pretty-printed document of `--output-format json`.
//!
//! The stream is a flat vocabulary of its own: `text` / `thought` chunks (`data`), ACP-style
//! `tool_call` / `tool_call_update` frames (`toolCallId`, `kind`, `status`, `rawInput`,
//! `rawOutput`, `content`), `usage`, liveness frames (`start`, `metadata`, `system.version`,
//! `available_commands`, `auto_compact_*`, `max_turns_reached`), `error`, and a closing `end`
//! with the run's usage and cost. Its quirks:
//! - No frame opens the session: the session id first appears on `end`, which therefore also
//!   gives the `session_started` (written once per id by the fold).
//! - `end.usage` is the run's aggregate, `input_tokens` already without the cache,
//!   `output_tokens` with reasoning inside, `reasoning_tokens` its part. The cost is
//!   `total_cost_usd_ticks` (1e-10 USD) or `total_cost_usd`, left out when `cost_is_partial` or
//!   `usage_is_incomplete` says it is not the whole.
//! - `{"type":"error","message"}` has the shape of Codex's top-level error: it fits both (and
//!   Gemini's and droid's bare errors), so the stream's dialect keeps it. In a Grok stream it is
//!   the run's failure (Grok writes no `end` after it); alone, on a fresh stream, it reads as
//!   Codex's (a diagnostic), since structure cannot tell them apart.
//! - The json document has no `type`: `text`, `stopReason`, `sessionId`, `thought`, `usage`, …

use super::{Accepts, Adapter, Claim, Mapped, Outcome, Verdict, content_text, failure_kind, one_line, summary, unlisted_kind};
use crate::event::{Envelope, Event, FailureKind, Text, ToolKind, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `grok` dialect.
pub(crate) struct Grok;

impl Adapter for Grok {
    type Piece = std::convert::Infallible;
    type State = ();

    const ACCEPTS: Accepts = Accepts::types(
        &[&[
            "text",
            "reasoning",
            "thinking",
            "thought",
            "tool_call",
            "tool_call_update",
            "end",
            "usage",
            "start",
            "metadata",
            "system.version",
            "available_commands",
            "max_turns_reached",
            "error",
        ]],
        Claim::Overrides,
    )
    .untyped()
    .prefixes(&["auto_compact_"]);

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let has = |k: &str| f.get(k).is_some();
        let data = || f.get("data").is_some_and(|d| d.is_str());
        match ty {
            // The json document.
            None => {
                if f.get("text").is_some_and(|t| t.is_str()) && has("stopReason") && has("sessionId") {
                    Claim::Marked
                } else {
                    Claim::No
                }
            }
            // OpenCode's `text` / `reasoning` carry a `part` and a `sessionID`.
            Some("text" | "reasoning" | "thinking") if data() && !has("part") && !has("sessionID") => Claim::Overrides,
            Some("thought") if data() => Claim::Marked,
            // Cursor's `tool_call` has a `subtype`, droid's a `toolId` / `parameters`.
            Some("tool_call") if has("toolCallId") && !has("subtype") => Claim::Overrides,
            Some("tool_call_update") if has("toolCallId") => Claim::Marked,
            Some("end") if has("stopReason") => Claim::Marked,
            Some("usage") if has("signature") => Claim::Marked,
            Some("start" | "metadata" | "system.version" | "available_commands" | "max_turns_reached") => Claim::Marked,
            Some(t) if t.starts_with("auto_compact_") => Claim::Marked,
            // Shared with Codex, Gemini and droid: the stream's dialect keeps it.
            Some("error")
                if f.get("message").is_some_and(|m| m.is_str())
                    && !has("severity")
                    && !has("sessionID")
                    && !has("source")
                    && !has("timestamp") =>
            {
                Claim::Fits
            }
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }
}

/// Maps one Grok frame (a streaming-json line or the json document).
pub fn map(f: Val<'_>, m: &mut Mapped) {
    let ty = match f.get("type") {
        None => return document(f, m),
        Some(t) => t.str(),
    };
    let Some(ty) = ty else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    match ty {
        "text" => match f.text_at("data") {
            Some(text) if !text.is_empty() => m.push(Event::OutputDelta { env: Envelope::default(), text, message_id: None }),
            Some(_) => m.heartbeat(),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "thought" | "thinking" | "reasoning" => match f.text_at("data") {
            Some(text) => m.push(Event::Reasoning { env: Envelope::default(), text: Some(text).filter(|t| !t.is_empty()) }),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "tool_call" => tool_call(f, m),
        "tool_call_update" => tool_update(f, m),
        "usage" => match f.get("usage").filter(|u| u.is_object()).and_then(grok_usage) {
            Some(u) => m.push(Event::Usage {
                env: Envelope::default(),
                usage: crate::dialect::usage::with_context(u),
                model: None,
                message_id: f.string_at("messageId"),
                context_window: None,
            }),
            None => m.heartbeat(),
        },
        "start" | "metadata" | "system.version" | "available_commands" | "max_turns_reached" => m.heartbeat(),
        t if t.starts_with("auto_compact_") => m.heartbeat(),
        "error" => {
            let message = f.str_at("message").filter(|s| !s.is_empty()).unwrap_or("error").to_owned();
            let kind = failure_kind(&message);
            let kind = if kind == FailureKind::Other && message.to_ascii_lowercase().contains("credentials") {
                FailureKind::Auth
            } else {
                kind
            };
            m.push(Event::TurnFailed {
                env: Envelope::default(),
                error: message,
                kind: Some(kind),
                usage: f.get("usage").filter(|u| u.is_object()).and_then(grok_usage),
                usage_scope: None,
                cost_scope: None,
                cost_usd: None,
                duration_ms: None,
                model_usage: None,
            });
        }
        "end" => end(f, None, m),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// Grok's usage (`end.usage`, the json `usage`): `input_tokens` is already without the cache.
fn grok_usage(u: Val<'_>) -> Option<Usage> {
    let figures = Usage {
        input: u.u64_at("input_tokens"),
        cache_read: u.u64_at("cache_read_input_tokens"),
        cache_write: u.u64_at("cache_creation_input_tokens"),
        output: u.u64_at("output_tokens"),
        reasoning: u.u64_at("reasoning_tokens"),
        context: None,
        ..Usage::default()
    };
    (!figures.is_empty()).then_some(figures)
}

/// The kind of a call: the frame's own ACP `kind`, else its name.
fn grok_kind(acp: Option<&str>, name: &str) -> ToolKind {
    match acp {
        Some("execute") => return ToolKind::Shell,
        Some("read") => return ToolKind::Read,
        Some("edit" | "delete" | "move") => return ToolKind::Edit,
        Some("search") => return ToolKind::Search,
        Some("fetch") => return ToolKind::Fetch,
        Some("switch_mode") => return ToolKind::Plan,
        _ => {}
    }
    tool_kind(name)
}

/// Grok Build's tool names (`toolName`) onto kinds (SPEC §3), for calls whose ACP `kind` does not
/// say; `mcp__<server>__<tool>` is mcp.
fn tool_kind(name: &str) -> ToolKind {
    match name {
        "run_terminal_cmd" => ToolKind::Shell,
        "read_file" | "list_dir" => ToolKind::Read,
        "write" | "write_file" => ToolKind::Write,
        "search_replace" => ToolKind::Edit,
        n => unlisted_kind(n),
    }
}

fn tool_call(f: Val<'_>, m: &mut Mapped) {
    let Some(id) = f.string_at("toolCallId") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let name = f.str_at("toolName").or_else(|| f.str_at("title")).unwrap_or("unknown");
    let kind = grok_kind(f.str_at("kind"), name);
    let input = f.get("rawInput").filter(|v| !v.is_null());
    let summary = summary(kind, input).or_else(|| f.str_at("title").and_then(one_line));
    // A repeated call frame of a started id is a heartbeat (the fold writes one start).
    m.tool_started(id, name, kind, input.map(|v| v.to_json()), summary);
    if let Some(extra) = super::call_extra(kind, input) {
        m.push(extra);
    }
}

/// The text of ACP content blocks (`{"type":"content","content":{"type":"text","text"}}`).
fn acp_text(content: Val<'_>) -> Option<Text> {
    let parts: Vec<String> = content
        .array()?
        .filter_map(|b| {
            let inner = if b.str_at("type") == Some("content") { b.get("content")? } else { b };
            content_text(inner).or_else(|| inner.text_at("text")).map(|t| t.as_str().into_owned())
        })
        .collect();
    let joined = parts.join("\n");
    (!joined.is_empty()).then(|| Text::from(joined))
}

fn tool_update(f: Val<'_>, m: &mut Mapped) {
    let Some(id) = f.string_at("toolCallId") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let verdict = match f.str_at("status") {
        Some("completed") => Verdict::Succeeded,
        Some("failed") => Verdict::Failed,
        // `pending` / `in_progress` / null: the call goes on.
        _ => return m.heartbeat(),
    };
    let text = f.get("content").and_then(acp_text).or_else(|| {
        f.get("rawOutput").filter(|o| !o.is_null()).map(|o| match o.str() {
            Some(s) => Text::from(s),
            None => Text::from(o.to_json().get()),
        })
    });
    // A failed call's text is its message.
    let done = Outcome {
        name: f.string_at("toolName"),
        verdict: Some(verdict),
        output: text,
        output_is_error: true,
        ..Outcome::new(id)
    };
    m.push(done.event());
}

/// The run's end (`end`, or the json document, whose final text is `result`).
fn end(f: Val<'_>, result: Option<Text>, m: &mut Mapped) {
    if let Some(id) = f.string_at("sessionId") {
        m.session_id = Some(id);
        m.push(super::session_started());
    }
    let stop = f.string_at("stopReason");
    let usage = f.get("usage").filter(|u| u.is_object()).and_then(grok_usage);
    let partial = f.bool_at("cost_is_partial") == Some(true) || f.bool_at("usage_is_incomplete") == Some(true);
    let cost_usd = if partial {
        None
    } else {
        f.u64_at("total_cost_usd_ticks").map(|t| t as f64 / 1e10).or_else(|| f.f64_at("total_cost_usd"))
    };
    let duration_ms = f.u64_at("duration_ms");
    let failure = match stop.as_deref() {
        Some("cancelled") => Some((FailureKind::Aborted, "cancelled")),
        Some("max_turn_requests") => Some((FailureKind::MaxTurns, "max_turn_requests")),
        _ => None,
    };
    match failure {
        Some((kind, error)) => m.push(Event::TurnFailed {
            env: Envelope::default(),
            error: error.to_owned(),
            kind: Some(kind),
            usage,
            usage_scope: None,
            cost_scope: None,
            cost_usd,
            duration_ms,
            model_usage: None,
        }),
        None => m.push(Event::TurnCompleted {
            env: Envelope::default(),
            usage,
            usage_scope: None,
            cost_scope: None,
            cost_usd,
            duration_ms,
            num_turns: f.u64_at("num_turns"),
            result,
            stop_reason: stop,
            model_usage: None,
        }),
    }
}

fn document(f: Val<'_>, m: &mut Mapped) {
    m.frame = "json".to_owned();
    let Some(text) = f.text_at("text") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    // Written before the text, as in the stream; the session is known from the start here.
    if let Some(id) = f.string_at("sessionId") {
        m.session_id = Some(id);
    }
    if let Some(thought) = f.text_at("thought").filter(|t| !t.is_empty()) {
        m.push(Event::Reasoning { env: Envelope::default(), text: Some(thought) });
    }
    if !text.is_empty() {
        m.push(Event::OutputDelta { env: Envelope::default(), text: text.clone(), message_id: None });
    }
    let before = m.pieces.len();
    end(f, Some(text).filter(|t| !t.is_empty()), m);
    // The session first.
    if m.session_id.is_some() {
        let session = m.pieces.remove(before);
        m.pieces.insert(0, session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::assert_kinds;

    #[test]
    fn grok_tool_names() {
        use ToolKind::*;
        assert_kinds(
            tool_kind,
            &[
                ("run_terminal_cmd", Shell),
                ("read_file", Read),
                ("list_dir", Read),
                ("write", Write),
                ("write_file", Write),
                ("search_replace", Edit),
                ("mcp__docs__lookup", Mcp),
                ("Bash", Other),
                ("run_shell_command", Other),
            ],
        );
    }

    #[test]
    fn the_acp_kind_wins_over_the_name() {
        assert_eq!(grok_kind(Some("execute"), "read_file"), ToolKind::Shell);
        assert_eq!(grok_kind(Some("think"), "read_file"), ToolKind::Read);
        assert_eq!(grok_kind(None, "search_replace"), ToolKind::Edit);
    }
}
