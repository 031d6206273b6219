//! Usage folding (SPEC §4): every CLI's token counters into one [`Usage`] vocabulary.
//!
//! This is the one home of the per-CLI arithmetic, so that the rules people bill on (cached
//! tokens are a subset of Codex's input, Claude's cache figures are separate, absent is not
//! zero) are written once and tested once. Adapters call these functions; they never add up
//! counters themselves.

use std::collections::BTreeMap;

use crate::event::{ModelUsage, ServiceTier, Usage};
use crate::read::frame::Val;

/// Claude's `usage` object (`input_tokens`, `cache_read_input_tokens`,
/// `cache_creation_input_tokens`, `output_tokens`).
pub fn claude(u: Val<'_>) -> Usage {
    Usage {
        input: u.u64_at("input_tokens"),
        cache_read: u.u64_at("cache_read_input_tokens"),
        cache_write: u.u64_at("cache_creation_input_tokens"),
        output: u.u64_at("output_tokens"),
        reasoning: None,
        context: None,
        cache_write_1h: u
            .path(&["cache_creation", "ephemeral_1h_input_tokens"])
            .and_then(|v| v.u64())
            .filter(|&n| n > 0),
        service_tier: u.str_at("service_tier").and_then(ServiceTier::from_name),
    }
}

/// Codex's usage (`turn.completed.usage`, `token_count` info): `cached_input_tokens` is a subset
/// of `input_tokens`, `output_tokens` includes `reasoning_output_tokens`.
pub fn codex(u: Val<'_>) -> Usage {
    let input = u.u64_at("input_tokens");
    let cached = u.u64_at("cached_input_tokens");
    Usage {
        input: match (input, cached) {
            (Some(i), Some(c)) => Some(i.saturating_sub(c)),
            (i, _) => i,
        },
        cache_read: cached,
        cache_write: u.u64_at("cache_write_input_tokens"),
        output: u.u64_at("output_tokens"),
        reasoning: u.u64_at("reasoning_output_tokens"),
        context: None,
        cache_write_1h: None,
        service_tier: u.str_at("service_tier").and_then(ServiceTier::from_name),
    }
}

/// Gemini stream-json `result.stats` (and each `stats.models.<m>` of the stream): `input` when
/// present, else `input_tokens − cached`; `cached` is read from cache; `output_tokens`.
pub fn gemini_stream(s: Val<'_>) -> Usage {
    let cached = s.u64_at("cached");
    Usage {
        input: s.u64_at("input").or_else(|| match (s.u64_at("input_tokens"), cached) {
            (Some(i), Some(c)) => Some(i.saturating_sub(c)),
            (i, _) => i,
        }),
        cache_read: cached,
        cache_write: None,
        output: s.u64_at("output_tokens"),
        reasoning: None,
        context: None,
        ..Usage::default()
    }
}

/// Gemini `--output-format json` `stats.models.<m>.tokens`: `input` when present, else
/// `prompt − cached`; `output` = `candidates + thoughts`; `reasoning` = `thoughts`.
pub fn gemini_json(t: Val<'_>) -> Usage {
    let cached = t.u64_at("cached");
    let thoughts = t.u64_at("thoughts");
    let candidates = t.u64_at("candidates");
    Usage {
        input: t.u64_at("input").or_else(|| match (t.u64_at("prompt"), cached) {
            (Some(p), Some(c)) => Some(p.saturating_sub(c)),
            (p, _) => p,
        }),
        cache_read: cached,
        cache_write: None,
        output: match (candidates, thoughts) {
            (None, None) => None,
            (c, t) => c.unwrap_or(0).checked_add(t.unwrap_or(0)),
        },
        reasoning: thoughts,
        context: None,
        ..Usage::default()
    }
}

/// OpenCode `step_finish.part.tokens`: `output + reasoning` is the output (its `output` leaves
/// reasoning out), `cache.read` / `cache.write`.
pub fn opencode(t: Val<'_>) -> Usage {
    let reasoning = t.u64_at("reasoning");
    let output = t.u64_at("output");
    Usage {
        input: t.u64_at("input"),
        cache_read: t.path(&["cache", "read"]).and_then(|v| v.u64()),
        cache_write: t.path(&["cache", "write"]).and_then(|v| v.u64()),
        output: match (output, reasoning) {
            (None, None) => None,
            (o, r) => o.unwrap_or(0).checked_add(r.unwrap_or(0)),
        },
        reasoning,
        context: None,
        ..Usage::default()
    }
}

/// Cursor `result.usage` (camelCase): `inputTokens`, `cacheReadTokens`, `cacheWriteTokens`,
/// `outputTokens`.
pub fn cursor(u: Val<'_>) -> Usage {
    Usage {
        input: u.u64_at("inputTokens"),
        cache_read: u.u64_at("cacheReadTokens"),
        cache_write: u.u64_at("cacheWriteTokens"),
        output: u.u64_at("outputTokens"),
        reasoning: None,
        context: None,
        ..Usage::default()
    }
}

/// Claude's `result.modelUsage` (`{model: {inputTokens, outputTokens, cacheReadInputTokens,
/// cacheCreationInputTokens, webSearchRequests, costUSD, contextWindow, maxOutputTokens}}`; older
/// CLIs wrote the snake_case `input_tokens`, …): `None` when no model has a figure.
pub fn claude_model_usage(v: Val<'_>) -> Option<BTreeMap<String, ModelUsage>> {
    let u = |m: Val<'_>, camel: &str, snake: &str| m.u64_at(camel).or_else(|| m.u64_at(snake));
    let models: BTreeMap<String, ModelUsage> = v
        .entries()?
        .into_iter()
        .filter(|(_, m)| m.is_object())
        .map(|(name, m)| {
            let mu = ModelUsage {
                input: u(m, "inputTokens", "input_tokens"),
                cache_read: u(m, "cacheReadInputTokens", "cache_read_input_tokens"),
                cache_write: u(m, "cacheCreationInputTokens", "cache_creation_input_tokens"),
                output: u(m, "outputTokens", "output_tokens"),
                web_search_requests: u(m, "webSearchRequests", "web_search_requests"),
                cost_usd: m.f64_at("costUSD").or_else(|| m.f64_at("cost_usd")).filter(|c| c.is_finite() && *c >= 0.0),
                context_window: u(m, "contextWindow", "context_window"),
                max_output_tokens: u(m, "maxOutputTokens", "max_output_tokens"),
            };
            (name.to_owned(), mu)
        })
        .filter(|(_, mu)| *mu != ModelUsage::default())
        .collect();
    (!models.is_empty()).then_some(models)
}

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
    use crate::read::frame::Parser;

    fn fold(line: &str, f: fn(Val<'_>) -> Usage) -> Usage {
        Parser::default().with_frame(line.as_bytes(), |v| f(v.unwrap()))
    }

    #[test]
    fn codex_cached_is_a_subset_of_input() {
        let u = fold(
            r#"{"input_tokens":15931,"cached_input_tokens":14080,"output_tokens":50,"reasoning_output_tokens":10}"#,
            codex,
        );
        assert_eq!(u.input, Some(1851));
        assert_eq!(u.cache_read, Some(14080));
        assert_eq!(u.output, Some(50));
        assert_eq!(u.reasoning, Some(10));
        assert_eq!(u.cache_write, None, "absent is not zero");
    }

    #[test]
    fn claude_cache_figures_are_separate() {
        let u = fold(
            r#"{"input_tokens":2,"cache_read_input_tokens":18531,"cache_creation_input_tokens":20271,"output_tokens":789}"#,
            claude,
        );
        assert_eq!(with_context(u).context, Some(38804));
        assert_eq!(u.input, Some(2));
    }

    #[test]
    fn gemini_opencode_cursor() {
        let g = fold(
            r#"{"total_tokens":12659,"input_tokens":12479,"output_tokens":89,"cached":5952,"input":6527}"#,
            gemini_stream,
        );
        assert_eq!((g.input, g.cache_read, g.output), (Some(6527), Some(5952), Some(89)));
        let g = fold(r#"{"input_tokens":74,"output_tokens":26}"#, gemini_stream);
        assert_eq!((g.input, g.cache_read), (Some(74), None));
        let j = fold(r#"{"prompt":11554,"candidates":55,"total":11609,"cached":5944,"thoughts":0}"#, gemini_json);
        assert_eq!((j.input, j.cache_read, j.output, j.reasoning), (Some(5610), Some(5944), Some(55), Some(0)));
        let o = fold(r#"{"input":671,"output":8,"reasoning":3,"cache":{"read":21415,"write":0}}"#, opencode);
        assert_eq!(
            (o.input, o.cache_read, o.cache_write, o.output, o.reasoning),
            (Some(671), Some(21415), Some(0), Some(11), Some(3))
        );
        let c =
            fold(r#"{"inputTokens":4,"outputTokens":122,"cacheReadTokens":13535,"cacheWriteTokens":15844}"#, cursor);
        assert_eq!(with_context(c).context, Some(29383));
        assert_eq!(add(o, o).output, Some(22));
    }

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
        let u = fold(r#"{"output_tokens":7}"#, claude);
        assert_eq!(with_context(u).context, None);
        assert_eq!(non_empty(fold("{}", claude)), None);
    }
}
