//! Recognition of the non-JSON lines users see when a CLI's stderr is merged into its stream
//! (`2>&1`): known warnings become typed `diagnostic`s with stable codes and dedupe keys (SPEC
//! §3), so a watchdog can count them instead of grepping free text. Everything else stays
//! `unknown` `not_json`.
//!
//! Recognised (after the ANSI escapes are stripped, case-insensitively, `’` read as `'`):
//!
//! | code | level | lines |
//! |---|---|---|
//! | `codex.plugin.not-installed` | warning | `… plugin is not installed plugin="x"` (key `codex.plugin.not-installed\|x`) |
//! | `codex.path.helper-binary` | warning | `helper paths are unavailable`, `helper binary`, `PATH aliases` |
//! | `usage.limit` | error | `You've hit your usage limit…` (Codex), `You've hit your [session] limit · resets …`, `Claude AI usage limit reached\|<epoch>` (the epoch shown as RFC 3339 in `message`), `Claude usage limit reached…`, `5-hour limit reached ∙ resets 3pm`, `Weekly limit reached …`, `usage limit exceeded` |
//! | `usage.credits` | error | `Credit balance is too low`, `out of credits`, `insufficient credits`, `You exceeded your current quota` (OpenAI billing) |
//! | `auth.login-required` | error | an interactive-login prompt in a non-interactive run: `Please run /login`, `Invalid API key · Please run /login`, `Not logged in`, `Login required`, `Please sign in` / `log in`, `Authentication required`, `Press Enter to open your browser…`, hints to run `codex login` / `cursor-agent login` |
//! | `codex.stdin` | info | `Reading prompt from stdin…` and its kin |
//! | `codex.log` | from the line | any other tracing line `<RFC 3339> LEVEL target: message` (key `codex.log\|<target>`, `subsystem` the target) |
//!
//! The usage, credit and login codes carry the tracing target as `subsystem` when the line has
//! one; their `dedupe_key` is the code.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};

use crate::dialect::diagnostic;
use crate::event::{Event, Level};

/// The diagnostic a non-JSON line stands for, if it is one agentnorm knows.
pub fn recognize(line: &str) -> Option<Event> {
    let clean = strip_ansi(line);
    let text = clean.trim();
    if has_anchor(text) {
        let lower = text.to_ascii_lowercase();
        if lower.contains("plugin is not installed") {
            let plugins: Vec<String> = plugin_id(text).into_iter().collect();
            return Some(diagnostic(Level::Warning, "codex.plugin.not-installed", message_of(text), plugins));
        }
        if lower.contains("helper paths are unavailable")
            || lower.contains("helper binary")
            || lower.contains("helper binaries")
            || lower.contains("path alias")
        {
            return Some(diagnostic(Level::Warning, "codex.path.helper-binary", message_of(text), Vec::new()));
        }
        if let Some(d) = account(text, &lower) {
            return Some(d);
        }
    }
    if text.starts_with("Reading prompt from stdin")
        || text.starts_with("Reading additional input from stdin")
        || text.starts_with("No prompt provided via stdin")
    {
        return Some(diagnostic(Level::Info, "codex.stdin", text.to_owned(), Vec::new()));
    }
    // Any other line of Codex's tracing log: `<RFC 3339>  LEVEL target: message`.
    if let Some((level, target)) = tracing_prefix(text) {
        let mut d = diagnostic(level, "codex.log", message_of(text), Vec::new());
        if let Event::Diagnostic { dedupe_key, subsystem, .. } = &mut d {
            *dedupe_key = format!("codex.log|{target}");
            *subsystem = Some(target.to_owned());
        }
        return Some(d);
    }
    None
}

/// Words of which every warning, usage-limit, credit and login line above holds one (ASCII case
/// ignored): a line with none of them is none of those, so most lines (the non-JSON lines of a
/// pretty-printed document, say) skip the two dozen searches in one pass.
///
/// Each needle searched below contains one of these (none has a quote, so the quote folding of
/// [`account`] cannot make or break a match): `limit` (every usage-limit form), `credit` and
/// `quota` (credits), `login`, `logged in`, `log in`, `sign in`, `authentication required` and
/// `press enter` (logins), and the two warnings' own phrases.
const ANCHORS: [&str; 13] = [
    "plugin is not installed",
    "helper paths are unavailable",
    "helper binar",
    "path alias",
    "limit",
    "credit",
    "quota",
    "login",
    "logged in",
    "log in",
    "sign in",
    "authentication required",
    "press enter",
];

/// Whether `text` holds one of the [`ANCHORS`], ASCII case ignored.
fn has_anchor(text: &str) -> bool {
    static ANCHOR: OnceLock<AhoCorasick> = OnceLock::new();
    ANCHOR
        .get_or_init(|| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .build(ANCHORS)
                .expect("the anchors build an automaton")
        })
        .is_match(text)
}

/// Code of the usage-limit lines (plan windows: 5-hour, weekly, session).
pub const USAGE_LIMIT: &str = "usage.limit";
/// Code of the out-of-credits / billing lines.
pub const USAGE_CREDITS: &str = "usage.credits";
/// Code of the interactive-login prompts (the run cannot go on without a person).
pub const LOGIN_REQUIRED: &str = "auth.login-required";

/// Usage limits, credits and logins: the lines that say the agent cannot work at all.
fn account(text: &str, lower: &str) -> Option<Event> {
    let l = lower.replace(['\u{2019}', '\u{2018}', '`'], "'");
    let code = if is_usage_limit(&l) {
        USAGE_LIMIT
    } else if is_out_of_credits(&l) {
        USAGE_CREDITS
    } else if is_login_prompt(&l) {
        LOGIN_REQUIRED
    } else {
        return None;
    };
    // Leading decorations (`■ `, `⎿  `, `⚠ `) are not part of the message.
    let mut message =
        message_of(text).trim_start_matches(|c: char| !c.is_alphanumeric() && !c.is_ascii_punctuation()).to_owned();
    // Claude's `Claude AI usage limit reached|1750708800`: the reset time as the epoch.
    if let Some((head, epoch)) = message.rsplit_once('|')
        && !epoch.is_empty()
        && epoch.bytes().all(|b| b.is_ascii_digit())
        && let Some(at) = epoch.parse::<f64>().ok().and_then(crate::read::time::from_epoch)
    {
        message = format!("{} (resets {at})", head.trim_end());
    }
    let mut d = diagnostic(Level::Error, code, message, Vec::new());
    if let (Event::Diagnostic { subsystem, .. }, Some((_, target))) = (&mut d, tracing_prefix(text)) {
        *subsystem = Some(target.to_owned());
    }
    Some(d)
}

/// `You've hit your usage limit`, `… usage limit reached`, `5-hour limit reached ∙ resets 3pm`.
fn is_usage_limit(l: &str) -> bool {
    for lead in ["you've hit your ", "you have hit your ", "you've reached your ", "you have reached your "] {
        if let Some(i) = l.find(lead)
            && l[i + lead.len()..].split_whitespace().take(3).any(|w| w.starts_with("limit"))
        {
            return true;
        }
    }
    if l.contains("usage limit exceeded") {
        return true;
    }
    // `<window> limit reached`: usage, 5-hour, weekly, session… but not context or rate limits.
    l.match_indices("limit reached").any(|(i, _)| {
        let mut words = l[..i].split_whitespace().rev();
        let before = words.next().unwrap_or("");
        matches!(before, "usage" | "weekly" | "session" | "daily" | "monthly")
            || before.strip_suffix("-hour").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            || (before == "hour"
                && words.next().is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
    })
}

/// `Credit balance is too low`, `out of credits`.
fn is_out_of_credits(l: &str) -> bool {
    ["credit balance is too low", "out of credits", "insufficient credits", "exceeded your current quota"]
        .iter()
        .any(|p| l.contains(p))
}

/// A prompt to log in, which a non-interactive run can never answer.
fn is_login_prompt(l: &str) -> bool {
    [
        "run /login",
        "not logged in",
        "login required",
        "log in required",
        "please sign in",
        "please log in",
        "please login",
        "authentication required",
        "'codex login'",
        "run codex login",
        "'cursor-agent login'",
        "run cursor-agent login",
    ]
    .iter()
    .any(|p| l.contains(p))
        || (l.contains("press enter") && l.contains("browser"))
}

/// The level and target of a tracing line (`2026-04-09T14:20:45.537513Z  WARN codex_core::x: …`).
fn tracing_prefix(text: &str) -> Option<(Level, &str)> {
    // The timestamp is the first word of `text` (trimmed): its bytes 4 and 10 are `text`'s, so
    // most lines are told apart before any word is split off.
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let mut words = text.split_whitespace();
    let ts = words.next()?;
    if !(ts.len() >= 20 && ts.as_bytes()[4] == b'-' && ts.as_bytes()[10] == b'T' && ts.ends_with('Z')) {
        return None;
    }
    let level = match words.next()? {
        "ERROR" => Level::Error,
        "WARN" => Level::Warning,
        "INFO" | "DEBUG" | "TRACE" => Level::Info,
        _ => return None,
    };
    let target = words.next()?.strip_suffix(':')?;
    Some((level, target))
}

/// The message without a tracing prefix (`2026-04-09T14:20:45.537513Z  WARN target: `).
fn message_of(text: &str) -> String {
    let mut rest = text;
    if let Some((first, tail)) = rest.split_once(char::is_whitespace)
        && first.len() >= 20
        && first.as_bytes()[4] == b'-'
        && first.ends_with('Z')
    {
        rest = tail.trim_start();
    }
    for level in ["TRACE ", "DEBUG ", "INFO ", "WARN ", "ERROR "] {
        if let Some(tail) = rest.strip_prefix(level) {
            rest = tail.trim_start();
            if let Some((target, msg)) = rest.split_once(": ")
                && !target.contains(' ')
            {
                rest = msg;
            }
            break;
        }
    }
    rest.to_owned()
}

/// The plugin id of `plugin="x@y"` or `plugin=x`.
fn plugin_id(text: &str) -> Option<String> {
    let start = text.find("plugin=")? + "plugin=".len();
    let rest = &text[start..];
    let id = match rest.strip_prefix('"') {
        Some(q) => q.split('"').next()?,
        None => rest.split(|c: char| c.is_whitespace() || c == ',').next()?,
    };
    (!id.is_empty()).then(|| id.to_owned())
}

/// Removes ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, and lone
/// two-byte escapes) so that coloured lines match like plain ones.
pub fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.peek() == Some(&'\\')) {
                        if c == '\u{1b}' {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(line: &str) -> Option<(String, Vec<String>)> {
        match recognize(line)? {
            Event::Diagnostic { dedupe_key, plugins, .. } => Some((dedupe_key, plugins)),
            _ => None,
        }
    }

    #[test]
    fn plugin_warnings() {
        let l = r#"2026-04-09T14:20:45.537513Z  WARN codex_core::plugins::manager: failed to load plugin: plugin is not installed plugin="github@openai-curated" path=/tmp/plugin"#;
        assert_eq!(
            key(l),
            Some(("codex.plugin.not-installed|github@openai-curated".into(), vec!["github@openai-curated".into()]))
        );
        let unquoted = "\u{1b}[33mWARN\u{1b}[0m codex_core_plugins::loader: failed to load plugin: plugin is not installed plugin=browser-use";
        assert_eq!(key(unquoted).unwrap().1, vec!["browser-use".to_string()]);
        match recognize(l).unwrap() {
            Event::Diagnostic { message, .. } => {
                assert_eq!(
                    message,
                    r#"failed to load plugin: plugin is not installed plugin="github@openai-curated" path=/tmp/plugin"#
                )
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn helper_paths() {
        let l =
            "WARNING: proceeding, even though we could not create PATH aliases: Operation not permitted (os error 1)";
        assert_eq!(key(l).unwrap().0, "codex.path.helper-binary");
        assert_eq!(key("Reading prompt from stdin...").unwrap().0, "codex.stdin");
        assert_eq!(key("Something else entirely"), None);
    }

    fn code_of(line: &str) -> Option<String> {
        match recognize(line)? {
            Event::Diagnostic { code, level, dedupe_key, .. } => {
                if [USAGE_LIMIT, USAGE_CREDITS, LOGIN_REQUIRED].contains(&code.as_str()) {
                    assert_eq!(level, Level::Error, "{line}");
                    assert_eq!(dedupe_key, code, "{line}");
                }
                Some(code)
            }
            _ => None,
        }
    }

    fn message(line: &str) -> String {
        match recognize(line).unwrap() {
            Event::Diagnostic { message, .. } => message,
            _ => unreachable!(),
        }
    }

    #[test]
    fn codex_usage_limit_with_either_apostrophe() {
        for l in [
            "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 4 days 6 hours 37 minutes.",
            "You\u{2019}ve hit your usage limit. To get more access now, send a request to your admin or try again at 2:57 PM.",
            "\u{1b}[31mYou've hit your usage limit.\u{1b}[0m",
            "2026-05-01T10:00:00.000000Z ERROR codex_exec: You've hit your usage limit. Try again later.",
        ] {
            assert_eq!(code_of(l).as_deref(), Some(USAGE_LIMIT), "{l}");
        }
        assert!(message("■ You've hit your usage limit. Try again.").starts_with("You've hit"));
        match recognize("2026-05-01T10:00:00.000000Z ERROR codex_exec: You've hit your usage limit.").unwrap() {
            Event::Diagnostic { subsystem, message, .. } => {
                assert_eq!(subsystem.as_deref(), Some("codex_exec"));
                assert_eq!(message, "You've hit your usage limit.");
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn claude_usage_limits() {
        for l in [
            "Claude AI usage limit reached|1750708800",
            "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
            "5-hour limit reached \u{2219} resets 3pm",
            "\u{1b}[1m5-hour limit reached \u{2219} resets 3pm (Europe/Berlin)\u{1b}[22m",
            "Weekly limit reached \u{2219} resets Oct 9, 10am",
            "Opus weekly limit reached \u{2219} resets Mon 9am",
            "You've hit your limit \u{b7} resets 4:50am (Europe/Rome)",
            "You've hit your session limit \u{b7} resets 12:50am (America/Los_Angeles)",
        ] {
            assert_eq!(code_of(l).as_deref(), Some(USAGE_LIMIT), "{l}");
        }
        assert_eq!(
            message("Claude AI usage limit reached|1750708800"),
            "Claude AI usage limit reached (resets 2025-06-23T20:00:00.000Z)"
        );
    }

    #[test]
    fn out_of_credits() {
        for l in [
            "Credit balance is too low",
            "API Error: 400 Your credit balance is too low to access the Anthropic API.",
            "You're out of credits. Add more at https://example.com/billing",
            "You exceeded your current quota, please check your plan and billing details.",
        ] {
            assert_eq!(code_of(l).as_deref(), Some(USAGE_CREDITS), "{l}");
        }
    }

    #[test]
    fn login_prompts() {
        for l in [
            "Please run /login",
            "Invalid API key \u{b7} Please run /login",
            "Not logged in",
            "Error: Not logged in. Run `codex login` to sign in.",
            "Login required",
            "Code Assist login required.",
            "Please sign in to continue",
            "Press Enter to open your browser and sign in\u{2026}",
            "To use Codex with your ChatGPT plan, run codex login",
            "Authentication required. Please run 'cursor-agent login' first.",
            "\u{1b}[31m\u{2717}\u{1b}[0m Please log in first",
        ] {
            assert_eq!(code_of(l).as_deref(), Some(LOGIN_REQUIRED), "{l}");
        }
        assert_eq!(message("\u{1b}[31m\u{2717}\u{1b}[0m Please log in first"), "Please log in first");
    }

    #[test]
    fn ordinary_lines_are_not_account_trouble() {
        for l in [
            "Logged in as alice@example.com",
            "Successfully logged in",
            "Login successful.",
            "Press Enter to continue",
            "Opening the login page in your browser",
            "Context limit reached \u{b7} /compact or /clear to continue",
            "Rate limit reached for gpt-5 in organization org-x on tokens per min. Please try again in 20s.",
            "token limit reached while summarizing",
            "Your usage limit resets weekly",
            "checking the usage limits of the plan",
            "You've hit your stride today",
            "Buy credits with a credit card",
            "Reached max turns (5)",
            "The user hit the limit of 3 retries",
            "1-hour limit on sessions is configurable",
        ] {
            assert_eq!(code_of(l), None, "{l}");
        }
    }

    /// The anchor pass ignores ASCII case as the searches behind it do: every recognised line,
    /// upper-cased, is still recognised with the same code; lines with no anchor are not.
    #[test]
    fn the_anchor_pass_keeps_every_recognised_line() {
        for l in [
            r#"WARN codex_core::plugins: plugin is not installed plugin="x""#,
            "helper paths are unavailable",
            "Helper binaries missing",
            "PATH aliases could not be set",
            "You\u{2019}ve hit your usage limit. Try again later.",
            "Claude AI usage limit reached|1750708800",
            "5-hour limit reached \u{2219} resets 3pm",
            "Credit balance is too low",
            "You exceeded your current quota, please check your plan",
            "Please run /login",
            "Not logged in",
            "Please sign in to continue",
            "Press Enter to open your browser and sign in",
            "Authentication required. Please run 'cursor-agent login' first.",
        ] {
            assert!(has_anchor(l), "{l}");
            let code = code_of(l);
            assert!(code.is_some(), "{l}");
            assert_eq!(code_of(&l.to_uppercase()), code, "{l}");
        }
        for l in ["  \"session_id\": \"9a3f\",", "}", "Reading prompt from stdin...", "error: connection reset"] {
            assert!(!has_anchor(l), "{l}");
        }
    }

    #[test]
    fn codex_codes_come_first() {
        // A plugin warning that also names a login stays a plugin warning, with its key.
        let l = r#"WARN codex_core::plugins: plugin is not installed plugin="auth" (please sign in)"#;
        assert_eq!(key(l).unwrap().0, "codex.plugin.not-installed|auth");
        assert_eq!(key("helper binary missing; not logged in").unwrap().0, "codex.path.helper-binary");
    }

    #[test]
    fn tracing_lines() {
        let l = "2026-05-01T10:00:00.000000Z ERROR codex_core::session: failed to record rollout items: disk full";
        match recognize(l).unwrap() {
            Event::Diagnostic { level, code, dedupe_key, subsystem, message, .. } => {
                assert_eq!(level, Level::Error);
                assert_eq!(code, "codex.log");
                assert_eq!(dedupe_key, "codex.log|codex_core::session");
                assert_eq!(subsystem.as_deref(), Some("codex_core::session"));
                assert_eq!(message, "failed to record rollout items: disk full");
            }
            _ => unreachable!(),
        }
    }
}
