//! agentnorm: one normalized event stream from every coding-agent CLI's NDJSON.
//!
//! Coding agents (Claude Code, OpenAI Codex, …) stream NDJSON, each in its own dialect.
//! agentnorm detects the dialect of each frame from its structure and writes one closed
//! vocabulary of [`Event`]s: sessions, text, reasoning, tool calls with their results, plans,
//! subagents, token usage, rate limits, typed diagnostics, and every frame it does not
//! understand, surfaced as `unknown`, never dropped. The contract is `SPEC.md` (summarised in
//! the README); [`Event`]'s docs describe each type.
//!
//! The normalizer does no I/O ([`files`] opens log files for those who want it): feed a [`Normalizer`] bytes in any chunks and collect events in a
//! [`Sink`]. For people, [`view`] turns events into a transcript of typed spans (tool calls
//! with their outcome, Markdown, plans, usage), independent of the medium; its
//! [`view::PrettySink`] is the terminal view of `--format pretty`.
//!
//! ```
//! use agentnorm::{Event, Normalizer, Options};
//! let input = br#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-5","tools":["Bash"]}
//! {"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","content":[{"type":"text","text":"Hello"}],"usage":{"input_tokens":3,"output_tokens":1}},"session_id":"s1","parent_tool_use_id":null}
//! {"type":"result","subtype":"success","is_error":false,"result":"Hello","session_id":"s1","usage":{"input_tokens":3,"output_tokens":5}}
//! "#;
//! let mut events: Vec<Event> = Vec::new();
//! let mut n = Normalizer::new(Options::default().observed_at(false));
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

#[macro_use]
mod dialects;
mod dialect;
pub mod event;
mod normalize;
mod read;
pub mod sink;
pub mod view;

pub use event::sink::{NdjsonSink, Sink, Skim};
pub use event::{Dialect, Envelope, Event, Json, ModelUsage, Text, Usage};
pub use normalize::parallel::{Panicked, fold_parallel, line_cut};
pub use normalize::redact::{redact_event, redact_str};
pub use normalize::survey::{ReadAs, Survey, SurveyEntry, SurveyKey};
pub use normalize::{
    DEFAULT_MAX_LINE_BYTES, Events, FilterError, Normalizer, Options, Summary, TypeFilter, events, first_dialect,
};
pub use read::{files, simd};
pub use sink::coalesce::Coalescer;

/// The pipeline's stages, for the stage benchmark (`examples/stages.rs`) only: not part of the
/// library's API, and built only with the `internals` feature.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::normalize::{Decoded, Fold, decode};
    pub use crate::read::frame::Parser;
}
