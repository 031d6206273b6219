//! RFC 3339 timestamps: the wall clock for `observed_at`, and the epoch numbers some CLIs write
//! (`resetsAt`, `timestamp_ms`) turned into the one format of the contract (SPEC §1).
//!
//! Formatting is a dozen lines of calendar arithmetic (once per event with a time, so written in
//! place); parsing is jiff's, which refuses what is not an instant (February 31st, hour 99, an
//! offset `+02x00`, trailing bytes) instead of shifting it to another day.

use std::time::{SystemTime, UNIX_EPOCH};

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60);
    }
    // Digits written in place: `format!` costs about ten times as much, once per event with a time.
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: u32| {
        for i in (at..at + width).rev() {
            b[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, y as u32);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, (rem / 3600) as u32);
    put(14, 2, (rem % 3600 / 60) as u32);
    put(17, 2, (rem % 60) as u32);
    put(20, 3, millis as u32);
    String::from_utf8(b.to_vec()).unwrap_or_default()
}

/// The current time, RFC 3339 UTC with milliseconds.
pub fn now() -> String {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    rfc3339_millis(ms)
}

/// An epoch number in seconds or milliseconds (told apart by size) as RFC 3339.
pub fn from_epoch(n: f64) -> Option<String> {
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    // Seconds until the year 5138; anything larger is milliseconds.
    let ms = if n < 1e11 { n * 1000.0 } else { n };
    (ms < 253_402_300_800_000.0).then(|| rfc3339_millis(ms as i64))
}

/// Milliseconds since the epoch of an RFC 3339 time (`2025-09-25T01:22:20.083Z`, an offset
/// instead of `Z` allowed; with no offset at all, UTC). `None` for anything that is not a real
/// instant: never a shifted one.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    if let Ok(t) = s.parse::<jiff::Timestamp>() {
        return Some(t.as_millisecond());
    }
    // A date and a time of day with no offset (written by some CLIs): taken as UTC. jiff's
    // civil parser would also take a bare date or an annotation; only the plain form is read.
    let b = s.as_bytes();
    if b.len() < 19 || !matches!(b[10], b'T' | b't' | b' ') || s.contains(['[', '+', 'Z', 'z']) || s[10..].contains('-')
    {
        return None;
    }
    let dt = s.parse::<jiff::civil::DateTime>().ok()?;
    jiff::tz::Offset::UTC.to_timestamp(dt).ok().map(|t| t.as_millisecond())
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips() {
        for ms in [0, 1_771_850_442_097, 951_782_400_000, 1_758_763_340_083] {
            assert_eq!(parse_rfc3339_ms(&rfc3339_millis(ms)), Some(ms));
        }
        assert_eq!(parse_rfc3339_ms("2025-09-25T03:22:20.083+02:00"), parse_rfc3339_ms("2025-09-25T01:22:20.083Z"));
        assert_eq!(parse_rfc3339_ms("2025-09-25T01:22:20Z"), Some(1_758_763_340_000));
        assert_eq!(parse_rfc3339_ms("<TIMESTAMP>"), None);
        assert_eq!(parse_rfc3339_ms("2025-13-25T01:22:20Z"), None);
        assert_eq!(parse_rfc3339_ms("2025-09-25T01:22:20"), Some(1_758_763_340_000));
        assert_eq!(parse_rfc3339_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
    }

    /// Impossible instants are no instants (issue 14): never moved to a neighbouring day.
    #[test]
    fn impossible_instants_are_refused() {
        for bad in [
            "2025-02-31T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2025-09-25T99:99:99Z",
            "2025-09-25T24:00:00Z",
            "2025-09-25T01:60:00Z",
            "2025-09-25T01:22:20Zjunk",
            "2025-09-25T01:22:20.083Z ",
            "2025-09-25T01:22:20+02x00",
            "2025-00-10T00:00:00Z",
            "2025-09-25",
            "",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    /// The digits written in place are `format!`'s, over the whole range (years 0–9999 and
    /// beyond, negative times included).
    #[test]
    fn formats_as_format_does() {
        let reference = |ms: i64| {
            let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
            let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
            let rem = secs.rem_euclid(86_400);
            format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let ms = (x >> 11) as i64 % 400_000_000_000_000 - 70_000_000_000_000;
            assert_eq!(rfc3339_millis(ms), reference(ms), "{ms}");
        }
        for ms in [-62_167_219_200_001, -62_167_219_200_000, 253_402_300_799_999, 253_402_300_800_000] {
            assert_eq!(rfc3339_millis(ms), reference(ms), "{ms}");
        }
    }

    #[test]
    fn formats() {
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(1_771_850_442_097), "2026-02-23T12:40:42.097Z");
        assert_eq!(from_epoch(1_772_139_600.0).unwrap(), "2026-02-26T21:00:00.000Z");
        assert_eq!(from_epoch(1_772_139_600_000.0).unwrap(), "2026-02-26T21:00:00.000Z");
        assert_eq!(rfc3339_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(from_epoch(-1.0), None);
    }
}
