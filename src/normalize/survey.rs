//! `agentnorm survey`: how each frame type of each dialect and CLI version was read.
//!
//! The fold records, per line, the dialect it decided, the CLI version the stream named last
//! (`session_started.cli_version`), the frame's name (`type`, or `type/subtype` as the adapter
//! names it) and whether the line became events (`mapped`), only a `heartbeat`, or `unknown`.
//! A new CLI release's frames show up here the day it ships.

use std::collections::BTreeMap;

use crate::event::Dialect;

/// How a frame type was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadAs {
    /// Into events other than `heartbeat`.
    Mapped,
    /// Only as a `heartbeat` (recognised, nothing else worth an event).
    Heartbeat,
    /// As `unknown`.
    Unknown,
}

/// A row of a survey: a frame type of one dialect and CLI version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SurveyKey {
    /// The dialect (`None`: no dialect was fixed yet, e.g. stderr lines before any frame).
    pub dialect: Option<Dialect>,
    /// The CLI version the stream named last, if any.
    pub cli_version: Option<String>,
    /// The frame's name: `type` or `type/subtype`; `(not_json)` and the like for lines that are
    /// no frame.
    pub frame: String,
}

/// How the lines of a row were read, and where one of them is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SurveyEntry {
    /// Lines that became events other than `heartbeat`.
    pub mapped: u64,
    /// Lines that became only a `heartbeat`.
    pub heartbeat: u64,
    /// Lines that became `unknown`.
    pub unknown: u64,
    /// The source of the sample line, when it came from a named input.
    pub source: Option<String>,
    /// The sample line: the first `unknown` one if any, else the first one.
    pub line: u64,
}

impl SurveyEntry {
    /// All lines of the row.
    pub fn count(&self) -> u64 {
        self.mapped + self.heartbeat + self.unknown
    }

    /// How the frame type is read: `mapped` when any line was, else `heartbeat` when any line
    /// was, else `unknown`.
    pub fn read_as(&self) -> ReadAs {
        if self.mapped > 0 {
            ReadAs::Mapped
        } else if self.heartbeat > 0 {
            ReadAs::Heartbeat
        } else {
            ReadAs::Unknown
        }
    }

    fn add(&mut self, read_as: ReadAs, source: Option<&str>, line: u64) {
        let first = self.count() == 0;
        // The sample is the first unknown line when there is one: the line to look at.
        if first || (read_as == ReadAs::Unknown && self.unknown == 0) {
            self.source = source.map(str::to_owned);
            self.line = line;
        }
        match read_as {
            ReadAs::Mapped => self.mapped += 1,
            ReadAs::Heartbeat => self.heartbeat += 1,
            ReadAs::Unknown => self.unknown += 1,
        }
    }
}

/// What a survey found, by row (sorted by dialect, version, frame).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Survey {
    /// The rows.
    pub rows: BTreeMap<SurveyKey, SurveyEntry>,
}

/// Distinct rows kept per stream; past it, further frame names count as `(other)`.
const MAX_ROWS: usize = 4096;

impl Survey {
    /// Counts one line.
    pub(crate) fn record(&mut self, key: SurveyKey, read_as: ReadAs, source: Option<&str>, line: u64) {
        let key = if self.rows.len() >= MAX_ROWS && !self.rows.contains_key(&key) {
            SurveyKey { frame: "(other)".to_owned(), ..key }
        } else {
            key
        };
        self.rows.entry(key).or_default().add(read_as, source, line);
    }

    /// Adds another survey's counts (the sample of the first stays, unless only the other has
    /// an unknown line).
    pub fn merge(&mut self, other: Survey) {
        for (k, v) in other.rows {
            let e = self.rows.entry(k).or_default();
            if e.count() == 0 || (e.unknown == 0 && v.unknown > 0) {
                e.source = v.source;
                e.line = v.line;
            }
            e.mapped += v.mapped;
            e.heartbeat += v.heartbeat;
            e.unknown += v.unknown;
        }
    }
}
