//! Gemini CLI's saved sessions, `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl` (and
//! a subagent's `chats/<parent>/<id>.jsonl`): what `agentnorm usage` reads of Gemini, since the
//! stream-json output is not kept anywhere.
//!
//! Gemini CLI ≥ 0.45 (`ChatRecordingService`) appends one JSON record per line:
//! - a metadata record first (`sessionId`, `projectHash`, `startTime`, `lastUpdated`, `kind`);
//! - message records (`id`, `timestamp`, `type` `user` / `gemini` / `info` / `warning` /
//!   `error`, `content` a string or parts; a `gemini` message also `thoughts`, `toolCalls`,
//!   `tokens`, `model`). **A message is written again, whole, each time it changes**: its
//!   tokens arrive after it (`"tokens": null`, then the same record with them), its tool calls
//!   are updated as they run. Each text, thought, call, result and usage is therefore written
//!   the first time it comes, keyed by the message or call id, never again;
//! - `{"$set": {…}}` patches of the metadata; `$set.messages` rewrites the whole list after a
//!   history compression (its records are read like the others: what was already written is
//!   not written again);
//! - `{"$rewindTo": id}`: the user rewound the conversation. What was rewound was still made
//!   and billed, so its usage stays counted.
//!
//! Older builds kept the session as one pretty-printed document (`session-….json`: the
//! metadata and a `messages` array), read as one frame (SPEC §1); it carries one time (its
//! `lastUpdated`) for all its events.
//!
//! `tokens` are the API's `usageMetadata`: `input` is the whole prompt (`promptTokenCount`),
//! **cached tokens included**; `tool` the tool-use prompt, billed as input too; `thoughts` is
//! generated apart from `output`. So `input = input + tool − cached`, `cache_read = cached`,
//! `output = output + thoughts`, `reasoning = thoughts`. The model is the message's `model`.

use std::collections::HashSet;

use super::{Accepts, Adapter, Claim, Cx, Mapped, Outcome, Own, Piece, Verdict, content_text, diagnostic};
use crate::event::{Envelope, Event, Level, Text, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `gemini-session` dialect.
pub(crate) struct GeminiSession;

/// The types of Gemini CLI's message records.
const MESSAGE_TYPES: &[&str] = &["user", "gemini", "info", "warning", "error"];

impl Adapter for GeminiSession {
    type Piece = SessionPiece;
    type State = State;
    const SAVED_LOG: bool = true;

    const ACCEPTS: Accepts = Accepts::types(&[MESSAGE_TYPES], Claim::Envelope).untyped();

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let has = |k: &str| f.get(k).is_some();
        match ty {
            // The metadata record (and the older whole document), a patch, a rewind.
            None if f.get("sessionId").is_some_and(|v| v.is_str()) && has("projectHash") => Claim::Envelope,
            None if f.get("$set").is_some_and(|v| v.is_object()) || f.get("$rewindTo").is_some_and(|v| v.is_str()) => {
                Claim::Envelope
            }
            // A message record: its own `id`, `timestamp` and `content` at the root (Claude's
            // `user` has a `message`, Gemini's stream `error` a `message` or `severity`).
            Some(t) if MESSAGE_TYPES.contains(&t) => {
                if f.get("id").is_some_and(|v| v.is_str()) && has("timestamp") && has("content") && !has("message") {
                    Claim::Envelope
                } else {
                    Claim::No
                }
            }
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(st: &mut State, piece: SessionPiece, cx: &mut dyn Cx) {
        match piece {
            SessionPiece::Once { key, event } => {
                if st.seen.insert(key) {
                    st.wrote = true;
                    cx.event(event);
                }
            }
            SessionPiece::End { frame } => {
                if !std::mem::take(&mut st.wrote) {
                    cx.event(Event::heartbeat(frame));
                }
            }
        }
    }
}

/// The pieces of a saved session's records, resolved against what the session wrote already.
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SessionPiece {
    /// An event written the first time its key comes (`text:<message>`, `usage:<message>`,
    /// `call:<call>`, …): a record written again writes nothing again.
    Once {
        /// What the event is of.
        key: String,
        /// The event.
        event: Event,
    },
    /// The record's end: a record that wrote nothing new is a `heartbeat` of this frame name.
    End {
        /// The frame's name.
        frame: String,
    },
}

impl From<SessionPiece> for Piece {
    fn from(p: SessionPiece) -> Piece {
        Piece::Own(Own::GeminiSession(p))
    }
}

/// What the session wrote: the keys of [`SessionPiece::Once`] (every one, for the whole
/// stream: a rewrite may repeat the first message after thousands of others).
#[derive(Debug, Default)]
pub(crate) struct State {
    seen: HashSet<String>,
    wrote: bool,
}

/// Maps one record of a saved session (or the older whole document).
pub fn map(f: Val<'_>, m: &mut Mapped) {
    match f.str_at("type") {
        Some(_) => {
            m.at = f.string_at("timestamp");
            match message(f, m) {
                Ok(()) => end(m, None),
                Err(reason) => m.unknown(reason, None),
            }
        }
        None if f.get("sessionId").is_some() => {
            m.session_id = f.string_at("sessionId").filter(|s| !s.is_empty());
            let Some(id) = m.session_id.clone() else {
                return m.unknown(UnknownReason::MalformedFrame, None);
            };
            let messages = f.get("messages").filter(|v| v.array_len().is_some());
            // The document's one time is its last; the metadata record's its start.
            m.at = if messages.is_some() { f.string_at("lastUpdated") } else { None }.or_else(|| f.string_at("startTime"));
            once(m, format!("session:{id}"), super::session_started());
            if let Some(list) = messages.and_then(|v| v.array()) {
                messages_of(list, m);
            }
            end(m, Some(if messages.is_some() { "session" } else { "metadata" }));
        }
        None => {
            if let Some(set) = f.get("$set").filter(|v| v.is_object()) {
                m.at = set.string_at("lastUpdated");
                if let Some(list) = set.array_at("messages") {
                    messages_of(list, m);
                }
                end(m, Some("$set"));
            } else if f.get("$rewindTo").is_some() {
                end(m, Some("$rewindTo"));
            } else {
                m.unknown(UnknownReason::UnrecognizedFrame, None);
            }
        }
    }
}

/// Adds `event`, written the first time `key` comes.
fn once(m: &mut Mapped, key: String, event: Event) {
    m.push_piece(SessionPiece::Once { key, event });
}

/// Ends the record's pieces (named `frame`, else by its type).
fn end(m: &mut Mapped, frame: Option<&str>) {
    if m.unknown.is_some() {
        return;
    }
    if let Some(f) = frame {
        m.frame = f.to_owned();
    }
    let frame = m.frame.clone();
    m.push_piece(SessionPiece::End { frame });
}

/// The entries of a document's or a `$set`'s `messages`: one that is no message record (no
/// `type` or `id`, a type the dialect does not know) is said in a warning, the others read.
fn messages_of<'t>(list: impl Iterator<Item = Val<'t>>, m: &mut Mapped) {
    let mut skipped = 0;
    for msg in list {
        if message(msg, m).is_err() {
            skipped += 1;
        }
    }
    if skipped > 0 {
        let text = format!("{skipped} entries of `messages` are no message record this dialect knows; they are not read");
        m.push(diagnostic(Level::Warning, "gemini.session.unread_messages", text, Vec::new()));
    }
}

/// One message record, whether a line of its own or an entry of a document or `$set.messages`;
/// an error for what is no message record this dialect knows.
fn message(f: Val<'_>, m: &mut Mapped) -> Result<(), UnknownReason> {
    let (Some(ty), Some(id)) = (f.str_at("type"), f.str_at("id")) else {
        return Err(UnknownReason::MalformedFrame);
    };
    if m.frame.is_empty() {
        m.frame = ty.to_owned();
    }
    let text = f.get("content").and_then(content_text).filter(|t| !t.is_empty());
    match ty {
        "user" => {
            if let Some(text) = text {
                once(m, format!("user:{id}"), Event::UserMessage { env: Envelope::default(), text });
            }
        }
        "gemini" => {
            for (n, thought) in f.array_at("thoughts").into_iter().flatten().enumerate() {
                if let Some(text) = thought_text(thought) {
                    once(m, format!("thought:{id}:{n}"), Event::Reasoning { env: Envelope::default(), text: Some(text) });
                }
            }
            if let Some(text) = text {
                let event = Event::OutputDelta { env: Envelope::default(), text, message_id: Some(id.to_owned()) };
                once(m, format!("text:{id}"), event);
            }
            for call in f.array_at("toolCalls").into_iter().flatten() {
                tool_call(call, m);
            }
            if let Some(usage) = f.get("tokens").filter(|t| t.is_object()).and_then(counters) {
                let event = Event::Usage {
                    env: Envelope::default(),
                    usage: super::usage::with_context(usage),
                    model: f.string_at("model"),
                    message_id: Some(id.to_owned()),
                    context_window: None,
                };
                once(m, format!("usage:{id}"), event);
            }
        }
        "info" | "warning" | "error" => {
            let level = match ty {
                "info" => Level::Info,
                "warning" => Level::Warning,
                _ => Level::Error,
            };
            let message = text.map_or_else(|| ty.to_owned(), |t| t.as_str().into_owned());
            once(m, format!("note:{id}"), diagnostic(level, &format!("gemini.session.{ty}"), message, Vec::new()));
        }
        _ => return Err(UnknownReason::UnrecognizedFrame),
    }
    Ok(())
}

/// A thought summary's text: `subject` and `description`, as the CLI shows them.
fn thought_text(t: Val<'_>) -> Option<Text> {
    let parts: Vec<&str> =
        ["subject", "description"].iter().filter_map(|k| t.str_at(k)).filter(|s| !s.trim().is_empty()).collect();
    (!parts.is_empty()).then(|| Text::from(parts.join(": ")))
}

/// One `toolCalls` entry: its start once, and its end once it has a final `status`.
fn tool_call(call: Val<'_>, m: &mut Mapped) {
    let (Some(id), Some(name)) = (call.str_at("id"), call.str_at("name")) else {
        return;
    };
    let mut started = Mapped::default();
    super::gemini::tool_started(id.to_owned(), name, call.get("args").filter(|a| !a.is_null()), &mut started);
    for (n, piece) in started.pieces.into_iter().enumerate() {
        if let Piece::Event(event) = piece {
            once(m, format!("call:{id}:{n}"), event);
        }
    }
    let verdict = match call.str_at("status") {
        Some("success") => Verdict::Succeeded,
        Some("error" | "cancelled") => Verdict::Failed,
        // `scheduled`, `validating`, `awaiting_approval`, `executing`: it goes on.
        _ => return,
    };
    let response = call.get("result").and_then(|r| {
        r.array()?.find_map(|p| p.path(&["functionResponse", "response"]))
    });
    let output = response
        .and_then(|r| r.get("output").or_else(|| r.get("error")))
        .and_then(content_text)
        .or_else(|| call.get("resultDisplay").filter(|d| d.is_str()).and_then(|d| d.text()));
    let done = Outcome {
        name: Some(name.to_owned()),
        verdict: Some(verdict),
        output,
        output_is_error: true,
        error: (call.str_at("status") == Some("cancelled")).then(|| "cancelled".to_owned()),
        ..Outcome::new(id.to_owned())
    };
    once(m, format!("done:{id}"), done.event());
}

/// A message's `tokens` (`usageMetadata`) as SPEC §4 counts them.
fn counters(t: Val<'_>) -> Option<Usage> {
    let prompt = t.u64_at("input");
    let tool = t.u64_at("tool");
    let cached = t.u64_at("cached");
    let output = t.u64_at("output");
    let thoughts = t.u64_at("thoughts");
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => a.unwrap_or(0).checked_add(b.unwrap_or(0)),
    };
    let usage = Usage {
        input: sum(prompt, tool).map(|p| p.saturating_sub(cached.unwrap_or(0))),
        cache_read: cached,
        output: sum(output, thoughts),
        reasoning: thoughts,
        ..Usage::default()
    };
    (!usage.is_empty()).then_some(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(line: &str) -> Option<Usage> {
        crate::read::frame::Parser::default().with_frame(line.as_bytes(), |v| counters(v.unwrap()))
    }

    #[test]
    fn cached_tokens_are_taken_out_of_the_prompt_and_thoughts_added_to_the_output() {
        let u = counted(r#"{"input":1200,"output":80,"cached":1000,"thoughts":40,"tool":30,"total":1350}"#).unwrap();
        assert_eq!((u.input, u.cache_read, u.output, u.reasoning), (Some(230), Some(1000), Some(120), Some(40)));
        // More cached than prompt (as some builds report): no negative input.
        let u = counted(r#"{"input":10,"output":5,"cached":40,"thoughts":0,"tool":0,"total":55}"#).unwrap();
        assert_eq!((u.input, u.cache_read, u.output), (Some(0), Some(40), Some(5)));
        assert_eq!(counted("{}"), None);
    }
}
