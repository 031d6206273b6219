//! Small JSON writing helpers shared by the frame reader and the NDJSON writer.
//!
//! They exist to let large strings travel from input to output as the escaped bytes the CLI
//! wrote ([`crate::Text`]), without an unescape and a re-escape, while staying correct for any
//! serde serializer: the raw path is only taken by agentnorm's own writers, which know they
//! write `serde_json`'s bytes.
//!
//! [`write_event`], the NDJSON writer, does not go through serde: serialization was a fifth of
//! the instructions of a run, most of it serde_json's work per field (each key escaped as if it
//! could need it, each value through a serializer object). It writes each event's fields in
//! their declaration order (the list comes from the `events!` macro in `event.rs`, so a new field
//! is written without a change here) with `Field`, and tests pin it byte for byte to the serde
//! path over every fixture and over every variant with arbitrary strings and numbers.

use std::cell::Cell;

use serde::Serializer;
use serde::ser::SerializeStruct;

use std::collections::BTreeMap;

use crate::Event;
use crate::event::{
    Dialect, Envelope, FailureKind, Json, Level, ModelUsage, PlanItem, SubagentOperation, SubagentStatus, Text,
    ToolKind, UnknownReason, Usage, UsageScope,
};

/// serde_json's marker for a raw value (its `RawValue` serializes through this struct name).
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

thread_local! {
    static RAW_OK: Cell<bool> = const { Cell::new(false) };
}

/// Serializes a JSON string literal that is already escaped (`quoted` includes its quotes).
///
/// Inside [`write_event`] the bytes are copied verbatim; any other serializer gets the decoded
/// string.
pub(crate) fn serialize_escaped<S: Serializer>(quoted: &str, serializer: S) -> Result<S::Ok, S::Error> {
    if RAW_OK.with(Cell::get) {
        let mut st = serializer.serialize_struct(RAW_TOKEN, 1)?;
        st.serialize_field(RAW_TOKEN, quoted)?;
        st.end()
    } else {
        serializer.serialize_str(&decode_quoted(quoted))
    }
}

/// Serializes compact JSON text agentnorm wrote itself (valid by construction): copied verbatim
/// inside [`write_event`], parsed and re-serialized for any other serializer.
pub(crate) fn serialize_raw_json<S: Serializer>(json: &str, serializer: S) -> Result<S::Ok, S::Error> {
    if RAW_OK.with(Cell::get) {
        let mut st = serializer.serialize_struct(RAW_TOKEN, 1)?;
        st.serialize_field(RAW_TOKEN, json)?;
        st.end()
    } else {
        use serde::Serialize as _;
        serde_json::from_str::<serde_json::Value>(json).unwrap_or(serde_json::Value::Null).serialize(serializer)
    }
}

/// Decodes a JSON string literal (quotes included) that the frame reader has validated.
pub(crate) fn decode_quoted(quoted: &str) -> String {
    let inner = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')).unwrap_or_default();
    if !inner.contains('\\') {
        return inner.to_owned();
    }
    let mut out = String::with_capacity(inner.len());
    unescape(inner, &mut out);
    out
}

/// Appends one event as a JSON line (object + `\n`) to `out`.
///
/// The object is written by `Event::write_json` (fields named by the event's own declaration,
/// values through `Field`); `write_event_serde`, the same through serde, is what it is
/// tested against.
pub fn write_event(out: &mut Vec<u8>, event: &Event) {
    event.write_json(out);
    out.push(b'\n');
}

/// A value of an event field, written as serde_json writes it.
pub(crate) trait Field {
    /// Appends `key` (`,"name":`, as it is written) and the value; an absent optional value
    /// writes nothing (every `Option` field of an event is `skip_serializing_if = "is_none"`).
    fn write_field(&self, key: &str, out: &mut Vec<u8>);
}

impl<T: Field> Field for Option<T> {
    fn write_field(&self, key: &str, out: &mut Vec<u8>) {
        if let Some(v) = self {
            v.write_field(key, out);
        }
    }
}

impl Field for String {
    fn write_field(&self, key: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(key.as_bytes());
        push_str(out, self);
    }
}

impl Field for Text {
    fn write_field(&self, key: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(key.as_bytes());
        match self.escaped() {
            Some(quoted) => out.extend_from_slice(quoted.as_bytes()),
            None => push_str(out, &self.as_str()),
        }
    }
}

impl Field for Json {
    fn write_field(&self, key: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(self.get().as_bytes());
    }
}

impl Field for Dialect {
    fn write_field(&self, key: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
        out.extend_from_slice(self.as_str().as_bytes());
        out.push(b'"');
    }
}

impl Field for Usage {
    fn write_field(&self, key: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(key.as_bytes());
        let Usage { input, cache_read, cache_write, output, reasoning, context, cache_write_1h, service_tier } = self;
        let start = out.len();
        out.push(b'{');
        input.write_field(",\"input\":", out);
        cache_read.write_field(",\"cache_read\":", out);
        cache_write.write_field(",\"cache_write\":", out);
        output.write_field(",\"output\":", out);
        reasoning.write_field(",\"reasoning\":", out);
        context.write_field(",\"context\":", out);
        cache_write_1h.write_field(",\"cache_write_1h\":", out);
        service_tier.write_field(",\"service_tier\":", out);
        // The first member's comma goes.
        if out.len() > start + 1 {
            out.remove(start + 1);
        }
        out.push(b'}');
    }
}

/// Field types written through serde_json itself (numbers, enums, the rarer structures).
macro_rules! via_serde {
    ($($t:ty),* $(,)?) => {$(
        impl Field for $t {
            fn write_field(&self, key: &str, out: &mut Vec<u8>) {
                out.extend_from_slice(key.as_bytes());
                let _ = serde_json::to_writer(&mut *out, self);
            }
        }
    )*};
}

via_serde!(
    bool,
    u32,
    u64,
    i64,
    f64,
    ToolKind,
    crate::event::ServiceTier,
    SubagentOperation,
    SubagentStatus,
    UsageScope,
    FailureKind,
    Level,
    UnknownReason,
    Vec<String>,
    Vec<PlanItem>,
    BTreeMap<String, ModelUsage>,
    BTreeMap<String, u64>,
);

/// Writes `{"type":"<type>"` and the envelope's fields, in their declaration order.
pub(crate) fn open_event(out: &mut Vec<u8>, type_name: &str, env: &Envelope) {
    let Envelope { dialect, line, line_end, source, session_id, parent_tool_id, at, observed_at, sidechain, raw } = env;
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(type_name.as_bytes());
    out.push(b'"');
    dialect.write_field(",\"dialect\":", out);
    line.write_field(",\"line\":", out);
    line_end.write_field(",\"line_end\":", out);
    source.write_field(",\"source\":", out);
    session_id.write_field(",\"session_id\":", out);
    parent_tool_id.write_field(",\"parent_tool_id\":", out);
    at.write_field(",\"at\":", out);
    observed_at.write_field(",\"observed_at\":", out);
    sidechain.write_field(",\"sidechain\":", out);
    raw.write_field(",\"raw\":", out);
}

/// [`write_event`] through serde (the events' `Serialize`): the reference the direct writer is
/// tested against.
#[cfg(test)]
pub(crate) fn write_event_serde(out: &mut Vec<u8>, event: &Event) {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            RAW_OK.with(|c| c.set(false));
        }
    }
    RAW_OK.with(|c| c.set(true));
    let _reset = Reset;
    // Writing into a Vec cannot fail, and every type in Event serializes infallibly.
    let _ = serde_json::to_writer(&mut *out, event);
    out.push(b'\n');
}

/// Whether `s` holds a byte serde_json escapes: a control character, `"` or a backslash.
///
/// Without an early exit, so that the loop vectorizes (a word-at-a-time test was slower).
fn needs_escape(s: &[u8]) -> bool {
    !s.iter().fold(true, |ok, &b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'))
}

/// Appends `s` as a JSON string literal (quotes included), escaped as serde_json escapes it.
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    // Most strings need no escape: checked, then copied whole.
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Four hex digits at `i`.
pub(crate) fn hex4(line: &[u8], i: usize) -> Option<u16> {
    let h = line.get(i..i + 4)?;
    let mut v = 0u16;
    for &c in h {
        v = v << 4 | (c as char).to_digit(16)? as u16;
    }
    Some(v)
}

/// Decodes the inside of a string literal the scanner accepted (quotes excluded) into `out`.
///
/// Runs between escapes are copied as they are (a backslash is ASCII, so every cut is at a
/// character boundary); each escape adds one character.
pub fn unescape(inner: &str, out: &mut String) {
    let bytes = inner.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\\', &bytes[i..]) {
        let at = i + p;
        out.push_str(inner.get(i..at).unwrap_or_default());
        let c = bytes.get(at + 1).copied().unwrap_or(b'\\');
        i = at + 2;
        let ch = match c {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = u32::from(hex4(bytes, at + 2).unwrap_or(0xfffd));
                i = at + 6;
                let cp = if (0xD800..0xDC00).contains(&hi) {
                    let lo = u32::from(hex4(bytes, at + 8).unwrap_or(0xDC00));
                    i = at + 12;
                    0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3ff)
                } else {
                    hi
                };
                char::from_u32(cp).unwrap_or('\u{fffd}')
            }
            other => char::from(other),
        };
        out.push(ch);
    }
    out.push_str(inner.get(i..).unwrap_or_default());
}

/// The length of `inner` (a string literal the scanner accepted, quotes excluded) once decoded,
/// without decoding it.
pub fn unescaped_len(inner: &[u8]) -> usize {
    let mut len = inner.len();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\\', &inner[i..]) {
        let at = i + p;
        if inner.get(at + 1) != Some(&b'u') {
            len -= 1;
            i = at + 2;
            continue;
        }
        let hi = hex4(inner, at + 2).unwrap_or(0xfffd);
        if (0xD800..0xDC00).contains(&hi) {
            len -= 12 - 4;
            i = at + 12;
        } else {
            len -= 6 - char::from_u32(u32::from(hi)).map_or(3, char::len_utf8);
            i = at + 6;
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ModelUsage, PlanStatus};
    use proptest::prelude::*;

    /// Both writers on `events`, line for line.
    fn same_as_serde(events: &[Event]) -> Result<(), TestCaseError> {
        for ev in events {
            let (mut direct, mut serde) = (Vec::new(), Vec::new());
            write_event(&mut direct, ev);
            write_event_serde(&mut serde, ev);
            prop_assert_eq!(String::from_utf8_lossy(&direct), String::from_utf8_lossy(&serde));
        }
        Ok(())
    }

    /// Every event of every fixture (with `--raw`, so that every envelope field is there; long
    /// texts still in their escaped form), and each one read back from its JSON (plain texts).
    #[test]
    fn direct_writer_writes_what_serde_writes_for_every_fixture() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut n = 0;
        for dir in std::fs::read_dir(root).unwrap() {
            // `fixtures/README.md` (provenance) sits beside the dialect folders.
            let dir = dir.unwrap().path();
            if !dir.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(dir).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let opts = crate::Options::default().raw(true).source(Some("f\"x".into()));
                let mut events: Vec<Event> = Vec::new();
                let mut norm = crate::Normalizer::new(opts);
                norm.feed(&std::fs::read(&path).unwrap(), &mut events);
                norm.finish(&mut events);
                let read_back: Vec<Event> =
                    events.iter().map(|e| serde_json::from_value(serde_json::to_value(e).unwrap()).unwrap()).collect();
                same_as_serde(&events).unwrap();
                same_as_serde(&read_back).unwrap();
                n += events.len();
            }
        }
        assert!(n > 1000, "{n} events");
    }

    /// Every variant with every field set, from arbitrary strings and numbers.
    fn every_variant(s: &str, t: Text, n: u64, i: i64, f: f64, b: bool) -> Vec<Event> {
        let env = Envelope {
            dialect: Some(Dialect::CodexRollout),
            line: Some(n),
            line_end: Some(n / 2),
            source: Some(s.into()),
            session_id: Some(s.into()),
            parent_tool_id: Some(s.into()),
            at: Some(s.into()),
            observed_at: Some(s.into()),
            sidechain: Some(b),
            raw: Some(t.clone()),
        };
        let usage = Usage {
            input: Some(n),
            cache_read: None,
            cache_write: Some(1),
            output: None,
            reasoning: Some(2),
            context: None,
            cache_write_1h: Some(3),
            service_tier: Some(crate::event::ServiceTier::Priority),
        };
        let some = |x: &str| Some(x.to_owned());
        let json = Json::from_trusted(serde_json::json!({ s: [s, n, f, null] }).to_string());
        let model_usage =
            Some(BTreeMap::from([(s.to_owned(), ModelUsage { cost_usd: Some(f), ..ModelUsage::default() })]));
        vec![
            Event::RunStarted { env: env.clone(), version: s.into(), contract: n as u32 },
            Event::SessionStarted {
                env: env.clone(),
                model: some(s),
                cwd: some(s),
                cli_version: some(s),
                permission_mode: some(s),
                tools: Some(vec![s.into(), String::new()]),
                parent_session_id: some(s),
            },
            Event::TurnStarted { env: env.clone() },
            Event::UserMessage { env: env.clone(), text: t.clone() },
            Event::OutputDelta { env: env.clone(), text: t.clone(), message_id: some(s) },
            Event::Reasoning { env: env.clone(), text: Some(t.clone()) },
            Event::ToolStarted {
                env: env.clone(),
                tool_id: s.into(),
                name: s.into(),
                kind: ToolKind::WebSearch,
                input: Some(json.clone()),
                summary: some(s),
                synthetic: Some(b),
            },
            Event::ToolCompleted {
                env: env.clone(),
                tool_id: s.into(),
                name: some(s),
                kind: Some(ToolKind::Mcp),
                ok: b,
                output: Some(t.clone()),
                exit_code: Some(i),
                error: some(s),
                duration_ms: Some(n),
            },
            Event::PlanUpdated {
                env: env.clone(),
                items: vec![PlanItem { text: s.into(), status: PlanStatus::InProgress }],
            },
            Event::Subagent {
                env: env.clone(),
                child_id: s.into(),
                operation: SubagentOperation::Spawn,
                status: SubagentStatus::Stopped,
                raw_status: some(s),
                operation_id: some(s),
                description: some(s),
                message: some(s),
                background: Some(b),
            },
            Event::Usage { env: env.clone(), usage, model: some(s), message_id: some(s), context_window: Some(n) },
            Event::Usage {
                env: env.clone(),
                usage: Usage::default(),
                model: None,
                message_id: None,
                context_window: None,
            },
            Event::TurnCompleted {
                env: env.clone(),
                usage: Some(usage),
                usage_scope: Some(UsageScope::Session),
                cost_scope: None,
                cost_usd: Some(f),
                duration_ms: Some(n),
                num_turns: Some(n),
                result: Some(t.clone()),
                stop_reason: some(s),
                model_usage: model_usage.clone(),
            },
            Event::TurnFailed {
                env: env.clone(),
                error: s.into(),
                kind: Some(FailureKind::ApiError),
                usage: Some(usage),
                usage_scope: Some(UsageScope::Turn),
                cost_scope: None,
                cost_usd: Some(f),
                duration_ms: Some(n),
                model_usage,
            },
            Event::RateLimit {
                env: env.clone(),
                window: s.into(),
                window_minutes: Some(n),
                status: some(s),
                used_percent: Some(f),
                resets_at: some(s),
                overage_status: some(s),
                using_overage: Some(b),
            },
            Event::Compacted { env: env.clone(), trigger: some(s), pre_tokens: Some(n), post_tokens: Some(n) },
            Event::NeedsInput { env: env.clone(), prompt: some(s), questions: Some(json) },
            Event::Interrupt { env: env.clone(), reason: s.into() },
            Event::Diagnostic {
                env: env.clone(),
                level: Level::Warning,
                code: s.into(),
                message: s.into(),
                dedupe_key: s.into(),
                count: n,
                plugins: vec![s.into()],
                raw: t.clone(),
                subsystem: some(s),
                first_line: Some(n),
                last_line: Some(n),
            },
            Event::Heartbeat { env: env.clone(), frame: s.into() },
            Event::Unknown {
                env: env.clone(),
                reason: UnknownReason::LineTooLong,
                frame: some(s),
                sample: s.into(),
                raw: Some(t),
                raw_base64: some(s),
            },
            Event::RunEnded {
                env: Envelope::default(),
                lines: n,
                events: n,
                unknown: n,
                unknown_frames: Some(BTreeMap::from([(s.to_owned(), n)])),
                complete: b,
            },
        ]
    }

    proptest! {
        /// The escape test agrees with a byte-at-a-time one, and strings are written as
        /// serde_json writes them.
        #[test]
        fn strings_are_escaped_as_serde_json_escapes_them(s in "[ -~\\x00-\\x1f\u{7f}-\u{ff}\u{2028}😀]{0,40}", cut in 0usize..8) {
            let s = &s[s.char_indices().nth(cut).map_or(s.len(), |(i, _)| i)..];
            prop_assert_eq!(needs_escape(s.as_bytes()), s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\'));
            let mut out = Vec::new();
            push_str(&mut out, s);
            prop_assert_eq!(out, serde_json::to_vec(s).unwrap());
        }

        /// Strings with every kind of character serde_json escapes (or does not), texts plain and
        /// escaped, numbers at their extremes (non-finite floats are `null` in both).
        #[test]
        fn direct_writer_writes_what_serde_writes_for_every_variant(
            s in "[a-z\\x00-\\x1f\"\\\\/\u{7f}\u{80}\u{2028}é😀 ]{0,40}",
            escaped in any::<bool>(),
            n in any::<u64>(),
            i in any::<i64>(),
            f in prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), Just(0.1), Just(1e21), Just(-0.0)],
            b in any::<bool>(),
        ) {
            let t = if escaped { Text::from_quoted(&serde_json::to_string(&s).unwrap()) } else { Text::from(s.as_str()) };
            let events = every_variant(&s, t, n, i, f, b);
            prop_assert_eq!(events.len(), Event::TYPE_NAMES.len() + 1);
            same_as_serde(&events)?;
        }
    }

    #[test]
    fn escaped_text_is_copied_verbatim_by_write_event() {
        let ev = Event::OutputDelta {
            env: Envelope::default(),
            text: Text::from_quoted(r#""a\u0041\n\"b""#),
            message_id: None,
        };
        let mut out = Vec::new();
        write_event(&mut out, &ev);
        assert_eq!(out, b"{\"type\":\"output_delta\",\"text\":\"a\\u0041\\n\\\"b\"}\n");
        // Any other path decodes.
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["text"], "aA\n\"b");
    }
}
