//! OpenAI Codex `codex exec --json`: `thread.*`, `turn.*`, `item.*` and top-level `error`.
//!
//! The whole mapping of one Codex frame. Codex items have no argument object, so
//! `tool_started.input` is built from the item's own fields; some items (file changes, web
//! searches) have no start frame, so their completion line makes both events. Its usage is a
//! running total for the whole thread (`usage_scope: "session"`). Also reads the 0.42-era shape
//! (`session.created`, `item_type`, `assistant_message`).
//!
//! The end of the file holds what the three Codex dialects share (this one, `codex-rollout` and
//! `codex-legacy`): the `token_count` mapping (per-request usage and rate-limit windows), the
//! summary of a shell argv and the diagnostic of an `error` message.

use super::{Accepts, Adapter, Claim, Cx, Mapped, NO_ID, Outcome, Own, Piece, SeedLine, Verdict, content_text, diagnostic, failure_kind, plan_items, subagent_status};
use crate::dialect::usage;
use crate::event::{Envelope, Event, FailureKind, Level, ServiceTier, SubagentOperation, SubagentStatus, ToolKind, UnknownReason, Usage, UsageScope};
use crate::read::frame::Val;

/// The `codex` dialect.
pub(crate) struct Exec;

impl Adapter for Exec {
    type Piece = CodexPiece;
    type State = Totals;

    const ACCEPTS: Accepts = Accepts::types(
        &[&[
            "thread.started",
            "turn.started",
            "turn.completed",
            "turn.failed",
            "item.started",
            "item.updated",
            "item.completed",
            "session.created",
            "request_user_input",
            "item.plan.delta",
            "error",
        ]],
        Claim::Marked,
    );

    fn claim(_: Val<'_>, ty: Option<&str>) -> Claim {
        match ty {
            Some(
                "thread.started" | "turn.started" | "turn.completed" | "turn.failed" | "item.started" | "item.updated"
                | "item.completed" | "session.created" | "request_user_input" | "item.plan.delta",
            ) => Claim::Marked,
            // Top-level `{"type":"error","message":…}`: Gemini's and OpenCode's errors carry
            // marks of their own.
            Some("error") => Claim::Fits,
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(totals: &mut Totals, piece: CodexPiece, cx: &mut dyn Cx) {
        match piece {
            CodexPiece::TokenCount { total, event } => {
                if totals.last == Some(total) {
                    return;
                }
                let before = totals.last.replace(total);
                // Without the request's own figures: what the running total grew by (never what
                // a fork inherited).
                let ev = event.or_else(|| {
                    // A total below the last one is a new counter: counted whole.
                    let grown = match before {
                        Some(prev) if usage::covers(&total, &prev) => usage::minus(total, prev),
                        _ => total,
                    };
                    usage::non_empty(grown).map(|usage| Event::Usage {
                        env: Envelope::default(),
                        usage,
                        model: None,
                        message_id: None,
                        context_window: None,
                    })
                });
                if let Some(ev) = ev {
                    cx.event(ev);
                }
            }
            CodexPiece::Inherit(total) => totals.last = Some(total),
        }
    }
}

/// The pieces the Codex dialects share (`codex-legacy` and `codex-rollout` write them too).
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CodexPiece {
    /// A cumulative token counter (`token_count`): `event` (the per-request `usage`) is written
    /// only when `total` changed since the last one of the stream.
    TokenCount {
        /// The running total the CLI reported.
        total: Usage,
        /// The `usage` event for the last request.
        event: Option<Event>,
    },
    /// A running total inherited from copied history (a forked rollout): kept as the last
    /// total, nothing written.
    Inherit(Usage),
}

impl From<CodexPiece> for Piece {
    fn from(p: CodexPiece) -> Piece {
        Piece::Own(Own::Codex(p))
    }
}

/// The last running token total of a Codex stream.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    last: Option<Usage>,
}

/// Maps one Codex frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    m.at = f.string_at("timestamp");
    match ty {
        "thread.started" | "session.created" => {
            let Some(id) = f.string_at("thread_id").or_else(|| f.string_at("session_id")) else {
                return m.unknown(UnknownReason::MalformedFrame, None);
            };
            m.session_id = Some(id);
            m.pieces.push(Piece::ResetTools);
            m.push(super::session_started());
        }
        "turn.started" => m.push(Event::TurnStarted { env: Envelope::default() }),
        "turn.completed" => m.push(Event::TurnCompleted {
            env: Envelope::default(),
            usage: f.get("usage").filter(|u| u.is_object()).map(counters).and_then(usage::non_empty),
            usage_scope: f.get("usage").filter(|u| u.is_object()).map(|_| UsageScope::Session),
            cost_scope: None,
            cost_usd: None,
            duration_ms: None,
            num_turns: None,
            result: None,
            stop_reason: None,
            model_usage: None,
        }),
        "turn.failed" => {
            let error = f
                .path(&["error", "message"])
                .and_then(|v| v.str())
                .or_else(|| f.str_at("error"))
                .unwrap_or("turn failed")
                .to_owned();
            let usage = f.get("usage").filter(|u| u.is_object()).map(counters).and_then(usage::non_empty);
            let (error, kind) = turn_failure(error);
            m.push(Event::TurnFailed {
                env: Envelope::default(),
                kind: Some(kind),
                error,
                usage_scope: usage.map(|_| UsageScope::Session),
                cost_scope: None,
                usage,
                cost_usd: None,
                duration_ms: None,
                model_usage: None,
            });
        }
        "error" => m.push(error_diagnostic(f.str_at("message").unwrap_or("error").to_owned())),
        "request_user_input" => m.push(super::needs_input(f.get("questions"), None)),
        "item.plan.delta" => m.heartbeat(),
        "item.started" | "item.updated" | "item.completed" => item(f, ty, m),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// A `turn.failed` message and its kind. Codex passes a provider's error body through as the
/// message when it is JSON (`{"type":"error","status":400,"error":{"type":…,"message":…}}`,
/// `{"status":429,…}`, `{"detail":…}`): the error is then its inner message (the whole line is
/// still in `--raw`), and the HTTP status or error type decides the kind. A text message names
/// its status as `unexpected status NNN` or `last status: NNN` (`RetryLimitReachedError`).
pub(crate) fn turn_failure(message: String) -> (String, FailureKind) {
    let mut status: Option<u64> = None;
    let mut error_type: Option<String> = None;
    let mut text = message.clone();
    let mut bare_detail = false;
    if message.trim_start().starts_with('{')
        && let Ok(doc) = serde_json::from_str::<serde_json::Value>(&message)
    {
        status = doc.get("status").and_then(serde_json::Value::as_u64);
        error_type = doc.pointer("/error/type").and_then(|t| t.as_str()).map(str::to_owned);
        let inner = doc
            .pointer("/error/message")
            .or_else(|| doc.get("message"))
            .or_else(|| {
                bare_detail = true;
                doc.get("detail")
            })
            .and_then(|v| v.as_str());
        bare_detail &= inner.is_some();
        if let Some(inner) = inner.filter(|t| !t.trim().is_empty()) {
            text = inner.to_owned();
        }
    }
    if status.is_none() {
        let lower = message.to_ascii_lowercase();
        status = ["unexpected status ", "last status: ", "last status "].iter().find_map(|p| {
            let at = lower.find(p)? + p.len();
            let digits: String = lower[at..].chars().take_while(char::is_ascii_digit).collect();
            (digits.len() == 3).then(|| digits.parse().ok()).flatten()
        });
    }
    let by_type = error_type.as_deref().and_then(|t| match t {
        "authentication_error" | "permission_error" => Some(FailureKind::Auth),
        "usage_limit_reached" | "insufficient_quota" | "rate_limit_exceeded" => Some(FailureKind::UsageLimit),
        _ => None,
    });
    let by_status = status.and_then(|s| match s {
        401 | 403 => Some(FailureKind::Auth),
        429 => Some(FailureKind::UsageLimit),
        400..=599 => Some(FailureKind::ApiError),
        _ => None,
    });
    let kind = by_type.or(by_status).unwrap_or_else(|| match failure_kind(&text) {
        FailureKind::Other => {
            let lower = text.to_ascii_lowercase();
            // The backend's own refusals (HTTP 400 / 503 whose status Codex does not print).
            if bare_detail || lower.contains("at capacity") || lower.contains("requires a newer version") {
                FailureKind::ApiError
            } else {
                FailureKind::Other
            }
        }
        k => k,
    });
    (text, kind)
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

fn item(f: Val<'_>, ty: &str, m: &mut Mapped) {
    let phase = match ty {
        "item.started" => Phase::Started,
        "item.updated" => Phase::Updated,
        _ => Phase::Completed,
    };
    let Some(it) = f.get("item").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let Some(item_type) = it.str_at("type").or_else(|| it.str_at("item_type")) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame(ty, item_type);
    let id = it.string_at("id").unwrap_or_else(|| NO_ID.to_owned());
    match item_type {
        "agent_message" | "assistant_message" => match (phase, it.text_at("text")) {
            (Phase::Completed, Some(text)) if !text.is_empty() => {
                m.push(Event::OutputDelta { env: Envelope::default(), text, message_id: None })
            }
            _ => m.heartbeat(),
        },
        "reasoning" => match phase {
            Phase::Completed => {
                let text = it.text_at("text").filter(|t| !t.is_empty());
                m.push(Event::Reasoning { env: Envelope::default(), text })
            }
            _ => m.heartbeat(),
        },
        "command_execution" => {
            let command = it.str_at("command");
            let input = it.subset_json(&["command"]);
            m.tool_started(id, "command_execution", ToolKind::Shell, input, command.and_then(super::one_line));
            if phase == Phase::Completed {
                let status = it.str_at("status");
                m.push(
                    Outcome {
                        verdict: Verdict::failed_if(matches!(status, Some("failed" | "declined"))),
                        exit_code: it.get("exit_code").and_then(|c| c.i64()),
                        // A declined command says so; a failed one by its exit code.
                        error: (status == Some("declined")).then(|| "declined".to_owned()),
                        output: it.text_at("aggregated_output").filter(|t| !t.is_empty()),
                        ..completed(&it)
                    }
                    .event(),
                );
            }
        }
        "file_change" => {
            let input = it.subset_json(&["changes"]);
            let paths: Vec<&str> =
                it.array_at("changes").map(|a| a.filter_map(|c| c.str_at("path")).collect()).unwrap_or_default();
            let summary = (!paths.is_empty()).then(|| paths.join(", "));
            m.tool_started(id, "file_change", ToolKind::Edit, input, summary);
            if phase == Phase::Completed {
                m.push(status_outcome(&it).event());
            }
        }
        "mcp_tool_call" => {
            let name = it.str_at("tool").unwrap_or("unknown");
            let input = it.subset_json(&["server", "tool", "arguments"]);
            m.tool_started(id, name, ToolKind::Mcp, input, Some(super::mcp_summary(it.str_at("server"), name)));
            if phase == Phase::Completed {
                let error =
                    it.path(&["error", "message"]).or_else(|| it.get("error")).and_then(|e| e.str().map(str::to_owned));
                let status = it.str_at("status");
                m.push(
                    Outcome {
                        verdict: Verdict::failed_if(status.is_some_and(|s| s != "completed")),
                        error,
                        output: it.path(&["result", "content"]).and_then(content_text),
                        ..completed(&it)
                    }
                    .event(),
                );
            }
        }
        "web_search" => {
            let query = it.str_at("query").filter(|q| !q.is_empty());
            // Codex ≥ 0.153 starts a search with `query: ""` and names it only on completion: the
            // start is then made from the completion line (before its completion), so that it
            // carries the query.
            if query.is_none() && phase != Phase::Completed {
                return m.heartbeat();
            }
            let action = it.get("action").filter(|a| a.is_object());
            let url = action.filter(|a| a.str_at("type") == Some("open_page")).and_then(|a| a.str_at("url"));
            let kind = if url.is_some() { ToolKind::Fetch } else { ToolKind::WebSearch };
            let keys: &[&str] = if action.is_some() { &["query", "action"] } else { &["query"] };
            let input = query.or(url).and_then(|_| it.subset_json(keys));
            m.tool_started(id, "web_search", kind, input, url.or(query).and_then(super::one_line));
            if phase == Phase::Completed {
                m.push(completed(&it).event());
            }
        }
        // Plan mode's proposed plan: the final `agent_message` repeats it (`<proposed_plan>`), so
        // it is no `output_delta` (`item.plan.delta` is a heartbeat too).
        "plan" => m.heartbeat(),
        "todo_list" => {
            if phase == Phase::Started {
                m.tool_started(id.clone(), "todo_list", ToolKind::Plan, None, None);
            }
            if let Some(items) = it.get("items").and_then(plan_items) {
                m.push(Event::PlanUpdated { env: Envelope::default(), items });
            }
            if phase == Phase::Completed {
                m.tool_started(id, "todo_list", ToolKind::Plan, None, None);
                m.push(completed(&it).event());
            }
        }
        "collab_tool_call" => collab(&it, phase, id, m),
        "error" => {
            let message = it.str_at("message").unwrap_or("error").to_owned();
            m.push(diagnostic(Level::Warning, "codex.item_error", message, Vec::new()));
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// The completion of the item `it` (by its `id`), saying nothing more yet.
fn completed(it: &Val<'_>) -> Outcome {
    Outcome::new(it.string_at("id").unwrap_or_else(|| NO_ID.to_owned()))
}

/// The completion of an item whose `status` alone tells its end: anything but `completed` is a
/// failure, named by its status word.
fn status_outcome(it: &Val<'_>) -> Outcome {
    let status = it.str_at("status");
    Outcome {
        verdict: status.map(|s| Verdict::ok_if(s == "completed")),
        error: status.map(str::to_owned),
        ..completed(it)
    }
}

fn collab(it: &Val<'_>, phase: Phase, id: String, m: &mut Mapped) {
    let name = it.str_at("tool").unwrap_or("collab_tool_call");
    let prompt = it.str_at("prompt");
    let input = it.subset_json(&["tool", "prompt", "receiver_thread_ids"]);
    m.tool_started(id.clone(), name, ToolKind::Task, input, prompt.and_then(super::one_line));
    if phase != Phase::Completed {
        return;
    }
    let done = status_outcome(it);
    let ok = done.ok();
    m.push(done.event());
    let operation = match name {
        "spawn_agent" => SubagentOperation::Spawn,
        "wait" | "resume_agent" => SubagentOperation::Wait,
        "send_input" => SubagentOperation::Message,
        "close_agent" => SubagentOperation::Close,
        _ => SubagentOperation::Update,
    };
    let states = it.get("agents_states");
    let mut children: Vec<String> = it
        .array_at("receiver_thread_ids")
        .map(|a| a.filter_map(|c| c.str().map(str::to_owned)).collect())
        .unwrap_or_default();
    if let Some(entries) = states.and_then(|s| s.entries()) {
        for (k, _) in entries {
            if !children.iter().any(|c| c == k) {
                children.push(k.to_owned());
            }
        }
    }
    for child in children {
        let state = states.and_then(|s| s.get(&child));
        let raw_status = state.and_then(|s| s.string_at("status"));
        let status = match (&raw_status, ok) {
            (Some(s), _) => subagent_status(s),
            (None, true) => SubagentStatus::Running,
            (None, false) => SubagentStatus::Failed,
        };
        m.push(Event::Subagent {
            env: Envelope::default(),
            child_id: child,
            operation,
            status,
            raw_status,
            operation_id: (!id.is_empty()).then(|| id.clone()),
            description: None,
            message: state.and_then(|s| s.string_at("message")).or_else(|| prompt.map(str::to_owned)),
            background: None,
        });
    }
}

// ------------------------------------------------------------------------------------------------
// Shared by the Codex dialects (`codex`, `codex-rollout`, `codex-legacy`)
// ------------------------------------------------------------------------------------------------

/// The diagnostic of a Codex `error` message: `Reconnecting… n/5` and `…retrying…` are warnings
/// (`codex.reconnecting`), anything else an error (`codex.error`).
pub(crate) fn error_diagnostic(message: String) -> Event {
    let retrying = {
        let l = message.to_ascii_lowercase();
        l.starts_with("reconnecting") || l.contains("retrying")
    };
    let (level, code) = if retrying { (Level::Warning, "codex.reconnecting") } else { (Level::Error, "codex.error") };
    diagnostic(level, code, message, Vec::new())
}

/// A one-line summary of a Codex command: the script of a `[shell, -lc|-c, script]` argv, the
/// words of any other argv joined by spaces, or the command string itself.
pub(crate) fn shell_summary(command: Val<'_>) -> Option<String> {
    if let Some(s) = command.str() {
        return super::one_line(s);
    }
    let parts: Vec<&str> = command.array()?.filter_map(|p| p.str()).collect();
    match parts.as_slice() {
        [_, "-lc" | "-c", script] => super::one_line(script),
        _ => super::one_line(&parts.join(" ")),
    }
}

/// Maps a Codex `token_count` payload `{info, rate_limits}` (rollout `event_msg`, legacy `msg`).
///
/// `info.last_token_usage` is the last model request's usage: a `usage` event (SPEC §4 Codex row,
/// with `context` and `info.model_context_window`) wrapped in a [`CodexPiece::TokenCount`] keyed on
/// `info.total_token_usage`, so that a repeat with unchanged totals (a rate-limit refresh) writes
/// nothing. `info: null` carries no usage. `rate_limits` gives one `rate_limit` per window on
/// every line, repeats included (the fold writes a window only when it changed). `at` is the
/// line's own timestamp, from which a relative reset time (`resets_in_seconds`) is resolved.
pub(crate) fn token_count(p: Val<'_>, at: Option<&str>, m: &mut Mapped) {
    if let Some(info) = p.get("info").filter(|i| i.is_object()) {
        let event =
            info.get("last_token_usage").filter(|u| u.is_object()).map(counters).and_then(usage::non_empty).map(
                |u| Event::Usage {
                    env: Envelope::default(),
                    usage: usage::with_context(u),
                    model: None,
                    message_id: None,
                    context_window: info.u64_at("model_context_window"),
                },
            );
        match info.get("total_token_usage").filter(|u| u.is_object()) {
            Some(total) => {
                m.seed = Some(SeedLine::Total);
                m.push_piece(CodexPiece::TokenCount { total: counters(total), event })
            }
            // No running total to compare: every such line is its own request.
            None => {
                if let Some(e) = event {
                    m.push(e);
                }
            }
        }
    }
    if let Some(limits) = p.get("rate_limits").filter(|r| r.is_object()) {
        m.seed = m.seed.or(Some(SeedLine::Limits));
        rate_limits(limits, at, m);
    }
}

/// One `rate_limit` per window of a Codex `rate_limits` object: nested (`primary` / `secondary`
/// objects with `used_percent`, `window_minutes`, `resets_at` or `resets_in_seconds`) or flat
/// (Codex 0.40: `primary_used_percent`, `primary_window_minutes`, …). A window of 295–305 minutes
/// is `five_hour`, of 10070–10090 `seven_day`, any other keeps its slot's name. Codex reports
/// no status; when `rate_limit_reached_type` names a reached limit, the windows used to 100% are
/// `rejected`.
fn rate_limits(rl: Val<'_>, at: Option<&str>, m: &mut Mapped) {
    let base_ms = at.and_then(crate::read::time::parse_rfc3339_ms);
    let relative = |v: Option<Val<'_>>| {
        let secs = v?.f64()?;
        let base = base_ms?;
        (0.0..1e12).contains(&secs).then(|| crate::read::time::rfc3339_millis(base + (secs * 1000.0) as i64))
    };
    let reached = rl.str_at("rate_limit_reached_type").is_some();
    for slot in ["primary", "secondary"] {
        let (used, minutes, resets) = match rl.get(slot) {
            Some(w) if w.is_object() => (
                w.f64_at("used_percent"),
                w.u64_at("window_minutes"),
                w.get("resets_at")
                    .filter(|v| !v.is_null())
                    .and_then(super::reset_time)
                    .or_else(|| relative(w.get("resets_in_seconds")))
                    .or_else(|| relative(w.get("reset_after_seconds"))),
            ),
            Some(_) => continue,
            None => (
                rl.f64_at(&format!("{slot}_used_percent")),
                rl.u64_at(&format!("{slot}_window_minutes")),
                relative(rl.get(&format!("{slot}_reset_after_seconds")))
                    .or_else(|| relative(rl.get(&format!("{slot}_resets_in_seconds")))),
            ),
        };
        let used = used.filter(|u| u.is_finite() && *u >= 0.0);
        if used.is_none() && minutes.is_none() {
            continue;
        }
        let window = match minutes {
            Some(295..=305) => "five_hour",
            Some(10_070..=10_090) => "seven_day",
            _ => slot,
        };
        m.push(Event::RateLimit {
            env: Envelope::default(),
            window: window.to_owned(),
            window_minutes: minutes,
            status: (reached && used.is_some_and(|u| u >= 100.0)).then(|| "rejected".to_owned()),
            used_percent: used,
            resets_at: resets,
            overage_status: None,
            using_overage: None,
        });
    }
}

/// Codex's usage (`turn.completed.usage`, `token_count` info): `cached_input_tokens` and
/// `cache_write_input_tokens` are both parts of `input_tokens` (Codex's own `total_tokens` is
/// `input_tokens + output_tokens`), `output_tokens` includes `reasoning_output_tokens`.
pub(crate) fn counters(u: Val<'_>) -> Usage {
    let input = u.u64_at("input_tokens");
    let cached = u.u64_at("cached_input_tokens");
    let written = u.u64_at("cache_write_input_tokens");
    Usage {
        input: input.map(|i| i.saturating_sub(cached.unwrap_or(0)).saturating_sub(written.unwrap_or(0))),
        cache_read: cached,
        cache_write: written,
        output: u.u64_at("output_tokens"),
        reasoning: u.u64_at("reasoning_output_tokens"),
        context: None,
        cache_write_1h: None,
        service_tier: u.str_at("service_tier").and_then(ServiceTier::from_name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(line: &str, f: fn(crate::read::frame::Val<'_>) -> crate::event::Usage) -> crate::event::Usage {
        crate::read::frame::Parser::default().with_frame(line.as_bytes(), |v| f(v.unwrap()))
    }

    #[test]
    fn codex_cached_is_a_subset_of_input() {
        let u = counted(
            r#"{"input_tokens":15931,"cached_input_tokens":14080,"output_tokens":50,"reasoning_output_tokens":10}"#,
            counters,
        );
        assert_eq!(u.input, Some(1851));
        assert_eq!(u.cache_read, Some(14080));
        assert_eq!(u.output, Some(50));
        assert_eq!(u.reasoning, Some(10));
        assert_eq!(u.cache_write, None, "absent is not zero");
    }

    #[test]
    fn codex_cache_writes_are_a_part_of_input_too() {
        // Codex 0.160 `token_count`: total_tokens 22040 = input_tokens 21400 + output 640, so
        // the 18000 cached and the 1200 written are both inside the 21400.
        let u = counted(
            r#"{"input_tokens":21400,"cached_input_tokens":18000,"cache_write_input_tokens":1200,"output_tokens":640,"reasoning_output_tokens":210,"total_tokens":22040}"#,
            counters,
        );
        assert_eq!((u.input, u.cache_read, u.cache_write), (Some(2200), Some(18000), Some(1200)));
        let sum = u.input.unwrap() + u.cache_read.unwrap() + u.cache_write.unwrap() + u.output.unwrap();
        assert_eq!(sum, 22040, "the four figures add up to Codex's own total");
    }
}
