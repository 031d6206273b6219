//! The Antigravity CLI (`agy`) `--output-format stream-json`: the `{"event": …}` envelope.
//!
//! agy 1.1–1.3 write every line as `{"event": E, E: {…}}` (the payload under a key named like
//! the event), with no `type` key: `init`, `step_update`, `result`, `command_result`, and (when
//! people tee stdin) the `user` echo. Older Gemini-shaped builds (`{"type":"init"…}`) are read
//! by the `gemini` adapter (SPEC §2); nothing here claims a frame with a `type`. Its quirks:
//! - Steps have no id: a tool step appears twice (`ACTIVE`, then `DONE` or `ERROR`) under the
//!   same `step_index`, which is unique per conversation and continues across resumed turns. The
//!   `tool_id` is `<conversation_id>:<step_index>` (`step:<n>` when the frame names no
//!   conversation).
//! - `agent_response` steps stream `text_delta` increments; `result.response` repeats their
//!   concatenation. Both go through [`Piece::TurnText`], so a build or a resumed turn that streams
//!   nothing still gets its text once, from the result. No thinking text is ever streamed.
//! - A `DONE` `agent_response` (and a `checkpoint`) carries one model call's `usage`: a `usage`
//!   event each. `result.usage` is a running total over the conversation (it grows across resumed
//!   turns): `usage_scope: "session"`. An all-zero usage (a pre-turn failure, a print timeout) is
//!   not a measurement and is left out; so is a zero `duration_seconds`, and the result's
//!   duration on a resumed turn (`num_turns` > 1), where it is the conversation's age.
//! - `result.denied_actions` (tools headless mode auto-denied) name no step, and the step they
//!   denied has already ended (`DONE` without output, or `ERROR` with its own message): each is a
//!   `warning` diagnostic `antigravity.action-denied`, keyed by the action.
//! - A result carrying `command` answers a slash command (`agy -p /model`, after a
//!   `command_result`): its `response` is the command's answer, not model text, so it goes on
//!   `turn_completed.result` only.
//! - An `event` this adapter does not know is `unknown` `unrecognized_frame` whose `frame` is the
//!   `event` value (the line has no `type`).

use super::{Accepts, Adapter, Claim, Mapped, Outcome, Piece, Verdict, content_text, diagnostic, failure_kind, mcp_summary, one_line};
use crate::event::{Envelope, Event, FailureKind, Level, Text, ToolKind, UnknownReason, Usage, UsageScope};
use crate::read::frame::Val;

/// The `antigravity` dialect.
pub(crate) struct Antigravity;

/// The events agy writes, each with its payload under the key of the same name.
const EVENTS: [&str; 4] = ["init", "step_update", "result", "command_result"];

impl Adapter for Antigravity {
    type Piece = std::convert::Infallible;
    type State = ();

    const ACCEPTS: Accepts = Accepts::types(&[], Claim::Envelope).untyped();

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        // Every other dialect has a `type` key: a line with one is never agy's envelope.
        if ty.is_some() || f.get("type").is_some() {
            return Claim::No;
        }
        let Some(event) = f.str_at("event") else { return Claim::No };
        let payload = match event {
            "command_result" => f.get("command"),
            "user" => f.get("message"),
            e => f.get(e),
        };
        if EVENTS.contains(&event) || event == "user" {
            if payload.is_some_and(|p| p.is_object()) { Claim::Envelope } else { Claim::Marked }
        } else {
            // An `event` envelope this adapter does not know yet (a newer agy): still agy's
            // shape, mapped to `unknown` with the `event` as its frame.
            Claim::Marked
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }
}

/// Maps one agy frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    let Some(event) = f.str_at("event") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = event.to_owned();
    // 1.1.x builds put the conversation id at the top level, 1.2+ inside the payload.
    let top_id = f.str_at("conversation_id");
    match event {
        "init" => init(f.get("init").filter(|p| p.is_object()), top_id, m),
        "step_update" => match f.get("step_update").filter(|p| p.is_object()) {
            Some(s) => step_update(s, top_id, m),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "result" => match f.get("result").filter(|p| p.is_object()) {
            Some(r) => result(r, top_id, m),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        "command_result" => {
            if f.get("command").is_some_and(|c| c.is_object()) {
                m.heartbeat()
            } else {
                m.unknown(UnknownReason::MalformedFrame, None)
            }
        }
        "user" => match f.get("message").and_then(|msg| msg.get("content")).and_then(content_text) {
            Some(text) => m.push(Event::UserMessage { env: Envelope::default(), text }),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// The conversation id of a payload (or the envelope), when not empty.
fn conversation(p: Val<'_>, top: Option<&str>) -> Option<String> {
    p.str_at("conversation_id").or(top).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn init(p: Option<Val<'_>>, top: Option<&str>, m: &mut Mapped) {
    let Some(p) = p else { return m.unknown(UnknownReason::MalformedFrame, None) };
    let Some(id) = conversation(p, top) else {
        // No conversation to name: nothing to start.
        return m.heartbeat();
    };
    m.session_id = Some(id);
    let tools = p.array_at("tools").map(|a| a.filter_map(|t| t.str().map(str::to_owned)).collect::<Vec<_>>());
    // A repeated `init` of the same conversation is deduplicated by the fold (a heartbeat).
    m.push(Event::SessionStarted {
        env: Envelope::default(),
        model: p.string_at("model"),
        cwd: p.string_at("cwd"),
        cli_version: None,
        permission_mode: p.string_at("permission_mode"),
        tools,
        parent_session_id: None,
    });
}

fn step_update(s: Val<'_>, top: Option<&str>, m: &mut Mapped) {
    let conv = conversation(s, top);
    m.session_id.clone_from(&conv);
    let (Some(step_type), Some(state)) = (s.str_at("step_type"), s.str_at("state")) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("step_update", step_type);
    let index = s.u64_at("step_index");
    let step_id = match (&conv, index) {
        (Some(c), Some(i)) => format!("{c}:{i}"),
        (None, Some(i)) => format!("step:{i}"),
        // No index: the fold names the call after its line.
        _ => super::NO_ID.to_owned(),
    };
    match step_type {
        "agent_response" => {
            if let Some(text) = s.text_at("text_delta").filter(|t| !t.is_empty()) {
                m.push_piece(Piece::TurnText { text, fragment: true, message_id: Some(step_id.clone()) });
            }
            if state == "ERROR" {
                let message = step_error(s).unwrap_or_else(|| "agent step failed".to_owned());
                m.push(diagnostic(Level::Error, "antigravity.step-error", message, Vec::new()));
            }
            step_usage(s, m);
            if m.pieces.is_empty() {
                m.heartbeat();
            }
        }
        "tool" | "subagent" => tool(s, state, step_id, m),
        "checkpoint" => {
            // A checkpoint may be a model call of its own (counted in `result.usage`).
            step_usage(s, m);
            if m.pieces.is_empty() {
                m.heartbeat();
            }
        }
        "user_input" | "system_message" | "error_message" | "unknown" => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// The `usage` event of a step that was a model call.
fn step_usage(s: Val<'_>, m: &mut Mapped) {
    if let Some(u) = s.get("usage").and_then(counters) {
        m.push(Event::Usage {
            env: Envelope::default(),
            usage: super::usage::with_context(u),
            model: None,
            message_id: None,
            context_window: None,
        });
    }
}

/// The message of a step's or its tool's `error` (`{type, message}` or a string).
fn step_error(s: Val<'_>) -> Option<String> {
    let of = |e: Val<'_>| e.str_at("message").or_else(|| e.str()).or_else(|| e.str_at("type")).map(str::to_owned);
    s.path(&["tool_info", "error"]).and_then(of).or_else(|| s.get("error").and_then(of)).filter(|e| !e.is_empty())
}

fn tool(s: Val<'_>, state: &str, tool_id: String, m: &mut Mapped) {
    let info = s.get("tool_info").filter(|i| i.is_object());
    let Some(name) = s.str_at("tool_name").or_else(|| info.and_then(|i| i.str_at("name"))) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let kind = tool_kind(name);
    let input = info.and_then(|i| i.get("parameters")).filter(|p| !p.is_null());
    // Every line of the step names the call: a start (repeats are deduplicated by the fold), so
    // a completion whose start was cut off still gets its tool's input.
    m.tool_started(tool_id.clone(), name, kind, input.map(|v| v.to_json()), summary(name, input));
    if state == "ACTIVE" {
        if kind == ToolKind::Ask
            && let Some(q) = input.and_then(|i| i.str_at("Question").or_else(|| i.str_at("question")))
        {
            m.push(super::needs_input(None, Some(q.to_owned())));
        }
        return;
    }
    let verdict = match state {
        "DONE" => Verdict::Succeeded,
        "ERROR" => Verdict::Failed,
        _ => return m.unknown(UnknownReason::UnrecognizedFrame, Some(format!("step_update/tool/{state}"))),
    };
    let duration_ms = s.f64_at("duration_seconds").filter(|d| d.is_finite() && *d >= 0.0).map(|d| (d * 1000.0).round() as u64);
    m.push(
        Outcome {
            tool_id,
            name: Some(name.to_owned()),
            kind: Some(kind),
            verdict: Some(verdict),
            output: info.and_then(|i| i.get("output")).and_then(content_text),
            error: step_error(s),
            duration_ms,
            ..Outcome::default()
        }
        .event(),
    );
}

fn result(r: Val<'_>, top: Option<&str>, m: &mut Mapped) {
    m.session_id = conversation(r, top);
    let Some(status) = r.str_at("status") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("result", status);
    for d in r.array_at("denied_actions").into_iter().flatten() {
        let Some(action) = d.str_at("action") else { continue };
        let shown = d.str_at("display_name").unwrap_or(action);
        let message = format!("{shown} was auto-denied (headless mode cannot prompt for permission)");
        let mut ev = diagnostic(Level::Warning, "antigravity.action-denied", message, Vec::new());
        if let Event::Diagnostic { dedupe_key, .. } = &mut ev {
            *dedupe_key = format!("antigravity.action-denied|{action}");
        }
        m.push(ev);
    }
    let response = r.text_at("response").filter(|t: &Text| !t.is_empty());
    let slash_command = r.get("command").is_some_and(|c| c.is_object());
    if let Some(text) = response.clone().filter(|_| !slash_command) {
        // Only what the turn's deltas did not already write.
        m.push_piece(Piece::TurnText { text, fragment: false, message_id: None });
    }
    let usage = r.get("usage").and_then(counters);
    let usage_scope = usage.map(|_| UsageScope::Session);
    let num_turns = r.u64_at("num_turns");
    let duration_ms = r
        .f64_at("duration_seconds")
        .filter(|d| d.is_finite() && *d > 0.0 && num_turns.is_none_or(|n| n <= 1))
        .map(|d| (d * 1000.0).round() as u64);
    match status {
        "SUCCESS" => m.push(Event::TurnCompleted {
            env: Envelope::default(),
            usage,
            usage_scope,
            cost_usd: None,
            cost_scope: None,
            duration_ms,
            num_turns,
            result: response,
            stop_reason: None,
            model_usage: None,
        }),
        _ => {
            let error = r
                .str_at("error")
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("agy status {status}"));
            m.push(Event::TurnFailed {
                env: Envelope::default(),
                kind: Some(failure(status, &error)),
                error,
                usage,
                usage_scope,
                cost_scope: None,
                cost_usd: None,
                duration_ms,
                model_usage: None,
            });
        }
    }
}

/// The class of a failed result, from agy's status and message texts.
fn failure(status: &str, error: &str) -> FailureKind {
    let e = error.to_ascii_lowercase();
    if status == "CANCELED" || e.contains("context canceled") || e.contains("timeout waiting for response") {
        FailureKind::Aborted
    } else if e.contains("quota reached") || e.contains("exhausted your quota") || e.contains("credits balance is too low")
    {
        FailureKind::UsageLimit
    } else if e.contains("authentication failed") || e.contains("not logged in") || e.contains("sign in") {
        FailureKind::Auth
    } else if e.contains("resource_exhausted") || e.contains("code 429") {
        // Google uses it for short rate limits too: not the plan's quota.
        FailureKind::ApiError
    } else {
        failure_kind(error)
    }
}

/// agy's usage object (SPEC §4): `input_tokens` excludes `cache_read_tokens`, `thinking_tokens`
/// is a part of `output_tokens`, no cache writes are reported, `total_tokens` is ignored. `None`
/// when no figure is given or all are zero (not a measurement).
pub fn counters(u: Val<'_>) -> Option<Usage> {
    let usage = Usage {
        input: u.u64_at("input_tokens"),
        cache_read: u.u64_at("cache_read_tokens"),
        cache_write: None,
        output: u.u64_at("output_tokens"),
        reasoning: u.u64_at("thinking_tokens"),
        context: None,
        ..Usage::default()
    };
    let all_zero = [usage.input, usage.cache_read, usage.output, usage.reasoning].iter().all(|f| f.unwrap_or(0) == 0);
    (!all_zero).then_some(usage)
}

/// agy's tool names (from `init.tools`, 1.2/1.3) onto the contract's kinds.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "run_command" | "send_command_input" | "command_status" => ToolKind::Shell,
        "view_file" | "list_dir" | "read_resource" | "list_resources" => ToolKind::Read,
        "write_to_file" => ToolKind::Write,
        "replace_file_content" | "multi_replace_file_content" | "sed_file" | "notebook_edit" => ToolKind::Edit,
        "grep_search" | "find_by_name" => ToolKind::Search,
        "read_url_content" | "read_browser_page" | "open_browser_url" | "click_browser_pixel"
        | "execute_browser_javascript" | "list_browser_pages" => ToolKind::Fetch,
        n if n.starts_with("browser_") && n != "browser_subagent" || n.starts_with("capture_browser_") => {
            ToolKind::Fetch
        }
        "search_web" => ToolKind::WebSearch,
        "call_mcp_tool" => ToolKind::Mcp,
        "invoke_subagent" | "browser_subagent" | "define_subagent" | "manage_subagents" | "send_message" => {
            ToolKind::Task
        }
        "manage_task" => ToolKind::Plan,
        "ask_question" | "ask_permission" | "ask_custom_permission" => ToolKind::Ask,
        _ => ToolKind::Other,
    }
}

/// The one-line summary of a call: agy's parameter keys are PascalCase (but `search_web.query`).
fn summary(name: &str, input: Option<Val<'_>>) -> Option<String> {
    let input = input?;
    if name == "call_mcp_tool" {
        let tool = input.str_at("ToolName")?;
        return Some(mcp_summary(input.str_at("ServerName"), tool));
    }
    [
        "CommandLine",
        "AbsolutePath",
        "DirectoryPath",
        "TargetFile",
        "Url",
        "Query",
        "query",
        "Pattern",
        "SearchPath",
        "Question",
        "Prompt",
    ]
    .iter()
    .find_map(|k| input.str_at(k))
    .and_then(one_line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::frame::Parser;

    fn claim(line: &str) -> Claim {
        Parser::default().with_frame(line.as_bytes(), |v| {
            let v = v.unwrap();
            Antigravity::claim(v, v.str_at("type"))
        })
    }

    #[test]
    fn claims_the_event_envelope_only() {
        assert_eq!(claim(r#"{"event":"init","conversation_id":"c","init":{"cwd":"/"}}"#), Claim::Envelope);
        assert_eq!(claim(r#"{"event":"command_result","command":{"name":"model"}}"#), Claim::Envelope);
        assert_eq!(claim(r#"{"event":"brand_new","brand_new":{}}"#), Claim::Marked);
        // Gemini-shaped Antigravity (and every other dialect) has a `type`.
        assert_eq!(claim(r#"{"type":"init","session_id":"s","model":"m"}"#), Claim::No);
        assert_eq!(claim(r#"{"type":"stream_event","event":{"type":"message_start"}}"#), Claim::No);
        assert_eq!(claim(r#"{"event":42}"#), Claim::No);
    }

    #[test]
    fn kinds_and_counters() {
        assert_eq!(tool_kind("run_command"), ToolKind::Shell);
        assert_eq!(tool_kind("browser_click"), ToolKind::Fetch);
        assert_eq!(tool_kind("browser_subagent"), ToolKind::Task);
        assert_eq!(tool_kind("manage_task"), ToolKind::Plan);
        let u = Parser::default().with_frame(
            br#"{"input_tokens":5,"output_tokens":7,"thinking_tokens":3,"cache_read_tokens":11,"total_tokens":12}"#,
            |v| counters(v.unwrap()),
        );
        assert_eq!(
            u,
            Some(Usage { input: Some(5), cache_read: Some(11), output: Some(7), reasoning: Some(3), ..Usage::default() })
        );
        let zero = Parser::default().with_frame(
            br#"{"input_tokens":0,"output_tokens":0,"thinking_tokens":0,"cache_read_tokens":0,"total_tokens":0}"#,
            |v| counters(v.unwrap()),
        );
        assert_eq!(zero, None, "all zeros is no measurement");
    }
}
