//! agentnorm: one normalized event stream from every coding-agent CLI's NDJSON.
//!
//! Coding agents (Claude Code, OpenAI Codex, …) stream NDJSON, each in its own dialect.
//! agentnorm detects the dialect of each frame from its structure and writes one closed
//! vocabulary of [`Event`]s: sessions, text, reasoning, tool calls with their results, plans,
//! subagents, token usage, rate limits, typed diagnostics, and every frame it does not
//! understand, surfaced as `unknown`, never dropped. The contract is `SPEC.md` (summarised in
//! the README); [`Event`]'s docs describe each type.
//!
//! The library does no I/O: feed a [`Normalizer`] bytes in any chunks and collect events in a
//! [`Sink`]. For people, [`render`] turns events into a transcript of typed spans (tool calls
//! with their outcome, Markdown, plans, usage), independent of the medium; its
//! [`render::PrettySink`] is the terminal view of `--format pretty`.
//!
//! ```
//! use agentnorm::{Event, Normalizer, Options};
//! let input = br#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-5","tools":["Bash"]}
//! {"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","content":[{"type":"text","text":"Hello"}],"usage":{"input_tokens":3,"output_tokens":1}},"session_id":"s1","parent_tool_use_id":null}
//! {"type":"result","subtype":"success","is_error":false,"result":"Hello","session_id":"s1","usage":{"input_tokens":3,"output_tokens":5}}
//! "#;
//! let mut events: Vec<Event> = Vec::new();
//! let mut n = Normalizer::new(Options { observed_at: false, ..Options::default() });
//! n.feed(input, &mut events);
//! n.finish(&mut events);
//! let text: String = events.iter().filter_map(|e| match e {
//!     Event::OutputDelta { text, .. } => Some(text.as_str().into_owned()),
//!     _ => None,
//! }).collect();
//! assert_eq!(text, "Hello");
//! assert!(matches!(events.last(), Some(Event::RunEnded { complete: true, .. })));
//! ```
#![deny(missing_docs)]

pub mod atif;
pub mod chunked;
pub mod coalesce;
pub mod detect;
pub mod dialect;
pub mod event;
pub mod frame;
pub mod html;
pub mod json;
pub mod normalize;
pub mod otlp;
pub mod prices;
pub mod redact;
pub mod render;
pub mod report;
pub mod safe;
mod scan;
pub mod sink;
pub mod stderr;
pub mod time;
pub mod usage;

pub use coalesce::Coalescer;
pub use event::{Dialect, Envelope, Event, Json, ModelUsage, Text, Usage};
pub use normalize::{Decoded, Fold, Normalizer, Options, Summary, TypeFilter, decode};
pub use sink::{NdjsonSink, Sink};
