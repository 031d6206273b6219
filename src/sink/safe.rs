//! Neutralising agent-controlled text before a person sees it.
//!
//! Session ids, model names, tool output and file paths come from the agent or its tools, and
//! may carry terminal escape sequences (colours, cursor moves, window titles, clipboard writes),
//! `\r` / backspace overwrites, or bidi controls that reorder what is shown. NDJSON output keeps
//! them (JSON escapes the C0 controls); every human-facing rendering goes through [`printable`].

use std::borrow::Cow;

/// Whether `c` can change how a terminal or page shows the text around it: C0 and C1 controls,
/// DEL, bidi embeddings / overrides / isolates / marks, zero-width and invisible formatting
/// characters, and the Unicode line and paragraph separators.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}'
        )
}

/// `s` with every unsafe character written as a visible escape (`\u{1b}`), so that it shows as
/// text and controls nothing.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bidi_become_visible_text() {
        assert_eq!(printable("\x1b[31mred\x1b[0m"), "\\u{1b}[31mred\\u{1b}[0m");
        assert_eq!(printable("a\rb\u{202E}c\u{200B}"), "a\\u{d}b\\u{202e}c\\u{200b}");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
        assert!(matches!(printable("plain café 🚀"), Cow::Borrowed(_)));
    }
}
