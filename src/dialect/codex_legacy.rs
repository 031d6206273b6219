//! Codex `exec --json` before the thread/item format (Codex ≤ 0.43): every event is
//! `{"id": <submission id>, "msg": {"type": …}}`, preceded by a config line and a prompt line.
//!
//! The stream starts with the run's config as one untyped object whose keys hold spaces
//! (`{"model", "provider", "sandbox", "approval", "reasoning effort", …}`: a `heartbeat` with
//! frame `config`; it has no session id, so it cannot be a `session_started`), then
//! `{"prompt": …}` (the `user_message`). The `id` is Codex's submission id (`"1"`), never a
//! session id; only a `session_configured` event names the session.
//!
//! Quirks handled here:
//! - Tools have begin and end events paired by `call_id` (`exec_command_*`, `patch_apply_*`,
//!   `mcp_tool_call_*`, `web_search_*`); there are no argument objects, so `tool_started.input`
//!   is built from the begin event's own fields. An MCP result is Rust's `Result` as serde writes
//!   it: `{"Ok": {content, isError}}` or `{"Err": "…"}`; its content blocks may lack `type`.
//! - `token_count` comes in two shapes: the early flat one (`input_tokens`, … on the event
//!   itself, one model request's usage: a `usage` per line) and the later `{info, rate_limits}`
//!   one, mapped as in rollouts (`codex::token_count`).
//! - `error` is the only failure frame of this format: a `turn_failed` (one without `message` is
//!   `malformed_frame`). `stream_error` (a retried disconnect) is a `diagnostic`.
//! - Frames carry no timestamp (no `at`). Some Codex versions print no `task_complete`: such a
//!   stream ends with its turn open (`complete: false`).

use super::codex::{shell_summary, token_count};
use super::{Accepts, Adapter, Claim, Mapped, NO_ID, Outcome, Verdict, content_text, diagnostic, failure_kind, one_line, plan_items};
use crate::dialect::usage;
use crate::event::{Envelope, Event, Level, Text, ToolKind, UnknownReason};
use crate::read::frame::Val;

/// The `codex-legacy` dialect. Its token counts are the Codex family's pieces
/// ([`super::codex::CodexPiece`]), folded with the running total the family shares.
pub(crate) struct Legacy;

/// The keys of the config line legacy Codex writes first.
const CONFIG: [&str; 10] = [
    "model",
    "provider",
    "approval",
    "sandbox",
    "workdir",
    "reasoning effort",
    "reasoning summaries",
    "reasoning_effort",
    "reasoning_summaries",
    "cwd",
];

impl Adapter for Legacy {
    type Piece = std::convert::Infallible;
    type State = ();

    // `{"id","msg"}` whatever the rest; the leading lines have no `type`.
    const ACCEPTS: Accepts = Accepts::types(&[], Claim::Envelope).untyped().with_keys(&["msg"]);

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        // {"id", "msg": {"type"}}.
        if let Some(msg) = f.get("msg")
            && msg.is_object()
            && msg.str_at("type").is_some()
        {
            return Claim::Envelope;
        }
        if ty.is_some() || f.get("type").is_some() {
            return Claim::No;
        }
        // The leading prompt and config lines (a key given twice counts once, with its last
        // value; nothing is allocated, this runs on every line without a `type`).
        if f.keys().next().is_some()
            && f.keys().all(|k| k == "prompt")
            && f.get("prompt").is_some_and(|p| p.is_str())
        {
            return Claim::Marked;
        }
        let has = |k: &str| f.get(k).is_some();
        let config = (has("model") || has("provider") || has("sandbox"))
            && f.keys().all(|k| CONFIG.contains(&k) && f.get(k).is_some_and(|v| v.is_str()));
        if config { Claim::Marked } else { Claim::No }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }
}

/// Maps one legacy Codex line.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    let Some(msg) = f.get("msg").filter(|v| v.is_object()) else {
        return untyped(f, m);
    };
    let Some(ty) = msg.str_at("type") else {
        m.frame = "msg".to_owned();
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("msg", ty);
    match ty {
        "session_configured" => {
            let Some(id) = msg.string_at("session_id") else {
                return m.unknown(UnknownReason::MalformedFrame, None);
            };
            m.session_id = Some(id);
            m.push(Event::SessionStarted {
                env: Envelope::default(),
                model: msg.string_at("model"),
                cwd: msg.string_at("cwd"),
                cli_version: None,
                permission_mode: None,
                tools: None,
                parent_session_id: None,
            });
        }
        "task_started" | "turn_started" => m.push(Event::TurnStarted { env: Envelope::default() }),
        "user_message" => text_event(msg, "message", m, |text| Event::UserMessage { env: Envelope::default(), text }),
        "agent_message" => text_event(msg, "message", m, |text| Event::OutputDelta {
            env: Envelope::default(),
            text,
            message_id: None,
        }),
        "agent_reasoning" | "agent_reasoning_raw_content" => {
            let text = msg.text_at("text").filter(|t| !t.is_empty());
            m.push(Event::Reasoning { env: Envelope::default(), text });
        }
        "exec_command_begin" => {
            let summary = msg.get("command").and_then(shell_summary);
            m.tool_started(
                call_id(msg),
                "exec_command",
                ToolKind::Shell,
                msg.subset_json(&["command", "cwd"]),
                summary,
            );
        }
        "exec_command_end" => exec_end(msg, m),
        "patch_apply_begin" => {
            let paths: Vec<&str> =
                msg.get("changes").and_then(|c| c.entries()).unwrap_or_default().iter().map(|(k, _)| *k).collect();
            let summary = (!paths.is_empty()).then(|| paths.join(", ")).and_then(|s| one_line(&s));
            m.tool_started(call_id(msg), "apply_patch", ToolKind::Edit, msg.subset_json(&["changes"]), summary);
        }
        "patch_apply_end" => {
            // `success` decides; a failure's message is its stderr's first line.
            let done = Outcome {
                verdict: Some(Verdict::ok_if(msg.bool_at("success").unwrap_or(true))),
                error: msg.str_at("stderr").and_then(one_line),
                output: msg.text_at("stdout").filter(|t| !t.is_empty()),
                ..end(msg, "apply_patch", ToolKind::Edit)
            };
            m.push(done.event());
        }
        "mcp_tool_call_begin" => {
            // `invocation: {server, tool, arguments}`; the earliest versions put them on the event.
            let inv = msg.get("invocation").filter(|i| i.is_object()).unwrap_or(msg);
            let tool = inv.str_at("tool").unwrap_or("unknown");
            let input = inv.subset_json(&["server", "tool", "arguments"]);
            m.tool_started(
                call_id(msg),
                tool,
                ToolKind::Mcp,
                input,
                Some(super::mcp_summary(inv.str_at("server"), tool)),
            );
        }
        "mcp_tool_call_end" => mcp_end(msg, m),
        "web_search_begin" => {
            let query = msg.str_at("query").filter(|q| !q.is_empty());
            let input = query.and_then(|_| msg.subset_json(&["query"]));
            m.tool_started(call_id(msg), "web_search", ToolKind::WebSearch, input, query.and_then(one_line));
        }
        "web_search_end" => m.push(end(msg, "web_search", ToolKind::WebSearch).event()),
        "token_count" => {
            if msg.get("info").is_some() || msg.get("rate_limits").is_some() {
                token_count(msg, None, m);
            } else if let Some(u) = usage::non_empty(crate::dialect::codex::counters(msg)) {
                m.push(Event::Usage {
                    env: Envelope::default(),
                    usage: usage::with_context(u),
                    model: None,
                    message_id: None,
                    context_window: None,
                });
            } else {
                m.heartbeat();
            }
        }
        "task_complete" | "turn_complete" => m.push(Event::TurnCompleted {
            env: Envelope::default(),
            usage: None,
            usage_scope: None,
            cost_scope: None,
            cost_usd: None,
            duration_ms: None,
            num_turns: None,
            result: msg.text_at("last_agent_message").filter(|t| !t.is_empty()),
            stop_reason: None,
            model_usage: None,
        }),
        "error" => {
            let Some(error) = msg.string_at("message") else {
                return m.unknown(UnknownReason::MalformedFrame, None);
            };
            m.push(Event::TurnFailed {
                env: Envelope::default(),
                kind: Some(failure_kind(&error)),
                error,
                usage: None,
                usage_scope: None,
                cost_scope: None,
                cost_usd: None,
                duration_ms: None,
                model_usage: None,
            });
        }
        "stream_error" => {
            let message = msg.str_at("message").unwrap_or("stream error").to_owned();
            m.push(diagnostic(Level::Warning, "codex.reconnecting", message, Vec::new()));
        }
        "plan_update" => match msg.get("plan").and_then(plan_items) {
            Some(items) => m.push(Event::PlanUpdated { env: Envelope::default(), items }),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "turn_aborted" => {
            let reason = msg.string_at("reason").unwrap_or_else(|| "aborted".to_owned());
            m.push(Event::Interrupt { env: Envelope::default(), reason });
        }
        "exec_approval_request" => {
            let prompt = msg.string_at("reason").or_else(|| msg.get("command").and_then(shell_summary));
            m.push(super::needs_input(None, prompt));
        }
        "apply_patch_approval_request" => {
            let paths: Vec<&str> =
                msg.get("changes").and_then(|c| c.entries()).unwrap_or_default().iter().map(|(k, _)| *k).collect();
            let prompt = msg.string_at("reason").or_else(|| (!paths.is_empty()).then(|| paths.join(", ")));
            m.push(super::needs_input(None, prompt));
        }
        // Deltas (`exec --json` suppressed them, but they may appear), and bookkeeping.
        "agent_message_delta"
        | "agent_reasoning_delta"
        | "agent_reasoning_raw_content_delta"
        | "agent_reasoning_section_break"
        | "exec_command_output_delta"
        | "turn_diff"
        | "background_event"
        | "get_history_entry_response"
        | "mcp_list_tools_response"
        | "list_custom_prompts_response"
        | "shutdown_complete" => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// The lines without `msg`: the leading config object and the prompt.
fn untyped(f: Val<'_>, m: &mut Mapped) {
    if let Some(prompt) = f.get("prompt").filter(|p| p.is_str()) {
        m.frame = "prompt".to_owned();
        return match prompt.text() {
            Some(text) if !text.is_empty() => m.push(Event::UserMessage { env: Envelope::default(), text }),
            _ => m.heartbeat(),
        };
    }
    if ["model", "provider", "sandbox"].iter().any(|k| f.get(k).is_some()) {
        m.frame = "config".to_owned();
        return m.heartbeat();
    }
    m.frame = f.string_at("type").unwrap_or_default();
    m.unknown(UnknownReason::UnrecognizedFrame, None);
}

/// A text event from `msg[key]`; a heartbeat when the text is empty.
fn text_event(msg: Val<'_>, key: &str, m: &mut Mapped, make: impl FnOnce(Text) -> Event) {
    match msg.text_at(key) {
        Some(t) if !t.is_empty() => m.push(make(t)),
        Some(_) => m.heartbeat(),
        None => m.unknown(UnknownReason::MalformedFrame, None),
    }
}

fn call_id(msg: Val<'_>) -> String {
    msg.string_at("call_id").unwrap_or_else(|| NO_ID.to_owned())
}

/// The completion of the call `msg` names, of the tool `name`, saying nothing more yet.
fn end(msg: Val<'_>, name: &str, kind: ToolKind) -> Outcome {
    Outcome { name: Some(name.to_owned()), kind: Some(kind), ..Outcome::new(call_id(msg)) }
}

/// `exec_command_end`: `ok` when the exit code is 0; the output is `aggregated_output` where
/// given, else stdout and stderr joined by a newline.
fn exec_end(msg: Val<'_>, m: &mut Mapped) {
    let output = msg.text_at("aggregated_output").filter(|t| !t.is_empty()).or_else(|| {
        let out = msg.text_at("stdout").filter(|t| !t.is_empty());
        let err = msg.text_at("stderr").filter(|t| !t.is_empty());
        match (out, err) {
            (Some(o), Some(e)) => {
                let (o, e) = (o.as_str(), e.as_str());
                let sep = if o.ends_with('\n') { "" } else { "\n" };
                Some(Text::from(format!("{o}{sep}{e}")))
            }
            (o, e) => o.or(e),
        }
    });
    let done = Outcome {
        exit_code: msg.get("exit_code").and_then(|c| c.i64()),
        output,
        duration_ms: msg.get("duration").and_then(duration_ms),
        ..end(msg, "exec_command", ToolKind::Shell)
    };
    m.push(done.event());
}

/// `mcp_tool_call_end`: `ok` for an `Ok` result whose `isError` is not true.
fn mcp_end(msg: Val<'_>, m: &mut Mapped) {
    // The tool's name where the end repeats it; else the fold takes it from the begin event.
    let tool = msg.path(&["invocation", "tool"]).or_else(|| msg.get("tool")).and_then(|t| t.str());
    let result = msg.get("result").filter(|r| r.is_object());
    let done = Outcome {
        name: tool.map(str::to_owned),
        kind: Some(ToolKind::Mcp),
        duration_ms: msg.get("duration").and_then(duration_ms),
        ..Outcome::new(call_id(msg))
    };
    let done = match result {
        Some(r) if r.get("Err").is_some() => {
            let e = r.get("Err").and_then(|e| e.str().map(str::to_owned).or_else(|| e.string_at("message")));
            Outcome { verdict: Some(Verdict::Failed), error: e, ..done }
        }
        // A failed call's message is its output's first line.
        Some(r) => {
            let call = r.get("Ok").filter(|o| o.is_object()).unwrap_or(r);
            let failed = call.bool_at("isError").or_else(|| call.bool_at("is_error")).unwrap_or(false);
            Outcome {
                verdict: Verdict::failed_if(failed),
                output: call.get("content").and_then(content_text).filter(|t| !t.is_empty()),
                ..done
            }
        }
        None => done,
    };
    m.push(done.event());
}

/// A Rust `Duration` as serde writes it, `{"secs", "nanos"}`, in milliseconds.
fn duration_ms(d: Val<'_>) -> Option<u64> {
    let secs = d.u64_at("secs")?;
    let nanos = d.u64_at("nanos").unwrap_or(0);
    secs.checked_mul(1000)?.checked_add(nanos / 1_000_000)
}
