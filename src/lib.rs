//! agentnorm: one normalized event stream from every coding-agent CLI's NDJSON.
#![deny(missing_docs)]

pub mod event;
pub mod frame;
pub mod json;

pub use event::{Dialect, Envelope, Event, Json, Text, Usage};
