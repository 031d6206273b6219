//! A bounded map of recently seen ids, for the dedupe and pairing every fold does.
//!
//! Hashed with foldhash (seeded per process), as the report's keys are: it is looked up on most
//! lines of a stream, and SipHash was a visible part of reading one.

use std::collections::VecDeque;
use std::sync::Arc;

/// Ids remembered for dedupe and pairing, the oldest forgotten past a bound so that memory does
/// not grow with the length of a stream (a message's repeats and a tool's result come soon after
/// it; 4 096 messages or 65 536 tool calls later they are long done).
///
/// The map and the order share each id (`Arc<str>`): one copy of it, made when it is inserted.
#[derive(Debug)]
pub(crate) struct Recent<V> {
    map: foldhash::HashMap<Arc<str>, V>,
    order: VecDeque<Arc<str>>,
    cap: usize,
}

impl<V> Recent<V> {
    pub(crate) fn new(cap: usize) -> Recent<V> {
        Recent { map: foldhash::HashMap::default(), order: VecDeque::new(), cap }
    }

    pub(crate) fn contains(&self, k: &str) -> bool {
        self.map.contains_key(k)
    }

    pub(crate) fn get(&self, k: &str) -> Option<&V> {
        self.map.get(k)
    }

    /// Inserts; returns false (and changes nothing) when `k` is already there.
    pub(crate) fn insert_with(&mut self, k: &str, v: V) -> bool {
        if self.map.contains_key(k) {
            return false;
        }
        if self.order.len() >= self.cap
            && let Some(old) = self.order.pop_front()
        {
            self.map.remove(&old);
        }
        let k: Arc<str> = k.into();
        self.order.push_back(k.clone());
        self.map.insert(k, v);
        true
    }

    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
    }
}

impl Recent<()> {
    pub(crate) fn insert(&mut self, k: &str) -> bool {
        self.insert_with(k, ())
    }
}
