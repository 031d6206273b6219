//! The embedded price table `agentnorm usage` estimates costs from, where the CLI reports none.
//!
//! Prices are **list prices** in USD per million tokens (standard tier, no batch or priority
//! discount, no long-context surcharge, Anthropic's 5-minute cache write), as of
//! [`PRICES_DATE`]. They are an estimate: a subscription, a negotiated rate or a later price
//! change makes the real bill differ. A model that is not in the table gets no cost at all,
//! never a guess.
//!
//! Sources: Anthropic's and OpenAI's published price lists; `claude-sonnet-5` and
//! `claude-opus-4-6` are checked against the `modelUsage.costUSD` Claude Code 2.1 itself reports
//! in the corpus captures (e.g. 2 input + 4 output + 32 183 cache-read tokens of
//! `claude-sonnet-5` = $0.0097209 = 3 / 15 / 0.30 per million).
//!
//! A model name matches an entry when it starts with the entry's name and what follows is
//! nothing, a release date (`-20250929`, `-2025-08-07`), `-latest` or a `-preview…` tag; entries
//! are tried longest first, so `claude-sonnet-4-5-20250929` is Sonnet 4.5 and never Sonnet 4,
//! while `claude-sonnet-4-6` or `gpt-5.9-codex` (not in the table) stay unpriced. A leading
//! provider (`anthropic/`, `openai/`, `google/`) and a trailing `[1m]` context tag are ignored.

/// The date the table's prices were checked, as a literal (for `concat!` in help texts).
#[macro_export]
macro_rules! prices_date {
    () => {
        "2026-05-13"
    };
}

/// The date the table's prices were checked.
pub const PRICES_DATE: &str = prices_date!();

/// List prices of one model, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Prompt tokens neither read from nor written to the cache.
    pub input: f64,
    /// Prompt tokens read from the cache.
    pub cache_read: f64,
    /// Prompt tokens written to the cache; `None` where the vendor does not bill writes apart
    /// (OpenAI, Gemini): such tokens are charged as input.
    pub cache_write: Option<f64>,
    /// Generated tokens, reasoning included.
    pub output: f64,
}

const fn p(input: f64, cache_read: f64, cache_write: Option<f64>, output: f64) -> Price {
    Price { input, cache_read, cache_write, output }
}

/// The table: model name prefix → list price.
pub const PRICES: &[(&str, Price)] = &[
    // Anthropic (cache write = 5-minute ephemeral write, 1.25 × input).
    ("claude-opus-4", p(15.0, 1.50, Some(18.75), 75.0)),
    ("claude-opus-4-1", p(15.0, 1.50, Some(18.75), 75.0)),
    ("claude-opus-4-5", p(5.0, 0.50, Some(6.25), 25.0)),
    ("claude-opus-4-6", p(5.0, 0.50, Some(6.25), 25.0)),
    ("claude-sonnet-4", p(3.0, 0.30, Some(3.75), 15.0)),
    ("claude-sonnet-4-5", p(3.0, 0.30, Some(3.75), 15.0)),
    ("claude-sonnet-5", p(3.0, 0.30, Some(3.75), 15.0)),
    ("claude-haiku-4-5", p(1.0, 0.10, Some(1.25), 5.0)),
    // OpenAI (cached input is the cache read; no cache-write price).
    ("gpt-5", p(1.25, 0.125, None, 10.0)),
    ("gpt-5-codex", p(1.25, 0.125, None, 10.0)),
    ("gpt-5-mini", p(0.25, 0.025, None, 2.0)),
    ("gpt-5-nano", p(0.05, 0.005, None, 0.40)),
    ("gpt-5.1", p(1.25, 0.125, None, 10.0)),
    ("gpt-5.1-codex", p(1.25, 0.125, None, 10.0)),
    ("gpt-5.1-codex-max", p(1.25, 0.125, None, 10.0)),
    ("gpt-5.1-codex-mini", p(0.25, 0.025, None, 2.0)),
    ("gpt-5.2", p(1.75, 0.175, None, 14.0)),
    ("gpt-5.2-codex", p(1.75, 0.175, None, 14.0)),
    ("gpt-5.3-codex", p(1.75, 0.175, None, 14.0)),
    ("gpt-5.4", p(2.50, 0.25, None, 15.0)),
    ("gpt-5.5", p(5.0, 0.50, None, 30.0)),
    // Google (prompts up to 200k tokens; implicit-cache reads; no cache-write price).
    ("gemini-2.5-pro", p(1.25, 0.125, None, 10.0)),
    ("gemini-2.5-flash", p(0.30, 0.03, None, 2.50)),
    ("gemini-2.5-flash-lite", p(0.10, 0.01, None, 0.40)),
    ("gemini-3-pro", p(2.0, 0.20, None, 12.0)),
    ("gemini-3-flash", p(0.50, 0.05, None, 3.0)),
];

/// The list price of `model`, when the table knows it (see the module docs for the matching).
pub fn price(model: &str) -> Option<Price> {
    let name = model.trim();
    let name = name.rsplit_once('/').map_or(name, |(_, m)| m);
    let name = name.strip_suffix("[1m]").unwrap_or(name);
    let name = name.to_ascii_lowercase();
    let mut best: Option<(&str, Price)> = None;
    for &(prefix, price) in PRICES {
        if let Some(rest) = name.strip_prefix(prefix)
            && is_version_tail(rest)
            && best.is_none_or(|(b, _)| prefix.len() > b.len())
        {
            best = Some((prefix, price));
        }
    }
    best.map(|(_, p)| p)
}

/// What may follow a table entry's name: nothing, a release date, `-latest`, `-preview…`.
fn is_version_tail(rest: &str) -> bool {
    let Some(tail) = rest.strip_prefix('-') else { return rest.is_empty() };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let date =
        (tail.len() == 8 && digits(tail)) || (tail.len() == 10 && tail.split('-').filter(|s| digits(s)).count() == 3);
    date || tail == "latest" || tail.starts_with("preview")
}

/// Estimated cost in USD of these token counts at `price` (absent counts are zero).
pub fn cost(price: Price, input: u64, cache_read: u64, cache_write: u64, output: u64) -> f64 {
    let m = |n: u64, per_million: f64| n as f64 * per_million / 1_000_000.0;
    m(input, price.input)
        + m(cache_read, price.cache_read)
        + m(cache_write, price.cache_write.unwrap_or(price.input))
        + m(output, price.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_with_a_version_tail() {
        assert_eq!(price("claude-sonnet-4-5-20250929").unwrap().input, 3.0);
        assert_eq!(price("claude-opus-4-20250514").unwrap().input, 15.0);
        assert_eq!(price("claude-opus-4-5-20251101").unwrap().input, 5.0);
        assert_eq!(price("claude-opus-4-6").unwrap().output, 25.0);
        assert_eq!(price("anthropic/claude-haiku-4-5").unwrap().output, 5.0);
        assert_eq!(price("gpt-5-2025-08-07").unwrap().output, 10.0);
        assert_eq!(price("gpt-5.3-codex").unwrap().output, 14.0);
        assert_eq!(price("gemini-2.5-flash-lite").unwrap().input, 0.10);
        assert_eq!(price("gemini-3-flash-preview").unwrap().input, 0.50);
        assert_eq!(price("claude-sonnet-5[1m]").unwrap().input, 3.0);
    }

    #[test]
    fn unknown_models_get_no_price() {
        for m in ["claude-sonnet-4-6", "claude-opus-4-7", "gpt-5.9-codex", "test-model", "auto-gemini-3", "", "gpt-4o"]
        {
            assert_eq!(price(m), None, "{m}");
        }
    }

    #[test]
    fn claude_code_reported_costs_match_the_table() {
        // three-turns-one-process: claude-sonnet-5 costUSD 0.0097209; haiku 0.000592.
        let c = cost(price("claude-sonnet-5").unwrap(), 2, 32_183, 0, 4);
        assert!((c - 0.009_720_9).abs() < 1e-12, "{c}");
        let h = cost(price("claude-haiku-4-5-20251001").unwrap(), 527, 0, 0, 13);
        assert!((h - 0.000_592).abs() < 1e-12, "{h}");
    }
}
