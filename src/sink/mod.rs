//! Sinks and reports: what consumes the normalized events besides the NDJSON writer.
//!
//! The [`crate::Sink`] trait and the NDJSON writer live with the vocabulary ([`crate::event`]);
//! here are the sinks built on them: the diagnostic [`coalesce`]r, the usage [`report`] with its
//! [`prices`], and [`safe`], the neutralising of agent-controlled text for people.

pub mod coalesce;
pub mod prices;
pub mod report;
pub mod safe;
