//! `--redact`: secrets masked in every event before anything is written.
//!
//! A session is often shared (pasted into an issue, rendered as a page) and agents see secrets:
//! keys in `.env` files they read, tokens in the commands they run, `Authorization` headers in
//! `curl` calls. This module masks them in the agent-controlled strings of an [`Event`] (text,
//! reasoning, tool input, output and errors, summaries, plans, diagnostics, `unknown` samples
//! and every `raw` line), so that every output format — NDJSON, `--raw`, and any other
//! [`Sink`](crate::Sink) — gets the masked event. The [`Normalizer`](crate::Normalizer) applies it
//! when [`Options::redact`](crate::Options::redact) is set; with it unset nothing here runs.
//!
//! What is masked, as `[REDACTED:<kind>]`:
//!
//! | kind | shape |
//! |---|---|
//! | `anthropic-key` | `sk-ant-…` |
//! | `openai-key` | `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` (20+ characters, a digit among them) |
//! | `github-token` | `ghp_` / `gho_` / `ghs_` / `ghu_` / `ghr_` + 30 or more, `github_pat_…` |
//! | `aws-access-key` | `AKIA` / `ASIA` / `ABIA` / `ACCA` + 16 |
//! | `aws-secret-key` | the 40-character value of `aws_secret_access_key = …` (any case, `=` or `:`) |
//! | `google-api-key` | `AIza` + 35 |
//! | `slack-token` | `xoxa-` / `xoxb-` / `xoxp-` / `xoxr-` / `xoxs-…` |
//! | `stripe-key` | `sk_live_…`, `rk_live_…`, `sk_test_…`, `rk_test_…` |
//! | `jwt` | `eyJ….eyJ….…` |
//! | `private-key` | a PEM `-----BEGIN … PRIVATE KEY-----` block to its `END` line (or as far as it goes) |
//! | `authorization` | the credential of `Authorization: Bearer|Basic|Token|Bot …` (header name kept) |
//! | `authorization` (JSON) | the credential of an `"Authorization": "Bearer …"` member (a header given as a JSON object; scheme kept) |
//! | `api-key` | the value of an `x-api-key:` / `api-key:` / `x-auth-token:` header, also as a JSON member |
//! | `password` | the password of a URL's credentials, `scheme://user:password@host` (user and host kept; `${VAR}` stays) |
//! | `cut` | a token begun at the end of one JSON string value and the start of the next value under the same key (a secret split over two text blocks of one line, also in `--raw`); in text streamed in pieces (Claude `--include-partial-messages`, Gemini and Cursor deltas): a token prefix at the end of a piece (`sk-ant-`, `ghp_`, `AKIA`, `AIza`, `xoxb-`, `sk_live_`, `eyJhbGci` …) and what follows it, and the part of a later piece that continues a secret begun before it ([`Redaction`]); the token prefix a truncated `line_too_long` sample ends with |
//! | `secret` | the value of a `.env`-style `NAME=value` (no spaces) whose upper-case name is or ends in `_API_KEY`, `_TOKEN`, `_SECRET`, `_SECRET_KEY`, `_PASSWORD`, `_PASSWD`, `_PASS`, `_PRIVATE_KEY`, `_ACCESS_KEY`, `_CREDENTIALS`, quoted or not; a quoted value given with `=` or `:` to such a name in any case or in camelCase (`password: "…"`, `'db.password': '…'`, `"apiKey": "…"`); a JSON string under such a key |
//!
//! Names are kept (`OPENAI_API_KEY=[REDACTED:secret]`); a value that is a reference (`$TOKEN`,
//! `"${TOKEN}"`) is no secret and stays.
//!
//! Strings that hold JSON (every `raw` line, tool input, a tool's JSON output) are read string
//! literal by string literal: each is decoded, masked (recursively, for JSON inside a string)
//! and written again with JSON escapes, so a secret written with escapes (`\/`, `\"`, `\n` in a
//! PEM block) is found and the output stays valid JSON. Long strings the normalizer passes
//! through as their escaped input bytes ([`Text`]) are decoded only when a keyword is there.
//!
//! Cost: one Aho-Corasick scan of each string for the keywords every match contains (token
//! prefixes such as `sk-`, `ghp_`, `eyJ`; the last word of a secret name followed by `=`, `:`, a
//! quote or a blank, such as `token=` or `key"`; and `\u002`…`\u007`, through which an escaped
//! string could spell any of them); the regex runs only on strings where one is found. On the
//! reference workload (100 MB, no secrets) normalizing takes about twice as long with
//! `--redact` as without.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use regex::{Captures, Regex};

use crate::event::{Event, Json, Text};

/// How deep JSON held in strings held in JSON is followed.
const MAX_DEPTH: u8 = 8;

/// A name that says its value is a secret, for names in any case given a quoted value
/// (`password: "…"`) and for JSON keys: a secret word (`password`, `api_key`, `token`, …) alone or
/// after a prefix ending in `_`, `.` or `-` (`GITHUB_TOKEN`, `db.password`), or a camelCase name
/// ending in one (`accessToken`, `apiKey`). `jsonwebtoken` or `max_tokens` are not.
const SECRET_NAME: &str = "(?:(?i:(?:[a-z0-9_.-]*[_.-])?(?:api[_.-]?key|secret|secret[_.-]?key|password|passwd|token|\
private[_.-]?key|access[_.-]?key|credentials?))|(?:[a-z][a-zA-Z0-9]*)?(?:ApiKey|APIKey|Secret|SecretKey|Password|\
Passwd|Token|PrivateKey|AccessKey|Credentials?)|apiKey)";

/// Keywords at least one of which every match contains (ASCII, any case): the prefixes of
/// tokens, header names, and the escapes `\u0020`…`\u007f` through which an escaped string could
/// hide any of them.
const KEYWORDS: &[&str] = &[
    "sk-",
    "k_live_",
    "k_test_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "ghr_",
    "github_pat_",
    "akia",
    "asia",
    "abia",
    "acca",
    "aiza",
    "xox",
    "eyj",
    "private key",
    "authorization",
    "api-key",
    "x-auth-token",
    "aws_secret",
    "awssecret",
    "pass=",
    "://",
    "\\u002",
    "\\u003",
    "\\u004",
    "\\u005",
    "\\u006",
    "\\u007",
];

/// The last words of secret names (`.env` names, quoted assignments, JSON keys), each a keyword
/// when followed by a character that can follow a name ([`NAME_ENDS`]): `tokens` in prose does
/// not wake the regex. `pass` ends only `.env` names (`DB_PASS=`), so only `pass=` is a keyword.
const NAME_TAILS: &[&str] = &["key", "token", "secret", "passwd", "password", "credential", "credentials"];

/// What may follow a secret name: `=`, `:`, a closing quote (also escaped), a blank.
const NAME_ENDS: &[char] = &['=', ':', '"', '\'', '\\', ' ', '\t'];

/// The compiled patterns.
struct Redactor {
    /// Finds any keyword.
    prefilter: AhoCorasick,
    /// Every secret shape, one named group each (see [`Redactor::mask`]).
    re: Regex,
    /// A JSON key that names a secret.
    secret_key: Regex,
    /// The start of a token cut off at the end of a truncated sample.
    cut_token: Regex,
    /// A token written from one of its unmistakable prefixes to the end of the text, for text
    /// that arrives in pieces ([`Redaction`]).
    streak: Regex,
}

fn redactor() -> &'static Redactor {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| {
        // The value classes of headers and tokens leave out `$` and `<`: `Bearer $TOKEN` and
        // `Bearer <token>` are references and placeholders.
        let pattern = format!(
            r#"(?x)
            (?P<pem>-----BEGIN[A-Z0-9\ ]*PRIVATE\ KEY-----
                (?:[A-Za-z0-9+/=\s\\:,.\-]*?-----END[A-Z0-9\ ]*PRIVATE\ KEY-----|[A-Za-z0-9+/=\s\\:,.\-]*))
            |(?P<auth>(?i:(?-u:\b)(?:proxy-)?authorization)["']?\s*[:=]\s*["']?\s*(?i:bearer|basic|token|bot)\s+)
                (?P<auth_v>[A-Za-z0-9\-._~+/]{{8,}}=*)
            |(?P<hdr>(?i:(?-u:\b)x-api-key|(?-u:\b)api-key|(?-u:\b)x-auth-token)["']?\s*:\s*["']?\s*)(?P<hdr_v>[A-Za-z0-9\-._~+/]{{8,}}=*)
            |(?P<aws>(?i:(?-u:\b)aws_?secret_?access_?key|(?-u:\b)aws_?secret_?key)["']?\s*[:=]\s*["']?)(?P<aws_v>[A-Za-z0-9/+=]{{40}})
            |(?P<env>(?-u:\b)(?:[A-Z][A-Z0-9_]*_)?(?:API_?KEY|APIKEY|TOKEN|SECRET|SECRET_?KEY|PASSWORD|PASSWD|PASS|PRIVATE_KEY|ACCESS_KEY|CREDENTIALS?)=)
                (?P<env_v>"[^"$\n][^"\n]*"|'[^'$\n][^'\n]*'|[^\s"'\\$][^\s"'\\]*)
            |(?P<assign>["']?(?-u:\b){SECRET_NAME}["']?[\ \t]*[:=]\s*)
                (?P<assign_v>"[^"$\\\n][^"\\\n]*"|'[^'$\\\n][^'\\\n]*')
            |(?P<url>(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@"'<>\\]+:)(?P<url_v>[^\s@/"'<>\\$\[][^\s@/"'<>\\]*)@
            |(?P<anthropic>(?-u:\b)sk-ant-[A-Za-z0-9_\-]{{20,}})
            |(?P<openai>(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{{20,}})
            |(?P<github>(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{{30,}}|github_pat_[A-Za-z0-9_]{{22,}}))
            |(?P<aws_id>(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{{16}}(?-u:\b))
            |(?P<google>(?-u:\b)AIza[0-9A-Za-z_\-]{{35}})
            |(?P<slack>(?-u:\b)xox[abprs]-[A-Za-z0-9\-]{{10,}})
            |(?P<stripe>(?-u:\b)[sr]k_(?:live|test)_[A-Za-z0-9]{{16,}})
            |(?P<jwt>(?-u:\b)eyJ[A-Za-z0-9_\-]{{4,}}\.eyJ[A-Za-z0-9_\-]{{4,}}\.[A-Za-z0-9_\-]*)
            "#
        );
        Redactor {
            prefilter: AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .build(
                    KEYWORDS.iter().map(|k| k.to_string()).chain(
                        NAME_TAILS.iter().flat_map(|w| NAME_ENDS.iter().map(move |c| format!("{w}{c}"))),
                    ),
                )
                .expect("the keywords build an automaton"),
            re: Regex::new(&pattern).expect("the secret patterns compile"),
            secret_key: Regex::new(&format!("^{SECRET_NAME}$")).expect("the name pattern compiles"),
            cut_token: Regex::new(r"(?-u:\b)(?:sk-|sk_|rk_|gh[pousr]_|github_pat_|AKIA|ASIA|AIza|xox[abprs]-|eyJ)[^\s]+$")
                .expect("the cut-token pattern compiles"),
            streak: Regex::new(
                r"(?-u:\b)(?:sk-ant-|sk-proj-|sk-svcacct-|sk-admin-|gh[pousr]_|github_pat_|AKIA|AIza|xox[abprs]-|[sr]k_live_|eyJhbGci)[^\s]*$",
            )
            .expect("the streak pattern compiles"),
        }
    })
}

/// The groups of [`Redactor::re`] that are masked whole, with their kind.
const WHOLE: [(&str, &str); 9] = [
    ("pem", "private-key"),
    ("anthropic", "anthropic-key"),
    ("openai", "openai-key"),
    ("github", "github-token"),
    ("aws_id", "aws-access-key"),
    ("google", "google-api-key"),
    ("slack", "slack-token"),
    ("stripe", "stripe-key"),
    ("jwt", "jwt"),
];

/// The groups whose name is kept and whose value (group `<name>_v`) is masked, with their kind.
const VALUED: [(&str, &str); 5] =
    [("auth", "authorization"), ("hdr", "api-key"), ("aws", "aws-secret-key"), ("env", "secret"), ("assign", "secret")];

impl Redactor {
    fn hit(&self, s: &str) -> bool {
        self.prefilter.is_match(s)
    }

    /// `s` masked, or `None` when nothing in it is a secret.
    fn str(&self, s: &str, depth: u8) -> Option<String> {
        if self.hit(s) { self.str_with_keyword(s, depth) } else { None }
    }

    /// [`Redactor::str`] for a string known to hold a keyword.
    fn str_with_keyword(&self, s: &str, depth: u8) -> Option<String> {
        if depth < MAX_DEPTH && matches!(s.trim_start().as_bytes().first(), Some(b'{' | b'[')) {
            self.json(s, depth)
        } else {
            self.plain(s)
        }
    }

    /// Masks every pattern match in `s`, read as plain text.
    fn plain(&self, s: &str) -> Option<String> {
        let mut out = String::new();
        let mut last = 0;
        for c in self.re.captures_iter(s) {
            let Some(whole) = c.get(0) else { continue };
            let Some(masked) = Redactor::mask(&c) else { continue };
            out.push_str(&s[last..whole.start()]);
            out.push_str(&masked);
            last = whole.end();
        }
        if last == 0 {
            return None;
        }
        out.push_str(&s[last..]);
        Some(out)
    }

    /// What one match becomes, or `None` to leave it as it is.
    fn mask(c: &Captures<'_>) -> Option<String> {
        for (group, kind) in WHOLE {
            if let Some(m) = c.name(group) {
                // `sk-` is also the start of ordinary words and names (`sk-learn-…`): a key has a
                // digit somewhere.
                if matches!(group, "openai" | "anthropic") && !m.as_str().bytes().any(|b| b.is_ascii_digit()) {
                    return None;
                }
                return Some(format!("[REDACTED:{kind}]"));
            }
        }
        // `scheme://user:password@host`: the user and host kept.
        if let (Some(name), Some(_)) = (c.name("url"), c.name("url_v")) {
            return Some(format!("{}[REDACTED:password]@", name.as_str()));
        }
        for (group, kind) in VALUED {
            if let (Some(name), Some(value)) = (c.name(group), c.name(&format!("{group}_v"))) {
                let v = value.as_str();
                let quote =
                    if v.len() >= 2 && (v.starts_with(['"', '\'']) && v.ends_with(&v[..1])) { &v[..1] } else { "" };
                return Some(format!("{}{quote}[REDACTED:{kind}]{quote}", name.as_str()));
            }
        }
        None
    }

    /// Masks `s` read as JSON text: each string literal decoded, masked and encoded again, the
    /// string value under a key that names a secret masked whole; what lies between literals
    /// (structure in valid JSON, anything in a broken line) read as plain text.
    fn json(&self, s: &str, depth: u8) -> Option<String> {
        let b = s.as_bytes();
        let mut out = String::new();
        // Bytes of `s` before `last` are in `out` (when anything changed).
        let mut last = 0;
        let mut changed = false;
        // The end of the last literal, when it was a key naming a secret.
        let mut secret_key_end: Option<usize> = None;
        // The key of the value being read, the end of that key's literal, and the key whose last
        // value ended in a token begun (`sk-ant-` and what follows): the next value under the same
        // key (the next text block of a message) continues it.
        let (mut key, mut key_end): (Option<String>, usize) = (None, 0);
        let mut continued: Option<String> = None;
        let mut header_key_end: Option<(usize, bool)> = None;
        let mut pos = 0;
        let replace = |out: &mut String, last: &mut usize, start: usize, end: usize, with: &str| {
            out.push_str(&s[*last..start]);
            out.push_str(with);
            *last = end;
        };
        while let Some(off) = memchr::memchr(b'"', &b[pos..]) {
            let start = pos + off;
            // Between literals.
            if let Some(m) = self.plain_between(&s[pos..start]) {
                replace(&mut out, &mut last, pos, start, &m);
                changed = true;
            }
            let Some(end) = literal_end(b, start) else {
                pos = start;
                break;
            };
            let lit = &s[start..end];
            let after = s[end..].trim_start();
            let is_key = after.starts_with(':');
            let under_secret_key = secret_key_end.take().is_some_and(|k| s[k..start].trim() == ":");
            let under_header = header_key_end.take().filter(|(k, _)| s[*k..start].trim() == ":").map(|(_, auth)| auth);
            let decoded = serde_json::from_str::<String>(lit);
            let value_key = (!is_key && s[key_end..start].trim() == ":").then(|| key.take()).flatten();
            if let (Some(auth), Ok(v)) = (under_header, &decoded)
                && let Some(m) = self.header_value(v, auth)
            {
                replace(&mut out, &mut last, start, end, &serde_json::to_string(&m).unwrap_or_default());
                changed = true;
            } else if let (Some(k), Ok(v)) = (&value_key, &decoded)
                && let Some(m) = self.across(v, k, &mut continued, depth)
            {
                replace(&mut out, &mut last, start, end, &serde_json::to_string(&m).unwrap_or_default());
                changed = true;
            } else if under_secret_key
                && let Ok(v) = &decoded
                && !(v.is_empty() || v.starts_with('$') || v.starts_with("[REDACTED"))
            {
                replace(&mut out, &mut last, start, end, "\"[REDACTED:secret]\"");
                changed = true;
            } else if self.hit(lit) {
                let masked = match &decoded {
                    Ok(v) => self.str_with_keyword(v, depth + 1).map(|m| serde_json::to_string(&m).unwrap_or_default()),
                    // Not a valid literal (a broken line): masked as it is written.
                    Err(_) => self.plain(lit),
                };
                if let Some(m) = masked {
                    replace(&mut out, &mut last, start, end, &m);
                    changed = true;
                }
            }
            if is_key && decoded.as_deref().is_ok_and(|k| self.secret_key.is_match(k)) {
                secret_key_end = Some(end);
            }
            if is_key && let Ok(k) = &decoded {
                let lower = k.to_ascii_lowercase();
                if lower == "authorization" || lower == "proxy-authorization" {
                    header_key_end = Some((end, true));
                } else if matches!(lower.as_str(), "x-api-key" | "api-key" | "x-auth-token") {
                    header_key_end = Some((end, false));
                }
                key = Some(k.clone());
                key_end = end;
            }
            pos = end;
        }
        if let Some(m) = self.plain_between(&s[pos..]) {
            replace(&mut out, &mut last, pos, s.len(), &m);
            changed = true;
        }
        if !changed {
            return None;
        }
        out.push_str(&s[last..]);
        Some(out)
    }

    /// The value of an `Authorization` (`auth`) or API-key header given as a JSON member
    /// (`{"Authorization": "Bearer …"}`): the credential masked, the scheme kept.
    fn header_value(&self, v: &str, auth: bool) -> Option<String> {
        if v.starts_with('$') || v.starts_with("[REDACTED") || v.starts_with('<') {
            return None;
        }
        if auth {
            let (scheme, cred) = v.trim_start().split_once(char::is_whitespace)?;
            let cred = cred.trim();
            let known = ["bearer", "basic", "token", "bot"].contains(&scheme.to_ascii_lowercase().as_str());
            (known && cred.len() >= 8 && !cred.starts_with(['$', '<', '[']))
                .then(|| format!("{scheme} [REDACTED:authorization]"))
        } else {
            (v.trim().len() >= 8).then(|| "[REDACTED:api-key]".to_owned())
        }
    }

    /// A value under `key` masked as text, with the token a value before it under the same key
    /// began (`continued`) masked at its start, and a token begun at its end masked (then
    /// `continued` is `key`); `None` when nothing of that applies.
    fn across(&self, v: &str, key: &str, continued: &mut Option<String>, depth: u8) -> Option<String> {
        // Values under other keys (a block's `"type"`) pass over the carry.
        let carries = continued.as_deref() == Some(key);
        if carries {
            *continued = None;
        }
        let head_end = v.find(char::is_whitespace).unwrap_or(v.len());
        let tail = self.hit(v).then(|| self.streak.find(v)).flatten().filter(|m| self.plain(m.as_str()).is_none());
        if !(carries && head_end > 0) && tail.is_none() && !v.ends_with("[REDACTED:cut]") {
            return None;
        }
        let mut out = String::new();
        let mut rest = v;
        if carries && head_end > 0 {
            out.push_str("[REDACTED:cut]");
            rest = &v[head_end..];
            if head_end == v.len() {
                // The token goes on into the next value.
                *continued = Some(key.to_owned());
            }
        }
        let tail = if rest.len() == v.len() {
            tail
        } else {
            self.streak.find(rest).filter(|m| self.plain(m.as_str()).is_none())
        };
        match tail {
            Some(m) => {
                out.push_str(&self.str(&rest[..m.start()], depth + 1).unwrap_or_else(|| rest[..m.start()].to_owned()));
                out.push_str("[REDACTED:cut]");
                *continued = Some(key.to_owned());
            }
            None => {
                if rest.ends_with("[REDACTED:cut]") {
                    *continued = Some(key.to_owned());
                }
                out.push_str(&self.str(rest, depth + 1).unwrap_or_else(|| rest.to_owned()));
            }
        }
        (out != v).then_some(out)
    }

    fn plain_between(&self, s: &str) -> Option<String> {
        if self.hit(s) { self.plain(s) } else { None }
    }

    fn string(&self, s: &mut String) {
        if let Some(m) = self.str(s, 0) {
            *s = m;
        }
    }

    fn opt_string(&self, s: &mut Option<String>) {
        if let Some(s) = s {
            self.string(s);
        }
    }

    /// Returns whether the text changed.
    fn text(&self, t: &mut Text) -> bool {
        // An escaped string is looked at in its escaped form first: decoded only on a keyword.
        let candidate = match t.escaped() {
            Some(q) => self.hit(q),
            None => self.hit(&t.as_str()),
        };
        if !candidate {
            return false;
        }
        let masked = self.str_with_keyword(&t.as_str(), 0);
        match masked {
            Some(m) => {
                *t = Text::from(m);
                true
            }
            None => false,
        }
    }

    fn opt_text(&self, t: &mut Option<Text>) {
        if let Some(t) = t {
            self.text(t);
        }
    }

    fn json_value(&self, j: &mut Option<Json>) {
        if let Some(j) = j
            && let Some(m) = self.str(j.get(), 0)
        {
            // Literals were replaced by literals: still valid JSON, and compact.
            *j = Json::from_trusted(m);
        }
    }

    /// A line's bytes in base64 (`unknown.raw_base64`, a line that is not UTF-8): its UTF-8
    /// runs masked, the other bytes kept.
    fn base64(&self, b64: &mut String) {
        let engine = &base64::engine::general_purpose::STANDARD;
        let Ok(bytes) = engine.decode(b64.as_bytes()) else { return };
        let mut out = Vec::with_capacity(bytes.len());
        let mut changed = false;
        for chunk in bytes.utf8_chunks() {
            match self.str(chunk.valid(), 0) {
                Some(m) => {
                    out.extend_from_slice(m.as_bytes());
                    changed = true;
                }
                None => out.extend_from_slice(chunk.valid().as_bytes()),
            }
            out.extend_from_slice(chunk.invalid());
        }
        if changed {
            *b64 = engine.encode(out);
        }
    }

    fn event(&self, ev: &mut Event) {
        let env = ev.env_mut();
        self.opt_text(&mut env.raw);
        match ev {
            Event::UserMessage { text, .. } | Event::OutputDelta { text, .. } => {
                self.text(text);
            }
            Event::Reasoning { text, .. } => self.opt_text(text),
            Event::ToolStarted { input, summary, .. } => {
                self.json_value(input);
                self.opt_string(summary);
            }
            Event::ToolCompleted { output, error, .. } => {
                self.opt_text(output);
                self.opt_string(error);
            }
            Event::PlanUpdated { items, .. } => items.iter_mut().for_each(|i| self.string(&mut i.text)),
            Event::Subagent { description, message, .. } => {
                self.opt_string(description);
                self.opt_string(message);
            }
            Event::TurnCompleted { result, .. } => self.opt_text(result),
            Event::TurnFailed { error, .. } => self.string(error),
            Event::NeedsInput { prompt, questions, .. } => {
                self.opt_string(prompt);
                self.json_value(questions);
            }
            Event::Interrupt { reason, .. } => self.string(reason),
            Event::Diagnostic { message, raw, .. } => {
                self.string(message);
                self.text(raw);
            }
            Event::Unknown { frame, sample, raw, raw_base64, .. } => {
                self.opt_string(frame);
                match raw {
                    // The sample is the start of the line: taken again from the masked line, so
                    // a secret cut in two by its end is masked too.
                    Some(raw) => {
                        if self.text(raw) {
                            *sample = crate::normalize::sample(raw.as_str().as_bytes());
                        }
                    }
                    // Only the line's start is known (`line_too_long`): a token cut off at the end
                    // of the sample is masked as far as it goes.
                    None => {
                        self.string(sample);
                        if let Some(m) = self.cut_token.find(sample) {
                            sample.replace_range(m.range(), "[REDACTED:cut]");
                        }
                    }
                }
                if let Some(b) = raw_base64 {
                    self.base64(b);
                }
            }
            Event::RunStarted { .. }
            | Event::SessionStarted { .. }
            | Event::TurnStarted { .. }
            | Event::Usage { .. }
            | Event::RateLimit { .. }
            | Event::Compacted { .. }
            | Event::Heartbeat { .. }
            | Event::RunEnded { .. } => {}
        }
    }
}

/// What `--redact` remembers of one stream: the unfinished last word of text that arrives in
/// pieces (streamed `output_delta`s of one message, `reasoning` deltas), so that a secret split
/// over pieces is masked in each of them — which none of the pieces alone would show.
///
/// A piece that continues a word begun with a token prefix (`sk-ant-`, `ghp_`, `AKIA`, …) or
/// that completes a secret begun in the pieces before it has that continuation masked as
/// `[REDACTED:cut]`; a piece ending in a token prefix and what follows has that end masked (the
/// rest comes in the next pieces). Its `raw` line is masked alike when it holds the piece's text
/// as agentnorm would write it.
#[derive(Debug, Default)]
pub struct Redaction {
    /// Which text the carry belongs to: reasoning or not, and the message id.
    last: Option<(bool, Option<String>)>,
    /// The text's last word so far (no blank after it yet), from its start, at most `CARRY_MAX`.
    carry: String,
}

/// The longest unfinished word remembered (its start is what tells a token).
const CARRY_MAX: usize = 1024;

impl Redaction {
    /// Masks the secrets in `ev` (as [`redact_event`]), also those split over streamed pieces.
    pub fn event(&mut self, ev: &mut Event) {
        let r = redactor();
        let (key, text, raw) = match ev {
            Event::OutputDelta { text, message_id, env } => {
                (Some((false, message_id.clone())), Some(text), &mut env.raw)
            }
            Event::Reasoning { text: Some(text), env } => (Some((true, None)), Some(text), &mut env.raw),
            _ => (None, None, &mut None),
        };
        if key.is_none() || key != self.last {
            self.carry.clear();
        }
        self.last = key;
        if let Some(text) = text {
            let masked = self.piece(r, &text.as_str());
            if let Some(masked) = masked {
                // The piece's string literal in its line, as agentnorm would write it.
                if let Some(raw) = raw {
                    let (from, to) = (encode(&text.as_str()), encode(&masked));
                    let line = raw.as_str();
                    if line.contains(from.as_str()) {
                        *raw = Text::from(line.replacen(from.as_str(), &to, 1));
                    }
                }
                *text = Text::from(masked);
            }
        }
        r.event(ev);
    }

    /// The piece with the part that continues an earlier secret and a token begun at its end
    /// masked (`None` when neither), the carry brought up to date.
    fn piece(&mut self, r: &Redactor, orig: &str) -> Option<String> {
        let head_end = orig.find(char::is_whitespace).unwrap_or(orig.len());
        let mut out = String::new();
        let mut rest = orig;
        if !self.carry.is_empty() && head_end > 0 {
            let c = self.carry.len();
            let joined = format!("{}{}", self.carry, &orig[..head_end]);
            let streak = r.streak.find(&joined).is_some_and(|m| m.start() < c);
            let spans = || {
                r.re.captures_iter(&joined).any(|caps| {
                    caps.get(0).is_some_and(|m| m.start() < c && m.end() > c) && Redactor::mask(&caps).is_some()
                })
            };
            if streak || spans() {
                out.push_str("[REDACTED:cut]");
                rest = &orig[head_end..];
            }
        }
        // The carry: the unfinished last word, from its start.
        match orig.rfind(char::is_whitespace) {
            Some(i) => {
                self.carry.clear();
                let ws = orig[i..].chars().next().map_or(1, char::len_utf8);
                push_capped(&mut self.carry, &orig[i + ws..]);
            }
            None => push_capped(&mut self.carry, orig),
        }
        // A token begun at the end, unless whole already (then the ordinary pass names its kind).
        // Every token prefix is a keyword: text without one has none.
        let tail = r.hit(rest).then(|| r.streak.find(rest)).flatten().filter(|m| r.plain(m.as_str()).is_none());
        if let Some(m) = tail {
            out.push_str(&rest[..m.start()]);
            out.push_str("[REDACTED:cut]");
        } else if out.is_empty() {
            return None;
        } else {
            out.push_str(rest);
        }
        Some(out)
    }
}

/// Appends `s` to `carry` as far as [`CARRY_MAX`] allows, at a character boundary.
fn push_capped(carry: &mut String, s: &str) {
    for ch in s.chars() {
        if carry.len() + ch.len_utf8() > CARRY_MAX {
            break;
        }
        carry.push(ch);
    }
}

/// `s` as a JSON string literal, quotes included.
fn encode(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The end (exclusive, after the closing quote) of the string literal that starts at `start`,
/// or `None` when it is not closed.
fn literal_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', &b[i..])?;
        if b[i] == b'\\' {
            i += 2;
            if i > b.len() {
                return None;
            }
        } else {
            return Some(i + 1);
        }
    }
}

/// Masks the secrets in `s`; `None` when there are none.
///
/// ```
/// let masked = agentnorm::redact_str("export OPENAI_API_KEY=hunter2-and-more").unwrap();
/// assert_eq!(masked, "export OPENAI_API_KEY=[REDACTED:secret]");
/// assert_eq!(agentnorm::redact_str("cargo test --locked"), None);
/// ```
pub fn redact_str(s: &str) -> Option<String> {
    redactor().str(s, 0)
}

/// Masks the secrets in every agent-controlled string of `ev`, in place (what the normalizer does
/// with [`Options::redact`](crate::Options::redact)).
pub fn redact_event(ev: &mut Event) {
    redactor().event(ev);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        redact_str(s).unwrap_or_else(|| s.to_owned())
    }

    #[test]
    fn whole_tokens_and_named_values() {
        assert_eq!(r("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123 ok"), "key [REDACTED:anthropic-key] ok");
        assert_eq!(
            r("curl -H 'Authorization: Bearer abc.def-123456'"),
            "curl -H 'Authorization: Bearer [REDACTED:authorization]'"
        );
        assert_eq!(r("PASSWORD=\"hunter 2\" next"), "PASSWORD=\"[REDACTED:secret]\" next");
        assert_eq!(r("password: 'hunter2'"), "password: '[REDACTED:secret]'");
        assert_eq!(
            r(r#"cfg = {"apiKey": "abc", 'db.password': 'x'}"#),
            r#"cfg = {"apiKey": "[REDACTED:secret]", 'db.password': '[REDACTED:secret]'}"#
        );
        assert_eq!(
            r(r#"{"accessToken":"abc","n":{"GITHUB_TOKEN":"x"}}"#),
            r#"{"accessToken":"[REDACTED:secret]","n":{"GITHUB_TOKEN":"[REDACTED:secret]"}}"#
        );
    }

    #[test]
    fn references_placeholders_and_ordinary_words_stay() {
        for s in [
            "GITHUB_TOKEN=$GITHUB_TOKEN",
            "API_KEY=\"${API_KEY}\"",
            "Authorization: Bearer $TOKEN",
            "pip install sk-learn-something-long-enough",
            "max_tokens=1024 and the token count",
            "password=password",
            "MAX_TOKENS=100",
            r#"{"jsonwebtoken": "^9.0.2", "max_tokens": "8k"}"#,
            r#"  "jsonwebtoken": "^9.0.2","#,
        ] {
            assert_eq!(redact_str(s), None, "{s}");
        }
    }

    #[test]
    fn json_literals_are_decoded_masked_and_encoded_again() {
        let line = r#"{"cmd":"echo \"TOKEN=abc\/def\"","password":"p\u0061ss","n":1,"token":"$T"}"#;
        let out = r(line);
        assert_eq!(
            out,
            r#"{"cmd":"echo \"TOKEN=[REDACTED:secret]\"","password":"[REDACTED:secret]","n":1,"token":"$T"}"#
        );
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
        // JSON inside a string inside JSON.
        let nested = r#"{"arguments":"{\"key\":\"sk-proj-abcdefghij0123456789XYZ\"}"}"#;
        assert_eq!(r(nested), r#"{"arguments":"{\"key\":\"[REDACTED:openai-key]\"}"}"#);
    }

    #[test]
    fn escaped_keyword_is_found() {
        // `sk-` spelled with an escape in the input's escaped form.
        let t = Text::from_quoted(r#""x \u0073k-ant-api03-abcdefghijklmnopqrstuvwx1 y""#);
        let mut t2 = t.clone();
        assert!(redactor().text(&mut t2));
        assert_eq!(t2.as_str(), "x [REDACTED:anthropic-key] y");
    }

    #[test]
    fn pem_block_cut_short_is_masked_to_its_end() {
        assert_eq!(
            r("a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----\nb"),
            "a\n[REDACTED:private-key]\nb"
        );
        assert_eq!(r("-----BEGIN PRIVATE KEY-----\nMIIEow"), "[REDACTED:private-key]");
    }

    #[test]
    fn raw_base64_keeps_invalid_bytes() {
        let mut line = b"\xff ghp_abcdefghijklmnopqrstuvwxyz0123456789 \xfe".to_vec();
        let mut b64 = base64::engine::general_purpose::STANDARD.encode(&line);
        redactor().base64(&mut b64);
        line = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        assert_eq!(line, b"\xff [REDACTED:github-token] \xfe");
    }
}
