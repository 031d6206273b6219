//! Which instruction set the string scanner reads with, and how to force one.
//!
//! It exists so that every level of the scanner (`src/scan.rs`) can be run on one machine: by
//! the tests that compare their output bytes, by `scripts/bench.sh` that times each, and by a
//! user who suspects one. The level is chosen once per process: by default the widest the CPU
//! has, or the one named by the environment variable `AGENTNORM_SIMD`
//! (`portable|sse2|avx2|avx512`).
//!
//! The library never reads the variable itself: the binary calls [`from_env`] at start (it
//! prints the [`Choice::note`] of a level the CPU lacks, and exits with status 2 on a
//! [`SimdError`]), then [`force`]. A library user may call [`force`] too; without it the widest
//! level is used.

use std::sync::OnceLock;

/// The name of the environment variable that forces a level.
pub const ENV: &str = "AGENTNORM_SIMD";

/// A level of the string scanner, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// No `std::arch` intrinsics: 64-bit words read as eight bytes at once (SWAR), any CPU. What
    /// aarch64 (Apple Silicon, Graviton) runs.
    Portable,
    /// x86-64 SSE2 (16 bytes per compare), which every x86-64 CPU has.
    Sse2,
    /// x86-64 AVX2 (32 bytes per compare).
    Avx2,
    /// x86-64 AVX-512BW (64 bytes per compare, into mask registers).
    Avx512,
}

impl SimdLevel {
    /// Every level, narrowest first.
    pub const ALL: [SimdLevel; 4] = [SimdLevel::Portable, SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512];

    /// The level's name, as `AGENTNORM_SIMD` spells it.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Portable => "portable",
            SimdLevel::Sse2 => "sse2",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }

    /// Whether this CPU runs the level.
    pub fn supported(self) -> bool {
        match self {
            SimdLevel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Sse2 => true,
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => std::arch::is_x86_feature_detected!("avx512bw"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The widest level this CPU runs.
    pub fn best() -> SimdLevel {
        SimdLevel::ALL.into_iter().rev().find(|l| l.supported()).unwrap_or(SimdLevel::Portable)
    }

    /// The widest level this CPU runs that is at most `self`.
    fn at_most(self) -> SimdLevel {
        SimdLevel::ALL.into_iter().rev().find(|&l| l <= self && l.supported()).unwrap_or(SimdLevel::Portable)
    }
}

impl std::fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A value of `AGENTNORM_SIMD` that names no level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimdError {
    /// The value, as given.
    #[error("{ENV}={0:?} is not a scanner level (expected portable, sse2, avx2 or avx512)")]
    Unknown(String),
}

/// The level a value of `AGENTNORM_SIMD` selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The level to run.
    pub level: SimdLevel,
    /// Set when the named level is one this CPU lacks: one line saying which level runs instead
    /// (the binary prints it on stderr).
    pub note: Option<String>,
}

/// The level `value` (of `AGENTNORM_SIMD`; unset or empty: the widest) selects on this CPU. Names
/// are matched without regard to ASCII case; a level the CPU lacks falls back to the widest it
/// has below it, with a note.
pub fn choose(value: Option<&str>) -> Result<Choice, SimdError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Choice { level: SimdLevel::best(), note: None });
    };
    let wanted = SimdLevel::ALL
        .into_iter()
        .find(|l| l.name().eq_ignore_ascii_case(value))
        .ok_or_else(|| SimdError::Unknown(value.to_owned()))?;
    let level = wanted.at_most();
    let note = (level != wanted).then(|| format!("{ENV}={wanted}: this CPU lacks it, the scanner runs {level}"));
    Ok(Choice { level, note })
}

/// [`choose`] with the value of `AGENTNORM_SIMD` (a value that is not Unicode names no level).
pub fn from_env() -> Result<Choice, SimdError> {
    match std::env::var(ENV) {
        Ok(v) => choose(Some(&v)),
        Err(std::env::VarError::NotPresent) => choose(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(SimdError::Unknown(v.to_string_lossy().into_owned())),
    }
}

static FORCED: OnceLock<SimdLevel> = OnceLock::new();

/// Makes every scanner of this process read at `level` (narrowed to one the CPU runs); only the
/// first call counts, and only before the first line is read. Returns the level in force.
pub fn force(level: SimdLevel) -> SimdLevel {
    *FORCED.get_or_init(|| level.at_most())
}

/// The level in force: the one [`force`]d, else the widest this CPU runs (from then on fixed).
pub fn level() -> SimdLevel {
    *FORCED.get_or_init(SimdLevel::best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_select_their_level_or_fall_back_with_a_note() {
        assert_eq!(choose(None), Ok(Choice { level: SimdLevel::best(), note: None }));
        assert_eq!(choose(Some("")), Ok(Choice { level: SimdLevel::best(), note: None }));
        for l in SimdLevel::ALL {
            for spelling in [l.name().to_owned(), l.name().to_ascii_uppercase(), format!(" {} ", l.name())] {
                let c = choose(Some(&spelling)).unwrap();
                if l.supported() {
                    assert_eq!(c, Choice { level: l, note: None }, "{spelling}");
                } else {
                    assert!(c.level < l && c.level.supported(), "{spelling}: {c:?}");
                    let note = c.note.expect("a note");
                    assert!(note.contains(l.name()) && note.contains(c.level.name()), "{note}");
                }
            }
        }
        assert!(SimdLevel::Portable.supported());
        assert!(SimdLevel::best().supported());
    }

    #[test]
    fn an_unknown_name_is_an_error_that_lists_the_levels() {
        for bad in ["neon", "avx", "scalar", "avx-512", "1"] {
            let e = choose(Some(bad)).unwrap_err();
            assert_eq!(e, SimdError::Unknown(bad.to_owned()));
            let msg = e.to_string();
            assert!(msg.contains(bad) && msg.contains("portable, sse2, avx2 or avx512"), "{msg}");
        }
    }
}
