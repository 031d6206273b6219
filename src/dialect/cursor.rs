//! Cursor agent `--output-format stream-json` (with or without `--stream-partial-output`).
//!
//! The whole mapping of one Cursor frame. Cursor borrows Claude's `system`/`user`/`assistant`/
//! `result` frames, so a frame without a Cursor-only mark is mapped by both adapters and the
//! stream's stickiness picks (SPEC §2). Its quirks:
//!
//! - **Assistant text repeats.** Three `assistant` shapes exist: `timestamp_ms` without
//!   `model_call_id` is a streamed fragment (partial output on); `timestamp_ms` with
//!   `model_call_id` flushes the segment before a tool call; neither is the end-of-turn flush.
//!   With partial output on, the flushes repeat text already streamed; without it, they are the
//!   only copy (the end-of-turn flush then holds the last segment only). So no shape can be
//!   dropped by its marks: fragments are [`Piece::TurnText`] `fragment: true`, flushes
//!   `fragment: false`, and the fold writes only what the turn has not written yet.
//! - **Tool calls** are `tool_call` frames `started`/`completed` holding one
//!   `tool_call.<name>ToolCall` object (`args`, and on completion `result` with one of
//!   `success`, `failure`, `error`, `rejected`, …), or a generic `function` `{name, arguments}`
//!   whose `arguments` may be a JSON string (decoded). `name` is the key without `ToolCall`
//!   (`shellToolCall` → `shell`) or the function's name; `kind` comes from [`tool_kind`]. A rejected
//!   completion may carry no `args` at all. The output is chosen per tool (see `success_output`);
//!   a structured result with no text field is written as compact JSON.
//! - `updateTodosToolCall` also gives `plan_updated`; `TODO_STATUS_CANCELLED` has no contract
//!   status and is written `completed` (no longer open work).
//! - `thinking` `delta` gives `reasoning` with its text (without text when it carries a
//!   `model_call_id`: a recap of deltas already written); `thinking` `completed` and plan mode's
//!   `interaction_query` `request`/`response` are heartbeats.
//! - `timestamp_ms` (epoch milliseconds) is the frame's `at`; `result.usage` is camelCase and is
//!   the turn's aggregate (there is no per-request usage, so no `usage` events).

use super::{Accepts, Adapter, Claim, Mapped, NO_ID, Outcome, Piece, Verdict, failure_kind, one_line, plan_status, summary, unlisted_kind};
use crate::dialect::usage;
use crate::event::{Envelope, Event, FailureKind, PlanItem, Text, ToolKind, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `cursor` dialect.
pub(crate) struct Cursor;

impl Adapter for Cursor {
    type Piece = std::convert::Infallible;
    type State = ();

    const ACCEPTS: Accepts = Accepts::types(
        &[&["tool_call", "thinking", "interaction_query", "system", "assistant", "user", "result"]],
        Claim::Marked,
    );

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        match ty {
            Some("tool_call" | "thinking" | "interaction_query") => Claim::Marked,
            // Shared with Claude (whose own marks override these, SPEC §2).
            Some(ty @ ("system" | "assistant" | "user" | "result")) => {
                let mark = f.get("timestamp_ms").is_some()
                    || f.get("model_call_id").is_some()
                    || (ty == "system" && f.get("apiKeySource").is_some())
                    || (ty == "result"
                        && f.get("usage")
                            .is_some_and(|u| u.get("inputTokens").is_some() || u.get("cacheReadTokens").is_some()));
                if mark { Claim::Marked } else { Claim::Fits }
            }
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }
}

/// Maps one Cursor frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.session_id = f.string_at("session_id");
    m.at = present(f, "timestamp_ms").and_then(|t| {
        t.u64().map(|n| n.to_string()).or_else(|| t.f64().map(|n| n.to_string())).or_else(|| t.str().map(str::to_owned))
    });
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    match ty {
        "system" => system(f, m),
        "user" => user(f, m),
        "assistant" => assistant(f, m),
        "thinking" => thinking(f, m),
        "tool_call" => tool_call(f, m),
        "result" => result(f, m),
        "interaction_query" => match f.str_at("subtype") {
            Some(sub @ ("request" | "response")) => {
                m.set_frame("interaction_query", sub);
                m.heartbeat();
            }
            Some(sub) => m.unknown(UnknownReason::UnrecognizedFrame, Some(format!("interaction_query/{sub}"))),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// `get(key)` unless absent or `null`.
fn present<'t>(v: Val<'t>, key: &str) -> Option<Val<'t>> {
    v.get(key).filter(|x| !x.is_null())
}

fn system(f: Val<'_>, m: &mut Mapped) {
    let Some(sub) = f.str_at("subtype") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("system", sub);
    if sub != "init" {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    }
    if m.session_id.is_none() {
        return m.unknown(UnknownReason::MalformedFrame, None);
    }
    m.push(Event::SessionStarted {
        env: Envelope::default(),
        model: f.string_at("model"),
        cwd: f.string_at("cwd"),
        cli_version: None,
        permission_mode: f.string_at("permissionMode"),
        tools: None,
        parent_session_id: None,
    });
}

/// The text blocks of a message's `content` (a string, or an array of blocks), joined by `sep`;
/// other blocks are written as `[<type>]` when `others` is set. `None` when `content` is neither.
fn message_text(content: Option<Val<'_>>, sep: &str, others: bool) -> Option<Text> {
    let content = content?;
    if content.is_str() {
        return content.text();
    }
    // Counted, then joined in one string: a line of very many blocks is not held again as a list
    // of them and a list of their texts.
    let (mut blocks, mut texts, mut only) = (0usize, 0usize, None);
    for b in content.array()? {
        blocks += 1;
        if b.str_at("type") == Some("text") {
            texts += 1;
            only = Some(b);
        }
    }
    if let (1, Some(only)) = (texts, only)
        && (!others || blocks == 1)
    {
        return only.text_at("text").or_else(|| Some(Text::from("")));
    }
    let mut joined = String::new();
    let mut first = true;
    let mut part = |p: &str| {
        if !std::mem::take(&mut first) {
            joined.push_str(sep);
        }
        joined.push_str(p);
    };
    for b in content.array()? {
        match (b.str_at("type"), b.str_at("text")) {
            (Some("text"), Some(t)) => part(t),
            (Some("text" | "thinking"), None) | (None, _) => {}
            (Some(t), _) if others => part(&format!("[{t}]")),
            _ => {}
        }
    }
    Some(Text::from(joined))
}

fn user(f: Val<'_>, m: &mut Mapped) {
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    match message_text(msg.get("content"), "\n", true) {
        Some(text) if !text.is_empty() => m.push(Event::UserMessage { env: Envelope::default(), text }),
        Some(_) => m.heartbeat(),
        None => m.unknown(UnknownReason::MalformedFrame, None),
    }
}

/// A frame that repeats what was streamed before it: it carries `model_call_id`.
fn is_recap(f: Val<'_>) -> bool {
    present(f, "model_call_id").is_some()
}

fn assistant(f: Val<'_>, m: &mut Mapped) {
    let Some(msg) = f.get("message").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let content = msg.get("content");
    let Some(text) = message_text(content, "", false) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    // Thinking blocks inside an assistant message (some builds): reasoning, as `thinking` frames.
    if let Some(blocks) = content.and_then(|c| c.array()) {
        for b in blocks.filter(|b| b.str_at("type") == Some("thinking")) {
            let text = b.text_at("thinking").filter(|t| !t.is_empty() && !is_recap(f));
            m.push(Event::Reasoning { env: Envelope::default(), text });
        }
    }
    if text.is_empty() {
        if m.pieces.is_empty() {
            m.heartbeat();
        }
        return;
    }
    // A streamed fragment is always new; a flush (with `model_call_id`, or with neither mark) may
    // repeat fragments or an earlier flush: the fold keeps only what the turn has not written.
    let fragment = present(f, "timestamp_ms").is_some() && !is_recap(f);
    m.pieces.push(Piece::TurnText { text, fragment, message_id: None });
}

fn thinking(f: Val<'_>, m: &mut Mapped) {
    let Some(sub) = f.str_at("subtype") else {
        // An untyped thinking frame with text (older builds): a delta.
        let text = f.text_at("text").filter(|t| !t.is_empty());
        return m.push(Event::Reasoning { env: Envelope::default(), text });
    };
    m.set_frame("thinking", sub);
    match sub {
        "delta" => {
            let text = f.text_at("text").filter(|t| !t.is_empty() && !is_recap(f));
            m.push(Event::Reasoning { env: Envelope::default(), text });
        }
        "completed" => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn result(f: Val<'_>, m: &mut Mapped) {
    let subtype = f.str_at("subtype");
    if let Some(s) = subtype {
        m.set_frame("result", s);
    }
    let failed = f.bool_at("is_error").unwrap_or_else(|| subtype.is_some_and(|s| s.starts_with("error")));
    let usage = f.get("usage").filter(|u| u.is_object()).map(counters).and_then(usage::non_empty);
    let duration_ms = f.u64_at("duration_ms");
    if !failed {
        m.push(Event::TurnCompleted {
            env: Envelope::default(),
            usage,
            usage_scope: None,
            cost_scope: None,
            cost_usd: None,
            duration_ms,
            num_turns: None,
            result: f.text_at("result"),
            stop_reason: None,
            model_usage: None,
        });
        return;
    }
    let error = f
        .str_at("result")
        .filter(|r| !r.trim().is_empty())
        .or_else(|| f.path(&["error", "message"]).and_then(|v| v.str()))
        .or_else(|| f.str_at("error"))
        .or(subtype)
        .unwrap_or("error")
        .to_owned();
    let kind = match failure_kind(&error) {
        FailureKind::Other => match f.str_at("error_kind") {
            Some(k) => failure_kind(k),
            None => FailureKind::Other,
        },
        k => k,
    };
    m.push(Event::TurnFailed {
        env: Envelope::default(),
        error,
        kind: Some(kind),
        usage,
        usage_scope: None,
        cost_scope: None,
        cost_usd: None,
        duration_ms,
        model_usage: None,
    });
}

/// One tool call as a `tool_call` frame holds it.
struct Call<'t> {
    /// The contract's `name`: the key without `ToolCall`, or the function's name.
    name: String,
    /// The arguments, absent or `null` left out.
    args: Option<Val<'t>>,
    /// `arguments` given as a JSON string (the generic `function` entry).
    args_string: Option<&'t str>,
    /// The object holding `result` (and `toolCallId` in some builds).
    body: Val<'t>,
}

/// Finds the call in `tool_call`: a `<name>ToolCall` key, the generic `function` entry, a flat
/// `{name, args, result}`, or else the first key holding an object.
fn find_call(tc: Val<'_>) -> Option<Call<'_>> {
    let entries = tc.entries()?;
    let objects = || entries.iter().filter(|(_, v)| v.is_object());
    let typed = objects().find(|(k, _)| k.len() > "ToolCall".len() && k.ends_with("ToolCall"));
    if let Some((key, body)) = typed {
        let name = key.strip_suffix("ToolCall").unwrap_or(key).to_owned();
        return Some(Call { name, args: present(*body, "args"), args_string: None, body: *body });
    }
    let (name, body) = match objects().find(|(k, _)| *k == "function") {
        Some((_, body)) => (body.str_at("name").filter(|n| !n.is_empty()).unwrap_or("function"), *body),
        None => match tc.str_at("name").filter(|n| !n.is_empty()) {
            Some(n) => (n, tc),
            None => {
                let (key, body) = objects().next()?;
                (*key, *body)
            }
        },
    };
    let raw = present(body, "arguments").or_else(|| present(body, "args"));
    let args_string = raw.and_then(|a| a.str());
    let args = raw.filter(|a| !a.is_str());
    Some(Call { name: name.to_owned(), args, args_string, body })
}

/// The call's `kind`, from Cursor's tool names (SPEC §3): the camelCase keys of its
/// `<name>ToolCall` objects, the snake_case function names of its agent and hooks
/// (`run_terminal_cmd`, `read_file`, `edit_file`, `search_replace`, `codebase_search`, …) and
/// their snake_case spellings (`str_replace`, `update_todos`); `mcp__<server>__<tool>` is mcp.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "shell" | "bash" | "terminal" | "runTerminalCommand" | "run_terminal_cmd" => ToolKind::Shell,
        "read" | "readFile" | "read_file" | "ls" | "listDir" | "list_dir" | "list" => ToolKind::Read,
        "write" | "writeFile" | "createFile" | "create_file" => ToolKind::Write,
        "edit" | "editFile" | "edit_file" | "multiEdit" | "searchReplace" | "search_replace" | "strReplace"
        | "str_replace" | "applyPatch" | "delete" | "deleteFile" | "delete_file" => ToolKind::Edit,
        "grep" | "grep_search" | "ripgrep" | "glob" | "globFileSearch" | "glob_file_search" | "codebaseSearch"
        | "codebase_search" | "semSearch" | "search" | "fileSearch" | "file_search" | "readsemsearchfiles" => {
            ToolKind::Search
        }
        "fetch" | "webFetch" => ToolKind::Fetch,
        "webSearch" | "searchWeb" | "web_search" => ToolKind::WebSearch,
        "mcp" => ToolKind::Mcp,
        "task" => ToolKind::Task,
        "updateTodos" | "update_todos" | "todoWrite" | "todo_write" => ToolKind::Plan,
        n => unlisted_kind(n),
    }
}

/// The call's one-line summary: the glob pattern, the MCP server and tool, else the shared rule.
fn call_summary(name: &str, kind: ToolKind, args: Option<Val<'_>>) -> Option<String> {
    let a = args?;
    match name {
        "glob" | "globFileSearch" => a
            .str_at("globPattern")
            .or_else(|| a.str_at("pattern"))
            .or_else(|| a.str_at("targetDirectory"))
            .and_then(one_line),
        "mcp" => {
            let server =
                ["providerIdentifier", "serverIdentifier", "server", "serverName"].iter().find_map(|k| a.str_at(k));
            let tool = a.str_at("toolName").or_else(|| a.str_at("tool")).or_else(|| a.str_at("name"));
            match (server, tool) {
                (Some(s), Some(t)) => one_line(&format!("{s}/{t}")),
                (s, t) => t.or(s).and_then(one_line),
            }
        }
        _ => summary(kind, Some(a)),
    }
}

fn tool_call(f: Val<'_>, m: &mut Mapped) {
    let Some(sub) = f.str_at("subtype") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("tool_call", sub);
    let completed = match sub {
        "started" => false,
        "completed" => true,
        _ => return m.unknown(UnknownReason::UnrecognizedFrame, None),
    };
    let Some(tc) = f.get("tool_call").filter(|v| v.is_object()) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let Some(call) = find_call(tc) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let tool_id = f
        .str_at("call_id")
        .or_else(|| tc.str_at("toolCallId"))
        .or_else(|| call.body.str_at("toolCallId"))
        .or_else(|| call.args.and_then(|a| a.str_at("toolCallId")))
        .filter(|id| !id.is_empty())
        .unwrap_or(NO_ID)
        .to_owned();
    let kind = tool_kind(&call.name);
    let input = match call.args_string {
        Some(s) => crate::read::frame::decode_embedded(s),
        None => call.args.map(|a| a.to_json()),
    };
    // A completion line carries a start too: dropped by the fold when the start was seen, else
    // the synthetic start (with the arguments this line still has).
    m.push(Event::ToolStarted {
        env: Envelope::default(),
        tool_id: tool_id.clone(),
        name: call.name.clone(),
        kind,
        input,
        summary: call_summary(&call.name, kind, call.args),
        synthetic: completed.then_some(true),
    });
    let todos = call.args.and_then(|a| a.get("todos"));
    let merge = call.args.and_then(|a| a.bool_at("merge")) == Some(true);
    if kind == ToolKind::Plan && !completed && !merge {
        push_plan(todos, m);
    }
    if !completed {
        return;
    }
    let result = present(call.body, "result");
    m.push(Outcome { tool_id, duration_ms: result.and_then(execution_time), ..outcome(&call.name, result) }.event());
    // The list after the update, when the CLI echoes it and it is not the one the start gave.
    if kind == ToolKind::Plan {
        let after = result.and_then(|r| r.path(&["success", "todos"]));
        let changed = after.is_some_and(|a| merge || todos.is_none_or(|t| t.to_json() != a.to_json()));
        if changed {
            push_plan(after, m);
        }
    }
}

/// `plan_updated` from Cursor's todo list (`[{content, status: "TODO_STATUS_…"}]`).
fn push_plan(todos: Option<Val<'_>>, m: &mut Mapped) {
    let Some(list) = todos.and_then(|t| t.array()) else { return };
    let items = list
        .filter_map(|it| {
            let text = it.str_at("content").or_else(|| it.str_at("text"))?;
            Some(PlanItem { text: text.to_owned(), status: plan_status(it.str_at("status").unwrap_or("")) })
        })
        .collect();
    m.push(Event::PlanUpdated { env: Envelope::default(), items });
}

/// Result keys that mean the call did not succeed.
const FAILURES: [&str; 8] = ["failure", "error", "rejected", "canceled", "cancelled", "aborted", "denied", "timeout"];

fn outcome(name: &str, result: Option<Val<'_>>) -> Outcome {
    let Some(r) = result else {
        return Outcome::default();
    };
    if r.is_str() {
        return Outcome { output: r.text().filter(|t| !t.is_empty()), ..Outcome::default() };
    }
    let failure = FAILURES.iter().find_map(|k| present(r, k).map(|v| (*k, v)));
    let (key, body) = match (present(r, "success"), failure) {
        (Some(s), _) => ("success", s),
        (None, Some(fail)) => fail,
        // A flat result without a status key: its fields are the success.
        (None, None) => ("success", r),
    };
    let exit_code = body.get("exitCode").and_then(|c| c.i64());
    if key == "success" {
        // A failure is named by its exit code, else by its output's first line.
        return Outcome {
            verdict: Verdict::failed_if(body.bool_at("isError") == Some(true)),
            exit_code,
            output: success_output(name, body),
            ..Outcome::default()
        };
    }
    let message = body
        .text()
        .or_else(|| ["message", "error", "reason", "stderr"].iter().find_map(|k| body.text_at(k)))
        .filter(|t| !t.as_str().trim().is_empty());
    let output = match name {
        "shell" | "bash" | "terminal" => shell_output(body).or_else(|| message.clone()),
        _ => message.clone(),
    };
    // A rejection says so; a command that exited non-zero is named by its exit code (its
    // `stderr` is output, not the message); else the message, else the failure key.
    let error = match (key, exit_code, message.as_ref().and_then(super::text_line)) {
        ("rejected", _, Some(why)) => Some(format!("rejected: {why}")),
        ("rejected", _, None) => Some("rejected".to_owned()),
        (_, Some(c), _) if c != 0 => None,
        (_, _, Some(why)) => Some(why),
        (k, _, None) => Some(k.to_owned()),
    };
    Outcome { verdict: Some(Verdict::Failed), output, exit_code, error, ..Outcome::default() }
}

/// The call's own runtime, `executionTime` (ms) of the result's `success` / `failure` body (shell
/// calls report it); none is derived from `timestamp_ms` differences (absent means the source
/// did not say).
fn execution_time(r: Val<'_>) -> Option<u64> {
    ["success", "failure"].iter().find_map(|k| present(r, k).and_then(|b| b.u64_at("executionTime")))
}

/// `stdout` and `stderr` of a shell call, joined by `\n` when both have text.
fn shell_output(b: Val<'_>) -> Option<Text> {
    let out = b.text_at("stdout").filter(|t| !t.is_empty());
    let err = b.text_at("stderr").filter(|t| !t.is_empty());
    match (out, err) {
        (Some(o), Some(e)) => {
            let mut s = o.as_str().into_owned();
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&e.as_str());
            Some(Text::from(s))
        }
        (o, e) => o.or(e),
    }
}

/// The text of an MCP result's `content` blocks: `{text: "…"}` or `{text: {text: "…"}}` (as
/// Cursor nests it), others as `[<type>]`, joined by `\n`.
fn mcp_content(content: Val<'_>) -> Option<Text> {
    if content.is_str() {
        return content.text();
    }
    let blocks: Vec<Val<'_>> = content.array()?.collect();
    let text_of = |b: &Val<'_>| b.text_at("text").or_else(|| b.path(&["text", "text"]).and_then(|t| t.text()));
    if let [only] = blocks.as_slice()
        && let Some(t) = text_of(only)
    {
        return Some(t);
    }
    let parts: Vec<String> = blocks
        .iter()
        .map(|b| match text_of(b) {
            Some(t) => t.as_str().into_owned(),
            None => format!("[{}]", b.str_at("type").unwrap_or("block")),
        })
        .collect();
    Some(Text::from(parts.join("\n")))
}

/// The output of a successful call: the field that holds its text for the tools Cursor names
/// (`shell` stdout/stderr, `read` content, `edit` diffString or message, `glob` files, `mcp`
/// content blocks); otherwise the first text field of `content`, `output`, `stdout`, `message`,
/// `text`, `result`; otherwise the result object as compact JSON (`write`, `grep`, `ls`, …).
fn success_output(name: &str, s: Val<'_>) -> Option<Text> {
    if s.is_str() {
        return s.text().filter(|t| !t.is_empty());
    }
    let own = match name {
        "shell" | "bash" | "terminal" if s.get("stdout").is_some() || s.get("stderr").is_some() => {
            Some(shell_output(s))
        }
        "read" if s.get("content").is_some() => Some(s.text_at("content")),
        "edit" if s.get("diffString").is_some() || s.get("message").is_some() => {
            Some(s.text_at("diffString").filter(|t| !t.is_empty()).or_else(|| s.text_at("message")))
        }
        "glob" | "globFileSearch" if s.get("files").is_some() => Some(
            s.array_at("files")
                .map(|a| a.filter_map(|p| p.str().map(str::to_owned)).collect::<Vec<_>>().join("\n"))
                .map(Text::from),
        ),
        "mcp" if s.get("content").is_some() => Some(s.get("content").and_then(mcp_content)),
        _ => None,
    };
    if let Some(out) = own {
        return out.filter(|t| !t.is_empty());
    }
    for k in ["content", "output", "stdout", "message", "text", "result"] {
        if let Some(v) = present(s, k) {
            if let Some(t) = v.text() {
                return Some(t).filter(|t| !t.is_empty());
            }
            if k == "content" && v.array().is_some() {
                return mcp_content(v).filter(|t| !t.is_empty());
            }
        }
    }
    let empty = s.entries().is_none_or(|e| e.is_empty());
    (!empty).then(|| Text::from(s.to_json().get().to_owned()))
}

/// Cursor `result.usage` (camelCase): `inputTokens`, `cacheReadTokens`, `cacheWriteTokens`,
/// `outputTokens`.
pub(crate) fn counters(u: Val<'_>) -> Usage {
    Usage {
        input: u.u64_at("inputTokens"),
        cache_read: u.u64_at("cacheReadTokens"),
        cache_write: u.u64_at("cacheWriteTokens"),
        output: u.u64_at("outputTokens"),
        reasoning: None,
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
    fn camel_case_counters() {
        let c =
            counted(r#"{"inputTokens":4,"outputTokens":122,"cacheReadTokens":13535,"cacheWriteTokens":15844}"#, counters);
        assert_eq!(crate::dialect::usage::with_context(c).context, Some(29383));
    }

    use crate::read::frame::Parser;

    fn mapped(line: &str) -> Mapped {
        let mut m = Mapped::default();
        Parser::default().with_frame(line.as_bytes(), |v| map(v.expect("object"), &mut m));
        m
    }

    fn events(m: &Mapped) -> Vec<&Event> {
        m.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Event(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn assistant_marks_decide_fragment() {
        let frag =
            mapped(r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]},"timestamp_ms":5}"#);
        assert!(matches!(&frag.pieces[..], [Piece::TurnText { fragment: true, .. }]));
        assert_eq!(frag.at.as_deref(), Some("5"));
        let flush = mapped(
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]},"timestamp_ms":5,"model_call_id":"x"}"#,
        );
        assert!(matches!(&flush.pieces[..], [Piece::TurnText { fragment: false, .. }]));
        let last = mapped(r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]}}"#);
        assert!(matches!(&last.pieces[..], [Piece::TurnText { fragment: false, .. }]));
        assert_eq!(last.at, None);
    }

    #[test]
    fn tool_names_and_kinds() {
        assert_eq!(tool_kind("shell"), ToolKind::Shell);
        assert_eq!(tool_kind("updateTodos"), ToolKind::Plan);
        assert_eq!(tool_kind("mcp"), ToolKind::Mcp);
        assert_eq!(tool_kind("globFileSearch"), ToolKind::Search);
        assert_eq!(tool_kind("somethingNew"), ToolKind::Other);
        use ToolKind::*;
        crate::dialect::assert_kinds(
            tool_kind,
            &[
                // The function names of its agent and hooks.
                ("run_terminal_cmd", Shell),
                ("read_file", Read),
                ("list_dir", Read),
                ("edit_file", Edit),
                ("search_replace", Edit),
                ("delete_file", Edit),
                ("grep_search", Search),
                ("codebase_search", Search),
                ("glob_file_search", Search),
                ("file_search", Search),
                ("web_search", WebSearch),
                ("todo_write", Plan),
                ("mcp__tracker__create_issue", Mcp),
                // Claude's, Codex's and Gemini's names.
                ("Bash", Other),
                ("exec_command", Other),
                ("run_shell_command", Other),
                ("TodoWrite", Other),
            ],
        );
        let m = mapped(
            r#"{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"toolCallId":"c","grepToolCall":{"args":{"pattern":"x"}}}}"#,
        );
        match events(&m)[..] {
            [Event::ToolStarted { name, kind, summary, synthetic: None, .. }] => {
                assert_eq!((name.as_str(), *kind, summary.as_deref()), ("grep", ToolKind::Search, Some("x")));
            }
            ref other => panic!("{other:?}"),
        }
    }

    #[test]
    fn function_string_arguments_are_decoded() {
        let m = mapped(
            r#"{"type":"tool_call","subtype":"started","call_id":"f","tool_call":{"function":{"name":"lookup","arguments":"{\"q\":1}"}}}"#,
        );
        match events(&m)[..] {
            [Event::ToolStarted { name, input: Some(input), .. }] => {
                assert_eq!((name.as_str(), input.get()), ("lookup", r#"{"q":1}"#));
            }
            ref other => panic!("{other:?}"),
        }
        let m = mapped(
            r#"{"type":"tool_call","subtype":"started","call_id":"f","tool_call":{"function":{"name":"x","arguments":"not json"}}}"#,
        );
        assert!(matches!(events(&m)[..], [Event::ToolStarted { input: Some(i), .. }] if i.get() == r#""not json""#));
    }

    #[test]
    fn never_panics_on_odd_shapes() {
        for line in [
            r#"{"type":"tool_call","subtype":"completed","tool_call":{}}"#,
            r#"{"type":"tool_call","subtype":"completed","tool_call":{"xToolCall":{"result":[1]}}}"#,
            r#"{"type":"tool_call","subtype":"completed","tool_call":{"shellToolCall":{"result":{"failure":"x"}}}}"#,
            r#"{"type":"tool_call","subtype":"completed","tool_call":{"mcpToolCall":{"result":{"success":{"content":[{}]}}}}}"#,
            r#"{"type":"assistant","message":{"content":7}}"#,
            r#"{"type":"result","is_error":true,"usage":[]}"#,
            r#"{"type":"thinking"}"#,
            r#"{"type":"user","message":{"content":[{"type":"image"}]}}"#,
        ] {
            let _ = mapped(line);
        }
    }
}
