//! Where events go: the [`Sink`] trait and the NDJSON writer.
//!
//! Reading is kept apart from writing (as ripgrep's searcher and printer are): the normalizer
//! pushes events into a sink and knows nothing of files, buffers or formats. A `Vec<Event>` is a
//! sink for library users; [`NdjsonSink`] appends JSON lines to a byte buffer that the caller
//! drains to its output in large blocks. Any closure taking `&Event` is a sink too.

use crate::event::Event;

/// Receives events in output order.
///
/// Only [`event`](Sink::event) is required; the lifecycle calls have empty defaults, so that a
/// sink need not invent its own:
///
/// ```
/// use agentnorm::{Event, Normalizer, Options};
/// let mut types = Vec::new();
/// let mut sink = |ev: &Event| types.push(ev.type_name());
/// let mut n = Normalizer::new(Options::default().observed_at(false));
/// n.feed(b"{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n", &mut sink);
/// n.finish(&mut sink);
/// assert_eq!(types, ["run_started", "session_started", "run_ended"]);
/// ```
pub trait Sink {
    /// Takes one event.
    fn event(&mut self, ev: &Event);

    /// A source is about to be read (`source` is its path, when it has one).
    fn begin(&mut self, source: Option<&str>) {
        let _ = source;
    }

    /// The input has nothing more ready: a live sink shows what it holds.
    fn idle(&mut self) {}

    /// All input has been read: a sink that holds events writes them.
    fn finish(&mut self) {}

    /// Whether the normalizer may pass over the next line without decoding it where the
    /// line's dialect knows it writes nothing the sink needs ([`Skim`], `Adapter::passes_over`).
    /// Such a line then writes no event at all, and the lines that are read write their text,
    /// reasoning and tool events without what only the conversation needs: reasoning text, a
    /// call's input and summary and what they imply (a plan, a question), a result's output,
    /// a `session_started`'s CLI version and permission mode (the events, their ids and their
    /// times stay). A sink that counts usage (the report's
    /// collector) says how much it needs between the events it needs; the default,
    /// [`Skim::Every`], gives every event whole.
    fn skims(&self) -> Skim {
        Skim::Every
    }
}

/// What a sink needs of the next line ([`Sink::skims`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Skim {
    /// Every event of every line (the default).
    #[default]
    Every,
    /// Usage only, the current request's first line not yet seen: a line may be passed over
    /// where its dialect knows it writes no `usage`, `session_started`, model, `rate_limit`,
    /// turn start or end, and can be no request's first line (no text, reasoning or tool call).
    Usage,
    /// Usage only, the current request's first line seen: a line that carries only
    /// conversation (text, reasoning, tools, compaction, heartbeats) may be passed over too.
    UsageStarted,
}

impl<F: FnMut(&Event)> Sink for F {
    fn event(&mut self, ev: &Event) {
        self(ev)
    }
}

impl Sink for Vec<Event> {
    fn event(&mut self, ev: &Event) {
        self.push(ev.clone());
    }
}

/// Serializes events as NDJSON into a reused buffer.
#[derive(Debug, Default)]
pub struct NdjsonSink {
    /// The bytes written so far and not yet taken by the caller.
    pub buf: Vec<u8>,
}

impl Sink for NdjsonSink {
    fn event(&mut self, ev: &Event) {
        crate::event::json::write_event(&mut self.buf, ev);
    }
}
