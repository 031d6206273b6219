//! Recognition of the non-JSON lines users see when a CLI's stderr is merged into its stream
//! (`2>&1`): known warnings become typed `diagnostic`s with stable codes and dedupe keys (SPEC
//! §3), so a watchdog can count them instead of grepping free text. Everything else stays
//! `unknown` `not_json`.

use crate::dialect::diagnostic;
use crate::event::{Event, Level};

/// The diagnostic a non-JSON line stands for, if it is one agentnorm knows.
pub fn recognize(line: &str) -> Option<Event> {
    let clean = strip_ansi(line);
    let text = clean.trim();
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

/// The level and target of a tracing line (`2026-04-09T14:20:45.537513Z  WARN codex_core::x: …`).
fn tracing_prefix(text: &str) -> Option<(Level, &str)> {
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
