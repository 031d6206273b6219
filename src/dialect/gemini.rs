//! Gemini CLI (and Antigravity, which writes the same stream) `--output-format stream-json`, and
//! the single object of `--output-format json`.
//!
//! The stream is `init`, `message` (user, or assistant with `delta: true` per streamed chunk),
//! `tool_use` / `tool_result` paired by `tool_id`, `error` and a closing `result`. Its quirks:
//! - Assistant text is streamed as `delta` chunks, but some builds (quiet mode, forks, seed
//!   runners) write whole messages, and a whole message may repeat the chunks already streamed:
//!   both go through [`Piece::TurnText`], so the text comes out exactly once.
//! - `error` frames are never the end of a turn (a loop detected, the session-turn limit): they
//!   are `diagnostic`s, level from `severity`. The `result` with `status: "error"` is what fails
//!   the turn.
//! - `result.stats` is the turn's usage (SPEC §4 Gemini stream row); newer builds add
//!   `stats.models.<model>`, one `usage` event each. Gemini reports no per-request figures, so
//!   these carry no `context`.
//! - The `--output-format json` object has no `type` (`session_id`, `response`, `stats` with
//!   `stats.models.<model>.tokens`, or `error`); the CLI pretty-prints it over many lines, which
//!   the normalizer reads as one frame. Its turn usage is the sum over the models (SPEC §4 Gemini
//!   json row).
//! - Timestamps are RFC 3339 strings; the placeholder `<TIMESTAMP>` of upstream snapshots is
//!   dropped by the fold.

use super::{Adapter, Claim, Mapped, NO_ID, Piece, content_text, diagnostic, failure_kind, one_line, summary, tool_kind};
use crate::dialect::usage;
use crate::event::{Envelope, Event, FailureKind, Level, Text, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `gemini` dialect.
pub(crate) struct Gemini;

impl Adapter for Gemini {
    type Piece = std::convert::Infallible;
    type State = ();

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let has = |k: &str| f.get(k).is_some();
        let marked = match ty {
            // The single object of `--output-format json`.
            None => {
                let error_object = f.get("error").is_some_and(|e| e.is_object());
                has("session_id") && (has("response") || has("stats") || error_object) || has("response") && has("stats")
            }
            // Gemini's errors carry `severity` or a `timestamp` (Codex's top-level error has only
            // a `message`); OpenCode's a `sessionID` or an error object.
            Some("error") => {
                if has("severity") || f.get("timestamp").is_some_and(|t| t.is_str()) {
                    true
                } else if has("sessionID") || f.get("error").is_some_and(|e| e.is_object()) {
                    return Claim::No;
                } else {
                    return Claim::Fits;
                }
            }
            Some("init" | "message" | "tool_use" | "tool_result") => !has("sessionID") && !has("part"),
            // Gemini's result has a `status` and no Claude/Cursor `subtype` / `is_error`.
            Some("result") => has("status") && !has("subtype") && !has("is_error"),
            _ => false,
        };
        if marked { Claim::Marked } else { Claim::No }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }
}

/// Maps one Gemini frame (a stream-json line or the `--output-format json` object).
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.at = timestamp(f);
    let ty = match f.get("type") {
        None => return json_output(f, m),
        Some(t) => t.str(),
    };
    let Some(ty) = ty else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    match ty {
        "init" => init(f, m),
        "message" => message(f, m),
        "tool_use" => tool_use(f, m),
        "tool_result" => tool_result(f, m),
        "error" => error(f, m),
        "result" => result(f, m),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// The frame's `timestamp` as written (a string), or an epoch number as its digits.
fn timestamp(f: Val<'_>) -> Option<String> {
    let t = f.get("timestamp")?;
    t.str().map(str::to_owned).or_else(|| t.f64().map(|n| n.to_string()))
}

fn init(f: Val<'_>, m: &mut Mapped) {
    let Some(id) = f.string_at("session_id") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.session_id = Some(id);
    // Every `init` is a new CLI process (a resumed session keeps its id): its tool ids start
    // over, and it gets its own `session_started`.
    m.pieces.push(Piece::ResetTools);
    m.push(Event::SessionStarted {
        env: Envelope::default(),
        model: f.string_at("model"),
        cwd: f.string_at("cwd"),
        cli_version: f.string_at("cli_version"),
        permission_mode: None,
        tools: None,
        parent_session_id: None,
    });
}

fn message(f: Val<'_>, m: &mut Mapped) {
    let Some(role) = f.str_at("role") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let Some(text) = f.get("content").and_then(content_text) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    match role {
        "user" => m.push(Event::UserMessage { env: Envelope::default(), text }),
        "assistant" => {
            let fragment = f.bool_at("delta") == Some(true);
            m.pieces.push(Piece::TurnText { text, fragment, message_id: None });
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, Some(format!("message/{role}"))),
    }
}

fn tool_use(f: Val<'_>, m: &mut Mapped) {
    let Some(name) = f.str_at("tool_name") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let kind = tool_kind(name);
    let input = f.get("parameters").filter(|p| !p.is_null());
    // `list_directory` names a `dir_path`, `web_fetch` a `prompt` holding its URLs.
    let summary = summary(kind, input).or_else(|| {
        let i = input?;
        ["dir_path", "prompt", "description"].iter().find_map(|k| i.str_at(k)).and_then(one_line)
    });
    m.tool_started(
        f.string_at("tool_id").unwrap_or_else(|| NO_ID.to_owned()),
        name,
        kind,
        input.map(|v| v.to_json()),
        summary,
    );
    if let Some(extra) = super::call_extra(kind, input) {
        m.push(extra);
    }
}

fn tool_result(f: Val<'_>, m: &mut Mapped) {
    let status = f.str_at("status");
    let err = f.get("error");
    let error =
        err.and_then(|e| e.str_at("message").or_else(|| e.str()).or_else(|| e.str_at("type"))).map(str::to_owned);
    let ok = match status {
        Some(s) => s == "success",
        None => err.is_none_or(|e| e.is_null()),
    };
    m.push(Event::ToolCompleted {
        env: Envelope::default(),
        tool_id: f.string_at("tool_id").unwrap_or_else(|| NO_ID.to_owned()),
        name: None,
        kind: None,
        ok,
        output: f.get("output").and_then(content_text),
        exit_code: None,
        error: if ok { None } else { Some(error.unwrap_or_else(|| status.unwrap_or("error").to_owned())) },
        duration_ms: None,
    });
}

fn error(f: Val<'_>, m: &mut Mapped) {
    let message = f.str_at("message").unwrap_or("error").to_owned();
    let severity = f.str_at("severity");
    let level = match severity {
        Some("warning") => Level::Warning,
        Some("info") => Level::Info,
        _ => Level::Error,
    };
    // The two the CLI writes itself get their own codes; anything else is keyed by severity.
    let code = if message.starts_with("Loop detected") {
        "gemini.loop_detected"
    } else if message.starts_with("Maximum session turns") {
        "gemini.max_session_turns"
    } else {
        match level {
            Level::Warning => "gemini.warning",
            Level::Info => "gemini.info",
            Level::Error => "gemini.error",
        }
    };
    m.push(diagnostic(level, code, message, Vec::new()));
}

fn result(f: Val<'_>, m: &mut Mapped) {
    let Some(status) = f.str_at("status") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("result", status);
    let stats = f.get("stats").filter(|s| s.is_object());
    let turn_usage = stats.map(usage::gemini_stream).and_then(usage::non_empty);
    let duration_ms = stats.and_then(|s| s.u64_at("duration_ms"));
    match status {
        "success" => {
            model_usage(stats, |t| usage::non_empty(usage::gemini_stream(t)), m);
            m.push(Event::TurnCompleted {
                env: Envelope::default(),
                usage: turn_usage,
                usage_scope: None,
                cost_scope: None,
                cost_usd: None,
                duration_ms,
                num_turns: None,
                result: None,
                stop_reason: None,
                model_usage: None,
            });
        }
        "error" => {
            model_usage(stats, |t| usage::non_empty(usage::gemini_stream(t)), m);
            // A failure written by the CLI's error handler reports a duration of 0: no reading.
            m.push(turn_failed(f.get("error"), turn_usage, duration_ms.filter(|&d| d > 0)));
        }
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// One `usage` event per `stats.models.<model>`, from the figures `fold` finds in it; returns
/// the sum of those figures (`None` when no model reported any).
fn model_usage(stats: Option<Val<'_>>, fold: impl Fn(Val<'_>) -> Option<Usage>, m: &mut Mapped) -> Option<Usage> {
    let models = stats.and_then(|s| s.get("models")).and_then(|ms| ms.entries())?;
    let mut sum: Option<Usage> = None;
    for (model, figures) in models {
        let Some(u) = fold(figures) else { continue };
        sum = Some(match sum {
            Some(s) => usage::add(s, u),
            None => u,
        });
        // A `context` is one request's prompt: only where the model made exactly one request.
        let one_request = figures.path(&["api", "totalRequests"]).and_then(|n| n.u64()) == Some(1);
        let u = if one_request { usage::with_context(u) } else { u };
        m.push(Event::Usage {
            env: Envelope::default(),
            usage: u,
            model: Some(model.to_owned()),
            message_id: None,
            context_window: None,
        });
    }
    sum
}

/// The message and kind of an `error: {type, message}` object.
/// The `turn_failed` of a result's or the json object's `error`.
fn turn_failed(err: Option<Val<'_>>, usage: Option<crate::event::Usage>, duration_ms: Option<u64>) -> Event {
    let (error, kind) = failure(err);
    Event::TurnFailed {
        env: Envelope::default(),
        error,
        kind: Some(kind),
        usage,
        usage_scope: None,
        cost_scope: None,
        cost_usd: None,
        duration_ms,
        model_usage: None,
    }
}

fn failure(err: Option<Val<'_>>) -> (String, FailureKind) {
    let name = err.and_then(|e| e.str_at("type")).unwrap_or("");
    let message = err
        .and_then(|e| e.str_at("message").or_else(|| e.str()))
        .filter(|s| !s.is_empty())
        .or((!name.is_empty()).then_some(name))
        .unwrap_or("turn failed")
        .to_owned();
    // Gemini names its errors by class: `FatalTurnLimitedError`, `FatalAuthenticationError`,
    // `FatalCancellationError`, `MaxSessionTurnsError`, …
    let n = name.to_ascii_lowercase();
    let kind = if n.contains("turnlimit") || n.contains("sessionturns") || n.contains("maxturns") {
        FailureKind::MaxTurns
    } else if n.contains("auth") {
        FailureKind::Auth
    } else if n.contains("cancel") || n.contains("abort") {
        FailureKind::Aborted
    } else if n.contains("quota") || n.contains("ratelimit") {
        FailureKind::UsageLimit
    } else {
        match failure_kind(&message) {
            FailureKind::Other if n.contains("api") => FailureKind::ApiError,
            k => k,
        }
    };
    (message, kind)
}

/// The `--output-format json` object: `session_id`, `response`, `stats` (full session metrics,
/// per model) or `error`, plus `warnings` and `finish_reason` in newer builds.
fn json_output(f: Val<'_>, m: &mut Mapped) {
    m.frame = "json".to_owned();
    // Only Gemini's json object; any other untyped object (under a forced --dialect) is unknown.
    if !["session_id", "response", "stats", "error"].iter().any(|k| f.get(k).is_some()) {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    }
    if let Some(id) = f.string_at("session_id") {
        m.session_id = Some(id);
        m.pieces.push(Piece::ResetTools);
        m.push(super::session_started());
    }
    let response = f.text_at("response");
    if let Some(text) = response.clone().filter(|t| !t.is_empty()) {
        m.push(Event::OutputDelta { env: Envelope::default(), text, message_id: None });
    }
    for w in f.array_at("warnings").into_iter().flatten() {
        if let Some(text) = w.str().or_else(|| w.str_at("message")) {
            m.push(diagnostic(Level::Warning, "gemini.warning", text.to_owned(), Vec::new()));
        }
    }
    let stats = f.get("stats").filter(|s| s.is_object());
    let turn_usage = model_usage(
        stats,
        |mv| mv.get("tokens").filter(|t| t.is_object()).map(usage::gemini_json).and_then(usage::non_empty),
        m,
    );
    match f.get("error").filter(|e| !e.is_null()) {
        Some(err) => {
            m.push(turn_failed(Some(err), turn_usage, None));
        }
        None => m.push(Event::TurnCompleted {
            env: Envelope::default(),
            usage: turn_usage,
            usage_scope: None,
            cost_scope: None,
            cost_usd: None,
            duration_ms: None,
            num_turns: None,
            result: response.filter(|t: &Text| !t.is_empty()),
            stop_reason: f.string_at("finish_reason"),
            model_usage: None,
        }),
    }
}
