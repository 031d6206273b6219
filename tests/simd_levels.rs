//! Every scanner level writes the same bytes: the built binary run with each `AGENTNORM_SIMD`
//! level over every fixture file and over generated inputs (damaged fixture lines, escape-heavy
//! strings across block and word ends, surrogates, bad UTF-8), compared byte for byte with the
//! widest level's output. The scanner's unit tests compare the levels' block readings with a
//! byte-at-a-time reading; this test compares what users see.

use std::path::{Path, PathBuf};

mod common;
use common::{bin, root};

const LEVELS: [&str; 4] = ["portable", "sse2", "avx2", "avx512"];

/// The output of `agentnorm ARGS` with `AGENTNORM_SIMD=level`; `None` when this CPU lacks the
/// level (the binary says so on stderr and runs a narrower one, which the caller skips).
fn run_at(level: &str, args: &[&str], files: &[PathBuf]) -> Option<Vec<u8>> {
    let out = bin().env("AGENTNORM_SIMD", level).args(args).args(files).output().expect("running agentnorm");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{level}: status {:?}, stderr {stderr}", out.status);
    if stderr.contains("this CPU lacks it") {
        eprintln!("skipped level {level}: {}", stderr.lines().next().unwrap_or_default());
        return None;
    }
    Some(out.stdout)
}

/// Runs every level this CPU has over `files` and asserts their outputs are identical; returns
/// how many levels ran.
fn same_at_every_level(args: &[&str], files: &[PathBuf]) -> usize {
    let outputs: Vec<(&str, Vec<u8>)> =
        LEVELS.iter().filter_map(|&l| run_at(l, args, files).map(|out| (l, out))).collect();
    let (first, want) = &outputs[0];
    assert!(!want.is_empty(), "{first}: no output");
    for (level, got) in &outputs[1..] {
        if got != want {
            // Name the first file whose output differs.
            for f in files {
                let (a, b) =
                    (run_at(first, args, std::slice::from_ref(f)), run_at(level, args, std::slice::from_ref(f)));
                assert_eq!(a, b, "{first} and {level} differ on {}", f.display());
            }
            panic!("{first} and {level} differ on {files:?} together");
        }
    }
    outputs.len()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn every_level_writes_the_same_bytes_for_every_fixture() {
    let mut files = Vec::new();
    files_under(&root().join("fixtures"), &mut files);
    files.sort();
    assert!(files.len() > 100, "fixtures found: {}", files.len());
    // Every file, inputs and expected outputs alike (NDJSON events and pretty text are inputs
    // too: unknown lines, long strings, SGR escapes).
    let ran = same_at_every_level(&["--no-observed-at", "--raw", "-j1"], &files);
    assert!(ran >= 1);
    eprintln!("{ran} levels ran over {} fixture files", files.len());
}

/// A small deterministic generator (xorshift64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Generated lines, of the kinds the property tests (`tests/props.rs`) draw: fixture lines with a
/// byte replaced or cut short, arbitrary bytes, CRLF, blank and stderr lines; and lines whose
/// strings are random runs of escape-heavy pieces placed at every offset around the 8-byte
/// words and 64-byte blocks, valid and lone surrogates, non-ASCII text and bad UTF-8.
fn generated_input() -> Vec<u8> {
    let mut fixture_lines = Vec::new();
    let mut files = Vec::new();
    files_under(&root().join("fixtures"), &mut files);
    files.sort();
    for f in files.iter().filter(|f| f.extension().is_some_and(|x| x == "jsonl")) {
        let bytes = std::fs::read(f).unwrap();
        fixture_lines.extend(bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec));
    }
    let pieces: &[&[u8]] = &[
        b"\\",
        b"\\\\",
        b"\\\\\\",
        b"\"",
        b"a",
        b"abcdefghijklmnop",
        b"u",
        b"/",
        b"\\n",
        b"\\\"",
        b"\\/",
        b"\\u",
        b"\\u00e9",
        b"\\ud83d",
        b"\\ude00",
        b"\\ud83d\\ude00",
        b"\\uDBFF\\uDFFF",
        b"\\x",
        b"\x01",
        b"\x1f",
        b"\x7f",
        "é".as_bytes(),
        "€".as_bytes(),
        "😀".as_bytes(),
        b"\xff",
        b"\xe2\x82",
        b"\xed\xa0\x80",
    ];
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut out = Vec::new();
    for round in 0..8000 {
        let mut line = match round % 5 {
            // Arbitrary bytes (no newline), as the property tests' garbage lines.
            3 => (0..rng.below(80)).map(|_| rng.below(256) as u8).collect(),
            // A frame with a CR before its newline, or a blank one, or stderr text.
            4 => match rng.below(3) {
                0 => [&fixture_lines[rng.below(fixture_lines.len())][..], b"\r"].concat(),
                1 => b"  \t".to_vec(),
                _ => b"2026-04-09T14:20:45.537513Z  WARN codex_core::plugins::manager: failed to load plugin".to_vec(),
            },
            0 => {
                let mut l = fixture_lines[rng.below(fixture_lines.len())].clone();
                if !l.is_empty() {
                    let at = rng.below(l.len());
                    if rng.below(2) == 0 {
                        l[at] = [b'"', b'\\', 0x00, 0x80, 0xff, b'}', b'u'][rng.below(7)];
                    } else {
                        l.truncate(at);
                    }
                }
                l
            }
            _ => {
                // A frame whose text is a padded random string, so its pieces fall at every
                // offset of a word and a block.
                let mut s =
                    b"{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\""
                        .to_vec();
                s.resize(s.len() + rng.below(130), b'a');
                for _ in 0..rng.below(40) {
                    s.extend_from_slice(pieces[rng.below(pieces.len())]);
                }
                if rng.below(8) > 0 {
                    s.extend_from_slice(b"\"}]},\"session_id\":\"s\"}");
                }
                s
            }
        };
        line.retain(|&b| b != b'\n');
        out.extend_from_slice(&line);
        out.push(b'\n');
    }
    out
}

#[test]
fn every_level_writes_the_same_bytes_for_generated_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("generated.jsonl");
    std::fs::write(&path, generated_input()).unwrap();
    let ran = same_at_every_level(&["--no-observed-at", "--raw", "-j1"], &[path]);
    assert!(ran >= 1);
}

#[test]
fn an_unknown_level_is_an_exit_2_error_and_a_missing_one_falls_back() {
    let out = bin()
        .env("AGENTNORM_SIMD", "neon")
        .args(["--no-observed-at", "fixtures/claude/amp_no_message_id.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("AGENTNORM_SIMD=\"neon\"") && stderr.contains("portable, sse2, avx2 or avx512"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    // Each named level runs; one the CPU lacks says so in one line and runs anyway.
    let input = root().join("fixtures/claude/amp_no_message_id.jsonl");
    for level in LEVELS {
        let out = bin().env("AGENTNORM_SIMD", level).arg("--no-observed-at").arg(&input).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{level}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.is_empty() || (stderr.lines().count() == 1 && stderr.contains("this CPU lacks it")),
            "{level}: {stderr}"
        );
        assert!(!out.stdout.is_empty());
    }
}
