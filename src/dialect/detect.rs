//! Dialect detection from the structure of each frame (SPEC §2), never from a model name.
//!
//! [`fit`] is stateless: it says which dialects a frame could belong to and whether it
//! belongs to one of them only. [`Detector`] holds the per-stream stickiness: the first frame that
//! decides fixes the dialect for the ambiguous frames after it, and a frame that clearly belongs
//! to another dialect switches.

use crate::event::Dialect;
use crate::read::frame::Val;

/// A set of dialects a frame fits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fit(u8);

impl Fit {
    /// No dialect.
    pub const NONE: Fit = Fit(0);

    fn bit(d: Dialect) -> u8 {
        1 << (d as u8)
    }

    /// The set holding `d` only.
    pub fn only(d: Dialect) -> Fit {
        Fit(Fit::bit(d))
    }

    /// This set plus `d`.
    pub fn with(self, d: Dialect) -> Fit {
        Fit(self.0 | Fit::bit(d))
    }

    /// Whether `d` is in the set.
    pub fn contains(self, d: Dialect) -> bool {
        self.0 & Fit::bit(d) != 0
    }

    /// True for the empty set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The dialect when the set holds exactly one.
    pub fn single(self) -> Option<Dialect> {
        (self.0.count_ones() == 1).then(|| self.iter().next()).flatten()
    }

    /// The dialects in the set, in contract order (the preferred one first).
    pub fn iter(self) -> impl Iterator<Item = Dialect> {
        Dialect::ALL.into_iter().filter(move |d| self.contains(*d))
    }
}

/// Which dialects a frame fits, from its structure alone.
pub fn fit(frame: Val<'_>) -> Fit {
    let ty = frame.str_at("type");
    // Legacy Codex: {"id", "msg": {"type"}} (and its leading config / prompt lines).
    if let Some(msg) = frame.get("msg")
        && msg.is_object()
        && msg.str_at("type").is_some()
    {
        return Fit::only(Dialect::CodexLegacy);
    }
    // Codex rollout: {"timestamp","type","payload"}.
    if frame.get("payload").is_some_and(|p| p.is_object())
        && matches!(ty, Some("session_meta" | "turn_context" | "response_item" | "event_msg" | "compacted"))
    {
        return Fit::only(Dialect::CodexRollout);
    }
    // Claude transcripts carry the conversation-tree keys on every message line.
    if frame.get("parentUuid").is_some() || (frame.get("isSidechain").is_some() && frame.get("sessionId").is_some()) {
        return Fit::only(Dialect::ClaudeTranscript);
    }
    let Some(ty) = ty else {
        return untyped(frame);
    };
    match ty {
        "thread.started" | "turn.started" | "turn.completed" | "turn.failed" | "item.started" | "item.updated"
        | "item.completed" | "session.created" | "request_user_input" | "item.plan.delta" => Fit::only(Dialect::Codex),
        // Top-level Codex error: {"type":"error","message":…}. Gemini and OpenCode errors carry
        // other keys.
        "error" => {
            if frame.get("severity").is_some() {
                Fit::only(Dialect::Gemini)
            } else if frame.get("sessionID").is_some() || frame.get("error").is_some_and(|e| e.is_object()) {
                Fit::only(Dialect::Opencode)
            } else {
                Fit::only(Dialect::Codex)
            }
        }
        "summary"
        | "file-history-snapshot"
        | "queue-operation"
        | "last-prompt"
        | "permission-mode"
        | "ai-title"
        | "custom-title"
        | "agent-name" => Fit::only(Dialect::ClaudeTranscript),
        "init" | "message" | "tool_use" | "tool_result"
            if frame.get("sessionID").is_none() && frame.get("part").is_none() =>
        {
            Fit::only(Dialect::Gemini)
        }
        "step_start" | "step_finish" | "text" | "reasoning" | "tool_use" | "done" => Fit::only(Dialect::Opencode),
        "tool_call" | "thinking" | "interaction_query" => Fit::only(Dialect::Cursor),
        // Gemini's result has a `status` and no Claude/Cursor `subtype` / `is_error`.
        "result"
            if frame.get("status").is_some() && frame.get("subtype").is_none() && frame.get("is_error").is_none() =>
        {
            Fit::only(Dialect::Gemini)
        }
        "stream_event" | "rate_limit_event" | "control_response" | "control_request" | "keep_alive" | "active_goal" => {
            Fit::only(Dialect::Claude)
        }
        "system" | "assistant" | "user" | "result" => claude_or_cursor(frame, ty),
        _ => Fit::NONE,
    }
}

/// Frames without a `type`: Gemini's `--output-format json` object, and the config and prompt
/// lines legacy Codex writes before its events.
fn untyped(frame: Val<'_>) -> Fit {
    let has = |k: &str| frame.get(k).is_some();
    let error_object = frame.get("error").is_some_and(|e| e.is_object());
    if has("session_id") && (has("response") || has("stats") || error_object) || has("response") && has("stats") {
        return Fit::only(Dialect::Gemini);
    }
    let Some(entries) = frame.entries() else { return Fit::NONE };
    if let [("prompt", p)] = entries.as_slice()
        && p.is_str()
    {
        return Fit::only(Dialect::CodexLegacy);
    }
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
    let config = !entries.is_empty()
        && (has("model") || has("provider") || has("sandbox"))
        && entries.iter().all(|(k, v)| CONFIG.contains(k) && v.is_str());
    if config { Fit::only(Dialect::CodexLegacy) } else { Fit::NONE }
}

/// Claude and Cursor share `system`/`assistant`/`user`/`result`: look for either's marks.
fn claude_or_cursor(frame: Val<'_>, ty: &str) -> Fit {
    let subtype = frame.str_at("subtype");
    let claude_mark = frame.get("uuid").is_some()
        || frame.get("parent_tool_use_id").is_some()
        || (ty == "system" && subtype != Some("init"))
        || (ty == "system" && frame.get("tools").is_some());
    if claude_mark {
        return Fit::only(Dialect::Claude);
    }
    let cursor_mark = frame.get("timestamp_ms").is_some()
        || frame.get("model_call_id").is_some()
        || (ty == "system" && frame.get("apiKeySource").is_some())
        || (ty == "result"
            && frame
                .get("usage")
                .is_some_and(|u| u.get("inputTokens").is_some() || u.get("cacheReadTokens").is_some()));
    if cursor_mark {
        return Fit::only(Dialect::Cursor);
    }
    Fit::only(Dialect::Claude).with(Dialect::Cursor)
}

/// Per-stream dialect stickiness.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    forced: Option<Dialect>,
    current: Option<Dialect>,
}

impl Detector {
    /// A detector that always answers `forced` when given.
    pub fn new(forced: Option<Dialect>) -> Detector {
        Detector { forced, current: forced }
    }

    /// The dialect fixed so far.
    pub fn current(&self) -> Option<Dialect> {
        self.current
    }

    /// Decides the dialect of a frame that fits `fit`, updating the stream's dialect.
    pub fn decide(&mut self, fit: Fit) -> Option<Dialect> {
        if self.forced.is_some() {
            return self.forced;
        }
        if let Some(d) = fit.single() {
            self.current = Some(d);
            return Some(d);
        }
        match self.current {
            Some(cur) if fit.contains(cur) => Some(cur),
            _ => {
                let d = fit.iter().next()?;
                self.current = Some(d);
                Some(d)
            }
        }
    }
}

/// The first dialect detected in a stream (what `agentnorm detect` prints): the stream is
/// normalized (with its line limit and multi-line documents) only until an event names one.
pub fn first_dialect(mut input: impl std::io::Read) -> std::io::Result<Option<Dialect>> {
    struct First(Option<Dialect>);
    impl crate::Sink for First {
        fn event(&mut self, ev: &crate::Event) {
            if self.0.is_none() {
                self.0 = ev.env().dialect;
            }
        }
    }
    let mut norm = crate::Normalizer::new(crate::Options { observed_at: false, ..crate::Options::default() });
    let mut first = First(None);
    let mut buf = vec![0u8; 64 << 10];
    while first.0.is_none() {
        let n = match input.read(&mut buf) {
            Ok(0) => {
                norm.finish(&mut first);
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        norm.feed(&buf[..n], &mut first);
    }
    Ok(first.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::frame::Parser;

    fn fit_of(line: &str) -> Fit {
        Parser::default().with_frame(line.as_bytes(), |v| fit(v.unwrap()))
    }

    #[test]
    fn structure_decides() {
        assert_eq!(fit_of(r#"{"type":"thread.started","thread_id":"t"}"#).single(), Some(Dialect::Codex));
        assert_eq!(fit_of(r#"{"type":"error","message":"Reconnecting... 1/5"}"#).single(), Some(Dialect::Codex));
        assert_eq!(fit_of(r#"{"type":"stream_event","event":{}}"#).single(), Some(Dialect::Claude));
        assert_eq!(fit_of(r#"{"type":"assistant","message":{},"uuid":"u"}"#).single(), Some(Dialect::Claude));
        assert_eq!(fit_of(r#"{"type":"system","subtype":"init","apiKeySource":"x"}"#).single(), Some(Dialect::Cursor));
        let both = fit_of(r#"{"type":"assistant","message":{}}"#);
        assert!(both.contains(Dialect::Claude) && both.contains(Dialect::Cursor));
        assert!(fit_of(r#"{"type":"nope"}"#).is_empty());
        assert_eq!(fit_of(r#"{"type":"result","status":"success","stats":{}}"#).single(), Some(Dialect::Gemini));
        assert_eq!(fit_of(r#"{"session_id":"s","response":"hi","stats":{}}"#).single(), Some(Dialect::Gemini));
        assert_eq!(fit_of(r#"{"model":"o3","provider":"openai"}"#).single(), Some(Dialect::CodexLegacy));
        assert_eq!(fit_of(r#"{"prompt":"do it"}"#).single(), Some(Dialect::CodexLegacy));
        assert_eq!(fit_of(r#"{"id":"1","msg":{"type":"task_started"}}"#).single(), Some(Dialect::CodexLegacy));
        assert_eq!(
            fit_of(r#"{"timestamp":"t","type":"event_msg","payload":{}}"#).single(),
            Some(Dialect::CodexRollout)
        );
        assert_eq!(
            fit_of(r#"{"type":"user","parentUuid":null,"sessionId":"s"}"#).single(),
            Some(Dialect::ClaudeTranscript)
        );
        assert_eq!(fit_of(r#"{"type":"step_start","sessionID":"s","part":{}}"#).single(), Some(Dialect::Opencode));
        assert!(fit_of(r#"{"silly":"this"}"#).is_empty());
    }

    #[test]
    fn sticky_then_switch() {
        let mut d = Detector::new(None);
        let both = Fit::only(Dialect::Claude).with(Dialect::Cursor);
        assert_eq!(d.decide(Fit::only(Dialect::Cursor)), Some(Dialect::Cursor));
        assert_eq!(d.decide(both), Some(Dialect::Cursor), "ambiguous frames keep the stream's dialect");
        assert_eq!(d.decide(Fit::only(Dialect::Codex)), Some(Dialect::Codex), "a clear frame switches");
        assert_eq!(Detector::new(None).decide(both), Some(Dialect::Claude), "claude unless a cursor mark was seen");
        assert_eq!(Detector::new(Some(Dialect::Codex)).decide(both), Some(Dialect::Codex));
    }
}
