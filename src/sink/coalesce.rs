//! The coalesced view of diagnostics (SPEC §5, `agentnorm diagnostics`): a [`Sink`] that keeps
//! only `diagnostic` events and, at the end, gives one per `dedupe_key`.
//!
//! A CLI that warns about a missing plugin does so on every start, a reconnecting one on every
//! retry: a long log holds the same trouble hundreds of times. Counting it is what a watchdog or
//! a person wants ("`github@openai-curated` not installed, 212 times, lines 3–9120"), not the
//! repeats. The coalescer is a sink like any other (the NDJSON writer is one too), so it works on
//! one stream or on many fed in turn, and knows nothing of files.
//!
//! Per `dedupe_key`, in the order the keys were first seen:
//! - `count` is the sum of the occurrences' counts (1 each, unless they were coalesced already);
//! - `plugins` is the sorted union; `level` the highest seen (`error` > `warning` > `info`);
//! - `code`, `message`, `subsystem` and `at` are the first occurrence's;
//! - `raw` is every distinct source line, in first-seen order, joined with `\n`;
//! - `first_line` is the line of the first occurrence, `last_line` that of the last one (line
//!   numbers of their own inputs: with several inputs they may come from different files);
//! - `source`, `session_id`, `parent_tool_id` and `sidechain` are kept when every occurrence
//!   agrees on them, and left out otherwise (so `source` is there exactly when all came from one
//!   file); `dialect` when every occurrence that has one agrees (a stderr line read before the
//!   stream's dialect was fixed has none); `line`, `line_end`, `observed_at` and the envelope's
//!   `raw` are left out.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::event::sink::Sink;
use crate::event::{Dialect, Envelope, Event, Level, Text};

/// Collects `diagnostic` events and coalesces them per `dedupe_key` (other events are ignored).
///
/// ```
/// use agentnorm::sink::coalesce::Coalescer;
/// use agentnorm::{Event, Normalizer, Options};
///
/// let log = b"WARN codex_core::plugins: plugin is not installed plugin=\"github@openai-curated\"
/// {\"type\":\"thread.started\",\"thread_id\":\"t1\"}
/// WARN codex_core::plugins: plugin is not installed plugin=\"github@openai-curated\"
/// WARNING: proceeding, even though we could not create PATH aliases
/// ";
/// let mut coalescer = Coalescer::new();
/// let mut n = Normalizer::new(Options::default().observed_at(false));
/// n.feed(log, &mut coalescer);
/// n.finish(&mut coalescer);
/// let events = coalescer.finish();
/// assert_eq!(events.len(), 2);
/// match &events[0] {
///     Event::Diagnostic { dedupe_key, count, plugins, first_line, last_line, raw, .. } => {
///         assert_eq!(dedupe_key, "codex.plugin.not-installed|github@openai-curated");
///         assert_eq!(*count, 2);
///         assert_eq!(plugins, &["github@openai-curated"]);
///         assert_eq!((*first_line, *last_line), (Some(1), Some(3)));
///         assert_eq!(raw.as_str().lines().count(), 1); // the two lines are the same
///     }
///     _ => unreachable!(),
/// }
/// ```
#[derive(Debug, Default)]
pub struct Coalescer {
    groups: Vec<Group>,
    by_key: HashMap<String, usize>,
}

/// One `dedupe_key`'s occurrences so far.
#[derive(Debug)]
struct Group {
    code: String,
    message: String,
    dedupe_key: String,
    subsystem: Option<String>,
    at: Option<String>,
    level: Level,
    count: u64,
    plugins: BTreeSet<String>,
    raws: Vec<Arc<str>>,
    seen: HashSet<Arc<str>>,
    first_line: Option<u64>,
    last_line: Option<u64>,
    source: Agree<Option<String>>,
    dialect: Agree<Option<Dialect>>,
    session_id: Agree<Option<String>>,
    parent_tool_id: Agree<Option<String>>,
    sidechain: Agree<Option<bool>>,
}

/// A field kept only while every occurrence has the same value.
#[derive(Debug)]
enum Agree<T> {
    Same(T),
    Mixed,
}

impl<T: PartialEq + Clone> Agree<T> {
    fn see(&mut self, v: &T) {
        if matches!(self, Agree::Same(x) if x != v) {
            *self = Agree::Mixed;
        }
    }
}

impl<T> Agree<Option<T>> {
    fn value(self) -> Option<T> {
        match self {
            Agree::Same(v) => v,
            Agree::Mixed => None,
        }
    }
}

fn rank(l: Level) -> u8 {
    match l {
        Level::Info => 0,
        Level::Warning => 1,
        Level::Error => 2,
    }
}

impl Coalescer {
    /// An empty coalescer.
    pub fn new() -> Coalescer {
        Coalescer::default()
    }

    /// The number of distinct `dedupe_key`s seen so far.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// True when no diagnostic was seen.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The coalesced diagnostics, one per `dedupe_key`, in first-seen order.
    pub fn finish(self) -> Vec<Event> {
        self.groups.into_iter().map(Group::into_event).collect()
    }

    /// Writes the coalesced diagnostics into `sink`, in first-seen order.
    pub fn finish_into(self, sink: &mut dyn Sink) {
        for g in self.groups {
            sink.event(&g.into_event());
        }
    }
}

impl Sink for Coalescer {
    fn event(&mut self, ev: &Event) {
        let Event::Diagnostic {
            env,
            level,
            code,
            message,
            dedupe_key,
            count,
            plugins,
            raw,
            subsystem,
            first_line,
            last_line,
        } = ev
        else {
            return;
        };
        // An event that is itself coalesced brings its own span; a plain one its line.
        let (from, to) = (first_line.or(env.line), last_line.or(env.line));
        let i = match self.by_key.get(dedupe_key) {
            Some(&i) => i,
            None => {
                self.groups.push(Group {
                    code: code.clone(),
                    message: message.clone(),
                    dedupe_key: dedupe_key.clone(),
                    subsystem: subsystem.clone(),
                    at: env.at.clone(),
                    level: *level,
                    count: 0,
                    plugins: BTreeSet::new(),
                    raws: Vec::new(),
                    seen: HashSet::new(),
                    first_line: from,
                    last_line: None,
                    source: Agree::Same(env.source.clone()),
                    dialect: Agree::Same(env.dialect),
                    session_id: Agree::Same(env.session_id.clone()),
                    parent_tool_id: Agree::Same(env.parent_tool_id.clone()),
                    sidechain: Agree::Same(env.sidechain),
                });
                self.by_key.insert(dedupe_key.clone(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let g = &mut self.groups[i];
        g.count = g.count.saturating_add(*count);
        if rank(*level) > rank(g.level) {
            g.level = *level;
        }
        for p in plugins {
            if !g.plugins.contains(p) {
                g.plugins.insert(p.clone());
            }
        }
        let raw = raw.as_str();
        // A coalesced event's `raw` is its distinct lines joined; a plain one's is one line (or a
        // pretty-printed frame's several lines, kept whole).
        let lines: Box<dyn Iterator<Item = &str>> =
            if first_line.is_some() { Box::new(raw.split('\n')) } else { Box::new(std::iter::once(&*raw)) };
        for line in lines {
            if !line.is_empty() && !g.seen.contains(line) {
                let r: Arc<str> = Arc::from(line);
                g.seen.insert(Arc::clone(&r));
                g.raws.push(r);
            }
        }
        if g.first_line.is_none() {
            g.first_line = from;
        }
        if to.is_some() {
            g.last_line = to;
        }
        g.source.see(&env.source);
        // A line read before the stream's dialect was fixed says nothing against it.
        match (&g.dialect, env.dialect) {
            (_, None) => {}
            (Agree::Same(None), Some(d)) => g.dialect = Agree::Same(Some(d)),
            (_, d) => g.dialect.see(&d),
        }
        g.session_id.see(&env.session_id);
        g.parent_tool_id.see(&env.parent_tool_id);
        g.sidechain.see(&env.sidechain);
    }
}

impl Group {
    fn into_event(self) -> Event {
        let raw = self.raws.iter().map(|r| &**r).collect::<Vec<&str>>().join("\n");
        Event::Diagnostic {
            env: Envelope {
                dialect: self.dialect.value(),
                source: self.source.value(),
                session_id: self.session_id.value(),
                parent_tool_id: self.parent_tool_id.value(),
                sidechain: self.sidechain.value(),
                at: self.at,
                ..Envelope::default()
            },
            level: self.level,
            code: self.code,
            message: self.message,
            dedupe_key: self.dedupe_key,
            count: self.count,
            plugins: self.plugins.into_iter().collect(),
            raw: Text::from(raw),
            subsystem: self.subsystem,
            first_line: self.first_line,
            last_line: self.last_line,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::diagnostic;

    /// A diagnostic as the normalizer writes it: `line`, `source`, `dialect`, `raw` filled.
    fn occ(key_plugins: &[&str], level: Level, line: u64, source: Option<&str>, raw: &str) -> Event {
        let mut ev =
            diagnostic(level, "t.code", format!("message {line}"), key_plugins.iter().map(|p| p.to_string()).collect());
        if let Event::Diagnostic { env, raw: r, .. } = &mut ev {
            env.line = Some(line);
            env.source = source.map(str::to_owned);
            env.dialect = Some(Dialect::Codex);
            *r = Text::from(raw);
        }
        ev
    }

    fn coalesce(evs: &[Event]) -> Vec<Event> {
        let mut c = Coalescer::new();
        for e in evs {
            c.event(e);
        }
        c.finish()
    }

    fn json(ev: &Event) -> serde_json::Value {
        serde_json::to_value(ev).unwrap()
    }

    #[test]
    fn one_event_per_key_in_first_seen_order() {
        let out = coalesce(&[
            occ(&["b"], Level::Warning, 1, None, "l1"),
            occ(&[], Level::Info, 2, None, "l2"),
            occ(&["b"], Level::Warning, 5, None, "l5"),
            occ(&["a"], Level::Warning, 7, None, "l7"),
            occ(&[], Level::Info, 9, None, "l2"),
        ]);
        let keys: Vec<_> = out.iter().map(|e| json(e)["dedupe_key"].as_str().unwrap().to_owned()).collect();
        assert_eq!(keys, ["t.code|b", "t.code", "t.code|a"]);
        let b = json(&out[0]);
        assert_eq!(b["count"], 2);
        assert_eq!((b["first_line"].as_u64(), b["last_line"].as_u64()), (Some(1), Some(5)));
        assert_eq!(b["raw"], "l1\nl5");
        assert_eq!(b["message"], "message 1", "the first occurrence's message");
        assert!(b.get("line").is_none() && b.get("observed_at").is_none());
        let plain = json(&out[1]);
        assert_eq!(plain["raw"], "l2", "a repeated line is kept once");
        assert_eq!(plain["count"], 2);
        assert_eq!((plain["first_line"].as_u64(), plain["last_line"].as_u64()), (Some(2), Some(9)));
    }

    #[test]
    fn counts_sum_and_plugins_union_sorted() {
        let mut two = occ(&["z", "m"], Level::Warning, 3, None, "x");
        if let Event::Diagnostic { count, dedupe_key, .. } = &mut two {
            *count = 3;
            *dedupe_key = "k".into();
        }
        let mut one = occ(&["a", "m"], Level::Warning, 4, None, "y");
        if let Event::Diagnostic { dedupe_key, .. } = &mut one {
            *dedupe_key = "k".into();
        }
        let out = coalesce(&[two, one]);
        assert_eq!(out.len(), 1);
        let v = json(&out[0]);
        assert_eq!(v["count"], 4);
        assert_eq!(v["plugins"], serde_json::json!(["a", "m", "z"]));
    }

    #[test]
    fn level_is_the_highest_seen() {
        let mut evs = vec![
            occ(&[], Level::Info, 1, None, "a"),
            occ(&[], Level::Error, 2, None, "b"),
            occ(&[], Level::Warning, 3, None, "c"),
        ];
        let out = coalesce(&evs);
        assert_eq!(json(&out[0])["level"], "error");
        evs.remove(1);
        assert_eq!(json(&coalesce(&evs)[0])["level"], "warning");
    }

    #[test]
    fn source_and_dialect_only_when_all_agree() {
        let same =
            coalesce(&[occ(&[], Level::Info, 1, Some("a.jsonl"), "x"), occ(&[], Level::Info, 8, Some("a.jsonl"), "x")]);
        let v = json(&same[0]);
        assert_eq!(v["source"], "a.jsonl");
        assert_eq!(v["dialect"], "codex");
        let mut other = occ(&[], Level::Info, 2, Some("b.jsonl"), "x");
        other.env_mut().dialect = Some(Dialect::CodexRollout);
        let mixed = coalesce(&[occ(&[], Level::Info, 1, Some("a.jsonl"), "x"), other]);
        let v = json(&mixed[0]);
        assert!(v.get("source").is_none(), "{v}");
        assert!(v.get("dialect").is_none(), "{v}");
        assert_eq!((v["first_line"].as_u64(), v["last_line"].as_u64()), (Some(1), Some(2)));
        // A line without a dialect (read before it was fixed) does not disagree.
        let mut early = occ(&[], Level::Info, 1, None, "x");
        early.env_mut().dialect = None;
        let v = json(&coalesce(&[early.clone(), occ(&[], Level::Info, 3, None, "x")])[0]);
        assert_eq!(v["dialect"], "codex");
        assert!(json(&coalesce(&[early])[0]).get("dialect").is_none());
        // stdin (no source) and a file disagree as well.
        let v =
            json(&coalesce(&[occ(&[], Level::Info, 1, None, "x"), occ(&[], Level::Info, 1, Some("a.jsonl"), "x")])[0]);
        assert!(v.get("source").is_none());
    }

    #[test]
    fn other_events_are_ignored_and_coalesced_input_keeps_its_span() {
        let mut c = Coalescer::new();
        c.event(&Event::heartbeat("system/status"));
        assert!(c.is_empty());
        let once = coalesce(&[occ(&[], Level::Info, 4, None, "a"), occ(&[], Level::Info, 9, None, "b")]);
        let mut again = once.clone();
        again.extend(coalesce(&[occ(&[], Level::Info, 20, None, "b")]));
        let out = coalesce(&again);
        assert_eq!(out.len(), 1);
        let v = json(&out[0]);
        assert_eq!(v["count"], 3);
        assert_eq!((v["first_line"].as_u64(), v["last_line"].as_u64()), (Some(4), Some(20)));
        assert_eq!(v["raw"], "a\nb");
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn output_reads_back_and_has_no_null() {
        let out = coalesce(&[occ(&["p"], Level::Warning, 1, Some("f.jsonl"), "r")]);
        let mut sink = crate::event::sink::NdjsonSink::default();
        let mut c = Coalescer::new();
        c.event(&out[0]);
        c.finish_into(&mut sink);
        let text = String::from_utf8(sink.buf).unwrap();
        assert!(!text.contains("null"));
        let back: Event = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(back, out[0]);
    }
}
