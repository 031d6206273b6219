//! Usage arithmetic (SPEC §4) that every adapter shares: sums that saturate, differences of
//! running totals, the per-message maximum, `context`, and a running cost split into turns.
//!
//! Each CLI's own counters (which field is which, what is a subset of what) are read by its
//! adapter (`counters` in `claude.rs`, `codex.rs`, …); the arithmetic on the resulting [`Usage`]
//! is written here once, so that the rules people bill on (absent is not zero, a sum never
//! wraps, a total that went down started over) are tested once.

use std::collections::BTreeMap;

use crate::event::{ModelUsage, Usage};

/// Whether per-model running totals (`modelUsage`) started over between two readings of one
/// process's counters: a model of `before` is missing from `now`, or one of its counters went
/// down. The total cost may still have gone up, so only this tells a new process from a new turn.
pub fn restarted(before: &BTreeMap<String, ModelUsage>, now: &BTreeMap<String, ModelUsage>) -> bool {
    before.iter().any(|(name, b)| {
        let Some(n) = now.get(name) else { return true };
        let down = |x: Option<u64>, y: Option<u64>| matches!((x, y), (Some(x), Some(y)) if y < x);
        down(b.input, n.input)
            || down(b.cache_read, n.cache_read)
            || down(b.cache_write, n.cache_write)
            || down(b.output, n.output)
            || down(b.web_search_requests, n.web_search_requests)
            || matches!((b.cost_usd, n.cost_usd), (Some(x), Some(y)) if y < x)
    })
}

/// Claude's `total_cost_usd` turned into each turn's own cost.
///
/// The CLI reports the process's running total on every `result`. A new process (the same
/// session run again) starts it over: the total goes down, or, when it still went up, a model's
/// counter went down or a model disappeared from `modelUsage` ([`restarted`]). Then the total is
/// the turn's own cost, whole; else the turn cost what the total grew by.
#[derive(Debug, Clone, Default)]
pub struct RunningCost {
    last_cost: Option<f64>,
    last_models: Option<BTreeMap<String, ModelUsage>>,
}

impl RunningCost {
    /// The turn's own cost, given the running total and per-model counters its `result` reported.
    pub fn turn(&mut self, total: Option<f64>, models: Option<&BTreeMap<String, ModelUsage>>) -> Option<f64> {
        let restarted = match (&self.last_models, models) {
            (Some(before), Some(now)) => restarted(before, now),
            _ => false,
        };
        self.last_models = models.cloned();
        let c = total?;
        let own = match self.last_cost {
            Some(prev) if c >= prev && !restarted => c - prev,
            _ => c,
        };
        self.last_cost = Some(c);
        Some(own)
    }
}

/// The sum of two usages, figure by figure (absent only where both are). Saturating: hostile
/// figures near `u64::MAX` pin the sum at the maximum instead of dropping the figure (a sum that
/// lost a figure would under-report what was billed).
pub fn add(a: Usage, b: Usage) -> Usage {
    let s = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    };
    Usage {
        input: s(a.input, b.input),
        cache_read: s(a.cache_read, b.cache_read),
        cache_write: s(a.cache_write, b.cache_write),
        output: s(a.output, b.output),
        reasoning: s(a.reasoning, b.reasoning),
        context: None,
        cache_write_1h: s(a.cache_write_1h, b.cache_write_1h),
        service_tier: if a.service_tier == b.service_tier || b.is_empty() {
            a.service_tier
        } else if a.is_empty() {
            b.service_tier
        } else {
            None
        },
    }
}

/// A Claude stream message's figure from its `message_start` (`start`) or, where that is absent
/// or zero and the `message_delta` (`delta`) carries a non-zero one, from the delta (SPEC §3:
/// some builds send zeros in `message_start` and the real input and cache figures at the end).
pub fn start_or_delta(start: Option<u64>, delta: Option<u64>) -> Option<u64> {
    match (start, delta) {
        (Some(0) | None, Some(d)) if d > 0 => Some(d),
        (s, d) => s.or(d),
    }
}

/// Every figure of `a` at least the one of `b` (absent counts as 0).
pub fn covers(a: &Usage, b: &Usage) -> bool {
    let ge = |x: Option<u64>, y: Option<u64>| x.unwrap_or(0) >= y.unwrap_or(0);
    ge(a.input, b.input)
        && ge(a.cache_read, b.cache_read)
        && ge(a.cache_write, b.cache_write)
        && ge(a.output, b.output)
        && ge(a.reasoning, b.reasoning)
}
/// `a − b` figure by figure (absent where `a` is absent).
pub fn minus(a: Usage, b: Usage) -> Usage {
    let d = |x: Option<u64>, y: Option<u64>| x.map(|x| x.saturating_sub(y.unwrap_or(0)));
    Usage {
        input: d(a.input, b.input),
        cache_read: d(a.cache_read, b.cache_read),
        cache_write: d(a.cache_write, b.cache_write),
        output: d(a.output, b.output),
        reasoning: d(a.reasoning, b.reasoning),
        context: None,
        cache_write_1h: d(a.cache_write_1h, b.cache_write_1h),
        service_tier: a.service_tier,
    }
}
/// The larger of `a` and `b` figure by figure (absent only where both are).
pub fn max_each(a: Usage, b: Usage) -> Usage {
    let m = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    Usage {
        input: m(a.input, b.input),
        cache_read: m(a.cache_read, b.cache_read),
        cache_write: m(a.cache_write, b.cache_write),
        output: m(a.output, b.output),
        reasoning: m(a.reasoning, b.reasoning),
        context: None,
        cache_write_1h: m(a.cache_write_1h, b.cache_write_1h),
        service_tier: a.service_tier.or(b.service_tier),
    }
}

/// Adds `context` (= input + cache_read + cache_write) for a `usage` event, when any of the three
/// was reported.
pub fn with_context(mut u: Usage) -> Usage {
    if u.input.is_some() || u.cache_read.is_some() || u.cache_write.is_some() {
        // Left out rather than wrapped when hostile figures overflow.
        u.context = u
            .input
            .unwrap_or(0)
            .checked_add(u.cache_read.unwrap_or(0))
            .and_then(|s| s.checked_add(u.cache_write.unwrap_or(0)));
    }
    u
}

/// `None` for an object with no figure at all.
pub fn non_empty(u: Usage) -> Option<Usage> {
    (!u.is_empty()).then_some(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_instead_of_dropping_a_figure() {
        let big = Usage { input: Some(u64::MAX - 1), output: Some(1), ..Usage::default() };
        let s = add(big, big);
        assert_eq!(s.input, Some(u64::MAX), "a figure that overflows is pinned, not lost");
        assert_eq!(s.output, Some(2));
    }

    #[test]
    fn stream_figures_come_from_the_delta_where_the_start_has_zeros() {
        assert_eq!(start_or_delta(Some(0), Some(1200)), Some(1200));
        assert_eq!(start_or_delta(None, Some(5)), Some(5));
        assert_eq!(start_or_delta(Some(7), Some(1200)), Some(7), "a real start figure wins");
        assert_eq!(start_or_delta(Some(0), Some(0)), Some(0));
        assert_eq!(start_or_delta(Some(0), None), Some(0));
        assert_eq!(start_or_delta(None, None), None);
    }

    #[test]
    fn context_is_absent_without_prompt_figures() {
        let u = Usage { output: Some(7), ..Usage::default() };
        assert_eq!(with_context(u).context, None);
        assert_eq!(non_empty(Usage::default()), None);
    }
}
