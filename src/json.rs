//! Small JSON writing helpers shared by the frame reader and the NDJSON writer.
//!
//! They exist to let large strings travel from input to output as the escaped bytes the CLI
//! wrote ([`crate::Text`]), without an unescape and a re-escape, while staying correct for any
//! serde serializer: the raw path is only taken inside [`write_event`], which knows it is
//! talking to `serde_json`.

use std::cell::Cell;

use serde::Serializer;
use serde::ser::SerializeStruct;

use crate::Event;

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
    crate::scan::unescape(inner, &mut out);
    out
}

/// Appends one event as a JSON line (object + `\n`) to `out`.
pub fn write_event(out: &mut Vec<u8>, event: &Event) {
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

/// Appends `s` as a JSON string literal (quotes included).
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Envelope, Text};

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
