//! Usage folding (SPEC §4): every CLI's token counters into one [`Usage`] vocabulary.
//!
//! This is the one home of the per-CLI arithmetic, so that the rules people bill on (cached
//! tokens are a subset of Codex's input, Claude's cache figures are separate, absent is not
//! zero) are written once and tested once. Adapters call these functions; they never add up
//! counters themselves.

use crate::event::Usage;
use crate::frame::Val;

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
    use crate::frame::Parser;

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
    fn context_is_absent_without_prompt_figures() {
        let u = fold(r#"{"output_tokens":7}"#, claude);
        assert_eq!(with_context(u).context, None);
        assert_eq!(non_empty(fold("{}", claude)), None);
    }
}
