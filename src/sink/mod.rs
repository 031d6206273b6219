//! Sinks and reports: what consumes the normalized events besides the NDJSON writer.
//!
//! The [`crate::Sink`] trait and the NDJSON writer live with the vocabulary ([`crate::event`]);
//! here are the sinks built on them: the diagnostic [`coalesce`]r, the usage [`report`] with its
//! [`prices`], [`safe`], the neutralising of agent-controlled text for people, and the
//! ecosystem formats: OpenTelemetry traces ([`otlp`]), ATIF trajectories ([`atif`]) and typed
//! tables as Parquet ([`parquet`]).

pub mod atif;
pub mod coalesce;
pub mod otlp;
pub mod parquet;
pub mod prices;
pub mod report;
pub mod safe;
