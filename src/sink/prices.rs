//! The prices `agentnorm usage` estimates costs from, where the CLI reports none.
//!
//! They are not kept by hand: `data/litellm-prices.json` is a snapshot of LiteLLM's
//! `model_prices_and_context_window.json` (MIT, <https://github.com/BerriAI/litellm>), trimmed
//! by `scripts/update-prices.sh` to the chat models of the vendors agentnorm reads and to the
//! keys priced here, embedded at build time and dated [`PRICES_DATE`]. `--prices FILE` adds or
//! overrides entries (the same shape: `{"model": {"input_cost_per_token": …}, …}`).
//!
//! Prices are **list prices** in USD per token. What the logs distinguish is priced apart:
//! - Anthropic 1-hour cache writes ([`Usage::cache_write_1h`]) at
//!   `cache_creation_input_token_cost_above_1hr` (else twice the input rate), the rest of
//!   `cache_write` at the 5-minute `cache_creation_input_token_cost` (else the input rate);
//! - the long-context tier: a request whose prompt (`input + cache_read + cache_write`) passes
//!   the threshold of the model's `*_above_<N>k_tokens` keys is billed **whole** at those rates
//!   (only for single requests: an aggregate over many requests says nothing of each prompt);
//! - a [`ServiceTier`] the log names (`priority`, `flex`) at the `*_priority` / `*_flex` rates
//!   where the model has them.
//!
//! A model is found by its name with any provider prefix (`anthropic/`, `openai/`) and a `[1m]`
//! context tag dropped; else by its name without a release date or `-latest`
//! (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`); else as the newest dated entry of that
//! name (`claude-opus-4-1` → `claude-opus-4-1-20250805`). A model not found gets no cost, never
//! a guess.

use std::sync::{Mutex, OnceLock};

use crate::event::{ServiceTier, Usage};

/// foldhash, not SipHash: the table is looked up once or more per request a report prices.
type HashMap<K, V> = foldhash::HashMap<K, V>;

/// The date of the embedded snapshot, as a literal (for `concat!` in this package's help texts;
/// the path is the package's, so the macro works from any of its files).
#[macro_export]
macro_rules! prices_date {
    () => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/data/litellm-prices.date"))
    };
}

/// The date of the embedded price snapshot (`scripts/update-prices.sh` writes it).
pub const PRICES_DATE: &str = prices_date!();

/// The embedded snapshot.
const SNAPSHOT: &str = include_str!("../../data/litellm-prices.json");

/// One model's LiteLLM price keys (USD per token) and `max_input_tokens`.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    keys: HashMap<String, f64>,
    /// The rates by tier, worked out once, when the entry first prices a request: `[standard,
    /// long context] × [standard, priority, flex]` (pricing runs once per request; working
    /// out every entry's at start was a fifth of a status line's instructions).
    rates: OnceLock<[[Rates; 3]; 2]>,
    /// The long-context threshold, tokens.
    threshold: Option<u64>,
}

/// One tier's rates, USD per token.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Rates {
    input: f64,
    output: f64,
    read: f64,
    write5: f64,
    write1h: f64,
}

/// What went wrong reading a `--prices` file.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    /// Not JSON, or not an object of objects.
    #[error("not a LiteLLM price file (an object of model objects): {0}")]
    Shape(String),
}

/// A price table: the snapshot, plus any overrides.
#[derive(Debug, Default)]
pub struct Prices {
    models: HashMap<String, Entry>,
    resolved: Mutex<HashMap<String, Option<String>>>,
}

impl Prices {
    /// The embedded snapshot.
    pub fn embedded() -> Prices {
        let mut p = Prices::default();
        p.merge_json(SNAPSHOT).expect("the embedded price snapshot is valid");
        p
    }

    /// Adds or overrides entries from LiteLLM-shaped JSON (`_`-prefixed keys and entries
    /// without prices are skipped; an override replaces the whole entry).
    pub fn merge_json(&mut self, text: &str) -> Result<usize, PricesError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| PricesError::Shape(e.to_string()))?;
        let obj = v.as_object().ok_or_else(|| PricesError::Shape("the top level is not an object".into()))?;
        let mut n = 0;
        for (name, entry) in obj {
            if name.starts_with('_') || name == "sample_spec" {
                continue;
            }
            let Some(e) = entry.as_object() else { continue };
            let keys: HashMap<String, f64> =
                e.iter().filter_map(|(k, v)| v.as_f64().filter(|x| x.is_finite()).map(|x| (k.clone(), x))).collect();
            if !keys.contains_key("input_cost_per_token") && !keys.contains_key("output_cost_per_token") {
                continue;
            }
            self.models.insert(name.to_ascii_lowercase(), Entry::new(keys));
            n += 1;
        }
        self.resolved.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(n)
    }

    /// The entry a model name resolves to (see the module docs).
    pub fn entry(&self, model: &str) -> Option<&Entry> {
        let mut memo = self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = memo.get(model) {
            return k.as_deref().and_then(|k| self.models.get(k));
        }
        let key = self.resolve(model);
        memo.insert(model.to_owned(), key.clone());
        drop(memo);
        key.and_then(|k| self.models.get(&k))
    }

    fn resolve(&self, model: &str) -> Option<String> {
        let name = model.trim();
        let name = name.rsplit_once('/').map_or(name, |(_, m)| m);
        let name = name.strip_suffix("[1m]").unwrap_or(name).to_ascii_lowercase();
        if self.models.contains_key(&name) {
            return Some(name);
        }
        let base = strip_version(&name);
        if base != name && self.models.contains_key(base) {
            return Some(base.to_owned());
        }
        // The newest dated entry of that name.
        self.models
            .keys()
            .filter(|k| k.strip_prefix(base).is_some_and(|rest| !rest.is_empty() && strip_version(rest).is_empty()))
            .max()
            .cloned()
    }
}

/// A model name without its release date (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`),
/// for narrow tables.
pub fn without_version(name: &str) -> &str {
    strip_version(name)
}

/// `name` without a trailing release date (`-20250929`, `-2025-08-07`) or `-latest`.
fn strip_version(name: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(b) = name.strip_suffix("-latest") {
        return b;
    }
    if let Some((b, tail)) = name.rsplit_once('-')
        && tail.len() == 8
        && digits(tail)
    {
        return b;
    }
    // `-YYYY-MM-DD`, checked byte by byte (a hostile name may hold multi-byte characters).
    let b = name.as_bytes();
    if b.len() >= 11 {
        let tail = &b[b.len() - 11..];
        let shape = tail.iter().enumerate().all(|(i, c)| match i {
            0 | 5 | 8 => *c == b'-',
            _ => c.is_ascii_digit(),
        });
        if shape {
            return &name[..name.len() - 11];
        }
    }
    name
}

/// Entries are the same when their keys are (the rates follow from them, worked out or not).
impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.keys == other.keys
    }
}

impl Entry {
    fn new(keys: HashMap<String, f64>) -> Entry {
        let mut e = Entry { keys, rates: OnceLock::new(), threshold: None };
        e.threshold = e.find_threshold();
        e
    }

    /// The rates by tier ([`Entry::rates`]).
    fn rates(&self) -> &[[Rates; 3]; 2] {
        self.rates.get_or_init(|| {
            let mut rates = <[[Rates; 3]; 2]>::default();
            let long = self.threshold.map(|t| format!("_above_{}k_tokens", t / 1000)).unwrap_or_default();
            for (li, l) in [String::new(), long].iter().enumerate() {
                for (si, svc) in ["", "_priority", "_flex"].iter().enumerate() {
                    rates[li][si] = self.work_out(l, svc);
                }
            }
            rates
        })
    }

    fn work_out(&self, long: &str, svc: &str) -> Rates {
        let input = self.rate("input_cost_per_token", long, svc).unwrap_or(0.0);
        let write5 = self.rate("cache_creation_input_token_cost", long, svc);
        Rates {
            input,
            output: self.rate("output_cost_per_token", long, svc).unwrap_or(0.0),
            read: self.rate("cache_read_input_token_cost", long, svc).unwrap_or(input),
            write1h: self
                .rate("cache_creation_input_token_cost_above_1hr", long, svc)
                .or_else(|| write5.map(|_| 2.0 * input))
                .unwrap_or(input),
            write5: write5.unwrap_or(input),
        }
    }

    fn get(&self, key: &str) -> Option<f64> {
        self.keys.get(key).copied()
    }

    /// The long-context threshold (tokens) of the model's `input_cost_per_token_above_<N>k_tokens`
    /// key, the smallest when there are several.
    #[cfg(test)]
    fn threshold(&self) -> Option<u64> {
        self.threshold
    }

    fn find_threshold(&self) -> Option<u64> {
        self.keys
            .keys()
            .filter_map(|k| {
                k.strip_prefix("input_cost_per_token_above_")?.strip_suffix("k_tokens")?.parse::<u64>().ok()
            })
            .min()
            .map(|k| k * 1000)
    }

    /// The rate of `base` (a LiteLLM key) in the tier `long` (`_above_200k_tokens` or empty) for
    /// the service tier `svc` (`_priority`, `_flex` or empty), falling back to the less specific
    /// keys.
    fn rate(&self, base: &str, long: &str, svc: &str) -> Option<f64> {
        [format!("{base}{long}{svc}"), format!("{base}{long}"), format!("{base}{svc}"), base.to_owned()]
            .iter()
            .find_map(|k| self.get(k))
    }

    /// The cost in USD of one request's (or, with `per_request` false, an aggregate's) usage.
    pub fn cost(&self, u: &Usage, per_request: bool) -> f64 {
        let (i, r, w, o) =
            (u.input.unwrap_or(0), u.cache_read.unwrap_or(0), u.cache_write.unwrap_or(0), u.output.unwrap_or(0));
        let w1h = u.cache_write_1h.unwrap_or(0).min(w);
        let prompt = i.saturating_add(r).saturating_add(w);
        let long = usize::from(per_request && self.threshold.is_some_and(|t| prompt > t));
        let svc = match u.service_tier {
            Some(ServiceTier::Priority) => 1,
            Some(ServiceTier::Flex) => 2,
            // LiteLLM's `_batches` keys price the Batch API, not what an agent CLI runs.
            Some(ServiceTier::Batch) | None => 0,
        };
        let x = self.rates()[long][svc];
        i as f64 * x.input
            + r as f64 * x.read
            + (w - w1h) as f64 * x.write5
            + w1h as f64 * x.write1h
            + o as f64 * x.output
    }
}

static TABLE: OnceLock<Prices> = OnceLock::new();

/// Installs the table the report prices with: the snapshot plus the `--prices` overrides. Call
/// it once, before the first [`table`]; a later call has no effect and returns `false`.
pub fn install(prices: Prices) -> bool {
    TABLE.set(prices).is_ok()
}

/// The table in use (the embedded snapshot unless [`install`] set another).
pub fn table() -> &'static Prices {
    TABLE.get_or_init(Prices::embedded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(i: u64, r: u64, w: u64, o: u64) -> Usage {
        Usage { input: Some(i), cache_read: Some(r), cache_write: Some(w), output: Some(o), ..Usage::default() }
    }

    #[test]
    fn names_resolve_without_provider_date_or_tag() {
        let p = Prices::embedded();
        let rate = |m: &str| p.entry(m).and_then(|e| e.get("input_cost_per_token"));
        assert_eq!(rate("claude-sonnet-4-5-20250929"), Some(3e-6));
        assert_eq!(rate("anthropic/claude-haiku-4-5"), Some(1e-6));
        assert_eq!(rate("claude-opus-4-1"), Some(15e-6), "the newest dated entry");
        assert_eq!(rate("claude-3-7-sonnet-latest"), Some(3e-6));
        assert_eq!(rate("claude-opus-4-7"), Some(5e-6));
        assert_eq!(rate("claude-sonnet-5[1m]"), rate("claude-sonnet-5"));
        assert_eq!(rate("gpt-5-2025-08-07"), Some(1.25e-6));
        assert_eq!(rate("gemini-3-flash-preview"), Some(5e-7));
        for m in [
            "test-model",
            "",
            "auto-gemini-3",
            "claude-sonnet-4-5-foo",
            "gpt-5.9-codex-ultra",
            "\u{9b}31mred",
            "é-2025-08-07x",
        ] {
            assert_eq!(p.entry(m), None, "{m}");
        }
    }

    #[test]
    fn claude_code_reported_costs_match_the_snapshot() {
        let p = Prices::embedded();
        // Corpus three-turns-one-process: claude-sonnet-5 costUSD 0.0097209; haiku 0.000592.
        let c = p.entry("claude-sonnet-5").unwrap().cost(&u(2, 32_183, 0, 4), true);
        assert!((c - 0.009_720_9).abs() < 1e-12, "{c}");
        let h = p.entry("claude-haiku-4-5-20251001").unwrap().cost(&u(527, 0, 0, 13), true);
        assert!((h - 0.000_592).abs() < 1e-12, "{h}");
    }

    #[test]
    fn one_hour_cache_writes_cost_twice_the_input_rate() {
        let p = Prices::embedded();
        let e = p.entry("claude-sonnet-4-5").unwrap();
        let five = e.cost(&u(0, 0, 1_000_000, 0), true);
        assert!((five - 3.75).abs() < 1e-9, "{five}");
        let one_hour = Usage { cache_write_1h: Some(1_000_000), ..u(0, 0, 1_000_000, 0) };
        assert!((e.cost(&one_hour, true) - 6.0).abs() < 1e-9);
        let mixed = Usage { cache_write_1h: Some(400_000), ..u(0, 0, 1_000_000, 0) };
        assert!((e.cost(&mixed, true) - (0.6 * 3.75 + 0.4 * 6.0)).abs() < 1e-9);
        // A model without the 1-hour key: 2 × input (Anthropic's rule).
        let old = p.entry("claude-opus-4-1").unwrap();
        let c = old.cost(&Usage { cache_write_1h: Some(1_000_000), ..u(0, 0, 1_000_000, 0) }, true);
        assert!((c - 30.0).abs() < 1e-9, "{c}");
    }

    #[test]
    fn long_context_bills_the_whole_request_at_the_higher_rate() {
        let p = Prices::embedded();
        let e = p.entry("gemini-2.5-pro").unwrap();
        assert_eq!(e.threshold(), Some(200_000));
        let short = e.cost(&u(200_000, 0, 0, 1_000), true);
        assert!((short - (200_000.0 * 1.25e-6 + 1_000.0 * 1e-5)).abs() < 1e-9, "{short}");
        let long = e.cost(&u(150_000, 50_001, 0, 1_000), true);
        let want = 150_000.0 * 2.5e-6 + 50_001.0 * 2.5e-7 + 1_000.0 * 1.5e-5;
        assert!((long - want).abs() < 1e-9, "{long} vs {want}");
        // An aggregate over many requests is never put in the tier.
        let agg = e.cost(&u(150_000, 50_001, 0, 1_000), false);
        assert!((agg - (150_000.0 * 1.25e-6 + 50_001.0 * 1.25e-7 + 1_000.0 * 1e-5)).abs() < 1e-9);
    }

    #[test]
    fn priority_and_flex_tiers_where_the_log_says_so() {
        let p = Prices::embedded();
        let e = p.entry("gpt-5").unwrap();
        let std = e.cost(&u(1_000_000, 0, 0, 0), true);
        let pri = e.cost(&Usage { service_tier: Some(ServiceTier::Priority), ..u(1_000_000, 0, 0, 0) }, true);
        let flex = e.cost(&Usage { service_tier: Some(ServiceTier::Flex), ..u(1_000_000, 0, 0, 0) }, true);
        assert!((std - 1.25).abs() < 1e-9 && (pri - 2.5).abs() < 1e-9 && (flex - 0.625).abs() < 1e-9);
    }

    #[test]
    fn overrides_add_and_replace_entries() {
        let mut p = Prices::embedded();
        let n = p
            .merge_json(r#"{"my-model":{"input_cost_per_token":1e-6,"output_cost_per_token":2e-6},"gpt-5":{"input_cost_per_token":9e-6,"output_cost_per_token":0}}"#)
            .unwrap();
        assert_eq!(n, 2);
        assert!((p.entry("my-model").unwrap().cost(&u(1, 0, 0, 1), true) - 3e-6).abs() < 1e-15);
        assert!((p.entry("gpt-5").unwrap().cost(&u(1_000_000, 0, 0, 0), true) - 9.0).abs() < 1e-9);
        assert!(p.merge_json("[1]").is_err());
        assert!(PRICES_DATE.len() == 10 && PRICES_DATE.as_bytes()[4] == b'-', "{PRICES_DATE}");
    }
}
