//! Where events go: the [`Sink`] trait and the NDJSON writer.
//!
//! Reading is kept apart from writing (as ripgrep's searcher and printer are): the normalizer
//! pushes events into a sink and knows nothing of files, buffers or formats. A `Vec<Event>` is a
//! sink for library users; [`NdjsonSink`] appends JSON lines to a byte buffer that the caller
//! drains to its output in large blocks.

use crate::event::Event;

/// Receives events in output order.
pub trait Sink {
    /// Takes one event.
    fn event(&mut self, ev: &Event);
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
