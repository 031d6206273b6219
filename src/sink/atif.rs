//! `--format atif`: one ATIF trajectory (Harbor's Agent Trajectory Interchange Format, v1.7) per
//! session, the format evaluation and training pipelines read, built from the one event
//! vocabulary so that every CLI agentnorm reads gets there, not only the two `atif-make` knows.
//!
//! Steps: a `user` step per prompt; an `agent` step per model message with its text, reasoning,
//! tool calls and their observations (the results, matched by call id) and its metrics (prompt
//! tokens including the cache, completion, cached); a `system` step for a failed turn, an
//! interrupt and a compaction. A model message is told by its `message_id` where the CLI gives
//! one, else it runs to the request's `usage` or to the next prompt or tool result. Subagents are
//! embedded trajectories (`subagent_trajectories`), referenced from the observation of the tool
//! call that spawned them. The dialect, the source, the line numbers and the raw ids go into
//! `extra`.
//!
//! [`AtifSink`] collects one session at a time (memory bounded by the largest session) and hands
//! out finished trajectories with [`AtifSink::take`].

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::event::sink::Sink;
use crate::event::{Dialect, Event, Usage, UsageScope};
use crate::sink::otlp::agent_name;

/// The ATIF version written.
pub const SCHEMA_VERSION: &str = "ATIF-v1.7";

/// One trajectory being built (the session's, or a subagent's).
#[derive(Debug, Default)]
struct Builder {
    steps: Vec<Value>,
    /// Index of the agent step still taking content.
    open: Option<usize>,
    /// Step index by message id.
    by_message: HashMap<String, usize>,
    /// Step index by tool call id.
    by_tool: HashMap<String, usize>,
    model: Option<String>,
}

impl Builder {
    fn step(&mut self, source: &str, message: String, at: Option<&str>, line: Option<u64>) -> usize {
        let mut s = json!({ "step_id": self.steps.len() + 1, "source": source, "message": message });
        if let Some(t) = at {
            s["timestamp"] = json!(t);
        }
        if let Some(l) = line {
            s["extra"] = json!({ "line": l });
        }
        self.steps.push(s);
        self.steps.len() - 1
    }

    /// The agent step that content of `message_id` goes to, opened when needed.
    fn agent(&mut self, message_id: Option<&str>, at: Option<&str>, line: Option<u64>) -> usize {
        if let Some(m) = message_id {
            if let Some(&i) = self.by_message.get(m)
                && self.open == Some(i)
            {
                return i;
            }
            if let Some(i) = self.open
                && self.steps[i]["extra"]["message_id"].is_null()
                && !self.has_content(i)
            {
                self.set_message(i, m);
                return i;
            }
        } else if let Some(i) = self.open {
            return i;
        }
        // A step holding only reasoning (Codex writes a request's token count between its
        // reasoning and its answer) takes the answer that follows.
        if let Some(i) = self.steps.len().checked_sub(1)
            && self.open.is_none()
            && self.steps[i]["source"] == "agent"
            && !self.steps[i]["reasoning_content"].is_null()
            && self.steps[i]["message"].as_str().is_some_and(str::is_empty)
            && self.steps[i]["tool_calls"].is_null()
            && (message_id.is_none() || self.steps[i]["extra"]["message_id"].is_null())
        {
            if let Some(m) = message_id {
                self.set_message(i, m);
            }
            self.open = Some(i);
            return i;
        }
        let i = self.step("agent", String::new(), at, line);
        if let Some(m) = message_id {
            self.set_message(i, m);
        }
        self.open = Some(i);
        i
    }

    fn set_message(&mut self, i: usize, m: &str) {
        self.steps[i]["extra"]["message_id"] = json!(m);
        self.by_message.insert(m.to_owned(), i);
    }

    fn has_content(&self, i: usize) -> bool {
        let s = &self.steps[i];
        s["message"].as_str().is_some_and(|m| !m.is_empty())
            || !s["tool_calls"].is_null()
            || !s["reasoning_content"].is_null()
    }

    fn close(&mut self) {
        self.open = None;
    }

    fn usage(
        &mut self,
        usage: &Usage,
        model: Option<&str>,
        message_id: Option<&str>,
        at: Option<&str>,
        line: Option<u64>,
    ) {
        let i = match message_id.and_then(|m| self.by_message.get(m).copied()) {
            Some(i) => i,
            None => match self.open {
                Some(i) if self.steps[i]["metrics"].is_null() && self.has_content(i) => i,
                // The latest agent step, closed by a tool result before the usage of its
                // message came (transcripts write a message's usage once it has ended), when
                // it has none and no other message's id.
                _ => match self.steps.last() {
                    Some(s)
                        if s["source"] == "agent"
                            && s["metrics"].is_null()
                            && s["extra"]["message_id"].is_null()
                            && self.has_content(self.steps.len() - 1) =>
                    {
                        self.steps.len() - 1
                    }
                    _ => self.agent(message_id, at, line),
                },
            },
        };
        let s = &mut self.steps[i];
        if !s["metrics"].is_null() {
            return;
        }
        s["metrics"] = metrics(usage);
        s["llm_call_count"] = json!(1);
        if let Some(m) = model.or(self.model.as_deref()) {
            s["model_name"] = json!(m);
        }
        if let Some(m) = message_id {
            s["extra"]["message_id"] = json!(m);
            self.by_message.insert(m.to_owned(), i);
        }
        // The usage of a message whose content came first ends it.
        if self.open == Some(i) && self.has_content(i) {
            self.close();
        }
    }

    fn finish(mut self) -> Vec<Value> {
        for s in &mut self.steps {
            if s["extra"].as_object().is_some_and(Map::is_empty) {
                s.as_object_mut().map(|o| o.remove("extra"));
            }
        }
        self.steps
    }
}

fn metrics(u: &Usage) -> Value {
    let mut m = Map::new();
    if u.input.is_some() || u.cache_read.is_some() || u.cache_write.is_some() {
        let p = u.input.unwrap_or(0) + u.cache_read.unwrap_or(0) + u.cache_write.unwrap_or(0);
        m.insert("prompt_tokens".into(), json!(p));
    }
    if let Some(o) = u.output {
        m.insert("completion_tokens".into(), json!(o));
    }
    if let Some(c) = u.cache_read {
        m.insert("cached_tokens".into(), json!(c));
    }
    let mut extra = Map::new();
    if let Some(c) = u.cache_write {
        extra.insert("cache_write_tokens".into(), json!(c));
    }
    if let Some(r) = u.reasoning {
        extra.insert("reasoning_tokens".into(), json!(r));
    }
    if !extra.is_empty() {
        m.insert("extra".into(), Value::Object(extra));
    }
    Value::Object(m)
}

/// One session being collected.
#[derive(Debug)]
struct Session {
    id: String,
    dialect: Option<Dialect>,
    cli_version: Option<String>,
    cwd: Option<String>,
    source: Option<String>,
    main: Builder,
    /// Subagent trajectories by the tool call that spawned them, in first-seen order.
    subs: Vec<(String, Builder)>,
    /// Task tool calls open, latest last (transcript sidechains belong to the latest).
    tasks: Vec<String>,
    /// The latest task tool call, open or not (a sidechain's last request may come after it).
    last_task: Option<String>,
    cost: Option<f64>,
    cost_is_running_total: bool,
}

impl Session {
    /// A turn's cost: added up, or, when it is a running total over the process (`cost_scope:
    /// session`, Claude's `total_cost_usd`), taken as the session's cost so far.
    fn add_cost(&mut self, c: f64, scope: Option<UsageScope>) {
        if scope == Some(UsageScope::Session) {
            self.cost = Some(c);
            self.cost_is_running_total = true;
        } else {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
    }
}

/// Collects events into ATIF trajectories, one per session.
#[derive(Debug, Default)]
pub struct AtifSink {
    source: Option<String>,
    session: Option<Session>,
    done: Vec<(String, Value)>,
}

impl AtifSink {
    /// A sink for one or more input streams.
    pub fn new() -> AtifSink {
        AtifSink::default()
    }

    /// The finished trajectories since the last call: (session id, trajectory).
    pub fn take(&mut self) -> Vec<(String, Value)> {
        std::mem::take(&mut self.done)
    }

    fn end_session(&mut self) {
        let Some(sess) = self.session.take() else { return };
        if let Some(t) = trajectory(sess) {
            self.done.push(t);
        }
    }
}

fn agent_obj(sess: &Session, model: Option<&str>, name: &str) -> Value {
    let mut a = json!({ "name": name, "version": sess.cli_version.as_deref().unwrap_or("unknown") });
    if let Some(m) = model {
        a["model_name"] = json!(m);
    }
    a
}

/// Sums of the steps' metrics.
fn final_metrics(steps: &[Value], cost: Option<f64>) -> Value {
    let sum = |k: &str| -> Option<u64> {
        let vals: Vec<u64> = steps.iter().filter_map(|s| s["metrics"][k].as_u64()).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    };
    let mut m = json!({ "total_steps": steps.len() });
    for (k, v) in [
        ("total_prompt_tokens", sum("prompt_tokens")),
        ("total_completion_tokens", sum("completion_tokens")),
        ("total_cached_tokens", sum("cached_tokens")),
    ] {
        if let Some(v) = v {
            m[k] = json!(v);
        }
    }
    if let Some(c) = cost {
        m["total_cost_usd"] = json!(c);
    }
    m
}

fn trajectory(sess: Session) -> Option<(String, Value)> {
    let name = agent_name(sess.dialect);
    let mut subs = Vec::new();
    let mut refs: Vec<(String, String)> = Vec::new();
    for (tool, b) in sess.subs {
        let model = b.model.clone().or_else(|| sess.main.model.clone());
        let steps = b.finish();
        if steps.is_empty() {
            continue;
        }
        let tid = format!("{}/{}", sess.id, tool);
        let fm = final_metrics(&steps, None);
        subs.push(json!({
            "schema_version": SCHEMA_VERSION,
            "trajectory_id": tid,
            "agent": {
                "name": format!("{name}/subagent"),
                "version": sess.cli_version.as_deref().unwrap_or("unknown"),
                "model_name": model,
            },
            "steps": steps,
            "final_metrics": fm,
            "extra": { "parent_tool_call_id": tool },
        }));
        refs.push((tool, tid));
    }
    let mut main = sess.main;
    // Each subagent is referenced from the observation of the tool call that spawned it.
    for (tool, tid) in &refs {
        let Some(&i) = main.by_tool.get(tool) else { continue };
        let step = &mut main.steps[i];
        if step["observation"].is_null() {
            step["observation"] = json!({ "results": [] });
        }
        let results = step["observation"]["results"].as_array_mut().expect("set above");
        let r = match results.iter().position(|r| r["source_call_id"] == json!(tool)) {
            Some(p) => &mut results[p],
            None => {
                results.push(json!({ "source_call_id": tool }));
                results.last_mut().expect("pushed")
            }
        };
        r["subagent_trajectory_ref"] = json!([{ "trajectory_id": tid }]);
    }
    let model = main.model.clone();
    let steps = main.finish();
    if steps.is_empty() {
        return None;
    }
    let mut extra = json!({ "dialect": sess.dialect.map(Dialect::as_str), "session_id": sess.id });
    if let Some(s) = &sess.source {
        extra["source"] = json!(s);
    }
    if let Some(c) = &sess.cwd {
        extra["cwd"] = json!(c);
    }
    if sess.cost_is_running_total {
        extra["cost_scope"] = json!("session");
    }
    let agent = {
        let tmp = Session {
            id: String::new(),
            dialect: sess.dialect,
            cli_version: sess.cli_version.clone(),
            cwd: None,
            source: None,
            main: Builder::default(),
            subs: Vec::new(),
            tasks: Vec::new(),
            last_task: None,
            cost: None,
            cost_is_running_total: false,
        };
        agent_obj(&tmp, model.as_deref(), name)
    };
    let mut t = json!({
        "schema_version": SCHEMA_VERSION,
        "session_id": sess.id,
        "trajectory_id": sess.id,
        "agent": agent,
        "steps": steps,
        "final_metrics": final_metrics(&steps, sess.cost),
        "extra": extra,
    });
    if !subs.is_empty() {
        t["subagent_trajectories"] = json!(subs);
    }
    Some((sess.id, t))
}

impl Sink for AtifSink {
    fn event(&mut self, ev: &Event) {
        let env = ev.env();
        match ev {
            Event::RunStarted { .. } => {
                self.source = env.source.clone();
                return;
            }
            Event::RunEnded { .. } => {
                self.end_session();
                return;
            }
            _ => {}
        }
        let Some(id) = env.session_id.clone() else { return };
        if self.session.as_ref().is_none_or(|s| s.id != id) {
            self.end_session();
            self.session = Some(Session {
                id,
                dialect: env.dialect,
                cli_version: None,
                cwd: None,
                source: self.source.clone(),
                main: Builder::default(),
                subs: Vec::new(),
                tasks: Vec::new(),
                last_task: None,
                cost: None,
                cost_is_running_total: false,
            });
        }
        let sess = self.session.as_mut().expect("set above");
        if sess.dialect.is_none() {
            sess.dialect = env.dialect;
        }
        let scope = env.parent_tool_id.clone().or_else(|| {
            (env.sidechain == Some(true))
                .then(|| sess.tasks.last().or(sess.last_task.as_ref()).cloned().unwrap_or_else(|| "sidechain".into()))
        });
        let (at, line) = (env.at.as_deref(), env.line);
        let b = match &scope {
            None => &mut sess.main,
            Some(t) => {
                let i = match sess.subs.iter().position(|(k, _)| k == t) {
                    Some(i) => i,
                    None => {
                        sess.subs.push((t.clone(), Builder::default()));
                        sess.subs.len() - 1
                    }
                };
                &mut sess.subs[i].1
            }
        };
        match ev {
            Event::SessionStarted { model, cli_version, cwd, .. } => {
                if model.is_some() {
                    b.model.clone_from(model);
                }
                if cli_version.is_some() {
                    sess.cli_version.clone_from(cli_version);
                }
                if cwd.is_some() {
                    sess.cwd.clone_from(cwd);
                }
            }
            Event::UserMessage { text, .. } => {
                b.close();
                b.step("user", text.as_str().into_owned(), at, line);
            }
            Event::OutputDelta { text, message_id, .. } => {
                let i = b.agent(message_id.as_deref(), at, line);
                let m = &mut b.steps[i]["message"];
                let mut s = m.as_str().unwrap_or("").to_owned();
                s.push_str(&text.as_str());
                *m = json!(s);
            }
            Event::Reasoning { text: Some(text), .. } => {
                // Reasoning after text or a tool call starts the next message.
                if let Some(i) = b.open
                    && (b.steps[i]["message"].as_str().is_some_and(|m| !m.is_empty())
                        || !b.steps[i]["tool_calls"].is_null())
                {
                    b.close();
                }
                let i = b.agent(None, at, line);
                let r = &mut b.steps[i]["reasoning_content"];
                let mut s = r.as_str().unwrap_or("").to_owned();
                s.push_str(&text.as_str());
                *r = json!(s);
            }
            Event::ToolStarted { tool_id, name, input, kind, .. } => {
                let i = b.agent(None, at, line);
                let args = match input.as_ref().map(|j| j.value()) {
                    Some(Value::Object(o)) => Value::Object(o),
                    None | Some(Value::Null) => json!({}),
                    Some(other) => json!({ "input": other }),
                };
                let call = json!({
                    "tool_call_id": tool_id,
                    "function_name": name,
                    "arguments": args,
                    "extra": { "kind": kind, "line": line },
                });
                let s = &mut b.steps[i];
                if s["tool_calls"].is_null() {
                    s["tool_calls"] = json!([]);
                }
                s["tool_calls"].as_array_mut().expect("set above").push(call);
                b.by_tool.insert(tool_id.clone(), i);
                if *kind == crate::event::ToolKind::Task {
                    sess.tasks.push(tool_id.clone());
                    sess.last_task = Some(tool_id.clone());
                }
            }
            Event::ToolCompleted { tool_id, ok, output, exit_code, error, duration_ms, .. } => {
                if let Some(&i) = b.by_tool.get(tool_id) {
                    let content = output.as_ref().map(|o| o.as_str().into_owned()).or_else(|| error.clone());
                    let mut r = json!({ "source_call_id": tool_id, "extra": { "ok": ok } });
                    if let Some(c) = content {
                        r["content"] = json!(c);
                    }
                    if let Some(c) = exit_code {
                        r["extra"]["exit_code"] = json!(c);
                    }
                    if let Some(d) = duration_ms {
                        r["extra"]["duration_ms"] = json!(d);
                    }
                    let s = &mut b.steps[i];
                    if s["observation"].is_null() {
                        s["observation"] = json!({ "results": [] });
                    }
                    s["observation"]["results"].as_array_mut().expect("set above").push(r);
                    // The next content is the model's answer to the result: a new message.
                    b.close();
                }
                sess.tasks.retain(|t| t != tool_id);
            }
            Event::Usage { usage, model, message_id, .. } => {
                b.usage(usage, model.as_deref(), message_id.as_deref(), at, line);
            }
            Event::TurnCompleted { cost_usd, cost_scope, .. } => {
                b.close();
                if let Some(c) = cost_usd {
                    sess.add_cost(*c, *cost_scope);
                }
            }
            Event::TurnFailed { error, kind, cost_usd, cost_scope, .. } => {
                b.close();
                let i = b.step("system", format!("turn failed: {error}"), at, line);
                if let Some(k) = kind {
                    b.steps[i]["extra"]["failure_kind"] = json!(k);
                }
                if let Some(c) = cost_usd {
                    sess.add_cost(*c, *cost_scope);
                }
            }
            Event::Interrupt { reason, .. } => {
                b.close();
                b.step("system", format!("interrupted: {reason}"), at, line);
            }
            Event::Compacted { trigger, pre_tokens, .. } => {
                b.close();
                let mut m = "conversation compacted".to_owned();
                if let Some(t) = trigger {
                    m.push_str(&format!(" ({t})"));
                }
                let i = b.step("system", m, at, line);
                if let Some(p) = pre_tokens {
                    b.steps[i]["extra"]["pre_tokens"] = json!(p);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Normalizer, Options};

    #[test]
    fn a_claude_stream_becomes_user_and_agent_steps_with_metrics() {
        let input = br#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-5","tools":["Bash"]}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"list"}]},"session_id":"s1","parent_tool_use_id":null,"isReplay":true}
{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","content":[{"type":"text","text":"Sure"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":3,"cache_read_input_tokens":10,"output_tokens":1}},"session_id":"s1","parent_tool_use_id":null}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a b"}]},"session_id":"s1","parent_tool_use_id":null}
{"type":"assistant","message":{"id":"m2","model":"claude-sonnet-5","content":[{"type":"text","text":"a and b"}],"usage":{"input_tokens":4,"output_tokens":2}},"session_id":"s1","parent_tool_use_id":null}
{"type":"result","subtype":"success","is_error":false,"result":"a and b","session_id":"s1","total_cost_usd":0.5,"usage":{"input_tokens":7,"output_tokens":3}}
"#;
        let mut sink = AtifSink::new();
        let mut n = Normalizer::new(Options::default().observed_at(false));
        n.feed(input, &mut sink);
        n.finish(&mut sink);
        let got = sink.take();
        assert_eq!(got.len(), 1);
        let t = &got[0].1;
        let steps = t["steps"].as_array().unwrap();
        let sources: Vec<&str> = steps.iter().map(|s| s["source"].as_str().unwrap()).collect();
        assert_eq!(sources, ["user", "agent", "agent"], "{t:#}");
        assert_eq!(steps[1]["message"], "Sure");
        assert_eq!(steps[1]["tool_calls"][0]["function_name"], "Bash");
        assert_eq!(steps[1]["observation"]["results"][0]["content"], "a b");
        assert_eq!(steps[1]["metrics"]["prompt_tokens"], 13);
        assert_eq!(steps[1]["metrics"]["cached_tokens"], 10);
        assert_eq!(steps[2]["message"], "a and b");
        assert_eq!(t["final_metrics"]["total_prompt_tokens"], 17);
        assert_eq!(t["final_metrics"]["total_cost_usd"], 0.5);
        assert_eq!(t["agent"]["name"], "claude-code");
        assert_eq!(t["extra"]["dialect"], "claude");
    }
}
