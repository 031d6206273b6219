//! `--format otlp`: the events as OpenTelemetry traces (OTLP/JSON `ExportTraceServiceRequest`),
//! following the GenAI semantic conventions, so that a session can be looked at in any tracing
//! backend (Jaeger, Phoenix, Langfuse, …) without a converter of one's own.
//!
//! One trace per session: a root `session {agent}` span, an `invoke_agent {agent}` span per turn
//! (`gen_ai.conversation.id` = the session), a `chat {model}` span per model request (`usage`
//! event), an `execute_tool {name}` span per tool call from its start to its end, a nested
//! `invoke_agent` span per subagent (under the tool call that spawned it), and diagnostics, rate
//! limits, compactions and interrupts as span events. Ids are derived from the session and the
//! lines (a hash), so exporting the same log twice gives the same ids. Message content (prompts,
//! answers, tool arguments and results) is left out unless [`OtlpOptions::content`] is set; it
//! is whatever the normalizer wrote, so `--redact` masks it too.
//!
//! The [`Converter`] is a [`Sink`]: it closes spans as their events arrive and hands finished
//! spans out in requests ([`Converter::take_request`]), one per input at its end or every
//! [`BATCH`] spans, so a long live stream is exported as it goes.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::event::sink::Sink;
use crate::event::{Dialect, Event, Level, ToolKind, Usage, UsageScope};

/// Finished spans that make a request on their own, before the end of input.
pub const BATCH: usize = 512;

/// Span kinds of the OTLP enum.
const KIND_INTERNAL: u8 = 1;
const KIND_CLIENT: u8 = 3;
/// Status codes of the OTLP enum.
const STATUS_ERROR: u8 = 2;

/// What to put into the spans.
#[derive(Debug, Clone, Copy, Default)]
pub struct OtlpOptions {
    /// Include message content: `gen_ai.input.messages` / `gen_ai.output.messages` on turn
    /// spans, `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result` on tool spans, error text.
    pub content: bool,
}

/// The agent's name for the semantic conventions (`gen_ai.agent.name`, `service.name`).
pub fn agent_name(d: Option<Dialect>) -> &'static str {
    match d {
        Some(Dialect::Claude | Dialect::ClaudeTranscript) => "claude-code",
        Some(Dialect::Codex | Dialect::CodexLegacy | Dialect::CodexRollout) => "codex",
        Some(Dialect::Gemini) => "gemini-cli",
        Some(Dialect::Opencode) => "opencode",
        Some(Dialect::Cursor) => "cursor-agent",
        // The others by their dialect name (antigravity, copilot, …).
        Some(other) => other.as_str(),
        None => "agent",
    }
}

/// `gen_ai.provider.name`, where the dialect fixes the provider.
fn provider(d: Option<Dialect>) -> Option<&'static str> {
    match d {
        Some(Dialect::Claude | Dialect::ClaudeTranscript) => Some("anthropic"),
        Some(Dialect::Codex | Dialect::CodexLegacy | Dialect::CodexRollout) => Some("openai"),
        Some(Dialect::Gemini) => Some("gcp.gemini"),
        _ => None,
    }
}

/// 64-bit FNV-1a over the parts, separated by a zero byte, from `seed`.
fn fnv(seed: u64, parts: &[&str]) -> u64 {
    let mut h = seed;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    // An all-zero id is invalid in OTLP.
    if h == 0 { 1 } else { h }
}

/// The trace id of a session: 128 bits as 32 hex digits.
pub fn trace_id(session: &str) -> String {
    format!("{:016x}{:016x}", fnv(0xcbf2_9ce4_8422_2325, &[session]), fnv(0x6c62_272e_07bb_0142, &[session]))
}

/// A span id: 64 bits as 16 hex digits, from the session and what names the span.
pub fn span_id(session: &str, parts: &[&str]) -> String {
    let mut all = vec![session];
    all.extend_from_slice(parts);
    format!("{:016x}", fnv(0xcbf2_9ce4_8422_2325, &all))
}

fn attr(key: &str, v: Value) -> Value {
    json!({ "key": key, "value": v })
}
fn s(v: &str) -> Value {
    json!({ "stringValue": v })
}
fn int(v: u64) -> Value {
    json!({ "intValue": v.to_string() })
}

/// A span being built.
#[derive(Debug, Clone)]
struct Open {
    id: String,
    parent: Option<String>,
    name: String,
    kind: u8,
    start: i64,
    end: i64,
    attrs: Vec<Value>,
    events: Vec<Value>,
    error: Option<String>,
    /// Turn spans: the prompt and the answer, for the content attributes.
    input: String,
    output: String,
}

impl Open {
    fn new(id: String, parent: Option<String>, name: String, kind: u8, at: i64) -> Open {
        Open {
            id,
            parent,
            name,
            kind,
            start: at,
            end: at,
            attrs: Vec::new(),
            events: Vec::new(),
            error: None,
            input: String::new(),
            output: String::new(),
        }
    }
    fn touch(&mut self, at: i64) {
        self.end = self.end.max(at);
    }
}

/// A started tool call.
#[derive(Debug)]
struct Tool {
    span: Open,
    kind: ToolKind,
}

/// One session's state.
#[derive(Debug)]
struct Session {
    key: String,
    trace: String,
    dialect: Option<Dialect>,
    cli_version: Option<String>,
    model: Option<String>,
    root: Open,
    turn: Option<Open>,
    /// The turn was opened by `turn_started` and has no prompt yet (Codex: the prompt follows).
    turn_awaits_prompt: bool,
    tools: HashMap<String, Tool>,
    /// Subagent spans, by the id of the tool call that spawned them.
    agents: HashMap<String, Open>,
    /// Start of the next chat span, per scope ("" = main thread): the end of the last activity.
    last: HashMap<String, i64>,
    /// Task tool calls open, latest last (transcript sidechains belong to the latest).
    tasks: Vec<String>,
    /// The latest task tool call, open or not (a sidechain's last request may come after it).
    last_task: Option<String>,
    /// Subagent spans already ended (their ids by scope): late events of theirs get them as
    /// parent, not a new span.
    closed_agents: HashMap<String, String>,
    /// Tool calls ended in this session: their span ids by call id.
    closed_tools: HashMap<String, String>,
    /// How many times this session has begun in the stream.
    epoch: u32,
    /// Chat spans made per line, for distinct ids (a line may report several requests).
    chats: HashMap<u64, u32>,
    finished: Vec<Value>,
}

/// Turns events into OTLP spans (see the module docs).
#[derive(Debug)]
pub struct Converter {
    opts: OtlpOptions,
    source: Option<String>,
    session: Option<Session>,
    /// Finished sessions whose spans have not been taken yet: (resource attributes, spans).
    done: Vec<(Vec<Value>, Vec<Value>)>,
    /// Time of the latest event that had one (ms since the epoch).
    now: i64,
    pending: usize,
    /// Sessions begun in this stream, with how often.
    seen: HashMap<String, u32>,
}

impl Converter {
    /// A converter for one input stream.
    pub fn new(opts: OtlpOptions) -> Converter {
        Converter { opts, source: None, session: None, done: Vec::new(), now: 0, pending: 0, seen: HashMap::new() }
    }

    /// Finished spans waiting to be taken.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// The finished spans as one `ExportTraceServiceRequest` (OTLP/JSON), or `None` when there
    /// are none; what was taken is not given again.
    pub fn take_request(&mut self) -> Option<Value> {
        let mut groups = std::mem::take(&mut self.done);
        if let Some(sess) = &mut self.session
            && !sess.finished.is_empty()
        {
            groups.push((resource(sess), std::mem::take(&mut sess.finished)));
        }
        self.pending = 0;
        groups.retain(|(_, spans)| !spans.is_empty());
        if groups.is_empty() {
            return None;
        }
        let resource_spans: Vec<Value> = groups
            .into_iter()
            .map(|(attrs, spans)| {
                json!({
                    "resource": { "attributes": attrs },
                    "scopeSpans": [{
                        "scope": { "name": "agentnorm", "version": env!("CARGO_PKG_VERSION") },
                        "spans": spans,
                    }],
                })
            })
            .collect();
        Some(json!({ "resourceSpans": resource_spans }))
    }

    fn time(&mut self, ev: &Event) -> i64 {
        let env = ev.env();
        let t = env.at.as_deref().or(env.observed_at.as_deref()).and_then(crate::read::time::parse_rfc3339_ms);
        if let Some(t) = t {
            self.now = self.now.max(t);
            t
        } else {
            self.now
        }
    }

    fn session_for(&mut self, ev: &Event, at: i64) -> &mut Session {
        let env = ev.env();
        // A line without a session id (stderr, a malformed frame) belongs to the current session.
        let key = match (&env.session_id, &self.session) {
            (Some(id), _) => id.clone(),
            (None, Some(s)) => s.key.clone(),
            (None, None) => format!("agentnorm:{}", self.source.as_deref().unwrap_or("-")),
        };
        // Lines before the first session id: their session is the one that follows.
        if let Some(cur) = &mut self.session
            && cur.key != key
            && cur.key.starts_with("agentnorm:")
            && cur.turn.is_none()
            && cur.tools.is_empty()
            && cur.finished.is_empty()
        {
            cur.key = key.clone();
            cur.trace = trace_id(&key);
            cur.root.id = span_id(&key, &["session"]);
            cur.root.attrs[0] = attr("gen_ai.conversation.id", s(&key));
            self.seen.insert(key.clone(), 1);
        }
        if self.session.as_ref().is_none_or(|s| s.key != key) {
            self.end_session();
            let trace = trace_id(&key);
            let dialect = env.dialect;
            // A session seen again in this stream (A, B, A) gets a root of its own.
            let seen = self.seen.entry(key.clone()).or_default();
            *seen += 1;
            let root_id =
                if *seen == 1 { span_id(&key, &["session"]) } else { span_id(&key, &["session", &seen.to_string()]) };
            let mut root = Open::new(root_id, None, format!("session {}", agent_name(dialect)), KIND_INTERNAL, at);
            root.attrs.push(attr("gen_ai.conversation.id", s(&key)));
            root.attrs.push(attr("gen_ai.agent.name", s(agent_name(dialect))));
            if let Some(src) = &self.source {
                root.attrs.push(attr("agentnorm.source", s(src)));
            }
            self.session = Some(Session {
                key,
                trace,
                dialect,
                cli_version: None,
                model: None,
                root,
                turn: None,
                turn_awaits_prompt: false,
                tools: HashMap::new(),
                agents: HashMap::new(),
                last: HashMap::new(),
                tasks: Vec::new(),
                last_task: None,
                closed_agents: HashMap::new(),
                chats: HashMap::new(),
                epoch: *seen,
                closed_tools: HashMap::new(),
                finished: Vec::new(),
            });
        }
        let sess = self.session.as_mut().expect("set above");
        if sess.dialect.is_none() && env.dialect.is_some() {
            sess.dialect = env.dialect;
            let name = agent_name(sess.dialect);
            sess.root.name = format!("session {name}");
            sess.root.attrs[1] = attr("gen_ai.agent.name", s(name));
        }
        sess
    }

    /// Closes everything of the current session and queues its spans.
    fn end_session(&mut self) {
        let Some(mut sess) = self.session.take() else { return };
        let now = self.now.max(sess.root.end);
        let tools: Vec<String> = sess.tools.keys().cloned().collect();
        for id in tools {
            if let Some(mut t) = sess.tools.remove(&id) {
                t.span.attrs.push(attr("agentnorm.open", json!({ "boolValue": true })));
                t.span.touch(now);
                sess.finish(t.span, &self.opts);
            }
        }
        let agents: Vec<String> = sess.agents.keys().cloned().collect();
        for id in agents {
            if let Some(a) = sess.agents.remove(&id) {
                sess.finish(a, &self.opts);
            }
        }
        sess.close_turn(None, &self.opts);
        let mut root = sess.root.clone();
        root.touch(now);
        sess.finish(root, &self.opts);
        let spans = std::mem::take(&mut sess.finished);
        self.pending += 1;
        self.done.push((resource(&sess), spans));
    }
}

/// The resource of a session's spans: the agent, the dialect, the CLI's version.
fn resource(sess: &Session) -> Vec<Value> {
    let mut r = vec![
        attr("service.name", s(agent_name(sess.dialect))),
        attr("telemetry.sdk.name", s("agentnorm")),
        attr("telemetry.sdk.version", s(env!("CARGO_PKG_VERSION"))),
    ];
    if let Some(d) = sess.dialect {
        r.push(attr("agentnorm.dialect", s(d.as_str())));
    }
    if let Some(v) = &sess.cli_version {
        r.push(attr("service.version", s(v)));
        r.push(attr("agentnorm.cli_version", s(v)));
    }
    r
}

fn nanos(ms: i64) -> String {
    (i128::from(ms.max(0)) * 1_000_000).to_string()
}

impl Session {
    /// A span id in this session; a session begun again in the stream (A, B, A) salts its ids.
    fn sid(&self, parts: &[&str]) -> String {
        if self.epoch <= 1 {
            span_id(&self.key, parts)
        } else {
            let mut all = parts.to_vec();
            let e = self.epoch.to_string();
            all.push(&e);
            span_id(&self.key, &all)
        }
    }

    /// Serializes a closed span into `finished`.
    fn finish(&mut self, mut span: Open, opts: &OtlpOptions) {
        if opts.content {
            if !span.input.is_empty() {
                let msgs = json!([{ "role": "user", "parts": [{ "type": "text", "content": span.input }] }]);
                span.attrs.push(attr("gen_ai.input.messages", s(&msgs.to_string())));
            }
            if !span.output.is_empty() {
                let msgs = json!([{ "role": "assistant", "parts": [{ "type": "text", "content": span.output }] }]);
                span.attrs.push(attr("gen_ai.output.messages", s(&msgs.to_string())));
            }
        }
        let mut v = json!({
            "traceId": self.trace,
            "spanId": span.id,
            "name": span.name,
            "kind": span.kind,
            "startTimeUnixNano": nanos(span.start),
            "endTimeUnixNano": nanos(span.end.max(span.start)),
            "attributes": span.attrs,
        });
        if let Some(p) = span.parent {
            v["parentSpanId"] = json!(p);
        }
        if !span.events.is_empty() {
            v["events"] = json!(span.events);
        }
        if let Some(e) = span.error {
            let message = if opts.content { e } else { String::new() };
            v["status"] = json!({ "code": STATUS_ERROR, "message": message });
        }
        self.finished.push(v);
    }

    /// The scope of an event: the tool call of its subagent, "" for the main thread.
    fn scope(&self, ev: &Event) -> String {
        let env = ev.env();
        if let Some(p) = &env.parent_tool_id {
            return p.clone();
        }
        if env.sidechain == Some(true) {
            return self.tasks.last().or(self.last_task.as_ref()).cloned().unwrap_or_else(|| "sidechain".to_owned());
        }
        String::new()
    }

    /// Opens a turn span at `line` unless one is open.
    fn ensure_turn(&mut self, line: u64, at: i64) -> &mut Open {
        if self.turn.is_none() {
            let name = format!("invoke_agent {}", agent_name(self.dialect));
            let mut t =
                Open::new(self.sid(&["turn", &line.to_string()]), Some(self.root.id.clone()), name, KIND_INTERNAL, at);
            t.attrs.push(attr("gen_ai.operation.name", s("invoke_agent")));
            t.attrs.push(attr("gen_ai.agent.name", s(agent_name(self.dialect))));
            t.attrs.push(attr("gen_ai.conversation.id", s(&self.key)));
            if let Some(p) = provider(self.dialect) {
                t.attrs.push(attr("gen_ai.provider.name", s(p)));
            }
            t.attrs.push(attr("agentnorm.line", int(line)));
            self.last.insert(String::new(), at);
            self.turn = Some(t);
        }
        self.turn.as_mut().expect("set above")
    }

    fn close_turn(&mut self, end: Option<i64>, opts: &OtlpOptions) {
        if let Some(mut t) = self.turn.take() {
            if let Some(e) = end {
                t.touch(e);
            }
            self.root.touch(t.end);
            self.finish(t, opts);
        }
        self.turn_awaits_prompt = false;
    }

    /// The span that events of `scope` attach to: the subagent's, else the turn's, else the root.
    fn host(&mut self, scope: &str, line: u64, at: i64) -> &mut Open {
        if !scope.is_empty() && !self.closed_agents.contains_key(scope) {
            if !self.agents.contains_key(scope) {
                // Under the tool call that spawned it; when that call is not in this stream (a
                // resumed session, a sidechain without its task), under the turn.
                let parent = match (self.tools.get(scope), self.closed_tools.get(scope)) {
                    (Some(t), _) => t.span.id.clone(),
                    (None, Some(id)) => id.clone(),
                    (None, None) => self.ensure_turn(line, at).id.clone(),
                };
                let sub = self
                    .tools
                    .get(scope)
                    .and_then(|t| t.span.attrs.iter().find(|a| a["key"] == "agentnorm.subagent_type"))
                    .and_then(|a| a["value"]["stringValue"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "subagent".to_owned());
                let mut a = Open::new(
                    self.sid(&["agent", scope, &line.to_string()]),
                    Some(parent),
                    format!("invoke_agent {sub}"),
                    KIND_INTERNAL,
                    at,
                );
                a.attrs.push(attr("gen_ai.operation.name", s("invoke_agent")));
                a.attrs.push(attr("gen_ai.agent.name", s(&sub)));
                a.attrs.push(attr("gen_ai.agent.id", s(scope)));
                a.attrs.push(attr("gen_ai.conversation.id", s(&self.key)));
                self.last.insert(scope.to_owned(), at);
                self.agents.insert(scope.to_owned(), a);
            }
            let a = self.agents.get_mut(scope).expect("inserted above");
            a.touch(at);
            return a;
        }
        self.ensure_turn(line, at)
    }

    fn parent_of(&mut self, scope: &str, line: u64, at: i64) -> String {
        if let Some(id) = self.closed_agents.get(scope) {
            return id.clone();
        }
        self.host(scope, line, at).id.clone()
    }
}

impl Sink for Converter {
    fn event(&mut self, ev: &Event) {
        let at = self.time(ev);
        let opts = self.opts;
        match ev {
            Event::RunStarted { env, .. } => {
                self.source = env.source.clone();
                return;
            }
            Event::RunEnded { .. } => {
                self.end_session();
                return;
            }
            Event::Heartbeat { env, .. } if env.session_id.is_none() => return,
            _ => {}
        }
        let line = ev.env().line.unwrap_or(0);
        let line_s = line.to_string();
        let sess = self.session_for(ev, at);
        let scope = sess.scope(ev);
        sess.root.touch(at);
        match ev {
            Event::SessionStarted { model, cli_version, .. } => {
                if model.is_some() {
                    sess.model.clone_from(model);
                }
                if cli_version.is_some() {
                    sess.cli_version.clone_from(cli_version);
                }
            }
            Event::TurnStarted { .. } if scope.is_empty() => {
                sess.close_turn(None, &opts);
                sess.ensure_turn(line, at);
                sess.turn_awaits_prompt = true;
            }
            Event::UserMessage { text, .. } => {
                if scope.is_empty() {
                    if !sess.turn_awaits_prompt {
                        sess.close_turn(None, &opts);
                    }
                    sess.turn_awaits_prompt = false;
                    let t = sess.ensure_turn(line, at);
                    t.input.push_str(&text.as_str());
                } else {
                    sess.host(&scope, line, at).input.push_str(&text.as_str());
                }
            }
            Event::OutputDelta { text, .. } => {
                let h = sess.host(&scope, line, at);
                h.touch(at);
                h.output.push_str(&text.as_str());
            }
            Event::Reasoning { .. } => {
                sess.host(&scope, line, at).touch(at);
            }
            Event::ToolStarted { tool_id, name, kind, input, summary, .. } => {
                let parent = sess.parent_of(&scope, line, at);
                let mut span = Open::new(
                    sess.sid(&["tool", tool_id, &line_s]),
                    Some(parent),
                    format!("execute_tool {name}"),
                    KIND_INTERNAL,
                    at,
                );
                span.attrs.push(attr("gen_ai.operation.name", s("execute_tool")));
                span.attrs.push(attr("gen_ai.tool.name", s(name)));
                span.attrs.push(attr("gen_ai.tool.call.id", s(tool_id)));
                let ty = if *kind == ToolKind::Mcp { "extension" } else { "function" };
                span.attrs.push(attr("gen_ai.tool.type", s(ty)));
                span.attrs.push(attr("gen_ai.conversation.id", s(&sess.key)));
                span.attrs.push(attr("agentnorm.tool.kind", s(&kind_name(*kind))));
                span.attrs.push(attr("agentnorm.line", int(line)));
                if *kind == ToolKind::Task
                    && let Some(t) = input.as_ref().map(|j| j.value())
                    && let Some(st) = t.get("subagent_type").and_then(Value::as_str)
                {
                    span.attrs.push(attr("agentnorm.subagent_type", s(st)));
                }
                if opts.content {
                    if let Some(i) = input {
                        span.attrs.push(attr("gen_ai.tool.call.arguments", s(i.get())));
                    }
                    if let Some(sm) = summary {
                        span.attrs.push(attr("agentnorm.tool.summary", s(sm)));
                    }
                }
                if *kind == ToolKind::Task {
                    sess.tasks.push(tool_id.clone());
                    sess.last_task = Some(tool_id.clone());
                }
                sess.tools.insert(tool_id.clone(), Tool { span, kind: *kind });
            }
            Event::ToolCompleted { tool_id, ok, output, exit_code, error, duration_ms, .. } => {
                let Some(mut t) = sess.tools.remove(tool_id) else { return };
                sess.closed_tools.insert(tool_id.clone(), t.span.id.clone());
                let end = match (ev.env().at.is_some() || ev.env().observed_at.is_some(), duration_ms) {
                    (false, Some(d)) => t.span.start + *d as i64,
                    _ => at,
                };
                t.span.touch(end);
                if let Some(d) = duration_ms {
                    t.span.attrs.push(attr("agentnorm.tool.duration_ms", int(*d)));
                }
                if let Some(c) = exit_code {
                    t.span.attrs.push(attr("process.exit.code", json!({ "intValue": c.to_string() })));
                }
                if !ok {
                    let ty = if exit_code.is_some_and(|c| c != 0) { "exit_code" } else { "tool_error" };
                    t.span.attrs.push(attr("error.type", s(ty)));
                    let msg = error.clone().or_else(|| output.as_ref().map(|o| o.as_str().into_owned()));
                    t.span.error = Some(msg.unwrap_or_default());
                }
                if opts.content
                    && let Some(o) = output
                {
                    t.span.attrs.push(attr("gen_ai.tool.call.result", s(&o.as_str())));
                }
                if t.kind == ToolKind::Task {
                    sess.tasks.retain(|x| x != tool_id);
                    if let Some(mut a) = sess.agents.remove(tool_id) {
                        a.touch(end);
                        sess.closed_agents.insert(tool_id.clone(), a.id.clone());
                        sess.finish(a, &opts);
                    }
                }
                sess.last.insert(scope.clone(), end);
                let host = sess.host(&scope, line, at);
                host.touch(end);
                sess.finish(t.span, &opts);
            }
            Event::Usage { usage, model, message_id, context_window, .. } => {
                let parent = sess.parent_of(&scope, line, at);
                let model = model.clone().or_else(|| sess.model.clone());
                let start = sess.last.get(&scope).copied().unwrap_or(at).min(at);
                let name = model.as_ref().map_or_else(|| "chat".to_owned(), |m| format!("chat {m}"));
                let nth = sess.chats.entry(line).or_default();
                *nth += 1;
                let nth = nth.to_string();
                let id = sess.sid(&["chat", &line_s, message_id.as_deref().unwrap_or(""), &nth]);
                let mut span = Open::new(id, Some(parent), name, KIND_CLIENT, start);
                span.touch(at);
                span.attrs.push(attr("gen_ai.operation.name", s("chat")));
                span.attrs.push(attr("gen_ai.conversation.id", s(&sess.key)));
                if let Some(p) = provider(sess.dialect) {
                    span.attrs.push(attr("gen_ai.provider.name", s(p)));
                }
                if let Some(m) = &model {
                    span.attrs.push(attr("gen_ai.request.model", s(m)));
                    span.attrs.push(attr("gen_ai.response.model", s(m)));
                }
                if let Some(id) = message_id {
                    span.attrs.push(attr("gen_ai.response.id", s(id)));
                }
                usage_attrs(&mut span.attrs, usage);
                if let Some(w) = context_window {
                    span.attrs.push(attr("agentnorm.context_window", int(*w)));
                }
                span.attrs.push(attr("agentnorm.line", int(line)));
                sess.last.insert(scope.clone(), at);
                sess.finish(span, &opts);
            }
            Event::TurnCompleted { usage, cost_usd, cost_scope, stop_reason, .. } if scope.is_empty() => {
                let t = sess.ensure_turn(line, at);
                t.touch(at);
                if let Some(u) = usage {
                    turn_usage_attrs(&mut t.attrs, u);
                }
                cost_attrs(&mut t.attrs, *cost_usd, *cost_scope);
                if let Some(r) = stop_reason {
                    t.attrs.push(attr("gen_ai.response.finish_reasons", json!({ "arrayValue": { "values": [s(r)] } })));
                }
                sess.close_turn(Some(at), &opts);
            }
            Event::TurnFailed { error, kind, usage, cost_usd, cost_scope, .. } if scope.is_empty() => {
                let t = sess.ensure_turn(line, at);
                t.touch(at);
                let ty = kind.map_or("other".to_owned(), |k| {
                    serde_json::to_value(k).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
                });
                t.attrs.push(attr("error.type", s(&ty)));
                t.error = Some(error.clone());
                if let Some(u) = usage {
                    turn_usage_attrs(&mut t.attrs, u);
                }
                cost_attrs(&mut t.attrs, *cost_usd, *cost_scope);
                sess.close_turn(Some(at), &opts);
            }
            Event::Interrupt { reason, .. } => {
                let mut e = span_event("agentnorm.interrupt", at, vec![]);
                if opts.content {
                    e["attributes"] = json!([attr("agentnorm.reason", s(reason))]);
                }
                sess.host(&scope, line, at).events.push(e);
                if scope.is_empty() {
                    sess.close_turn(Some(at), &opts);
                }
            }
            Event::Diagnostic { level, code, message, count, .. } => {
                let lv = match level {
                    Level::Info => "info",
                    Level::Warning => "warning",
                    Level::Error => "error",
                };
                let e = span_event(
                    "agentnorm.diagnostic",
                    at,
                    vec![
                        attr("agentnorm.level", s(lv)),
                        attr("agentnorm.code", s(code)),
                        attr("agentnorm.message", s(message)),
                        attr("agentnorm.count", int(*count)),
                        attr("agentnorm.line", int(line)),
                    ],
                );
                host_or_root(sess, &scope, line, at).events.push(e);
            }
            Event::RateLimit { window, status, used_percent, resets_at, window_minutes, .. } => {
                let mut a = vec![attr("agentnorm.window", s(window))];
                if let Some(st) = status {
                    a.push(attr("agentnorm.status", s(st)));
                }
                if let Some(p) = used_percent {
                    a.push(attr("agentnorm.used_percent", json!({ "doubleValue": p })));
                }
                if let Some(r) = resets_at {
                    a.push(attr("agentnorm.resets_at", s(r)));
                }
                if let Some(m) = window_minutes {
                    a.push(attr("agentnorm.window_minutes", int(*m)));
                }
                let e = span_event("agentnorm.rate_limit", at, a);
                host_or_root(sess, &scope, line, at).events.push(e);
            }
            Event::Compacted { trigger, pre_tokens, post_tokens, .. } => {
                let mut a = Vec::new();
                if let Some(t) = trigger {
                    a.push(attr("agentnorm.trigger", s(t)));
                }
                if let Some(p) = pre_tokens {
                    a.push(attr("agentnorm.pre_tokens", int(*p)));
                }
                if let Some(p) = post_tokens {
                    a.push(attr("agentnorm.post_tokens", int(*p)));
                }
                host_or_root(sess, &scope, line, at).events.push(span_event("agentnorm.compacted", at, a));
            }
            Event::Subagent { child_id, operation, status, .. } => {
                let a = vec![
                    attr("gen_ai.agent.id", s(child_id)),
                    attr("agentnorm.operation", s(&enum_name(operation))),
                    attr("agentnorm.status", s(&enum_name(status))),
                ];
                host_or_root(sess, &scope, line, at).events.push(span_event("agentnorm.subagent", at, a));
            }
            Event::Unknown { reason, frame, .. } => {
                let mut a = vec![attr("agentnorm.reason", s(&enum_name(reason))), attr("agentnorm.line", int(line))];
                if let Some(f) = frame {
                    a.push(attr("agentnorm.frame", s(f)));
                }
                host_or_root(sess, &scope, line, at).events.push(span_event("agentnorm.unknown", at, a));
            }
            _ => {}
        }
        self.pending =
            self.done.iter().map(|d| d.1.len()).sum::<usize>() + self.session.as_ref().map_or(0, |s| s.finished.len());
    }
}

/// Events outside a turn go on the session's root span.
fn host_or_root<'a>(sess: &'a mut Session, scope: &str, line: u64, at: i64) -> &'a mut Open {
    if scope.is_empty() && sess.turn.is_none() {
        return &mut sess.root;
    }
    sess.host(scope, line, at)
}

fn span_event(name: &str, at: i64, attrs: Vec<Value>) -> Value {
    json!({ "timeUnixNano": nanos(at), "name": name, "attributes": attrs })
}

fn enum_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn kind_name(k: ToolKind) -> String {
    enum_name(&k)
}

/// A turn's cost as reported, and `agentnorm.cost_scope` `session` when it is a running total
/// over the process (Claude's `total_cost_usd`), not the turn's own.
fn cost_attrs(attrs: &mut Vec<Value>, cost: Option<f64>, scope: Option<UsageScope>) {
    if let Some(c) = cost {
        attrs.push(attr("agentnorm.cost_usd", json!({ "doubleValue": c })));
        if scope == Some(UsageScope::Session) {
            attrs.push(attr("agentnorm.cost_scope", s("session")));
        }
    }
}

/// The GenAI usage attributes of one request: `gen_ai.usage.input_tokens` includes the cache
/// reads and writes (as the convention says), which also get their own attributes.
fn usage_attrs(attrs: &mut Vec<Value>, u: &Usage) {
    if u.input.is_some() || u.cache_read.is_some() || u.cache_write.is_some() {
        let total = u.input.unwrap_or(0) + u.cache_read.unwrap_or(0) + u.cache_write.unwrap_or(0);
        attrs.push(attr("gen_ai.usage.input_tokens", int(total)));
    }
    if let Some(o) = u.output {
        attrs.push(attr("gen_ai.usage.output_tokens", int(o)));
    }
    if let Some(c) = u.cache_read {
        attrs.push(attr("gen_ai.usage.cache_read.input_tokens", int(c)));
    }
    if let Some(c) = u.cache_write {
        attrs.push(attr("gen_ai.usage.cache_creation.input_tokens", int(c)));
    }
    if let Some(r) = u.reasoning {
        attrs.push(attr("agentnorm.usage.reasoning_tokens", int(r)));
    }
}

/// A turn's aggregate, under `agentnorm.turn.*` so that a backend summing `gen_ai.usage.*` over
/// a trace does not count the requests twice.
fn turn_usage_attrs(attrs: &mut Vec<Value>, u: &Usage) {
    for (k, v) in [
        ("agentnorm.turn.input_tokens", u.input),
        ("agentnorm.turn.cache_read_tokens", u.cache_read),
        ("agentnorm.turn.cache_write_tokens", u.cache_write),
        ("agentnorm.turn.output_tokens", u.output),
        ("agentnorm.turn.reasoning_tokens", u.reasoning),
    ] {
        if let Some(v) = v {
            attrs.push(attr(k, int(v)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Normalizer, Options};

    fn convert(input: &[u8], content: bool) -> Vec<Value> {
        let mut c = Converter::new(OtlpOptions { content });
        let mut n = Normalizer::new(Options::default().observed_at(false));
        n.feed(input, &mut c);
        n.finish(&mut c);
        let req = c.take_request().expect("spans");
        req["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().cloned().unwrap_or_default()
    }

    const CLAUDE: &[u8] = br#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-5","tools":["Bash"]}
{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":3,"cache_read_input_tokens":10,"cache_creation_input_tokens":5,"output_tokens":1}},"session_id":"s1","parent_tool_use_id":null}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"boom","is_error":true}]},"session_id":"s1","parent_tool_use_id":null}
{"type":"result","subtype":"success","is_error":false,"result":"Hi","session_id":"s1","usage":{"input_tokens":3,"output_tokens":5}}
"#;

    #[test]
    fn spans_nest_and_carry_the_conventions_attributes() {
        let spans = convert(CLAUDE, false);
        let by_name = |p: &str| spans.iter().find(|s| s["name"].as_str().unwrap().starts_with(p)).unwrap().clone();
        let root = by_name("session ");
        let turn = by_name("invoke_agent ");
        let chat = by_name("chat ");
        let tool = by_name("execute_tool ");
        assert_eq!(turn["parentSpanId"], root["spanId"]);
        assert_eq!(chat["parentSpanId"], turn["spanId"]);
        assert_eq!(tool["parentSpanId"], turn["spanId"]);
        assert_eq!(chat["name"], "chat claude-sonnet-5");
        let get = |s: &Value, k: &str| {
            s["attributes"].as_array().unwrap().iter().find(|a| a["key"] == k).map(|a| a["value"].clone())
        };
        assert_eq!(get(&chat, "gen_ai.usage.input_tokens").unwrap()["intValue"], "18");
        assert_eq!(get(&chat, "gen_ai.usage.cache_read.input_tokens").unwrap()["intValue"], "10");
        assert_eq!(get(&tool, "error.type").unwrap()["stringValue"], "tool_error");
        assert_eq!(tool["status"]["code"], 2);
        assert_eq!(get(&turn, "gen_ai.conversation.id").unwrap()["stringValue"], "s1");
        // No content without the flag.
        assert!(get(&tool, "gen_ai.tool.call.arguments").is_none());
        assert!(get(&turn, "gen_ai.output.messages").is_none());
        let again = convert(CLAUDE, false);
        assert_eq!(spans, again, "ids and all are deterministic");
        assert_eq!(root["traceId"].as_str().unwrap().len(), 32);
        assert_eq!(root["spanId"].as_str().unwrap().len(), 16);
    }

    #[test]
    fn content_only_when_asked() {
        let spans = convert(CLAUDE, true);
        let tool = spans.iter().find(|s| s["name"] == "execute_tool Bash").unwrap();
        let args = tool["attributes"].as_array().unwrap().iter().find(|a| a["key"] == "gen_ai.tool.call.arguments");
        assert_eq!(args.unwrap()["value"]["stringValue"], r#"{"command":"ls"}"#);
        assert_eq!(tool["status"]["message"], "boom");
    }
}
