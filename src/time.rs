//! RFC 3339 timestamps: the wall clock for `observed_at`, and the epoch numbers some CLIs write
//! (`resetsAt`, `timestamp_ms`) turned into the one format of the contract (SPEC §1).
//!
//! A dozen lines of calendar arithmetic, so the crate does not pull a date library for them.

use std::time::{SystemTime, UNIX_EPOCH};

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
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
    fn formats() {
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(1_771_850_442_097), "2026-02-23T12:40:42.097Z");
        assert_eq!(from_epoch(1_772_139_600.0).unwrap(), "2026-02-26T21:00:00.000Z");
        assert_eq!(from_epoch(1_772_139_600_000.0).unwrap(), "2026-02-26T21:00:00.000Z");
        assert_eq!(rfc3339_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(from_epoch(-1.0), None);
    }
}
