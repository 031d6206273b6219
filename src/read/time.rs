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
    if let Some(ms) = canonical_ms(s.as_bytes()) {
        return Some(ms);
    }
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

/// The contract's own form, `YYYY-MM-DDTHH:MM:SS.mmmZ` (what Claude Code and Codex write on
/// every line, and what [`rfc3339_millis`] writes): its milliseconds when it is that form
/// exactly and a real instant, else `None` (and jiff decides). Read by hand because it is read
/// once or more per line of every log: jiff's general parser was a tenth of a usage reading.
fn canonical_ms(b: &[u8]) -> Option<i64> {
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, &c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')))
    };
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, min, sec, ms) = (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if d == 0 || d > month_days || h > 23 || min > 59 || sec > 59 {
        return None;
    }
    let days = days_from_civil(i64::from(y), m, d);
    Some(((days * 86_400 + i64::from(h * 3600 + min * 60 + sec)) * 1000) + i64::from(ms))
}

/// Whether `s` is already in the contract's form ([`rfc3339_millis`]'s) and a real instant: it
/// is then its own normalized form.
pub fn is_contract_form(s: &str) -> bool {
    canonical_ms(s.as_bytes()).is_some()
}

/// (year, month, day) to days since 1970-01-01, after Howard Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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

    /// The hand-read contract form gives what jiff gives, for every day of four centuries and
    /// for the near misses (out-of-range fields, another length, another separator).
    #[test]
    fn the_contract_form_is_read_as_jiff_reads_it() {
        let jiff_ms = |s: &str| s.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond());
        let mut checked = 0;
        for day in (-25_000i64..160_000).step_by(7) {
            let ms = day * 86_400_000 + (day * 7_919_111).rem_euclid(86_400_000);
            let s = rfc3339_millis(ms);
            assert_eq!(canonical_ms(s.as_bytes()), Some(ms), "{s}");
            checked += 1;
        }
        assert!(checked > 20_000);
        for s in [
            "2024-02-29T23:59:59.999Z",
            "2023-02-29T00:00:00.000Z",
            "2100-02-29T00:00:00.000Z",
            "2000-02-29T00:00:00.000Z",
            "2025-04-31T00:00:00.000Z",
            "2025-12-31T24:00:00.000Z",
            "2025-12-31T23:60:00.000Z",
            "2025-12-31T23:59:60.000Z",
            "2025-00-01T00:00:00.000Z",
            "2025-01-00T00:00:00.000Z",
            "2025-13-01T00:00:00.000Z",
            "2025-1a-01T00:00:00.000Z",
            "2025-01-01t00:00:00.000Z",
            "2025-01-01T00:00:00.000z",
            "2025-01-01T00:00:00,000Z",
            "+025-01-01T00:00:00.000Z",
            "2025-01-01T00:00:00.00Z",
        ] {
            let fast = canonical_ms(s.as_bytes());
            if fast.is_some() {
                assert_eq!(fast, jiff_ms(s), "{s}");
            }
            assert_eq!(parse_rfc3339_ms(s), jiff_ms(s), "{s}");
        }
        assert_eq!(canonical_ms(b"2023-02-29T00:00:00.000Z"), None);
        assert_eq!(canonical_ms(b"2024-02-29T23:59:59.999Z"), jiff_ms("2024-02-29T23:59:59.999Z"));
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
