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

use super::{Accepts, Adapter, Claim, Cx, Mapped, NO_ID, Outcome, Own, Piece, Verdict, content_text, diagnostic, failure_kind, one_line, summary, unlisted_kind};
use crate::dialect::usage;
use crate::event::{Envelope, Event, FailureKind, Level, Text, ToolKind, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `gemini` dialect.
pub(crate) struct Gemini;

/// Gemini's own pieces: a turn's error message, for the `result` that fails it without one.
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GeminiPiece {
    /// An `error` frame of level error: its message.
    Error(String),
    /// A `turn_failed` from a `result` with `status: error` and no `error` object (the CLI's
    /// agent-session path writes its message only in the `error` frame before it): its error
    /// and kind become that frame's.
    FailedTurn(Event),
}

impl From<GeminiPiece> for Piece {
    fn from(p: GeminiPiece) -> Piece {
        Piece::Own(Own::Gemini(p))
    }
}

/// The message of the current turn's last `error` frame of level error.
#[derive(Debug, Default)]
pub(crate) struct LastError(Option<String>);

impl Adapter for Gemini {
    type Piece = GeminiPiece;
    type State = LastError;

    fn fold(st: &mut LastError, piece: GeminiPiece, cx: &mut dyn Cx) {
        match piece {
            GeminiPiece::Error(message) => st.0 = Some(message),
            GeminiPiece::FailedTurn(mut ev) => {
                if let (Event::TurnFailed { error, kind, .. }, Some(last)) = (&mut ev, st.0.take()) {
                    *kind = Some(failure_kind(&last));
                    *error = last;
                }
                cx.event(ev);
            }
        }
    }

    fn turn_ended(st: &mut LastError) {
        st.0 = None;
    }

    const ACCEPTS: Accepts =
        Accepts::types(&[&["error", "init", "message", "tool_use", "tool_result", "result"]], Claim::Marked).untyped();

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
    let input = f.get("parameters").filter(|p| !p.is_null());
    tool_started(f.string_at("tool_id").unwrap_or_else(|| NO_ID.to_owned()), name, input, m);
}

/// A call of Gemini CLI's tool `name` with its arguments `input` (a stream's `tool_use`, a saved
/// session's `toolCalls` entry): its `tool_started`, and a plan's `plan_updated`.
pub(crate) fn tool_started(id: String, name: &str, input: Option<Val<'_>>, m: &mut Mapped) {
    let kind = tool_kind(name);
    // `list_directory` names a `dir_path`, `web_fetch` a `prompt` holding its URLs.
    let summary = own_summary(name, input).or_else(|| summary(kind, input)).or_else(|| {
        let i = input?;
        ["dir_path", "prompt", "description"].iter().find_map(|k| i.str_at(k)).and_then(one_line)
    });
    m.tool_started(id, name, kind, input.map(|v| v.to_json()), summary);
    if let Some(extra) = super::call_extra(kind, input) {
        m.push(extra);
    }
}

/// Gemini CLI's tool names onto kinds (SPEC §3): its core tools (gemini-cli's
/// `tool-names.ts`; `search_file_content` is `grep_search`'s older name), MCP tools as
/// `mcp_<server>_<tool>` (`MCP_TOOL_PREFIX` in `mcp-tool.ts`), MCP resources read through
/// `read_mcp_resource` / `list_mcp_resources`, and `invoke_agent`, which runs a subagent.
pub(crate) fn tool_kind(name: &str) -> ToolKind {
    match name {
        "run_shell_command" => ToolKind::Shell,
        "read_file" | "read_many_files" | "list_directory" => ToolKind::Read,
        "write_file" => ToolKind::Write,
        "replace" => ToolKind::Edit,
        "glob" | "grep_search" | "search_file_content" => ToolKind::Search,
        "web_fetch" => ToolKind::Fetch,
        "google_web_search" => ToolKind::WebSearch,
        "invoke_agent" => ToolKind::Task,
        "write_todos" => ToolKind::Plan,
        "ask_user" => ToolKind::Ask,
        "read_mcp_resource" | "list_mcp_resources" => ToolKind::Mcp,
        n if n.starts_with("mcp_") && n.len() > 4 => ToolKind::Mcp,
        n => unlisted_kind(n),
    }
}

/// The summary of Gemini's own tool names: `server/tool` of an MCP tool (the server is up to the
/// first `_` after the prefix, as `parseMcpToolName` reads it), `server/uri` of a resource, the
/// agent an `invoke_agent` runs.
fn own_summary(name: &str, input: Option<Val<'_>>) -> Option<String> {
    if let Some(rest) = name.strip_prefix("mcp_").filter(|r| !r.is_empty()) {
        return Some(match rest.split_once('_') {
            Some((server, tool)) => super::mcp_summary(Some(server), tool),
            None => rest.to_owned(),
        });
    }
    let input = input?;
    match name {
        "read_mcp_resource" | "list_mcp_resources" => {
            let server = input.str_at("server");
            match input.str_at("uri") {
                Some(uri) => one_line(&super::mcp_summary(server, uri)),
                None => server.map(str::to_owned),
            }
        }
        "invoke_agent" => input.str_at("agent_name").and_then(one_line),
        _ => None,
    }
}

fn tool_result(f: Val<'_>, m: &mut Mapped) {
    let status = f.str_at("status");
    let err = f.get("error");
    let error =
        err.and_then(|e| e.str_at("message").or_else(|| e.str()).or_else(|| e.str_at("type"))).map(str::to_owned);
    // The status decides; without one, a non-null `error` is the failure flag.
    let verdict = match status {
        Some(s) => Some(Verdict::ok_if(s == "success")),
        None => Verdict::failed_if(err.is_some_and(|e| !e.is_null())),
    };
    m.push(
        Outcome {
            verdict,
            output: f.get("output").and_then(content_text),
            // The status word where the error says nothing.
            error: error.filter(|e| !e.is_empty()).or_else(|| status.map(str::to_owned)),
            ..Outcome::new(f.string_at("tool_id").unwrap_or_else(|| NO_ID.to_owned()))
        }
        .event(),
    );
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
    if level == Level::Error {
        m.push_piece(GeminiPiece::Error(message.clone()));
    }
    m.push(diagnostic(level, code, message, Vec::new()));
}

fn result(f: Val<'_>, m: &mut Mapped) {
    let Some(status) = f.str_at("status") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("result", status);
    let stats = f.get("stats").filter(|s| s.is_object());
    let turn_usage = stats.map(stream_counters).and_then(usage::non_empty);
    let duration_ms = stats.and_then(|s| s.u64_at("duration_ms"));
    match status {
        "success" => {
            model_usage(stats, |t| usage::non_empty(stream_counters(t)), m);
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
            model_usage(stats, |t| usage::non_empty(stream_counters(t)), m);
            // A failure written by the CLI's error handler reports a duration of 0: no reading.
            let ev = turn_failed(f.get("error"), turn_usage, duration_ms.filter(|&d| d > 0));
            match f.get("error").filter(|e| !e.is_null()) {
                Some(_) => m.push(ev),
                None => m.push_piece(GeminiPiece::FailedTurn(ev)),
            }
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
        |mv| mv.get("tokens").filter(|t| t.is_object()).map(json_counters).and_then(usage::non_empty),
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

/// Gemini stream-json `result.stats` (and each `stats.models.<m>` of the stream): `input` when
/// present, else `input_tokens − cached`; `cached` is read from cache; `output_tokens`.
pub(crate) fn stream_counters(s: Val<'_>) -> Usage {
    let cached = s.u64_at("cached");
    Usage {
        input: s.u64_at("input").or_else(|| match (s.u64_at("input_tokens"), cached) {
            (Some(i), Some(c)) => Some(i.saturating_sub(c)),
            (i, _) => i,
        }),
        cache_read: cached,
        cache_write: None,
        output: s.u64_at("output_tokens"),
        reasoning: None,
        context: None,
        ..Usage::default()
    }
}

/// Gemini `--output-format json` `stats.models.<m>.tokens`: `input` when present, else
/// `prompt − cached`; `output` = `candidates + thoughts`; `reasoning` = `thoughts`.
pub(crate) fn json_counters(t: Val<'_>) -> Usage {
    let cached = t.u64_at("cached");
    let thoughts = t.u64_at("thoughts");
    let candidates = t.u64_at("candidates");
    Usage {
        input: t.u64_at("input").or_else(|| match (t.u64_at("prompt"), cached) {
            (Some(p), Some(c)) => Some(p.saturating_sub(c)),
            (p, _) => p,
        }),
        cache_read: cached,
        cache_write: None,
        output: match (candidates, thoughts) {
            (None, None) => None,
            (c, t) => c.unwrap_or(0).checked_add(t.unwrap_or(0)),
        },
        reasoning: thoughts,
        context: None,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(line: &str, f: fn(crate::read::frame::Val<'_>) -> crate::event::Usage) -> crate::event::Usage {
        crate::read::frame::Parser::default().with_frame(line.as_bytes(), |v| f(v.unwrap()))
    }

    #[test]
    fn stream_and_json_counters() {
        let g = counted(
            r#"{"total_tokens":12659,"input_tokens":12479,"output_tokens":89,"cached":5952,"input":6527}"#,
            stream_counters,
        );
        assert_eq!((g.input, g.cache_read, g.output), (Some(6527), Some(5952), Some(89)));
        let g = counted(r#"{"input_tokens":74,"output_tokens":26}"#, stream_counters);
        assert_eq!((g.input, g.cache_read), (Some(74), None));
        let j = counted(r#"{"prompt":11554,"candidates":55,"total":11609,"cached":5944,"thoughts":0}"#, json_counters);
        assert_eq!((j.input, j.cache_read, j.output, j.reasoning), (Some(5610), Some(5944), Some(55), Some(0)));
    }

    use crate::dialect::assert_kinds;

    #[test]
    fn gemini_tool_names() {
        use ToolKind::*;
        assert_kinds(
            tool_kind,
            &[
                ("run_shell_command", Shell),
                ("read_file", Read),
                ("read_many_files", Read),
                ("list_directory", Read),
                ("write_file", Write),
                ("replace", Edit),
                ("glob", Search),
                ("grep_search", Search),
                ("search_file_content", Search),
                ("web_fetch", Fetch),
                ("google_web_search", WebSearch),
                ("invoke_agent", Task),
                ("write_todos", Plan),
                ("ask_user", Ask),
                ("mcp_github_search_issues", Mcp),
                ("read_mcp_resource", Mcp),
                ("mcp_", Other),
                ("save_memory", Other),
                // Claude's, Codex's and Qwen's names.
                ("Bash", Other),
                ("shell", Other),
                ("edit", Other),
                ("todo_write", Other),
            ],
        );
    }
}
